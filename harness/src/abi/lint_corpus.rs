//! The `ptx-corpus/` cases of `suites/ptx.yaml`: each file is read by the PTX reader and
//! linted, and the outcome is held to what ptxas said of the file (its manifest,
//! `FILE.manifest`, written by `ptx-corpus/gen/generate.py` from a measured ptxas run) and,
//! where the suite gives one, to the verdict the spec's rules give (ptx-interop 13.2 §2.3).
//!
//! What ptxas's verdict implies for the reader:
//! - ptxas accepts (or cannot judge: 32-bit PTX, an ISA newer than it, an internal error):
//!   the file is read — exit 0 or 1, never 2;
//! - ptxas rejects it as not PTX (syntax), for a feature newer than its `.version`, or for an
//!   opcode or symbol it does not know (name): the lint does not pass it — exit 1 or 2, never 0;
//! - ptxas rejects well-formed PTX that does not assemble (semantic): the lint does not pass
//!   it either — exit 1 or 2, never 0.
//!
//! Beyond ptxas's verdict every case states the exit and rule ids the spec's rules give for
//! the file (`suites/ptx.yaml`, each row's derivation in its comment), so no case accepts
//! every exit the verdict allows.
//!
//! And in every case the lint is stable: two runs give the same findings.

use std::collections::HashMap;
use std::path::Path;

use crate::area::CaseContext;
use crate::outcome::CaseStatus;

use super::lint::{lint_file, LintFileError, LintReport};

/// ptxas's verdict on a corpus file, from its manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Manifest {
    pub producer: String,
    pub ptxas: String,
    pub reason: String,
    pub message: String,
    /// The same of CUDA 13's ptxas, where the manifest records it (`ptxas13:` lines, written
    /// by `generate.py` when PTXAS13 is given): the lint is held to each verdict.
    pub ptxas13: Option<Box<Manifest>>,
}

/// Why a corpus file's manifest cannot be used; `Display` is the line a case or `validate`
/// reports.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ManifestError {
    #[error("{path}: cannot read the manifest: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: no `{key}:` line")]
    MissingKey { path: String, key: &'static str },
    #[error("{path}: `ptxas: {value}`; allowed: accepts, rejects, unsupported")]
    Verdict { path: String, value: String },
}

/// Read `FILE.manifest` (`key: value` lines).
pub(crate) fn read_manifest(ptx: &Path) -> Result<Manifest, ManifestError> {
    let mut name = ptx.as_os_str().to_owned();
    name.push(".manifest");
    let path = Path::new(&name);
    let text = std::fs::read_to_string(path).map_err(|source| ManifestError::Io {
        path: path.display().to_string(),
        source,
    })?;
    let kv: HashMap<&str, &str> = text
        .lines()
        .filter_map(|l| {
            l.split_once(": ")
                .or_else(|| l.strip_suffix(':').map(|k| (k, "")))
        })
        .collect();
    let get = |key: &'static str| {
        kv.get(key)
            .map(|v| v.trim().to_string())
            .ok_or_else(|| ManifestError::MissingKey {
                path: path.display().to_string(),
                key,
            })
    };
    let verdict = |value: String| {
        if ["accepts", "rejects", "unsupported"].contains(&value.as_str()) {
            Ok(value)
        } else {
            Err(ManifestError::Verdict {
                path: path.display().to_string(),
                value,
            })
        }
    };
    let producer = get("producer")?;
    let ptxas13 = match kv.get("ptxas13") {
        None => None,
        Some(v) => Some(Box::new(Manifest {
            producer: producer.clone(),
            ptxas: verdict(v.trim().to_string())?,
            reason: get("ptxas13_reason")?,
            message: get("ptxas13_message").unwrap_or_default(),
            ptxas13: None,
        })),
    };
    Ok(Manifest {
        producer,
        ptxas: verdict(get("ptxas")?)?,
        reason: get("ptxas_reason")?,
        message: get("ptxas_message").unwrap_or_default(),
        ptxas13,
    })
}

/// The exits ptxas's verdict allows the lint, and why.
pub(crate) fn allowed_exits(m: &Manifest) -> (&'static [i32], &'static str) {
    match (m.ptxas.as_str(), m.reason.as_str()) {
        ("rejects", "syntax") | ("rejects", "version") => {
            (&[1, 2], "ptxas rejects the text: the lint must not pass it")
        }
        ("rejects", "name") => (
            &[1, 2],
            "ptxas knows no such opcode or symbol: the lint must not pass it",
        ),
        ("rejects", "semantic") => (
            &[1, 2],
            "ptxas rejects well-formed PTX that does not assemble: the lint must not pass it",
        ),
        _ => (&[0, 1], "ptxas reads the file: the reader must read it"),
    }
}

