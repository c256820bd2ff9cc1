//! `results.json` as readers see it (gpucts's `report`, `diff`, `bundle`, `merge`, and any
//! other tool): a schema version check, limits checked before parsing, and errors naming
//! file, line and column.
//!
//! The reader has its own types rather than the runner's, so a results set written by this
//! version can be read back without the runner's internals, and a set written by another
//! schema version is refused with a clear message instead of being misread.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::figure::Figure;
use crate::status::CaseStatus;

/// The `results.json` layout this version writes. 1: no `schema_version` field (gpucts 0.1
/// before reports); 2: adds `schema_version`, `probe`, `run`, `figures`, `attempts`, `nodes`.
pub const SCHEMA_VERSION: u32 = 2;
/// The oldest layout this version still reads.
pub const OLDEST_SCHEMA: u32 = 1;
/// Larger files are refused before reading (a full run is well under 10 MiB).
pub const MAX_RESULTS_BYTES: u64 = 64 << 20;
/// More cases than this are refused after parsing (every suite together is a few thousand).
pub const MAX_CASES: usize = 500_000;

/// Why a results set could not be read; every variant exits 2.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{path}: cannot read: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: {size} bytes; results.json files up to {MAX_RESULTS_BYTES} bytes are read")]
    TooLarge { path: String, size: u64 },
    #[error("{path}:{line}:{column}: {what}; expected a gpucts results.json (schema_version {OLDEST_SCHEMA}..={SCHEMA_VERSION})")]
    Parse {
        path: String,
        line: usize,
        column: usize,
        what: String,
    },
    #[error("{path}: schema_version {found} (written by gpucts {writer}); this gpucts {} reads schema_version {OLDEST_SCHEMA}..={SCHEMA_VERSION}", env!("CARGO_PKG_VERSION"))]
    Version {
        path: String,
        found: u64,
        writer: String,
    },
    #[error("{path}: {what}")]
    Invalid { path: String, what: String },
}

/// The verdict names `results.json` uses (the runner's `Verdict`, plus `flaky`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VerdictName {
    Pass,
    Fail,
    Skip,
    Waived,
    StaleWaiver,
    RequiredMissing,
    /// Failed, then passed on a rerun (`--rerun-failures`).
    Flaky,
}

impl VerdictName {
    pub fn as_str(self) -> &'static str {
        match self {
            VerdictName::Pass => "pass",
            VerdictName::Fail => "fail",
            VerdictName::Skip => "skip",
            VerdictName::Waived => "waived",
            VerdictName::StaleWaiver => "stale_waiver",
            VerdictName::RequiredMissing => "required_missing",
            VerdictName::Flaky => "flaky",
        }
    }
    /// Counts against the run (exit 101).
    pub fn is_failure(self) -> bool {
        matches!(self, VerdictName::Fail | VerdictName::RequiredMissing)
    }
    /// The case ran and its property held.
    pub fn is_pass(self) -> bool {
        matches!(self, VerdictName::Pass | VerdictName::StaleWaiver)
    }
}

/// One case as read back.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(bound(deserialize = "C: Deserialize<'de>"))]
pub struct StoredCase<C = String> {
    pub id: String,
    pub area: String,
    pub clause: String,
    #[serde(default)]
    pub origin: String,
    pub status: CaseStatus<C>,
    pub verdict: VerdictName,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiver: Option<String>,
    #[serde(default)]
    pub duration_s: f64,
    /// Earlier attempts that failed before a rerun (`--rerun-failures`), oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attempts: Vec<CaseStatus<C>>,
    /// The node that ran it (merged fleet results).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// The GPU it ran on, when the run covered several (`--devices`; the id ends `@DEVICE`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
}

/// A file the run used, with its hash, so a report says exactly which suites and waivers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HashedFile {
    pub path: String,
    pub sha256: String,
}

impl HashedFile {
    /// Hash `path`, naming it relative to `root` when inside it.
    pub fn of(path: &Path, root: &Path) -> std::io::Result<HashedFile> {
        use sha2::Digest;
        let bytes = std::fs::read(path)?;
        let name = path
            .strip_prefix(root)
            .unwrap_or(path)
            .to_string_lossy()
            .into_owned();
        Ok(HashedFile {
            path: name,
            sha256: hex::encode(sha2::Sha256::digest(&bytes)),
        })
    }
}

/// A waiver as the run applied it (the report shows its reason as evidence).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WaiverRecord {
    pub id: String,
    pub cases: String,
    pub reason: String,
    #[serde(default)]
    pub platform: BTreeMap<String, String>,
}

