//! `hopbench serving-parity`: does serving the dense lane through another engine (a served one
//! such as the HNSW engine, approximate, with its own index) change what a leg retrieves? The
//! seed's serving check, per variant of the served engine's group:
//!
//! - **ANN recall@10** of the dense lane: per query, the share of the exact top-10 (the dense
//!   side's built-in engine over the same vectors) that the served engine's top-10 contains,
//!   with its 95% CI;
//! - **gate agreement**: the share of queries whose gate decision (`gate_fired`) is the same on
//!   both paths (legs without a gate report none);
//! - **each metric's paired difference** served − exact over the queries, with the campaign's
//!   paired-bootstrap CI and randomization p-value;
//! - **latency** (retrieve + select, ms) of both paths, median and p95, one query at a time on
//!   one thread, after a warm-up pass; and of the dense lanes alone (search only).
//!
//! The served engine is named the way a campaign names it, `--engine '{engine: NAME, ...}'`,
//! and read through the engine registry ([`hopbench_legs::engine::ENGINES`]); `--vary
//! KEY=V1,V2,...` serves each value of a key of its group, several `--vary` their product (the
//! first outermost). So every engine of the registry that answers the dense side can be
//! compared, and nothing here names one.
//!
//! Every path is the campaign's leg with only its `dense` group changed, so what differs is the
//! engine and nothing else: the reference path has the group removed (the side's built-in
//! engine), each served path the variant's group. An index a served engine builds over the
//! export (what its [`cache_inputs`](hopbench_legs::engine::EngineConfig::cache_inputs) names)
//! is built once and cached where the engine keeps it (the first run pays; each index's `secs`
//! says what its first build or open cost, and `cached` whether it was already there).

use std::collections::{BTreeMap, VecDeque};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{anyhow, bail, Context, Result};
use hopbench_datasets::export::Export;
use hopbench_legs::engine::{
    CacheInputs, Engine, EngineConfig, EngineEntry, ExportRef, Side, SideKind, Vectors, ENGINES,
};
use hopbench_legs::params::Flat;
use hopbench_legs::registry::LegSpec;
use hopbench_legs::{Leg, QueryInput};
use serde::ser::SerializeMap;
use serde::Serialize;
use serde_json::Value;

use crate::measure::metrics;
use crate::measure::stats_config::StatsConfig;
use crate::pipeline::campaign::Campaign;
use crate::pipeline::data::DataSettings;

/// The most variants one check serves (the product of the `--vary` value lists): each builds
/// a leg and times every query `repeat` times, so a larger grid is several runs.
pub const MAX_VARIANTS: usize = 64;

/// The key of the engine's name in a side's group (`{engine: NAME, ...}`).
const ENGINE_KEY: &str = "engine";

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

/// Keys of the engine's group and their values, in the order `--vary` gave them (written as a
/// JSON map in that order).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Assignments(pub Vec<(String, Value)>);

impl Assignments {
    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// `k=v, k=v` (strings unquoted), or `None` when there are none.
    pub fn label(&self) -> Option<String> {
        if self.0.is_empty() {
            return None;
        }
        let parts: Vec<String> = self
            .0
            .iter()
            .map(|(k, v)| format!("{k}={}", show(v)))
            .collect();
        Some(parts.join(", "))
    }
}

