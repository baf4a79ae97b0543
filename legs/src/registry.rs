//! Leg name -> composition. A campaign names each leg and gives its `kind` and parameters; this
//! module is the one place that turns that into a running [`Leg`]. Unknown kinds and unknown
//! parameters are deserialisation errors, so a typo never silently runs a default.

use std::sync::Arc;

use hopbench_datasets::export::Export;
use serde::{Deserialize, Serialize};

use crate::cdgr::{CdgrConfig, CdgrLeg, CdgrMode};
use crate::conversational::{
    texts_to_embed, ConvCdrConfig, ConvLeg, ConvMode, FullHistoryConfig, LastTurnConfig,
    MultiHorizonConfig, TextVectors,
};
use crate::first_stage::{DenseLeg, HybridLeg, LexicalLeg, Vectors};
use crate::lanes::fused::{FusedGraphLeg, HyperedgesConfig, KgConfig};
use crate::leg::{Leg, LegError};
use crate::oracle::{OracleKind, OracleLeg};
use crate::rescue::{GraphRescueLeg, RescueConfig};
use crate::selecting::{CoeLeg, PackedLeg, PackerLegConfig, RescueCoeConfig, RescuePackedConfig};
use crate::tokens::{TokenCounterSpec, TIKTOKEN_ENCODINGS};

fn pool_k() -> usize {
    100
}
fn rrf_k() -> f32 {
    60.0
}
fn oracle_k() -> usize {
    100
}

/// Range checks that name the leg and the field (shared by every config's `validate`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Check<'a>(pub &'a str);

impl Check<'_> {
    pub(crate) fn fail(&self, field: &str, message: &str) -> Result<(), LegError> {
        Err(LegError::Config {
            leg: self.0.into(),
            field: field.into(),
            message: message.into(),
        })
    }
    pub(crate) fn at_least(&self, field: &str, v: usize, min: usize) -> Result<(), LegError> {
        if v < min {
            return self.fail(field, &format!("must be at least {min}, got {v}"));
        }
        Ok(())
    }
    pub(crate) fn at_most(&self, field: &str, v: usize, max: usize) -> Result<(), LegError> {
        if v > max {
            return self.fail(field, &format!("must be at most {max}, got {v}"));
        }
        Ok(())
    }
    pub(crate) fn range(&self, field: &str, v: f64, lo: f64, hi: f64) -> Result<(), LegError> {
        if !(v >= lo && v <= hi) {
            return self.fail(field, &format!("must be in [{lo}, {hi}], got {v}"));
        }
        Ok(())
    }
    pub(crate) fn unit(&self, field: &str, v: f64) -> Result<(), LegError> {
        self.range(field, v, 0.0, 1.0)
    }
    pub(crate) fn non_negative(&self, field: &str, v: f64) -> Result<(), LegError> {
        if !(v >= 0.0 && v.is_finite()) {
            return self.fail(field, &format!("must be a finite number >= 0, got {v}"));
        }
        Ok(())
    }
    pub(crate) fn positive(&self, field: &str, v: f64) -> Result<(), LegError> {
        if !(v > 0.0 && v.is_finite()) {
            return self.fail(field, &format!("must be a finite number > 0, got {v}"));
        }
        Ok(())
    }
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
    /// The traversal lane RRF-fused as a third peer of dense and BM25 (the regression).
    Kg(KgConfig),
    /// The hypergraph lane RRF-fused as a third peer of dense and BM25 (the regression).
    Hyperedges(HyperedgesConfig),
    /// Graph rescue: the hybrid base, gated Expander rescore, graph lanes appended below the
    /// base; selector `none`. Every parameter flat (see [`RescueConfig`]).
    GraphRescue(RescueConfig),
    /// The knapsack packer over the graph-fused (`kg`) ranking.
    Packer(PackerLegConfig),
    /// The knapsack packer over graph rescue's union.
    GraphRescuePacked(RescuePackedConfig),
    /// Chain-of-evidence over graph rescue's union.
    GraphRescueCoe(RescueCoeConfig),
    /// Coverage-differential retrieval (SPEC-024 essentials), one-shot.
    Cdr(CdgrConfig),
    /// Coverage-differential graph retrieval (SPEC-025), one-shot.
    Cdgr(CdgrConfig),
    /// CDR over the published decomposition as a document task (`missing-inputs` without).
    CdrTask(CdgrConfig),
    /// CDGR over the published decomposition as a document task (`missing-inputs` without).
    CdgrTask(CdgrConfig),
    /// Conversation: the hybrid on the current user turn alone.
    ConvLastTurn(LastTurnConfig),
    /// Conversation: the hybrid on every turn concatenated.
    ConvFullHistory(FullHistoryConfig),
    /// Conversation: the hybrid on the current turn with CDR novelty always on.
    ConvCdr(ConvCdrConfig),
    /// Conversation: SPEC-028's assembler (references, intent, tier blend) over the hybrid.
    MultiHorizon(MultiHorizonConfig),
    /// Bound: graph rescue's union with the rescued gold chunks promoted to the front.
    RescueOracle {
        /// The graph rescue being bounded (defaults: `graph_rescue`'s).
        #[serde(default)]
        rescue: RescueConfig,
    },
    /// Bound: a perfect rescore of the base's top `oracle_k` (gold first), then the rest.
    BaseOracle {
        /// Base head the oracle may rescore.
        #[serde(default = "oracle_k")]
        oracle_k: usize,
        /// The graph rescue whose base is rescored (defaults: `graph_rescue`'s).
        #[serde(default)]
        rescue: RescueConfig,
    },
}

