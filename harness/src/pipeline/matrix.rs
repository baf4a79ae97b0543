//! The matrix runner: plans cells (dataset x leg), reuses cached ones, runs the rest, and writes
//! summaries, per-query records and TREC run files (the table is `run-matrix`'s to print).
//!
//! Queries of a cell run in parallel on a rayon pool with the pinned thread count, each query on
//! one thread, and results are collected in dataset order: the numbers cannot depend on the
//! thread count, only the timings can.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use hopbench_datasets::export::{Export, ExportHead, KeepVectors, Manifest, QueryRecord};
use hopbench_legs::engine::ExportRef;
use hopbench_legs::{Leg, LegError, QueryInput};
use rayon::prelude::*;

use crate::measure::contract::Contract;
use crate::measure::metrics::metric_names;
use crate::measure::query::QueryResult;
use crate::pipeline::campaign::Campaign;
use crate::pipeline::data::{self, DatasetState};
use crate::pipeline::evaluate;
use crate::pipeline::leg_model;
use crate::pipeline::settings::MatrixSettings;
use crate::store::summary::{
    self, CellInputs, CellPaths, CellSummary, Dist, Gain, Latency, Status, Timing,
};
use crate::store::{cache, trec};

/// What happened to a cell in this invocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CellOutcome {
    /// Computed now.
    Computed,
    /// Key matched a summary on disk.
    Cached,
    /// Recorded as missing inputs.
    Missing,
}

/// Runs the matrix; returns each cell's summary and outcome, in dataset-then-leg order.
pub fn run(campaign: &Campaign, s: &MatrixSettings) -> Result<Vec<(CellSummary, CellOutcome)>> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(s.threads)
        .build()
        .context("cannot start the thread pool")?;
    let contract = Contract::current();
    let mut out = Vec::new();
    let mine = planned_cells(s);
    let mut datasets: Vec<&str> = mine.iter().map(|(d, _)| d.as_str()).collect();
    datasets.dedup();
    if let Some(shard) = s.shard {
        eprintln!("part {shard}: {} cells of the plan", mine.len());
    }
    for dataset in datasets {
        let legs: Vec<&str> = mine
            .iter()
            .filter(|(d, _)| d == dataset)
            .map(|(_, l)| l.as_str())
            .collect();
        if !s.force {
            if let Some(cells) = all_cached(campaign, s, &contract, dataset, &legs)? {
                out.extend(cells);
                continue;
            }
        }
        let parts = campaign.parts_read(legs.iter().copied());
        // the queries this run evaluates are the only ones whose vectors a leg reads
        let evaluated = |queries: &[QueryRecord]| {
            first_with_gold(queries.iter().map(|q| q.gold.is_empty()), s.limit)
        };
        let state = data::open(
            campaign,
            dataset,
            &s.data,
            s.progress,
            parts,
            Some(&evaluated),
        )?;
        if let DatasetState::Ready(export) = &state {
            let ident = ExportIdentity::of_export(export);
            let idx = ident.evaluated(s.limit);
            report_dataset(dataset, export.chunks.len(), idx.len(), &ident, "");
            let runs = s.results.join("runs").join(dataset);
            trec::write(
                &runs.join("qrels.txt"),
                &trec::qrels_text(&ident.queries, &ident.grades, &idx),
            )?;
            // chunked documents: the run files' docnos -> their source spans
            match trec::chunks_text(export) {
                Some(text) => trec::write(&runs.join("chunks.tsv"), &text)?,
                None => remove_if_there(&runs.join("chunks.tsv"))?,
            }
        }
        let views = Views::new(&state, s, &evaluated);
        for leg in legs {
            let failed = summary::CellPaths::new(&s.results, dataset, leg).failed;
            let (cell, built) = match run_cell(campaign, s, &contract, &pool, dataset, leg, &views)
                .with_context(|| format!("cell {dataset} x {leg}"))
            {
                Ok(x) => {
                    let _ = std::fs::remove_file(&failed);
                    x
                }
                Err(e) => {
                    // `hopbench status` reports it, so a partial array can be resubmitted
                    let _ = crate::store::fsx::write_atomic(&failed, format!("{e:#}\n").as_bytes());
                    return Err(e);
                }
            };
            if let (DatasetState::Ready(_), Status::Ok) = (&state, cell.0.status) {
                if !s.no_curves {
                    run_curve(
                        campaign,
                        s,
                        &pool,
                        (dataset, leg),
                        &views,
                        &cell.0.key,
                        built,
                    )
                    .with_context(|| format!("budget curve {dataset} x {leg}"))?;
                }
            }
            out.push(cell);
        }
    }
    Ok(out)
}

