//! The summary the HTML report opens with: what ran per area and its verdicts, the GPU
//! atomics figures as one heatmap per GPU (weak fraction, weak outcomes/s and instances/s by
//! shape × mapping × scope × placement), and producer × producer verdict matrices (xcall
//! pairs linked offline and on the GPU, abi parameter passing per producer).
//!
//! Everything here is derived from case ids and figures as `results.json` carries them, so a
//! reviewer reads a 468-case GPU run on one screen instead of 1,404 separate figures.

use std::collections::BTreeMap;

use serde::Serialize;

use super::figures::Figure;
use super::results::{group_verdict, Counts, Results, StoredCase, VerdictName};

/// One kind of case within an area (the id's second component: `abi.random`, `xcall.pair`).
#[derive(Debug, Serialize)]
pub struct Group {
    pub name: String,
    pub counts: Counts,
}

/// What one area ran and what it said.
#[derive(Debug, Serialize)]
pub struct AreaRow {
    pub area: String,
    pub verdict: &'static str,
    pub counts: Counts,
    pub groups: Vec<Group>,
}

/// A heatmap column: where the test's threads ran, and the scope of its operations.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Column {
    pub placement: String,
    pub scope: String,
}

/// A header cell spanning the scopes of one placement.
#[derive(Debug, Serialize)]
pub struct Span {
    pub name: String,
    pub span: usize,
}

/// One measured case in the heatmap.
#[derive(Debug, Serialize)]
pub struct Cell {
    pub case: String,
    /// The case's verdict (the worst over the GPU's nodes): `pass`, `fail`, `waived`, ...
    pub verdict: &'static str,
    /// Weak outcomes over all instances, as text (`0.041 %`).
    pub weak_fraction: String,
    /// Weak outcomes per second of kernel time (`279k`).
    pub weak_rate: String,
    /// Instances per second of kernel time (`679M`).
    pub instance_rate: String,
    /// The cell's shade (CSS colour), from the weak fraction on a log scale; empty for none.
    pub shade: String,
    /// The weak outcome appeared at least once.
    pub weak_seen: bool,
    /// The case passed tagged `control-without-weak-outcomes` (on any of the GPU's nodes).
    pub control_without_weak: bool,
}

/// One heatmap row: a litmus shape with one mapping of its operations.
#[derive(Debug, Serialize)]
pub struct GridRow {
    pub shape: String,
    /// Rows this shape spans (on its first row; 0 on the others).
    pub shape_span: usize,
    pub mapping: String,
    pub cells: Vec<Option<Cell>>,
}

/// The GPU atomics figures of one GPU.
#[derive(Debug, Serialize)]
pub struct AtomicsGrid {
    pub gpu: String,
    /// The fleet nodes with this GPU (empty for a single run).
    pub nodes: Vec<String>,
    pub measured: usize,
    /// Cases whose weak outcome appeared at least once.
    pub weak_seen: usize,
    pub failed: usize,
    /// Passes tagged `control-without-weak-outcomes`: their control never showed its weak
    /// outcome, so the stress could not have caught a violation.
    pub control_without_weak: usize,
    pub placements: Vec<Span>,
    pub columns: Vec<Column>,
    pub rows: Vec<GridRow>,
}

/// One cell of a producer matrix: the verdicts of the cases of one pair.
#[derive(Debug, Serialize)]
pub struct MatrixCell {
    pub verdict: &'static str,
    pub counts: Counts,
    /// Non-zero counts in words (`238 pass · 2 waived`).
    pub text: String,
}

#[derive(Debug, Serialize)]
pub struct MatrixRow {
    pub name: String,
    pub cells: Vec<Option<MatrixCell>>,
}

/// Verdicts of cases keyed by two producers (caller × callee, producer × what).
#[derive(Debug, Serialize)]
pub struct Matrix {
    /// The id prefix the matrix is built from (`xcall.pair`), also its HTML id.
    pub prefix: String,
    pub title: String,
    pub corner: String,
    pub cols: Vec<String>,
    pub rows: Vec<MatrixRow>,
}

#[derive(Debug, Serialize)]
pub struct Summary {
    pub areas: Vec<AreaRow>,
    pub atomics: Vec<AtomicsGrid>,
    pub matrices: Vec<Matrix>,
}

