//! The rerank stage: the top `k` of a leg's ranked base rescored by a reranker, the rest kept
//! below in their order.
//!
//! A leg is `retrieve -> rerank -> select`: a campaign leg with `rerank: {reranker: ..., k: 100}`
//! is the leg with this stage between its two halves ([`Reranked`]), so a budget curve still
//! pays one retrieval and one rerank per query, and the harness times the stage apart
//! (`rerank_ms`).
//!
//! **The rule.** Of the leg's ranking, the candidates a rescue lane did not carry in (the base)
//! are taken in their order; the first `k` of them are sorted by the reranker's score,
//! descending, ties on ascending chunk index (= ascending record id); the rest of the base
//! follows in its order, and the rescued tail after it, unchanged (append, never fuse). Each
//! reranked candidate keeps a score on the leg's own scale: the `k` best base scores, handed out
//! in the new order, so a selector that reads scores sees the reranked order and the base's
//! scale (and a list whose scores descend, as every stage's does).
//!
//! **Rerankers** score one query's candidates ([`Reranker`]): `bi_encoder` (the cosine of the
//! query's and the passage's vectors, [`BiEncoder`], here: it reads an export's vectors) and
//! `cross_encoder` (a sentence-transformers CrossEncoder run in Rust, built by the harness,
//! which holds the model code). A score that is not finite, or a count that is not the
//! candidates', fails the query: never a zero, never the unreranked order.

use std::sync::Arc;

use hopbench_datasets::export::Export;
use serde::{Deserialize, Serialize};

use crate::candidate::Candidate;
use crate::leg::{Leg, LegError, QueryInput, Retrieval, Selection};
use hopbench_datasets::vector::dot;

/// The `rerank:` group of a leg.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RerankSpec {
    /// Which reranker scores the candidates.
    pub reranker: RerankerKind,
    /// How many of the base's first candidates are rescored.
    #[serde(default = "default_k")]
    pub k: usize,
    /// The model directory: the CrossEncoder's (required), or the bi-encoder's (default: the
    /// vectors the leg itself reads).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The label whose score ranks, for a CrossEncoder with several (by name or index).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
}

fn default_k() -> usize {
    100
}

/// The rerankers a campaign can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RerankerKind {
    /// Cosine of the query's and the passage's vectors of a sentence-transformers model.
    BiEncoder,
    /// A sentence-transformers CrossEncoder's score of each (query, passage) pair.
    CrossEncoder,
}

impl RerankerKind {
    /// The name a campaign writes.
    pub fn name(self) -> &'static str {
        match self {
            RerankerKind::BiEncoder => "bi_encoder",
            RerankerKind::CrossEncoder => "cross_encoder",
        }
    }
}

impl RerankSpec {
    /// Range and cross-field checks: `k` of at least 1, a model for the cross-encoder, a label
    /// only where a CrossEncoder reads it. The message names the field.
    pub fn check(&self) -> Result<(), String> {
        if self.k == 0 {
            return Err("field `k`: must be at least 1 (the number of candidates rescored)".into());
        }
        match self.reranker {
            RerankerKind::CrossEncoder if self.model.is_none() => Err(
                "field `model`: `reranker: cross_encoder` needs the CrossEncoder's directory"
                    .into(),
            ),
            RerankerKind::BiEncoder if self.label.is_some() => Err(
                "field `label`: a bi-encoder has no labels (it is a CrossEncoder's setting)".into(),
            ),
            _ => Ok(()),
        }
    }
}

/// Scores one query's candidates.
pub trait Reranker: Send + Sync {
    /// The reranker's name, for messages.
    fn name(&self) -> &'static str;
    /// One score per chunk of `chunks` (higher is better), in order.
    fn score(&self, query: &QueryInput<'_>, chunks: &[u32]) -> Result<Vec<f32>, LegError>;
}

/// The bi-encoder: the dot product of the query's and each passage's vectors, both
/// L2-normalised by the model (the cosine), read from `vectors` (an export loaded with the
/// model's vectors, or the leg's own export).
pub struct BiEncoder {
    vectors: Arc<Export>,
}

impl BiEncoder {
    /// A bi-encoder over the vectors of `vectors` (passages and queries).
    pub fn new(vectors: Arc<Export>) -> Self {
        BiEncoder { vectors }
    }
}

impl Reranker for BiEncoder {
    fn name(&self) -> &'static str {
        RerankerKind::BiEncoder.name()
    }

