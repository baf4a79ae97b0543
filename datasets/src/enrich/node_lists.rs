//! [`NodeLists`]: one list of node ids per chunk, held as two flat arrays; [`Hyperedges`]:
//! one per sentence, the same way.
//!
//! A chunk names some four entities. As a `Vec` per chunk, each list costs its own allocation
//! (a 24-byte header and the allocator's 16 bytes of bookkeeping, rounded up to 32 bytes of
//! payload) on top of its 16 bytes of ids: at a million chunks some 70 MB where the ids are
//! 15, and as much again for the million hyperedges. Flat, the lists are the ids plus one
//! offset per list.

use std::fmt;
use std::ops::Index;

use super::Hyperedge;
use crate::csr::Csr;

/// Lists of node ids by chunk: the crate's compressed sparse rows, one row per chunk.
#[derive(Clone, Default, PartialEq)]
pub struct NodeLists(Csr<u32>);

impl NodeLists {
    /// No lists, room for `lists` of them holding `values` ids.
    pub fn with_capacity(lists: usize, values: usize) -> Self {
        NodeLists(Csr::with_capacity(lists, values))
    }

    /// Appends a list.
    pub fn push(&mut self, nodes: &[u32]) {
        self.0.push_row(nodes);
    }

    /// Gives back what the arrays hold beyond their lists (a reader that did not know the
    /// number of ids up front grew them by doubling).
    pub fn shrink_to_fit(&mut self) {
        self.0.shrink_to_fit();
    }

    /// Number of lists (chunks).
    pub fn len(&self) -> usize {
        self.0.rows()
    }

    /// Whether there are no lists.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// List `c`, `None` past the last.
    pub fn get(&self, c: usize) -> Option<&[u32]> {
        (c < self.len()).then(|| self.0.row(c))
    }

    /// The lists in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &[u32]> + Clone + '_ {
        self.0.iter_rows()
    }

    /// Every list as a `Vec` of its own: for a test that edits one.
    pub fn to_vecs(&self) -> Vec<Vec<u32>> {
        self.iter().map(<[u32]>::to_vec).collect()
    }
}

impl Index<usize> for NodeLists {
    type Output = [u32];

    /// List `c` (panics past the last, as a slice index does).
    fn index(&self, c: usize) -> &[u32] {
        self.0.row(c)
    }
}

impl<L: AsRef<[u32]>> FromIterator<L> for NodeLists {
    fn from_iter<I: IntoIterator<Item = L>>(lists: I) -> Self {
        let mut out = NodeLists::default();
        for l in lists {
            out.push(l.as_ref());
        }
        out
    }
}

impl From<Vec<Vec<u32>>> for NodeLists {
    fn from(lists: Vec<Vec<u32>>) -> Self {
        lists.iter().collect()
    }
}

impl PartialEq<Vec<Vec<u32>>> for NodeLists {
    fn eq(&self, other: &Vec<Vec<u32>>) -> bool {
        self.len() == other.len() && self.iter().zip(other).all(|(a, b)| a == b.as_slice())
    }
}

/// As a list of lists, the way a `Vec<Vec<u32>>` prints.
impl fmt::Debug for NodeLists {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// The knowledge graph's hyperedges, flat: hyperedge `id` is chunk `chunk(id)`'s sentence
/// over nodes `nodes(id)`. Sorted by `(chunk, nodes)` in a graph; id = index.
#[derive(Clone, Default, PartialEq)]
pub struct Hyperedges {
    chunks: Vec<u32>,
    nodes: NodeLists,
}

impl Hyperedges {
    /// Appends hyperedge `len()`: a sentence of `chunk` over `nodes`.
    pub fn push(&mut self, chunk: u32, nodes: &[u32]) {
        self.chunks.push(chunk);
        self.nodes.push(nodes);
    }

    /// Number of hyperedges.
    pub fn len(&self) -> usize {
        self.chunks.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.chunks.is_empty()
    }