/// The id's components after `prefix.`, when it has that prefix.
fn parts_after<'a>(id: &'a str, prefix: &str) -> Option<Vec<&'a str>> {
    let rest = id.strip_prefix(prefix)?.strip_prefix('.')?;
    Some(rest.split('.').collect())
}

/// Push `x` unless present; first-seen order is the suites' order (MP before SB, gpucts
/// before nvrtc), which reads better than alphabetical.
fn note<T: PartialEq>(v: &mut Vec<T>, x: T) {
    if !v.contains(&x) {
        v.push(x);
    }
}

/// Sort `v` by its position in `known` (unknown names after, in first-seen order).
fn order_by(v: &mut [String], known: &[&str]) {
    v.sort_by_key(|x| known.iter().position(|k| k == x).unwrap_or(known.len()));
}

fn areas(cases: &[StoredCase]) -> Vec<AreaRow> {
    let mut by: BTreeMap<&str, (Counts, Vec<Group>)> = BTreeMap::new();
    for c in cases {
        let e = by.entry(c.area.as_str()).or_default();
        e.0.add(c.verdict);
        let group = c.id.split('.').nth(1).unwrap_or("").to_string();
        match e.1.iter_mut().find(|g| g.name == group) {
            Some(g) => g.counts.add(c.verdict),
            None => {
                let mut counts = Counts::default();
                counts.add(c.verdict);
                e.1.push(Group {
                    name: group,
                    counts,
                })
            }
        }
    }
    by.into_iter()
        .map(|(area, (counts, mut groups))| {
            groups.sort_by_key(|g| std::cmp::Reverse(g.counts.total));
            AreaRow {
                area: area.to_string(),
                verdict: group_verdict(&counts),
                counts,
                groups,
            }
        })
        .collect()
}

/// A rate with an SI suffix and three significant digits (`279k`, `679M`).
fn si(x: f64) -> String {
    if !x.is_finite() {
        return "–".into();
    }
    let (v, suffix) = match x.abs() {
        a if a >= 1e12 => (x / 1e12, "T"),
        a if a >= 1e9 => (x / 1e9, "G"),
        a if a >= 1e6 => (x / 1e6, "M"),
        a if a >= 1e3 => (x / 1e3, "k"),
        _ => (x, ""),
    };
    let digits = if v == 0.0 {
        0
    } else {
        (2 - v.abs().log10().floor() as i32).clamp(0, 3) as usize
    };
    format!("{v:.digits$}{suffix}")
}

/// A fraction as a percentage with two significant digits (`0.041 %`).
fn percent(f: f64) -> String {
    if f == 0.0 {
        return "0".into();
    }
    let p = f * 100.0;
    if p < 1e-3 {
        return format!("{p:.1e} %");
    }
    let digits = (1 - p.log10().floor() as i32).max(0) as usize;
    format!("{p:.digits$} %")
}

/// Red, more opaque the larger the weak fraction, on a log scale from 1e-6 (faint) to 1.
fn shade(f: f64) -> String {
    if f <= 0.0 || !f.is_finite() {
        return String::new();
    }
    let t = ((f.log10() + 6.0) / 6.0).clamp(0.0, 1.0);
    format!("rgba(229,57,53,{:.2})", 0.12 + 0.68 * t)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.retain(|x| x.is_finite());
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// What one node measured for one case.
#[derive(Default)]
struct Measured {
    weak: u64,
    total: u64,
    weak_rates: Vec<f64>,
    instance_rates: Vec<f64>,
    verdicts: Vec<VerdictName>,
    control_without_weak: bool,
}

/// (shape, mapping, scope, placement) of an `atomics.gpu` case id; the shared-memory variant
/// (`atomics.gpu.shared.<shape>.<mapping>.<scope>.intra_cta`) is placement `shared`.
fn atomics_key(id: &str) -> Option<[String; 4]> {
    let p = parts_after(id, "atomics.gpu")?;
    let own = |v: &[&str]| [v[0], v[1], v[2], v[3]].map(String::from);
    match p.as_slice() {
        ["shared", rest @ ..] if rest.len() == 4 => {
            let mut k = own(rest);
            k[3] = "shared".into();
            Some(k)
        }
        v if v.len() == 4 => Some(own(v)),
        _ => None,
    }
}

fn worst(vs: &[VerdictName]) -> &'static str {
    use VerdictName as V;
    let rank = |v: &VerdictName| match v {
        V::Fail | V::RequiredMissing => 0,
        V::Flaky => 1,
        V::Waived => 2,
        V::StaleWaiver => 3,
        V::Skip => 4,
        V::Pass => 5,
    };
    vs.iter()
        .min_by_key(|v| rank(v))
        .map(|v| v.as_str())
        .unwrap_or("pass")
}

