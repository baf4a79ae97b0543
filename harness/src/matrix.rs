//! The matrix runner: plans cells (dataset x leg), reuses cached ones, runs the rest, writes
//! summaries, per-query records and TREC run files, and prints the matrix table.
//!
//! Queries of a cell run in parallel on a rayon pool with the pinned thread count, each query on
//! one thread, and results are collected in dataset order: the numbers cannot depend on the
//! thread count, only the timings can.

use std::time::Instant;

use anyhow::{Context, Result};
use hopbench_datasets::export::Export;
use hopbench_legs::{Leg, LegError, QueryInput};
use rayon::prelude::*;

use crate::campaign::Campaign;
use crate::contract::Contract;
use crate::data::{self, DatasetState};
use crate::evaluate::{self, QueryResult};
use crate::settings::MatrixSettings;
use crate::summary::{self, CellInputs, CellPaths, CellSummary, Dist, Latency, Status, Timing};
use crate::{cache, report, trec};

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
        let state = data::open(campaign, dataset, &s.data, s.progress)?;
        if let DatasetState::Ready(export) = &state {
            let n = query_indices(export, s.limit).len();
            let no_gold = queries_without_gold(export);
            let with_gold = export.queries.len() - no_gold;
            eprintln!(
                "{dataset}: {} chunks, {} queries evaluated{}{}",
                export.chunks.len(),
                n,
                if n < with_gold {
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
            let qrels = trec::qrels_text(export, &query_indices(export, s.limit));
            let runs = s.results.join("runs").join(dataset);
            trec::write(&runs.join("qrels.txt"), &qrels)?;
            // chunked documents: the run files' docnos -> their source spans
            match trec::chunks_text(export) {
                Some(text) => trec::write(&runs.join("chunks.tsv"), &text)?,
                None => match std::fs::remove_file(runs.join("chunks.tsv")) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                        return Err(e).with_context(|| {
                            format!("removing {}", runs.join("chunks.tsv").display())
                        })
                    }
                    _ => {}
                },
            }
        }
        for leg in legs {
            let failed = summary::CellPaths::new(&s.results, dataset, leg).failed;
            let (cell, built) = match run_cell(campaign, s, &contract, &pool, dataset, leg, &state)
                .with_context(|| format!("cell {dataset} x {leg}"))
            {
                Ok(x) => {
                    let _ = std::fs::remove_file(&failed);
                    x
                }
                Err(e) => {
                    // `hopbench status` reports it, so a partial array can be resubmitted
                    let _ = crate::fsx::write_atomic(&failed, format!("{e:#}\n").as_bytes());
                    return Err(e);
                }
            };
            if let (DatasetState::Ready(export), Status::Ok) = (&state, cell.0.status) {
                if !s.no_curves {
                    run_curve(campaign, s, &pool, dataset, leg, export, &cell.0.key, built)
                        .with_context(|| format!("budget curve {dataset} x {leg}"))?;
                }
            }
            out.push(cell);
        }
    }
    let cells: Vec<CellSummary> = out.iter().map(|(c, _)| c.clone()).collect();
    let table = report::matrix_table(&cells);
    out!("{}{table}", report::non_semantic_line(&cells));
    // a part writes only its own cells: the whole matrix is the unsharded run's to write
    if s.shard.is_none() {
        let all = report::collect_summaries(&s.results)?;
        crate::fsx::write_atomic(
            &s.results.join("matrix.md"),
            report::matrix_markdown(&all).as_bytes(),
        )?;
    }
    Ok(out)
}

/// The cells this invocation runs, in plan order: `--cells` (those of the selected datasets
/// and legs, in the order given) or every selected dataset x leg, then this part's share of
/// them under `--shard` ([`crate::shard::Shard::owns_cell`] over plan positions).
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
    (0..export.queries.len())
        .filter(|&q| !export.queries[q].gold.is_empty())
        .take(limit.unwrap_or(usize::MAX))
        .collect()
}

/// How many of the export's queries have no gold (and so are never evaluated).
pub fn queries_without_gold(export: &Export) -> usize {
    export.queries.iter().filter(|q| q.gold.is_empty()).count()
}

fn query_set_hash(export: &Export, idx: &[usize]) -> String {
    let ident: Vec<(&str, Vec<&str>)> = idx
        .iter()
        .map(|&q| {
            let r = &export.queries[q];
            (
                r.id.as_str(),
                r.gold
                    .iter()
                    .map(|&g| export.chunks[g as usize].id.as_str())
                    .collect(),
            )
        })
        .collect();
    cache::key_of(&ident)
}

