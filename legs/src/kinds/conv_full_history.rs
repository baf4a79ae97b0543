//! `conv_full_history`: the hybrid on every turn of the conversation concatenated into one
//! query (newest first by default, so the embedder's token window keeps the question).

use hopbench_datasets::export::Export;
use serde::{Deserialize, Serialize};

use super::{Build, LegKind};
use crate::conversation::session::{texts_to_embed, ConvLeg, ConvMode, HistoryOrder};
use crate::first_stage::FirstStage;
use crate::leg::{Leg, LegError};
use crate::params::{Check, Checked};
use crate::{flat_params, leaf_params};

/// `order`: the turn order of the concatenation.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Order {
    /// Turn order in the concatenation.
    pub order: HistoryOrder,
}

impl Checked for Order {
    fn check(&self, _c: &Check<'_>) -> Result<(), LegError> {
        Ok(())
    }
}

leaf_params!(Order);

flat_params! {
    /// `conv_full_history`'s parameters.
    pub struct ConvFullHistory {
        /// The hybrid first stage.
        pub first: FirstStage,
        /// The concatenation's order.
        pub order: Order,
    }
}

impl ConvFullHistory {
    fn mode(&self) -> ConvMode {
        ConvMode::FullHistory(self.order.order)
    }
}

impl LegKind for ConvFullHistory {
    const NAME: &'static str = "conv_full_history";
    const ABOUT: &'static str = "conversations: the hybrid on every turn concatenated";

    fn build(&self, b: &Build<'_>) -> Result<Box<dyn Leg>, LegError> {
        ConvLeg::leg(b.export, self.mode(), &self.first, b.vectors.clone())
    }

    fn texts_to_embed(&self, export: &Export) -> Vec<String> {
        texts_to_embed(export, &self.mode())
    }

    fn reads_conversation(&self) -> bool {
        true
    }
}
