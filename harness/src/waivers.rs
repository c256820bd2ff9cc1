//! Known failures: a waiver turns a failing case into `waived` (with the waiver's id), and a
//! waiver that matches a passing case is reported as stale so the list does not rot.
//!
//! ```yaml
//! waivers:
//!   - id: W-ABI-001
//!     cases: "abi.params.clang.*"
//!     reason: "LLVM raises byval alignment to 4"
//!     findings: ['\.param \.align 4 \.b8']           # what it excuses: regexes over lines
//!     platform: { clang: "Debian clang version 19*" }   # optional, globs on the fingerprint
//! ```
//!
//! A waiver excuses findings, not cases: a failing case it lists is waived only when every
//! line of what the case found (its observed value and detail, or its error) matches one of
//! the waiver's `findings:`; any other line fails the case, named. A waiver is about one
//! producer's behaviour: a `platform:` key naming a toolchain component (clang, nvrtc, ...)
//! constrains only the cases that need that component, so a waiver written for several
//! producers still applies to the cases of the ones present when another is missing or at
//! another version. Host keys (os, driver, gpu, ...) constrain every case.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use globset::{GlobBuilder, GlobMatcher};
use serde::Deserialize;

use crate::capability::Capability;
use crate::outcome::CaseStatus;

/// Known producer divergences, each investigated, applied unless `--no-default-waivers`
/// (relative to the repository root).
pub(crate) const DEFAULT_FILE: &str = "suites/waivers/known-divergences.yaml";

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Waiver {
    pub id: String,
    /// A glob over case ids (`*` any run of characters, `?` one character, `{a,b}` either
    /// alternative, nesting allowed).
    pub cases: String,
    pub reason: String,
    /// The findings it excuses: regular expressions, each searched in a line of what a failing
    /// case found; every line must match one. At least one.
    #[serde(default)]
    pub findings: Vec<String>,
    /// Lines that may stand beside the findings (a check's header, e.g. "A calling B: cuLink*
    /// failed") but excuse nothing alone: a failure is waived only when at least one line
    /// matches a `findings:` pattern. Same pattern rules as `findings:`.
    #[serde(default)]
    pub context: Vec<String>,
    /// Fingerprint keys (see `gpucts probe`) and globs their values must match.
    #[serde(default)]
    pub platform: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct WaiverFile {
    waivers: Vec<serde_saphyr::Spanned<Waiver>>,
}

/// The longest `cases:`/`platform:` glob (a hand-written id pattern is far shorter; the bound
/// keeps the compiled automaton small whatever the braces).
pub(crate) const MAX_PATTERN_LEN: usize = 1024;
/// The deepest `{…}` nesting in a glob.
pub(crate) const MAX_BRACE_DEPTH: usize = 8;

/// The fingerprint keys that describe the machine, not a tool: a `platform:` glob on one of
/// them constrains every case.
pub(crate) const HOST_KEYS: [&str; 10] = [
    "gpucts",
    "os",
    "kernel",
    "arch",
    "cpu",
    "cuda",
    "driver",
    "gpu",
    "compute_capability",
    "gpu_uuid",
];

/// The component a `platform:` key names, when it names a tool rather than the host: such a
/// key constrains only the cases that need that component.
fn tool_key(key: &str) -> Option<Capability> {
    if HOST_KEYS.contains(&key) {
        return None;
    }
    Capability::ALL.iter().copied().find(|c| c.name() == key)
}

/// The longest `findings:` pattern, and the most a waiver lists.
pub(crate) const MAX_FINDING_PATTERNS: usize = 64;

/// The fingerprint keys a `platform:` glob may name (`gpucts probe`): the host keys and one
/// per toolchain component. A key outside these never matches, so a typo would silently
/// disable the waiver.
pub(crate) fn platform_keys() -> Vec<&'static str> {
    let mut keys = HOST_KEYS.to_vec();
    keys.extend(crate::capability::Capability::ALL.iter().map(|c| c.name()));
    keys.sort_unstable();
    keys.dedup();
    keys
}

/// What each key of a waiver file holds, for error messages.
fn waiver_field_help(field: &str) -> Option<&'static str> {
    Some(match field {
        "waivers" => {
            "`waivers:` is a list of waivers, each with id, cases, reason and an optional platform"
        }
        "id" => "`id:` is the waiver's id, unique across the waiver files (e.g. W-ABI-001)",
        "cases" => "`cases:` is a glob over case ids (`*`, `?`, `{a,b}`)",
        "reason" => "`reason:` says why the failure is known, as text",
        "findings" => "`findings:` lists regular expressions, each matching lines of what the failure found that this waiver excuses",
        "context" => "`context:` lists regular expressions for lines allowed beside the findings (a header) that excuse nothing alone",
        "platform" => "`platform:` maps fingerprint keys (see `gpucts probe`) to globs",
        _ => return None,
    })
}

/// A waiver-file problem; the `Display` form starts with the file (and position when known).
#[derive(Debug, thiserror::Error)]
pub enum WaiverError {
    #[error("{}: cannot read waiver file: {source}", file.display())]
    Read {
        file: PathBuf,
        source: std::io::Error,
    },
    /// The YAML does not read as a waiver list; `line` is 0 when the reader gave no position.
    #[error("{}", at(file, *line, *column, message))]
    Parse {
        file: PathBuf,
        line: u64,
        column: u64,
        message: String,
    },
    #[error("{}: duplicate waiver id `{id}` (first at line {first}); waiver ids are unique", at(file, *line, *column, ""))]
    DuplicateId {
        file: PathBuf,
        line: u64,
        column: u64,
        first: u64,
        id: String,
    },
    #[error("{}waiver `{id}` gives no reason; `reason:` says why the failure is known", at(file, *line, *column, ""))]
    NoReason {
        file: PathBuf,
        line: u64,
        column: u64,
        id: String,
    },
    /// No `findings:`: a waiver names what it excuses.
    #[error("{}waiver `{id}` lists no findings; `findings:` lists the regular expressions matching what the failure found that it excuses (see a failing run's `observed` and detail)", at(file, *line, *column, ""))]
    NoFindings {
        file: PathBuf,
        line: u64,
        column: u64,
        id: String,
    },
    /// A `platform:` key that is no fingerprint key.
    #[error("{}waiver `{id}`: unknown platform key `{key}`; allowed: {}", at(file, *line, *column, ""), platform_keys().join(", "))]
    UnknownPlatformKey {
        file: PathBuf,
        line: u64,
        column: u64,
        id: String,
        key: String,
    },
    /// A `cases:` or `platform:` glob that does not compile (e.g. an unclosed `{`) or is over
    /// the limits.
    #[error("{}waiver `{id}`: bad pattern `{pattern}`: {why}", file.as_ref().map(|(f, l, c)| at(f, *l, *c, "")).unwrap_or_default())]
    BadPattern {
        /// The file, line and column of the waiver, when it came from a file.
        file: Option<(PathBuf, u64, u64)>,
        id: String,
        pattern: String,
        why: PatternError,
    },
    #[error("waiver id `{id}` appears in two waiver files: {} and {}", first.display(), second.display())]
    InTwoFiles {
        id: String,
        first: PathBuf,
        second: PathBuf,
    },
}

