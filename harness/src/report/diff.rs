//! `gpucts diff BASE NEW`: what changed between two results sets (directories or bundles).
//!
//! Cases are matched by id (and node, for merged fleet results). A regression is a case that
//! fails now and did not (or is new and fails), a case that ran and now skips (the machine
//! lost a capability), or a figure that moved beyond its noise in its worse direction.
//!
//! Verdicts are always compared. Figures are compared only between results of the same
//! machine (the fingerprints name the same `gpu` and `driver`), because a rate measured on
//! another GPU or driver says nothing about a regression; `--across-machines` compares them
//! anyway. A figure's noise band is its recorded `min..=max` when it has several samples,
//! else its median ± the tolerance (default 20 %, `--tolerance PCT`): a figure changed when
//! the new median lies outside the base's band and the base median outside the new band.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::figures::{Better, Figure, Spread};
use super::results::{Results, StoredCase, VerdictName};
use crate::figures::fmt_num;
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
    /// A case gained a tag (`control-without-weak-outcomes`): shown, never a regression.
    TagAdded,
    TagRemoved,
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
            Kind::TagAdded => "tag added",
            Kind::TagRemoved => "tag removed",
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

/// The tolerance a single-sample figure gets when `--tolerance` is not given, in percent.
/// Measured: three runs of the 468 atomics.gpu cases on one H200 (2026-11-26, 5 and 47
/// minutes apart, reports/rigs/h200-2026-11-26) moved instances/s by up to 29 % (a run's
/// per-launch band does not cover a later run's drift); at 20 % a nightly against its own
/// baseline flagged 3 and 16 of 468 cases, at 30 % none. Halving is still a regression.
pub(crate) const DEFAULT_TOLERANCE_PCT: f64 = 35.0;

/// How figures are compared.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    /// The noise band of a figure recorded without spread (`min == max`), in percent of its
    /// median.
    pub tolerance_pct: f64,
    /// Compare figures even when the two results come from different GPUs or drivers.
    pub across_machines: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            tolerance_pct: DEFAULT_TOLERANCE_PCT,
            across_machines: false,
        }
    }
}

/// What a fingerprint says about the machine figures were measured on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Machine {
    pub gpu: Option<String>,
    pub driver: Option<String>,
}

impl Machine {
    /// The fingerprint keys that decide whether two machines' figures compare.
    fn of(fingerprint: &BTreeMap<String, String>) -> Machine {
        Machine {
            gpu: fingerprint.get("gpu").cloned(),
            driver: fingerprint.get("driver").cloned(),
        }
    }

    fn text(&self) -> String {
        format!(
            "{} (driver {})",
            self.gpu.as_deref().unwrap_or("unknown GPU"),
            self.driver.as_deref().unwrap_or("unknown")
        )
    }
}

/// Whether the figures of one run (or one node of a fleet) were compared, and why.
#[derive(Debug, Clone, Serialize)]
pub struct MachineCheck {
    /// The fleet node, for merged results; absent for a single run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    pub base: Machine,
    pub new: Machine,
    /// Same GPU and driver.
    pub same: bool,
    pub figures_compared: bool,
}

impl MachineCheck {
    /// The line the text form prints when the machines differ.
    fn line(&self) -> String {
        format!(
            "machines differ{}: base {}, new {}; {}",
            self.node
                .as_ref()
                .map(|n| format!(" on node {n}"))
                .unwrap_or_default(),
            self.base.text(),
            self.new.text(),
            if self.figures_compared {
                "figures compared anyway (--across-machines)"
            } else {
                "figures not compared (--across-machines compares them)"
            }
        )
    }
}

/// All differences between two results sets.
#[derive(Debug, Clone, Serialize)]
pub struct Diff {
    pub base: String,
    pub new: String,
    pub regression: bool,
    /// The band of a single-sample figure, in percent.
    pub tolerance_pct: f64,
    pub across_machines: bool,
    /// One entry per run compared (per node for merged fleet results).
    pub machines: Vec<MachineCheck>,
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
        CaseStatus::Pass { tags, .. } => {
            for t in tags {
                s += &format!(" [{t}]");
            }
        }
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
    if s.min < s.max {
        format!(
            "{} {unit} ({}..{})",
            fmt_num(s.median),
            fmt_num(s.min),
            fmt_num(s.max)
        )
    } else {
        format!("{} {unit}", fmt_num(s.median))
    }
}

