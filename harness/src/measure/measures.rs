//! The measures papers report, over graded judgements, defined as trec_eval defines them, one
//! pure function each. [`crate::measure::metrics::METRICS`] gives each of them a row.
//!
//! A query is a [`Graded`]: the grade of the document at each rank (`None`: not judged) and the
//! grades of every judged document. The rules, which are trec_eval's:
//!
//! * a document is *relevant* when its grade is at least the relevance level (`level`, 1 unless
//!   chosen otherwise); the binary measures (AP, P, R, RR, R-precision, success, bpref, the
//!   relevant counts) read only that;
//! * nDCG uses the grade itself as the gain, whatever the level: DCG sums `grade / log2(i + 2)`
//!   over the 0-based ranks `i` of documents with a positive grade, the ideal DCG is the same sum
//!   over every judged grade sorted descending, negative grades gain 0;
//! * a negative grade is judged *and* non-relevant for the graded gain (it gains 0) but, as in
//!   trec_eval, it is neither relevant nor judged non-relevant for bpref (trec_eval reads a
//!   negative judgement as "in the pool, not judged");
//! * a cut-off `k` reads the first `k` ranks; a cut-off beyond the ranking reads all of it;
//!   precision divides by `k` even then (the unretrieved ranks count as not relevant);
//! * a document listed twice counts at its first rank only: [`Graded::from_ids`] reads a
//!   repeat as unjudged (it keeps its rank and gains nothing);
//! * a measure normalised by the relevant count (AP, R, R-precision, bpref) or by the ideal DCG
//!   (nDCG) is undefined (`None`) where that is 0: a query with nothing to find has no recall,
//!   not a recall of 0. trec_eval prints 0 there. The others (P, RR, success, judged, the
//!   counts) are defined on every query.

use std::collections::{BTreeSet, HashMap};

/// One query's ranking resolved against its graded judgements.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Graded {
    /// The grade of the document at each rank, in rank order (`None`: not judged, or a repeat
    /// of a document ranked earlier).
    pub ranked: Vec<Option<i64>>,
    /// The grade of every judged document of the query, sorted descending.
    pub judged: Vec<i64>,
}

impl Graded {
    /// From the grades of the ranked documents, in rank order, and of every judged document
    /// (any order).
    pub fn new(ranked: Vec<Option<i64>>, mut judged: Vec<i64>) -> Graded {
        judged.sort_unstable_by(|a, b| b.cmp(a));
        Graded { ranked, judged }
    }

    /// From a ranking of document ids and the judgements `grades` (document id -> grade): a
    /// repeated id is unjudged at its later ranks.
    pub fn from_ids(ranked: &[u32], grades: &HashMap<u32, i64>) -> Graded {
        let mut seen = BTreeSet::new();
        let ranks = ranked
            .iter()
            .map(|&d| {
                if seen.insert(d) {
                    grades.get(&d).copied()
                } else {
                    None
                }
            })
            .collect();
        Graded::new(ranks, grades.values().copied().collect())
    }

    /// A ranking of chunk indices against graded gold: `gold` ascending and unique, `grades`
    /// the grade of each (the export's [`hopbench_datasets::export::QueryRecord`]); no other
    /// document is judged, and a repeated chunk is unjudged at its later ranks.
    pub fn from_sorted_gold(ranked: &[u32], gold: &[u32], grades: &[u32]) -> Graded {
        debug_assert_eq!(gold.len(), grades.len());
        let mut seen = BTreeSet::new();
        let ranks = ranked
            .iter()
            .map(|c| {
                let i = gold.binary_search(c).ok()?;
                seen.insert(*c).then_some(grades[i] as i64)
            })
            .collect();
        Graded::new(ranks, grades.iter().map(|&g| g as i64).collect())
    }

