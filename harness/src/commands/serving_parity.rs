//! `hopbench serving-parity`: prints the markdown tables and writes the files.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use super::{exclusive_benchmark, resolved, Command, CommonArgs};
use crate::pipeline::settings::Settings;

/// Serve a leg's dense side through another engine of the registry (a served engine such as
/// the HNSW one, at each variant of its group: `--vary`) and measure what changes against the
/// exact engine: ANN recall@10, gate agreement, paired metric differences with CIs, latency.
///
/// The served engine is named as a campaign names it, a YAML flow map under `--engine`; each
/// `--vary KEY=V1,V2,...` serves every value of a key of its group, and several `--vary` flags
/// serve their product (the first outermost, at most 64 variants). Every path is the campaign's
/// leg with only its `dense` group changed; the reference path has it removed (the dense side's
/// built-in engine). An index the engine builds over the export is built on the first run and
/// reused after (the report says which, and what each cost). For example, the HNSW engine
/// (needs the `qdrant` build feature) at four beam widths, float32 and int8:
///
/// hopbench serving-parity --dataset D --engine '{engine: qdrant}' --vary hnsw_ef=16,64,128,512
/// --vary quantization=none,int8
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
    /// The served dense side's group, a YAML flow map as a campaign writes it: `{engine: NAME,
    /// KEY: VALUE, ...}`, NAME an engine answering the dense side other than its built-in one.
    #[arg(long, value_name = "GROUP")]
    pub engine: String,
    /// Serve each value of a key of the engine's group (each value read as YAML: `16` a number,
    /// `int8` a string, `true` a boolean, `[a, b]` a list). Repeatable: the variants are the
    /// product, the first --vary outermost, values in the order given.
    #[arg(long, value_name = "KEY=V1,V2,...")]
    pub vary: Vec<String>,
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

/// The flags are read (and every variant's group through the engine registry, an engine this
/// build lacks saying how to get it) before any export is opened.
fn run(s: &Settings, a: &ServingParity) -> Result<()> {
    use crate::bench::parity;
    let served = parity::served(&a.engine, &a.vary)?;
    let campaign = &s.campaign;
    let plan = parity::prepare(campaign, &a.leg, served, a.repeat, a.limit)?;
    let name =
        &crate::pipeline::campaign::select(&a.dataset, campaign.datasets.keys(), "dataset")?[0];
    // the engines compared search the export's vectors: no optional part is read
    let export = crate::bench::open(
        campaign,
        name,
        &s.data,
        hopbench_datasets::export::Parts::NONE,
    )?;
    let p = parity::run(campaign, name, &export, &plan, &s.data)?;
    out!("{}", parity::markdown(&p).trim_end());
    let dir = a.out.clone().unwrap_or_else(|| s.results.join("parity"));
    let mut paths = parity::write(&dir, &p)?;
    paths.extend(crate::bench::parity_plot::write(
        &dir,
        &parity::stem(&p),
        &p,
    )?);
    for path in paths {
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}
