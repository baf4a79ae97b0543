//! The cell summary: `results/cells/<dataset>/<leg>.summary.json` (schema below, versioned), and
//! its per-query records beside it (`<leg>.queries.parquet`).
//!
//! Everything outside `timing` is a deterministic function of the cell's inputs: two runs of
//! the same key give byte-identical JSON once `timing` is removed, at any thread count. Maps are
//! `BTreeMap`s so key order is stable; floats are printed by serde_json's shortest round-trip
//! formatting, which is deterministic.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use hopbench_datasets::parquet_io::{self as pq, Columns};
use serde::{Deserialize, Serialize};

use crate::measure::contract::{Contract, ThreadSource};
use crate::measure::metrics;
use crate::measure::query::QueryResult;
use crate::store::{fsx, seal};

/// Version of the summary schema (4: `protocol`).
pub const SCHEMA_VERSION: u32 = 4;

/// Whether the cell has numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// Measured.
    Ok,
    /// The dataset or the leg lacks an input (files absent, no header to ablate, ...): no numbers,
    /// never zeros.
    MissingInputs,
    /// The cell failed; `reason` says why.
    Error,
    /// Nothing to measure: no evaluated query has gold. No numbers, never zeros.
    Empty,
}

impl Status {
    /// The status as the summary, `matrix.md` and the report write it.
    pub fn name(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::MissingInputs => "missing-inputs",
            Status::Error => "error",
            Status::Empty => "empty",
        }
    }
}

/// Everything the cell's numbers depend on; its blake3 is the cell key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CellInputs {
    /// Hash of the export's core files ([`hopbench_datasets::export::Manifest::core_hash`]:
    /// what every leg reads; None when the dataset could not be prepared).
    pub export: Option<String>,
    /// Hash of each optional export part the leg reads, by part
    /// ([`hopbench_datasets::export::Part::key`]); absent for legs that read none, so their
    /// identity does not depend on which parts the export gained for other legs.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub export_parts: std::collections::BTreeMap<String, String>,
    /// Embedding model identity of the export.
    pub model_id: Option<String>,
    /// What the model is when that matters to reading the numbers: `non-semantic: ...` for the
    /// hashing embedder (absent for a real model, so other cells' keys are unchanged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_note: Option<String>,
    /// nDCG's gain where it is not binary: `graded` where the dataset's judgements carry
    /// grades other than 1 (the grade is the gain, trec_eval's `ndcg_cut`). Absent for a gold
    /// set (binary gain: the multi-hop formats, and qrels of relevance 1 only), so those
    /// cells' keys and summaries are what they were.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gain: Option<Gain>,
    /// The identity of the leg's rerank stage's model (a CrossEncoder's id, or the model id of
    /// a bi-encoder's vectors); absent for legs without one, or reranking with their own
    /// vectors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reranker: Option<String>,
    /// The leg's resolved configuration (kind and every parameter, defaults filled in).
    pub leg_config: serde_json::Value,
    /// blake3 of the files the leg's engines read besides the export, by the argument naming
    /// each ([`hopbench_legs::engine::CacheInputs::files`]); absent for legs on the built-in
    /// engines, so their keys are what they were.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub engine_files: std::collections::BTreeMap<String, String>,
    /// The identity of each index the leg's engines built over the export (an HNSW shard's
    /// probe digest), by its cache directory name ([`hopbench_legs::engine::CacheInputs::indexes`]).
    /// Absent where no leg uses one, so other cells' keys are unchanged.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub engine_shards: std::collections::BTreeMap<String, String>,
    /// blake3 over the evaluated query ids and their gold (after `--limit`).
    pub query_set: Option<String>,
    /// `--limit`, if any.
    pub limit: Option<usize>,
    /// recall@k cut-offs.
    pub recall_k: Vec<usize>,
    /// The campaign's extra measures (`metrics:`, as hopbench names them); absent when it has
    /// none, so those cells' keys are what they were.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub measures: Vec<String>,
    /// Dataset labels the breakdowns group on.
    pub breakdown_labels: Vec<String>,
    /// Bootstrap settings of the CIs.
    pub ci: crate::measure::stats_config::StatsConfig,
    /// Package version + executable hash.
    pub code_version: String,
    /// The determinism contract.
    pub contract: Contract,
}

