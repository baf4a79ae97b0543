//! `dense_content_only`: exact cosine over the content-only (text alone) vectors
//! (`missing-inputs` where no chunk has a header, so there are no such vectors): with
//! `lexical_content_only`, the text-alone ablation of a title + text protocol.

use super::{Role, Build, LegKind};
use crate::engine::Vectors;
use crate::first_stage::{DenseEngine, Pool, Single};
use crate::flat_params;
use crate::leg::{Leg, LegError, Ranked};

flat_params! {
    /// `dense_content_only`'s parameters.
    pub struct DenseContentOnly {
        /// Candidates returned.
        pub pool: Pool,
        /// The engine that answers (`dense: {engine: exact | qdrant | external, ...}`).
        pub dense: DenseEngine,
    }
}

impl LegKind for DenseContentOnly {
    const NAME: &'static str = "dense_content_only";
    const ABOUT: &'static str = "exact cosine over text-alone vectors, without the header (ablation)";
    const ROLE: Role = Role::Ablation;
    const DENSE_VECTORS: Vectors = Vectors::ContentOnly;

    fn build(&self, b: &Build<'_>) -> Result<Box<dyn Leg>, LegError> {
        let engine = self.dense.build(b.export, Self::DENSE_VECTORS)?;
        Ok(Ranked::leg(b.export, Single::new(engine, self.pool.pool_k)))
    }
}
