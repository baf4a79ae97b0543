//! The serving-parity plot: the dense lane's ANN recall@10 (with its 95% CI as whiskers) and
//! the leg's latency (median and p95, served against exact) per variant of the served engine.
//!
//! The x axis is the last `--vary` key when all its values are numbers (on a log scale when
//! they are positive and span more than a factor of 4), else its values in the order given;
//! each combination of the other varied keys is a line of its own. Without `--vary` the one
//! variant is a single point.

use std::path::{Path, PathBuf};

use anyhow::Result;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::coord::Shift;
use plotters::prelude::*;

use crate::bench::parity::{show, Assignments, Parity, VariantParity};
use crate::report::plot::{err, register_font, COLOURS, FONT};

const SIZE: (u32, u32) = (1400, 600);

/// Where each row sits on the x axis, and how the axis is labelled.
struct Axis {
    /// Each row's position (in the order of `Parity::rows`).
    xs: Vec<f64>,
    /// The distinct positions with their labels, ascending.
    ticks: Vec<(f64, String)>,
    /// The axis caption.
    desc: String,
    /// The drawn range.
    range: (f64, f64),
}

impl Axis {
    /// The label of the tick nearest `x`.
    fn label(&self, x: f64) -> String {
        self.ticks
            .iter()
            .min_by(|a, b| (a.0 - x).abs().total_cmp(&(b.0 - x).abs()))
            .map_or_else(String::new, |t| t.1.clone())
    }

    /// The first and last tick (the whole range for a single one), where a flat reference
    /// line is drawn.
    fn span(&self) -> (f64, f64) {
        match (self.ticks.first(), self.ticks.last()) {
            (Some(a), Some(b)) if a.0 < b.0 => (a.0, b.0),
            _ => self.range,
        }
    }
}

/// The drawn x coordinate: a linear range whose tick marks are the axis's ticks alone (the
/// labels come from [`Axis::label`]).
struct TickRange {
    lo: f64,
    hi: f64,
    ticks: Vec<f64>,
}

impl TickRange {
    fn of(axis: &Axis) -> Self {
        TickRange {
            lo: axis.range.0,
            hi: axis.range.1,
            ticks: axis.ticks.iter().map(|t| t.0).collect(),
        }
    }
}

impl Ranged for TickRange {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let share = (v - self.lo) / (self.hi - self.lo);
        limit.0 + (f64::from(limit.1 - limit.0) * share).round() as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        // bold marks at the ticks, no light mesh between them
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.lo..self.hi
    }
}

/// The x axis of `p`: see the module docs.
fn axis(p: &Parity) -> Axis {
    let Some(last) = p.vary.last() else {
        return Axis {
            xs: vec![0.0; p.rows.len()],
            ticks: vec![(0.0, p.engine.clone())],
            desc: format!("engine `{}` as given", p.engine),
            range: (-0.5, 0.5),
        };
    };
    let value = |r: &VariantParity| r.params.get(&last.key).cloned().unwrap_or_default();
    let numbers: Option<Vec<f64>> = last.values.iter().map(|v| v.as_f64()).collect();
    let Some(numbers) = numbers else {
        let at =
            |v: &serde_json::Value| last.values.iter().position(|x| x == v).unwrap_or(0) as f64;
        return Axis {
            xs: p.rows.iter().map(|r| at(&value(r))).collect(),
            ticks: last
                .values
                .iter()
                .enumerate()
                .map(|(i, v)| (i as f64, show(v)))
                .collect(),
            desc: last.key.clone(),
            range: (-0.5, last.values.len() as f64 - 0.5),
        };
    };
    let lo = numbers.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = numbers.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let log = lo > 0.0 && hi / lo > 4.0;
    let pos = |x: f64| if log { x.ln() } else { x };
    let mut ticks: Vec<(f64, String)> = numbers
        .iter()
        .zip(&last.values)
        .map(|(&x, v)| (pos(x), show(v)))
        .collect();
    ticks.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (a, b) = (pos(lo), pos(hi));
    let pad = if log {
        1.3f64.ln()
    } else if b > a {
        (b - a) * 0.08
    } else {
        (a.abs() * 0.1).max(0.5)
    };
    Axis {
        xs: p
            .rows
            .iter()
            .map(|r| pos(value(r).as_f64().unwrap_or(f64::NAN)))
            .collect(),
        ticks,
        desc: if log {
            format!("{} (log scale)", last.key)
        } else {
            last.key.clone()
        },
        range: (a - pad, b + pad),
    }
}

/// The rows of each combination of the varied keys but the last, in the order the check ran
/// them, with the combination's label (`None` when nothing else was varied).
fn series(p: &Parity) -> Vec<(Option<String>, Vec<usize>)> {
    let others = |r: &VariantParity| {
        let n = r.params.0.len().saturating_sub(1);
        Assignments(r.params.0[..n].to_vec())
    };
    let mut out: Vec<(Assignments, Vec<usize>)> = Vec::new();
    for (i, r) in p.rows.iter().enumerate() {
        let key = others(r);
        match out.iter_mut().find(|(k, _)| *k == key) {
            Some((_, rows)) => rows.push(i),
            None => out.push((key, vec![i])),
        }
    }
    out.into_iter().map(|(k, rows)| (k.label(), rows)).collect()
}

/// A series' points, ascending in x.
fn points(axis: &Axis, rows: &[usize], y: impl Fn(usize) -> f64) -> Vec<(f64, f64)> {
    let mut pts: Vec<(f64, f64)> = rows.iter().map(|&i| (axis.xs[i], y(i))).collect();
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    pts
}

