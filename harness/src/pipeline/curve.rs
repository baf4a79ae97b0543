//! Budget curves: for a selecting leg, one `retrieve` per query and one `select` per budget, so
//! every operating point is settled against the identical candidate union and the curve varies
//! the budget and nothing else (the seed's §5.10).
//!
//! `results/curves/<dataset>/<leg>.curve.json` holds per budget the means (with bootstrap CIs)
//! of the curve metrics ([`metrics::curve_metrics`]: recall@10, nDCG@10, doc_recall@10,
//! chain_coverage@10 and full_chain_hit@10), the mean tokens spent, and the latency of
//! retrieve + that budget's select. `<leg>.curve.parquet` beside it
//! keeps one row per (query, budget) for paired comparisons. Curves are cached like cells: the
//! key is the cell key plus the budget list.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use hopbench_datasets::export::Export;
use hopbench_datasets::parquet_io::{self as pq, Columns};
use hopbench_legs::{Leg, QueryInput};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::measure::metrics;
use crate::pipeline::campaign::Campaign;
use crate::pipeline::evaluate;
use crate::pipeline::settings::MatrixSettings;
use crate::store::summary::{Dist, MetricColumns};
use crate::store::{fsx, seal};

/// Version of the curve schema.
pub const CURVE_SCHEMA_VERSION: u32 = 2;

/// Names of the metrics a curve reports at every budget, in column order.
pub fn metric_names() -> Vec<String> {
    metrics::curve_metrics().iter().map(|m| m.name()).collect()
}

/// One budget of a curve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CurvePoint {
    /// Token budget.
    pub budget: u64,
    /// Mean of each curve metric (`null` where undefined on every query).
    pub metrics: BTreeMap<String, Option<f64>>,
    /// Bootstrap 95% CI of each mean.
    pub metrics_ci95: BTreeMap<String, [f64; 2]>,
    /// Mean tokens spent.
    pub tokens_mean: f64,
    /// Largest tokens spent by any query (never above the budget).
    pub tokens_max: u64,
    /// Mean selection length.
    pub selected_mean: f64,
}

/// Latency of one budget: retrieve (paid once per query) + this budget's select.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PointTiming {
    /// Budget.
    pub budget: u64,
    /// retrieve + select, ms.
    pub latency_ms: Dist,
}

/// The non-deterministic half of a curve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CurveTiming {
    /// Pinned thread count.
    pub threads: usize,
    /// Wall time (ms).
    pub wall_ms: f64,
    /// Per-budget latency.
    pub points: Vec<PointTiming>,
    /// The curve's seal: blake3 of its text before `timing` ([`crate::store::seal`]), so the
    /// fields that cannot be recomputed from the rows (CIs, tokens, selection lengths) are
    /// still checked when read back.
    #[serde(default)]
    pub seal: Option<String>,
}

/// One selecting leg's budget curve on one dataset.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Curve {
    /// [`CURVE_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Dataset.
    pub dataset: String,
    /// Leg.
    pub leg: String,
    /// blake3 of the cell key and the budgets.
    pub key: String,
    /// Queries.
    pub queries: usize,
    /// Points, by ascending budget.
    pub points: Vec<CurvePoint>,
    /// blake3 (hex) of the per-query rows file written with this curve (its bytes are a
    /// deterministic function of the key: the rows carry no timings).
    #[serde(default)]
    pub rows: String,
    /// Timing (excluded from identity checks).
    pub timing: Option<CurveTiming>,
}

/// Paths of a curve's files.
pub fn paths(results: &Path, dataset: &str, leg: &str) -> (PathBuf, PathBuf) {
    let dir = results.join("curves").join(dataset);
    (
        dir.join(format!("{leg}.curve.json")),
        dir.join(format!("{leg}.curve.parquet")),
    )
}