    fn score(&self, query: &QueryInput<'_>, chunks: &[u32]) -> Result<Vec<f32>, LegError> {
        let e = &self.vectors;
        let passages = e.embeddings()?;
        let q = e.query_embedding(query.index);
        let dim = e.dim;
        Ok(chunks
            .iter()
            .map(|&c| dot(q, &passages[c as usize * dim..(c as usize + 1) * dim]))
            .collect())
    }
}

/// `ranked` with the first `k` of its base (the candidates not `rescued`, in order) reordered by
/// `scores` (one per those first `k`, in their order): see the module note.
pub fn apply(ranked: &[Candidate], k: usize, scores: &[f32]) -> Vec<Candidate> {
    let base: Vec<Candidate> = ranked.iter().filter(|c| !c.rescued).copied().collect();
    let head = k.min(base.len());
    debug_assert_eq!(scores.len(), head);
    let mut order: Vec<usize> = (0..head).collect();
    order.sort_by(|&a, &b| {
        scores[b]
            .total_cmp(&scores[a])
            .then(base[a].chunk.cmp(&base[b].chunk))
    });
    let mut kept: Vec<f32> = base[..head].iter().map(|c| c.score).collect();
    kept.sort_by(|a, b| b.total_cmp(a));
    let mut out: Vec<Candidate> = order
        .iter()
        .zip(kept)
        .map(|(&i, score)| Candidate { score, ..base[i] })
        .collect();
    out.extend_from_slice(&base[head..]);
    out.extend(ranked.iter().filter(|c| c.rescued).copied());
    out
}

/// A leg with the rerank stage between its retrieval and its selection.
pub struct Reranked {
    inner: Box<dyn Leg>,
    reranker: Arc<dyn Reranker>,
    k: usize,
}

impl Reranked {
    /// `inner` with its base's first `k` candidates rescored by `reranker`.
    pub fn leg(inner: Box<dyn Leg>, reranker: Arc<dyn Reranker>, k: usize) -> Box<dyn Leg> {
        Box::new(Reranked { inner, reranker, k })
    }
}

impl Leg for Reranked {
    fn export(&self) -> &Export {
        self.inner.export()
    }

    fn retrieve(&self, query: &QueryInput<'_>) -> Result<Retrieval, LegError> {
        self.inner.retrieve(query)
    }

    fn rerank(&self, query: &QueryInput<'_>, retrieval: Retrieval) -> Result<Retrieval, LegError> {
        let head: Vec<u32> = (retrieval.ranked.iter())
            .filter(|c| !c.rescued)
            .take(self.k)
            .map(|c| c.chunk)
            .collect();
        let scores = self.reranker.score(query, &head)?;
        let fail = |message: String| LegError::Rerank {
            reranker: self.reranker.name().to_string(),
            query: query.id.to_string(),
            message,
        };
        if scores.len() != head.len() {
            return Err(fail(format!(
                "{} scores for {} candidates",
                scores.len(),
                head.len()
            )));
        }
        if let Some(i) = scores.iter().position(|s| !s.is_finite()) {
            return Err(fail(format!(
                "a score of {} for candidate {} (chunk {})",
                scores[i],
                i + 1,
                self.export().chunks[head[i] as usize].id
            )));
        }
        let ranked = apply(&retrieval.ranked, self.k, &scores);
        Ok(Retrieval {
            ranked,
            ..retrieval
        })
    }

    fn select(
        &self,
        query: &QueryInput<'_>,
        retrieval: &Retrieval,
        budget: Option<u64>,
    ) -> Result<Selection, LegError> {
        self.inner.select(query, retrieval, budget)
    }

    fn default_budget(&self) -> Option<u64> {
        self.inner.default_budget()
    }

