//! `multi_horizon`: SPEC-028's assembler over the hybrid: references resolved into the query,
//! the intent classified, tiers blended per intent (see [`crate::conversation::session`]).

use serde::{Deserialize, Serialize};

use crate::conversation::session::{ConvMode, Delivered};
use crate::conversation::ConversationConfig;
use crate::first_stage::FirstStage;
use crate::leg::LegError;
use crate::params::{Check, Checked};
use crate::{flat_params, leaf_params};

/// The assembler's own parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Assembler {
    /// Strength of `Partial` novelty: a repeat's score is multiplied by `1 - partial_novelty`.
    pub partial_novelty: f32,
    /// Turn log, threads, intent markers and the blend table.
    pub conversation: ConversationConfig,
}

impl Default for Assembler {
    fn default() -> Self {
        Assembler {
            partial_novelty: 0.5,
            conversation: ConversationConfig::default(),
        }
    }
}

impl Checked for Assembler {
    /// Range checks, including the blend table (non-negative weights summing to 1).
    fn check(&self, c: &Check<'_>) -> Result<(), LegError> {
        c.unit("partial_novelty", f64::from(self.partial_novelty))?;
        let conv = &self.conversation;
        // a half-life of 0 weighs every turn but the newest as 0: no history at all
        c.positive(
            "conversation.turn_log.half_life",
            f64::from(conv.turn_log.half_life),
        )?;
        c.unit(
            "conversation.threads.join_threshold",
            f64::from(conv.threads.join_threshold),
        )?;
        c.range(
            "conversation.intent.explore_threshold",
            f64::from(conv.intent.explore_threshold),
            -1.0,
            1.0,
        )?;
        conv.validate()
            .or_else(|e| c.fail("conversation.blend", &e.to_string()))
    }
}

leaf_params!(Assembler);

flat_params! {
    /// `multi_horizon`'s parameters.
    pub struct MultiHorizon {
        /// The hybrid first stage (Tier P, and the ranking's length).
        pub first: FirstStage,
        /// What each earlier turn delivered.
        pub delivered: Delivered,
        /// The assembler.
        pub assembler: Assembler,
    }
}

impl MultiHorizon {
    fn mode(&self) -> ConvMode {
        ConvMode::MultiHorizon {
            delivered_k: self.delivered.delivered_k,
            partial_novelty: self.assembler.partial_novelty,
            conversation: Box::new(self.assembler.conversation.clone()),
        }
    }
}

super::conversation_kind!(MultiHorizon, "multi_horizon", "conversations: SPEC-028's assembler (references, intent, tier blend)");
