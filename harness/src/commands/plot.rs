//! `hopbench plot`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use super::{resolved, Command, ReadArgs, Task};
use crate::pipeline::campaign::select;
use crate::pipeline::settings::{Overrides, Settings};
use crate::report::plot;

/// Draw the budget curves of every dataset (PNG and SVG).
#[derive(Args, Debug)]
pub struct Plot {
    #[command(flatten)]
    pub read: ReadArgs,
    /// `all` or a comma list of dataset names.
    #[arg(long, default_value = "all")]
    pub datasets: String,
    /// Output directory (default: <results>/plots).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

impl Command for Plot {
    const TASK: Task = Task::Analyse;

    fn overrides(&self) -> Option<Overrides> {
        Some(self.read.overrides())
    }

    fn run(self, settings: Option<&Settings>) -> Result<ExitCode> {
        let s = resolved(settings);
        let out = self.out.clone().unwrap_or_else(|| s.results.join("plots"));
        let all = plot::collect(&s.results)?;
        if all.is_empty() {
            anyhow::bail!(
                "{}: no budget curves (run-matrix writes them for selecting legs)",
                s.results.join("curves").display()
            );
        }
        let wanted: Vec<String> = all.iter().map(|(d, _)| d.clone()).collect();
        let wanted = select(&self.datasets, wanted.iter(), "dataset with curves")?;
        for (dataset, curves) in all.iter().filter(|(d, _)| wanted.contains(d)) {
            for p in plot::write(&out, dataset, curves)? {
                out!("{}", p.display());
            }
        }
        Ok(ExitCode::SUCCESS)
    }
}
