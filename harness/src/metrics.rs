//! Per-query retrieval metrics, one pure function each.
//!
//! The definitions follow the graph-rescue seed ("How the metrics are actually
//! computed", `benchmark/s5/metrics.py`) exactly, so a number produced here is the
//! same quantity as the published one.
//!
//! Conventions shared by every function:
//! * `ranked` is a list of chunk indices in rank order (position 0 = best). It may
//!   contain duplicates: a duplicate occupies its position (it still consumes one
//!   of the `k` slots) but gains nothing the second time.
//! * `gold` is a `BTreeSet<u32>` of relevant chunk indices: gold is a *set*,
//!   because the datasets resolve one question to several chunks.
//! * `k` cuts the ranked list to `ranked[..min(k, len)]`; `k` larger than the
//!   ranking is simply the whole ranking, and `k = 0` retrieves nothing.
//! * Empty gold scores 0.0 (as the seed does), never NaN.

use std::collections::BTreeSet;

/// The first `k` positions of `ranked` (all of it when `k >= ranked.len()`).
fn top(ranked: &[u32], k: usize) -> &[u32] {
    &ranked[..k.min(ranked.len())]
}

/// Set recall at k: `|gold ∩ set(ranked[..k])| / |gold|`; 0.0 when gold is empty.
///
/// Set recall means a query whose evidence split into three chunks is not solved
/// by retrieving one of them, and a duplicated chunk is counted once.
pub fn recall_at_k(ranked: &[u32], gold: &BTreeSet<u32>, k: usize) -> f64 {
    if gold.is_empty() {
        return 0.0;
    }
    let hit: BTreeSet<u32> = top(ranked, k)
        .iter()
        .copied()
        .filter(|c| gold.contains(c))
        .collect();
    hit.len() as f64 / gold.len() as f64
}

/// nDCG at k with binary gains.
///
/// `DCG = Σ 1/log2(i+2)` over positions `i < k` whose chunk is gold *and* is that
/// chunk's first occurrence in the ranking (duplicates gain nothing).
/// `IDCG = Σ_{i < min(|gold|, k)} 1/log2(i+2)` — the ideal is capped at
/// `min(|gold|, k)`, so a query with 30 gold chunks cannot score below one with 2
/// merely for having more gold. Result is `DCG / IDCG`, in `[0, 1]`; 0.0 when
/// gold is empty or `k = 0`.
pub fn ndcg_at_k(ranked: &[u32], gold: &BTreeSet<u32>, k: usize) -> f64 {
    let ideal_len = gold.len().min(k);
    if ideal_len == 0 {
        return 0.0;
    }
    let mut seen = BTreeSet::new();
    let mut dcg = 0.0;
    for (i, &c) in top(ranked, k).iter().enumerate() {
        if gold.contains(&c) && seen.insert(c) {
            dcg += discount(i);
        }
    }
    let idcg: f64 = (0..ideal_len).map(discount).sum();
    dcg / idcg
}

/// Gain discount of 0-based position `i`: `1/log2(i+2)`.
fn discount(i: usize) -> f64 {
    1.0 / ((i + 2) as f64).log2()
}

/// Reciprocal rank at k: `1/(i+1)` for the 0-based position `i < k` of the first
/// gold chunk, else 0.0 (also for empty gold).
pub fn mrr_at_k(ranked: &[u32], gold: &BTreeSet<u32>, k: usize) -> f64 {
    top(ranked, k)
        .iter()
        .position(|c| gold.contains(c))
        .map_or(0.0, |i| 1.0 / (i + 1) as f64)
}

/// Document recall at k.
///
/// Both sides are mapped to documents with `doc_of` first:
/// * the ranking becomes a list of distinct documents, first occurrence wins (a
///   document takes the position of its best-ranked chunk);
/// * gold becomes the set of gold chunks' documents;
/// * a chunk whose document is unknown (`None`) is dropped from both sides — a
///   placeholder document would merge every unknown chunk into one fake document
///   and inflate the number.
///
/// Then it is set recall over the *deduplicated document list* cut at `k`
/// (`k` counts documents, not chunks): `|gold_docs ∩ docs[..k]| / |gold_docs|`;
/// 0.0 when there are no gold documents.
pub fn doc_recall_at_k(
    ranked: &[u32],
    gold: &BTreeSet<u32>,
    doc_of: impl Fn(u32) -> Option<u32>,
    k: usize,
) -> f64 {
    let gold_docs: BTreeSet<u32> = gold.iter().filter_map(|&c| doc_of(c)).collect();
    if gold_docs.is_empty() {
        return 0.0;
    }
    let mut seen = BTreeSet::new();
    let hits = ranked
        .iter()
        .filter_map(|&c| doc_of(c))
        .filter(|d| seen.insert(*d))
        .take(k)
        .filter(|d| gold_docs.contains(d))
        .count();
    hits as f64 / gold_docs.len() as f64
}