/// How the run was made.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RunInfo {
    #[serde(default)]
    pub command_line: Vec<String>,
    #[serde(default)]
    pub started: String,
    #[serde(default)]
    pub finished: String,
    #[serde(default)]
    pub suites: Vec<HashedFile>,
    #[serde(default)]
    pub waiver_files: Vec<HashedFile>,
    #[serde(default)]
    pub waivers: Vec<WaiverRecord>,
    #[serde(default)]
    pub requires: Vec<String>,
    /// `git rev-parse HEAD` of the checkout, `-dirty` when it has changes; absent outside git.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git: Option<String>,
    #[serde(default)]
    pub rerun_failures: u32,
    /// `--require-weak-controls`: passes on a control without weak outcomes failed the run.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub require_weak_controls: bool,
    /// `--require-weak-controls=PATTERN,...`: only case ids containing one of these (empty:
    /// every case).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub require_weak_controls_for: Vec<String>,
    /// Wall-clock seconds the cases took (first started to last finished); per-area sums of
    /// the cases' `duration_s` compare with it (batch time is charged once).
    #[serde(default)]
    pub wall_s: f64,
    /// The run was stopped (SIGINT, SIGTERM) before every selected case ran: `not_run` names
    /// them, and `gpucts --resume DIR` finishes the run.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub incomplete: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_run: Vec<String>,
}

/// One node of a merged fleet result.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NodeInfo {
    pub name: String,
    #[serde(default)]
    pub fingerprint: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe: Option<serde_json::Value>,
}

/// A whole results set.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(bound(deserialize = "C: Deserialize<'de>"))]
pub struct Results<C = String> {
    #[serde(default = "schema_one")]
    pub schema_version: u32,
    pub gpucts_version: String,
    #[serde(default)]
    pub fingerprint: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<RunInfo>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub figures: BTreeMap<String, Vec<Figure>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<NodeInfo>,
    pub cases: Vec<StoredCase<C>>,
}

fn schema_one() -> u32 {
    1
}

/// Counts by verdict, as the closing line and the reports show them.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Counts {
    pub passed: usize,
    pub failed: usize,
    pub skipped: usize,
    pub waived: usize,
    pub flaky: usize,
    pub total: usize,
}

impl Counts {
    pub fn add(&mut self, v: VerdictName) {
        self.total += 1;
        match v {
            VerdictName::Pass | VerdictName::StaleWaiver => self.passed += 1,
            VerdictName::Fail | VerdictName::RequiredMissing => self.failed += 1,
            VerdictName::Skip => self.skipped += 1,
            VerdictName::Waived => self.waived += 1,
            VerdictName::Flaky => self.flaky += 1,
        }
    }
    pub fn of<'a, C: 'a>(cases: impl IntoIterator<Item = &'a StoredCase<C>>) -> Counts {
        let mut c = Counts::default();
        for case in cases {
            c.add(case.verdict);
        }
        c
    }
}

/// The verdict of a group of cases: FAIL on any failure; NOT CHECKED when nothing ran to a
/// pass (all skipped or waived: the machine did not check it); else PASS.
pub fn group_verdict(c: &Counts) -> &'static str {
    if c.failed > 0 {
        "FAIL"
    } else if c.passed + c.flaky == 0 {
        "NOT CHECKED"
    } else {
        "PASS"
    }
}

/// The `results.json` of `path`: a results directory or the file itself (gpucts reads a
/// bundle by unpacking it to such a file first).
pub fn load<C: serde::de::DeserializeOwned>(path: &Path) -> Result<Results<C>, ReadError> {
    if path.is_dir() {
        return load_file(&path.join("results.json"));
    }
    load_file(path)
}

