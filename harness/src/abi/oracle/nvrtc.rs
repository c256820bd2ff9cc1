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

use super::{all_error, engine64, mismatch_message, Agreement, EngineFn, TypeResult};
use crate::abi::render::render_c;
use crate::abi::types::{all_records, Dialect, TypeDef};
use crate::backend::toolchain::{ToolError, Toolchain};

pub(crate) const NVRTC_OPTS: &[&str] = &["--gpu-architecture=compute_90", "-std=c++17"];

const PRELUDE: &str =
    "#define GPUCTS_OFFSETOF(T, m) ((unsigned long long)__INTADDR__(&(((T *)0)->m)))\n\
template <unsigned long long N> struct gpucts_show;\n";

/// One assertion: which record, what quantity, the engine's value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assertion {
    pub record: String,
    /// `sizeof(T)`, `alignof(T)` or `GPUCTS_OFFSETOF(T, m)`.
    pub expr: String,
    pub engine: u64,
}

/// The source and, by 1-based line, the assertion on that line.
pub fn source(
    types: &[TypeDef],
    engine: EngineFn<'_>,
) -> Result<(String, BTreeMap<usize, Assertion>), crate::abi::layout::LayoutError> {
    let mut s = String::from(PRELUDE);
    s.push_str(&render_c(types, Dialect::Cuda));
    let mut lines = BTreeMap::new();
    let mut line = s.lines().count() + 1;
    for r in all_records(types) {
        let l = engine(r)?;
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

pub(crate) fn check_batch(tc: &Toolchain, types: &[TypeDef]) -> Result<Vec<TypeResult>, ToolError> {
    check_batch_with(tc, types, &engine64)
}

pub(crate) fn check_batch_with(
    tc: &Toolchain,
    types: &[TypeDef],
    engine: EngineFn<'_>,
) -> Result<Vec<TypeResult>, ToolError> {
    let (src, asserts) = match source(types, engine) {
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
    // NVRTC's front end stops after an error limit; assertions after that point were never
    // evaluated, so no type may pass on their silence.
    let stopped_early = log.contains("error limit") || log.contains("Compilation terminated");
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
                    let engine = engine(rec).expect("laid out above");
                    return TypeResult {
                        name: top.name.clone(),
                        verdict: Agreement::Mismatch(mismatch_message(
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
            if stopped_early {
                TypeResult {
                    name: top.name.clone(),
                    verdict: Agreement::Error(format!(
                        "NVRTC stopped before judging every assertion:\n{log}"
                    )),
                }
            } else {
                agree(top)
            }
        })
        .collect())
}

fn agree(t: &TypeDef) -> TypeResult {
    TypeResult {
        name: t.name.clone(),
        verdict: Agreement::Agree,
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
    use crate::abi::type_file::parse_types;

    #[test]
    fn assertions_sit_on_the_lines_recorded() {
        let t = parse_types(
            "types:\n  - name: S\n    members: [{name: c, type: char}, {name: v, type: float3}, {name: b, type: int, bits: 3}]\n",
            "t",
        )
        .unwrap();
        let (src, asserts) = source(&t, &engine64).unwrap();
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

    #[test]
    fn a_wrong_engine_answer_is_caught_with_nvrtcs_value() {
        let tc = Toolchain::discover_system();
        crate::require!(tc.has(crate::capability::Capability::Nvrtc), "nvrtc");
        let t = parse_types(
            "types:\n  - name: S\n    members: [{name: c, type: char}, {name: v, type: float3}]\n  - name: T\n    members: [{name: c, type: char}, {name: d, type: double2}]\n",
            "t",
        )
        .unwrap();
        // An engine that gave double2 the alignment of its element (8) instead of §1.2's
        // 2 × 8 = 16 must be caught, with NVRTC's own numbers in the report.
        let wrong =
            |t: &TypeDef| -> Result<crate::abi::layout::Layout, crate::abi::layout::LayoutError> {
                let mut l = engine64(t)?;
                if t.name == "T" {
                    l.members[1].offset = 8;
                    l.size = 24;
                    l.align = 8;
                }
                Ok(l)
            };
        let r = check_batch_with(&tc, &t, &wrong).unwrap();
        assert_eq!(r[0].verdict, Agreement::Agree);
        let Agreement::Mismatch(m) = &r[1].verdict else {
            panic!("expected a mismatch: {:?}", r[1])
        };
        assert!(m.contains("sizeof(T) = 32 (engine 24)"), "{m}");
        assert!(m.contains("alignof(T) = 16 (engine 8)"), "{m}");
        assert!(m.contains("GPUCTS_OFFSETOF(T, d) = 16 (engine 8)"), "{m}");
    }

    /// CUDA's `double4`, `longlong4` and `long4` are not native vectors (§1.2: 8-byte types
    /// have 1- and 2-element vectors only), so the engine has no such vector; CUDA declares
    /// them with alignment 16, where an aggregate of four 8-byte members would get 8 by §1.2's
    /// aggregate rule. §1.2 allows this ("not followed if the alignments are defined by the
    /// input language"); this test records what NVRTC does so a change is noticed.
    #[test]
    fn cuda_4_element_8_byte_vectors_use_the_input_language_exception() {
        let tc = Toolchain::discover_system();
        crate::require!(tc.has(crate::capability::Capability::Nvrtc), "nvrtc");
        use crate::abi::layout::{size_align, AddressSize};
        use crate::abi::types::{Scalar, Ty};
        assert!(size_align(&Ty::Vector(Scalar::Double, 4), AddressSize::A64).is_err());
        let quad = parse_types(
            "types:\n  - name: Q\n    members: [{name: x, type: double}, {name: y, type: double}, {name: z, type: double}, {name: w, type: double}]\n",
            "t",
        )
        .unwrap();
        assert_eq!(engine64(&quad[0]).unwrap().align, 8);
        let src = format!(
            "{PRELUDE}{}__device__ gpucts_show<alignof(double4)> q0;\n__device__ gpucts_show<alignof(longlong4)> q1;\n__device__ gpucts_show<alignof(Q)> q2;\n",
            render_c(&quad, Dialect::Cuda)
        );
        let Err(ToolError::Failed { log, .. }) = tc.nvrtc(&src, "q.cu", NVRTC_OPTS) else {
            panic!("the probes must fail to compile")
        };
        let shown: Vec<String> = regex::Regex::new(r"gpucts_show<(\d+)ULL>")
            .unwrap()
            .captures_iter(&log)
            .map(|c| c[1].to_string())
            .collect();
        assert_eq!(shown, vec!["16", "16", "8"], "{log}");
    }
}
