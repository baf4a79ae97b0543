//! Multi-horizon conversational retrieval (CRP-SPEC-028), the per-turn planning core.
//!
//! # What the spec asks
//!
//! SPEC-028 splits context into three tiers: **P** (persistent knowledge, retrieved with
//! CDR/CDGR), **C** (the conversation's turn log, retrieved by recency and reference
//! resolution) and **E** (ephemeral tool output, SPEC-029). Each turn, an assembler classifies
//! the current user turn into one of five intents (`EXPLORE`, `DRILL_DOWN`, `CLARIFY`,
//! `CONTINUE`, `TOOL_REFERENCE`) with a fixed rule order (§5.2), and the intent picks the tier
//! weights and whether CDR novelty is on, off or partial (§5.3). Conversational turns decay with
//! a 6-turn half-life (§3.2) unless a reference pulls them back at full weight (§4.2); turns
//! cluster into topic threads that go dormant and resume (§3.3); the response carries the
//! `CRP-Context-*` headers (§7).
//!
//! This module computes that plan ([`assemble`] → [`TurnPlan`]) from a conversation and a
//! caller-supplied embedding function; it loads no model and retrieves nothing. The legs take
//! [`TurnPlan::query_text`] (the current turn with references substituted) plus the blend.
//!
//! * [`turnlog`]: Tier C store and recency `0.5^(age / half_life)`, age in turns from the
//!   current turn.
//! * [`threads`]: topic threads by cosine of a user turn to each thread centroid.
//! * [`references`]: entity, turn, ordinal and tool references, resolved and substituted.
//! * [`intent`]: the spec's classifier, recording which rule fired.
//! * [`blend`]: the spec's blend table (its numbers, exactly) and the Tier E interface.
//!
//! # Choices where the spec is silent (or disagrees with the brief)
//!
//! * **Join threshold.** The spec says similarity `> 0.70`; this project's brief says `≥ 0.70`.
//!   We join at `≥` ([`threads::ThreadConfig::join_threshold`], configurable).
//! * **Centroid.** Mean of the member *user* turn vectors, not re-normalised; similarity is
//!   `dot(v, c) / |c|`. Only user turns are threaded; an agent turn is attached to the thread that
//!   was active when it was spoken (the spec's example puts assistant turns in threads) without
//!   moving the centroid. "Dormant" means "not the active thread"; joining a dormant thread
//!   restores it. Ties go to the lowest thread id; ids are `0, 1, ...`, labelled `thread-<id>`.
//! * **Topic similarity for the classifier** (spec `max_similarity(current, active_thread_turns)`):
//!   the max dot product of the current turn to every member turn (user and agent) of the thread
//!   that was active *before* the current turn is threaded. No active thread (the first turn)
//!   counts as below the 0.50 threshold, so it is `EXPLORE`.
//! * **Which references count for intent.** Only resolved ones: an "it" in an opening turn refers
//!   to nothing prior. Markers match as whole-word phrases, case-insensitively (the spec's
//!   substring test would make "furthermore" a continue marker); marker lists are configurable.
//! * **Reference resolution.** Entities are runs of capitalised words minus a stop list of
//!   function words and common sentence openers. Entity references ("it", "he", "she", "they",
//!   "them", "him", "this/that/these/those" + noun, or a bare demonstrative before punctuation)
//!   resolve to the most recent entity mention in earlier turns (latest turn, last mention). Turn
//!   references ("what you said earlier", "your last answer", ...) resolve to the last agent turn;
//!   "the previous question" / "my last question" to the last earlier user turn. Ordinals ("the
//!   second option", "the first one", "#2", "option 2") take the k-th item of the most recent
//!   agent turn with an enumerated list (`1.`, `1)`, `-`, `*`, `•` lines), else the k-th distinct
//!   entity of the previous turn. Tool references resolve to the last agent turn, since this
//!   project has no tool outputs. The spec's "action reference" ("do it again") is handled as an
//!   entity reference on "it". In the rewritten query a turn-valued resolution is replaced by
//!   that turn's full text.
//! * **Tier C weights** ([`TurnPlan::tier_c`]): a referenced turn gets 1.0 (§4.2); a member of the
//!   active thread gets the larger of its recency and its recency counted in thread members
//!   (so a resumed thread's turns come back as if recent, §3.3); other turns get plain recency.
//! * **Tier E** has no data here. Its weight stays in the table (spec numbers) and its interface
//!   is [`blend::EphemeralSource`], implemented only by [`blend::NoEphemeral`], which returns
//!   nothing. `TOOL_REFERENCE`'s novelty ("N/A" in the spec table, `False` in its code) is `Off`.
//! * **Context mode.** `conversation`, or `hybrid` when the turn contains a document-task marker
//!   ("write me a guide", ...; configurable). `document` is never produced here.
//! * **Not implemented**: the spec's ThreadState summary fields (established facts, open
//!   questions, user constraints) need an LLM or extractor; timestamps and session ids; packing.

