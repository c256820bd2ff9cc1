//! Independent oracles for the layout engine. Each compiles or runs a batch of types with a
//! producer (clang-19, NVRTC, ptxas' DWARF, a GPU kernel) and compares what the producer did
//! with what the engine says ptx-interop 13.2 chapter 1 requires. None of them reads the
//! engine's answer to build its question: the sources carry only the C types (and, for NVRTC,
//! the engine's numbers inside assertions that the compiler evaluates).

use crate::vocab::Vocabulary;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::time::Instant;
use strum::VariantArray;

use super::layout::{layout, AddressSize, Layout, LayoutError};
use super::render::render_c;
use super::types::{all_records, Dialect, TypeDef};
use crate::backend::toolchain::{ToolError, Toolchain};
use crate::capability::Capability;

pub mod clang;
pub mod dwarf;
pub mod graffiti;
pub mod nvrtc;
pub mod signedness;

/// The offline oracles (graffiti needs a GPU and runs through the cuda backend; see
/// [`graffiti`]). Deserializes from the names [`Oracle::name`] gives (`clang_dwarf` too).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    serde::Deserialize,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
    strum::Display,
)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Oracle {
    /// clang-19 `-fdump-record-layouts` for `nvptx64-nvidia-cuda`.
    #[strum(serialize = "clang")]
    Clang,
    /// The same for the 32-bit `nvptx-nvidia-cuda` target, against the engine at
    /// `.address_size 32`.
    #[serde(rename = "clang32")]
    #[strum(serialize = "clang32")]
    Clang32,
    /// NVRTC evaluating `static_assert`s on sizeof, alignof and offsetof.
    #[strum(serialize = "nvrtc")]
    Nvrtc,
    /// DWARF member locations in a cubin built by NVRTC `-G` and `ptxas -g`.
    #[strum(serialize = "dwarf")]
    Dwarf,
    /// DWARF member locations in a cubin built by clang-19 `-g` and `ptxas -g`.
    #[strum(serialize = "clang_dwarf")]
    ClangDwarf,
}

impl Oracle {
    /// The tools the oracle runs.
    pub fn requires(self) -> &'static [Capability] {
        match self {
            Oracle::Clang | Oracle::Clang32 => &[Capability::Clang],
            Oracle::Nvrtc => &[Capability::Nvrtc],
            Oracle::Dwarf => &[Capability::Nvrtc, Capability::Ptxas],
            Oracle::ClangDwarf => &[Capability::Clang, Capability::Ptxas],
        }
    }
}

