//! Leg name -> composition. A campaign names each leg and gives its `kind` and parameters
//! (`{kind: graph_rescue, hop_weight: 0.1}`); [`LegSpec`] is that, parsed through the one list
//! of kinds ([`crate::kinds::KINDS`]) into the kind's parameter struct, with every default
//! filled in. Unknown kinds and unknown parameters are errors, so a typo never silently runs a
//! default.

use std::fmt;
use std::sync::Arc;

use hopbench_datasets::export::Export;
use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::conversation::session::TextVectors;
use crate::conversation::ConversationConfig;
use crate::engine::{CacheInputs, EngineEntry, ExportRef, Side, SideKind, Vectors};
use crate::kinds::conv_last_turn::ConvLastTurn;
use crate::kinds::multi_horizon::MultiHorizon;
use crate::kinds::{Build, Kind, LegConfig, LegKind, KINDS};
use crate::leg::{Leg, LegError};
use crate::params::{Flat, ParamError};
use crate::rerank::RerankSpec;

pub use crate::kinds::Role;

/// The role of kind `kind` ([`crate::kinds::LegKind::ROLE`]); `None` for a name no kind has
/// (a summary written by another version).
pub fn role_of(kind: &str) -> Option<Role> {
    Kind::named(kind).map(|k| k.role)
}

/// A conversation assembler to time, and the leg to time it against ([`LegSpec::assembly_probe`]).
#[derive(Debug)]
pub struct AssemblyProbe<'a> {
    /// The assembler's settings (turn log, threads, intent, blend).
    pub conversation: &'a ConversationConfig,
    /// The retrieval on the current turn alone, with its default parameters.
    pub baseline: LegSpec,
    /// The baseline's kind name, as it is reported.
    pub baseline_name: &'static str,
}

/// A leg's kind and resolved parameters, as a campaign declares it.
#[derive(Clone)]
pub struct LegSpec {
    config: Arc<dyn LegConfig>,
    /// `model:`, the model directory whose vectors the leg reads in place of the campaign's
    /// (the harness loads it and gives the leg the export with that model's vectors); `None`
    /// for the campaign's model.
    model: Option<String>,
    /// `rerank:`, the stage between the leg's retrieval and its selection ([`crate::rerank`]);
    /// the harness builds the reranker.
    rerank: Option<RerankSpec>,
}

impl LegSpec {
    /// The spec of a kind's parameter struct.
    pub fn of<K: LegKind>(config: K) -> LegSpec {
        LegSpec {
            config: Arc::new(config),
            model: None,
            rerank: None,
        }
    }

    /// Reads `{kind: ..., [model: DIR,] <parameters>}`.
    pub fn from_flat(mut map: Flat) -> Result<LegSpec, ParamError> {
        let kind = match map.remove("kind") {
            Some(Value::String(k)) => k,
            Some(other) => return Err(ParamError::KindNotString { got: other }),
            None => return Err(ParamError::MissingKind),
        };
        let model = match map.remove("model") {
            None => None,
            Some(Value::String(m)) if !m.trim().is_empty() => Some(m),
            Some(other) => return Err(ParamError::ModelNotString { got: other }),
        };
        let rerank = match map.remove("rerank") {
            None => None,
            Some(v) => {
                let spec: RerankSpec =
                    serde_json::from_value(v).map_err(|e| ParamError::Rerank(e.to_string()))?;
                spec.check().map_err(ParamError::Rerank)?;
                Some(spec)
            }
        };
        let Some(entry) = Kind::named(&kind) else {
            return Err(ParamError::UnknownKind {
                kind,
                known: KINDS.iter().map(|k| k.name).collect(),
            });
        };
        let config = entry.parse(&map).map_err(|e| ParamError::InKind {
            kind: kind.clone(),
            error: Box::new(e),
        })?;
        if model.is_some() && !config.reads_vectors() {
            return Err(ParamError::ModelWithoutVectors {
                kind: config.kind(),
            });
        }
        if rerank.is_some() {
            let why = if config.role() == Role::Oracle {
                Some("is a bound that reads the gold, not a ranking to rescore")
            } else if !config.ranked_base() {
                Some("selects facts rather than ranking a base")
            } else {
                None
            };
            if let Some(why) = why {
                return Err(ParamError::RerankWithoutBase {
                    kind: config.kind(),
                    why,
                });
            }
        }
        Ok(LegSpec {
            config,
            model,
            rerank,
        })
    }

