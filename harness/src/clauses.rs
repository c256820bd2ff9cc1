//! The clause catalogue (`suites/clauses/catalogue.yaml`): every normative statement of the two
//! specifications gpucts implements, each with a stable id, a summary, and either the cases that
//! check it (id globs, where they run, how strongly) or why no case can. A case's `clause:` text
//! begins with a catalogue id; [`cited_id`] takes it apart, [`Catalogue::check_citation`] judges
//! it, and [`coverage`] joins the catalogue with a list of cases (and a run's verdicts) for
//! `gpucts coverage` and the HTML report.
//!
//! A shared reader: it knows no area and no suite type, so the suite model can ask it about a
//! citation. The file lives under `suites/`, so it is embedded in the binary with the suites
//! (`crate::data`) and read from the same data root.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The catalogue's place under a data root.
pub(crate) const CATALOGUE: &str = "suites/clauses/catalogue.yaml";

/// What every clause id begins with: the two specifications, by the names the project gives
/// them (PTX Writer's Guide to Interoperability release 13.2; Developing a Linux Kernel Module
/// using GPUDirect RDMA).
pub(crate) const PREFIXES: [&str; 2] = ["ptx-interop-13.2", "gpudirect-rdma"];

/// The largest catalogue read (the shipped one is under 100 KiB).
pub(crate) const MAX_CATALOGUE_BYTES: u64 = 1 << 20;
/// The most clauses, and the most id globs of one clause: far above the two specifications'
/// few hundred statements, low enough that matching every case against every glob stays cheap.
pub(crate) const MAX_CLAUSES: usize = 2000;
pub(crate) const MAX_GLOBS_PER_CLAUSE: usize = 200;
/// The longest id, summary, reason or glob.
pub(crate) const MAX_TEXT_LEN: usize = 1000;

/// Where a group of cases runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Reach {
    /// Without a GPU: tools, models, the linter.
    Offline,
    /// On an NVIDIA GPU.
    Gpu,
    /// The companion kernel module in a VM, or an RDMA rig.
    Vm,
}

impl Reach {
    pub fn as_str(self) -> &'static str {
        match self {
            Reach::Offline => "offline",
            Reach::Gpu => "gpu",
            Reach::Vm => "vm",
        }
    }
}

/// How directly a group of cases observes its clause.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Strength {
    /// The cases observe what the clause requires.
    #[default]
    Strong,
    /// The cases see the clause only indirectly (a declaration's shape, "it links").
    Weak,
}

impl Strength {
    pub fn as_str(self) -> &'static str {
        match self {
            Strength::Strong => "strong",
            Strength::Weak => "weak",
        }
    }
}

/// One group of cases of a clause: id globs (`*` matches any run of characters, dots
/// included), where they run, how strongly, and why when weakly.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseGroup {
    pub ids: Vec<String>,
    pub on: Reach,
    #[serde(default)]
    pub strength: Strength,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawClause {
    id: String,
    summary: String,
    #[serde(default)]
    cases: Option<Vec<CaseGroup>>,
    #[serde(default)]
    untestable: Option<String>,
    /// Where the specification's own text is wrong (an example that cannot compile against
    /// the API it documents, a misnumbered reference).
    #[serde(default)]
    erratum: Option<String>,
}
impl RawClause {
    /// The entry as a clause, or why the catalogue cannot carry it.
    fn into_clause(self, line: u64, column: u64) -> Result<Clause, String> {
        let id = self.id.trim().to_string();
        let erratum = self.erratum.as_deref().unwrap_or("x");
        for (what, t) in [
            ("id", self.id.as_str()),
            ("summary", &self.summary),
            ("erratum", erratum),
        ] {
            if t.trim().is_empty() || t.len() > MAX_TEXT_LEN || t.contains('\n') {
                return Err(format!(
                    "clause `{}`: `{what}` must be one non-empty line of at most {MAX_TEXT_LEN} bytes",
                    self.id
                ));
            }
        }
        if !names_a_catalogued_spec(&id) {
            return Err(format!(
                "clause `{id}`: an id begins with `{}` or `{}` and a space",
                PREFIXES[0], PREFIXES[1]
            ));
        }
        if id.contains(" (") {
            return Err(format!(
                "clause `{id}`: an id has no ` (`; a case's citation adds its detail after one"
            ));
        }
        let (cases, untestable) = match (self.cases, self.untestable) {
            (Some(g), None) => (g, None),
            (None, Some(why)) if !why.trim().is_empty() && why.len() <= MAX_TEXT_LEN => {
                (Vec::new(), Some(why))
            }
            (None, Some(_)) => {
                return Err(format!(
                    "clause `{id}`: `untestable` must give a reason of at most {MAX_TEXT_LEN} bytes"
                ))
            }
            (Some(_), Some(_)) => {
                return Err(format!(
                    "clause `{id}`: give `cases` or `untestable`, not both"
                ))
            }
            (None, None) => {
                return Err(format!(
                    "clause `{id}`: give `cases` (`cases: []` while no case checks it) or `untestable: why`"
                ))
            }
        };
        let globs: usize = cases.iter().map(|g| g.ids.len()).sum();
        if globs > MAX_GLOBS_PER_CLAUSE {
            return Err(format!(
                "clause `{id}`: {globs} case globs; at most {MAX_GLOBS_PER_CLAUSE}"
            ));
        }
        for g in &cases {
            g.check(&id)?;
        }
        Ok(Clause {
            id,
            summary: self.summary,
            cases,
            untestable,
            erratum: self.erratum,
            line,
            column,
        })
    }
}

