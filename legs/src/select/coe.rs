//! The `coe` selector: chain-of-evidence over hyperedges, then the seed's `_coe_select` walk.
//!
//! CoE selects hyperedges, not chunks, so it cannot rank the union itself; it decides which
//! *rescued* candidates are evidence worth budget, and the base fills the rest in its own rank
//! order (seed §5.6). The seed's `coe` module is not available; this is the simplest honest
//! version, deterministic and model-free:
//!
//! 1. **Chain** ([`build_chain`]). Input: the hypergraph lane's retained hyperedges as
//!    `(hyperedge id, ρ)`, the knowledge graph (each hyperedge's `nodes` and `chunk`), and the
//!    query's seed nodes. The covered node set starts as the seed nodes. Repeatedly take the
//!    highest-ρ hyperedge (ties: ascending id; a repeated id counts once, at its best ρ) that is
//!    not yet in the chain and shares a node with the covered set; add its nodes to the covered
//!    set. Stop when no retained hyperedge connects or `max_hyperedges` are chained. A chain can
//!    only grow outward from what the query names, so a hyperedge the lane scored highly but that
//!    is unconnected to the query's entities is never evidence. With no seed nodes the chain is
//!    empty (nothing to anchor it) and no rescued candidate is admitted.
//! 2. **Allowed** = the chunks of the chained hyperedges.
//! 3. **Walk** (seed `rescue.py:928`, verbatim): over the pool (`union[..select_pool_k]`, in rank
//!    order), a candidate marked `rescued` enters only if its chunk is allowed; `cost =
//!    max(tokens, 1)`; skip it when `spent + cost > budget`, else select it. Base candidates are
//!    never filtered, only budgeted. The output keeps the pool's order (CoE never promotes).
//!
//! Calling CoE without a hypergraph lane is a loud, typed error both at construction
//! ([`CoeSelector::new`]) and at select ([`SelectError::MissingHypergraph`]).

use std::collections::{BTreeSet, HashSet};

use hopbench_datasets::enrich::KnowledgeGraph;
use serde::{Deserialize, Serialize};

use super::SelectError;
use crate::leg::{LegError, Selection};

/// CoE settings (part of the leg config; unknown keys are rejected).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CoeConfig {
    /// Longest chain, in hyperedges (default 16; 0 admits no rescued candidate).
    pub max_hyperedges: usize,
    /// Pool size: only `union[..select_pool_k]` is walked (seed default 100). Must be ≥ 1.
    pub select_pool_k: usize,
}

impl Default for CoeConfig {
    fn default() -> Self {
        CoeConfig {
            max_hyperedges: 16,
            select_pool_k: 100,
        }
    }
}

/// One pool entry as CoE sees it. Build it from the ranked union, in rank order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CoeCandidate {
    /// Chunk index.
    pub chunk: u32,
    /// Whether a rescue lane carried it in ([`Candidate::rescued`](crate::Candidate::rescued)).
    pub rescued: bool,
    /// Token count under the run's [`TokenCounter`](crate::tokens::TokenCounter).
    pub tokens: u32,
}

/// CoE's result.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CoeSelection {
    /// Selected chunks, in pool order.
    pub chunks: Vec<u32>,
    /// Budget spent: Σ max(tokens, 1) over `chunks` (never above the budget).
    pub tokens: u64,
    /// The chain: chosen hyperedge ids, in the order they were chained.
    pub chain: Vec<u32>,
    /// Chunks the chain allows (ascending): the only rescued candidates that may enter.
    pub allowed: Vec<u32>,
}

impl CoeSelection {
    /// The [`Selection`] handed to the LLM (`chunks` and `tokens`).
    pub fn into_selection(self) -> Selection {
        Selection {
            chunks: self.chunks,
            tokens: self.tokens,
        }
    }
}

/// Builds the chain of evidence (module docs, step 1): the chained hyperedge ids, in order.
/// Errors when a retained id is not a hyperedge of `kg`.
pub fn build_chain(
    retained: &[(u32, f32)],
    kg: &KnowledgeGraph,
    seeds: &[u32],
    max_hyperedges: usize,
) -> Result<Vec<u32>, SelectError> {
    let count = kg.hyperedges.len();
    if let Some(&(id, _)) = retained.iter().find(|(id, _)| *id as usize >= count) {
        return Err(SelectError::UnknownHyperedge { id, count });
    }
    let mut order: Vec<(u32, f32)> = retained.to_vec();
    order.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut seen = HashSet::with_capacity(order.len());
    order.retain(|(id, _)| seen.insert(*id));

    let mut covered: BTreeSet<u32> = seeds.iter().copied().collect();
    let mut chained = vec![false; order.len()];
    let mut chain = Vec::new();
    while chain.len() < max_hyperedges && !covered.is_empty() {
        let next = order.iter().enumerate().position(|(k, (id, _))| {
            !chained[k]
                && kg
                    .hyperedges
                    .nodes(*id as usize)
                    .iter()
                    .any(|n| covered.contains(n))
        });
        let Some(k) = next else { break };
        chained[k] = true;
        let id = order[k].0;
        covered.extend(kg.hyperedges.nodes(id as usize).iter().copied());
        chain.push(id);
    }
    Ok(chain)
}