    /// The leg's rerank stage (`rerank:`), `None` without one.
    pub fn rerank(&self) -> Option<&RerankSpec> {
        self.rerank.as_ref()
    }

    /// The model directory the leg's vectors are of (`model:`), `None` for the campaign's.
    pub fn model(&self) -> Option<&str> {
        self.model.as_deref()
    }

    /// The spec with `model:` set to `model` (`None`: the campaign's), for a caller that
    /// resolves the directory it names.
    pub fn with_model(&self, model: Option<String>) -> LegSpec {
        LegSpec {
            config: self.config.clone(),
            model,
            rerank: self.rerank.clone(),
        }
    }

    /// The kind's name as written in the campaign.
    pub fn kind(&self) -> &'static str {
        self.config.kind()
    }

    /// Every parameter, resolved (defaults filled in), flat, without `kind`.
    pub fn params(&self) -> Flat {
        self.config.params()
    }

    /// The kind's parameter struct, when this spec is of kind `K`.
    pub fn config<K: LegKind>(&self) -> Option<&K> {
        self.config.as_any().downcast_ref::<K>()
    }

    /// What the kind's numbers are ([`crate::kinds::LegKind::ROLE`]).
    pub fn role(&self) -> Role {
        self.config.role()
    }

    /// The vector set the leg's dense side searches ([`crate::kinds::LegKind::DENSE_VECTORS`]).
    pub fn dense_vectors(&self) -> Vectors {
        self.config.dense_vectors()
    }

    /// What `bench assembly` times for this leg: its conversation assembler's settings and the
    /// leg that retrieves on the current turn alone, beside which the assembler's cost is read.
    /// `None` for a kind without an assembler.
    pub fn assembly_probe(&self) -> Option<AssemblyProbe<'_>> {
        let mh = self.config::<MultiHorizon>()?;
        Some(AssemblyProbe {
            conversation: &mh.assembler.conversation,
            baseline: LegSpec::of(ConvLastTurn::default()),
            baseline_name: ConvLastTurn::NAME,
        })
    }

    /// What the leg's engines read besides their parameters and the export (a cell key's
    /// inputs): every engine group of the resolved parameters, at any depth (composites nest
    /// first stages), asked through [`crate::engine::EngineKind::cache_inputs`]. `export` is
    /// `None` when the dataset has no export yet. A walk over the resolved map rather than a
    /// visit through each group, so a composite that nests a first stage cannot forget to
    /// forward it (which would serve a stale cell).
    pub fn cache_inputs(&self, export: Option<ExportRef<'_>>) -> CacheInputs {
        fn walk(
            key: Option<&str>,
            v: &Value,
            vectors: Vectors,
            export: Option<ExportRef<'_>>,
            out: &mut CacheInputs,
        ) {
            match v {
                Value::Object(m) => {
                    let side = key.and_then(SideKind::of_key);
                    let engine = m.get("engine").and_then(Value::as_str);
                    if let (Some(side), Some(engine)) = (side, engine) {
                        let mut rest = m.clone();
                        rest.remove("engine");
                        let entry = EngineEntry::named(side, engine);
                        if let Some(config) = entry.and_then(|e| e.read(&rest).ok()) {
                            let side = match side {
                                SideKind::Dense => Side::Dense(vectors),
                                SideKind::Lexical => Side::Lexical,
                            };
                            config.cache_inputs(side, export, out);
                        }
                    }
                    for (k, x) in m {
                        walk(Some(k), x, vectors, export, out);
                    }
                }
                Value::Array(a) => a.iter().for_each(|x| walk(None, x, vectors, export, out)),
                _ => {}
            }
        }
        let mut out = CacheInputs::default();
        let params = Value::Object(self.params());
        walk(None, &params, self.dense_vectors(), export, &mut out);
        out
    }

    /// Checks parameter ranges; `name` is the leg's campaign name, used in messages.
    pub fn validate(&self, name: &str) -> Result<(), LegError> {
        self.config.validate(name)
    }

    /// Whether the leg reads each query's conversation from its own export.
    pub fn reads_conversation(&self) -> bool {
        self.config.reads_conversation()
    }

    /// Whether the leg has a default token budget, so its cell has a budget curve
    /// ([`crate::kinds::LegKind::has_budget`]), known without building it.
    pub fn has_budget(&self) -> bool {
        self.config.has_budget()
    }

    /// The optional export parts the leg reads ([`crate::kinds::LegKind::reads`]), known
    /// without building it.
    pub fn reads(&self) -> hopbench_datasets::export::Parts {
        self.config.reads()
    }

    /// The spec with the files the leg reads pinned ([`LegKind::pin_inputs`]: absolute paths,
    /// relative ones taken from `base`, and each file's content hash), so they are part of the
    /// cell key; unchanged for kinds that read no file. `name` is the leg's campaign name, used
    /// in messages.
    pub fn pin_inputs(&self, name: &str, base: &std::path::Path) -> Result<LegSpec, LegError> {
        Ok(match self.config.pin_inputs(name, base)? {
            Some(config) => LegSpec {
                config,
                model: self.model.clone(),
                rerank: self.rerank.clone(),
            },
            None => self.clone(),
        })
    }

    /// Texts this leg needs vectors for besides the prepared ones (the conversation kinds): the
    /// harness embeds them and passes them to [`Self::build_with`].
    pub fn texts_to_embed(&self, export: &Export) -> Vec<String> {
        self.config.texts_to_embed(export)
    }

    /// Builds the leg over `export` (a conversation leg that needs text vectors reports
    /// `missing-inputs` here: use [`Self::build_with`]). `model` and `rerank` are the caller's
    /// to apply, as the harness does: this crate holds no model code, so it builds the kind
    /// over `export` as given (load the export with the model's vectors first), and the
    /// rerank stage is [`crate::rerank::Reranked`] around the result.
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
        self.config.build(&Build {
            leg: name,
            export: &export,
            vectors,
        })
    }
}

