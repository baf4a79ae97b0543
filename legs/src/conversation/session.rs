//! The conversation session: what a conversational turn retrieves from the corpus (the four
//! conversation kinds),
//! with the dense + BM25 hybrid (the `bm25` rung: RRF k = 60, max-normalised) as Tier P under
//! all of them.
//!
//! | leg                 | retrieves with                                                        |
//! |---------------------|-----------------------------------------------------------------------|
//! | `conv_last_turn`    | the current user turn alone (identical to `bm25` on that text)         |
//! | `conv_full_history` | every turn of the conversation concatenated into one query             |
//! | `conv_cdr`          | the current turn, CDR novelty always on against what the session delivered |
//! | `multi_horizon`     | SPEC-028's assembler: references resolved, intent, tier blend (below)  |
//!
//! # How SPEC-028's tiers become one ranking (our design; the spec leaves it to SPEC-003)
//! * **Tier P** is the hybrid ranking of [`TurnPlan::query_text`]: the current turn with its
//!   references substituted ("Where was that person born?" → "Where was Ada Lovelace born?").
//! * **Tier C** is the turn log. A turn is not a corpus passage, so Tier C enters the ranking
//!   through what each earlier turn retrieves: every earlier turn with a positive Tier C weight
//!   (recency, active thread, or 1.0 when referenced: [`TurnPlan::tier_c`]) runs the same hybrid
//!   on its own text, and Tier C's score of a chunk is the weight-averaged unit-scaled score over
//!   those rankings. An assistant turn grounded on earlier passages therefore pulls them back,
//!   which is what a drill-down needs.
//! * **Tier E** has no data in this project ([`NoEphemeral`]); its weight is kept in the blend
//!   and contributes nothing. Since every score is a positive linear blend, leaving `w_E` unused
//!   ranks exactly as renormalising `w_P + w_C` to 1 would.
//! * `score(chunk) = w_P · P(chunk) + w_C · C(chunk)`, then the intent's novelty policy.
//!
//! # Novelty in a conversation (SPEC-024's CDR, carried into a session)
//! CDR's novelty is `1 - max cosine(chunk, delivered)` (clamped to [0, 1]) and CDR excludes facts
//! the session already delivered. In a conversation the session's deliveries are the earlier
//! turns' envelopes. We do not replay the leg over the whole conversation (each turn is its own
//! query, and replaying would make turn `t` cost `t` retrievals of itself); the **delivered set**
//! is the union of the hybrid's top `delivered_k` (default 10) for each earlier *user* turn's
//! text: what a plain RAG system would have shown. For a conversation's second turn this is
//! exactly CDR's own first envelope.
//! * `On` (`conv_cdr` always; `multi_horizon` on EXPLORE): delivered chunks are excluded and every
//!   score is multiplied by its novelty.
//! * `Partial` (CONTINUE): `score × (1 - partial_novelty · (1 - novelty))`, nothing excluded, so a
//!   repeat is demoted by `partial_novelty` (default 0.5: "extend, not repeat"), not removed.
//! * `Off` (DRILL_DOWN, CLARIFY, TOOL_REFERENCE): scores unchanged.
//!
//! # Full history
//! The concatenation is embedded whole. The embedder reads only its first `max_seq_length`
//! tokens (256 for all-MiniLM-L6-v2), so chronological order would let long conversations push
//! the current question out of the dense side; the default order is therefore newest turn first
//! (`order: chronological` gives the literal concatenation). BM25 sees every word either way.
//!
//! # Vectors
//! Legs load no model. The texts these legs embed besides the prepared query vector (turns,
//! the concatenation, the rewritten query) are listed by [`texts_to_embed`]; the harness embeds
//! them with the export's model through the embedding cache and hands them over as
//! [`TextVectors`]. Building a leg checks that every text it will look up has a vector, so a
//! lookup never fails mid-run. The time to embed the current turn is outside `retrieve` for
//! every leg alike (the prepared query vectors are too).
//!
//! A dataset without conversations gives `missing-inputs` for all four legs. A query without a
//! conversation on a dataset that has some is treated as a one-turn conversation.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use hopbench_datasets::export::Export;
use hopbench_datasets::Turn;
use serde::{Deserialize, Serialize};

