//! `graph_rescue_coe`: chain-of-evidence over graph rescue's union, default budget 16,000 tokens
//! (the seed's COE_SELECT_BUDGET). It selects hyperedges, so the hypergraph lane must stay on.

use serde::{Deserialize, Serialize};

use super::{Build, LegKind};
use crate::leg::{Leg, LegError};
use crate::params::{Check, Checked, Params};
use crate::rescue::{GraphRescue, RescueConfig};
use crate::select::packed::CoeLeg;
use crate::select::CoeConfig;
use crate::tokens::TokenCounterSpec;

/// `graph_rescue_coe`'s parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GraphRescueCoe {
    /// Default token budget.
    pub budget: u64,
    /// Chain-of-evidence settings.
    pub coe: CoeConfig,
    /// The graph rescue it selects from (must keep the hypergraph lane).
    pub rescue: RescueConfig,
    /// Token counter.
    pub token_counter: TokenCounterSpec,
}

impl Default for GraphRescueCoe {
    fn default() -> Self {
        GraphRescueCoe {
            budget: 16_000,
            coe: CoeConfig::default(),
            rescue: RescueConfig::default(),
            token_counter: TokenCounterSpec::default(),
        }
    }
}

impl Checked for GraphRescueCoe {
    fn check(&self, c: &Check<'_>) -> Result<(), LegError> {
        c.at_least("budget", self.budget as usize, 1)?;
        c.at_least("coe.select_pool_k", self.coe.select_pool_k, 1)?;
        self.token_counter.check(c)?;
        if !self.rescue.has_hypergraph_lane() {
            return c.fail(
                "rescue.lanes",
                "chain-of-evidence selects hyperedges: keep the hypergraph lane",
            );
        }
        self.rescue.check(c)
    }
}

crate::leaf_params!(GraphRescueCoe);

impl LegKind for GraphRescueCoe {
    const NAME: &'static str = "graph_rescue_coe";
    const ABOUT: &'static str = "chain-of-evidence over graph_rescue's union";

    fn has_budget(&self) -> bool {
        true
    }

    fn build(&self, b: &Build<'_>) -> Result<Box<dyn Leg>, LegError> {
        let ranking = Box::new(GraphRescue::new(b.export, self.rescue.clone())?);
        Ok(Box::new(CoeLeg::coe(
            b.leg,
            b.export,
            ranking,
            self.rescue.has_hypergraph_lane(),
            self.coe,
            self.budget,
            &self.token_counter,
        )?))
    }
}
