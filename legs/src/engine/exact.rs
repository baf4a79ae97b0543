//! The exact dense engine: cosine over L2-normalised vectors, i.e. a dot product per chunk.
//!
//! Scores come from [`hopbench_datasets::vector::dot`], whose summation order is fixed, so a score
//! is a pure function of the two vectors whatever the thread count.

use std::sync::Arc;

use hopbench_datasets::export::Export;
use hopbench_datasets::vectors_file::VectorSet;

use super::{no_params, Engine, EngineError, EngineKind, Side, SideKind};
use crate::params::Flat;
use crate::candidate::{top_k, Candidate};
use crate::leg::{LegError, QueryInput};

pub use hopbench_datasets::vector::dot;

/// `dense: {engine: exact}`: the exact scan, the dense side's built-in engine. It takes no
/// parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Exact;

impl EngineKind for Exact {
    const NAME: &'static str = "exact";
    const SIDES: &'static [SideKind] = &[SideKind::Dense];

    fn read(rest: &Flat) -> Result<Self, crate::params::ParamError> {
        no_params(Self::NAME, rest).map(|()| Exact)
    }
    fn write(&self) -> Flat {
        Flat::new()
    }
    fn build(&self, export: &Arc<Export>, side: Side) -> Result<Box<dyn super::Engine>, LegError> {
        match side {
            Side::Dense(vectors) => Ok(Box::new(ExactDense::new(export.clone(), vectors)?)),
            Side::Lexical => Err(side.refused(Self::NAME)),
        }
    }
}

/// Which vectors a dense search uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Vectors {
    /// Header + content (the export's `embedding`).
    Full,
    /// Content only (`embedding_content`; only where the dataset has context headers).
    ContentOnly,
}

impl Vectors {
    /// The export column these vectors are (`embedding`, `embedding_content`).
    pub fn column(self) -> &'static str {
        match self {
            Vectors::Full => "embedding",
            Vectors::ContentOnly => "embedding_content",
        }
    }

    /// `MissingInputs` where `export` lacks this vector set (content-only vectors exist only
    /// where the dataset has context headers), whichever engine would search it.
    pub fn available_in(self, export: &Export) -> Result<(), LegError> {
        if self == Vectors::ContentOnly {
            if let Some(why) = export.vectors_not_brought(VectorSet::Content) {
                return Err(LegError::MissingInputs(why));
            }
        }
        if self == Vectors::ContentOnly && !export.has_content_embeddings() {
            return Err(LegError::MissingInputs(
                "the dataset indexes the text alone already (protocol `text`), so there are no \
                 content-only vectors: `dense` is the text-alone run"
                    .into(),
            ));
        }
        Ok(())
    }

    /// These vectors of `export`, row-major, read on the first call ([`Export::embeddings`]);
    /// call [`Vectors::available_in`] first.
    pub fn rows(self, export: &Export) -> Result<&[f32], LegError> {
        Ok(match self {
            Vectors::Full => export.embeddings()?,
            Vectors::ContentOnly => export.content_embeddings()?.ok_or_else(|| {
                LegError::MissingInputs("the export has no content-only vectors".into())
            })?,
        })
    }
}

/// Exact cosine over one of the export's vector sets.
pub struct ExactDense {
    export: Arc<Export>,
    vectors: Vectors,
}

impl ExactDense {
    /// The engine, its vectors read; `ContentOnly` fails with `MissingInputs` where the export
    /// has no headers.
    pub fn new(export: Arc<Export>, vectors: Vectors) -> Result<Self, LegError> {
        vectors.available_in(&export)?;
        vectors.rows(&export)?;
        Ok(ExactDense { export, vectors })
    }

    /// The top `k` chunks by cosine to the vector `query`.
    pub fn search_vector(&self, query: &[f32], k: usize) -> Vec<Candidate> {
        // `new` read these vectors, and a part of an export once read stays read
        let vectors = self
            .vectors
            .rows(&self.export)
            .expect("the vectors were read by ExactDense::new");
        DenseIndex {
            vectors,
            dim: self.export.dim,
        }
        .search(query, k)
    }
}

impl Engine for ExactDense {
    fn name(&self) -> &'static str {
        "exact"
    }
    fn search(&self, query: &QueryInput<'_>, k: usize) -> Result<Vec<Candidate>, EngineError> {
        Ok(self.search_vector(query.embedding, k))
    }
}

/// Exact search over a row-major matrix of `dim`-wide vectors.
#[derive(Debug, Clone, Copy)]
pub struct DenseIndex<'a> {
    /// Row-major vectors.
    pub vectors: &'a [f32],
    /// Vector width.
    pub dim: usize,
}

impl DenseIndex<'_> {
    /// The top `k` chunks by cosine to `query`.
    pub fn search(&self, query: &[f32], k: usize) -> Vec<Candidate> {
        if self.dim == 0 {
            return Vec::new();
        }
        let mut all: Vec<Candidate> = self
            .vectors
            .chunks_exact(self.dim)
            .enumerate()
            .map(|(i, v)| Candidate::new(i as u32, dot(query, v)))
            .collect();
        top_k(&mut all, k);
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive(a: &[f32], b: &[f32]) -> f64 {
        a.iter().zip(b).map(|(x, y)| *x as f64 * *y as f64).sum()
    }

    #[test]
    fn dot_matches_naive_within_rounding_for_many_lengths() {
        let mut s = 1u64;
        let mut next = || {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) - 0.5
        };
        for n in [0, 1, 7, 8, 9, 16, 383, 384, 385] {
            let a: Vec<f32> = (0..n).map(|_| next()).collect();
            let b: Vec<f32> = (0..n).map(|_| next()).collect();
            assert!((dot(&a, &b) as f64 - naive(&a, &b)).abs() < 1e-4, "n = {n}");
        }
    }

    #[test]
    fn search_ranks_by_cosine_with_id_tiebreak() {
        // four 2-d unit vectors; chunks 1 and 2 are identical (a tie)
        let v = [1.0, 0.0, 0.6, 0.8, 0.6, 0.8, 0.0, 1.0];
        let idx = DenseIndex {
            vectors: &v,
            dim: 2,
        };
        let hits = idx.search(&[0.0, 1.0], 3);
        assert_eq!(
            hits.iter().map(|c| c.chunk).collect::<Vec<_>>(),
            vec![3, 1, 2]
        );
        assert_eq!(hits[1].score, hits[2].score);
    }
}
