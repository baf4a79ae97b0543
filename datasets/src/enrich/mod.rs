//! The knowledge graph without an LLM (the seed's chapter 4 is not available; this is the
//! simplest honest design, deterministic, no model calls).
//!
//! (being written: see the struct docs for the contract every consumer relies on)

use serde::{Deserialize, Serialize};

/// Enrichment settings (hashed into the export's input key).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EnrichConfig {
    /// Louvain seed (node visiting order is shuffled with it).
    pub community_seed: u64,
    /// PageRank damping.
    pub pagerank_damping: f64,
    /// PageRank iterations (fixed count: deterministic).
    pub pagerank_iterations: usize,
    /// Aliases shorter than this many characters are not matched (too ambiguous).
    pub min_alias_chars: usize,
}

impl Default for EnrichConfig {
    fn default() -> Self {
        EnrichConfig {
            community_seed: 42,
            pagerank_damping: 0.85,
            pagerank_iterations: 50,
            min_alias_chars: 4,
        }
    }
}

/// One hyperedge: the entity set of one sentence with two or more entities.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hyperedge {
    /// The chunk the sentence is in.
    pub chunk: u32,
    /// Its entity nodes, ascending, unique, at least two.
    pub nodes: Vec<u32>,
}

/// The knowledge graph of one corpus. Node ids are dense `u32`s ordered like the sorted node names,
/// so ties on node id are ties on name. Every list is sorted ascending and deduplicated.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KnowledgeGraph {
    /// Node names (entity = a distinct passage title), sorted; node id = index.
    pub nodes: Vec<String>,
    /// Lowercased alias -> node, sorted by alias (a title, and the title with a parenthetical
    /// qualifier stripped: "Lilu (mythology)" -> "lilu (mythology)", "lilu"). An alias claimed by
    /// several titles maps to the smallest node id.
    pub aliases: Vec<(String, u32)>,
    /// Per chunk: entity nodes it mentions (its own title's node included).
    pub chunk_nodes: Vec<Vec<u32>>,
    /// Per chunk: 1-hop projection: nodes adjacent (by an edge) to any of its nodes, minus its own.
    pub chunk_reach: Vec<Vec<u32>>,
    /// Per node: community id (Louvain over the weighted entity graph).
    pub node_community: Vec<u32>,
    /// Per node: PageRank centrality (sums to 1 over nodes).
    pub node_centrality: Vec<f32>,
    /// Undirected weighted edges `(a, b, weight)` with `a < b`, sorted by `(a, b)`: mention edges
    /// (a chunk about `a` mentions `b`) and co-occurrence edges (both mentioned in one chunk).
    pub edges: Vec<(u32, u32, f32)>,
    /// Hyperedges, sorted by `(chunk, nodes)`; hyperedge id = index.
    pub hyperedges: Vec<Hyperedge>,
}

/// Query-time indices derived from a [`KnowledgeGraph`] when an export is loaded (never stored):
/// the alias matcher, node -> chunks, node adjacency, node -> hyperedges.
#[derive(Debug, Clone, Default)]
pub struct KgIndex {
    // (being written)
}

impl KgIndex {
    /// Builds the indices of `kg` over `num_chunks` chunks.
    pub fn new(kg: &KnowledgeGraph, num_chunks: usize) -> KgIndex {
        let _ = (kg, num_chunks);
        todo!("enrich helper")
    }

    /// Query seeds: nodes whose alias occurs in `query` (case-insensitive, on word boundaries,
    /// leftmost-longest, non-overlapping), in order of first occurrence, deduplicated.
    pub fn query_seeds(&self, query: &str) -> Vec<u32> {
        let _ = query;
        todo!("enrich helper")
    }

    /// Chunks that mention `node` (ascending).
    pub fn node_chunks(&self, node: u32) -> &[u32] {
        let _ = node;
        todo!("enrich helper")
    }

    /// Neighbours of `node` with edge weights, ascending by neighbour id.
    pub fn neighbours(&self, node: u32) -> &[(u32, f32)] {
        let _ = node;
        todo!("enrich helper")
    }

    /// Hyperedge ids that contain `node` (ascending).
    pub fn node_hyperedges(&self, node: u32) -> &[u32] {
        let _ = node;
        todo!("enrich helper")
    }
}
