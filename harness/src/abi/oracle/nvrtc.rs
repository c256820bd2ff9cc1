//! NVRTC as an oracle: the batch's types in CUDA C++ (CUDA's own vector types for native
//! vectors) followed by `static_assert`s of the engine's sizeof, alignof and the offset of
//! every non-bit-field member. NVRTC evaluates them with its own layout; a failed assertion is
//! located by its line. For each failure a second compilation asks NVRTC for the actual value
//! (an incomplete template instantiated with it names the number in the error).
//!
//! NVRTC has no `offsetof` usable in constant expressions without the CUDA runtime headers;
//! EDG's `__INTADDR__` makes the classic null-pointer form a constant.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

use super::{all_error, mismatch_message, TypeResult, Verdict};
use crate::abi::layout::{layout, AddressSize};
use crate::abi::types::{all_records, render_c, Dialect, TypeDef};
use crate::backend::toolchain::{ToolError, Toolchain};

pub const NVRTC_OPTS: &[&str] = &["--gpu-architecture=compute_90", "-std=c++17"];

const PRELUDE: &str =
    "#define GPUCTS_OFFSETOF(T, m) ((unsigned long long)__INTADDR__(&(((T *)0)->m)))\n\
template <unsigned long long N> struct gpucts_show;\n";

/// One assertion: which record, what quantity, the engine's value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Assertion {
    pub record: String,
    /// `sizeof(T)`, `alignof(T)` or `GPUCTS_OFFSETOF(T, m)`.
    pub expr: String,
    pub engine: u64,
}

/// The source and, by 1-based line, the assertion on that line.
pub(crate) fn source(types: &[TypeDef]) -> Result<(String, BTreeMap<usize, Assertion>), String> {
    let mut s = String::from(PRELUDE);
    s.push_str(&render_c(types, Dialect::Cuda));
    let mut lines = BTreeMap::new();
    let mut line = s.lines().count() + 1;
    for r in all_records(types) {
        let l = layout(r, AddressSize::A64)?;
        let mut add = |expr: String, v: u64, s: &mut String| {
            let _ = writeln!(s, "static_assert({expr} == {v}ULL, \"gpucts\");");
            lines.insert(
                line,
                Assertion {
                    record: r.name.clone(),
                    expr,
                    engine: v,
                },
            );
            line += 1;
        };
        add(format!("sizeof({})", r.name), l.size, &mut s);
        add(format!("alignof({})", r.name), l.align, &mut s);
        for (f, m) in r.fields.iter().zip(&l.members) {
            if let (None, Some(n)) = (f.bits, &f.name) {
                add(
                    format!("GPUCTS_OFFSETOF({}, {n})", r.name),
                    m.offset,
                    &mut s,
                );
            }
        }
    }
    Ok((s, lines))
}

/// `(line, message)` of every error in an NVRTC log (`NAME(LINE): error: MESSAGE`).
pub(crate) fn log_errors(log: &str) -> Vec<(usize, String)> {
    let re = regex::Regex::new(r"\((\d+)\): error: (.*)").expect("static regex");
    re.captures_iter(log)
        .filter_map(|c| Some((c[1].parse().ok()?, c[2].to_string())))
        .collect()
}

