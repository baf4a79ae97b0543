//! `hopbench compare`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use super::{resolved, Command, JsonOut, Task};
use crate::analysis::compare::Comparison;
use crate::pipeline::settings::{Overrides, Settings};

/// Compare two results directories cell by cell.
///
/// A cell whose summary, records or run file does not read or verify on either side is left
/// out: not comparable, with the reason on its line and on stderr, and the other cells are
/// compared. Exit status: 0 when every cell was read, 3 when a cell was left out, 2 on an
/// error.
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
        Ok(left_out(&c))
    }
}

/// Names on stderr the cells of `c` left out (a side that does not read or verify), and gives
/// the exit status that says whether there were any ([`super::LEFT_OUT`]).
pub(crate) fn left_out(c: &Comparison) -> ExitCode {
    for cell in c.cells.iter().filter(|cell| cell.left_out) {
        eprintln!(
            "warning: {} x {} left out of the comparison ({})",
            cell.dataset,
            cell.leg,
            cell.reason.as_deref().unwrap_or("not trusted")
        );
    }
    super::left_out_status(c.left_out())
}
