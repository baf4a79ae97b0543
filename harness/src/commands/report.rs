//! `hopbench report`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use super::{resolved, Command, ReadArgs, Task};
use crate::pipeline::settings::{Overrides, Settings};

/// Write the static HTML report of a results directory (no server, opens from disk).
///
/// A cell whose summary, records or run file does not read or verify, and a budget curve that
/// does not, is left out: the cell keeps its matrix row, marked not trusted, and each is named
/// with the reason on the pages and on stderr; the rest is reported. Exit status: 0 when
/// nothing was left out, 3 when something was, 2 on an error (nothing written).
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
        let left_out = write(s, &out)?;
        Ok(super::left_out_status(left_out))
    }
}

/// Writes the HTML report of the results directory to `out` and says where it is; returns how
/// many cells and curves it left out (each named on stderr and on its pages).
pub fn write(s: &Settings, out: &Path) -> Result<usize> {
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
    let counted = |n: usize, what: &str| match n {
        0 => None,
        1 => Some(format!("1 {what}")),
        n => Some(format!("{n} {what}s")),
    };
    let left: Vec<String> = [
        counted(w.cells_left_out, "cell"),
        counted(w.curves_left_out, "budget curve"),
    ]
    .into_iter()
    .flatten()
    .collect();
    if !left.is_empty() {
        eprintln!(
            "report: left out {}, not trusted (named above and on the pages; rerun run-matrix \
             to recompute)",
            left.join(" and ")
        );
    }
    Ok(w.cells_left_out + w.curves_left_out)
}