use super::blend::{EphemeralSource, NoEphemeral, Novelty};
use super::intent::Intent;
use super::{assemble, rewritten_query, ConversationConfig, TurnPlan};
use crate::candidate::{top_k, Candidate};
use crate::first_stage::{FirstStage, Hybrid};
use crate::leg::{Leg, LegError, Note, QueryInput, Ranked, Ranker, Retrieval};
use crate::params::{Check, Checked};
use hopbench_datasets::vector::dot;

/// Vectors of texts the conversation legs look up, computed by the harness with the export's
/// model (L2-normalised, `dim` each).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TextVectors {
    dim: usize,
    map: HashMap<String, Vec<f32>>,
}

impl TextVectors {
    /// An empty table of `dim`-dimensional vectors.
    pub fn new(dim: usize) -> Self {
        TextVectors {
            dim,
            map: HashMap::new(),
        }
    }

    /// Adds (or replaces) the vector of `text`.
    pub fn insert(&mut self, text: String, vector: Vec<f32>) {
        self.map.insert(text, vector);
    }

    /// The vector of `text`, if it was embedded.
    pub fn get(&self, text: &str) -> Option<&[f32]> {
        self.map.get(text).map(Vec::as_slice)
    }

    /// Vector dimension.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Number of texts.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

/// Order of the turns in `conv_full_history`'s concatenation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HistoryOrder {
    /// Newest turn first, so the embedder's token window keeps the current question.
    #[default]
    NewestFirst,
    /// As spoken.
    Chronological,
}

/// `delivered_k`: chunks each earlier user turn delivered (the session's coverage, which novelty
/// is measured against).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Delivered {
    /// Chunks each earlier user turn delivered.
    pub delivered_k: usize,
}

impl Default for Delivered {
    fn default() -> Self {
        Delivered { delivered_k: 10 }
    }
}

impl Checked for Delivered {
    fn check(&self, c: &Check<'_>) -> Result<(), LegError> {
        c.at_least("delivered_k", self.delivered_k, 1)
    }
}

crate::leaf_params!(Delivered);

/// Which of the four legs.
#[derive(Debug, Clone, PartialEq)]
pub enum ConvMode {
    /// `conv_last_turn`.
    LastTurn,
    /// `conv_full_history`.
    FullHistory(HistoryOrder),
    /// `conv_cdr`.
    Cdr {
        /// Chunks each earlier user turn delivered.
        delivered_k: usize,
    },
    /// `multi_horizon`.
    MultiHorizon {
        /// Chunks each earlier user turn delivered.
        delivered_k: usize,
        /// Strength of partial novelty.
        partial_novelty: f32,
        /// The assembler's settings.
        conversation: Box<ConversationConfig>,
    },
}

/// The conversation of query `q`: its recorded conversation, or a one-turn one of its text.
fn conversation_of(export: &Export, q: usize) -> Vec<Turn> {
    let r = &export.queries[q];
    match &r.conversation {
        Some(c) if !c.is_empty() => c.clone(),
        _ => vec![Turn {
            speaker: "user".into(),
            text: r.text.clone(),
        }],
    }
}

/// Indices of the earlier turns (all but the last) that a user spoke.
fn earlier_user_turns(conv: &[Turn]) -> impl Iterator<Item = usize> + '_ {
    conv[..conv.len().saturating_sub(1)]
        .iter()
        .enumerate()
        .filter(|(_, t)| t.speaker.eq_ignore_ascii_case("user"))
        .map(|(i, _)| i)
}

/// `conv_full_history`'s query text.
pub fn history_text(conv: &[Turn], order: HistoryOrder) -> String {
    let texts: Vec<&str> = match order {
        HistoryOrder::Chronological => conv.iter().map(|t| t.text.as_str()).collect(),
        HistoryOrder::NewestFirst => conv.iter().rev().map(|t| t.text.as_str()).collect(),
    };
    texts.join("\n")
}