/// The new figure's text, with how far its median moved from the base's.
fn moved_text(b: &Spread, n: &Spread, unit: &str) -> String {
    let mut s = spread_text(n, unit);
    if b.median != 0.0 {
        s += &format!(
            " ({:+.1} %)",
            (n.median - b.median) / b.median.abs() * 100.0
        );
    }
    s
}

/// A figure's noise band: the recorded spread when it has one, else its median ± `tol`
/// (a fraction).
fn band(s: &Spread, tol: f64) -> (f64, f64) {
    if s.min < s.max {
        (s.min, s.max)
    } else {
        let d = s.median.abs() * tol;
        (s.median - d, s.median + d)
    }
}

/// Changed beyond noise (each side's band, see [`band`]), and whether in the worse direction.
fn moved(b: &Spread, n: &Spread, better: Option<Better>, tol: f64) -> Option<bool> {
    if !b.is_sane() || !n.is_sane() {
        return None;
    }
    let (blo, bhi) = band(b, tol);
    let (nlo, nhi) = band(n, tol);
    let outside_base = n.median < blo || n.median > bhi;
    let outside_new = b.median < nlo || b.median > nhi;
    if !(outside_base && outside_new) {
        return None;
    }
    Some(match better {
        Some(Better::Higher) => n.median < b.median,
        Some(Better::Lower) => n.median > b.median,
        None => false,
    })
}

fn compare_figures(case: &str, b: &Figure, n: &Figure, tol: f64, out: &mut Vec<Finding>) {
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
            if let Some(worse) = moved(bv, nv, *better, tol) {
                push(worse, spread_text(bv, unit), moved_text(bv, nv, unit));
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
                if let Some(worse) = moved(&p.y, &q.y, *better, tol) {
                    push(
                        worse,
                        format!("at {} {x_unit}: {}", fmt_num(p.x), spread_text(&p.y, unit)),
                        format!(
                            "at {} {x_unit}: {}",
                            fmt_num(q.x),
                            moved_text(&p.y, &q.y, unit)
                        ),
                    );
                }
            }
        }
        // Histograms carry no spread; their rates are compared as scalar figures.
        _ => {}
    }
}

/// The machine a figure key (`case` or, in merged fleet results, `node/case`) was measured
/// on, and its node.
fn machine_of(r: &Results, figure_key: &str) -> (Option<String>, Machine) {
    if let Some((node, _)) = figure_key.split_once('/') {
        if let Some(n) = r.nodes.iter().find(|n| n.name == node) {
            return (Some(node.to_string()), Machine::of(&n.fingerprint));
        }
    }
    (None, Machine::of(&r.fingerprint))
}

/// Which machines the figures come from: the run's, or each node's of a merged fleet set (a
/// node present on both sides).
fn machine_checks(base: &Results, new: &Results, opts: Options) -> Vec<MachineCheck> {
    let check = |node: Option<String>, b: Machine, n: Machine| {
        let same = b == n;
        MachineCheck {
            node,
            same,
            figures_compared: same || opts.across_machines,
            base: b,
            new: n,
        }
    };
    if base.nodes.is_empty() && new.nodes.is_empty() {
        return vec![check(
            None,
            Machine::of(&base.fingerprint),
            Machine::of(&new.fingerprint),
        )];
    }
    base.nodes
        .iter()
        .filter_map(|b| {
            let n = new.nodes.iter().find(|n| n.name == b.name)?;
            Some(check(
                Some(b.name.clone()),
                Machine::of(&b.fingerprint),
                Machine::of(&n.fingerprint),
            ))
        })
        .collect()
}

