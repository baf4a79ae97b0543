//! The first stage every composing leg starts from: its parameter groups ([`Pool`], [`Rrf`],
//! [`FirstStage`]) and the hybrid base ([`Hybrid`]: dense and BM25 fused by RRF, then
//! max-normalised: the seed's base stage and the `bm25` leg).
//!
//! RRF uses 0-based ranks, as in the seed's code: `1 / (rrf_k + rank)`. So `rrf_k` must be
//! positive (at 0 the head's score would be infinite), and that is the one rule every leg
//! shares.

use std::sync::Arc;

use hopbench_datasets::export::Export;
use serde::{Deserialize, Serialize};

use crate::candidate::Candidate;
use crate::engine::{Bm25, Engine, ExactDense, Vectors};
use crate::fuse::{rrf, unit_scaled};
use crate::leg::{LegError, QueryInput, Ranker, Retrieval};
use crate::params::{Check, Checked};
use crate::{flat_params, leaf_params};

/// `pool_k`: candidates each first-stage engine returns (the seed's 100).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Pool {
    /// Candidates from each first stage.
    pub pool_k: usize,
}

impl Default for Pool {
    fn default() -> Self {
        Pool { pool_k: 100 }
    }
}

impl Checked for Pool {
    fn check(&self, c: &Check<'_>) -> Result<(), LegError> {
        c.at_least("pool_k", self.pool_k, 1)
    }
}

/// `rrf_k`: the RRF constant of the dense + BM25 fusion (the seed's 60).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Rrf {
    /// RRF constant.
    pub rrf_k: f32,
}

impl Default for Rrf {
    fn default() -> Self {
        Rrf { rrf_k: 60.0 }
    }
}

impl Checked for Rrf {
    fn check(&self, c: &Check<'_>) -> Result<(), LegError> {
        c.positive("rrf_k", f64::from(self.rrf_k))
    }
}

leaf_params!(Pool, Rrf);

flat_params! {
    /// The hybrid first stage's parameters: `pool_k` from each engine, fused with `rrf_k`.
    pub struct FirstStage {
        /// Candidates from each engine.
        pub pool: Pool,
        /// The fusion constant.
        pub rrf: Rrf,
    }
}

impl FirstStage {
    /// The hybrid base over `export`'s built-in engines.
    pub fn hybrid(&self, export: &Arc<Export>) -> Result<Hybrid, LegError> {
        Ok(Hybrid {
            dense: Box::new(ExactDense::new(export.clone(), Vectors::Full)?),
            lexical: Box::new(Bm25::new(export.clone())),
            pool_k: self.pool.pool_k,
            rrf_k: self.rrf.rrf_k,
        })
    }
}

/// One engine's top `pool_k`, as a ranking (`dense`, `dense_content_only`, `lexical`).
pub struct Single {
    engine: Box<dyn Engine>,
    pool_k: usize,
}

impl Single {
    /// `engine`'s top `pool_k`.
    pub fn new(engine: Box<dyn Engine>, pool_k: usize) -> Self {
        Single { engine, pool_k }
    }
}

impl Ranker for Single {
    fn retrieve(&self, q: &QueryInput<'_>) -> Retrieval {
        Retrieval {
            ranked: self.engine.search(q, self.pool_k),
            ..Default::default()
        }
    }
}

/// Dense and BM25 as peers: RRF (k = `rrf_k`) over both pools, then max-normalised. This is the
/// seed's hybrid rung and the base stage of graph rescue.
pub struct Hybrid {
    dense: Box<dyn Engine>,
    lexical: Box<dyn Engine>,
    pool_k: usize,
    rrf_k: f32,
}

/// The hybrid's base and the two first-stage lists it fused (the gate reads them).
pub struct Base {
    /// The fused, unit-scaled ranking.
    pub fused: Vec<Candidate>,
    /// The dense engine's top `pool_k`.
    pub dense: Vec<Candidate>,
    /// The BM25 engine's top `pool_k`.
    pub bm25: Vec<Candidate>,
}

impl Hybrid {
    /// The fused, unit-scaled base, plus the two first-stage lists.
    pub fn base(&self, q: &QueryInput<'_>) -> Base {
        let dense = self.dense.search(q, self.pool_k);
        let bm25 = self.lexical.search(q, self.pool_k);
        let fused = unit_scaled(rrf(&[&dense, &bm25], self.rrf_k, None));
        Base { fused, dense, bm25 }
    }
}

impl Ranker for Hybrid {
    fn retrieve(&self, q: &QueryInput<'_>) -> Retrieval {
        let b = self.base(q);
        let mut r = Retrieval {
            ranked: b.fused,
            ..Default::default()
        };
        r.diagnostics
            .insert("pool_dense".into(), b.dense.len() as f64);
        r.diagnostics
            .insert("pool_bm25".into(), b.bm25.len() as f64);
        r
    }
}
