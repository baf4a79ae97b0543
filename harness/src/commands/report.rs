//! `hopbench report`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use super::{resolved, Command, ReadArgs, Task};
use crate::pipeline::settings::{Overrides, Settings};

/// Write the static HTML report of a results directory (no server, opens from disk).
#[derive(Args, Debug)]
pub struct Report {
    #[command(flatten)]
    pub read: ReadArgs,
    /// Output directory (default: <results>/report).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

impl Command for Report {
    const TASK: Task = Task::Analyse;

    fn overrides(&self) -> Option<Overrides> {
        Some(self.read.overrides())
    }

    fn run(self, settings: Option<&Settings>) -> Result<ExitCode> {
        let s = resolved(settings);
        let out = self.out.clone().unwrap_or_else(|| s.results.join("report"));
        write(s, &out)?;
        Ok(ExitCode::SUCCESS)
    }
}

/// Writes the HTML report of the results directory to `out` and says where it is.
pub fn write(s: &Settings, out: &Path) -> Result<()> {
    let compare: Vec<(String, String)> = s
        .campaign
        .report
        .compare
        .iter()
        .map(|[a, b]| (a.clone(), b.clone()))
        .collect();
    let started = std::time::Instant::now();
    let w = crate::report::html::write_report(&crate::report::html::ReportOptions {
        results: &s.results,
        out,
        campaign: &s.campaign,
        compare: &compare,
    })?;
    eprintln!(
        "report: {} ({} files, {} KB, {:.2} s)",
        w.index.display(),
        w.files,
        w.bytes / 1024,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
