//! `hopbench bench assembly`.

use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use crate::bench;
use crate::commands::{exclusive_benchmark, resolved, Command, CommonArgs, JsonOut};
use crate::pipeline::campaign::select;
use crate::pipeline::settings::Settings;

/// SPEC-028 per-turn assembly time beside the conversation retrievals (median, p95).
#[derive(Args, Debug)]
pub struct Assembly {
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
    #[command(flatten)]
    pub json: JsonOut,
}

impl Command for Assembly {
    exclusive_benchmark!();

    fn run(self, settings: Option<&Settings>) -> Result<ExitCode> {
        let s = resolved(settings);
        let campaign = &s.campaign;
        let mut all = Vec::new();
        for name in select(&self.datasets, campaign.datasets.keys(), "dataset")? {
            let parts = campaign.parts_read(campaign.legs.keys().map(String::as_str));
            let export = bench::open(campaign, &name, &s.data, parts)?;
            let r = bench::assembly(
                campaign,
                &name,
                &export,
                &self.leg,
                self.repeat.max(1),
                &s.data,
            )?;
            out!(
                "{:<22} {:>4} turns (mean {:.1} per conversation) x{:<3} assemble median {:.4} ms p95 {:.4} ms | {} retrieve median {:.4} ms p95 {:.4} ms | {} median {:.4} ms p95 {:.4} ms",
                r.dataset, r.queries, r.turns_mean, r.repeat, r.assemble_ms[0], r.assemble_ms[1],
                r.leg, r.multi_horizon_ms[0], r.multi_horizon_ms[1], r.baseline, r.last_turn_ms[0], r.last_turn_ms[1]
            );
            all.push(r);
        }
        self.json.write(&all)?;
        Ok(ExitCode::SUCCESS)
    }
}
