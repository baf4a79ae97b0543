//! Graph rescue (the seed's §5.1–5.5): dense and BM25 are peers and fuse; the graph lanes are
//! not peers and append.
//!
//! ```text
//! BASE     dense ─┐
//!                 ├─ RRF (k 60) ─ max-normalise ─┐
//!          BM25 ──┘                              │
//! GATE     relation-cue / entity-heavy / low-agreement / low-confidence, navigational veto
//! RESCORE  (fired) Expander: +0.05 per anchor link, re-sort            │ base order untouched
//! RESCUE   (fired) traversal ─┐                                        │ by the rescue
//!                             ├─ RRF (k 60) ─ append_and_dedupe ───────┘
//!                  hypergraph ┘
//! SELECT   none: the ranked union
//! ```
//!
//! The Expander runs only when the gate fires. That is what makes the seed's attribution exact:
//! a query the gate does not fire on gets plain equal-weight RRF over dense and BM25, which is
//! the `bm25` rung's ranking, so `graph_rescue − bm25` is exactly the Expander on the queries
//! where the gate fired. With `graph_mode: off` graph_rescue ranks exactly like `bm25`.
//!
//! The gate reads the first-stage lists and the query seeds, not the Expander's output; the lane
//! seeds are taken from the head of the rescored base.
//!
//! [`append_and_dedupe`] holds the four invariants of §5.4: the base's order is copied; a rescue
//! candidate already in the base is dropped (rescue can add, never promote); the rest is appended
//! below the whole base, at most `rescue_cap`; every candidate is rescored `1/(k + rank)` (rank
//! 0-based) and stamped `rescued` or not. With 100-candidate first stages the base is 100–200
//! long, so no rescued candidate reaches a top-10: the lanes are measured by what they append.

use std::collections::BTreeMap;
use std::sync::Arc;

use hopbench_datasets::export::Export;
use serde::{Deserialize, Serialize};

use crate::candidate::Candidate;
use crate::expand::{expand, ExpanderParams};
use crate::first_stage::{FirstStage, Hybrid};
use crate::flat_params;
use crate::fuse::rrf;
use crate::gate::{Gate, GateDecision, GateParams, REASONS};
use crate::lanes::hypergraph::{hypergraph, HypergraphParams};
use crate::lanes::traversal::{traverse, TraversalParams};
use crate::lanes::{graph_seeds, query_seeds, ExportGraph, LaneCap, Seeds};
use crate::leg::{LegError, QueryInput, Ranker, Retrieval};
use crate::params::{Check, Checked};

/// A graph lane of the rescue stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Lane {
    /// Bounded BFS over the entity graph ([`crate::lanes::traversal`]).
    Traversal,
    /// Hyperedge random walk ([`crate::lanes::hypergraph`]).
    Hypergraph,
}

/// `lanes` and `lane_rrf_k`: which lanes run when the gate fires, and how they are fused.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LaneSet {
    /// Which lanes run when the gate fires (none: the Expander alone).
    pub lanes: Vec<Lane>,
    /// RRF constant between the lanes.
    pub lane_rrf_k: f32,
}

impl Default for LaneSet {
    fn default() -> Self {
        LaneSet {
            lanes: vec![Lane::Traversal, Lane::Hypergraph],
            lane_rrf_k: 60.0,
        }
    }
}

impl Checked for LaneSet {
    fn check(&self, c: &Check<'_>) -> Result<(), LegError> {
        let mut lanes = self.lanes.clone();
        lanes.sort_unstable();
        lanes.dedup();
        if lanes.len() != self.lanes.len() {
            return c.fail("lanes", "names a lane twice");
        }
        c.positive("lane_rrf_k", self.lane_rrf_k as f64)
    }
}

/// `rescue_cap` and `rank_score_k`: how the rescued tail joins the base.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Tail {
    /// Rescued candidates appended at most.
    pub rescue_cap: usize,
    /// Union scores are `1 / (rank_score_k + rank)`.
    pub rank_score_k: f32,
}

impl Default for Tail {
    fn default() -> Self {
        Tail {
            rescue_cap: 50,
            rank_score_k: 60.0,
        }
    }
}

