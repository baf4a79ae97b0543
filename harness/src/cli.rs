//! The command line, as clap derive types. Nothing here is resolved: [`Command::overrides`]
//! hands the flags to [`crate::settings::Settings::resolve`], which owns every default and
//! every precedence rule.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::settings::{Overrides, RunFlags};

/// A reproducible benchmark harness for the retrieval strategies that fill an LLM's context.
#[derive(Parser, Debug)]
#[command(name = "hopbench", version, about)]
pub struct Cli {
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
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
    /// Write the static HTML report of a results directory (no server, opens from disk).
    Report(ReportArgs),
    /// Draw the budget curves of every dataset (PNG and SVG).
    Plot(PlotArgs),
    /// Speed benchmarks (not tests): query latency per leg, prepare throughput.
    #[command(subcommand)]
    Bench(BenchCommand),
    /// Where each cell stands: done, stale, failed (with its error) or missing; exit 0 only
    /// when every cell is done.
    Status(StatusArgs),
    /// Write (and with --submit, submit) the Slurm job scripts that run the matrix as job
    /// arrays: embedding parts, then cell parts, then a collect step that writes the matrix.
    Slurm(SlurmArgs),
    /// List the campaign's datasets and whether their raw files are present.
    Datasets(CommonArgs),
    /// List the campaign's legs with their resolved parameters.
    Legs(CommonArgs),
    /// Serve a leg's dense side through Qdrant's HNSW at several `hnsw_ef` and measure what
    /// changes against the exact engine: ANN recall@10, gate agreement, paired metric
    /// differences with CIs, latency (needs the `qdrant` build feature).
    ServingParity(ParityArgs),
    /// Score a run file (TREC, JSON or parquet) against TREC qrels with hopbench's metrics,
    /// mean and 95% CI per metric (no campaign, export or model needed).
    Eval(EvalArgs),
}

/// `hopbench eval`'s arguments.
#[derive(Args, Debug)]
pub struct EvalArgs {
    /// The run: TREC (`qid Q0 docid rank score tag`), JSON (`{qid: {docid: score}}`) or
    /// parquet (columns `query_id`, `doc_id`, `score`).
    pub run: PathBuf,
    /// TREC qrels (`qid 0 docid rel`; relevant when rel > 0).
    pub qrels: PathBuf,
    /// The run's format (default: from its extension: .trec, .txt, .run, .json, .parquet).
    #[arg(long, value_enum)]
    pub run_format: Option<RunFormatArg>,
    /// How to print the result.
    #[arg(long, value_enum, default_value = "table")]
    pub format: EvalOutput,
    /// Also write the per-query values: FILE.json (`{qid: {metric: value}}`) or FILE.tsv.
    #[arg(long)]
    pub per_query: Option<PathBuf>,
    /// A run query the qrels do not judge: `error`, or `drop` (its records are dropped and
    /// counted).
    #[arg(long, value_enum, default_value = "error")]
    pub unknown_ids: UnknownIdsArg,
    /// Campaign whose `recall_k` and `stats` to use (default: the compiled-in campaign's).
    #[arg(long)]
    pub campaign: Option<PathBuf>,
    /// No confidence intervals (the bootstrap costs resamples x queries per metric).
    #[arg(long)]
    pub no_ci: bool,
}

/// `--run-format`.
#[derive(clap::ValueEnum, Debug, Clone, Copy)]
pub enum RunFormatArg {
    /// `qid Q0 docid rank score tag` lines.
    Trec,
    /// `{qid: {docid: score}}`.
    Json,
    /// Columns `query_id`, `doc_id`, `score`.
    Parquet,
}

impl RunFormatArg {
    /// The reader's format.
    pub fn format(self) -> hopbench_datasets::runfile::RunFormat {
        use hopbench_datasets::runfile::RunFormat;
        match self {
            RunFormatArg::Trec => RunFormat::Trec,
            RunFormatArg::Json => RunFormat::Json,
            RunFormatArg::Parquet => RunFormat::Parquet,
        }
    }
}