/// The extra measures (`metrics:`) the cells measured, each once, in the order the cells name
/// them: the columns a table of these cells adds to the default ones.
pub fn extra_measures<'a>(cells: impl IntoIterator<Item = &'a CellSummary>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for m in cells.into_iter().flat_map(|c| &c.inputs.measures) {
        if !out.contains(m) {
            out.push(m.clone());
        }
    }
    out
}

/// nDCG's gain where it is not binary ([`CellInputs::gain`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Gain {
    /// The judgement's grade (trec_eval's `ndcg` and `ndcg_cut`: ideal DCG over the grades).
    Graded,
}

impl Gain {
    /// How a cell's nDCG gain reads in words (`None`: binary).
    pub fn describe(gain: Option<Gain>) -> &'static str {
        match gain {
            None => "binary (gold is a set)",
            Some(Gain::Graded) => "graded (gain = grade, as trec_eval's ndcg_cut)",
        }
    }
}

/// Median, p95 and mean of a latency sample (ms).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dist {
    /// Median (linear interpolation).
    pub median: f64,
    /// 95th percentile (linear interpolation).
    pub p95: f64,
    /// Mean.
    pub mean: f64,
}

impl Dist {
    /// The distribution of `values` (all zeros when empty).
    pub fn of(values: &[f64]) -> Dist {
        Dist {
            median: metrics::median(values).unwrap_or(0.0),
            p95: metrics::percentile(values, 95.0).unwrap_or(0.0),
            mean: metrics::mean(values.iter().copied()).unwrap_or(0.0),
        }
    }
}

/// Per-query latency of the cell's two halves and their sum.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Latency {
    /// `retrieve`.
    pub retrieve: Dist,
    /// `select`.
    pub select: Dist,
    /// The rerank stage, for a leg with one (absent otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rerank: Option<Dist>,
    /// `retrieve + rerank + select`.
    pub total: Dist,
}

/// The non-deterministic half of a summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Timing {
    /// Pinned thread count.
    pub threads: usize,
    /// Where it was pinned.
    pub thread_source: ThreadSource,
    /// Wall time of the whole cell (ms).
    pub wall_ms: f64,
    /// Per-query latency (ms).
    pub latency_ms: Latency,
    /// blake3 of the files written with this summary. They live here because the records carry
    /// per-query latencies, so their bytes differ between two runs of the same key.
    #[serde(default)]
    pub files: Option<FileHashes>,
    /// The summary's seal: blake3 of its text before `timing` ([`crate::store::seal`]), so a
    /// field that cannot be recomputed from the records (CIs, tokens, diagnostics, the
    /// protocol, ...) is still checked when read back.
    #[serde(default)]
    pub seal: Option<String>,
}

/// blake3 (hex) of a cell's per-query records and TREC run file, as written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileHashes {
    /// `<leg>.queries.parquet`.
    pub records: String,
    /// `<leg>.trec`.
    pub run: String,
}

impl FileHashes {
    /// The hashes of the files at `paths` (an unreadable file is an error naming it).
    pub fn of(paths: &CellPaths) -> Result<FileHashes> {
        let hash = |p: &Path| -> Result<String> {
            let bytes =
                std::fs::read(p).with_context(|| format!("{}: cannot read", p.display()))?;
            Ok(blake3::hash(&bytes).to_hex().to_string())
        };
        Ok(FileHashes {
            records: hash(&paths.records)?,
            run: hash(&paths.run)?,
        })
    }
}