impl CaseGroup {
    /// Why the group cannot stand in clause `id`'s entry, if it cannot.
    fn check(&self, id: &str) -> Result<(), String> {
        if self.ids.is_empty() {
            return Err(format!("clause `{id}`: a case group with no `ids`"));
        }
        for p in &self.ids {
            let ok = !p.is_empty()
                && p.len() <= MAX_TEXT_LEN
                && p.chars()
                    .all(|ch| ch.is_ascii_alphanumeric() || "._-+*".contains(ch));
            if !ok {
                return Err(format!(
                    "clause `{id}`: `{p}` is not a case-id glob (letters, digits, `._-+` and `*`)"
                ));
            }
        }
        match (self.strength, &self.why) {
            (Strength::Weak, None) => Err(format!("clause `{id}`: a weak case group says `why`")),
            (_, Some(w)) if w.trim().is_empty() || w.len() > MAX_TEXT_LEN => Err(format!(
                "clause `{id}`: `why` must be a reason of at most {MAX_TEXT_LEN} bytes"
            )),
            _ => Ok(()),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    clauses: Vec<serde_saphyr::Spanned<RawClause>>,
}

/// One normative statement.
#[derive(Debug, Clone)]
pub struct Clause {
    pub id: String,
    pub summary: String,
    /// Empty: no case checks it yet (a gap), unless `untestable` says why none can.
    pub cases: Vec<CaseGroup>,
    pub untestable: Option<String>,
    /// What the specification itself gets wrong here, if anything.
    pub erratum: Option<String>,
    /// Where the entry stands in the catalogue.
    pub line: u64,
    pub column: u64,
}

impl Clause {
    /// The first group whose globs match `case_id`.
    pub(crate) fn group_of(&self, case_id: &str) -> Option<&CaseGroup> {
        self.cases
            .iter()
            .find(|g| g.ids.iter().any(|p| glob_match(p, case_id)))
    }

    /// The chapter the clause belongs to, for totals: `ptx-interop-13.2 ch. 1` for §1.2,
    /// `gpudirect-rdma ch. 4` for §4.4.3, `ptx-interop-13.2 preface` for the preface.
    pub(crate) fn chapter(&self) -> String {
        let mut words = self.id.split(' ');
        let spec = words.next().unwrap_or("");
        let part = match words.next() {
            Some(w) if w.starts_with('§') => {
                let n: String = w
                    .trim_start_matches('§')
                    .chars()
                    .take_while(char::is_ascii_digit)
                    .collect();
                format!("ch. {n}")
            }
            Some("ch.") => format!("ch. {}", words.next().unwrap_or("")),
            Some(w) => w.to_string(),
            None => String::new(),
        };
        format!("{spec} {part}")
    }
}

/// A catalogue that cannot be used, at `file:line:column`.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{}:{line}:{column}: {message}", file.display())]
pub struct CatalogueError {
    pub file: PathBuf,
    pub line: u64,
    pub column: u64,
    pub message: String,
}

/// The parsed catalogue, in file order.
#[derive(Debug, Clone)]
pub struct Catalogue {
    clauses: Vec<Clause>,
    index: HashMap<String, usize>,
}

/// The id a `clause:` text cites: the text up to ` (` (the rest is the case's own detail).
pub(crate) fn cited_id(clause: &str) -> &str {
    clause.split(" (").next().unwrap_or(clause).trim()
}

/// Whether `text` claims to cite one of the catalogued specifications.
pub(crate) fn names_a_catalogued_spec(text: &str) -> bool {
    PREFIXES
        .iter()
        .any(|p| text.strip_prefix(p).is_some_and(|r| r.starts_with(' ')))
}

/// `*`-only glob over case ids: `*` matches any run of characters (dots included), every other
/// character itself.
pub(crate) fn glob_match(pattern: &str, text: &str) -> bool {
    let (p, t) = (pattern.as_bytes(), text.as_bytes());
    let (mut pi, mut ti) = (0, 0);
    // The last `*` seen and the text position it was tried at (classic backtracking matcher:
    // linear in practice, at most |p|·|t| steps).
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && p[pi] == b'*' {
            star = Some((pi, ti));
            pi += 1;
        } else if pi < p.len() && p[pi] == t[ti] {
            pi += 1;
            ti += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}

fn yaml_options() -> serde_saphyr::Options {
    let mut o = serde_saphyr::Options::default();
    o.duplicate_keys = serde_saphyr::DuplicateKeyPolicy::Error;
    o.strict_booleans = true;
    o
}

impl Catalogue {
    /// The catalogue of the data root `root`.
    pub fn load(root: &Path) -> Result<Catalogue, CatalogueError> {
        let path = root.join(CATALOGUE);
        let text = read_limited(&path)?;
        Catalogue::parse(&path, &text)
    }

    /// The catalogue built into this binary (the one its suites cite), read once; `None` only
    /// if the build carried a catalogue that does not parse (the unit tests refuse that).
    pub fn embedded() -> Option<&'static Catalogue> {
        static EMBEDDED: std::sync::OnceLock<Option<Catalogue>> = std::sync::OnceLock::new();
        EMBEDDED
            .get_or_init(|| {
                let text = std::str::from_utf8(crate::data::embedded_file(CATALOGUE)?).ok()?;
                Catalogue::parse(Path::new(CATALOGUE), text).ok()
            })
            .as_ref()
    }

    /// Parse catalogue text; `path` is only for messages.
    pub fn parse(path: &Path, text: &str) -> Result<Catalogue, CatalogueError> {
        let err = |line: u64, column: u64, message: String| CatalogueError {
            file: path.to_path_buf(),
            line,
            column,
            message,
        };
        if text.len() as u64 > MAX_CATALOGUE_BYTES {
            return Err(err(
                0,
                0,
                format!(
                    "{} bytes; at most {MAX_CATALOGUE_BYTES} bytes are read",
                    text.len()
                ),
            ));
        }
        let raw: RawFile =
            serde_saphyr::from_str_with_options(text, yaml_options()).map_err(|e| {
                let (line, column) = e
                    .location()
                    .map(|l| (l.line(), l.column()))
                    .unwrap_or((0, 0));
                let msg = e.without_snippet().to_string();
                let first = msg.lines().next().unwrap_or("").trim();
                let bare = first.rfind(" at line ").map_or(first, |i| &first[..i]);
                err(line, column, bare.to_string())
            })?;
        if raw.clauses.len() > MAX_CLAUSES {
            return Err(err(
                0,
                0,
                format!(
                    "{} clauses; at most {MAX_CLAUSES} are read",
                    raw.clauses.len()
                ),
            ));
        }
        let mut clauses: Vec<Clause> = Vec::with_capacity(raw.clauses.len());
        let mut index: HashMap<String, usize> = HashMap::new();
        for s in raw.clauses {
            let (line, column) = (s.referenced.line(), s.referenced.column());
            let clause = s
                .value
                .into_clause(line, column)
                .map_err(|m| err(line, column, m))?;
            if let Some(first) = index.insert(clause.id.clone(), clauses.len()) {
                return Err(err(
                    line,
                    column,
                    format!(
                        "clause `{}` is listed twice (first at line {})",
                        clause.id, clauses[first].line
                    ),
                ));
            }
            clauses.push(clause);
        }
        Ok(Catalogue { clauses, index })
    }

    pub fn clauses(&self) -> &[Clause] {
        &self.clauses
    }

    pub fn get(&self, id: &str) -> Option<&Clause> {
        self.index.get(id).map(|&i| &self.clauses[i])
    }

    /// `Ok` when `clause` (a case's `clause:` text) begins with a catalogue id; else why not.
    pub(crate) fn check_citation(&self, clause: &str) -> Result<&Clause, String> {
        let id = cited_id(clause);
        if let Some(c) = self.get(id) {
            return Ok(c);
        }
        // The nearest ids of the same section, to show how the catalogue spells it.
        let section: String = id.split(' ').take(2).collect::<Vec<_>>().join(" ");
        let near: Vec<&str> = self
            .clauses
            .iter()
            .filter(|c| c.id.starts_with(&section))
            .map(|c| c.id.as_str())
            .take(5)
            .collect();
        Err(format!(
            "clause `{id}` is not in the clause catalogue ({CATALOGUE}); a `clause:` begins with a catalogue id, then ` (detail)` if any{}",
            if near.is_empty() {
                String::new()
            } else {
                format!("; ids of {section}: {}", near.join(", "))
            }
        ))
    }
}

/// Read `path` as text, refusing anything but a regular file of at most
/// [`MAX_CATALOGUE_BYTES`] (checked before and while reading).
fn read_limited(path: &Path) -> Result<String, CatalogueError> {
    let err = |message: String| CatalogueError {
        file: path.to_path_buf(),
        line: 0,
        column: 0,
        message,
    };
    let meta = std::fs::metadata(path).map_err(|e| err(format!("cannot read: {e}")))?;
    if !meta.is_file() {
        return Err(err("cannot read: not a regular file".into()));
    }
    if meta.len() > MAX_CATALOGUE_BYTES {
        return Err(err(format!(
            "file is {} bytes; at most {MAX_CATALOGUE_BYTES} bytes are read",
            meta.len()
        )));
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_CATALOGUE_BYTES + 1).read_to_end(&mut bytes))
        .map_err(|e| err(format!("cannot read: {e}")))?;
    if bytes.len() as u64 > MAX_CATALOGUE_BYTES {
        return Err(err(format!(
            "file is over {MAX_CATALOGUE_BYTES} bytes; at most {MAX_CATALOGUE_BYTES} bytes are read"
        )));
    }
    String::from_utf8(bytes).map_err(|e| {
        let good = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        let line = good.iter().filter(|&&b| b == b'\n').count() as u64 + 1;
        let col = good.iter().rev().take_while(|&&b| b != b'\n').count() as u64 + 1;
        CatalogueError {
            file: path.to_path_buf(),
            line,
            column: col,
            message: "not UTF-8".into(),
        }
    })
}

/// The catalogues read so far in this process, by path: a run validates its suites once, the
/// fuzz body of the suite reader many times.
pub(crate) fn load_cached(root: &Path) -> Result<std::sync::Arc<Catalogue>, CatalogueError> {
    use std::sync::{Arc, Mutex, OnceLock};
    type Cache = Mutex<HashMap<PathBuf, Result<Arc<Catalogue>, CatalogueError>>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let key = root.join(CATALOGUE);
    let key = key.canonicalize().unwrap_or(key);
    let cache = CACHE.get_or_init(Default::default);
    let mut map = cache.lock().unwrap_or_else(|p| p.into_inner());
    map.entry(key)
        .or_insert_with(|| Catalogue::load(root).map(Arc::new))
        .clone()
}

/// One case as coverage sees it.
#[derive(Debug, Clone, Serialize)]
pub struct CoveredCase {
    pub id: String,
    /// Where it runs and how strongly it checks this clause (from the catalogue's group that
    /// lists it; `None` when only its `clause:` cites the clause).
    pub on: Option<Reach>,
    pub strength: Option<Strength>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// Its `clause:` cites this clause (else only a catalogue glob lists it).
    pub cites: bool,
    /// Its verdict in the run given (`not_run` when the run has no such case).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verdict: Option<String>,
}

/// One clause against the cases (and a run).
#[derive(Debug, Clone, Serialize)]
pub struct ClauseCoverage {
    pub id: String,
    pub summary: String,
    /// Totals key: the specification and chapter (`ptx-interop-13.2 ch. 2`).
    pub chapter: String,
    /// `strong` (some strong case), `weak` (only weak cases), `none` (no case) or
    /// `untestable`.
    pub strength: &'static str,
    pub cases: Vec<CoveredCase>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub untestable: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub erratum: Option<String>,
    /// Given a run: whether one of the clause's cases was judged in it (passed, failed, flaky
    /// or passed under a stale waiver). `false` for a clause with cases all of which were
    /// skipped, waived or not run: the run is no evidence for it, whatever its strength.
    /// Absent for a clause with no case.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub judged_in_run: Option<bool>,
    /// Verdict name → number of this clause's cases with it (`not_run` for cases the run did
    /// not have); present when a run was given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verdicts: Option<BTreeMap<String, usize>>,
}

/// Whether a case's verdict in a run says something about its clause: a skip, a waiver or a
/// case the run did not have says nothing.
fn was_judged(verdict: Option<&str>) -> bool {
    matches!(verdict, Some("pass" | "fail" | "flaky" | "stale_waiver"))
}

/// Every clause of `catalogue` with the `cases` (id, `clause:` text) that cite it or that its
/// globs list, and, given a run's `verdicts` (case id → verdict name), what they did. Clauses
/// with no case come first (gaps, then untestable ones), the rest in catalogue order.
pub fn coverage<'a>(
    catalogue: &Catalogue,
    cases: impl IntoIterator<Item = (&'a str, &'a str)>,
    verdicts: Option<&HashMap<String, String>>,
) -> Vec<ClauseCoverage> {
    let cases: Vec<(&str, &str)> = cases.into_iter().collect();
    let mut out = Vec::with_capacity(catalogue.clauses.len());
    // Cases by the clause their `clause:` cites.
    let mut citing: HashMap<&str, Vec<&str>> = HashMap::new();
    for (id, clause) in &cases {
        citing.entry(cited_id(clause)).or_default().push(id);
    }
    for c in &catalogue.clauses {
        let mut listed: Vec<CoveredCase> = Vec::new();
        let mut seen: HashSet<&str> = HashSet::new();
        let cited: HashSet<&str> = citing
            .get(c.id.as_str())
            .into_iter()
            .flatten()
            .copied()
            .collect();
        for (id, _) in &cases {
            let group = c.group_of(id);
            let cites = cited.contains(id);
            if (group.is_none() && !cites) || !seen.insert(id) {
                continue;
            }
            listed.push(CoveredCase {
                id: id.to_string(),
                on: group.map(|g| g.on),
                strength: group.map(|g| g.strength),
                why: group.and_then(|g| g.why.clone()),
                cites,
                verdict: verdicts.map(|v| v.get(*id).cloned().unwrap_or_else(|| "not_run".into())),
            });
        }
        let strength = if c.untestable.is_some() {
            "untestable"
        } else if listed.is_empty() {
            "none"
        } else if listed.iter().any(|k| k.strength == Some(Strength::Strong)) {
            "strong"
        } else {
            "weak"
        };
        let counts = verdicts.map(|_| {
            let mut m = BTreeMap::new();
            for k in &listed {
                if let Some(v) = &k.verdict {
                    *m.entry(v.clone()).or_insert(0) += 1;
                }
            }
            m
        });
        let judged_in_run = verdicts
            .filter(|_| !listed.is_empty())
            .map(|_| listed.iter().any(|k| was_judged(k.verdict.as_deref())));
        out.push(ClauseCoverage {
            id: c.id.clone(),
            summary: c.summary.clone(),
            chapter: c.chapter(),
            strength,
            cases: listed,
            untestable: c.untestable.clone(),
            erratum: c.erratum.clone(),
            judged_in_run,
            verdicts: counts,
        });
    }
    let rank = |c: &ClauseCoverage| match c.strength {
        "none" => 0,
        "untestable" => 1,
        _ => 2,
    };
    // A stable sort keeps catalogue order within each rank.
    out.sort_by_key(rank);
    out
}

