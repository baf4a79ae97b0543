//! `hopbench plot`: budget curves as PNG and SVG, one file pair per dataset, one panel per curve
//! metric plus tokens spent, one line per leg, budget on a log axis. Each metric line carries
//! its points' 95% CIs (`metrics_ci95` of the curve file) as a shaded band (a whisker where a
//! leg has a single point); each leg has its own marker shape and dash pattern besides its
//! colour, so the lines stay apart in greyscale.
//!
//! Text is drawn with DejaVu Sans compiled into the binary (plotters' `ab_glyph` backend with a
//! registered font), so plots render identically on a machine with no fonts installed.

use std::path::{Path, PathBuf};
use std::sync::Once;

use anyhow::{anyhow, Result};
use plotters::coord::combinators::WithKeyPoints;
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;

use crate::pipeline::curve::{self, Curve};

pub(crate) const FONT: &str = "sans-serif";

pub(crate) fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        plotters::style::register_font(FONT, FontStyle::Normal, dejavu::sans::regular())
            .unwrap_or_else(|_| panic!("the embedded DejaVu Sans is a valid font"));
    });
}

/// Line colours, in leg order (colour-blind-safe Okabe–Ito palette).
pub(crate) const COLOURS: [RGBColor; 8] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
    RGBColor(0, 0, 0),
    RGBColor(240, 228, 66),
];

/// Opacity of a CI band (the line over it is opaque).
const BAND_OPACITY: f64 = 0.15;

/// Marker outlines in pixels around the point: circle, square, triangle, diamond, inverted
/// triangle, plus; leg `i` takes shape `i % 6`.
fn marker(i: usize) -> Vec<(i32, i32)> {
    match i % 6 {
        0 => (0..12)
            .map(|k| {
                let a = k as f64 * std::f64::consts::TAU / 12.0;
                (
                    (4.5 * a.cos()).round() as i32,
                    (4.5 * a.sin()).round() as i32,
                )
            })
            .collect(),
        1 => vec![(-4, -4), (4, -4), (4, 4), (-4, 4)],
        2 => vec![(0, -5), (5, 4), (-5, 4)],
        3 => vec![(0, -6), (5, 0), (0, 6), (-5, 0)],
        4 => vec![(0, 5), (5, -4), (-5, -4)],
        _ => vec![
            (-2, -6),
            (2, -6),
            (2, -2),
            (6, -2),
            (6, 2),
            (2, 2),
            (2, 6),
            (-2, 6),
            (-2, 2),
            (-6, 2),
            (-6, -2),
            (-2, -2),
        ],
    }
}

/// Dash pattern of leg `i` (dash, gap in pixels; `None`: solid).
fn dash(i: usize) -> Option<(i32, i32)> {
    [None, Some((10, 5)), Some((3, 4))][i % 3]
}

pub(crate) fn err<E: std::fmt::Debug>(e: E) -> anyhow::Error {
    anyhow!("plotting failed: {e:?}")
}

fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    dataset: &str,
    curves: &[Curve],
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE).map_err(err)?;
    let queries = curves.iter().map(|c| c.queries).max().unwrap_or(0);
    let root = root
        .titled(
            &format!("{dataset}: budget curves ({queries} queries; shaded: 95% CI)"),
            (FONT, 26),
        )
        .map_err(err)?;
    let budgets: Vec<u64> = curves
        .iter()
        .flat_map(|c| c.points.iter().map(|p| p.budget))
        .collect();
    let (lo, hi) = (
        *budgets.iter().min().unwrap_or(&1) as f64,
        *budgets.iter().max().unwrap_or(&2) as f64,
    );
    let (lo, hi) = (lo / 1.15, hi * 1.15);
    let mut ticks: Vec<f64> = budgets.iter().map(|&b| b as f64).collect();
    ticks.sort_by(f64::total_cmp);
    ticks.dedup();
    let mut names = curve::metric_names();
    names.push("tokens spent".into());
    // two rows of panels, as many columns as the curve metrics (and the spend panel) need
    let panels = root.split_evenly((2, names.len().div_ceil(2)));
    for (panel, metric) in panels.iter().zip(&names) {
        let metric = metric.as_str();
        let tokens = metric == "tokens spent";
        let ymax = if tokens { hi } else { 1.0 };
        let mut chart = ChartBuilder::on(panel)
            .caption(metric, (FONT, 20))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(if tokens { 60 } else { 45 })
            .build_cartesian_2d(
                (lo..hi).log_scale().with_key_points(ticks.clone()),
                0.0..ymax,
            )
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("token budget (log scale)")
            .y_desc(if tokens {
                "mean tokens spent"
            } else {
                "mean over queries"
            })
            .x_label_formatter(&|x| format!("{}k", x / 1000.0))
            .y_label_formatter(&|y| {
                if tokens {
                    format!("{}k", y / 1000.0)
                } else {
                    format!("{y:.1}")
                }
            })
            .label_style((FONT, 13))
            .axis_desc_style((FONT, 14))
            .draw()
            .map_err(err)?;
        if !tokens {
            // the bands first, so every line and marker is drawn over them
            draw_bands(&mut chart, curves, metric)?;
        }
        draw_lines(&mut chart, curves, metric, tokens)?;
        if tokens {
            // the budget itself: spend can never be above this line
            chart
                .draw_series(LineSeries::new(
                    vec![(lo, lo), (hi, hi)],
                    BLACK.mix(0.3).stroke_width(1),
                ))
                .map_err(err)?
                .label("budget")
                .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], BLACK.mix(0.3)));
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .label_font((FONT, 13))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.4))
            .draw()
            .map_err(err)?;
    }
    root.present().map_err(err)?;
    Ok(())
}