/// A dataset's export as each leg reads it: the export itself, or, for a leg that names another
/// model, the export with that model's vectors ([`leg_model::export_for`]), loaded the first
/// time a leg of the model needs it and shared by the others.
struct Views<'a> {
    state: &'a DatasetState,
    s: &'a MatrixSettings,
    keep: KeepVectors<'a>,
    by_model: RefCell<BTreeMap<String, Arc<Export>>>,
}

impl<'a> Views<'a> {
    fn new(state: &'a DatasetState, s: &'a MatrixSettings, keep: KeepVectors<'a>) -> Self {
        Views {
            state,
            s,
            keep,
            by_model: RefCell::new(BTreeMap::new()),
        }
    }

    /// The export leg `leg` reads (the dataset's state must be `Ready`).
    fn for_leg(&self, leg: &str) -> Result<Arc<Export>> {
        let DatasetState::Ready(export) = self.state else {
            unreachable!("a leg's export is asked for only where the dataset is ready")
        };
        let Some(model) = self.s.leg_models.get(leg) else {
            return Ok(export.clone());
        };
        if let Some(view) = self.by_model.borrow().get(&model.id) {
            return Ok(view.clone());
        }
        let view = leg_model::export_for(
            export,
            model,
            &self.s.data,
            self.s.progress,
            Some(self.keep),
        )?;
        self.by_model
            .borrow_mut()
            .insert(model.id.clone(), view.clone());
        Ok(view)
    }
}

/// The cells this invocation runs, in plan order: `--cells` (those of the selected datasets
/// and legs, in the order given) or every selected dataset x leg, then this part's share of
/// them under `--shard` ([`crate::pipeline::shard::Shard::owns_cell`] over plan positions).
pub fn planned_cells(s: &MatrixSettings) -> Vec<(String, String)> {
    let plan: Vec<(String, String)> = match &s.cells {
        Some(cells) => cells
            .iter()
            .filter(|(d, l)| s.datasets.contains(d) && s.legs.contains(l))
            .cloned()
            .collect(),
        None => s
            .datasets
            .iter()
            .flat_map(|d| s.legs.iter().map(move |l| (d.clone(), l.clone())))
            .collect(),
    };
    plan.into_iter()
        .enumerate()
        .filter(|(p, _)| s.shard.is_none_or(|sh| sh.owns_cell(*p)))
        .map(|(_, c)| c)
        .collect()
}

/// Indices of the evaluated queries: those with gold, the first `limit` of them, in dataset
/// order. This is the one rule for every format: a query without gold has nothing to find, so
/// every metric would be 0 (or undefined) whatever the leg did, and a mean over it would only
/// measure how many such queries the dataset has. trec_eval agrees: such a query has no line in
/// the qrels file, and trec_eval evaluates only queries the qrels judge. The summary counts
/// them as `queries_without_gold`.
pub fn query_indices(export: &Export, limit: Option<usize>) -> Vec<usize> {
    first_with_gold(export.queries.iter().map(|q| q.gold.is_empty()), limit)
}

