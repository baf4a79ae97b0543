//! Leg name -> composition. A campaign names each leg and gives its `kind` and parameters; this
//! module is the one place that turns that into a running [`Leg`]. Unknown kinds and unknown
//! parameters are deserialisation errors, so a typo never silently runs a default.

use std::sync::Arc;

use hopbench_datasets::export::Export;
use serde::{Deserialize, Serialize};

use crate::first_stage::{DenseLeg, HybridLeg, LexicalLeg, Vectors};
use crate::leg::{Leg, LegError};

fn pool_k() -> usize {
    100
}
fn rrf_k() -> f32 {
    60.0
}

/// A leg's kind and parameters, as written in `campaign.yaml` (`kind: dense, pool_k: 100`).
/// Defaults are the seed's measured operating points.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum LegSpec {
    /// Exact cosine over header+content vectors.
    Dense {
        /// Candidates returned.
        #[serde(default = "pool_k")]
        pool_k: usize,
    },
    /// Exact cosine over content-only vectors (`missing-inputs` without context headers).
    DenseContentOnly {
        /// Candidates returned.
        #[serde(default = "pool_k")]
        pool_k: usize,
    },
    /// BM25 alone.
    Lexical {
        /// Candidates returned.
        #[serde(default = "pool_k")]
        pool_k: usize,
    },
    /// The hybrid rung: RRF over dense and BM25, max-normalised.
    Bm25 {
        /// Candidates from each first stage.
        #[serde(default = "pool_k")]
        pool_k: usize,
        /// RRF constant.
        #[serde(default = "rrf_k")]
        rrf_k: f32,
    },
}

impl LegSpec {
    /// The kind's name as written in the campaign.
    pub fn kind(&self) -> &'static str {
        match self {
            LegSpec::Dense { .. } => "dense",
            LegSpec::DenseContentOnly { .. } => "dense_content_only",
            LegSpec::Lexical { .. } => "lexical",
            LegSpec::Bm25 { .. } => "bm25",
        }
    }

    /// Checks parameter ranges; `name` is the leg's campaign name, used in messages.
    pub fn validate(&self, name: &str) -> Result<(), LegError> {
        let bad = |field: &str, message: &str| {
            Err(LegError::Config {
                leg: name.into(),
                field: field.into(),
                message: message.into(),
            })
        };
        match *self {
            LegSpec::Dense { pool_k }
            | LegSpec::DenseContentOnly { pool_k }
            | LegSpec::Lexical { pool_k }
                if pool_k == 0 =>
            {
                bad("pool_k", "must be at least 1")
            }
            LegSpec::Bm25 { pool_k, .. } if pool_k == 0 => bad("pool_k", "must be at least 1"),
            LegSpec::Bm25 { rrf_k, .. } if !(rrf_k >= 0.0 && rrf_k.is_finite()) => {
                bad("rrf_k", "must be a finite number >= 0")
            }
            _ => Ok(()),
        }
    }

    /// Builds the leg over `export`.
    pub fn build(&self, name: &str, export: Arc<Export>) -> Result<Box<dyn Leg>, LegError> {
        self.validate(name)?;
        Ok(match *self {
            LegSpec::Dense { pool_k } => Box::new(DenseLeg::new(export, Vectors::Full, pool_k)?),
            LegSpec::DenseContentOnly { pool_k } => {
                Box::new(DenseLeg::new(export, Vectors::ContentOnly, pool_k)?)
            }
            LegSpec::Lexical { pool_k } => Box::new(LexicalLeg::new(export, pool_k)),
            LegSpec::Bm25 { pool_k, rrf_k } => Box::new(HybridLeg::new(export, pool_k, rrf_k)?),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_with_defaults_and_reject_unknown_fields_and_kinds() {
        let s: LegSpec = serde_json::from_str(r#"{"kind":"bm25"}"#).unwrap();
        assert_eq!(
            s,
            LegSpec::Bm25 {
                pool_k: 100,
                rrf_k: 60.0
            }
        );
        assert!(serde_json::from_str::<LegSpec>(r#"{"kind":"bm25","pool":5}"#).is_err());
        assert!(serde_json::from_str::<LegSpec>(r#"{"kind":"magic"}"#).is_err());
        assert!(LegSpec::Dense { pool_k: 0 }.validate("d").is_err());
    }
}