/// Why a curve on disk cannot be trusted (`Ok` when it can): its file is not the one parsed or
/// its seal differs (a field outside `timing` was edited), its rows file is missing or is not the
/// one written with it, or its means are not the means of its rows. The cache, `plot` and
/// `compare-spend` call this before using a curve.
pub fn verify(curve: &Curve, json: &Path, rows: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(json)
        .map_err(|e| format!("{}: cannot read: {e}", json.display()))?;
    if serde_json::from_str::<Curve>(&text).ok().as_ref() != Some(curve) {
        return Err(format!(
            "{}: is not the curve parsed from it (changed while it was read)",
            json.display()
        ));
    }
    let seal = curve.timing.as_ref().and_then(|t| t.seal.as_deref());
    seal::check(&json.display().to_string(), &text, seal)?;
    let bytes = std::fs::read(rows).map_err(|e| format!("{}: cannot read: {e}", rows.display()))?;
    if blake3::hash(&bytes).to_hex().as_str() != curve.rows {
        return Err(format!(
            "{}: not the rows written with {} (blake3 differs)",
            rows.display(),
            json.display()
        ));
    }
    let (ids, per) = read_rows(rows).map_err(|e| format!("{e:#}"))?;
    let bad = |what: &str| {
        Err(format!(
            "{}: {what} is not that of {}",
            json.display(),
            rows.display()
        ))
    };
    if ids.len() != curve.queries {
        return bad("the query count");
    }
    if per.len() != curve.points.len() {
        return bad("the budget list");
    }
    // serde_json's float parser may land one ulp off the printed value: compare within 1e-12
    let same = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) => (a - b).abs() <= 1e-12 * a.abs().max(1.0),
        (a, b) => a.is_none() && b.is_none(),
    };
    for (p, (&budget, columns)) in curve.points.iter().zip(&per) {
        if p.budget != budget {
            return bad("the budget list");
        }
        for (name, stored) in &p.metrics {
            let mean = columns
                .get(name)
                .map(|v| metrics::mean_opt(v.iter().copied()).mean);
            if !mean.is_some_and(|m| same(m, *stored)) {
                return bad(&format!("metrics.{name} at budget {budget}"));
            }
        }
    }
    Ok(())
}

/// Reads a curve and checks it against its rows file ([`verify`]): an error names the file.
pub fn read_verified(json: &Path, rows: &Path) -> Result<Curve> {
    let curve = read(json)?;
    verify(&curve, json, rows).map_err(anyhow::Error::msg)?;
    Ok(curve)
}

/// Reads a curve.
pub fn read(path: &Path) -> Result<Curve> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("{}: cannot read", path.display()))?;
    serde_json::from_str(&text).with_context(|| {
        format!(
            "{}: not a hopbench curve (schema {CURVE_SCHEMA_VERSION})",
            path.display()
        )
    })
}

/// One (query, budget) row.
struct Row {
    metrics: BTreeMap<String, Option<f64>>,
    tokens: u64,
    selected: usize,
    latency_ms: f64,
}

/// The cell a curve is drawn for: a built selecting leg and the evaluated queries of one
/// dataset.
pub struct CurveCell<'a> {
    /// Dataset name.
    pub dataset: &'a str,
    /// Leg name.
    pub leg_name: &'a str,
    /// The leg, built once for its cell.
    pub leg: &'a dyn Leg,
    /// The dataset's export.
    pub export: &'a Export,
    /// Indices of the evaluated queries.
    pub idx: &'a [usize],
    /// The cell's key: a curve is reused only for the same cell and budgets.
    pub cell_key: &'a str,
}

/// The campaign's budgets, ascending, each once.
fn budgets_of(campaign: &Campaign) -> Vec<u64> {
    let mut budgets = campaign.budgets.clone();
    budgets.sort_unstable();
    budgets.dedup();
    budgets
}

/// The curve's key: its cell's key and the budgets it is drawn at.
fn curve_key(campaign: &Campaign, cell_key: &str) -> String {
    crate::store::cache::key_of(&(cell_key, &budgets_of(campaign)))
}

