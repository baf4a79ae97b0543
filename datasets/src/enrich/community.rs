//! Louvain community detection, deterministic.
//!
//! Multi-level Louvain (Blondel et al. 2008) on the weighted undirected graph:
//! * **local moving**: nodes are visited in an order shuffled (Fisher-Yates) by a SplitMix64
//!   seeded with `community_seed` (one stream for the whole run, a fresh shuffle every pass).
//!   A node is taken out of its community and put into the neighbouring community with the
//!   largest modularity gain `k_i,C - tot_C * k_i / 2m`; it stays where it was unless another
//!   community is better by more than 1e-12 (so zero-gain moves cannot cycle); among equally good
//!   other communities the smallest community id wins. Passes repeat until one moves nothing
//!   (at most 100 passes per level).
//! * **aggregation**: communities become nodes (intra-community weight becomes a self-loop),
//!   and the next level runs, until a level moves nothing (at most 32 levels).
//!
//! Every floating sum runs in a fixed order (sorted adjacency, sorted candidate communities), so
//! the result depends only on the graph and the seed. Final labels are canonical: communities
//! are numbered `0, 1, ...` in order of their smallest member node id.

use crate::csr::Csr;
use crate::rng::SplitMix64;

/// Weighted undirected graph in CSR form; self-loops are kept apart.
struct Graph {
    /// Row `i`: `(neighbour, weight)` of node `i`, sorted by neighbour.
    adj: Csr<(u32, f64)>,
    /// Self-loop weight per node (counts twice in the node's strength).
    self_w: Vec<f64>,
    /// Strength: sum of incident weights, self-loop counted twice.
    k: Vec<f64>,
    /// Total strength (2m).
    m2: f64,
}

impl Graph {
    /// From `(a, b, w)` with `a != b`, one entry per undirected pair (any order), and self-loops.
    fn new(n: usize, pairs: &[(u32, u32, f64)], self_w: Vec<f64>) -> Graph {
        let adj = Csr::undirected(n, pairs.iter().copied());
        let k: Vec<f64> = (0..n)
            .map(|i| adj.row(i).iter().map(|e| e.1).sum::<f64>() + 2.0 * self_w[i])
            .collect();
        let m2 = k.iter().sum();
        Graph { adj, self_w, k, m2 }
    }

    fn len(&self) -> usize {
        self.k.len()
    }
}

/// One level of local moving. Returns the dense community of every node (numbered by first
/// appearance in node order) and whether any node moved.
fn local_moving(g: &Graph, rng: &mut SplitMix64) -> (Vec<u32>, bool) {
    let n = g.len();
    let mut comm: Vec<u32> = (0..n as u32).collect();
    let mut tot: Vec<f64> = g.k.clone();
    let mut neigh = vec![0f64; n];
    let mut touched: Vec<u32> = Vec::new();
    let mut order: Vec<u32> = (0..n as u32).collect();
    let mut any = false;
    for _pass in 0..100 {
        rng.shuffle(&mut order);
        let mut moved = 0usize;
        for &i in &order {
            let i = i as usize;
            let ci = comm[i];
            let ki = g.k[i];
            for &(j, w) in g.adj.row(i) {
                let c = comm[j as usize];
                if neigh[c as usize] == 0.0 {
                    touched.push(c);
                }
                neigh[c as usize] += w;
            }
            tot[ci as usize] -= ki;
            let stay = neigh[ci as usize] - tot[ci as usize] * ki / g.m2;
            touched.sort_unstable();
            touched.dedup();
            let mut best: Option<(u32, f64)> = None;
            for &c in &touched {
                if c == ci {
                    continue;
                }
                let gain = neigh[c as usize] - tot[c as usize] * ki / g.m2;
                if best.is_none_or(|(_, b)| gain > b) {
                    best = Some((c, gain));
                }
            }
            let target = match best {
                Some((c, gain)) if gain > stay + 1e-12 => c,
                _ => ci,
            };
            tot[target as usize] += ki;
            if target != ci {
                comm[i] = target;
                moved += 1;
            }
            for &c in &touched {
                neigh[c as usize] = 0.0;
            }
            touched.clear();
        }
        if moved == 0 {
            break;
        }
        any = true;
    }
    (dense(&comm), any)
}