/// The tags `n` gained or lost against `b`: a tag qualifies a verdict and changes no
/// verdict, so each is shown and none is a regression.
fn tag_findings(id: &str, b: &StoredCase, n: &StoredCase, findings: &mut Vec<Finding>) {
    let (bt, nt) = (b.status.tags(), n.status.tags());
    for (kind, t) in nt
        .iter()
        .filter(|t| !bt.contains(t))
        .map(|t| (Kind::TagAdded, t))
        .chain(
            bt.iter()
                .filter(|t| !nt.contains(t))
                .map(|t| (Kind::TagRemoved, t)),
        )
    {
        findings.push(Finding {
            kind,
            case: format!("{id}: {t}"),
            base: verdict_text(b),
            new: verdict_text(n),
            regression: false,
        });
    }
}

/// The figures of a case both sides measured, on machines whose figures are compared;
/// `tol` is the tolerance as a fraction.
fn figure_findings(
    base: &Results,
    new: &Results,
    machines: &[MachineCheck],
    tol: f64,
    findings: &mut Vec<Finding>,
) {
    for (case, bfigs) in &base.figures {
        let Some(nfigs) = new.figures.get(case) else {
            continue;
        };
        let (node, _) = machine_of(base, case);
        let compared = machines
            .iter()
            .find(|m| m.node == node)
            .is_none_or(|m| m.figures_compared);
        if !compared {
            continue;
        }
        for bf in bfigs {
            if let Some(nf) = nfigs.iter().find(|f| f.name() == bf.name()) {
                compare_figures(case, bf, nf, tol, findings);
            }
        }
    }
}

/// Compare `base` with `new`; `base_name`/`new_name` label them.
pub fn diff(base: &Results, new: &Results, base_name: &str, new_name: &str, opts: Options) -> Diff {
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
                tag_findings(id, b, n, &mut findings);
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
    let machines = machine_checks(base, new, opts);
    figure_findings(
        base,
        new,
        &machines,
        opts.tolerance_pct / 100.0,
        &mut findings,
    );
    findings.sort_by(|a, b| (a.kind, &a.case).cmp(&(b.kind, &b.case)));
    let mut counts = BTreeMap::new();
    for f in &findings {
        *counts.entry(f.kind).or_insert(0) += 1;
    }
    Diff {
        base: base_name.into(),
        new: new_name.into(),
        regression: findings.iter().any(|f| f.regression),
        tolerance_pct: opts.tolerance_pct,
        across_machines: opts.across_machines,
        machines,
        counts,
        findings,
    }
}

impl Diff {
    /// The text form: one line per finding, then a closing line.
    pub(crate) fn render_text(&self) -> String {
        let mut s = format!("gpucts diff: {} -> {}\n", self.base, self.new);
        for m in self.machines.iter().filter(|m| !m.same) {
            s += &m.line();
            s.push('\n');
        }
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
            device: None,
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
        let d = diff(&b, &n, "b", "n", Options::default());
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
        let same = diff(&b, &b, "b", "b", Options::default());
        assert!(same.findings.is_empty() && !same.regression);
    }

    /// A pass that gains `control-without-weak-outcomes` is shown, not a regression; one
    /// that turns into a failure under `--require-weak-controls` is a new failure.
    #[test]
    fn a_gained_tag_is_shown_and_is_no_regression() {
        let tagged = |id: &str| {
            let control = crate::outcome::ControlRun {
                test: "MP.relaxed.cta.intra_cta".into(),
                instances: 100,
                weak: 0,
            };
            case(
                id,
                VerdictName::Pass,
                CaseStatus::pass_beside_control("n", control),
            )
        };
        let b = results(vec![pass("atomics.1"), tagged("atomics.2")]);
        let n = results(vec![tagged("atomics.1"), pass("atomics.2")]);
        let d = diff(&b, &n, "b", "n", Options::default());
        let got: Vec<(Kind, &str, &str, bool)> = d
            .findings
            .iter()
            .map(|f| (f.kind, f.case.as_str(), f.new.as_str(), f.regression))
            .collect();
        assert_eq!(
            got,
            vec![
                (
                    Kind::TagAdded,
                    "atomics.1: control-without-weak-outcomes",
                    "pass [control-without-weak-outcomes]",
                    false
                ),
                (
                    Kind::TagRemoved,
                    "atomics.2: control-without-weak-outcomes",
                    "pass",
                    false
                ),
            ]
        );
        assert!(!d.regression);
        assert!(d.render_text().contains("tag added"), "{}", d.render_text());
    }

