//! `hopbench compare A B`: two results directories, cell by cell.
//!
//! Each cell present in either run gets a verdict:
//! - `identical`: every quality metric's mean is the same number;
//! - `within floor`: every difference is at most what one query can move the mean
//!   (1 / queries the mean is over: every per-query metric lies in [0, 1]), the reproducibility
//!   floor the seed found undeclared in its own matrix;
//! - `moved`: some difference exceeds that floor;
//! - `not comparable`: a different query set, `--limit`, recall k list or export (a recall over
//!   a different query set is a different quantity, neither a pass nor a failure), a cell
//!   without numbers on either side, or a cell left out because a side's summary does not read
//!   or verify (named with the reason; [`Comparison::left_out`] counts them, and the command's
//!   exit status says so);
//! - `only in A` / `only in B`.
//!
//! Where both cells have per-query records, each metric also gets the paired difference
//! (B - A) with a percentile-bootstrap 95% CI and a two-sided sign-flip randomization p-value,
//! both from a fixed seed, and the p-values are Holm-corrected over the whole family of tests
//! in this comparison (every metric of every compared cell).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use anyhow::Result;
use serde::Serialize;

use crate::measure::metrics::metric_names;
use crate::measure::stats;
use crate::measure::stats_config::StatsConfig;
use crate::store::collect::{collect_summaries, LeftOut};
use crate::store::summary::{read_records, verify_cell, CellPaths, CellSummary, Status};

/// A cell's verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Same means.
    Identical,
    /// Differences within one query's reach.
    WithinFloor,
    /// A difference beyond one query's reach.
    Moved,
    /// Different query set, limit or export, or no numbers.
    NotComparable,
    /// Only the first run has the cell.
    OnlyInA,
    /// Only the second run has the cell.
    OnlyInB,
}

impl Verdict {
    /// The verdict of a compared cell with numbers.
    fn of(identical: bool, within_floor: bool) -> Verdict {
        if identical {
            Verdict::Identical
        } else if within_floor {
            Verdict::WithinFloor
        } else {
            Verdict::Moved
        }
    }

    /// How the verdict reads in tables and the report.
    pub(crate) fn label(&self) -> &'static str {
        match self {
            Verdict::Identical => "identical",
            Verdict::WithinFloor => "within floor",
            Verdict::Moved => "moved",
            Verdict::NotComparable => "not comparable",
            Verdict::OnlyInA => "only in A",
            Verdict::OnlyInB => "only in B",
        }
    }
}

/// One metric of one compared cell.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricDelta {
    /// Metric name.
    pub metric: String,
    /// Mean in A.
    pub a: Option<f64>,
    /// Mean in B.
    pub b: Option<f64>,
    /// B - A.
    pub delta: Option<f64>,
    /// What one query can move the mean.
    pub floor: f64,
    /// Paired bootstrap 95% CI of the per-query difference's mean.
    pub ci95: Option<[f64; 2]>,
    /// Paired t 95% CI of the same difference (statrs Student's t), beside the bootstrap one.
    pub ci95_t: Option<[f64; 2]>,
    /// Randomization-test p-value.
    pub p: Option<f64>,
    /// Holm-adjusted p-value over the comparison's family.
    pub p_holm: Option<f64>,
    /// Queries in the paired test.
    pub paired_n: usize,
}

/// One cell's comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CellComparison {
    /// Dataset.
    pub dataset: String,
    /// Leg.
    pub leg: String,
    /// Verdict.
    pub verdict: Verdict,
    /// Why not comparable, when it is not.
    pub reason: Option<String>,
    /// Queries (A's).
    pub queries: usize,
    /// Per-metric differences (empty when not comparable).
    pub metrics: Vec<MetricDelta>,
    /// Left out: a side's summary does not read or verify (`reason` says which and why).
    /// Written only when true, so the JSON of a comparison of sound cells is what it was.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub left_out: bool,
}

