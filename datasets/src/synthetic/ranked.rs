//! A set of positions `0..n` that answers "the r-th member in ascending order" in O(log n).
//!
//! Choosing uniformly among the members of a shrinking set *by rank* is what a filtered,
//! ascending `Vec` and `rng.pick` do; this keeps the same draw (the r-th smallest member) while
//! adding, removing and ranking cost a logarithm instead of a rebuild of the list.

/// A Fenwick tree of 0/1 membership counts.
#[derive(Debug, Clone)]
pub(crate) struct RankedSet {
    tree: Vec<usize>,
    member: Vec<bool>,
    len: usize,
}

impl RankedSet {
    /// An empty set over positions `0..n`.
    pub(crate) fn new(n: usize) -> Self {
        RankedSet {
            tree: vec![0; n + 1],
            member: vec![false; n],
            len: 0,
        }
    }

    /// Number of members.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    fn add(&mut self, pos: usize, delta: isize) {
        let mut i = pos + 1;
        while i < self.tree.len() {
            self.tree[i] = self.tree[i].wrapping_add_signed(delta);
            i += i & i.wrapping_neg();
        }
    }

    /// Add `pos` (no-op when present).
    pub(crate) fn insert(&mut self, pos: usize) {
        if !self.member[pos] {
            self.member[pos] = true;
            self.len += 1;
            self.add(pos, 1);
        }
    }

    /// Remove `pos` (no-op when absent).
    pub(crate) fn remove(&mut self, pos: usize) {
        if self.member[pos] {
            self.member[pos] = false;
            self.len -= 1;
            self.add(pos, -1);
        }
    }

    /// The member of rank `r` (0-based, ascending); `r` must be below [`RankedSet::len`].
    pub(crate) fn nth(&self, r: usize) -> usize {
        assert!(r < self.len, "rank {r} of a set of {}", self.len);
        let mut pos = 0;
        let mut rest = r + 1;
        let mut step = (self.tree.len() - 1).next_power_of_two();
        while step > 0 {
            let next = pos + step;
            if next < self.tree.len() && self.tree[next] < rest {
                pos = next;
                rest -= self.tree[next];
            }
            step /= 2;
        }
        pos
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    #[test]
    fn ranks_match_a_sorted_vec() {
        let mut rng = SplitMix64::new(9);
        for n in [1, 2, 7, 64, 100] {
            let mut set = RankedSet::new(n);
            let mut naive: Vec<usize> = Vec::new();
            for _ in 0..400 {
                let pos = rng.below(n);
                if rng.chance(60) {
                    set.insert(pos);
                    if !naive.contains(&pos) {
                        naive.push(pos);
                        naive.sort_unstable();
                    }
                } else {
                    set.remove(pos);
                    naive.retain(|&x| x != pos);
                }
                assert_eq!(set.len(), naive.len());
                for (r, &x) in naive.iter().enumerate() {
                    assert_eq!(set.nth(r), x, "n = {n}, rank {r}");
                }
            }
        }
    }
}
