//! The leg interface: what the harness may ask of any retrieval system.

use std::collections::BTreeMap;
use std::sync::Arc;

use hopbench_datasets::export::Export;

use crate::candidate::Candidate;
use crate::engine::error::EngineError;

/// One query as a leg sees it: its position in the export, its id, its text and its vector.
#[derive(Debug, Clone, Copy)]
pub struct QueryInput<'a> {
    /// Query index in the export (also the order results are reported in).
    pub index: usize,
    /// Query id (the export's record id): what an external engine's requests and errors name.
    pub id: &'a str,
    /// Query text (BM25 tokenises it).
    pub text: &'a str,
    /// Query vector (L2-normalised, computed at prepare time by the export's model).
    pub embedding: &'a [f32],
    /// Gold chunk indices. Only the oracle legs (which bound what is possible) may read this;
    /// every other leg must behave identically whatever it holds.
    pub gold: &'a [u32],
}

impl<'a> QueryInput<'a> {
    /// Query `index` of `export`.
    pub fn from_export(export: &'a Export, index: usize) -> Self {
        QueryInput {
            index,
            id: &export.queries[index].id,
            text: &export.queries[index].text,
            embedding: export.query_embedding(index),
            gold: &export.queries[index].gold,
        }
    }
}

/// The frozen result of `retrieve`: the ranked candidate list plus what the leg wants to report.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Retrieval {
    /// The ranked list (for rescue legs: the union, base first).
    pub ranked: Vec<Candidate>,
    /// Numeric per-query diagnostics (e.g. pool sizes), averaged per cell by the harness.
    pub diagnostics: BTreeMap<String, f64>,
    /// The hypergraph lane's retained hyperedges `(id, ρ)`, for the chain-of-evidence selector:
    /// `None` when the leg has no hypergraph lane, empty when the lane did not run (gate closed).
    pub hyperedges: Option<Vec<(u32, f32)>>,
    /// The graph seed nodes of this query (query seeds first), for the same selector.
    pub seeds: Vec<u32>,
    /// The ranking comes from a rescue stage: a candidate stamped `rescued` is one only the
    /// graph lanes reached, so the harness attributes each gold chunk to the base or the lanes.
    pub rescue_stage: bool,
    /// Per-query text facts the leg reports (the conversation legs' `CRP-Context-*` headers,
    /// the rewritten query): written per query to the records and grouped on by breakdowns.
    /// Deterministic, like everything else a leg returns.
    pub annotations: BTreeMap<Note, String>,
}

/// The per-query text facts a leg may report ([`Retrieval::annotations`]). A closed set, so the
/// harness's breakdowns and the legs agree on the names at compile time; [`Note::name`] is the
/// column name in the records (`note:<name>`).
/// Serialised as its name.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum Note {
    /// `CRP-Context-Tier-Blend`: the P/C/E weights, e.g. `30/65/5`.
    #[serde(rename = "CRP-Context-Tier-Blend")]
    TierBlend,
    /// `CRP-Context-Turn-Intent`: the classified intent, e.g. `DRILL_DOWN`.
    #[serde(rename = "CRP-Context-Turn-Intent")]
    TurnIntent,
    /// `CRP-Context-References-Resolved`: how many references were resolved.
    #[serde(rename = "CRP-Context-References-Resolved")]
    ReferencesResolved,
    /// `CRP-Context-Active-Thread`: the active topic thread.
    #[serde(rename = "CRP-Context-Active-Thread")]
    ActiveThread,
    /// `CRP-Context-Mode`: conversation or hybrid.
    #[serde(rename = "CRP-Context-Mode")]
    Mode,
    /// Which classifier rule decided the intent.
    #[serde(rename = "intent_rule")]
    IntentRule,
    /// The query with its references substituted.
    #[serde(rename = "resolved_query")]
    ResolvedQuery,
    /// What the references resolved to, ` | `-separated.
    #[serde(rename = "resolutions")]
    Resolutions,
}

impl Note {
    /// Every note, in name order.
    pub const ALL: [Note; 8] = [
        Note::TierBlend,
        Note::TurnIntent,
        Note::ReferencesResolved,
        Note::ActiveThread,
        Note::Mode,
        Note::IntentRule,
        Note::ResolvedQuery,
        Note::Resolutions,
    ];

    /// The name in records and breakdowns (the spec's header name for the five headers).
    pub const fn name(self) -> &'static str {
        match self {
            Note::TierBlend => "CRP-Context-Tier-Blend",
            Note::TurnIntent => "CRP-Context-Turn-Intent",
            Note::ReferencesResolved => "CRP-Context-References-Resolved",
            Note::ActiveThread => "CRP-Context-Active-Thread",
            Note::Mode => "CRP-Context-Mode",
            Note::IntentRule => "intent_rule",
            Note::ResolvedQuery => "resolved_query",
            Note::Resolutions => "resolutions",
        }
    }
}

/// What `select` hands to the LLM: chunk indices in context order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    /// Selected chunks, in order (metrics are computed on this list).
    pub chunks: Vec<u32>,
    /// Heuristic tokens of the selected chunks.
    pub tokens: u64,
}