/// Why a cell on disk cannot be trusted (`Ok` when it can). An `ok` cell: its summary file is not
/// the one parsed or its seal differs (a field outside `timing` was edited), its records or run
/// file are missing or are not the files written with it, or its means are not the means of its
/// records. A cell without numbers: it holds numbers all the same (an `ok` cell whose status was
/// edited). Every reader of cells (the cache, `status`, the reports, `compare`, `compare-legs`)
/// calls this before using one.
pub fn verify_cell(cell: &CellSummary, paths: &CellPaths, names: &[String]) -> Result<(), String> {
    if cell.status != Status::Ok {
        return without_numbers_holds_none(cell, paths);
    }
    let timing = cell.timing.as_ref();
    let recorded = timing
        .and_then(|t| t.files.as_ref())
        .ok_or_else(|| format!("{}: records no file hashes", paths.summary.display()))?;
    verify_seal(cell, &paths.summary, timing.and_then(|t| t.seal.as_deref()))?;
    let found = FileHashes::of(paths).map_err(|e| format!("{e:#}"))?;
    if found.records != recorded.records {
        return Err(format!(
            "{}: not the records written with its summary (blake3 differs)",
            paths.records.display()
        ));
    }
    if found.run != recorded.run {
        return Err(format!(
            "{}: not the run file written with its summary (blake3 differs)",
            paths.run.display()
        ));
    }
    let (ids, columns) = read_records(&paths.records, names).map_err(|e| format!("{e:#}"))?;
    if ids.len() != cell.queries {
        return Err(format!(
            "{}: {} queries, but {} holds {}",
            paths.summary.display(),
            cell.queries,
            paths.records.display(),
            ids.len()
        ));
    }
    if cell.metrics.len() != names.len() {
        return Err(format!(
            "{}: {} metrics, but its inputs name {}",
            paths.summary.display(),
            cell.metrics.len(),
            names.len()
        ));
    }
    // serde_json's default float parser may land one ulp off the printed value, so a mean read
    // back from the summary is compared within a relative 1e-12, far below any real edit
    let same = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) => (a - b).abs() <= 1e-12 * a.abs().max(1.0),
        (a, b) => a.is_none() && b.is_none(),
    };
    for name in names {
        let mean = columns
            .get(name)
            .map(|v| metrics::mean_opt(v.iter().copied()).mean);
        let stored = cell.metrics.get(name).copied().flatten();
        if !mean.is_some_and(|m| same(m, stored)) {
            return Err(format!(
                "{}: metrics.{name} is not the mean of {}",
                paths.summary.display(),
                paths.records.display()
            ));
        }
    }
    Ok(())
}

/// Why the summary file at `path` is not `cell` with the seal `recorded` (`Ok` when it is). The
/// file is read again so the text checked is the text that was parsed.
fn verify_seal(cell: &CellSummary, path: &Path, recorded: Option<&str>) -> Result<(), String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
    if serde_json::from_str::<CellSummary>(&text).ok().as_ref() != Some(cell) {
        return Err(format!(
            "{}: is not the summary parsed from it (changed while it was read)",
            path.display()
        ));
    }
    seal::check(&path.display().to_string(), &text, recorded)
}

/// Why a cell without numbers holds some (`Ok` when it holds none, as
/// [`CellSummary::without_numbers`] writes it).
fn without_numbers_holds_none(cell: &CellSummary, paths: &CellPaths) -> Result<(), String> {
    let holds = [
        ("queries", cell.queries != 0),
        ("metrics", !cell.metrics.is_empty()),
        ("metrics_ci95", !cell.metrics_ci95.is_empty()),
        ("metrics_defined", !cell.metrics_defined.is_empty()),
        ("tokens", cell.tokens != Tokens::default()),
        ("diagnostics", !cell.diagnostics.is_empty()),
        ("breakdowns", !cell.breakdowns.is_empty()),
        ("intent_confusion", !cell.intent_confusion.is_empty()),
        ("reference_resolution", cell.reference_resolution.is_some()),
        ("timing", cell.timing.is_some()),
    ];
    let status = cell.status.name();
    match holds.iter().find(|(_, held)| *held) {
        Some((field, _)) => Err(format!(
            "{}: status `{status}` but it holds `{field}`",
            paths.summary.display()
        )),
        None if cell.reason.is_none() => Err(format!(
            "{}: status `{status}` without a reason",
            paths.summary.display()
        )),
        None => Ok(()),
    }
}

