//! The selecting legs: a ranking (the `retrieve` half) and a token-budgeted selector (the
//! `select` half), so a budget curve is one retrieve and one select per budget.
//!
//! - `packer`: the knapsack packer over the graph-fused ranking (the `kg` leg: the traversal lane
//!   RRF-fused as a peer of dense and BM25). Default budget 10,000.
//! - `graph_rescue_packed`: the same packer over graph rescue's append-not-fuse union. Default
//!   budget 10,000 (the seed's SELECT_BUDGET).
//! - `graph_rescue_coe`: chain-of-evidence over graph rescue's union. Default budget 16,000
//!   (COE_SELECT_BUDGET). Without a hypergraph lane it is an error at construction and at select.
//!
//! Token costs come from the leg's [`TokenCounterSpec`] (heuristic by default, or a named
//! tiktoken encoding), counted once per chunk when the leg is built. The packer's centrality
//! value is the chunk's peak PageRank divided by the graph's largest, so the 0.25 weight means
//! the same on a 1k- and a 100k-node graph (raw PageRank sums to 1 and would vanish).

use std::sync::Arc;

use hopbench_datasets::export::Export;
use serde::{Deserialize, Serialize};

use crate::lanes::fused::{FusedGraphLeg, KgConfig};
use crate::leg::{Leg, LegError, QueryInput, Retrieval, Selection};
use crate::rescue::{GraphRescueLeg, Lane, RescueConfig};
use crate::select::{
    ChunkTerms, CoeCandidate, CoeConfig, CoeSelector, PackItem, Packer, PackerConfig,
};
use crate::tokens::TokenCounterSpec;

fn select_budget() -> u64 {
    10_000
}
fn coe_budget() -> u64 {
    16_000
}

/// `packer`: the packer over the graph-fused (`kg`) ranking.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PackerLegConfig {
    /// Default token budget.
    #[serde(default = "select_budget")]
    pub budget: u64,
    /// Packer settings.
    #[serde(default)]
    pub packer: PackerConfig,
    /// The fused ranking it packs.
    #[serde(default)]
    pub ranking: KgConfig,
    /// Token counter.
    #[serde(default)]
    pub token_counter: TokenCounterSpec,
}

/// `graph_rescue_packed`: the packer over graph rescue's union.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RescuePackedConfig {
    /// Default token budget.
    #[serde(default = "select_budget")]
    pub budget: u64,
    /// Packer settings.
    #[serde(default)]
    pub packer: PackerConfig,
    /// The graph rescue it packs.
    #[serde(default)]
    pub rescue: RescueConfig,
    /// Token counter.
    #[serde(default)]
    pub token_counter: TokenCounterSpec,
}

/// `graph_rescue_coe`: chain-of-evidence over graph rescue's union.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RescueCoeConfig {
    /// Default token budget.
    #[serde(default = "coe_budget")]
    pub budget: u64,
    /// Chain-of-evidence settings.
    #[serde(default)]
    pub coe: CoeConfig,
    /// The graph rescue it selects from (must keep the hypergraph lane).
    #[serde(default)]
    pub rescue: RescueConfig,
    /// Token counter.
    #[serde(default)]
    pub token_counter: TokenCounterSpec,
}

/// Per-chunk costs and features, computed once per leg.
struct Costs {
    tokens: Vec<u32>,
    centrality: Vec<f32>,
    terms: ChunkTerms,
}

impl Costs {
    fn new(export: &Export, counter: &TokenCounterSpec) -> Result<Costs, LegError> {
        let counter = counter.build()?;
        let n = export.chunks.len();
        let tokens = export
            .chunks
            .iter()
            .map(|c| counter.count(&c.full_text()))
            .collect();
        let raw: Vec<f32> = (0..n as u32)
            .map(|c| export.kg.chunk_centrality(c))
            .collect();
        let max = raw.iter().copied().fold(0.0f32, f32::max);
        let centrality = raw
            .iter()
            .map(|&c| if max > 0.0 { c / max } else { 0.0 })
            .collect();
        Ok(Costs {
            tokens,
            centrality,
            terms: ChunkTerms::from_bm25(&export.bm25),
        })
    }
}

/// A packing leg over any ranking leg.
pub struct PackedLeg {
    export: Arc<Export>,
    ranking: Box<dyn Leg>,
    packer: Packer,
    budget: u64,
    costs: Costs,
}

