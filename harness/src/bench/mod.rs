//! `hopbench bench`: speed checks that are benchmarks, not timed tests.
//!
//! - `bench latency`: per-leg query latency and throughput on prepared exports, one query at a
//!   time on one thread (the seed's serving shape), after one warm-up pass.
//! - `bench assembly`: SPEC-028's per-turn planning (turn log, threads, references, intent,
//!   blend: [`hopbench_legs::conversation::assemble`]) timed alone, beside the full
//!   `multi_horizon` retrieval that contains it and the `conv_last_turn` retrieval it is an
//!   overhead on. Turn vectors are looked up as the leg does (embedding is outside every leg).
//! - `bench prepare`: prepare throughput on a dataset's raw files: reading, tokenising + BM25
//!   indexing (chunks/s) and embedding (passages/s, no cache) on a sample.

pub mod generate;
pub mod parity;
pub mod parity_plot;
pub mod scale;

use std::collections::BTreeMap;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use hopbench_datasets::embed::{self, Embedder, HashingEmbedder, Role, TextEmbedder};
use hopbench_datasets::export::Export;
use hopbench_datasets::lexical::{Bm25Index, Tokenizer};
use hopbench_legs::QueryInput;
use serde::Serialize;

use crate::measure::metrics;
use crate::pipeline::campaign::Campaign;
use crate::pipeline::data::{self, DataSettings, DatasetState};
use crate::pipeline::leg_model;

/// Latency of one leg on one dataset.
#[derive(Debug, Serialize)]
pub struct LegLatency {
    /// Dataset.
    pub dataset: String,
    /// Leg.
    pub leg: String,
    /// Chunks in the corpus.
    pub chunks: usize,
    /// Queries per pass.
    pub queries: usize,
    /// Timed passes.
    pub repeat: usize,
    /// Median per-query latency (retrieve + rerank + select), ms.
    pub median_ms: f64,
    /// p95, ms.
    pub p95_ms: f64,
    /// Median of the rerank stage alone, ms (for a leg with one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rerank_median_ms: Option<f64>,
    /// p95 of the rerank stage alone, ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rerank_p95_ms: Option<f64>,
    /// Queries per second over the timed passes.
    pub qps: f64,
    /// Top-`top` chunk ids per query id (when asked for, for peer comparisons).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub top: BTreeMap<String, Vec<String>>,
}

