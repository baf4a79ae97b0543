//! Reciprocal Rank Fusion and max-normalisation (the seed's §5.2).
//!
//! RRF scores a candidate `Σ_i w_i / (k + rank_i)` over the lists it appears in, with `rank_i` its
//! 0-based position in list `i` (the seed's code enumerates from 0: a candidate first in two
//! lists scores 2/60 ≈ 0.033) and `k = 60`. Rank position only, never score magnitude, so a
//! cosine list and an Okapi list combine without their scales distorting each other. The fused
//! list is ordered by descending score, ties on ascending chunk index.
//!
//! Max-normalisation divides every score by the list maximum: strictly monotone, so it changes
//! units, not the ranking. It exists because later stages add absolute bonuses (the Expander's
//! 0.05 per hop link) that must mean the same thing whatever the fused scale.

use std::collections::HashMap;

use crate::candidate::Candidate;

/// Fuses `lists` by RRF with constant `k` and per-list `weights` (equal weights when `None`).
/// Empty lists are skipped; the result is the union of all candidates.
pub fn rrf(lists: &[&[Candidate]], k: f32, weights: Option<&[f32]>) -> Vec<Candidate> {
    let mut acc: HashMap<u32, f64> = HashMap::new();
    let mut order: Vec<u32> = Vec::new();
    for (li, list) in lists.iter().enumerate() {
        let w = weights.map_or(1.0, |w| w[li]) as f64;
        for (rank, c) in list.iter().enumerate() {
            let e = acc.entry(c.chunk).or_insert_with(|| {
                order.push(c.chunk);
                0.0
            });
            // summed in list order then rank order: a fixed order, whatever the hash map does
            *e += w / (k as f64 + rank as f64);
        }
    }
    // ordered on the f64 sums, so two sums that round to one f32 keep their true order
    let mut scored: Vec<(u32, f64)> = order
        .into_iter()
        .map(|chunk| (chunk, acc[&chunk]))
        .collect();
    scored.sort_unstable_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    scored
        .into_iter()
        .map(|(chunk, s)| Candidate::new(chunk, s as f32))
        .collect()
}

/// Divides every score by the maximum (no-op on an empty list or a non-positive maximum).
pub fn unit_scaled(mut list: Vec<Candidate>) -> Vec<Candidate> {
    let max = list
        .iter()
        .map(|c| c.score)
        .fold(f32::NEG_INFINITY, f32::max);
    if max > 0.0 && max.is_finite() {
        for c in &mut list {
            c.score /= max;
        }
    }
    list
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(v: &[Candidate]) -> Vec<u32> {
        v.iter().map(|c| c.chunk).collect()
    }

    #[test]
    fn rrf_hand_computed() {
        let a = [Candidate::new(7, 0.9), Candidate::new(3, 0.8)];
        let b = [
            Candidate::new(3, 12.0),
            Candidate::new(5, 11.0),
            Candidate::new(7, 1.0),
        ];
        let f = rrf(&[&a, &b], 60.0, None);
        // 3: 1/61 + 1/60; 7: 1/60 + 1/62; 5: 1/61
        assert_eq!(ids(&f), vec![3, 7, 5]);
        assert!((f[0].score as f64 - (1.0 / 61.0 + 1.0 / 60.0)).abs() < 1e-7);
        assert!((f[2].score as f64 - 1.0 / 61.0).abs() < 1e-7);
    }

    #[test]
    fn rrf_ties_break_on_ascending_chunk_and_empty_lists_are_skipped() {
        let a = [Candidate::new(9, 1.0)];
        let b = [Candidate::new(4, 1.0)];
        let f = rrf(&[&a, &[], &b], 60.0, None);
        assert_eq!(ids(&f), vec![4, 9]);
        assert!(rrf(&[], 60.0, None).is_empty());
    }

    #[test]
    fn unit_scaling_is_monotone_and_tops_at_one() {
        let a = [Candidate::new(1, 1.0), Candidate::new(2, 2.0)];
        let f = unit_scaled(rrf(&[&a], 60.0, None));
        assert_eq!(f[0].score, 1.0);
        assert!((f[1].score - 60.0 / 61.0).abs() < 1e-6);
        assert!(unit_scaled(Vec::new()).is_empty());
    }
}