fn at(file: &Path, line: u64, column: u64, message: &str) -> String {
    let msg = if message.is_empty() { "" } else { message };
    if line == 0 {
        format!("{}: {msg}", file.display())
    } else {
        format!("{}:{line}:{column}: {msg}", file.display())
    }
}

/// One waiver with its globs compiled once (a run asks every case against every waiver).
#[derive(Debug, Clone)]
struct Compiled {
    waiver: Waiver,
    /// The file it came from (None for a list built in code).
    file: Option<PathBuf>,
    cases: GlobMatcher,
    findings: Vec<regex::Regex>,
    context: Vec<regex::Regex>,
    /// Each key's glob, and the component it constrains (`None`: a host key, every case).
    platform: Vec<(String, GlobMatcher, Option<Capability>)>,
}

/// A finding pattern, bounded before compiling: the regex crate matches in linear time, and
/// its size limit keeps the compiled automaton small.
fn finding_regex(pattern: &str) -> Result<regex::Regex, PatternError> {
    if pattern.len() > MAX_PATTERN_LEN {
        return Err(PatternError::TooLong { len: pattern.len() });
    }
    regex::RegexBuilder::new(pattern)
        .size_limit(1 << 20)
        .build()
        .map_err(|e| PatternError::Regex(e.to_string()))
}

/// Why a `cases:` or `platform:` pattern is refused; the limits are checked before compiling.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatternError {
    #[error("{len} bytes long; a pattern is at most {MAX_PATTERN_LEN} bytes")]
    TooLong { len: usize },
    #[error("{n} findings patterns; a waiver lists at most {MAX_FINDING_PATTERNS}")]
    TooMany { n: usize },
    /// The regex crate's reason, as it words it.
    #[error("not a regular expression: {0}")]
    Regex(String),
    #[error("a finding pattern that matches an empty line excuses every finding")]
    MatchesEverything,
    #[error("a waiver id is letters, digits, `.`, `_` and `-` (reports join ids with `+`)")]
    BadId,
    #[error("braces nest {depth} deep; at most {MAX_BRACE_DEPTH}")]
    TooDeep { depth: usize },
    /// globset's reason, as it words it.
    #[error("{0}")]
    Glob(globset::ErrorKind),
}

/// Globs compile to one automaton each (globset), so `{a,b}.{c,d}` is matched without
/// expanding the alternatives into every combination; the length and brace depth are bounded
/// before compiling.
fn glob(pattern: &str) -> Result<GlobMatcher, PatternError> {
    if pattern.len() > MAX_PATTERN_LEN {
        return Err(PatternError::TooLong { len: pattern.len() });
    }
    let mut depth = 0usize;
    let mut deepest = 0usize;
    let mut escaped = false;
    for c in pattern.chars() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            '}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    if deepest > MAX_BRACE_DEPTH {
        return Err(PatternError::TooDeep { depth: deepest });
    }
    Ok(GlobBuilder::new(pattern)
        .literal_separator(false)
        .backslash_escape(true)
        .build()
        .map_err(|e| PatternError::Glob(e.kind().clone()))?
        .compile_matcher())
}

fn compile(w: Waiver, file: Option<(PathBuf, u64, u64)>) -> Result<Compiled, WaiverError> {
    let bad = |pattern: &str, why: PatternError| WaiverError::BadPattern {
        file: file.clone(),
        id: w.id.clone(),
        pattern: pattern.to_string(),
        why,
    };
    let cases = glob(&w.cases).map_err(|e| bad(&w.cases, e))?;
    let mut platform = Vec::new();
    for (k, pat) in &w.platform {
        platform.push((k.clone(), glob(pat).map_err(|e| bad(pat, e))?, tool_key(k)));
    }
    let patterns = |key: &str, list: &[String]| -> Result<Vec<regex::Regex>, WaiverError> {
        if list.len() > MAX_FINDING_PATTERNS {
            return Err(bad(key, PatternError::TooMany { n: list.len() }));
        }
        let compiled: Vec<regex::Regex> = list
            .iter()
            .map(|p| finding_regex(p).map_err(|e| bad(p, e)))
            .collect::<Result<_, _>>()?;
        // A pattern that matches the empty line (`''`, `.*`) would excuse every finding.
        if let Some((p, _)) = list.iter().zip(&compiled).find(|(_, r)| r.is_match("")) {
            return Err(bad(p, PatternError::MatchesEverything));
        }
        Ok(compiled)
    };
    let findings = patterns("findings", &w.findings)?;
    let context = patterns("context", &w.context)?;
    if !w
        .id
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        || w.id.is_empty()
    {
        return Err(bad(&w.id, PatternError::BadId));
    }
    let file = file.map(|(f, _, _)| f);
    Ok(Compiled {
        waiver: w,
        file,
        cases,
        findings,
        context,
        platform,
    })
}

#[derive(Debug, Clone, Default)]
pub struct Waivers {
    list: Vec<Compiled>,
}

impl Waivers {
    pub fn load(path: &Path) -> Result<Waivers, WaiverError> {
        let text = crate::suite::input::read_text(path).map_err(|e| WaiverError::Parse {
            file: path.to_path_buf(),
            line: e.line,
            column: e.column,
            message: e
                .message
                .replacen("cannot read", "cannot read waiver file", 1),
        })?;
        Waivers::parse(path, &text)
    }