/// Measured cells of one GPU: case key (shape, mapping, scope, placement) -> what was seen.
type Cells = BTreeMap<[String; 4], Measured>;

/// The values each key component takes in a run, in the catalogue's order.
#[derive(Default)]
struct Axes {
    shapes: Vec<String>,
    mappings: Vec<String>,
    scopes: Vec<String>,
    placements: Vec<String>,
}

impl Axes {
    fn of(r: &Results) -> Axes {
        let mut a = Axes::default();
        for k in r.cases.iter().filter_map(|c| atomics_key(&c.id)) {
            note(&mut a.shapes, k[0].clone());
            note(&mut a.mappings, k[1].clone());
            note(&mut a.scopes, k[2].clone());
            note(&mut a.placements, k[3].clone());
        }
        // The catalogue's order (suites/atomics.yaml): message passing first, coherence last.
        order_by(
            &mut a.shapes,
            &[
                "MP", "SB", "LB", "IRIW", "2+2W", "S", "R", "CoRR", "CoRW", "CoWR", "CoWW", "RMW",
                "RelSeq",
            ],
        );
        order_by(&mut a.mappings, &["rel_acq", "sc", "fence", "relaxed"]);
        order_by(&mut a.scopes, &["cta", "cluster", "gpu", "sys"]);
        order_by(&mut a.placements, &["intra_cta", "inter_cta", "shared"]);
        a
    }
}

/// Each GPU's nodes and measured cells: the figures of every `atomics.gpu` case, with the
/// case's verdict and control tag.
fn measured_by_gpu(r: &Results) -> BTreeMap<String, (Vec<String>, Cells)> {
    // The GPU each figure key was measured on: its node's, or the run's.
    let gpu_of = |node: Option<&str>| -> String {
        let fp = match node.and_then(|n| r.nodes.iter().find(|x| x.name == n)) {
            Some(n) => &n.fingerprint,
            None => &r.fingerprint,
        };
        fp.get("gpu")
            .cloned()
            .unwrap_or_else(|| "unknown GPU".into())
    };
    let verdicts: BTreeMap<(Option<&str>, &str), (VerdictName, bool)> = r
        .cases
        .iter()
        .map(|c| {
            let tagged = c.verdict.is_pass()
                && c.status
                    .has_tag(crate::outcome::CONTROL_WITHOUT_WEAK_OUTCOMES);
            ((c.node.as_deref(), c.id.as_str()), (c.verdict, tagged))
        })
        .collect();
    let mut by_gpu: BTreeMap<String, (Vec<String>, Cells)> = BTreeMap::new();
    for (key, figs) in &r.figures {
        let (node, id) = match key.split_once('/') {
            Some((n, id)) => (Some(n), id),
            None => (None, key.as_str()),
        };
        let Some(k) = atomics_key(id) else { continue };
        let (nodes, cells) = by_gpu.entry(gpu_of(node)).or_default();
        if let Some(n) = node {
            note(nodes, n.to_string());
        }
        let m = cells.entry(k).or_default();
        m.add_figures(figs);
        if let Some((v, tagged)) = verdicts.get(&(node, id)) {
            m.verdicts.push(*v);
            m.control_without_weak |= tagged;
        }
    }
    by_gpu
}

