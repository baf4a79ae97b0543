//! Tier blend (spec §5.3): tier weights and the CDR novelty policy per intent, plus the Tier E
//! interface.

use serde::{Deserialize, Serialize};

use super::intent::Intent;

/// CDR novelty policy of a blend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Novelty {
    /// Novelty weighting on (new facts help).
    On,
    /// Novelty weighting off (revisiting is the point). The spec's TOOL_REFERENCE row says
    /// "N/A" in its table and `False` in its code; both mean "not applied", stored as `Off`.
    Off,
    /// Extend, do not repeat.
    Partial,
}

/// Tier weights of one turn's envelope: P (persistent knowledge), C (conversation), E
/// (ephemeral/tool). They sum to 1.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Blend {
    /// Tier P weight.
    pub p: f32,
    /// Tier C weight.
    pub c: f32,
    /// Tier E weight. Kept although Tier E has no data in this project (see [`EphemeralSource`]).
    pub e: f32,
    /// CDR novelty policy.
    pub cdr_novelty: Novelty,
}

impl Blend {
    const fn new(p: f32, c: f32, e: f32, cdr_novelty: Novelty) -> Self {
        Self {
            p,
            c,
            e,
            cdr_novelty,
        }
    }

    /// `p + c + e`.
    pub fn sum(&self) -> f32 {
        self.p + self.c + self.e
    }

    /// The `CRP-Context-Tier-Blend` value: P/C/E as rounded percentages, e.g. `30/65/5`.
    pub fn header(&self) -> String {
        let pct = |w: f32| (w * 100.0).round() as i64;
        format!("{}/{}/{}", pct(self.p), pct(self.c), pct(self.e))
    }
}

/// The per-intent blend table; defaults are the spec's `INTENT_BLENDS` numbers exactly.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BlendTable {
    /// EXPLORE blend (spec 0.70/0.25/0.05, novelty on).
    pub explore: Blend,
    /// DRILL_DOWN blend (spec 0.30/0.65/0.05, novelty off).
    pub drill_down: Blend,
    /// CLARIFY blend (spec 0.20/0.75/0.05, novelty off).
    pub clarify: Blend,
    /// CONTINUE blend (spec 0.50/0.40/0.10, novelty partial).
    pub r#continue: Blend,
    /// TOOL_REFERENCE blend (spec 0.20/0.30/0.50, novelty n/a = off).
    pub tool_reference: Blend,
}

impl Default for BlendTable {
    fn default() -> Self {
        Self {
            explore: Blend::new(0.70, 0.25, 0.05, Novelty::On),
            drill_down: Blend::new(0.30, 0.65, 0.05, Novelty::Off),
            clarify: Blend::new(0.20, 0.75, 0.05, Novelty::Off),
            r#continue: Blend::new(0.50, 0.40, 0.10, Novelty::Partial),
            tool_reference: Blend::new(0.20, 0.30, 0.50, Novelty::Off),
        }
    }
}

impl BlendTable {
    /// The blend for an intent.
    pub fn get(&self, intent: Intent) -> Blend {
        match intent {
            Intent::Explore => self.explore,
            Intent::DrillDown => self.drill_down,
            Intent::Clarify => self.clarify,
            Intent::Continue => self.r#continue,
            Intent::ToolReference => self.tool_reference,
        }
    }

    /// Check that every row's weights are non-negative and sum to 1 (within 1e-4).
    pub fn validate(&self) -> Result<(), BlendError> {
        for intent in Intent::ALL {
            let b = self.get(intent);
            if b.p < 0.0 || b.c < 0.0 || b.e < 0.0 || (b.sum() - 1.0).abs() > 1e-4 {
                return Err(BlendError {
                    intent,
                    sum: b.sum(),
                });
            }
        }
        Ok(())
    }
}

/// A blend table row that is not a distribution over the tiers: a negative weight, or weights
/// not summing to 1. The first such row (in [`Intent::ALL`] order) is reported.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
#[error(
    "blend for {} must be non-negative and sum to 1, got {sum}",
    .intent.as_str()
)]
pub struct BlendError {
    /// The intent whose row is off.
    pub intent: Intent,
    /// That row's `p + c + e`.
    pub sum: f32,
}

/// One item of ephemeral (tool/working) context.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EphemeralItem {
    /// Scratch buffer id.
    pub id: String,
    /// Tool or output type.
    pub kind: String,
    /// The content.
    pub text: String,
}

/// Tier E source (the SPEC-029 scratch buffer). This project has no tool outputs, so the only
/// implementation is [`NoEphemeral`], which returns nothing; the Tier E weight stays in the blend
/// table so a later source can fill it.
pub trait EphemeralSource {
    /// Most recent items, newest first, optionally of one kind.
    fn most_recent(&self, kind: Option<&str>, limit: usize) -> Vec<EphemeralItem>;
}

/// The empty Tier E source.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NoEphemeral;

impl EphemeralSource for NoEphemeral {
    fn most_recent(&self, _kind: Option<&str>, _limit: usize) -> Vec<EphemeralItem> {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_sum_to_one_for_every_intent() {
        let t = BlendTable::default();
        for i in Intent::ALL {
            assert!((t.get(i).sum() - 1.0).abs() < 1e-6, "{}", i.as_str());
        }
        assert!(t.validate().is_ok());
        assert_eq!(t.get(Intent::DrillDown).header(), "30/65/5");
        assert_eq!(t.get(Intent::Continue).cdr_novelty, Novelty::Partial);
        assert_eq!(t.get(Intent::Explore).cdr_novelty, Novelty::On);
    }

    #[test]
    fn bad_table_rejected_and_config_roundtrips() {
        let mut t = BlendTable::default();
        t.clarify.p = 0.5;
        assert_eq!(
            t.validate().unwrap_err().to_string(),
            format!(
                "blend for CLARIFY must be non-negative and sum to 1, got {}",
                t.clarify.sum()
            )
        );
        let d: BlendTable = serde_json::from_str("{}").unwrap();
        assert_eq!(d, BlendTable::default());
        assert!(serde_json::from_str::<BlendTable>(r#"{"bogus": 1}"#).is_err());
    }

    #[test]
    fn empty_tier_e() {
        assert!(NoEphemeral.most_recent(None, 5).is_empty());
    }
}
