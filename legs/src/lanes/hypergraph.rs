//! The hypergraph lane (the seed's `hypergraph_signals`): sentence-level hyperedges reached from
//! the seed set, weighted by a random walk, resolved to the chunks they come from.
//!
//! Five steps, all deterministic (fixed iteration count, every loop in ascending id order, sums
//! in `f64`):
//!
//! 1. **Entry.** Each seed node is an entry node with weight 1.0 when it is a query seed (the
//!    query names it) and `alpha` otherwise (it came from a top base document).
//! 2. **Expansion.** Every hyperedge that contains an entry node.
//! 3. **`s_hyp` prune.** `s_hyp(e) = Σ_{v ∈ e ∩ entry} w(v) / |e|`: the entry mass of a
//!    hyperedge per member, so a long sentence that mentions one seed among many entities is
//!    diluted. Hyperedges with `s_hyp < s_hyp_min` are dropped; of the rest at most
//!    `max_hyperedges` survive, by `s_hyp` descending, ties on ascending id.
//! 4. **Two-stage random walk with restart** over the bipartite node–hyperedge incidence of the
//!    survivors. The restart distribution `r` is the entry weights, normalised. Starting from
//!    `p = r`, each of `iterations` rounds moves node → hyperedge
//!    (`q_e = Σ_{v ∈ e} p_v / deg(v)`, `deg` counted over surviving hyperedges) then hyperedge →
//!    node (`p'_v = Σ_{e ∋ v} q_e / |e|`), then restarts: `p = (1 − restart)·p' + restart·r`.
//!    `ρ_e` is the node → hyperedge stage applied to the final `p`; it sums to 1 over the
//!    survivors (mass is conserved at every stage).
//! 5. **Coverage gate.** Every survivor contains an entry node by construction (step 2), so the
//!    gate asks the stronger question: does the hyperedge *cover a query seed*, i.e. contain a
//!    node the query itself names? Hyperedges that do are kept; the rest, reached only through
//!    the base documents' nodes, are kept when the walk concentrated mass on them: `ρ ≥ min_rho`.
//!
//! Retained hyperedges are ordered by `ρ` descending, ties on ascending id, and resolve to their
//! chunk; the first occurrence of a chunk wins (its score is that hyperedge's `ρ`), and the chunk
//! list is cut at `lane_k`. The retained hyperedges themselves, with their `ρ`, are returned too:
//! the chain-of-evidence selector buys hyperedges, not chunks.

use serde::{Deserialize, Serialize};

use super::GraphSource;
use crate::candidate::Candidate;
use crate::leg::LegError;
use crate::params::{Check, Checked};

/// Hypergraph lane parameters (defaults: the seed's operating point where it states one).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HypergraphParams {
    /// Entry weight of a seed node the query does not name (query seeds weigh 1.0).
    pub alpha: f32,
    /// Minimum `s_hyp` of a hyperedge to survive the prune.
    pub s_hyp_min: f32,
    /// Most hyperedges surviving the prune (best `s_hyp` first).
    pub max_hyperedges: usize,
    /// Restart probability of the walk.
    pub restart: f32,
    /// Walk rounds (fixed: no convergence test, so the result is a pure function of the input).
    pub iterations: usize,
    /// Coverage gate: a hyperedge covering no query seed needs at least this `ρ`.
    pub min_rho: f32,
}

impl Default for HypergraphParams {
    fn default() -> Self {
        HypergraphParams {
            alpha: 0.5,
            s_hyp_min: 0.2,
            max_hyperedges: 200,
            restart: 0.15,
            iterations: 20,
            min_rho: 0.01,
        }
    }
}

impl Checked for HypergraphParams {
    fn check(&self, c: &Check<'_>) -> Result<(), LegError> {
        // a seed the query does not name weighs at most as much as one it names (1.0)
        c.unit("alpha", self.alpha as f64)?;
        c.unit("s_hyp_min", self.s_hyp_min as f64)?;
        c.at_least("max_hyperedges", self.max_hyperedges, 1)?;
        c.unit("restart", self.restart as f64)?;
        c.at_least("iterations", self.iterations, 1)?;
        c.unit("min_rho", self.min_rho as f64)
    }
}

crate::leaf_params!(HypergraphParams);

/// What the hypergraph lane returns.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HypergraphLane {
    /// Ranked chunks (score = `ρ` of the chunk's best retained hyperedge), at most `lane_k`.
    pub chunks: Vec<Candidate>,
    /// Retained hyperedges `(id, ρ)`, by `ρ` descending then id ascending (all of them, not cut
    /// at `lane_k`).
    pub hyperedges: Vec<(u32, f32)>,
}