/// The positions of the first `limit` queries with gold, given whether each has none.
fn first_with_gold(no_gold: impl Iterator<Item = bool>, limit: Option<usize>) -> Vec<usize> {
    no_gold
        .enumerate()
        .filter(|&(_, none)| !none)
        .map(|(q, _)| q)
        .take(limit.unwrap_or(usize::MAX))
        .collect()
}

/// How many of the export's queries have no gold (and so are never evaluated).
pub fn queries_without_gold(export: &Export) -> usize {
    export.queries.iter().filter(|q| q.gold.is_empty()).count()
}

/// What a cell's key reads of its dataset's export: the manifest, the export's directory (under
/// which the embedded engines' indexes are cached) and each query's id with its gold chunk
/// record ids. The same from a loaded export as from its head alone
/// ([`hopbench_datasets::export::read_head`]), so a rerun whose cells are all cached is decided
/// without loading the export.
pub struct ExportIdentity<'a> {
    /// The export directory.
    pub dir: &'a std::path::Path,
    /// Its manifest.
    pub manifest: &'a Manifest,
    /// (query id, gold chunk ids) of every query, in export order.
    pub queries: Vec<(&'a str, Vec<&'a str>)>,
    /// The grades of each query's gold chunks, in the same order (`None`: binary gold).
    pub grades: Vec<Option<&'a [u32]>>,
}

impl<'a> ExportIdentity<'a> {
    /// Of a loaded export.
    pub fn of_export(e: &'a Export) -> Self {
        ExportIdentity {
            dir: &e.dir,
            manifest: &e.manifest,
            queries: e
                .queries
                .iter()
                .map(|q| {
                    let gold = q.gold.iter().map(|&g| e.chunks[g as usize].id.as_str());
                    (q.id.as_str(), gold.collect())
                })
                .collect(),
            grades: e.queries.iter().map(|q| q.grades.as_deref()).collect(),
        }
    }

    /// Of an export's head.
    pub fn of_head(h: &'a ExportHead) -> Self {
        ExportIdentity {
            dir: &h.dir,
            manifest: &h.manifest,
            queries: h
                .queries
                .iter()
                .map(|q| (q.id.as_str(), q.gold.iter().map(String::as_str).collect()))
                .collect(),
            grades: h.queries.iter().map(|q| q.grades.as_deref()).collect(),
        }
    }

    /// nDCG's gain on this export: [`Gain::Graded`] where its gold carries grades.
    pub fn gain(&self) -> Option<Gain> {
        self.manifest.stats.graded_gold.map(|_| Gain::Graded)
    }

    /// [`query_indices`]: the queries a cell evaluates.
    pub fn evaluated(&self, limit: Option<usize>) -> Vec<usize> {
        first_with_gold(self.queries.iter().map(|(_, g)| g.is_empty()), limit)
    }

    /// [`queries_without_gold`].
    fn without_gold(&self) -> usize {
        self.queries.iter().filter(|(_, g)| g.is_empty()).count()
    }

    fn query_set_hash(&self, idx: &[usize]) -> String {
        let ident: Vec<&(&str, Vec<&str>)> = idx.iter().map(|&q| &self.queries[q]).collect();
        cache::key_of(&ident)
    }
}