/// A panel's chart: budgets on a log axis at the campaign's budgets, the metric linear.
type Chart<'a, DB> =
    ChartContext<'a, DB, Cartesian2d<WithKeyPoints<LogCoord<f64>>, RangedCoordf64>>;

/// Each curve's 95% CI of `metric` as a shaded band (a bar where it has one budget).
fn draw_bands<DB: DrawingBackend>(
    chart: &mut Chart<'_, DB>,
    curves: &[Curve],
    metric: &str,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    // the bands first, so every line and marker is drawn over them
    for (i, c) in curves.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let band: Vec<(f64, [f64; 2])> = c
            .points
            .iter()
            .filter_map(|p| p.metrics_ci95.get(metric).map(|&ci| (p.budget as f64, ci)))
            .collect();
        match band.as_slice() {
            [] => {}
            [(x, [lo, hi])] => {
                chart
                    .draw_series(std::iter::once(PathElement::new(
                        vec![(*x, *lo), (*x, *hi)],
                        colour.mix(0.6).stroke_width(2),
                    )))
                    .map_err(err)?;
            }
            _ => {
                let outline: Vec<(f64, f64)> = band
                    .iter()
                    .map(|&(x, [_, hi])| (x, hi))
                    .chain(band.iter().rev().map(|&(x, [lo, _])| (x, lo)))
                    .collect();
                chart
                    .draw_series(std::iter::once(Polygon::new(
                        outline,
                        colour.mix(BAND_OPACITY).filled(),
                    )))
                    .map_err(err)?;
            }
        }
    }
    Ok(())
}

/// Each curve's mean `metric` (or its mean spend, on the `tokens` panel) as a line with
/// markers and a legend entry; colour, dash and marker tell the legs apart in grey too.
fn draw_lines<'a, DB: DrawingBackend + 'a>(
    chart: &mut Chart<'a, DB>,
    curves: &[Curve],
    metric: &str,
    tokens: bool,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    for (i, c) in curves.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let points: Vec<(f64, f64)> = c
            .points
            .iter()
            .filter_map(|p| {
                let y = if tokens {
                    Some(p.tokens_mean)
                } else {
                    p.metrics.get(metric).copied().flatten()
                };
                y.map(|y| (p.budget as f64, y))
            })
            .collect();
        if points.is_empty() {
            continue;
        }
        let line = colour.stroke_width(2);
        let (size, gap) = dash(i).unwrap_or((1000, 1));
        let series = match dash(i) {
            None => chart.draw_series(LineSeries::new(points.clone(), line)),
            Some((size, gap)) => {
                chart.draw_series(DashedLineSeries::new(points.clone(), size, gap, line))
            }
        };
        series
            .map_err(err)?
            .label(c.leg.as_str())
            .legend(move |(x, y)| {
                EmptyElement::at((x, y))
                    + DashedPathElement::new(vec![(0, 0), (24, 0)], size, gap, line)
                    + Polygon::new(
                        marker(i)
                            .into_iter()
                            .map(|(dx, dy)| (dx + 12, dy))
                            .collect::<Vec<_>>(),
                        colour.filled(),
                    )
            });
        chart
            .draw_series(
                points.iter().map(|&(x, y)| {
                    EmptyElement::at((x, y)) + Polygon::new(marker(i), colour.filled())
                }),
            )
            .map_err(err)?;
    }
    Ok(())
}

/// Pixel size of a plot.
const SIZE: (u32, u32) = (1500, 900);

/// The SVG text of the plot of `curves` (all of one dataset), as [`write`] writes it.
pub fn svg(dataset: &str, curves: &[Curve]) -> Result<String> {
    register_font();
    let mut text = String::new();
    draw(
        SVGBackend::with_string(&mut text, SIZE).into_drawing_area(),
        dataset,
        curves,
    )?;
    Ok(text)
}

