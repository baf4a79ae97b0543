//! The Expander (the seed's §5.3): a graph-aware rescore of candidates already in hand, using
//! only the KG columns on the chunks (no traversal).
//!
//! The top `seed_top_k` candidates of the unit-scaled base are the anchors. Every candidate
//! gains
//!
//! * `hop_weight` × the number of distinct anchors it is 1-hop-linked to. A link between chunks
//!   `a` and `b` is a KG edge (`a.nodes ∩ b.reach ≠ ∅` or `b.nodes ∩ a.reach ≠ ∅`) or a shared
//!   entity (`a.nodes ∩ b.nodes ≠ ∅`); an anchor never links to itself. The edge test is asked
//!   of the node adjacency ([`linked`]), so no chunk's reach list is held;
//! * `community_weight` if its community equals the community of any *other* anchor (a chunk's
//!   community is its own title node's: [`KnowledgeGraph::chunk_community`]);
//! * `centrality_weight` × its peak node centrality ([`KnowledgeGraph::chunk_centrality`]),
//!
//! and the list is re-sorted in rank order (score descending, ties on ascending chunk). The
//! bonuses are absolute, which is why the base is unit-scaled first: on that scale the head's
//! rank-to-rank gap is ~0.016 and one link (0.05) moves a corroborated candidate a few ranks.
//!
//! A candidate without KG data earns nothing. When nothing earns anything (no KG at all, or no
//! links) the list is returned untouched, so the transform is an order-preserving no-op.
//! All intersections are over sorted slices.

use hopbench_datasets::enrich::KnowledgeGraph;
use serde::{Deserialize, Serialize};

use crate::candidate::{sort_ranked, Candidate};
use crate::lanes::{intersects, GraphSource};
use crate::leg::LegError;
use crate::params::{Check, Checked};

/// Expander parameters (defaults: the rescue pipeline's measured operating point).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ExpanderParams {
    /// Anchors: this many candidates from the head of the base.
    pub seed_top_k: usize,
    /// Bonus per distinct anchor a candidate is 1-hop-linked to.
    pub hop_weight: f32,
    /// Bonus for sharing a community with another anchor.
    pub community_weight: f32,
    /// Bonus per unit of peak node centrality.
    pub centrality_weight: f32,
}

impl Default for ExpanderParams {
    fn default() -> Self {
        ExpanderParams {
            seed_top_k: 5,
            hop_weight: 0.05,
            community_weight: 0.0,
            centrality_weight: 0.0,
        }
    }
}

impl Checked for ExpanderParams {
    fn check(&self, c: &Check<'_>) -> Result<(), LegError> {
        // no anchor links nothing: the rescore would be the base order
        c.at_least("seed_top_k", self.seed_top_k, 1)?;
        c.non_negative("hop_weight", self.hop_weight as f64)?;
        c.non_negative("community_weight", self.community_weight as f64)?;
        c.non_negative("centrality_weight", self.centrality_weight as f64)
    }
}

crate::leaf_params!(ExpanderParams);

const EMPTY: &[u32] = &[];

/// The nodes chunk `chunk` mentions (empty past the graph's chunks).
fn nodes_of(kg: &KnowledgeGraph, chunk: u32) -> &[u32] {
    kg.chunk_nodes.get(chunk as usize).unwrap_or(EMPTY)
}

/// Whether chunks mentioning nodes `a` and `b` (each ascending, unique) are 1-hop-linked: they
/// share a node, or an edge of `graph` joins a node of one to a node of the other. This is the
/// test on the corpus's reach columns (`a ∩ reach(b)`, `b ∩ reach(a)`, `a ∩ b`), asked of the
/// adjacency instead: a reach is its chunk's neighbours minus its own nodes, and a neighbour
/// that is also an own node of the other chunk is a shared node.
pub fn linked<G: GraphSource + ?Sized>(graph: &G, a: &[u32], b: &[u32]) -> bool {
    intersects(a, b)
        || a.iter().any(|&x| {
            let row = graph.neighbours(x);
            b.iter()
                .any(|&y| row.binary_search_by_key(&y, |e| e.0).is_ok())
        })
}