impl CellComparison {
    /// Cell (`dataset`, `leg`) left out of the comparison: `side`'s summary does not read or
    /// verify, for `why`.
    fn left_out(dataset: &str, leg: &str, queries: usize, side: &str, why: &str) -> Self {
        CellComparison {
            dataset: dataset.to_string(),
            leg: leg.to_string(),
            verdict: Verdict::NotComparable,
            reason: Some(format!("{side}'s cell is not trusted: {why}")),
            queries,
            metrics: vec![],
            left_out: true,
        }
    }
}

/// The whole comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// First results directory.
    pub a: String,
    /// Second results directory.
    pub b: String,
    /// Tests in the Holm family.
    pub family_size: usize,
    /// Cells, sorted by dataset then leg.
    pub cells: Vec<CellComparison>,
}

impl Comparison {
    /// How many cells were left out because a side's summary does not read or verify.
    pub fn left_out(&self) -> usize {
        self.cells.iter().filter(|c| c.left_out).count()
    }
}

/// The metrics a cell measured: its recall cut-offs' and its campaign's extra measures'.
fn cell_metric_names(c: &CellSummary) -> Vec<String> {
    metric_names(&c.inputs.recall_k, &c.inputs.measures)
}

/// The metrics both cells measured, in `x`'s order: a campaign's extra measures (`metrics:`)
/// are compared where both runs have them, and the rest of the cells still compare.
fn shared_metric_names(x: &CellSummary, y: &CellSummary) -> Vec<String> {
    let theirs = cell_metric_names(y);
    cell_metric_names(x)
        .into_iter()
        .filter(|n| theirs.contains(n))
        .collect()
}

fn not_comparable(a: &CellSummary, b: &CellSummary) -> Option<String> {
    if a.status != Status::Ok || b.status != Status::Ok {
        return Some(format!("status {:?} vs {:?}", a.status, b.status));
    }
    let (x, y) = (&a.inputs, &b.inputs);
    if x.query_set != y.query_set {
        return Some("different query set".into());
    }
    if x.limit != y.limit {
        return Some(format!(
            "different --limit ({:?} vs {:?})",
            x.limit, y.limit
        ));
    }
    if x.recall_k != y.recall_k {
        return Some("different recall k values".into());
    }
    if x.export != y.export {
        return Some("different export (data, model or prepare settings)".into());
    }
    None
}

/// A cell's (dataset, leg).
type Key = (String, String);

/// The summaries of results directory `dir` by cell, and why each of the others does not read.
fn side(dir: &Path) -> (BTreeMap<Key, CellSummary>, BTreeMap<Key, String>) {
    let collected = collect_summaries(dir);
    let cells = collected
        .cells
        .into_iter()
        .map(|c| ((c.dataset.clone(), c.leg.clone()), c))
        .collect();
    let unreadable = collected
        .unreadable
        .into_iter()
        .map(|l: LeftOut| ((l.dataset, l.leg), l.reason))
        .collect();
    (cells, unreadable)
}

