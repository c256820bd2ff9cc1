//! The qualification report: one self-contained HTML file (inline CSS and SVG, no scripts, no
//! fetches) rendered from a results set with a minijinja template
//! (`report/templates/report.html`).
//!
//! Sections: first the summary (`report::summary`: the overall verdict, what each area ran and
//! its verdicts, the GPU atomics heatmap per GPU, producer × producer matrices), then the run,
//! the machine (probe), the spec-clause coverage matrix, the failures with expected against
//! observed, flaky cases, waivers with their evidence, skips by missing capability, each case's
//! figures folded under one line, bench curves as plots, and optionally a node × suite matrix
//! (merged fleet results) and a diff against a baseline.

use std::collections::BTreeMap;

use minijinja::Environment;
use serde::Serialize;

use super::diff::Diff;
use super::figures::Figure;
use super::merge::FleetView;
use super::plot;
use super::results::{group_verdict, Counts, Results, StoredCase, VerdictName};
use super::summary::{summary, Summary};
use crate::figures::fmt_num;
use crate::outcome::CaseStatus;

const TEMPLATE: &str = include_str!("templates/report.html");

#[derive(Debug, Serialize)]
struct Row {
    key: String,
    value: String,
}

#[derive(Debug, Serialize)]
struct ClauseRow {
    clause: String,
    counts: Counts,
    cases: Vec<String>,
}

/// One clause of the catalogue against the run's cases.
#[derive(Debug, Serialize)]
struct CatalogueRow {
    id: String,
    summary: String,
    /// `strong`, `weak`, `none`, `untestable` (the catalogue's judgement of the run's cases),
    /// or `not in this run` (the catalogue lists cases, none of them in this run).
    strength: &'static str,
    untestable: Option<String>,
    erratum: Option<String>,
    counts: Counts,
    cases: Vec<String>,
}

/// The catalogue's clauses of one chapter (`ptx-interop-13.2 ch. 2`).
#[derive(Debug, Serialize)]
struct ChapterCoverage {
    chapter: String,
    clauses: Vec<CatalogueRow>,
    /// Clauses with a case that ran (passed, failed, waived or flaky) here.
    checked: usize,
}

/// The coverage section driven by the clause catalogue: the clauses no case checks first,
/// then each chapter's clauses with what their cases did in this run.
#[derive(Debug, Serialize, Default)]
struct CatalogueCoverage {
    gaps: Vec<CatalogueRow>,
    chapters: Vec<ChapterCoverage>,
}

fn catalogue_coverage(
    catalogue: &crate::clauses::Catalogue,
    cases: &[StoredCase],
) -> CatalogueCoverage {
    let verdict: std::collections::HashMap<&str, VerdictName> =
        cases.iter().map(|c| (c.id.as_str(), c.verdict)).collect();
    let verdict_names: std::collections::HashMap<String, String> = cases
        .iter()
        .map(|c| (c.id.clone(), c.verdict.as_str().to_string()))
        .collect();
    let rows = crate::clauses::coverage(
        catalogue,
        cases.iter().map(|c| (c.id.as_str(), c.clause.as_str())),
        Some(&verdict_names),
    );
    let mut out = CatalogueCoverage::default();
    for c in rows {
        let mut counts = Counts::default();
        for k in &c.cases {
            if let Some(v) = verdict.get(k.id.as_str()) {
                counts.add(*v);
            }
        }
        let in_catalogue = catalogue.get(&c.id);
        let gap = in_catalogue.is_some_and(|k| k.cases.is_empty() && k.untestable.is_none());
        // The catalogue lists cases this run did not select: not a gap, just not run here.
        let strength = if c.strength == "none" && !gap {
            "not in this run"
        } else if (c.strength == "strong" || c.strength == "weak") && c.judged_in_run == Some(false)
        {
            // Cases ran here, but every one was skipped or waived: no evidence in this run.
            "skipped or waived here"
        } else {
            c.strength
        };
        let row = CatalogueRow {
            id: c.id,
            summary: c.summary,
            strength,
            untestable: c.untestable,
            erratum: c.erratum,
            counts,
            cases: shown_cases(c.cases.into_iter().map(|k| k.id).collect()),
        };
        if gap && row.cases.is_empty() {
            out.gaps.push(row);
            continue;
        }
        match out.chapters.iter_mut().find(|d| d.chapter == c.chapter) {
            Some(d) => d.clauses.push(row),
            None => out.chapters.push(ChapterCoverage {
                chapter: c.chapter,
                clauses: vec![row],
                checked: 0,
            }),
        }
    }
    for d in &mut out.chapters {
        d.checked = d.clauses.iter().filter(|c| ran(&c.counts)).count();
    }
    out
}

