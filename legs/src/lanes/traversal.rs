//! The traversal lane (the seed's `GraphRetriever`): a bounded breadth-first search over the
//! entity graph from the seed nodes, reached nodes resolved back to the chunks that mention them.
//!
//! A node reached first at hop `h` (seeds are hop 0) gives each of its chunks
//! `seed_score × hop_decay^h`; a chunk keeps its best score, i.e. the one at the closest hop of
//! any node it mentions. The lane is ranked by descending score, ties on ascending chunk, and cut
//! at `lane_k`. Note what the seed warns about: every chunk mentioning a seed entity scores
//! exactly `seed_score`, so the head is one large tie class ordered by chunk id.
//!
//! Cost control: levels are expanded one at a time, and a chunk is scored the first time any of
//! its nodes is reached (the BFS order is the closest-hop order). When the next level's score is
//! strictly below this level's and `lane_k` chunks are already scored, nothing deeper can enter
//! the top `lane_k`, so the search stops there (exact, not a heuristic).

use serde::{Deserialize, Serialize};

use super::GraphSource;
use crate::candidate::{top_k, Candidate};
use crate::leg::LegError;
use crate::params::{Check, Checked};

/// Traversal lane parameters (defaults: the seed's measured operating point).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TraversalParams {
    /// Hops from the seeds (seed nodes are hop 0).
    pub max_hops: usize,
    /// Score multiplier per hop.
    pub hop_decay: f32,
    /// Score of a chunk mentioning a seed node.
    pub seed_score: f32,
}

impl Default for TraversalParams {
    fn default() -> Self {
        TraversalParams {
            max_hops: 2,
            hop_decay: 0.5,
            seed_score: 1.0,
        }
    }
}

impl Checked for TraversalParams {
    fn check(&self, c: &Check<'_>) -> Result<(), LegError> {
        c.at_most("max_hops", self.max_hops, 16)?;
        c.unit("hop_decay", self.hop_decay as f64)?;
        c.positive("seed_score", self.seed_score as f64)
    }
}

crate::leaf_params!(TraversalParams);

/// The traversal lane's ranked chunks for `seeds` (see the module docs). Seeds outside the graph
/// are ignored.
pub fn traverse<G: GraphSource + ?Sized>(
    graph: &G,
    seeds: &[u32],
    p: &TraversalParams,
    lane_k: usize,
) -> Vec<Candidate> {
    let num_nodes = graph.num_nodes();
    if seeds.is_empty() || num_nodes == 0 || lane_k == 0 {
        return Vec::new();
    }
    let mut node_seen = vec![false; num_nodes];
    let mut chunk_seen = vec![false; graph.num_chunks()];
    let mut level: Vec<u32> = Vec::with_capacity(seeds.len());
    for &s in seeds {
        if (s as usize) < num_nodes && !node_seen[s as usize] {
            node_seen[s as usize] = true;
            level.push(s);
        }
    }
    let mut out: Vec<Candidate> = Vec::new();
    let mut next: Vec<u32> = Vec::new();
    let mut hop = 0usize;
    loop {
        let score = p.seed_score * p.hop_decay.powi(hop as i32);
        for &n in &level {
            for &c in graph.node_chunks(n) {
                if let Some(seen) = chunk_seen.get_mut(c as usize) {
                    if !*seen {
                        *seen = true;
                        out.push(Candidate::new(c, score));
                    }
                }
            }
        }
        if hop >= p.max_hops || level.is_empty() {
            break;
        }
        let next_score = p.seed_score * p.hop_decay.powi(hop as i32 + 1);
        if out.len() >= lane_k && next_score < score {
            break; // nothing deeper can reach the top lane_k
        }
        next.clear();
        for &n in &level {
            for &(m, _) in graph.neighbours(n) {
                if (m as usize) < num_nodes && !node_seen[m as usize] {
                    node_seen[m as usize] = true;
                    next.push(m);
                }
            }
        }
        std::mem::swap(&mut level, &mut next);
        hop += 1;
    }
    top_k(&mut out, lane_k);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lanes::testgraph::MemGraph;

    /// A path 0 - 1 - 2 - 3 plus 4 isolated. Chunk c mentions: 0:[0] 1:[1] 2:[2] 3:[3] 4:[4]
    /// 5:[3, 0] (closest hop of node 0 wins) 6:[2].
    fn path() -> MemGraph {
        MemGraph::new(
            5,
            vec![
                vec![0],
                vec![1],
                vec![2],
                vec![3],
                vec![4],
                vec![3, 0],
                vec![2],
            ],
            &[(0, 1), (1, 2), (2, 3)],
            &[],
        )
    }

    fn ranked(v: &[Candidate]) -> Vec<(u32, f32)> {
        v.iter().map(|c| (c.chunk, c.score)).collect()
    }

    #[test]
    fn hop_decay_at_the_closest_hop() {
        let g = path();
        let r = traverse(&g, &[0], &TraversalParams::default(), 100);
        // hop 0: chunks 0, 5 (1.0); hop 1: chunk 1 (0.5); hop 2: chunks 2, 6 (0.25); node 3 is
        // at hop 3 > max_hops, and chunk 5 keeps its hop-0 score
        assert_eq!(
            ranked(&r),
            vec![(0, 1.0), (5, 1.0), (1, 0.5), (2, 0.25), (6, 0.25)]
        );
        // seeding from both ends: every chunk at its closest hop
        let r = traverse(&g, &[3, 0], &TraversalParams::default(), 100);
        assert_eq!(
            ranked(&r),
            vec![(0, 1.0), (3, 1.0), (5, 1.0), (1, 0.5), (2, 0.5), (6, 0.5)]
        );
        // max_hops 0: seeds' own chunks only; unknown seeds ignored; seed_score scales
        let p = TraversalParams {
            max_hops: 0,
            seed_score: 2.0,
            ..Default::default()
        };
        assert_eq!(ranked(&traverse(&g, &[1, 99], &p, 100)), vec![(1, 2.0)]);
        assert!(traverse(&g, &[], &TraversalParams::default(), 100).is_empty());
    }

    #[test]
    fn lane_k_caps_and_early_stop_is_exact() {
        let g = path();
        let p = TraversalParams::default();
        assert_eq!(ranked(&traverse(&g, &[0], &p, 2)), vec![(0, 1.0), (5, 1.0)]);
        // decay 1.0: every level ties, so deeper low-id chunks must still win the tie
        let p = TraversalParams {
            hop_decay: 1.0,
            ..Default::default()
        };
        assert_eq!(ranked(&traverse(&g, &[2], &p, 2)), vec![(0, 1.0), (1, 1.0)]);
        // the early stop agrees with an unbounded run cut afterwards
        for lane_k in 1..8 {
            let p = TraversalParams {
                max_hops: 3,
                ..Default::default()
            };
            let mut full = traverse(&g, &[1], &p, 100);
            full.truncate(lane_k);
            assert_eq!(traverse(&g, &[1], &p, lane_k), full);
        }
    }
}