impl Checked for Tail {
    fn check(&self, c: &Check<'_>) -> Result<(), LegError> {
        // a rescue of no chunk is the base leg itself: run the base leg instead
        c.at_least("rescue_cap", self.rescue_cap, 1)?;
        c.positive("rank_score_k", self.rank_score_k as f64)
    }
}

crate::leaf_params!(LaneSet, Tail);

flat_params! {
    /// Every parameter of graph rescue, flat as written in `campaign.yaml`, grouped by the stage
    /// that reads it. Every default is the seed's measured operating point (`low_confidence`,
    /// `min_rho` and the relation cues are hopbench's choices where the seed states none).
    pub struct RescueConfig {
        /// The hybrid base.
        pub first: FirstStage,
        /// The Expander rescore.
        pub expander: ExpanderParams,
        /// The gate.
        pub gate: GateParams,
        /// The lanes' seed set.
        pub seeds: Seeds,
        /// Which lanes run and how they are fused.
        pub lanes: LaneSet,
        /// Chunks each lane returns at most.
        pub lane_cap: LaneCap,
        /// The traversal lane.
        pub traversal: TraversalParams,
        /// The hypergraph lane.
        pub hypergraph: HypergraphParams,
        /// How the rescued tail joins the base.
        pub tail: Tail,
    }
}

impl RescueConfig {
    /// Whether the hypergraph lane runs when the gate fires.
    pub fn has_hypergraph_lane(&self) -> bool {
        self.lanes.lanes.contains(&Lane::Hypergraph)
    }
}

/// Appends `rescue` below `base` (the seed's `_append_and_dedupe`): the base in its own order,
/// then the rescue candidates not already present (base or earlier rescue), at most `cap` of
/// them; every candidate rescored `1 / (k + rank)` with `rank` 0-based, base candidates stamped
/// `rescued: false` and appended ones `rescued: true`.
pub fn append_and_dedupe(
    base: &[Candidate],
    rescue: &[Candidate],
    cap: usize,
    k: f32,
) -> Vec<Candidate> {
    let mut seen: Vec<u32> = base.iter().map(|c| c.chunk).collect();
    seen.sort_unstable();
    let mut out: Vec<Candidate> = Vec::with_capacity(base.len() + cap.min(rescue.len()));
    out.extend(base.iter().map(|c| Candidate {
        rescued: false,
        ..*c
    }));
    let mut added: Vec<u32> = Vec::new();
    for c in rescue {
        if out.len() - base.len() >= cap {
            break;
        }
        if seen.binary_search(&c.chunk).is_ok() || added.contains(&c.chunk) {
            continue;
        }
        added.push(c.chunk);
        out.push(Candidate {
            rescued: true,
            ..*c
        });
    }
    for (rank, c) in out.iter_mut().enumerate() {
        c.score = (1.0 / (k as f64 + rank as f64)) as f32;
    }
    out
}

/// Everything one graph-rescue retrieval produced: the handoff to selectors.
#[derive(Debug, Clone, PartialEq)]
pub struct RescueOutput {
    /// The base after the Expander (when the gate fired), unit-scaled scores plus bonuses, in
    /// rank order. The union's head is this list in this order.
    pub base: Vec<Candidate>,
    /// The ranked union: base then rescued tail, scored `1/(rank_score_k + rank)`.
    pub union: Vec<Candidate>,
    /// The gate's decision.
    pub gate: GateDecision,
    /// The hypergraph lane's retained hyperedges `(id, ρ)`, by `ρ` descending then id (empty
    /// when the gate did not fire or the lane is off).
    pub hyperedges: Vec<(u32, f32)>,
    /// The query's entity seeds.
    pub query_seeds: Vec<u32>,
    /// The lanes' seed nodes (empty when the gate did not fire).
    pub seeds: Vec<u32>,
}

impl RescueOutput {
    /// Index of the first rescued candidate in the union.
    pub fn first_rescued_index(&self) -> Option<usize> {
        self.union.iter().position(|c| c.rescued)
    }

