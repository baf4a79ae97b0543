//! The unit every stage passes along: a chunk index with a score and provenance.

use std::cmp::Ordering;

/// One candidate chunk in a ranked list.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Candidate {
    /// Chunk index into the export (ascending index == ascending record id).
    pub chunk: u32,
    /// Score on the stage's own scale (higher is better).
    pub score: f32,
    /// Whether a rescue lane carried it in (false for everything a first stage retrieved).
    pub rescued: bool,
}

impl Candidate {
    /// A first-stage candidate.
    pub fn new(chunk: u32, score: f32) -> Self {
        Candidate {
            chunk,
            score,
            rescued: false,
        }
    }
}

/// The one ranking order of hopbench: descending score, ties on ascending chunk index.
/// `total_cmp` makes NaN sort deterministically (it never occurs in practice).
pub fn rank_order(a: &Candidate, b: &Candidate) -> Ordering {
    b.score.total_cmp(&a.score).then(a.chunk.cmp(&b.chunk))
}

/// Sorts `list` into [`rank_order`].
pub fn sort_ranked(list: &mut [Candidate]) {
    list.sort_unstable_by(rank_order);
}

/// Keeps the best `k` of `list` in [`rank_order`] (partial selection, then a sort of the head).
pub fn top_k(list: &mut Vec<Candidate>, k: usize) {
    if list.len() > k {
        if k == 0 {
            list.clear();
            return;
        }
        list.select_nth_unstable_by(k - 1, rank_order);
        list.truncate(k);
    }
    sort_ranked(list);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ties_break_on_ascending_chunk() {
        let mut v = vec![
            Candidate::new(5, 1.0),
            Candidate::new(2, 1.0),
            Candidate::new(9, 2.0),
            Candidate::new(1, 0.5),
        ];
        top_k(&mut v, 3);
        assert_eq!(v.iter().map(|c| c.chunk).collect::<Vec<_>>(), vec![9, 2, 5]);
        top_k(&mut v, 0);
        assert!(v.is_empty());
    }
}
