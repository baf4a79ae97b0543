//! `conv_full_history`: the hybrid on every turn of the conversation concatenated into one
//! query (newest first by default, so the embedder's token window keeps the question).

use serde::{Deserialize, Serialize};

use crate::conversation::session::{ConvMode, HistoryOrder};
use crate::first_stage::FirstStage;
use crate::leg::LegError;
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

super::conversation_kind!(ConvFullHistory, "conv_full_history", "conversations: the hybrid on every turn concatenated");
