//! The reports of one run: where they go, writing them, and the console's opening and closing
//! lines. The lines are contracts (CI scripts read them); their wording is fixed here.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::figures::Figure;
use super::results::{self, RunInfo, SCHEMA_VERSION};
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

#[derive(Serialize)]
struct ResultsFile<'a> {
    schema_version: u32,
    gpucts_version: &'static str,
    fingerprint: &'a BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    probe: Option<&'a serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    run: Option<&'a RunInfo>,
    tally: Tally,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    figures: &'a BTreeMap<String, Vec<Figure>>,
    cases: &'a [CaseResult],
}

fn results_text(
    results: &[CaseResult],
    fingerprint: &BTreeMap<String, String>,
    probe: Option<&serde_json::Value>,
    run: Option<&RunInfo>,
    figures: &BTreeMap<String, Vec<Figure>>,
) -> std::io::Result<String> {
    let file = ResultsFile {
        schema_version: SCHEMA_VERSION,
        gpucts_version: env!("CARGO_PKG_VERSION"),
        fingerprint,
        probe,
        run,
        tally: Tally::of(results),
        figures,
        cases: results,
    };
    serde_json::to_string_pretty(&file).map_err(std::io::Error::other)
}

/// What a run knows about itself, for its reports.
#[derive(Debug, Default)]
pub struct RunRecord {
    pub probe: Option<serde_json::Value>,
    pub run: RunInfo,
}

impl RunRecord {
    /// The record of a run from this process: the command line, the git state of `root`, the
    /// suite and waiver files with their hashes, the waivers applied.
    pub fn new(
        root: &Path,
        suites: &[PathBuf],
        waiver_files: &[PathBuf],
        requires: &[String],
        probe: Option<serde_json::Value>,
        started: time::OffsetDateTime,
    ) -> RunRecord {
        let hash_all = |files: &[PathBuf]| {
            files
                .iter()
                .filter_map(|f| results::HashedFile::of(f, root).ok())
                .collect()
        };
        RunRecord {
            probe,
            run: RunInfo {
                command_line: std::env::args().collect(),
                started: started
                    .format(&time::format_description::well_known::Rfc3339)
                    .unwrap_or_default(),
                finished: String::new(),
                suites: hash_all(suites),
                waiver_files: hash_all(waiver_files),
                waivers: waiver_files
                    .iter()
                    .flat_map(|f| waiver_records(f))
                    .collect(),
                requires: requires.to_vec(),
                git: results::git_state(root),
                rerun_failures: 0,
                require_weak_controls: false,
                wall_s: 0.0,
            },
        }
    }
}

/// The waiver files a run reads (as `Waivers::load_run` does): the default file under `root`
/// unless `no_default` or absent, then each of `extra`.
pub fn waiver_files(root: &Path, no_default: bool, extra: &[PathBuf]) -> Vec<PathBuf> {
    let default = root.join(crate::waivers::DEFAULT_FILE);
    let mut files = Vec::new();
    if !no_default && default.is_file() {
        files.push(default);
    }
    files.extend(extra.iter().cloned());
    files
}

/// The waivers of a waiver file, for the report (the run has already checked the file; one
/// that cannot be read here contributes nothing).
fn waiver_records(path: &Path) -> Vec<results::WaiverRecord> {
    #[derive(serde::Deserialize)]
    struct File {
        waivers: Vec<results::WaiverRecord>,
    }
    std::fs::read_to_string(path)
        .ok()
        .and_then(|t| serde_saphyr::from_str::<File>(&t).ok())
        .map(|f| f.waivers)
        .unwrap_or_default()
}

/// Where a run's reports go, checked before the run starts ([`prepare`]).
#[derive(Debug, Clone)]
pub struct ReportPaths {
    pub junit: PathBuf,
    pub results_json: PathBuf,
    pub html: PathBuf,
}

/// A report path that cannot be written: the path and the OS error.
#[derive(Debug, thiserror::Error)]
#[error("cannot {what} {}: {source}", path.display())]
pub struct PathError {
    what: &'static str,
    path: PathBuf,
    source: std::io::Error,
}

/// The report paths of a run (`junit` when given, else `reports/<name>-<UTC stamp>/junit.xml`
/// under `root`; `results.json` and `report.html` beside it), checked before anything runs:
/// the directory is created and each file is opened for writing (a file that did not exist is
/// removed again), so a run never ends with reports it cannot write.
pub fn prepare(junit: Option<&Path>, root: &Path, name: &str) -> Result<ReportPaths, PathError> {
    let default_junit = || {
        let stamp = time::OffsetDateTime::now_utc()
            .format(time::macros::format_description!(
                "[year][month][day]T[hour][minute][second]Z"
            ))
            .unwrap_or_else(|_| "run".into());
        root.join("reports")
            .join(format!("{name}-{stamp}"))
            .join("junit.xml")
    };
    let junit_path = junit.map(Path::to_path_buf).unwrap_or_else(default_junit);
    // results.json and report.html go beside the JUnit file, unless that is no regular file
    // (`--junit /dev/null`, a FIFO): then into the default report directory, never into /dev.
    let beside = if junit_path.exists() && !junit_path.is_file() {
        default_junit()
    } else {
        junit_path.clone()
    };
    let dir = beside
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .to_path_buf();
    std::fs::create_dir_all(&dir).map_err(|source| PathError {
        what: "create",
        path: dir.clone(),
        source,
    })?;
    let paths = ReportPaths {
        results_json: dir.join("results.json"),
        html: dir.join("report.html"),
        junit: junit_path,
    };
    for p in [&paths.junit, &paths.results_json, &paths.html] {
        let existed = p.exists();
        std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(p)
            .map_err(|source| PathError {
                what: "write",
                path: p.clone(),
                source,
            })?;
        if !existed {
            let _ = std::fs::remove_file(p);
        }
    }
    Ok(paths)
}

