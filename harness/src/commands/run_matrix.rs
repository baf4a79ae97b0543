//! `hopbench run-matrix`: runs the matrix, prints its table and writes `matrix.md` and the report.

use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use super::{at_least_one, resolved, Command, Lock, MatrixArgs, Task};
use crate::pipeline::matrix::{self, CellOutcome};
use crate::pipeline::settings::{Overrides, RunFlags, Settings};
use crate::report::markdown;
use crate::store::collect::trusted_summaries;
use crate::store::fsx::write_atomic;
use crate::store::summary::CellSummary;

/// Run every selected leg on every selected dataset and write one cached cell each.
#[derive(Args, Debug)]
pub struct RunMatrix {
    #[command(flatten)]
    pub matrix: MatrixArgs,
    /// Evaluate only the first N queries of each dataset (a different query set: cells are not
    /// comparable with full runs). At least 1.
    #[arg(long, value_parser = at_least_one, allow_negative_numbers = true)]
    pub limit: Option<usize>,
    /// Recompute cells even when their key matches.
    #[arg(long)]
    pub force: bool,
    /// Thread count (required, or RAYON_NUM_THREADS, or the campaign's `run.threads`): the
    /// determinism contract.
    #[arg(long, allow_negative_numbers = true)]
    pub threads: Option<usize>,
    /// No progress bars.
    #[arg(long)]
    pub quiet: bool,
    /// Do not compute budget curves for selecting legs.
    #[arg(long)]
    pub no_curves: bool,
    /// Print the resolved settings as a campaign file (feed it back with `--campaign`) and exit.
    #[arg(long)]
    pub show_settings: bool,
    /// Do not write the HTML report at the end.
    #[arg(long)]
    pub no_report: bool,
    /// Run only part I of N (I from 0) of the selected cells, beside the other parts (a Slurm
    /// array task); no matrix.md: an unsharded run afterwards finds every cell cached.
    #[arg(long)]
    pub shard: Option<crate::pipeline::shard::Shard>,
    /// Run only these cells of the selection: a comma list of DATASET/LEG.
    #[arg(long)]
    pub cells: Option<String>,
}

impl Command for RunMatrix {
    const TASK: Task = Task::Run;

    fn overrides(&self) -> Option<Overrides> {
        Some(self.matrix.overrides(RunFlags {
            datasets: self.matrix.select.datasets.clone(),
            legs: self.matrix.select.legs.clone(),
            limit: self.limit,
            threads: self.threads,
            force: self.force,
            quiet: self.quiet,
            no_curves: self.no_curves,
            shard: self.shard,
            cells: self.cells.clone(),
        }))
    }

    /// The parts of a sharded run hold the lock shared: they write disjoint files.
    fn lock(&self) -> Option<Lock> {
        (!self.show_settings).then_some(self.matrix.common.lock_for(self.shard))
    }

    fn run(self, settings: Option<&Settings>) -> Result<ExitCode> {
        let s = resolved(settings);
        if self.show_settings {
            out!("{}", s.to_yaml().trim_end());
            return Ok(ExitCode::SUCCESS);
        }
        let m = s.matrix.as_ref().expect("run-matrix resolves its settings");
        let started = std::time::Instant::now();
        let cells = matrix::run(&s.campaign, m)?;
        let summaries: Vec<CellSummary> = cells.iter().map(|(c, _)| c.clone()).collect();
        let table = markdown::matrix_table(&summaries, &[]);
        out!("{}{table}", markdown::non_semantic_line(&summaries));
        // a part writes only its own cells: the whole matrix is the unsharded run's to write
        if m.shard.is_none() {
            let all = trusted_summaries(&m.results);
            write_atomic(
                &m.results.join("matrix.md"),
                markdown::matrix_markdown(&all.cells, &all.left_out).as_bytes(),
            )?;
        }
        let count = |o: CellOutcome| cells.iter().filter(|(_, x)| *x == o).count();
        eprintln!(
            "{} cells: {} computed, {} cached, {} missing inputs; {:.2} s; matrix written to {}",
            cells.len(),
            count(CellOutcome::Computed),
            count(CellOutcome::Cached),
            count(CellOutcome::Missing),
            started.elapsed().as_secs_f64(),
            m.results.join("matrix.md").display()
        );
        // a part of a sharded run writes neither the matrix nor the report; a cell outside this
        // run's selection that does not verify is named in both, and the run, which computed
        // every cell it was asked for, still exits 0
        if !self.no_report && m.shard.is_none() {
            super::report::write(s, &m.results.join("report"))?;
        }
        Ok(ExitCode::SUCCESS)
    }
}
