//! `conv_last_turn`: the hybrid on the current user turn alone (identical to `bm25` on that
//! text); `missing-inputs` on datasets without conversations.

use crate::conversation::session::ConvMode;
use crate::first_stage::FirstStage;
use crate::flat_params;

flat_params! {
    /// `conv_last_turn`'s parameters.
    pub struct ConvLastTurn {
        /// The hybrid first stage (Tier P).
        pub first: FirstStage,
    }
}

impl ConvLastTurn {
    fn mode(&self) -> ConvMode {
        ConvMode::LastTurn
    }
}

super::conversation_kind!(ConvLastTurn, "conv_last_turn", "conversations: the hybrid on the current user turn alone");
