//! One graph lane RRF-fused as a third peer of dense and BM25: `unit_scaled(rrf([dense, bm25,
//! lane]))`, the lane run from the seeds of the hybrid base. This is the fusion the seed
//! measured as a regression and keeps in its table (the `kg` and `hyperedges` kinds, and the
//! ranking the `packer` kind packs).

use std::sync::Arc;

use hopbench_datasets::enrich::NodeLists;
use hopbench_datasets::export::Export;

use super::hypergraph::{hypergraph, HypergraphParams};
use super::traversal::{traverse, TraversalParams};
use super::{graph_seeds, query_seeds, ExportGraph, GraphSource, LaneCap, Seeds};
use crate::candidate::Candidate;
use crate::first_stage::{FirstStage, Hybrid};
use crate::flat_params;
use crate::fuse::{rrf, unit_scaled};
use crate::leg::{LegError, QueryInput, Ranker, Retrieval};

flat_params! {
    /// The traversal lane fused as a peer: the `kg` kind's parameters, and the ranking the
    /// `packer` kind packs.
    pub struct TraversalFusion {
        /// The hybrid (its `rrf_k` also fuses the three lists).
        pub first: FirstStage,
        /// The lane's seed set.
        pub seeds: Seeds,
        /// The traversal lane.
        pub traversal: TraversalParams,
        /// Chunks the lane returns at most.
        pub lane_cap: LaneCap,
    }
}

flat_params! {
    /// The hypergraph lane fused as a peer: the `hyperedges` kind's parameters.
    pub struct HypergraphFusion {
        /// The hybrid (its `rrf_k` also fuses the three lists).
        pub first: FirstStage,
        /// The lane's seed set.
        pub seeds: Seeds,
        /// The hypergraph lane.
        pub hypergraph: HypergraphParams,
        /// Chunks the lane returns at most.
        pub lane_cap: LaneCap,
    }
}

impl TraversalFusion {
    /// The fused ranking over `export`.
    pub fn ranking(&self, export: &Arc<Export>) -> Result<FusedGraph, LegError> {
        let lane = FusedLane::Traversal(self.traversal);
        FusedGraph::new(export, &self.first, self.seeds, lane, self.lane_cap.lane_k)
    }
}

impl HypergraphFusion {
    /// The fused ranking over `export`.
    pub fn ranking(&self, export: &Arc<Export>) -> Result<FusedGraph, LegError> {
        let lane = FusedLane::Hypergraph(self.hypergraph);
        FusedGraph::new(export, &self.first, self.seeds, lane, self.lane_cap.lane_k)
    }
}

/// Which lane is fused, with its parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FusedLane {
    /// The traversal lane.
    Traversal(TraversalParams),
    /// The hypergraph lane.
    Hypergraph(HypergraphParams),
}

/// Everything [`fuse_lane`] needs besides the lists.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FusedParams {
    /// The lane.
    pub lane: FusedLane,
    /// Chunks the lane returns at most.
    pub lane_k: usize,
    /// RRF constant over the three lists.
    pub rrf_k: f32,
    /// How the lane's seeds are drawn.
    pub seeds: Seeds,
}

/// The fused ranking where the lane runs from the seeds of `base`; returns it with the seed
/// count and the lane's length (exposed for tests over hand-built graphs).
#[allow(clippy::too_many_arguments)]
pub fn fuse_lane<G: GraphSource + ?Sized>(
    graph: &G,
    chunk_nodes: &NodeLists,
    p: &FusedParams,
    query_seeds: &[u32],
    base: &[Candidate],
    dense: &[Candidate],
    bm25: &[Candidate],
) -> (Vec<Candidate>, usize, usize) {
    let seeds = graph_seeds(query_seeds, base, chunk_nodes, &p.seeds);
    let lane_list = match &p.lane {
        FusedLane::Traversal(t) => traverse(graph, &seeds, t, p.lane_k),
        FusedLane::Hypergraph(h) => hypergraph(graph, &seeds, query_seeds, h, p.lane_k).chunks,
    };
    let fused = unit_scaled(rrf(&[dense, bm25, &lane_list], p.rrf_k, None));
    (fused, seeds.len(), lane_list.len())
}

/// Dense, BM25 and one graph lane as three RRF peers, over an export.
pub struct FusedGraph {
    export: Arc<Export>,
    hybrid: Hybrid,
    params: FusedParams,
}