    /// Binary judgements: every id of `gold` has grade 1, no other document is judged.
    pub fn from_gold(ranked: &[u32], gold: &BTreeSet<u32>) -> Graded {
        let mut seen = BTreeSet::new();
        let ranks = ranked
            .iter()
            .map(|&d| (gold.contains(&d) && seen.insert(d)).then_some(1))
            .collect();
        Graded {
            ranked: ranks,
            judged: vec![1; gold.len()],
        }
    }

    /// The first `k` ranks (all of them for `None` or a `k` beyond the ranking).
    fn top(&self, k: Option<usize>) -> &[Option<i64>] {
        let n = k.map_or(self.ranked.len(), |k| k.min(self.ranked.len()));
        &self.ranked[..n]
    }

    /// Whether rank `r` holds a relevant document at `level`.
    fn is_rel(r: &Option<i64>, level: i64) -> bool {
        r.is_some_and(|g| g >= level)
    }
}

// Sums start at +0.0 (`fold`), not at `Iterator::sum`'s -0.0: an empty DCG is 0, never -0.

/// Gain discount of 0-based rank `i`: `1/log2(i+2)`.
fn discount(i: usize) -> f64 {
    1.0 / ((i + 2) as f64).log2()
}

/// Documents retrieved (trec_eval's `num_ret`).
pub fn num_ret(q: &Graded) -> f64 {
    q.ranked.len() as f64
}

/// Judged documents with a grade of at least `level` (`num_rel`).
pub fn num_rel(q: &Graded, level: i64) -> f64 {
    q.judged.iter().filter(|&&g| g >= level).count() as f64
}

/// Relevant documents retrieved in the first `k` ranks (`num_rel_ret` for `None`).
pub fn num_rel_ret(q: &Graded, level: i64, k: Option<usize>) -> f64 {
    q.top(k).iter().filter(|r| Graded::is_rel(r, level)).count() as f64
}

/// nDCG with gain = grade (trec_eval's `ndcg`, and `ndcg_cut_k` for `Some(k)`): DCG of the
/// first `k` ranks over the DCG of the first `k` judged grades sorted descending. `None` when
/// no judged grade is positive.
pub fn ndcg(q: &Graded, k: Option<usize>) -> Option<f64> {
    let gain = |g: i64| g.max(0) as f64;
    let dcg: f64 = q
        .top(k)
        .iter()
        .enumerate()
        .filter_map(|(i, r)| r.map(|g| gain(g) * discount(i)))
        .fold(0.0, |a, b| a + b);
    let n = k.map_or(q.judged.len(), |k| k.min(q.judged.len()));
    let ideal: f64 = q.judged[..n]
        .iter()
        .enumerate()
        .map(|(i, &g)| gain(g) * discount(i))
        .fold(0.0, |a, b| a + b);
    (ideal > 0.0).then(|| dcg / ideal)
}

/// Average precision (trec_eval's `map`; `map_cut_k` for `Some(k)`): the precision at the rank
/// of each relevant document in the first `k`, summed, over the number of relevant documents
/// (all of them, retrieved or not, also with a cut-off). `None` without a relevant document.
pub fn ap(q: &Graded, level: i64, k: Option<usize>) -> Option<f64> {
    let rel = num_rel(q, level);
    if rel == 0.0 {
        return None;
    }
    let mut found = 0usize;
    let mut sum = 0.0;
    for (i, r) in q.top(k).iter().enumerate() {
        if Graded::is_rel(r, level) {
            found += 1;
            sum += found as f64 / (i + 1) as f64;
        }
    }
    Some(sum / rel)
}

/// Precision at `k` (`P_k`): relevant documents in the first `k` ranks over `k`, also when
/// fewer than `k` are retrieved. `k` must be positive.
pub fn precision(q: &Graded, level: i64, k: usize) -> f64 {
    num_rel_ret(q, level, Some(k)) / k as f64
}

