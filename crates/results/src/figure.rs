//! Figures a case measured (litmus outcome histograms and weak rates, bench throughput, pin
//! latency, bandwidth per size), as `results.json` carries them under `figures` and the HTML
//! report plots them.
//!
//! Every measured number keeps its spread (`min`, `median`, `max` over the repetitions the
//! case made), so `gpucts diff` can tell a change from noise.

use serde::{Deserialize, Serialize};

/// Which way a figure improves; `None` when neither direction is a regression (a litmus weak
/// rate: the model allows the weak outcome, the rate says how hard the stress pushed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Better {
    Higher,
    Lower,
}

/// One measured number with its spread over repetitions.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    pub min: f64,
    pub median: f64,
    pub max: f64,
}

impl Spread {
    /// The spread of some samples; `None` for no samples or a NaN among them.
    pub fn of(samples: &[f64]) -> Option<Spread> {
        if samples.is_empty() || samples.iter().any(|x| x.is_nan()) {
            return None;
        }
        let mut v = samples.to_vec();
        v.sort_by(|a, b| a.total_cmp(b));
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        Some(Spread {
            min: v[0],
            median,
            max: v[n - 1],
        })
    }

    /// A single sample (no repetitions: the noise band is the value itself).
    pub fn exact(x: f64) -> Spread {
        Spread {
            min: x,
            median: x,
            max: x,
        }
    }

    /// Whether the numbers are ordered `min <= median <= max` and finite.
    pub fn is_sane(&self) -> bool {
        self.min.is_finite()
            && self.median.is_finite()
            && self.max.is_finite()
            && self.min <= self.median
            && self.median <= self.max
    }
}

/// One bar of a histogram (a litmus outcome and how often it was seen).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bin {
    pub label: String,
    pub count: u64,
    /// The outcome is the test's weak (relaxed) outcome.
    #[serde(default)]
    pub weak: bool,
}

/// One point of a curve: a size (or other x) and the figure measured there.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Point {
    pub x: f64,
    #[serde(flatten)]
    pub y: Spread,
}

/// A figure as `results.json` carries it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Figure {
    /// Counts per outcome (litmus histograms).
    Histogram { name: String, bins: Vec<Bin> },
    /// One number (a weak-outcome rate, types/s).
    Scalar {
        name: String,
        unit: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        better: Option<Better>,
        #[serde(flatten)]
        value: Spread,
    },
    /// A curve (pin latency or BAR/RDMA bandwidth per transfer size).
    Series {
        name: String,
        x_unit: String,
        unit: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        better: Option<Better>,
        points: Vec<Point>,
    },
}

impl Figure {
    pub fn name(&self) -> &str {
        match self {
            Figure::Histogram { name, .. }
            | Figure::Scalar { name, .. }
            | Figure::Series { name, .. } => name,
        }
    }
}