impl Measured {
    /// A case records its own run's histogram and two rates (controls record none).
    fn add_figures(&mut self, figs: &[Figure]) {
        if let Some(Figure::Histogram { bins, .. }) =
            figs.iter().find(|f| matches!(f, Figure::Histogram { .. }))
        {
            self.weak += bins.iter().filter(|b| b.weak).map(|b| b.count).sum::<u64>();
            self.total += bins.iter().map(|b| b.count).sum::<u64>();
        }
        for f in figs {
            if let Figure::Scalar { name, value, .. } = f {
                if name.ends_with(" weak outcomes/s") {
                    self.weak_rates.push(value.median);
                } else if name.ends_with(" instances/s") {
                    self.instance_rates.push(value.median);
                }
            }
        }
    }

    /// The grid cell of case key `k`.
    fn cell(self, k: &[String; 4]) -> Cell {
        let frac = if self.total > 0 {
            self.weak as f64 / self.total as f64
        } else {
            f64::NAN
        };
        let case = if k[3] == "shared" {
            format!("atomics.gpu.shared.{}.{}.{}.intra_cta", k[0], k[1], k[2])
        } else {
            format!("atomics.gpu.{}", k.join("."))
        };
        Cell {
            case,
            verdict: worst(&self.verdicts),
            weak_fraction: if frac.is_nan() {
                "–".into()
            } else {
                percent(frac)
            },
            weak_rate: si(median(self.weak_rates)),
            instance_rate: si(median(self.instance_rates)),
            shade: shade(frac),
            weak_seen: self.weak > 0,
            control_without_weak: self.control_without_weak,
        }
    }
}

fn atomics(r: &Results) -> Vec<AtomicsGrid> {
    let axes = Axes::of(r);
    measured_by_gpu(r)
        .into_iter()
        .map(|(gpu, (nodes, cells))| grid(gpu, nodes, cells, &axes))
        .filter(|g| g.measured > 0)
        .collect()
}

/// One GPU's grid: a row per shape and mapping, a column per placement and scope measured.
fn grid(gpu: String, nodes: Vec<String>, mut cells: Cells, axes: &Axes) -> AtomicsGrid {
    let keys: Vec<[String; 4]> = cells.keys().cloned().collect();
    let used = |i: usize, x: &String| keys.iter().any(|k| &k[i] == x);
    let columns: Vec<Column> = axes
        .placements
        .iter()
        .filter(|p| used(3, p))
        .flat_map(|p| {
            axes.scopes
                .iter()
                .filter(|s| keys.iter().any(|k| k[3] == **p && k[2] == **s))
                .map(move |s| Column {
                    placement: p.clone(),
                    scope: s.clone(),
                })
        })
        .collect();
    let mut spans: Vec<Span> = Vec::new();
    for c in &columns {
        match spans.last_mut() {
            Some(s) if s.name == c.placement => s.span += 1,
            _ => spans.push(Span {
                name: c.placement.clone(),
                span: 1,
            }),
        }
    }
    let mut g = AtomicsGrid {
        gpu,
        nodes,
        measured: 0,
        weak_seen: 0,
        failed: 0,
        control_without_weak: 0,
        placements: spans,
        columns: Vec::new(),
        rows: Vec::new(),
    };
    for shape in axes.shapes.iter().filter(|s| used(0, s)) {
        let maps: Vec<&String> = axes
            .mappings
            .iter()
            .filter(|m| keys.iter().any(|k| &k[0] == shape && &k[1] == *m))
            .collect();
        for (i, mapping) in maps.iter().enumerate() {
            let row_cells = columns
                .iter()
                .map(|col| {
                    let k = [
                        shape.clone(),
                        (*mapping).clone(),
                        col.scope.clone(),
                        col.placement.clone(),
                    ];
                    let cell = cells.remove(&k)?.cell(&k);
                    g.measured += 1;
                    g.weak_seen += usize::from(cell.weak_seen);
                    g.failed += usize::from(cell.verdict == "fail");
                    g.control_without_weak += usize::from(cell.control_without_weak);
                    Some(cell)
                })
                .collect();
            g.rows.push(GridRow {
                shape: shape.clone(),
                shape_span: if i == 0 { maps.len() } else { 0 },
                mapping: (*mapping).clone(),
                cells: row_cells,
            });
        }
    }
    g.columns = columns;
    g
}

