//! Per-turn intent classification (spec §5.2), in the spec's rule order.

use serde::{Deserialize, Serialize};

use super::references::{Reference, ReferenceKind};

/// The spec's five conversational intents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Intent {
    /// New topic, no references.
    Explore,
    /// Reference to prior content.
    DrillDown,
    /// "what do you mean", "explain again".
    Clarify,
    /// "go on", "more", or same thread without references.
    Continue,
    /// Reference to a tool output.
    ToolReference,
}

impl Intent {
    /// All intents, in spec table order.
    pub const ALL: [Intent; 5] = [
        Intent::Explore,
        Intent::DrillDown,
        Intent::Clarify,
        Intent::Continue,
        Intent::ToolReference,
    ];

    /// The spec's name (`EXPLORE`, `DRILL_DOWN`, ...), as used in `CRP-Context-Turn-Intent`.
    pub fn as_str(self) -> &'static str {
        match self {
            Intent::Explore => "EXPLORE",
            Intent::DrillDown => "DRILL_DOWN",
            Intent::Clarify => "CLARIFY",
            Intent::Continue => "CONTINUE",
            Intent::ToolReference => "TOOL_REFERENCE",
        }
    }
}

/// Which rule of the spec's procedure decided the intent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IntentRule {
    /// 1: a resolved tool reference → TOOL_REFERENCE.
    ToolReference,
    /// 2: a clarify marker → CLARIFY.
    ClarifyMarker,
    /// 3: any other resolved reference → DRILL_DOWN.
    Reference,
    /// 4: a continue marker → CONTINUE.
    ContinueMarker,
    /// 5: similarity to the active thread below the threshold (or no active thread) → EXPLORE.
    LowTopicSimilarity,
    /// 6: otherwise (same thread) → CONTINUE.
    SameThread,
}

/// Classifier settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct IntentConfig {
    /// Max similarity to the active thread's turns below this → EXPLORE (spec 0.50).
    pub explore_threshold: f32,
    /// Clarify phrases, matched on whole words, case-insensitively.
    pub clarify_markers: Vec<String>,
    /// Continue phrases, matched on whole words, case-insensitively.
    pub continue_markers: Vec<String>,
}

impl Default for IntentConfig {
    fn default() -> Self {
        let v = |xs: &[&str]| xs.iter().map(|s| s.to_string()).collect();
        Self {
            explore_threshold: 0.50,
            clarify_markers: v(&[
                "what do you mean",
                "what did you mean",
                "what does that mean",
                "explain",
                "again",
                "clarify",
                "rephrase",
                "i don't understand",
                "i do not understand",
                "in other words",
            ]),
            continue_markers: v(&[
                "go on",
                "and then",
                "more",
                "continue",
                "keep going",
                "what else",
                "what next",
            ]),
        }
    }
}

/// Lower-case word sequence of a text (letters, digits and apostrophes; `’` folded to `'`).
fn words(text: &str) -> Vec<String> {
    text.to_lowercase()
        .replace('’', "'")
        .split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

/// True when `phrase` occurs in `text` as a whole-word sequence.
pub fn has_phrase(text: &str, phrase: &str) -> bool {
    let t = words(text);
    let p = words(phrase);
    !p.is_empty() && t.windows(p.len()).any(|w| w == p.as_slice())
}

/// Classify a turn. `references` are the current turn's (only resolved ones count: an unresolved
/// "it" in an opening turn refers to nothing prior); `topic_similarity` is the max cosine of the
/// current turn to the active thread's turns, `None` when there is no active thread.
pub fn classify(
    text: &str,
    references: &[Reference],
    topic_similarity: Option<f32>,
    config: &IntentConfig,
) -> (Intent, IntentRule) {
    let resolved = || references.iter().filter(|r| r.resolved_to.is_some());
    if resolved().any(|r| r.kind == ReferenceKind::Tool) {
        return (Intent::ToolReference, IntentRule::ToolReference);
    }
    if config.clarify_markers.iter().any(|m| has_phrase(text, m)) {
        return (Intent::Clarify, IntentRule::ClarifyMarker);
    }
    if resolved().next().is_some() {
        return (Intent::DrillDown, IntentRule::Reference);
    }
    if config.continue_markers.iter().any(|m| has_phrase(text, m)) {
        return (Intent::Continue, IntentRule::ContinueMarker);
    }
    match topic_similarity {
        Some(s) if s >= config.explore_threshold => (Intent::Continue, IntentRule::SameThread),
        _ => (Intent::Explore, IntentRule::LowTopicSimilarity),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::references::Resolution;

    fn r(kind: ReferenceKind) -> Reference {
        Reference {
            kind,
            surface: "x".into(),
            resolved_to: Some(Resolution::Turn(0)),
            source_turn: Some(0),
            span: (0, 1),
        }
    }
    fn c() -> IntentConfig {
        IntentConfig::default()
    }

    #[test]
    fn tool_reference_first() {
        let refs = [r(ReferenceKind::Entity), r(ReferenceKind::Tool)];
        assert_eq!(
            classify("explain the result", &refs, Some(0.9), &c()),
            (Intent::ToolReference, IntentRule::ToolReference)
        );
    }

    #[test]
    fn clarify_before_references() {
        let refs = [r(ReferenceKind::Entity)];
        assert_eq!(
            classify("What do you mean by it?", &refs, Some(0.9), &c()),
            (Intent::Clarify, IntentRule::ClarifyMarker)
        );
    }

    #[test]
    fn reference_is_drill_down() {
        let refs = [r(ReferenceKind::Ordinal)];
        assert_eq!(
            classify(
                "tell me more about the second option",
                &refs,
                Some(0.1),
                &c()
            ),
            (Intent::DrillDown, IntentRule::Reference)
        );
        let mut unresolved = r(ReferenceKind::Entity);
        unresolved.resolved_to = None;
        assert_eq!(
            classify("what is it", &[unresolved], None, &c()).0,
            Intent::Explore
        );
    }

    #[test]
    fn continue_marker() {
        assert_eq!(
            classify("Go on, please", &[], Some(0.1), &c()),
            (Intent::Continue, IntentRule::ContinueMarker)
        );
        // whole words only: "furthermore" is not "more"
        assert_eq!(
            classify("furthermore", &[], Some(0.1), &c()).0,
            Intent::Explore
        );
    }

    #[test]
    fn explore_by_low_similarity_and_continue_by_same_thread() {
        assert_eq!(
            classify("How do volcanoes form", &[], Some(0.49), &c()),
            (Intent::Explore, IntentRule::LowTopicSimilarity)
        );
        assert_eq!(
            classify("How do volcanoes form", &[], None, &c()),
            (Intent::Explore, IntentRule::LowTopicSimilarity)
        );
        assert_eq!(
            classify("How do volcanoes form", &[], Some(0.50), &c()),
            (Intent::Continue, IntentRule::SameThread)
        );
    }
}
