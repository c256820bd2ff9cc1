//! `gpucts diff BASE NEW`: what changed between two results sets (directories or bundles).
//!
//! Cases are matched by id (and node, for merged fleet results). A regression is a case that
//! fails now and did not (or is new and fails), a case that ran and now skips (the machine
//! lost a capability), or a figure that moved beyond its noise in its worse direction. Noise
//! is the recorded spread: a figure changed when the new median lies outside the base's
//! `min..=max` and the base median outside the new `min..=max`.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::figures::{Better, Figure, Spread};
use super::results::{Results, StoredCase, VerdictName};
use crate::outcome::CaseStatus;

/// What kind of difference a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    NewFailure,
    NewlySkipped,
    FigureRegressed,
    Fixed,
    NewlyChecked,
    BecameFlaky,
    VerdictChanged,
    NewCase,
    RemovedCase,
    FigureChanged,
    SuiteAdded,
    SuiteRemoved,
}

impl Kind {
    fn text(self) -> &'static str {
        match self {
            Kind::NewFailure => "new failure",
            Kind::NewlySkipped => "newly skipped",
            Kind::FigureRegressed => "figure regressed",
            Kind::Fixed => "fixed",
            Kind::NewlyChecked => "newly checked",
            Kind::BecameFlaky => "became flaky",
            Kind::VerdictChanged => "verdict changed",
            Kind::NewCase => "new case",
            Kind::RemovedCase => "removed case",
            Kind::FigureChanged => "figure changed",
            Kind::SuiteAdded => "suite added",
            Kind::SuiteRemoved => "suite removed",
        }
    }
}

/// One difference.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    pub kind: Kind,
    pub case: String,
    pub base: String,
    pub new: String,
    pub regression: bool,
}

/// All differences between two results sets.
#[derive(Debug, Clone, Serialize)]
pub struct Diff {
    pub base: String,
    pub new: String,
    pub regression: bool,
    pub counts: BTreeMap<Kind, usize>,
    pub findings: Vec<Finding>,
}

fn key(c: &StoredCase) -> String {
    match &c.node {
        Some(n) => format!("{n}/{}", c.id),
        None => c.id.clone(),
    }
}

fn verdict_text(c: &StoredCase) -> String {
    let mut s = c.verdict.as_str().to_string();
    match &c.status {
        CaseStatus::Skip { capability, .. } => s += &format!(" [{capability}]"),
        CaseStatus::Fail { observed, .. } => s += &format!(": observed {observed}"),
        CaseStatus::Error { message } => s += &format!(": {message}"),
        CaseStatus::Crash { how, .. } => s += &format!(": {how}"),
        CaseStatus::Timeout { after_s, .. } => s += &format!(": timeout after {after_s:.1} s"),
        CaseStatus::Pass { .. } => {}
    }
    if let Some(w) = &c.waiver {
        s += &format!(" ({w})");
    }
    let first_line = s.lines().next().unwrap_or("").to_string();
    first_line.chars().take(200).collect()
}

fn ran(v: VerdictName) -> bool {
    !matches!(v, VerdictName::Skip | VerdictName::RequiredMissing)
}

fn compare_case(b: &StoredCase, n: &StoredCase) -> Option<(Kind, bool)> {
    use VerdictName as V;
    if b.verdict == n.verdict {
        return None;
    }
    let was_skip = matches!(b.verdict, V::Skip | V::RequiredMissing);
    let is_skip = matches!(n.verdict, V::Skip | V::RequiredMissing);
    Some(if ran(b.verdict) && is_skip {
        (Kind::NewlySkipped, true)
    } else if n.verdict.is_failure() && !b.verdict.is_failure() {
        (Kind::NewFailure, true)
    } else if b.verdict.is_failure() && (n.verdict.is_pass() || n.verdict == V::Waived) {
        (Kind::Fixed, false)
    } else if was_skip && !is_skip {
        (Kind::NewlyChecked, false)
    } else if n.verdict == V::Flaky {
        (Kind::BecameFlaky, false)
    } else {
        (Kind::VerdictChanged, false)
    })
}

fn spread_text(s: &Spread, unit: &str) -> String {
    format!("{} {unit} ({}..{})", s.median, s.min, s.max)
}

/// Changed beyond noise, and whether in the worse direction.
fn moved(b: &Spread, n: &Spread, better: Option<Better>) -> Option<bool> {
    if !b.is_sane() || !n.is_sane() {
        return None;
    }
    let outside_base = n.median < b.min || n.median > b.max;
    let outside_new = b.median < n.min || b.median > n.max;
    if !(outside_base && outside_new) {
        return None;
    }
    Some(match better {
        Some(Better::Higher) => n.median < b.median,
        Some(Better::Lower) => n.median > b.median,
        None => false,
    })
}