/// Everything cell (`export`'s dataset, `leg_name`) depends on, and its key (the blake3 of it).
pub fn cell_inputs(
    campaign: &Campaign,
    s: &MatrixSettings,
    contract: &Contract,
    leg_name: &str,
    export: Option<&ExportIdentity<'_>>,
) -> (CellInputs, String) {
    let spec = &campaign.legs[leg_name];
    let leg_config = serde_json::to_value(spec).expect("leg spec serialises");
    // a leg over another model reads that model's vectors of the export: its id is the
    // cell's model, and the caches built from the vectors are that model's
    let leg_model = s
        .leg_models
        .get(leg_name)
        .map(|m| m.id.as_str())
        .filter(|id| export.is_some_and(|e| *id != e.manifest.model_id));
    let engines = spec.cache_inputs(export.map(|e| ExportRef {
        dir: e.dir,
        manifest: e.manifest,
        model: leg_model,
    }));
    // a leg whose model is not installed has no model yet: installing it changes the key
    let model_id = export
        .filter(|_| !s.leg_models.missing.contains_key(leg_name))
        .map(|e| leg_model.unwrap_or(&e.manifest.model_id).to_string());
    let inputs = CellInputs {
        export: export.map(|e| e.manifest.core_hash()),
        export_parts: export
            .map(|e| {
                (spec.reads().iter())
                    .filter_map(|p| Some((p.key().to_string(), e.manifest.part_hash(p)?)))
                    .collect()
            })
            .unwrap_or_default(),
        model_note: model_id
            .as_deref()
            .and_then(hopbench_datasets::embed::model_note)
            .map(str::to_string),
        model_id,
        gain: export.and_then(ExportIdentity::gain),
        reranker: s.leg_models.rerankers.get(leg_name).cloned().flatten(),
        engine_files: engines.files,
        engine_shards: engines.indexes,
        leg_config,
        query_set: export.map(|e| e.query_set_hash(&e.evaluated(s.limit))),
        limit: s.limit,
        recall_k: campaign.recall_k.clone(),
        measures: campaign.extra_measures(),
        breakdown_labels: campaign.breakdown_labels.clone(),
        ci: campaign.stats.clone(),
        code_version: cache::code_version().to_string(),
        contract: contract.clone(),
    };
    let key = cache::key_of(&inputs);
    (inputs, key)
}

/// The summary of cell (`dataset`, `leg_name`) on disk if it has key `key`, did not fail, and
/// its files verify: what a rerun reuses. A summary that is there but not trusted is `None`
/// (recomputed), said on stderr when `warn`.
fn cached_cell(
    campaign: &Campaign,
    paths: &CellPaths,
    (dataset, leg_name): (&str, &str),
    key: &str,
    warn: bool,
) -> Option<(CellSummary, CellOutcome)> {
    if !paths.summary.exists() {
        return None;
    }
    let not_trusted = |why: String| {
        if warn {
            eprintln!(
                "warning: {dataset} x {leg_name}: cached cell not trusted ({why}); recomputing"
            )
        }
    };
    match summary::read_summary(&paths.summary) {
        Err(e) => not_trusted(format!("{e:#}")),
        Ok(prev) if prev.key == key && prev.status != Status::Error => {
            let names = metric_names(&campaign.recall_k, &campaign.extra_measures());
            match summary::verify_cell(&prev, paths, &names) {
                Ok(()) => {
                    // a cell without numbers is reported as what it is, not as cached work
                    let outcome = match prev.status {
                        Status::MissingInputs => CellOutcome::Missing,
                        _ => CellOutcome::Cached,
                    };
                    return Some((prev, outcome));
                }
                Err(why) => not_trusted(why.to_string()),
            }
        }
        Ok(_) => {}
    }
    None
}

