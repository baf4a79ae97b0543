//! `hyperedges`: the hypergraph lane RRF-fused as a third peer of dense and BM25 (the fusion the
//! seed measured as a regression, kept in the table).

use super::{Build, LegKind};
use crate::flat_params;
use crate::lanes::fused::HypergraphFusion;
use crate::leg::{Leg, LegError, Ranked};

flat_params! {
    /// `hyperedges`' parameters.
    pub struct Hyperedges {
        /// The fused ranking.
        pub fusion: HypergraphFusion,
    }
}

impl LegKind for Hyperedges {
    const NAME: &'static str = "hyperedges";
    const ABOUT: &'static str = "the hypergraph lane RRF-fused as a third peer of dense and BM25";

    fn build(&self, b: &Build<'_>) -> Result<Box<dyn Leg>, LegError> {
        Ok(Ranked::leg(b.export, self.fusion.ranking(b.export)?))
    }
}
