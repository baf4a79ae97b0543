//! `cdr`: coverage-differential retrieval, one-shot: relevance (cosine to the query) x
//! novelty, facts below the relevance floor excluded, a `fact_budget` envelope.

use super::{Build, LegKind};
use crate::cdgr::{CdgrConfig, CdgrLeg, CdgrMode};
use crate::flat_params;
use crate::leg::{Leg, LegError};

flat_params! {
    /// `cdr`'s parameters.
    pub struct Cdr {
        /// Envelope, floors, policy and budget.
        pub cdgr: CdgrConfig,
    }
}

impl LegKind for Cdr {
    const NAME: &'static str = "cdr";
    const ABOUT: &'static str = "coverage-differential retrieval: relevance x novelty above a relevance floor";
    const RANKED_BASE: bool = false;

    fn has_budget(&self) -> bool {
        true
    }

    fn build(&self, b: &Build<'_>) -> Result<Box<dyn Leg>, LegError> {
        Ok(Box::new(CdgrLeg::new(b.leg, b.export, CdgrMode::Cdr, &self.cdgr)?))
    }
}