/// Every cell of `dataset` x `legs` from the cache, with its budget curve where it has one, if
/// all of them are there and verify; `None` as soon as one is not (the dataset then runs the
/// ordinary way, which reports what it does not trust). Decided from the export's head, so a
/// fully cached dataset is never loaded; an export with chunks cut from documents is not
/// decided here, as its `chunks.tsv` is written from the corpus.
fn all_cached(
    campaign: &Campaign,
    s: &MatrixSettings,
    contract: &Contract,
    dataset: &str,
    legs: &[&str],
) -> Result<Option<Vec<(CellSummary, CellOutcome)>>> {
    let Some(head) = data::open_head(campaign, dataset, &s.data)? else {
        return Ok(None);
    };
    if head.manifest.stats.chunks_with_span != Some(0) {
        return Ok(None);
    }
    let ident = ExportIdentity::of_head(&head);
    let idx = ident.evaluated(s.limit);
    // a dataset without a query to evaluate has its cells written as such on every run
    if idx.is_empty() {
        return Ok(None);
    }
    let mut cells = Vec::new();
    for &leg in legs {
        let (_, key) = cell_inputs(campaign, s, contract, leg, Some(&ident));
        let paths = CellPaths::new(&s.results, dataset, leg);
        let Some(cell) = cached_cell(campaign, &paths, (dataset, leg), &key, false) else {
            return Ok(None);
        };
        if cell.0.status == Status::Ok
            && !s.no_curves
            && campaign.legs[leg].has_budget()
            && crate::pipeline::curve::cached(campaign, s, (dataset, leg), &key, false).is_none()
        {
            return Ok(None);
        }
        cells.push((cell, paths.failed));
    }
    report_dataset(
        dataset,
        head.manifest.stats.chunks,
        idx.len(),
        &ident,
        "; every cell cached (the export was checked, not loaded)",
    );
    let runs = s.results.join("runs").join(dataset);
    trec::write(
        &runs.join("qrels.txt"),
        &trec::qrels_text(&ident.queries, &ident.grades, &idx),
    )?;
    remove_if_there(&runs.join("chunks.tsv"))?;
    // as a computed cell does, a cached one clears the failure an earlier run left
    for (_, failed) in &cells {
        let _ = std::fs::remove_file(failed);
    }
    Ok(Some(cells.into_iter().map(|(c, _)| c).collect()))
}

/// The line each dataset opens with: chunks, queries evaluated, those that are not, and `then`.
fn report_dataset(
    dataset: &str,
    chunks: usize,
    evaluated: usize,
    ident: &ExportIdentity<'_>,
    then: &str,
) {
    let no_gold = ident.without_gold();
    let with_gold = ident.queries.len() - no_gold;
    eprintln!(
        "{dataset}: {chunks} chunks, {evaluated} queries evaluated{}{}{}{then}",
        match ident.gain() {
            Some(g) => format!("; nDCG gain {}", Gain::describe(Some(g))),
            None => String::new(),
        },
        if evaluated < with_gold {
            format!(" (of {with_gold}, --limit)")
        } else {
            String::new()
        },
        if no_gold > 0 {
            format!("; {no_gold} queries without gold not evaluated")
        } else {
            String::new()
        }
    );
}

fn remove_if_there(path: &std::path::Path) -> Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(e).with_context(|| format!("removing {}", path.display()))
        }
        _ => Ok(()),
    }
}

/// A cell's summary and outcome, plus the leg when this call built it (the budget curve reuses
/// it rather than building the leg, and embedding its texts, a second time).
type CellRun = ((CellSummary, CellOutcome), Option<Box<dyn Leg>>);

/// What every summary of one cell carries, whatever its outcome.
struct CellHead<'a> {
    dataset: &'a str,
    leg: &'a str,
    protocol: String,
    paths: CellPaths,
}

impl CellHead<'_> {
    /// Writes the summary of a cell without numbers (missing inputs, no query, an error) and
    /// returns it with its outcome.
    fn without_numbers(
        &self,
        status: Status,
        reason: String,
        (key, inputs): (String, CellInputs),
        queries_without_gold: Option<usize>,
        outcome: CellOutcome,
    ) -> Result<CellRun> {
        let mut cell = CellSummary::without_numbers(
            self.dataset,
            self.leg,
            &self.protocol,
            status,
            reason,
            key,
            inputs,
        );
        if let Some(n) = queries_without_gold {
            cell.queries_without_gold = n;
        }
        summary::write_summary(&self.paths.summary, &cell)?;
        Ok(((cell, outcome), None))
    }
}