/// Runs the latency benchmark for `legs` on a loaded export, over its first `limit` queries
/// (all with `None`). With `queries_from`, the queries (texts and vectors, same model required)
/// come from another export: a large corpus with few questions (2wiki-corpus: 6,119 passages,
/// 2 questions) can then be timed with many real queries. Gold is irrelevant to latency and
/// left empty (oracle legs are then meaningless).
#[allow(clippy::too_many_arguments)]
pub fn latency(
    campaign: &Campaign,
    dataset: &str,
    export: &std::sync::Arc<Export>,
    queries_from: Option<&Export>,
    legs: &[String],
    repeat: usize,
    top: usize,
    limit: Option<usize>,
    data: &DataSettings,
) -> Result<Vec<LegLatency>> {
    let source = queries_from.unwrap_or(export);
    if source.manifest.model_id != export.manifest.model_id {
        bail!("--queries-from: the two exports were embedded with different models");
    }
    let input = |q: usize| QueryInput {
        index: q,
        id: &source.queries[q].id,
        text: &source.queries[q].text,
        embedding: source.query_embedding(q),
        gold: if queries_from.is_some() {
            &[]
        } else {
            &source.queries[q].gold
        },
    };
    let mut out = Vec::new();
    for name in legs {
        let spec = &campaign.legs[name];
        if queries_from.is_some() && spec.reads_conversation() {
            eprintln!("{dataset} x {name}: skipped (a conversation leg reads its own export's turns; --queries-from does not apply)");
            continue;
        }
        if queries_from.is_some() && spec.model().is_some() {
            eprintln!("{dataset} x {name}: skipped (the leg reads its own model's vectors of its own export's queries; --queries-from does not apply)");
            continue;
        }
        let (leg_export, model) = leg_model::for_leg(campaign, name, export, data)?;
        let leg =
            match crate::pipeline::leg_build::build(spec, name, &leg_export, data, model.as_ref())?
            {
                Ok(l) => l,
                Err(e) => {
                    eprintln!("{dataset} x {name}: skipped ({e})");
                    continue;
                }
            };
        let n = limit.map_or(source.queries.len(), |l| l.min(source.queries.len()));
        let mut tops = BTreeMap::new();
        let leg_input = |q: usize| match model {
            // the leg's own model's query vectors, of the same queries
            Some(_) => QueryInput::from_export(&leg_export, q),
            None => input(q),
        };
        for q in 0..n {
            let input = leg_input(q);
            let retrieval = leg.rerank(&input, leg.retrieve(&input)?)?;
            let sel = leg.select(&input, &retrieval, None)?;
            if top > 0 {
                let ids = sel
                    .chunks
                    .iter()
                    .take(top)
                    .map(|&c| export.chunks[c as usize].id.clone())
                    .collect();
                tops.insert(source.queries[q].id.clone(), ids);
            }
        }
        let mut times = Vec::with_capacity(n * repeat);
        let mut rerank_times = Vec::new();
        let started = Instant::now();
        for _ in 0..repeat {
            for q in 0..n {
                let input = leg_input(q);
                let t = Instant::now();
                let r = leg.retrieve(&input)?;
                let t_rerank = Instant::now();
                let r = leg.rerank(&input, r)?;
                if leg.has_rerank() {
                    rerank_times.push(t_rerank.elapsed().as_secs_f64() * 1e3);
                }
                let s = leg.select(&input, &r, None)?;
                times.push(t.elapsed().as_secs_f64() * 1e3);
                std::hint::black_box(s);
            }
        }
        let wall = started.elapsed().as_secs_f64();
        out.push(LegLatency {
            dataset: dataset.into(),
            leg: name.clone(),
            chunks: export.chunks.len(),
            queries: n,
            repeat,
            median_ms: metrics::median(&times).unwrap_or(0.0),
            p95_ms: metrics::percentile(&times, 95.0).unwrap_or(0.0),
            rerank_median_ms: metrics::median(&rerank_times),
            rerank_p95_ms: metrics::percentile(&rerank_times, 95.0),
            qps: (n * repeat) as f64 / wall.max(1e-12),
            top: tops,
        });
    }
    Ok(out)
}

/// Prepare throughput on one dataset.
#[derive(Debug, Serialize)]
pub struct PrepareThroughput {
    /// Dataset.
    pub dataset: String,
    /// Passages read.
    pub passages: usize,
    /// Seconds to read and parse the raw files.
    pub read_s: f64,
    /// Tokenise + BM25 index: chunks per second.
    pub bm25_chunks_per_s: f64,
    /// Passages embedded (a sample).
    pub embedded: usize,
    /// Whether the sample is the longest passages (by the embedder's token count) rather than
    /// the first ones.
    pub longest: bool,
    /// Mean tokens per embedded passage, by the embedder's own count after truncation.
    pub embed_tokens_mean: f64,
    /// Embedding: passages per second (no cache), from the median timed pass.
    pub embed_passages_per_s: f64,
    /// Seconds of every timed pass (each embeds the whole sample, tokenisation included).
    pub embed_passes_s: Vec<f64>,
    /// Model.
    pub model_id: String,
}

/// What `bench prepare` embeds and how often.
#[derive(Debug, Clone)]
pub struct PrepareOptions {
    /// Passages to embed (0 = all).
    pub sample: usize,
    /// The `sample` passages with the most tokens (ties: the earlier passage), not the first.
    pub longest: bool,
    /// Timed passes over the sample (a warm-up pass comes first when more than one).
    pub repeat: usize,
    /// Write every embedded text and its vector here, one JSON object per line.
    pub vectors: Option<std::path::PathBuf>,
}