#[cfg(test)]
mod errata;

#[cfg(test)]
mod tests {
    use super::*;

    /// A run's verdicts by case id.
    fn run(verdicts: &[(&str, &str)]) -> HashMap<String, String> {
        verdicts
            .iter()
            .map(|(id, v)| (id.to_string(), v.to_string()))
            .collect()
    }

    fn shipped() -> Catalogue {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        Catalogue::load(&root).unwrap_or_else(|e| panic!("{e}"))
    }

    /// The clauses of the PTX guide that no case checks yet and that have no reason to stay
    /// unchecked: the value checks the clause audit asked for (values observed, not
    /// declarations). Written from the audit, not from the catalogue: a new gap, or a filled
    /// one, changes this list on purpose.
    #[test]
    fn the_shipped_catalogue_parses_with_unique_ids_of_both_specifications() {
        let cat = shipped();
        let ids: Vec<&str> = cat.clauses().iter().map(|c| c.id.as_str()).collect();
        let unique: HashSet<&str> = ids.iter().copied().collect();
        assert_eq!(unique.len(), ids.len(), "duplicate ids");
        for p in PREFIXES {
            assert!(
                ids.iter().filter(|i| i.starts_with(p)).count() > 40,
                "{p}: too few clauses"
            );
        }
        assert!(ids.iter().all(|i| names_a_catalogued_spec(i)));
    }