impl PackedLeg {
    /// `packer`.
    pub fn fused(name: &str, export: Arc<Export>, c: &PackerLegConfig) -> Result<Self, LegError> {
        c.ranking.validate(name)?;
        Ok(PackedLeg {
            ranking: Box::new(FusedGraphLeg::kg(export.clone(), &c.ranking)?),
            packer: Packer::new(name, c.packer)?,
            budget: c.budget,
            costs: Costs::new(&export, &c.token_counter)?,
            export,
        })
    }

    /// `graph_rescue_packed`.
    pub fn rescue(
        name: &str,
        export: Arc<Export>,
        c: &RescuePackedConfig,
    ) -> Result<Self, LegError> {
        c.rescue.validate(name)?;
        Ok(PackedLeg {
            ranking: Box::new(GraphRescueLeg::new(export.clone(), c.rescue.clone())?),
            packer: Packer::new(name, c.packer)?,
            budget: c.budget,
            costs: Costs::new(&export, &c.token_counter)?,
            export,
        })
    }
}

impl Leg for PackedLeg {
    fn retrieve(&self, q: &QueryInput<'_>) -> Retrieval {
        self.ranking.retrieve(q)
    }

    fn select(
        &self,
        _q: &QueryInput<'_>,
        r: &Retrieval,
        budget: Option<u64>,
    ) -> Result<Selection, LegError> {
        let kg = &self.export.kg;
        let items: Vec<PackItem<'_>> = r
            .ranked
            .iter()
            .map(|c| PackItem {
                chunk: c.chunk,
                score: c.score,
                tokens: self.costs.tokens[c.chunk as usize],
                centrality: self.costs.centrality[c.chunk as usize],
                cluster: kg.chunk_community(c.chunk),
                text: "",
                terms: Some(self.costs.terms.terms(c.chunk)),
            })
            .collect();
        Ok(self
            .packer
            .select(&items, budget.unwrap_or(self.budget), None)
            .into_selection())
    }

    fn default_budget(&self) -> Option<u64> {
        Some(self.budget)
    }
}

/// `graph_rescue_coe`.
pub struct CoeLeg {
    export: Arc<Export>,
    rescue: GraphRescueLeg,
    coe: CoeSelector,
    budget: u64,
    costs: Costs,
}

impl CoeLeg {
    /// Builds the leg; an error when the rescue has no hypergraph lane.
    pub fn new(name: &str, export: Arc<Export>, c: &RescueCoeConfig) -> Result<Self, LegError> {
        c.rescue.validate(name)?;
        let has_lane = c.rescue.lanes.contains(&Lane::Hypergraph);
        Ok(CoeLeg {
            rescue: GraphRescueLeg::new(export.clone(), c.rescue.clone())?,
            coe: CoeSelector::new(name, c.coe, has_lane)?,
            budget: c.budget,
            costs: Costs::new(&export, &c.token_counter)?,
            export,
        })
    }
}

impl Leg for CoeLeg {
    fn retrieve(&self, q: &QueryInput<'_>) -> Retrieval {
        self.rescue.retrieve(q)
    }

    fn select(
        &self,
        _q: &QueryInput<'_>,
        r: &Retrieval,
        budget: Option<u64>,
    ) -> Result<Selection, LegError> {
        let pool: Vec<CoeCandidate> = r
            .ranked
            .iter()
            .map(|c| CoeCandidate {
                chunk: c.chunk,
                rescued: c.rescued,
                tokens: self.costs.tokens[c.chunk as usize],
            })
            .collect();
        let sel = self
            .coe
            .select(
                &pool,
                r.hyperedges.as_deref(),
                &self.export.kg,
                &r.seeds,
                budget.unwrap_or(self.budget),
            )
            .map_err(|e| LegError::Config {
                leg: "graph_rescue_coe".into(),
                field: "selector".into(),
                message: e.to_string(),
            })?;
        Ok(sel.into_selection())
    }