    #[test]
    fn different_suite_sets_are_findings_not_errors() {
        let b = results(vec![pass("abi.1"), pass("abi.2")]);
        let n = results(vec![pass("abi.1"), pass("abi.2"), pass("dwarf.1")]);
        let d = diff(&b, &n, "b", "n", Options::default());
        assert_eq!(d.findings.len(), 1, "{:?}", d.findings);
        assert_eq!(d.findings[0].kind, Kind::SuiteAdded);
        assert!(!d.regression);
    }

    #[test]
    fn figures_move_only_beyond_their_noise() {
        let s = |min, median, max| Spread { min, median, max };
        let tol = 0.2;
        // Overlapping bands: noise.
        assert_eq!(
            moved(&s(9.0, 10.0, 11.0), &s(9.5, 10.8, 12.0), None, tol),
            None
        );
        // Disjoint: higher-is-better figure dropped = worse.
        assert_eq!(
            moved(
                &s(9.0, 10.0, 11.0),
                &s(6.0, 7.0, 8.0),
                Some(Better::Higher),
                tol
            ),
            Some(true)
        );
        assert_eq!(
            moved(
                &s(9.0, 10.0, 11.0),
                &s(6.0, 7.0, 8.0),
                Some(Better::Lower),
                tol
            ),
            Some(false)
        );
        // A measured spread is the band even when it is narrower than the tolerance.
        assert_eq!(
            moved(
                &s(9.9, 10.0, 10.1),
                &s(9.4, 9.5, 9.6),
                Some(Better::Higher),
                tol
            ),
            Some(true)
        );
    }

    #[test]
    fn a_single_sample_moves_only_beyond_the_tolerance() {
        let one = Spread::exact;
        let higher = Some(Better::Higher);
        for (b, n) in [(100.0, 108.0), (100.0, 92.0), (100.0, 119.0), (100.0, 81.0)] {
            assert_eq!(moved(&one(b), &one(n), higher, 0.2), None, "{b} -> {n}");
        }
        assert_eq!(moved(&one(100.0), &one(50.0), higher, 0.2), Some(true));
        assert_eq!(moved(&one(100.0), &one(50.0), higher, 0.6), None);
        assert_eq!(moved(&one(100.0), &one(130.0), higher, 0.2), Some(false));
        // No tolerance: any change is beyond noise.
        assert_eq!(moved(&one(1.0), &one(1.01), None, 0.0), Some(false));
    }

    fn with_figure(gpu: &str, median: f64) -> Results {
        let mut r = results(vec![pass("atomics.gpu.x")]);
        r.fingerprint.insert("gpu".into(), gpu.into());
        r.fingerprint.insert("driver".into(), "580".into());
        r.figures.insert(
            "atomics.gpu.x".into(),
            vec![Figure::Scalar {
                name: "x instances/s".into(),
                unit: "1/s".into(),
                better: Some(Better::Higher),
                value: Spread::exact(median),
            }],
        );
        r
    }

    #[test]
    fn figures_of_other_machines_are_compared_only_when_asked() {
        let b = with_figure("H100", 100.0);
        let n = with_figure("H200", 50.0);
        let d = diff(&b, &n, "b", "n", Options::default());
        assert!(!d.regression && d.findings.is_empty(), "{:?}", d.findings);
        assert_eq!(d.machines.len(), 1);
        assert!(!d.machines[0].same && !d.machines[0].figures_compared);
        let text = d.render_text();
        assert_eq!(text.matches("machines differ").count(), 1, "{text}");
        assert!(text.contains("figures not compared"), "{text}");
        let across = Options {
            across_machines: true,
            ..Options::default()
        };
        let d = diff(&b, &n, "b", "n", across);
        assert!(d.regression);
        assert_eq!(d.counts.get(&Kind::FigureRegressed), Some(&1));
        // Same machine: no line about machines.
        let d = diff(&b, &with_figure("H100", 50.0), "b", "n", Options::default());
        assert!(d.regression && !d.render_text().contains("machines differ"));
    }
}
