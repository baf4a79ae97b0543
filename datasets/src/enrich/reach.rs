//! A chunk's reach (the nodes one edge away from its own, minus its own), computed a row at a
//! time from the node adjacency rather than held.
//!
//! A chunk names some four nodes and reaches about a hundred (a million synthetic chunks reach
//! 10^8 nodes between them, 400 MB as `u32`s, where their own node lists are 15 MB). Every
//! reader needs a row or a slice of rows at a time: the corpus writer, the check of the corpus's
//! `kg_reach` column at load, and the Expander (which tests adjacency directly). So the lists
//! exist only for the rows in hand.

use arrow_array::ArrayRef;

use crate::csr::Csr;
use crate::parquet_io as pq;

/// The undirected adjacency of a graph's nodes, the one input a reach row needs besides the
/// chunk's own nodes.
#[derive(Debug, Clone, Default)]
pub(crate) struct Reach {
    adj: Csr<(u32, ())>,
}

impl Reach {
    /// Over `n` nodes and the undirected `edges` (`a, b < n`).
    pub(crate) fn new(n: usize, edges: &[(u32, u32, f32)]) -> Reach {
        Reach {
            adj: Csr::undirected(n, edges.iter().map(|&(a, b, _)| (a, b, ()))),
        }
    }

    /// Into `out` (cleared first): the neighbours of `nodes` (ascending, unique, each below the
    /// node count) that are not in `nodes` itself, ascending and unique.
    pub(crate) fn row_into(&self, nodes: &[u32], out: &mut Vec<u32>) {
        out.clear();
        for &v in nodes {
            out.extend(self.adj.row_or_empty(v as usize).iter().map(|&(u, ())| u));
        }
        out.sort_unstable();
        out.dedup();
        out.retain(|u| nodes.binary_search(u).is_err());
    }

    /// The rows of `chunk_nodes` as one `list<u32>` column.
    pub(crate) fn column<'a>(
        &self,
        chunk_nodes: impl ExactSizeIterator<Item = &'a [u32]>,
    ) -> ArrayRef {
        let mut offsets = Vec::with_capacity(chunk_nodes.len() + 1);
        let mut values = Vec::new();
        let mut row = Vec::new();
        offsets.push(0u32);
        for nodes in chunk_nodes {
            self.row_into(nodes, &mut row);
            values.extend_from_slice(&row);
            offsets.push(values.len() as u32);
        }
        pq::u32_lists_flat(&offsets, &values)
    }

    /// Every row of `chunk_nodes`, for tests and diagnostics: at scale, this is the table the
    /// rest of the crate avoids holding.
    pub(crate) fn rows<'a>(&self, chunk_nodes: impl Iterator<Item = &'a [u32]>) -> Vec<Vec<u32>> {
        chunk_nodes
            .map(|nodes| {
                let mut row = Vec::new();
                self.row_into(nodes, &mut row);
                row
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    /// The definition, slowly: mark every neighbour of every own node, drop the own nodes.
    fn reference(n: usize, edges: &[(u32, u32, f32)], nodes: &[u32]) -> Vec<u32> {
        let mut hit = vec![false; n];
        for &(a, b, _) in edges {
            if nodes.contains(&a) {
                hit[b as usize] = true;
            }
            if nodes.contains(&b) {
                hit[a as usize] = true;
            }
        }
        (0..n as u32)
            .filter(|&u| hit[u as usize] && !nodes.contains(&u))
            .collect()
    }

    #[test]
    fn rows_equal_the_definition_on_random_graphs() {
        let mut rng = SplitMix64::new(7);
        for case in 0..200 {
            let n = 1 + rng.below(12);
            let mut edges: Vec<(u32, u32, f32)> = Vec::new();
            for a in 0..n as u32 {
                for b in a + 1..n as u32 {
                    if rng.chance(33) {
                        edges.push((a, b, 1.0));
                    }
                }
            }
            let reach = Reach::new(n, &edges);
            let mut chunk_nodes: Vec<Vec<u32>> = Vec::new();
            for _ in 0..6 {
                chunk_nodes.push((0..n as u32).filter(|_| rng.chance(25)).collect());
            }
            let rows = reach.rows(chunk_nodes.iter().map(Vec::as_slice));
            for (nodes, row) in chunk_nodes.iter().zip(&rows) {
                assert_eq!(
                    row,
                    &reference(n, &edges, nodes),
                    "case {case}, nodes {nodes:?}"
                );
            }
            let column = reach.column(chunk_nodes.iter().map(Vec::as_slice));
            assert_eq!(
                column.as_ref(),
                pq::u32_lists(&rows).as_ref(),
                "case {case}"
            );
        }
    }

    #[test]
    fn a_chunk_without_nodes_or_edges_reaches_nothing() {
        let reach = Reach::new(3, &[(0, 1, 1.0)]);
        let mut row = vec![9];
        reach.row_into(&[], &mut row);
        assert!(row.is_empty());
        reach.row_into(&[2], &mut row);
        assert!(row.is_empty());
        // both ends of the only edge: each is the other's neighbour, and both are its own
        reach.row_into(&[0, 1], &mut row);
        assert!(row.is_empty());
        reach.row_into(&[0], &mut row);
        assert_eq!(row, vec![1]);
        assert!(Reach::default().rows([&[][..]].into_iter()) == vec![Vec::<u32>::new()]);
    }
}
