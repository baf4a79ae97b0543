//! `hopbench status`.

use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use super::{at_least_one, resolved, Command, MatrixArgs, Task};
use crate::pipeline::settings::{Overrides, Settings};

/// Where each cell stands: done, stale, failed (with its error) or missing; exit 0 only when
/// every cell is done.
#[derive(Args, Debug)]
pub struct Status {
    #[command(flatten)]
    pub matrix: MatrixArgs,
    /// `--limit` of the run whose cells to look at.
    #[arg(long, value_parser = at_least_one, allow_negative_numbers = true)]
    pub limit: Option<usize>,
}

impl Command for Status {
    const TASK: Task = Task::Run;

    fn overrides(&self) -> Option<Overrides> {
        Some(
            self.matrix
                .overrides(self.matrix.select.planning(self.limit)),
        )
    }

    fn run(self, settings: Option<&Settings>) -> Result<ExitCode> {
        let s = resolved(settings);
        let m = s
            .matrix
            .as_ref()
            .expect("status resolves the run's settings");
        let cells = crate::cluster::status::cells(&s.campaign, m)?;
        out!("{}", crate::cluster::status::table(&cells));
        Ok(if cells.iter().any(|(_, _, st)| st.pending()) {
            ExitCode::from(1)
        } else {
            ExitCode::SUCCESS
        })
    }
}