    /// Read a waiver list from its text; `path` names it in messages.
    pub fn parse(path: &Path, text: &str) -> Result<Waivers, WaiverError> {
        let text = crate::suite::input::normalize_line_ends(text);
        let f: WaiverFile =
            serde_saphyr::from_str_with_options(&text, crate::suite::yaml_options()).map_err(
                |e| {
                    let (line, column) = e
                        .location()
                        .map(|l| (l.line(), l.column()))
                        .unwrap_or((0, 0));
                    WaiverError::Parse {
                        file: path.to_path_buf(),
                        line,
                        column,
                        message: crate::suite::explain(
                            &text,
                            line,
                            column,
                            &crate::suite::bare_message(&e),
                            waiver_field_help,
                        ),
                    }
                },
            )?;
        let mut seen = std::collections::HashMap::new();
        let keys = platform_keys();
        for sw in &f.waivers {
            let (line, column) = (sw.referenced.line(), sw.referenced.column());
            let w = &sw.value;
            if let Some(first) = seen.insert(w.id.as_str(), line) {
                return Err(WaiverError::DuplicateId {
                    file: path.to_path_buf(),
                    line,
                    column,
                    first,
                    id: w.id.clone(),
                });
            }
            if w.reason.trim().is_empty() {
                return Err(WaiverError::NoReason {
                    file: path.to_path_buf(),
                    line,
                    column,
                    id: w.id.clone(),
                });
            }
            if w.findings.iter().all(|f| f.trim().is_empty()) {
                return Err(WaiverError::NoFindings {
                    file: path.to_path_buf(),
                    line,
                    column,
                    id: w.id.clone(),
                });
            }
            if let Some(k) = w.platform.keys().find(|k| !keys.contains(&k.as_str())) {
                return Err(WaiverError::UnknownPlatformKey {
                    file: path.to_path_buf(),
                    line,
                    column,
                    id: w.id.clone(),
                    key: k.clone(),
                });
            }
        }
        let list = f
            .waivers
            .into_iter()
            .map(|sw| {
                let at = (
                    path.to_path_buf(),
                    sw.referenced.line(),
                    sw.referenced.column(),
                );
                compile(sw.value, Some(at))
            })
            .collect::<Result<_, _>>()?;
        Ok(Waivers { list })
    }

    /// The waivers of a run: the default file under `root` (unless `no_default`, or when it is
    /// absent) and then each of `extra`, ids unique across all. A file named twice (the
    /// default file given again with `--waivers`) is read once.
    pub(crate) fn load_run(
        root: &Path,
        no_default: bool,
        extra: &[PathBuf],
    ) -> Result<Waivers, WaiverError> {
        let mut files = Vec::new();
        let default = root.join(DEFAULT_FILE);
        if !no_default && default.is_file() {
            files.push(default);
        }
        files.extend(extra.iter().cloned());
        let mut waivers = Waivers::default();
        let mut read = std::collections::HashSet::new();
        for f in &files {
            let same = std::fs::canonicalize(f).unwrap_or_else(|_| f.clone());
            if !read.insert(same) {
                continue;
            }
            waivers.extend(Waivers::load(f)?)?;
        }
        Ok(waivers)
    }

    pub fn from_list(list: Vec<Waiver>) -> Result<Waivers, WaiverError> {
        let list = list
            .into_iter()
            .map(|w| compile(w, None))
            .collect::<Result<_, _>>()?;
        Ok(Waivers { list })
    }

    /// Add another file's waivers; ids must stay unique.
    pub fn extend(&mut self, other: Waivers) -> Result<(), WaiverError> {
        for w in other.list {
            if let Some(x) = self.list.iter().find(|x| x.waiver.id == w.waiver.id) {
                let shown = |f: &Option<PathBuf>| f.clone().unwrap_or_else(|| "(built in)".into());
                return Err(WaiverError::InTwoFiles {
                    id: w.waiver.id.clone(),
                    first: shown(&x.file),
                    second: shown(&w.file),
                });
            }
            self.list.push(w);
        }
        Ok(())
    }

    /// Every waiver, in file order.
    pub fn iter(&self) -> impl Iterator<Item = &Waiver> {
        self.list.iter().map(|c| &c.waiver)
    }

    /// The first waiver listing this case on this platform (see [`Waivers::applicable`]).
    pub fn find(
        &self,
        case_id: &str,
        requires: &[Capability],
        fingerprint: &BTreeMap<String, String>,
    ) -> Option<Applied<'_>> {
        self.applicable(case_id, requires, fingerprint)
            .into_iter()
            .next()
    }

    /// Every waiver listing this case on this platform, in file order. `requires` are the
    /// components the case needs: a `platform:` key naming another component does not
    /// constrain it.
    pub(crate) fn applicable(
        &self,
        case_id: &str,
        requires: &[Capability],
        fingerprint: &BTreeMap<String, String>,
    ) -> Vec<Applied<'_>> {
        self.list
            .iter()
            .filter(|w| {
                w.cases.is_match(case_id)
                    && w.platform.iter().all(|(k, pat, tool)| match tool {
                        Some(c) if !requires.contains(c) => true,
                        _ => fingerprint.get(k).is_some_and(|v| pat.is_match(v)),
                    })
            })
            .map(|c| Applied { compiled: c })
            .collect()
    }
}

/// What the waivers listing a case make of its status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Excuse {
    /// No waiver lists the case, or it did not fail and none does.
    None,
    /// The case failed and every finding is excused: the ids of the waivers whose findings
    /// matched, joined with `+` (one divergence of each; e.g. a call pair with libNVVM's
    /// byval alignment and clang's return alignment).
    Excused(String),
    /// The case passed although a waiver lists it.
    Stale(String),
    /// The case failed with findings no listing waiver names: it fails, naming them.
    Unexcused { waivers: String, lines: Vec<String> },
}