pub mod blend;
pub mod intent;
pub mod references;
pub mod session;
pub mod threads;
pub mod turnlog;

use hopbench_datasets::Turn;
use serde::{Deserialize, Serialize};

use hopbench_datasets::vector::dot;

use crate::leg::Note;
use blend::{Blend, BlendError, BlendTable};
use intent::{Intent, IntentConfig, IntentRule};
use references::Reference;
use threads::{Thread, ThreadConfig, ThreadEvent, Threads};
use turnlog::{recency_weight, TurnLog, TurnLogConfig};

/// Everything [`assemble`] needs besides the conversation and the embedder.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ConversationConfig {
    /// Turn log (recency half-life).
    pub turn_log: TurnLogConfig,
    /// Topic threading.
    pub threads: ThreadConfig,
    /// Intent classifier.
    pub intent: IntentConfig,
    /// Per-intent blends.
    pub blend: BlendTable,
    /// Phrases (whole words, case-insensitive) that make the turn a document task inside the
    /// conversation, i.e. `CRP-Context-Mode: hybrid`.
    pub hybrid_markers: Vec<String>,
}

impl Default for ConversationConfig {
    fn default() -> Self {
        Self {
            turn_log: TurnLogConfig::default(),
            threads: ThreadConfig::default(),
            intent: IntentConfig::default(),
            blend: BlendTable::default(),
            hybrid_markers: [
                "write me a guide",
                "write a guide",
                "write a report",
                "write me a report",
                "write a document",
                "write an article",
                "draft a document",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
        }
    }
}

impl ConversationConfig {
    /// Check the blend table (weights non-negative, summing to 1).
    pub fn validate(&self) -> Result<(), BlendError> {
        self.blend.validate()
    }
}

/// The `CRP-Context-Mode` value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ContextMode {
    /// Dialogue; multi-horizon blend active.
    Conversation,
    /// A document task within a conversation.
    Hybrid,
}

impl ContextMode {
    /// Header value.
    pub fn as_str(self) -> &'static str {
        match self {
            ContextMode::Conversation => "conversation",
            ContextMode::Hybrid => "hybrid",
        }
    }
}

/// Why a Tier C turn has its weight.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WeightReason {
    /// Plain recency decay.
    Recency,
    /// Member of the active thread (thread-local recency won).
    ActiveThread,
    /// Target of a resolved reference: full weight.
    Referenced,
}

/// Tier C weight of one earlier turn.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TurnWeight {
    /// Turn index.
    pub index: usize,
    /// Weight in (0, 1].
    pub weight: f32,
    /// Where the weight came from.
    pub reason: WeightReason,
}