fn outcome(r: &Result<LintReport, LintFileError>) -> (i32, Vec<String>, Vec<String>) {
    match r {
        Ok(r) => (
            i32::from(!r.violations.is_empty()),
            r.violations
                .iter()
                .map(|v| v.rule.id().to_string())
                .collect(),
            r.violations.iter().map(|v| v.to_string()).collect(),
        ),
        Err(e) => (2, Vec::new(), vec![e.to_string()]),
    }
}

/// One corpus case: `file` relative to the repository root; `exit` and `rules` the spec's
/// verdict as the suite states it.
pub fn case(ctx: &CaseContext, file: &str, exit: i32, rules: &[String]) -> CaseStatus {
    let path = ctx.root.join(file);
    let manifest = match read_manifest(&path) {
        Ok(m) => m,
        Err(e) => return CaseStatus::error(e),
    };
    let first = lint_file(&path);
    let second = lint_file(&path);
    let (got_exit, got_rules, lines) = outcome(&first);
    if lines != outcome(&second).2 {
        return CaseStatus::fail_detail(
            "the same findings on every run",
            "two runs differ",
            format!("{lines:?}\n{:?}", outcome(&second).2),
        );
    }
    let detail = lines.join("\n");
    let verdicts = std::iter::once(("12.9", &manifest))
        .chain(manifest.ptxas13.as_deref().map(|m| ("13.0", m)));
    for (release, m) in verdicts {
        let (allowed, why) = allowed_exits(m);
        if !allowed.contains(&got_exit) {
            return CaseStatus::fail_detail(
                format!(
                    "exit in {allowed:?} ({why}; ptxas {release} {}: {})",
                    m.ptxas, m.message
                ),
                format!("exit {got_exit}"),
                detail,
            );
        }
    }
    if exit != got_exit {
        return CaseStatus::fail_detail(format!("exit {exit}"), format!("exit {got_exit}"), detail);
    }
    if rules != got_rules.as_slice() {
        return CaseStatus::fail_detail(
            format!("rules {rules:?}"),
            format!("rules {got_rules:?}"),
            detail,
        );
    }
    CaseStatus::pass_with(format!(
        "{}: ptxas {}{}, lint exit {got_exit}{}",
        manifest.producer,
        manifest.ptxas,
        manifest
            .ptxas13
            .as_ref()
            .map_or(String::new(), |m| format!(" (13.0: {})", m.ptxas)),
        if got_rules.is_empty() {
            String::new()
        } else {
            format!(" [{}]", got_rules.join(", "))
        }
    ))
}

/// Every `.ptx` file under `dir`, recursively, sorted.
pub(crate) fn corpus_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "ptx") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// A synthetic module of `n` device functions, each declared forward and then defined (the
/// shape of LLVM's output), for the large-file figure.
pub(crate) fn synthetic_module(n: usize) -> String {
    let mut s = String::from(".version 8.0\n.target sm_90\n.address_size 64\n");
    for i in 0..n {
        s += &format!(".func (.param .b32 r) f{i}(.param .b32 a, .param .b64 b);\n");
    }
    for i in 0..n {
        s += &format!(
            ".func (.param .b32 r) f{i}(.param .b32 a, .param .b64 b)\n{{\n\t.reg .b32 %r<3>;\n\tld.param.b32 %r1, [a];\n\tadd.s32 %r2, %r1, {i};\n\tst.param.b32 [r], %r2;\n\tret;\n}}\n"
        );
    }
    s
}

