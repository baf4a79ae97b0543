//! `hopbench prepare`.

use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use super::{resolved, Command, CommonArgs, Lock, Task};
use crate::pipeline::data;
use crate::pipeline::settings::{default_datasets, Overrides, Settings};

/// Build (or reuse) the export of datasets: read raw files, embed, index.
#[derive(Args, Debug)]
pub struct Prepare {
    #[command(flatten)]
    pub common: CommonArgs,
    /// `all` or a comma list of dataset names.
    #[arg(long, alias = "dataset", default_value = "all")]
    pub datasets: String,
    /// No progress bars.
    #[arg(long)]
    pub quiet: bool,
    /// Embed only part I of N (I from 0) of the datasets' texts into the embedding cache,
    /// beside the other parts (a Slurm array task), and write no export.
    #[arg(long)]
    pub shard: Option<crate::pipeline::shard::Shard>,
}

impl Command for Prepare {
    const TASK: Task = Task::Run;

    fn overrides(&self) -> Option<Overrides> {
        Some(self.common.overrides())
    }

    /// The parts of a sharded prepare hold the lock shared: they write disjoint cache parts.
    fn lock(&self) -> Option<Lock> {
        Some(self.common.lock_for(self.shard))
    }

    fn run(self, settings: Option<&Settings>) -> Result<ExitCode> {
        let s = resolved(settings);
        let names = default_datasets(&self.datasets, &s.campaign, s.have_data())?;
        match self.shard {
            Some(shard) => embed_parts(s, &names, shard, !self.quiet)?,
            None => build(s, &names, !self.quiet)?,
        }
        Ok(ExitCode::SUCCESS)
    }
}

/// One part of a sharded prepare: embeds its share of each dataset's texts.
fn embed_parts(
    s: &Settings,
    names: &[String],
    shard: crate::pipeline::shard::Shard,
    progress: bool,
) -> Result<()> {
    let data = data::DataSettings {
        cache_part: Some(format!("embed-{}", shard.label())),
        ..s.data.clone()
    };
    for name in names {
        match data::embed_part(&s.campaign, name, &data, shard, progress)? {
            data::PartOutcome::ExportReady => {
                out!("{name}: part {shard}: export ready, nothing to embed")
            }
            data::PartOutcome::Embedded {
                part_texts,
                embedded,
            } => out!(
                "{name}: part {shard}: {part_texts} texts, {embedded} embedded now, {} cached",
                part_texts - embedded
            ),
            data::PartOutcome::Missing(reason) => out!("{name}: missing: {reason}"),
        }
    }
    Ok(())
}

/// Builds (or reuses) each dataset's export and prints what is in it.
fn build(s: &Settings, names: &[String], progress: bool) -> Result<()> {
    // the parts the campaign's legs read: `run-matrix` of any of them finds the export ready
    let parts = s
        .campaign
        .parts_read(s.campaign.legs.keys().map(String::as_str));
    for name in names {
        // what is printed is the manifest's: no query's vector is read, so none is held
        match data::open(
            &s.campaign,
            name,
            &s.data,
            progress,
            parts,
            Some(&|_| Vec::new()),
        )? {
            data::DatasetState::Ready(e) => {
                let st = &e.manifest.stats;
                out!(
                    "{name}: {} chunks, {} documents, {} queries, {} gold chunks, {} with chain, {} with header; {} BM25 terms; \
                     KG: {} entities, {} edges, {} hyperedges, {} communities, {} chunks mentioning another entity; model {}; export {}",
                    st.chunks, st.documents, st.queries, st.gold_chunks, st.queries_with_chain, st.chunks_with_header, st.bm25_terms,
                    st.kg.entities, st.kg.edges, st.kg.hyperedges, st.kg.communities, st.kg.chunks_with_mentions,
                    hopbench_datasets::embed::describe_model(&e.manifest.model_id), e.dir.display()
                );
            }
            data::DatasetState::Missing(reason) => out!("{name}: missing: {reason}"),
        }
    }
    Ok(())
}