/// Recall at `k` (`recall_k`): relevant documents in the first `k` ranks over the relevant
/// documents. `None` without a relevant document.
pub fn recall(q: &Graded, level: i64, k: usize) -> Option<f64> {
    let rel = num_rel(q, level);
    (rel > 0.0).then(|| num_rel_ret(q, level, Some(k)) / rel)
}

/// R-precision (`Rprec`): precision at rank R, R the number of relevant documents. `None`
/// without a relevant document.
pub fn rprec(q: &Graded, level: i64) -> Option<f64> {
    let rel = num_rel(q, level);
    (rel > 0.0).then(|| num_rel_ret(q, level, Some(rel as usize)) / rel)
}

/// Reciprocal rank (`recip_rank`; cut at `k` for `Some(k)`): `1 / rank` of the first relevant
/// document in the first `k` ranks, 0 when there is none.
pub fn rr(q: &Graded, level: i64, k: Option<usize>) -> f64 {
    q.top(k)
        .iter()
        .position(|r| Graded::is_rel(r, level))
        .map_or(0.0, |i| 1.0 / (i + 1) as f64)
}

/// Success at `k` (`success_k`): 1 when a relevant document is in the first `k` ranks, else 0.
pub fn success(q: &Graded, level: i64, k: usize) -> f64 {
    if num_rel_ret(q, level, Some(k)) > 0.0 {
        1.0
    } else {
        0.0
    }
}

/// Judged at `k` (ir_measures' `Judged@k`): the judged documents in the first `k` ranks over
/// `k` (an unretrieved rank is not judged), whatever their grade, negative ones included.
/// `k` must be positive.
pub fn judged(q: &Graded, k: usize) -> f64 {
    q.top(Some(k)).iter().filter(|r| r.is_some()).count() as f64 / k as f64
}

