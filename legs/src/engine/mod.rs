//! First-stage engines: where candidates come from.
//!
//! An [`Engine`] answers "the top `k` chunks for this query, with scores" and nothing else, so a
//! leg that composes a first stage (the hybrid, graph rescue, the packers, CDR's relevance,
//! the conversation legs) does not care what answers: the exact dense scan ([`exact`]) and the
//! BM25 index ([`bm25`]) are the two built in, and an approximate index or an external process
//! can stand in for either without any leg changing (grep-searcher drives any `Matcher` the
//! same way).
//!
//! The contract every engine keeps: at most `k` candidates, in
//! [`rank_order`](crate::candidate::rank_order) (score descending, ties on ascending chunk index),
//! a deterministic function of the query and the engine's state.

use crate::candidate::Candidate;
use crate::leg::QueryInput;

pub mod bm25;
pub mod exact;

pub use bm25::Bm25;
pub use exact::{ExactDense, Vectors};

/// A source of first-stage candidates.
pub trait Engine: Send + Sync {
    /// The engine's name as recorded in diagnostics and errors (`exact`, `bm25`).
    fn name(&self) -> &'static str;

    /// The top `k` chunks for `query`, in rank order.
    fn search(&self, query: &QueryInput<'_>, k: usize) -> Vec<Candidate>;
}