fn load_file<C: serde::de::DeserializeOwned>(path: &Path) -> Result<Results<C>, ReadError> {
    let shown = path.display().to_string();
    let io = |source| ReadError::Io {
        path: shown.clone(),
        source,
    };
    let f = std::fs::File::open(path).map_err(io)?;
    let size = f.metadata().map_err(io)?.len();
    if size > MAX_RESULTS_BYTES {
        return Err(ReadError::TooLarge { path: shown, size });
    }
    let mut bytes = Vec::with_capacity(size as usize);
    f.take(MAX_RESULTS_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    parse(&shown, &bytes)
}

/// Parse `results.json` bytes; `shown` names them in errors.
pub fn parse<C: serde::de::DeserializeOwned>(
    shown: &str,
    bytes: &[u8],
) -> Result<Results<C>, ReadError> {
    if bytes.len() as u64 > MAX_RESULTS_BYTES {
        return Err(ReadError::TooLarge {
            path: shown.into(),
            size: bytes.len() as u64,
        });
    }
    let perr = |e: serde_json::Error| ReadError::Parse {
        path: shown.into(),
        line: e.line(),
        column: e.column(),
        what: e.to_string().split(" at line ").next().unwrap_or("").into(),
    };
    // The version first, so a file of another layout is refused for what it is.
    #[derive(Deserialize)]
    struct Head {
        schema_version: Option<serde_json::Value>,
        gpucts_version: Option<serde_json::Value>,
    }
    let head: Head = serde_json::from_slice(bytes).map_err(perr)?;
    let writer = head
        .gpucts_version
        .as_ref()
        .map(|v| {
            v.as_str()
                .map(String::from)
                .unwrap_or_else(|| v.to_string())
        })
        .unwrap_or_else(|| "?".into());
    let version = match &head.schema_version {
        None => 1,
        Some(v) => match v.as_u64() {
            Some(n) => n,
            None => {
                return Err(ReadError::Invalid {
                    path: shown.into(),
                    what: format!("schema_version is {v}; expected an integer"),
                })
            }
        },
    };
    if !(OLDEST_SCHEMA as u64..=SCHEMA_VERSION as u64).contains(&version) {
        return Err(ReadError::Version {
            path: shown.into(),
            found: version,
            writer,
        });
    }
    let r: Results<C> = serde_json::from_slice(bytes).map_err(perr)?;
    if r.cases.len() > MAX_CASES {
        return Err(ReadError::Invalid {
            path: shown.into(),
            what: format!("{} cases; at most {MAX_CASES} are read", r.cases.len()),
        });
    }
    let mut seen = std::collections::HashSet::new();
    for c in &r.cases {
        let key = (c.node.as_deref(), c.id.as_str());
        if !seen.insert(key) {
            return Err(ReadError::Invalid {
                path: shown.into(),
                what: format!("case `{}` appears twice; case ids are unique", c.id),
            });
        }
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_verdicts() {
        let mut c = Counts::default();
        assert_eq!(group_verdict(&c), "NOT CHECKED");
        c.add(VerdictName::Skip);
        assert_eq!(group_verdict(&c), "NOT CHECKED");
        c.add(VerdictName::Pass);
        assert_eq!(group_verdict(&c), "PASS");
        c.add(VerdictName::RequiredMissing);
        assert_eq!(group_verdict(&c), "FAIL");
    }

    const V2: &str = r#"{"schema_version": 2, "gpucts_version": "0.1.0", "fingerprint": {"gpu": "none"},
      "cases": [{"id": "abi.a", "area": "abi", "clause": "ptx-interop 13.2 §1.1", "origin": "x:1:1",
                 "status": {"status": "pass"}, "verdict": "pass", "duration_s": 0.1}]}"#;

    #[test]
    fn reads_current_and_first_layout() {
        let r = parse::<String>("r.json", V2.as_bytes()).unwrap();
        assert_eq!(r.cases[0].verdict, VerdictName::Pass);
        let v1 = V2.replace(r#""schema_version": 2,"#, "");
        assert_eq!(
            parse::<String>("r.json", v1.as_bytes())
                .unwrap()
                .schema_version,
            1
        );
    }

    #[test]
    fn other_version_is_refused_by_name() {
        let v9 = V2.replace(r#""schema_version": 2"#, r#""schema_version": 9"#);
        let e = parse::<String>("r.json", v9.as_bytes())
            .unwrap_err()
            .to_string();
        assert!(e.contains("schema_version 9"), "{e}");
        assert!(e.contains("reads schema_version 1..=2"), "{e}");
    }

    #[test]
    fn truncated_file_names_line_and_column() {
        let cut = &V2[..V2.len() / 2];
        let e = parse::<String>("r.json", cut.as_bytes())
            .unwrap_err()
            .to_string();
        // serde reports where the input ended: the last line of the cut, one past its end.
        let line = cut.matches('\n').count() + 1;
        let column = cut.len() - cut.rfind('\n').map_or(0, |i| i + 1);
        assert!(e.starts_with(&format!("r.json:{line}:{column}:")), "{e}");
        assert!(e.contains("EOF"), "{e}");
    }

    #[test]
    fn unknown_verdict_and_duplicate_ids_are_errors() {
        let bad = V2.replace(r#""verdict": "pass""#, r#""verdict": "great""#);
        let e = parse::<String>("r.json", bad.as_bytes())
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown variant `great`"), "{e}");
        let dup = V2.replace(
            "]}",
            r#", {"id": "abi.a", "area": "abi", "clause": "c", "status": {"status": "pass"}, "verdict": "pass"}]}"#,
        );
        let e = parse::<String>("r.json", dup.as_bytes())
            .unwrap_err()
            .to_string();
        assert!(e.contains("appears twice"), "{e}");
    }
}