/// The plan for one turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnPlan {
    /// The current turn with resolved references substituted: what the legs retrieve with.
    pub query_text: String,
    /// Classified intent.
    pub intent: Intent,
    /// The rule that decided it.
    pub intent_rule: IntentRule,
    /// Max similarity to the previously active thread's turns (`None` if there was none).
    pub topic_similarity: Option<f32>,
    /// Referential expressions of the current turn.
    pub references: Vec<Reference>,
    /// Active thread after threading the current turn.
    pub active_thread: Option<usize>,
    /// What threading the current turn did (started, joined, resumed a dormant thread).
    pub thread_event: Option<ThreadEvent>,
    /// Every thread's state after the current turn.
    pub threads: Vec<Thread>,
    /// Tier weights and novelty policy for this intent.
    pub blend: Blend,
    /// Conversation or hybrid.
    pub mode: ContextMode,
    /// Tier C weights of the earlier turns, oldest first.
    pub tier_c: Vec<TurnWeight>,
    /// The spec's per-turn response headers (name, value), in spec order: Tier-Blend,
    /// Turn-Intent, References-Resolved, Active-Thread, Context-Mode.
    pub headers: Vec<(Note, String)>,
}

impl TurnPlan {
    /// Value of a header.
    pub fn header(&self, name: Note) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// The current (last) turn's text with its references resolved against the earlier turns: the
/// [`TurnPlan::query_text`] that [`assemble`] will produce, computed without vectors (reference
/// resolution reads text only). The harness uses it to know which texts to embed before a run.
pub fn rewritten_query(conversation: &[Turn]) -> String {
    let log = TurnLog::build(conversation, &|_| Vec::new(), &TurnLogConfig::default());
    match log.turns.last() {
        Some(t) => references::resolve(&t.text, log.history()).query_text,
        None => String::new(),
    }
}

/// Plan the current (last) turn of `conversation`. `embed` must return L2-normalised vectors of
/// one dimension; it is called once per turn. An empty conversation gives an empty `EXPLORE` plan.
pub fn assemble(
    conversation: &[Turn],
    embed: &dyn Fn(&str) -> Vec<f32>,
    config: &ConversationConfig,
) -> TurnPlan {
    let log = TurnLog::build(conversation, embed, &config.turn_log);
    let history = log.history();
    let mut threads = Threads::build(history, &config.threads);

    let (text, vector) = match log.turns.last() {
        Some(t) => (t.text.as_str(), t.vector.as_slice()),
        None => ("", &[][..]),
    };
    let topic_similarity = threads.active_thread().map(|th| {
        th.members
            .iter()
            .map(|&m| {
                let v = &log.turns[m].vector;
                if v.len() == vector.len() {
                    dot(vector, v)
                } else {
                    0.0
                }
            })
            .fold(f32::NEG_INFINITY, f32::max)
    });
    let topic_similarity = topic_similarity.filter(|s| s.is_finite());
    let resolved = references::resolve(text, history);
    let (intent, intent_rule) =
        intent::classify(text, &resolved.references, topic_similarity, &config.intent);

    if let Some(current) = log.turns.last() {
        threads.add(current, &config.threads);
    }
    let blend = config.blend.get(intent);
    let mode = if config
        .hybrid_markers
        .iter()
        .any(|m| intent::has_phrase(text, m))
    {
        ContextMode::Hybrid
    } else {
        ContextMode::Conversation
    };

    let active_members: &[usize] = threads
        .active_thread()
        .map_or(&[], |t| t.members.as_slice());
    let tier_c = history
        .iter()
        .map(|t| {
            let base = log.recency(t.index);
            if resolved
                .references
                .iter()
                .any(|r| r.resolved_to.is_some() && r.source_turn == Some(t.index))
            {
                return TurnWeight {
                    index: t.index,
                    weight: 1.0,
                    reason: WeightReason::Referenced,
                };
            }
            if let Some(pos) = active_members.iter().position(|&m| m == t.index) {
                let thread_age = active_members.len() - 1 - pos;
                let local = recency_weight(thread_age, log.half_life);
                if local > base {
                    return TurnWeight {
                        index: t.index,
                        weight: local,
                        reason: WeightReason::ActiveThread,
                    };
                }
            }
            TurnWeight {
                index: t.index,
                weight: base,
                reason: WeightReason::Recency,
            }
        })
        .collect();

    let active_label = threads
        .active_thread()
        .map_or_else(|| "none".to_string(), Thread::label);
    let headers = vec![
        (Note::TierBlend, blend.header()),
        (Note::TurnIntent, intent.as_str().to_string()),
        (
            Note::ReferencesResolved,
            resolved.resolved_count().to_string(),
        ),
        (Note::ActiveThread, active_label),
        (Note::Mode, mode.as_str().to_string()),
    ];
    TurnPlan {
        query_text: resolved.query_text,
        intent,
        intent_rule,
        topic_similarity,
        references: resolved.references,
        active_thread: threads.active,
        thread_event: threads.last_event,
        threads: threads.threads,
        blend,
        mode,
        tier_c,
        headers,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::references::ReferenceKind;

    fn conv(turns: &[(&str, &str)]) -> Vec<Turn> {
        turns
            .iter()
            .map(|(s, t)| Turn {
                speaker: s.to_string(),
                text: t.to_string(),
            })
            .collect()
    }

    /// Toy embedder: 3 topic axes by keyword (etcd, backup, cooking), normalised; no keyword →
    /// a fourth axis.
    fn embed(text: &str) -> Vec<f32> {
        let t = text.to_lowercase();
        let mut v = [
            f32::from(u8::from(t.contains("etcd") || t.contains("tls"))),
            f32::from(u8::from(t.contains("backup"))),
            f32::from(u8::from(t.contains("pasta") || t.contains("cook"))),
            0.0,
        ];
        if v.iter().all(|x| *x == 0.0) {
            v[3] = 1.0;
        }
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter().map(|x| x / n).collect()
    }

    fn etcd_conversation(last: &str) -> Vec<Turn> {
        conv(&[
            ("user", "How do I configure etcd?"),
            (
                "agent",
                "Edit the etcd config file. Ask Kubernetes operators.",
            ),
            ("user", "Actually, what's a good backup?"),
            (
                "agent",
                "Use Velero for backup.\n1. Velero\n2. Restic\n3. Kasten",
            ),
            ("user", last),
        ])
    }

    #[test]
    fn headers_present_and_drill_down() {
        let plan = assemble(
            &etcd_conversation("Tell me about the second option"),
            &embed,
            &ConversationConfig::default(),
        );
        assert_eq!(plan.intent, Intent::DrillDown);
        assert_eq!(plan.intent_rule, IntentRule::Reference);
        assert_eq!(plan.query_text, "Tell me about Restic");
        assert_eq!(plan.header(Note::TierBlend), Some("30/65/5"));
        assert_eq!(plan.header(Note::TurnIntent), Some("DRILL_DOWN"));
        assert_eq!(plan.header(Note::ReferencesResolved), Some("1"));
        assert!(plan
            .header(Note::ActiveThread)
            .unwrap()
            .starts_with("thread-"));
        assert_eq!(plan.header(Note::Mode), Some("conversation"));
        assert_eq!(plan.headers.len(), 5);
        let w = plan.tier_c.iter().find(|w| w.index == 3).unwrap();
        assert_eq!((w.weight, w.reason), (1.0, WeightReason::Referenced));
    }

    #[test]
    fn resumed_thread_pulls_back_its_turns() {
        let plan = assemble(
            &etcd_conversation("Back to etcd - what about TLS?"),
            &embed,
            &ConversationConfig::default(),
        );
        assert_eq!(plan.thread_event, Some(ThreadEvent::Resumed));
        assert_eq!(plan.active_thread, Some(0));
        assert_eq!(plan.header(Note::ActiveThread), Some("thread-0"));
        assert!(plan.threads[1].dormant && !plan.threads[0].dormant);
        assert_eq!(plan.threads[0].members, vec![0, 1, 4]);
        // Previously active thread was backup: low similarity → EXPLORE.
        assert_eq!(plan.intent, Intent::Explore);
        assert_eq!(plan.intent_rule, IntentRule::LowTopicSimilarity);
        let w1 = plan.tier_c[1];
        assert_eq!(w1.reason, WeightReason::ActiveThread);
        assert!(w1.weight > 1.0f32.min(0.5f32.powf(3.0 / 6.0)));
    }

    #[test]
    fn each_intent_end_to_end() {
        let cfg = ConversationConfig::default();
        let cases = [
            (
                "Summarise the search results",
                Intent::ToolReference,
                IntentRule::ToolReference,
            ),
            (
                "What do you mean by Restic?",
                Intent::Clarify,
                IntentRule::ClarifyMarker,
            ),
            ("Is it free?", Intent::DrillDown, IntentRule::Reference),
            ("Go on", Intent::Continue, IntentRule::ContinueMarker),
            (
                "How do I cook pasta?",
                Intent::Explore,
                IntentRule::LowTopicSimilarity,
            ),
            (
                "Which backup schedule is best?",
                Intent::Continue,
                IntentRule::SameThread,
            ),
        ];
        for (q, intent, rule) in cases {
            let plan = assemble(&etcd_conversation(q), &embed, &cfg);
            assert_eq!((plan.intent, plan.intent_rule), (intent, rule), "{q}");
            assert_eq!(plan.blend, cfg.blend.get(intent));
        }
        let plan = assemble(&etcd_conversation("Is it free?"), &embed, &cfg);
        assert_eq!(plan.references[0].kind, ReferenceKind::Entity);
        assert_eq!(plan.query_text, "Is Kasten free?");
    }

    #[test]
    fn first_turn_and_empty_and_hybrid() {
        let cfg = ConversationConfig::default();
        let plan = assemble(&conv(&[("user", "What is it?")]), &embed, &cfg);
        assert_eq!(plan.intent, Intent::Explore);
        assert_eq!(plan.header(Note::ReferencesResolved), Some("0"));
        assert_eq!(plan.active_thread, Some(0));
        let plan = assemble(&[], &embed, &cfg);
        assert_eq!(plan.intent, Intent::Explore);
        assert_eq!(plan.header(Note::ActiveThread), Some("none"));
        let plan = assemble(
            &etcd_conversation("Write me a guide about backup"),
            &embed,
            &cfg,
        );
        assert_eq!(plan.mode, ContextMode::Hybrid);
        assert_eq!(plan.header(Note::Mode), Some("hybrid"));
    }

    #[test]
    fn deterministic() {
        let cfg = ConversationConfig::default();
        let c = etcd_conversation("Tell me about the first one and what you said earlier");
        assert_eq!(assemble(&c, &embed, &cfg), assemble(&c, &embed, &cfg));
    }

    #[test]
    fn config_defaults_and_unknown_fields() {
        let c: ConversationConfig = serde_json::from_str("{}").unwrap();
        assert_eq!(c, ConversationConfig::default());
        assert!(c.validate().is_ok());
        let c: ConversationConfig = serde_json::from_str(
            r#"{"turn_log": {"half_life": 3}, "threads": {"join_threshold": 0.8}}"#,
        )
        .unwrap();
        assert_eq!(c.turn_log.half_life, 3.0);
        assert!(serde_json::from_str::<ConversationConfig>(r#"{"nope": 1}"#).is_err());
        assert!(serde_json::from_str::<ConversationConfig>(r#"{"intent": {"nope": 1}}"#).is_err());
        let s = serde_json::to_string(&ConversationConfig::default()).unwrap();
        assert_eq!(
            serde_json::from_str::<ConversationConfig>(&s).unwrap(),
            ConversationConfig::default()
        );
    }
}
