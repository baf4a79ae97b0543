//! The selecting legs: a ranking (the `retrieve` half) and a token-budgeted selector (the
//! `select` half), so a budget curve is one retrieve and one select per budget. The `packer`,
//! `graph_rescue_packed` and `graph_rescue_coe` kinds are built from these two.
//!
//! Token costs come from the leg's [`TokenCounterSpec`] (heuristic by default, or a named
//! tiktoken encoding), counted once per chunk when the leg is built. The packer's centrality
//! value is the chunk's peak PageRank divided by the graph's largest, so the 0.25 weight means
//! the same on a 1k- and a 100k-node graph (raw PageRank sums to 1 and would vanish).

use std::sync::Arc;

use hopbench_datasets::export::Export;

use serde::{Deserialize, Serialize};

use super::{ChunkTerms, CoeCandidate, CoeConfig, CoeSelector, PackItem, Packer, PackerConfig};
use crate::leg::{Leg, LegError, QueryInput, Ranker, Retrieval, Selection};
use crate::params::{Check, Checked};
use crate::tokens::TokenCounterSpec;

/// The packing kinds' selector parameters: the default budget (the seed's SELECT_BUDGET,
/// 10,000 tokens), the packer's settings and the token counter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Packing {
    /// Default token budget.
    pub budget: u64,
    /// Packer settings.
    pub packer: PackerConfig,
    /// Token counter.
    pub token_counter: TokenCounterSpec,
}

impl Default for Packing {
    fn default() -> Self {
        Packing {
            budget: 10_000,
            packer: PackerConfig::default(),
            token_counter: TokenCounterSpec::default(),
        }
    }
}

impl Checked for Packing {
    fn check(&self, c: &Check<'_>) -> Result<(), LegError> {
        c.at_least("budget", self.budget as usize, 1)?;
        self.token_counter.check(c)?;
        self.packer.validate(c.0)
    }
}

crate::leaf_params!(Packing);

impl Packing {
    /// The packer over `ranking`, as leg `name`.
    pub fn leg(
        &self,
        name: &str,
        export: &Arc<Export>,
        ranking: Box<dyn Ranker>,
    ) -> Result<Box<dyn Leg>, LegError> {
        let packer = Packer::new(name, self.packer)?;
        Ok(Box::new(PackedLeg::new(
            export,
            ranking,
            packer,
            self.budget,
            &self.token_counter,
        )?))
    }
}

/// Per-chunk costs and features, computed once per leg.
pub struct Costs {
    /// Tokens of each chunk, by the leg's token counter.
    pub tokens: Vec<u32>,
    /// Each chunk's peak PageRank over the graph's largest (in [0, 1]).
    pub centrality: Vec<f32>,
    /// Each chunk's lexical terms (the packer's fallback similarity).
    pub terms: ChunkTerms,
}

