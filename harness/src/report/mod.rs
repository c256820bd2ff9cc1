//! Reports written after a run: JUnit XML (for CI), `results.json` (every case's status,
//! verdict and clause, the probe, how the run was made, the figures cases measured) and the
//! HTML qualification report; and the commands that work on results sets afterwards
//! (`report`, `diff`, `bundle`, `merge`). Formats: reports/README.md.

pub mod bundle;
pub mod commands;
pub mod diff;
pub mod figures;
pub mod html;
pub mod junit;
pub mod merge;
pub mod plot;
pub mod progress;
pub mod results;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::runner::{CaseResult, Tally};
use figures::Figure;
use results::{RunInfo, SCHEMA_VERSION};

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

/// Write `results.json` (without the probe, run record or figures).
pub fn write_json(
    path: &Path,
    results: &[CaseResult],
    fingerprint: &BTreeMap<String, String>,
) -> std::io::Result<()> {
    let text = results_text(results, fingerprint, None, None, &BTreeMap::new())?;
    std::fs::write(path, text)
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
            },
        }
    }
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

/// Write `results.json` and `report.html` into `dir`; each error is returned as a line for
/// the console (the run's verdict does not depend on its reports).
pub fn write_run_reports(
    dir: &Path,
    results: &[CaseResult],
    fingerprint: &BTreeMap<String, String>,
    record: &mut RunRecord,
) -> Vec<String> {
    let mut errors = Vec::new();
    record.run.finished = time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default();
    let figures = figures::take_all();
    let json_path = dir.join("results.json");
    let text = match results_text(
        results,
        fingerprint,
        record.probe.as_ref(),
        Some(&record.run),
        &figures,
    ) {
        Ok(t) => t,
        Err(e) => return vec![format!("cannot write {}: {e}", json_path.display())],
    };
    if let Err(e) = std::fs::write(&json_path, &text) {
        errors.push(format!("cannot write {}: {e}", json_path.display()));
    }
    // The HTML is rendered from what was written, read back as any reader would.
    let html_path = dir.join("report.html");
    match results::parse(&json_path.display().to_string(), text.as_bytes())
        .map_err(|e| e.to_string())
        .and_then(|r| html::render(&r, merge::fleet_view(&r), None))
    {
        Ok(page) => {
            if let Err(e) = std::fs::write(&html_path, page) {
                errors.push(format!("cannot write {}: {e}", html_path.display()));
            }
        }
        Err(e) => errors.push(format!("cannot write {}: {e}", html_path.display())),
    }
    errors
}