/// What an oracle concluded about one type of the batch: agreement with the layout engine
/// (not a case verdict: `abi::cases` turns it into a `CaseStatus`, the runner judges that).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Agreement {
    Agree,
    /// The oracle disagrees with the engine: the type in C, both answers.
    Mismatch(String),
    /// The oracle could not judge this type (the producer rejected it, output unreadable).
    Error(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeResult {
    /// The top-level type's name; nested aggregates are judged as part of it.
    pub name: String,
    pub verdict: Agreement,
}

/// Compare the engine with `oracle` on a batch of types (one compilation for the batch).
/// `Err` only when the oracle cannot run at all (a tool missing, an I/O failure); everything
/// else is a per-type verdict.
pub(crate) fn check_batch(
    oracle: Oracle,
    tc: &Toolchain,
    types: &[TypeDef],
) -> Result<Vec<TypeResult>, ToolError> {
    for cap in oracle.requires() {
        if !tc.has(*cap) {
            return Err(ToolError::NotAvailable(*cap));
        }
    }
    match oracle {
        Oracle::Clang => clang::check_batch(tc, types, AddressSize::A64),
        Oracle::Clang32 => clang::check_batch(tc, types, AddressSize::A32),
        Oracle::Nvrtc => nvrtc::check_batch(tc, types),
        Oracle::Dwarf => dwarf::check_batch(tc, types),
        Oracle::ClangDwarf => dwarf::check_batch_clang(tc, types),
    }
}

/// [`check_batch`] over any number of types, [`BATCH`] per compilation.
pub(crate) fn check_all(
    oracle: Oracle,
    tc: &Toolchain,
    types: &[TypeDef],
) -> Result<Vec<TypeResult>, ToolError> {
    let mut out = Vec::with_capacity(types.len());
    for chunk in types.chunks(BATCH) {
        out.extend(check_batch(oracle, tc, chunk)?);
    }
    Ok(out)
}

/// How many results agree, and how many do not (a mismatch or an error): the benches' count.
pub fn tally(results: &[TypeResult]) -> (usize, usize) {
    let agreed = results
        .iter()
        .filter(|r| r.verdict == Agreement::Agree)
        .count();
    (agreed, results.len() - agreed)
}

/// Random types verified per second by each available oracle, as a short report.
pub fn bench(tc: &Toolchain, count: usize) -> String {
    let types = super::random::random_batch(1_000_000, count);
    let mut out = String::new();
    for o in Oracle::VARIANTS {
        let start = Instant::now();
        let mut agreed = 0usize;
        let mut other = 0usize;
        let mut skipped = None;
        for chunk in types.chunks(BATCH) {
            match check_batch(*o, tc, chunk) {
                Ok(rs) => {
                    let (a, o) = tally(&rs);
                    agreed += a;
                    other += o;
                }
                Err(e) => {
                    skipped = Some(e.to_string());
                    break;
                }
            }
        }
        let secs = start.elapsed().as_secs_f64();
        match skipped {
            Some(why) => {
                let _ = writeln!(out, "{:<11} skipped: {why}", o.name());
            }
            None => {
                let _ = writeln!(
                    out,
                    "{:<11} {count} types in {secs:.2} s = {:.0} types/s ({agreed} agree, {other} mismatch or error)",
                    o.name(),
                    count as f64 / secs
                );
            }
        }
    }
    out
}

/// How the oracles obtain the engine's answer; tests substitute a wrong engine to prove that
/// each oracle notices.
pub(crate) type EngineFn<'a> = &'a dyn Fn(&TypeDef) -> Result<Layout, LayoutError>;

/// The engine at `.address_size 64`, the size every oracle's producer targets.
pub(crate) fn engine64(t: &TypeDef) -> Result<Layout, LayoutError> {
    layout(t, AddressSize::A64)
}

/// Types per compilation used by [`bench`] and recommended to callers.
pub const BATCH: usize = 100;

// ---------------------------------------------------------------------------------------------
// Shared comparison

/// One member as an oracle saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ObservedMember {
    pub name: Option<String>,
    pub offset: u64,
    /// Absolute bit offset (from the start of the aggregate) and width, for bit fields.
    pub bits: Option<(u64, u32)>,
}

/// One aggregate as an oracle saw it; `None` where the oracle does not say.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ObservedRecord {
    pub size: Option<u64>,
    pub align: Option<u64>,
    pub members: Vec<ObservedMember>,
}

/// How observed members pair with the type's members.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pairing {
    /// One observed member per declared member, in order (clang's dump).
    Positional,
    /// By name; unnamed members are not reported (DWARF omits some of them).
    ByName,
}

fn fmt_member(name: &Option<String>, offset: u64, bits: Option<(u64, u32)>) -> String {
    let n = name.as_deref().unwrap_or("<unnamed>");
    match bits {
        Some((b, w)) => format!("{n} @ bit {b} ({}:{}), width {w}", b / 8, b % 8),
        None => format!("{n} @ {offset}"),
    }
}

pub(crate) fn describe_engine(l: &Layout) -> String {
    let mut s = format!("size {}, align {}", l.size, l.align);
    for m in &l.members {
        let bits = m.bit_offset.zip(m.bit_width);
        let _ = write!(s, "; {}", fmt_member(&m.name, m.offset, bits));
    }
    s
}

pub(crate) fn describe_observed(o: &ObservedRecord) -> String {
    let opt = |v: Option<u64>| v.map_or("?".to_string(), |v| v.to_string());
    let mut s = format!("size {}, align {}", opt(o.size), opt(o.align));
    for m in &o.members {
        let _ = write!(s, "; {}", fmt_member(&m.name, m.offset, m.bits));
    }
    s
}