/// An unknown tiktoken encoding is a configuration error at campaign load, not mid-run.
fn check_counter(name: &str, spec: &TokenCounterSpec) -> Result<(), LegError> {
    match spec {
        TokenCounterSpec::Tiktoken(enc) if !TIKTOKEN_ENCODINGS.contains(&enc.as_str()) => {
            Err(LegError::Config {
                leg: name.into(),
                field: "token_counter.tiktoken".into(),
                message: format!(
                    "unknown encoding `{enc}` (known: {})",
                    TIKTOKEN_ENCODINGS.join(", ")
                ),
            })
        }
        _ => Ok(()),
    }
}

impl LegSpec {
    /// The kind's name as written in the campaign.
    pub fn kind(&self) -> &'static str {
        match self {
            LegSpec::Dense { .. } => "dense",
            LegSpec::DenseContentOnly { .. } => "dense_content_only",
            LegSpec::Lexical { .. } => "lexical",
            LegSpec::Bm25 { .. } => "bm25",
            LegSpec::Kg(_) => "kg",
            LegSpec::Hyperedges(_) => "hyperedges",
            LegSpec::GraphRescue(_) => "graph_rescue",
            LegSpec::Packer(_) => "packer",
            LegSpec::GraphRescuePacked(_) => "graph_rescue_packed",
            LegSpec::GraphRescueCoe(_) => "graph_rescue_coe",
            LegSpec::Cdr(_) => "cdr",
            LegSpec::Cdgr(_) => "cdgr",
            LegSpec::CdrTask(_) => "cdr_task",
            LegSpec::CdgrTask(_) => "cdgr_task",
            LegSpec::ConvLastTurn(_) => "conv_last_turn",
            LegSpec::ConvFullHistory(_) => "conv_full_history",
            LegSpec::ConvCdr(_) => "conv_cdr",
            LegSpec::MultiHorizon(_) => "multi_horizon",
            LegSpec::RescueOracle { .. } => "rescue_oracle",
            LegSpec::BaseOracle { .. } => "base_oracle",
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
        match self {
            LegSpec::Cdr(c) | LegSpec::Cdgr(c) | LegSpec::CdrTask(c) | LegSpec::CdgrTask(c) => {
                check_counter(name, &c.token_counter)?;
                return c.validate(name);
            }
            LegSpec::ConvLastTurn(c) => return c.validate(name),
            LegSpec::ConvFullHistory(c) => return c.validate(name),
            LegSpec::ConvCdr(c) => return c.validate(name),
            LegSpec::MultiHorizon(c) => return c.validate(name),
            LegSpec::Kg(c) => return c.validate(name),
            LegSpec::Hyperedges(c) => return c.validate(name),
            LegSpec::GraphRescue(c) | LegSpec::RescueOracle { rescue: c } => {
                return c.validate(name)
            }
            LegSpec::BaseOracle { oracle_k, rescue } => {
                Check(name).at_least("oracle_k", *oracle_k, 1)?;
                return rescue.validate(name);
            }
            LegSpec::Packer(c) => {
                Check(name).at_least("budget", c.budget as usize, 1)?;
                check_counter(name, &c.token_counter)?;
                c.packer.validate(name)?;
                return c.ranking.validate(name);
            }
            LegSpec::GraphRescuePacked(c) => {
                Check(name).at_least("budget", c.budget as usize, 1)?;
                check_counter(name, &c.token_counter)?;
                c.packer.validate(name)?;
                return c.rescue.validate(name);
            }
            LegSpec::GraphRescueCoe(c) => {
                Check(name).at_least("budget", c.budget as usize, 1)?;
                check_counter(name, &c.token_counter)?;
                if !c.rescue.lanes.contains(&crate::rescue::Lane::Hypergraph) {
                    return bad(
                        "rescue.lanes",
                        "chain-of-evidence selects hyperedges: keep the hypergraph lane",
                    );
                }
                return c.rescue.validate(name);
            }
            _ => {}
        }
        match *self {
            LegSpec::Dense { pool_k }
            | LegSpec::DenseContentOnly { pool_k }
            | LegSpec::Lexical { pool_k }
                if pool_k == 0 =>
            {
                bad("pool_k", "must be at least 1")
            }
            LegSpec::Bm25 { pool_k: 0, .. } => bad("pool_k", "must be at least 1"),
            LegSpec::Bm25 { rrf_k, .. } if !(rrf_k >= 0.0 && rrf_k.is_finite()) => {
                bad("rrf_k", "must be a finite number >= 0")
            }
            _ => Ok(()),
        }
    }

