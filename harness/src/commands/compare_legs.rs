//! `hopbench compare-legs`.

use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use super::{Command, LegPair, Task};
use crate::analysis::compare;
use crate::pipeline::settings::{Overrides, Settings};

/// Paired comparison of two legs on one dataset of one results directory.
///
/// A leg whose summary, records or run file does not read or verify leaves the pair not
/// comparable, named with the reason (in the table and on stderr). Exit status: 0 when both
/// cells were read, 3 when one was left out, 2 on an error (a leg or dataset with no cell).
#[derive(Args, Debug)]
pub struct CompareLegs {
    #[command(flatten)]
    pub pair: LegPair,
    /// One paired comparison per group of a dataset label (`multi_turn`), of `intent` (as a
    /// conversation leg classified it), or of a `note:<annotation>`.
    #[arg(long)]
    pub by: Option<String>,
}

impl Command for CompareLegs {
    const TASK: Task = Task::Analyse;

    fn overrides(&self) -> Option<Overrides> {
        Some(self.pair.overrides())
    }

    fn run(self, settings: Option<&Settings>) -> Result<ExitCode> {
        let by = self.by.as_deref();
        self.pair.print(
            settings,
            |s, p| {
                let (results, stats) = (&s.results, &s.campaign.stats);
                match by {
                    Some(by) => {
                        compare::compare_legs_by(results, &p.dataset, &p.a, &p.b, by, stats)
                    }
                    None => compare::compare_legs(results, &p.dataset, &p.a, &p.b, stats),
                }
            },
            compare::table,
            super::compare::left_out,
        )
    }
}
