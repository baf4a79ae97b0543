//! The `kg` and `hyperedges` legs: a graph lane RRF-fused as a third peer of dense and BM25.
//!
//! This is the design the seed replaced and keeps in its table as the regression (§5.4, §5.8):
//! a traversal list is dense at the top by construction (every chunk mentioning a seed entity
//! scores exactly `seed_score`, ordered by id), so at equal RRF weight its arbitrary rank-1 entry
//! contributes as much as the strongest dense hit and displaces chunks both first stages chose.
//!
//! The lane seeds come from the same seed function as graph rescue ([`graph_seeds`]) over the
//! hybrid base (dense + BM25, RRF, unit-scaled). The fused list is
//! `unit_scaled(rrf([dense, bm25, lane], rrf_k))`; the selector is `none`.

use std::sync::Arc;

use hopbench_datasets::export::Export;
use serde::{Deserialize, Serialize};

use super::hypergraph::{hypergraph, HypergraphParams};
use super::traversal::{traverse, TraversalParams};
use super::{graph_seeds, query_seeds, ExportGraph, GraphSource};
use crate::candidate::Candidate;
use crate::first_stage::HybridLeg;
use crate::fuse::{rrf, unit_scaled};
use crate::leg::{select_none, Leg, LegError, QueryInput, Retrieval, Selection};
use crate::registry::Check;

/// `kind: kg` — the traversal lane fused as a peer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct KgConfig {
    /// Candidates from each first stage.
    pub pool_k: usize,
    /// RRF constant over the three lists.
    pub rrf_k: f32,
    /// Seeds: the KG nodes of this many hybrid-base candidates follow the query seeds.
    pub seed_docs_k: usize,
    /// Seeds: at most this many nodes.
    pub seed_node_cap: usize,
    /// Hops from the seeds.
    pub max_hops: usize,
    /// Score multiplier per hop.
    pub hop_decay: f32,
    /// Score of a seed node's chunks.
    pub seed_score: f32,
    /// Chunks the lane returns at most.
    pub lane_k: usize,
}

impl Default for KgConfig {
    fn default() -> Self {
        let t = TraversalParams::default();
        KgConfig {
            pool_k: 100,
            rrf_k: 60.0,
            seed_docs_k: 5,
            seed_node_cap: 32,
            max_hops: t.max_hops,
            hop_decay: t.hop_decay,
            seed_score: t.seed_score,
            lane_k: t.lane_k,
        }
    }
}

impl KgConfig {
    /// Range checks; errors name leg `name` and the field.
    pub fn validate(&self, name: &str) -> Result<(), LegError> {
        let c = Check(name);
        c.at_least("pool_k", self.pool_k, 1)?;
        c.positive("rrf_k", self.rrf_k as f64)?;
        c.at_least("seed_node_cap", self.seed_node_cap, 1)?;
        c.at_most("max_hops", self.max_hops, 16)?;
        c.unit("hop_decay", self.hop_decay as f64)?;
        c.positive("seed_score", self.seed_score as f64)?;
        c.at_least("lane_k", self.lane_k, 1)
    }

    fn lane(&self) -> TraversalParams {
        TraversalParams {
            max_hops: self.max_hops,
            hop_decay: self.hop_decay,
            seed_score: self.seed_score,
            lane_k: self.lane_k,
        }
    }
}

/// `kind: hyperedges` — the hypergraph lane fused as a peer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HyperedgesConfig {
    /// Candidates from each first stage.
    pub pool_k: usize,
    /// RRF constant over the three lists.
    pub rrf_k: f32,
    /// Seeds: the KG nodes of this many hybrid-base candidates follow the query seeds.
    pub seed_docs_k: usize,
    /// Seeds: at most this many nodes.
    pub seed_node_cap: usize,
    /// Entry weight of a seed the query does not name.
    pub alpha: f32,
    /// Minimum `s_hyp`.
    pub s_hyp_min: f32,
    /// Most hyperedges after the prune.
    pub max_hyperedges: usize,
    /// Restart probability.
    pub restart: f32,
    /// Walk rounds.
    pub iterations: usize,
    /// Coverage gate's minimum `ρ` for a hyperedge covering no query seed.
    pub min_rho: f32,
    /// Chunks the lane returns at most.
    pub lane_k: usize,
}

