//! The serving-parity plot: the dense lane's ANN recall@10 (with its 95% CI as whiskers) and
//! the leg's latency (median and p95, served against exact) against `hnsw_ef` on a log axis,
//! a line per shard quantisation.

use std::path::{Path, PathBuf};

use anyhow::Result;
use plotters::coord::Shift;
use plotters::prelude::*;

use hopbench_datasets::hnsw::Quantization;

use crate::bench::parity::{EfParity, Parity};
use crate::report::plot::{err, register_font, COLOURS, FONT};

const SIZE: (u32, u32) = (1400, 600);

fn draw<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, p: &Parity) -> Result<()>
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE).map_err(err)?;
    let root = root
        .titled(
            &format!(
                "{} x {}: served through Qdrant HNSW ({} chunks, {} queries)",
                p.dataset, p.leg, p.chunks, p.queries
            ),
            (FONT, 24),
        )
        .map_err(err)?;
    let mut efs: Vec<f64> = p.rows.iter().map(|r| r.hnsw_ef as f64).collect();
    efs.sort_by(f64::total_cmp);
    efs.dedup();
    let panels = root.split_evenly((1, 2));
    draw_recall(&panels[0], p, &efs)?;
    draw_latency(&panels[1], p, &efs)?;
    root.present().map_err(err)?;
    Ok(())
}

/// A latency line: its label, colour, whether it is a flat (dashed) reference, its points.
type Series = (String, RGBColor, bool, Vec<(f64, f64)>);

/// The rows of each quantisation, in the order the check ran them.
fn by_quantization(p: &Parity) -> Vec<(Quantization, Vec<&EfParity>)> {
    let mut out: Vec<(Quantization, Vec<&EfParity>)> = Vec::new();
    for r in &p.rows {
        match out.iter_mut().find(|(q, _)| *q == r.quantization) {
            Some((_, rows)) => rows.push(r),
            None => out.push((r.quantization, vec![r])),
        }
    }
    out
}

/// A series' name: the path, and the quantisation when the check served more than float32.
fn label(what: &str, q: Quantization, several: bool) -> String {
    if several {
        format!("{what} ({q})")
    } else {
        what.to_string()
    }
}

/// The shared x axis: the beam widths with a margin on each side (a log axis).
fn x_range(efs: &[f64]) -> (f64, f64) {
    let lo = efs.iter().copied().fold(f64::INFINITY, f64::min) / 1.3;
    let hi = efs.iter().copied().fold(0.0, f64::max) * 1.3;
    (lo, hi)
}

/// The left panel: the dense lane's ANN recall@10 with its CI whiskers.
fn draw_recall<DB: DrawingBackend>(
    panel: &DrawingArea<DB, Shift>,
    p: &Parity,
    efs: &[f64],
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let (lo, hi) = x_range(efs);
    let floor = p
        .rows
        .iter()
        .map(|r| r.ann_recall_ci95.map_or(r.ann_recall_at_10, |c| c[0]))
        .fold(1.0, f64::min);
    let ymin = ((floor - 0.02) * 50.0).floor() / 50.0;
    let mut chart = ChartBuilder::on(panel)
        .caption("dense lane: ANN recall@10 vs the exact top-10", (FONT, 20))
        .margin(14)
        .x_label_area_size(40)
        .y_label_area_size(55)
        .build_cartesian_2d(
            (lo..hi).log_scale().with_key_points(efs.to_vec()),
            ymin.max(0.0)..1.005,
        )
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("hnsw_ef (log scale)")
        .y_desc("mean over queries")
        .label_style((FONT, 15))
        .draw()
        .map_err(err)?;
    let groups = by_quantization(p);
    let several = groups.len() > 1;
    for (i, (q, rows)) in groups.iter().enumerate() {
        let c = COLOURS[i % COLOURS.len()];
        let pts: Vec<(f64, f64)> = rows
            .iter()
            .map(|r| (r.hnsw_ef as f64, r.ann_recall_at_10))
            .collect();
        let drawn = chart
            .draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))
            .map_err(err)?;
        if several {
            drawn.label(q.name()).legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2))
            });
        }
        chart
            .draw_series(pts.iter().map(|&xy| Circle::new(xy, 4, c.filled())))
            .map_err(err)?;
        chart
            .draw_series(rows.iter().filter_map(|r| {
                r.ann_recall_ci95.map(|[a, b]| {
                    let x = r.hnsw_ef as f64;
                    PathElement::new(vec![(x, a), (x, b)], c.stroke_width(1))
                })
            }))
            .map_err(err)?;
    }
    if several {
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .label_font((FONT, 15))
            .draw()
            .map_err(err)?;
    }
    Ok(())
}