/// The first difference between the engine's layout and an oracle's, if any.
pub(crate) fn compare_record(
    rec: &TypeDef,
    engine: &Layout,
    obs: &ObservedRecord,
    pairing: Pairing,
) -> Option<String> {
    if let Some(s) = obs.size {
        if s != engine.size {
            return Some(format!("sizeof: engine {}, oracle {s}", engine.size));
        }
    }
    if let Some(a) = obs.align {
        if a != engine.align {
            return Some(format!("alignof: engine {}, oracle {a}", engine.align));
        }
    }
    let pairs: Vec<(&super::layout::MemberLayout, Option<&ObservedMember>)> = match pairing {
        Pairing::Positional => {
            if obs.members.len() != engine.members.len() {
                return Some(format!(
                    "member count: engine {}, oracle {}",
                    engine.members.len(),
                    obs.members.len()
                ));
            }
            engine
                .members
                .iter()
                .zip(obs.members.iter().map(Some))
                .collect()
        }
        Pairing::ByName => engine
            .members
            .iter()
            .filter(|m| m.name.is_some())
            .map(|m| (m, obs.members.iter().find(|o| o.name == m.name)))
            .collect(),
    };
    for (m, o) in pairs {
        let mname = m.name.as_deref().unwrap_or("<unnamed>");
        let Some(o) = o else {
            return Some(format!("member `{mname}` missing from the oracle's answer"));
        };
        match (m.bit_offset.zip(m.bit_width), o.bits) {
            (Some(eb), Some(ob)) => {
                // A zero-width bit field has no bits: only where it moved allocation to.
                let same = if eb.1 == 0 {
                    ob.1 == 0 && eb.0 / 8 == ob.0 / 8
                } else {
                    eb == ob
                };
                if !same {
                    return Some(format!(
                        "bit field `{mname}`: engine bit {} width {}, oracle bit {} width {}",
                        eb.0, eb.1, ob.0, ob.1
                    ));
                }
            }
            (None, None) => {
                if m.offset != o.offset {
                    return Some(format!(
                        "member `{mname}`: engine offset {}, oracle {}",
                        m.offset, o.offset
                    ));
                }
            }
            // NVRTC's DWARF describes a bit field that exactly fills an aligned storage unit
            // of its type (`short f : 16` at an even byte) as a plain member: the same bits.
            (Some((bit, w)), None)
                if pairing == Pairing::ByName
                    && bit % 8 == 0
                    && u64::from(w) == m.size * 8
                    && o.offset == bit / 8 => {}
            _ => {
                return Some(format!(
                    "member `{mname}`: bit field in one answer, not in the other"
                ))
            }
        }
    }
    let _ = rec;
    None
}

/// The full mismatch report: the type in C, the engine's answer and the oracle's.
pub(crate) fn mismatch_message(
    top: &TypeDef,
    rec: &TypeDef,
    engine: &Layout,
    oracle: &str,
    what: &str,
    oracle_answer: &str,
) -> String {
    format!(
        "{oracle} disagrees on `{}`: {what}\n--- type (C) ---\n{}--- engine ---\n{}\n--- {oracle} ---\n{}",
        rec.name,
        render_c(std::slice::from_ref(top), Dialect::C),
        describe_engine(engine),
        oracle_answer
    )
}

/// Judge every top-level type from the oracle's observations of all records (nested ones
/// included). A record the oracle did not report is an error for its top-level type.
pub(crate) fn judge(
    types: &[TypeDef],
    observed: &HashMap<String, ObservedRecord>,
    pairing: Pairing,
    oracle: &str,
    engine: EngineFn<'_>,
) -> Vec<TypeResult> {
    types
        .iter()
        .map(|top| {
            let verdict = (|| {
                for rec in all_records(std::slice::from_ref(top)) {
                    let engine = match engine(rec) {
                        Ok(l) => l,
                        Err(e) => return Agreement::Error(format!("engine: {e}")),
                    };
                    let Some(obs) = observed.get(&rec.name) else {
                        return Agreement::Error(format!(
                            "{oracle} reported no layout for `{}`",
                            rec.name
                        ));
                    };
                    if let Some(what) = compare_record(rec, &engine, obs, pairing) {
                        return Agreement::Mismatch(mismatch_message(
                            top,
                            rec,
                            &engine,
                            oracle,
                            &what,
                            &describe_observed(obs),
                        ));
                    }
                }
                Agreement::Agree
            })();
            TypeResult {
                name: top.name.clone(),
                verdict,
            }
        })
        .collect()
}

