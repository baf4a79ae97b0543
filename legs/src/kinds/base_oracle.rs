//! `base_oracle`: a bound, not a policy. A perfect rescore of the base's own top `oracle_k`
//! (gold first, in base order), so `base_oracle − graph_rescue` is what a rescore of the pool
//! the base already holds could buy.

use serde::{Deserialize, Serialize};

use super::{Role, Build, LegKind};
use crate::leg::{Leg, LegError, Ranked};
use crate::oracle::{Oracle, OracleKind};
use crate::params::{Check, Checked, Params};
use crate::rescue::RescueConfig;

/// `base_oracle`'s parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BaseOracle {
    /// Base head the oracle may rescore.
    pub oracle_k: usize,
    /// The graph rescue whose base is rescored (defaults: `graph_rescue`'s).
    pub rescue: RescueConfig,
}

impl Default for BaseOracle {
    fn default() -> Self {
        BaseOracle {
            oracle_k: 100,
            rescue: RescueConfig::default(),
        }
    }
}

impl Checked for BaseOracle {
    fn check(&self, c: &Check<'_>) -> Result<(), LegError> {
        c.at_least("oracle_k", self.oracle_k, 1)?;
        self.rescue.check(c)
    }
}

crate::leaf_params!(BaseOracle);

impl LegKind for BaseOracle {
    const NAME: &'static str = "base_oracle";
    const ABOUT: &'static str = "bound: a perfect rescore of the base's top oracle_k";
    const ROLE: Role = Role::Oracle;

    fn build(&self, b: &Build<'_>) -> Result<Box<dyn Leg>, LegError> {
        let kind = OracleKind::Base {
            oracle_k: self.oracle_k,
        };
        let ranking = Oracle::new(b.export, self.rescue.clone(), kind)?;
        Ok(Ranked::leg(b.export, ranking))
    }
}
