//! `conv_last_turn`: the hybrid on the current user turn alone (identical to `bm25` on that
//! text); `missing-inputs` on datasets without conversations.

use super::{Build, LegKind};
use crate::conversation::session::{ConvLeg, ConvMode};
use crate::first_stage::FirstStage;
use crate::flat_params;
use crate::leg::{Leg, LegError};

flat_params! {
    /// `conv_last_turn`'s parameters.
    pub struct ConvLastTurn {
        /// The hybrid first stage (Tier P).
        pub first: FirstStage,
    }
}

impl LegKind for ConvLastTurn {
    const NAME: &'static str = "conv_last_turn";
    const ABOUT: &'static str = "conversations: the hybrid on the current user turn alone";

    fn build(&self, b: &Build<'_>) -> Result<Box<dyn Leg>, LegError> {
        ConvLeg::leg(b.export, ConvMode::LastTurn, &self.first, b.vectors.clone())
    }

    fn reads_conversation(&self) -> bool {
        true
    }
}