fn run_cell(
    campaign: &Campaign,
    s: &MatrixSettings,
    contract: &Contract,
    pool: &rayon::ThreadPool,
    dataset: &str,
    leg_name: &str,
    views: &Views<'_>,
) -> Result<CellRun> {
    let state = views.state;
    let spec = &campaign.legs[leg_name];
    let (export, idx) = match state {
        DatasetState::Ready(e) => (Some(e.clone()), query_indices(e, s.limit)),
        DatasetState::Missing(_) => (None, Vec::new()),
    };
    let ident = export.as_deref().map(ExportIdentity::of_export);
    let (inputs, key) = cell_inputs(campaign, s, contract, leg_name, ident.as_ref());
    let head = CellHead {
        dataset,
        leg: leg_name,
        protocol: crate::pipeline::protocol::label(campaign.protocol(dataset), export.as_deref()),
        paths: CellPaths::new(&s.results, dataset, leg_name),
    };
    // the dataset's inputs, or the models the leg names, are not there
    let export = match (state, s.leg_models.missing.get(leg_name)) {
        (DatasetState::Missing(reason), _) | (DatasetState::Ready(_), Some(reason)) => {
            return head.without_numbers(
                Status::MissingInputs,
                reason.clone(),
                (key, inputs),
                None,
                CellOutcome::Missing,
            )
        }
        (DatasetState::Ready(e), None) => e.clone(),
    };
    let no_gold = queries_without_gold(&export);
    if idx.is_empty() {
        let reason = format!(
            "no query to evaluate: none of the dataset's {} queries has gold",
            export.queries.len()
        );
        return head.without_numbers(
            Status::Empty,
            reason,
            (key, inputs),
            Some(no_gold),
            CellOutcome::Computed,
        );
    }
    if !s.force {
        if let Some(cell) = cached_cell(campaign, &head.paths, (dataset, leg_name), &key, true) {
            return Ok((cell, None));
        }
    }
    let export = views.for_leg(leg_name)?;
    let model = s.leg_models.get(leg_name);
    let leg = match crate::pipeline::leg_build::build(spec, leg_name, &export, &s.data, model)? {
        Ok(l) => l,
        Err(LegError::MissingInputs(reason)) => {
            return head.without_numbers(
                Status::MissingInputs,
                reason,
                (key, inputs),
                None,
                CellOutcome::Missing,
            )
        }
        // an engine that cannot start, or an export file that no longer reads, fails its
        // cell, not the run
        Err(e @ (LegError::Engine(_) | LegError::Export(_))) => {
            return head.without_numbers(
                Status::Error,
                e.to_string(),
                (key, inputs),
                None,
                CellOutcome::Computed,
            )
        }
        Err(e) => return Err(e.into()),
    };
    // building the leg may have built the index an embedded engine searches, whose identity
    // is part of the key: the summary carries the key a rerun will compute
    let (inputs, key) = if inputs.engine_shards.is_empty() {
        (inputs, key)
    } else {
        let ident = ExportIdentity::of_export(&export);
        cell_inputs(campaign, s, contract, leg_name, Some(&ident))
    };

    let label = format!("{dataset} x {leg_name}");
    let (results, failure, wall_ms) =
        run_queries(campaign, s, pool, &export, leg.as_ref(), &idx, &label);
    if let Some(reason) = failure {
        // a leg that cannot retrieve or select is an `error` cell with its reason, never zeros
        return head.without_numbers(
            Status::Error,
            reason,
            (key, inputs),
            None,
            CellOutcome::Computed,
        );
    }
    let timing = timing_of(s, wall_ms, &results);
    let mut cell = CellSummary::from_results(
        dataset,
        leg_name,
        &head.protocol,
        key,
        inputs,
        &metric_names(&campaign.recall_k, &campaign.extra_measures()),
        &results,
        timing,
    );
    cell.queries_without_gold = no_gold;
    write_computed(campaign, &export, &head, &mut cell, &results)?;
    Ok(((cell, CellOutcome::Computed), Some(leg)))
}