/// A clause's case ids as the page shows them: the first few, then how many more (a clause
/// of the whole run can list thousands; `gpucts coverage --json` lists them all).
fn shown_cases(mut ids: Vec<String>) -> Vec<String> {
    const SHOWN: usize = 12;
    if ids.len() > SHOWN {
        let more = ids.len() - SHOWN;
        ids.truncate(SHOWN);
        ids.push(format!(
            "… and {more} more (gpucts coverage --json RESULTS lists them)"
        ));
    }
    ids
}

fn ran(c: &Counts) -> bool {
    c.passed + c.failed + c.flaky + c.waived > 0
}

#[derive(Debug, Serialize)]
struct DocCoverage {
    document: String,
    clauses: Vec<ClauseRow>,
    checked: usize,
}

#[derive(Debug, Serialize)]
struct FailureRow {
    id: String,
    node: Option<String>,
    clause: String,
    origin: String,
    kind: String,
    expected: String,
    observed: String,
    detail: String,
}

#[derive(Debug, Serialize)]
struct WaivedCase {
    id: String,
    evidence: String,
}

#[derive(Debug, Serialize)]
struct WaiverRow {
    id: String,
    reason: String,
    pattern: String,
    platform: String,
    cases: Vec<WaivedCase>,
    stale: Vec<String>,
}

#[derive(Debug, Serialize)]
struct FlakyRow {
    id: String,
    attempts: Vec<String>,
}

#[derive(Debug, Serialize)]
struct SkipRow {
    capability: String,
    count: usize,
    reason: String,
    /// What provides the capability (empty for a name this gpucts does not know).
    remedy: String,
}

#[derive(Debug, Serialize)]
struct FigureRow {
    label: String,
    min: String,
    median: String,
    max: String,
}

#[derive(Debug, Serialize)]
struct FigureBlock {
    case: String,
    name: String,
    kind: &'static str,
    /// The y unit (the table's min / median / max); empty for histograms (counts).
    unit: String,
    svg: Option<String>,
    error: Option<String>,
    rows: Vec<FigureRow>,
}

/// One bar of an outcome histogram, drawn as an HTML bar (a plot per case is most of a
/// report's size: 13 KB each, 6.4 MB for a 468-case GPU run).
#[derive(Debug, Serialize)]
struct BinRow {
    label: String,
    count: u64,
    weak: bool,
    /// The bar's width, in percent of the largest bin.
    width: String,
    /// The bin's share of all instances, as text.
    share: String,
}

#[derive(Debug, Serialize)]
struct HistBlock {
    name: String,
    total: u64,
    bins: Vec<BinRow>,
}

/// One number of a case; `spread` is `min..max`, empty when the figure has one sample.
#[derive(Debug, Serialize)]
struct ScalarRow {
    name: String,
    unit: String,
    median: String,
    spread: String,
}

/// Every figure of one case, folded under one line.
#[derive(Debug, Serialize)]
struct CaseFigures {
    case: String,
    /// What is inside the fold (`1 histogram, 2 numbers`).
    brief: String,
    /// The case's tags (`control-without-weak-outcomes`), shown beside its id.
    tags: Vec<String>,
    histograms: Vec<HistBlock>,
    scalars: Vec<ScalarRow>,
    /// Curves keep their plot.
    series: Vec<FigureBlock>,
}

