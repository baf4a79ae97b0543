//! The shard in a build without the `qdrant` feature: the same types, with no values. Callers
//! check [`BUILT`](super::BUILT) before they build one, so [`HnswShard::build`] is reached only
//! by a caller that did not, and says what is missing.

use std::convert::Infallible;
use std::path::Path;

use super::{BuildCost, HnswSettings};
use crate::error::{Error, Result};

/// A shard; none exists in this build.
#[derive(Debug)]
pub struct HnswShard(Infallible);

/// A kept shard; none exists in this build.
#[derive(Debug)]
pub struct KeptShard(Infallible);

impl HnswShard {
    /// Always an error: this build has no HNSW engine.
    pub fn build<R: super::Rows + ?Sized>(
        dir: &Path,
        _source: &str,
        _vectors: &R,
        _dim: usize,
        _ids: &[&str],
        _settings: HnswSettings,
    ) -> Result<(HnswShard, BuildCost)> {
        Err(Error::Config {
            context: format!("{}: HNSW shard", dir.display()),
            message: "this build has no HNSW engine: build hopbench with `--features qdrant`"
                .into(),
        })
    }

    /// The nearest points of `query` (never reached: no shard exists).
    pub fn search_points(&self, _query: &[f32], _k: usize, _ef: usize) -> Result<Vec<(u64, f32)>> {
        match self.0 {}
    }

    /// Closes the shard and keeps its directory (never reached: no shard exists).
    pub fn keep(self) -> KeptShard {
        match self.0 {}
    }
}

impl KeptShard {
    /// Moves the shard into a cache (never reached: no shard exists).
    pub fn adopt(self, _target: &Path, _source: &str) -> Result<()> {
        match self.0 {}
    }
}