/// The CoE selector.
#[derive(Debug, Clone)]
pub struct CoeSelector {
    config: CoeConfig,
}

impl CoeSelector {
    /// A CoE selector for leg `leg`. `has_hypergraph_lane` says whether the leg configures a
    /// hypergraph lane; without one this is a [`LegError::Config`] on field `selector` (the seed's
    /// loud error at construction).
    pub fn new(leg: &str, config: CoeConfig, has_hypergraph_lane: bool) -> Result<Self, LegError> {
        let err = |field: &str, message: &str| LegError::Config {
            leg: leg.to_string(),
            field: field.to_string(),
            message: message.to_string(),
        };
        if !has_hypergraph_lane {
            return Err(err(
                "selector",
                "coe selects hyperedges and needs a hypergraph lane; none is configured",
            ));
        }
        if config.select_pool_k == 0 {
            return Err(err("select_pool_k", "must be >= 1"));
        }
        Ok(CoeSelector { config })
    }

    /// The selector's settings.
    pub fn config(&self) -> &CoeConfig {
        &self.config
    }

    /// Selects from `pool` (the ranked union, in rank order) under `budget`. `hyperedges` is the
    /// hypergraph lane's retained `(hyperedge id, ρ)` for this query (`None`: the lane produced
    /// no output, which is an error); `seeds` are the query's seed nodes.
    pub fn select(
        &self,
        pool: &[CoeCandidate],
        hyperedges: Option<&[(u32, f32)]>,
        kg: &KnowledgeGraph,
        seeds: &[u32],
        budget: u64,
    ) -> Result<CoeSelection, SelectError> {
        let retained = hyperedges.ok_or(SelectError::MissingHypergraph)?;
        let chain = build_chain(retained, kg, seeds, self.config.max_hyperedges)?;
        let mut allowed: Vec<u32> = chain
            .iter()
            .map(|&id| kg.hyperedges.chunk(id as usize))
            .collect();
        allowed.sort_unstable();
        allowed.dedup();

        let pool = &pool[..pool.len().min(self.config.select_pool_k)];
        let mut chunks = Vec::new();
        let mut spent = 0u64;
        for c in pool {
            if c.rescued && allowed.binary_search(&c.chunk).is_err() {
                continue;
            }
            let cost = c.tokens.max(1) as u64;
            if spent + cost > budget {
                continue;
            }
            chunks.push(c.chunk);
            spent += cost;
        }
        Ok(CoeSelection {
            chunks,
            tokens: spent,
            chain,
            allowed,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hopbench_datasets::enrich::Hyperedge;

    /// Hyperedges: 0 {0,1}@chunk 10, 1 {1,2}@11, 2 {5,6}@12 (unconnected), 3 {2,3}@13,
    /// 4 {3,4}@14.
    fn kg() -> KnowledgeGraph {
        let he = |chunk: u32, nodes: &[u32]| Hyperedge {
            chunk,
            nodes: nodes.to_vec(),
        };
        KnowledgeGraph {
            hyperedges: vec![
                he(10, &[0, 1]),
                he(11, &[1, 2]),
                he(12, &[5, 6]),
                he(13, &[2, 3]),
                he(14, &[3, 4]),
            ]
            .into(),
            ..Default::default()
        }
    }

    fn cand(chunk: u32, rescued: bool, tokens: u32) -> CoeCandidate {
        CoeCandidate {
            chunk,
            rescued,
            tokens,
        }
    }

    fn selector(max_hyperedges: usize) -> CoeSelector {
        let config = CoeConfig {
            max_hyperedges,
            ..CoeConfig::default()
        };
        CoeSelector::new("coe", config, true).unwrap()
    }

    #[test]
    fn chain_grows_from_the_seeds_by_rho_then_id() {
        let kg = kg();
        // 2 has the top rho but never connects; 3 connects only after 1 is chained;
        // 0 and 1 tie on rho: 0 first
        let retained = [(2, 0.9), (3, 0.8), (1, 0.5), (0, 0.5), (4, 0.1)];
        assert_eq!(
            build_chain(&retained, &kg, &[1], 16).unwrap(),
            vec![0, 1, 3, 4]
        );
        assert_eq!(build_chain(&retained, &kg, &[1], 2).unwrap(), vec![0, 1]);
        assert_eq!(
            build_chain(&retained, &kg, &[1], 0).unwrap(),
            Vec::<u32>::new()
        );
        assert_eq!(
            build_chain(&retained, &kg, &[], 16).unwrap(),
            Vec::<u32>::new()
        );
        assert_eq!(build_chain(&retained, &kg, &[6], 16).unwrap(), vec![2]);
        // a repeated id counts once, at its best rho
        let rep = [(4, 0.2), (3, 0.3), (4, 0.9)];
        assert_eq!(build_chain(&rep, &kg, &[3], 16).unwrap(), vec![4, 3]);
        assert_eq!(
            build_chain(&[(9, 1.0)], &kg, &[1], 16),
            Err(SelectError::UnknownHyperedge { id: 9, count: 5 })
        );
    }

    #[test]
    fn rescued_candidates_enter_only_when_allowed() {
        let kg = kg();
        // seeds {0}: chain 0 (chunk 10) -> 1 (chunk 11); 2 never connects
        let retained = [(0, 0.9), (1, 0.8), (2, 0.7)];
        let pool = [
            cand(1, false, 10),
            cand(12, true, 10), // rescued, not allowed (hyperedge 2 unconnected)
            cand(2, false, 10),
            cand(11, true, 10), // rescued, allowed
            cand(13, true, 10), // rescued, not retained
            cand(10, true, 10), // rescued, allowed
        ];
        let s = selector(16)
            .select(&pool, Some(&retained), &kg, &[0], 1000)
            .unwrap();
        assert_eq!(s.chain, vec![0, 1]);
        assert_eq!(s.allowed, vec![10, 11]);
        assert_eq!(s.chunks, vec![1, 2, 11, 10]);
        assert_eq!(s.tokens, 40);
        // the chain capped at one hyperedge allows only chunk 10
        let s = selector(1)
            .select(&pool, Some(&retained), &kg, &[0], 1000)
            .unwrap();
        assert_eq!(s.chunks, vec![1, 2, 10]);
        // no seeds: no rescued candidate enters, the base is untouched
        let s = selector(16)
            .select(&pool, Some(&retained), &kg, &[], 1000)
            .unwrap();
        assert_eq!(s.chunks, vec![1, 2]);
        // an empty lane output is not an error: nothing to allow
        let s = selector(16)
            .select(&pool, Some(&[]), &kg, &[0], 1000)
            .unwrap();
        assert_eq!(s.into_selection().chunks, vec![1, 2]);
    }

    #[test]
    fn budget_is_respected_in_pool_order() {
        let kg = kg();
        let retained = [(0, 0.9)];
        let pool = [
            cand(1, false, 30),
            cand(2, false, 50), // does not fit after 1 (80 > 70): skipped, walk goes on
            cand(10, true, 20),
            cand(3, false, 0), // costs 1
            cand(4, false, 20),
        ];
        let s = selector(16)
            .select(&pool, Some(&retained), &kg, &[0], 70)
            .unwrap();
        assert_eq!(s.chunks, vec![1, 10, 3]);
        assert_eq!(s.tokens, 51);
        let s = selector(16)
            .select(&pool, Some(&retained), &kg, &[0], 0)
            .unwrap();
        assert!(s.chunks.is_empty());
        assert_eq!(s.tokens, 0);
        // the pool is truncated to select_pool_k
        let cfg = CoeConfig {
            select_pool_k: 1,
            ..CoeConfig::default()
        };
        let s = CoeSelector::new("coe", cfg, true)
            .unwrap()
            .select(&pool, Some(&retained), &kg, &[0], 1000)
            .unwrap();
        assert_eq!(s.chunks, vec![1]);
    }

    #[test]
    fn missing_hypergraph_is_an_error_at_construction_and_at_select() {
        assert!(matches!(
            CoeSelector::new("gr_coe", CoeConfig::default(), false),
            Err(LegError::Config { leg, field, .. }) if leg == "gr_coe" && field == "selector"
        ));
        let s = selector(16);
        let pool = [cand(1, false, 10)];
        assert_eq!(
            s.select(&pool, None, &kg(), &[0], 100),
            Err(SelectError::MissingHypergraph)
        );
    }

    #[test]
    fn config_defaults_and_unknown_keys() {
        let c: CoeConfig = serde_json::from_str("{}").unwrap();
        assert_eq!(c, CoeConfig::default());
        assert_eq!((c.max_hyperedges, c.select_pool_k), (16, 100));
        assert!(serde_json::from_str::<CoeConfig>(r#"{"max_edges": 3}"#).is_err());
        let bad = CoeConfig {
            select_pool_k: 0,
            ..CoeConfig::default()
        };
        assert!(CoeSelector::new("coe", bad, true).is_err());
    }
}
