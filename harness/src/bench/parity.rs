//! `hopbench serving-parity`: does serving the dense lane through Qdrant's HNSW change what a
//! leg retrieves? The seed's serving check, per `hnsw_ef`:
//!
//! - **ANN recall@10** of the dense lane: per query, the share of the exact top-10 (the exact
//!   engine over the same vectors) that the Qdrant engine's top-10 contains, with its 95% CI;
//! - **gate agreement**: the share of queries whose gate decision (`gate_fired`) is the same on
//!   both paths (legs without a gate report none);
//! - **each metric's paired difference** served − exact over the queries, with the campaign's
//!   paired-bootstrap CI and randomization p-value;
//! - **latency** (retrieve + select, ms) of both paths, median and p95, one query at a time on
//!   one thread, after a warm-up pass.
//!
//! Each is reported per quantisation of the shard (`none`: float32; `int8`, `binary`: the graph
//! walked over compressed vectors, the oversampled top k rescored with the originals), so what
//! a compression costs in recall and metrics stands beside float32 on the same queries.
//!
//! Every path is the campaign's leg with only its `dense` group changed, so what differs is the
//! engine and nothing else. The shard is built once per export and build settings and cached
//! under `<results>/shards/` (the first run pays for it; each shard's `secs` says what it cost).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use hopbench_datasets::export::Export;
use hopbench_datasets::hnsw::{HnswSettings, Quantization};
use hopbench_legs::engine::{EngineKind, ExactDense, QdrantDense, QdrantSpec, SideKind};
use hopbench_legs::registry::LegSpec;
use hopbench_legs::{Leg, QueryInput};
use serde::Serialize;

use crate::analysis::metrics;
use crate::pipeline::campaign::{Campaign, StatsConfig};
use crate::pipeline::data::DataSettings;

/// Latency of one path, ms.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Latency {
    /// Median.
    pub median_ms: f64,
    /// 95th percentile.
    pub p95_ms: f64,
}

/// One metric on both paths.
#[derive(Debug, Clone, Serialize)]
pub struct MetricParity {
    /// The metric (`recall@10`).
    pub metric: String,
    /// Queries where it is defined on both paths.
    pub queries: usize,
    /// Mean over them, exact path.
    pub exact: f64,
    /// Mean over them, served path.
    pub served: f64,
    /// served − exact.
    pub diff: f64,
    /// Paired-bootstrap 95% CI of the difference.
    pub ci95: Option<[f64; 2]>,
    /// Randomization-test p-value.
    pub p: Option<f64>,
}

/// One quantisation at one `hnsw_ef`.
#[derive(Debug, Clone, Serialize)]
pub struct EfParity {
    /// The shard's quantisation.
    pub quantization: Quantization,
    /// Search beam width.
    pub hnsw_ef: usize,
    /// Mean ANN recall@10 of the dense lane against the exact top-10.
    pub ann_recall_at_10: f64,
    /// Its bootstrap 95% CI.
    pub ann_recall_ci95: Option<[f64; 2]>,
    /// Queries whose dense top-10 equals the exact one as a set.
    pub ann_exact_queries: usize,
    /// Share of queries with the same gate decision on both paths (`None`: no gate).
    pub gate_agreement: Option<f64>,
    /// Queries whose gate fired on the exact / the served path.
    pub gate_fired: Option<[usize; 2]>,
    /// Queries whose selected list (every chunk, in order) differs from the exact path's.
    pub changed_queries: usize,
    /// Latency of the served path.
    pub latency: Latency,
    /// The dense lane alone through Qdrant (search only), for the engine's own cost.
    pub dense_latency: Latency,
    /// Every metric, served against exact.
    pub metrics: Vec<MetricParity>,
}

/// The whole check.
#[derive(Debug, Clone, Serialize)]
pub struct Parity {
    /// Dataset.
    pub dataset: String,
    /// Leg.
    pub leg: String,
    /// Chunks in the corpus.
    pub chunks: usize,
    /// Queries.
    pub queries: usize,
    /// Embedding model of the export.
    pub model_id: String,
    /// Graph build settings (of the float32 shard; each quantised one differs in its
    /// `quantization` alone).
    pub build: HnswSettings,
    /// Over a quantised shard, candidates per hit rescored with the originals (`None`:
    /// Qdrant's default, 1).
    pub oversampling: Option<f64>,
    /// The shards searched, one per quantisation.
    pub shards: Vec<ShardUse>,
    /// Timed passes per path.
    pub repeat: usize,
    /// Latency of the exact path.
    pub exact_latency: Latency,
    /// The exact dense lane alone (search only).
    pub exact_dense_latency: Latency,
    /// Per `hnsw_ef`.
    pub rows: Vec<EfParity>,
}

