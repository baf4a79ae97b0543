//! Per-query evaluation: one leg's selection for one query -> one [`QueryResult`] row.
//!
//! The document view (which document a chunk belongs to) is derived here, from the export, and
//! never by a leg, so every leg's document numbers use the identical map (the seed's rule).

use std::collections::{BTreeMap, BTreeSet};

use hopbench_datasets::export::{Export, QueryRecord};
use hopbench_legs::Selection;

use crate::metrics;

/// The cut-off of nDCG, MRR, chain metrics and `tokens@10`.
pub const CUT: usize = 10;

/// Names of the quality metrics, in report order, for a given recall k list.
pub fn metric_names(recall_k: &[usize]) -> Vec<String> {
    let mut names: Vec<String> = recall_k.iter().map(|k| format!("recall@{k}")).collect();
    names.extend(
        [
            "ndcg@10",
            "mrr@10",
            "doc_recall@5",
            "doc_recall@10",
            "chain_coverage@10",
            "full_chain_hit@10",
        ]
        .map(String::from),
    );
    names
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
    /// Record ids of the gold chunks only the rescue lanes reached (rescue legs only).
    pub rescued_gold: Vec<String>,
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

/// Evaluates `selection` for query `q` of `export`.
pub fn evaluate(
    export: &Export,
    q: &QueryRecord,
    selection: &Selection,
    recall_k: &[usize],
) -> BTreeMap<String, Option<f64>> {
    let ranked = &selection.chunks;
    let gold: BTreeSet<u32> = q.gold.iter().copied().collect();
    let doc_of = |c: u32| export.doc_of(c);
    let mut m = BTreeMap::new();
    for &k in recall_k {
        m.insert(
            format!("recall@{k}"),
            Some(metrics::recall_at_k(ranked, &gold, k)),
        );
    }
    m.insert(
        "ndcg@10".into(),
        Some(metrics::ndcg_at_k(ranked, &gold, CUT)),
    );
    m.insert("mrr@10".into(), Some(metrics::mrr_at_k(ranked, &gold, CUT)));
    m.insert(
        "doc_recall@5".into(),
        Some(metrics::doc_recall_at_k(ranked, &gold, doc_of, 5)),
    );
    m.insert(
        "doc_recall@10".into(),
        Some(metrics::doc_recall_at_k(ranked, &gold, doc_of, CUT)),
    );
    let chain = q.chain.as_deref();
    m.insert(
        "chain_coverage@10".into(),
        metrics::chain_coverage_at_k(ranked, chain, CUT),
    );
    m.insert(
        "full_chain_hit@10".into(),
        metrics::full_chain_hit_at_k(ranked, chain, CUT),
    );
    m
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
