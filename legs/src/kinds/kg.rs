//! `kg`: the traversal lane RRF-fused as a third peer of dense and BM25 (the fusion the seed
//! measured as a regression, kept in the table).

use super::{Build, LegKind};
use crate::flat_params;
use crate::lanes::fused::TraversalFusion;
use crate::leg::{Leg, LegError, Ranked};

flat_params! {
    /// `kg`'s parameters.
    pub struct Kg {
        /// The fused ranking.
        pub fusion: TraversalFusion,
    }
}

impl LegKind for Kg {
    const NAME: &'static str = "kg";
    const ABOUT: &'static str = "the traversal lane RRF-fused as a third peer of dense and BM25";

    fn build(&self, b: &Build<'_>) -> Result<Box<dyn Leg>, LegError> {
        Ok(Ranked::leg(b.export, self.fusion.ranking(b.export)?))
    }
}
