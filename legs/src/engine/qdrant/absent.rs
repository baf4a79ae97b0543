//! The engine in a build without the `qdrant` feature: reading its group already fails with
//! [`NOT_BUILT`](super::NOT_BUILT), so these are reached only with a group made by hand.

use std::path::Path;
use std::sync::Arc;

use hopbench_datasets::export::Export;

use super::QdrantSpec;
use crate::engine::{Engine, Vectors};
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
