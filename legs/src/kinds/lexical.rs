//! `lexical`: BM25 alone, top `pool_k`: the number a sceptic asks for.

use super::{Build, LegKind};
use crate::engine::Bm25;
use crate::first_stage::{Pool, Single};
use crate::flat_params;
use crate::leg::{Leg, LegError, Ranked};

flat_params! {
    /// `lexical`'s parameters.
    pub struct Lexical {
        /// Candidates returned.
        pub pool: Pool,
    }
}

impl LegKind for Lexical {
    const NAME: &'static str = "lexical";
    const ABOUT: &'static str = "BM25 alone";

    fn build(&self, b: &Build<'_>) -> Result<Box<dyn Leg>, LegError> {
        let engine = Bm25::new(b.export.clone());
        Ok(Ranked::leg(b.export, Single::new(Box::new(engine), self.pool.pool_k)))
    }
}