/// `hopbench eval --format`.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum EvalOutput {
    /// An aligned table with the counts above it.
    Table,
    /// The whole report as JSON.
    Json,
    /// One row per metric: `metric mean ci_lo ci_hi queries`.
    Tsv,
}

/// `--unknown-ids`.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnknownIdsArg {
    /// An error naming the file and the line.
    Error,
    /// Dropped and counted.
    Drop,
}

#[derive(Args, Debug, Clone)]
pub struct CommonArgs {
    /// Campaign file (default: ./campaign.yaml, else the compiled-in default).
    #[arg(long)]
    pub campaign: Option<PathBuf>,
    /// Directory holding the raw datasets (default: $HOPBENCH_DATA, else the campaign's
    /// `data_dir`; none: only generated data).
    #[arg(long, env = "HOPBENCH_DATA")]
    pub data_dir: Option<PathBuf>,
    /// Results directory (default: the campaign's `results`).
    #[arg(long)]
    pub results: Option<PathBuf>,
    /// Embedding model directory (default: $HOPBENCH_MODEL_DIR, else the campaign's `model`).
    #[arg(long, env = "HOPBENCH_MODEL_DIR")]
    pub model: Option<PathBuf>,
    /// Let a dataset's `files` name absolute paths, `..` and links that lead outside the data
    /// directory (refused by default).
    #[arg(long)]
    pub allow_outside_data_dir: bool,
    /// Fail at once when another hopbench process is writing the results directory (default:
    /// wait for it).
    #[arg(long)]
    pub no_wait: bool,
}

/// Which cells: the datasets and legs a matrix command covers.
#[derive(Args, Debug, Clone)]
pub struct Selection {
    /// `all` or a comma list of dataset names (default: the campaign's `run.datasets`, else all).
    #[arg(long)]
    pub datasets: Option<String>,
    /// `all` or a comma list of leg names (default: the campaign's `run.legs`, else all).
    #[arg(long)]
    pub legs: Option<String>,
}

#[derive(Args, Debug)]
pub struct RunArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    #[command(flatten)]
    pub select: Selection,
    /// Evaluate only the first N queries of each dataset (a different query set: cells are not
    /// comparable with full runs). At least 1.
    #[arg(long, value_parser = at_least_one, allow_negative_numbers = true)]
    pub limit: Option<usize>,
    /// Recompute cells even when their key matches.
    #[arg(long)]
    pub force: bool,
    /// Thread count (required, or RAYON_NUM_THREADS, or the campaign's `run.threads`): the
    /// determinism contract.
    #[arg(long, allow_negative_numbers = true)]
    pub threads: Option<usize>,
    /// No progress bars.
    #[arg(long)]
    pub quiet: bool,
    /// Do not compute budget curves for selecting legs.
    #[arg(long)]
    pub no_curves: bool,
    /// Print the resolved settings as a campaign file (feed it back with `--campaign`) and exit.
    #[arg(long)]
    pub show_settings: bool,
    /// Do not write the HTML report at the end.
    #[arg(long)]
    pub no_report: bool,
    /// Run only part I of N (I from 0) of the selected cells, beside the other parts (a Slurm
    /// array task); no matrix.md: an unsharded run afterwards finds every cell cached.
    #[arg(long)]
    pub shard: Option<crate::shard::Shard>,
    /// Run only these cells of the selection: a comma list of DATASET/LEG.
    #[arg(long)]
    pub cells: Option<String>,
}

#[derive(Args, Debug)]
pub struct StatusArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    #[command(flatten)]
    pub select: Selection,
    /// `--limit` of the run whose cells to look at.
    #[arg(long, value_parser = at_least_one, allow_negative_numbers = true)]
    pub limit: Option<usize>,
}