    /// The per-query numbers recorded on the retrieval: `gate_fired`, `gate_reason:<name>` for
    /// the four policy reasons (and `gate_reason:mode-force` when forced),
    /// `gate_vetoed_navigational`, `gate_agreement`, `gate_confidence`, `base_len`, `union_len`,
    /// `rescued_len`, `first_rescued_index` (only when something was rescued), `query_seeds`, and
    /// `seed_nodes` and `hyperedges` (only when the gate fired).
    pub fn diagnostics(&self) -> BTreeMap<String, f64> {
        let mut d = BTreeMap::new();
        let b = |x: bool| if x { 1.0 } else { 0.0 };
        d.insert("gate_fired".into(), b(self.gate.fire));
        for r in REASONS {
            d.insert(format!("gate_reason:{r}"), b(self.gate.has_reason(r)));
        }
        if self.gate.has_reason("mode-force") {
            d.insert("gate_reason:mode-force".into(), 1.0);
        }
        d.insert(
            "gate_vetoed_navigational".into(),
            b(self.gate.vetoed_by.as_deref() == Some("navigational")),
        );
        d.insert("gate_agreement".into(), self.gate.agreement);
        d.insert("gate_confidence".into(), self.gate.confidence);
        d.insert("base_len".into(), self.base.len() as f64);
        d.insert("union_len".into(), self.union.len() as f64);
        d.insert(
            "rescued_len".into(),
            self.union.iter().filter(|c| c.rescued).count() as f64,
        );
        if let Some(i) = self.first_rescued_index() {
            d.insert("first_rescued_index".into(), i as f64);
        }
        d.insert("query_seeds".into(), self.query_seeds.len() as f64);
        if self.gate.fire {
            d.insert("seed_nodes".into(), self.seeds.len() as f64);
            d.insert("hyperedges".into(), self.hyperedges.len() as f64);
        }
        d
    }

    /// The retrieval the harness records: the union, the diagnostics, and the graph signals a
    /// selector may need (`hyperedges` is `None` unless the hypergraph lane is configured).
    pub fn to_retrieval(&self, has_hypergraph_lane: bool) -> Retrieval {
        Retrieval {
            ranked: self.union.clone(),
            diagnostics: self.diagnostics(),
            hyperedges: has_hypergraph_lane.then(|| self.hyperedges.clone()),
            seeds: self.seeds.clone(),
            rescue_stage: true,
            annotations: Default::default(),
        }
    }
}

/// Graph rescue over an export: the ranking of the `graph_rescue` kind, and the retrieval the
/// oracles and the selecting kinds build on.
pub struct GraphRescue {
    export: Arc<Export>,
    hybrid: Hybrid,
    config: RescueConfig,
    gate: Gate,
}

