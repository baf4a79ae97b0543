//! `hopbench bench generate`: needs no campaign, data or results directory.

use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use crate::commands::{Command, JsonOut, Task};
use crate::pipeline::settings::{Overrides, Settings};

/// Synthetic world generation: time and peak RSS per size, and the growth exponent.
#[derive(Args, Debug)]
pub struct Generate {
    /// Comma list of passage counts, e.g. `10000,100000,1000000`.
    #[arg(long, value_delimiter = ',', required = true)]
    pub passages: Vec<usize>,
    /// Distractor paragraphs per entity (entities = passages / (1 + this)).
    #[arg(long, default_value_t = 1)]
    pub distractors_per_entity: usize,
    /// Seed of the generated worlds (default: the default world's).
    #[arg(long)]
    pub seed: Option<u64>,
    #[command(flatten)]
    pub json: JsonOut,
}

impl Command for Generate {
    const TASK: Task = Task::Measure;

    fn overrides(&self) -> Option<Overrides> {
        None
    }

    fn run(self, _: Option<&Settings>) -> Result<ExitCode> {
        let seed = self
            .seed
            .unwrap_or_else(|| hopbench_datasets::synthetic::SyntheticConfig::default().seed);
        let threads = std::env::var("RAYON_NUM_THREADS").unwrap_or_else(|_| "unset".into());
        let r =
            crate::bench::generate::generate(&self.passages, self.distractors_per_entity, seed)?;
        for t in &r.results {
            let peak = match (t.peak_rss_mib, t.peak_reset) {
                (Some(p), true) => format!("peak RSS {p:.0} MiB"),
                (Some(p), false) => format!("peak RSS so far {p:.0} MiB"),
                (None, _) => "peak RSS unknown".into(),
            };
            out!(
                "{:>9} passages ({} entities, {} questions): {:.2} s, {:.1} MiB of text, {peak} (RAYON_NUM_THREADS={threads})",
                t.passages, t.entities, t.questions, t.seconds, t.text_bytes as f64 / (1024.0 * 1024.0)
            );
        }
        if let Some(k) = r.growth_exponent {
            out!("growth exponent (log-log slope of time on passages): {k:.3}");
        }
        self.json.write(&r)?;
        Ok(ExitCode::SUCCESS)
    }
}
