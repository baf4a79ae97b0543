//! `hopbench compare`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use super::{resolved, Command, JsonOut, Task};
use crate::pipeline::settings::{Overrides, Settings};

/// Compare two results directories cell by cell.
#[derive(Args, Debug)]
pub struct Compare {
    /// First results directory (the baseline).
    pub a: PathBuf,
    /// Second results directory.
    pub b: PathBuf,
    #[command(flatten)]
    pub json: JsonOut,
    /// Campaign whose `stats` settings to use (default as for run-matrix).
    #[arg(long)]
    pub campaign: Option<PathBuf>,
}

impl Command for Compare {
    const TASK: Task = Task::Analyse;

    fn overrides(&self) -> Option<Overrides> {
        Some(Overrides {
            campaign: self.campaign.clone(),
            ..Overrides::default()
        })
    }

    fn run(self, settings: Option<&Settings>) -> Result<ExitCode> {
        let s = resolved(settings);
        for d in [&self.a, &self.b] {
            if !d.join("cells").is_dir() {
                anyhow::bail!(
                    "{}: not a results directory (no cells/ inside)",
                    d.display()
                );
            }
        }
        let c = crate::analysis::compare::compare(&self.a, &self.b, &s.campaign.stats)?;
        out!("{}", crate::analysis::compare::table(&c));
        self.json.write(&c)?;
        Ok(ExitCode::SUCCESS)
    }
}