#[derive(Debug, Serialize)]
struct Page {
    title: String,
    generated: String,
    gpucts_version: String,
    schema_version: u32,
    command_line: String,
    started: String,
    git: String,
    suites_used: Vec<Row>,
    verdict: &'static str,
    counts: Counts,
    /// Passes tagged `control-without-weak-outcomes`.
    control_without_weak: usize,
    require_weak_controls: bool,
    /// Forbidden litmus passes per placement, evidenced by their control or not
    /// (`gpucts_results::teeth`).
    teeth: Vec<String>,
    /// The run was stopped: the selected cases it did not run.
    not_run: Vec<String>,
    incomplete: bool,
    machine: Vec<Row>,
    toolchain: Vec<Row>,
    capabilities: Vec<Row>,
    /// Clauses the catalogue holds (the shipped one, built into this binary).
    catalogue: CatalogueCoverage,
    /// Cited clauses the catalogue does not hold (results of an older gpucts, own suites).
    coverage: Vec<DocCoverage>,
    failures: Vec<FailureRow>,
    flaky: Vec<FlakyRow>,
    waivers: Vec<WaiverRow>,
    skips: Vec<SkipRow>,
    summary: Summary,
    /// The figures of the cases (bench pseudo-cases aside), one fold per case.
    case_figures: Vec<CaseFigures>,
    figure_count: usize,
    /// The figures of `gpucts bench` pseudo-cases (`bench.*`, also `<node>/bench.*`).
    bench: Vec<FigureBlock>,
    fleet: Option<FleetView>,
    diff: Option<Diff>,
}

fn json_str(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn machine_rows(r: &Results) -> (Vec<Row>, Vec<Row>, Vec<Row>) {
    let mut machine = Vec::new();
    let mut toolchain = Vec::new();
    let mut caps = Vec::new();
    let row = |k: &str, v: String| Row {
        key: k.into(),
        value: v,
    };
    match &r.probe {
        Some(p) => {
            if let Some(h) = p.get("host") {
                for k in ["os", "kernel", "arch", "cpu", "cpus"] {
                    if let Some(v) = h.get(k) {
                        machine.push(row(k, json_str(v)));
                    }
                }
            }
            match p.get("driver") {
                Some(d) if d.get("Ok").is_some() => {
                    let d = &d["Ok"];
                    machine.push(row("cuda", json_str(&d["cuda_version"])));
                    machine.push(row("driver", json_str(&d["driver_version"])));
                    if let Some(gpus) = d.get("gpus").and_then(|g| g.as_array()) {
                        for (i, g) in gpus.iter().enumerate() {
                            machine.push(row(
                                &format!("gpu {i}"),
                                format!(
                                    "{} (compute {}, {})",
                                    json_str(&g["name"]),
                                    json_str(&g["compute_capability"]),
                                    json_str(&g["uuid"])
                                ),
                            ));
                        }
                    }
                }
                Some(d) => machine.push(row("gpu", format!("none: {}", json_str(&d["Err"])))),
                None => {}
            }
            for (k, key) in [("kmod", "kernel module"), ("rdma", "rdma")] {
                if let Some(v) = p.get(k) {
                    let text = match (v.get("Ok"), v.get("Err")) {
                        (Some(ok), _) => json_str(ok),
                        (_, Some(e)) => format!("none: {}", json_str(e)),
                        _ => json_str(v),
                    };
                    machine.push(row(key, text));
                }
            }
            if let Some(t) = p.get("toolchain").and_then(|t| t.as_object()) {
                for (name, c) in t {
                    let text = match c.get("missing") {
                        Some(m) => format!("missing: {}", json_str(m)),
                        None => format!(
                            "{} ({}) {}",
                            json_str(&c["version"]),
                            json_str(&c["origin"]),
                            json_str(&c["path"])
                        ),
                    };
                    toolchain.push(row(name, text));
                }
            }
            if let Some(cs) = p.get("capabilities").and_then(|c| c.as_object()) {
                for (name, c) in cs {
                    let present = c.get("present").and_then(|b| b.as_bool()).unwrap_or(false);
                    let text = if present {
                        format!("present: {}", json_str(&c["detail"]))
                    } else {
                        format!("absent: {}", json_str(&c["reason"]))
                    };
                    caps.push(row(name, text));
                }
            }
        }
        None => {
            for (k, v) in &r.fingerprint {
                machine.push(row(k, v.clone()));
            }
        }
    }
    (machine, toolchain, caps)
}

/// Splits "ptx-interop 13.2 §2.3" (or "ptx-interop 13.2 ch. 4 (…)") into its document (the
/// spec's name and version) and its section numbers, for grouping and a numeric order (§2.10
/// after §2.9).
fn clause_key(clause: &str) -> (String, Vec<u64>, String) {
    let mut words = clause.split_whitespace();
    let mut doc = words.next().unwrap_or("").to_string();
    let rest: Vec<&str> = words.collect();
    let mut from = 0;
    if let Some(v) = rest.first() {
        if v.chars().all(|c| c.is_ascii_digit() || c == '.') && !v.is_empty() {
            doc = format!("{doc} {v}");
            from = 1;
        }
    }
    let nums = rest[from..]
        .join(" ")
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .filter_map(|s| s.parse().ok())
        .collect();
    (doc, nums, clause.to_string())
}

fn coverage<'a>(cases: impl IntoIterator<Item = &'a StoredCase>) -> Vec<DocCoverage> {
    type ClauseKey = (String, Vec<u64>, String);
    let mut by: BTreeMap<ClauseKey, (Counts, Vec<String>)> = BTreeMap::new();
    for c in cases {
        let e = by.entry(clause_key(&c.clause)).or_default();
        e.0.add(c.verdict);
        e.1.push(c.id.clone());
    }
    let mut docs: Vec<DocCoverage> = Vec::new();
    for ((doc, _, clause), (counts, mut ids)) in by {
        ids.sort();
        ids.dedup();
        let row = ClauseRow {
            clause,
            counts,
            cases: ids,
        };
        match docs.last_mut() {
            Some(d) if d.document == doc => d.clauses.push(row),
            _ => docs.push(DocCoverage {
                document: doc,
                clauses: vec![row],
                checked: 0,
            }),
        }
    }
    for d in &mut docs {
        d.checked = d.clauses.iter().filter(|c| ran(&c.counts)).count();
    }
    docs
}