/// The Expander bonus of every candidate of `list` (same order), against the list's head.
pub fn bonuses<G: GraphSource + ?Sized>(
    kg: &KnowledgeGraph,
    graph: &G,
    list: &[Candidate],
    p: &ExpanderParams,
) -> Vec<f32> {
    let mut out = vec![0.0f32; list.len()];
    if kg.chunk_nodes.is_empty() {
        return out;
    }
    let anchors: Vec<(u32, &[u32])> = list
        .iter()
        .take(p.seed_top_k)
        .map(|c| (c.chunk, nodes_of(kg, c.chunk)))
        .filter(|(_, n)| !n.is_empty())
        .collect();
    let communities: Vec<(u32, Option<u32>)> = if p.community_weight != 0.0 {
        anchors
            .iter()
            .map(|&(c, _)| (c, kg.chunk_community(c)))
            .collect()
    } else {
        Vec::new()
    };
    for (c, bonus) in list.iter().zip(out.iter_mut()) {
        let nodes = nodes_of(kg, c.chunk);
        if nodes.is_empty() {
            continue;
        }
        if p.hop_weight != 0.0 {
            let links = anchors
                .iter()
                .filter(|&&(a, anodes)| a != c.chunk && linked(graph, nodes, anodes))
                .count();
            *bonus += p.hop_weight * links as f32;
        }
        if p.community_weight != 0.0 {
            if let Some(mine) = kg.chunk_community(c.chunk) {
                if communities
                    .iter()
                    .any(|&(a, ac)| a != c.chunk && ac == Some(mine))
                {
                    *bonus += p.community_weight;
                }
            }
        }
        if p.centrality_weight != 0.0 {
            *bonus += p.centrality_weight * kg.chunk_centrality(c.chunk);
        }
    }
    out
}

