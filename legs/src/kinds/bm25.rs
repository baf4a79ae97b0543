//! `bm25`: the seed's hybrid rung (its name for it): dense and BM25, `pool_k` each, fused by RRF
//! and max-normalised. It is the base every graph and conversation kind starts from.

use super::{Build, LegKind};
use crate::first_stage::FirstStage;
use crate::flat_params;
use crate::leg::{Leg, LegError, Ranked};

flat_params! {
    /// `bm25`'s parameters.
    pub struct Bm25 {
        /// The hybrid first stage.
        pub first: FirstStage,
    }
}

impl LegKind for Bm25 {
    const NAME: &'static str = "bm25";
    const ABOUT: &'static str = "the hybrid rung: dense + BM25 fused by RRF, max-normalised";

    fn build(&self, b: &Build<'_>) -> Result<Box<dyn Leg>, LegError> {
        Ok(Ranked::leg(b.export, self.first.hybrid(b.export)?))
    }
}