/// Every top-level type gets the same error (a batch-wide failure).
pub(crate) fn all_error(types: &[TypeDef], msg: &str) -> Vec<TypeResult> {
    types
        .iter()
        .map(|t| TypeResult {
            name: t.name.clone(),
            verdict: Agreement::Error(msg.to_string()),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::type_file::parse_types;

    fn example_types() -> Vec<TypeDef> {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../suites/abi/types.yaml");
        parse_types(&std::fs::read_to_string(path).unwrap(), path).unwrap()
    }

    /// Run an oracle on `types`; `None` when its tools are missing, after
    /// [`crate::testkit::tool_missing`] (which fails the test under `GPUCTS_REQUIRE_TOOLS=1`).
    fn run(oracle: Oracle, types: &[TypeDef]) -> Option<usize> {
        let tc = Toolchain::discover_system();
        let mut agreed = 0;
        let mut bad = String::new();
        for chunk in types.chunks(BATCH) {
            match check_batch(oracle, &tc, chunk) {
                Err(ToolError::NotAvailable(c)) => {
                    crate::testkit::tool_missing(
                        crate::testkit::Need::Tool,
                        &format!("{c} (for the {} oracle)", oracle.name()),
                    );
                    return None;
                }
                Err(e) => panic!("{} oracle could not run: {e}", oracle.name()),
                Ok(rs) => {
                    for r in rs {
                        match r.verdict {
                            Agreement::Agree => agreed += 1,
                            v => {
                                let _ = writeln!(bad, "{}: {v:?}", r.name);
                            }
                        }
                    }
                }
            }
        }
        assert!(bad.is_empty(), "{} oracle:\n{bad}", oracle.name());
        eprintln!("{} oracle: {agreed} types agree", oracle.name());
        Some(agreed)
    }

    #[test]
    fn oracle_names_deserialize() {
        for o in Oracle::VARIANTS {
            let back: Oracle = serde_saphyr::from_str(o.name()).unwrap();
            assert_eq!(back, *o);
        }
    }

    #[test]
    fn clang_agrees_on_hand_written_types() {
        let t = example_types();
        if let Some(n) = run(Oracle::Clang, &t) {
            assert_eq!(n, t.len());
        }
    }

    #[test]
    fn nvrtc_agrees_on_hand_written_types() {
        let t = example_types();
        if let Some(n) = run(Oracle::Nvrtc, &t) {
            assert_eq!(n, t.len());
        }
    }

    #[test]
    fn dwarf_agrees_on_hand_written_types() {
        let t = example_types();
        if let Some(n) = run(Oracle::Dwarf, &t) {
            assert_eq!(n, t.len());
        }
    }

    #[test]
    fn clang32_agrees_on_hand_written_types() {
        let t = example_types();
        if let Some(n) = run(Oracle::Clang32, &t) {
            assert_eq!(n, t.len());
        }
    }

    #[test]
    fn clang32_agrees_on_random_types() {
        run(Oracle::Clang32, &crate::abi::random::random_batch(0, 300));
    }

    #[test]
    fn clang_dwarf_agrees_on_hand_written_types() {
        let t = example_types();
        if let Some(n) = run(Oracle::ClangDwarf, &t) {
            assert_eq!(n, t.len());
        }
    }

    #[test]
    fn clang_dwarf_agrees_on_random_types() {
        run(
            Oracle::ClangDwarf,
            &crate::abi::random::random_batch(0, 300),
        );
    }

    #[test]
    fn clang_agrees_on_random_types() {
        run(Oracle::Clang, &crate::abi::random::random_batch(0, 300));
    }

    #[test]
    fn nvrtc_agrees_on_random_types() {
        run(Oracle::Nvrtc, &crate::abi::random::random_batch(0, 300));
    }

    #[test]
    fn dwarf_agrees_on_random_types() {
        run(Oracle::Dwarf, &crate::abi::random::random_batch(0, 300));
    }

    /// The fixed seed set of the suite (2,000 random types) through every available oracle,
    /// and the bench figures: `cargo test -p gpucts --lib abi::oracle::tests::bench -- --ignored --nocapture`.
    #[test]
    #[ignore = "slow: 2,000 types per oracle"]
    fn bench_and_agreement_on_2000_random_types() {
        let tc = Toolchain::discover_system();
        let report = bench(&tc, 2000);
        eprintln!("{report}");
        for line in report.lines().filter(|l| !l.contains("skipped")) {
            assert!(line.contains("(2000 agree, 0 mismatch"), "{line}");
        }
    }
}
