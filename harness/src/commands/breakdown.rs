//! `hopbench breakdown`.

use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use super::{resolved, Command, ReadArgs, Task};
use crate::pipeline::campaign::select;
use crate::pipeline::settings::{Overrides, Settings};
use crate::store::summary;

/// Per-group metrics of cells (by dataset label and classified intent), the intent confusion
/// matrix and reference-resolution accuracy.
#[derive(Args, Debug)]
pub struct Breakdown {
    #[command(flatten)]
    pub read: ReadArgs,
    /// Dataset name.
    #[arg(long)]
    pub dataset: String,
    /// `all` or a comma list of leg names (cells that exist).
    #[arg(long, default_value = "all")]
    pub legs: String,
}

impl Command for Breakdown {
    const TASK: Task = Task::Analyse;

    fn overrides(&self) -> Option<Overrides> {
        Some(self.read.overrides())
    }

    fn run(self, settings: Option<&Settings>) -> Result<ExitCode> {
        let s = resolved(settings);
        let mut found = 0;
        for leg in select(&self.legs, s.campaign.legs.keys(), "leg")? {
            let path = summary::CellPaths::new(&s.results, &self.dataset, &leg).summary;
            if !path.exists() {
                continue;
            }
            found += 1;
            out!(
                "{}",
                crate::report::markdown::breakdown_text(&summary::read_summary(&path)?)
            );
        }
        if found == 0 {
            anyhow::bail!(
                "no cells of dataset `{}` under {} (run run-matrix first)",
                self.dataset,
                s.results.join("cells").display()
            );
        }
        Ok(ExitCode::SUCCESS)
    }
}
