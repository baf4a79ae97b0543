//! `hopbench datasets`.

use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use super::{resolved, Command, CommonArgs, Task};
use crate::pipeline::settings::{Overrides, Settings};
use hopbench_datasets::embed;

/// List the campaign's datasets and whether their raw files are present.
#[derive(Args, Debug)]
pub struct Datasets {
    #[command(flatten)]
    pub common: CommonArgs,
}

impl Command for Datasets {
    const TASK: Task = Task::Inspect;

    fn overrides(&self) -> Option<Overrides> {
        Some(self.common.overrides())
    }

    fn run(self, settings: Option<&Settings>) -> Result<ExitCode> {
        let s = resolved(settings);
        let campaign = &s.campaign;
        out!("campaign: {}", s.origin);
        if embed::is_hashing_model(&s.data.model_dir) {
            out!("model: {}", embed::describe_model(embed::HASHING_MODEL_ID));
        } else {
            out!("model: {}", s.data.model_dir.display());
        }
        for (name, spec) in &campaign.datasets {
            let status =
                crate::pipeline::data::availability(campaign, name, s.data.data_dir.as_deref())?;
            // what it indexes per passage (validated when the campaign loaded)
            let indexed = crate::pipeline::protocol::label(campaign.protocol(name), None);
            let own = spec
                .vectors
                .as_ref()
                .map(|v| format!("; its own vectors, model `{}`", v.model))
                .unwrap_or_default();
            out!(
                "{name:<28} {:<10} {indexed:<11} {status}{own}",
                spec.format.name().to_string(),
            );
        }
        Ok(ExitCode::SUCCESS)
    }
}