/// Runs the lane for `seeds`, of which the nodes in `query_seeds` weigh 1.0 and the rest
/// `alpha` (see the module docs). Seeds outside the graph are ignored.
pub fn hypergraph<G: GraphSource + ?Sized>(
    graph: &G,
    seeds: &[u32],
    query_seeds: &[u32],
    p: &HypergraphParams,
    lane_k: usize,
) -> HypergraphLane {
    let entry = entry_nodes(graph, seeds, query_seeds, p.alpha);
    if entry.is_empty() || p.max_hyperedges == 0 {
        return HypergraphLane::default();
    }
    let scored = pruned_hyperedges(graph, &entry, p);
    if scored.is_empty() {
        return HypergraphLane::default();
    }
    let Some(rho) = walk(graph, &entry, &scored, p) else {
        return HypergraphLane::default();
    };
    gate_and_rank(graph, query_seeds, &scored, &rho, p.min_rho, lane_k)
}

/// Step 1: the entry nodes, ascending and distinct, with their weights (1.0 for a query seed,
/// `alpha` for the rest); seeds outside the graph are dropped.
fn entry_nodes<G: GraphSource + ?Sized>(
    graph: &G,
    seeds: &[u32],
    query_seeds: &[u32],
    alpha: f32,
) -> Vec<(u32, f64)> {
    let num_nodes = graph.num_nodes() as u32;
    let mut entry: Vec<(u32, f64)> = seeds
        .iter()
        .filter(|&&s| s < num_nodes)
        .map(|&s| {
            let w = if query_seeds.contains(&s) {
                1.0
            } else {
                alpha as f64
            };
            (s, w)
        })
        .collect();
    entry.sort_unstable_by_key(|e| e.0);
    entry.dedup_by_key(|e| e.0);
    entry
}

/// Steps 2 and 3: every hyperedge containing an entry node, with its `s_hyp`, pruned at
/// `s_hyp_min` and capped at `max_hyperedges` (best `s_hyp` first), in ascending id order.
fn pruned_hyperedges<G: GraphSource + ?Sized>(
    graph: &G,
    entry: &[(u32, f64)],
    p: &HypergraphParams,
) -> Vec<(u32, f64)> {
    // 2. expansion: (hyperedge, entry weight) pairs, grouped by hyperedge
    let mut touched: Vec<(u32, f64)> = Vec::new();
    for &(v, w) in entry {
        touched.extend(graph.node_hyperedges(v).iter().map(|&e| (e, w)));
    }
    touched.sort_unstable_by_key(|t| t.0); // stable order of equal ids is irrelevant: sums
    let mut scored: Vec<(u32, f64)> = Vec::new(); // (hyperedge, s_hyp)
    let mut i = 0;
    while i < touched.len() {
        let e = touched[i].0;
        let mut sum = 0.0;
        while i < touched.len() && touched[i].0 == e {
            sum += touched[i].1;
            i += 1;
        }
        let size = graph.hyperedge_nodes(e).len().max(1) as f64;
        // 3. s_hyp prune
        let s = sum / size;
        if s >= p.s_hyp_min as f64 {
            scored.push((e, s));
        }
    }
    if scored.len() > p.max_hyperedges {
        scored.sort_unstable_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        scored.truncate(p.max_hyperedges);
        scored.sort_unstable_by_key(|s| s.0);
    }
    scored
}