/// Number of chain slots covered in the top k, and the number of slots.
/// `None` when there is no chain or it has zero slots.
fn chain_slots_covered(
    ranked: &[u32],
    chain: Option<&[Vec<u32>]>,
    k: usize,
) -> Option<(usize, usize)> {
    let chain = chain.filter(|c| !c.is_empty())?;
    let topk: BTreeSet<u32> = top(ranked, k).iter().copied().collect();
    let covered = chain
        .iter()
        .filter(|slot| slot.iter().any(|c| topk.contains(c)))
        .count();
    Some((covered, chain.len()))
}

/// Chain coverage at k: the fraction of the gold chain's slots (hops) with at
/// least one of the slot's chunks in `ranked[..k]`.
///
/// `None` when the dataset publishes no chain (`chain` is `None`) or the chain has
/// zero slots — "no chain" is undefined, never 0.0. An *empty* slot (a hop whose
/// gold did not resolve to any chunk) still counts in the denominator and is never
/// covered: the hop exists, the retriever just cannot be credited for it.
pub fn chain_coverage_at_k(ranked: &[u32], chain: Option<&[Vec<u32>]>, k: usize) -> Option<f64> {
    chain_slots_covered(ranked, chain, k).map(|(c, n)| c as f64 / n as f64)
}

/// Full-chain hit at k: 1.0 iff every slot of the chain is covered in
/// `ranked[..k]` (see [`chain_coverage_at_k`]), else 0.0. This separates a
/// multi-hop retriever from a lucky single-hop one. `None` exactly when
/// `chain_coverage_at_k` is `None`; a chain with an empty slot never hits.
pub fn full_chain_hit_at_k(ranked: &[u32], chain: Option<&[Vec<u32>]>, k: usize) -> Option<f64> {
    chain_slots_covered(ranked, chain, k).map(|(c, n)| if c == n { 1.0 } else { 0.0 })
}

/// Arithmetic mean, summed sequentially in iteration order (deterministic).
/// `None` for no values rather than NaN.
pub fn mean(values: impl IntoIterator<Item = f64>) -> Option<f64> {
    let (sum, n) = values
        .into_iter()
        .fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    (n > 0).then(|| sum / n as f64)
}

/// Mean over the defined values of an optional metric.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MeanOpt {
    /// Mean of the `Some` values; `None` when no value was defined.
    pub mean: Option<f64>,
    /// How many values were `Some` (the mean's denominator).
    pub defined: usize,
    /// How many values were seen in total (`Some` and `None`).
    pub total: usize,
}

/// Mean of only the `Some` values (e.g. chain metrics, undefined on queries
/// without a chain), so undefined queries neither count as 0.0 nor dilute the
/// denominator. Reports how many values were defined.
pub fn mean_opt(values: impl IntoIterator<Item = Option<f64>>) -> MeanOpt {
    let mut total = 0;
    let mut defined = 0;
    let mut sum = 0.0;
    for v in values {
        total += 1;
        if let Some(v) = v {
            defined += 1;
            sum += v;
        }
    }
    MeanOpt {
        mean: (defined > 0).then(|| sum / defined as f64),
        defined,
        total,
    }
}

