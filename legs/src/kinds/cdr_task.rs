//! `cdr_task`: CDR over the published decomposition as a document task (sub-queries in
//! order, delivered facts accumulate); `missing-inputs` where a dataset has no decomposition.

use super::{Build, LegKind};
use crate::cdgr::{CdgrConfig, CdgrLeg, CdgrMode};
use crate::flat_params;
use crate::leg::{Leg, LegError};

flat_params! {
    /// `cdr_task`'s parameters.
    pub struct CdrTask {
        /// Envelope, floors, policy and budget.
        pub cdgr: CdgrConfig,
    }
}

impl LegKind for CdrTask {
    const NAME: &'static str = "cdr_task";
    const ABOUT: &'static str = "CDR over the published decomposition as a document task";
    const RANKED_BASE: bool = false;

    fn has_budget(&self) -> bool {
        true
    }

    fn build(&self, b: &Build<'_>) -> Result<Box<dyn Leg>, LegError> {
        Ok(Box::new(CdgrLeg::new(b.leg, b.export, CdgrMode::CdrTask, &self.cdgr)?))
    }
}