/// Compares results directory `a` with `b`. A cell whose summary does not read or verify on
/// either side is left out, named with the reason ([`CellComparison::left_out`]), and the
/// others are compared.
pub fn compare(a: &Path, b: &Path, cfg: &StatsConfig) -> Result<Comparison> {
    let (ca, ua) = side(a);
    let (cb, ub) = side(b);
    let in_b = |k: &Key| cb.contains_key(k) || ub.contains_key(k);
    if !ca.keys().chain(ua.keys()).any(in_b) {
        anyhow::bail!(
            "{} and {} share no cell (dataset x leg): nothing to compare",
            a.display(),
            b.display()
        );
    }
    let keys: std::collections::BTreeSet<&Key> = ca
        .keys()
        .chain(cb.keys())
        .chain(ua.keys())
        .chain(ub.keys())
        .collect();
    let mut cells = Vec::new();
    for k in keys {
        let (dataset, leg) = k.clone();
        let queries = ca.get(k).map_or(0, |x| x.queries);
        let cell = match (ua.get(k), ub.get(k)) {
            (Some(why), _) => CellComparison::left_out(&dataset, &leg, queries, "A", why),
            (None, Some(why)) => CellComparison::left_out(&dataset, &leg, queries, "B", why),
            (None, None) => match (ca.get(k), cb.get(k)) {
                (Some(x), None) => CellComparison {
                    dataset,
                    leg,
                    verdict: Verdict::OnlyInA,
                    reason: None,
                    queries: x.queries,
                    metrics: vec![],
                    left_out: false,
                },
                (None, Some(y)) => CellComparison {
                    dataset,
                    leg,
                    verdict: Verdict::OnlyInB,
                    reason: None,
                    queries: y.queries,
                    metrics: vec![],
                    left_out: false,
                },
                (Some(x), Some(y)) => compare_cell(a, b, x, y, cfg)?,
                (None, None) => unreachable!("key came from one of the maps"),
            },
        };
        cells.push(cell);
    }
    // Holm over every p-value of the comparison
    let mut refs = Vec::new();
    for (ci, c) in cells.iter().enumerate() {
        for (mi, m) in c.metrics.iter().enumerate() {
            if let Some(p) = m.p {
                refs.push((ci, mi, p));
            }
        }
    }
    let adjusted = stats::holm(&refs.iter().map(|r| r.2).collect::<Vec<_>>());
    for ((ci, mi, _), p) in refs.iter().zip(&adjusted) {
        cells[*ci].metrics[*mi].p_holm = Some(*p);
    }
    Ok(Comparison {
        a: a.display().to_string(),
        b: b.display().to_string(),
        family_size: refs.len(),
        cells,
    })
}

fn compare_cell(
    ra: &Path,
    rb: &Path,
    x: &CellSummary,
    y: &CellSummary,
    cfg: &StatsConfig,
) -> Result<CellComparison> {
    // verified first: what a damaged cell says of itself (its status, its query set) is not
    // a reason to give for it
    for (side, dir, cell) in [("A", ra, x), ("B", rb, y)] {
        let paths = CellPaths::new(dir, &cell.dataset, &cell.leg);
        if let Err(why) = verify_cell(cell, &paths, &cell_metric_names(cell)) {
            return Ok(CellComparison::left_out(
                &x.dataset, &x.leg, x.queries, side, &why,
            ));
        }
    }
    let mut out = CellComparison {
        dataset: x.dataset.clone(),
        leg: x.leg.clone(),
        verdict: Verdict::NotComparable,
        reason: not_comparable(x, y),
        queries: x.queries,
        metrics: vec![],
        left_out: false,
    };
    if out.reason.is_some() {
        return Ok(out);
    }
    let names = shared_metric_names(x, y);
    let pa = CellPaths::new(ra, &x.dataset, &x.leg).records;
    let pb = CellPaths::new(rb, &y.dataset, &y.leg).records;
    let records = match (read_records(&pa, &names), read_records(&pb, &names)) {
        (Ok(a), Ok(b)) if a.0 == b.0 => Some((a.1, b.1)),
        _ => None,
    };
    let mut identical = true;
    let mut within = true;
    for name in &names {
        let a = x.metrics.get(name).copied().flatten();
        let b = y.metrics.get(name).copied().flatten();
        let defined = x
            .metrics_defined
            .get(name)
            .copied()
            .unwrap_or(x.queries)
            .max(1);
        let floor = 1.0 / defined as f64;
        let delta = match (a, b) {
            (Some(a), Some(b)) => Some(b - a),
            _ => None,
        };
        if a != b {
            identical = false;
        }
        if delta.is_some_and(|d| d.abs() > floor + 1e-12) || a.is_some() != b.is_some() {
            within = false;
        }
        let mut m = MetricDelta {
            metric: name.clone(),
            a,
            b,
            delta,
            floor,
            ci95: None,
            ci95_t: None,
            p: None,
            p_holm: None,
            paired_n: 0,
        };
        if let Some((va, vb)) = &records {
            if let (Some(ca), Some(cb)) = (va.get(name), vb.get(name)) {
                let (pa, pb): (Vec<f64>, Vec<f64>) = ca
                    .iter()
                    .zip(cb)
                    .filter_map(|(p, q)| Some(((*p)?, (*q)?)))
                    .unzip();
                m.paired_n = pa.len();
                (m.ci95, m.ci95_t, m.p) = paired_stats(&pa, &pb, cfg);
            }
        }
        out.metrics.push(m);
    }
    out.verdict = Verdict::of(identical, within);
    Ok(out)
}

