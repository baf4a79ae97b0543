//! The graph lanes of graph rescue (the seed's §5.4) and what they share: the seed set and the
//! read interface over the knowledge graph.
//!
//! Two lanes, both anchored on one seed set ([`graph_seeds`]):
//!
//! * [`traversal`] — bounded BFS over the entity graph; a chunk scores
//!   `seed_score × hop_decay^h` at the closest hop of a node it mentions.
//! * [`hypergraph`] — entry weights, hyperedge expansion, an `s_hyp` prune, a two-stage random
//!   walk with restart and a coverage gate; retained hyperedges resolve to their chunks.
//!
//! [`fused`] RRF-fuses one lane as a third peer of dense and BM25 (the `kg` and `hyperedges`
//! kinds: the regression the seed keeps in its table).
//!
//! The parameter groups every graph leg shares live here: [`Seeds`] (how the seed set is drawn)
//! and [`LaneCap`] (how many chunks a lane returns); each lane's own group sits beside it.
//!
//! Both lanes read the graph through [`GraphSource`], so they are pure functions of a seed set
//! and a graph: [`ExportGraph`] serves an export's [`KnowledgeGraph`] + [`KgIndex`]; tests build
//! graphs by hand.

pub mod fused;
pub mod hypergraph;
pub mod traversal;

use hopbench_datasets::enrich::{KgIndex, KnowledgeGraph, NodeLists};
use serde::{Deserialize, Serialize};

use crate::candidate::Candidate;
use crate::leg::LegError;
use crate::params::{Check, Checked};

/// How the lanes' seed set is drawn ([`graph_seeds`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Seeds {
    /// The KG nodes of this many base candidates follow the query seeds.
    pub seed_docs_k: usize,
    /// At most this many seed nodes.
    pub seed_node_cap: usize,
}

impl Default for Seeds {
    fn default() -> Self {
        Seeds {
            seed_docs_k: 5,
            seed_node_cap: 32,
        }
    }
}

impl Checked for Seeds {
    fn check(&self, c: &Check<'_>) -> Result<(), LegError> {
        c.at_least("seed_node_cap", self.seed_node_cap, 1)
    }
}

/// `lane_k`: chunks each graph lane returns at most.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LaneCap {
    /// Chunks each lane returns at most.
    pub lane_k: usize,
}

impl Default for LaneCap {
    fn default() -> Self {
        LaneCap { lane_k: 100 }
    }
}

impl Checked for LaneCap {
    fn check(&self, c: &Check<'_>) -> Result<(), LegError> {
        c.at_least("lane_k", self.lane_k, 1)
    }
}

crate::leaf_params!(Seeds, LaneCap);

/// What the lanes read of a knowledge graph. Every returned list is sorted ascending and unique.
pub trait GraphSource {
    /// Number of entity nodes (node ids are `0..num_nodes`).
    fn num_nodes(&self) -> usize;
    /// Number of chunks (chunk indices are `0..num_chunks`).
    fn num_chunks(&self) -> usize;
    /// Chunks that mention `node`.
    fn node_chunks(&self, node: u32) -> &[u32];
    /// Neighbours of `node` with edge weights, ascending by neighbour id.
    fn neighbours(&self, node: u32) -> &[(u32, f32)];
    /// Hyperedge ids that contain `node`.
    fn node_hyperedges(&self, node: u32) -> &[u32];
    /// The nodes of hyperedge `id` (ascending, at least two).
    fn hyperedge_nodes(&self, id: u32) -> &[u32];
    /// The chunk hyperedge `id` comes from.
    fn hyperedge_chunk(&self, id: u32) -> u32;
}

/// An export's knowledge graph as a [`GraphSource`]: the public graph for hyperedges, the
/// load-time index for adjacency.
#[derive(Debug, Clone, Copy)]
pub struct ExportGraph<'a> {
    /// The graph.
    pub kg: &'a KnowledgeGraph,
    /// Its query-time indices.
    pub index: &'a KgIndex,
    /// Chunks in the export.
    pub num_chunks: usize,
}

impl GraphSource for ExportGraph<'_> {
    fn num_nodes(&self) -> usize {
        self.kg.nodes.len()
    }
    fn num_chunks(&self) -> usize {
        self.num_chunks
    }
    fn node_chunks(&self, node: u32) -> &[u32] {
        self.index.node_chunks(node)
    }
    fn neighbours(&self, node: u32) -> &[(u32, f32)] {
        self.index.neighbours(node)
    }
    fn node_hyperedges(&self, node: u32) -> &[u32] {
        self.index.node_hyperedges(node)
    }
    fn hyperedge_nodes(&self, id: u32) -> &[u32] {
        self.kg.hyperedges.nodes(id as usize)
    }
    fn hyperedge_chunk(&self, id: u32) -> u32 {
        self.kg.hyperedges.chunk(id as usize)
    }
}