impl Default for HyperedgesConfig {
    fn default() -> Self {
        let h = HypergraphParams::default();
        HyperedgesConfig {
            pool_k: 100,
            rrf_k: 60.0,
            seed_docs_k: 5,
            seed_node_cap: 32,
            alpha: h.alpha,
            s_hyp_min: h.s_hyp_min,
            max_hyperedges: h.max_hyperedges,
            restart: h.restart,
            iterations: h.iterations,
            min_rho: h.min_rho,
            lane_k: h.lane_k,
        }
    }
}

impl HyperedgesConfig {
    /// Range checks; errors name leg `name` and the field.
    pub fn validate(&self, name: &str) -> Result<(), LegError> {
        let c = Check(name);
        c.at_least("pool_k", self.pool_k, 1)?;
        c.positive("rrf_k", self.rrf_k as f64)?;
        c.at_least("seed_node_cap", self.seed_node_cap, 1)?;
        c.non_negative("alpha", self.alpha as f64)?;
        c.unit("s_hyp_min", self.s_hyp_min as f64)?;
        c.at_least("max_hyperedges", self.max_hyperedges, 1)?;
        c.unit("restart", self.restart as f64)?;
        c.at_least("iterations", self.iterations, 1)?;
        c.unit("min_rho", self.min_rho as f64)?;
        c.at_least("lane_k", self.lane_k, 1)
    }

    fn lane(&self) -> HypergraphParams {
        HypergraphParams {
            alpha: self.alpha,
            s_hyp_min: self.s_hyp_min,
            max_hyperedges: self.max_hyperedges,
            restart: self.restart,
            iterations: self.iterations,
            min_rho: self.min_rho,
            lane_k: self.lane_k,
        }
    }
}

/// Which lane a fused leg runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FusedLane {
    /// The traversal lane.
    Traversal(TraversalParams),
    /// The hypergraph lane.
    Hypergraph(HypergraphParams),
}

/// Dense, BM25 and one graph lane as three RRF peers.
pub struct FusedGraphLeg {
    export: Arc<Export>,
    hybrid: HybridLeg,
    lane: FusedLane,
    rrf_k: f32,
    seed_docs_k: usize,
    seed_node_cap: usize,
}

impl FusedGraphLeg {
    /// The `kg` leg.
    pub fn kg(export: Arc<Export>, c: &KgConfig) -> Result<Self, LegError> {
        Ok(FusedGraphLeg {
            hybrid: HybridLeg::new(export.clone(), c.pool_k, c.rrf_k)?,
            export,
            lane: FusedLane::Traversal(c.lane()),
            rrf_k: c.rrf_k,
            seed_docs_k: c.seed_docs_k,
            seed_node_cap: c.seed_node_cap,
        })
    }

    /// The `hyperedges` leg.
    pub fn hyperedges(export: Arc<Export>, c: &HyperedgesConfig) -> Result<Self, LegError> {
        Ok(FusedGraphLeg {
            hybrid: HybridLeg::new(export.clone(), c.pool_k, c.rrf_k)?,
            export,
            lane: FusedLane::Hypergraph(c.lane()),
            rrf_k: c.rrf_k,
            seed_docs_k: c.seed_docs_k,
            seed_node_cap: c.seed_node_cap,
        })
    }
}

/// The fused ranking: `unit_scaled(rrf([dense, bm25, lane]))` where the lane runs from the seeds
/// of `base` (exposed for tests over hand-built graphs).
#[allow(clippy::too_many_arguments)]
pub fn fuse_lane<G: GraphSource + ?Sized>(
    graph: &G,
    chunk_nodes: &[Vec<u32>],
    lane: &FusedLane,
    query_seeds: &[u32],
    base: &[Candidate],
    dense: &[Candidate],
    bm25: &[Candidate],
    rrf_k: f32,
    seed_docs_k: usize,
    seed_node_cap: usize,
) -> (Vec<Candidate>, usize, usize) {
    let seeds = graph_seeds(query_seeds, base, chunk_nodes, seed_docs_k, seed_node_cap);
    let lane_list = match lane {
        FusedLane::Traversal(p) => traverse(graph, &seeds, p),
        FusedLane::Hypergraph(p) => hypergraph(graph, &seeds, query_seeds, p).chunks,
    };
    let fused = unit_scaled(rrf(&[dense, bm25, &lane_list], rrf_k, None));
    (fused, seeds.len(), lane_list.len())
}

