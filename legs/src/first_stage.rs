//! The first-stage legs of the matrix: `dense`, `dense_content_only`, `lexical` and the hybrid
//! `bm25` rung (dense + BM25 fused by RRF, then max-normalised: the seed's base stage).

use std::sync::Arc;

use hopbench_datasets::export::Export;
use hopbench_datasets::lexical::Tokenizer;

use crate::backend::{dense::DenseIndex, lexical};
use crate::candidate::Candidate;
use crate::fuse::{rrf, unit_scaled};
use crate::leg::{select_none, Leg, LegError, QueryInput, Retrieval, Selection};

/// Which vectors a dense search uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Vectors {
    /// Header + content (the export's `embedding`).
    Full,
    /// Content only (`embedding_content`; only where the dataset has context headers).
    ContentOnly,
}

/// Exact cosine over the export's vectors, top `pool_k`.
pub struct DenseLeg {
    export: Arc<Export>,
    vectors: Vectors,
    pool_k: usize,
}

impl DenseLeg {
    /// A dense leg; `ContentOnly` fails with `MissingInputs` where the export has no headers.
    pub fn new(export: Arc<Export>, vectors: Vectors, pool_k: usize) -> Result<Self, LegError> {
        if vectors == Vectors::ContentOnly && export.content_embeddings.is_none() {
            return Err(LegError::MissingInputs(
                "the dataset has no context headers, so there are no content-only vectors".into(),
            ));
        }
        Ok(DenseLeg {
            export,
            vectors,
            pool_k,
        })
    }

    /// The dense ranking for a query vector.
    pub fn search(&self, query: &[f32]) -> Vec<Candidate> {
        let vectors = match self.vectors {
            Vectors::Full => &self.export.embeddings,
            Vectors::ContentOnly => self
                .export
                .content_embeddings
                .as_ref()
                .expect("checked in new"),
        };
        DenseIndex {
            vectors,
            dim: self.export.dim,
        }
        .search(query, self.pool_k)
    }
}

impl Leg for DenseLeg {
    fn retrieve(&self, q: &QueryInput<'_>) -> Retrieval {
        Retrieval {
            ranked: self.search(q.embedding),
            ..Default::default()
        }
    }
    fn select(
        &self,
        _q: &QueryInput<'_>,
        r: &Retrieval,
        _budget: Option<u64>,
    ) -> Result<Selection, LegError> {
        select_none(&self.export, r)
    }
}

/// BM25 alone, top `pool_k`: the number a sceptic asks for.
pub struct LexicalLeg {
    export: Arc<Export>,
    tokenizer: Tokenizer,
    pool_k: usize,
}

impl LexicalLeg {
    /// A BM25 leg.
    pub fn new(export: Arc<Export>, pool_k: usize) -> Self {
        LexicalLeg {
            export,
            tokenizer: Tokenizer::english(),
            pool_k,
        }
    }

    /// The BM25 ranking for a query text.
    pub fn search(&self, text: &str) -> Vec<Candidate> {
        lexical::search(&self.export.bm25, &self.tokenizer, text, self.pool_k)
    }
}

impl Leg for LexicalLeg {
    fn retrieve(&self, q: &QueryInput<'_>) -> Retrieval {
        Retrieval {
            ranked: self.search(q.text),
            ..Default::default()
        }
    }
    fn select(
        &self,
        _q: &QueryInput<'_>,
        r: &Retrieval,
        _budget: Option<u64>,
    ) -> Result<Selection, LegError> {
        select_none(&self.export, r)
    }
}

/// Dense and BM25 as peers: RRF (k = `rrf_k`) over both pools, then max-normalised. This is the
/// seed's hybrid rung and the base stage of graph rescue.
pub struct HybridLeg {
    dense: DenseLeg,
    lexical: LexicalLeg,
    rrf_k: f32,
}

impl HybridLeg {
    /// The hybrid rung with `pool_k` from each first stage.
    pub fn new(export: Arc<Export>, pool_k: usize, rrf_k: f32) -> Result<Self, LegError> {
        Ok(HybridLeg {
            dense: DenseLeg::new(export.clone(), Vectors::Full, pool_k)?,
            lexical: LexicalLeg::new(export, pool_k),
            rrf_k,
        })
    }

    /// The fused, unit-scaled base, plus the two first-stage lists (the gate reads them).
    pub fn base(&self, q: &QueryInput<'_>) -> (Vec<Candidate>, Vec<Candidate>, Vec<Candidate>) {
        let d = self.dense.search(q.embedding);
        let b = self.lexical.search(q.text);
        let fused = unit_scaled(rrf(&[&d, &b], self.rrf_k, None));
        (fused, d, b)
    }
}

impl Leg for HybridLeg {
    fn retrieve(&self, q: &QueryInput<'_>) -> Retrieval {
        let (ranked, d, b) = self.base(q);
        let mut r = Retrieval {
            ranked,
            ..Default::default()
        };
        r.diagnostics.insert("pool_dense".into(), d.len() as f64);
        r.diagnostics.insert("pool_bm25".into(), b.len() as f64);
        r
    }
    fn select(
        &self,
        _q: &QueryInput<'_>,
        r: &Retrieval,
        _budget: Option<u64>,
    ) -> Result<Selection, LegError> {
        select_none(&self.dense.export, r)
    }
}