/// Everything cell (`export`'s dataset, `leg_name`) depends on, and its key (the blake3 of it).
pub fn cell_inputs(
    campaign: &Campaign,
    s: &MatrixSettings,
    contract: &Contract,
    leg_name: &str,
    export: Option<&Export>,
) -> (CellInputs, String) {
    let idx = export.map(|e| query_indices(e, s.limit));
    let leg_config = serde_json::to_value(&campaign.legs[leg_name]).expect("leg spec serialises");
    let inputs = CellInputs {
        export: export.map(|e| e.manifest.content_hash()),
        model_id: export.map(|e| e.manifest.model_id.clone()),
        model_note: export
            .and_then(|e| hopbench_datasets::embed::model_note(&e.manifest.model_id))
            .map(str::to_string),
        engine_files: cache::engine_files(&leg_config),
        engine_shards: export
            .map(|e| cache::engine_shards(&leg_config, e))
            .unwrap_or_default(),
        leg_config,
        query_set: export
            .zip(idx.as_deref())
            .map(|(e, i)| query_set_hash(e, i)),
        limit: s.limit,
        recall_k: campaign.recall_k.clone(),
        breakdown_labels: campaign.breakdown_labels.clone(),
        ci: campaign.stats.clone(),
        code_version: cache::code_version().to_string(),
        contract: contract.clone(),
    };
    let key = cache::key_of(&inputs);
    (inputs, key)
}

/// A cell's summary and outcome, plus the leg when this call built it (the budget curve reuses
/// it rather than building the leg, and embedding its texts, a second time).
type CellRun = ((CellSummary, CellOutcome), Option<Box<dyn Leg>>);

