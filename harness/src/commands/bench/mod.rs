//! `hopbench bench ...`: speed and cost benchmarks (not tests), one file per benchmark,
//! registered in the list below.

use std::process::ExitCode;

use anyhow::Result;

use super::{commands, Command, Lock, Task};
use crate::pipeline::settings::{Overrides, Settings};

pub mod assembly;
pub mod generate;
pub mod latency;
pub mod prepare;
pub mod scale;

commands! {
    /// Speed and cost benchmarks (not tests): query latency per leg, prepare throughput,
    /// conversation assembly, world generation, growth with the corpus.
    pub enum Bench {
        Latency(latency::Latency),
        Prepare(prepare::Prepare),
        Assembly(assembly::Assembly),
        Generate(generate::Generate),
        Scale(scale::Scale),
    }
}

impl Command for Bench {
    const TASK: Task = Task::Measure;

    fn overrides(&self) -> Option<Overrides> {
        Bench::overrides(self)
    }

    fn lock(&self) -> Option<Lock> {
        Bench::lock(self)
    }

    fn run(self, settings: Option<&Settings>) -> Result<ExitCode> {
        Bench::run(self, settings)
    }
}