/// One shard the check searched.
#[derive(Debug, Clone, Serialize)]
pub struct ShardUse {
    /// Its quantisation.
    pub quantization: Quantization,
    /// Its directory.
    pub dir: String,
    /// Seconds spent building it (or opening and verifying it, when cached).
    pub secs: f64,
    /// Whether it was already on disk.
    pub cached: bool,
}

/// What one path retrieved per query, and how long it took.
struct PathRun {
    selections: Vec<Vec<u32>>,
    gate: Vec<Option<bool>>,
    metrics: BTreeMap<String, Vec<Option<f64>>>,
    times_ms: Vec<f64>,
}

fn run_path(
    leg: &dyn Leg,
    export: &Export,
    n: usize,
    recall_k: &[usize],
    repeat: usize,
) -> Result<PathRun> {
    let input = |q: usize| QueryInput {
        index: q,
        id: &export.queries[q].id,
        text: &export.queries[q].text,
        embedding: export.query_embedding(q),
        gold: &export.queries[q].gold,
    };
    let mut run = PathRun {
        selections: Vec::with_capacity(n),
        gate: Vec::with_capacity(n),
        metrics: BTreeMap::new(),
        times_ms: Vec::with_capacity(n * repeat),
    };
    // the warm-up pass is the one whose results are kept
    for q in 0..n {
        let inp = input(q);
        let r = leg.retrieve(&inp)?;
        let s = leg.select(&inp, &r, None)?;
        run.gate
            .push(r.diagnostics.get("gate_fired").map(|&v| v > 0.5));
        for (name, v) in
            crate::pipeline::evaluate::evaluate(export, &export.queries[q], &s, recall_k, &[])
        {
            run.metrics.entry(name).or_default().push(v);
        }
        run.selections.push(s.chunks);
    }
    for _ in 0..repeat {
        for q in 0..n {
            let inp = input(q);
            let t = Instant::now();
            let r = leg.retrieve(&inp)?;
            let s = leg.select(&inp, &r, None)?;
            run.times_ms.push(t.elapsed().as_secs_f64() * 1e3);
            std::hint::black_box(s);
        }
    }
    Ok(run)
}

fn latency(times: &[f64]) -> Latency {
    Latency {
        median_ms: metrics::median(times).unwrap_or(f64::NAN),
        p95_ms: metrics::percentile(times, 95.0).unwrap_or(f64::NAN),
    }
}

/// The dense lane's top-10 per query through `search`, and its search times.
fn dense_lane(
    export: &Export,
    n: usize,
    repeat: usize,
    search: impl Fn(&[f32]) -> Result<Vec<u32>>,
) -> Result<(Vec<Vec<u32>>, Vec<f64>)> {
    let tops = (0..n)
        .map(|q| search(export.query_embedding(q)))
        .collect::<Result<Vec<_>>>()?;
    let mut times = Vec::with_capacity(n * repeat);
    for _ in 0..repeat {
        for q in 0..n {
            let t = Instant::now();
            std::hint::black_box(search(export.query_embedding(q))?);
            times.push(t.elapsed().as_secs_f64() * 1e3);
        }
    }
    Ok((tops, times))
}

/// The campaign's leg `name` with its dense side set to `dense` (a JSON group, or `None` for
/// the exact engine); an error when the leg has no dense side.
fn with_dense(spec: &LegSpec, name: &str, dense: Option<serde_json::Value>) -> Result<LegSpec> {
    let mut map = spec.params();
    map.insert("kind".into(), spec.kind().into());
    let side = SideKind::Dense.key();
    match dense {
        Some(v) => map.insert(side.into(), v),
        None => map.remove(side),
    };
    LegSpec::from_flat(map).map_err(|e| {
        anyhow::anyhow!(
            "leg `{name}` (kind `{}`) cannot be served through Qdrant: {e} (serving parity \
             needs a leg with a dense side: dense, bm25, graph_rescue, the packers, ...)",
            spec.kind()
        )
    })
}