    #[test]
    fn every_ptx_clause_has_cases_or_a_reason() {
        let cat = shipped();
        let gaps: Vec<&str> = cat
            .clauses()
            .iter()
            .filter(|c| c.id.starts_with("ptx-interop-13.2"))
            .filter(|c| c.cases.is_empty() && c.untestable.is_none())
            .map(|c| c.id.as_str())
            .collect();
        assert_eq!(gaps, Vec::<&str>::new());
    }

    #[test]
    fn a_citation_is_the_text_before_its_detail() {
        assert_eq!(
            cited_id("ptx-interop-13.2 §2.3 note A (lint on producer output)"),
            "ptx-interop-13.2 §2.3 note A"
        );
        assert_eq!(
            cited_id("gpudirect-rdma §3.5 buffer id check"),
            "gpudirect-rdma §3.5 buffer id check"
        );
        assert!(names_a_catalogued_spec("gpudirect-rdma §1"));
        assert!(!names_a_catalogued_spec("gpudirect-rdmax §1"));
        assert!(!names_a_catalogued_spec("ptx-interop 13.2 §2.3"));
    }

    #[test]
    fn globs_match_any_run_of_characters_at_a_star() {
        // Expected answers worked out by hand.
        assert!(glob_match(
            "abi.params.*.ptr.*",
            "abi.params.clang.ptr.return"
        ));
        assert!(!glob_match("abi.params.*.ptr.*", "abi.params.clang.ptr"));
        assert!(glob_match("abi.rule.*.clang32", "abi.rule.a_union.clang32"));
        assert!(!glob_match("abi.rule.*.clang32", "abi.rule.a_union.clang"));
        assert!(glob_match("*", ""));
        assert!(glob_match("a*b*c", "a.x.b.y.b.c"));
        assert!(!glob_match("a*b*c", "a.x.b.y.b.cd"));
        assert!(glob_match("exact", "exact"));
        assert!(!glob_match("exact", "exac"));
    }