    fn has_rerank(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::candidate::rank_order;

    /// The plain reference: sort the base's first k by score, ties by chunk, append the rest of
    /// the base, then the rescued tail; scores compared apart.
    fn reference(ranked: &[Candidate], k: usize, scores: &[f32]) -> Vec<u32> {
        let base: Vec<&Candidate> = ranked.iter().filter(|c| !c.rescued).collect();
        let head = k.min(base.len());
        let mut pairs: Vec<(f32, u32)> = (0..head).map(|i| (scores[i], base[i].chunk)).collect();
        pairs.sort_by(|a, b| b.0.partial_cmp(&a.0).unwrap().then(a.1.cmp(&b.1)));
        let mut out: Vec<u32> = pairs.into_iter().map(|p| p.1).collect();
        out.extend(base[head..].iter().map(|c| c.chunk));
        out.extend(ranked.iter().filter(|c| c.rescued).map(|c| c.chunk));
        out
    }

    #[test]
    fn the_stage_is_the_plain_reference_over_random_rankings() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for case in 0..500 {
            let n = (next() % 40) as usize;
            let mut chunks: Vec<u32> = (0..60).collect();
            for i in (1..chunks.len()).rev() {
                chunks.swap(i, (next() % (i as u64 + 1)) as usize);
            }
            let mut ranked: Vec<Candidate> = (0..n)
                .map(|i| Candidate {
                    chunk: chunks[i],
                    // descending base scores, with ties
                    score: (40 - i / 2) as f32,
                    rescued: next() % 5 == 0,
                })
                .collect();
            // the rescued sit below the base, as the rescue stage appends them
            ranked.sort_by_key(|c| c.rescued);
            let k = (next() % 30) as usize + 1;
            let base = ranked.iter().filter(|c| !c.rescued).count();
            // scores with ties: a few distinct values
            let scores: Vec<f32> = (0..k.min(base))
                .map(|_| (next() % 4) as f32 / 3.0)
                .collect();
            let out = apply(&ranked, k, &scores);
            assert_eq!(
                out.iter().map(|c| c.chunk).collect::<Vec<_>>(),
                reference(&ranked, k, &scores),
                "case {case}"
            );
            assert_eq!(out.len(), ranked.len());
            // the scores still descend over the base, and the rescued keep theirs
            let b: Vec<&Candidate> = out.iter().filter(|c| !c.rescued).collect();
            assert!(
                b.windows(2).all(|w| w[0].score >= w[1].score),
                "case {case}"
            );
            let tail_in: Vec<Candidate> = ranked.iter().filter(|c| c.rescued).copied().collect();
            let tail_out: Vec<Candidate> = out.iter().filter(|c| c.rescued).copied().collect();
            assert_eq!(tail_in, tail_out);
        }
    }

    #[test]
    fn ties_break_on_ascending_chunk_and_the_rest_keeps_its_order() {
        let ranked = vec![
            Candidate::new(7, 0.9),
            Candidate::new(3, 0.8),
            Candidate::new(5, 0.7),
            Candidate::new(1, 0.6),
        ];
        // the first three rescored: 5 best, 7 and 3 tied (3 first); 1 stays last
        let out = apply(&ranked, 3, &[0.2, 0.2, 0.5]);
        assert_eq!(
            out.iter().map(|c| (c.chunk, c.score)).collect::<Vec<_>>(),
            vec![(5, 0.9), (3, 0.8), (7, 0.7), (1, 0.6)]
        );
        let mut sorted = out.clone();
        sorted.sort_by(rank_order);
        assert_eq!(sorted, out, "a list in rank order, as every stage's");
    }

    #[test]
    fn the_group_is_checked_naming_the_field() {
        let read = |s: &str| serde_json::from_str::<RerankSpec>(s);
        let s = read(r#"{"reranker":"bi_encoder"}"#).unwrap();
        assert_eq!((s.k, s.check()), (100, Ok(())));
        let e = read(r#"{"reranker":"bi_encoder","k":0}"#)
            .unwrap()
            .check()
            .unwrap_err();
        assert!(e.contains("field `k`"), "{e}");
        let e = read(r#"{"reranker":"cross_encoder"}"#)
            .unwrap()
            .check()
            .unwrap_err();
        assert!(e.contains("field `model`"), "{e}");
        let e = read(r#"{"reranker":"bi_encoder","label":"x"}"#)
            .unwrap()
            .check()
            .unwrap_err();
        assert!(e.contains("field `label`"), "{e}");
        assert!(read(r#"{"reranker":"magic"}"#).is_err());
        assert!(read(r#"{"reranker":"bi_encoder","kk":3}"#).is_err());
    }
}