pub fn check_batch(tc: &Toolchain, types: &[TypeDef]) -> Result<Vec<TypeResult>, ToolError> {
    let (src, asserts) = match source(types) {
        Ok(x) => x,
        Err(e) => return Ok(all_error(types, &format!("engine: {e}"))),
    };
    let log = match tc.nvrtc(&src, "gpucts_abi.cu", NVRTC_OPTS) {
        Ok(_) => return Ok(types.iter().map(agree).collect()),
        Err(ToolError::Failed { log, .. }) => log,
        Err(e) => return Err(e),
    };
    let mut failed: Vec<&Assertion> = Vec::new();
    for (line, msg) in log_errors(&log) {
        match asserts.get(&line) {
            Some(a) if msg.contains("static assertion failed") => failed.push(a),
            _ => {
                return Ok(all_error(
                    types,
                    &format!("NVRTC rejected the batch at line {line}: {msg}\n{log}"),
                ))
            }
        }
    }
    if failed.is_empty() {
        return Ok(all_error(
            types,
            &format!("NVRTC failed without an error line:\n{log}"),
        ));
    }
    let actual = query_values(tc, types, &failed)?;
    // Attribute each failure to the top-level type that contains its record.
    let mut by_record: HashMap<&str, Vec<String>> = HashMap::new();
    for (a, v) in failed.iter().zip(&actual) {
        let v = v.map_or("?".into(), |v| v.to_string());
        by_record
            .entry(a.record.as_str())
            .or_default()
            .push(format!("{} = {v} (engine {})", a.expr, a.engine));
    }
    Ok(types
        .iter()
        .map(|top| {
            for rec in all_records(std::slice::from_ref(top)) {
                if let Some(found) = by_record.get(rec.name.as_str()) {
                    let engine = layout(rec, AddressSize::A64).expect("laid out above");
                    return TypeResult {
                        name: top.name.clone(),
                        verdict: Verdict::Mismatch(mismatch_message(
                            top,
                            rec,
                            &engine,
                            "nvrtc",
                            &found[0],
                            &found.join("\n"),
                        )),
                    };
                }
            }
            agree(top)
        })
        .collect())
}

fn agree(t: &TypeDef) -> TypeResult {
    TypeResult {
        name: t.name.clone(),
        verdict: Verdict::Agree,
    }
}

/// NVRTC's own value of each failed assertion's expression.
fn query_values(
    tc: &Toolchain,
    types: &[TypeDef],
    failed: &[&Assertion],
) -> Result<Vec<Option<u64>>, ToolError> {
    let mut s = String::from(PRELUDE);
    s.push_str(&render_c(types, Dialect::Cuda));
    let first = s.lines().count() + 1;
    for (i, a) in failed.iter().enumerate() {
        let _ = writeln!(s, "__device__ gpucts_show<{}> gpucts_q{i};", a.expr);
    }
    let log = match tc.nvrtc(&s, "gpucts_abi_query.cu", NVRTC_OPTS) {
        Ok(_) => String::new(),
        Err(ToolError::Failed { log, .. }) => log,
        Err(e) => return Err(e),
    };
    let re = regex::Regex::new(r"gpucts_show<(\d+)ULL>").expect("static regex");
    let mut out = vec![None; failed.len()];
    for (line, msg) in log_errors(&log) {
        if let (Some(i), Some(c)) = (line.checked_sub(first), re.captures(&msg)) {
            if i < out.len() {
                out[i] = c[1].parse().ok();
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::types::parse_types;

    #[test]
    fn assertions_sit_on_the_lines_recorded() {
        let t = parse_types(
            "types:\n  - name: S\n    members: [{name: c, type: char}, {name: v, type: float3}, {name: b, type: int, bits: 3}]\n",
            "t",
        )
        .unwrap();
        let (src, asserts) = source(&t).unwrap();
        let lines: Vec<&str> = src.lines().collect();
        assert_eq!(
            asserts.len(),
            4,
            "sizeof, alignof, two non-bit-field offsets"
        );
        for (n, a) in &asserts {
            assert!(lines[n - 1].contains(&a.expr), "{}", lines[n - 1]);
        }
        // §1.2 float3: alignment of float, so v sits at 4.
        assert!(src.contains("GPUCTS_OFFSETOF(S, v) == 4ULL"), "{src}");
        assert!(src.contains("float3 v;"), "CUDA's own vector type: {src}");
    }

    #[test]
    fn reads_error_lines() {
        let log = "t.cu(7): error: static assertion failed with \"gpucts\"\n  static_assert(...)\n";
        assert_eq!(
            log_errors(log),
            vec![(7, "static assertion failed with \"gpucts\"".into())]
        );
    }
}
