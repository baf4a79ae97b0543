//! Per-query evaluation: one leg's selection for one query -> one [`crate::measure::query::QueryResult`] row.
//!
//! The document view (which document a chunk belongs to) is derived here, from the export, and
//! never by a leg, so every leg's document numbers use the identical map (the seed's rule).

use std::collections::{BTreeMap, BTreeSet};

use hopbench_datasets::export::{Export, QueryRecord};
use hopbench_legs::{LegError, Selection};

use crate::measure::measures::Graded;
use crate::measure::metrics;

/// The cut-off of `tokens@10`: the prefix the @10 metrics read.
pub const CUT: usize = 10;

/// Why one query of a cell failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryFailure {
    /// The message: an engine's error already names the query and the command it ran, any
    /// other gets the query prefixed.
    pub reason: String,
    /// It only repeats an earlier failure ([`LegError::is_consequence`]).
    pub consequence: bool,
}

impl QueryFailure {
    /// The failure of leg error `e` on query `query_id`.
    pub fn of(query_id: &str, e: &LegError) -> QueryFailure {
        QueryFailure {
            reason: match e {
                LegError::Engine(_) => e.to_string(),
                _ => format!("query {query_id}: {e}"),
            },
            consequence: e.is_consequence(),
        }
    }
}

/// The reason an `error` cell records, from its queries' failures in query order: the first
/// that is not a consequence of another. Queries run in parallel, so when an engine's process
/// fails, a query earlier in the order may have been refused after it; the cause is reported.
pub fn cell_failure(failures: impl IntoIterator<Item = QueryFailure>) -> Option<String> {
    let mut first = None;
    for f in failures {
        if !f.consequence {
            return Some(f.reason);
        }
        first.get_or_insert(f.reason);
    }
    first
}

/// Evaluates `selection` for query `q` of `export`: every metric of
/// [`metrics::measured`]`(recall_k, extra)`, keyed by [`metrics::metric_names`].
pub fn evaluate(
    export: &Export,
    q: &QueryRecord,
    selection: &Selection,
    recall_k: &[usize],
    extra: &[String],
) -> BTreeMap<String, Option<f64>> {
    score(export, q, selection, &metrics::measured(recall_k, extra))
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
    // graded gold: nDCG's gain is the grade (trec_eval's ndcg_cut); the binary measures read
    // the same gold, relevant at grade 1 and above
    let graded = q
        .grades
        .as_deref()
        .map(|grades| Graded::from_sorted_gold(&selection.chunks, &q.gold, grades));
    let judged = metrics::Judged {
        ranked: &selection.chunks,
        gold: &gold,
        doc_of: &doc_of,
        chain: q.chain.as_deref(),
        graded: graded.as_ref(),
        level: 1,
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

#[cfg(test)]
mod tests {
    use hopbench_legs::engine::{EngineError, Failure};

    use super::*;

    fn engine(query: &str, failure: Failure) -> LegError {
        LegError::from(EngineError {
            engine: "external lexical engine",
            command: "python3 b.py".into(),
            query_id: Some(query.into()),
            failure: Box::new(failure),
        })
    }

    #[test]
    fn a_cell_reports_the_failure_that_caused_the_others() {
        let cause = engine("q7", Failure::MissingField("results".into()));
        let after = engine(
            "q2",
            Failure::Stopped {
                query: "q7".into(),
                first: Box::new(Failure::MissingField("results".into())),
            },
        );
        let failures = [
            QueryFailure::of("q2", &after),
            QueryFailure::of("q7", &cause),
        ];
        assert!(failures[0].consequence && !failures[1].consequence);
        let reason = cell_failure(failures).unwrap();
        assert_eq!(
            reason,
            "external lexical engine `python3 b.py`, request for query `q7`: the answer has no `results`"
        );
        // a leg's own error gets the query named
        let own = LegError::MissingInputs("no vectors".into());
        assert_eq!(
            cell_failure([QueryFailure::of("q1", &own)]).unwrap(),
            "query q1: missing inputs: no vectors"
        );
        // only consequences: the first in query order
        let only = [QueryFailure::of("q2", &after)];
        assert!(cell_failure(only).unwrap().contains("not sent"));
        assert_eq!(cell_failure([]), None);
    }
}