impl FusedGraph {
    /// The fused ranking over `export`: `first` gives the hybrid (and the RRF constant of the
    /// three-way fusion).
    pub fn new(
        export: &Arc<Export>,
        first: &FirstStage,
        seeds: Seeds,
        lane: FusedLane,
        lane_k: usize,
    ) -> Result<Self, LegError> {
        // the graph is read (and checked) once, here, rather than by the first query
        export.kg()?;
        Ok(FusedGraph {
            hybrid: first.hybrid(export)?,
            export: export.clone(),
            params: FusedParams {
                lane,
                lane_k,
                rrf_k: first.rrf.rrf_k,
                seeds,
            },
        })
    }
}

impl Ranker for FusedGraph {
    fn retrieve(&self, q: &QueryInput<'_>) -> Result<Retrieval, LegError> {
        let (kg, index) = (self.export.kg()?, self.export.kg_index()?);
        let base = self.hybrid.base(q)?;
        let qs = query_seeds(kg, index, q.text);
        let graph = ExportGraph {
            kg,
            index,
            num_chunks: self.export.chunks.len(),
        };
        let (ranked, seeds, lane_len) = fuse_lane(
            &graph,
            &kg.chunk_nodes,
            &self.params,
            &qs,
            &base.fused,
            &base.dense,
            &base.bm25,
        );
        let mut r = Retrieval {
            ranked,
            ..Default::default()
        };
        r.diagnostics
            .insert("pool_dense".into(), base.dense.len() as f64);
        r.diagnostics
            .insert("pool_bm25".into(), base.bm25.len() as f64);
        r.diagnostics.insert("query_seeds".into(), qs.len() as f64);
        r.diagnostics.insert("seed_nodes".into(), seeds as f64);
        r.diagnostics.insert("lane_len".into(), lane_len as f64);
        Ok(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lanes::testgraph::MemGraph;

    fn ids(v: &[Candidate]) -> Vec<u32> {
        v.iter().map(|c| c.chunk).collect()
    }

    fn params(lane: FusedLane) -> FusedParams {
        FusedParams {
            lane,
            lane_k: 100,
            rrf_k: 60.0,
            seeds: Seeds::default(),
        }
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
        let p = params(FusedLane::Traversal(TraversalParams::default()));
        let (f, seeds, lane_len) = fuse_lane(&g, &g.kg.chunk_nodes, &p, &[0], &base, &dense, &bm25);
        assert_eq!((seeds, lane_len), (1, 2)); // lane: 5 (hop 0), 6 (hop 1)
                                               // 1, 2: 1/60 + 1/61; 5: 1/60; 6: 1/61 -> the lane's head outranks nothing here but
                                               // enters the list with the weight of a first-stage rank-0 hit
        assert_eq!(ids(&f), vec![1, 2, 5, 6]);
        assert_eq!(f[0].score, 1.0);
        assert!((f[2].score as f64 - (1.0 / 60.0) / (1.0 / 60.0 + 1.0 / 61.0)).abs() < 1e-6);
        // the hypergraph lane the same way
        let p = params(FusedLane::Hypergraph(HypergraphParams::default()));
        let (f, _, lane_len) = fuse_lane(&g, &g.kg.chunk_nodes, &p, &[0], &base, &dense, &bm25);
        assert_eq!(lane_len, 1);
        assert_eq!(ids(&f), vec![1, 2, 5]);
        // no seeds: the plain hybrid ranking
        let (f, seeds, _) = fuse_lane(&g, &g.kg.chunk_nodes, &p, &[], &base, &dense, &bm25);
        assert_eq!(seeds, 0);
        assert_eq!(f, base);
    }

    #[test]
    fn fused_rankings_run_on_the_synthetic_export() {
        let export = crate::rescue::fixtures::synthetic();
        let kg = TraversalFusion::default().ranking(&export).unwrap();
        let hy = HypergraphFusion::default().ranking(&export).unwrap();
        for i in 0..export.queries.len().min(10) {
            let q = QueryInput::from_export(&export, i);
            for leg in [&kg, &hy] {
                let r = leg.retrieve(&q).unwrap();
                assert!(r.ranked.len() >= 100);
                assert_eq!(r.ranked[0].score, 1.0);
                assert!(r.ranked.windows(2).all(|w| w[0].score >= w[1].score));
            }
        }
    }
}
