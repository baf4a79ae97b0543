//! `hopbench`: a reproducible benchmark harness for retrieval strategies.
//!
//! The binary is a thin layer: clap parses arguments into one resolved settings struct per
//! command, and the modules below do the work, passing plain structs:
//! `campaign` (typed campaign.yaml) -> `data` (raw files -> export) -> `matrix` (legs x queries)
//! -> `evaluate`/`metrics` -> `summary` (cells) -> `report`, `compare`, `trec`.

/// `println!` that ends the process quietly when stdout is closed (`hopbench ... | head`), as
/// command-line tools should, instead of panicking on the broken pipe.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let mut stdout = std::io::stdout().lock();
        if let Err(e) = writeln!(stdout, $($arg)*).and_then(|_| stdout.flush()) {
            if e.kind() == std::io::ErrorKind::BrokenPipe {
                std::process::exit(0);
            }
            panic!("cannot write to stdout: {e}");
        }
    }};
}

mod bench;
mod breakdown;
mod cache;
mod campaign;
mod compare;
mod contract;
mod curve;
mod data;
mod evaluate;
mod fsx;
mod leg_build;
mod matrix;
mod metrics;
mod plot;
mod report;
mod spend;
mod stats;
mod summary;
mod trec;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand};

use crate::campaign::{select, Campaign};
use crate::matrix::CellOutcome;

/// A reproducible benchmark harness for the retrieval strategies that fill an LLM's context.
#[derive(Parser, Debug)]
#[command(name = "hopbench", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run every selected leg on every selected dataset and write one cached cell each.
    RunMatrix(RunArgs),
    /// Build (or reuse) the export of datasets: read raw files, embed, index.
    Prepare(PrepareArgs),
    /// Compare two results directories cell by cell.
    Compare(CompareArgs),
    /// Paired comparison of two legs on one dataset of one results directory.
    CompareLegs(LegPairArgs),
    /// Equal-spend comparison of two selecting legs' budget curves on one dataset.
    CompareCurves(LegPairArgs),
    /// Per-group metrics of cells (by dataset label and classified intent), the intent
    /// confusion matrix and reference-resolution accuracy.
    Breakdown(BreakdownArgs),
    /// Draw the budget curves of every dataset (PNG and SVG).
    Plot(PlotArgs),
    /// Speed benchmarks (not tests): query latency per leg, prepare throughput.
    #[command(subcommand)]
    Bench(BenchCommand),
    /// List the campaign's datasets and whether their raw files are present.
    Datasets(CommonArgs),
    /// List the campaign's legs with their resolved parameters.
    Legs(CommonArgs),
}

#[derive(Args, Debug, Clone)]
struct CommonArgs {
    /// Campaign file (default: ./campaign.yaml, else the compiled-in default).
    #[arg(long)]
    campaign: Option<PathBuf>,
    /// Directory holding the raw datasets (default: $HOPBENCH_DATA; none: only generated data).
    #[arg(long, env = "HOPBENCH_DATA")]
    data_dir: Option<PathBuf>,
    /// Results directory (default: the campaign's `results`).
    #[arg(long)]
    results: Option<PathBuf>,
    /// Embedding model directory (default: $HOPBENCH_MODEL_DIR, else the campaign's `model`).
    #[arg(long, env = "HOPBENCH_MODEL_DIR")]
    model: Option<PathBuf>,
}

#[derive(Args, Debug)]
struct RunArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// `all` or a comma list of dataset names.
    #[arg(long, default_value = "all")]
    datasets: String,
    /// `all` or a comma list of leg names.
    #[arg(long, default_value = "all")]
    legs: String,
    /// Evaluate only the first N queries of each dataset (a different query set: cells are not
    /// comparable with full runs).
    #[arg(long)]
    limit: Option<usize>,
    /// Recompute cells even when their key matches.
    #[arg(long)]
    force: bool,
    /// Thread count (required, or RAYON_NUM_THREADS): the determinism contract.
    #[arg(long)]
    threads: Option<usize>,
    /// No progress bars.
    #[arg(long)]
    quiet: bool,
    /// Do not compute budget curves for selecting legs.
    #[arg(long)]
    no_curves: bool,
    /// Print the resolved settings and exit.
    #[arg(long)]
    show_settings: bool,
}

