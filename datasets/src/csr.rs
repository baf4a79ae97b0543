//! Compressed sparse rows: variable-length rows stored as one array plus offsets.
//!
//! The knowledge graph's lookups, its Louvain pass and the chunk similarity graph all hold
//! adjacency this way; building it in one place keeps their run order (which every
//! deterministic sum over a row depends on) the same everywhere.

use std::ops::Range;

/// Rows `0..rows()`; row `i` is `values[offsets[i]..offsets[i + 1]]`.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Csr<T> {
    /// `rows + 1` ascending offsets into `values` (empty for the default, zero-row table).
    offsets: Vec<usize>,
    values: Vec<T>,
}

impl<T: Copy + Default> Csr<T> {
    /// From `(row, value)` pairs in any row order (every row `< rows`); within a row, values
    /// keep their input order. A counting sort: two passes over `pairs`, no comparison.
    pub(crate) fn from_pairs(rows: usize, pairs: impl Iterator<Item = (u32, T)> + Clone) -> Self {
        let mut offsets = vec![0usize; rows + 1];
        for (r, _) in pairs.clone() {
            offsets[r as usize + 1] += 1;
        }
        for i in 0..rows {
            offsets[i + 1] += offsets[i];
        }
        let mut fill = offsets.clone();
        let mut values = vec![T::default(); offsets[rows]];
        for (r, v) in pairs {
            values[fill[r as usize]] = v;
            fill[r as usize] += 1;
        }
        Csr { offsets, values }
    }
}

impl<T: Copy> Csr<T> {
    /// No rows, room for `rows` of them holding `values` values: for a table built a row at a
    /// time ([`Csr::push_row`]).
    pub(crate) fn with_capacity(rows: usize, values: usize) -> Self {
        Csr {
            offsets: Vec::with_capacity(rows + 1),
            values: Vec::with_capacity(values),
        }
    }

    /// Appends row `rows()`.
    pub(crate) fn push_row(&mut self, row: &[T]) {
        if self.offsets.is_empty() {
            self.offsets.push(0);
        }
        self.values.extend_from_slice(row);
        self.offsets.push(self.values.len());
    }

    /// Gives back what the arrays hold beyond their rows (a table grown a row at a time
    /// without knowing its size holds up to twice it).
    pub(crate) fn shrink_to_fit(&mut self) {
        self.offsets.shrink_to_fit();
        self.values.shrink_to_fit();
    }
}

impl<W: Copy + Default> Csr<(u32, W)> {
    /// The symmetric adjacency of `n` nodes from undirected edges `(a, b, w)` (`a, b < n`): each
    /// edge appears in row `a` as `(b, w)` and in row `b` as `(a, w)`, and every row is sorted by
    /// neighbour. The sort is stable, so parallel edges keep their input order; with unique pairs
    /// the rows do not depend on the edge order at all.
    pub(crate) fn undirected(n: usize, edges: impl Iterator<Item = (u32, u32, W)> + Clone) -> Self {
        let mut csr = Csr::from_pairs(n, edges.flat_map(|(a, b, w)| [(a, (b, w)), (b, (a, w))]));
        for i in 0..n {
            let range = csr.range(i);
            csr.values[range].sort_by_key(|e| e.0);
        }
        csr
    }
}

impl<T> Csr<T> {
    /// Number of rows.
    pub(crate) fn rows(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    /// Number of values over all rows.
    pub(crate) fn len(&self) -> usize {
        self.values.len()
    }

    /// Where row `i` sits in the value array (panics when `i >= rows()`).
    pub(crate) fn range(&self, i: usize) -> Range<usize> {
        self.offsets[i]..self.offsets[i + 1]
    }

    /// Row `i` (panics when `i >= rows()`).
    pub(crate) fn row(&self, i: usize) -> &[T] {
        &self.values[self.range(i)]
    }

    /// The rows in order.
    pub(crate) fn iter_rows(&self) -> impl ExactSizeIterator<Item = &[T]> + Clone + '_ {
        self.offsets
            .windows(2)
            .map(move |w| &self.values[w[0]..w[1]])
    }

    /// Row `i`, or an empty row when there is no row `i` (lookups by an id from elsewhere).
    pub(crate) fn row_or_empty(&self, i: usize) -> &[T] {
        if i < self.rows() {
            self.row(i)
        } else {
            &[]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows<T: Clone>(c: &Csr<T>) -> Vec<Vec<T>> {
        (0..c.rows()).map(|i| c.row(i).to_vec()).collect()
    }

    #[test]
    fn pairs_group_by_row_in_input_order() {
        // rows 0..4, row 2 left empty; the repeated (1, 'b') stays twice
        let c = Csr::from_pairs(
            4,
            [(3, 'x'), (1, 'b'), (0, 'a'), (1, 'c'), (1, 'b')].into_iter(),
        );
        assert_eq!(
            rows(&c),
            vec![vec!['a'], vec!['b', 'c', 'b'], vec![], vec!['x']]
        );
        assert_eq!((c.rows(), c.len()), (4, 5));
        assert_eq!(c.range(1), 1..4);
        assert_eq!(c.row_or_empty(4), &[] as &[char]);
    }

    #[test]
    fn empty_inputs() {
        let c: Csr<u32> = Csr::from_pairs(0, std::iter::empty());
        assert_eq!((c.rows(), c.len()), (0, 0));
        assert!(c.row_or_empty(0).is_empty());
        let c: Csr<u32> = Csr::from_pairs(3, std::iter::empty());
        assert_eq!(rows(&c), vec![Vec::<u32>::new(); 3]);
        let d: Csr<u32> = Csr::default();
        assert_eq!(d.rows(), 0);
        assert!(d.row_or_empty(7).is_empty());
        let g: Csr<(u32, f32)> = Csr::undirected(2, std::iter::empty());
        assert_eq!(rows(&g), vec![vec![], vec![]]);
    }

    #[test]
    fn undirected_rows_are_symmetric_and_sorted() {
        // a triangle 0-1-2 plus 1-3, given out of order
        let g = Csr::undirected(
            5,
            [(1, 3, 0.5f32), (0, 2, 2.0), (0, 1, 1.0), (1, 2, 3.0)].into_iter(),
        );
        assert_eq!(
            rows(&g),
            vec![
                vec![(1, 1.0), (2, 2.0)],
                vec![(0, 1.0), (2, 3.0), (3, 0.5)],
                vec![(0, 2.0), (1, 3.0)],
                vec![(1, 0.5)],
                vec![],
            ]
        );
        assert_eq!(g.len(), 8, "every edge twice");
    }

    #[test]
    fn parallel_edges_keep_their_input_order() {
        // the pair 0-1 twice, with different weights: both kept, in input order, on both sides
        let g = Csr::undirected(2, [(0, 1, 'p'), (1, 0, 'q')].into_iter());
        assert_eq!(
            rows(&g),
            vec![vec![(1, 'p'), (1, 'q')], vec![(0, 'p'), (0, 'q')]]
        );
    }
}
