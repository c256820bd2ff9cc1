//! Dat3M's public PTX litmus corpus, read in place from `dat3m-ptx/` of the public corpora
//! folder (`--corpora`, default `../shared/corpora` beside a checkout; its NOTES.md gives
//! licences and what the expectation CSVs mean; nothing is copied): each expectation file is
//! one suite case whose expected values are Dat3M's published verdicts.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::atomics::litmus::load_file;
use crate::atomics::model::{try_check_with, Model, Options, DEFAULT_UNROLL};

/// The corpus's folder under the public corpora folder.
pub const DIR: &str = "dat3m-ptx";

/// Where the corpus is, when the corpora folder holds it.
pub fn dir(corpora: Option<&Path>) -> Option<PathBuf> {
    corpora
        .map(|c| c.join(DIR))
        .filter(|p| p.join("NOTES.md").exists())
}

/// Why the corpus cases skip: what was looked for, and how to provide it.
pub fn missing(corpora: Option<&Path>) -> String {
    match corpora {
        Some(c) => format!(
            "{} not found (Dat3M's PTX litmus corpus); --corpora names the folder that holds {DIR}/",
            c.join(DIR).display()
        ),
        None => format!(
            "no public corpora folder (Dat3M's PTX litmus corpus, {DIR}/): give --corpora DIR, or run from a checkout with ../shared/corpora beside it"
        ),
    }
}

/// Why a corpus case cannot run: an unknown case name or an unreadable expectation file.
#[derive(Debug, thiserror::Error)]
pub enum CorpusError {
    #[error("unknown corpus expectation `{0}` (allowed: ptx-v6.0, ptx-v7.5, liveness-ptx-v6.0, liveness-ptx-v7.5)")]
    UnknownCase(String),
    #[error("{csv}: {source}")]
    Expectations { csv: String, source: std::io::Error },
}

/// `path,value` lines of a Dat3M expectation CSV, paths made relative to the corpus (value
/// 1: the condition holds as quantified, or for liveness: no execution fails to terminate).
pub fn expectations(dir: &Path, csv: &str) -> Result<BTreeMap<String, bool>, CorpusError> {
    let text =
        std::fs::read_to_string(dir.join(csv)).map_err(|source| CorpusError::Expectations {
            csv: csv.to_string(),
            source,
        })?;
    Ok(text
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .filter_map(|l| {
            let (p, v) = l.split_once(',')?;
            let p = p.trim().strip_prefix("litmus/PTX/")?;
            Some((p.to_string(), v.trim() == "1"))
        })
        .collect())
}

/// The result of one expectation file.
#[derive(Debug, Default)]
pub struct Tally {
    pub listed: usize,
    pub parsed: usize,
    pub agree: usize,
    pub refused: Vec<String>,
    pub disagree: Vec<String>,
}

/// Checks every test an expectation file lists under `model` (v7.5 for tests with proxies).
pub fn run(dir: &Path, csv: &str, model: Model, liveness: bool) -> Result<Tally, CorpusError> {
    let mut t = Tally::default();
    for (path, expected) in expectations(dir, csv)? {
        t.listed += 1;
        let test = match load_file(&dir.join(&path)) {
            Ok(x) => x,
            Err(e) => {
                t.refused.push(format!("{path}: {e}"));
                continue;
            }
        };
        t.parsed += 1;
        let opts = Options {
            unroll: DEFAULT_UNROLL,
            model: Some(if test.uses_proxies() {
                Model::V75
            } else {
                model
            }),
            liveness,
            ..Options::default()
        };
        let got = match try_check_with(&test, &opts) {
            Ok(v) if liveness => v.liveness_violation.map(|w| w.is_none()),
            Ok(v) if v.bound_reached => None,
            Ok(v) => Some(v.condition_holds),
            Err(e) => {
                t.refused.push(format!("{path}: {e}"));
                continue;
            }
        };
        match got {
            Some(g) if g == expected => t.agree += 1,
            Some(g) => t.disagree.push(format!(
                "{path}: Dat3M {}, gpucts {}",
                u8::from(expected),
                u8::from(g)
            )),
            None => t.refused.push(format!("{path}: bound reached")),
        }
    }
    Ok(t)
}

/// The suite case: which CSV and model a case name selects.
pub fn case(which: &str) -> Result<(&'static str, Model, bool), CorpusError> {
    Ok(match which {
        "ptx-v6.0" => ("PTXv6_0-expected.csv", Model::V60, false),
        "ptx-v7.5" => ("PTXv7_5-expected.csv", Model::V75, false),
        "liveness-ptx-v6.0" => ("PTXv6_0-Liveness-expected.csv", Model::V60, true),
        "liveness-ptx-v7.5" => ("PTXv7_5-Liveness-expected.csv", Model::V75, true),
        other => return Err(CorpusError::UnknownCase(other.to_string())),
    })
}

/// `gpucts bench atomics` figures for control flow, barriers and proxies: the new catalogue
/// files of `suites/litmus/`, then Dat3M's corpus when present.
pub fn bench(data: &crate::data::DataRoot) -> String {
    let mut out = String::new();
    let litmus = data.path.join(crate::atomics::LITMUS_DIR);
    for name in [
        "cas-lock-acq-rel",
        "cas-lock-relaxed",
        "ticket-lock",
        "mp-barrier-quorum",
        "mp-barrier-all",
        "proxy-mp-surface",
        "proxy-mp-surface-nofence",
    ] {
        let t0 = std::time::Instant::now();
        let r = load_file(&litmus.join(format!("{name}.litmus")))
            .map_err(|e| e.to_string())
            .and_then(|t| try_check_with(&t, &Options::default()).map_err(|e| e.to_string()));
        let secs = t0.elapsed().as_secs_f64();
        match r {
            Ok(v) => out.push_str(&format!(
                "litmus {name:<26} {:>9} candidates in {:.1} ms ({} consistent, {})\n",
                v.candidates,
                secs * 1e3,
                v.consistent,
                v.model.name()
            )),
            Err(e) => out.push_str(&format!("litmus {name}: {e}\n")),
        }
    }
    if let Some(d) = dir(data.corpora.as_deref()) {
        for which in [
            "ptx-v6.0",
            "ptx-v7.5",
            "liveness-ptx-v6.0",
            "liveness-ptx-v7.5",
        ] {
            let Ok((csv, model, liveness)) = case(which) else {
                continue;
            };
            let t0 = std::time::Instant::now();
            match run(&d, csv, model, liveness) {
                Ok(t) => out.push_str(&format!(
                    "dat3m {which:<18} {} tests in {:.2} s, {} agree\n",
                    t.listed,
                    t0.elapsed().as_secs_f64(),
                    t.agree
                )),
                Err(e) => out.push_str(&format!("dat3m {which}: {e}\n")),
            }
        }
    } else {
        out.push_str(&format!(
            "dat3m corpus: {}\n",
            missing(data.corpora.as_deref())
        ));
    }
    out
}