#[allow(clippy::too_many_arguments)]
fn run_cell(
    campaign: &Campaign,
    s: &MatrixSettings,
    contract: &Contract,
    pool: &rayon::ThreadPool,
    dataset: &str,
    leg_name: &str,
    state: &DatasetState,
) -> Result<CellRun> {
    let spec = &campaign.legs[leg_name];
    let paths = CellPaths::new(&s.results, dataset, leg_name);
    let (export, idx) = match state {
        DatasetState::Ready(e) => (Some(e.clone()), query_indices(e, s.limit)),
        DatasetState::Missing(_) => (None, Vec::new()),
    };
    let (inputs, key) = cell_inputs(campaign, s, contract, leg_name, export.as_deref());
    let protocol = crate::protocol::label(campaign.protocol(dataset), export.as_deref());

    let export = match state {
        DatasetState::Missing(reason) => {
            let cell = CellSummary::without_numbers(
                dataset,
                leg_name,
                &protocol,
                Status::MissingInputs,
                reason.clone(),
                key,
                inputs,
            );
            summary::write_summary(&paths.summary, &cell)?;
            return Ok(((cell, CellOutcome::Missing), None));
        }
        DatasetState::Ready(e) => e.clone(),
    };
    let no_gold = queries_without_gold(&export);
    if idx.is_empty() {
        let mut cell = CellSummary::without_numbers(
            dataset,
            leg_name,
            &protocol,
            Status::Empty,
            format!(
                "no query to evaluate: none of the dataset's {} queries has gold",
                export.queries.len()
            ),
            key,
            inputs,
        );
        cell.queries_without_gold = no_gold;
        summary::write_summary(&paths.summary, &cell)?;
        return Ok(((cell, CellOutcome::Computed), None));
    }

    if !s.force && paths.summary.exists() {
        match summary::read_summary(&paths.summary) {
            Err(e) => eprintln!(
                "warning: {dataset} x {leg_name}: cached cell not trusted ({e:#}); recomputing"
            ),
            Ok(prev) if prev.key == key && prev.status != Status::Error => {
                let names = evaluate::metric_names(&campaign.recall_k);
                match summary::verify_cell(&prev, &paths, &names) {
                    Ok(()) => {
                        // a cell without numbers is reported as what it is, not as cached work
                        let outcome = match prev.status {
                            Status::MissingInputs => CellOutcome::Missing,
                            _ => CellOutcome::Cached,
                        };
                        return Ok(((prev, outcome), None));
                    }
                    Err(why) => eprintln!(
                        "warning: {dataset} x {leg_name}: cached cell not trusted ({why}); \
                         recomputing"
                    ),
                }
            }
            Ok(_) => {}
        }
    }

    let leg = match crate::leg_build::build(spec, leg_name, &export, &s.data)? {
        Ok(l) => l,
        Err(LegError::MissingInputs(reason)) => {
            let cell = CellSummary::without_numbers(
                dataset,
                leg_name,
                &protocol,
                Status::MissingInputs,
                reason,
                key,
                inputs,
            );
            summary::write_summary(&paths.summary, &cell)?;
            return Ok(((cell, CellOutcome::Missing), None));
        }
        Err(e @ LegError::Engine(_)) => {
            // an engine that cannot start fails its cell, not the run
            let cell = CellSummary::without_numbers(
                dataset,
                leg_name,
                &protocol,
                Status::Error,
                e.to_string(),
                key,
                inputs,
            );
            summary::write_summary(&paths.summary, &cell)?;
            return Ok(((cell, CellOutcome::Computed), None));
        }
        Err(e) => return Err(e.into()),
    };
    // building the leg may have built the index an embedded engine searches, whose identity
    // is part of the key: the summary carries the key a rerun will compute
    let (inputs, key) = if inputs.engine_shards.is_empty() {
        (inputs, key)
    } else {
        cell_inputs(campaign, s, contract, leg_name, Some(&export))
    };

    let names = evaluate::metric_names(&campaign.recall_k);
    let bar = crate::progress::Progress::new(
        s.progress,
        &format!("{dataset} x {leg_name}"),
        "queries",
        idx.len() as u64,
    );
    let started = Instant::now();
    let results: Vec<Result<QueryResult, evaluate::QueryFailure>> = pool.install(|| {
        idx.par_iter()
            .map(|&q| {
                let input = QueryInput::from_export(&export, q);
                let fail = |e: LegError| evaluate::QueryFailure::of(&export.queries[q].id, &e);
                // the timed span includes an external engine's round trip
                let t0 = Instant::now();
                let retrieval = leg.retrieve(&input).map_err(fail)?;
                let t1 = Instant::now();
                let selection = leg.select(&input, &retrieval, None).map_err(fail)?;
                let t2 = Instant::now();
                let rec = &export.queries[q];
                let mut diagnostics = retrieval.diagnostics.clone();
                let rescued_gold =
                    rescue_attribution(&retrieval, &rec.gold, &mut diagnostics).map(|ids| {
                        ids.into_iter()
                            .map(|c| export.chunks[c as usize].id.clone())
                            .collect()
                    });
                let r = QueryResult {
                    id: rec.id.clone(),
                    metrics: evaluate::evaluate(&export, rec, &selection, &campaign.recall_k),
                    tokens_selected: selection.tokens,
                    tokens_at_10: evaluate::tokens_of_prefix(&export, &selection, evaluate::CUT),
                    selected: selection.chunks.len(),
                    diagnostics,
                    rescued_gold,
                    ranked: selection.chunks,
                    retrieve_ms: (t1 - t0).as_secs_f64() * 1e3,
                    select_ms: (t2 - t1).as_secs_f64() * 1e3,
                    labels: rec.labels.clone(),
                    annotations: retrieval
                        .annotations
                        .iter()
                        .map(|(note, v)| (note.name().to_string(), v.clone()))
                        .collect(),
                };
                bar.inc(1);
                Ok(r)
            })
            .collect()
    });
    let wall_ms = started.elapsed().as_secs_f64() * 1e3;
    bar.finish();
    let (results, failures): (Vec<_>, Vec<_>) = results.into_iter().partition(Result::is_ok);
    let results: Vec<QueryResult> = results.into_iter().filter_map(Result::ok).collect();
    if let Some(reason) = evaluate::cell_failure(failures.into_iter().filter_map(Result::err)) {
        // a leg that cannot retrieve or select is an `error` cell with its reason, never zeros
        let cell = CellSummary::without_numbers(
            dataset,
            leg_name,
            &protocol,
            Status::Error,
            reason,
            key,
            inputs,
        );
        summary::write_summary(&paths.summary, &cell)?;
        return Ok(((cell, CellOutcome::Computed), None));
    }

    let lat =
        |f: &dyn Fn(&QueryResult) -> f64| Dist::of(&results.iter().map(f).collect::<Vec<_>>());
    let timing = Timing {
        threads: s.threads,
        thread_source: s.thread_source,
        wall_ms,
        latency_ms: Latency {
            retrieve: lat(&|r| r.retrieve_ms),
            select: lat(&|r| r.select_ms),
            total: lat(&|r| r.retrieve_ms + r.select_ms),
        },
        files: None,
    };
    let mut cell = CellSummary::from_results(
        dataset, leg_name, &protocol, key, inputs, &names, &results, timing,
    );
    cell.queries_without_gold = no_gold;
    let ids: Vec<String> = results.iter().map(|r| r.id.clone()).collect();
    let ranked: Vec<Vec<u32>> = results.iter().map(|r| r.ranked.clone()).collect();
    trec::write(
        &paths.run,
        &trec::run_text(&export, &ids, &ranked, &format!("hopbench-{leg_name}")),
    )?;
    summary::write_records(&paths.records, &names, &campaign.breakdown_labels, &results)?;
    if let Some(t) = cell.timing.as_mut() {
        t.files = Some(summary::FileHashes::of(&paths)?);
    }
    // the summary goes last: a summary on disk means its records and run file are complete
    summary::write_summary(&paths.summary, &cell)?;
    Ok(((cell, CellOutcome::Computed), Some(leg)))
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
    dataset: &str,
    leg_name: &str,
    export: &std::sync::Arc<Export>,
    cell_key: &str,
    built: Option<Box<dyn Leg>>,
) -> Result<()> {
    let leg = match built {
        Some(l) => l,
        None => crate::leg_build::build(&campaign.legs[leg_name], leg_name, export, &s.data)??,
    };
    if leg.default_budget().is_none() {
        return Ok(());
    }
    let idx = query_indices(export, s.limit);
    let cell = crate::curve::CurveCell {
        dataset,
        leg_name,
        leg: leg.as_ref(),
        export,
        idx: &idx,
        cell_key,
    };
    let (curve, computed) = crate::curve::run(campaign, s, pool, &cell)?;
    if computed {
        let last = curve.points.last().map(|p| p.budget).unwrap_or(0);
        eprintln!(
            "{dataset} x {leg_name}: budget curve over {} budgets (up to {last} tokens)",
            curve.points.len()
        );
    }
    Ok(())
}