/// The verdicts of the cases under `prefix`, keyed by (row, column) from the id's components
/// after it; ids with fewer than `min_parts` components after the prefix are left out.
fn matrix(
    cases: &[StoredCase],
    prefix: &str,
    title: &str,
    corner: &str,
    min_parts: usize,
    key: impl Fn(&[&str]) -> (String, String),
) -> Option<Matrix> {
    let (mut rows, mut cols) = (Vec::new(), Vec::new());
    let mut counts: BTreeMap<(String, String), Counts> = BTreeMap::new();
    for c in cases {
        let Some(p) = parts_after(&c.id, prefix) else {
            continue;
        };
        if p.len() < min_parts {
            continue;
        }
        let (r, col) = key(&p);
        note(&mut rows, r.clone());
        note(&mut cols, col.clone());
        counts.entry((r, col)).or_default().add(c.verdict);
    }
    if counts.is_empty() {
        return None;
    }
    let rows = rows
        .iter()
        .map(|r| MatrixRow {
            name: r.clone(),
            cells: cols
                .iter()
                .map(|c| {
                    counts.get(&(r.clone(), c.clone())).map(|n| MatrixCell {
                        verdict: group_verdict(n),
                        counts: *n,
                        text: [
                            (n.passed, "pass"),
                            (n.failed, "fail"),
                            (n.waived, "waived"),
                            (n.flaky, "flaky"),
                            (n.skipped, "skip"),
                        ]
                        .iter()
                        .filter(|(k, _)| *k > 0)
                        .map(|(k, w)| format!("{k} {w}"))
                        .collect::<Vec<_>>()
                        .join(" · "),
                    })
                })
                .collect(),
        })
        .collect();
    Some(Matrix {
        prefix: prefix.into(),
        title: title.into(),
        corner: corner.into(),
        cols,
        rows,
    })
}

