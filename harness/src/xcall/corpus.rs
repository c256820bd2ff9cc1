//! The hand-written producer: PTX in `ptx-corpus/xcall/`, written by hand from the
//! ptx-interop 13.2 §2.3 table (each file's header names the rule it follows), for a fixed set
//! of signatures covering each type class: integers of each width and signedness, pointers,
//! `__half`/`__nv_bfloat16`/`float`/`double`, aggregates aligned 1 to 16 (3 × char, padded
//! ones), a union, native vectors, a 32-parameter list and an indirect call through
//! `.callprototype`.
//!
//! The signatures are described here (seeds [`FIRST_SEED`].., beside the generated 0..240), so
//! every other producer emits the same signature from the description and each ordered pair
//! with the corpus on one side runs the offline checks of a generated pair. The files are
//! compiled into the binary; a batch is all the files of one role in one module (one
//! `.version`/`.target` header and one record buffer).

use super::sig::{fixed_agg, Role, Signature, Val, REC, REC_BYTES};
use crate::abi::types::Scalar;
use crate::vocab::Vocabulary;

/// The first corpus seed.
pub(crate) const FIRST_SEED: u64 = 1000;

/// The corpus files: (name, callee PTX, caller PTX).
pub(crate) const FILES: [(&str, &str, &str); 6] = [
    (
        "ints",
        include_str!("../../../ptx-corpus/xcall/ints.callee.ptx"),
        include_str!("../../../ptx-corpus/xcall/ints.caller.ptx"),
    ),
    (
        "floats",
        include_str!("../../../ptx-corpus/xcall/floats.callee.ptx"),
        include_str!("../../../ptx-corpus/xcall/floats.caller.ptx"),
    ),
    (
        "aggregates",
        include_str!("../../../ptx-corpus/xcall/aggregates.callee.ptx"),
        include_str!("../../../ptx-corpus/xcall/aggregates.caller.ptx"),
    ),
    (
        "vectors",
        include_str!("../../../ptx-corpus/xcall/vectors.callee.ptx"),
        include_str!("../../../ptx-corpus/xcall/vectors.caller.ptx"),
    ),
    (
        "long_list",
        include_str!("../../../ptx-corpus/xcall/long_list.callee.ptx"),
        include_str!("../../../ptx-corpus/xcall/long_list.caller.ptx"),
    ),
    (
        "indirect",
        include_str!("../../../ptx-corpus/xcall/indirect.callee.ptx"),
        include_str!("../../../ptx-corpus/xcall/indirect.caller.ptx"),
    ),
];

/// The module header every corpus file declares (and the merged batch keeps once): the
/// corpus targets sm_50, the oldest target ptxas 12.9 assembles for.
pub(crate) const HEADER: &str = ".version 7.0\n.target sm_50\n.address_size 64\n";

/// The record buffer's definition, as every callee file writes it.
fn rec_definition() -> String {
    format!(".visible .global .align 8 .b8 {REC}[{REC_BYTES}];")
}