/// The texts `mode` will look up vectors for over `export`, sorted and deduplicated (the
/// prepared query vectors cover each query's own text; they are not listed).
pub fn texts_to_embed(export: &Export, mode: &ConvMode) -> Vec<String> {
    let mut out = BTreeSet::new();
    for q in 0..export.queries.len() {
        let conv = conversation_of(export, q);
        match mode {
            ConvMode::LastTurn => {}
            ConvMode::FullHistory(order) => {
                out.insert(history_text(&conv, *order));
            }
            ConvMode::Cdr { .. } => {
                out.extend(earlier_user_turns(&conv).map(|i| conv[i].text.clone()));
            }
            ConvMode::MultiHorizon { .. } => {
                out.extend(conv.iter().map(|t| t.text.clone()));
                out.insert(rewritten_query(&conv));
            }
        }
    }
    out.into_iter().collect()
}

/// The ranking of one of the four conversation kinds.
pub struct ConvLeg {
    export: Arc<Export>,
    hybrid: Hybrid,
    mode: ConvMode,
    pool_k: usize,
    vectors: Arc<TextVectors>,
}

impl ConvLeg {
    /// Builds the leg. `MissingInputs` when the dataset has no conversations, or when `vectors`
    /// lacks a text the leg will look up (the harness embeds [`texts_to_embed`]).
    pub fn new(
        export: Arc<Export>,
        mode: ConvMode,
        first: &FirstStage,
        vectors: Option<Arc<TextVectors>>,
    ) -> Result<Self, LegError> {
        if export.queries.iter().all(|q| q.conversation.is_none()) {
            return Err(LegError::MissingInputs(
                "the dataset has no conversations (the conversation legs need the turns so far \
                 per query: MTRAG-UN or a derived dialogue set)"
                    .into(),
            ));
        }
        let vectors = vectors.unwrap_or_else(|| Arc::new(TextVectors::new(export.dim)));
        let needed = texts_to_embed(&export, &mode);
        if let Some(t) = needed
            .iter()
            .find(|t| vectors.get(t).is_none_or(|v| v.len() != export.dim))
        {
            return Err(LegError::MissingInputs(format!(
                "no {}-dimensional vector for the conversation text {:?} ({} texts needed, {} given)",
                export.dim,
                t.chars().take(60).collect::<String>(),
                needed.len(),
                vectors.len()
            )));
        }
        // novelty compares chunks by their vectors: read them now
        export.embeddings()?;
        Ok(ConvLeg {
            hybrid: first.hybrid(&export)?,
            export,
            mode,
            pool_k: first.pool.pool_k,
            vectors,
        })
    }

    /// The session as a leg (selector `none`), for the conversation kinds.
    pub fn leg(
        export: &Arc<Export>,
        mode: ConvMode,
        first: &FirstStage,
        vectors: Option<Arc<TextVectors>>,
    ) -> Result<Box<dyn Leg>, LegError> {
        Ok(Ranked::leg(
            export,
            ConvLeg::new(export.clone(), mode, first, vectors)?,
        ))
    }

    fn vector(&self, text: &str) -> &[f32] {
        self.vectors
            .get(text)
            .expect("every looked-up text was checked when the leg was built")
    }

    /// The unit-scaled hybrid ranking of one text, retrieved for query `q` (whose index and
    /// id it carries: an external engine's request names the query it serves).
    fn hybrid_of(
        &self,
        q: &QueryInput<'_>,
        text: &str,
        embedding: &[f32],
    ) -> Result<Vec<Candidate>, LegError> {
        Ok(self
            .hybrid
            .base(&QueryInput {
                index: q.index,
                id: q.id,
                text,
                embedding,
                gold: &[],
            })?
            .fused)
    }

    /// The hybrid ranking of each listed turn of `conv`, computed once per turn.
    fn turn_lists(
        &self,
        q: &QueryInput<'_>,
        conv: &[Turn],
        turns: impl IntoIterator<Item = usize>,
    ) -> Result<BTreeMap<usize, Vec<Candidate>>, LegError> {
        let mut out = BTreeMap::new();
        for i in turns {
            if let std::collections::btree_map::Entry::Vacant(slot) = out.entry(i) {
                let text = &conv[i].text;
                slot.insert(self.hybrid_of(q, text, self.vector(text))?);
            }
        }
        Ok(out)
    }

    /// What the session delivered before the current turn: the union of the hybrid's top
    /// `delivered_k` for each earlier user turn (`lists` must hold those turns' rankings).
    fn delivered(
        conv: &[Turn],
        lists: &BTreeMap<usize, Vec<Candidate>>,
        delivered_k: usize,
    ) -> BTreeSet<u32> {
        earlier_user_turns(conv)
            .flat_map(|i| lists[&i].iter().take(delivered_k).map(|c| c.chunk))
            .collect()
    }