impl PartialEq for LegSpec {
    fn eq(&self, other: &Self) -> bool {
        self.kind() == other.kind()
            && self.model == other.model
            && self.rerank == other.rerank
            && self.params() == other.params()
    }
}

impl fmt::Debug for LegSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LegSpec")
            .field("kind", &self.kind())
            .field("model", &self.model)
            .field("rerank", &self.rerank)
            .field("params", &self.params())
            .finish()
    }
}

/// `kind` first, then `model` where the leg names one, then every parameter in name order: how
/// `hopbench legs` and `--show-settings` print a leg, and what a cell key hashes (a leg without
/// `model` hashes as it did before legs could name one).
impl Serialize for LegSpec {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let params = self.params();
        let extra = usize::from(self.model.is_some()) + usize::from(self.rerank.is_some());
        let mut map = s.serialize_map(Some(params.len() + 1 + extra))?;
        map.serialize_entry("kind", self.kind())?;
        if let Some(m) = &self.model {
            map.serialize_entry("model", m)?;
        }
        if let Some(r) = &self.rerank {
            map.serialize_entry("rerank", r)?;
        }
        for (k, v) in &params {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for LegSpec {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = Flat::deserialize(d)?;
        LegSpec::from_flat(map).map_err(<D::Error as serde::de::Error>::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::GraphMode;
    use crate::kinds::{base_oracle::BaseOracle, bm25::Bm25, graph_rescue::GraphRescue};

    fn parse(s: &str) -> Result<LegSpec, serde_json::Error> {
        serde_json::from_str(s)
    }

    #[test]
    fn specs_parse_with_defaults_and_reject_unknown_fields_and_kinds() {
        let s = parse(r#"{"kind":"bm25"}"#).unwrap();
        let b = s.config::<Bm25>().unwrap();
        assert_eq!((b.first.pool.pool_k, b.first.rrf.rrf_k), (100, 60.0));
        assert_eq!(
            serde_json::to_string(&s).unwrap(),
            r#"{"kind":"bm25","pool_k":100,"rrf_k":60.0}"#
        );
        let e = parse(r#"{"kind":"bm25","pool":5}"#)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(
                "kind `bm25`: unknown parameter `pool` (known: dense, lexical, pool_k, rrf_k)"
            ),
            "{e}"
        );
        let e = parse(r#"{"kind":"magic"}"#).unwrap_err().to_string();
        assert!(
            e.contains("unknown leg kind `magic` (known: dense, "),
            "{e}"
        );
        assert!(parse(r#"{"pool_k":5}"#)
            .unwrap_err()
            .to_string()
            .contains("missing `kind`"));
        assert!(parse(r#"{"kind":"dense","pool_k":0}"#)
            .unwrap()
            .validate("d")
            .is_err());
    }

    #[test]
    fn a_leg_names_its_model_after_its_kind_and_only_where_it_reads_vectors() {
        let s = parse(r#"{"kind":"bm25","model":"models/m"}"#).unwrap();
        assert_eq!(s.model(), Some("models/m"));
        // printed right after `kind`, and a leg without one prints as it always did
        assert_eq!(
            serde_json::to_string(&s).unwrap(),
            r#"{"kind":"bm25","model":"models/m","pool_k":100,"rrf_k":60.0}"#
        );
        assert_eq!(parse(&serde_json::to_string(&s).unwrap()).unwrap(), s);
        assert_ne!(s, parse(r#"{"kind":"bm25"}"#).unwrap());
        assert_eq!(s.with_model(None), parse(r#"{"kind":"bm25"}"#).unwrap());
        for bad in [
            r#"{"kind":"bm25","model":""}"#,
            r#"{"kind":"bm25","model":3}"#,
        ] {
            let e = parse(bad).unwrap_err().to_string();
            assert!(
                e.contains("`model` must be a model directory"),
                "{bad}: {e}"
            );
        }
        for kind in ["lexical", "lexical_content_only"] {
            let e = parse(&format!(r#"{{"kind":"{kind}","model":"m"}}"#))
                .unwrap_err()
                .to_string();
            assert!(e.contains(&format!("kind `{kind}` reads none")), "{e}");
        }
    }

    #[test]
    fn graph_kinds_parse_with_defaults_validate_and_build() {
        let rescue = parse(r#"{"kind":"graph_rescue"}"#).unwrap();
        assert_eq!(
            rescue.config::<GraphRescue>(),
            Some(&GraphRescue::default())
        );
        // the resolved parameters are the seed's 30, flat, and print back as they were read
        assert_eq!(rescue.params().len(), 30);
        assert_eq!(
            parse(&serde_json::to_string(&rescue).unwrap()).unwrap(),
            rescue
        );
        let b = parse(r#"{"kind":"base_oracle","rescue":{"graph_mode":"force"}}"#).unwrap();
        let b = b.config::<BaseOracle>().unwrap();
        assert_eq!(b.oracle_k, 100);
        assert_eq!(b.rescue.gate.graph_mode, GraphMode::Force);
        let g =
            parse(r#"{"kind":"graph_rescue","hop_weight":0.1,"lanes":["hypergraph"]}"#).unwrap();
        assert_eq!(g.kind(), "graph_rescue");
        let g = g.config::<GraphRescue>().unwrap();
        assert_eq!(g.rescue.expander.hop_weight, 0.1);
        assert!(!g
            .rescue
            .lanes
            .lanes
            .contains(&crate::rescue::Lane::Traversal));
        // unknown keys are rejected at every level
        for bad in [
            r#"{"kind":"kg","alpha":0.5}"#,
            r#"{"kind":"hyperedges","max_hops":2}"#,
            r#"{"kind":"graph_rescue","hop_wieght":0.1}"#,
            r#"{"kind":"graph_rescue","lanes":["magic"]}"#,
            r#"{"kind":"rescue_oracle","oracle_k":5}"#,
            r#"{"kind":"base_oracle","rescue":{"pool":5}}"#,
            r#"{"kind":"graph_rescue","pool_k":"many"}"#,
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
        // one rule for rrf_k everywhere: RRF's ranks are 0-based, so 0 is refused
        for kind in [
            "bm25",
            "kg",
            "graph_rescue",
            "conv_last_turn",
            "multi_horizon",
        ] {
            assert_eq!(
                field(&format!(r#"{{"kind":"{kind}","rrf_k":0}}"#)),
                "rrf_k",
                "{kind}"
            );
        }
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
            let spec = parse(&format!(r#"{{"kind":"{kind}"}}"#)).unwrap();
            let leg = spec.build(kind, export.clone()).unwrap();
            let r = leg.retrieve(&q).unwrap();
            assert!(r.ranked.len() >= 100, "{kind}");
            let s = leg.select(&q, &r, None).unwrap();
            assert_eq!(s.chunks.len(), r.ranked.len());
        }
    }

    #[test]
    fn the_files_an_external_command_names_are_hashed_at_any_depth() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("b.py");
        std::fs::write(&script, "print(1)").unwrap();
        let s = script.display().to_string();
        let spec = |s: &str| {
            parse(
                &serde_json::json!({
                    "kind": "graph_rescue_packed",
                    "rescue": {
                        "lexical": {"engine": "external", "command": ["python3", s, "--k", "3"]},
                        "dense": {"engine": "exact"},
                    },
                })
                .to_string(),
            )
            .unwrap()
        };
        let files = spec(&s).cache_inputs(None).files;
        assert_eq!(files.keys().collect::<Vec<_>>(), vec![&s]);
        assert_eq!(files[&s], blake3::hash(b"print(1)").to_hex().to_string());
        std::fs::write(&script, "print(2)").unwrap();
        assert_ne!(
            spec(&s).cache_inputs(None).files[&s],
            files[&s],
            "an edit changes the key"
        );
        // no external engine, nothing hashed (and nothing added to the key)
        let plain = parse(r#"{"kind":"bm25","pool_k":100}"#).unwrap();
        assert_eq!(
            plain.cache_inputs(None),
            crate::engine::CacheInputs::default()
        );
    }

    #[test]
    fn a_kind_declares_its_role_and_the_bounds_say_so() {
        assert_eq!(role_of("rescue_oracle"), Some(Role::Oracle));
        assert_eq!(role_of("base_oracle"), Some(Role::Oracle));
        assert_eq!(role_of("dense_content_only"), Some(Role::Ablation));
        assert_eq!(role_of("graph_rescue"), Some(Role::System));
        assert_eq!(role_of("no_such_kind"), None);
        for k in KINDS {
            // a bound says so in `hopbench legs`, an ablation too
            match k.role {
                Role::Oracle => assert!(k.about.starts_with("bound:"), "{}", k.name),
                Role::Ablation => assert!(k.about.ends_with("(ablation)"), "{}", k.name),
                Role::System => assert!(
                    !k.about.starts_with("bound:") && !k.about.ends_with("(ablation)"),
                    "{}",
                    k.name
                ),
            }
        }
        let s = parse(r#"{"kind":"base_oracle"}"#).unwrap();
        assert_eq!(s.role(), Role::Oracle);
    }

    #[test]
    fn a_spec_built_in_code_equals_the_parsed_one() {
        assert_eq!(
            LegSpec::of(Bm25::default()),
            parse(r#"{"kind":"bm25","pool_k":100}"#).unwrap()
        );
    }
}