/// Token spend of the selected contexts (heuristic tokens).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tokens {
    /// Mean tokens of the whole selection.
    pub selected_mean: f64,
    /// Mean tokens of the first 10 selected chunks.
    pub at_10_mean: f64,
}

/// One cell's summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CellSummary {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Dataset name.
    pub dataset: String,
    /// Leg name.
    pub leg: String,
    /// What the dataset's export indexes per passage: `title+text`, `header+text` or `text`
    /// (see `hopbench_datasets::protocol`); numbers are comparable with a published table only
    /// under its protocol.
    pub protocol: String,
    /// Status.
    pub status: Status,
    /// Why the status is not `ok`.
    pub reason: Option<String>,
    /// blake3 of `inputs`.
    pub key: String,
    /// What the numbers depend on.
    pub inputs: CellInputs,
    /// Queries evaluated.
    pub queries: usize,
    /// The dataset's queries that have no gold and so are not evaluated (see
    /// [`crate::pipeline::matrix::query_indices`]); they are not in `queries`.
    pub queries_without_gold: usize,
    /// Mean of each metric (`null`: undefined on every query, e.g. no published chain).
    pub metrics: BTreeMap<String, Option<f64>>,
    /// Percentile-bootstrap 95% CI of each mean (fixed seed).
    pub metrics_ci95: BTreeMap<String, [f64; 2]>,
    /// Queries each mean is over (chain metrics only count queries with a chain).
    pub metrics_defined: BTreeMap<String, usize>,
    /// Token spend.
    pub tokens: Tokens,
    /// Means of the leg's per-query diagnostics.
    pub diagnostics: BTreeMap<String, f64>,
    /// Metrics per dataset label value and per classified intent (see [`crate::measure::breakdown`]).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub breakdowns: crate::measure::breakdown::Breakdowns,
    /// Dataset label values against the classified intent (legs that classify intents).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub intent_confusion: crate::measure::breakdown::Confusion,
    /// Reference-resolution accuracy (datasets with known referents, legs that resolve).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference_resolution: Option<crate::measure::breakdown::ReferenceAccuracy>,
    /// Timing (excluded from identity checks).
    pub timing: Option<Timing>,
}

impl CellSummary {
    /// A summary with no numbers (missing inputs or error).
    pub fn without_numbers(
        dataset: &str,
        leg: &str,
        protocol: &str,
        status: Status,
        reason: String,
        key: String,
        inputs: CellInputs,
    ) -> Self {
        CellSummary {
            schema_version: SCHEMA_VERSION,
            dataset: dataset.into(),
            leg: leg.into(),
            protocol: protocol.into(),
            status,
            reason: Some(reason),
            key,
            inputs,
            queries: 0,
            queries_without_gold: 0,
            metrics: BTreeMap::new(),
            metrics_ci95: BTreeMap::new(),
            metrics_defined: BTreeMap::new(),
            tokens: Tokens::default(),
            diagnostics: BTreeMap::new(),
            breakdowns: BTreeMap::new(),
            intent_confusion: BTreeMap::new(),
            reference_resolution: None,
            timing: None,
        }
    }