#[derive(Args, Debug)]
pub struct SlurmArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    #[command(flatten)]
    pub select: Selection,
    /// Tasks per job array.
    #[arg(long, default_value_t = 4)]
    pub array: usize,
    /// CPUs per task; each task runs with this many threads.
    #[arg(long, default_value_t = 1)]
    pub cpus_per_task: usize,
    /// Slurm partition.
    #[arg(long)]
    pub partition: Option<String>,
    /// Time limit per job (Slurm syntax, e.g. 02:00:00).
    #[arg(long)]
    pub time: Option<String>,
    /// Memory per job (e.g. 16G).
    #[arg(long)]
    pub mem: Option<String>,
    /// An extra `#SBATCH` line for every job (repeatable), e.g. `--account=proj`.
    #[arg(long = "extra-sbatch")]
    pub extra: Vec<String>,
    /// No embedding array (everything is embedded already).
    #[arg(long)]
    pub no_embed: bool,
    /// Only the cells `hopbench status` does not call done.
    #[arg(long)]
    pub only_missing: bool,
    /// Print the scripts and exit.
    #[arg(long)]
    pub dry_run: bool,
    /// Submit the scripts with sbatch (each array after the one before it succeeded).
    #[arg(long)]
    pub submit: bool,
    /// With --submit: wait until the collect step ends and exit with its status.
    #[arg(long)]
    pub wait: bool,
}

#[derive(Args, Debug)]
pub struct PrepareArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// `all` or a comma list of dataset names.
    #[arg(long, alias = "dataset", default_value = "all")]
    pub datasets: String,
    /// No progress bars.
    #[arg(long)]
    pub quiet: bool,
    /// Embed only part I of N (I from 0) of the datasets' texts into the embedding cache,
    /// beside the other parts (a Slurm array task), and write no export.
    #[arg(long)]
    pub shard: Option<crate::shard::Shard>,
}

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// First results directory (the baseline).
    pub a: PathBuf,
    /// Second results directory.
    pub b: PathBuf,
    /// Also write the comparison as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Campaign whose `stats` settings to use (default as for run-matrix).
    #[arg(long)]
    pub campaign: Option<PathBuf>,
}

#[derive(Args, Debug)]
/// Two legs of one dataset in one results directory (`compare-legs`, `compare-curves`).
pub struct LegPairArgs {
    /// Results directory (default: the campaign's `results`).
    #[arg(long)]
    pub results: Option<PathBuf>,
    /// Dataset name.
    #[arg(long)]
    pub dataset: String,
    /// Leg A (the baseline).
    pub a: String,
    /// Leg B.
    pub b: String,
    /// Also write the comparison as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Campaign whose `stats` settings to use.
    #[arg(long)]
    pub campaign: Option<PathBuf>,
    /// compare-legs only: one paired comparison per group of a dataset label (`multi_turn`),
    /// of `intent` (as a conversation leg classified it), or of a `note:<annotation>`.
    #[arg(long)]
    pub by: Option<String>,
    /// compare-curves only: take leg B from this dataset instead (another chunking variant of
    /// `--dataset`, `docs@size512-overlap0`): the same queries under another chunking, at equal
    /// token spend.
    #[arg(long)]
    pub dataset_b: Option<String>,
}