impl Serialize for Assignments {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

/// A value as a campaign would write it: a string bare, anything else as JSON (which a YAML
/// flow node reads back).
pub fn show(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A group as a YAML flow map: `{k: v, ...}`.
pub fn flow(group: &Flat) -> String {
    let parts: Vec<String> = group
        .iter()
        .map(|(k, v)| format!("{k}: {}", show(v)))
        .collect();
    format!("{{{}}}", parts.join(", "))
}

/// One variant of the served engine, measured against the exact path.
#[derive(Debug, Clone, Serialize)]
pub struct VariantParity {
    /// The varied keys and their values, in `--vary` order (empty without `--vary`).
    pub params: Assignments,
    /// The engine's whole group as read, every default filled in (without `engine`).
    pub group: Flat,
    /// The indexes it searched (names of [`Parity::indexes`]).
    pub indexes: Vec<String>,
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
    /// The served dense lane alone (search only), for the engine's own cost.
    pub dense_latency: Latency,
    /// Every metric, served against exact.
    pub metrics: Vec<MetricParity>,
}

/// One `--vary`: a key of the engine's group and the values served, in the order given.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Vary {
    /// The key.
    pub key: String,
    /// Its values.
    pub values: Vec<Value>,
}

/// An index a served engine built (or found) over the export, as its `cache_inputs` names it.
#[derive(Debug, Clone, Serialize)]
pub struct IndexUse {
    /// Its name (the engine's cache directory name).
    pub name: String,
    /// Its identity after the first build (a digest, for an index the engine verifies).
    pub identity: String,
    /// Seconds the first build of the engine over it took (building it, or opening and
    /// verifying it when it was already there).
    pub secs: f64,
    /// Whether every index of that build was already there: its identity was the same before
    /// and after the build.
    pub cached: bool,
    /// The row whose build paid for it (variants sharing an index share this entry).
    pub first_row: usize,
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
    /// The served engine's name.
    pub engine: String,
    /// Its group as `--engine` gave it (without `engine`).
    pub base: Flat,
    /// What `--vary` varied, in order (the rows are their product, the first outermost).
    pub vary: Vec<Vary>,
    /// The reference: the dense side's built-in engine.
    pub reference: String,
    /// The indexes the served engine built or opened, one per distinct index.
    pub indexes: Vec<IndexUse>,
    /// Timed passes per path.
    pub repeat: usize,
    /// Latency of the exact path.
    pub exact_latency: Latency,
    /// The exact dense lane alone (search only).
    pub exact_dense_latency: Latency,
    /// One per variant.
    pub rows: Vec<VariantParity>,
}

/// One variant of the served engine: its varied values and its group read through the
/// registry.
#[derive(Debug, Clone)]
pub struct Variant {
    /// The varied keys and values (empty without `--vary`).
    pub params: Assignments,
    /// The engine's group.
    pub config: Arc<dyn EngineConfig>,
}

impl Variant {
    /// The flag an error about this variant is about.
    fn flag(&self) -> String {
        flag(&self.params)
    }
}

/// The flag an error about the variant of `params` is about: `--engine`, or `--vary` and the
/// variant.
fn flag(params: &Assignments) -> String {
    match params.label() {
        None => "--engine".into(),
        Some(l) => format!("--vary variant `{l}`"),
    }
}

/// The served engine as the command line gives it: `--engine` and every variant of `--vary`.
#[derive(Debug, Clone)]
pub struct Served {
    /// The engine's name.
    pub engine: &'static str,
    /// `--engine`'s group without `engine`.
    pub base: Flat,
    /// The `--vary` flags.
    pub vary: Vec<Vary>,
    /// Their product, each read through the registry.
    pub variants: Vec<Variant>,
}

/// Reads a YAML text as the campaign reader does (unknown tags refused).
fn yaml(text: &str) -> std::result::Result<Value, String> {
    serde_saphyr::from_str_with_options(text, crate::pipeline::yaml::options())
        .map_err(|e| e.to_string())
}

/// The engines that can be served: those answering the dense side, but its default.
fn servable() -> String {
    let default = EngineEntry::default_for(SideKind::Dense).name;
    let names: Vec<&str> = EngineEntry::names(SideKind::Dense)
        .into_iter()
        .filter(|n| *n != default)
        .collect();
    names.join(", ")
}

/// `--engine`: the registry's entry of the engine it names and the rest of its group.
pub fn parse_engine(text: &str) -> Result<(&'static EngineEntry, Flat)> {
    let value = yaml(text).map_err(|e| anyhow!("--engine: not a YAML map: {e}"))?;
    let Value::Object(mut group) = value else {
        bail!(
            "--engine: must be a YAML map like {{engine: NAME, ...}} (NAME one of: {}), got `{text}`",
            servable()
        );
    };
    let name = match group.remove(ENGINE_KEY) {
        Some(Value::String(s)) => s,
        Some(other) => bail!("--engine: `engine` must be a string, got {other}"),
        None => bail!("--engine: missing `engine` (one of: {})", servable()),
    };
    let dense = SideKind::Dense;
    let Some(entry) = EngineEntry::named(dense, &name) else {
        if ENGINES.iter().any(|e| e.name == name) {
            bail!(
                "--engine: engine `{name}` does not answer the dense side (the engines that do: {})",
                servable()
            );
        }
        bail!(
            "--engine: unknown engine `{name}` (the engines answering the dense side: {})",
            servable()
        );
    };
    if entry.name == EngineEntry::default_for(dense).name {
        bail!(
            "--engine: `{name}` is the dense side's built-in engine, the reference every variant \
             is compared with: comparing it with itself measures nothing (serve one of: {})",
            servable()
        );
    }
    if let Err(how) = entry.built {
        bail!("--engine: {how}");
    }
    Ok((entry, group))
}

/// Splits `s` at the commas outside brackets, braces and quotes (so a value may be a flow
/// list such as `[a, b]`).
fn split_values(s: &str) -> Vec<&str> {
    let (mut out, mut start, mut depth, mut quote) = (Vec::new(), 0, 0i32, None);
    for (i, c) in s.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '[' | '{') => depth += 1,
            (None, ']' | '}') => depth -= 1,
            (None, ',') if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

/// One `--vary KEY=V1,V2,...`, each value read as a YAML node (`16` a number, `int8` a string,
/// `true` a boolean).
fn parse_one_vary(arg: &str) -> Result<Vary> {
    let Some((key, list)) = arg.split_once('=') else {
        bail!("--vary {arg}: write KEY=V1,V2,... (a key of the engine's group and its values)");
    };
    let key = key.trim();
    if key.is_empty() {
        bail!("--vary {arg}: no key before `=`");
    }
    if key == ENGINE_KEY {
        bail!("--vary {arg}: the engine is --engine's, not a key to vary (run the check once per engine)");
    }
    if list.trim().is_empty() {
        bail!("--vary {arg}: no values after `=` (give at least one)");
    }
    let mut values = Vec::new();
    for piece in split_values(list) {
        let piece = piece.trim();
        if piece.is_empty() {
            bail!("--vary {arg}: an empty value (two commas in a row, or one at an end)");
        }
        let v = yaml(piece).map_err(|e| anyhow!("--vary {arg}: value `{piece}`: {e}"))?;
        if values.contains(&v) {
            bail!("--vary {arg}: value `{piece}` given twice");
        }
        values.push(v);
    }
    Ok(Vary {
        key: key.to_string(),
        values,
    })
}

/// Every `--vary`; a key given twice is refused.
pub fn parse_vary(args: &[String]) -> Result<Vec<Vary>> {
    let mut out: Vec<Vary> = Vec::new();
    for arg in args {
        let v = parse_one_vary(arg)?;
        if out.iter().any(|o| o.key == v.key) {
            bail!(
                "--vary {arg}: key `{}` is varied twice; give all its values in one --vary",
                v.key
            );
        }
        out.push(v);
    }
    Ok(out)
}

/// The cartesian product of the `--vary` lists, the first outermost, values in the order given
/// (one empty assignment without any).
pub fn product(vary: &[Vary]) -> Vec<Assignments> {
    let mut out = vec![Vec::new()];
    for v in vary {
        out = out
            .into_iter()
            .flat_map(|prefix: Vec<(String, Value)>| {
                v.values.iter().map(move |x| {
                    let mut p = prefix.clone();
                    p.push((v.key.clone(), x.clone()));
                    p
                })
            })
            .collect();
    }
    out.into_iter().map(Assignments).collect()
}

/// `--engine` and `--vary` read, every variant's group read through the registry (an unknown
/// key or a bad value is the engine's own error, naming the flag and the variant).
pub fn served(engine: &str, vary: &[String]) -> Result<Served> {
    let (entry, base) = parse_engine(engine)?;
    let vary = parse_vary(vary)?;
    let count = vary
        .iter()
        .fold(1usize, |n, v| n.saturating_mul(v.values.len()));
    if count > MAX_VARIANTS {
        bail!(
            "--vary: {count} variants (the product of the value lists) is more than {MAX_VARIANTS}; \
             split the check into several runs"
        );
    }
    let mut variants = Vec::with_capacity(count);
    for params in product(&vary) {
        let mut group = base.clone();
        for (k, v) in &params.0 {
            group.insert(k.clone(), v.clone());
        }
        let config = entry
            .read(&group)
            .map_err(|e| anyhow!("{}: {e}", flag(&params)))?;
        let variant = Variant { params, config };
        variants.push(variant);
    }
    Ok(Served {
        engine: entry.name,
        base,
        vary,
        variants,
    })
}

/// What the check compares, validated before any export is opened.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The campaign leg.
    pub leg: String,
    /// The vector set its dense side searches.
    pub vectors: Vectors,
    /// The leg on the dense side's built-in engine.
    pub reference: LegSpec,
    /// The served engine and its variants.
    pub served: Served,
    /// The leg on each variant, in the order of `served.variants`.
    pub specs: Vec<LegSpec>,
    /// Timed passes per path.
    pub repeat: usize,
    /// The first this many queries (`None`: all).
    pub limit: Option<usize>,
}