/// Measures prepare throughput on `dataset`.
pub fn prepare(
    campaign: &Campaign,
    dataset: &str,
    s: &DataSettings,
    opts: &PrepareOptions,
) -> Result<PrepareThroughput> {
    let t = Instant::now();
    let mut raw = data::read_dataset(campaign, dataset, s)?;
    let read_s = t.elapsed().as_secs_f64();
    // the texts the export indexes: the dataset's protocol applied, as the build applies it
    let protocol = campaign.protocol(dataset).map_err(anyhow::Error::msg)?;
    protocol.apply(&mut raw.passages);
    let texts: Vec<String> = raw
        .passages
        .iter()
        .map(|p| protocol.join(p.header.as_deref(), &p.text))
        .collect();
    let tok = Tokenizer::english();
    let t = Instant::now();
    let idx = Bm25Index::build(
        texts.iter().map(String::as_str),
        &tok,
        campaign.prepare.bm25,
    );
    let bm25_s = t.elapsed().as_secs_f64();
    std::hint::black_box(idx.num_postings());
    let embedder: Box<dyn TextEmbedder> = if embed::is_hashing_model(&s.model_dir) {
        Box::new(HashingEmbedder::new())
    } else {
        Box::new(
            Embedder::load_with(&s.model_dir, &s.prompts)
                .with_context(|| format!("loading {}", s.model_dir.display()))?,
        )
    };
    let all: Vec<&str> = texts.iter().map(String::as_str).collect();
    let n = if opts.sample == 0 {
        all.len()
    } else {
        opts.sample.min(all.len())
    };
    let (refs, tokens) = if opts.longest {
        let counts = embedder.token_counts(&all)?;
        let mut order: Vec<usize> = (0..all.len()).collect();
        order.sort_by_key(|&i| (std::cmp::Reverse(counts[i]), i));
        order.truncate(n);
        order.sort_unstable();
        let tokens: usize = order.iter().map(|&i| counts[i]).sum();
        (order.iter().map(|&i| all[i]).collect::<Vec<_>>(), tokens)
    } else {
        let refs = all[..n].to_vec();
        let tokens = embedder.token_counts(&refs)?.iter().sum();
        (refs, tokens)
    };
    let repeat = opts.repeat.max(1);
    if repeat > 1 {
        std::hint::black_box(embedder.embed(&refs, Role::Passage, &mut |_| {})?);
    }
    let mut passes = Vec::with_capacity(repeat);
    let mut v = Vec::new();
    for _ in 0..repeat {
        let t = Instant::now();
        v = embedder.embed(&refs, Role::Passage, &mut |_| {})?;
        passes.push(t.elapsed().as_secs_f64());
    }
    if v.len() != n {
        bail!("embedder returned {} vectors for {n} texts", v.len());
    }
    if let Some(path) = &opts.vectors {
        let mut out = String::new();
        for (text, vector) in refs.iter().zip(&v) {
            let line = serde_json::json!({"text": text, "vector": vector});
            out.push_str(&line.to_string());
            out.push('\n');
        }
        crate::store::fsx::write_atomic(path, out.as_bytes())?;
    }
    let embed_s = metrics::median(&passes).unwrap_or(0.0);
    Ok(PrepareThroughput {
        dataset: dataset.into(),
        passages: texts.len(),
        read_s,
        bm25_chunks_per_s: texts.len() as f64 / bm25_s.max(1e-12),
        embedded: n,
        longest: opts.longest,
        embed_tokens_mean: tokens as f64 / n.max(1) as f64,
        embed_passages_per_s: n as f64 / embed_s.max(1e-12),
        embed_passes_s: passes,
        model_id: embedder.model_id().to_string(),
    })
}

/// Opens a dataset for benchmarking (prepared if needed, with the optional `parts` the
/// benchmarked legs read), or explains why it is unavailable.
pub fn open(
    campaign: &Campaign,
    dataset: &str,
    s: &DataSettings,
    parts: hopbench_datasets::export::Parts,
) -> Result<std::sync::Arc<Export>> {
    open_keeping(campaign, dataset, s, parts, None)
}

/// [`open`], holding only the query vectors `keep` names (every one when `None`).
pub fn open_keeping(
    campaign: &Campaign,
    dataset: &str,
    s: &DataSettings,
    parts: hopbench_datasets::export::Parts,
    keep: Option<hopbench_datasets::export::KeepVectors<'_>>,
) -> Result<std::sync::Arc<Export>> {
    match data::open(campaign, dataset, s, true, parts, keep)? {
        DatasetState::Ready(e) => Ok(e),
        DatasetState::Missing(reason) => bail!("dataset {dataset}: {reason}"),
    }
}

