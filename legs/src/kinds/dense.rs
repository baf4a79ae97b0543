//! `dense`: exact cosine over the vectors of what the protocol indexes (header + content, or
//! the text alone), top `pool_k`.

use super::{Build, LegKind};
use crate::engine::{ExactDense, Vectors};
use crate::first_stage::{Pool, Single};
use crate::flat_params;
use crate::leg::{Leg, LegError, Ranked};

flat_params! {
    /// `dense`'s parameters.
    pub struct Dense {
        /// Candidates returned.
        pub pool: Pool,
    }
}

impl LegKind for Dense {
    const NAME: &'static str = "dense";
    const ABOUT: &'static str = "exact cosine over header+content vectors";

    fn build(&self, b: &Build<'_>) -> Result<Box<dyn Leg>, LegError> {
        let engine = ExactDense::new(b.export.clone(), Vectors::Full)?;
        Ok(Ranked::leg(b.export, Single::new(Box::new(engine), self.pool.pool_k)))
    }
}