/// Runs the queries `idx` of `export` through `leg` in `pool`, with a progress bar named
/// `label`: their results (in `idx` order), why the cell fails when a query failed, and the
/// wall time of the whole run in ms.
fn run_queries(
    campaign: &Campaign,
    s: &MatrixSettings,
    pool: &rayon::ThreadPool,
    export: &Export,
    leg: &dyn Leg,
    idx: &[usize],
    label: &str,
) -> (Vec<QueryResult>, Option<String>, f64) {
    let bar =
        crate::pipeline::progress::Progress::new(s.progress, label, "queries", idx.len() as u64);
    // what every query is scored on, resolved once for the cell
    let measured =
        crate::measure::metrics::measured(&campaign.recall_k, &campaign.extra_measures());
    let started = Instant::now();
    let results: Vec<Result<QueryResult, evaluate::QueryFailure>> = pool.install(|| {
        idx.par_iter()
            .map(|&q| {
                let r = query_result(&measured, export, leg, q);
                bar.inc(1);
                r
            })
            .collect()
    });
    let wall_ms = started.elapsed().as_secs_f64() * 1e3;
    bar.finish();
    let (results, failures): (Vec<_>, Vec<_>) = results.into_iter().partition(Result::is_ok);
    let results: Vec<QueryResult> = results.into_iter().filter_map(Result::ok).collect();
    let failure = evaluate::cell_failure(failures.into_iter().filter_map(Result::err));
    (results, failure, wall_ms)
}

/// One query through a leg: retrieve, select, score. Single-threaded and order-fixed, so its
/// numbers do not depend on the pool it runs in.
fn query_result(
    measured: &[crate::measure::metrics::At],
    export: &Export,
    leg: &dyn Leg,
    q: usize,
) -> Result<QueryResult, evaluate::QueryFailure> {
    let input = QueryInput::from_export(export, q);
    let rec = &export.queries[q];
    let fail = |e: LegError| evaluate::QueryFailure::of(&rec.id, &e);
    // the timed span includes an external engine's round trip
    let t0 = Instant::now();
    let retrieval = leg.retrieve(&input).map_err(fail)?;
    let t1 = Instant::now();
    let retrieval = leg.rerank(&input, retrieval).map_err(fail)?;
    let t_rerank = Instant::now();
    let selection = leg.select(&input, &retrieval, None).map_err(fail)?;
    let t2 = Instant::now();
    let mut diagnostics = retrieval.diagnostics.clone();
    let rescued_gold = rescue_attribution(&retrieval, &rec.gold, &mut diagnostics).map(|ids| {
        ids.into_iter()
            .map(|c| export.chunks[c as usize].id.clone())
            .collect()
    });
    Ok(QueryResult {
        id: rec.id.clone(),
        metrics: evaluate::score(export, rec, &selection, measured),
        tokens_selected: selection.tokens,
        tokens_at_10: evaluate::tokens_of_prefix(export, &selection, evaluate::CUT),
        selected: selection.chunks.len(),
        diagnostics,
        rescued_gold,
        ranked: selection.chunks,
        retrieve_ms: (t1 - t0).as_secs_f64() * 1e3,
        select_ms: (t2 - t_rerank).as_secs_f64() * 1e3,
        rerank_ms: leg
            .has_rerank()
            .then(|| (t_rerank - t1).as_secs_f64() * 1e3),
        labels: rec.labels.clone(),
        annotations: retrieval
            .annotations
            .iter()
            .map(|(note, v)| (note.name().to_string(), v.clone()))
            .collect(),
    })
}

/// The wall clock and the latency distributions of a computed cell.
fn timing_of(s: &MatrixSettings, wall_ms: f64, results: &[QueryResult]) -> Timing {
    let lat =
        |f: &dyn Fn(&QueryResult) -> f64| Dist::of(&results.iter().map(f).collect::<Vec<_>>());
    Timing {
        threads: s.threads,
        thread_source: s.thread_source,
        wall_ms,
        latency_ms: Latency {
            retrieve: lat(&|r| r.retrieve_ms),
            select: lat(&|r| r.select_ms),
            rerank: results
                .iter()
                .any(|r| r.rerank_ms.is_some())
                .then(|| lat(&|r| r.rerank_ms.unwrap_or(0.0))),
            total: lat(&|r| r.retrieve_ms + r.rerank_ms.unwrap_or(0.0) + r.select_ms),
        },
        files: None,
        seal: None,
    }
}