/// What writing the reports did.
#[derive(Debug)]
pub struct Written {
    pub junit: PathBuf,
    /// Whether the JUnit file was written.
    pub junit_ok: bool,
    /// `results.json`, when it was written.
    pub results_json: Option<PathBuf>,
    /// `report.html`, when it was written.
    pub html: Option<PathBuf>,
    /// Problems met, one line each (`cannot write PATH: OS error`); any makes the run exit 2.
    pub errors: Vec<String>,
}

/// Write `junit.xml`, `results.json` (with `record`: the probe, how the run was made, the
/// figures) and `report.html` rendered from the results as written.
pub fn write(
    results: &[CaseResult],
    fingerprint: &BTreeMap<String, String>,
    paths: &ReportPaths,
    record: &mut RunRecord,
) -> Written {
    let now = time::OffsetDateTime::now_utc();
    let mut written = Written {
        junit: paths.junit.clone(),
        junit_ok: true,
        results_json: None,
        html: None,
        errors: Vec::new(),
    };
    if let Some(dir) = paths.junit.parent().filter(|d| !d.as_os_str().is_empty()) {
        if let Err(e) = std::fs::create_dir_all(dir) {
            written
                .errors
                .push(format!("cannot create {}: {e}", dir.display()));
        }
    }
    match super::junit::render(results, fingerprint, now) {
        Ok(xml) => {
            if let Err(e) = std::fs::write(&paths.junit, xml) {
                written
                    .errors
                    .push(format!("cannot write {}: {e}", paths.junit.display()));
                written.junit_ok = false;
            }
        }
        Err(e) => {
            written
                .errors
                .push(format!("cannot write {}: {e}", paths.junit.display()));
            written.junit_ok = false;
        }
    }

    record.run.finished = now
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default();
    let figures: BTreeMap<String, Vec<Figure>> = results
        .iter()
        .filter(|r| !r.figures.is_empty())
        .map(|r| (r.id.clone(), r.figures.clone()))
        .collect();
    let json_path = &paths.results_json;
    let text = match results_text(
        results,
        fingerprint,
        record.probe.as_ref(),
        Some(&record.run),
        &figures,
    ) {
        Ok(t) => t,
        Err(e) => {
            written
                .errors
                .push(format!("cannot write {}: {e}", json_path.display()));
            return written;
        }
    };
    match std::fs::write(json_path, &text) {
        Ok(()) => written.results_json = Some(json_path.clone()),
        Err(e) => written
            .errors
            .push(format!("cannot write {}: {e}", json_path.display())),
    }
    // The HTML is rendered from what was written, read back as any reader would.
    let html_path = &paths.html;
    match results::parse(&json_path.display().to_string(), text.as_bytes())
        .map_err(|e| e.to_string())
        .and_then(|r| {
            super::html::render(&r, super::merge::fleet_view(&r), None).map_err(|e| e.to_string())
        }) {
        Ok(page) => match std::fs::write(html_path, page) {
            Ok(()) => written.html = Some(html_path.clone()),
            Err(e) => written
                .errors
                .push(format!("cannot write {}: {e}", html_path.display())),
        },
        Err(e) => written
            .errors
            .push(format!("cannot write {}: {e}", html_path.display())),
    }
    written
}