/// Rescores `list` (a unit-scaled base in rank order) and re-sorts it; untouched when no
/// candidate earns a bonus.
pub fn expand<G: GraphSource + ?Sized>(
    kg: &KnowledgeGraph,
    graph: &G,
    mut list: Vec<Candidate>,
    p: &ExpanderParams,
) -> Vec<Candidate> {
    let b = bonuses(kg, graph, &list, p);
    if b.iter().all(|&x| x == 0.0) {
        return list;
    }
    for (c, x) in list.iter_mut().zip(b) {
        c.score += x;
    }
    sort_ranked(&mut list);
    list
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lanes::testgraph::MemGraph;

    fn ids(v: &[Candidate]) -> Vec<u32> {
        v.iter().map(|c| c.chunk).collect()
    }

    /// Nodes 0..7, edges 0-1, 2-3. Chunks: 0:[0] 1:[1] (edge-linked to 0) 2:[0,4] (shares 0)
    /// 3:[5] 4:[2] 5:[3] (edge-linked to 4) 6:[] (no KG data).
    fn graph() -> MemGraph {
        MemGraph::new(
            7,
            vec![
                vec![0],
                vec![1],
                vec![0, 4],
                vec![5],
                vec![2],
                vec![3],
                vec![],
            ],
            &[(0, 1), (2, 3)],
            &[],
        )
    }

    #[test]
    fn hand_computed_bonus_with_ties_on_chunk_id() {
        let g = graph();
        // dyadic scores and weight, so the ties below are exact in f32
        let base = vec![
            Candidate::new(0, 1.0),
            Candidate::new(3, 0.875),
            Candidate::new(5, 0.8125),
            Candidate::new(6, 0.75),
            Candidate::new(2, 0.75),
            Candidate::new(1, 0.75),
            Candidate::new(4, 0.625),
        ];
        let p = ExpanderParams {
            seed_top_k: 3, // anchors: chunks 0, 3, 5
            hop_weight: 0.125,
            ..Default::default()
        };
        let b = bonuses(&g.kg, &g, &base, &p);
        // 0: no other anchor linked; 3, 5: none; 6: no data; 2: shares node 0 with anchor 0;
        // 1: edge 0-1 to anchor 0; 4: edge 2-3 to anchor 5
        assert_eq!(b, vec![0.0, 0.0, 0.0, 0.0, 0.125, 0.125, 0.125]);
        let out = expand(&g.kg, &g, base, &p);
        // 1 and 2 reach 0.875 and tie with chunk 3; 4 reaches 0.75 and ties with 6: ascending
        // chunk decides both ties
        assert_eq!(ids(&out), vec![0, 1, 2, 3, 5, 4, 6]);
        assert_eq!(out[1].score, 0.875);
        // two anchors linked: two bonuses
        let base = vec![
            Candidate::new(0, 1.0),
            Candidate::new(2, 0.9),
            Candidate::new(1, 0.5),
        ];
        let b = bonuses(&g.kg, &g, &base, &ExpanderParams::default());
        // 0 <-> 2 share node 0; 1 links to both 0 and 2 (edge 0-1)
        assert_eq!(b, vec![0.1, 0.1, 0.1]);
    }

    /// The reach-based link, slowly: each chunk's reach (its nodes' neighbours minus its own
    /// nodes), then the three intersections.
    fn linked_by_reach(g: &MemGraph, a: &[u32], b: &[u32]) -> bool {
        let reach = |ns: &[u32]| {
            let mut r: Vec<u32> = ns
                .iter()
                .flat_map(|&v| g.neighbours(v).iter().map(|e| e.0))
                .filter(|u| !ns.contains(u))
                .collect();
            r.sort_unstable();
            r.dedup();
            r
        };
        intersects(a, &reach(b)) || intersects(b, &reach(a)) || intersects(a, b)
    }

    #[test]
    fn links_by_adjacency_equal_links_by_reach() {
        // xorshift64: random graphs of up to ten nodes, every pair of their random chunks
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move |m: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % m
        };
        for case in 0..300 {
            let n = 1 + next(10) as u32;
            let mut edges = Vec::new();
            for a in 0..n {
                for b in a + 1..n {
                    if next(3) == 0 {
                        edges.push((a, b));
                    }
                }
            }
            let chunks: Vec<Vec<u32>> = (0..6)
                .map(|_| (0..n).filter(|_| next(4) == 0).collect())
                .collect();
            let g = MemGraph::new(n as usize, chunks.clone(), &edges, &[]);
            for a in &chunks {
                for b in &chunks {
                    assert_eq!(
                        linked(&g, a, b),
                        linked_by_reach(&g, a, b),
                        "case {case}: {a:?} ~ {b:?} over {edges:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn community_and_centrality_bonuses() {
        let mut g = graph();
        g.kg.node_community = vec![0, 0, 1, 1, 0, 2, 3];
        // the title node of chunks 3, 4, 5 is their only node
        g.kg.chunk_title = vec![None, None, None, Some(5), Some(2), Some(3), None];
        g.kg.node_centrality = vec![0.1, 0.2, 0.3, 0.05, 0.4, 0.0, 0.0];
        let base = vec![
            Candidate::new(3, 1.0),
            Candidate::new(4, 0.9),
            Candidate::new(5, 0.8),
        ];
        let p = ExpanderParams {
            seed_top_k: 2, // anchors 3 (community 2), 4 (community 1)
            hop_weight: 0.0,
            community_weight: 0.5,
            centrality_weight: 1.0,
        };
        let b = bonuses(&g.kg, &g, &base, &p);
        // 3: no other anchor in community 2; 4: none in 1 (itself excluded); 5: community 1 as
        // anchor 4. Centrality: peak of own nodes.
        assert_eq!(b, vec![0.0, 0.3, 0.5 + 0.05]);
    }

    #[test]
    fn no_kg_is_an_order_preserving_no_op() {
        // f32 ties placed against chunk order (as RRF's f64 order can leave them) stay put
        let base = vec![
            Candidate::new(9, 1.0),
            Candidate::new(4, 0.5),
            Candidate::new(2, 0.5),
        ];
        let empty = MemGraph::new(0, Vec::new(), &[], &[]);
        assert_eq!(
            expand(&empty.kg, &empty, base.clone(), &ExpanderParams::default()),
            base
        );
        // a graph without links is a no-op too
        let g = graph();
        let base = vec![Candidate::new(3, 1.0), Candidate::new(6, 0.5)];
        assert_eq!(
            expand(&g.kg, &g, base.clone(), &ExpanderParams::default()),
            base
        );
    }
}