/// `gpucts bench lint`: reader + lint throughput (MB/s, files/s) over the corpus and on one
/// large synthetic module, with ptxas `-O0 -c` on the same inputs beside it (one ptxas process
/// per file, its time including process start, as a user running it pays). The synthetic
/// module has 2,000 functions because ptxas grows faster than linearly in their number
/// (measured with ptxas 12.9 -O0 -c on a loaded 2-core machine: 2,000 in 8.6 s, 5,000 in
/// 32 s, 100,000 still running after 9 CPU-minutes; gpucts: 0.07 s, 0.15 s, about 2 s).
pub fn bench(tc: &crate::backend::toolchain::Toolchain, corpus: &Path) -> String {
    use std::time::Instant;
    let files: Vec<(String, String)> = corpus_files(corpus)
        .into_iter()
        .filter_map(|p| {
            let text = String::from_utf8_lossy(&std::fs::read(&p).ok()?).into_owned();
            Some((p.display().to_string(), text))
        })
        .collect();
    let bytes: usize = files.iter().map(|f| f.1.len()).sum();
    let mut out = String::new();
    // Reader + lint: repeat until at least 0.5 s for a stable figure.
    let t0 = Instant::now();
    let mut rounds = 0u32;
    let (mut read, mut refused) = (0usize, 0usize);
    while rounds == 0 || t0.elapsed().as_secs_f64() < 0.5 {
        for (name, text) in &files {
            match super::lint::lint_source_counted(text, name) {
                Ok(_) => read += 1,
                Err(_) => refused += 1,
            }
        }
        rounds += 1;
    }
    let secs = t0.elapsed().as_secs_f64() / f64::from(rounds);
    let mb = bytes as f64 / 1e6;
    out += &format!(
        "corpus: {} files, {:.2} MB ({} read, {} refused per round)\n",
        files.len(),
        mb,
        read / rounds as usize,
        refused / rounds as usize
    );
    out += &format!(
        "  gpucts reader+lint: {:.4} s = {:.1} MB/s, {:.0} files/s\n",
        secs,
        mb / secs,
        files.len() as f64 / secs
    );
    let big = synthetic_module(2_000);
    let t0 = Instant::now();
    let ok = super::lint::lint_source_counted(&big, "synthetic.ptx").is_ok();
    let big_secs = t0.elapsed().as_secs_f64();
    let big_mb = big.len() as f64 / 1e6;
    if !tc.has(crate::capability::Capability::Ptxas) {
        out += "  ptxas: not found (skipped; `gpucts toolchain install`)\n";
    } else {
        let t0 = Instant::now();
        let mut accepted = 0usize;
        for (_, text) in &files {
            let arch = text
                .split_whitespace()
                .skip_while(|w| *w != ".target")
                .nth(1)
                .map(|t| t.trim_end_matches(','))
                .filter(|t| t.starts_with("sm_") && t[3..].parse::<u32>().is_ok_and(|n| n >= 52))
                .unwrap_or("sm_52");
            if tc.ptxas(text, arch, &["-O0", "-c"]).is_ok() {
                accepted += 1;
            }
        }
        let p = t0.elapsed().as_secs_f64();
        out += &format!(
            "  ptxas -O0 -c:       {p:.3} s = {:.2} MB/s, {:.1} files/s ({accepted} accepted); gpucts is {:.0}x faster\n",
            mb / p,
            files.len() as f64 / p,
            p / secs
        );
    }
    out += &format!(
        "synthetic module: 2,000 functions declared and defined, {big_mb:.2} MB\n  gpucts reader+lint: {big_secs:.3} s = {:.1} MB/s ({})\n",
        big_mb / big_secs,
        if ok { "read" } else { "refused" }
    );
    if tc.has(crate::capability::Capability::Ptxas) {
        let t0 = Instant::now();
        let r = tc.ptxas(&big, "sm_90", &["-O0", "-c"]);
        let p = t0.elapsed().as_secs_f64();
        out += &format!(
            "  ptxas -O0 -c:       {p:.3} s = {:.2} MB/s ({}); gpucts is {:.0}x faster\n",
            big_mb / p,
            if r.is_ok() { "accepted" } else { "refused" },
            p / big_secs
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(ptxas: &str, reason: &str) -> Manifest {
        Manifest {
            producer: "p".into(),
            ptxas: ptxas.into(),
            reason: reason.into(),
            message: String::new(),
            ptxas13: None,
        }
    }

    #[test]
    fn ptxas_verdicts_constrain_the_exit() {
        assert_eq!(allowed_exits(&m("accepts", "-")).0, &[0, 1]);
        assert_eq!(allowed_exits(&m("unsupported", "-")).0, &[0, 1]);
        assert_eq!(allowed_exits(&m("rejects", "internal")).0, &[0, 1]);
        assert_eq!(allowed_exits(&m("rejects", "syntax")).0, &[1, 2]);
        assert_eq!(allowed_exits(&m("rejects", "version")).0, &[1, 2]);
        assert_eq!(allowed_exits(&m("rejects", "name")).0, &[1, 2]);
        assert_eq!(allowed_exits(&m("rejects", "semantic")).0, &[1, 2]);
    }

    /// A row of `suites/ptx.yaml`'s corpus tables: the spec's verdict on one file.
    #[derive(serde::Deserialize)]
    struct Row {
        file: String,
        exit: Option<i32>,
        rules: Option<Vec<String>>,
    }
    #[derive(serde::Deserialize)]
    struct SuiteCase {
        #[serde(default)]
        table: Vec<Row>,
    }
    #[derive(serde::Deserialize)]
    struct Suite {
        cases: Vec<SuiteCase>,
    }

    /// The spec's verdict on each corpus file, from `suites/ptx.yaml`: (exit, rule ids).
    fn suite_verdicts(repo: &Path) -> HashMap<String, (i32, Vec<String>)> {
        let text = std::fs::read_to_string(repo.join("suites/ptx.yaml")).unwrap();
        let suite: Suite = crate::suite::from_yaml(&text).unwrap();
        let mut out = HashMap::new();
        for row in suite.cases.into_iter().flat_map(|c| c.table) {
            let (Some(exit), Some(rules)) = (row.exit, row.rules) else {
                panic!("suites/ptx.yaml: {} has no `exit` and `rules`", row.file);
            };
            out.insert(row.file, (exit, rules));
        }
        out
    }

    /// Every corpus file has a manifest and a suite row with the spec's verdict; the lint
    /// meets both: the exit ptxas's verdict allows (never 0 for a file ptxas rejects, never 2
    /// for one it reads), and exactly the exit and rule ids the row gives.
    #[test]
    fn every_corpus_file_meets_its_ptxas_verdict() {
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let root = repo.join("ptx-corpus");
        let verdicts = suite_verdicts(&repo);
        let (mut n, mut n13) = (0, 0);
        for dir in ["hand", "gen/out"] {
            let entries = std::fs::read_dir(root.join(dir)).unwrap();
            for e in entries.flatten() {
                let p = e.path();
                if p.extension().and_then(|x| x.to_str()) != Some("ptx") {
                    continue;
                }
                let m = read_manifest(&p).unwrap();
                let (exit, rules, lines) = outcome(&lint_file(&p));
                assert!(
                    allowed_exits(&m).0.contains(&exit),
                    "{}: ptxas {} ({}), lint exit {exit}: {lines:?}",
                    p.display(),
                    m.ptxas,
                    m.reason
                );
                if let Some(m13) = &m.ptxas13 {
                    assert!(
                        allowed_exits(m13).0.contains(&exit),
                        "{}: ptxas 13.0 {} ({}), lint exit {exit}: {lines:?}",
                        p.display(),
                        m13.ptxas,
                        m13.reason
                    );
                    n13 += 1;
                }
                let key = format!("ptx-corpus/{dir}/{}", e.file_name().to_string_lossy());
                let Some((want_exit, want_rules)) = verdicts.get(&key) else {
                    panic!("{key}: no row in suites/ptx.yaml with the spec's exit and rules");
                };
                assert_eq!((exit, &rules), (*want_exit, want_rules), "{key}: {lines:?}");
                n += 1;
            }
        }
        assert!(n >= 40, "{n} corpus files");
        // The committed manifests carry CUDA 13's verdict too.
        assert!(n13 >= 40, "{n13} files with a ptxas 13.0 verdict");
    }

    /// The six files ptxas rejects as well-formed PTX that does not assemble: a lint that
    /// passed them (exit 0) fails the verdict check, and so does one finding other rules.
    #[test]
    fn a_lint_passing_a_semantic_reject_fails() {
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let verdicts = suite_verdicts(&repo);
        let mut semantic = Vec::new();
        for name in [
            "duplicate_param",
            "entry_reg_param",
            "incomplete_array",
            "param_vector",
            "ptr_on_func",
            "nul_byte",
        ] {
            let key = format!("ptx-corpus/hand/{name}.ptx");
            let m = read_manifest(&repo.join(&key)).unwrap();
            assert_eq!(
                (m.ptxas.as_str(), m.reason.as_str()),
                ("rejects", "semantic")
            );
            assert!(!allowed_exits(&m).0.contains(&0), "{key}: exit 0 allowed");
            let (exit, rules) = &verdicts[&key];
            assert_ne!(*exit, 0, "{key}");
            // Either the exit is 2 (refused) or the row names the rule the file breaks.
            assert!(*exit == 2 || !rules.is_empty(), "{key}: {rules:?}");
            semantic.push(key);
        }
        assert_eq!(semantic.len(), 6);
    }
}