fn failure_kind(s: &CaseStatus) -> (&'static str, String, String, String) {
    match s {
        CaseStatus::Fail {
            expected,
            observed,
            detail,
            ..
        } => ("fail", expected.clone(), observed.clone(), detail.clone()),
        CaseStatus::Error { message } => (
            "error",
            "the check to run".into(),
            message.clone(),
            String::new(),
        ),
        CaseStatus::Crash { how, output } => (
            "crash",
            "the isolated child to report".into(),
            how.clone(),
            output.clone(),
        ),
        CaseStatus::Timeout { after_s, output } => (
            "timeout",
            "the isolated child to finish".into(),
            format!("killed after {after_s:.1} s"),
            output.clone(),
        ),
        CaseStatus::Skip { capability, reason } => (
            "required-capability",
            format!("capability {capability} (named in --require)"),
            reason.clone(),
            String::new(),
        ),
        CaseStatus::Pass { .. } => ("pass", String::new(), String::new(), String::new()),
    }
}

/// Whether figures keyed `case` come from `gpucts bench` (`bench.…` or `<node>/bench.…`).
fn is_bench(case: &str) -> bool {
    case.rsplit('/')
        .next()
        .is_some_and(|id| id.starts_with("bench."))
}

fn figure_block(case: &str, f: &Figure) -> FigureBlock {
    let (kind, svg, rows) = match f {
        Figure::Histogram { name, bins } => (
            "histogram",
            Some(plot::histogram(name, bins)),
            bins.iter()
                .map(|b| FigureRow {
                    label: format!("{}{}", b.label, if b.weak { " (weak)" } else { "" }),
                    min: String::new(),
                    median: b.count.to_string(),
                    max: String::new(),
                })
                .collect(),
        ),
        Figure::Scalar { unit, value, .. } => (
            "scalar",
            None,
            vec![FigureRow {
                label: unit.clone(),
                min: fmt_num(value.min),
                median: fmt_num(value.median),
                max: fmt_num(value.max),
            }],
        ),
        Figure::Series {
            name,
            x_unit,
            unit,
            points,
            ..
        } => (
            "series",
            Some(plot::series(name, x_unit, unit, points)),
            points
                .iter()
                .map(|p| FigureRow {
                    label: format!("{} {x_unit}", fmt_num(p.x)),
                    min: fmt_num(p.y.min),
                    median: fmt_num(p.y.median),
                    max: fmt_num(p.y.max),
                })
                .collect(),
        ),
    };
    let (svg, error) = match svg {
        Some(Ok(s)) => (Some(s), None),
        Some(Err(e)) => (None, Some(e.to_string())),
        None => (None, None),
    };
    let unit = match f {
        Figure::Histogram { .. } => String::new(),
        Figure::Scalar { unit, .. } | Figure::Series { unit, .. } => unit.clone(),
    };
    FigureBlock {
        case: case.to_string(),
        name: f.name().to_string(),
        kind,
        unit,
        svg,
        error,
        rows,
    }
}

