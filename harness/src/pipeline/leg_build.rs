//! The one place the harness turns a campaign leg into a running leg: legs that need vectors of
//! texts other than the prepared queries (the conversation legs: turns, concatenations,
//! rewritten queries) get them here, from the export's model through the embedding cache.
//!
//! The vectors are a pure function of (model id, text), and the cell key already holds the
//! model id of the leg's vectors and the executable's hash, so the cache cannot serve a stale
//! cell. The model itself is only loaded when the cache lacks a text; a model whose id differs
//! from that of the export's vectors is refused (its vectors would live in another space than
//! the corpus's).

use std::sync::Arc;

use anyhow::{bail, Context, Result};
use hopbench_datasets::embed::{self, Embedder, EmbeddingCache, Role};
use hopbench_datasets::export::Export;
use hopbench_legs::conversation::session::TextVectors;
use hopbench_legs::registry::LegSpec;
use hopbench_legs::{Leg, LegError};

use crate::pipeline::data::DataSettings;
use crate::pipeline::leg_model::LegModel;

/// Builds leg `name` over `export`. The outer error is a harness failure (model, cache); the inner
/// one is the leg's own verdict (`missing-inputs`, a bad configuration).
///
/// `model` is the leg's own model (`model:`), whose vectors `export` holds, `None` for the
/// campaign's.
pub fn build(
    spec: &LegSpec,
    name: &str,
    export: &Arc<Export>,
    data: &DataSettings,
    model: Option<&LegModel>,
) -> Result<Result<Box<dyn Leg>, LegError>> {
    if let (Some(dir), None) = (spec.model(), model) {
        bail!(
            "leg `{name}` reads the vectors of its own model ({dir}), and this command runs \
             legs over the campaign's model only"
        );
    }
    let built = build_unreranked(spec, name, export, data, model)?;
    Ok(match (built, spec.rerank()) {
        (Ok(leg), Some(rerank)) => Ok(crate::pipeline::reranker::wrap(
            leg, rerank, name, export, data,
        )?),
        (built, _) => built,
    })
}

/// [`build`] without the rerank stage.
fn build_unreranked(
    spec: &LegSpec,
    name: &str,
    export: &Arc<Export>,
    data: &DataSettings,
    model: Option<&LegModel>,
) -> Result<Result<Box<dyn Leg>, LegError>> {
    let texts = spec.texts_to_embed(export);
    if texts.is_empty() {
        return Ok(spec.build(name, export.clone()));
    }
    if export.brings_vectors() {
        // the export's model is only a declared name: there is nothing to embed these with
        return Ok(Err(LegError::MissingInputs(format!(
            "leg `{name}` retrieves with vectors of {} texts that are not in the dataset's \
             `vectors:` files (turns, rewritten queries), and the dataset's model `{}` is not \
             one hopbench runs",
            texts.len(),
            export.manifest.model_id
        ))));
    }
    let leg_data = model.map(|m| m.data_settings(data));
    let vectors = vectors(export, &texts, leg_data.as_ref().unwrap_or(data))
        .with_context(|| format!("embedding the texts leg `{name}` retrieves with"))?;
    Ok(spec.build_with(name, export.clone(), Some(Arc::new(vectors))))
}

/// Vectors of `texts` in the space of `export` (the model id and dimension of its vectors),
/// embedded with the model `data` names.
pub fn vectors(export: &Export, texts: &[String], data: &DataSettings) -> Result<TextVectors> {
    let model_id = export.model_id();
    if model_id == embed::HASHING_MODEL_ID {
        // hashing a text is cheaper than a cache lookup, and needs no model
        let hashing = embed::HashingEmbedder::new();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let mut out = TextVectors::new(export.dim);
        for (t, v) in texts.iter().zip(hashing.embed_texts(&refs)) {
            out.insert(t.clone(), v);
        }
        return Ok(out);
    }
    let mut cache = EmbeddingCache::open_part(
        &data.embeddings,
        model_id,
        export.dim,
        data.cache_part.as_deref(),
    )?;
    if let Some(r) = cache.repairs() {
        eprintln!("warning: embedding cache {r}");
    }
    // the texts a leg retrieves with are turns and rewritten queries: they take the query prompt
    let prompt = embed::prompt_for(model_id, &data.model_dir, &data.prompts, Role::Query)
        .context("the prompt of the export's model")?;
    let misses: Vec<&str> = texts
        .iter()
        .map(String::as_str)
        .filter(|t| !cache.contains_as(&prompt, t))
        .collect();
    if !misses.is_empty() {
        let found = embed::model_id_with(&data.model_dir, &data.prompts).with_context(|| {
            format!(
                "{} texts need embedding and no model was found at {}",
                misses.len(),
                data.model_dir.display()
            )
        })?;
        if found != model_id {
            bail!(
                "the export was embedded with `{model_id}` but the model at {} is `{found}`: \
                 point --model at the export's model, or re-prepare the dataset",
                data.model_dir.display()
            );
        }
        let embedder = Embedder::load_with(&data.model_dir, &data.prompts)?;
        embed::embed_cached(&embedder, &mut cache, Role::Query, &misses, &mut |_| {})?;
    }
    let mut out = TextVectors::new(export.dim);
    for t in texts {
        let v = cache
            .get_as(&prompt, t)
            .with_context(|| format!("the embedding cache lost the text {t:?}"))?;
        out.insert(t.clone(), v.to_vec());
    }
    Ok(out)
}