/// The `p`-th percentile (`p` in `[0, 100]`) by linear interpolation between
/// closest ranks — numpy's default (`method="linear"`): with the values sorted
/// ascending as `v[0..n]`, `h = (n-1)·p/100`, result `v[⌊h⌋] + (h-⌊h⌋)·(v[⌊h⌋+1] - v[⌊h⌋])`.
/// `None` for no values, a NaN value, or `p` outside `[0, 100]`.
pub fn percentile(values: &[f64], p: f64) -> Option<f64> {
    if values.is_empty() || values.iter().any(|v| v.is_nan()) || !(0.0..=100.0).contains(&p) {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let h = (v.len() - 1) as f64 * p / 100.0;
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(v.len() - 1);
    Some(v[lo] + (h - lo as f64) * (v[hi] - v[lo]))
}

/// Median = [`percentile`] at 50 (mean of the two middle values for even n).
pub fn median(values: &[f64]) -> Option<f64> {
    percentile(values, 50.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOL: f64 = 1e-12;

    fn set(v: &[u32]) -> BTreeSet<u32> {
        v.iter().copied().collect()
    }

    fn close(a: f64, b: f64) {
        assert!((a - b).abs() < TOL, "{a} != {b}");
    }

    /// 1/log2(i+2) written out for the positions the tests use.
    fn d(i: usize) -> f64 {
        1.0 / ((i + 2) as f64).log2()
    }

    #[test]
    fn recall_basic_and_duplicates() {
        let gold = set(&[1, 2, 3]);
        // top-3 = [1, 1, 2] -> {1, 2}: 2/3 (the duplicate 1 used a slot, gained nothing).
        close(recall_at_k(&[1, 1, 2, 3], &gold, 3), 2.0 / 3.0);
        // top-4 reaches 3: 3/3.
        close(recall_at_k(&[1, 1, 2, 3], &gold, 4), 1.0);
        // k larger than the ranking: whole ranking [9, 2] -> {2}: 1/3.
        close(recall_at_k(&[9, 2], &gold, 100), 1.0 / 3.0);
        // k = 0 retrieves nothing.
        close(recall_at_k(&[1, 2], &gold, 0), 0.0);
    }

    #[test]
    fn empty_gold_and_empty_ranking() {
        let empty = BTreeSet::new();
        let gold = set(&[4]);
        assert_eq!(recall_at_k(&[1, 2], &empty, 10), 0.0);
        assert_eq!(ndcg_at_k(&[1, 2], &empty, 10), 0.0);
        assert_eq!(mrr_at_k(&[1, 2], &empty, 10), 0.0);
        assert_eq!(doc_recall_at_k(&[1, 2], &empty, Some, 10), 0.0);
        assert_eq!(recall_at_k(&[], &gold, 10), 0.0);
        assert_eq!(ndcg_at_k(&[], &gold, 10), 0.0);
        assert_eq!(mrr_at_k(&[], &gold, 10), 0.0);
        assert_eq!(doc_recall_at_k(&[], &gold, Some, 10), 0.0);
    }

    #[test]
    fn ndcg_hand_computed() {
        let gold = set(&[5, 7]);
        // Hits at positions 1 and 2: DCG = 1/log2(3) + 1/log2(4) = 1/log2(3) + 1/2.
        // IDCG = 1/log2(2) + 1/log2(3) = 1 + 1/log2(3).
        let want = (1.0 / 3f64.log2() + 0.5) / (1.0 + 1.0 / 3f64.log2());
        close(ndcg_at_k(&[0, 5, 7], &gold, 10), want);
        // Perfect ranking is exactly 1.
        close(ndcg_at_k(&[7, 5, 0], &gold, 10), 1.0);
    }

    #[test]
    fn ndcg_duplicates_gain_once() {
        let gold = set(&[5, 7]);
        // [5, 5, 7]: pos 0 gains d(0)=1, pos 1 is a duplicate (0), pos 2 gains d(2)=1/2.
        // DCG = 1.5; IDCG = 1 + 1/log2(3).
        close(
            ndcg_at_k(&[5, 5, 7], &gold, 10),
            1.5 / (1.0 + 1.0 / 3f64.log2()),
        );
        // Without first-occurrence, [5, 5] would score (1 + 1/log2 3)/IDCG = 1 with
        // only half the gold: it must be 1/(1 + 1/log2 3) instead.
        close(ndcg_at_k(&[5, 5], &gold, 10), 1.0 / (1.0 + d(1)));
    }

    #[test]
    fn ndcg_ideal_capped_when_gold_larger_than_k() {
        // 30 gold chunks, k = 2: IDCG = d(0) + d(1), so two hits in the top 2 give 1.0.
        let gold: BTreeSet<u32> = (0..30).collect();
        close(ndcg_at_k(&[3, 4, 99], &gold, 2), 1.0);
        // One hit at position 1 of 2: d(1) / (d(0) + d(1)) = (1/log2 3)/(1 + 1/log2 3).
        close(ndcg_at_k(&[99, 4], &gold, 2), d(1) / (d(0) + d(1)));
        // Never above 1 even with many hits beyond k in the list.
        assert!(ndcg_at_k(&(0..30).collect::<Vec<_>>(), &gold, 10) <= 1.0 + TOL);
    }

    #[test]
    fn ndcg_k_larger_than_ranking() {
        // gold {1,2,3}, k = 10, ranking [1] only: DCG = 1; IDCG = d0+d1+d2 = 1 + 1/log2 3 + 1/2.
        let gold = set(&[1, 2, 3]);
        close(ndcg_at_k(&[1], &gold, 10), 1.0 / (1.0 + d(1) + 0.5));
    }

    #[test]
    fn mrr_hand_computed() {
        let gold = set(&[8]);
        // First gold at position 2 -> 1/3.
        close(mrr_at_k(&[1, 1, 8, 8], &gold, 10), 1.0 / 3.0);
        // Outside the top 2 -> 0.
        close(mrr_at_k(&[1, 1, 8], &gold, 2), 0.0);
        close(mrr_at_k(&[8], &gold, 1), 1.0);
    }

    #[test]
    fn doc_recall_dedup_first_occurrence_and_unknown_dropped() {
        // chunk -> doc: 10,11 -> doc 1; 20,21 -> doc 2; 30 -> doc 3; 99 unknown.
        let doc_of = |c: u32| match c {
            10 | 11 => Some(1),
            20 | 21 => Some(2),
            30 => Some(3),
            _ => None,
        };
        // gold chunks {11, 21, 99}: gold docs {1, 2} (99 dropped, not a fake doc).
        let gold = set(&[11, 21, 99]);
        // ranking [10, 99, 11, 30, 20] -> docs [1, (drop), 1 dup, 3, 2] = [1, 3, 2].
        let ranked = [10, 99, 11, 30, 20];
        // k = 2 over documents: {1, 3} ∩ {1, 2} = {1} -> 1/2.
        close(doc_recall_at_k(&ranked, &gold, doc_of, 2), 0.5);
        // k = 3: {1, 3, 2} -> 2/2. (Over chunks, top 3 would only reach doc 1.)
        close(doc_recall_at_k(&ranked, &gold, doc_of, 3), 1.0);
        // k beyond the document list: still 1.
        close(doc_recall_at_k(&ranked, &gold, doc_of, 50), 1.0);
        // Gold only of unknown chunks -> no gold documents -> 0.
        close(doc_recall_at_k(&ranked, &set(&[99]), doc_of, 10), 0.0);
    }

    #[test]
    fn chain_metrics() {
        let chain = vec![vec![1, 2], vec![3], vec![4, 5]];
        // top-3 = {2, 9, 3}: slots 0 and 1 covered, slot 2 not -> 2/3, no full hit.
        let ranked = [2, 9, 3, 5];
        close(
            chain_coverage_at_k(&ranked, Some(&chain), 3).unwrap(),
            2.0 / 3.0,
        );
        assert_eq!(full_chain_hit_at_k(&ranked, Some(&chain), 3), Some(0.0));
        // top-4 adds 5: all three slots -> 1, full hit.
        close(chain_coverage_at_k(&ranked, Some(&chain), 4).unwrap(), 1.0);
        assert_eq!(full_chain_hit_at_k(&ranked, Some(&chain), 4), Some(1.0));
        // Empty ranking with a chain is 0.0, not None.
        assert_eq!(chain_coverage_at_k(&[], Some(&chain), 10), Some(0.0));
    }

    #[test]
    fn chain_with_empty_slot_is_never_covered() {
        // Slot 1 did not resolve: 1 of 2 slots covered -> 1/2; full hit impossible.
        let chain = vec![vec![1], vec![]];
        assert_eq!(chain_coverage_at_k(&[1, 2, 3], Some(&chain), 10), Some(0.5));
        assert_eq!(full_chain_hit_at_k(&[1, 2, 3], Some(&chain), 10), Some(0.0));
    }

    #[test]
    fn no_chain_is_none() {
        assert_eq!(chain_coverage_at_k(&[1], None, 10), None);
        assert_eq!(full_chain_hit_at_k(&[1], None, 10), None);
        let zero: Vec<Vec<u32>> = vec![];
        assert_eq!(chain_coverage_at_k(&[1], Some(&zero), 10), None);
        assert_eq!(full_chain_hit_at_k(&[1], Some(&zero), 10), None);
    }

    #[test]
    fn means() {
        assert_eq!(mean(Vec::<f64>::new()), None);
        close(mean([1.0, 2.0, 4.0]).unwrap(), 7.0 / 3.0);
        let m = mean_opt([Some(1.0), None, Some(0.0), None]);
        assert_eq!(m.defined, 2);
        assert_eq!(m.total, 4);
        close(m.mean.unwrap(), 0.5);
        let none = mean_opt([None, None]);
        assert_eq!((none.mean, none.defined, none.total), (None, 0, 2));
    }

    #[test]
    fn percentiles_linear_interpolation() {
        // Sorted [1, 2, 3, 4]: median h = 3·0.5 = 1.5 -> 2 + 0.5·1 = 2.5 (numpy: 2.5).
        let v = [4.0, 1.0, 3.0, 2.0];
        close(median(&v).unwrap(), 2.5);
        // p95: h = 3·0.95 = 2.85 -> 3 + 0.85·1 = 3.85 (numpy: 3.85).
        close(percentile(&v, 95.0).unwrap(), 3.85);
        close(percentile(&v, 0.0).unwrap(), 1.0);
        close(percentile(&v, 100.0).unwrap(), 4.0);
        close(median(&[7.0]).unwrap(), 7.0);
        close(median(&[3.0, 1.0, 2.0]).unwrap(), 2.0);
        assert_eq!(median(&[]), None);
        assert_eq!(percentile(&v, 101.0), None);
        assert_eq!(percentile(&[1.0, f64::NAN], 50.0), None);
    }
}