/// What the check compares: the beam widths and quantisations served, how the graph is built,
/// and over how many queries.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Search beam widths.
    pub efs: Vec<usize>,
    /// Shard quantisations, each a shard of its own.
    pub quantizations: Vec<Quantization>,
    /// Candidates per hit rescored over a quantised shard.
    pub oversampling: Option<f64>,
    /// Graph build settings (their `quantization` is replaced by each of `quantizations`).
    pub build: HnswSettings,
    /// Timed passes per path.
    pub repeat: usize,
    /// The first this many queries (`None`: all).
    pub limit: Option<usize>,
}

/// Runs the check of `leg` on the loaded `export` for each quantisation and beam width of
/// `plan`.
pub fn run(
    campaign: &Campaign,
    dataset: &str,
    export: &Arc<Export>,
    leg: &str,
    plan: &Plan,
    data: &DataSettings,
) -> Result<Parity> {
    let Plan {
        efs,
        build,
        repeat,
        oversampling,
        ..
    } = plan;
    let (build, repeat) = (*build, *repeat);
    let spec = campaign
        .legs
        .get(leg)
        .with_context(|| format!("no leg `{leg}` in the campaign"))?;
    build
        .validate()
        .map_err(|m| anyhow::anyhow!("--m / --ef-construct: {m}"))?;
    if efs.is_empty() {
        bail!("--hnsw-ef: give at least one value");
    }
    if let Some(&0) = efs.iter().find(|&&e| e == 0) {
        bail!("--hnsw-ef: 0 is not a beam width (at least 1)");
    }
    if plan.quantizations.is_empty() {
        bail!("--quantization: give at least one of none, int8, binary");
    }
    if let Some(o) = oversampling {
        if !(o.is_finite() && *o >= 1.0) {
            bail!("--oversampling: must be a number of at least 1, got {o}");
        }
        if plan.quantizations.iter().all(Quantization::is_none) {
            bail!("--oversampling applies only to a quantised shard: add --quantization int8 or binary");
        }
    }
    if plan.limit == Some(0) {
        bail!("--limit: 0 queries leaves nothing to compare (at least 1)");
    }
    let n = plan
        .limit
        .map_or(export.queries.len(), |l| l.min(export.queries.len()));
    let vectors = spec.dense_vectors();
    let exact_spec = with_dense(spec, leg, None)?;
    let build_leg = |s: &LegSpec| -> Result<Box<dyn Leg>> {
        crate::pipeline::leg_build::build(s, leg, export, data)?
            .map_err(|e| anyhow::anyhow!("{dataset} x {leg}: {e}"))
    };
    let exact_leg = build_leg(&exact_spec)?;

    let recall_k = &campaign.recall_k;
    let exact = run_path(exact_leg.as_ref(), export, n, recall_k, repeat)?;
    let exact_engine = ExactDense::new(export.clone(), vectors)?;
    let (exact_tops, exact_dense_times) = dense_lane(export, n, repeat, |q| {
        Ok(exact_engine
            .search_vector(q, 10)
            .map_err(|f| anyhow::anyhow!("exact dense search: {f}"))?
            .iter()
            .map(|c| c.chunk)
            .collect())
    })?;
    let stats = &campaign.stats;
    let mut rows = Vec::new();
    let mut shards = Vec::new();
    for &quantization in &plan.quantizations {
        let build = HnswSettings {
            quantization,
            ..build
        };
        let dir =
            hopbench_legs::engine::qdrant::shard_dir(&export.dir, &export.manifest, vectors, build);
        let cached = dir.join(hopbench_datasets::hnsw::MANIFEST).is_file();
        let t = Instant::now();
        let _shard = hopbench_legs::engine::qdrant::shard_for(export, vectors, build)?;
        shards.push(ShardUse {
            quantization,
            dir: dir.display().to_string(),
            secs: t.elapsed().as_secs_f64(),
            cached,
        });
        for &ef in efs {
            let qspec = QdrantSpec {
                hnsw_ef: ef,
                oversampling: oversampling.filter(|_| !quantization.is_none()),
                build,
            };
            let group = {
                let mut m = qspec.write();
                m.insert("engine".into(), QdrantSpec::NAME.into());
                serde_json::Value::Object(m)
            };
            let served_leg = build_leg(&with_dense(spec, leg, Some(group))?)?;
            let served = run_path(served_leg.as_ref(), export, n, recall_k, repeat)?;
            let engine = QdrantDense::new(export.clone(), vectors, &qspec)?;
            let (tops, dense_times) = dense_lane(export, n, repeat, |q| {
                Ok(engine
                    .search_vector(q, 10)
                    .map_err(|f| anyhow::anyhow!("qdrant dense search: {f}"))?
                    .iter()
                    .map(|c| c.chunk)
                    .collect())
            })?;
            let recall = ann_recall(&exact_tops, &tops);
            let (gate_agreement, gate_fired) = gate_agreement(&exact, &served);
            let ms = metric_parity(&exact, &served, recall_k, stats);
            rows.push(EfParity {
                quantization,
                hnsw_ef: ef,
                ann_recall_at_10: metrics::mean(recall.iter().copied()).unwrap_or(f64::NAN),
                ann_recall_ci95: stats.mean_ci(&recall),
                ann_exact_queries: recall.iter().filter(|&&r| r == 1.0).count(),
                gate_agreement,
                gate_fired,
                changed_queries: exact
                    .selections
                    .iter()
                    .zip(&served.selections)
                    .filter(|(a, b)| a != b)
                    .count(),
                latency: latency(&served.times_ms),
                dense_latency: latency(&dense_times),
                metrics: ms,
            });
        }
    }
    Ok(Parity {
        dataset: dataset.into(),
        leg: leg.into(),
        chunks: export.chunks.len(),
        queries: n,
        model_id: export.manifest.model_id.clone(),
        build: HnswSettings {
            quantization: Quantization::None,
            ..build
        },
        oversampling: *oversampling,
        shards,
        repeat,
        exact_latency: latency(&exact.times_ms),
        exact_dense_latency: latency(&exact_dense_times),
        rows,
    })
}

