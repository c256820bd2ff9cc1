//! Reading suite files: YAML → raw entries (positions kept) → expanded, parsed cases.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use serde_saphyr::Spanned;

use super::matrix::{self, Axis};
use super::{Case, Origin};
use crate::area::{AreaParser, Areas};
use crate::capability::Capability;

/// A suite-file problem, always with the place it was found (`file:line:column: message`).
pub use gpucts_input::InputError as SuiteError;
pub(crate) use gpucts_input::{bare_message, explain, from_yaml, yaml_options};

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
    timeout_s: Option<Spanned<f64>>,
    isolate: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCase {
    id: String,
    clause: String,
    #[serde(default)]
    requires: Vec<Capability>,
    timeout_s: Option<Spanned<f64>>,
    isolate: Option<bool>,
    #[serde(default)]
    matrix: BTreeMap<String, Axis>,
    #[serde(default)]
    table: Vec<matrix::Params>,
    #[serde(default)]
    exclude: Vec<BTreeMap<String, serde_json::Value>>,
    /// Matrix axes that also take the producers of `--producer-file` (each where the check
    /// accepts it: a producer whose language the area does not write adds no case).
    #[serde(default)]
    user_producers: Vec<String>,
    check: serde_json::Value,
}

/// The cases of one suite file.
#[derive(Debug)]
pub struct LoadedSuite {
    pub file: PathBuf,
    pub area: String,
    pub description: String,
    pub cases: Vec<Case>,
    /// The file's text as read (line ends normalised), for placing the problems that
    /// [`super::validate_cases`] finds after parsing.
    pub source: std::sync::Arc<str>,
    /// The ids of the cases a producer from `--producer-file` added (`user_producers:`): a
    /// check that refuses one is not an error, the producer is outside its area's view
    /// ([`super::drop_out_of_view`]).
    pub from_producer_files: std::collections::HashSet<String>,
}

const DEFAULT_TIMEOUT_S: f64 = 120.0;
/// The longest per-case timeout a suite may ask for (one day): a larger figure is a typo, and
/// `Duration::from_secs_f64` panics on infinity.
pub(crate) const MAX_TIMEOUT_S: f64 = 86_400.0;

/// What each key of a suite file holds, in the suite format's terms, so that an error names
/// the field and what is allowed.
pub(crate) fn suite_field_help(field: &str) -> Option<&'static str> {
    Some(match field {
        "area" => "`area:` names the spec area (abi, xcall, syscalls, atomics, dwarf, gpudirect, selftest)",
        "description" => "`description:` is free text",
        "defaults" => "`defaults:` is a mapping with `requires`, `timeout_s` and `isolate`",
        "cases" => "`cases:` is a list of case entries (id, clause, check, ...)",
        "id" => "`id:` is a dotted case id `<area>.group.case` of [A-Za-z0-9_+-] segments",
        "clause" => "`clause:` is the spec clause the case checks: an id of suites/clauses/catalogue.yaml, then ` (detail)` if any (e.g. `ptx-interop-13.2 §2.3 note A (lint)`)",
        "requires" => "`requires:` is a list of capability names (gpu, ptxas, nvrtc, clang, kmod, ...)",
        "timeout_s" => "`timeout_s:` is a number of seconds, above 0 and at most 86400",
        "isolate" => "`isolate:` is true or false",
        "matrix" => "`matrix:` maps a key to a list of values `[a, b]` or to `{range: [lo, hi]}` (integers, lo < hi)",
        "range" => "`range:` is two integers `[lo, hi]` with lo < hi (hi excluded)",
        "table" => "`table:` is a list of mappings, one row of parameter values each",
        "exclude" => "`exclude:` is a list of mappings from matrix or table keys to values",
        "check" => "`check:` is the area's check content",
        "user_producers" => "`user_producers:` lists matrix axes (`[producer]`, `[caller, callee]`) that also take the producers of `--producer-file`",
        _ => return None,
    })
}

/// Whether an id (expanded or a template, when `template`) obeys the id rule: dotted, non-empty
/// segments of `[A-Za-z0-9_+-]` (`{}` allowed in templates only).
pub(crate) fn id_is_well_formed(id: &str, template: bool) -> bool {
    !id.is_empty()
        && id.split('.').all(|seg| {
            !seg.is_empty()
                && seg.chars().all(|c| {
                    c.is_ascii_alphanumeric() || "_-+".contains(c) || (template && "{}".contains(c))
                })
        })
}