/// A series' name: the path, and the other varied keys' values when there are several lines.
fn label(what: &str, combination: &Option<String>) -> String {
    match combination {
        Some(c) => format!("{what} ({c})"),
        None => what.to_string(),
    }
}

fn draw<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, p: &Parity) -> Result<()>
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE).map_err(err)?;
    let root = root
        .titled(
            &format!(
                "{} x {}: dense side served through {} ({} chunks, {} queries)",
                p.dataset, p.leg, p.engine, p.chunks, p.queries
            ),
            (FONT, 24),
        )
        .map_err(err)?;
    let axis = axis(p);
    let panels = root.split_evenly((1, 2));
    draw_recall(&panels[0], p, &axis)?;
    draw_latency(&panels[1], p, &axis)?;
    root.present().map_err(err)?;
    Ok(())
}

/// A latency line: its label, colour, whether it is a flat (dashed) reference, its points.
type Series = (String, RGBColor, bool, Vec<(f64, f64)>);

/// The left panel: the dense lane's ANN recall@10 with its CI whiskers.
fn draw_recall<DB: DrawingBackend>(
    panel: &DrawingArea<DB, Shift>,
    p: &Parity,
    axis: &Axis,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let floor = p
        .rows
        .iter()
        .map(|r| r.ann_recall_ci95.map_or(r.ann_recall_at_10, |c| c[0]))
        .filter(|x| x.is_finite())
        .fold(1.0, f64::min);
    let ymin = ((floor - 0.02) * 50.0).floor() / 50.0;
    let mut chart = ChartBuilder::on(panel)
        .caption("dense lane: ANN recall@10 vs the exact top-10", (FONT, 20))
        .margin(14)
        .x_label_area_size(40)
        .y_label_area_size(55)
        .build_cartesian_2d(TickRange::of(axis), ymin.max(0.0)..1.005)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc(axis.desc.as_str())
        .y_desc("mean over queries")
        .x_label_formatter(&|x| axis.label(*x))
        .label_style((FONT, 15))
        .draw()
        .map_err(err)?;
    let groups = series(p);
    let several = groups.len() > 1;
    for (i, (combination, rows)) in groups.iter().enumerate() {
        let c = COLOURS[i % COLOURS.len()];
        let pts = points(axis, rows, |r| p.rows[r].ann_recall_at_10);
        let drawn = chart
            .draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))
            .map_err(err)?;
        if several {
            drawn
                .label(combination.clone().unwrap_or_default())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2))
                });
        }
        chart
            .draw_series(pts.iter().map(|&xy| Circle::new(xy, 4, c.filled())))
            .map_err(err)?;
        chart
            .draw_series(rows.iter().filter_map(|&r| {
                p.rows[r].ann_recall_ci95.map(|[a, b]| {
                    let x = axis.xs[r];
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

/// The lines of the right panel: the served median and p95 per series, then the exact path's
/// as flat dashed references.
fn latency_series(p: &Parity, axis: &Axis) -> Vec<Series> {
    let groups = series(p);
    let mut out: Vec<Series> = Vec::new();
    for (i, (combination, rows)) in groups.iter().enumerate() {
        out.push((
            label("served median", combination),
            COLOURS[(1 + 2 * i) % COLOURS.len()],
            false,
            points(axis, rows, |r| p.rows[r].latency.median_ms),
        ));
        out.push((
            label("served p95", combination),
            COLOURS[(2 + 2 * i) % COLOURS.len()],
            false,
            points(axis, rows, |r| p.rows[r].latency.p95_ms),
        ));
    }
    let (x0, x1) = axis.span();
    let (median, p95) = (p.exact_latency.median_ms, p.exact_latency.p95_ms);
    out.push((
        "exact median".into(),
        BLACK,
        true,
        vec![(x0, median), (x1, median)],
    ));
    out.push((
        "exact p95".into(),
        RGBColor(128, 128, 128),
        true,
        vec![(x0, p95), (x1, p95)],
    ));
    out
}

/// The right panel: the leg's median and p95 latency, served per variant against exact.
fn draw_latency<DB: DrawingBackend>(
    panel: &DrawingArea<DB, Shift>,
    p: &Parity,
    axis: &Axis,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let ymax = p
        .rows
        .iter()
        .map(|r| r.latency.p95_ms)
        .chain([p.exact_latency.p95_ms])
        .filter(|x| x.is_finite())
        .fold(0.0, f64::max)
        .max(1e-3)
        * 1.15;
    let mut chart = ChartBuilder::on(panel)
        .caption("leg latency, one thread (ms)", (FONT, 20))
        .margin(14)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(TickRange::of(axis), 0.0..ymax)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc(axis.desc.as_str())
        .y_desc("ms per query")
        .x_label_formatter(&|x| axis.label(*x))
        .label_style((FONT, 15))
        .draw()
        .map_err(err)?;
    for (label, colour, flat, pts) in latency_series(p, axis) {
        let style = colour.stroke_width(2);
        let drawn = if flat {
            chart.draw_series(std::iter::once(plotters::element::DashedPathElement::new(
                pts, 8, 6, style,
            )))
        } else if let [only] = pts[..] {
            // a line of one point draws nothing: a marker stands for it
            chart.draw_series(std::iter::once(Circle::new(only, 4, colour.filled())))
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