fn compare_figures(case: &str, b: &Figure, n: &Figure, out: &mut Vec<Finding>) {
    let mut push = |worse: bool, base: String, new: String| {
        out.push(Finding {
            kind: if worse {
                Kind::FigureRegressed
            } else {
                Kind::FigureChanged
            },
            case: format!("{case}: {}", b.name()),
            base,
            new,
            regression: worse,
        })
    };
    match (b, n) {
        (
            Figure::Scalar {
                unit,
                better,
                value: bv,
                ..
            },
            Figure::Scalar { value: nv, .. },
        ) => {
            if let Some(worse) = moved(bv, nv, *better) {
                push(worse, spread_text(bv, unit), spread_text(nv, unit));
            }
        }
        (
            Figure::Series {
                unit,
                x_unit,
                better,
                points: bp,
                ..
            },
            Figure::Series { points: np, .. },
        ) => {
            for p in bp {
                let Some(q) = np.iter().find(|q| q.x == p.x) else {
                    continue;
                };
                if let Some(worse) = moved(&p.y, &q.y, *better) {
                    push(
                        worse,
                        format!("at {} {x_unit}: {}", p.x, spread_text(&p.y, unit)),
                        format!("at {} {x_unit}: {}", q.x, spread_text(&q.y, unit)),
                    );
                }
            }
        }
        // Histograms carry no spread; their rates are compared as scalar figures.
        _ => {}
    }
}

/// Compare `base` with `new`; `base_name`/`new_name` label them.
pub fn diff(base: &Results, new: &Results, base_name: &str, new_name: &str) -> Diff {
    let mut findings = Vec::new();
    let areas = |r: &Results| -> BTreeMap<String, usize> {
        let mut m = BTreeMap::new();
        for c in &r.cases {
            *m.entry(c.area.clone()).or_insert(0) += 1;
        }
        m
    };
    let (ba, na) = (areas(base), areas(new));
    for (a, n) in &ba {
        if !na.contains_key(a) {
            findings.push(Finding {
                kind: Kind::SuiteRemoved,
                case: a.clone(),
                base: format!("{n} cases"),
                new: "not run".into(),
                regression: false,
            });
        }
    }
    for (a, n) in &na {
        if !ba.contains_key(a) {
            findings.push(Finding {
                kind: Kind::SuiteAdded,
                case: a.clone(),
                base: "not run".into(),
                new: format!("{n} cases"),
                regression: false,
            });
        }
    }
    let bmap: BTreeMap<String, &StoredCase> = base.cases.iter().map(|c| (key(c), c)).collect();
    let nmap: BTreeMap<String, &StoredCase> = new.cases.iter().map(|c| (key(c), c)).collect();
    let ids: BTreeSet<&String> = bmap.keys().chain(nmap.keys()).collect();
    for id in ids {
        match (bmap.get(id), nmap.get(id)) {
            (Some(b), Some(n)) => {
                if let Some((kind, regression)) = compare_case(b, n) {
                    findings.push(Finding {
                        kind,
                        case: id.clone(),
                        base: verdict_text(b),
                        new: verdict_text(n),
                        regression,
                    });
                }
            }
            // A whole suite added or removed is one finding above, not one per case.
            (None, Some(n)) if ba.contains_key(&n.area) => findings.push(Finding {
                kind: Kind::NewCase,
                case: id.clone(),
                base: "absent".into(),
                new: verdict_text(n),
                regression: n.verdict.is_failure(),
            }),
            (Some(b), None) if na.contains_key(&b.area) => findings.push(Finding {
                kind: Kind::RemovedCase,
                case: id.clone(),
                base: verdict_text(b),
                new: "absent".into(),
                regression: false,
            }),
            _ => {}
        }
    }
    for (case, bfigs) in &base.figures {
        let Some(nfigs) = new.figures.get(case) else {
            continue;
        };
        for bf in bfigs {
            if let Some(nf) = nfigs.iter().find(|f| f.name() == bf.name()) {
                compare_figures(case, bf, nf, &mut findings);
            }
        }
    }
    findings.sort_by(|a, b| (a.kind, &a.case).cmp(&(b.kind, &b.case)));
    let mut counts = BTreeMap::new();
    for f in &findings {
        *counts.entry(f.kind).or_insert(0) += 1;
    }
    Diff {
        base: base_name.into(),
        new: new_name.into(),
        regression: findings.iter().any(|f| f.regression),
        counts,
        findings,
    }
}