/// The cached curve of cell (`dataset`, `leg_name`) whose key is `cell_key`, if it is there,
/// has that key and its files verify. A curve that is there but not trusted is `None` (it is
/// recomputed), said on stderr when `warn`.
pub fn cached(
    campaign: &Campaign,
    s: &MatrixSettings,
    (dataset, leg_name): (&str, &str),
    cell_key: &str,
    warn: bool,
) -> Option<Curve> {
    let (json_path, parquet_path) = paths(&s.results, dataset, leg_name);
    if !json_path.exists() {
        return None;
    }
    let not_trusted = |why: String| {
        if warn {
            eprintln!(
                "warning: {dataset} x {leg_name}: cached budget curve not trusted ({why}); \
                 recomputing"
            )
        }
    };
    match read(&json_path) {
        Err(e) => not_trusted(format!("{e:#}")),
        Ok(prev) if prev.key == curve_key(campaign, cell_key) => {
            match verify(&prev, &json_path, &parquet_path) {
                Ok(()) => return Some(prev),
                Err(why) => not_trusted(why.to_string()),
            }
        }
        Ok(_) => {}
    }
    None
}

/// Computes (or reuses) the curve of `cell` over the campaign's budgets; `true` when computed.
pub fn run(
    campaign: &Campaign,
    s: &MatrixSettings,
    pool: &rayon::ThreadPool,
    cell: &CurveCell<'_>,
) -> Result<(Curve, bool)> {
    let CurveCell {
        dataset,
        leg_name,
        leg,
        export,
        idx,
        cell_key,
    } = *cell;
    let stats_cfg = &campaign.stats;
    let budgets = budgets_of(campaign);
    let key = curve_key(campaign, cell_key);
    let (json_path, parquet_path) = paths(&s.results, dataset, leg_name);
    if !s.force {
        if let Some(prev) = cached(campaign, s, (dataset, leg_name), cell_key, true) {
            return Ok((prev, false));
        }
    }
    let which = metrics::curve_metrics();
    let names = metric_names();
    let started = Instant::now();
    let rows: Vec<Result<Vec<Row>, evaluate::QueryFailure>> = pool.install(|| {
        idx.par_iter()
            .map(|&q| {
                let input = QueryInput::from_export(export, q);
                let t0 = Instant::now();
                // one retrieval and one rerank per query, then a selection per budget
                let fail = |e| evaluate::QueryFailure::of(&export.queries[q].id, &e);
                let retrieval = leg.retrieve(&input).map_err(fail)?;
                let retrieval = leg.rerank(&input, retrieval).map_err(fail)?;
                let retrieve_ms = t0.elapsed().as_secs_f64() * 1e3;
                budgets
                    .iter()
                    .map(|&b| {
                        let t = Instant::now();
                        let sel = leg.select(&input, &retrieval, Some(b)).map_err(|e| {
                            let id = format!("{}, budget {b}", export.queries[q].id);
                            evaluate::QueryFailure::of(&id, &e)
                        })?;
                        let select_ms = t.elapsed().as_secs_f64() * 1e3;
                        Ok(Row {
                            metrics: evaluate::score(export, &export.queries[q], &sel, &which),
                            tokens: sel.tokens,
                            selected: sel.chunks.len(),
                            latency_ms: retrieve_ms + select_ms,
                        })
                    })
                    .collect()
            })
            .collect()
    });
    let wall_ms = started.elapsed().as_secs_f64() * 1e3;
    let (rows, failures): (Vec<_>, Vec<_>) = rows.into_iter().partition(Result::is_ok);
    if let Some(reason) = evaluate::cell_failure(failures.into_iter().filter_map(Result::err)) {
        anyhow::bail!(reason);
    }
    let rows: Vec<Vec<Row>> = rows.into_iter().filter_map(Result::ok).collect();
    let mut points = Vec::new();
    let mut timings = Vec::new();
    for (bi, &budget) in budgets.iter().enumerate() {
        let at: Vec<&Row> = rows.iter().map(|r| &r[bi]).collect();
        let mut p = CurvePoint {
            budget,
            metrics: BTreeMap::new(),
            metrics_ci95: BTreeMap::new(),
            tokens_mean: metrics::mean(at.iter().map(|r| r.tokens as f64)).unwrap_or(0.0),
            tokens_max: at.iter().map(|r| r.tokens).max().unwrap_or(0),
            selected_mean: metrics::mean(at.iter().map(|r| r.selected as f64)).unwrap_or(0.0),
        };
        for n in &names {
            let m = metrics::mean_opt(at.iter().map(|r| r.metrics[n]));
            p.metrics.insert(n.clone(), m.mean);
            let values: Vec<f64> = at.iter().filter_map(|r| r.metrics[n]).collect();
            if let Some(ci) = stats_cfg.mean_ci(&values) {
                p.metrics_ci95.insert(n.clone(), ci);
            }
        }
        points.push(p);
        timings.push(PointTiming {
            budget,
            latency_ms: Dist::of(&at.iter().map(|r| r.latency_ms).collect::<Vec<_>>()),
        });
    }
    write_rows(&parquet_path, export, idx, &budgets, &names, &rows)?;
    let rows_hash = blake3::hash(
        &std::fs::read(&parquet_path)
            .with_context(|| format!("{}: cannot read back", parquet_path.display()))?,
    )
    .to_hex()
    .to_string();
    let curve = Curve {
        schema_version: CURVE_SCHEMA_VERSION,
        dataset: dataset.into(),
        leg: leg_name.into(),
        key,
        queries: idx.len(),
        points,
        rows: rows_hash,
        timing: Some(CurveTiming {
            threads: s.threads,
            wall_ms,
            points: timings,
            seal: None,
        }),
    };
    // the curve goes last: a curve on disk means its rows are complete
    let text = seal::sealed_text(&curve, |seal| {
        let mut sealed = curve.clone();
        sealed.timing.as_mut()?.seal = Some(seal);
        Some(sealed)
    });
    fsx::write_atomic(&json_path, text.as_bytes())?;
    Ok((curve, true))
}