/// Limits a suite load enforces before expanding anything.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Cases one entry may expand to (matrix product × table rows, before excludes).
    pub max_cases_per_entry: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_cases_per_entry: matrix::MAX_CASES_PER_ENTRY,
        }
    }
}

impl Limits {
    /// The default limits, with `--max-cases` when given.
    pub(crate) fn with_max_cases(max_cases_per_entry: Option<u64>) -> Limits {
        Limits {
            max_cases_per_entry: max_cases_per_entry.unwrap_or(matrix::MAX_CASES_PER_ENTRY),
        }
    }
}

/// Load one suite file, parsing its checks with the parser `areas` has for its `area:`. Every
/// problem found is returned, not only the first.
#[cfg(test)]
pub(crate) fn load_file(path: &Path, areas: &Areas) -> Result<LoadedSuite, Vec<SuiteError>> {
    load_file_with(path, areas, &Limits::default())
}

/// [`load_file`] within `limits`.
pub(crate) fn load_file_with(
    path: &Path,
    areas: &Areas,
    limits: &Limits,
) -> Result<LoadedSuite, Vec<SuiteError>> {
    let text = super::input::read_text(path).map_err(|e| vec![e])?;
    load_text(path, &text, areas, limits)
}

/// [`load_text`] on raw bytes (UTF-8 checked with a position; line ends normalised).
pub(crate) fn load_bytes(
    path: &Path,
    bytes: &[u8],
    areas: &Areas,
    limits: &Limits,
) -> Result<LoadedSuite, Vec<SuiteError>> {
    let text = super::input::decode(path, bytes).map_err(|e| vec![e])?;
    load_text(path, &text, areas, limits)
}

/// Load a suite from its text; `path` names it in messages and in the cases.
pub fn load_text(
    path: &Path,
    text: &str,
    areas: &Areas,
    limits: &Limits,
) -> Result<LoadedSuite, Vec<SuiteError>> {
    let text = super::input::normalize_line_ends(text);
    let raw: RawSuite =
        serde_saphyr::from_str_with_options(&text, yaml_options()).map_err(|e| {
            let (line, column) = e
                .location()
                .map(|l| (l.line(), l.column()))
                .unwrap_or((0, 0));
            vec![error_at(
                path,
                line,
                column,
                explain(&text, line, column, &bare_message(&e), suite_field_help),
            )]
        })?;

    let mut errors = Vec::new();
    let area = raw.area.value.clone();
    let Some(parser) = areas.parser(&area) else {
        return Err(vec![error_at(
            path,
            raw.area.referenced.line(),
            raw.area.referenced.column(),
            format!(
                "unknown area `{area}`; `area:` is one of: {}",
                areas.names().join(", ")
            ),
        )]);
    };
    let reader = EntryReader {
        path,
        area: &area,
        parser,
        defaults: &raw.defaults,
        default_timeout: check_timeout(path, &raw.defaults.timeout_s, &mut errors),
        limits,
    };
    let mut cases = Vec::new();
    let mut from_producer_files = std::collections::HashSet::new();
    for spanned in &raw.cases {
        reader.entry(spanned, &mut cases, &mut from_producer_files, &mut errors);
    }
    duplicate_ids(path, &cases, &mut errors);
    if errors.is_empty() {
        Ok(LoadedSuite {
            file: path.to_path_buf(),
            area,
            description: raw.description,
            cases,
            source: std::sync::Arc::from(&*text),
            from_producer_files,
        })
    } else {
        Err(errors)
    }
}

fn error_at(path: &Path, line: u64, column: u64, message: String) -> SuiteError {
    SuiteError {
        file: path.to_path_buf(),
        line,
        column,
        message,
    }
}

/// A `timeout_s:` value, if given and in range (above 0, at most [`MAX_TIMEOUT_S`]); out of
/// range, an error at the value.
fn check_timeout(
    path: &Path,
    t: &Option<Spanned<f64>>,
    errors: &mut Vec<SuiteError>,
) -> Option<f64> {
    let t = t.as_ref()?;
    let v = t.value;
    if v.is_finite() && v > 0.0 && v <= MAX_TIMEOUT_S {
        Some(v)
    } else {
        errors.push(error_at(
            path,
            t.referenced.line(),
            t.referenced.column(),
            format!(
                "`timeout_s: {v}` is out of range; `timeout_s:` is a number of seconds, above 0 and at most {MAX_TIMEOUT_S}"
            ),
        ));
        None
    }
}