/// Per-turn assembly overhead on one dataset.
#[derive(Debug, Serialize)]
pub struct AssemblyLatency {
    /// Dataset.
    pub dataset: String,
    /// The multi-horizon leg whose assembler settings were used.
    pub leg: String,
    /// Conversation turns (queries) per pass.
    pub queries: usize,
    /// Turns per conversation: mean.
    pub turns_mean: f64,
    /// Timed passes.
    pub repeat: usize,
    /// `assemble` alone: median and p95, ms.
    pub assemble_ms: [f64; 2],
    /// The whole `multi_horizon` retrieve (assembly + Tier P + Tier C retrievals + novelty).
    pub multi_horizon_ms: [f64; 2],
    /// `conv_last_turn`'s retrieve (the hybrid on the current turn).
    pub last_turn_ms: [f64; 2],
    /// The kind of the leg timed for `last_turn_ms`, as printed (not in the JSON).
    #[serde(skip)]
    pub baseline: &'static str,
}

/// Times [`hopbench_legs::conversation::assemble`] per turn against the retrievals around it.
pub fn assembly(
    campaign: &Campaign,
    dataset: &str,
    export: &std::sync::Arc<Export>,
    leg: &str,
    repeat: usize,
    data: &DataSettings,
) -> Result<AssemblyLatency> {
    use hopbench_legs::registry::LegSpec;
    let spec = campaign
        .legs
        .get(leg)
        .with_context(|| format!("no leg `{leg}` in the campaign"))?;
    let Some(probe) = spec.assembly_probe() else {
        bail!(
            "leg `{leg}` (kind `{}`) has no conversation assembler to time",
            spec.kind()
        );
    };
    let (export, model) = &leg_model::for_leg(campaign, leg, export, data)?;
    let leg_data = model.as_ref().map(|m| m.data_settings(data));
    let data = leg_data.as_ref().unwrap_or(data);
    let build = |spec: &LegSpec, name: &str| -> Result<Box<dyn hopbench_legs::Leg>> {
        crate::pipeline::leg_build::build(spec, name, export, data, model.as_ref())?
            .map_err(|e| anyhow::anyhow!("{dataset} x {name}: {e}"))
    };
    let mh = build(spec, leg)?;
    let last = build(&probe.baseline, probe.baseline_name)?;
    let texts = spec.texts_to_embed(export);
    let vectors = crate::pipeline::leg_build::vectors(export, &texts, data)?;
    let lookup = |t: &str| vectors.get(t).map(<[f32]>::to_vec).unwrap_or_default();
    let convs: Vec<Vec<hopbench_datasets::Turn>> = export
        .queries
        .iter()
        .map(|q| q.conversation.clone().unwrap_or_default())
        .collect();
    let n = export.queries.len();
    let (mut a, mut m, mut l) = (Vec::new(), Vec::new(), Vec::new());
    for pass in 0..=repeat {
        for (q, conv) in convs.iter().enumerate() {
            let input = QueryInput::from_export(export, q);
            let t0 = Instant::now();
            std::hint::black_box(hopbench_legs::conversation::assemble(
                conv,
                &lookup,
                probe.conversation,
            ));
            let t1 = Instant::now();
            std::hint::black_box(mh.retrieve(&input)?);
            let t2 = Instant::now();
            std::hint::black_box(last.retrieve(&input)?);
            let t3 = Instant::now();
            if pass > 0 {
                // pass 0 warms caches up
                a.push((t1 - t0).as_secs_f64() * 1e3);
                m.push((t2 - t1).as_secs_f64() * 1e3);
                l.push((t3 - t2).as_secs_f64() * 1e3);
            }
        }
    }
    let mp = |v: &[f64]| {
        [
            metrics::median(v).unwrap_or(0.0),
            metrics::percentile(v, 95.0).unwrap_or(0.0),
        ]
    };
    Ok(AssemblyLatency {
        dataset: dataset.into(),
        leg: leg.into(),
        queries: n,
        turns_mean: convs.iter().map(Vec::len).sum::<usize>() as f64 / n.max(1) as f64,
        repeat,
        assemble_ms: mp(&a),
        multi_horizon_ms: mp(&m),
        last_turn_ms: mp(&l),
        baseline: probe.baseline_name,
    })
}
