//! The engine in a build without the `qdrant` feature: reading its group already fails with
//! [`NOT_BUILT`](super::NOT_BUILT), so these are reached only by a caller that did not ask
//! [`EngineKind::BUILT`](crate::engine::EngineKind::BUILT) first, and each says what is missing.

use std::convert::Infallible;
use std::path::Path;
use std::sync::Arc;

use hopbench_datasets::export::Export;
use hopbench_datasets::hnsw::{HnswSettings, HnswShard};

use super::QdrantSpec;
use crate::candidate::Candidate;
use crate::engine::{Engine, Failure, Vectors};
use crate::leg::LegError;

/// The engine cannot be built: it is not in this build.
pub(super) fn build(
    _spec: &QdrantSpec,
    _export: &Arc<Export>,
    _vectors: Vectors,
) -> Result<Box<dyn Engine>, LegError> {
    Err(super::not_built())
}

/// No shard can have been built by this build.
pub(super) fn probe_of(_dir: &Path) -> String {
    "not built".into()
}

/// The shard of `export`'s `vectors`: not in this build.
pub fn shard_for(
    _export: &Export,
    _vectors: Vectors,
    _settings: HnswSettings,
) -> Result<Arc<HnswShard>, LegError> {
    Err(super::not_built())
}

/// Dense search through a Qdrant HNSW shard: none exists in this build.
pub struct QdrantDense(Infallible);

impl QdrantDense {
    /// The engine: not in this build.
    pub fn new(_export: Arc<Export>, _vectors: Vectors, _spec: &QdrantSpec) -> Result<Self, LegError> {
        Err(super::not_built())
    }

    /// The top `k` chunks for `query` (never reached: no engine exists).
    pub fn search_vector(&self, _query: &[f32], _k: usize) -> Result<Vec<Candidate>, Failure> {
        match self.0 {}
    }
}