    /// The conversation legs' mode and first-stage settings (`None` for every other kind).
    pub fn conversation_mode(&self) -> Option<(ConvMode, usize, f32)> {
        Some(match self {
            LegSpec::ConvLastTurn(c) => (ConvMode::LastTurn, c.pool_k, c.rrf_k),
            LegSpec::ConvFullHistory(c) => (ConvMode::FullHistory(c.order), c.pool_k, c.rrf_k),
            LegSpec::ConvCdr(c) => (
                ConvMode::Cdr {
                    delivered_k: c.delivered_k,
                },
                c.pool_k,
                c.rrf_k,
            ),
            LegSpec::MultiHorizon(c) => (
                ConvMode::MultiHorizon {
                    delivered_k: c.delivered_k,
                    partial_novelty: c.partial_novelty,
                    conversation: Box::new(c.conversation.clone()),
                },
                c.pool_k,
                c.rrf_k,
            ),
            _ => return None,
        })
    }

    /// Texts this leg needs vectors for besides the prepared ones (conversation legs only; see
    /// [`crate::conversational`]): the harness embeds them and passes them to [`Self::build_with`].
    pub fn texts_to_embed(&self, export: &Export) -> Vec<String> {
        self.conversation_mode()
            .map(|(mode, _, _)| texts_to_embed(export, &mode))
            .unwrap_or_default()
    }

    /// Builds the leg over `export` (a conversation leg that needs text vectors reports
    /// `missing-inputs` here: use [`Self::build_with`]).
    pub fn build(&self, name: &str, export: Arc<Export>) -> Result<Box<dyn Leg>, LegError> {
        self.build_with(name, export, None)
    }