    /// CDR novelty of `chunk` against `delivered`: `1 - max cosine`, clamped to [0, 1]; 1 when
    /// nothing was delivered.
    fn novelty(&self, chunk: u32, delivered: &BTreeSet<u32>) -> f32 {
        // `new` read the vectors, and a part of an export once read stays read
        let rows = self
            .export
            .embeddings()
            .expect("the vectors were read by ConvLeg::new");
        let row = |c: u32| &rows[c as usize * self.export.dim..][..self.export.dim];
        let v = row(chunk);
        let max = delivered
            .iter()
            .map(|&d| dot(v, row(d)))
            .fold(f32::NEG_INFINITY, f32::max);
        if max.is_finite() {
            (1.0 - max).clamp(0.0, 1.0)
        } else {
            1.0
        }
    }

    /// Applies a novelty policy and keeps the best `pool_k` in rank order. Returns the ranking
    /// and how many delivered chunks were excluded.
    fn with_novelty(
        &self,
        scored: Vec<Candidate>,
        delivered: &BTreeSet<u32>,
        policy: Novelty,
        partial: f32,
    ) -> (Vec<Candidate>, usize) {
        let before = scored.len();
        let mut out: Vec<Candidate> = match policy {
            Novelty::Off => scored,
            Novelty::On => scored
                .into_iter()
                .filter(|c| !delivered.contains(&c.chunk))
                .map(|c| Candidate::new(c.chunk, c.score * self.novelty(c.chunk, delivered)))
                .collect(),
            Novelty::Partial => scored
                .into_iter()
                .map(|c| {
                    let n = self.novelty(c.chunk, delivered);
                    Candidate::new(c.chunk, c.score * (1.0 - partial * (1.0 - n)))
                })
                .collect(),
        };
        let excluded = before - out.len();
        top_k(&mut out, self.pool_k);
        (out, excluded)
    }

    fn multi_horizon(
        &self,
        q: &QueryInput<'_>,
        conv: &[Turn],
        delivered_k: usize,
        partial: f32,
        config: &ConversationConfig,
    ) -> Result<Retrieval, LegError> {
        let lookup = |t: &str| self.vector(t).to_vec();
        let plan = assemble(conv, &lookup, config);
        let blend = plan.blend;
        let mut scores: BTreeMap<u32, f64> = BTreeMap::new();
        let p = self.hybrid_of(q, &plan.query_text, self.vector(&plan.query_text))?;
        for c in &p {
            *scores.entry(c.chunk).or_default() += f64::from(blend.p) * f64::from(c.score);
        }
        let live: Vec<_> = plan.tier_c.iter().filter(|w| w.weight > 0.0).collect();
        let total: f64 = live.iter().map(|w| f64::from(w.weight)).sum();
        // one ranking per earlier turn, shared by Tier C and the delivered set
        let novelty_on = blend.cdr_novelty != Novelty::Off;
        let users = earlier_user_turns(conv).filter(|_| novelty_on);
        let lists = self.turn_lists(q, conv, live.iter().map(|w| w.index).chain(users))?;
        for w in &live {
            let share = f64::from(blend.c) * f64::from(w.weight) / total;
            for c in &lists[&w.index] {
                *scores.entry(c.chunk).or_default() += share * f64::from(c.score);
            }
        }
        // Tier E: the interface is consulted; this project's source is empty
        let ephemeral = NoEphemeral.most_recent(None, usize::MAX).len();
        let scored: Vec<Candidate> = scores
            .into_iter()
            .map(|(chunk, s)| Candidate::new(chunk, s as f32))
            .collect();
        let delivered = if novelty_on {
            Self::delivered(conv, &lists, delivered_k)
        } else {
            BTreeSet::new()
        };
        let (ranked, excluded) = self.with_novelty(scored, &delivered, blend.cdr_novelty, partial);
        let mut r = Retrieval {
            ranked,
            ..Default::default()
        };
        annotate(&mut r, &plan, conv);
        let d = &mut r.diagnostics;
        d.insert("tier_c_turns".into(), live.len() as f64);
        d.insert("tier_e_items".into(), ephemeral as f64);
        d.insert("delivered".into(), delivered.len() as f64);
        d.insert("delivered_excluded".into(), excluded as f64);
        Ok(r)
    }
}