/// The closing lines: stale waivers, the report paths, waiver counts, and the tally, then the
/// passes with a control without weak outcomes when there are any. `, N waived` and `, N
/// flaky` are appended to the tally only when non-zero, with how they map to libtest's
/// `ignored` and `passed` counts.
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
    if let Some(j) = &written.results_json {
        lines.push(format!("JSON results: {}", j.display()));
    }
    if let Some(h) = &written.html {
        lines.push(format!("HTML report: {}", h.display()));
    }
    if tally.waived > 0 || tally.stale_waivers > 0 {
        lines.push(format!(
            "waived: {}, stale waivers: {}",
            tally.waived, tally.stale_waivers
        ));
    }
    let (observed, conformance): (Vec<CaseResult>, Vec<CaseResult>) = results
        .iter()
        .cloned()
        .partition(|r| crate::runner::is_observation(&r.id));
    if !observed.is_empty() {
        let (o, c) = (Tally::of(&observed), Tally::of(&conformance));
        lines.push(format!(
            "of which observations of a tool (`*.observe.*`, not the spec's verdict): {} passed, {} failed, {} skipped; conformance: {} passed, {} failed, {} skipped, {} waived",
            o.passed, o.failed, o.skipped, c.passed, c.failed, c.skipped, c.waived
        ));
    }
    let mut tail = String::new();
    let mut libtest = Vec::new();
    if tally.waived > 0 {
        tail.push_str(&format!(", {} waived", tally.waived));
        libtest.push(format!(
            "libtest's {} ignored = skipped + waived",
            tally.skipped + tally.waived
        ));
    }
    if tally.flaky > 0 {
        tail.push_str(&format!(", {} flaky", tally.flaky));
        libtest.push(format!(
            "libtest's {} passed = passed + flaky",
            tally.passed + tally.flaky
        ));
    }
    if !libtest.is_empty() {
        tail.push_str(&format!(" ({})", libtest.join("; ")));
    }
    lines.push(format!(
        "gpucts: {} passed, {} failed, {} skipped{tail}",
        tally.passed, tally.failed, tally.skipped
    ));
    if let Some(line) = weak_control_line(tally) {
        lines.push(line);
    }
    lines
}

/// `N passed, M of them with a control that showed no weak outcome`, when M > 0: how many
/// passes rest on a stress whose relaxed control never showed its weak outcome (a contract
/// CI scripts parse).
pub fn weak_control_line(tally: &Tally) -> Option<String> {
    (tally.control_without_weak_outcomes > 0).then(|| {
        format!(
            "{} passed, {} of them with a control that showed no weak outcome",
            tally.passed, tally.control_without_weak_outcomes
        )
    })
}

/// The JSON event that ends a `--format json` stream: where the reports went and what could
/// not be written.
pub fn report_event(written: &Written, tally: &Tally) -> serde_json::Value {
    serde_json::json!({
        "type": "report",
        "junit": written.junit_ok.then(|| written.junit.display().to_string()),
        "results": written.results_json.as_ref().map(|p| p.display().to_string()),
        "html": written.html.as_ref().map(|p| p.display().to_string()),
        "errors": written.errors,
        "tally": tally,
    })
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
            flaky: 0,
            control_without_weak_outcomes: 0,
        };
        let written = Written {
            junit: PathBuf::from("r/junit.xml"),
            junit_ok: true,
            results_json: None,
            html: None,
            errors: Vec::new(),
        };
        assert_eq!(
            closing_lines(&[], &tally, &written),
            vec![
                "JUnit report: r/junit.xml".to_string(),
                "waived: 1, stale waivers: 0".into(),
                "gpucts: 3 passed, 1 failed, 2 skipped, 1 waived (libtest's 3 ignored = skipped + waived)"
                    .into(),
            ]
        );
    }

    /// The tally line for passes on a control without weak outcomes: printed after the usual
    /// tally, only when there is one.
    #[test]
    fn the_weak_control_line_follows_the_tally_when_a_pass_rests_on_such_a_control() {
        let mut tally = Tally {
            passed: 468,
            failed: 0,
            skipped: 0,
            waived: 0,
            stale_waivers: 0,
            flaky: 0,
            control_without_weak_outcomes: 0,
        };
        let written = Written {
            junit: PathBuf::from("r/junit.xml"),
            junit_ok: false,
            results_json: None,
            html: None,
            errors: Vec::new(),
        };
        assert_eq!(weak_control_line(&tally), None);
        assert_eq!(
            closing_lines(&[], &tally, &written).last().unwrap(),
            "gpucts: 468 passed, 0 failed, 0 skipped"
        );
        tally.control_without_weak_outcomes = 256;
        assert_eq!(
            closing_lines(&[], &tally, &written),
            vec![
                "gpucts: 468 passed, 0 failed, 0 skipped".to_string(),
                "468 passed, 256 of them with a control that showed no weak outcome".into()
            ]
        );
    }

    /// Issue 10 item 3: a report that cannot be written at the end is an error naming the
    /// path and the OS error (the binary exits 2 on any).
    #[test]
    fn a_report_that_cannot_be_written_is_an_error_with_path_and_os_error() {
        let d = tempfile::tempdir().unwrap();
        let paths = prepare(Some(&d.path().join("junit.xml")), d.path(), "x").unwrap();
        // After the check, something takes report.html's place.
        std::fs::create_dir(&paths.html).unwrap();
        let mut record = RunRecord::default();
        let w = write(&[], &BTreeMap::new(), &paths, &mut record);
        assert!(w.junit_ok && w.results_json.is_some() && w.html.is_none());
        assert_eq!(
            w.errors,
            vec![format!(
                "cannot write {}: Is a directory (os error 21)",
                paths.html.display()
            )]
        );
        // prepare refuses the same place before a run.
        let e = prepare(Some(&d.path().join("junit.xml")), d.path(), "x").unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "cannot write {}: Is a directory (os error 21)",
                paths.html.display()
            )
        );
    }
}