/// The signatures the corpus files implement, in seed order.
pub fn signatures() -> Vec<Signature> {
    use Scalar::*;
    let s = Val::Scalar;
    // fixed_agg's kinds: 0 3 x char, 1 char then double, 2 double then char, 4 short then
    // char, 5 union, 6/7/8 aligned 4/8/16.
    let agg =
        |seed: u64, n: usize, k: usize| Val::Agg(Box::new(fixed_agg(k, format!("xc{seed}_{n}"))));
    let sig = |seed: u64, kind: &'static str, ret: Val, params: Vec<Val>| Signature {
        seed,
        kind,
        ret: Some(ret),
        params,
        indirect: false,
    };
    let mut long = vec![s(ULongLong); 4];
    for (t, n) in [(Pointer, 4), (Int, 12), (UInt, 4), (Short, 4), (UChar, 4)] {
        long.extend(std::iter::repeat_n(s(t), n));
    }
    let mut indirect = sig(
        1012,
        "corpus: indirect call through .callprototype",
        agg(1012, 0, 2),
        vec![s(Int), agg(1012, 1, 0), s(ULongLong)],
    );
    indirect.indirect = true;
    vec![
        sig(
            1000,
            "corpus: integers of 8 and 16 bits",
            s(SChar),
            vec![s(Short), s(UShort), s(Char), s(SChar), s(UChar)],
        ),
        sig(
            1001,
            "corpus: integers of 32 and 64 bits",
            s(UShort),
            vec![
                s(Int),
                s(UInt),
                s(Long),
                s(ULong),
                s(LongLong),
                s(ULongLong),
            ],
        ),
        sig(
            1002,
            "corpus: pointer, __half, __nv_bfloat16",
            s(Pointer),
            vec![s(Pointer), s(Half), Val::Bf16],
        ),
        sig(1003, "corpus: float from double", s(Float), vec![s(Double)]),
        sig(1004, "corpus: double from float", s(Double), vec![s(Float)]),
        sig(
            1005,
            "corpus: __half from __nv_bfloat16",
            s(Half),
            vec![Val::Bf16],
        ),
        sig(
            1006,
            "corpus: __nv_bfloat16 from __half",
            Val::Bf16,
            vec![s(Half)],
        ),
        sig(
            1007,
            "corpus: aggregates aligned 1 and 2 (3 x char, padded)",
            agg(1007, 0, 0),
            vec![agg(1007, 1, 0), agg(1007, 2, 4)],
        ),
        sig(
            1008,
            "corpus: padded aggregates aligned 4 and 8",
            agg(1008, 0, 1),
            vec![agg(1008, 1, 6), agg(1008, 2, 2)],
        ),
        sig(
            1009,
            "corpus: aggregate aligned 16 and a union",
            agg(1009, 0, 5),
            vec![agg(1009, 1, 8), agg(1009, 2, 5)],
        ),
        sig(
            1010,
            "corpus: native vectors",
            Val::Vector(Int, 4),
            vec![
                Val::Vector(Char, 2),
                Val::Vector(Float, 2),
                Val::Vector(UInt, 3),
            ],
        ),
        sig(1011, "corpus: 32 parameters", s(Long), long),
        indirect,
    ]
}

/// How many corpus signatures there are.
pub(crate) const COUNT: u64 = 13;

/// Whether `seed` is a corpus signature.
pub(crate) fn is_corpus(seed: u64) -> bool {
    (FIRST_SEED..FIRST_SEED + COUNT).contains(&seed)
}

