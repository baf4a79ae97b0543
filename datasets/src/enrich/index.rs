//! [`KgIndex`]: query-time lookups derived from a [`KnowledgeGraph`] (never stored).

use super::text::{fold, Matcher};
use super::KnowledgeGraph;
use crate::csr::Csr;

/// Query-time indices derived from a [`KnowledgeGraph`] when an export is loaded (never stored):
/// the alias matcher, node -> chunks, node adjacency, node -> hyperedges.
///
/// Every per-node lookup is a CSR row; a node id out of range gives an empty slice.
#[derive(Debug, Clone, Default)]
pub struct KgIndex {
    /// The alias automaton (`None` when the graph has no aliases).
    matcher: Option<Matcher>,
    /// Row `v`: the chunks mentioning `v`, ascending.
    node_chunks: Csr<u32>,
    /// Row `v`: the neighbours of `v` with weights, ascending by neighbour.
    adj: Csr<(u32, f32)>,
    /// Row `v`: the hyperedges containing `v`, ascending.
    node_hyper: Csr<u32>,
}

impl KgIndex {
    /// Builds the indices of `kg` over `num_chunks` chunks.
    pub fn new(kg: &KnowledgeGraph, num_chunks: usize) -> KgIndex {
        let n = kg.nodes.len();
        let matcher = Matcher::new(kg.aliases.iter().map(|(a, v)| (a.as_str(), *v)));
        // chunks in ascending order, so each node's run is ascending
        let node_chunks = Csr::from_pairs(
            n,
            kg.chunk_nodes
                .iter()
                .take(num_chunks)
                .enumerate()
                .flat_map(|(c, vs)| vs.iter().map(move |&v| (v, c as u32))),
        );
        let adj = Csr::undirected(n, kg.edges.iter().copied());
        // hyperedges in ascending order, so each node's run is ascending
        let node_hyper = Csr::from_pairs(
            n,
            kg.hyperedges
                .iter()
                .enumerate()
                .flat_map(|(h, (_, nodes))| nodes.iter().map(move |&v| (v, h as u32))),
        );
        KgIndex {
            matcher,
            node_chunks,
            adj,
            node_hyper,
        }
    }

    /// Query seeds: nodes whose alias occurs in `query` (case-insensitive, on word boundaries,
    /// leftmost-longest, non-overlapping), in order of first occurrence, deduplicated.
    pub fn query_seeds(&self, query: &str) -> Vec<u32> {
        let Some(m) = &self.matcher else {
            return Vec::new();
        };
        let mut out: Vec<u32> = Vec::new();
        for h in m.hits(&fold(query)) {
            if !out.contains(&h.node) {
                out.push(h.node);
            }
        }
        out
    }

    /// Chunks that mention `node` (ascending).
    pub fn node_chunks(&self, node: u32) -> &[u32] {
        self.node_chunks.row_or_empty(node as usize)
    }

    /// Neighbours of `node` with edge weights, ascending by neighbour id.
    pub fn neighbours(&self, node: u32) -> &[(u32, f32)] {
        self.adj.row_or_empty(node as usize)
    }

    /// The graph's undirected edges `(a, b, weight)` with `a < b`, sorted by `(a, b)`: its edge
    /// list ([`KnowledgeGraph::edges`]) read back from the adjacency, which holds each edge
    /// under both its ends. A loaded export keeps this in the list's place.
    pub fn edges(&self) -> impl Iterator<Item = (u32, u32, f32)> + '_ {
        (0..self.adj.rows()).flat_map(move |a| {
            let a = a as u32;
            self.adj
                .row(a as usize)
                .iter()
                .filter(move |&&(b, _)| b > a)
                .map(move |&(b, w)| (a, b, w))
        })
    }

    /// How many undirected edges the graph has.
    pub fn edge_count(&self) -> usize {
        self.adj.len() / 2
    }

    /// Hyperedge ids that contain `node` (ascending).
    pub fn node_hyperedges(&self, node: u32) -> &[u32] {
        self.node_hyper.row_or_empty(node as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{build, EnrichConfig};
    use super::*;

    fn kg() -> KnowledgeGraph {
        build(
            &[
                ("Alpha", "Alpha founded Beta. Gamma and Beta merged later."),
                ("Beta", "Beta was bought by ALPHA in 1990."),
                (
                    "Gamma",
                    "Gamma signed Delta, then Betamax failed. Beta agreed.",
                ),
                ("Delta (band)", "The band toured."),
            ],
            &EnrichConfig::default(),
        )
    }

    #[test]
    fn query_seeds_in_first_occurrence_order_deduplicated() {
        let kg = kg();
        let ix = KgIndex::new(&kg, 4);
        assert_eq!(
            ix.query_seeds("Did GAMMA sign Delta (band) before gamma met alpha? Alphabet no."),
            vec![3, 2, 0]
        );
        assert_eq!(ix.query_seeds("delta"), vec![2]);
        assert!(ix.query_seeds("Betamax").is_empty());
        assert!(KgIndex::default().query_seeds("Alpha").is_empty());
    }

    #[test]
    fn csr_lookups() {
        let kg = kg();
        let ix = KgIndex::new(&kg, 4);
        assert_eq!(ix.node_chunks(0), &[0, 1]);
        assert_eq!(ix.node_chunks(1), &[0, 1, 2]);
        assert_eq!(ix.node_chunks(2), &[2, 3]);
        assert_eq!(ix.node_chunks(3), &[0, 2]);
        assert_eq!(ix.neighbours(1), &[(0, 2.0), (2, 0.5), (3, 1.5)]);
        assert_eq!(ix.neighbours(3), &[(0, 1.0), (1, 1.5), (2, 1.0)]);
        assert_eq!(ix.edges().collect::<Vec<_>>(), kg.edges);
        assert_eq!(ix.edge_count(), kg.edges.len());
        // hyperedges: 0 = (c0 {0,1}), 1 = (c0 {1,3}), 2 = (c1 {0,1}), 3 = (c2 {2,3})
        assert_eq!(ix.node_hyperedges(1), &[0, 1, 2]);
        assert_eq!(ix.node_hyperedges(2), &[3]);
        assert!(ix.node_chunks(99).is_empty());
        assert!(ix.neighbours(99).is_empty());
        assert!(ix.node_hyperedges(u32::MAX).is_empty());
        let d = KgIndex::default();
        assert!(d.node_chunks(0).is_empty() && d.neighbours(0).is_empty());
        assert_eq!((d.edges().count(), d.edge_count()), (0, 0));
    }
}