pub fn summary(r: &Results) -> Summary {
    let pair = |p: &[&str]| (p[0].to_string(), p[1].to_string());
    let matrices = [
        matrix(
            &r.cases,
            "xcall.pair",
            "xcall: caller × callee, linked offline (nvJitLink) and checked",
            "caller \\ callee",
            3,
            pair,
        ),
        matrix(
            &r.cases,
            "xcall.gpu",
            "xcall: caller × callee, linked by the driver and run on the GPU",
            "caller \\ callee",
            2,
            pair,
        ),
        matrix(
            &r.cases,
            "abi.params",
            "abi: each producer's parameter passing against gpucts's layout engine",
            "producer \\ passed as",
            3,
            |p| (p[0].to_string(), p[p.len() - 1].to_string()),
        ),
    ]
    .into_iter()
    .flatten()
    .collect();
    Summary {
        areas: areas(&r.cases),
        atomics: atomics(r),
        matrices,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_and_fractions_read_at_a_glance() {
        assert_eq!(si(279398.158), "279k");
        assert_eq!(si(679177955.9), "679M");
        assert_eq!(si(5.8e8), "580M");
        assert_eq!(si(12.34), "12.3");
        assert_eq!(si(0.0), "0");
        assert_eq!(percent(337.0 / 819200.0), "0.041 %");
        assert_eq!(percent(0.5), "50 %");
        assert_eq!(percent(0.0), "0");
        assert!(shade(0.0).is_empty());
        assert!(
            shade(1e-4) < shade(1e-2),
            "stronger shade for more weak outcomes"
        );
    }

    /// A run's atomics grid, built from a hand-written results set: rows per shape and
    /// mapping in the catalogue's order, columns per placement and scope that were measured,
    /// each cell the case's weak fraction from its histogram and its verdict, tallies per GPU.
    #[test]
    fn atomics_grid_from_figures_and_verdicts() {
        use crate::figures::{Bin, Spread};
        let case = |id: &str, verdict: VerdictName, status: crate::outcome::CaseStatus| {
            serde_json::from_value::<crate::report::results::StoredCase>(serde_json::json!({
                "id": id, "area": "atomics", "clause": "c", "status": status,
                "verdict": verdict, "duration_s": 0.0
            }))
            .unwrap()
        };
        let control = crate::outcome::ControlRun {
            test: "MP_relaxed".into(),
            instances: 100,
            weak: 0,
        };
        let hist = |weak: u64, strong: u64| {
            vec![
                Figure::Histogram {
                    name: "outcomes".into(),
                    bins: vec![
                        Bin {
                            label: "weak".into(),
                            count: weak,
                            weak: true,
                        },
                        Bin {
                            label: "sc".into(),
                            count: strong,
                            weak: false,
                        },
                    ],
                },
                Figure::Scalar {
                    name: "t weak outcomes/s".into(),
                    unit: "1/s".into(),
                    better: None,
                    value: Spread::exact(2.0),
                },
            ]
        };
        let mut r: crate::report::results::Results = serde_json::from_value(serde_json::json!({
            "gpucts_version": "0", "fingerprint": {"gpu": "H100"}, "cases": []
        }))
        .unwrap();
        let pass = crate::outcome::CaseStatus::pass;
        r.cases = vec![
            case("atomics.gpu.SB.sc.gpu.inter_cta", VerdictName::Pass, pass()),
            case(
                "atomics.gpu.MP.rel_acq.cta.intra_cta",
                VerdictName::Pass,
                crate::outcome::CaseStatus::pass_beside_control("n", control),
            ),
            case(
                "atomics.gpu.MP.relaxed.gpu.inter_cta",
                VerdictName::Pass,
                pass(),
            ),
            case(
                "atomics.gpu.MP.rel_acq.gpu.inter_cta",
                VerdictName::Fail,
                crate::outcome::CaseStatus::fail("0", "1"),
            ),
        ];
        r.figures
            .insert("atomics.gpu.SB.sc.gpu.inter_cta".into(), hist(0, 10));
        r.figures
            .insert("atomics.gpu.MP.rel_acq.cta.intra_cta".into(), hist(0, 8));
        r.figures
            .insert("atomics.gpu.MP.relaxed.gpu.inter_cta".into(), hist(1, 3));
        r.figures
            .insert("atomics.gpu.MP.rel_acq.gpu.inter_cta".into(), hist(2, 2));
        let grids = atomics(&r);
        assert_eq!(grids.len(), 1);
        let g = &grids[0];
        assert_eq!(g.gpu, "H100");
        assert_eq!(
            (g.measured, g.weak_seen, g.failed, g.control_without_weak),
            (4, 2, 1, 1)
        );
        let cols: Vec<(&str, &str)> = g
            .columns
            .iter()
            .map(|c| (c.placement.as_str(), c.scope.as_str()))
            .collect();
        assert_eq!(cols, [("intra_cta", "cta"), ("inter_cta", "gpu")]);
        let rows: Vec<(&str, &str, usize)> = g
            .rows
            .iter()
            .map(|r| (r.shape.as_str(), r.mapping.as_str(), r.shape_span))
            .collect();
        assert_eq!(
            rows,
            [("MP", "rel_acq", 2), ("MP", "relaxed", 0), ("SB", "sc", 1)]
        );
        let mp_rel_acq = &g.rows[0].cells;
        let intra = mp_rel_acq[0].as_ref().unwrap();
        assert!(intra.control_without_weak && !intra.weak_seen);
        let inter = mp_rel_acq[1].as_ref().unwrap();
        assert_eq!(
            (inter.verdict, inter.weak_fraction.as_str()),
            ("fail", "50 %")
        );
        assert_eq!(inter.case, "atomics.gpu.MP.rel_acq.gpu.inter_cta");
        assert!(
            g.rows[1].cells[0].is_none(),
            "MP relaxed was not run at cta"
        );
        assert_eq!(g.rows[1].cells[1].as_ref().unwrap().weak_fraction, "25 %");
    }

    #[test]
    fn atomics_ids_give_shape_mapping_scope_placement() {
        assert_eq!(
            atomics_key("atomics.gpu.2+2W.fence.cta.inter_cta"),
            Some(["2+2W", "fence", "cta", "inter_cta"].map(String::from))
        );
        assert_eq!(
            atomics_key("atomics.gpu.shared.MP.sc.gpu.intra_cta"),
            Some(["MP", "sc", "gpu", "shared"].map(String::from))
        );
        assert_eq!(atomics_key("atomics.mapping.clang.x.y.z"), None);
        assert_eq!(atomics_key("atomics.gpu.MP.sc"), None);
    }
}