/// Writes a computed cell: its run file, its records, then its summary with their hashes (the
/// summary goes last: a summary on disk means its records and run file are complete).
fn write_computed(
    campaign: &Campaign,
    export: &Export,
    head: &CellHead,
    cell: &mut CellSummary,
    results: &[QueryResult],
) -> Result<()> {
    let paths = &head.paths;
    trec::write_run(
        &paths.run,
        export,
        results.iter().map(|r| (r.id.as_str(), r.ranked.as_slice())),
        &format!("hopbench-{}", head.leg),
    )?;
    let names = metric_names(&campaign.recall_k, &campaign.extra_measures());
    summary::write_records(&paths.records, &names, &campaign.breakdown_labels, results)?;
    if let Some(t) = cell.timing.as_mut() {
        t.files = Some(summary::FileHashes::of(paths)?);
    }
    summary::write_summary(&paths.summary, cell)?;
    Ok(())
}

/// Rescue attribution, for legs whose retrieval reports a rescue stage
/// ([`hopbench_legs::Retrieval::rescue_stage`]): the gold chunks that only the rescue lanes
/// reached (stamped `rescued`: a rescue candidate already in the base is dropped, so a rescued
/// chunk is one the base never had), and the gold in the base. `None` for other legs.
fn rescue_attribution(
    retrieval: &hopbench_legs::Retrieval,
    gold: &[u32],
    diagnostics: &mut std::collections::BTreeMap<String, f64>,
) -> Option<Vec<u32>> {
    if !retrieval.rescue_stage {
        return None;
    }
    let in_gold = |c: u32| gold.binary_search(&c).is_ok();
    let rescued: Vec<u32> = retrieval
        .ranked
        .iter()
        .filter(|c| c.rescued && in_gold(c.chunk))
        .map(|c| c.chunk)
        .collect();
    let base = retrieval
        .ranked
        .iter()
        .filter(|c| !c.rescued && in_gold(c.chunk))
        .count();
    diagnostics.insert("gold_in_base".into(), base as f64);
    diagnostics.insert("rescued_gold".into(), rescued.len() as f64);
    Some(rescued)
}

/// The budget curve of a selecting leg (cached by its own key; no-op for other legs).
#[allow(clippy::too_many_arguments)]
fn run_curve(
    campaign: &Campaign,
    s: &MatrixSettings,
    pool: &rayon::ThreadPool,
    (dataset, leg_name): (&str, &str),
    views: &Views<'_>,
    cell_key: &str,
    built: Option<Box<dyn Leg>>,
) -> Result<()> {
    let spec = &campaign.legs[leg_name];
    if !spec.has_budget() {
        return Ok(());
    }
    // a cached curve is checked before the leg is built: building opens its engines
    if built.is_none()
        && !s.force
        && crate::pipeline::curve::cached(campaign, s, (dataset, leg_name), cell_key, true)
            .is_some()
    {
        return Ok(());
    }
    let export = &views.for_leg(leg_name)?;
    let leg = match built {
        Some(l) => l,
        None => crate::pipeline::leg_build::build(
            spec,
            leg_name,
            export,
            &s.data,
            s.leg_models.get(leg_name),
        )??,
    };
    let idx = query_indices(export, s.limit);
    let cell = crate::pipeline::curve::CurveCell {
        dataset,
        leg_name,
        leg: leg.as_ref(),
        export,
        idx: &idx,
        cell_key,
    };
    let (curve, computed) = crate::pipeline::curve::run(campaign, s, pool, &cell)?;
    if computed {
        let last = curve.points.last().map(|p| p.budget).unwrap_or(0);
        eprintln!(
            "{dataset} x {leg_name}: budget curve over {} budgets (up to {last} tokens)",
            curve.points.len()
        );
    }
    Ok(())
}