/// Why a leg cannot be built for a dataset, or cannot retrieve or select for a query.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum LegError {
    /// The export lacks something this leg needs; the cell is recorded as `missing-inputs`.
    #[error("missing inputs: {0}")]
    MissingInputs(String),
    /// The leg's configuration is invalid (names the leg and the field).
    #[error("leg `{leg}`: field `{field}`: {message}")]
    Config {
        /// Leg name.
        leg: String,
        /// Offending field.
        field: String,
        /// What is wrong.
        message: String,
    },
    /// A first-stage engine could not start or answer (an external process that died, timed
    /// out or broke the protocol); the cell is recorded as `error` with this reason.
    #[error("{0}")]
    Engine(EngineError),
    /// A part of the export read on demand (the chunks' texts or vectors) could not be read:
    /// its file no longer matches the manifest's hash, or does not decode. The cell is recorded
    /// as `error` with the message, which names the file.
    #[error("{0}")]
    Export(std::sync::Arc<hopbench_datasets::Error>),
    /// The rerank stage could not rescore a query's candidates (a reranker that failed, gave
    /// another count of scores or a score that is not a number); the cell is recorded as
    /// `error`, never as the unreranked order.
    #[error("reranker `{reranker}` on query {query}: {message}")]
    Rerank {
        /// The reranker's name.
        reranker: String,
        /// The query's id.
        query: String,
        /// What went wrong.
        message: String,
    },
}

impl From<hopbench_datasets::Error> for LegError {
    /// The export's error itself (a repeated one unwrapped: it displays as its first).
    fn from(e: hopbench_datasets::Error) -> Self {
        match e {
            hopbench_datasets::Error::Repeated(first) => LegError::Export(first),
            e => LegError::Export(std::sync::Arc::new(e)),
        }
    }
}

impl LegError {
    /// Whether this only repeats an earlier failure of the same leg
    /// ([`EngineError::is_consequence`]).
    pub fn is_consequence(&self) -> bool {
        matches!(self, LegError::Engine(e) if e.is_consequence())
    }
}

impl From<EngineError> for LegError {
    fn from(e: EngineError) -> Self {
        LegError::Engine(e)
    }
}

/// A retrieval system of the matrix. Implementations hold an `Arc<Export>` and precomputed
/// state; `retrieve` and `select` must be deterministic functions of their arguments.
pub trait Leg: Send + Sync {
    /// The export the leg retrieves from (the default selector counts its chunks' tokens).
    fn export(&self) -> &Export;

    /// Retrieves and ranks candidates for one query (the expensive half). An error (a
    /// first-stage engine that could not answer) makes the cell `error`, never zeros.
    fn retrieve(&self, query: &QueryInput<'_>) -> Result<Retrieval, LegError>;

    /// Chooses the context for one query from a frozen retrieval (the cheap, pure half).
    /// `budget` is a token budget for selecting legs. The default is the seed's `none`
    /// selector: the ranked list unchanged, whatever the budget. An error means the leg's
    /// composition cannot select (e.g. chain-of-evidence without hypergraph signals): the cell
    /// is recorded as `error`, never as zeros.
    fn select(
        &self,
        _query: &QueryInput<'_>,
        retrieval: &Retrieval,
        _budget: Option<u64>,
    ) -> Result<Selection, LegError> {
        Ok(select_none(self.export(), retrieval))
    }

    /// The rerank stage between `retrieve` and `select` ([`crate::rerank`]): the retrieval
    /// with its base's first candidates rescored. The default, for a leg without the stage,
    /// is the retrieval unchanged.
    fn rerank(&self, _query: &QueryInput<'_>, retrieval: Retrieval) -> Result<Retrieval, LegError> {
        Ok(retrieval)
    }

    /// Whether the leg has a rerank stage (its cells then report `rerank_ms`).
    fn has_rerank(&self) -> bool {
        false
    }

    /// The token budget `select` spends when none is given (`None`: the leg does not select
    /// under a budget; such legs get no budget curve).
    fn default_budget(&self) -> Option<u64> {
        None
    }
}

/// The retrieve half alone: a ranking block (the hybrid, graph rescue, a fused lane, a
/// conversation session). [`Ranked`] makes one a leg with the `none` selector.
pub trait Ranker: Send + Sync {
    /// Retrieves and ranks candidates for one query (errors as [`Leg::retrieve`]).
    fn retrieve(&self, query: &QueryInput<'_>) -> Result<Retrieval, LegError>;
}

/// A [`Ranker`] as a leg: its ranking, selected by `none`.
pub struct Ranked<R> {
    export: Arc<Export>,
    ranker: R,
}

impl<R: Ranker + 'static> Ranked<R> {
    /// `ranker` over `export`, boxed as a leg.
    pub fn leg(export: &Arc<Export>, ranker: R) -> Box<dyn Leg> {
        Box::new(Ranked {
            export: export.clone(),
            ranker,
        })
    }
}

impl<R: Ranker> Leg for Ranked<R> {
    fn export(&self) -> &Export {
        &self.export
    }
    fn retrieve(&self, query: &QueryInput<'_>) -> Result<Retrieval, LegError> {
        self.ranker.retrieve(query)
    }
}

/// The `none` selector: the ranked list unchanged, with its token count.
pub fn select_none(export: &Export, retrieval: &Retrieval) -> Selection {
    let chunks: Vec<u32> = retrieval.ranked.iter().map(|c| c.chunk).collect();
    let tokens = chunks
        .iter()
        .map(|&c| export.chunks[c as usize].tokens as u64)
        .sum();
    Selection { chunks, tokens }
}