/// Records a plan on a retrieval: the five `CRP-Context-*` headers and the rewrite as
/// annotations; counts, the blend and a one-hot intent as diagnostics (their cell means are the
/// intent distribution and the average blend).
fn annotate(r: &mut Retrieval, plan: &TurnPlan, conv: &[Turn]) {
    for (name, value) in &plan.headers {
        r.annotations.insert(*name, value.clone());
    }
    let rule = serde_json::to_value(plan.intent_rule)
        .ok()
        .and_then(|v| v.as_str().map(String::from))
        .unwrap_or_default();
    r.annotations.insert(Note::IntentRule, rule);
    r.annotations
        .insert(Note::ResolvedQuery, plan.query_text.clone());
    let resolutions: Vec<String> = plan
        .references
        .iter()
        .filter_map(|x| x.resolved_to.as_ref())
        .map(|res| match res {
            super::references::Resolution::Text(t) => t.clone(),
            super::references::Resolution::Turn(i) => {
                conv.get(*i).map(|t| t.text.clone()).unwrap_or_default()
            }
        })
        .collect();
    r.annotations
        .insert(Note::Resolutions, resolutions.join(" | "));
    let d = &mut r.diagnostics;
    d.insert("references_detected".into(), plan.references.len() as f64);
    d.insert(
        "references_resolved".into(),
        plan.references
            .iter()
            .filter(|x| x.resolved_to.is_some())
            .count() as f64,
    );
    if let Some(s) = plan.topic_similarity {
        d.insert("topic_similarity".into(), f64::from(s));
    }
    d.insert("blend_p".into(), f64::from(plan.blend.p));
    d.insert("blend_c".into(), f64::from(plan.blend.c));
    for i in Intent::ALL {
        d.insert(
            format!("intent_{}", i.as_str().to_lowercase()),
            f64::from(u8::from(i == plan.intent)),
        );
    }
}