    /// The chunk of hyperedge `id` (panics past the last, as an index does).
    pub fn chunk(&self, id: usize) -> u32 {
        self.chunks[id]
    }

    /// The nodes of hyperedge `id`, ascending (panics past the last).
    pub fn nodes(&self, id: usize) -> &[u32] {
        &self.nodes[id]
    }

    /// `(chunk, nodes)` of every hyperedge, by id.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (u32, &[u32])> + Clone + '_ {
        self.chunks.iter().copied().zip(self.nodes.iter())
    }

    /// Every hyperedge as a [`Hyperedge`] of its own: for a test that edits one.
    pub fn to_vec(&self) -> Vec<Hyperedge> {
        self.iter()
            .map(|(chunk, nodes)| Hyperedge {
                chunk,
                nodes: nodes.to_vec(),
            })
            .collect()
    }

    /// Gives back what the arrays hold beyond their lists.
    pub fn shrink_to_fit(&mut self) {
        self.chunks.shrink_to_fit();
        self.nodes.shrink_to_fit();
    }
}

impl FromIterator<Hyperedge> for Hyperedges {
    fn from_iter<I: IntoIterator<Item = Hyperedge>>(edges: I) -> Self {
        let mut out = Hyperedges::default();
        for h in edges {
            out.push(h.chunk, &h.nodes);
        }
        out
    }
}

impl From<Vec<Hyperedge>> for Hyperedges {
    fn from(edges: Vec<Hyperedge>) -> Self {
        edges.into_iter().collect()
    }
}

impl PartialEq<Vec<Hyperedge>> for Hyperedges {
    fn eq(&self, other: &Vec<Hyperedge>) -> bool {
        self.len() == other.len()
            && self
                .iter()
                .zip(other)
                .all(|((c, n), h)| c == h.chunk && n == h.nodes.as_slice())
    }
}

/// As the list of [`Hyperedge`]s it holds.
impl fmt::Debug for Hyperedges {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.to_vec()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flat_hyperedges_read_as_the_records_they_were_built_from() {
        let he = |chunk: u32, nodes: &[u32]| Hyperedge {
            chunk,
            nodes: nodes.to_vec(),
        };
        let records = vec![he(0, &[1, 3]), he(4, &[0, 1, 2]), he(4, &[2, 5])];
        let flat = Hyperedges::from(records.clone());
        assert_eq!(flat, records);
        assert_eq!((flat.len(), flat.is_empty()), (3, false));
        assert_eq!((flat.chunk(1), flat.nodes(1)), (4, &[0, 1, 2][..]));
        assert_eq!(flat.iter().len(), 3);
        assert_eq!(flat.to_vec(), records);
        assert_eq!(format!("{flat:?}"), format!("{records:?}"));
        assert_ne!(flat, records[..2].to_vec());
        assert!(Hyperedges::default().is_empty());
    }

    #[test]
    fn flat_lists_read_as_the_vecs_they_were_built_from() {
        let vecs = vec![vec![0, 2], vec![], vec![1], vec![3, 4, 5]];
        let lists = NodeLists::from(vecs.clone());
        assert_eq!(lists, vecs);
        assert_eq!((lists.len(), lists.is_empty()), (4, false));
        assert_eq!(&lists[3], &[3, 4, 5]);
        assert_eq!(lists.get(1), Some(&[][..]));
        assert_eq!(lists.get(4), None);
        assert_eq!(lists.iter().len(), 4);
        assert_eq!(lists.to_vecs(), vecs);
        assert_eq!(format!("{lists:?}"), format!("{vecs:?}"));
        assert_ne!(lists, vec![vec![0, 2], vec![], vec![1]]);
        let empty = NodeLists::default();
        assert!(empty.is_empty() && empty.get(0).is_none() && empty.iter().len() == 0);
        assert_eq!(empty, NodeLists::with_capacity(9, 9));
    }

    #[test]
    #[should_panic]
    fn indexing_past_the_last_list_panics() {
        let _ = &NodeLists::from(vec![vec![1]])[1];
    }
}
