//! One query's evaluated result: the row every per-query record, summary statistic, breakdown
//! and comparison is computed from.

use std::collections::BTreeMap;

/// One query's evaluated result.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryResult {
    /// Query id.
    pub id: String,
    /// Metric values by name (`None`: undefined for this query, e.g. no chain).
    pub metrics: BTreeMap<String, Option<f64>>,
    /// Heuristic tokens of the whole selection.
    pub tokens_selected: u64,
    /// Heuristic tokens of the first 10 selected chunks (what the @10 metrics read).
    pub tokens_at_10: u64,
    /// Selection length.
    pub selected: usize,
    /// Leg diagnostics (plus the harness's rescue attribution counts).
    pub diagnostics: BTreeMap<String, f64>,
    /// Record ids of the gold chunks only the rescue lanes reached (`None`: the leg has no
    /// rescue stage).
    pub rescued_gold: Option<Vec<String>>,
    /// The first `keep` selected chunk indices (for run files).
    pub ranked: Vec<u32>,
    /// Wall time of `retrieve` (ms).
    pub retrieve_ms: f64,
    /// Wall time of `select` (ms).
    pub select_ms: f64,
    /// Wall time of the rerank stage (ms), `None` for a leg without one.
    pub rerank_ms: Option<f64>,
    /// The query's dataset labels (breakdowns group on them).
    pub labels: BTreeMap<String, String>,
    /// The leg's per-query text facts ([`hopbench_legs::Retrieval::annotations`]).
    pub annotations: BTreeMap<String, String>,
}
