//! `packer`: the knapsack packer over the graph-fused (`kg`) ranking, default budget 10,000
//! tokens (the seed's SELECT_BUDGET).

use serde::{Deserialize, Serialize};

use super::{Build, LegKind};
use crate::lanes::fused::TraversalFusion;
use crate::leg::{Leg, LegError};
use crate::params::{Check, Checked, Params};
use crate::select::packed::PackedLeg;
use crate::select::PackerConfig;
use crate::tokens::TokenCounterSpec;

/// `packer`'s parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Packer {
    /// Default token budget.
    pub budget: u64,
    /// Packer settings.
    pub packer: PackerConfig,
    /// The fused ranking it packs (the `kg` kind's parameters).
    pub ranking: TraversalFusion,
    /// Token counter.
    pub token_counter: TokenCounterSpec,
}

impl Default for Packer {
    fn default() -> Self {
        Packer {
            budget: 10_000,
            packer: PackerConfig::default(),
            ranking: TraversalFusion::default(),
            token_counter: TokenCounterSpec::default(),
        }
    }
}

impl Checked for Packer {
    fn check(&self, c: &Check<'_>) -> Result<(), LegError> {
        c.at_least("budget", self.budget as usize, 1)?;
        self.token_counter.check(c)?;
        self.packer.validate(c.0)?;
        self.ranking.check(c)
    }
}

crate::leaf_params!(Packer);

impl LegKind for Packer {
    const NAME: &'static str = "packer";
    const ABOUT: &'static str = "the knapsack packer over the graph-fused (kg) ranking";

    fn build(&self, b: &Build<'_>) -> Result<Box<dyn Leg>, LegError> {
        let ranking = Box::new(self.ranking.ranking(b.export)?);
        Ok(Box::new(PackedLeg::new(
            b.leg,
            b.export,
            ranking,
            self.packer,
            self.budget,
            &self.token_counter,
        )?))
    }
}