#[derive(Args, Debug)]
struct PrepareArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// `all` or a comma list of dataset names.
    #[arg(long, alias = "dataset", default_value = "all")]
    datasets: String,
    /// No progress bars.
    #[arg(long)]
    quiet: bool,
}

#[derive(Args, Debug)]
struct CompareArgs {
    /// First results directory (the baseline).
    a: PathBuf,
    /// Second results directory.
    b: PathBuf,
    /// Also write the comparison as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Campaign whose `stats` settings to use (default as for run-matrix).
    #[arg(long)]
    campaign: Option<PathBuf>,
}

#[derive(Args, Debug)]
/// Two legs of one dataset in one results directory (`compare-legs`, `compare-curves`).
struct LegPairArgs {
    /// Results directory (default: the campaign's `results`).
    #[arg(long)]
    results: Option<PathBuf>,
    /// Dataset name.
    #[arg(long)]
    dataset: String,
    /// Leg A (the baseline).
    a: String,
    /// Leg B.
    b: String,
    /// Also write the comparison as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Campaign whose `stats` settings to use.
    #[arg(long)]
    campaign: Option<PathBuf>,
    /// compare-legs only: one paired comparison per group of a dataset label (`multi_turn`),
    /// of `intent` (as a conversation leg classified it), or of a `note:<annotation>`.
    #[arg(long)]
    by: Option<String>,
}

#[derive(Args, Debug)]
struct BreakdownArgs {
    /// Results directory (default: the campaign's `results`).
    #[arg(long)]
    results: Option<PathBuf>,
    /// Dataset name.
    #[arg(long)]
    dataset: String,
    /// `all` or a comma list of leg names (cells that exist).
    #[arg(long, default_value = "all")]
    legs: String,
    /// Campaign (default as for run-matrix).
    #[arg(long)]
    campaign: Option<PathBuf>,
}

#[derive(Args, Debug)]
struct PlotArgs {
    /// Results directory (default: the campaign's `results`).
    #[arg(long)]
    results: Option<PathBuf>,
    /// `all` or a comma list of dataset names.
    #[arg(long, default_value = "all")]
    datasets: String,
    /// Output directory (default: <results>/plots).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Campaign (for the default results directory).
    #[arg(long)]
    campaign: Option<PathBuf>,
}

#[derive(Subcommand, Debug)]
enum BenchCommand {
    /// Per-leg query latency and throughput, one query at a time on one thread.
    Latency(LatencyArgs),
    /// Prepare throughput: reading, tokenising + BM25 (chunks/s), embedding (passages/s).
    Prepare(BenchPrepareArgs),
    /// SPEC-028 per-turn assembly time beside the conversation retrievals (median, p95).
    Assembly(AssemblyArgs),
}

#[derive(Args, Debug)]
struct AssemblyArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// Comma list of conversational dataset names.
    #[arg(long)]
    datasets: String,
    /// The multi_horizon leg whose assembler settings to time.
    #[arg(long, default_value = "multi_horizon")]
    leg: String,
    /// Timed passes over the turns (after one warm-up pass).
    #[arg(long, default_value_t = 20)]
    repeat: usize,
    /// Write the results as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
}

#[derive(Args, Debug)]
struct LatencyArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// Comma list of dataset names.
    #[arg(long)]
    datasets: String,
    /// `all` or a comma list of leg names.
    #[arg(long, default_value = "all")]
    legs: String,
    /// Timed passes over the queries (after one warm-up pass).
    #[arg(long, default_value_t = 20)]
    repeat: usize,
    /// Time the queries of this other dataset against each dataset's corpus (same model).
    #[arg(long)]
    queries_from: Option<String>,
    /// Also record each query's top-N chunk ids (for peer comparisons).
    #[arg(long, default_value_t = 0)]
    top: usize,
    /// Write the results as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
}

