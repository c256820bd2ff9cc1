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
use std::path::Path;

use serde::Deserialize;

use crate::suite::SuiteError;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Waiver {
    pub id: String,
    /// A glob over case ids (`*` any run of characters, `?` one character).
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

#[derive(Debug, Clone, Default)]
pub struct Waivers {
    list: Vec<Waiver>,
}

impl Waivers {
    pub fn load(path: &Path) -> Result<Waivers, SuiteError> {
        let err = |line, column, message| SuiteError {
            file: path.to_path_buf(),
            line,
            column,
            message,
        };
        let text = std::fs::read_to_string(path)
            .map_err(|e| err(0, 0, format!("cannot read waiver file: {e}")))?;
        let f: WaiverFile = crate::suite::from_yaml(&text).map_err(|(l, c, m)| err(l, c, m))?;
        let mut seen = std::collections::HashSet::new();
        for w in &f.waivers {
            if !seen.insert(w.id.as_str()) {
                return Err(err(0, 0, format!("duplicate waiver id `{}`", w.id)));
            }
            if w.reason.trim().is_empty() {
                return Err(err(0, 0, format!("waiver `{}` gives no reason", w.id)));
            }
        }
        Ok(Waivers { list: f.waivers })
    }

    pub fn from_list(list: Vec<Waiver>) -> Waivers {
        Waivers { list }
    }

    /// Add another file's waivers; ids must stay unique.
    pub fn extend(&mut self, other: Waivers) -> Result<(), String> {
        for w in other.list {
            if self.list.iter().any(|x| x.id == w.id) {
                return Err(format!("waiver id `{}` appears in two waiver files", w.id));
            }
            self.list.push(w);
        }
        Ok(())
    }

    /// The first waiver matching this case on this platform.
    pub fn find(&self, case_id: &str, fingerprint: &BTreeMap<String, String>) -> Option<&Waiver> {
        self.list.iter().find(|w| {
            glob_match(&w.cases, case_id)
                && w.platform
                    .iter()
                    .all(|(k, pat)| fingerprint.get(k).is_some_and(|v| glob_match(pat, v)))
        })
    }
}

/// `*` matches any run of characters, `?` exactly one, `{a,b}` either alternative (nesting
/// allowed); everything else is literal.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    expand_braces(pattern)
        .iter()
        .any(|p| glob_match_plain(p, text))
}

/// `a.{b,c.{d,e}}` -> `a.b`, `a.c.d`, `a.c.e`. An unbalanced brace is literal.
fn expand_braces(pattern: &str) -> Vec<String> {
    let Some(open) = pattern.find('{') else {
        return vec![pattern.to_string()];
    };
    let (mut depth, mut close, mut commas) = (0, None, Vec::new());
    for (i, c) in pattern[open..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    close = Some(open + i);
                    break;
                }
            }
            ',' if depth == 1 => commas.push(open + i),
            _ => {}
        }
    }
    let Some(close) = close else {
        return vec![pattern.to_string()];
    };
    let (head, tail) = (&pattern[..open], &pattern[close + 1..]);
    let mut bounds = vec![open];
    bounds.extend(commas);
    bounds.push(close);
    let mut out = Vec::new();
    for w in bounds.windows(2) {
        let alt = &pattern[w[0] + 1..w[1]];
        out.extend(expand_braces(&format!("{head}{alt}{tail}")));
    }
    out
}

fn glob_match_plain(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == '*' {
        pi += 1;
    }
    pi == p.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob_match("abi.*", "abi.layout.x"));
        assert!(glob_match("*.gpu.*", "atomics.mp.gpu.inter"));
        assert!(glob_match("a?c", "abc"));
        assert!(!glob_match("abi.*", "atomics.x"));
        assert!(glob_match("*", ""));
        assert!(!glob_match("a*b", "acd"));
    }

    #[test]
    fn brace_alternatives_nest() {
        let p = "atomics.mapping.clang.{load.{acquire,seq_cst},fence.*}.*";
        assert!(glob_match(p, "atomics.mapping.clang.load.acquire.gpu"));
        assert!(glob_match(p, "atomics.mapping.clang.fence.release.sys"));
        assert!(!glob_match(p, "atomics.mapping.clang.load.relaxed.gpu"));
        assert!(!glob_match(p, "atomics.mapping.llvm.load.acquire.gpu"));
        assert!(glob_match("a{b", "a{b"), "an unbalanced brace is literal");
    }

    #[test]
    fn platform_must_match() {
        let w = Waivers::from_list(vec![Waiver {
            id: "W1".into(),
            cases: "abi.*".into(),
            reason: "r".into(),
            platform: [("gpu".to_string(), "*H100*".to_string())].into(),
        }]);
        let mut fp = BTreeMap::new();
        assert!(w.find("abi.x", &fp).is_none(), "no gpu key: no match");
        fp.insert("gpu".to_string(), "NVIDIA H100 80GB HBM3".to_string());
        assert_eq!(w.find("abi.x", &fp).unwrap().id, "W1");
        assert!(w.find("dwarf.x", &fp).is_none());
    }
}