/// Writes `<out>/<dataset>.png` and `.svg` for `curves` (all of one dataset); returns the paths.
pub fn write(out: &Path, dataset: &str, curves: &[Curve]) -> Result<Vec<PathBuf>> {
    register_font();
    std::fs::create_dir_all(out).map_err(|e| anyhow!("{}: {e}", out.display()))?;
    let size = SIZE;
    let png = out.join(format!("{dataset}.png"));
    let svg = out.join(format!("{dataset}.svg"));
    crate::store::fsx::write_with(&png, |tmp| {
        draw(
            BitMapBackend::new(tmp, size).into_drawing_area(),
            dataset,
            curves,
        )
    })?;
    let text = self::svg(dataset, curves)?;
    crate::store::fsx::write_atomic(&svg, text.as_bytes())?;
    Ok(vec![png, svg])
}

/// Every curve under `<results>/curves`, grouped by dataset (sorted by dataset, then leg).
pub fn collect(results: &Path) -> Result<Vec<(String, Vec<Curve>)>> {
    let mut out: Vec<(String, Vec<Curve>)> = Vec::new();
    let Ok(dirs) = std::fs::read_dir(results.join("curves")) else {
        return Ok(out);
    };
    let mut dirs: Vec<PathBuf> = dirs
        .flatten()
        .map(|d| d.path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    for d in dirs {
        let mut files: Vec<PathBuf> = std::fs::read_dir(&d)?
            .flatten()
            .map(|f| f.path())
            .filter(|p| p.to_string_lossy().ends_with(".curve.json"))
            .collect();
        files.sort();
        let curves = files
            .iter()
            .map(|p| {
                let rows = p.with_file_name(
                    p.file_name()
                        .expect("a curve file")
                        .to_string_lossy()
                        .replace(".curve.json", ".curve.parquet"),
                );
                crate::pipeline::curve::read_verified(p, &rows)
            })
            .collect::<Result<Vec<_>>>()?;
        if let Some(first) = curves.first() {
            out.push((first.dataset.clone(), curves));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::pipeline::curve::CurvePoint;

    fn curve(leg: &str, points: &[(u64, f64, [f64; 2])]) -> Curve {
        Curve {
            schema_version: curve::CURVE_SCHEMA_VERSION,
            dataset: "d".into(),
            leg: leg.into(),
            key: String::new(),
            queries: 10,
            points: points
                .iter()
                .map(|&(budget, mean, ci)| CurvePoint {
                    budget,
                    metrics: curve::metric_names()
                        .into_iter()
                        .map(|m| (m, Some(mean)))
                        .collect(),
                    metrics_ci95: curve::metric_names()
                        .into_iter()
                        .map(|m| (m, ci))
                        .collect::<BTreeMap<_, _>>(),
                    tokens_mean: budget as f64 * 0.9,
                    tokens_max: budget,
                    selected_mean: 5.0,
                })
                .collect(),
            rows: String::new(),
            timing: None,
        }
    }

    #[test]
    fn the_svg_shades_every_curve_metric_ci_as_a_band() {
        let curves = [
            curve("a", &[(1000, 0.4, [0.3, 0.5]), (4000, 0.6, [0.5, 0.7])]),
            curve("b", &[(1000, 0.2, [0.1, 0.3]), (4000, 0.3, [0.2, 0.4])]),
        ];
        let text = svg("d", &curves).unwrap();
        let band = format!("<polygon opacity=\"{BAND_OPACITY}\"");
        // one band per leg in every metric panel (none in the tokens panel: no CI there)
        assert_eq!(
            text.matches(&band).count(),
            curves.len() * curve::metric_names().len(),
            "{text}"
        );
        // a band is an area: its outline has (at least) both ends of both points' CIs
        let first = text.split(&band).nth(1).unwrap();
        let outline = first.split("points=\"").nth(1).unwrap();
        let outline = &outline[..outline.find('"').unwrap()];
        assert!(outline.split_whitespace().count() >= 4, "{outline}");
        // without CIs (`ci: off`), no band
        let mut bare = curves[0].clone();
        for p in &mut bare.points {
            p.metrics_ci95.clear();
        }
        assert!(!svg("d", &[bare]).unwrap().contains(&band));
    }

    #[test]
    fn legs_differ_in_marker_and_dash_not_only_colour() {
        for i in 0..23 {
            assert_ne!(marker(i), marker(i + 1));
            assert_ne!(dash(i), dash(i + 1));
        }
        let styles: std::collections::BTreeSet<_> = (0..24)
            .map(|i| (i % COLOURS.len(), marker(i), dash(i)))
            .collect();
        assert_eq!(styles.len(), 24);
    }
}
