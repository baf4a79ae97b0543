//! Per-query evaluation: one leg's selection for one query -> one [`QueryResult`] row.
//!
//! The document view (which document a chunk belongs to) is derived here, from the export, and
//! never by a leg, so every leg's document numbers use the identical map (the seed's rule).

use std::collections::{BTreeMap, BTreeSet};

use hopbench_datasets::export::{Export, QueryRecord};
use hopbench_legs::Selection;

use crate::metrics;

/// The cut-off of `tokens@10`: the prefix the @10 metrics read.
pub const CUT: usize = 10;

/// Names of the quality metrics, in report order, for a given recall k list (the summary's
/// keys and the records' columns; [`evaluate`] fills exactly these).
pub fn metric_names(recall_k: &[usize]) -> Vec<String> {
    metrics::measured(recall_k)
        .iter()
        .map(|m| m.name())
        .collect()
}

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
    /// The query's dataset labels (breakdowns group on them).
    pub labels: BTreeMap<String, String>,
    /// The leg's per-query text facts ([`hopbench_legs::Retrieval::annotations`]).
    pub annotations: BTreeMap<String, String>,
}

/// Evaluates `selection` for query `q` of `export`: every metric of
/// [`metrics::measured`]`(recall_k)`, keyed by [`metric_names`].
pub fn evaluate(
    export: &Export,
    q: &QueryRecord,
    selection: &Selection,
    recall_k: &[usize],
) -> BTreeMap<String, Option<f64>> {
    score(export, q, selection, &metrics::measured(recall_k))
}

/// The values of `which` for `selection` of query `q`, keyed by metric name.
pub fn score(
    export: &Export,
    q: &QueryRecord,
    selection: &Selection,
    which: &[metrics::At],
) -> BTreeMap<String, Option<f64>> {
    let gold: BTreeSet<u32> = q.gold.iter().copied().collect();
    let doc_of = |c: u32| export.doc_of(c);
    let judged = metrics::Judged {
        ranked: &selection.chunks,
        gold: &gold,
        doc_of: &doc_of,
        chain: q.chain.as_deref(),
    };
    which.iter().map(|m| (m.name(), m.score(&judged))).collect()
}

/// Tokens of the first `n` selected chunks.
pub fn tokens_of_prefix(export: &Export, selection: &Selection, n: usize) -> u64 {
    selection
        .chunks
        .iter()
        .take(n)
        .map(|&c| export.chunks[c as usize].tokens as u64)
        .sum()
}