/// The campaign's leg `name` with its dense side set to `dense` (a JSON group, or `None` for
/// the side's built-in engine); an error when the leg has no dense side.
fn with_dense(spec: &LegSpec, name: &str, dense: Option<Value>) -> Result<LegSpec> {
    let mut map = spec.params();
    map.insert("kind".into(), spec.kind().into());
    let side = SideKind::Dense.key();
    match dense {
        Some(v) => map.insert(side.into(), v),
        None => map.remove(side),
    };
    LegSpec::from_flat(map).map_err(|e| {
        anyhow!(
            "leg `{name}` (kind `{}`) has no dense side to serve through another engine: {e} \
             (serving parity needs a leg with a dense side: dense, bm25, graph_rescue, the \
             packers, ...)",
            spec.kind()
        )
    })
}

/// The plan of checking `leg` of `campaign` against each variant of `served`: the leg on each
/// variant is read and validated as a campaign leg would be (the engine's own range checks).
pub fn prepare(
    campaign: &Campaign,
    leg: &str,
    served: Served,
    repeat: usize,
    limit: Option<usize>,
) -> Result<Plan> {
    let spec = campaign
        .legs
        .get(leg)
        .with_context(|| format!("no leg `{leg}` in the campaign"))?;
    if limit == Some(0) {
        bail!("--limit: 0 queries leaves nothing to compare (at least 1)");
    }
    let reference = with_dense(spec, leg, None)?;
    let mut specs = Vec::with_capacity(served.variants.len());
    for v in &served.variants {
        let mut group = v.config.params();
        group.insert(ENGINE_KEY.into(), v.config.name().into());
        let s = with_dense(spec, leg, Some(Value::Object(group)))?;
        s.validate(leg).map_err(|e| anyhow!("{}: {e}", v.flag()))?;
        specs.push(s);
    }
    Ok(Plan {
        leg: leg.to_string(),
        vectors: spec.dense_vectors(),
        reference,
        served,
        specs,
        repeat,
        limit,
    })
}

