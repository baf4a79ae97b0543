//! `hopbench bench prepare`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use crate::bench;
use crate::commands::{at_least_one, exclusive_benchmark, resolved, Command, CommonArgs, JsonOut};
use crate::pipeline::campaign::select;
use crate::pipeline::settings::Settings;

/// Prepare throughput: reading, tokenising + BM25 (chunks/s), embedding (passages/s).
#[derive(Args, Debug)]
pub struct Prepare {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Comma list of dataset names.
    #[arg(long)]
    pub datasets: String,
    /// Passages to embed (0 = all).
    #[arg(long, default_value_t = 500)]
    pub sample: usize,
    /// Embed the `--sample` passages with the most tokens instead of the first ones (the
    /// long-passage case: most are cut at the model's window).
    #[arg(long)]
    pub longest: bool,
    /// Timed embedding passes (after one warm-up pass when more than one); the median is
    /// reported.
    #[arg(long, default_value_t = 1, value_parser = at_least_one)]
    pub repeat: usize,
    /// Write every embedded text and its vector to this file, one JSON object per line
    /// (`{"text": ..., "vector": [...]}`), e.g. for `scripts/embed_peer.py`.
    #[arg(long)]
    pub vectors: Option<PathBuf>,
    #[command(flatten)]
    pub json: JsonOut,
}

impl Command for Prepare {
    exclusive_benchmark!();

    fn run(self, settings: Option<&Settings>) -> Result<ExitCode> {
        let s = resolved(settings);
        let threads =
            std::env::var("RAYON_NUM_THREADS").unwrap_or_else(|_| "unset (all cores)".into());
        let names = select(&self.datasets, s.campaign.datasets.keys(), "dataset")?;
        if self.vectors.is_some() && names.len() > 1 {
            anyhow::bail!("--vectors takes one dataset (got {})", names.join(","));
        }
        let opts = bench::PrepareOptions {
            sample: self.sample,
            longest: self.longest,
            repeat: self.repeat,
            vectors: self.vectors.clone(),
        };
        let mut all = Vec::new();
        for name in names {
            let r = bench::prepare(&s.campaign, &name, &s.data, &opts)?;
            out!(
                "{}: {} passages; read {:.2} s; tokenise+BM25 {:.0} chunks/s; embed {:.1} passages/s ({} {}passages, {:.1} tokens each, median of {} passes, {}, RAYON_NUM_THREADS={threads})",
                r.dataset, r.passages, r.read_s, r.bm25_chunks_per_s, r.embed_passages_per_s, r.embedded,
                if r.longest { "longest " } else { "" }, r.embed_tokens_mean, r.embed_passes_s.len(),
                hopbench_datasets::embed::describe_model(&r.model_id)
            );
            all.push(r);
        }
        self.json.write(&all)?;
        Ok(ExitCode::SUCCESS)
    }
}