/// Judge a status against the waivers listing its case: every line of what a failure found
/// must match a `findings:` pattern of one of them.
pub fn excuse(applied: &[Applied<'_>], status: &CaseStatus) -> Excuse {
    let Some(first) = applied.first() else {
        return Excuse::None;
    };
    if !status.is_failure() {
        return match status {
            CaseStatus::Pass { .. } => Excuse::Stale(first.waiver().id.clone()),
            _ => Excuse::None,
        };
    }
    let ids = |pick: &dyn Fn(usize) -> bool| {
        applied
            .iter()
            .enumerate()
            .filter(|(i, _)| pick(*i))
            .map(|(_, a)| a.waiver().id.as_str())
            .collect::<Vec<_>>()
            .join("+")
    };
    let all_ids = || ids(&|_| true);
    let kind = match status {
        CaseStatus::Error { .. } => Some("a harness error"),
        CaseStatus::Crash { .. } => Some("a crash"),
        CaseStatus::Timeout { .. } => Some("a timeout"),
        _ => None,
    };
    if let Some(kind) = kind {
        return Excuse::Unexcused {
            waivers: all_ids(),
            lines: vec![format!(
                "{kind}: waivers excuse a producer's divergence, never an error, crash or timeout"
            )],
        };
    }
    let lines = status.finding_lines();
    let mut used = vec![false; applied.len()];
    let mut unexcused = Vec::new();
    for l in &lines {
        match applied.iter().position(|a| a.excuses(l)) {
            Some(i) => used[i] = true,
            None if applied.iter().any(|a| a.allows(l)) => {}
            None => unexcused.push(l.to_string()),
        }
    }
    if !lines.is_empty() && unexcused.is_empty() && !used.contains(&true) {
        // Only context lines (a header): not the divergence a waiver describes.
        return Excuse::Unexcused {
            waivers: all_ids(),
            lines: vec![format!(
                "(the failure names no finding, only context: {})",
                lines.join(" | ")
            )],
        };
    }
    if !unexcused.is_empty() {
        return Excuse::Unexcused {
            waivers: all_ids(),
            lines: unexcused,
        };
    }
    if lines.is_empty() {
        // A failure that names nothing (an empty output) is not the divergence a waiver
        // describes.
        return Excuse::Unexcused {
            waivers: all_ids(),
            lines: vec!["(the failure names no finding)".into()],
        };
    }
    Excuse::Excused(ids(&|i| used[i]))
}

/// A waiver that lists a case on this platform; whether it excuses the case's failure depends
/// on what the failure found ([`Applied::unexcused`]).
#[derive(Debug, Clone, Copy)]
pub struct Applied<'a> {
    compiled: &'a Compiled,
}