    #[test]
    fn a_bad_catalogue_is_refused_at_its_line_and_column() {
        let p = Path::new("c.yaml");
        let cases = [
            // (text, line, column, part of the message), positions counted by hand.
            ("clauses:\n  - id: x §1\n    summary: s\n    cases: []\n", 2, 5, "begins with"),
            ("clauses:\n  - id: gpudirect-rdma §1\n    summary: s\n", 2, 5, "give `cases`"),
            ("clauses:\n  - id: gpudirect-rdma §1\n    summary: s\n    cases: []\n  - id: gpudirect-rdma §1\n    summary: t\n    untestable: u\n", 5, 5, "listed twice"),
            ("clauses:\n  - id: gpudirect-rdma §1\n    summary: s\n    cases: [{ids: [a], on: gpu, strength: weak}]\n", 2, 5, "why"),
            ("clauses:\n  - id: gpudirect-rdma §1\n    summary: s\n    cases: [{ids: [\"a b\"], on: gpu}]\n", 2, 5, "not a case-id glob"),
            ("clauses:\n  - id: gpudirect-rdma §1\n    summary: s\n    cases: []\n    untestable: u\n", 2, 5, "not both"),
            ("clauses:\n  - id: gpudirect-rdma §1\n    summary: s\n    colour: red\n", 4, 5, "colour"),
            ("clauses:\n  - id: gpudirect-rdma §1\n    summary: s\n    cases: []\n    erratum: \"\"\n", 2, 5, "`erratum` must be"),
        ];
        for (text, line, column, part) in cases {
            let e = Catalogue::parse(p, text).unwrap_err();
            assert_eq!((e.line, e.column), (line, column), "{text}: {e}");
            assert!(e.message.contains(part), "{text}: {e}");
        }
    }

