//! Reading suite files: YAML → raw entries (positions kept) → expanded, parsed cases.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use serde_saphyr::Spanned;

use super::matrix::{self, Axis};
use super::Case;
use crate::area::Areas;
use crate::capability::Capability;

/// A suite-file problem, always with the place it was found.
#[derive(Debug, Clone, PartialEq)]
pub struct SuiteError {
    pub file: PathBuf,
    pub line: u64,
    pub column: u64,
    pub message: String,
}

impl fmt::Display for SuiteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.file.display(), self.message)
        } else {
            write!(
                f,
                "{}:{}:{}: {}",
                self.file.display(),
                self.line,
                self.column,
                self.message
            )
        }
    }
}

impl std::error::Error for SuiteError {}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSuite {
    area: Spanned<String>,
    #[serde(default)]
    description: String,
    #[serde(default)]
    defaults: RawDefaults,
    cases: Vec<Spanned<RawCase>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDefaults {
    #[serde(default)]
    requires: Vec<Capability>,
    timeout_s: Option<f64>,
    isolate: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCase {
    id: String,
    clause: String,
    #[serde(default)]
    requires: Vec<Capability>,
    timeout_s: Option<f64>,
    isolate: Option<bool>,
    #[serde(default)]
    matrix: BTreeMap<String, Axis>,
    #[serde(default)]
    table: Vec<matrix::Params>,
    #[serde(default)]
    exclude: Vec<BTreeMap<String, serde_json::Value>>,
    check: serde_json::Value,
}

/// The cases of one suite file.
#[derive(Debug)]
pub struct LoadedSuite {
    pub file: PathBuf,
    pub area: String,
    pub description: String,
    pub cases: Vec<Case>,
}

const DEFAULT_TIMEOUT_S: f64 = 120.0;

fn id_is_well_formed(id: &str) -> bool {
    !id.is_empty()
        && id.split('.').all(|seg| {
            !seg.is_empty()
                && seg
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_-+{}".contains(c))
        })
}

/// Load one suite file, parsing its checks with the parser `areas` has for its `area:`. Every
/// problem found is returned, not only the first.
pub fn load_file(path: &Path, areas: &Areas) -> Result<LoadedSuite, Vec<SuiteError>> {
    let err_at = |line: u64, column: u64, message: String| SuiteError {
        file: path.to_path_buf(),
        line,
        column,
        message,
    };
    let text = std::fs::read_to_string(path)
        .map_err(|e| vec![err_at(0, 0, format!("cannot read suite file: {e}"))])?;
    let raw: RawSuite =
        serde_saphyr::from_str_with_options(&text, yaml_options()).map_err(|e| {
            let (line, column) = e
                .location()
                .map(|l| (l.line(), l.column()))
                .unwrap_or((0, 0));
            vec![err_at(line, column, bare_message(&e))]
        })?;

    let mut errors = Vec::new();
    let area = raw.area.value.clone();
    let Some(parser) = areas.parser(&area) else {
        return Err(vec![err_at(
            raw.area.referenced.line(),
            raw.area.referenced.column(),
            format!(
                "unknown area `{area}` (expected one of: {})",
                areas.names().join(", ")
            ),
        )]);
    };

    let mut cases = Vec::new();
    for spanned in &raw.cases {
        let (line, column) = (spanned.referenced.line(), spanned.referenced.column());
        let entry = &spanned.value;
        let mut fail = |m: String| errors.push(err_at(line, column, m));
        if !id_is_well_formed(&entry.id) {
            fail(format!(
                "case id `{}` is not a dotted id of [A-Za-z0-9_+-] segments",
                entry.id
            ));
            continue;
        }
        if !entry.id.starts_with(&format!("{area}.")) {
            fail(format!("case id `{}` must start with `{area}.`", entry.id));
            continue;
        }
        if entry.clause.trim().is_empty() {
            fail(format!("case `{}` names no spec clause", entry.id));
            continue;
        }
        let expanded = match matrix::expand(&entry.id, &entry.matrix, &entry.table, &entry.exclude)
        {
            Ok(p) => p,
            Err(e) => {
                fail(format!("case `{}`: {e}", entry.id));
                continue;
            }
        };
        for params in expanded {
            let id = matrix::substitute_text(&entry.id, &params);
            let content = matrix::substitute_value(&entry.check, &params);
            let check = match parser.parse(content) {
                Ok(c) => c,
                Err(e) => {
                    fail(format!("case `{id}`: invalid check: {e}"));
                    continue;
                }
            };
            let mut requires = raw.defaults.requires.clone();
            requires.extend(entry.requires.iter().copied());
            requires.extend(check.requires());
            requires.sort();
            requires.dedup();
            let timeout_s = entry
                .timeout_s
                .or(raw.defaults.timeout_s)
                .unwrap_or(DEFAULT_TIMEOUT_S);
            let isolate =
                entry.isolate.or(raw.defaults.isolate).unwrap_or(false) || check.isolate();
            cases.push(Case {
                id,
                area: area.clone(),
                clause: matrix::substitute_text(&entry.clause, &params),
                requires,
                isolate,
                timeout: Duration::from_secs_f64(timeout_s.max(0.001)),
                origin: format!("{}:{line}:{column}", path.display()),
                file: path.to_path_buf(),
                check,
            });
        }
    }

    let mut seen: HashMap<&str, &str> = HashMap::new();
    for c in &cases {
        if let Some(first) = seen.insert(&c.id, &c.origin) {
            let (line, column) = parse_origin_pos(&c.origin);
            errors.push(err_at(
                line,
                column,
                format!("duplicate case id `{}` (first defined at {first})", c.id),
            ));
        }
    }

    if errors.is_empty() {
        Ok(LoadedSuite {
            file: path.to_path_buf(),
            area,
            description: raw.description,
            cases,
        })
    } else {
        Err(errors)
    }
}

/// How every gpucts YAML file is read: duplicate keys are errors, and only YAML 1.2 spellings
/// are booleans (so a matrix value `y` or `no` stays a string).
pub fn yaml_options() -> serde_saphyr::Options {
    let mut o = serde_saphyr::Options::default();
    o.duplicate_keys = serde_saphyr::DuplicateKeyPolicy::Error;
    o.strict_booleans = true;
    o
}

/// Parse YAML text with [`yaml_options`]; the error is `(line, column, message)`.
pub fn from_yaml<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, (u64, u64, String)> {
    serde_saphyr::from_str_with_options(text, yaml_options()).map_err(|e| {
        let (l, c) = e
            .location()
            .map(|l| (l.line(), l.column()))
            .unwrap_or((0, 0));
        (l, c, bare_message(&e))
    })
}

/// serde-saphyr's message without its snippet and trailing position (we print `file:line:col`).
pub fn bare_message(e: &serde_saphyr::Error) -> String {
    let msg = e.without_snippet().to_string();
    let first = msg.lines().next().unwrap_or("").trim();
    match first.rfind(" at line ") {
        Some(i) => first[..i].to_string(),
        None => first.to_string(),
    }
}

fn parse_origin_pos(origin: &str) -> (u64, u64) {
    let mut it = origin.rsplitn(3, ':');
    let col = it.next().and_then(|s| s.parse().ok()).unwrap_or(0);
    let line = it.next().and_then(|s| s.parse().ok()).unwrap_or(0);
    (line, col)
}

/// A `--suite` argument that names no suite file.
#[derive(Debug, thiserror::Error)]
pub enum SuiteArgError {
    #[error("cannot list {}: {source}", dir.display())]
    ListDir {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error("suite file {arg} does not exist")]
    NoFile { arg: String },
    /// `known` lists the stems under `dir`, comma-separated.
    #[error("no suite named `{arg}` in {} (known: {known}, all)", dir.display())]
    UnknownName {
        arg: String,
        dir: PathBuf,
        known: String,
    },
}

/// Turn a `--suite` argument into files: `all`, a stem under `suites_dir`, or a path.
pub fn resolve_suite_arg(arg: &str, suites_dir: &Path) -> Result<Vec<PathBuf>, SuiteArgError> {
    if arg == "all" {
        let mut files: Vec<PathBuf> = std::fs::read_dir(suites_dir)
            .map_err(|source| SuiteArgError::ListDir {
                dir: suites_dir.to_path_buf(),
                source,
            })?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
            .collect();
        files.sort();
        return Ok(files);
    }
    if arg.contains('/') || arg.ends_with(".yaml") {
        let p = PathBuf::from(arg);
        return if p.is_file() {
            Ok(vec![p])
        } else {
            Err(SuiteArgError::NoFile {
                arg: arg.to_string(),
            })
        };
    }
    let p = suites_dir.join(format!("{arg}.yaml"));
    if p.is_file() {
        Ok(vec![p])
    } else {
        let mut known: Vec<String> = std::fs::read_dir(suites_dir)
            .into_iter()
            .flatten()
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let p = e.path();
                if p.extension()? != "yaml" {
                    return None;
                }
                Some(p.file_stem()?.to_string_lossy().into_owned())
            })
            .collect();
        known.sort();
        Err(SuiteArgError::UnknownName {
            arg: arg.to_string(),
            dir: suites_dir.to_path_buf(),
            known: known.join(", "),
        })
    }
}

/// Load several files; ids must be unique across all of them.
pub fn load_suites(files: &[PathBuf], areas: &Areas) -> Result<Vec<LoadedSuite>, Vec<SuiteError>> {
    let mut suites = Vec::new();
    let mut errors = Vec::new();
    for f in files {
        match load_file(f, areas) {
            Ok(s) => suites.push(s),
            Err(e) => errors.extend(e),
        }
    }
    let mut seen: HashMap<String, String> = HashMap::new();
    for s in &suites {
        for c in &s.cases {
            if let Some(first) = seen.insert(c.id.clone(), c.origin.clone()) {
                let (line, column) = parse_origin_pos(&c.origin);
                errors.push(SuiteError {
                    file: s.file.clone(),
                    line,
                    column,
                    message: format!("duplicate case id `{}` (first defined at {first})", c.id),
                });
            }
        }
    }
    if errors.is_empty() {
        Ok(suites)
    } else {
        Err(errors)
    }
}