impl GraphRescue {
    /// Builds the ranking (the config must be valid: see [`RescueConfig::check`]). An export
    /// whose KG has no entities still runs: the lanes find nothing and the Expander is a no-op.
    pub fn new(export: &Arc<Export>, config: RescueConfig) -> Result<Self, LegError> {
        // the graph is read (and checked) once, here, rather than by the first query
        export.kg()?;
        Ok(GraphRescue {
            hybrid: config.first.hybrid(export)?,
            gate: Gate::new(&config.gate),
            export: export.clone(),
            config,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &RescueConfig {
        &self.config
    }

    /// The whole retrieval, for selectors and oracles (an error when a first-stage engine could
    /// not answer).
    pub fn retrieve_full(&self, q: &QueryInput<'_>) -> Result<RescueOutput, LegError> {
        let cfg = &self.config;
        let (kg, index) = (self.export.kg()?, self.export.kg_index()?);
        let first = self.hybrid.base(q)?;
        let (base, dense, bm25) = (first.fused, first.dense, first.bm25);
        let qs = query_seeds(kg, index, q.text);
        let gate = self.gate.decide(q.text, qs.len(), &dense, &bm25);
        let tail = cfg.tail;
        if !gate.fire {
            let union = append_and_dedupe(&base, &[], tail.rescue_cap, tail.rank_score_k);
            return Ok(RescueOutput {
                base,
                union,
                gate,
                hyperedges: Vec::new(),
                query_seeds: qs,
                seeds: Vec::new(),
            });
        }
        let graph = ExportGraph {
            kg,
            index,
            num_chunks: self.export.chunks.len(),
        };
        let base = expand(kg, &graph, base, &cfg.expander);
        let seeds = graph_seeds(&qs, &base, &kg.chunk_nodes, &cfg.seeds);
        let lane_k = cfg.lane_cap.lane_k;
        let mut lists: Vec<Vec<Candidate>> = Vec::with_capacity(2);
        let mut hyperedges = Vec::new();
        if !seeds.is_empty() {
            for lane in &cfg.lanes.lanes {
                match lane {
                    Lane::Traversal => lists.push(traverse(&graph, &seeds, &cfg.traversal, lane_k)),
                    Lane::Hypergraph => {
                        let h = hypergraph(&graph, &seeds, &qs, &cfg.hypergraph, lane_k);
                        hyperedges = h.hyperedges;
                        lists.push(h.chunks);
                    }
                }
            }
        }
        let refs: Vec<&[Candidate]> = lists.iter().map(Vec::as_slice).collect();
        let rescue = rrf(&refs, cfg.lanes.lane_rrf_k, None);
        let union = append_and_dedupe(&base, &rescue, tail.rescue_cap, tail.rank_score_k);
        Ok(RescueOutput {
            base,
            union,
            gate,
            hyperedges,
            query_seeds: qs,
            seeds,
        })
    }
}

impl Ranker for GraphRescue {
    fn retrieve(&self, q: &QueryInput<'_>) -> Result<Retrieval, LegError> {
        Ok(self
            .retrieve_full(q)?
            .to_retrieval(self.config.has_hypergraph_lane()))
    }
}

#[cfg(test)]
pub(crate) mod fixtures {
    //! A synthetic export, built once per test binary.

    use std::sync::{Arc, OnceLock};

    use hopbench_datasets::export::{self, EmbedFn, Export, PrepareConfig, Source};
    use hopbench_datasets::protocol::Protocol;

    fn fake(dim: usize) -> EmbedFn<'static> {
        EmbedFn {
            model_id: "fake@0".into(),
            dim,
            embed: Box::new(move |texts, _, _| {
                Ok(texts
                    .iter()
                    .map(|t| {
                        let mut v = vec![0.0f32; dim];
                        for w in t.to_lowercase().split(|c: char| !c.is_alphanumeric()) {
                            if w.is_empty() {
                                continue;
                            }
                            let h = w
                                .bytes()
                                .fold(1469598103u32, |h, b| (h ^ b as u32).wrapping_mul(16777619));
                            v[h as usize % dim] += 1.0;
                        }
                        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-9);
                        v.iter().map(|x| x / n).collect()
                    })
                    .collect())
            }),
        }
    }

    /// Prepares `raw` with the fake model into a temporary directory and loads it.
    pub(crate) fn export_of(
        raw: impl FnOnce() -> hopbench_datasets::Result<hopbench_datasets::RawDataset>,
        dim: usize,
    ) -> Export {
        export_under(raw, dim, Protocol::PUBLISHED)
    }

    /// [`export_of`] under `protocol`.
    pub(crate) fn export_under(
        raw: impl FnOnce() -> hopbench_datasets::Result<hopbench_datasets::RawDataset>,
        dim: usize,
        protocol: Protocol,
    ) -> Export {
        export_with(raw, dim, protocol, export::Parts::all())
    }

    /// [`export_under`] with only the optional `parts`.
    pub(crate) fn export_with(
        raw: impl FnOnce() -> hopbench_datasets::Result<hopbench_datasets::RawDataset>,
        dim: usize,
        protocol: Protocol,
        parts: export::Parts,
    ) -> Export {
        let tmp = tempfile::tempdir().unwrap();
        // the directory goes with `tmp`: read the parts read on demand while it is there
        let export = export_in(&tmp.path().join("export"), raw, dim, protocol, parts);
        export.read_all().unwrap();
        export
    }

    /// Prepares `raw` with the fake model into `dir`, which the caller keeps, and loads it.
    pub(crate) fn export_in(
        dir: &std::path::Path,
        raw: impl FnOnce() -> hopbench_datasets::Result<hopbench_datasets::RawDataset>,
        dim: usize,
        protocol: Protocol,
        parts: export::Parts,
    ) -> Export {
        let source = Source {
            name: "test".into(),
            format: "test".into(),
            files: vec![],
            extra: "legs-tests".into(),
            protocol,
            vectors: None,
        };
        export::prepare_spanned(
            &source,
            || raw().map(hopbench_datasets::SpannedDataset::from),
            &PrepareConfig::default(),
            &mut fake(dim),
            dir,
            parts,
        )
        .unwrap();
        export::load(dir).unwrap()
    }

    /// The fake model's vector of one text.
    pub(crate) fn embed(text: &str, dim: usize) -> Vec<f32> {
        (fake(dim).embed)(&[text], hopbench_datasets::model::Role::Query, "query")
            .unwrap()
            .remove(0)
    }

    /// The default synthetic world (320 passages, 60 questions) with a bag-of-words fake model.
    pub(crate) fn synthetic() -> Arc<Export> {
        static EXPORT: OnceLock<Arc<Export>> = OnceLock::new();
        EXPORT
            .get_or_init(|| {
                Arc::new(export_of(
                    || Ok(hopbench_datasets::synthetic::generate(&Default::default())),
                    64,
                ))
            })
            .clone()
    }

    /// [`synthetic`] without any optional part ([`export::Part`]): what a leg that declares
    /// none is prepared with.
    pub(crate) fn synthetic_core() -> Arc<Export> {
        static EXPORT: OnceLock<Arc<Export>> = OnceLock::new();
        EXPORT
            .get_or_init(|| {
                Arc::new(export_with(
                    || Ok(hopbench_datasets::synthetic::generate(&Default::default())),
                    64,
                    Protocol::PUBLISHED,
                    export::Parts::NONE,
                ))
            })
            .clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::GraphMode;

    fn mode_config(mode: GraphMode) -> RescueConfig {
        let mut c = RescueConfig::default();
        c.gate.graph_mode = mode;
        c
    }

    fn c(chunk: u32, score: f32) -> Candidate {
        Candidate::new(chunk, score)
    }
    fn ids(v: &[Candidate]) -> Vec<u32> {
        v.iter().map(|c| c.chunk).collect()
    }

    #[test]
    fn invariant_1_base_order_is_copied() {
        // a base whose scores are not even in order (an Expander re-sort could leave it so):
        // order is copied, not recomputed
        let base = [c(7, 0.2), c(3, 0.9), c(5, 0.5)];
        let u = append_and_dedupe(&base, &[c(1, 9.0)], 50, 60.0);
        assert_eq!(ids(&u[..3]), vec![7, 3, 5]);
        assert!(u[..3].iter().all(|c| !c.rescued));
    }

    #[test]
    fn invariant_2_rescue_never_promotes() {
        let base = [c(7, 1.0), c(3, 0.9), c(5, 0.5)];
        // 5 leads the rescue list but is in the base: it stays at its base rank, once
        let u = append_and_dedupe(
            &base,
            &[c(5, 9.0), c(8, 8.0), c(5, 7.0), c(8, 6.0)],
            50,
            60.0,
        );
        assert_eq!(ids(&u), vec![7, 3, 5, 8]);
        assert_eq!(
            u.iter().map(|c| c.rescued).collect::<Vec<_>>(),
            [false, false, false, true]
        );
    }

    #[test]
    fn invariant_3_appended_below_the_whole_base_and_capped() {
        let base: Vec<Candidate> = (0..10).map(|i| c(100 + i, 1.0 - i as f32 * 0.01)).collect();
        let rescue: Vec<Candidate> = (0..80).map(|i| c(i, 5.0)).collect();
        let u = append_and_dedupe(&base, &rescue, 50, 60.0);
        assert_eq!(u.len(), 60);
        assert_eq!(u.iter().position(|c| c.rescued), Some(base.len()));
        assert!(u[10..].iter().all(|c| c.rescued));
        assert_eq!(ids(&u[10..]), (0..50).collect::<Vec<u32>>());
        assert_eq!(append_and_dedupe(&base, &rescue, 0, 60.0).len(), 10);
    }

    #[test]
    fn invariant_4_rescored_by_position() {
        let base = [c(7, 1.0), c(3, 0.9)];
        let u = append_and_dedupe(&base, &[c(1, 0.3), c(2, 0.1)], 50, 60.0);
        for (rank, x) in u.iter().enumerate() {
            assert_eq!(x.score, (1.0 / (60.0 + rank as f64)) as f32);
        }
        assert!(u.windows(2).all(|w| w[0].score > w[1].score));
        assert_eq!(
            u.iter().map(|c| c.rescued).collect::<Vec<_>>(),
            [false, false, true, true]
        );
    }

    #[test]
    fn config_parses_defaults_and_rejects_unknown_keys_and_bad_ranges() {
        use crate::params::{Check, Params};
        let d: RescueConfig = serde_json::from_str("{}").unwrap();
        assert_eq!(d, RescueConfig::default());
        assert_eq!(d.lanes.lanes, vec![Lane::Traversal, Lane::Hypergraph]);
        assert!(serde_json::from_str::<RescueConfig>(r#"{"hop_wieght": 0.1}"#).is_err());
        let m: RescueConfig =
            serde_json::from_str(r#"{"graph_mode": "off", "lanes": ["traversal"]}"#).unwrap();
        assert_eq!(
            (m.gate.graph_mode, m.lanes.lanes),
            (GraphMode::Off, vec![Lane::Traversal])
        );
        assert!(RescueConfig::default().check(&Check("g")).is_ok());
        let mut bad = RescueConfig::default();
        bad.hypergraph.restart = 1.5;
        match bad.check(&Check("g")) {
            Err(LegError::Config { field, .. }) => assert_eq!(field, "restart"),
            other => panic!("{other:?}"),
        }
        let mut bad = RescueConfig::default();
        bad.lanes.lanes = vec![Lane::Traversal, Lane::Traversal];
        assert!(bad.check(&Check("g")).is_err());
    }

    #[test]
    fn graph_mode_off_ranks_exactly_like_bm25() {
        let export = fixtures::synthetic();
        let leg = GraphRescue::new(&export, mode_config(GraphMode::Off)).unwrap();
        let hybrid = FirstStage::default().hybrid(&export).unwrap();
        for i in 0..export.queries.len() {
            let q = QueryInput::from_export(&export, i);
            let out = leg.retrieve_full(&q).unwrap();
            assert!(!out.gate.fire);
            assert_eq!(out.gate.vetoed_by.as_deref(), Some("mode-off"));
            assert_eq!(ids(&out.union), ids(&hybrid.retrieve(&q).unwrap().ranked));
            assert!(out.union.iter().all(|c| !c.rescued));
        }
    }

    #[test]
    fn base_is_100_to_200_long_and_rescue_starts_at_its_end() {
        let export = fixtures::synthetic();
        let leg = GraphRescue::new(&export, mode_config(GraphMode::Force)).unwrap();
        let mut rescued_any = 0;
        for i in 0..export.queries.len() {
            let q = QueryInput::from_export(&export, i);
            let out = leg.retrieve_full(&q).unwrap();
            assert!((100..=200).contains(&out.base.len()), "{}", out.base.len());
            assert_eq!(ids(&out.union[..out.base.len()]), ids(&out.base));
            let rescued = out.union.len() - out.base.len();
            assert!(rescued <= 50);
            if rescued > 0 {
                rescued_any += 1;
                assert_eq!(out.first_rescued_index(), Some(out.base.len()));
                let d = leg.retrieve(&q).unwrap().diagnostics;
                assert_eq!(d["first_rescued_index"], out.base.len() as f64);
                assert_eq!(d["gate_fired"], 1.0);
            }
        }
        if export.kg().unwrap().nodes.is_empty() {
            // the export carries no KG yet: the lanes have nothing to walk
            eprintln!("note: synthetic export has no KG; rescue tail not exercised");
        } else {
            assert!(rescued_any > 0, "no query rescued anything");
        }
    }

    #[test]
    fn an_export_without_entities_still_runs() {
        let mut e = fixtures::export_of(
            || Ok(hopbench_datasets::synthetic::generate(&Default::default())),
            64,
        );
        e.replace_kg(Default::default());
        let export = Arc::new(e);
        let hybrid = FirstStage::default().hybrid(&export).unwrap();
        let leg = GraphRescue::new(&export, mode_config(GraphMode::Force)).unwrap();
        let q = QueryInput::from_export(&export, 0);
        let out = leg.retrieve_full(&q).unwrap();
        assert!(out.gate.fire && out.query_seeds.is_empty() && out.seeds.is_empty());
        // the Expander is a no-op and nothing is rescued
        assert_eq!(ids(&out.union), ids(&hybrid.retrieve(&q).unwrap().ranked));
        assert!(!leg
            .retrieve(&q)
            .unwrap()
            .diagnostics
            .contains_key("first_rescued_index"));
    }

    #[test]
    fn auto_gate_and_diagnostics_on_the_synthetic_export() {
        let export = fixtures::synthetic();
        let leg = GraphRescue::new(&export, RescueConfig::default()).unwrap();
        let mut fired = 0;
        for i in 0..export.queries.len() {
            let q = QueryInput::from_export(&export, i);
            let out = leg.retrieve_full(&q).unwrap();
            let d = out.diagnostics();
            assert_eq!(d["gate_fired"], if out.gate.fire { 1.0 } else { 0.0 });
            assert_eq!(d["base_len"] as usize, out.base.len());
            assert_eq!(d["union_len"] as usize, out.union.len());
            assert_eq!(d["query_seeds"] as usize, out.query_seeds.len());
            for r in REASONS {
                assert!(d.contains_key(&format!("gate_reason:{r}")));
            }
            fired += out.gate.fire as usize;
            // deterministic
            assert_eq!(leg.retrieve_full(&q).unwrap(), out);
        }
        // every synthetic question asks a relation ("Where was ... born?", "In which city ...")
        assert_eq!(fired, export.queries.len());
    }

    /// graph_rescue latency over the 6,119-passage 2Wiki corpus (fake 384-dim vectors, gate
    /// forced, 200 queries made from passage titles). Run with
    /// `cargo test -p hopbench-legs --features real-data latency -- --ignored --nocapture`.
    #[test]
    #[ignore]
    #[cfg(feature = "real-data")]
    fn latency_on_the_2wiki_corpus() {
        let dir = std::env::var("HOPBENCH_DATA").unwrap_or("/work/shared/datasets".into());
        let corpus = std::path::Path::new(&dir).join("2wiki-corpus");
        if !corpus.exists() {
            eprintln!("skipped: {} missing", corpus.display());
            return;
        }
        let export = Arc::new(fixtures::export_of(
            || {
                hopbench_datasets::formats::twowiki::read(
                    &corpus.join("kag_2wiki_qa_sub.json"),
                    Some(&corpus.join("2wikimultihopqa_corpus.json")),
                )
            },
            384,
        ));
        eprintln!(
            "chunks {} nodes {} edges {} hyperedges {}",
            export.chunks.len(),
            export.kg().unwrap().nodes.len(),
            export.kg_index().unwrap().edge_count(),
            export.kg().unwrap().hyperedges.len()
        );
        let texts: Vec<String> = (0..200)
            .map(|i| {
                let texts = export.texts().unwrap();
                let a = &texts[(i * 29) % texts.len()].title;
                let b = &texts[(i * 31 + 7) % texts.len()].title;
                format!("Who is the spouse of the director of {a} and {b}?")
            })
            .collect();
        let vecs: Vec<Vec<f32>> = texts.iter().map(|t| fixtures::embed(t, 384)).collect();
        for mode in [GraphMode::Off, GraphMode::Force] {
            let leg = GraphRescue::new(&export, mode_config(mode)).unwrap();
            let mut ms: Vec<f64> = Vec::new();
            let mut rescued = 0.0;
            for (t, v) in texts.iter().zip(&vecs) {
                let q = QueryInput {
                    index: 0,
                    id: "q0",
                    text: t,
                    embedding: v,
                    gold: &[],
                };
                let t0 = std::time::Instant::now();
                let r = leg.retrieve(&q).unwrap();
                ms.push(t0.elapsed().as_secs_f64() * 1e3);
                rescued += r.diagnostics["rescued_len"];
            }
            ms.sort_by(f64::total_cmp);
            eprintln!(
                "{mode:?}: median {:.3} ms, p95 {:.3} ms, rescued/query {:.1}",
                ms[ms.len() / 2],
                ms[ms.len() * 95 / 100],
                rescued / ms.len() as f64
            );
        }
    }

    /// Gate calibration with the real embedding model (all-MiniLM-L6-v2 under `models/`): per
    /// dataset, how often each reason fires and the top-1 dense cosine quartiles. Run with
    /// `cargo test -p hopbench-legs --features real-data gate_calibration -- --ignored --nocapture`.
    #[test]
    #[ignore]
    #[cfg(feature = "real-data")]
    fn gate_calibration_with_the_real_model() {
        use hopbench_datasets::embed::Embedder;
        let model =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../models/all-MiniLM-L6-v2");
        let data = std::path::PathBuf::from(
            std::env::var("HOPBENCH_DATA").unwrap_or("/work/shared/datasets".into()),
        );
        let Ok(embedder) = Embedder::load(&model) else {
            eprintln!("skipped: no model at {}", model.display());
            return;
        };
        type Raw<'a> =
            Box<dyn FnOnce() -> hopbench_datasets::Result<hopbench_datasets::RawDataset> + 'a>;
        use hopbench_datasets::protocol::Protocol;
        let sets: Vec<(&str, Protocol, Raw<'_>)> = vec![
            (
                "synthetic",
                Protocol::PUBLISHED,
                Box::new(|| Ok(hopbench_datasets::synthetic::generate(&Default::default()))),
            ),
            (
                "musique-train100",
                hopbench_datasets::formats::musique::FORMAT.protocol,
                Box::new(|| {
                    hopbench_datasets::formats::musique::read(
                        &data.join("musique-train100/musique_train.json"),
                        Some(&data.join("musique-train100/musique_train_corpus.json")),
                    )
                }),
            ),
        ];
        for (name, protocol, raw) in sets {
            let tmp = tempfile::tempdir().unwrap();
            let dir = tmp.path().join(name);
            let mut embed = hopbench_datasets::export::EmbedFn {
                model_id: embedder.model_id().to_string(),
                dim: embedder.dim(),
                embed: Box::new(|texts, role, _| embedder.embed(texts, role, &mut |_| {})),
            };
            if let Err(e) = hopbench_datasets::export::prepare(
                &hopbench_datasets::export::Source {
                    name: name.into(),
                    format: name.into(),
                    files: vec![],
                    extra: String::new(),
                    protocol,
                    vectors: None,
                },
                raw,
                &Default::default(),
                &mut embed,
                &dir,
            ) {
                eprintln!("{name}: skipped ({e})");
                continue;
            }
            let export = Arc::new(hopbench_datasets::export::load(&dir).unwrap());
            let leg = GraphRescue::new(&export, RescueConfig::default()).unwrap();
            let n = export.queries.len();
            let mut counts = BTreeMap::<String, usize>::new();
            let mut conf = Vec::new();
            let mut agree = Vec::new();
            let mut rescued_gold = 0usize;
            for i in 0..n {
                let q = QueryInput::from_export(&export, i);
                let out = leg.retrieve_full(&q).unwrap();
                for r in &out.gate.reasons {
                    *counts.entry(r.clone()).or_default() += 1;
                }
                *counts.entry("fired".into()).or_default() += out.gate.fire as usize;
                conf.push(out.gate.confidence);
                agree.push(out.gate.agreement);
                rescued_gold += out
                    .union
                    .iter()
                    .filter(|c| c.rescued && q.gold.contains(&c.chunk))
                    .count();
            }
            conf.sort_by(f64::total_cmp);
            agree.sort_by(f64::total_cmp);
            let q4 = |v: &[f64]| {
                [
                    v[0],
                    v[v.len() / 4],
                    v[v.len() / 2],
                    v[v.len() * 3 / 4],
                    v[v.len() - 1],
                ]
            };
            eprintln!(
                "{name}: {n} queries, {} chunks, {} entities; reasons {counts:?}; rescued gold {rescued_gold}",
                export.chunks.len(),
                export.kg().unwrap().nodes.len()
            );
            eprintln!("  top-1 cosine min/q1/median/q3/max {:.3?}", q4(&conf));
            eprintln!("  agreement     min/q1/median/q3/max {:.3?}", q4(&agree));
        }
    }
}