/// Per query, the share of the exact engine's top 10 the served engine's top 10 holds (1 where
/// the exact list is empty: nothing was there to miss).
fn ann_recall(exact_tops: &[Vec<u32>], tops: &[Vec<u32>]) -> Vec<f64> {
    exact_tops
        .iter()
        .zip(tops)
        .map(|(e, a)| {
            if e.is_empty() {
                1.0
            } else {
                e.iter().filter(|c| a.contains(c)).count() as f64 / e.len() as f64
            }
        })
        .collect()
}

/// Over the queries where both paths have a gate decision: the share where they agree, and how
/// often each fired (`None` for a leg without a gate).
fn gate_agreement(exact: &PathRun, served: &PathRun) -> (Option<f64>, Option<[usize; 2]>) {
    let both_gated: Vec<(bool, bool)> = exact
        .gate
        .iter()
        .zip(&served.gate)
        .filter_map(|(a, b)| Some(((*a)?, (*b)?)))
        .collect();
    if both_gated.is_empty() {
        return (None, None);
    }
    let agree = both_gated.iter().filter(|(a, b)| a == b).count();
    (
        Some(agree as f64 / both_gated.len() as f64),
        Some([
            both_gated.iter().filter(|(a, _)| *a).count(),
            both_gated.iter().filter(|(_, b)| *b).count(),
        ]),
    )
}

/// The paired difference of every measured metric, served − exact, over the queries where both
/// are defined (a metric defined on no query is left out).
fn metric_parity(
    exact: &PathRun,
    served: &PathRun,
    recall_k: &[usize],
    stats: &StatsConfig,
) -> Vec<MetricParity> {
    let mut ms = Vec::new();
    for col in metrics::measured(recall_k, &[]) {
        let name = col.name();
        let (Some(a), Some(b)) = (exact.metrics.get(&name), served.metrics.get(&name)) else {
            continue;
        };
        let (xa, xb): (Vec<f64>, Vec<f64>) = a
            .iter()
            .zip(b)
            .filter_map(|(x, y)| Some(((*x)?, (*y)?)))
            .unzip();
        if xa.is_empty() {
            continue;
        }
        let ea = metrics::mean(xa.iter().copied()).unwrap_or(f64::NAN);
        let eb = metrics::mean(xb.iter().copied()).unwrap_or(f64::NAN);
        ms.push(MetricParity {
            metric: name,
            queries: xa.len(),
            exact: ea,
            served: eb,
            diff: eb - ea,
            ci95: stats.paired_ci(&xa, &xb),
            p: stats.p_value(&xa, &xb),
        });
    }
    ms
}

/// A row's path name prefix: nothing for float32 (the rows read as they always did), else the
/// quantisation.
fn quantized(q: Quantization) -> String {
    if q.is_none() {
        String::new()
    } else {
        format!("{q} ")
    }
}