/// The paired statistics of per-query values `a` and `b`: bootstrap and t 95% CIs of the mean
/// difference (B − A) and the randomization p-value (`None` where a sample is too small).
type PairedStats = (Option<[f64; 2]>, Option<[f64; 2]>, Option<f64>);

fn paired_stats(a: &[f64], b: &[f64], cfg: &StatsConfig) -> PairedStats {
    let diffs: Vec<f64> = a.iter().zip(b).map(|(x, y)| y - x).collect();
    (cfg.paired_ci(a, b), cfg.t_ci(&diffs), cfg.p_value(a, b))
}

/// The summary of cell (`dataset`, `leg`) of `results`, or why it is left out: `Ok(Err(why))`
/// when a summary is there but does not read (truncated, edited, not a summary). A summary that
/// is not there at all is the error: the leg or dataset named does not name a cell.
fn read_cell(results: &Path, dataset: &str, leg: &str) -> Result<Result<CellSummary, String>> {
    let path = CellPaths::new(results, dataset, leg).summary;
    match crate::store::summary::read_summary(&path) {
        Ok(cell) => Ok(Ok(cell)),
        Err(e) if path.symlink_metadata().is_ok() => Ok(Err(format!("{e:#}"))),
        Err(e) => Err(e),
    }
}

/// The comparison of legs `a` and `b` of `results` left out: `side`'s summary does not read or
/// verify, for `why`.
fn left_out_pair(
    results: &Path,
    dataset: &str,
    (a, b): (&str, &str),
    side: &str,
    why: &str,
) -> Comparison {
    Comparison {
        a: format!("{}#{a}", results.display()),
        b: format!("{}#{b}", results.display()),
        family_size: 0,
        cells: vec![CellComparison::left_out(
            dataset,
            &format!("{b} vs {a}"),
            0,
            side,
            why,
        )],
    }
}

/// Compares two legs of one results directory on one dataset (same export and query set): the
/// same verdicts and paired statistics as [`compare`], Holm-corrected over the pair's metrics.
/// A leg whose summary does not read or verify leaves the pair not comparable, left out with
/// the reason.
pub fn compare_legs(
    results: &Path,
    dataset: &str,
    a: &str,
    b: &str,
    cfg: &StatsConfig,
) -> Result<Comparison> {
    let (x, y) = match (
        read_cell(results, dataset, a)?,
        read_cell(results, dataset, b)?,
    ) {
        (Ok(x), Ok(y)) => (x, y),
        (Err(why), _) => return Ok(left_out_pair(results, dataset, (a, b), "A", &why)),
        (_, Err(why)) => return Ok(left_out_pair(results, dataset, (a, b), "B", &why)),
    };
    let mut cell = compare_cell(results, results, &x, &y, cfg)?;
    cell.leg = format!("{b} vs {a}");
    let ps: Vec<f64> = cell.metrics.iter().filter_map(|m| m.p).collect();
    let adjusted = stats::holm(&ps);
    let mut it = adjusted.into_iter();
    for m in cell.metrics.iter_mut().filter(|m| m.p.is_some()) {
        m.p_holm = it.next();
    }
    Ok(Comparison {
        a: format!("{}#{a}", results.display()),
        b: format!("{}#{b}", results.display()),
        family_size: ps.len(),
        cells: vec![cell],
    })
}

