//! The rerankers a leg's `rerank:` group names, built: the legs crate holds the stage and the
//! bi-encoder (it reads an export's vectors); the cross-encoder runs the model code of the
//! datasets crate, which only the harness links.
//!
//! A reranker's identity is part of its cells' keys
//! ([`reranker_identity`](crate::pipeline::leg_model::reranker_identity)): the model id of the
//! bi-encoder's vectors, or the CrossEncoder's (its weights' hash and every setting that
//! changes a score), so a changed checkpoint recomputes the cells it reranked.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result};
use hopbench_datasets::embed::CrossEncoder;
use hopbench_datasets::export::Export;
use hopbench_legs::rerank::{BiEncoder, RerankSpec, Reranked, Reranker, RerankerKind};
use hopbench_legs::{Leg, LegError, QueryInput};

use crate::pipeline::data::DataSettings;
use crate::pipeline::leg_model::{self, LegModel};

/// `leg` with the rerank stage `spec` over `export` (the export the leg reads): the reranker
/// built (a CrossEncoder loaded, a bi-encoder's vectors added to the export if they are
/// another model's) and the leg wrapped ([`Reranked`]).
pub fn wrap(
    leg: Box<dyn Leg>,
    spec: &RerankSpec,
    name: &str,
    export: &Arc<Export>,
    data: &DataSettings,
) -> Result<Box<dyn Leg>> {
    let reranker: Arc<dyn Reranker> = match spec.reranker {
        RerankerKind::BiEncoder => {
            let vectors = match spec.model.as_deref() {
                None => export.clone(),
                Some(dir) => {
                    let dir = Path::new(dir);
                    let (id, dim) = leg_model::identity_of(dir)?;
                    let model = LegModel {
                        dir: dir.to_path_buf(),
                        id,
                        dim,
                    };
                    leg_model::export_for(export, &model, data, false, None)?
                }
            };
            Arc::new(BiEncoder::new(vectors))
        }
        RerankerKind::CrossEncoder => {
            let dir = spec
                .model
                .as_deref()
                .expect("checked when the leg was read");
            let ce = CrossEncoder::load(Path::new(dir), spec.label.as_deref())
                .with_context(|| format!("leg `{name}`: field `rerank.model`"))?;
            Arc::new(CrossEncoderReranker {
                ce,
                export: export.clone(),
            })
        }
    };
    Ok(Reranked::leg(leg, reranker, spec.k))
}

/// A sentence-transformers CrossEncoder scoring (query text, chunk text) pairs: the chunk's
/// full text, as it is indexed and handed to an LLM.
struct CrossEncoderReranker {
    ce: CrossEncoder,
    export: Arc<Export>,
}

impl Reranker for CrossEncoderReranker {
    fn name(&self) -> &'static str {
        RerankerKind::CrossEncoder.name()
    }

    fn score(&self, query: &QueryInput<'_>, chunks: &[u32]) -> Result<Vec<f32>, LegError> {
        let texts = self.export.texts()?;
        let full: Vec<String> = chunks
            .iter()
            .map(|&c| texts[c as usize].full_text())
            .collect();
        let refs: Vec<&str> = full.iter().map(String::as_str).collect();
        self.ce
            .score(query.text, &refs)
            .map_err(|e| LegError::Rerank {
                reranker: self.name().to_string(),
                query: query.id.to_string(),
                message: e.to_string(),
            })
    }
}