    fn default_budget(&self) -> Option<u64> {
        Some(self.budget)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rescue::fixtures::synthetic;

    const BUDGETS: [u64; 6] = [500, 1_000, 2_000, 4_000, 8_000, 64_000];

    fn legs() -> Vec<(&'static str, Box<dyn Leg>)> {
        let e = synthetic();
        vec![
            (
                "packer",
                Box::new(
                    PackedLeg::fused("packer", e.clone(), &serde_json::from_str("{}").unwrap())
                        .unwrap(),
                ),
            ),
            (
                "graph_rescue_packed",
                Box::new(
                    PackedLeg::rescue(
                        "graph_rescue_packed",
                        e.clone(),
                        &serde_json::from_str("{}").unwrap(),
                    )
                    .unwrap(),
                ),
            ),
            (
                "graph_rescue_coe",
                Box::new(
                    CoeLeg::new("graph_rescue_coe", e, &serde_json::from_str("{}").unwrap())
                        .unwrap(),
                ),
            ),
        ]
    }

    #[test]
    fn budgets_are_never_exceeded_and_backfill_spends_what_the_pool_holds() {
        let e = synthetic();
        for (name, leg) in legs() {
            for q in 0..e.queries.len() {
                let input = QueryInput::from_export(&e, q);
                let r = leg.retrieve(&input);
                // the packers select from the first 100 of the union (select_pool_k)
                let pool: u64 = r
                    .ranked
                    .iter()
                    .take(100)
                    .map(|c| e.chunks[c.chunk as usize].tokens as u64)
                    .sum();
                for b in BUDGETS {
                    let s = leg.select(&input, &r, Some(b)).unwrap();
                    assert!(s.tokens <= b, "{name} q{q} budget {b}: spent {}", s.tokens);
                    let spent: u64 = s
                        .chunks
                        .iter()
                        .map(|&c| e.chunks[c as usize].tokens as u64)
                        .sum();
                    assert_eq!(
                        spent, s.tokens,
                        "{name}: reported spend is the selection's heuristic tokens"
                    );
                    if name == "graph_rescue_coe" {
                        continue;
                    }
                    // backfill leaves no pool chunk that would still fit
                    let left = b - s.tokens;
                    let fits = r.ranked.iter().take(100).any(|c| {
                        !s.chunks.contains(&c.chunk)
                            && (e.chunks[c.chunk as usize].tokens.max(1) as u64) <= left
                    });
                    assert!(
                        !fits,
                        "{name} q{q} budget {b}: a chunk still fits in {left} unspent tokens"
                    );
                    // hence, with chunks of ~100-300 tokens, >= 95% of any budget of 2k or more
                    if pool >= b && b >= 2_000 {
                        assert!(
                            s.tokens * 100 >= b * 95,
                            "{name} q{q} budget {b}: backfill spent only {}",
                            s.tokens
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn above_the_pool_the_packed_union_keeps_the_unpacked_order() {
        // the seed: at a budget the whole pool fits in, the packed leg ranks like the unpacked one
        let e = synthetic();
        let rescue = GraphRescueLeg::new(e.clone(), RescueConfig::default()).unwrap();
        let packed =
            PackedLeg::rescue("p", e.clone(), &serde_json::from_str("{}").unwrap()).unwrap();
        for q in 0..e.queries.len() {
            let input = QueryInput::from_export(&e, q);
            let r = rescue.retrieve(&input);
            let s = packed.select(&input, &r, Some(1_000_000)).unwrap();
            let head: Vec<u32> = r.ranked.iter().take(100).map(|c| c.chunk).collect();
            assert_eq!(s.chunks, head, "q{q}");
        }
    }

    #[test]
    fn coe_without_a_hypergraph_lane_is_an_error_at_construction_and_at_select() {
        let e = synthetic();
        let c: RescueCoeConfig =
            serde_json::from_str(r#"{"rescue": {"lanes": ["traversal"]}}"#).unwrap();
        assert!(CoeLeg::new("coe", e.clone(), &c).is_err());
        let leg = CoeLeg::new("coe", e.clone(), &serde_json::from_str("{}").unwrap()).unwrap();
        let input = QueryInput::from_export(&e, 0);
        let mut r = leg.retrieve(&input);
        r.hyperedges = None;
        assert!(leg.select(&input, &r, None).is_err());
    }

    #[test]
    fn a_named_tiktoken_encoding_changes_the_costs() {
        let e = synthetic();
        let c: PackerLegConfig =
            serde_json::from_str(r#"{"token_counter": {"tiktoken": "cl100k_base"}}"#).unwrap();
        let leg = PackedLeg::fused("p", e.clone(), &c).unwrap();
        let input = QueryInput::from_export(&e, 0);
        let s = leg
            .select(&input, &leg.retrieve(&input), Some(2_000))
            .unwrap();
        assert!(s.tokens <= 2_000 && !s.chunks.is_empty());
    }
}