impl<'a> Applied<'a> {
    pub fn waiver(&self) -> &'a Waiver {
        &self.compiled.waiver
    }

    /// Whether one of the waiver's `findings:` matches this finding line.
    pub fn excuses(&self, line: &str) -> bool {
        self.compiled.findings.iter().any(|r| r.is_match(line))
    }

    /// Whether one of the waiver's `context:` patterns matches this line: allowed beside a
    /// finding, excusing nothing alone.
    pub fn allows(&self, line: &str) -> bool {
        self.compiled.context.iter().any(|r| r.is_match(line))
    }

    /// The lines of what `status` found that none of the waiver's `findings:` matches (empty:
    /// the waiver excuses the failure).
    pub(crate) fn unexcused(&self, status: &CaseStatus) -> Vec<String> {
        status
            .finding_lines()
            .into_iter()
            .filter(|l| !self.excuses(l) && !self.allows(l))
            .map(str::to_string)
            .collect()
    }

    /// Which of the waiver's `findings:` match a line of what `status` found (by index).
    pub fn matched(&self, status: &CaseStatus) -> Vec<usize> {
        let lines = status.finding_lines();
        (0..self.compiled.findings.len())
            .filter(|&i| lines.iter().any(|l| self.compiled.findings[i].is_match(l)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(pattern: &str) -> Waivers {
        Waivers::from_list(vec![Waiver {
            id: "W".into(),
            cases: pattern.into(),
            reason: "r".into(),
            findings: vec!["x".into()],
            context: Vec::new(),
            platform: Default::default(),
        }])
        .unwrap()
    }

    fn glob_match(pattern: &str, text: &str) -> bool {
        one(pattern).find(text, &[], &BTreeMap::new()).is_some()
    }

    #[test]
    fn globs() {
        assert!(glob_match("abi.*", "abi.layout.x"));
        assert!(glob_match("*.gpu.*", "atomics.mp.gpu.inter"));
        assert!(glob_match("a?c", "abc"));
        assert!(!glob_match("abi.*", "atomics.x"));
        assert!(glob_match("*", ""));
        assert!(!glob_match("a*b", "acd"));
        assert!(
            glob_match("a/*", "a/b/c"),
            "`*` crosses `/`: ids are not paths"
        );
    }

    #[test]
    fn brace_alternatives_nest() {
        let p = "atomics.mapping.clang.{load.{acquire,seq_cst},fence.*}.*";
        assert!(glob_match(p, "atomics.mapping.clang.load.acquire.gpu"));
        assert!(glob_match(p, "atomics.mapping.clang.fence.release.sys"));
        assert!(!glob_match(p, "atomics.mapping.clang.load.relaxed.gpu"));
        assert!(!glob_match(p, "atomics.mapping.llvm.load.acquire.gpu"));
    }

    #[test]
    fn an_unbalanced_brace_is_an_error_naming_the_waiver() {
        let e = Waivers::from_list(vec![Waiver {
            id: "W-9".into(),
            cases: "a{b".into(),
            reason: "r".into(),
            findings: vec!["x".into()],
            context: Vec::new(),
            platform: Default::default(),
        }])
        .unwrap_err();
        assert!(matches!(e, WaiverError::BadPattern { .. }), "{e:?}");
        assert!(
            e.to_string().starts_with("waiver `W-9`: bad pattern `a{b`"),
            "{e}"
        );
    }

    fn parse_err(text: &str) -> String {
        Waivers::parse(Path::new("w.yaml"), text)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn waiver_errors_carry_file_line_and_column() {
        // Issue 10: waiver errors had no line; a typo in a key was ignored.
        let e = parse_err("waivers:\n  - id: A\n    cases: \"x\"\n    reasn: r\n");
        assert!(e.starts_with("w.yaml:4:"), "{e}");
        assert!(
            e.contains("unknown key `reasn`") && e.contains("reason"),
            "{e}"
        );
        let e = parse_err(
            "waivers:\n  - {id: A, cases: x, reason: r, findings: [x]}\n  - {id: A, cases: y, reason: r, findings: [x]}\n",
        );
        assert!(
            e.starts_with("w.yaml:3:") && e.contains("duplicate waiver id `A`"),
            "{e}"
        );
        let e = parse_err("waivers:\n  - {id: A, cases: x, reason: \" \", findings: [x]}\n");
        assert!(
            e.starts_with("w.yaml:2:") && e.contains("gives no reason"),
            "{e}"
        );
        let e = parse_err("waivers:\n  - {id: A, cases: \"a{b\", reason: r, findings: [x]}\n");
        assert!(
            e.starts_with("w.yaml:2:") && e.contains("bad pattern"),
            "{e}"
        );
        let e = parse_err(
            "waivers:\n  - {id: A, cases: x, reason: r, findings: [x], platform: {clnag: \"*\"}}\n",
        );
        assert!(
            e.starts_with("w.yaml:2:")
                && e.contains("unknown platform key `clnag`")
                && e.contains("clang"),
            "{e}"
        );
        let e = parse_err("waivers:\n  - {id: A, cases: x, id: B, reason: r, findings: [x]}\n");
        assert!(
            !e.contains("DuplicateKeyPolicy") && e.contains("`id` is given twice"),
            "{e}"
        );
    }

    #[test]
    fn deeply_nested_or_huge_globs_are_refused_before_compiling() {
        let deep = "{a,".repeat(50) + &"}".repeat(50);
        let e = parse_err(&format!(
            "waivers:\n  - {{id: A, cases: \"{deep}\", reason: r, findings: [x]}}\n"
        ));
        assert!(e.contains("nest 50 deep; at most 8"), "{e}");
        let long = "a".repeat(2000);
        let e = parse_err(&format!(
            "waivers:\n  - {{id: A, cases: \"{long}\", reason: r, findings: [x]}}\n"
        ));
        assert!(
            e.contains("2000 bytes long; a pattern is at most 1024"),
            "{e}"
        );
    }

    #[test]
    fn many_brace_groups_do_not_expand_exponentially() {
        // 20 groups of 4 alternatives: 4^20 (about 10^12) expansions for a brace expander; a
        // compiled automaton matches it at once.
        let p = "x".to_string() + &".{a,b,c,d}".repeat(20);
        let id = "x".to_string() + &".d".repeat(20);
        let t0 = std::time::Instant::now();
        assert!(glob_match(&p, &id));
        assert!(!glob_match(&p, &("x".to_string() + &".e".repeat(20))));
        assert!(t0.elapsed().as_secs() < 5, "{:?}", t0.elapsed());
    }

    #[test]
    fn platform_must_match() {
        let w = Waivers::from_list(vec![Waiver {
            id: "W1".into(),
            cases: "abi.*".into(),
            reason: "r".into(),
            findings: vec!["x".into()],
            context: Vec::new(),
            platform: [("gpu".to_string(), "*H100*".to_string())].into(),
        }])
        .unwrap();
        let mut fp = BTreeMap::new();
        let gpu = [Capability::Gpu];
        assert!(w.find("abi.x", &gpu, &fp).is_none(), "no gpu key: no match");
        assert!(
            w.find("abi.x", &[], &fp).is_none(),
            "a host key constrains every case, whatever it needs"
        );
        fp.insert("gpu".to_string(), "NVIDIA H100 80GB HBM3".to_string());
        assert_eq!(w.find("abi.x", &gpu, &fp).unwrap().waiver().id, "W1");
        assert!(w.find("dwarf.x", &gpu, &fp).is_none());
    }

    /// A waiver written for several producers (`platform: {clang, libnvvm}`) applies to a
    /// libNVVM case when clang is absent or at another version, but never to a clang case
    /// then: a tool key constrains only the cases that need that tool.
    #[test]
    fn a_tool_key_constrains_only_cases_that_need_the_tool() {
        let w = Waivers::from_list(vec![Waiver {
            id: "W2".into(),
            cases: "abi.params.{clang,libnvvm}.*".into(),
            reason: "r".into(),
            findings: vec!["x".into()],
            context: Vec::new(),
            platform: [
                ("clang".to_string(), "*clang version 19.1*".to_string()),
                ("libnvvm".to_string(), "2.0".to_string()),
            ]
            .into(),
        }])
        .unwrap();
        let nvvm_case = [Capability::Ptxas, Capability::Libnvvm];
        let clang_case = [Capability::Ptxas, Capability::Clang];
        let full: BTreeMap<String, String> = [
            ("clang".into(), "Debian clang version 19.1.7".into()),
            ("libnvvm".into(), "2.0".into()),
        ]
        .into();
        let no_clang: BTreeMap<String, String> = [("libnvvm".into(), "2.0".into())].into();
        let clang_20: BTreeMap<String, String> = [
            ("clang".into(), "Debian clang version 20.1.0".into()),
            ("libnvvm".into(), "2.0".into()),
        ]
        .into();
        for fp in [&full, &no_clang, &clang_20] {
            assert!(
                w.find("abi.params.libnvvm.char3.param", &nvvm_case, fp)
                    .is_some(),
                "{fp:?}"
            );
        }
        assert!(w
            .find("abi.params.clang.char3.param", &clang_case, &full)
            .is_some());
        for fp in [&no_clang, &clang_20] {
            assert!(
                w.find("abi.params.clang.char3.param", &clang_case, fp)
                    .is_none(),
                "{fp:?}"
            );
        }
        let nvvm_12: BTreeMap<String, String> = [("libnvvm".into(), "1.9".into())].into();
        assert!(w
            .find("abi.params.libnvvm.char3.param", &nvvm_case, &nvvm_12)
            .is_none());
    }

    /// `context:` lines may stand beside a finding but excuse nothing alone: a failure made
    /// of its header only (a link that failed with no log) is not the divergence named.
    #[test]
    fn context_lines_excuse_nothing_alone() {
        let w = Waivers::from_list(vec![Waiver {
            id: "W4".into(),
            cases: "*".into(),
            reason: "r".into(),
            findings: vec![r"Prototype doesn.t match for .f1.".into()],
            context: vec![r"^\w+ calling \w+: cuLink\* failed$".into()],
            platform: Default::default(),
        }])
        .unwrap();
        let a = w.find("xcall.gpu.a.b", &[], &BTreeMap::new()).unwrap();
        let known = CaseStatus::fail_detail(
            "links",
            "a calling b: cuLink* failed",
            "error   : Prototype doesn't match for 'f1' in 'b', first defined in 'a'",
        );
        assert!(matches!(excuse(&[a], &known), Excuse::Excused(id) if id == "W4"));
        assert!(a.unexcused(&known).is_empty());
        let header_only = CaseStatus::fail_detail("links", "a calling b: cuLink* failed", "");
        match excuse(&[a], &header_only) {
            Excuse::Unexcused { lines, .. } => {
                assert!(lines[0].starts_with("(the failure names no finding, only context"))
            }
            other => panic!("{other:?}"),
        }
        let other_function = CaseStatus::fail_detail(
            "links",
            "a calling b: cuLink* failed",
            "error   : Prototype doesn't match for 'f2' in 'b', first defined in 'a'",
        );
        assert!(matches!(
            excuse(&[a], &other_function),
            Excuse::Unexcused { .. }
        ));
    }

    /// A waiver excuses the findings it names and no other: every line of what the failure
    /// found must match one of its `findings:`.
    #[test]
    fn findings_name_what_a_waiver_excuses() {
        let w = Waivers::from_list(vec![Waiver {
            id: "W3".into(),
            cases: "*".into(),
            reason: "r".into(),
            findings: vec![r"\[syscall-decl-type,".into(), r"^\d+ findings:".into()],
            context: Vec::new(),
            platform: Default::default(),
        }])
        .unwrap();
        let a = w.find("syscalls.x", &[], &BTreeMap::new()).unwrap();
        let known = CaseStatus::fail_detail(
            "no ch. 3 finding",
            "1 findings: p.ptx:14: `status` is .b32 [syscall-decl-type, ch. 3]",
            "p.ptx:14: `status` is .b32 [syscall-decl-type, ch. 3]",
        );
        assert!(a.unexcused(&known).is_empty());
        assert_eq!(a.matched(&known), vec![0, 1]);
        let other = CaseStatus::fail_detail(
            "no ch. 3 finding",
            "2 findings: ...",
            "p.ptx:14: `status` is .b32 [syscall-decl-type, ch. 3]\np.ptx:20: malloc returns .b32 [syscall-return-width, ch. 3]",
        );
        assert_eq!(
            a.unexcused(&other),
            vec!["p.ptx:20: malloc returns .b32 [syscall-return-width, ch. 3]"]
        );
        let failed = other.with_unexcused("W3", &a.unexcused(&other));
        assert!(
            failed
                .summary()
                .contains("waiver W3 does not excuse 1 of these findings:\n  p.ptx:20: malloc"),
            "{}",
            failed.summary()
        );
        // An error, a crash or a timeout is never excused, whatever the patterns.
        let any = Waivers::from_list(vec![Waiver {
            id: "W4".into(),
            cases: "*".into(),
            reason: "r".into(),
            findings: vec!["crashed|SIGSEGV|timeout".into()],
            context: Vec::new(),
            platform: Default::default(),
        }])
        .unwrap();
        let applied = any.applicable("x", &[], &BTreeMap::new());
        for s in [
            CaseStatus::error("ptxas crashed"),
            CaseStatus::Crash {
                how: "killed by SIGSEGV".into(),
                output: String::new(),
            },
            CaseStatus::Timeout {
                after_s: 1.0,
                output: String::new(),
            },
        ] {
            match excuse(&applied, &s) {
                Excuse::Unexcused { waivers, lines } => {
                    assert_eq!(waivers, "W4");
                    assert!(
                        lines[0].contains("never an error, crash or timeout"),
                        "{lines:?}"
                    );
                }
                other => panic!("{s:?}: {other:?}"),
            }
        }
        let both = Waivers::from_list(vec![
            Waiver {
                id: "W5".into(),
                cases: "*".into(),
                reason: "r".into(),
                findings: vec!["^a$".into()],
                context: Vec::new(),
                platform: Default::default(),
            },
            Waiver {
                id: "W6".into(),
                cases: "*".into(),
                reason: "r".into(),
                findings: vec!["^b$".into()],
                context: Vec::new(),
                platform: Default::default(),
            },
        ])
        .unwrap();
        let applied = both.applicable("x", &[], &BTreeMap::new());
        let two = CaseStatus::fail_detail("e", "a", "b");
        assert_eq!(excuse(&applied, &two), Excuse::Excused("W5+W6".into()));
        let one = CaseStatus::fail("e", "b");
        assert_eq!(excuse(&applied, &one), Excuse::Excused("W6".into()));
        assert_eq!(
            excuse(&applied, &CaseStatus::pass()),
            Excuse::Stale("W5".into())
        );
        // A failure that names nothing is not a known divergence.
        assert!(matches!(
            excuse(&applied, &CaseStatus::fail("e", "")),
            Excuse::Unexcused { .. }
        ));
    }

    #[test]
    fn findings_are_required_and_must_compile() {
        let e = parse_err("waivers:\n  - {id: A, cases: x, reason: r}\n");
        assert!(
            e.starts_with("w.yaml:2:") && e.contains("lists no findings"),
            "{e}"
        );
        for catch_all in ["''", "'.*'", "'x|'", "'^'"] {
            let e = parse_err(&format!(
                "waivers:\n  - {{id: A, cases: x, reason: r, findings: ['x', {catch_all}]}}\n"
            ));
            assert!(e.contains("matches an empty line"), "{catch_all}: {e}");
        }
        let e = parse_err("waivers:\n  - {id: A+B, cases: x, reason: r, findings: [x]}\n");
        assert!(e.contains("a waiver id is letters"), "{e}");
        let e = parse_err("waivers:\n  - {id: A, cases: x, reason: r, findings: ['(']}\n");
        assert!(
            e.starts_with("w.yaml:2:") && e.contains("not a regular expression"),
            "{e}"
        );
    }

    /// Every shipped waiver names its findings, and each finding pattern says something (no
    /// catch-all that would excuse anything).
    #[test]
    fn shipped_waivers_name_specific_findings() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let w = Waivers::load(&root.join(DEFAULT_FILE)).unwrap();
        for x in w.iter() {
            assert!(!x.findings.is_empty(), "{}", x.id);
            for f in &x.findings {
                let r = regex::Regex::new(f).unwrap();
                assert!(
                    !r.is_match("") && !r.is_match("an unrelated finding [rule-x, ch. 9]"),
                    "{}: `{f}` matches anything",
                    x.id
                );
            }
        }
    }

    /// The H100 run of 2026-11-26 (driver 580.159.04, CUDA 13.0, clang-19 19.1.7 outputs
    /// replayed from a prebuilt store): every `xcall.gpu` failure as the hardware reported it
    /// (tests/fixtures/h100-2026-11-26-xcall-gpu-failures.json, copied from its results.json).
    /// On that rig's fingerprint the shipped waivers excuse each case, with exactly the
    /// waivers named here: clang's union byte losses (W-XCALL-CLANG-UNION-BYTES) and ptxas's
    /// seed-78 bug (W-XCALL-PTXAS-LIBNVVM-BYVAL-V4) for the 8 cases that failed there; the
    /// cases the rig already waived keep their waiver alone. A byte loss the waivers do not
    /// describe, built by the harness's own judge, still fails.
    #[test]
    fn shipped_waivers_excuse_the_h100_xcall_run_and_nothing_else() {
        use crate::xcall::gpu::{expected, judge};
        use crate::xcall::sig::signature;
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let w = Waivers::load(&root.join(DEFAULT_FILE)).unwrap();
        let run: serde_json::Value = serde_json::from_str(include_str!(
            "../tests/fixtures/h100-2026-11-26-xcall-gpu-failures.json"
        ))
        .unwrap();
        let fp: BTreeMap<String, String> = run["fingerprint"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
            .collect();
        assert_eq!(fp["driver"], "580.159.04");
        let status = |c: &serde_json::Value| {
            CaseStatus::fail_detail(
                c["expected"].as_str().unwrap(),
                c["observed"].as_str().unwrap(),
                c["detail"].as_str().unwrap(),
            )
        };
        let judged = |id: &str, s: &CaseStatus, fp: &BTreeMap<String, String>| {
            excuse(&w.applicable(id, Capability::ALL, fp), s)
        };
        const UNION: &str = "W-XCALL-CLANG-UNION-BYTES";
        const V4: &str = "W-XCALL-PTXAS-LIBNVVM-BYVAL-V4";
        let newly: BTreeMap<&str, String> = [
            ("xcall.gpu.clang.clang", UNION.to_string()),
            ("xcall.gpu.clang.nvrtc", UNION.to_string()),
            ("xcall.gpu.clang.llvm", UNION.to_string()),
            ("xcall.gpu.clang.libnvvm", format!("{V4}+{UNION}")),
            ("xcall.gpu.nvrtc.clang", UNION.to_string()),
            ("xcall.gpu.llvm.clang", UNION.to_string()),
            ("xcall.gpu.libnvvm.clang", UNION.to_string()),
            ("xcall.gpu.llvm.libnvvm", V4.to_string()),
        ]
        .into();
        let cases = run["cases"].as_array().unwrap();
        let mut failed_there = 0;
        for c in cases {
            let id = c["id"].as_str().unwrap();
            let want = match c["verdict"].as_str().unwrap() {
                "fail" => {
                    failed_there += 1;
                    newly.get(id).unwrap_or_else(|| panic!("{id}")).clone()
                }
                "waived" => c["waiver"].as_str().unwrap().to_string(),
                v => panic!("{id}: {v}"),
            };
            assert_eq!(judged(id, &status(c), &fp), Excuse::Excused(want), "{id}");
        }
        assert_eq!(failed_there, newly.len());

        // The lines the tests below build come from the harness's judge: seed 16's loss,
        // rebuilt from the signature alone, is the hardware's line word for word.
        // `got`: what arrived (None: the passed byte with every bit flipped).
        let line = |who: &str, seed: u64, param: usize, byte: u64, got: Option<u8>| {
            let sig = signature(seed);
            let e = expected(&sig);
            let mut rec = e.rec.clone();
            let k = (sig.rec_offsets()[param] + byte) as usize;
            rec[k] = got.unwrap_or(!rec[k]);
            let out = e.ret.clone();
            format!(
                "{who}, {}: {}",
                sig.describe(),
                judge(&sig, &rec, &out).unwrap_err()
            )
        };
        let clang_nvrtc = cases
            .iter()
            .find(|c| c["id"] == "xcall.gpu.clang.nvrtc")
            .unwrap();
        let seed16 = line("clang -> nvrtc", 16, 1, 1, Some(0xaa));
        assert!(
            clang_nvrtc["detail"]
                .as_str()
                .unwrap()
                .lines()
                .any(|l| l == seed16),
            "{seed16}"
        );
        let fail = |l: &str| {
            CaseStatus::fail_detail("every byte", l, format!("1 of 240 signatures differ:\n{l}"))
        };
        let unexcused =
            |id: &str, l: &str, fp: &BTreeMap<String, String>| match judged(id, &fail(l), fp) {
                Excuse::Unexcused { lines, .. } => assert_eq!(lines, vec![l.to_string()], "{id}"),
                other => panic!("{id}: {l}: {other:?}"),
            };
        assert_eq!(
            judged("xcall.gpu.clang.nvrtc", &fail(&seed16), &fp),
            Excuse::Excused(UNION.into())
        );
        // A struct without a union (seed 13: char then double) losing a byte; a scalar (seed
        // 0's char) losing one; the union of seed 16 losing another byte than clang drops.
        let padded = (0..240)
            .map(signature)
            .position(|s| matches!(&s.params[0], crate::xcall::sig::Val::Agg(g) if g.what == "padded: char then double"))
            .unwrap() as u64;
        for l in [
            line("clang -> nvrtc", padded, 0, 9, None),
            line("clang -> nvrtc", 0, 0, 0, None),
            line("clang -> nvrtc", 16, 1, 3, None),
        ] {
            unexcused("xcall.gpu.clang.nvrtc", &l, &fp);
        }
        // clang's callee receives every byte: a parameter lost on the way to it is not this.
        unexcused(
            "xcall.gpu.nvrtc.clang",
            &line("nvrtc -> clang", 16, 1, 1, Some(0xaa)),
            &fp,
        );
        // Seed 78 losing another byte than 22..23 (its uint4's first); the hardware's line.
        unexcused(
            "xcall.gpu.clang.libnvvm",
            &line("clang -> libnvvm", 78, 0, 16, None),
            &fp,
        );
        assert_eq!(
            judged(
                "xcall.gpu.clang.libnvvm",
                &fail(&line("clang -> libnvvm", 78, 0, 22, Some(0xc7))),
                &fp
            ),
            Excuse::Excused(V4.into())
        );
        // Pairs without clang are not listed; another clang is judged afresh.
        assert_eq!(
            judged(
                "xcall.gpu.nvrtc.nvrtc",
                &fail(&line("nvrtc -> nvrtc", 16, 1, 1, Some(0xaa))),
                &fp
            ),
            Excuse::None
        );
        let mut clang20 = fp.clone();
        clang20.insert("clang".into(), "Debian clang version 20.1.0".into());
        assert_eq!(
            judged("xcall.gpu.clang.nvrtc", &fail(&seed16), &clang20),
            Excuse::None
        );
    }

    #[test]
    fn the_default_file_loads_and_ids_stay_unique_across_files() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let w = Waivers::load_run(&root, false, &[]).unwrap();
        assert!(w.iter().count() > 0);
        // Issue 10: the default file named again with --waivers failed without naming a file;
        // it is the same file, read once.
        let twice = Waivers::load_run(&root, false, &[root.join(DEFAULT_FILE)]).unwrap();
        assert_eq!(twice.iter().count(), w.iter().count());
        // A copy elsewhere is another file: its ids clash, and both files are named.
        let dir = tempfile::tempdir().unwrap();
        let copy = dir.path().join("copy.yaml");
        std::fs::copy(root.join(DEFAULT_FILE), &copy).unwrap();
        let e = Waivers::load_run(&root, false, &[copy]).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("known-divergences.yaml") && msg.contains("copy.yaml"),
            "{msg}"
        );
        assert!(Waivers::load_run(&root, true, &[])
            .unwrap()
            .iter()
            .next()
            .is_none());
        let missing = Waivers::load(&root.join("no-such.yaml")).unwrap_err();
        assert!(
            missing.to_string().contains("cannot read waiver file"),
            "{missing}"
        );
    }

    /// The limits admit their bound and refuse one more (the bounds are the constants'
    /// documented values: MAX_PATTERN_LEN bytes, MAX_BRACE_DEPTH levels, MAX_FINDING_PATTERNS
    /// patterns); an escaped brace is a literal and does not nest; an id is never empty.
    /// Found by cargo-mutants (docs/MUTANTS.md): `>` as `>=` or `==` at each bound survived.
    #[test]
    fn limits_admit_their_bound_and_refuse_one_more() {
        let list = |id: &str, cases: String, findings: Vec<String>| {
            Waivers::from_list(vec![Waiver {
                id: id.into(),
                cases,
                reason: "r".into(),
                findings,
                context: Vec::new(),
                platform: Default::default(),
            }])
        };
        let why = |r: Result<Waivers, WaiverError>| match r {
            Err(WaiverError::BadPattern { why, .. }) => why,
            other => panic!("{other:?}"),
        };
        let x = || vec!["x".to_string()];
        let at = "a".repeat(MAX_PATTERN_LEN);
        let over = "a".repeat(MAX_PATTERN_LEN + 1);
        assert!(list("L", at.clone(), x()).is_ok());
        assert_eq!(
            why(list("L", over.clone(), x())),
            PatternError::TooLong { len: 1025 }
        );
        assert!(list("L", "x".into(), vec![at]).is_ok());
        assert_eq!(
            why(list("L", "x".into(), vec![over])),
            PatternError::TooLong { len: 1025 }
        );
        // `{x,{x,...y}}`: d levels; matches "x" and "y"
        let nest = |d: usize| "{x,".repeat(d) + "y" + &"}".repeat(d);
        let eight = list("L", nest(MAX_BRACE_DEPTH), x()).unwrap();
        assert!(eight.find("y", &[], &BTreeMap::new()).is_some());
        assert_eq!(
            why(list("L", nest(9), x())),
            PatternError::TooDeep { depth: 9 }
        );
        // nine escaped braces: literal `{`s, depth 0
        let literal = list("L", r"\{".repeat(9) + "z", x()).unwrap();
        assert!(literal.find("{{{{{{{{{z", &[], &BTreeMap::new()).is_some());
        let many = |n: usize| (0..n).map(|i| format!("finding {i}")).collect::<Vec<_>>();
        assert!(list("L", "x".into(), many(MAX_FINDING_PATTERNS)).is_ok());
        assert_eq!(
            why(list("L", "x".into(), many(MAX_FINDING_PATTERNS + 1))),
            PatternError::TooMany { n: 65 }
        );
        assert_eq!(why(list("", "x".into(), x())), PatternError::BadId);
    }

    /// What `excuse` says of a failure with a finding no waiver names (it names that line, and
    /// only it), and of one that names nothing. Found by cargo-mutants (docs/MUTANTS.md): the
    /// tests above only checked that such a failure is `Unexcused { .. }`.
    #[test]
    fn an_unexcused_failure_names_exactly_the_lines_no_waiver_names() {
        let w = Waivers::from_list(vec![Waiver {
            id: "W7".into(),
            cases: "*".into(),
            reason: "r".into(),
            findings: vec!["^a$".into()],
            context: vec!["^header$".into()],
            platform: Default::default(),
        }])
        .unwrap();
        let applied = w.applicable("x", &[], &BTreeMap::new());
        let unexcused = |lines: &[&str]| Excuse::Unexcused {
            waivers: "W7".into(),
            lines: lines.iter().map(|l| l.to_string()).collect(),
        };
        // one excused finding, one context line, one finding no waiver names
        let mixed = CaseStatus::fail_detail("e", "a", "header\nc");
        assert_eq!(excuse(&applied, &mixed), unexcused(&["c"]));
        // no excused finding at all
        assert_eq!(
            excuse(&applied, &CaseStatus::fail("e", "c")),
            unexcused(&["c"])
        );
        assert_eq!(
            excuse(&applied, &CaseStatus::fail("e", "")),
            unexcused(&["(the failure names no finding)"])
        );
    }
}