/// What every entry of one suite file shares: its file, area, the area's `check:` parser and
/// the `defaults:`.
struct EntryReader<'a> {
    path: &'a Path,
    area: &'a str,
    parser: &'a dyn AreaParser,
    defaults: &'a RawDefaults,
    default_timeout: Option<f64>,
    limits: &'a Limits,
}

impl EntryReader<'_> {
    /// The cases of one entry: its id and clause checked, its `matrix:`/`table:` expanded
    /// (within the limit), each expansion's id checked and its `check:` parsed by the area;
    /// requirements are the defaults', the entry's and the check's own. Errors go to `errors`
    /// at the entry's position.
    fn entry(
        &self,
        spanned: &Spanned<RawCase>,
        cases: &mut Vec<Case>,
        from_producer_files: &mut std::collections::HashSet<String>,
        errors: &mut Vec<SuiteError>,
    ) {
        let (line, column) = (spanned.referenced.line(), spanned.referenced.column());
        let entry = &spanned.value;
        let timeout_s = match &entry.timeout_s {
            Some(_) => match check_timeout(self.path, &entry.timeout_s, errors) {
                Some(t) => t,
                None => return,
            },
            None => self.default_timeout.unwrap_or(DEFAULT_TIMEOUT_S),
        };
        let mut fail = |m: String| errors.push(error_at(self.path, line, column, m));
        if let Err(m) = entry_rules(entry, self.area) {
            fail(m);
            return;
        }
        let (matrix, added) = with_user_producers(entry);
        let expanded = match matrix::expand_limited(
            &entry.id,
            &matrix,
            &entry.table,
            &entry.exclude,
            self.limits.max_cases_per_entry,
        ) {
            Ok(p) => p,
            Err(e) => {
                fail(format!("case `{}`: {e}", entry.id));
                return;
            }
        };
        for params in expanded {
            // A producer from a file is not paired with itself by an entry that takes it on
            // two axes (a caller and a callee): that is a `self` entry's case.
            let own: Vec<&serde_json::Value> = added
                .iter()
                .filter(|(k, v)| params.get(k) == Some(v))
                .map(|(_, v)| v)
                .collect();
            if own.len() > 1 && own.windows(2).all(|w| w[0] == w[1]) {
                continue;
            }
            if !own.is_empty() {
                from_producer_files.insert(matrix::substitute_text(&entry.id, &params));
            }
            let id = matrix::substitute_text(&entry.id, &params);
            if !id_is_well_formed(&id, false) {
                fail(format!(
                    "case `{}` expands to the id `{id}`, which breaks the id rule (dotted, non-empty segments of [A-Za-z0-9_+-]); change the matrix or table value",
                    entry.id
                ));
                break;
            }
            let content = matrix::substitute_value(&entry.check, &params);
            let check = match self.parser.parse(content) {
                Ok(c) => c,
                // A producer from a file that this check does not take (its language is not
                // one the area writes): no case, as for a built-in producer left off the axis.
                Err(_) if added.iter().any(|(k, v)| params.get(k) == Some(v)) => continue,
                Err(e) => {
                    fail(format!("case `{id}`: invalid check: {e}"));
                    continue;
                }
            };
            let mut requires = self.defaults.requires.clone();
            requires.extend(entry.requires.iter().copied());
            requires.extend(check.requires());
            requires.sort();
            requires.dedup();
            let isolate =
                entry.isolate.or(self.defaults.isolate).unwrap_or(false) || check.isolate();
            cases.push(Case {
                id,
                area: self.area.to_string(),
                clause: matrix::substitute_text(&entry.clause, &params),
                requires,
                isolate,
                timeout: Duration::from_secs_f64(timeout_s),
                origin: Origin {
                    file: self.path.to_path_buf(),
                    line,
                    column,
                },
                file: self.path.to_path_buf(),
                check,
                device: None,
            });
        }
    }
}

/// The entry's matrix with the producers of `--producer-file` added to each axis its
/// `user_producers:` names, and the (axis, value) pairs added.
fn with_user_producers(
    entry: &RawCase,
) -> (BTreeMap<String, Axis>, Vec<(String, serde_json::Value)>) {
    let mut matrix = entry.matrix.clone();
    let mut added = Vec::new();
    for key in &entry.user_producers {
        if let Some(Axis::List(values)) = matrix.get_mut(key) {
            for name in crate::backend::producer::Producer::from_files() {
                let v = serde_json::Value::String(name.to_string());
                if !values.contains(&v) {
                    values.push(v.clone());
                    added.push((key.clone(), v));
                }
            }
        }
    }
    (matrix, added)
}