/// [`compare_legs`] within groups: the queries are split by `by` (a dataset label, `intent` for
/// the intent a conversation leg classified, or any `note:` annotation) read from A's records,
/// else B's, and each group gets its own paired comparison (means over the group's queries, a
/// floor of one group query). Holm runs over every metric of every group.
pub fn compare_legs_by(
    results: &Path,
    dataset: &str,
    a: &str,
    b: &str,
    by: &str,
    cfg: &StatsConfig,
) -> Result<Comparison> {
    let paths = |leg: &str| CellPaths::new(results, dataset, leg);
    let (x, y) = match (
        read_cell(results, dataset, a)?,
        read_cell(results, dataset, b)?,
    ) {
        (Ok(x), Ok(y)) => (x, y),
        (Err(why), _) => return Ok(left_out_pair(results, dataset, (a, b), "A", &why)),
        (_, Err(why)) => return Ok(left_out_pair(results, dataset, (a, b), "B", &why)),
    };
    for (side, leg, cell) in [("A", a, &x), ("B", b, &y)] {
        if let Err(why) = verify_cell(cell, &paths(leg), &cell_metric_names(cell)) {
            return Ok(left_out_pair(results, dataset, (a, b), side, &why));
        }
    }
    if let Some(reason) = not_comparable(&x, &y) {
        anyhow::bail!("{dataset}: {a} and {b} are not comparable: {reason}");
    }
    let names = shared_metric_names(&x, &y);
    let (ids_a, va) = read_records(&paths(a).records, &names)?;
    let (ids_b, vb) = read_records(&paths(b).records, &names)?;
    if ids_a != ids_b {
        anyhow::bail!("{dataset}: {a} and {b} have different query lists");
    }
    let column = match by {
        "intent" => format!("note:{}", crate::measure::breakdown::INTENT_ANNOTATION),
        other if other.starts_with("note:") || other.starts_with("label:") => other.to_string(),
        other => format!("label:{other}"),
    };
    let groups = match crate::store::summary::read_text_column(&paths(a).records, &column)? {
        Some(g) => g,
        None => crate::store::summary::read_text_column(&paths(b).records, &column)?.ok_or_else(
            || {
                anyhow::anyhow!(
                    "{dataset}: neither {a} nor {b} records a `{column}` column (labels: the \
                 campaign's `breakdown_labels`; intent: a leg that classifies turns)"
                )
            },
        )?,
    };
    let mut members: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, g) in groups.iter().enumerate() {
        if let Some(g) = g {
            for v in g.split(',').map(str::trim).filter(|v| !v.is_empty()) {
                members.entry(v.to_string()).or_default().push(i);
            }
        }
    }
    let mut cells = Vec::new();
    for (value, idx) in members {
        let mut cell = CellComparison {
            dataset: dataset.to_string(),
            leg: format!("{b} vs {a} [{by}={value}]"),
            verdict: Verdict::Identical,
            reason: None,
            queries: idx.len(),
            metrics: vec![],
            left_out: false,
        };
        let (mut identical, mut within) = (true, true);
        for name in &names {
            let (Some(ca), Some(cb)) = (va.get(name), vb.get(name)) else {
                continue;
            };
            let (pa, pb): (Vec<f64>, Vec<f64>) =
                idx.iter().filter_map(|&i| Some((ca[i]?, cb[i]?))).unzip();
            let mean = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
            let (ma, mb) = (mean(&pa), mean(&pb));
            let floor = 1.0 / pa.len().max(1) as f64;
            let delta = ma.zip(mb).map(|(x, y)| y - x);
            identical &= ma == mb;
            within &= delta.is_none_or(|d| d.abs() <= floor + 1e-12);
            let (ci95, ci95_t, p) = paired_stats(&pa, &pb, cfg);
            cell.metrics.push(MetricDelta {
                metric: name.clone(),
                a: ma,
                b: mb,
                delta,
                floor,
                ci95,
                ci95_t,
                p,
                p_holm: None,
                paired_n: pa.len(),
            });
        }
        cell.verdict = Verdict::of(identical, within);
        cells.push(cell);
    }
    let ps: Vec<f64> = cells
        .iter()
        .flat_map(|c| c.metrics.iter().filter_map(|m| m.p))
        .collect();
    let mut adjusted = stats::holm(&ps).into_iter();
    for m in cells
        .iter_mut()
        .flat_map(|c| c.metrics.iter_mut())
        .filter(|m| m.p.is_some())
    {
        m.p_holm = adjusted.next();
    }
    Ok(Comparison {
        a: format!("{}#{a}", results.display()),
        b: format!("{}#{b}", results.display()),
        family_size: ps.len(),
        cells,
    })
}