    /// Aggregates per-query results into an `ok` summary.
    #[allow(clippy::too_many_arguments)]
    pub fn from_results(
        dataset: &str,
        leg: &str,
        protocol: &str,
        key: String,
        inputs: CellInputs,
        names: &[String],
        results: &[QueryResult],
        timing: Timing,
    ) -> Self {
        let mut s = CellSummary::without_numbers(
            dataset,
            leg,
            protocol,
            Status::Ok,
            String::new(),
            key,
            inputs,
        );
        s.reason = None;
        s.queries = results.len();
        for name in names {
            let per_query = || {
                results
                    .iter()
                    .map(|r| r.metrics.get(name).copied().flatten())
            };
            let m = metrics::mean_opt(per_query());
            s.metrics.insert(name.clone(), m.mean);
            s.metrics_defined.insert(name.clone(), m.defined);
            let values: Vec<f64> = per_query().flatten().collect();
            let ci = &s.inputs.ci;
            if let Some(c) = ci.mean_ci(&values) {
                s.metrics_ci95.insert(name.clone(), c);
            }
        }
        let n = results.len().max(1) as f64;
        s.tokens = Tokens {
            selected_mean: results
                .iter()
                .map(|r| r.tokens_selected as f64)
                .sum::<f64>()
                / n,
            at_10_mean: results.iter().map(|r| r.tokens_at_10 as f64).sum::<f64>() / n,
        };
        let mut diag: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        for r in results {
            for (k, v) in &r.diagnostics {
                diag.entry(k.clone()).or_default().push(*v);
            }
        }
        s.diagnostics = diag
            .into_iter()
            .map(|(k, v)| (k, metrics::mean(v).unwrap_or(0.0)))
            .collect();
        let labels = s.inputs.breakdown_labels.clone();
        s.breakdowns = crate::measure::breakdown::breakdowns(results, names, &labels, &s.inputs.ci);
        s.intent_confusion = crate::measure::breakdown::confusion(results, &labels);
        s.reference_resolution =
            crate::measure::breakdown::reference_accuracy(results, &s.inputs.ci);
        s.timing = Some(timing);
        s
    }
}

/// Paths of a cell's files.
#[derive(Debug, Clone)]
pub struct CellPaths {
    /// `<results>/cells/<dataset>/<leg>.summary.json`
    pub summary: PathBuf,
    /// `<results>/cells/<dataset>/<leg>.queries.parquet`
    pub records: PathBuf,
    /// `<results>/runs/<dataset>/<leg>.trec`
    pub run: PathBuf,
    /// `<results>/cells/<dataset>/<leg>.failed.txt`: the error of the last attempt that
    /// failed, removed when the cell is next computed.
    pub failed: PathBuf,
}

impl CellPaths {
    /// The paths of cell (`dataset`, `leg`) under `results`.
    pub fn new(results: &Path, dataset: &str, leg: &str) -> Self {
        let cells = results.join("cells").join(dataset);
        CellPaths {
            summary: cells.join(format!("{leg}.summary.json")),
            records: cells.join(format!("{leg}.queries.parquet")),
            failed: cells.join(format!("{leg}.failed.txt")),
            run: results
                .join("runs")
                .join(dataset)
                .join(format!("{leg}.trec")),
        }
    }
}

/// Writes a summary atomically, sealed ([`crate::store::seal`]) when it has a timing to record
/// the seal in (an `ok` cell).
pub fn write_summary(path: &Path, s: &CellSummary) -> Result<()> {
    let text = seal::sealed_text(s, |seal| {
        let mut sealed = s.clone();
        sealed.timing.as_mut()?.seal = Some(seal);
        Some(sealed)
    });
    fsx::write_atomic(path, text.as_bytes())
}

/// Reads a summary.
pub fn read_summary(path: &Path) -> Result<CellSummary> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("{}: cannot read", path.display()))?;
    serde_json::from_str(&text).with_context(|| {
        format!(
            "{}: not a hopbench cell summary (schema {SCHEMA_VERSION})",
            path.display()
        )
    })
}