    #[test]
    fn coverage_lists_cases_by_glob_and_by_citation_and_counts_verdicts() {
        let text = "clauses:\n  - id: gpudirect-rdma §1 a\n    summary: s\n    cases: [{ids: [\"x.*\"], on: vm}]\n  - id: gpudirect-rdma §1 b\n    summary: s\n    cases: []\n  - id: gpudirect-rdma §2 c\n    summary: s\n    untestable: u\n";
        let cat = Catalogue::parse(Path::new("c.yaml"), text).unwrap();
        let cases = [
            ("x.1", "gpudirect-rdma §1 a"),
            ("x.2", "gpudirect-rdma §1 b (d)"),
            ("y.1", "gpudirect-rdma §1 b"),
        ];
        let verdicts = run(&[("x.1", "pass"), ("x.2", "fail")]);
        let cov = coverage(&cat, cases, Some(&verdicts));
        let order: Vec<&str> = cov.iter().map(|c| c.id.as_str()).collect();
        // `b` has cases by citation only: listed, with no strength from the catalogue, so it
        // counts as weak; `c` is untestable; `a` lists x.1 and x.2 by its glob.
        assert_eq!(
            order,
            [
                "gpudirect-rdma §2 c",
                "gpudirect-rdma §1 a",
                "gpudirect-rdma §1 b"
            ]
        );
        let a = &cov[1];
        assert_eq!(a.strength, "strong");
        assert_eq!(
            a.cases.iter().map(|k| k.id.as_str()).collect::<Vec<_>>(),
            ["x.1", "x.2"]
        );
        let v = a.verdicts.as_ref().unwrap();
        assert_eq!((v["pass"], v["fail"]), (1, 1));
        let b = &cov[2];
        assert_eq!(b.strength, "weak");
        assert_eq!(b.verdicts.as_ref().unwrap()["not_run"], 1);
        assert_eq!(cov[0].chapter, "gpudirect-rdma ch. 2");
        // b's x.2 failed (y.1 did not run): both were judged.
        assert_eq!((a.judged_in_run, b.judged_in_run), (Some(true), Some(true)));
    }

