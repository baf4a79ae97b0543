//! `hopbench plot`: budget curves as PNG and SVG, one file pair per dataset, one panel per curve
//! metric plus tokens spent, one line per leg, budget on a log axis.
//!
//! Text is drawn with DejaVu Sans compiled into the binary (plotters' `ab_glyph` backend with a
//! registered font), so plots render identically on a machine with no fonts installed.

use std::path::{Path, PathBuf};
use std::sync::Once;

use anyhow::{anyhow, Result};
use plotters::coord::Shift;
use plotters::prelude::*;

use crate::curve::{self, Curve};

const FONT: &str = "sans-serif";

fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        plotters::style::register_font(FONT, FontStyle::Normal, dejavu::sans::regular())
            .unwrap_or_else(|_| panic!("the embedded DejaVu Sans is a valid font"));
    });
}

/// Line colours, in leg order (colour-blind-safe Okabe–Ito palette).
const COLOURS: [RGBColor; 8] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
    RGBColor(0, 0, 0),
    RGBColor(240, 228, 66),
];

fn err<E: std::fmt::Debug>(e: E) -> anyhow::Error {
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
            &format!("{dataset}: budget curves ({queries} queries)"),
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
            chart
                .draw_series(LineSeries::new(points.clone(), colour.stroke_width(2)))
                .map_err(err)?
                .label(c.leg.as_str())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], colour.stroke_width(2))
                });
            chart
                .draw_series(
                    points
                        .iter()
                        .map(|&(x, y)| Circle::new((x, y), 3, colour.filled())),
                )
                .map_err(err)?;
        }
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

/// Writes `<out>/<dataset>.png` and `.svg` for `curves` (all of one dataset); returns the paths.
pub fn write(out: &Path, dataset: &str, curves: &[Curve]) -> Result<Vec<PathBuf>> {
    register_font();
    std::fs::create_dir_all(out).map_err(|e| anyhow!("{}: {e}", out.display()))?;
    let size = (1500, 900);
    let png = out.join(format!("{dataset}.png"));
    let svg = out.join(format!("{dataset}.svg"));
    crate::fsx::write_with(&png, |tmp| {
        draw(
            BitMapBackend::new(tmp, size).into_drawing_area(),
            dataset,
            curves,
        )
    })?;
    let mut text = String::new();
    draw(
        SVGBackend::with_string(&mut text, size).into_drawing_area(),
        dataset,
        curves,
    )?;
    crate::fsx::write_atomic(&svg, text.as_bytes())?;
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
                crate::curve::read_verified(p, &rows)
            })
            .collect::<Result<Vec<_>>>()?;
        if let Some(first) = curves.first() {
            out.push((first.dataset.clone(), curves));
        }
    }
    Ok(out)
}
