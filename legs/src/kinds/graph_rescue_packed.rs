//! `graph_rescue_packed`: the knapsack packer over graph rescue's append-not-fuse union, default
//! budget 10,000 tokens.

use serde::{Deserialize, Serialize};

use super::{Build, LegKind};
use crate::leg::{Leg, LegError};
use crate::params::{Check, Checked, Params};
use crate::rescue::{GraphRescue, RescueConfig};
use crate::select::packed::Packing;
use crate::{flat_params, leaf_params};

/// `rescue`: the graph rescue whose union is packed (nested).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RescueRanking {
    /// The graph rescue it packs.
    pub rescue: RescueConfig,
}

impl Checked for RescueRanking {
    fn check(&self, c: &Check<'_>) -> Result<(), LegError> {
        self.rescue.check(c)
    }
}

leaf_params!(RescueRanking);

flat_params! {
    /// `graph_rescue_packed`'s parameters.
    pub struct GraphRescuePacked {
        /// Budget, packer settings, token counter.
        pub packing: Packing,
        /// What it packs.
        pub rescue: RescueRanking,
    }
}

impl LegKind for GraphRescuePacked {
    const NAME: &'static str = "graph_rescue_packed";
    const ABOUT: &'static str = "the knapsack packer over graph_rescue's union";

    fn has_budget(&self) -> bool {
        true
    }

    fn build(&self, b: &Build<'_>) -> Result<Box<dyn Leg>, LegError> {
        let ranking = Box::new(GraphRescue::new(b.export, self.rescue.rescue.clone())?);
        self.packing.leg(b.leg, b.export, ranking)
    }
}