/// The queries a path runs over, and how often they are timed.
struct Passes<'a> {
    export: &'a Export,
    n: usize,
    recall_k: &'a [usize],
    repeat: usize,
}

/// What one path retrieved per query, and how long it took.
struct PathRun {
    selections: Vec<Vec<u32>>,
    gate: Vec<Option<bool>>,
    metrics: BTreeMap<String, Vec<Option<f64>>>,
    times_ms: Vec<f64>,
}

/// One path measured: the whole leg, and its dense lane alone.
struct Measured {
    path: PathRun,
    /// The dense lane's top-10 per query.
    tops: Vec<Vec<u32>>,
    /// Its search times.
    dense_ms: Vec<f64>,
}

fn run_path(leg: &dyn Leg, ps: &Passes<'_>) -> Result<PathRun> {
    let export = ps.export;
    let mut run = PathRun {
        selections: Vec::with_capacity(ps.n),
        gate: Vec::with_capacity(ps.n),
        metrics: BTreeMap::new(),
        times_ms: Vec::with_capacity(ps.n * ps.repeat),
    };
    // the warm-up pass is the one whose results are kept
    for q in 0..ps.n {
        let inp = QueryInput::from_export(export, q);
        let r = leg.retrieve(&inp)?;
        let s = leg.select(&inp, &r, None)?;
        run.gate
            .push(r.diagnostics.get("gate_fired").map(|&v| v > 0.5));
        for (name, v) in
            crate::pipeline::evaluate::evaluate(export, &export.queries[q], &s, ps.recall_k, &[])
        {
            run.metrics.entry(name).or_default().push(v);
        }
        run.selections.push(s.chunks);
    }
    for _ in 0..ps.repeat {
        for q in 0..ps.n {
            let inp = QueryInput::from_export(export, q);
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

/// The dense lane's top-10 per query through `engine`, and its search times.
fn dense_lane(engine: &dyn Engine, ps: &Passes<'_>) -> Result<(Vec<Vec<u32>>, Vec<f64>)> {
    let search = |q: usize| -> Result<Vec<u32>> {
        let hits = engine
            .search(&QueryInput::from_export(ps.export, q), 10)
            .map_err(|e| anyhow!("{} dense search: {e}", engine.name()))?;
        Ok(hits.iter().map(|c| c.chunk).collect())
    };
    let tops = (0..ps.n).map(search).collect::<Result<Vec<_>>>()?;
    let mut times = Vec::with_capacity(ps.n * ps.repeat);
    for _ in 0..ps.repeat {
        for q in 0..ps.n {
            let t = Instant::now();
            std::hint::black_box(search(q)?);
            times.push(t.elapsed().as_secs_f64() * 1e3);
        }
    }
    Ok((tops, times))
}

/// The whole leg, then its dense lane alone through `engine`.
fn measure(leg: &dyn Leg, engine: &dyn Engine, ps: &Passes<'_>) -> Result<Measured> {
    let path = run_path(leg, ps)?;
    let (tops, dense_ms) = dense_lane(engine, ps)?;
    Ok(Measured {
        path,
        tops,
        dense_ms,
    })
}

/// The index identities `config` reports over the export's `vectors`, by index name.
fn index_identities(
    config: &dyn EngineConfig,
    export: &Export,
    vectors: Vectors,
) -> BTreeMap<String, String> {
    let mut out = CacheInputs::default();
    let at = ExportRef::of(export);
    config.cache_inputs(Side::Dense(vectors), Some(at), &mut out);
    out.indexes
}

/// Builds the served engine of `variant` (row `row`), timing the build; each index it reports
/// that no earlier row did is recorded in `indexes`. Returns the engine and its index names.
fn build_variant(
    export: &Arc<Export>,
    vectors: Vectors,
    variant: &Variant,
    row: usize,
    indexes: &mut Vec<IndexUse>,
) -> Result<(Box<dyn Engine>, Vec<String>)> {
    let config = variant.config.as_ref();
    let before = index_identities(config, export, vectors);
    let t = Instant::now();
    let engine = config
        .build(export, Side::Dense(vectors))
        .map_err(|e| anyhow!("{}: {e}", variant.flag()))?;
    let secs = t.elapsed().as_secs_f64();
    let after = index_identities(config, export, vectors);
    let cached = before == after;
    for (name, identity) in &after {
        if indexes.iter().all(|u| &u.name != name) {
            indexes.push(IndexUse {
                name: name.clone(),
                identity: identity.clone(),
                secs,
                cached,
                first_row: row,
            });
        }
    }
    Ok((engine, after.into_keys().collect()))
}

/// Runs the check of `plan` on the loaded `export` of `dataset`: the reference path once, then
/// each variant.
pub fn run(
    campaign: &Campaign,
    dataset: &str,
    export: &Arc<Export>,
    plan: &Plan,
    data: &DataSettings,
) -> Result<Parity> {
    let leg = plan.leg.as_str();
    let ps = Passes {
        export,
        n: plan
            .limit
            .map_or(export.queries.len(), |l| l.min(export.queries.len())),
        recall_k: &campaign.recall_k,
        repeat: plan.repeat,
    };
    let build_leg = |s: &LegSpec| -> Result<Box<dyn Leg>> {
        crate::pipeline::leg_build::build(s, leg, export, data, None)?
            .map_err(|e| anyhow!("{dataset} x {leg}: {e}"))
    };
    let default = EngineEntry::default_for(SideKind::Dense);
    let reference = default
        .read(&Flat::new())?
        .build(export, Side::Dense(plan.vectors))?;
    let exact = measure(
        build_leg(&plan.reference)?.as_ref(),
        reference.as_ref(),
        &ps,
    )?;
    drop(reference);
    let mut indexes = Vec::new();
    let mut rows = Vec::with_capacity(plan.specs.len());
    // the engine of the previous variant stays open while the next is built, so variants
    // sharing an index (given next to each other) share one open copy of it
    let mut open: VecDeque<Box<dyn Engine>> = VecDeque::new();
    for (i, (variant, spec)) in plan.served.variants.iter().zip(&plan.specs).enumerate() {
        let (engine, used) = build_variant(export, plan.vectors, variant, i, &mut indexes)?;
        open.push_back(engine);
        if open.len() > 2 {
            open.pop_front();
        }
        let engine = open.back().expect("just pushed").as_ref();
        let served = measure(build_leg(spec)?.as_ref(), engine, &ps)?;
        rows.push(compare(&exact, &served, variant, used, campaign));
    }
    Ok(Parity {
        dataset: dataset.into(),
        leg: leg.into(),
        chunks: export.chunks.len(),
        queries: ps.n,
        model_id: export.manifest.model_id.clone(),
        engine: plan.served.engine.into(),
        base: plan.served.base.clone(),
        vary: plan.served.vary.clone(),
        reference: default.name.into(),
        indexes,
        repeat: plan.repeat,
        exact_latency: latency(&exact.path.times_ms),
        exact_dense_latency: latency(&exact.dense_ms),
        rows,
    })
}

/// One variant's row: the served path measured against the exact one.
fn compare(
    exact: &Measured,
    served: &Measured,
    variant: &Variant,
    indexes: Vec<String>,
    campaign: &Campaign,
) -> VariantParity {
    let stats = &campaign.stats;
    let recall = ann_recall(&exact.tops, &served.tops);
    let (gate_agreement, gate_fired) = gate_agreement(&exact.path, &served.path);
    VariantParity {
        params: variant.params.clone(),
        group: variant.config.params(),
        indexes,
        ann_recall_at_10: metrics::mean(recall.iter().copied()).unwrap_or(f64::NAN),
        ann_recall_ci95: stats.mean_ci(&recall),
        ann_exact_queries: recall.iter().filter(|&&r| r == 1.0).count(),
        gate_agreement,
        gate_fired,
        changed_queries: exact
            .path
            .selections
            .iter()
            .zip(&served.path.selections)
            .filter(|(a, b)| a != b)
            .count(),
        latency: latency(&served.path.times_ms),
        dense_latency: latency(&served.dense_ms),
        metrics: metric_parity(&exact.path, &served.path, &campaign.recall_k, stats),
    }
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

/// The file stem of a check's files: `parity-<dataset>-<leg>`.
pub fn stem(p: &Parity) -> String {
    format!("parity-{}-{}", p.dataset, p.leg)
}

fn ci(c: Option<[f64; 2]>) -> String {
    c.map_or_else(String::new, |[lo, hi]| format!(" [{lo:+.4}, {hi:+.4}]"))
}

/// A row's cells of the varied keys: ` v1 | v2 |` (nothing without `--vary`).
fn key_cells(p: &Parity, r: &VariantParity) -> String {
    p.vary
        .iter()
        .map(|v| format!(" {} |", r.params.get(&v.key).map_or_else(String::new, show)))
        .collect()
}

/// The header cells of the varied keys (` k1 | k2 |`) and their separators (`---|---|`).
fn key_header(p: &Parity) -> (String, String) {
    let names: String = p.vary.iter().map(|v| format!(" {} |", v.key)).collect();
    (names, "---|".repeat(p.vary.len()))
}

/// The header: counts, the engine and its group, and each index it built or opened.
fn markdown_header(p: &Parity) -> String {
    let mut s = format!(
        "# Serving parity: {} x {}\n\n{} chunks, {} queries, model `{}`; the dense side served \
         by engine `{}` with `{}`{}, against its built-in engine `{}`; latency over {} timed \
         pass(es), one query at a time on one thread.\n\n",
        p.dataset,
        p.leg,
        p.chunks,
        p.queries,
        p.model_id,
        p.engine,
        flow(&p.base),
        p.vary.iter().fold(String::new(), |acc, v| {
            let values: Vec<String> = v.values.iter().map(show).collect();
            acc + &format!(", {} in {}", v.key, values.join(" / "))
        }),
        p.reference,
        p.repeat
    );
    for ix in &p.indexes {
        let first = p.rows[ix.first_row]
            .params
            .label()
            .map_or_else(String::new, |l| format!(", first searched by {l}"));
        s += &format!(
            "- index `{}`: {:.2} s ({}{first})\n",
            ix.name,
            ix.secs,
            if ix.cached { "cached: opened" } else { "built" },
        );
    }
    if !p.indexes.is_empty() {
        s += "\n";
    }
    s
}

/// The ANN, gate, selection and latency table: the exact path, then a row per variant.
fn markdown_paths(p: &Parity) -> String {
    let (keys, seps) = key_header(p);
    let mut s = format!(
        "| path |{keys} ANN R@10 vs exact [95% CI] | queries with the exact top-10 | gate \
         agreement | queries whose selection changed | leg median / p95 ms | dense search \
         median / p95 ms |\n|---|{seps}---|---|---|---|---|---|\n"
    );
    s += &format!(
        "| {} |{} 1 | {n} / {n} | - | - | {:.3} / {:.3} | {:.3} / {:.3} |\n",
        p.reference,
        " - |".repeat(p.vary.len()),
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
            "| {} |{} {:.6}{} | {} / {} | {} | {} | {:.3} / {:.3} | {:.3} / {:.3} |\n",
            p.engine,
            key_cells(p, r),
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
    s
}

/// The check as markdown: a header with the counts and the indexes, the ANN and gate table,
/// then each metric's paired difference per variant (a column per varied key in both tables).
pub fn markdown(p: &Parity) -> String {
    let mut s = markdown_header(p);
    s += &markdown_paths(p);
    let (keys, seps) = key_header(p);
    s += &format!(
        "\nPaired differences, served − exact (mean over the queries where the metric is \
         defined; 95% paired-bootstrap CI; randomization p):\n\n|{keys} metric | queries | \
         exact | served | diff [95% CI] | p |\n|{seps}---|---|---|---|---|---|\n"
    );
    for r in &p.rows {
        let cells = key_cells(p, r);
        for m in &r.metrics {
            s += &format!(
                "|{} {} | {} | {:.4} | {:.4} | {:+.4}{} | {} |\n",
                cells,
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn vary(args: &[&str]) -> Result<Vec<Vary>> {
        parse_vary(&args.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn values_are_yaml_nodes_and_the_product_is_first_outermost() {
        let v = vary(&[
            "hnsw_ef=16, 64",
            "quantization=none,int8",
            "on_disk=true",
            "command=[python3, a.py],[b, 'x,y']",
        ])
        .unwrap();
        assert_eq!(v[0].values, [json!(16), json!(64)]);
        assert_eq!(v[1].values, [json!("none"), json!("int8")]);
        assert_eq!(v[2].values, [json!(true)]);
        assert_eq!(
            v[3].values,
            [json!(["python3", "a.py"]), json!(["b", "x,y"])]
        );
        // quoted, a number is a string (the engine's read refuses it where it wants a number)
        assert_eq!(
            vary(&["m='16',2.5,null"]).unwrap()[0].values,
            [json!("16"), json!(2.5), Value::Null]
        );
        let labels: Vec<String> = product(&v[..2])
            .iter()
            .map(|a| a.label().unwrap())
            .collect();
        assert_eq!(
            labels,
            [
                "hnsw_ef=16, quantization=none",
                "hnsw_ef=16, quantization=int8",
                "hnsw_ef=64, quantization=none",
                "hnsw_ef=64, quantization=int8",
            ]
        );
        assert_eq!(product(&v).len(), 8);
        // no --vary: one variant, the group as given
        assert_eq!(product(&[]), vec![Assignments::default()]);
        // written in --vary order, not sorted
        let a = &product(&v[..2])[0];
        assert_eq!(
            serde_json::to_string(a).unwrap(),
            r#"{"hnsw_ef":16,"quantization":"none"}"#
        );
    }

    #[test]
    fn a_bad_vary_is_refused_naming_the_flag() {
        for (args, says) in [
            (&["hnsw_ef"][..], "write KEY=V1,V2"),
            (&["=1,2"][..], "no key before `=`"),
            (&["hnsw_ef="][..], "no values after `=`"),
            (&["hnsw_ef=1,,2"][..], "an empty value"),
            (&["hnsw_ef=1,"][..], "an empty value"),
            (&["hnsw_ef=1,2,1"][..], "value `1` given twice"),
            (&["engine=a,b"][..], "not a key to vary"),
            (&["m=1", "m=2"][..], "key `m` is varied twice"),
        ] {
            let e = vary(args).unwrap_err().to_string();
            assert!(
                e.starts_with("--vary ") && e.contains(says),
                "{args:?}: {e}"
            );
        }
    }

    fn refused(r: Result<(&'static EngineEntry, Flat)>) -> String {
        match r {
            Ok((e, _)) => panic!("engine `{}` accepted", e.name),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn the_engine_flag_names_a_served_engine_of_the_dense_side() {
        let default = EngineEntry::default_for(SideKind::Dense).name;
        for (text, says) in [
            ("[1, 2]".to_string(), "must be a YAML map".to_string()),
            ("{m: 16}".into(), "missing `engine` (one of: ".into()),
            ("{engine: 7}".into(), "`engine` must be a string".into()),
            ("{engine: nosuch}".into(), "unknown engine `nosuch`".into()),
            (
                format!("{{engine: {default}}}"),
                "comparing it with itself measures nothing".into(),
            ),
        ] {
            let e = refused(parse_engine(&text));
            assert!(
                e.starts_with("--engine: ") && e.contains(&says),
                "{text}: {e}"
            );
            assert!(!e.contains(&format!("one of: {default}")), "{e}");
        }
        if let Some(lexical_only) = ENGINES
            .iter()
            .find(|e| !e.serves(SideKind::Dense))
            .map(|e| e.name)
        {
            let e = refused(parse_engine(&format!("{{engine: {lexical_only}}}")));
            assert!(e.contains("does not answer the dense side"), "{e}");
        }
        // every served engine of this build reads its group, and the rest is kept for it
        for e in ENGINES
            .iter()
            .filter(|e| e.serves(SideKind::Dense) && e.name != default)
        {
            let parsed = parse_engine(&format!("{{engine: {}, x: 1}}", e.name));
            match (e.built, parsed) {
                (Ok(()), Ok((_, rest))) => assert_eq!(Value::Object(rest), json!({"x": 1})),
                (Err(how), parsed) => assert!(refused(parsed).contains(how)),
                (Ok(()), Err(err)) => panic!("{}: {err}", e.name),
            }
        }
    }

    #[test]
    fn too_many_variants_are_refused() {
        let served_engine = ENGINES
            .iter()
            .find(|e| {
                e.serves(SideKind::Dense)
                    && e.built.is_ok()
                    && e.name != EngineEntry::default_for(SideKind::Dense).name
            })
            .expect("a served dense engine in every build")
            .name;
        let e = served(
            &format!("{{engine: {served_engine}}}"),
            &["a=1,2,3,4,5,6,7,8,9".into(), "b=1,2,3,4,5,6,7,8".into()],
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("72 variants") && e.contains("more than 64"),
            "{e}"
        );
    }
}