#[derive(Args, Debug)]
struct BenchPrepareArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// Comma list of dataset names.
    #[arg(long)]
    datasets: String,
    /// Passages to embed (0 = all).
    #[arg(long, default_value_t = 500)]
    sample: usize,
    /// Write the results as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
}

/// The campaign (`--campaign` or the default), where it came from, and the results directory (`--results` or the
/// campaign's `results`).
fn campaign_and_results(
    campaign: Option<&std::path::Path>,
    results: Option<&std::path::Path>,
) -> Result<(Campaign, String, PathBuf)> {
    let (campaign, origin) = Campaign::load(campaign)?;
    let results = results.map_or_else(|| PathBuf::from(&campaign.results), PathBuf::from);
    Ok((campaign, origin, results))
}

fn write_json<T: serde::Serialize>(path: Option<&std::path::Path>, value: &T) -> Result<()> {
    if let Some(p) = path {
        let text = serde_json::to_string_pretty(value).expect("serialisable") + "\n";
        fsx::write_atomic(p, text.as_bytes())?;
    }
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("hopbench: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn data_settings(
    c: &CommonArgs,
    campaign: &Campaign,
    results: &std::path::Path,
) -> data::DataSettings {
    data::DataSettings {
        data_dir: c.data_dir.clone(),
        exports: results.join("exports"),
        embeddings: results.join("embeddings"),
        model_dir: c
            .model
            .clone()
            .unwrap_or_else(|| PathBuf::from(&campaign.model)),
        prepare: campaign.prepare.clone(),
    }
}

fn run(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::RunMatrix(a) => {
            let (campaign, origin, results) =
                campaign_and_results(a.common.campaign.as_deref(), a.common.results.as_deref())?;
            let datasets = default_datasets(&a.datasets, &campaign, a.common.data_dir.is_some())?;
            let legs = select(&a.legs, campaign.legs.keys(), "leg")?;
            let (threads, thread_source) =
                contract::pinned_threads(a.threads).map_err(anyhow::Error::msg)?;
            let settings = matrix::MatrixSettings {
                data: data_settings(&a.common, &campaign, &results),
                results,
                datasets,
                legs,
                limit: a.limit,
                force: a.force,
                threads,
                thread_source,
                progress: !a.quiet,
                no_curves: a.no_curves,
            };
            if a.show_settings {
                out!("campaign: {origin}\n{settings:#?}");
                return Ok(ExitCode::SUCCESS);
            }
            let started = std::time::Instant::now();
            let cells = matrix::run(&campaign, &settings)?;
            let count = |o: CellOutcome| cells.iter().filter(|(_, x)| *x == o).count();
            eprintln!(
                "{} cells: {} computed, {} cached, {} missing inputs; {:.2} s; matrix written to {}",
                cells.len(),
                count(CellOutcome::Computed),
                count(CellOutcome::Cached),
                count(CellOutcome::Missing),
                started.elapsed().as_secs_f64(),
                settings.results.join("matrix.md").display()
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Prepare(a) => {
            let (campaign, _, results) =
                campaign_and_results(a.common.campaign.as_deref(), a.common.results.as_deref())?;
            let datasets = default_datasets(&a.datasets, &campaign, a.common.data_dir.is_some())?;
            let ds = data_settings(&a.common, &campaign, &results);
            for name in datasets {
                match data::open(&campaign, &name, &ds, !a.quiet)? {
                    data::DatasetState::Ready(e) => {
                        let s = &e.manifest.stats;
                        out!(
                            "{name}: {} chunks, {} documents, {} queries, {} gold chunks, {} with chain, {} with header; {} BM25 terms; \
                             KG: {} entities, {} edges, {} hyperedges, {} communities, {} chunks mentioning another entity; model {}; export {}",
                            s.chunks, s.documents, s.queries, s.gold_chunks, s.queries_with_chain, s.chunks_with_header, s.bm25_terms,
                            s.kg.entities, s.kg.edges, s.kg.hyperedges, s.kg.communities, s.kg.chunks_with_mentions,
                            e.manifest.model_id, e.dir.display()
                        );
                    }
                    data::DatasetState::Missing(reason) => out!("{name}: missing: {reason}"),
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Compare(a) => {
            let (campaign, _) = Campaign::load(a.campaign.as_deref())?;
            for d in [&a.a, &a.b] {
                if !d.join("cells").is_dir() {
                    anyhow::bail!(
                        "{}: not a results directory (no cells/ inside)",
                        d.display()
                    );
                }
            }
            let c = compare::compare(&a.a, &a.b, &campaign.stats)?;
            out!("{}", compare::table(&c));
            if let Some(path) = a.json {
                let text = serde_json::to_string_pretty(&c).expect("comparison serialises") + "\n";
                fsx::write_atomic(&path, text.as_bytes())
                    .with_context(|| format!("{}", path.display()))?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::CompareLegs(a) => {
            let (campaign, _, results) =
                campaign_and_results(a.campaign.as_deref(), a.results.as_deref())?;
            let c = match &a.by {
                Some(by) => {
                    compare::compare_legs_by(&results, &a.dataset, &a.a, &a.b, by, &campaign.stats)?
                }
                None => compare::compare_legs(&results, &a.dataset, &a.a, &a.b, &campaign.stats)?,
            };
            out!("{}", compare::table(&c));
            write_json(a.json.as_deref(), &c)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::CompareCurves(a) => {
            let (campaign, _, results) =
                campaign_and_results(a.campaign.as_deref(), a.results.as_deref())?;
            if a.by.is_some() {
                anyhow::bail!("--by applies to compare-legs only");
            }
            let c = spend::compare(&results, &a.dataset, &a.a, &a.b, &campaign.stats)?;
            out!("{}", spend::table(&c));
            write_json(a.json.as_deref(), &c)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Breakdown(a) => {
            let (campaign, _, results) =
                campaign_and_results(a.campaign.as_deref(), a.results.as_deref())?;
            let legs = select(&a.legs, campaign.legs.keys(), "leg")?;
            let mut found = 0;
            for leg in &legs {
                let path = summary::CellPaths::new(&results, &a.dataset, leg).summary;
                if !path.exists() {
                    continue;
                }
                found += 1;
                out!("{}", report::breakdown_text(&summary::read_summary(&path)?));
            }
            if found == 0 {
                anyhow::bail!(
                    "no cells of dataset `{}` under {} (run run-matrix first)",
                    a.dataset,
                    results.join("cells").display()
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Plot(a) => {
            let (_, _, results) =
                campaign_and_results(a.campaign.as_deref(), a.results.as_deref())?;
            let out = a.out.clone().unwrap_or_else(|| results.join("plots"));
            let all = plot::collect(&results)?;
            if all.is_empty() {
                anyhow::bail!(
                    "{}: no budget curves (run-matrix writes them for selecting legs)",
                    results.join("curves").display()
                );
            }
            let wanted: Vec<String> = all.iter().map(|(d, _)| d.clone()).collect();
            let wanted = select(&a.datasets, wanted.iter(), "dataset with curves")?;
            for (dataset, curves) in all.iter().filter(|(d, _)| wanted.contains(d)) {
                for p in plot::write(&out, dataset, curves)? {
                    out!("{}", p.display());
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Bench(BenchCommand::Latency(a)) => {
            let (campaign, _, results) =
                campaign_and_results(a.common.campaign.as_deref(), a.common.results.as_deref())?;
            let ds = data_settings(&a.common, &campaign, &results);
            let legs = select(&a.legs, campaign.legs.keys(), "leg")?;
            let mut all = Vec::new();
            let from = match &a.queries_from {
                Some(d) => Some(bench::open(
                    &campaign,
                    &select(d, campaign.datasets.keys(), "dataset")?[0],
                    &ds,
                )?),
                None => None,
            };
            for name in select(&a.datasets, campaign.datasets.keys(), "dataset")? {
                let export = bench::open(&campaign, &name, &ds)?;
                for r in bench::latency(
                    &campaign,
                    &name,
                    &export,
                    from.as_deref(),
                    &legs,
                    a.repeat.max(1),
                    a.top,
                    &ds,
                )? {
                    out!(
                        "{:<24} {:<20} {:>6} chunks {:>5} queries x{:<3} median {:>8.4} ms  p95 {:>8.4} ms  {:>10.0} q/s",
                        r.dataset, r.leg, r.chunks, r.queries, r.repeat, r.median_ms, r.p95_ms, r.qps
                    );
                    all.push(r);
                }
            }
            write_json(a.json.as_deref(), &all)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Bench(BenchCommand::Assembly(a)) => {
            let (campaign, _, results) =
                campaign_and_results(a.common.campaign.as_deref(), a.common.results.as_deref())?;
            let ds = data_settings(&a.common, &campaign, &results);
            let mut all = Vec::new();
            for name in select(&a.datasets, campaign.datasets.keys(), "dataset")? {
                let export = bench::open(&campaign, &name, &ds)?;
                let r = bench::assembly(&campaign, &name, &export, &a.leg, a.repeat.max(1), &ds)?;
                out!(
                    "{:<22} {:>4} turns (mean {:.1} per conversation) x{:<3} assemble median {:.4} ms p95 {:.4} ms | {} retrieve median {:.4} ms p95 {:.4} ms | conv_last_turn median {:.4} ms p95 {:.4} ms",
                    r.dataset, r.queries, r.turns_mean, r.repeat, r.assemble_ms[0], r.assemble_ms[1],
                    r.leg, r.multi_horizon_ms[0], r.multi_horizon_ms[1], r.last_turn_ms[0], r.last_turn_ms[1]
                );
                all.push(r);
            }
            write_json(a.json.as_deref(), &all)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Bench(BenchCommand::Prepare(a)) => {
            let (campaign, _, results) =
                campaign_and_results(a.common.campaign.as_deref(), a.common.results.as_deref())?;
            let ds = data_settings(&a.common, &campaign, &results);
            let threads =
                std::env::var("RAYON_NUM_THREADS").unwrap_or_else(|_| "unset (all cores)".into());
            let mut all = Vec::new();
            for name in select(&a.datasets, campaign.datasets.keys(), "dataset")? {
                let r = bench::prepare(&campaign, &name, &ds, a.sample)?;
                out!(
                    "{}: {} passages; read {:.2} s; tokenise+BM25 {:.0} chunks/s; embed {:.1} passages/s ({} passages, {}, RAYON_NUM_THREADS={threads})",
                    r.dataset, r.passages, r.read_s, r.bm25_chunks_per_s, r.embed_passages_per_s, r.embedded, r.model_id
                );
                all.push(r);
            }
            write_json(a.json.as_deref(), &all)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Datasets(c) => {
            let (campaign, origin) = Campaign::load(c.campaign.as_deref())?;
            out!("campaign: {origin}");
            for (name, spec) in &campaign.datasets {
                let status = data::availability(&campaign, name, c.data_dir.as_deref());
                out!(
                    "{name:<28} {:<10} {}",
                    format!("{:?}", spec.format).to_lowercase(),
                    status
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Legs(c) => {
            let (campaign, origin) = Campaign::load(c.campaign.as_deref())?;
            out!("campaign: {origin}");
            for (name, spec) in &campaign.legs {
                out!(
                    "{name:<24} {}",
                    serde_json::to_string(spec).expect("spec serialises")
                );
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `all` without a data directory means the datasets that need no files (the embedded default):
/// a fresh clone runs the whole matrix with no download. With a data directory, `all` is all.
fn default_datasets(arg: &str, campaign: &Campaign, have_data: bool) -> Result<Vec<String>> {
    let all = select(arg, campaign.datasets.keys(), "dataset")?;
    if arg.trim() == "all" && !have_data {
        let generated: Vec<String> = all
            .into_iter()
            .filter(|n| !data::needs_files(campaign, n))
            .collect();
        eprintln!(
            "no data directory (--data-dir or HOPBENCH_DATA): running the generated datasets only ({})",
            generated.join(", ")
        );
        return Ok(generated);
    }
    Ok(all)
}