/// Step 4: the random walk with restart over the survivors' incidence, on local indices
/// (hyperedges in id order, nodes in id order); `ρ` per survivor, in `scored` order. `None` when
/// no entry node lies in a survivor (no restart mass to walk from).
fn walk<G: GraphSource + ?Sized>(
    graph: &G,
    entry: &[(u32, f64)],
    scored: &[(u32, f64)],
    p: &HypergraphParams,
) -> Option<Vec<f64>> {
    let mut nodes: Vec<u32> = scored
        .iter()
        .flat_map(|&(e, _)| graph.hyperedge_nodes(e).iter().copied())
        .collect();
    nodes.sort_unstable();
    nodes.dedup();
    let mut offsets: Vec<usize> = Vec::with_capacity(scored.len() + 1);
    let mut members: Vec<usize> = Vec::new();
    let mut deg = vec![0u32; nodes.len()];
    offsets.push(0);
    for &(e, _) in scored {
        for v in graph.hyperedge_nodes(e) {
            let local = nodes.binary_search(v).expect("collected above");
            members.push(local);
            deg[local] += 1;
        }
        offsets.push(members.len());
    }
    let mut restart = vec![0.0f64; nodes.len()];
    let mut mass = 0.0;
    for &(v, w) in entry {
        if let Ok(local) = nodes.binary_search(&v) {
            restart[local] = w;
            mass += w;
        }
    }
    if mass <= 0.0 {
        return None;
    }
    for r in &mut restart {
        *r /= mass;
    }
    let beta = p.restart as f64;
    let mut pn = restart.clone();
    let mut next = vec![0.0f64; nodes.len()];
    let mut rho = vec![0.0f64; scored.len()];
    let node_to_edge = |pn: &[f64], rho: &mut [f64]| {
        for (j, r) in rho.iter_mut().enumerate() {
            *r = members[offsets[j]..offsets[j + 1]]
                .iter()
                .map(|&v| pn[v] / deg[v] as f64)
                .sum();
        }
    };
    for _ in 0..p.iterations {
        node_to_edge(&pn, &mut rho);
        next.iter_mut().for_each(|x| *x = 0.0);
        for (j, &q) in rho.iter().enumerate() {
            let m = &members[offsets[j]..offsets[j + 1]];
            let share = q / m.len() as f64;
            for &v in m {
                next[v] += share;
            }
        }
        for ((x, &n), &r) in pn.iter_mut().zip(&next).zip(&restart) {
            *x = (1.0 - beta) * n + beta * r;
        }
    }
    node_to_edge(&pn, &mut rho);
    Some(rho)
}

