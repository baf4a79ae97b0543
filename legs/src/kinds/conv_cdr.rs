//! `conv_cdr`: the hybrid on the current turn with CDR novelty always on against what the
//! earlier turns delivered (what SPEC-028 predicts hurts a conversation).

use hopbench_datasets::export::Export;

use super::{Build, LegKind};
use crate::conversation::session::{texts_to_embed, ConvLeg, ConvMode, Delivered};
use crate::first_stage::FirstStage;
use crate::flat_params;
use crate::leg::{Leg, LegError};

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

impl LegKind for ConvCdr {
    const NAME: &'static str = "conv_cdr";
    const ABOUT: &'static str = "conversations: the hybrid on the current turn, CDR novelty always on";

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
