//! `cdgr`: coverage-differential graph retrieval, one-shot: CDR anchors, a walk over the
//! similarity graph, connectors by bridge value, a chain-ordered envelope.

use super::{Build, LegKind};
use crate::cdgr::{CdgrConfig, CdgrLeg, CdgrMode};
use crate::flat_params;
use crate::leg::{Leg, LegError};
use hopbench_datasets::export::Parts;

flat_params! {
    /// `cdgr`'s parameters.
    pub struct Cdgr {
        /// Envelope, floors, policy and budget.
        pub cdgr: CdgrConfig,
    }
}

impl LegKind for Cdgr {
    const NAME: &'static str = "cdgr";
    const ABOUT: &'static str = "CDGR: CDR anchors, a similarity-graph walk, connectors by bridge value";
    const RANKED_BASE: bool = false;

    fn has_budget(&self) -> bool {
        true
    }

    fn reads(&self) -> Parts {
        self.cdgr.reads(CdgrMode::Cdgr)
    }

    fn build(&self, b: &Build<'_>) -> Result<Box<dyn Leg>, LegError> {
        Ok(Box::new(CdgrLeg::new(b.leg, b.export, CdgrMode::Cdgr, &self.cdgr)?))
    }
}
