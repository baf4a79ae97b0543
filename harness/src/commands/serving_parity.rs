//! `hopbench serving-parity`: prints the markdown tables and writes the files.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use super::{exclusive_benchmark, resolved, Command, CommonArgs};
use crate::pipeline::settings::Settings;

/// Serve a leg's dense side through Qdrant's HNSW at several `hnsw_ef` (and quantisations:
/// `--quantization none,int8,binary`) and measure what changes against the exact engine: ANN
/// recall@10, gate agreement, paired metric differences with CIs, latency (needs the `qdrant`
/// build feature).
#[derive(Args, Debug)]
pub struct ServingParity {
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
    /// The most points one graph holds; a larger shard is built as several graphs, each
    /// walked per query.
    #[arg(long, default_value_t = hopbench_datasets::hnsw::PART_POINTS)]
    pub part_points: usize,
    /// Comma list of shard quantisations, each served and compared: none (float32), int8
    /// (a byte per value), binary (a bit per value).
    #[arg(long, value_delimiter = ',', default_value = "none", value_parser = quantization)]
    pub quantization: Vec<hopbench_datasets::hnsw::Quantization>,
    /// Over a quantised shard, candidates per hit taken from the compressed walk and rescored
    /// with the original vectors (default: Qdrant's, 1).
    #[arg(long)]
    pub oversampling: Option<f64>,
    /// Compare over the first N queries only (a large corpus's exact scan is slow).
    #[arg(long)]
    pub limit: Option<usize>,
    /// Timed passes over the queries per path (after the pass whose results are compared).
    #[arg(long, default_value_t = 5)]
    pub repeat: usize,
    /// Write parity-<dataset>-<leg>.{json,md,png,svg} here (default: <results>/parity).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

impl Command for ServingParity {
    exclusive_benchmark!();

    fn run(self, settings: Option<&Settings>) -> Result<ExitCode> {
        run(resolved(settings), &self)?;
        Ok(ExitCode::SUCCESS)
    }
}

/// A build without Qdrant's engine says so before it opens anything.
fn run(s: &Settings, a: &ServingParity) -> Result<()> {
    use hopbench_legs::engine::{EngineKind, QdrantSpec};
    QdrantSpec::BUILT.map_err(|e| anyhow::anyhow!("serving-parity: {e}"))?;
    let campaign = &s.campaign;
    let name =
        &crate::pipeline::campaign::select(&a.dataset, campaign.datasets.keys(), "dataset")?[0];
    // the engines compared search the export's vectors: no optional part is read
    let export = crate::bench::open(
        campaign,
        name,
        &s.data,
        hopbench_datasets::export::Parts::NONE,
    )?;
    let plan = crate::bench::parity::Plan {
        efs: a.hnsw_ef.clone(),
        quantizations: a.quantization.clone(),
        oversampling: a.oversampling,
        build: hopbench_datasets::hnsw::HnswSettings {
            m: a.m,
            ef_construct: a.ef_construct,
            on_disk: a.on_disk,
            quantization: hopbench_datasets::hnsw::Quantization::None,
            part_points: a.part_points,
        },
        repeat: a.repeat,
        limit: a.limit,
    };
    let p = crate::bench::parity::run(campaign, name, &export, &a.leg, &plan, &s.data)?;
    out!("{}", crate::bench::parity::markdown(&p).trim_end());
    let dir = a.out.clone().unwrap_or_else(|| s.results.join("parity"));
    let mut paths = crate::bench::parity::write(&dir, &p)?;
    paths.extend(crate::bench::parity_plot::write(
        &dir,
        &crate::bench::parity::stem(&p),
        &p,
    )?);
    for path in paths {
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}

/// `--quantization`'s values, as a campaign spells them.
fn quantization(s: &str) -> std::result::Result<hopbench_datasets::hnsw::Quantization, String> {
    use hopbench_datasets::hnsw::Quantization;
    [Quantization::None, Quantization::Int8, Quantization::Binary]
        .into_iter()
        .find(|q| q.name() == s)
        .ok_or_else(|| format!("`{s}` is not a quantization: none, int8 or binary"))
}
