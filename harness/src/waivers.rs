//! Known failures: a waiver turns a failing case into `waived` (with the waiver's id), and a
//! waiver that matches a passing case is reported as stale so the list does not rot.
//!
//! ```yaml
//! waivers:
//!   - id: W-ABI-001
//!     cases: "abi.params.clang.*"
//!     reason: "LLVM raises byval alignment to 4"
//!     platform: { clang: "Debian clang version 19*" }   # optional, globs on the fingerprint
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use globset::{GlobBuilder, GlobMatcher};
use serde::Deserialize;

/// Known producer divergences, each investigated, applied unless `--no-default-waivers`
/// (relative to the repository root).
pub const DEFAULT_FILE: &str = "suites/waivers/known-divergences.yaml";

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Waiver {
    pub id: String,
    /// A glob over case ids (`*` any run of characters, `?` one character, `{a,b}` either
    /// alternative, nesting allowed).
    pub cases: String,
    pub reason: String,
    /// Fingerprint keys (see `gpucts probe`) and globs their values must match.
    #[serde(default)]
    pub platform: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct WaiverFile {
    waivers: Vec<Waiver>,
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
    #[error("{}: duplicate waiver id `{id}`", file.display())]
    DuplicateId { file: PathBuf, id: String },
    #[error("{}: waiver `{id}` gives no reason", file.display())]
    NoReason { file: PathBuf, id: String },
    /// A `cases:` or `platform:` glob that does not compile (e.g. an unclosed `{`).
    #[error("{}waiver `{id}`: bad pattern `{pattern}`: {why}", file.as_ref().map(|f| format!("{}: ", f.display())).unwrap_or_default())]
    BadPattern {
        file: Option<PathBuf>,
        id: String,
        pattern: String,
        why: String,
    },
    #[error("waiver id `{id}` appears in two waiver files")]
    InTwoFiles { id: String },
}

fn at(file: &Path, line: u64, column: u64, message: &str) -> String {
    if line == 0 {
        format!("{}: {message}", file.display())
    } else {
        format!("{}:{line}:{column}: {message}", file.display())
    }
}

/// One waiver with its globs compiled once (a run asks every case against every waiver).
#[derive(Debug, Clone)]
struct Compiled {
    waiver: Waiver,
    cases: GlobMatcher,
    platform: Vec<(String, GlobMatcher)>,
}

/// Globs compile to one automaton each (globset), so `{a,b}.{c,d}` is matched without
/// expanding the alternatives into every combination.
fn glob(pattern: &str) -> Result<GlobMatcher, globset::Error> {
    Ok(GlobBuilder::new(pattern)
        .literal_separator(false)
        .backslash_escape(true)
        .build()?
        .compile_matcher())
}

fn compile(w: Waiver, file: Option<&Path>) -> Result<Compiled, WaiverError> {
    let bad = |pattern: &str, e: globset::Error| WaiverError::BadPattern {
        file: file.map(Path::to_path_buf),
        id: w.id.clone(),
        pattern: pattern.to_string(),
        why: e.kind().to_string(),
    };
    let cases = glob(&w.cases).map_err(|e| bad(&w.cases, e))?;
    let mut platform = Vec::new();
    for (k, pat) in &w.platform {
        platform.push((k.clone(), glob(pat).map_err(|e| bad(pat, e))?));
    }
    Ok(Compiled {
        waiver: w,
        cases,
        platform,
    })
}

#[derive(Debug, Clone, Default)]
pub struct Waivers {
    list: Vec<Compiled>,
}

impl Waivers {
    pub fn load(path: &Path) -> Result<Waivers, WaiverError> {
        let text = std::fs::read_to_string(path).map_err(|source| WaiverError::Read {
            file: path.to_path_buf(),
            source,
        })?;
        let f: WaiverFile = crate::suite::from_yaml(&text).map_err(|(line, column, message)| {
            WaiverError::Parse {
                file: path.to_path_buf(),
                line,
                column,
                message,
            }
        })?;
        let mut seen = std::collections::HashSet::new();
        for w in &f.waivers {
            if !seen.insert(w.id.as_str()) {
                return Err(WaiverError::DuplicateId {
                    file: path.to_path_buf(),
                    id: w.id.clone(),
                });
            }
            if w.reason.trim().is_empty() {
                return Err(WaiverError::NoReason {
                    file: path.to_path_buf(),
                    id: w.id.clone(),
                });
            }
        }
        let list = f
            .waivers
            .into_iter()
            .map(|w| compile(w, Some(path)))
            .collect::<Result<_, _>>()?;
        Ok(Waivers { list })
    }

    /// The waivers of a run: the default file under `root` (unless `no_default`, or when it is
    /// absent) and then each of `extra`, ids unique across all.
    pub fn load_run(
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
        for f in &files {
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
            if self.list.iter().any(|x| x.waiver.id == w.waiver.id) {
                return Err(WaiverError::InTwoFiles {
                    id: w.waiver.id.clone(),
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

    /// The first waiver matching this case on this platform.
    pub fn find(&self, case_id: &str, fingerprint: &BTreeMap<String, String>) -> Option<&Waiver> {
        self.list
            .iter()
            .find(|w| {
                w.cases.is_match(case_id)
                    && w.platform
                        .iter()
                        .all(|(k, pat)| fingerprint.get(k).is_some_and(|v| pat.is_match(v)))
            })
            .map(|c| &c.waiver)
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
            platform: Default::default(),
        }])
        .unwrap()
    }

    fn glob_match(pattern: &str, text: &str) -> bool {
        one(pattern).find(text, &BTreeMap::new()).is_some()
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
            platform: Default::default(),
        }])
        .unwrap_err();
        assert!(matches!(e, WaiverError::BadPattern { .. }), "{e:?}");
        assert!(
            e.to_string().starts_with("waiver `W-9`: bad pattern `a{b`"),
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
            platform: [("gpu".to_string(), "*H100*".to_string())].into(),
        }])
        .unwrap();
        let mut fp = BTreeMap::new();
        assert!(w.find("abi.x", &fp).is_none(), "no gpu key: no match");
        fp.insert("gpu".to_string(), "NVIDIA H100 80GB HBM3".to_string());
        assert_eq!(w.find("abi.x", &fp).unwrap().id, "W1");
        assert!(w.find("dwarf.x", &fp).is_none());
    }

    #[test]
    fn the_default_file_loads_and_ids_stay_unique_across_files() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let w = Waivers::load_run(&root, false, &[]).unwrap();
        assert!(w.iter().count() > 0);
        let twice = Waivers::load_run(&root, false, &[root.join(DEFAULT_FILE)]).unwrap_err();
        assert!(matches!(twice, WaiverError::InTwoFiles { .. }), "{twice}");
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
}
