//! `hopbench bench scale`: writes its own campaign and results directory, so it resolves no
//! settings.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use crate::bench::scale;
use crate::commands::{at_least_one, Command, JsonOut, Task};
use crate::pipeline::settings::{Overrides, Settings};

/// Prepare and query cost as the corpus grows: per-stage time and peak RSS, per-leg latency,
/// growth exponents, a computing and a cached matrix run (hashing-384 embedder).
#[derive(Args, Debug)]
pub struct Scale {
    /// Comma list of passage counts, e.g. `10000,100000,1000000`.
    #[arg(long, value_delimiter = ',', required = true)]
    pub passages: Vec<usize>,
    /// Comma list of the legs to time, by their names in the benchmark's leg file
    /// (harness/src/bench/scale-legs.yaml: dense, lexical, bm25, graph_rescue, and served through
    /// Qdrant dense_qdrant, graph_rescue_qdrant, dense_qdrant_int8, graph_rescue_qdrant_int8:
    /// int8 in RAM, the float vectors on disk, oversampling 4). Default: the file's `default`
    /// legs this build can run.
    #[arg(long, value_delimiter = ',')]
    pub legs: Option<Vec<String>>,
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
    /// The most points one graph of a served leg's shard holds, set as `part_points` in the dense
    /// group of every chosen leg whose engine takes it (default 524288): fewer, larger parts
    /// search faster and build with more in memory.
    #[arg(long, value_parser = at_least_one)]
    pub part_points: Option<usize>,
    #[command(flatten)]
    pub json: JsonOut,
}

impl Command for Scale {
    const TASK: Task = Task::Measure;

    fn overrides(&self) -> Option<Overrides> {
        None
    }

    fn run(self, _: Option<&Settings>) -> Result<ExitCode> {
        let plan = scale::Plan {
            sizes: self.passages,
            legs: self.legs.unwrap_or_else(scale::default_legs),
            queries: self.queries,
            repeat: self.repeat,
            threads: self.threads,
            matrix: !self.no_matrix,
            part_points: self.part_points,
        };
        let r = scale::run(&plan, &self.results)?;
        out!("{}", scale::markdown(&r).trim_end());
        self.json.write(&r)?;
        Ok(ExitCode::SUCCESS)
    }
}