    /// Builds the leg over `export`, with the vectors of [`Self::texts_to_embed`].
    pub fn build_with(
        &self,
        name: &str,
        export: Arc<Export>,
        vectors: Option<Arc<TextVectors>>,
    ) -> Result<Box<dyn Leg>, LegError> {
        self.validate(name)?;
        if let Some((mode, pool_k, rrf_k)) = self.conversation_mode() {
            return Ok(Box::new(ConvLeg::new(
                export, mode, pool_k, rrf_k, vectors,
            )?));
        }
        Ok(match *self {
            LegSpec::Dense { pool_k } => Box::new(DenseLeg::new(export, Vectors::Full, pool_k)?),
            LegSpec::DenseContentOnly { pool_k } => {
                Box::new(DenseLeg::new(export, Vectors::ContentOnly, pool_k)?)
            }
            LegSpec::Lexical { pool_k } => Box::new(LexicalLeg::new(export, pool_k)),
            LegSpec::Bm25 { pool_k, rrf_k } => Box::new(HybridLeg::new(export, pool_k, rrf_k)?),
            LegSpec::Kg(ref c) => Box::new(FusedGraphLeg::kg(export, c)?),
            LegSpec::Hyperedges(ref c) => Box::new(FusedGraphLeg::hyperedges(export, c)?),
            LegSpec::GraphRescue(ref c) => Box::new(GraphRescueLeg::new(export, c.clone())?),
            LegSpec::Packer(ref c) => Box::new(PackedLeg::fused(name, export, c)?),
            LegSpec::GraphRescuePacked(ref c) => Box::new(PackedLeg::rescue(name, export, c)?),
            LegSpec::GraphRescueCoe(ref c) => Box::new(CoeLeg::new(name, export, c)?),
            LegSpec::Cdr(ref c) => Box::new(CdgrLeg::new(name, export, CdgrMode::Cdr, c)?),
            LegSpec::Cdgr(ref c) => Box::new(CdgrLeg::new(name, export, CdgrMode::Cdgr, c)?),
            LegSpec::CdrTask(ref c) => Box::new(CdgrLeg::new(name, export, CdgrMode::CdrTask, c)?),
            LegSpec::CdgrTask(ref c) => {
                Box::new(CdgrLeg::new(name, export, CdgrMode::CdgrTask, c)?)
            }
            LegSpec::ConvLastTurn(_)
            | LegSpec::ConvFullHistory(_)
            | LegSpec::ConvCdr(_)
            | LegSpec::MultiHorizon(_) => unreachable!("built above"),
            LegSpec::RescueOracle { ref rescue } => {
                Box::new(OracleLeg::new(export, rescue.clone(), OracleKind::Rescue)?)
            }
            LegSpec::BaseOracle {
                oracle_k,
                ref rescue,
            } => Box::new(OracleLeg::new(
                export,
                rescue.clone(),
                OracleKind::Base { oracle_k },
            )?),
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

    #[test]
    fn graph_kinds_parse_with_defaults_validate_and_build() {
        let parse = |s: &str| serde_json::from_str::<LegSpec>(s);
        assert_eq!(
            parse(r#"{"kind":"kg"}"#).unwrap(),
            LegSpec::Kg(KgConfig::default())
        );
        assert_eq!(
            parse(r#"{"kind":"hyperedges"}"#).unwrap(),
            LegSpec::Hyperedges(HyperedgesConfig::default())
        );
        assert_eq!(
            parse(r#"{"kind":"graph_rescue"}"#).unwrap(),
            LegSpec::GraphRescue(RescueConfig::default())
        );
        assert_eq!(
            parse(r#"{"kind":"rescue_oracle"}"#).unwrap(),
            LegSpec::RescueOracle {
                rescue: RescueConfig::default()
            }
        );
        assert_eq!(
            parse(r#"{"kind":"base_oracle","rescue":{"graph_mode":"force"}}"#).unwrap(),
            LegSpec::BaseOracle {
                oracle_k: 100,
                rescue: RescueConfig {
                    graph_mode: crate::gate::GraphMode::Force,
                    ..Default::default()
                }
            }
        );
        let g =
            parse(r#"{"kind":"graph_rescue","hop_weight":0.1,"lanes":["hypergraph"]}"#).unwrap();
        assert_eq!(g.kind(), "graph_rescue");
        // unknown keys are rejected at every level
        for bad in [
            r#"{"kind":"kg","alpha":0.5}"#,
            r#"{"kind":"hyperedges","max_hops":2}"#,
            r#"{"kind":"graph_rescue","hop_wieght":0.1}"#,
            r#"{"kind":"graph_rescue","lanes":["magic"]}"#,
            r#"{"kind":"rescue_oracle","oracle_k":5}"#,
            r#"{"kind":"base_oracle","rescue":{"pool":5}}"#,
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        // range checks name the field
        let field = |s: &str| match parse(s).unwrap().validate("leg") {
            Err(LegError::Config { leg, field, .. }) => {
                assert_eq!(leg, "leg");
                field
            }
            other => panic!("{s}: {other:?}"),
        };
        assert_eq!(field(r#"{"kind":"kg","hop_decay":1.5}"#), "hop_decay");
        assert_eq!(
            field(r#"{"kind":"hyperedges","iterations":0}"#),
            "iterations"
        );
        assert_eq!(
            field(r#"{"kind":"graph_rescue","low_agreement":-0.1}"#),
            "low_agreement"
        );
        assert_eq!(
            field(r#"{"kind":"graph_rescue","relation_cues":["two words"]}"#),
            "relation_cues"
        );
        assert_eq!(field(r#"{"kind":"base_oracle","oracle_k":0}"#), "oracle_k");
        assert_eq!(
            field(r#"{"kind":"rescue_oracle","rescue":{"lane_k":0}}"#),
            "lane_k"
        );
    }

    #[test]
    fn every_graph_kind_builds_and_runs_on_the_synthetic_export() {
        let export = crate::rescue::fixtures::synthetic();
        let q = crate::QueryInput::from_export(&export, 0);
        for kind in [
            "kg",
            "hyperedges",
            "graph_rescue",
            "rescue_oracle",
            "base_oracle",
        ] {
            let spec: LegSpec = serde_json::from_str(&format!(r#"{{"kind":"{kind}"}}"#)).unwrap();
            let leg = spec.build(kind, export.clone()).unwrap();
            let r = leg.retrieve(&q);
            assert!(r.ranked.len() >= 100, "{kind}");
            let s = leg.select(&q, &r, None).unwrap();
            assert_eq!(s.chunks.len(), r.ranked.len());
        }
    }
}