/// All corpus files of `role` in one module: the header once, the record buffer once (callee
/// side), each file's text otherwise as written.
pub fn source(role: Role) -> String {
    let rec = rec_definition();
    let mut out = format!(
        "// gpucts xcall: the hand-written corpus, ptx-corpus/xcall/*.{}.ptx, in one module.\n{HEADER}\n",
        role.name()
    );
    if role == Role::Callee {
        out += &rec;
        out.push('\n');
    }
    for (name, callee, caller) in FILES {
        let text = match role {
            Role::Callee => callee,
            Role::Caller => caller,
        };
        out += &format!("\n// ---- {name}.{}.ptx\n", role.name());
        for line in text.lines() {
            let t = line.trim();
            let header = [".version", ".target", ".address_size"]
                .iter()
                .any(|d| t.starts_with(d));
            if header || t == rec {
                continue;
            }
            out += line;
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ptx::module::PtxModule;
    use crate::xcall::check::show;

    #[test]
    fn seeds_are_the_corpus_range() {
        let sigs = signatures();
        assert_eq!(sigs.len() as u64, COUNT);
        for (i, s) in sigs.iter().enumerate() {
            assert_eq!(s.seed, FIRST_SEED + i as u64);
            assert!(is_corpus(s.seed));
        }
        assert!(!is_corpus(FIRST_SEED - 1) && !is_corpus(FIRST_SEED + COUNT));
    }

    /// Every file says what it is and which §2.3 rule it follows, and declares the header the
    /// merged batch keeps.
    #[test]
    fn files_name_their_rule() {
        for (name, callee, caller) in FILES {
            for (role, text) in [("callee", callee), ("caller", caller)] {
                let head: String = text
                    .lines()
                    .take_while(|l| l.starts_with("//"))
                    .collect::<Vec<_>>()
                    .join("\n");
                assert!(
                    head.contains(&format!("ptx-corpus/xcall/{name}.{role}.ptx")),
                    "{name}.{role}: {head}"
                );
                assert!(head.contains("hand-written"), "{name}.{role}");
                assert!(
                    head.contains("ptx-interop 13.2 section 2.3"),
                    "{name}.{role}"
                );
                assert!(text.contains(HEADER), "{name}.{role}: header");
                // ptxas rejects some non-ASCII bytes even in comments (docs/STATUS.md, dwarf).
                assert!(text.is_ascii(), "{name}.{role}");
            }
        }
    }

    /// The §2.3 table, applied to each signature's description, gives exactly the types the
    /// hand-written definitions, `.extern` prototypes and call-site declarations use (`.s32`
    /// and `.u32` told apart: note A's extension differs). Two independent writings of the
    /// rule: the table in `Val::table_decl` and the files.
    #[test]
    fn files_follow_the_table() {
        let want = |v: &Val| v.table_decl().replace(" [", "[");
        let callee = PtxModule::parse(&source(Role::Callee)).unwrap();
        let caller = super::super::check::PtxFile::parse("caller", &source(Role::Caller)).unwrap();
        for s in signatures() {
            let want_params: Vec<String> = s.params.iter().map(want).collect();
            let want_ret: Vec<String> = s.ret.iter().map(want).collect();
            let def = callee
                .functions
                .iter()
                .find(|f| f.is_definition && f.name == s.callee())
                .unwrap_or_else(|| panic!("{} not defined", s.callee()));
            let ext = caller
                .module
                .functions
                .iter()
                .find(|f| !f.is_definition && f.name == s.callee())
                .unwrap_or_else(|| panic!("{} not declared", s.callee()));
            for f in [def, ext] {
                let got: Vec<String> = f
                    .params
                    .iter()
                    .map(show)
                    .map(|t| t.replace(".param ", ""))
                    .collect();
                assert_eq!(got, want_params, "{}: {}", f.name, s.describe());
                let got: Vec<String> = f.returns.iter().map(show).collect();
                assert_eq!(got, want_ret, "{} return: {}", f.name, s.describe());
            }
            let calls: Vec<_> = caller
                .calls
                .iter()
                .filter(|c| c.caller == s.kernel())
                .collect();
            assert_eq!(calls.len(), 1, "{}", s.kernel());
            let c = calls[0];
            assert_eq!(c.target.as_deref(), Some(s.callee().as_str()));
            assert_eq!(c.prototype.is_some(), s.indirect, "{}", s.kernel());
            let args: Vec<String> = c.args.iter().flatten().map(show).collect();
            assert_eq!(args, want_params, "{} arguments", s.kernel());
            if let Some(p) = &c.prototype {
                let proto = &caller.prototypes[p];
                let got: Vec<String> = proto.params.iter().map(show).collect();
                assert_eq!(got, want_params, "{} .callprototype", s.kernel());
            }
        }
    }

    /// The merged batch holds one header and one record buffer, and every function once.
    #[test]
    fn merged_batches_are_one_module() {
        for role in [Role::Callee, Role::Caller] {
            let text = source(role);
            assert_eq!(text.matches(".version").count(), 1);
            assert_eq!(
                text.matches(&rec_definition()).count(),
                usize::from(role == Role::Callee)
            );
            let m = PtxModule::parse(&text).unwrap();
            let defs = m.functions.iter().filter(|f| f.is_definition).count();
            assert_eq!(defs as u64, COUNT, "{}", role.name());
        }
    }
}
