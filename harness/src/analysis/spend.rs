//! Equal-spend comparison of two selecting legs on one dataset: at every budget of their curves,
//! the paired difference (B − A) of each curve metric with a bootstrap 95% CI, and the same for
//! the area under the curve. [`compare_across`] takes B from another dataset with the same
//! queries (another chunking variant of the same documents: "which chunk size" at equal
//! spend); the pairs are by query, so the query sets must be equal.
//!
//! The area is per query: the trapezoid rule over log2(budget), divided by the log2 span of the
//! budgets, so it is the metric's average over the curve on the log axis the plots use, in the
//! metric's own [0, 1] units. Queries where a metric is undefined (no chain) are left out of that
//! metric's pairs.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use anyhow::{bail, Result};
use serde::Serialize;

use crate::measure::stats;
use crate::measure::stats_config::StatsConfig;
use crate::pipeline::curve;
use crate::store::summary::MetricColumns;

/// One paired difference.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Delta {
    /// Mean of A over the paired queries.
    pub a: f64,
    /// Mean of B.
    pub b: f64,
    /// B − A.
    pub delta: f64,
    /// Paired bootstrap 95% CI of the difference.
    pub ci95: [f64; 2],
    /// Paired queries.
    pub n: usize,
}

/// The comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SpendComparison {
    /// Dataset (of leg A).
    pub dataset: String,
    /// The dataset of leg B, when it is not `dataset` ([`compare_across`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset_b: Option<String>,
    /// Leg A.
    pub a: String,
    /// Leg B.
    pub b: String,
    /// Per budget, per metric.
    pub budgets: BTreeMap<u64, BTreeMap<String, Delta>>,
    /// Area under the curve (log2 budget axis), per metric.
    pub auc: BTreeMap<String, Delta>,
    /// Mean tokens spent per budget: (A, B).
    pub tokens: BTreeMap<u64, (f64, f64)>,
}

fn paired(a: &[Option<f64>], b: &[Option<f64>], cfg: &StatsConfig) -> Option<Delta> {
    let (x, y): (Vec<f64>, Vec<f64>) = a
        .iter()
        .zip(b)
        .filter_map(|(p, q)| Some(((*p)?, (*q)?)))
        .unzip();
    let ci = stats::paired_bootstrap_ci(&x, &y, cfg.resamples, 0.95, cfg.seed).ok()?;
    let n = x.len() as f64;
    Some(Delta {
        a: x.iter().sum::<f64>() / n,
        b: y.iter().sum::<f64>() / n,
        delta: ci.mean,
        ci95: [ci.lo, ci.hi],
        n: x.len(),
    })
}

/// Per-query normalised area under each metric's curve.
fn auc(per: &BTreeMap<u64, MetricColumns>, metric: &str, queries: usize) -> Vec<Option<f64>> {
    let budgets: Vec<u64> = per.keys().copied().collect();
    if budgets.len() < 2 {
        return per
            .values()
            .next()
            .map(|m| m[metric].clone())
            .unwrap_or_default();
    }
    let xs: Vec<f64> = budgets.iter().map(|&b| (b as f64).log2()).collect();
    let span = xs[xs.len() - 1] - xs[0];
    (0..queries)
        .map(|q| {
            let ys: Option<Vec<f64>> = budgets.iter().map(|b| per[b][metric][q]).collect();
            let ys = ys?;
            let area: f64 = (1..xs.len())
                .map(|i| (xs[i] - xs[i - 1]) * (ys[i] + ys[i - 1]) / 2.0)
                .sum();
            Some(area / span)
        })
        .collect()
}

/// Compares legs `a` and `b` on `dataset` from the curves in `results`.
pub fn compare(
    results: &Path,
    dataset: &str,
    a: &str,
    b: &str,
    cfg: &StatsConfig,
) -> Result<SpendComparison> {
    compare_across(results, (dataset, a), (dataset, b), cfg)
}

