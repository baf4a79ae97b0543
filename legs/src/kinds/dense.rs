//! `dense`: exact cosine over the vectors of what the protocol indexes (header + content, or
//! the text alone), top `pool_k`.

use super::{Build, LegKind};
use crate::first_stage::{DenseEngine, Pool, Single};
use crate::flat_params;
use crate::leg::{Leg, LegError, Ranked};

flat_params! {
    /// `dense`'s parameters.
    pub struct Dense {
        /// Candidates returned.
        pub pool: Pool,
        /// The engine that answers (`dense: {engine: exact | qdrant | external, ...}`).
        pub dense: DenseEngine,
    }
}

impl LegKind for Dense {
    const NAME: &'static str = "dense";
    const ABOUT: &'static str = "exact cosine over header+content vectors";

    fn build(&self, b: &Build<'_>) -> Result<Box<dyn Leg>, LegError> {
        let engine = self.dense.build(b.export, Self::DENSE_VECTORS)?;
        Ok(Ranked::leg(b.export, Single::new(engine, self.pool.pool_k)))
    }
}
