//! `lexical`: BM25 alone, top `pool_k`: the number a sceptic asks for.

use super::{Build, LegKind};
use crate::first_stage::{LexicalEngine, Pool, Single};
use crate::flat_params;
use crate::leg::{Leg, LegError, Ranked};

flat_params! {
    /// `lexical`'s parameters.
    pub struct Lexical {
        /// Candidates returned.
        pub pool: Pool,
        /// The engine that answers (`lexical: {engine: bm25 | external, ...}`).
        pub lexical: LexicalEngine,
    }
}

impl LegKind for Lexical {
    const NAME: &'static str = "lexical";
    const ABOUT: &'static str = "BM25 alone";
    const READS_VECTORS: bool = false;

    fn build(&self, b: &Build<'_>) -> Result<Box<dyn Leg>, LegError> {
        let engine = self.lexical.build(b.export)?;
        Ok(Ranked::leg(b.export, Single::new(engine, self.pool.pool_k)))
    }
}