impl Ranker for ConvLeg {
    fn retrieve(&self, q: &QueryInput<'_>) -> Result<Retrieval, LegError> {
        let conv = conversation_of(&self.export, q.index);
        match &self.mode {
            ConvMode::LastTurn => Ok(Retrieval {
                ranked: self.hybrid_of(q, q.text, q.embedding)?,
                ..Default::default()
            }),
            ConvMode::FullHistory(order) => {
                let text = history_text(&conv, *order);
                let mut r = Retrieval {
                    ranked: self.hybrid_of(q, &text, self.vector(&text))?,
                    ..Default::default()
                };
                r.diagnostics
                    .insert("history_turns".into(), conv.len() as f64);
                Ok(r)
            }
            ConvMode::Cdr { delivered_k } => {
                let scored = self.hybrid_of(q, q.text, q.embedding)?;
                let lists = self.turn_lists(q, &conv, earlier_user_turns(&conv))?;
                let delivered = Self::delivered(&conv, &lists, *delivered_k);
                let (ranked, excluded) = self.with_novelty(scored, &delivered, Novelty::On, 0.0);
                let mut r = Retrieval {
                    ranked,
                    ..Default::default()
                };
                r.diagnostics
                    .insert("delivered".into(), delivered.len() as f64);
                r.diagnostics
                    .insert("delivered_excluded".into(), excluded as f64);
                Ok(r)
            }
            ConvMode::MultiHorizon {
                delivered_k,
                partial_novelty,
                conversation,
            } => self.multi_horizon(q, &conv, *delivered_k, *partial_novelty, conversation),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::intent::Intent;
    use crate::registry::LegSpec;
    use crate::rescue::fixtures;
    use hopbench_datasets::{Passage, Question, RawDataset};

    const DIM: usize = 64;

    fn turn(speaker: &str, text: &str) -> Turn {
        Turn {
            speaker: speaker.into(),
            text: text.into(),
        }
    }

    fn passage(id: &str, text: &str) -> Passage {
        Passage {
            id: id.into(),
            doc: Some(id.into()),
            title: id.into(),
            text: text.into(),
            header: None,
        }
    }

    /// Two questions: q1 opens on Ada Lovelace; q2 drills down with "she" (gold: the passage
    /// the first turn already retrieved); q3 explores a new topic.
    fn raw() -> RawDataset {
        let passages = vec![
            passage(
                "p1",
                "Ada Lovelace wrote the first published computer program.",
            ),
            passage(
                "p2",
                "Ada Lovelace was born in London in 1815 to Lord Byron.",
            ),
            passage(
                "p3",
                "Charles Babbage designed the Analytical Engine in London.",
            ),
            passage(
                "p4",
                "The Analytical Engine was a mechanical general purpose computer.",
            ),
            passage("p5", "Volcanoes erupt when magma rises through the crust."),
            passage("p6", "Magma chambers feed volcanoes in Iceland and Hawaii."),
            passage("p7", "Lord Byron was a poet of the Romantic movement."),
            passage("p8", "Gardening tips for growing tomatoes in pots."),
        ];
        let first = "Who was Ada Lovelace and what program did Ada Lovelace write?";
        let answer = "The first program for the Analytical Engine was written by Ada Lovelace.";
        let mut q1 = Question::new("c1::1", first, vec!["p1".into()]);
        q1.conversation = Some(vec![turn("user", first)]);
        let drill = "Where was she born?";
        let mut q2 = Question::new("c1::2", drill, vec!["p2".into()]);
        q2.conversation = Some(vec![
            turn("user", first),
            turn("agent", answer),
            turn("user", drill),
        ]);
        let explore = "How do volcanoes erupt?";
        let mut q3 = Question::new("c1::3", explore, vec!["p5".into()]);
        q3.conversation = Some(vec![
            turn("user", first),
            turn("agent", answer),
            turn("user", explore),
        ]);
        RawDataset {
            passages,
            questions: vec![q1, q2, q3],
        }
    }

    fn export() -> Arc<Export> {
        Arc::new(fixtures::export_of(|| Ok(raw()), DIM))
    }

    fn vectors_for(export: &Export, spec: &LegSpec) -> Arc<TextVectors> {
        let mut v = TextVectors::new(DIM);
        for t in spec.texts_to_embed(export) {
            let e = fixtures::embed(&t, DIM);
            v.insert(t, e);
        }
        Arc::new(v)
    }

    fn spec(kind: &str) -> LegSpec {
        serde_json::from_str(&format!(r#"{{"kind":"{kind}"}}"#)).unwrap()
    }

    /// Built with `delivered_k: 2` where the kind has it (the toy corpus has 8 passages).
    fn build(export: &Arc<Export>, kind: &str) -> Box<dyn Leg> {
        let s = match kind {
            "conv_cdr" | "multi_horizon" => {
                serde_json::from_str(&format!(r#"{{"kind":"{kind}","delivered_k":2}}"#)).unwrap()
            }
            _ => spec(kind),
        };
        s.build_with(kind, export.clone(), Some(vectors_for(export, &s)))
            .unwrap()
    }

    fn ids(export: &Export, r: &Retrieval) -> Vec<String> {
        r.ranked
            .iter()
            .map(|c| export.chunks[c.chunk as usize].id.clone())
            .collect()
    }

    #[test]
    fn last_turn_is_the_hybrid_on_the_current_turn() {
        let e = export();
        let leg = build(&e, "conv_last_turn");
        let bm25 = spec("bm25").build("bm25", e.clone()).unwrap();
        for q in 0..e.queries.len() {
            let input = QueryInput::from_export(&e, q);
            assert_eq!(
                leg.retrieve(&input).unwrap().ranked,
                bm25.retrieve(&input).unwrap().ranked
            );
        }
    }

    #[test]
    fn no_conversations_is_missing_inputs_and_missing_vectors_too() {
        let synthetic = fixtures::synthetic();
        for kind in [
            "conv_last_turn",
            "conv_full_history",
            "conv_cdr",
            "multi_horizon",
        ] {
            match spec(kind).build(kind, synthetic.clone()) {
                Err(LegError::MissingInputs(m)) => assert!(m.contains("no conversations"), "{m}"),
                other => panic!("{kind}: {:?}", other.map(|_| ())),
            }
        }
        let e = export();
        for kind in ["conv_full_history", "conv_cdr", "multi_horizon"] {
            match spec(kind).build(kind, e.clone()) {
                Err(LegError::MissingInputs(m)) => assert!(m.contains("no 64-dimensional vector")),
                other => panic!("{kind}: {:?}", other.map(|_| ())),
            }
        }
        assert!(spec("conv_last_turn").build("l", e).is_ok());
    }

    #[test]
    fn texts_to_embed_per_mode() {
        let e = export();
        assert!(spec("conv_last_turn").texts_to_embed(&e).is_empty());
        let cdr = spec("conv_cdr").texts_to_embed(&e);
        assert_eq!(
            cdr,
            vec!["Who was Ada Lovelace and what program did Ada Lovelace write?".to_string()]
        );
        let mh = spec("multi_horizon").texts_to_embed(&e);
        assert!(
            mh.contains(&"Where was Ada Lovelace born?".to_string()),
            "{mh:?}"
        );
        assert!(
            mh.windows(2).all(|w| w[0] < w[1]),
            "sorted and deduplicated"
        );
        let conv = e.queries[1].conversation.clone().unwrap();
        assert_eq!(
            history_text(&conv, HistoryOrder::NewestFirst),
            format!("{}\n{}\n{}", conv[2].text, conv[1].text, conv[0].text)
        );
        assert_eq!(
            history_text(&conv, HistoryOrder::Chronological),
            format!("{}\n{}\n{}", conv[0].text, conv[1].text, conv[2].text)
        );
    }

    #[test]
    fn cdr_excludes_what_the_session_delivered_and_multi_horizon_keeps_it_on_a_drill_down() {
        let e = export();
        let q = QueryInput::from_export(&e, 1);
        let cdr = build(&e, "conv_cdr").retrieve(&q).unwrap();
        // what the first turn delivered: its top 2
        let first = build(&e, "conv_last_turn")
            .retrieve(&QueryInput::from_export(&e, 0))
            .unwrap();
        let delivered: Vec<String> = ids(&e, &first).into_iter().take(2).collect();
        assert!(delivered.contains(&"p2".to_string()));
        let got = ids(&e, &cdr);
        assert!(got.iter().all(|id| !delivered.contains(id)), "{got:?}");
        assert_eq!(cdr.diagnostics["delivered"], delivered.len() as f64);
        let mh = build(&e, "multi_horizon").retrieve(&q).unwrap();
        assert_eq!(mh.annotations[&Note::TurnIntent], "DRILL_DOWN");
        assert_eq!(mh.annotations[&Note::TierBlend], "30/65/5");
        assert_eq!(mh.annotations[&Note::ReferencesResolved], "1");
        assert_eq!(
            mh.annotations[&Note::ResolvedQuery],
            "Where was Ada Lovelace born?"
        );
        assert_eq!(mh.annotations[&Note::Resolutions], "Ada Lovelace");
        assert_eq!(mh.annotations[&Note::IntentRule], "reference");
        for h in [
            Note::TierBlend,
            Note::TurnIntent,
            Note::ReferencesResolved,
            Note::ActiveThread,
            Note::Mode,
        ] {
            assert!(mh.annotations.contains_key(&h), "{h:?}");
        }
        assert_eq!(mh.diagnostics["intent_drill_down"], 1.0);
        assert_eq!(mh.diagnostics["delivered_excluded"], 0.0);
        // novelty off: the gold the first turn already delivered stays, near the top (Tier C,
        // 65% on a drill-down, is about the program, so p1 may lead)
        let got = ids(&e, &mh);
        assert!(got[..2].contains(&"p2".to_string()), "{got:?}");
        if delivered.contains(&"p2".to_string()) {
            assert!(!ids(&e, &cdr).contains(&"p2".to_string()));
        }
    }

    #[test]
    fn explore_turn_has_novelty_on_and_first_turn_has_nothing_delivered() {
        let e = export();
        let leg = build(&e, "multi_horizon");
        let r = leg.retrieve(&QueryInput::from_export(&e, 2)).unwrap();
        assert_eq!(r.annotations[&Note::TurnIntent], "EXPLORE");
        assert!(r.diagnostics["delivered"] > 0.0);
        assert!(r.diagnostics["delivered_excluded"] > 0.0);
        assert_eq!(ids(&e, &r)[0], "p5");
        let r = leg.retrieve(&QueryInput::from_export(&e, 0)).unwrap();
        assert_eq!(r.annotations[&Note::TurnIntent], "EXPLORE");
        assert_eq!(r.diagnostics["delivered"], 0.0);
        assert_eq!(r.diagnostics["tier_c_turns"], 0.0);
        // one turn, nothing delivered: the plain hybrid on the turn
        let plain = build(&e, "conv_last_turn")
            .retrieve(&QueryInput::from_export(&e, 0))
            .unwrap();
        assert_eq!(ids(&e, &r), ids(&e, &plain));
    }

    #[test]
    fn partial_novelty_demotes_repeats_by_the_configured_share() {
        let e = export();
        let s = spec("conv_cdr");
        let mode = ConvMode::Cdr { delivered_k: 10 };
        let first = FirstStage::default();
        let leg = ConvLeg::new(e.clone(), mode, &first, Some(vectors_for(&e, &s))).unwrap();
        let scored = vec![Candidate::new(0, 1.0), Candidate::new(1, 0.8)];
        let delivered: BTreeSet<u32> = [0].into();
        let (r, excluded) = leg.with_novelty(scored.clone(), &delivered, Novelty::Partial, 0.5);
        assert_eq!(excluded, 0);
        let s0 = r.iter().find(|c| c.chunk == 0).unwrap().score;
        assert!(
            (s0 - 0.5).abs() < 1e-6,
            "a delivered chunk has novelty 0: {s0}"
        );
        let (r, excluded) = leg.with_novelty(scored.clone(), &delivered, Novelty::On, 0.5);
        assert_eq!((excluded, r.len()), (1, 1));
        let n1 = leg.novelty(1, &delivered);
        assert!((r[0].score - 0.8 * n1).abs() < 1e-6);
        let (r, _) = leg.with_novelty(scored, &delivered, Novelty::Off, 0.5);
        assert_eq!(r[0], Candidate::new(0, 1.0));
        assert_eq!(leg.novelty(1, &BTreeSet::new()), 1.0);
    }

    #[test]
    fn full_history_and_determinism() {
        let e = export();
        let leg = build(&e, "conv_full_history");
        let q = QueryInput::from_export(&e, 1);
        let a = leg.retrieve(&q).unwrap();
        assert_eq!(a, leg.retrieve(&q).unwrap());
        assert_eq!(a.diagnostics["history_turns"], 3.0);
        // the concatenation is about Ada Lovelace's program: p1 leads, volcanoes do not
        let got = ids(&e, &a);
        assert_eq!(got[0], "p1", "{got:?}");
        assert!(!got[..3].contains(&"p5".to_string()));
        let mh = build(&e, "multi_horizon");
        for q in 0..3 {
            let q = QueryInput::from_export(&e, q);
            assert_eq!(mh.retrieve(&q).unwrap(), mh.retrieve(&q).unwrap());
        }
    }

    #[test]
    fn configs_reject_unknown_keys_and_bad_ranges() {
        let parse = |s: &str| serde_json::from_str::<LegSpec>(s);
        assert!(parse(r#"{"kind":"multi_horizon","novelty":1}"#).is_err());
        assert!(parse(r#"{"kind":"conv_cdr","partial_novelty":0.5}"#).is_err());
        assert!(parse(r#"{"kind":"conv_full_history","order":"sideways"}"#).is_err());
        assert!(
            parse(r#"{"kind":"multi_horizon","conversation":{"turn_log":{"halflife":2}}}"#)
                .is_err()
        );
        let field = |s: &str| match parse(s).unwrap().validate("leg") {
            Err(LegError::Config { field, .. }) => field,
            other => panic!("{s}: {other:?}"),
        };
        assert_eq!(
            field(r#"{"kind":"conv_cdr","delivered_k":0}"#),
            "delivered_k"
        );
        assert_eq!(
            field(r#"{"kind":"multi_horizon","partial_novelty":1.5}"#),
            "partial_novelty"
        );
        assert_eq!(
            field(
                r#"{"kind":"multi_horizon","conversation":{"blend":{"clarify":{"p":0.5,"c":0.75,"e":0.05,"cdr_novelty":"off"}}}}"#
            ),
            "conversation.blend"
        );
        assert_eq!(field(r#"{"kind":"conv_last_turn","pool_k":0}"#), "pool_k");
        assert_eq!(Intent::ALL.len(), 5);
    }
}