    #[test]
    fn a_clause_whose_cases_were_all_skipped_or_waived_is_not_judged_in_the_run() {
        let text = "clauses:\n  - id: gpudirect-rdma §1 a\n    summary: s\n    cases: [{ids: [\"x.*\"], on: vm}]\n  - id: gpudirect-rdma §1 b\n    summary: s\n    cases: [{ids: [\"y.*\"], on: vm}]\n";
        let cat = Catalogue::parse(Path::new("c.yaml"), text).unwrap();
        let cases = [
            ("x.1", "gpudirect-rdma §1 a"),
            ("x.2", "gpudirect-rdma §1 a"),
            ("y.1", "gpudirect-rdma §1 b"),
            ("y.2", "gpudirect-rdma §1 b"),
        ];
        for (x, y, judged) in [
            (["skip", "waived"], ["skip", "fail"], [false, true]),
            (
                ["required_missing", "skip"],
                ["waived", "stale_waiver"],
                [false, true],
            ),
            (["flaky", "skip"], ["waived", "waived"], [true, false]),
        ] {
            let verdicts = run(&[("x.1", x[0]), ("x.2", x[1]), ("y.1", y[0]), ("y.2", y[1])]);
            let cov = coverage(&cat, cases, Some(&verdicts));
            let got: Vec<Option<bool>> = cov.iter().map(|c| c.judged_in_run).collect();
            assert_eq!(got, [Some(judged[0]), Some(judged[1])], "{x:?} {y:?}");
            // The catalogue's strength stands; the run's evidence is said beside it.
            assert!(cov.iter().all(|c| c.strength == "strong"));
        }
        // Without a run nothing is said of one.
        assert!(coverage(&cat, cases, None)
            .iter()
            .all(|c| c.judged_in_run.is_none()));
    }
}
