//! `dense_content_only`: exact cosine over the content-only (text alone) vectors
//! (`missing-inputs` where no chunk has a header, so there are no such vectors): with
//! `lexical_content_only`, the text-alone ablation of a title + text protocol.

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
    const ABOUT: &'static str = "exact cosine over text-alone vectors, without the header (ablation)";

    fn build(&self, b: &Build<'_>) -> Result<Box<dyn Leg>, LegError> {
        let engine = ExactDense::new(b.export.clone(), Vectors::ContentOnly)?;
        Ok(Ranked::leg(b.export, Single::new(Box::new(engine), self.pool.pool_k)))
    }
}
