//! ptx-interop 13.2 §1.3: "plain bit fields (neither signed nor unsigned is specified) are
//! treated as signed", and a bit field with only `signed` has type int. No layout shows this;
//! the producer's constant evaluator does. For every plain bit-field type of the §1.3 table, a
//! `constexpr` function stores all-ones into a 3-bit field and reads it back: a signed field
//! reads -1, an unsigned one 7. The same source goes to NVRTC and to clang-19 (CUDA device
//! C++); each producer's answer is located by line.

use std::fmt::Write as _;

use super::{Agreement, TypeResult};
use crate::backend::toolchain::{ToolError, Toolchain};

/// (declaration spelling, expected value read back from an all-ones 3-bit field).
const CASES: &[(&str, i32)] = &[
    ("char", -1),
    ("short", -1),
    ("int", -1),
    ("long long", -1),
    ("signed", -1), // §1.3: no type given → int, here explicitly signed
    ("signed char", -1),
    ("unsigned char", 7),
    ("unsigned short", 7),
    ("unsigned int", 7),
    ("unsigned long long", 7),
];

/// The source, and the line of each case's assertion.
fn source() -> (String, Vec<usize>) {
    let mut s = String::new();
    let mut lines = Vec::new();
    for (i, (ty, want)) in CASES.iter().enumerate() {
        let _ = writeln!(
            s,
            "struct gpucts_sgn{i} {{ {ty} f : 3; }};\n__device__ constexpr int gpucts_read{i}() {{ gpucts_sgn{i} s{{}}; s.f = 7; return s.f; }}"
        );
        lines.push(s.lines().count() + 1);
        let _ = writeln!(s, "static_assert(gpucts_read{i}() == {want}, \"gpucts\");");
    }
    (s, lines)
}

pub use crate::backend::producer::Producer;
use crate::backend::producer::{Language, Options, Source};

/// The C++ dialects the probe is written in: both constant evaluators read the same body.
pub const LANGUAGES: [Language; 2] = [Language::CudaCpp, Language::ClangCuda];

/// clang-19 reads the probe without CUDA's headers: `__device__` is defined first, one line
/// above the body.
const CLANG_PRELUDE: &str = "#define __device__ __attribute__((device))\n";

/// This oracle's view of the producer vocabulary: the C++ front ends whose constant evaluator
/// it asks.
pub fn producers() -> Vec<Producer> {
    Producer::accepting(&LANGUAGES)
}

/// One result per (producer, plain type): `name` is `PRODUCER: TYPE f : 3`.
pub fn check(tc: &Toolchain, producer: Producer) -> Result<Vec<TypeResult>, ToolError> {
    let (body, lines) = source();
    let Some(language) = producer.language_of(&LANGUAGES) else {
        let e = crate::backend::producer::in_view(producer, "the signedness oracle", &producers());
        return Err(ToolError::Failed {
            tool: producer.name().to_string(),
            log: e.err().map(|e| e.to_string()).unwrap_or_default(),
        });
    };
    if let Some(cap) = producer.capability().filter(|c| !tc.has(*c)) {
        return Err(ToolError::NotAvailable(cap));
    }
    let (text, shift) = match language {
        Language::ClangCuda => (format!("{CLANG_PRELUDE}{body}"), 1),
        _ => (body, 0),
    };
    let options = Options {
        nvrtc: &["-std=c++17"],
        clang: &["-std=c++17"],
        ..Options::default()
    };
    let src = Source::new(language, &text)
        .file_name("gpucts_signedness.cu")
        .options(options);
    let run = producer.compile(tc, &src).map(drop);
    let log = match run {
        Ok(()) => String::new(),
        Err(ToolError::Failed { log, .. }) => log,
        Err(e) => return Err(e),
    };
    let pname = producer.name();
    // Error lines: NVRTC writes `name(LINE): error: ...`, clang `file:LINE:COL: error: ...`.
    let re = regex::Regex::new(r"(?:\((\d+)\)|:(\d+):\d+): error").expect("static regex");
    let error_lines: Vec<usize> = re
        .captures_iter(&log)
        .filter_map(|c| c.get(1).or(c.get(2))?.as_str().parse().ok())
        .collect();
    let case_lines: Vec<usize> = lines.iter().map(|l| l + shift).collect();
    if error_lines.iter().any(|l| !case_lines.contains(l))
        || (!log.is_empty() && error_lines.is_empty())
    {
        return Ok(CASES
            .iter()
            .map(|(ty, _)| TypeResult {
                name: format!("{pname}: {ty} f : 3"),
                verdict: Agreement::Error(format!("{pname} rejected the probe:\n{log}")),
            })
            .collect());
    }
    Ok(CASES
        .iter()
        .zip(&case_lines)
        .map(|((ty, want), line)| TypeResult {
            name: format!("{pname}: {ty} f : 3"),
            verdict: if error_lines.contains(line) {
                Agreement::Mismatch(format!(
                    "{pname}: a plain `{ty} f : 3` holding all ones does not read back {want} (ptx-interop 13.2 §1.3: plain bit fields are signed)\n{log}"
                ))
            } else {
                Agreement::Agree
            },
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::toolchain::ClangLang;
    use crate::capability::Capability;

    #[test]
    fn plain_bit_fields_are_signed_in_every_producer() {
        let tc = Toolchain::discover_system();
        for p in producers() {
            match check(&tc, p) {
                Err(ToolError::NotAvailable(c)) => {
                    crate::testkit::tool_missing(crate::testkit::Need::Tool, c.name())
                }
                Err(e) => panic!("{e}"),
                Ok(rs) => {
                    assert_eq!(rs.len(), CASES.len());
                    for r in rs {
                        assert_eq!(r.verdict, Agreement::Agree, "{}", r.name);
                    }
                }
            }
        }
    }

    #[test]
    fn a_wrong_expectation_is_reported_on_its_line() {
        let tc = Toolchain::discover_system();
        crate::require!(tc.has(Capability::Nvrtc), "nvrtc");
        // The probe must have teeth: claim `unsigned int f : 3` reads -1 and NVRTC refuses.
        let (src, lines) = source();
        let bad = src.replace("gpucts_read8() == 7", "gpucts_read8() == -1");
        let Err(ToolError::Failed { log, .. }) =
            tc.nvrtc(&bad, "x.cu", &["--gpu-architecture=compute_90"])
        else {
            panic!("NVRTC accepted a false assertion")
        };
        assert!(log.contains(&format!("({}): error", lines[8])), "{log}");
    }

    #[test]
    fn clang_reports_a_wrong_expectation_on_its_line() {
        let tc = Toolchain::discover_system();
        crate::require!(tc.has(Capability::Clang), "clang");
        let (src, lines) = source();
        let bad = format!(
            "#define __device__ __attribute__((device))\n{}",
            src.replace("gpucts_read0() == -1", "gpucts_read0() == 7")
        );
        let Err(ToolError::Failed { log, .. }) =
            tc.clang_ptx(&bad, ClangLang::Cuda, &["-std=c++17"])
        else {
            panic!("clang accepted a false assertion")
        };
        assert!(log.contains(&format!(":{}:", lines[0] + 1)), "{log}");
    }
}