#[derive(Args, Debug)]
pub struct BreakdownArgs {
    /// Results directory (default: the campaign's `results`).
    #[arg(long)]
    pub results: Option<PathBuf>,
    /// Dataset name.
    #[arg(long)]
    pub dataset: String,
    /// `all` or a comma list of leg names (cells that exist).
    #[arg(long, default_value = "all")]
    pub legs: String,
    /// Campaign (default as for run-matrix).
    #[arg(long)]
    pub campaign: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Results directory (default: the campaign's `results`).
    #[arg(long)]
    pub results: Option<PathBuf>,
    /// Output directory (default: <results>/report).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Campaign (for the default results directory and the `report:` block).
    #[arg(long)]
    pub campaign: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct PlotArgs {
    /// Results directory (default: the campaign's `results`).
    #[arg(long)]
    pub results: Option<PathBuf>,
    /// `all` or a comma list of dataset names.
    #[arg(long, default_value = "all")]
    pub datasets: String,
    /// Output directory (default: <results>/plots).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Campaign (for the default results directory).
    #[arg(long)]
    pub campaign: Option<PathBuf>,
}

/// `hopbench serving-parity`'s arguments.
#[derive(Args, Debug)]
pub struct ParityArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// The dataset.
    #[arg(long)]
    pub dataset: String,
    /// The campaign leg whose dense side is served (it must have one).
    #[arg(long, default_value = "graph_rescue")]
    pub leg: String,
    /// Comma list of search beam widths.
    #[arg(long, value_delimiter = ',', default_value = "16,64,128,512")]
    pub hnsw_ef: Vec<usize>,
    /// HNSW links per node.
    #[arg(long, default_value_t = 16)]
    pub m: usize,
    /// HNSW build beam width.
    #[arg(long, default_value_t = 100)]
    pub ef_construct: usize,
    /// Vectors and graph memory-mapped from disk.
    #[arg(long)]
    pub on_disk: bool,
    /// Timed passes over the queries per path (after the pass whose results are compared).
    #[arg(long, default_value_t = 5)]
    pub repeat: usize,
    /// Write parity-<dataset>-<leg>.{json,md,png,svg} here (default: <results>/parity).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

#[derive(Subcommand, Debug)]
pub enum BenchCommand {
    /// Per-leg query latency and throughput, one query at a time on one thread.
    Latency(LatencyArgs),
    /// Prepare throughput: reading, tokenising + BM25 (chunks/s), embedding (passages/s).
    Prepare(BenchPrepareArgs),
    /// SPEC-028 per-turn assembly time beside the conversation retrievals (median, p95).
    Assembly(AssemblyArgs),
    /// Synthetic world generation: time and peak RSS per size, and the growth exponent.
    Generate(BenchGenerateArgs),
    /// Prepare and query cost as the corpus grows: per-stage time and peak RSS, per-leg
    /// latency, growth exponents, a computing and a cached matrix run (hashing-384 embedder).
    Scale(BenchScaleArgs),
}

#[derive(Args, Debug)]
pub struct BenchScaleArgs {
    /// Comma list of passage counts, e.g. `10000,100000,1000000`.
    #[arg(long, value_delimiter = ',', required = true)]
    pub passages: Vec<usize>,
    /// Where the scale campaign, its exports, shards and cells go.
    #[arg(long, default_value = "results-scale")]
    pub results: PathBuf,
    /// Questions each leg is timed on (and the matrix's `--limit`).
    #[arg(long, default_value_t = 100, value_parser = at_least_one)]
    pub queries: usize,
    /// Timed passes per leg (after one warm-up pass).
    #[arg(long, default_value_t = 3, value_parser = at_least_one)]
    pub repeat: usize,
    /// Threads of the prepare and the matrix (latencies are one thread).
    #[arg(long, default_value_t = 2, value_parser = at_least_one)]
    pub threads: usize,
    /// Skip the two `run-matrix` runs.
    #[arg(long)]
    pub no_matrix: bool,
    /// Write the results as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct BenchGenerateArgs {
    /// Comma list of passage counts, e.g. `10000,100000,1000000`.
    #[arg(long, value_delimiter = ',', required = true)]
    pub passages: Vec<usize>,
    /// Distractor paragraphs per entity (entities = passages / (1 + this)).
    #[arg(long, default_value_t = 1)]
    pub distractors_per_entity: usize,
    /// Seed of the generated worlds (default: the default world's).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Write the results as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct AssemblyArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Comma list of conversational dataset names.
    #[arg(long)]
    pub datasets: String,
    /// The multi_horizon leg whose assembler settings to time.
    #[arg(long, default_value = "multi_horizon")]
    pub leg: String,
    /// Timed passes over the turns (after one warm-up pass).
    #[arg(long, default_value_t = 20)]
    pub repeat: usize,
    /// Write the results as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct LatencyArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Comma list of dataset names.
    #[arg(long)]
    pub datasets: String,
    /// `all` or a comma list of leg names.
    #[arg(long, default_value = "all")]
    pub legs: String,
    /// Timed passes over the queries (after one warm-up pass).
    #[arg(long, default_value_t = 20)]
    pub repeat: usize,
    /// Time the queries of this other dataset against each dataset's corpus (same model).
    #[arg(long)]
    pub queries_from: Option<String>,
    /// Also record each query's top-N chunk ids (for peer comparisons).
    #[arg(long, default_value_t = 0)]
    pub top: usize,
    /// Write the results as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct BenchPrepareArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Comma list of dataset names.
    #[arg(long)]
    pub datasets: String,
    /// Passages to embed (0 = all).
    #[arg(long, default_value_t = 500)]
    pub sample: usize,
    /// Embed the `--sample` passages with the most tokens instead of the first ones (the
    /// long-passage case: most are cut at the model's window).
    #[arg(long)]
    pub longest: bool,
    /// Timed embedding passes (after one warm-up pass when more than one); the median is
    /// reported.
    #[arg(long, default_value_t = 1, value_parser = at_least_one)]
    pub repeat: usize,
    /// Write every embedded text and its vector to this file, one JSON object per line
    /// (`{"text": ..., "vector": [...]}`), e.g. for `scripts/embed_peer.py`.
    #[arg(long)]
    pub vectors: Option<PathBuf>,
    /// Write the results as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

impl Selection {
    /// The run flags of a command that plans cells without running them (`status`, `slurm`):
    /// no cell key depends on the thread count, so one is pinned to pass the contract check.
    fn planning(&self, limit: Option<usize>) -> RunFlags {
        RunFlags {
            datasets: self.datasets.clone(),
            legs: self.legs.clone(),
            limit,
            threads: Some(1),
            force: false,
            quiet: true,
            no_curves: false,
            shard: None,
            cells: None,
        }
    }
}

impl CommonArgs {
    fn overrides(&self) -> Overrides {
        Overrides {
            campaign: self.campaign.clone(),
            results: self.results.clone(),
            data_dir: self.data_dir.clone(),
            model: self.model.clone(),
            allow_outside_data_dir: self.allow_outside_data_dir,
            run: None,
        }
    }
}

impl Command {
    /// The flags that take part in settings resolution.
    pub fn overrides(&self) -> Overrides {
        let only = |campaign: &Option<PathBuf>, results: &Option<PathBuf>| Overrides {
            campaign: campaign.clone(),
            results: results.clone(),
            ..Overrides::default()
        };
        match self {
            Command::RunMatrix(a) => Overrides {
                run: Some(RunFlags {
                    datasets: a.select.datasets.clone(),
                    legs: a.select.legs.clone(),
                    limit: a.limit,
                    threads: a.threads,
                    force: a.force,
                    quiet: a.quiet,
                    no_curves: a.no_curves,
                    shard: a.shard,
                    cells: a.cells.clone(),
                }),
                ..a.common.overrides()
            },
            Command::Prepare(a) => a.common.overrides(),
            Command::Slurm(a) => Overrides {
                run: Some(a.select.planning(None)),
                ..a.common.overrides()
            },
            Command::Status(a) => Overrides {
                run: Some(a.select.planning(a.limit)),
                ..a.common.overrides()
            },
            Command::Compare(a) => only(&a.campaign, &None),
            Command::CompareLegs(a) | Command::CompareCurves(a) => only(&a.campaign, &a.results),
            Command::Breakdown(a) => only(&a.campaign, &a.results),
            Command::Plot(a) => only(&a.campaign, &a.results),
            Command::Report(a) => only(&a.campaign, &a.results),
            Command::Bench(BenchCommand::Latency(a)) => a.common.overrides(),
            Command::ServingParity(a) => a.common.overrides(),
            Command::Bench(BenchCommand::Prepare(a)) => a.common.overrides(),
            Command::Bench(BenchCommand::Assembly(a)) => a.common.overrides(),
            // `bench generate` and `bench scale` read no settings: main runs them before
            // resolving any
            Command::Bench(BenchCommand::Generate(_) | BenchCommand::Scale(_)) => {
                Overrides::default()
            }
            Command::Datasets(c) | Command::Legs(c) => c.overrides(),
            // `eval` reads no settings: main runs it before resolving any
            Command::Eval(a) => only(&a.campaign, &None),
        }
    }
}

/// A count that must be positive (`--limit 0` would measure nothing and look like a result).
fn at_least_one(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}
