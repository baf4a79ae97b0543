//! `cdgr_task`: CDGR over the published decomposition as a document task; `missing-inputs`
//! where a dataset has no decomposition.

use super::{Build, LegKind};
use crate::cdgr::{CdgrConfig, CdgrLeg, CdgrMode};
use crate::flat_params;
use crate::leg::{Leg, LegError};
use hopbench_datasets::export::Parts;

flat_params! {
    /// `cdgr_task`'s parameters.
    pub struct CdgrTask {
        /// Envelope, floors, policy and budget.
        pub cdgr: CdgrConfig,
    }
}

impl LegKind for CdgrTask {
    const NAME: &'static str = "cdgr_task";
    const ABOUT: &'static str = "CDGR over the published decomposition as a document task";
    const RANKED_BASE: bool = false;

    fn has_budget(&self) -> bool {
        true
    }

    fn reads(&self) -> Parts {
        self.cdgr.reads(CdgrMode::CdgrTask)
    }

    fn build(&self, b: &Build<'_>) -> Result<Box<dyn Leg>, LegError> {
        Ok(Box::new(CdgrLeg::new(b.leg, b.export, CdgrMode::CdgrTask, &self.cdgr)?))
    }
}
