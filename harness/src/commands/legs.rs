//! `hopbench legs`.

use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use super::{resolved, Command, CommonArgs, Task};
use crate::pipeline::settings::{Overrides, Settings};

/// List the campaign's legs with their resolved parameters.
#[derive(Args, Debug)]
pub struct Legs {
    #[command(flatten)]
    pub common: CommonArgs,
}

impl Command for Legs {
    const TASK: Task = Task::Inspect;

    fn overrides(&self) -> Option<Overrides> {
        Some(self.common.overrides())
    }

    fn run(self, settings: Option<&Settings>) -> Result<ExitCode> {
        let s = resolved(settings);
        out!("campaign: {}", s.origin);
        for (name, spec) in &s.campaign.legs {
            out!(
                "{name:<24} {}",
                serde_json::to_string(spec).expect("spec serialises")
            );
        }
        Ok(ExitCode::SUCCESS)
    }
}
