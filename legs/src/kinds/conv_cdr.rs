//! `conv_cdr`: the hybrid on the current turn with CDR novelty always on against what the
//! earlier turns delivered (what SPEC-028 predicts hurts a conversation).


use crate::conversation::session::{ConvMode, Delivered};
use crate::first_stage::FirstStage;
use crate::flat_params;

flat_params! {
    /// `conv_cdr`'s parameters.
    pub struct ConvCdr {
        /// The hybrid first stage (and the ranking's length).
        pub first: FirstStage,
        /// What each earlier turn delivered.
        pub delivered: Delivered,
    }
}

impl ConvCdr {
    fn mode(&self) -> ConvMode {
        ConvMode::Cdr {
            delivered_k: self.delivered.delivered_k,
        }
    }
}

super::conversation_kind!(ConvCdr, "conv_cdr", "conversations: the hybrid on the current turn, CDR novelty always on");