/// Bpref (trec_eval's `bpref`): for each relevant retrieved document, one minus the judged
/// non-relevant documents ranked above it (at most R of them) over `min(R, N)`, summed and
/// divided by R; R the relevant documents, N the judged non-relevant ones (grades from 0 to
/// `level - 1`; negative grades are neither, as trec_eval reads them). Unjudged ranks are
/// skipped. `None` without a relevant document.
pub fn bpref(q: &Graded, level: i64) -> Option<f64> {
    let rel = num_rel(q, level);
    if rel == 0.0 {
        return None;
    }
    let nonrel = q
        .judged
        .iter()
        .filter(|&&g| (0..level).contains(&g))
        .count() as f64;
    let mut above = 0.0f64;
    let mut sum = 0.0;
    for r in q.ranked.iter().flatten() {
        if *r >= level {
            sum += if above > 0.0 {
                1.0 - above.min(rel) / rel.min(nonrel)
            } else {
                1.0
            };
        } else if *r >= 0 {
            above += 1.0;
        }
    }
    Some(sum / rel)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOL: f64 = 1e-12;

    fn close(a: f64, b: f64) {
        assert!((a - b).abs() < TOL, "{a} != {b}");
    }

    fn some(a: Option<f64>, b: f64) {
        close(a.expect("defined"), b);
    }

    /// `1/log2(i+2)` of the 0-based rank `i`.
    fn d(i: usize) -> f64 {
        1.0 / ((i + 2) as f64).log2()
    }

    /// Ranks: 0:-1 1:unjudged 2:grade 2 3:grade 0 4:grade 1 ; judged: 2, 1, 3 (not retrieved),
    /// 0, -1, 0 (not retrieved).
    fn query() -> Graded {
        Graded::new(
            vec![Some(-1), None, Some(2), Some(0), Some(1)],
            vec![-1, 2, 0, 1, 3, 0],
        )
    }

    #[test]
    fn counts() {
        let q = query();
        close(num_ret(&q), 5.0);
        close(num_rel(&q, 1), 3.0);
        close(num_rel(&q, 2), 2.0);
        close(num_rel_ret(&q, 1, None), 2.0);
        close(num_rel_ret(&q, 1, Some(3)), 1.0);
        close(num_rel_ret(&q, 3, None), 0.0);
    }

    #[test]
    fn ndcg_uses_the_grade_as_gain() {
        let q = query();
        // DCG = 2·d(2) + 1·d(4); ideal: grades 3, 2, 1 at ranks 0, 1, 2 (0 and -1 gain 0)
        let ideal = 3.0 * d(0) + 2.0 * d(1) + d(2);
        some(ndcg(&q, None), (2.0 * d(2) + d(4)) / ideal);
        // cut at 3: DCG 2·d(2); the ideal's first 3 grades are the same
        some(ndcg(&q, Some(3)), 2.0 * d(2) / ideal);
        // cut at 1: nothing gained; ideal 3·d(0)
        some(ndcg(&q, Some(1)), 0.0);
        // a cut-off beyond the ranking and the judgements is the uncut value
        assert_eq!(ndcg(&q, Some(100)), ndcg(&q, None));
        // the relevance level does not enter: only positive grades gain
        let negative = Graded::new(vec![Some(-3), Some(0)], vec![-3, 0]);
        assert_eq!(ndcg(&negative, None), None);
        // grade 1 everywhere is binary nDCG
        let binary = Graded::new(vec![None, Some(1), Some(1)], vec![1, 1, 1]);
        some(ndcg(&binary, None), (d(1) + d(2)) / (d(0) + d(1) + d(2)));
    }

    #[test]
    fn ap_precision_recall_rprec() {
        let q = query();
        // relevant (>= 1) at ranks 3 and 5 of 3 relevant: (1/3 + 2/5) / 3
        some(ap(&q, 1, None), (1.0 / 3.0 + 2.0 / 5.0) / 3.0);
        // AP@3 still divides by all 3 relevant documents
        some(ap(&q, 1, Some(3)), (1.0 / 3.0) / 3.0);
        // level 2: relevant are the grades 2 and 3; only rank 3 is retrieved: (1/3) / 2
        some(ap(&q, 2, None), (1.0 / 3.0) / 2.0);
        close(precision(&q, 1, 3), 1.0 / 3.0);
        close(precision(&q, 1, 5), 2.0 / 5.0);
        // beyond the ranking, still over k
        close(precision(&q, 1, 10), 2.0 / 10.0);
        some(recall(&q, 1, 3), 1.0 / 3.0);
        some(recall(&q, 1, 1000), 2.0 / 3.0);
        // R = 3: one relevant in the first 3 ranks
        some(rprec(&q, 1), 1.0 / 3.0);
        // R = 2 at level 2: none in the first 2
        some(rprec(&q, 2), 0.0);
    }

    #[test]
    fn rr_success_judged() {
        let q = query();
        close(rr(&q, 1, None), 1.0 / 3.0);
        close(rr(&q, 1, Some(2)), 0.0);
        close(rr(&q, 1, Some(3)), 1.0 / 3.0);
        close(rr(&q, 3, None), 0.0);
        close(success(&q, 1, 2), 0.0);
        close(success(&q, 1, 3), 1.0);
        // judged: ranks 0 (grade -1), 2, 3, 4; rank 1 unjudged
        close(judged(&q, 1), 1.0);
        close(judged(&q, 2), 0.5);
        close(judged(&q, 5), 4.0 / 5.0);
        close(judged(&q, 10), 4.0 / 10.0);
    }

    #[test]
    fn sorted_gold_with_grades_is_the_id_map() {
        // chunk 4 repeated, 9 unjudged; gold 2 (grade 3), 4 (grade 1), 7 (grade 2)
        let ranked = [4, 9, 2, 4, 7];
        let g = Graded::from_sorted_gold(&ranked, &[2, 4, 7], &[3, 1, 2]);
        assert_eq!(g.ranked, vec![Some(1), None, Some(3), None, Some(2)]);
        assert_eq!(g.judged, vec![3, 2, 1]);
        let map: HashMap<u32, i64> = [(2, 3), (4, 1), (7, 2)].into_iter().collect();
        assert_eq!(g, Graded::from_ids(&ranked, &map));
    }

    #[test]
    fn bpref_hand_computed() {
        // R = 3 (grades 2, 1, 3), N = 2 (the two grade-0 documents; -1 is neither)
        let q = query();
        // rank 2 (grade 2): no judged non-relevant above: 1; rank 4 (grade 1): one (rank 3)
        // above: 1 - 1/min(3, 2)
        some(bpref(&q, 1), (1.0 + (1.0 - 1.0 / 2.0)) / 3.0);
        // level 2: R = 2, N = 3 (grades 0, 1, 0); rank 2 gains 1, rank 4 is non-relevant
        some(bpref(&q, 2), 1.0 / 2.0);
        // more non-relevant above than R: capped at R
        let many = Graded::new(
            vec![Some(0), Some(0), Some(0), Some(1)],
            vec![0, 0, 0, 1, 1],
        );
        some(bpref(&many, 1), (1.0 - 2.0 / 2.0) / 2.0);
        // no judged non-relevant at all: every relevant retrieved gains 1
        let clean = Graded::new(vec![None, Some(1)], vec![1, 1]);
        some(bpref(&clean, 1), 0.5);
    }

    #[test]
    fn no_relevant_document_is_undefined_where_normalised_by_it() {
        let q = Graded::new(vec![Some(0), None], vec![0, -1]);
        assert_eq!(ap(&q, 1, None), None);
        assert_eq!(ap(&q, 1, Some(10)), None);
        assert_eq!(recall(&q, 1, 10), None);
        assert_eq!(rprec(&q, 1), None);
        assert_eq!(bpref(&q, 1), None);
        assert_eq!(ndcg(&q, None), None);
        assert_eq!(ndcg(&q, Some(5)), None);
        // defined: nothing relevant was found
        close(precision(&q, 1, 5), 0.0);
        close(rr(&q, 1, None), 0.0);
        close(success(&q, 1, 5), 0.0);
        close(judged(&q, 2), 0.5);
        close(num_rel(&q, 1), 0.0);
    }

    #[test]
    fn empty_ranking() {
        let q = Graded::new(Vec::new(), vec![1, 2]);
        some(ap(&q, 1, None), 0.0);
        some(ndcg(&q, Some(10)), 0.0);
        some(recall(&q, 1, 10), 0.0);
        some(rprec(&q, 1), 0.0);
        some(bpref(&q, 1), 0.0);
        close(precision(&q, 1, 10), 0.0);
        close(rr(&q, 1, None), 0.0);
        close(judged(&q, 10), 0.0);
        close(num_ret(&q), 0.0);
    }

    #[test]
    fn repeats_count_once_and_ties_are_the_callers_order() {
        let grades: HashMap<u32, i64> = [(5, 2), (7, 1), (9, 0)].into_iter().collect();
        // 5 twice: its second rank is unjudged and gains nothing
        let q = Graded::from_ids(&[5, 5, 7, 9, 11], &grades);
        assert_eq!(q.ranked, [Some(2), None, Some(1), Some(0), None]);
        assert_eq!(q.judged, [2, 1, 0]);
        some(ap(&q, 1, None), (1.0 + 2.0 / 3.0) / 2.0);
        close(precision(&q, 1, 2), 0.5);
        close(judged(&q, 2), 0.5);
        some(ndcg(&q, None), (2.0 + d(2)) / (2.0 + d(1)));
        // binary judgements from a gold set
        let gold: BTreeSet<u32> = [5, 7].into_iter().collect();
        let b = Graded::from_gold(&[7, 7, 3, 5], &gold);
        assert_eq!(b.ranked, [Some(1), None, None, Some(1)]);
        assert_eq!(b.judged, [1, 1]);
    }
}