/// Compares leg `a` of dataset `da` with leg `b` of dataset `db` (`(dataset, leg)` pairs) from
/// the curves in `results`, query by query.
pub fn compare_across(
    results: &Path,
    (dataset, a): (&str, &str),
    (db, b): (&str, &str),
    cfg: &StatsConfig,
) -> Result<SpendComparison> {
    if cfg.ci == crate::measure::stats_config::CiMode::Off {
        bail!("compare-spend reports paired CIs, and the campaign sets `stats.ci: off`");
    }
    let (ja, pa) = curve::paths(results, dataset, a);
    let (jb, pb) = curve::paths(results, db, b);
    let (ca, cb) = (
        curve::read_verified(&ja, &pa)?,
        curve::read_verified(&jb, &pb)?,
    );
    let (ids_a, per_a) = curve::read_rows(&pa)?;
    let (ids_b, per_b) = curve::read_rows(&pb)?;
    if ids_a != ids_b {
        if db != dataset {
            bail!("{dataset} x {a} and {db} x {b} were measured on different query sets: not comparable");
        }
        bail!("{dataset}: {a} and {b} were measured on different query sets: not comparable");
    }
    if per_a.keys().ne(per_b.keys()) {
        bail!("{dataset}: {a} and {b} have different budget lists: re-run with one campaign");
    }
    let mut out = SpendComparison {
        dataset: dataset.into(),
        dataset_b: (db != dataset).then(|| db.to_string()),
        a: a.into(),
        b: b.into(),
        budgets: BTreeMap::new(),
        auc: BTreeMap::new(),
        tokens: BTreeMap::new(),
    };
    let names = curve::metric_names();
    for (budget, ma) in &per_a {
        let mb = &per_b[budget];
        let mut row = BTreeMap::new();
        for m in &names {
            if let Some(d) = paired(&ma[m], &mb[m], cfg) {
                row.insert(m.clone(), d);
            }
        }
        out.budgets.insert(*budget, row);
    }
    for (p, q) in ca.points.iter().zip(&cb.points) {
        out.tokens.insert(p.budget, (p.tokens_mean, q.tokens_mean));
    }
    for m in &names {
        if let Some(d) = paired(
            &auc(&per_a, m, ids_a.len()),
            &auc(&per_b, m, ids_b.len()),
            cfg,
        ) {
            out.auc.insert(m.clone(), d);
        }
    }
    Ok(out)
}

/// The comparison as a Markdown table.
pub fn table(c: &SpendComparison) -> String {
    let names = curve::metric_names();
    let mut out = String::new();
    let n = c
        .budgets
        .values()
        .flat_map(|m| m.values())
        .map(|d| d.n)
        .max()
        .unwrap_or(0);
    match &c.dataset_b {
        None => {
            let _ = writeln!(out, "{}: B = {} minus A = {} at equal token budgets ({n} queries; Δ [95% paired bootstrap CI])\n", c.dataset, c.b, c.a);
        }
        Some(db) => {
            let _ = writeln!(out, "B = {db} x {} minus A = {} x {} at equal token budgets ({n} queries; Δ [95% paired bootstrap CI])\n", c.b, c.dataset, c.a);
        }
    }
    let _ = write!(out, "| budget | tokens A | tokens B |");
    for m in &names {
        let _ = write!(out, " Δ {m} |");
    }
    let _ = writeln!(out);
    let _ = writeln!(out, "|---:|---:|---:|{}", "---|".repeat(names.len()));
    let cell = |d: Option<&Delta>| {
        d.map_or("—".to_string(), |d| {
            format!("{:+.4} [{:+.3}, {:+.3}]", d.delta, d.ci95[0], d.ci95[1])
        })
    };
    for (budget, row) in &c.budgets {
        let (ta, tb) = c.tokens.get(budget).copied().unwrap_or((0.0, 0.0));
        let _ = write!(out, "| {budget} | {ta:.0} | {tb:.0} |");
        for m in &names {
            let _ = write!(out, " {} |", cell(row.get(m)));
        }
        let _ = writeln!(out);
    }
    let _ = write!(out, "| AUC (log2 budget) | | |");
    for m in &names {
        let _ = write!(out, " {} |", cell(c.auc.get(m)));
    }
    let _ = writeln!(out);
    out
}