fn write_rows(
    path: &Path,
    export: &Export,
    idx: &[usize],
    budgets: &[u64],
    names: &[String],
    rows: &[Vec<Row>],
) -> Result<()> {
    let mut qid = Vec::new();
    let mut budget = Vec::new();
    let mut tokens = Vec::new();
    let mut cols: Vec<Vec<Option<f64>>> = vec![Vec::new(); names.len()];
    for (qi, &q) in idx.iter().enumerate() {
        for (bi, &b) in budgets.iter().enumerate() {
            let r = &rows[qi][bi];
            qid.push(export.queries[q].id.clone());
            budget.push(b as f64);
            tokens.push(r.tokens as f64);
            for (ni, n) in names.iter().enumerate() {
                cols[ni].push(r.metrics[n]);
            }
        }
    }
    let mut columns = vec![
        ("query_id".to_string(), pq::strings(&qid)),
        ("budget".to_string(), pq::f64s(&budget)),
        ("tokens".to_string(), pq::f64s(&tokens)),
    ];
    for (ni, n) in names.iter().enumerate() {
        columns.push((n.clone(), pq::opt_f64s(&cols[ni])));
    }
    fsx::write_parquet_atomic(path, columns)
}

/// Per-query values of a curve: query ids (in order) and, per budget, each metric's values.
pub fn read_rows(path: &Path) -> Result<(Vec<String>, BTreeMap<u64, MetricColumns>)> {
    let batch = pq::read(path)?;
    let cols = Columns {
        path,
        batch: &batch,
    };
    let qid = cols.strings("query_id")?;
    let budget = cols.opt_f64s("budget")?;
    let budget: Vec<u64> = budget.iter().map(|b| b.unwrap_or(0.0) as u64).collect();
    // rows are query-major (every budget of query 1, then of query 2, ...)
    let first = budget.iter().copied().min().unwrap_or(0);
    let ids: Vec<String> = (0..qid.len())
        .filter(|&i| budget[i] == first)
        .map(|i| qid[i].clone())
        .collect();
    let mut per: BTreeMap<u64, MetricColumns> = BTreeMap::new();
    for n in metric_names() {
        let v = cols.opt_f64s(&n)?;
        for i in 0..qid.len() {
            per.entry(budget[i])
                .or_default()
                .entry(n.clone())
                .or_default()
                .push(v[i]);
        }
    }
    Ok((ids, per))
}
