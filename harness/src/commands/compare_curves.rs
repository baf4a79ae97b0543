//! `hopbench compare-curves`.

use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use super::{Command, LegPair, Task};
use crate::analysis::spend;
use crate::pipeline::settings::{Overrides, Settings};

/// Equal-spend comparison of two selecting legs' budget curves on one dataset.
#[derive(Args, Debug)]
pub struct CompareCurves {
    #[command(flatten)]
    pub pair: LegPair,
    /// Take leg B from this dataset instead (another chunking variant of `--dataset`,
    /// `docs@size512-overlap0`): the same queries under another chunking, at equal token spend.
    #[arg(long)]
    pub dataset_b: Option<String>,
}

impl Command for CompareCurves {
    const TASK: Task = Task::Analyse;

    fn overrides(&self) -> Option<Overrides> {
        Some(self.pair.overrides())
    }

    fn run(self, settings: Option<&Settings>) -> Result<ExitCode> {
        let b = self.dataset_b.as_deref();
        self.pair.print(
            settings,
            |s, p| {
                let stats = &s.campaign.stats;
                match b {
                    None => spend::compare(&s.results, &p.dataset, &p.a, &p.b, stats),
                    Some(db) => {
                        spend::compare_across(&s.results, (&p.dataset, &p.a), (db, &p.b), stats)
                    }
                }
            },
            spend::table,
            |_| ExitCode::SUCCESS,
        )
    }
}