impl Costs {
    fn new(export: &Export, counter: &TokenCounterSpec) -> Result<Costs, LegError> {
        let n = export.chunks.len();
        let tokens = crate::tokens::chunk_tokens(export, counter)?;
        let kg = export.kg()?;
        let raw: Vec<f32> = (0..n as u32).map(|c| kg.chunk_centrality(c)).collect();
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

/// A token-budgeted selector over a ranking's candidates, given the leg's per-chunk costs.
pub trait BudgetSelector: Send + Sync {
    /// The context for one retrieval under `budget` tokens.
    fn choose(
        &self,
        export: &Export,
        costs: &Costs,
        r: &Retrieval,
        budget: u64,
    ) -> Result<Selection, LegError>;
}

/// A selecting leg: a ranking (the `retrieve` half) and a budgeted selector (the `select`
/// half), with the per-chunk costs the selector reads, computed once.
pub struct SelectingLeg<S> {
    export: Arc<Export>,
    ranking: Box<dyn Ranker>,
    selector: S,
    budget: u64,
    costs: Costs,
}

impl<S: BudgetSelector> SelectingLeg<S> {
    /// `selector` over `ranking` with default budget `budget`, costs counted by `counter`.
    pub fn new(
        export: &Arc<Export>,
        ranking: Box<dyn Ranker>,
        selector: S,
        budget: u64,
        counter: &TokenCounterSpec,
    ) -> Result<Self, LegError> {
        Ok(SelectingLeg {
            ranking,
            selector,
            budget,
            costs: Costs::new(export, counter)?,
            export: export.clone(),
        })
    }
}

impl<S: BudgetSelector> Leg for SelectingLeg<S> {
    fn export(&self) -> &Export {
        &self.export
    }

    fn retrieve(&self, q: &QueryInput<'_>) -> Result<Retrieval, LegError> {
        self.ranking.retrieve(q)
    }

    fn select(
        &self,
        _q: &QueryInput<'_>,
        r: &Retrieval,
        budget: Option<u64>,
    ) -> Result<Selection, LegError> {
        self.selector
            .choose(&self.export, &self.costs, r, budget.unwrap_or(self.budget))
    }

    fn default_budget(&self) -> Option<u64> {
        Some(self.budget)
    }
}

/// The knapsack packer over any ranking (built by [`Packing::leg`]).
pub type PackedLeg = SelectingLeg<Packer>;

impl BudgetSelector for Packer {
    fn choose(
        &self,
        export: &Export,
        costs: &Costs,
        r: &Retrieval,
        budget: u64,
    ) -> Result<Selection, LegError> {
        let kg = export.kg()?;
        let items: Vec<PackItem<'_>> = r
            .ranked
            .iter()
            .map(|c| PackItem {
                chunk: c.chunk,
                score: c.score,
                tokens: costs.tokens[c.chunk as usize],
                centrality: costs.centrality[c.chunk as usize],
                cluster: kg.chunk_community(c.chunk),
                text: "",
                terms: Some(costs.terms.terms(c.chunk)),
            })
            .collect();
        Ok(self.select(&items, budget, None).into_selection())
    }
}

/// Chain-of-evidence as a budgeted selector; `leg` names the campaign leg in errors.
pub struct Coe {
    selector: CoeSelector,
    leg: String,
}

/// Chain-of-evidence over a ranking that reports hyperedges and seeds (graph rescue's union).
pub type CoeLeg = SelectingLeg<Coe>;

impl CoeLeg {
    /// Builds the leg; an error when the ranking has no hypergraph lane (`has_hypergraph_lane`).
    pub fn coe(
        name: &str,
        export: &Arc<Export>,
        ranking: Box<dyn Ranker>,
        has_hypergraph_lane: bool,
        coe: CoeConfig,
        budget: u64,
        counter: &TokenCounterSpec,
    ) -> Result<Self, LegError> {
        let selector = Coe {
            selector: CoeSelector::new(name, coe, has_hypergraph_lane)?,
            leg: name.to_string(),
        };
        SelectingLeg::new(export, ranking, selector, budget, counter)
    }
}

impl BudgetSelector for Coe {
    fn choose(
        &self,
        export: &Export,
        costs: &Costs,
        r: &Retrieval,
        budget: u64,
    ) -> Result<Selection, LegError> {
        let pool: Vec<CoeCandidate> = r
            .ranked
            .iter()
            .map(|c| CoeCandidate {
                chunk: c.chunk,
                rescued: c.rescued,
                tokens: costs.tokens[c.chunk as usize],
            })
            .collect();
        let sel = self
            .selector
            .select(
                &pool,
                r.hyperedges.as_deref(),
                export.kg()?,
                &r.seeds,
                budget,
            )
            .map_err(|e| LegError::Config {
                leg: self.leg.clone(),
                field: "selector".into(),
                message: e.to_string(),
            })?;
        Ok(sel.into_selection())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rescue::fixtures::synthetic;

    const BUDGETS: [u64; 6] = [500, 1_000, 2_000, 4_000, 8_000, 64_000];

    fn build(e: &Arc<Export>, spec: &str) -> Box<dyn Leg> {
        let spec: crate::registry::LegSpec = serde_json::from_str(spec).unwrap();
        spec.build(spec.kind(), e.clone()).unwrap()
    }

    fn legs() -> Vec<(&'static str, Box<dyn Leg>)> {
        let e = synthetic();
        ["packer", "graph_rescue_packed", "graph_rescue_coe"]
            .into_iter()
            .map(|k| (k, build(&e, &format!(r#"{{"kind":"{k}"}}"#))))
            .collect()
    }

    #[test]
    fn budgets_are_never_exceeded_and_backfill_spends_what_the_pool_holds() {
        let e = synthetic();
        for (name, leg) in legs() {
            for q in 0..e.queries.len() {
                let input = QueryInput::from_export(&e, q);
                let r = leg.retrieve(&input).unwrap();
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
        let rescue = build(&e, r#"{"kind":"graph_rescue"}"#);
        let packed = build(&e, r#"{"kind":"graph_rescue_packed"}"#);
        for q in 0..e.queries.len() {
            let input = QueryInput::from_export(&e, q);
            let r = rescue.retrieve(&input).unwrap();
            let s = packed.select(&input, &r, Some(1_000_000)).unwrap();
            let head: Vec<u32> = r.ranked.iter().take(100).map(|c| c.chunk).collect();
            assert_eq!(s.chunks, head, "q{q}");
        }
    }

    #[test]
    fn coe_without_a_hypergraph_lane_is_an_error_at_construction_and_at_select() {
        let e = synthetic();
        let rescue = crate::rescue::GraphRescue::new(&e, Default::default()).unwrap();
        let without_lane = CoeLeg::coe(
            "coe",
            &e,
            Box::new(rescue),
            false,
            CoeConfig::default(),
            16_000,
            &TokenCounterSpec::default(),
        );
        assert!(without_lane.is_err());
        let spec: crate::registry::LegSpec =
            serde_json::from_str(r#"{"kind":"graph_rescue_coe","rescue":{"lanes":["traversal"]}}"#)
                .unwrap();
        assert!(spec.build("coe", e.clone()).is_err());
        let leg = build(&e, r#"{"kind":"graph_rescue_coe"}"#);
        let input = QueryInput::from_export(&e, 0);
        let mut r = leg.retrieve(&input).unwrap();
        r.hyperedges = None;
        assert!(leg.select(&input, &r, None).is_err());
    }

    #[test]
    fn a_named_tiktoken_encoding_changes_the_costs() {
        let e = synthetic();
        let leg = build(
            &e,
            r#"{"kind":"packer","token_counter":{"tiktoken":"cl100k_base"}}"#,
        );
        let input = QueryInput::from_export(&e, 0);
        let s = leg
            .select(&input, &leg.retrieve(&input).unwrap(), Some(2_000))
            .unwrap();
        assert!(s.tokens <= 2_000 && !s.chunks.is_empty());
    }
}
