//! The reports of one run: where they go, writing them, and the console's opening and closing
//! lines. The lines are contracts (CI scripts read them); their wording is fixed here.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::outcome::Verdict;
use crate::runner::{CaseResult, Tally};

/// The report name of a run: the suite arguments' stems joined by `+` (`abi+atomics`).
pub fn report_name(suites: &[String]) -> String {
    let names: Vec<String> = suites
        .iter()
        .map(|s| {
            Path::new(s)
                .file_stem()
                .map(|x| x.to_string_lossy().into_owned())
                .unwrap_or_else(|| s.clone())
        })
        .collect();
    names.join("+")
}

/// The line printed (to stderr) before the cases run.
pub fn banner(cases: usize, name: &str, gpu: Option<&str>, have: usize, known: usize) -> String {
    format!(
        "gpucts {}: {cases} cases from {name} | gpu: {} | toolchain: {have}/{known} components",
        env!("CARGO_PKG_VERSION"),
        gpu.unwrap_or("none"),
    )
}

/// What writing the reports did.
#[derive(Debug)]
pub struct Written {
    pub junit: PathBuf,
    /// Whether the JUnit file was written.
    pub junit_ok: bool,
    /// Problems met, one line each (the run's exit code does not change for them).
    pub errors: Vec<String>,
}

/// Write `junit.xml` (to `junit`, else `reports/<name>-<timestamp>/`) and, in the default
/// place only, `results.json` beside it.
pub fn write(
    results: &[CaseResult],
    fingerprint: &BTreeMap<String, String>,
    junit: Option<&Path>,
    root: &Path,
    name: &str,
) -> Written {
    let now = time::OffsetDateTime::now_utc();
    let junit_path = junit.map(Path::to_path_buf).unwrap_or_else(|| {
        let stamp = now
            .format(time::macros::format_description!(
                "[year][month][day]T[hour][minute][second]Z"
            ))
            .unwrap_or_else(|_| "run".into());
        root.join("reports")
            .join(format!("{name}-{stamp}"))
            .join("junit.xml")
    });
    let mut errors = Vec::new();
    let mut junit_ok = true;
    if let Some(dir) = junit_path.parent().filter(|d| !d.as_os_str().is_empty()) {
        if let Err(e) = std::fs::create_dir_all(dir) {
            errors.push(format!("cannot create {}: {e}", dir.display()));
            junit_ok = false;
        }
    }
    match super::junit::render(results, fingerprint, now) {
        Ok(xml) => {
            if let Err(e) = std::fs::write(&junit_path, xml) {
                errors.push(format!("cannot write {}: {e}", junit_path.display()));
                junit_ok = false;
            }
        }
        Err(e) => {
            errors.push(e.to_string());
            junit_ok = false;
        }
    }
    if junit.is_none() {
        let json_path = junit_path.with_file_name("results.json");
        if let Err(e) = super::write_json(&json_path, results, fingerprint) {
            errors.push(format!("cannot write {}: {e}", json_path.display()));
        }
    }
    Written {
        junit: junit_path,
        junit_ok,
        errors,
    }
}

/// The closing lines: stale waivers, the JUnit path, waiver counts, and the tally.
pub fn closing_lines(results: &[CaseResult], tally: &Tally, written: &Written) -> Vec<String> {
    let mut lines = Vec::new();
    for r in results {
        if let Verdict::StaleWaiver { waiver } = &r.verdict {
            lines.push(format!(
                "stale waiver: {waiver} lists {} but it passed",
                r.id
            ));
        }
    }
    if written.junit_ok {
        lines.push(format!("JUnit report: {}", written.junit.display()));
    }
    if tally.waived > 0 || tally.stale_waivers > 0 {
        lines.push(format!(
            "waived: {}, stale waivers: {}",
            tally.waived, tally.stale_waivers
        ));
    }
    lines.push(format!(
        "gpucts: {} passed, {} failed, {} skipped",
        tally.passed, tally.failed, tally.skipped
    ));
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_names_join_suite_stems() {
        assert_eq!(
            report_name(&["abi".into(), "suites/atomics.yaml".into()]),
            "abi+atomics"
        );
    }

    #[test]
    fn closing_lines_end_with_the_tally() {
        let tally = Tally {
            passed: 3,
            failed: 1,
            skipped: 2,
            waived: 1,
            stale_waivers: 0,
        };
        let written = Written {
            junit: PathBuf::from("r/junit.xml"),
            junit_ok: true,
            errors: Vec::new(),
        };
        assert_eq!(
            closing_lines(&[], &tally, &written),
            vec![
                "JUnit report: r/junit.xml".to_string(),
                "waived: 1, stale waivers: 0".into(),
                "gpucts: 3 passed, 1 failed, 2 skipped".into(),
            ]
        );
    }
}
