//! First-stage engines: where candidates come from.
//!
//! An [`Engine`] answers "the top `k` chunks for this query, with scores" and nothing else, so a
//! leg that composes a first stage (the hybrid, graph rescue, the packers, the conversation
//! legs) does not care what answers: the exact dense scan ([`exact`]) and the BM25 index
//! ([`bm25`]) are built in, Qdrant's HNSW in process ([`qdrant`], with the `qdrant` feature) can
//! answer the dense side, and a process outside ([`external`]) can stand in for either side
//! without any leg changing (grep-searcher drives any `Matcher` the same way). Which engine
//! answers each side is a parameter group of the first stage
//! ([`crate::first_stage::DenseSide`], [`crate::first_stage::LexicalSide`]).
//!
//! The contract every engine keeps: at most `k` candidates, in
//! [`rank_order`](crate::candidate::rank_order) (score descending, ties on ascending chunk index),
//! a deterministic function of the query and the engine's state. The built-in engines cannot
//! fail; an engine outside the process can, and says why ([`EngineError`]): the leg's
//! `retrieve` passes that on and the harness records the cell as `error`.

use crate::candidate::Candidate;
use crate::leg::QueryInput;

pub mod bm25;
pub mod error;
pub mod exact;
pub mod external;
pub mod qdrant;

pub use bm25::Bm25;
pub use error::{EngineError, Failure};
pub use exact::{ExactDense, Vectors};
pub use external::{ExternalEngine, ExternalSpec, Side};
#[cfg(feature = "qdrant")]
pub use qdrant::QdrantDense;
pub use qdrant::QdrantSpec;

/// A source of first-stage candidates.
pub trait Engine: Send + Sync {
    /// The engine's name as recorded in diagnostics and errors (`exact`, `qdrant`, `bm25`,
    /// `external`).
    fn name(&self) -> &'static str;

    /// The top `k` chunks for `query`, in rank order, or why the engine could not answer.
    fn search(&self, query: &QueryInput<'_>, k: usize) -> Result<Vec<Candidate>, EngineError>;
}
