//! `dense_content_only`: exact cosine over the content-only vectors (`missing-inputs` where the
//! dataset has no context headers, so there are no such vectors).

use super::{Build, LegKind};
use crate::engine::{ExactDense, Vectors};
use crate::first_stage::{Pool, Single};
use crate::flat_params;
use crate::leg::{Leg, LegError, Ranked};

flat_params! {
    /// `dense_content_only`'s parameters.
    pub struct DenseContentOnly {
        /// Candidates returned.
        pub pool: Pool,
    }
}

impl LegKind for DenseContentOnly {
    const NAME: &'static str = "dense_content_only";
    const ABOUT: &'static str = "exact cosine over content-only vectors (needs context headers)";

    fn build(&self, b: &Build<'_>) -> Result<Box<dyn Leg>, LegError> {
        let engine = ExactDense::new(b.export.clone(), Vectors::ContentOnly)?;
        Ok(Ranked::leg(b.export, Single::new(Box::new(engine), self.pool.pool_k)))
    }
}
