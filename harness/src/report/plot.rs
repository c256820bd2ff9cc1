//! Plots for the HTML report, drawn with plotters' SVG backend into strings that the page
//! inlines (no scripts, no fetches).

use plotters::prelude::*;

use super::figures::{Bin, Point};

const W: u32 = 640;
const H: u32 = 300;
const BAR: RGBColor = RGBColor(0x4c, 0x78, 0xa8);
const WEAK: RGBColor = RGBColor(0xe4, 0x57, 0x56);
const LINE: RGBColor = RGBColor(0x54, 0xa2, 0x4b);

/// Why a figure has no plot (the report shows its table and this message instead).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlotError {
    /// plotters' drawing error, as it words it.
    #[error("cannot draw the plot: {0}")]
    Draw(String),
    #[error("no finite points to plot")]
    NoPoints,
}

fn plot_err(e: impl std::fmt::Display) -> PlotError {
    PlotError::Draw(e.to_string())
}

/// A bar chart of outcome counts; weak outcomes in red.
pub fn histogram(title: &str, bins: &[Bin]) -> Result<String, PlotError> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (W, H)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let n = bins.len().max(1) as u32;
        let top = bins.iter().map(|b| b.count).max().unwrap_or(0).max(1);
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 16))
            .margin(8)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d((0u32..n).into_segmented(), 0u64..top + top / 10 + 1)
            .map_err(plot_err)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(bins.len().max(1))
            .x_label_formatter(&|v| match v {
                SegmentValue::CenterOf(i) => bins
                    .get(*i as usize)
                    .map(|b| b.label.clone())
                    .unwrap_or_default(),
                _ => String::new(),
            })
            .y_desc("count")
            .draw()
            .map_err(plot_err)?;
        for (i, b) in bins.iter().enumerate() {
            let color = if b.weak { WEAK } else { BAR };
            chart
                .draw_series(
                    Histogram::vertical(&chart)
                        .style(color.filled())
                        .margin(6)
                        .data(std::iter::once((i as u32, b.count))),
                )
                .map_err(plot_err)?;
        }
        root.present().map_err(plot_err)?;
    }
    Ok(svg)
}

/// A whole number (a size, a count) without a decimal point; others as plotters would.
fn axis_label(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{x:.0}")
    } else {
        format!("{x:.3}")
    }
}

/// A curve of medians with min..max error bars; x on a log scale when it spans two decades
/// (transfer sizes).
pub fn series(
    title: &str,
    x_unit: &str,
    unit: &str,
    points: &[Point],
) -> Result<String, PlotError> {
    let mut pts: Vec<&Point> = points
        .iter()
        .filter(|p| p.x.is_finite() && p.y.is_sane())
        .collect();
    pts.sort_by(|a, b| a.x.total_cmp(&b.x));
    if pts.is_empty() {
        return Err(PlotError::NoPoints);
    }
    let x0 = pts[0].x;
    let x1 = pts[pts.len() - 1].x;
    let y0 = pts.iter().map(|p| p.y.min).fold(f64::INFINITY, f64::min);
    let y1 = pts
        .iter()
        .map(|p| p.y.max)
        .fold(f64::NEG_INFINITY, f64::max);
    let pad = ((y1 - y0) * 0.1).max(y1.abs() * 0.05).max(1e-9);
    let yr = (y0 - pad).min(0.0f64.max(y0 - pad))..(y1 + pad);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (W, H)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let log = x0 > 0.0 && x1 / x0 >= 100.0;
        let (xa, xb) = if x1 > x0 {
            (x0, x1)
        } else {
            (x0 - 1.0, x1 + 1.0)
        };
        let mut builder = ChartBuilder::on(&root);
        builder
            .caption(title, ("sans-serif", 16))
            .margin(8)
            // room for the last x label (1048576), centred on the right edge
            .margin_right(32)
            .x_label_area_size(40)
            .y_label_area_size(70);
        macro_rules! draw {
            ($chart:expr) => {{
                let mut chart = $chart;
                chart
                    .configure_mesh()
                    .x_label_formatter(&|x: &f64| axis_label(*x))
                    .x_desc(x_unit)
                    .y_desc(unit)
                    .draw()
                    .map_err(plot_err)?;
                chart
                    .draw_series(LineSeries::new(
                        pts.iter().map(|p| (p.x, p.y.median)),
                        LINE.stroke_width(2),
                    ))
                    .map_err(plot_err)?;
                chart
                    .draw_series(pts.iter().map(|p| {
                        ErrorBar::new_vertical(p.x, p.y.min, p.y.median, p.y.max, LINE.filled(), 8)
                    }))
                    .map_err(plot_err)?;
            }};
        }
        if log {
            draw!(builder
                .build_cartesian_2d((xa..xb).log_scale(), yr)
                .map_err(plot_err)?);
        } else {
            draw!(builder.build_cartesian_2d(xa..xb, yr).map_err(plot_err)?);
        }
        root.present().map_err(plot_err)?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::super::figures::Spread;
    use super::*;

    #[test]
    fn histogram_draws_one_bar_per_bin_and_labels() {
        let bins = vec![
            Bin {
                label: "r0=0 r1=0".into(),
                count: 10,
                weak: true,
            },
            Bin {
                label: "r0=1 r1=1".into(),
                count: 90,
                weak: false,
            },
        ];
        let svg = histogram("MP", &bins).unwrap();
        assert!(svg.starts_with("<svg"), "{svg}");
        assert!(svg.contains("r0=0 r1=0") && svg.contains("r0=1 r1=1"));
        // The weak bar in its colour and the other in the bar colour.
        assert!(svg.contains("#E45756"), "{svg}");
        assert!(svg.contains("#4C78A8"), "{svg}");
    }

    #[test]
    fn series_draws_a_line_and_refuses_nothing_to_plot() {
        let pts: Vec<Point> = [4096.0, 65536.0, 1048576.0]
            .iter()
            .map(|&x| Point {
                x,
                y: Spread {
                    min: 1.0,
                    median: 2.0,
                    max: 3.0,
                },
            })
            .collect();
        let svg = series("bw", "bytes", "GB/s", &pts).unwrap();
        assert!(svg.contains("<polyline"), "{svg}");
        assert!(series("bw", "bytes", "GB/s", &[]).is_err());
    }
}
