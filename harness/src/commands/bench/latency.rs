//! `hopbench bench latency`.

use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use crate::bench;
use crate::commands::{exclusive_benchmark, resolved, Command, CommonArgs, JsonOut};
use crate::pipeline::campaign::select;
use crate::pipeline::settings::Settings;

/// Per-leg query latency and throughput, one query at a time on one thread.
#[derive(Args, Debug)]
pub struct Latency {
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
    #[command(flatten)]
    pub json: JsonOut,
}

impl Command for Latency {
    exclusive_benchmark!();

    fn run(self, settings: Option<&Settings>) -> Result<ExitCode> {
        let s = resolved(settings);
        let campaign = &s.campaign;
        let legs = select(&self.legs, campaign.legs.keys(), "leg")?;
        let parts = campaign.parts_read(legs.iter().map(String::as_str));
        let from = match &self.queries_from {
            Some(d) => Some(bench::open(
                campaign,
                &select(d, campaign.datasets.keys(), "dataset")?[0],
                &s.data,
                parts,
            )?),
            None => None,
        };
        let mut all = Vec::new();
        for name in select(&self.datasets, campaign.datasets.keys(), "dataset")? {
            let export = bench::open(campaign, &name, &s.data, parts)?;
            let timings = bench::latency(
                campaign,
                &name,
                &export,
                from.as_deref(),
                &legs,
                self.repeat.max(1),
                self.top,
                None,
                &s.data,
            )?;
            for r in timings {
                let rerank = match (r.rerank_median_ms, r.rerank_p95_ms) {
                    (Some(m), Some(p)) => format!("  (rerank: median {m:.4} ms, p95 {p:.4} ms)"),
                    _ => String::new(),
                };
                out!(
                    "{:<24} {:<20} {:>6} chunks {:>5} queries x{:<3} median {:>8.4} ms  p95 {:>8.4} ms  {:>10.0} q/s{rerank}",
                    r.dataset, r.leg, r.chunks, r.queries, r.repeat, r.median_ms, r.p95_ms, r.qps
                );
                all.push(r);
            }
        }
        self.json.write(&all)?;
        Ok(ExitCode::SUCCESS)
    }
}