/// Step 5: the coverage gate (a hyperedge covering a query seed stays, the rest need
/// `ρ >= min_rho`), then the kept hyperedges by `ρ` descending, ties on ascending id, and their
/// chunks (first occurrence wins), cut at `lane_k`.
fn gate_and_rank<G: GraphSource + ?Sized>(
    graph: &G,
    query_seeds: &[u32],
    scored: &[(u32, f64)],
    rho: &[f64],
    min_rho: f32,
    lane_k: usize,
) -> HypergraphLane {
    let mut query_sorted: Vec<u32> = query_seeds.to_vec();
    query_sorted.sort_unstable();
    let mut kept: Vec<(u32, f64)> = scored
        .iter()
        .zip(rho)
        .filter(|&(&(e, _), &r)| {
            r >= min_rho as f64 || super::intersects(graph.hyperedge_nodes(e), &query_sorted)
        })
        .map(|(&(e, _), &r)| (e, r))
        .collect();
    kept.sort_unstable_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut chunks: Vec<Candidate> = Vec::new();
    for &(e, r) in &kept {
        if chunks.len() >= lane_k {
            break;
        }
        let c = graph.hyperedge_chunk(e);
        if !chunks.iter().any(|x| x.chunk == c) {
            chunks.push(Candidate::new(c, r as f32));
        }
    }
    HypergraphLane {
        chunks,
        hyperedges: kept.into_iter().map(|(e, r)| (e, r as f32)).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lanes::testgraph::MemGraph;

    /// Nodes 0..8. Hyperedges (chunk: nodes), ids follow (chunk, nodes) order:
    /// 0 = c0:[0,1]  1 = c1:[1,2]  2 = c1:[2,3,4,5]  3 = c2:[0,6]  4 = c3:[6,7]  5 = c4:[0,1,6]
    fn graph() -> MemGraph {
        MemGraph::new(
            8,
            vec![
                vec![0, 1],
                vec![1, 2, 3, 4, 5],
                vec![0, 6],
                vec![6, 7],
                vec![0, 1, 6],
            ],
            &[],
            &[
                (0, &[0, 1]),
                (1, &[1, 2]),
                (1, &[2, 3, 4, 5]),
                (2, &[0, 6]),
                (3, &[6, 7]),
                (4, &[0, 1, 6]),
            ],
        )
    }

    /// The walk written out naively: dense node/hyperedge vectors, no local indexing.
    fn reference_rho(
        g: &MemGraph,
        kept: &[u32],
        entry: &[(u32, f64)],
        beta: f64,
        iterations: usize,
    ) -> Vec<(u32, f64)> {
        let n = g.num_nodes();
        let mut deg = vec![0.0; n];
        for &e in kept {
            for &v in g.hyperedge_nodes(e) {
                deg[v as usize] += 1.0;
            }
        }
        let total: f64 = entry.iter().map(|x| x.1).sum();
        let mut r = vec![0.0; n];
        for &(v, w) in entry {
            r[v as usize] = w / total;
        }
        let step = |p: &[f64]| -> Vec<f64> {
            kept.iter()
                .map(|&e| {
                    g.hyperedge_nodes(e)
                        .iter()
                        .map(|&v| p[v as usize] / deg[v as usize])
                        .sum()
                })
                .collect()
        };
        let mut p = r.clone();
        for _ in 0..iterations {
            let q = step(&p);
            let mut next = vec![0.0; n];
            for (i, &e) in kept.iter().enumerate() {
                let m = g.hyperedge_nodes(e);
                for &v in m {
                    next[v as usize] += q[i] / m.len() as f64;
                }
            }
            p = (0..n)
                .map(|v| (1.0 - beta) * next[v] + beta * r[v])
                .collect();
        }
        kept.iter().copied().zip(step(&p)).collect()
    }

    #[test]
    fn s_hyp_prune_walk_and_ordering() {
        let g = graph();
        // query seed 0 (w 1.0), doc seed 2 (w 0.5)
        let lane = hypergraph(&g, &[0, 2], &[0], &HypergraphParams::default(), 100);
        // expansion: node 0 -> {0, 3, 5}; node 2 -> {1, 2}
        // s_hyp: e0 1/2, e1 0.5/2, e2 0.5/4 = 0.125 (pruned), e3 1/2, e5 1/3
        let ids: Vec<u32> = lane.hyperedges.iter().map(|h| h.0).collect();
        let mut sorted = ids.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, vec![0, 1, 3, 5]);
        // rho sums to 1 over the survivors (all kept: min_rho is small here) and is ordered
        let total: f32 = lane.hyperedges.iter().map(|h| h.1).sum();
        assert!((total - 1.0).abs() < 1e-5, "{total}");
        for w in lane.hyperedges.windows(2) {
            assert!(w[0].1 > w[1].1 || (w[0].1 == w[1].1 && w[0].0 < w[1].0));
        }
        // rho against a plain dense re-implementation of the walk
        let reference = reference_rho(&g, &[0, 1, 3, 5], &[(0, 1.0), (2, 0.5)], 0.15, 20);
        for &(e, r) in &lane.hyperedges {
            let want = reference.iter().find(|x| x.0 == e).unwrap().1;
            assert!((r as f64 - want).abs() < 1e-6, "e{e}: {r} vs {want}");
        }
        // chunks: first occurrence wins, scores are that hyperedge's rho
        let chunk_ids: Vec<u32> = lane.chunks.iter().map(|c| c.chunk).collect();
        let mut expect: Vec<u32> = Vec::new();
        for &(e, _) in &lane.hyperedges {
            let c = g.hyperedge_chunk(e);
            if !expect.contains(&c) {
                expect.push(c);
            }
        }
        assert_eq!(chunk_ids, expect);
        assert_eq!(lane.chunks[0].score, lane.hyperedges[0].1);
    }

    #[test]
    fn deterministic_and_independent_of_seed_order() {
        let g = graph();
        let p = HypergraphParams::default();
        let a = hypergraph(&g, &[0, 2, 6], &[0], &p, 100);
        for _ in 0..3 {
            assert_eq!(hypergraph(&g, &[0, 2, 6], &[0], &p, 100), a);
        }
        assert_eq!(hypergraph(&g, &[6, 2, 0], &[0], &p, 100), a);
        assert!(hypergraph(&g, &[], &[], &p, 100).chunks.is_empty());
        assert!(hypergraph(&g, &[99], &[], &p, 100).hyperedges.is_empty());
    }

    #[test]
    fn coverage_gate_keeps_query_seed_hyperedges_and_needs_rho_otherwise() {
        let g = graph();
        let p = HypergraphParams {
            min_rho: 0.99,
            s_hyp_min: 0.0,
            ..Default::default()
        };
        // only hyperedges covering query seed 0 survive a gate nothing else can pass
        let lane = hypergraph(&g, &[0, 2], &[0], &p, 100);
        let mut ids: Vec<u32> = lane.hyperedges.iter().map(|h| h.0).collect();
        ids.sort_unstable();
        assert_eq!(ids, vec![0, 3, 5]);
        // no query seeds: nothing reaches rho 0.99
        assert!(hypergraph(&g, &[0, 2], &[], &p, 100).hyperedges.is_empty());
        // lane_k and max_hyperedges cap
        let p = HypergraphParams {
            max_hyperedges: 2,
            ..Default::default()
        };
        let lane = hypergraph(&g, &[0, 2], &[0], &p, 1);
        assert_eq!(lane.chunks.len(), 1);
        // the two best s_hyp (0.5 each): e0 and e3
        let mut ids: Vec<u32> = lane.hyperedges.iter().map(|h| h.0).collect();
        ids.sort_unstable();
        assert_eq!(ids, vec![0, 3]);
    }
}
