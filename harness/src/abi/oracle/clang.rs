//! clang-19's record layouts for `nvptx64-nvidia-cuda` (`-Xclang -fdump-record-layouts`).
//!
//! The dump gives, for every aggregate whose layout clang computed, its size, alignment and
//! each member's byte offset or, for bit fields, `BYTE:FIRST-LAST` bit numbers counted from
//! that byte (`BYTE:-` for a zero-width one).

use std::collections::HashMap;
use std::fmt::Write as _;

use super::{all_error, judge, ObservedMember, ObservedRecord, Pairing, TypeResult};
use crate::abi::layout::{layout, AddressSize};
use crate::abi::render::render_c_at;
use crate::abi::types::{all_records, Dialect, TypeDef};
use crate::backend::toolchain::{ClangLang, ToolError, Toolchain};

/// The arguments the oracle passes to clang after the target (the toolchain appends the file).
pub(crate) const CLANG_ARGS: &[&str] = &["-fsyntax-only", "-Xclang", "-fdump-record-layouts"];

/// clang's NVPTX target for an `.address_size`: `nvptx64` (64) or `nvptx` (32).
pub fn target(a: AddressSize) -> &'static str {
    match a {
        AddressSize::A64 => "--target=nvptx64-nvidia-cuda",
        AddressSize::A32 => "--target=nvptx-nvidia-cuda",
    }
}

/// The C source for a batch: the definitions, and one use of every record so clang lays each
/// out (clang dumps only the records whose layout it needed).
pub fn source(types: &[TypeDef], a: AddressSize) -> String {
    let mut s = render_c_at(types, Dialect::C, a);
    for (i, r) in all_records(types).iter().enumerate() {
        let _ = writeln!(s, "int gpucts_use_{i}[sizeof({})];", r.name);
    }
    s
}

/// Check a batch at `.address_size` `a` (clang's `nvptx64` or 32-bit `nvptx` target; `long`
/// and pointers follow it, ptx-interop 13.2 §1.1).
pub(crate) fn check_batch(
    tc: &Toolchain,
    types: &[TypeDef],
    a: AddressSize,
) -> Result<Vec<TypeResult>, ToolError> {
    let src = source(types, a);
    let mut args = vec![target(a)];
    args.extend_from_slice(CLANG_ARGS);
    match tc.clang_stdout(&src, ClangLang::C, &args) {
        Ok(dump) => Ok(compare_dump(types, &dump, a)),
        Err(ToolError::Failed { log, .. }) => Ok(all_error(
            types,
            &format!("clang rejected the batch:\n{log}\n--- source ---\n{src}"),
        )),
        Err(e) => Err(e),
    }
}

/// Judge a batch from clang's dump.
pub(crate) fn compare_dump(types: &[TypeDef], dump: &str, a: AddressSize) -> Vec<TypeResult> {
    let engine = |t: &TypeDef| layout(t, a);
    match parse_dump(dump) {
        Ok(observed) => judge(types, &observed, Pairing::Positional, "clang", &engine),
        Err(e) => all_error(types, &format!("unreadable clang record layout dump: {e}")),
    }
}

/// Parse `-fdump-record-layouts` output into records by tag name.
/// A line of clang's `-fdump-record-layouts` output that does not read as a layout (`line` is
/// the line's text).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum DumpError {
    #[error("expected a number, got `{text}` in `{line}`")]
    NotANumber { text: String, line: String },
    #[error("bad bit range in `{line}`")]
    BitRange { line: String },
}

pub(crate) fn parse_dump(dump: &str) -> Result<HashMap<String, ObservedRecord>, DumpError> {
    let mut out = HashMap::new();
    for block in dump.split("*** Dumping AST Record Layout").skip(1) {
        let mut lines = block.lines().filter(|l| l.contains('|'));
        let Some(head) = lines.next() else { continue };
        let (_, title) = head.split_once('|').unwrap_or_default();
        let title = title.trim();
        // `struct NAME`, `union NAME`; anonymous records print `(unnamed ...)`, skipped.
        let name = match title.split_once(' ') {
            Some(("struct" | "union", n)) if !n.contains(' ') => n.to_string(),
            _ => continue,
        };
        let mut rec = ObservedRecord::default();
        for line in lines {
            let (left, right) = line.split_once('|').unwrap_or_default();
            let left = left.trim();
            let right = right.strip_prefix(' ').unwrap_or(right);
            if let Some(stats) = right.trim().strip_prefix('[') {
                for kv in stats.trim_end_matches(']').split(", ") {
                    if let Some(v) = kv.strip_prefix("sizeof=") {
                        rec.size = Some(num(v, line)?);
                    } else if let Some(v) = kv.strip_prefix("align=") {
                        rec.align = Some(num(v, line)?);
                    }
                }
                continue;
            }
            // Direct members are indented by two spaces; deeper lines expand nested records.
            let indent = right.len() - right.trim_start().len();
            if indent != 2 {
                continue;
            }
            let decl = right.trim();
            // The member name is the last word when the member is named (our names never
            // contain spaces); clang prints `int ` (trailing space) for an unnamed one.
            let member_name = if right.ends_with(' ') {
                None
            } else {
                decl.rsplit(' ').next().map(str::to_string)
            };
            let m = match left.split_once(':') {
                None => ObservedMember {
                    name: member_name,
                    offset: num(left, line)?,
                    bits: None,
                },
                Some((byte, range)) => {
                    let byte = num(byte, line)?;
                    let bits = if range == "-" {
                        (byte * 8, 0)
                    } else {
                        let (a, b) = range.split_once('-').ok_or_else(|| DumpError::BitRange {
                            line: line.to_string(),
                        })?;
                        let (a, b) = (num(a, line)?, num(b, line)?);
                        (byte * 8 + a, (b - a + 1) as u32)
                    };
                    ObservedMember {
                        name: member_name,
                        offset: bits.0 / 8,
                        bits: Some(bits),
                    }
                }
            };
            rec.members.push(m);
        }
        out.insert(name, rec);
    }
    Ok(out)
}