/// The query's entity seeds from the export's alias matcher (empty when the KG has no entities,
/// so an export without a graph never touches its index).
pub fn query_seeds(kg: &KnowledgeGraph, index: &KgIndex, text: &str) -> Vec<u32> {
    if kg.nodes.is_empty() {
        return Vec::new();
    }
    index.query_seeds(text)
}

/// The seed set both lanes anchor on (the seed's `_graph_seeds`): the query seeds first,
/// deduplicated in order, then the KG nodes of the top `seed_docs_k` candidates of `base` in
/// rank order then node order, skipping nodes already seen; at most `cap` nodes. Query seeds come
/// first so the cap trims the weakest anchors. Chunks beyond `chunk_nodes` carry no nodes.
pub fn graph_seeds(
    query_seeds: &[u32],
    base: &[Candidate],
    chunk_nodes: &NodeLists,
    p: &Seeds,
) -> Vec<u32> {
    let (seed_docs_k, cap) = (p.seed_docs_k, p.seed_node_cap);
    let mut seeds: Vec<u32> = Vec::with_capacity(cap.min(64));
    // seed sets are small (cap 32): a linear membership scan beats hashing here
    let push = |seeds: &mut Vec<u32>, n: u32| {
        if seeds.len() < cap && !seeds.contains(&n) {
            seeds.push(n);
        }
    };
    for &n in query_seeds {
        push(&mut seeds, n);
    }
    for c in base.iter().take(seed_docs_k) {
        if seeds.len() >= cap {
            break;
        }
        if let Some(nodes) = chunk_nodes.get(c.chunk as usize) {
            for &n in nodes {
                push(&mut seeds, n);
            }
        }
    }
    seeds
}