fn bench_blocks(r: &Results) -> Vec<FigureBlock> {
    r.figures
        .iter()
        .filter(|(case, _)| is_bench(case))
        .flat_map(|(case, figs)| figs.iter().map(|f| figure_block(case, f)))
        .collect()
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The figures of the cases (not the bench curves), one fold per case: histograms as HTML
/// bars, numbers in one table (min..max only where there was a spread), curves plotted.
fn case_figures(r: &Results) -> Vec<CaseFigures> {
    let mut out = Vec::new();
    // Figures are keyed by id, or `<node>/<id>` in merged fleet results.
    let tags: BTreeMap<String, &[String]> = r
        .cases
        .iter()
        .map(|c| {
            let key = match &c.node {
                Some(n) => format!("{n}/{}", c.id),
                None => c.id.clone(),
            };
            (key, c.status.tags())
        })
        .collect();
    for (case, figs) in r.figures.iter().filter(|(case, _)| !is_bench(case)) {
        let mut c = CaseFigures {
            case: case.clone(),
            brief: String::new(),
            tags: tags.get(case).map(|t| t.to_vec()).unwrap_or_default(),
            histograms: Vec::new(),
            scalars: Vec::new(),
            series: Vec::new(),
        };
        for f in figs {
            match f {
                Figure::Histogram { name, bins } => {
                    let total: u64 = bins.iter().map(|b| b.count).sum();
                    let top = bins.iter().map(|b| b.count).max().unwrap_or(0).max(1);
                    c.histograms.push(HistBlock {
                        name: name.clone(),
                        total,
                        bins: bins
                            .iter()
                            .map(|b| BinRow {
                                label: b.label.clone(),
                                count: b.count,
                                weak: b.weak,
                                width: format!("{:.1}", b.count as f64 * 100.0 / top as f64),
                                share: if total > 0 {
                                    fmt_num(b.count as f64 * 100.0 / total as f64) + " %"
                                } else {
                                    String::new()
                                },
                            })
                            .collect(),
                    });
                }
                Figure::Scalar {
                    name, unit, value, ..
                } => c.scalars.push(ScalarRow {
                    name: name.clone(),
                    unit: unit.clone(),
                    median: fmt_num(value.median),
                    spread: if value.min < value.max {
                        format!("{}..{}", fmt_num(value.min), fmt_num(value.max))
                    } else {
                        String::new()
                    },
                }),
                Figure::Series { .. } => c.series.push(figure_block(case, f)),
            }
        }
        let mut parts = Vec::new();
        for (n, one, many) in [
            (c.histograms.len(), "histogram", "histograms"),
            (c.scalars.len(), "number", "numbers"),
            (c.series.len(), "curve", "curves"),
        ] {
            if n > 0 {
                parts.push(plural(n, one, many));
            }
        }
        c.brief = parts.join(", ");
        out.push(c);
    }
    out
}

fn waivers(r: &Results) -> Vec<WaiverRow> {
    let mut rows: BTreeMap<String, WaiverRow> = BTreeMap::new();
    let records = r.run.as_ref().map(|x| x.waivers.as_slice()).unwrap_or(&[]);
    // A case several waivers excused together names them `W-A+W-B`: it is listed under each.
    for (c, w) in r.cases.iter().flat_map(|c| {
        c.waiver
            .iter()
            .flat_map(|w| w.split('+'))
            .map(move |w| (c, w.to_string()))
    }) {
        let w = &w;
        let row = rows.entry(w.clone()).or_insert_with(|| {
            let rec = records.iter().find(|x| &x.id == w);
            WaiverRow {
                id: w.clone(),
                reason: rec.map(|x| x.reason.clone()).unwrap_or_default(),
                pattern: rec.map(|x| x.cases.clone()).unwrap_or_default(),
                platform: rec
                    .map(|x| {
                        x.platform
                            .iter()
                            .map(|(k, v)| format!("{k}={v}"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    })
                    .unwrap_or_default(),
                cases: Vec::new(),
                stale: Vec::new(),
            }
        });
        match c.verdict {
            VerdictName::StaleWaiver => row.stale.push(c.id.clone()),
            _ => row.cases.push(WaivedCase {
                id: c.id.clone(),
                evidence: c.status.summary(),
            }),
        }
    }
    rows.into_values().collect()
}

fn skips(cases: &[StoredCase]) -> Vec<SkipRow> {
    let mut by: BTreeMap<String, SkipRow> = BTreeMap::new();
    for c in cases {
        if let (VerdictName::Skip, CaseStatus::Skip { capability, reason }) = (c.verdict, &c.status)
        {
            let e = by.entry(capability.to_string()).or_insert_with(|| SkipRow {
                capability: capability.to_string(),
                count: 0,
                reason: reason.clone(),
                remedy: capability.hint().to_string(),
            });
            e.count += 1;
        }
    }
    // Most skipped first: the install that unlocks most of the suite leads.
    let mut rows: Vec<SkipRow> = by.into_values().collect();
    rows.sort_by(|a, b| b.count.cmp(&a.count).then(a.capability.cmp(&b.capability)));
    rows
}

/// Why the report page could not be rendered (the template is compiled in, so a bug).
#[derive(Debug, thiserror::Error)]
pub enum HtmlError {
    #[error("report template: {0}")]
    Template(minijinja::Error),
    #[error("cannot render the report: {0}")]
    Render(minijinja::Error),
}

/// Render the report for `r`; `fleet` and `diff` add their sections when given.
pub fn render(
    r: &Results,
    fleet: Option<FleetView>,
    diff: Option<Diff>,
) -> Result<String, HtmlError> {
    let counts = Counts::of(&r.cases);
    let failures = r
        .cases
        .iter()
        .filter(|c| c.verdict.is_failure())
        .map(|c| {
            let (kind, expected, observed, detail) = failure_kind(&c.status);
            FailureRow {
                id: c.id.clone(),
                node: c.node.clone(),
                clause: c.clause.clone(),
                origin: c.origin.clone(),
                kind: kind.into(),
                expected,
                observed,
                detail,
            }
        })
        .collect();
    let flaky = r
        .cases
        .iter()
        .filter(|c| c.verdict == VerdictName::Flaky)
        .map(|c| FlakyRow {
            id: c.id.clone(),
            attempts: c
                .attempts
                .iter()
                .map(|a| a.summary())
                .chain(std::iter::once(c.status.summary()))
                .collect(),
        })
        .collect();
    let (machine, toolchain, capabilities) = machine_rows(r);
    let run = r.run.clone().unwrap_or_default();
    // A bench pseudo-case's figures get their own section; a merged set keys them `<node>/<id>`.
    let bench = bench_blocks(r);
    let case_figures = case_figures(r);
    let figure_count = r
        .figures
        .iter()
        .filter(|(c, _)| !is_bench(c))
        .map(|(_, f)| f.len())
        .sum();
    let page = Page {
        title: format!(
            "gpucts qualification report: {}",
            match r.fingerprint.get("gpu").map(String::as_str) {
                Some("none") => "no GPU",
                Some(g) => g,
                None if !r.nodes.is_empty() => "fleet",
                None => "unknown GPU",
            }
        ),
        generated: time::OffsetDateTime::now_utc()
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default(),
        gpucts_version: r.gpucts_version.clone(),
        schema_version: r.schema_version,
        command_line: run.command_line.join(" "),
        started: run.started.clone(),
        git: run.git.clone().unwrap_or_default(),
        suites_used: run
            .suites
            .iter()
            .chain(run.waiver_files.iter())
            .map(|f| Row {
                key: f.path.clone(),
                value: f.sha256.clone(),
            })
            .collect(),
        verdict: group_verdict(&counts),
        counts,
        control_without_weak: r
            .cases
            .iter()
            .filter(|c| {
                c.verdict.is_pass()
                    && c.status
                        .has_tag(crate::outcome::CONTROL_WITHOUT_WEAK_OUTCOMES)
            })
            .count(),
        require_weak_controls: run.require_weak_controls,
        incomplete: run.incomplete,
        not_run: run.not_run.clone(),
        teeth: gpucts_results::teeth::teeth_lines(&gpucts_results::teeth::teeth(
            r.cases.iter().map(|c| (c.id.as_str(), &c.status)),
        )),
        machine,
        toolchain,
        capabilities,
        catalogue: crate::clauses::Catalogue::embedded()
            .map(|cat| catalogue_coverage(cat, &r.cases))
            .unwrap_or_default(),
        coverage: coverage(r.cases.iter().filter(|c| {
            crate::clauses::Catalogue::embedded()
                .is_none_or(|cat| cat.check_citation(&c.clause).is_err())
        })),
        failures,
        flaky,
        waivers: waivers(r),
        skips: skips(&r.cases),
        summary: summary(r),
        case_figures,
        figure_count,
        bench,
        fleet,
        diff,
    };
    let mut env = Environment::new();
    env.add_template("report.html", TEMPLATE)
        .map_err(HtmlError::Template)?;
    let tmpl = env
        .get_template("report.html")
        .map_err(HtmlError::Template)?;
    tmpl.render(minijinja::Value::from_serialize(&page))
        .map_err(HtmlError::Render)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clauses_order_numerically_within_a_document() {
        let mut v = [
            clause_key("ptx-interop 13.2 §2.10"),
            clause_key("ptx-interop 13.2 §2.9"),
            clause_key("gpudirect-rdma §3.5"),
            clause_key("ptx-interop 13.2 ch. 4 (relaxed mappings)"),
        ];
        v.sort();
        let names: Vec<&str> = v.iter().map(|k| k.2.as_str()).collect();
        assert_eq!(
            names,
            [
                "gpudirect-rdma §3.5",
                "ptx-interop 13.2 §2.9",
                "ptx-interop 13.2 §2.10",
                "ptx-interop 13.2 ch. 4 (relaxed mappings)"
            ]
        );
        assert!(v.iter().skip(1).all(|k| k.0 == "ptx-interop 13.2"));
    }

    /// The report shows passes on a control without weak outcomes: the summary line, the
    /// heatmap's count and mark (on the tagged cell only), the literature it rests on, and
    /// the tag beside the case's figures.
    #[test]
    fn the_report_marks_passes_on_a_control_without_weak_outcomes() {
        use super::super::figures::Bin;
        use crate::outcome::ControlRun;
        let case = |id: &str, weak: u64| StoredCase {
            id: id.into(),
            area: "atomics".into(),
            clause: "c".into(),
            origin: String::new(),
            status: CaseStatus::pass_beside_control(
                "n",
                ControlRun {
                    test: "MP.relaxed.cta.intra_cta".into(),
                    instances: 100,
                    weak,
                },
            ),
            verdict: VerdictName::Pass,
            waiver: None,
            duration_s: 0.0,
            attempts: vec![],
            node: None,
            device: None,
        };
        let quiet = "atomics.gpu.MP.rel_acq.cta.intra_cta";
        let busy = "atomics.gpu.MP.rel_acq.cta.inter_cta";
        let hist = || {
            vec![Figure::Histogram {
                name: "outcomes".into(),
                bins: vec![Bin {
                    label: "(P1:r0=0, P1:r1=0)".into(),
                    count: 100,
                    weak: false,
                }],
            }]
        };
        let r = Results {
            schema_version: 2,
            gpucts_version: "0".into(),
            fingerprint: [("gpu".to_string(), "NVIDIA H200".to_string())].into(),
            probe: None,
            run: None,
            figures: [(quiet.to_string(), hist()), (busy.to_string(), hist())].into(),
            nodes: vec![],
            cases: vec![case(quiet, 0), case(busy, 7)],
        };
        let s = summary(&r);
        assert_eq!(s.atomics.len(), 1);
        assert_eq!(s.atomics[0].control_without_weak, 1);
        let marked: Vec<&str> = s.atomics[0]
            .rows
            .iter()
            .flat_map(|row| row.cells.iter().flatten())
            .filter(|c| c.control_without_weak)
            .map(|c| c.case.as_str())
            .collect();
        assert_eq!(marked, [quiet]);
        let page = render(&r, None, None).unwrap();
        assert!(
            page.contains("2 passed, 1 of them with a control that showed no weak outcome"),
            "{page}"
        );
        assert!(page.contains("ASPLOS 2015"), "{page}");
        // Per placement: the inter-CTA pass is evidenced, the intra-CTA one is labelled.
        assert!(
            page.contains("<li>forbidden litmus passes evidenced by a control that showed weak outcomes: inter_cta 1</li>"),
            "{page}"
        );
        assert!(page.contains("not evidence): intra_cta 1</li>"), "{page}");
        assert_eq!(page.matches(r#"<span class="cw">"#).count(), 1, "{page}");
        assert_eq!(
            page.matches(r#"<span class="tag">control-without-weak-outcomes</span>"#)
                .count(),
            1,
            "{page}"
        );
    }

    /// The coverage section comes from the catalogue built into the binary: a case citing a
    /// catalogued clause counts under that clause's chapter, the clauses no case checks are
    /// listed first (the catalogue's own gaps, read here from the catalogue file), and a
    /// clause the catalogue does not hold still shows, apart.
    #[test]
    fn coverage_section_follows_the_clause_catalogue() {
        // the shipped catalogue with one clause no case cites, so that a gap is listed
        let shipped = crate::data::embedded_file(crate::clauses::CATALOGUE)
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .expect("the shipped catalogue");
        let gap_id = "ptx-interop-13.2 §1.1 a clause no case checks";
        let with_gap = format!(
            "{shipped}\n  - id: \"{gap_id}\"\n    summary: a clause added by this test.\n    cases: []\n"
        );
        let cat = &crate::clauses::Catalogue::parse(
            std::path::Path::new(crate::clauses::CATALOGUE),
            &with_gap,
        )
        .expect("the shipped catalogue and one more clause parse");
        let case = |id: &str, clause: &str, verdict| StoredCase {
            id: id.into(),
            area: "abi".into(),
            clause: clause.into(),
            origin: String::new(),
            status: CaseStatus::pass(),
            verdict,
            waiver: None,
            duration_s: 0.0,
            attempts: vec![],
            node: None,
            device: None,
        };
        let cited = "ptx-interop-13.2 §1.1 sizes and alignments";
        assert!(cat.get(cited).is_some());
        let r = Results {
            schema_version: 2,
            gpucts_version: "0".into(),
            fingerprint: Default::default(),
            probe: None,
            run: None,
            figures: Default::default(),
            nodes: vec![],
            cases: vec![
                case("my.a", &format!("{cited} (detail)"), VerdictName::Pass),
                case("my.b", cited, VerdictName::Fail),
                case("my.c", "my own clause 9", VerdictName::Pass),
                case("my.d", "ptx-interop-13.2 §1.1 .b8", VerdictName::Skip),
                case(
                    "my.e",
                    "ptx-interop-13.2 §1.1 .b8 (other)",
                    VerdictName::Waived,
                ),
            ],
        };
        let cov = catalogue_coverage(cat, &r.cases);
        let row_of = |id: &str| {
            cov.chapters
                .iter()
                .flat_map(|d| &d.clauses)
                .find(|c| c.id == id)
                .unwrap_or_else(|| panic!("{id} has a row"))
        };
        let row = row_of(cited);
        assert_eq!(row.cases, ["my.a", "my.b"]);
        assert_eq!((row.counts.passed, row.counts.failed), (1, 1));
        let gaps: Vec<&str> = cat
            .clauses()
            .iter()
            .filter(|c| c.untestable.is_none() && c.cases.is_empty())
            .map(|c| c.id.as_str())
            .collect();
        // The shipped catalogue's own gaps, then the one this test adds.
        assert_eq!(gaps.last(), Some(&gap_id));
        let listed: Vec<&str> = cov.gaps.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(
            listed, gaps,
            "the catalogue's gaps, and only they, come first"
        );
        // A clause this run did not reach.
        let other = row_of("ptx-interop-13.2 §1.1 pointer size");
        assert_eq!(other.strength, "not in this run");
        // Its only cases here were skipped and waived: no evidence in this run.
        let unjudged = row_of("ptx-interop-13.2 §1.1 .b8");
        assert_eq!(unjudged.strength, "skipped or waived here");
        // the page renders the shipped catalogue: its gaps, if any, before the chapters
        let page = render(&r, None, None).unwrap();
        let chapter_at = page.find(cited).expect("cited clause");
        let shipped_gaps = crate::clauses::Catalogue::embedded()
            .expect("the shipped catalogue parses")
            .clauses()
            .iter()
            .filter(|c| c.untestable.is_none() && c.cases.is_empty())
            .count();
        match page.find("Clauses no case checks") {
            Some(gaps_at) => assert!(shipped_gaps > 0 && gaps_at < chapter_at),
            None => assert_eq!(shipped_gaps, 0, "gaps but no gaps heading"),
        }
        assert!(page.contains("Cited clauses not in the catalogue"));
        assert!(page.contains("my own clause 9"));
    }
}
