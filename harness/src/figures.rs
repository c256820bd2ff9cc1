//! Figures a case measured (litmus outcome histograms and weak rates, bench throughput, pin
//! latency, bandwidth per size), carried in `results.json` under `figures` and plotted by the
//! HTML report. A case records them in its context (`CaseContext::record`); they come back
//! with its status (`runner::Executed`, an isolated child's result document) and travel in its
//! `CaseResult` to the reports.
//!
//! Every measured number keeps its spread (`min`, `median`, `max` over the repetitions the
//! case made), so `gpucts diff` can tell a change from noise.

// The figure types are the results.json schema's (`gpucts_results::figure`).
pub use gpucts_results::figure::{Better, Bin, Figure, Point, Spread};

/// What one block of `gpucts bench` measured. `gpucts bench AREA --results DIR` records each
/// block as a pseudo-case `bench.<name>` (area `bench`) with its figures, so `gpucts report`,
/// `diff`, `bundle` and `merge` read bench runs as any other results set.
#[derive(Debug, Clone)]
pub struct BenchBlock {
    /// `<area>.<what>`, e.g. `abi.clang`, `gpudirect.pin`.
    pub name: String,
    /// What was measured, for the report (cited as the pseudo-case's clause).
    pub what: String,
    /// Why the block could not run here: the missing capability and the reason.
    pub skipped: Option<(crate::capability::Capability, String)>,
    pub figures: Vec<Figure>,
    /// The lines `gpucts bench` prints for this block.
    pub text: String,
    /// Seconds the block took.
    pub secs: f64,
}

impl BenchBlock {
    /// A block that could not run: `capability` is missing (`reason` says how).
    pub fn skip(
        name: &str,
        what: &str,
        capability: crate::capability::Capability,
        reason: impl Into<String>,
    ) -> BenchBlock {
        let reason = reason.into();
        BenchBlock {
            name: name.into(),
            what: what.into(),
            text: format!("{name}: skipped ({}: {reason})\n", capability.name()),
            skipped: Some((capability, reason)),
            figures: Vec::new(),
            secs: 0.0,
        }
    }
}

/// A curve from `(x, samples)` pairs; points whose samples are empty or hold a NaN are left
/// out (nothing measured there).
pub fn series(
    name: &str,
    x_unit: &str,
    unit: &str,
    better: Option<Better>,
    samples: &[(f64, Vec<f64>)],
) -> Figure {
    Figure::Series {
        name: name.into(),
        x_unit: x_unit.into(),
        unit: unit.into(),
        better,
        points: samples
            .iter()
            .filter_map(|(x, ys)| Spread::of(ys).map(|y| Point { x: *x, y }))
            .collect(),
    }
}

/// A figure's number as reports print it: whole numbers in full, others to four places or in
/// scientific notation.
pub(crate) fn fmt_num(x: f64) -> String {
    // Whole numbers (sizes in bytes, counts) in full: 1048576, not 1.0486e6.
    if x.fract() == 0.0 && x.abs() < 1e15 {
        return format!("{x:.0}");
    }
    if x == 0.0 || (1e-3..1e6).contains(&x.abs()) {
        let s = format!("{x:.4}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        format!("{x:.4e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_is_min_median_max() {
        let s = Spread::of(&[3.0, 1.0, 2.0, 10.0]).unwrap();
        assert_eq!((s.min, s.median, s.max), (1.0, 2.5, 10.0));
        let s = Spread::of(&[5.0, 1.0, 3.0]).unwrap();
        assert_eq!(s.median, 3.0);
        assert!(Spread::of(&[]).is_none());
        assert!(Spread::of(&[1.0, f64::NAN]).is_none());
    }

    #[test]
    fn series_keeps_only_measured_points() {
        // 4096: three samples; 65536: none (nothing measured there); 1 MiB: a NaN sample.
        let f = series(
            "pin latency",
            "bytes",
            "µs",
            Some(Better::Lower),
            &[
                (4096.0, vec![12.0, 10.0, 11.0]),
                (65536.0, vec![]),
                (1048576.0, vec![1.0, f64::NAN]),
            ],
        );
        let Figure::Series { points, better, .. } = f else {
            panic!("a series")
        };
        assert_eq!(better, Some(Better::Lower));
        assert_eq!(
            points,
            vec![Point {
                x: 4096.0,
                y: Spread {
                    min: 10.0,
                    median: 11.0,
                    max: 12.0
                }
            }]
        );
    }

    #[test]
    fn figure_json_shape() {
        let f = Figure::Scalar {
            name: "weak rate".into(),
            unit: "per 1e6".into(),
            better: None,
            value: Spread::exact(2.0),
        };
        let j = serde_json::to_value(&f).unwrap();
        assert_eq!(
            j,
            serde_json::json!({"kind": "scalar", "name": "weak rate", "unit": "per 1e6",
                "min": 2.0, "median": 2.0, "max": 2.0})
        );
        let back: Figure = serde_json::from_value(j).unwrap();
        assert_eq!(back, f);
    }
}