/// The comparison as a text table (one line per cell, then the metrics that moved).
pub fn table(c: &Comparison) -> String {
    let mut out = String::new();
    let headline = crate::measure::metrics::headline();
    let (name, label) = (headline.name(), headline.label());
    let _ = writeln!(out, "A = {}\nB = {}\n", c.a, c.b);
    let _ = writeln!(
        out,
        "| dataset | leg | verdict | queries | {label} A | {label} B | Δ [95% CI] | p (Holm) |"
    );
    let _ = writeln!(out, "|---|---|---|---:|---:|---:|---|---:|");
    for cell in &c.cells {
        let lead = cell.metrics.iter().find(|m| m.metric == name);
        let f = |v: Option<f64>| v.map_or("—".to_string(), |v| format!("{v:.4}"));
        let (a, b, d, p) = match lead {
            Some(m) => (
                f(m.a),
                f(m.b),
                match (m.delta, m.ci95) {
                    (Some(d), Some([lo, hi])) => format!("{d:+.4} [{lo:+.3}, {hi:+.3}]"),
                    (Some(d), None) => format!("{d:+.4}"),
                    _ => "—".into(),
                },
                m.p_holm.map_or("—".into(), |p| format!("{p:.4}")),
            ),
            None => ("—".into(), "—".into(), "—".into(), "—".into()),
        };
        let verdict = match &cell.reason {
            Some(r) => format!("{} ({r})", cell.verdict.label()),
            None => cell.verdict.label().to_string(),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {a} | {b} | {d} | {p} |",
            cell.dataset, cell.leg, verdict, cell.queries
        );
    }
    let moved: Vec<_> = c
        .cells
        .iter()
        .flat_map(|cell| cell.metrics.iter().map(move |m| (cell, m)))
        .filter(|(_, m)| m.delta.is_some_and(|d| d.abs() > m.floor + 1e-12))
        .collect();
    if !moved.is_empty() {
        let _ = writeln!(out, "\nMetrics beyond the one-query floor:\n");
        for (cell, m) in moved {
            let _ = writeln!(
                out,
                "- {} x {} {}: {:+.4} (floor {:.4}){}{}",
                cell.dataset,
                cell.leg,
                m.metric,
                m.delta.unwrap_or(0.0),
                m.floor,
                m.ci95.map_or(String::new(), |[lo, hi]| format!(
                    ", 95% CI [{lo:+.4}, {hi:+.4}]"
                )),
                m.p_holm
                    .map_or(String::new(), |p| format!(", p_holm {p:.4}"))
            );
        }
    }
    let left_out = c.left_out();
    if left_out > 0 {
        let _ = writeln!(
            out,
            "\nLeft out, not trusted: {left_out} {} (a summary, its records or its run file does \
             not read or verify; the reason is on its line; rerun run-matrix to recompute).",
            if left_out == 1 { "cell" } else { "cells" }
        );
    }
    let _ = writeln!(out, "\nHolm family: {} paired tests.", c.family_size);
    out
}
