//! `rescue_oracle`: a bound, not a policy. Graph rescue's union with every rescued gold chunk
//! promoted to the front, so `rescue_oracle − graph_rescue` is the rescue tail's whole ceiling.

use serde::{Deserialize, Serialize};

use super::{Role, Build, LegKind};
use crate::leg::{Leg, LegError, Ranked};
use crate::oracle::{Oracle, OracleKind};
use crate::params::{Check, Checked, Params};
use crate::rescue::RescueConfig;

/// `rescue_oracle`'s parameters.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RescueOracle {
    /// The graph rescue being bounded (defaults: `graph_rescue`'s).
    pub rescue: RescueConfig,
}

impl Checked for RescueOracle {
    fn check(&self, c: &Check<'_>) -> Result<(), LegError> {
        self.rescue.check(c)
    }
}

crate::leaf_params!(RescueOracle);

impl LegKind for RescueOracle {
    const NAME: &'static str = "rescue_oracle";
    const ABOUT: &'static str = "bound: graph_rescue's union with rescued gold promoted to the front";
    const ROLE: Role = Role::Oracle;

    fn build(&self, b: &Build<'_>) -> Result<Box<dyn Leg>, LegError> {
        let ranking = Oracle::new(b.export, self.rescue.clone(), OracleKind::Rescue)?;
        Ok(Ranked::leg(b.export, ranking))
    }
}