/// The right panel: the leg's median and p95 latency, served per `hnsw_ef` against exact.
fn draw_latency<DB: DrawingBackend>(
    panel: &DrawingArea<DB, Shift>,
    p: &Parity,
    efs: &[f64],
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let (lo, hi) = x_range(efs);
    let ymax = p
        .rows
        .iter()
        .map(|r| r.latency.p95_ms)
        .chain([p.exact_latency.p95_ms])
        .fold(0.0, f64::max)
        * 1.15;
    let mut chart = ChartBuilder::on(panel)
        .caption("leg latency, one thread (ms)", (FONT, 20))
        .margin(14)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(
            (lo..hi).log_scale().with_key_points(efs.to_vec()),
            0.0..ymax,
        )
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("hnsw_ef (log scale)")
        .y_desc("ms per query")
        .label_style((FONT, 15))
        .draw()
        .map_err(err)?;
    let groups = by_quantization(p);
    let several = groups.len() > 1;
    let (x0, x1) = (efs[0], efs[efs.len() - 1]);
    let mut series: Vec<Series> = Vec::new();
    for (i, (q, rows)) in groups.iter().enumerate() {
        let at = |f: fn(&EfParity) -> f64| rows.iter().map(|r| (r.hnsw_ef as f64, f(r))).collect();
        series.push((
            label("served median", *q, several),
            COLOURS[(1 + 2 * i) % COLOURS.len()],
            false,
            at(|r| r.latency.median_ms),
        ));
        series.push((
            label("served p95", *q, several),
            COLOURS[(2 + 2 * i) % COLOURS.len()],
            false,
            at(|r| r.latency.p95_ms),
        ));
    }
    series.push((
        "exact median".into(),
        BLACK,
        true,
        vec![
            (x0, p.exact_latency.median_ms),
            (x1, p.exact_latency.median_ms),
        ],
    ));
    series.push((
        "exact p95".into(),
        RGBColor(128, 128, 128),
        true,
        vec![(x0, p.exact_latency.p95_ms), (x1, p.exact_latency.p95_ms)],
    ));
    for (label, colour, flat, pts) in series {
        let style = colour.stroke_width(2);
        let drawn = if flat {
            chart.draw_series(std::iter::once(plotters::element::DashedPathElement::new(
                pts, 8, 6, style,
            )))
        } else {
            chart.draw_series(LineSeries::new(pts, style))
        }
        .map_err(err)?;
        drawn.label(label).legend(move |(x, y)| {
            PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2))
        });
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font((FONT, 15))
        .draw()
        .map_err(err)?;
    Ok(())
}

/// Writes `<out>/<stem>.png` and `.svg`; returns the paths.
pub fn write(out: &Path, stem: &str, p: &Parity) -> Result<Vec<PathBuf>> {
    register_font();
    let png = out.join(format!("{stem}.png"));
    let svg = out.join(format!("{stem}.svg"));
    crate::store::fsx::write_with(&png, |tmp| {
        draw(BitMapBackend::new(tmp, SIZE).into_drawing_area(), p)
    })?;
    let mut text = String::new();
    draw(
        SVGBackend::with_string(&mut text, SIZE).into_drawing_area(),
        p,
    )?;
    crate::store::fsx::write_atomic(&svg, text.as_bytes())?;
    Ok(vec![png, svg])
}