/// Writes the per-query records (one row per query; a column per metric, null where
/// undefined; tokens; latency) atomically.
pub fn write_records(
    path: &Path,
    names: &[String],
    label_keys: &[String],
    results: &[QueryResult],
) -> Result<()> {
    let mut cols: Vec<(String, arrow_array::ArrayRef)> = vec![(
        "query_id".into(),
        pq::strings(&results.iter().map(|r| r.id.as_str()).collect::<Vec<_>>()),
    )];
    for name in names {
        cols.push((
            name.clone(),
            pq::opt_f64s(
                &results
                    .iter()
                    .map(|r| r.metrics.get(name).copied().flatten())
                    .collect::<Vec<_>>(),
            ),
        ));
    }
    let diag_names: std::collections::BTreeSet<&String> =
        results.iter().flat_map(|r| r.diagnostics.keys()).collect();
    for d in diag_names {
        let v: Vec<Option<f64>> = results
            .iter()
            .map(|r| r.diagnostics.get(d).copied())
            .collect();
        cols.push((format!("diag:{d}"), pq::opt_f64s(&v)));
    }
    // text columns: the breakdown labels (`label:<key>`) and the leg's annotations (`note:<key>`)
    let text_col = |get: &dyn Fn(&QueryResult) -> Option<String>| {
        let v: Vec<Option<String>> = results.iter().map(get).collect();
        pq::opt_strings(&v)
    };
    for k in label_keys {
        if results.iter().any(|r| r.labels.contains_key(k)) {
            cols.push((
                format!("label:{k}"),
                text_col(&|r| r.labels.get(k).cloned()),
            ));
        }
    }
    let note_names: std::collections::BTreeSet<&String> =
        results.iter().flat_map(|r| r.annotations.keys()).collect();
    for n in note_names {
        cols.push((
            format!("note:{n}"),
            text_col(&|r| r.annotations.get(n).cloned()),
        ));
    }
    if results.iter().any(|r| r.rescued_gold.is_some()) {
        let rows: Vec<Option<Vec<String>>> = results
            .iter()
            .map(|r| Some(r.rescued_gold.clone().unwrap_or_default()))
            .collect();
        cols.push(("rescued_gold_ids".into(), pq::string_lists(&rows)));
    }
    cols.push((
        "tokens_selected".into(),
        pq::f64s(
            &results
                .iter()
                .map(|r| r.tokens_selected as f64)
                .collect::<Vec<_>>(),
        ),
    ));
    cols.push((
        "tokens@10".into(),
        pq::f64s(
            &results
                .iter()
                .map(|r| r.tokens_at_10 as f64)
                .collect::<Vec<_>>(),
        ),
    ));
    cols.push((
        "retrieve_ms".into(),
        pq::f64s(&results.iter().map(|r| r.retrieve_ms).collect::<Vec<_>>()),
    ));
    cols.push((
        "select_ms".into(),
        pq::f64s(&results.iter().map(|r| r.select_ms).collect::<Vec<_>>()),
    ));
    // a leg with a rerank stage times it apart; other legs' records keep their columns
    if results.iter().any(|r| r.rerank_ms.is_some()) {
        cols.push((
            "rerank_ms".into(),
            pq::f64s(
                &results
                    .iter()
                    .map(|r| r.rerank_ms.unwrap_or(0.0))
                    .collect::<Vec<_>>(),
            ),
        ));
    }
    fsx::write_parquet_atomic(path, cols)
}

/// Per-query metric values by metric name (`None` where undefined), in query order.
pub type MetricColumns = BTreeMap<String, Vec<Option<f64>>>;

/// A text column of a records file (`label:<key>`, `note:<key>`), `None` when it has none.
pub fn read_text_column(path: &Path, name: &str) -> Result<Option<Vec<Option<String>>>> {
    let batch = pq::read(path)?;
    let cols = Columns {
        path,
        batch: &batch,
    };
    if !cols.has(name) {
        return Ok(None);
    }
    Ok(Some(cols.opt_strings(name)?))
}

/// Per-query values of a records file: query ids and each requested column.
pub fn read_records(path: &Path, names: &[String]) -> Result<(Vec<String>, MetricColumns)> {
    let batch = pq::read(path)?;
    let cols = Columns {
        path,
        batch: &batch,
    };
    let ids = cols.strings("query_id")?;
    let mut out = BTreeMap::new();
    for n in names {
        if cols.has(n) {
            out.insert(n.clone(), cols.opt_f64s(n)?);
        }
    }
    Ok((ids, out))
}