/// The file stem of a check's files: `parity-<dataset>-<leg>`.
pub fn stem(p: &Parity) -> String {
    format!("parity-{}-{}", p.dataset, p.leg)
}

fn ci(c: Option<[f64; 2]>) -> String {
    c.map_or_else(String::new, |[lo, hi]| format!(" [{lo:+.4}, {hi:+.4}]"))
}

/// The check as markdown: a header with the counts, the ANN and gate table, then each metric's
/// paired difference per `hnsw_ef`.
pub fn markdown(p: &Parity) -> String {
    let mut s = format!(
        "# Serving parity: {} x {}\n\n{} chunks, {} queries, model `{}`; HNSW m {}, ef_construct \
         {}, on_disk {}{}; latency over {} timed pass(es), one query at a time on one \
         thread.\n\n",
        p.dataset,
        p.leg,
        p.chunks,
        p.queries,
        p.model_id,
        p.build.m,
        p.build.ef_construct,
        p.build.on_disk,
        p.oversampling.map_or_else(String::new, |o| format!(
            ", oversampling {o} over a quantised shard"
        )),
        p.repeat
    );
    for shard in &p.shards {
        s += &format!(
            "- shard, quantization {}: {} ({:.2} s, {})\n",
            shard.quantization,
            shard.dir,
            shard.secs,
            if shard.cached {
                "cached: opened and verified"
            } else {
                "built"
            }
        );
    }
    s += "\n";
    s += "| path | ANN R@10 vs exact [95% CI] | queries with the exact top-10 | gate agreement | queries whose selection changed | leg median / p95 ms | dense search median / p95 ms |\n|---|---|---|---|---|---|---|\n";
    s += &format!(
        "| exact | 1 | {n} / {n} | - | - | {:.3} / {:.3} | {:.3} / {:.3} |\n",
        p.exact_latency.median_ms,
        p.exact_latency.p95_ms,
        p.exact_dense_latency.median_ms,
        p.exact_dense_latency.p95_ms,
        n = p.queries
    );
    for r in &p.rows {
        let gate = match (r.gate_agreement, r.gate_fired) {
            (Some(a), Some([e, q])) => format!("{:.4} (fired {e} exact, {q} served)", a),
            _ => "no gate".into(),
        };
        s += &format!(
            "| qdrant {}hnsw_ef {} | {:.6}{} | {} / {} | {} | {} | {:.3} / {:.3} | {:.3} / {:.3} |\n",
            quantized(r.quantization),
            r.hnsw_ef,
            r.ann_recall_at_10,
            r.ann_recall_ci95
                .map_or_else(String::new, |[lo, hi]| format!(" [{lo:.4}, {hi:.4}]")),
            r.ann_exact_queries,
            p.queries,
            gate,
            r.changed_queries,
            r.latency.median_ms,
            r.latency.p95_ms,
            r.dense_latency.median_ms,
            r.dense_latency.p95_ms
        );
    }
    s += "\nPaired differences, served − exact (mean over the queries where the metric is defined; 95% paired-bootstrap CI; randomization p):\n\n| quantization | hnsw_ef | metric | queries | exact | served | diff [95% CI] | p |\n|---|---|---|---|---|---|---|---|\n";
    for r in &p.rows {
        for m in &r.metrics {
            s += &format!(
                "| {} | {} | {} | {} | {:.4} | {:.4} | {:+.4}{} | {} |\n",
                r.quantization,
                r.hnsw_ef,
                m.metric,
                m.queries,
                m.exact,
                m.served,
                m.diff,
                ci(m.ci95),
                m.p.map_or_else(|| "-".into(), |p| format!("{p:.4}"))
            );
        }
    }
    s
}

/// Writes `parity-<dataset>-<leg>.json` and `.md` into `out`; returns the paths (the plot is
/// [`crate::bench::parity_plot::write`]'s).
pub fn write(out: &Path, p: &Parity) -> Result<Vec<std::path::PathBuf>> {
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let stem = stem(p);
    let json = out.join(format!("{stem}.json"));
    let md = out.join(format!("{stem}.md"));
    crate::store::fsx::write_atomic(
        &json,
        (serde_json::to_string_pretty(p).expect("serialisable") + "\n").as_bytes(),
    )?;
    crate::store::fsx::write_atomic(&md, markdown(p).as_bytes())?;
    Ok(vec![json, md])
}
