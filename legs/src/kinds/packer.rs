//! `packer`: the knapsack packer over the graph-fused (`kg`) ranking, default budget 10,000
//! tokens (the seed's SELECT_BUDGET).

use serde::{Deserialize, Serialize};

use super::{Build, LegKind};
use crate::lanes::fused::TraversalFusion;
use crate::leg::{Leg, LegError};
use crate::params::{Check, Checked, Params};
use crate::select::packed::Packing;
use crate::{flat_params, leaf_params};

/// `ranking`: the fused ranking the packer packs (the `kg` kind's parameters, nested).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FusedRanking {
    /// The fused ranking.
    pub ranking: TraversalFusion,
}

impl Checked for FusedRanking {
    fn check(&self, c: &Check<'_>) -> Result<(), LegError> {
        self.ranking.check(c)
    }
}

leaf_params!(FusedRanking);

flat_params! {
    /// `packer`'s parameters.
    pub struct Packer {
        /// Budget, packer settings, token counter.
        pub packing: Packing,
        /// What it packs.
        pub ranking: FusedRanking,
    }
}

impl LegKind for Packer {
    const NAME: &'static str = "packer";
    const ABOUT: &'static str = "the knapsack packer over the graph-fused (kg) ranking";

    fn has_budget(&self) -> bool {
        true
    }

    fn build(&self, b: &Build<'_>) -> Result<Box<dyn Leg>, LegError> {
        let ranking = Box::new(self.ranking.ranking.ranking(b.export)?);
        self.packing.leg(b.leg, b.export, ranking)
    }
}
