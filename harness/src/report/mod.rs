//! Reports written after a run: JUnit XML (for CI) and `results.json` (every case's status,
//! verdict and clause, plus the environment fingerprint, for qualification reports).

pub mod junit;
pub mod run;

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use crate::runner::{CaseResult, Tally};

#[derive(Serialize)]
struct ResultsFile<'a> {
    gpucts_version: &'static str,
    fingerprint: &'a BTreeMap<String, String>,
    tally: Tally,
    cases: &'a [CaseResult],
}

/// Write `results.json`.
pub fn write_json(
    path: &Path,
    results: &[CaseResult],
    fingerprint: &BTreeMap<String, String>,
) -> std::io::Result<()> {
    let file = ResultsFile {
        gpucts_version: env!("CARGO_PKG_VERSION"),
        fingerprint,
        tally: Tally::of(results),
        cases: results,
    };
    let text = serde_json::to_string_pretty(&file).map_err(std::io::Error::other)?;
    std::fs::write(path, text)
}
