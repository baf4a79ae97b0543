//! `graph_rescue_packed`: the knapsack packer over graph rescue's append-not-fuse union, default
//! budget 10,000 tokens.

use serde::{Deserialize, Serialize};

use super::{Build, LegKind};
use crate::leg::{Leg, LegError};
use crate::params::{Check, Checked, Params};
use crate::rescue::{GraphRescue, RescueConfig};
use crate::select::packed::PackedLeg;
use crate::select::PackerConfig;
use crate::tokens::TokenCounterSpec;

/// `graph_rescue_packed`'s parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GraphRescuePacked {
    /// Default token budget.
    pub budget: u64,
    /// Packer settings.
    pub packer: PackerConfig,
    /// The graph rescue it packs.
    pub rescue: RescueConfig,
    /// Token counter.
    pub token_counter: TokenCounterSpec,
}

impl Default for GraphRescuePacked {
    fn default() -> Self {
        GraphRescuePacked {
            budget: 10_000,
            packer: PackerConfig::default(),
            rescue: RescueConfig::default(),
            token_counter: TokenCounterSpec::default(),
        }
    }
}

impl Checked for GraphRescuePacked {
    fn check(&self, c: &Check<'_>) -> Result<(), LegError> {
        c.at_least("budget", self.budget as usize, 1)?;
        self.token_counter.check(c)?;
        self.packer.validate(c.0)?;
        self.rescue.check(c)
    }
}

crate::leaf_params!(GraphRescuePacked);

impl LegKind for GraphRescuePacked {
    const NAME: &'static str = "graph_rescue_packed";
    const ABOUT: &'static str = "the knapsack packer over graph_rescue's union";

    fn build(&self, b: &Build<'_>) -> Result<Box<dyn Leg>, LegError> {
        let ranking = Box::new(GraphRescue::new(b.export, self.rescue.clone())?);
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