impl Diff {
    /// The text form: one line per finding, then a closing line.
    pub fn render_text(&self) -> String {
        let mut s = format!("gpucts diff: {} -> {}\n", self.base, self.new);
        for f in &self.findings {
            s += &format!(
                "{:<17} {}: {} -> {}{}\n",
                f.kind.text(),
                f.case,
                f.base,
                f.new,
                if f.regression { "  [regression]" } else { "" }
            );
        }
        let n = |k: Kind| self.counts.get(&k).copied().unwrap_or(0);
        s += &format!(
            "gpucts diff: {} new failures, {} fixed, {} newly skipped, {} new cases, {} removed cases, {} figures changed; {}\n",
            n(Kind::NewFailure),
            n(Kind::Fixed),
            n(Kind::NewlySkipped),
            n(Kind::NewCase),
            n(Kind::RemovedCase),
            n(Kind::FigureChanged) + n(Kind::FigureRegressed),
            if self.regression { "regression" } else { "no regression" }
        );
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capability::Capability;

    fn case(id: &str, verdict: VerdictName, status: CaseStatus) -> StoredCase {
        StoredCase {
            id: id.into(),
            area: id.split('.').next().unwrap_or("").into(),
            clause: "c".into(),
            origin: String::new(),
            status,
            verdict,
            waiver: None,
            duration_s: 0.0,
            attempts: vec![],
            node: None,
        }
    }

    fn results(cases: Vec<StoredCase>) -> Results {
        Results {
            schema_version: 2,
            gpucts_version: "0".into(),
            fingerprint: Default::default(),
            probe: None,
            run: None,
            figures: Default::default(),
            nodes: vec![],
            cases,
        }
    }

    fn pass(id: &str) -> StoredCase {
        case(id, VerdictName::Pass, CaseStatus::pass())
    }
    fn fail(id: &str) -> StoredCase {
        case(id, VerdictName::Fail, CaseStatus::fail("4", "8"))
    }
    fn skip(id: &str) -> StoredCase {
        case(
            id,
            VerdictName::Skip,
            CaseStatus::skip(Capability::Gpu, "none"),
        )
    }

    #[test]
    fn classifies_case_changes() {
        let b = results(vec![pass("a.1"), fail("a.2"), pass("a.3"), pass("a.4")]);
        let n = results(vec![fail("a.1"), pass("a.2"), skip("a.3"), pass("a.5")]);
        let d = diff(&b, &n, "b", "n");
        let got: Vec<(Kind, &str, bool)> = d
            .findings
            .iter()
            .map(|f| (f.kind, f.case.as_str(), f.regression))
            .collect();
        assert_eq!(
            got,
            vec![
                (Kind::NewFailure, "a.1", true),
                (Kind::NewlySkipped, "a.3", true),
                (Kind::Fixed, "a.2", false),
                (Kind::NewCase, "a.5", false),
                (Kind::RemovedCase, "a.4", false),
            ]
        );
        assert!(d.regression);
        let same = diff(&b, &b, "b", "b");
        assert!(same.findings.is_empty() && !same.regression);
    }

    #[test]
    fn different_suite_sets_are_findings_not_errors() {
        let b = results(vec![pass("abi.1"), pass("abi.2")]);
        let n = results(vec![pass("abi.1"), pass("abi.2"), pass("dwarf.1")]);
        let d = diff(&b, &n, "b", "n");
        assert_eq!(d.findings.len(), 1, "{:?}", d.findings);
        assert_eq!(d.findings[0].kind, Kind::SuiteAdded);
        assert!(!d.regression);
    }

    #[test]
    fn figures_move_only_beyond_their_noise() {
        let s = |min, median, max| Spread { min, median, max };
        // Overlapping bands: noise.
        assert_eq!(moved(&s(9.0, 10.0, 11.0), &s(9.5, 10.8, 12.0), None), None);
        // Disjoint: higher-is-better figure dropped = worse.
        assert_eq!(
            moved(&s(9.0, 10.0, 11.0), &s(6.0, 7.0, 8.0), Some(Better::Higher)),
            Some(true)
        );
        assert_eq!(
            moved(&s(9.0, 10.0, 11.0), &s(6.0, 7.0, 8.0), Some(Better::Lower)),
            Some(false)
        );
        // No spread recorded: any change is beyond noise.
        assert_eq!(
            moved(&Spread::exact(1.0), &Spread::exact(1.5), None),
            Some(false)
        );
    }
}