/// Whether two ascending, unique lists share an element. Binary-searches the shorter list's
/// elements in the longer one when the lengths are lopsided, else merges.
#[inline]
pub fn intersects(a: &[u32], b: &[u32]) -> bool {
    let (small, large) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    if small.is_empty() {
        return false;
    }
    if small[small.len() - 1] < large[0] || large[large.len() - 1] < small[0] {
        return false;
    }
    if small.len() * 8 < large.len() {
        let mut rest = large;
        for &x in small {
            match rest.binary_search(&x) {
                Ok(_) => return true,
                Err(i) => rest = &rest[i..],
            }
            if rest.is_empty() {
                return false;
            }
        }
        return false;
    }
    let (mut i, mut j) = (0, 0);
    while i < small.len() && j < large.len() {
        match small[i].cmp(&large[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => return true,
        }
    }
    false
}

/// Hand-built graphs for tests: the indices [`KgIndex`] serves, computed from a
/// [`KnowledgeGraph`]'s public fields.
#[cfg(test)]
pub(crate) mod testgraph {
    use super::GraphSource;
    use hopbench_datasets::enrich::{Hyperedge, KnowledgeGraph};

    /// A [`GraphSource`] over a hand-built [`KnowledgeGraph`].
    pub(crate) struct MemGraph {
        pub kg: KnowledgeGraph,
        node_chunks: Vec<Vec<u32>>,
        adj: Vec<Vec<(u32, f32)>>,
        node_hyper: Vec<Vec<u32>>,
    }

    impl MemGraph {
        /// `nodes` nodes; `chunk_nodes[c]` the nodes chunk `c` mentions; undirected `edges`;
        /// `hyperedges` as `(chunk, nodes)`.
        pub(crate) fn new(
            nodes: usize,
            chunk_nodes: Vec<Vec<u32>>,
            edges: &[(u32, u32)],
            hyperedges: &[(u32, &[u32])],
        ) -> MemGraph {
            let mut adj = vec![Vec::new(); nodes];
            let mut es: Vec<(u32, u32, f32)> = Vec::new();
            for &(a, b) in edges {
                let (a, b) = (a.min(b), a.max(b));
                es.push((a, b, 1.0));
                adj[a as usize].push((b, 1.0));
                adj[b as usize].push((a, 1.0));
            }
            es.sort_by_key(|x| (x.0, x.1));
            for l in &mut adj {
                l.sort_by_key(|x| x.0);
                l.dedup_by_key(|x| x.0);
            }
            let mut node_chunks = vec![Vec::new(); nodes];
            let mut chunk_nodes = chunk_nodes;
            for (c, ns) in chunk_nodes.iter_mut().enumerate() {
                ns.sort_unstable();
                ns.dedup();
                for &n in ns.iter() {
                    node_chunks[n as usize].push(c as u32);
                }
            }
            let mut hs: Vec<Hyperedge> = hyperedges
                .iter()
                .map(|&(chunk, ns)| {
                    let mut nodes = ns.to_vec();
                    nodes.sort_unstable();
                    nodes.dedup();
                    Hyperedge { chunk, nodes }
                })
                .collect();
            hs.sort_by(|a, b| (a.chunk, &a.nodes).cmp(&(b.chunk, &b.nodes)));
            let mut node_hyper = vec![Vec::new(); nodes];
            for (i, h) in hs.iter().enumerate() {
                for &n in &h.nodes {
                    node_hyper[n as usize].push(i as u32);
                }
            }
            let kg = KnowledgeGraph {
                nodes: (0..nodes).map(|i| format!("n{i:04}")).collect(),
                aliases: Vec::new(),
                chunk_nodes: chunk_nodes.into(),
                node_community: vec![0; nodes],
                node_centrality: vec![1.0 / nodes.max(1) as f32; nodes],
                edges: es,
                hyperedges: hs.into(),
                ..Default::default()
            };
            MemGraph {
                kg,
                node_chunks,
                adj,
                node_hyper,
            }
        }
    }

    impl GraphSource for MemGraph {
        fn num_nodes(&self) -> usize {
            self.kg.nodes.len()
        }
        fn num_chunks(&self) -> usize {
            self.kg.chunk_nodes.len()
        }
        fn node_chunks(&self, node: u32) -> &[u32] {
            &self.node_chunks[node as usize]
        }
        fn neighbours(&self, node: u32) -> &[(u32, f32)] {
            &self.adj[node as usize]
        }
        fn node_hyperedges(&self, node: u32) -> &[u32] {
            &self.node_hyper[node as usize]
        }
        fn hyperedge_nodes(&self, id: u32) -> &[u32] {
            self.kg.hyperedges.nodes(id as usize)
        }
        fn hyperedge_chunk(&self, id: u32) -> u32 {
            self.kg.hyperedges.chunk(id as usize)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cands(ids: &[u32]) -> Vec<Candidate> {
        ids.iter()
            .enumerate()
            .map(|(i, &c)| Candidate::new(c, 1.0 - i as f32 * 0.01))
            .collect()
    }

    #[test]
    fn seeds_put_query_seeds_first_dedupe_and_cap() {
        let chunk_nodes =
            NodeLists::from(vec![vec![1, 5], vec![2, 3], vec![3, 9], vec![7], vec![8]]);
        let base = cands(&[2, 0, 1, 4, 3]);
        // query seeds deduplicated in order; then top-3 docs' nodes (chunk 2, 0, 1), skipping seen
        let s = graph_seeds(
            &[9, 4, 9],
            &base,
            &chunk_nodes,
            &Seeds {
                seed_docs_k: 3,
                seed_node_cap: 32,
            },
        );
        assert_eq!(s, vec![9, 4, 3, 1, 5, 2]);
        // the cap trims the doc nodes first (query seeds lead)
        assert_eq!(
            graph_seeds(
                &[9, 4],
                &base,
                &chunk_nodes,
                &Seeds {
                    seed_docs_k: 3,
                    seed_node_cap: 3
                }
            ),
            vec![9, 4, 3]
        );
        assert_eq!(
            graph_seeds(
                &[9, 4, 6],
                &base,
                &chunk_nodes,
                &Seeds {
                    seed_docs_k: 3,
                    seed_node_cap: 2
                }
            ),
            vec![9, 4]
        );
        // seed_docs_k 0: query seeds only; chunks without KG rows carry nothing
        assert_eq!(
            graph_seeds(
                &[6],
                &base,
                &chunk_nodes,
                &Seeds {
                    seed_docs_k: 0,
                    seed_node_cap: 32
                }
            ),
            vec![6]
        );
        assert_eq!(
            graph_seeds(
                &[],
                &cands(&[40]),
                &chunk_nodes,
                &Seeds {
                    seed_docs_k: 5,
                    seed_node_cap: 32
                }
            ),
            Vec::<u32>::new()
        );
    }

    #[test]
    fn sorted_intersection_both_paths() {
        assert!(intersects(&[1, 4, 9], &[2, 4]));
        assert!(!intersects(&[1, 3, 9], &[2, 4, 8]));
        assert!(!intersects(&[], &[1]));
        let big: Vec<u32> = (0..100).map(|x| x * 2).collect();
        assert!(intersects(&[7, 64], &big));
        assert!(!intersects(&[7, 63, 301], &big));
        assert!(intersects(&big, &[198]));
    }
}