/// An entry's own rules before expansion: a well-formed id template under the file's area,
/// and a spec clause.
fn entry_rules(entry: &RawCase, area: &str) -> Result<(), String> {
    for key in &entry.user_producers {
        if !matches!(entry.matrix.get(key), Some(Axis::List(_))) {
            return Err(format!(
                "`user_producers:` names `{key}`, which is not a list axis of the entry's `matrix:`"
            ));
        }
    }
    if !id_is_well_formed(&entry.id, true) {
        return Err(format!(
            "case id `{}` breaks the id rule; `id:` is dotted, non-empty segments of [A-Za-z0-9_+-] (and `{{key}}` placeholders)",
            entry.id
        ));
    }
    if !entry.id.starts_with(&format!("{area}.")) {
        return Err(format!("case id `{}` must start with `{area}.`", entry.id));
    }
    if entry.clause.trim().is_empty() {
        return Err(format!(
            "case `{}` names no spec clause; {}",
            entry.id,
            suite_field_help("clause").unwrap_or_default()
        ));
    }
    Ok(())
}

/// A case id defined twice in one file: an error at the second, naming the first.
fn duplicate_ids(path: &Path, cases: &[Case], errors: &mut Vec<SuiteError>) {
    let mut seen: HashMap<&str, &Origin> = HashMap::new();
    for c in cases {
        if let Some(first) = seen.insert(&c.id, &c.origin) {
            errors.push(error_at(
                path,
                c.origin.line,
                c.origin.column,
                format!("duplicate case id `{}` (first defined at {first})", c.id),
            ));
        }
    }
}

/// A `--suite` argument that names no suite file.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SuiteArgError {
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
pub(crate) fn resolve_suite_arg(
    arg: &str,
    suites_dir: &Path,
) -> Result<Vec<PathBuf>, SuiteArgError> {
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
pub(crate) fn load_suites(
    files: &[PathBuf],
    areas: &Areas,
) -> Result<Vec<LoadedSuite>, Vec<SuiteError>> {
    load_suites_with(files, areas, &Limits::default())
}

/// [`load_suites`] within `limits`.
pub(crate) fn load_suites_with(
    files: &[PathBuf],
    areas: &Areas,
    limits: &Limits,
) -> Result<Vec<LoadedSuite>, Vec<SuiteError>> {
    let mut suites = Vec::new();
    let mut errors = Vec::new();
    for f in files {
        match load_file_with(f, areas, limits) {
            Ok(s) => suites.push(s),
            Err(e) => errors.extend(e),
        }
    }
    let mut seen: HashMap<String, Origin> = HashMap::new();
    for s in &suites {
        for c in &s.cases {
            if let Some(first) = seen.insert(c.id.clone(), c.origin.clone()) {
                errors.push(SuiteError {
                    file: s.file.clone(),
                    line: c.origin.line,
                    column: c.origin.column,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_multibyte_character_before_a_colon_names_no_field_and_does_not_panic() {
        // Found by the abi_types, litmus_yaml, suite_yaml and waivers fuzz targets: `§1:` and `addϘ:` sliced a
        // multi-byte character.
        // The key is the identifier run just before the colon.
        // (field_at's own cases are in crates/input.)
        for input in [
            &include_bytes!("../../tests/data/fuzz/abi_types-crash-0e25bd0b.yaml")[..],
            &include_bytes!("../../tests/data/fuzz/litmus_yaml-crash-ed548339.yaml")[..],
            &include_bytes!("../../tests/data/fuzz/suite_yaml-crash-e345022e.yaml")[..],
            &include_bytes!("../../tests/data/fuzz/waivers-crash-2c9c487c.yaml")[..],
        ] {
            let text = String::from_utf8_lossy(input);
            let e = from_yaml::<serde_json::Value>(&text).err();
            let _ = e.map(|(l, c, m)| explain(&text, l, c, &m, suite_field_help));
            let _ = explain(
                &text,
                1,
                200,
                "invalid type: x, expected y",
                suite_field_help,
            );
        }
    }
}