impl Leg for FusedGraphLeg {
    fn retrieve(&self, q: &QueryInput<'_>) -> Retrieval {
        let kg = &self.export.kg;
        let (base, d, b) = self.hybrid.base(q);
        let qs = query_seeds(kg, &self.export.kg_index, q.text);
        let graph = ExportGraph {
            kg,
            index: &self.export.kg_index,
            num_chunks: self.export.chunks.len(),
        };
        let (ranked, seeds, lane_len) = fuse_lane(
            &graph,
            &kg.chunk_nodes,
            &self.lane,
            &qs,
            &base,
            &d,
            &b,
            self.rrf_k,
            self.seed_docs_k,
            self.seed_node_cap,
        );
        let mut r = Retrieval {
            ranked,
            ..Default::default()
        };
        r.diagnostics.insert("pool_dense".into(), d.len() as f64);
        r.diagnostics.insert("pool_bm25".into(), b.len() as f64);
        r.diagnostics.insert("query_seeds".into(), qs.len() as f64);
        r.diagnostics.insert("seed_nodes".into(), seeds as f64);
        r.diagnostics.insert("lane_len".into(), lane_len as f64);
        r
    }
    fn select(
        &self,
        _q: &QueryInput<'_>,
        r: &Retrieval,
        _budget: Option<u64>,
    ) -> Result<Selection, LegError> {
        select_none(&self.export, r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lanes::testgraph::MemGraph;

    fn ids(v: &[Candidate]) -> Vec<u32> {
        v.iter().map(|c| c.chunk).collect()
    }

    #[test]
    fn a_fused_lane_is_a_third_rrf_peer() {
        // nodes 0..3, edge 0-1; chunk 5 mentions node 0 (a query seed), chunk 6 node 1
        let mut cn = vec![Vec::new(); 7];
        cn[5] = vec![0];
        cn[6] = vec![1];
        let g = MemGraph::new(3, cn, &[(0, 1)], &[(5, &[0, 1])]);
        let dense = [Candidate::new(1, 0.9), Candidate::new(2, 0.8)];
        let bm25 = [Candidate::new(2, 9.0), Candidate::new(1, 8.0)];
        let base = unit_scaled(rrf(&[&dense, &bm25], 60.0, None));
        let lane = FusedLane::Traversal(TraversalParams::default());
        let (f, seeds, lane_len) = fuse_lane(
            &g,
            &g.kg.chunk_nodes,
            &lane,
            &[0],
            &base,
            &dense,
            &bm25,
            60.0,
            5,
            32,
        );
        assert_eq!((seeds, lane_len), (1, 2)); // lane: 5 (hop 0), 6 (hop 1)
                                               // 1, 2: 1/60 + 1/61; 5: 1/60; 6: 1/61 -> the lane's head outranks nothing here but
                                               // enters the list with the weight of a first-stage rank-0 hit
        assert_eq!(ids(&f), vec![1, 2, 5, 6]);
        assert_eq!(f[0].score, 1.0);
        assert!((f[2].score as f64 - (1.0 / 60.0) / (1.0 / 60.0 + 1.0 / 61.0)).abs() < 1e-6);
        // the hypergraph lane the same way
        let lane = FusedLane::Hypergraph(HypergraphParams::default());
        let (f, _, lane_len) = fuse_lane(
            &g,
            &g.kg.chunk_nodes,
            &lane,
            &[0],
            &base,
            &dense,
            &bm25,
            60.0,
            5,
            32,
        );
        assert_eq!(lane_len, 1);
        assert_eq!(ids(&f), vec![1, 2, 5]);
        // no seeds: the plain hybrid ranking
        let (f, seeds, _) = fuse_lane(
            &g,
            &g.kg.chunk_nodes,
            &lane,
            &[],
            &base,
            &dense,
            &bm25,
            60.0,
            5,
            32,
        );
        assert_eq!(seeds, 0);
        assert_eq!(f, base);
    }

    #[test]
    fn fused_legs_run_on_the_synthetic_export() {
        let export = crate::rescue::fixtures::synthetic();
        let kg = FusedGraphLeg::kg(export.clone(), &KgConfig::default()).unwrap();
        let hy = FusedGraphLeg::hyperedges(export.clone(), &HyperedgesConfig::default()).unwrap();
        for i in 0..export.queries.len().min(10) {
            let q = QueryInput::from_export(&export, i);
            for leg in [&kg, &hy] {
                let r = leg.retrieve(&q);
                assert!(r.ranked.len() >= 100);
                assert_eq!(r.ranked[0].score, 1.0);
                assert!(r.ranked.windows(2).all(|w| w[0].score >= w[1].score));
            }
        }
    }
}
