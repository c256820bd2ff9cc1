//! `gpucts merge DIR... -o DIR`: one results set from the results of several nodes (a fleet
//! run, one gpucts per node), with a node × suite matrix and the nodes that differ from the
//! rest (outliers) in the HTML report.
//!
//! A node is named by its results directory's name (`ci/fleet/slurm.sbatch` writes
//! `reports/fleet-<jobid>/<host>/`). Merged cases carry `node`; figures are keyed
//! `<node>/<case id>`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::figures::Figure;
use super::results::group_verdict;
use super::results::{Counts, NodeInfo, Results, VerdictName, SCHEMA_VERSION};

/// The most nodes merged at once.
pub(crate) const MAX_NODES: usize = 4096;

#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    pub verdict: &'static str,
    pub counts: Counts,
}

#[derive(Debug, Clone, Serialize)]
pub struct NodeRow {
    pub name: String,
    pub gpu: String,
    pub driver: String,
    pub cells: Vec<Cell>,
    pub outlier: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct Outlier {
    pub node: String,
    pub case: String,
    pub what: String,
}

/// The node × suite matrix and outliers of a merged results set.
#[derive(Debug, Clone, Serialize)]
pub struct FleetView {
    pub suites: Vec<String>,
    pub nodes: Vec<NodeRow>,
    pub outliers: Vec<Outlier>,
}

fn badness(v: VerdictName) -> u8 {
    match v {
        VerdictName::Pass | VerdictName::StaleWaiver => 0,
        VerdictName::Skip | VerdictName::Waived => 1,
        VerdictName::Flaky => 2,
        VerdictName::Fail | VerdictName::RequiredMissing => 3,
    }
}

/// The most common value; ties go to the smallest by `rank`.
fn modal<T: Ord + Clone>(values: &[T], rank: impl Fn(&T) -> u8) -> Option<T> {
    let mut count: BTreeMap<&T, usize> = BTreeMap::new();
    for v in values {
        *count.entry(v).or_insert(0) += 1;
    }
    count
        .into_iter()
        .max_by(|a, b| a.1.cmp(&b.1).then(rank(b.0).cmp(&rank(a.0))))
        .map(|(v, _)| v.clone())
}

/// The fleet view of a merged set; `None` when it has no nodes.
pub(crate) fn fleet_view(r: &Results) -> Option<FleetView> {
    if r.nodes.is_empty() {
        return None;
    }
    let suites: Vec<String> = r
        .cases
        .iter()
        .map(|c| c.area.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let mut outliers = Vec::new();
    verdict_outliers(r, &mut outliers);
    figure_outliers(r, &mut outliers);
    machine_outliers(r, &mut outliers);
    let flagged: BTreeSet<&str> = outliers.iter().map(|o| o.node.as_str()).collect();
    let nodes = r
        .nodes
        .iter()
        .map(|n| {
            let cells = suites
                .iter()
                .map(|s| {
                    let counts = Counts::of(
                        r.cases
                            .iter()
                            .filter(|c| c.node.as_deref() == Some(&n.name) && &c.area == s),
                    );
                    Cell {
                        verdict: group_verdict(&counts),
                        counts,
                    }
                })
                .collect();
            NodeRow {
                name: n.name.clone(),
                gpu: n.fingerprint.get("gpu").cloned().unwrap_or_default(),
                driver: n.fingerprint.get("driver").cloned().unwrap_or_default(),
                cells,
                outlier: flagged.contains(n.name.as_str()),
            }
        })
        .collect();
    Some(FleetView {
        suites,
        nodes,
        outliers,
    })
}

/// Verdicts: a node whose verdict for a case is not the fleet's most common one.
fn verdict_outliers(r: &Results, outliers: &mut Vec<Outlier>) {
    let mut by_case: BTreeMap<&str, Vec<(&str, VerdictName)>> = BTreeMap::new();
    for c in &r.cases {
        if let Some(n) = &c.node {
            by_case.entry(&c.id).or_default().push((n, c.verdict));
        }
    }
    for (case, list) in &by_case {
        if list.len() < 2 {
            continue;
        }
        let verdicts: Vec<VerdictName> = list.iter().map(|x| x.1).collect();
        let Some(m) = modal(&verdicts, |v| badness(*v)) else {
            continue;
        };
        for (node, v) in list {
            if *v != m {
                outliers.push(Outlier {
                    node: node.to_string(),
                    case: case.to_string(),
                    what: format!("verdict {}; the fleet's is {}", v.as_str(), m.as_str()),
                });
            }
        }
    }
}

/// Figures: a node whose scalar median lies outside every other node's min..=max.
fn figure_outliers(r: &Results, outliers: &mut Vec<Outlier>) {
    // (case, figure) -> (node, min, median, max, unit)
    type NodeValue = (String, f64, f64, f64, String);
    let mut scalars: BTreeMap<(String, String), Vec<NodeValue>> = BTreeMap::new();
    for (key, figs) in &r.figures {
        let Some((node, case)) = key.split_once('/') else {
            continue;
        };
        for f in figs {
            if let Figure::Scalar {
                name, unit, value, ..
            } = f
            {
                scalars
                    .entry((case.to_string(), name.clone()))
                    .or_default()
                    .push((
                        node.to_string(),
                        value.min,
                        value.median,
                        value.max,
                        unit.clone(),
                    ));
            }
        }
    }
    for ((case, name), list) in &scalars {
        if list.len() < 2 {
            continue;
        }
        for (i, (node, _, med, _, unit)) in list.iter().enumerate() {
            let others = list.iter().enumerate().filter(|(j, _)| *j != i);
            let lo = others
                .clone()
                .map(|(_, x)| x.1)
                .fold(f64::INFINITY, f64::min);
            let hi = others.map(|(_, x)| x.3).fold(f64::NEG_INFINITY, f64::max);
            if *med < lo || *med > hi {
                outliers.push(Outlier {
                    node: node.clone(),
                    case: format!("{case}: {name}"),
                    what: format!("median {med} {unit}; the other nodes' range {lo}..{hi}"),
                });
            }
        }
    }
}

/// Machines: a node whose driver, GPU or CUDA is not the fleet's most common.
fn machine_outliers(r: &Results, outliers: &mut Vec<Outlier>) {
    for key in ["driver", "gpu", "cuda"] {
        let values: Vec<String> = r
            .nodes
            .iter()
            .map(|n| n.fingerprint.get(key).cloned().unwrap_or_default())
            .collect();
        if let Some(m) = modal(&values, |_| 0) {
            for (n, v) in r.nodes.iter().zip(&values) {
                if *v != m {
                    outliers.push(Outlier {
                        node: n.name.clone(),
                        case: "(machine)".into(),
                        what: format!("{key} {v}; the fleet's is {m}"),
                    });
                }
            }
        }
    }
}

fn node_name(dir: &Path) -> String {
    let canon = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    canon
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| dir.display().to_string())
}

/// Why node results sets cannot be merged; each names the input (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error("merge: no results directories given")]
    NoInputs,
    #[error("merge: {count} inputs; at most {MAX_NODES} nodes are merged")]
    TooMany { count: usize },
    #[error(transparent)]
    Read(#[from] super::bundle::BundleError),
    #[error("{}: already a merged fleet result; merge the node directories instead", path.display())]
    AlreadyMerged { path: PathBuf },
    #[error("{}: node name `{name}` given twice; node directories need distinct names", path.display())]
    DuplicateNode { path: PathBuf, name: String },
}

/// Merge node results sets; errors name the input (exit 2).
pub fn merge(dirs: &[PathBuf]) -> Result<Results, MergeError> {
    if dirs.is_empty() {
        return Err(MergeError::NoInputs);
    }
    if dirs.len() > MAX_NODES {
        return Err(MergeError::TooMany { count: dirs.len() });
    }
    let mut nodes = Vec::new();
    let mut cases = Vec::new();
    let mut figures: BTreeMap<String, Vec<Figure>> = BTreeMap::new();
    let mut seen = BTreeSet::new();
    let mut fps = Vec::new();
    for d in dirs {
        let r = super::bundle::load_results(d)?;
        if !r.nodes.is_empty() {
            return Err(MergeError::AlreadyMerged { path: d.clone() });
        }
        let name = node_name(d);
        if !seen.insert(name.clone()) {
            return Err(MergeError::DuplicateNode {
                path: d.clone(),
                name,
            });
        }
        for mut c in r.cases {
            c.node = Some(name.clone());
            cases.push(c);
        }
        for (k, v) in r.figures {
            figures.insert(format!("{name}/{k}"), v);
        }
        fps.push(r.fingerprint.clone());
        nodes.push(NodeInfo {
            name,
            fingerprint: r.fingerprint,
            probe: r.probe,
        });
    }
    // The fleet's fingerprint: what every node agrees on.
    let mut common = fps[0].clone();
    common.retain(|k, v| fps.iter().all(|f| f.get(k) == Some(v)));
    Ok(Results {
        schema_version: SCHEMA_VERSION,
        gpucts_version: env!("CARGO_PKG_VERSION").into(),
        fingerprint: common,
        probe: None,
        run: None,
        figures,
        nodes,
        cases,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modal_prefers_the_majority_then_the_better() {
        let v = [VerdictName::Pass, VerdictName::Fail, VerdictName::Pass];
        assert_eq!(modal(&v, |x| badness(*x)), Some(VerdictName::Pass));
        let tie = [VerdictName::Fail, VerdictName::Pass];
        assert_eq!(modal(&tie, |x| badness(*x)), Some(VerdictName::Pass));
    }
}