fn num(s: &str, line: &str) -> Result<u64, DumpError> {
    s.trim().parse().map_err(|_| DumpError::NotANumber {
        text: s.to_string(),
        line: line.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::oracle::Agreement;
    use crate::abi::type_file::parse_types;

    /// A dump as clang-19 printed it for the §1.3 boundary-alignment example (recorded from
    /// `clang-19 --target=nvptx64-nvidia-cuda -fsyntax-only -Xclang -fdump-record-layouts`).
    const FIG3_DUMP: &str = "
*** Dumping AST Record Layout
         0 | struct B
     0:0-8 |   short s
     1:1-9 |   int j
         3 |   char c
     4:0-8 |   short t
     6:0-8 |   short u
         8 |   char d
           | [sizeof=12, align=4]
";

    #[test]
    fn parses_bit_field_ranges() {
        let recs = parse_dump(FIG3_DUMP).unwrap();
        let b = &recs["B"];
        assert_eq!((b.size, b.align), (Some(12), Some(4)));
        let bits: Vec<_> = b.members.iter().map(|m| m.bits).collect();
        assert_eq!(
            bits,
            vec![
                Some((0, 9)),
                Some((9, 9)),
                None,
                Some((32, 9)),
                Some((48, 9)),
                None
            ]
        );
        assert_eq!(b.members[2].offset, 3);
    }

    #[test]
    fn a_wrong_dump_is_a_mismatch_naming_both_answers() {
        let t = parse_types(
            "types:\n  - name: B\n    members: [{name: s, type: short, bits: 9}, {name: j, type: int, bits: 9}, {name: c, type: char}, {name: t, type: short, bits: 9}, {name: u, type: short, bits: 9}, {name: d, type: char}]\n",
            "t",
        )
        .unwrap();
        assert_eq!(
            compare_dump(&t, FIG3_DUMP, AddressSize::A64)[0].verdict,
            Agreement::Agree
        );
        let wrong = FIG3_DUMP.replace("6:0-8 |   short u", "5:1-9 |   short u");
        let Agreement::Mismatch(msg) = &compare_dump(&t, &wrong, AddressSize::A64)[0].verdict
        else {
            panic!("expected a mismatch")
        };
        assert!(
            msg.contains("engine bit 48") && msg.contains("oracle bit 41"),
            "{msg}"
        );
        assert!(msg.contains("struct B {"), "{msg}");
    }

    /// Why the clang rendering spells vectors as aligned structs: clang's `ext_vector_type(3)`
    /// (OpenCL's vector) is 16 bytes with alignment 16, where §1.2 gives a 3-element native
    /// vector of float size 12 and the element's alignment 4. §1.2 lets an input language
    /// define its own alignments, so this is not a producer bug; recorded so a change shows.
    #[test]
    fn clang_ext_vector_type_3_is_not_the_native_vector() {
        let tc = Toolchain::discover_system();
        crate::require!(tc.has(crate::capability::Capability::Clang), "clang");
        let src = "typedef float f3 __attribute__((ext_vector_type(3)));\nstruct V { char c; f3 v; };\nint u[sizeof(struct V)];\n";
        let mut args = vec![target(AddressSize::A64)];
        args.extend_from_slice(CLANG_ARGS);
        let dump = tc.clang_stdout(src, ClangLang::C, &args).unwrap();
        let v = &parse_dump(&dump).unwrap()["V"];
        assert_eq!(
            (v.size, v.align, v.members[1].offset),
            (Some(32), Some(16), 16)
        );
        let t = parse_types(
            "types:\n  - name: V\n    members: [{name: c, type: char}, {name: v, type: float3}]\n",
            "t",
        )
        .unwrap();
        let l = layout(&t[0], AddressSize::A64).unwrap();
        assert_eq!((l.size, l.align, l.members[1].offset), (16, 4, 4));
    }
}
