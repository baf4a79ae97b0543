//! `graph_rescue`: the seed's central system. The hybrid base; when the gate fires, the
//! Expander rescore and both graph lanes (RRF-fused with each other only), appended below the
//! whole base and rescored `1/(rank_score_k + rank)`; selector `none`.

use super::{Build, LegKind};
use crate::flat_params;
use crate::leg::{Leg, LegError, Ranked};
use crate::rescue::{self, RescueConfig};

flat_params! {
    /// `graph_rescue`'s parameters (every stage's group, flat).
    pub struct GraphRescue {
        /// The pipeline.
        pub rescue: RescueConfig,
    }
}

impl LegKind for GraphRescue {
    const NAME: &'static str = "graph_rescue";
    const ABOUT: &'static str =
        "hybrid base, gated Expander, graph lanes appended below the base; selector none";

    fn build(&self, b: &Build<'_>) -> Result<Box<dyn Leg>, LegError> {
        let ranking = rescue::GraphRescue::new(b.export, self.rescue.clone())?;
        Ok(Ranked::leg(b.export, ranking))
    }
}