/// Renumbers labels `0, 1, ...` by first appearance in index order.
fn dense(labels: &[u32]) -> Vec<u32> {
    let mut map = vec![u32::MAX; labels.len()];
    let mut next = 0u32;
    labels
        .iter()
        .map(|&l| {
            if map[l as usize] == u32::MAX {
                map[l as usize] = next;
                next += 1;
            }
            map[l as usize]
        })
        .collect()
}

/// The graph whose nodes are the communities of `g`.
fn aggregate(g: &Graph, comm: &[u32]) -> Graph {
    let nc = comm.iter().max().map_or(0, |&m| m as usize + 1);
    let mut self_w = vec![0f64; nc];
    let mut pairs: Vec<(u32, u32, f64)> = Vec::new();
    for i in 0..g.len() {
        let ci = comm[i];
        self_w[ci as usize] += g.self_w[i];
        for &(j, w) in g.adj.row(i) {
            let j = j as usize;
            if j <= i {
                continue;
            }
            let cj = comm[j];
            if ci == cj {
                self_w[ci as usize] += w;
            } else {
                pairs.push((ci.min(cj), ci.max(cj), w));
            }
        }
    }
    pairs.sort_by_key(|p| (p.0, p.1));
    let mut merged: Vec<(u32, u32, f64)> = Vec::with_capacity(pairs.len());
    for (a, b, w) in pairs {
        match merged.last_mut() {
            Some(last) if last.0 == a && last.1 == b => last.2 += w,
            _ => merged.push((a, b, w)),
        }
    }
    Graph::new(nc, &merged, self_w)
}

/// Louvain communities of the `n`-node graph with undirected `edges` (`a < b`, unique pairs).
/// Returns canonical labels: communities numbered by their smallest member node id.
pub(crate) fn louvain(n: usize, edges: &[(u32, u32, f32)], seed: u64) -> Vec<u32> {
    let pairs: Vec<(u32, u32, f64)> = edges.iter().map(|&(a, b, w)| (a, b, w as f64)).collect();
    let mut g = Graph::new(n, &pairs, vec![0.0; n]);
    let mut membership: Vec<u32> = (0..n as u32).collect();
    if g.m2 <= 0.0 {
        return membership;
    }
    let mut rng = SplitMix64::new(seed);
    for _level in 0..32 {
        let (comm, moved) = local_moving(&g, &mut rng);
        if !moved {
            break;
        }
        for m in membership.iter_mut() {
            *m = comm[*m as usize];
        }
        g = aggregate(&g, &comm);
    }
    dense(&membership)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_cliques() -> Vec<(u32, u32, f32)> {
        let mut e = Vec::new();
        for base in [0u32, 5] {
            for a in 0..5 {
                for b in a + 1..5 {
                    e.push((base + a, base + b, 1.0));
                }
            }
        }
        e.push((4, 5, 1.0));
        e.sort_by_key(|x| (x.0, x.1));
        e
    }

    #[test]
    fn two_cliques_joined_by_one_edge_are_two_communities() {
        let e = two_cliques();
        let c = louvain(10, &e, 42);
        assert_eq!(c, vec![0, 0, 0, 0, 0, 1, 1, 1, 1, 1]);
        for seed in [0, 1, 7, 42, 12345, u64::MAX] {
            assert_eq!(louvain(10, &e, seed), c, "seed {seed}");
        }
        assert_eq!(louvain(10, &e, 42), c, "deterministic");
    }

    #[test]
    fn labels_are_canonical_and_isolated_nodes_stand_alone() {
        // node 0 isolated, clique {1,2,3}, clique {4,5,6} and node 7 isolated
        let mut e = vec![
            (1, 2, 1.0),
            (1, 3, 1.0),
            (2, 3, 1.0),
            (4, 5, 1.0),
            (4, 6, 1.0),
            (5, 6, 1.0),
        ];
        e.sort_by_key(|x| (x.0, x.1));
        assert_eq!(louvain(8, &e, 3), vec![0, 1, 1, 1, 2, 2, 2, 3]);
        assert_eq!(louvain(3, &[], 3), vec![0, 1, 2]);
        assert!(louvain(0, &[], 3).is_empty());
    }

    #[test]
    fn splitmix_is_the_reference_generator() {
        // reference values of SplitMix64 seeded with 0
        let mut r = SplitMix64::new(0);
        assert_eq!(r.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(r.next_u64(), 0x6E78_9E6A_A1B9_65F4);
    }
}
