//! The first stage every composing leg starts from: its parameter groups ([`Pool`], [`Rrf`],
//! the engine of each side: [`DenseEngine`], [`LexicalEngine`], and [`FirstStage`], which holds
//! them all) and the hybrid base ([`Hybrid`]: dense and BM25 fused by RRF, then max-normalised:
//! the seed's base stage and the `bm25` leg).
//!
//! RRF uses 0-based ranks, as in the seed's code: `1 / (rrf_k + rank)`. So `rrf_k` must be
//! positive (at 0 the head's score would be infinite), and that is the one rule every leg
//! shares.
//!
//! ## Which engine answers each side
//!
//! `dense: {engine: exact | qdrant | external, ...}` and `lexical: {engine: bm25 | external, ...}` are
//! nested maps in the flat leg map (`external` takes the [`ExternalSpec`] fields: `command`,
//! `timeout_ms`, `startup_timeout_ms`; `qdrant` takes the [`QdrantSpec`] fields: `hnsw_ef`,
//! `m`, `ef_construct`, `on_disk`). The built-in engine is the default, and a side left at
//! its default is **omitted** from the resolved parameters: `hopbench legs`, `--show-settings`
//! and every cell key of a leg that does not choose an engine are exactly what they were before
//! engines could be chosen, so no cache is invalidated by the option existing. A side that
//! names another engine prints (and hashes) the whole group with every default filled in.
//! Another engine is one variant of the side's enum, one arm in [`EngineChoice::read`] /
//! [`EngineChoice::write`], and one in its `build` (as `qdrant` is).

use std::sync::Arc;

use hopbench_datasets::export::Export;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::candidate::Candidate;
use crate::engine::{
    Bm25, Engine, ExactDense, ExternalEngine, ExternalSpec, QdrantSpec, Side, Vectors,
};
use crate::fuse::{rrf, unit_scaled};
use crate::leg::{LegError, QueryInput, Ranker, Retrieval};
use crate::params::{Check, Checked, Flat, ParamError};
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

/// One side's engine choice: read from, and written to, its nested map `{engine: NAME, ...}`
/// under [`EngineChoice::KEY`]. The [`Default`] is the built-in engine, which takes no
/// parameters and is left out of the resolved map.
pub trait EngineChoice: Sized + Default + PartialEq {
    /// The campaign key of the side (`dense`, `lexical`).
    const KEY: &'static str;
    /// The engine names the side accepts, the built-in first.
    const ENGINES: &'static [&'static str];
    /// The choice named `engine`, from the rest of its map (`engine` removed); `None`: the side
    /// has no engine of that name.
    fn read(engine: &str, rest: Flat) -> Option<Result<Self, ParamError>>;
    /// The engine's name and its parameters (every default filled in).
    fn write(&self) -> (&'static str, Flat);
    /// Range checks; errors name `<KEY>.<field>`.
    fn check_choice(&self, c: &Check<'_>) -> Result<(), LegError>;
}

/// `dense`: which engine answers the dense side.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum DenseEngine {
    /// The exact cosine scan ([`ExactDense`]).
    #[default]
    Exact,
    /// Qdrant's HNSW, in process ([`crate::engine::qdrant`]).
    Qdrant(QdrantSpec),
    /// A process speaking the JSON-lines protocol ([`crate::engine::external`]).
    External(ExternalSpec),
}

/// `lexical`: which engine answers the lexical side.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum LexicalEngine {
    /// The export's BM25 index ([`Bm25`]).
    #[default]
    Bm25,
    /// A process speaking the JSON-lines protocol ([`crate::engine::external`]).
    External(ExternalSpec),
}

/// A builtin takes no parameters: anything besides `engine` is a mistake, not a no-op.
fn no_params(engine: &'static str, rest: &Flat) -> Result<(), ParamError> {
    match rest.keys().next() {
        Some(k) => Err(ParamError::NoParams {
            engine,
            key: k.clone(),
        }),
        None => Ok(()),
    }
}

fn external(rest: Flat) -> Result<ExternalSpec, ParamError> {
    serde_json::from_value(Value::Object(rest)).map_err(|e| ParamError::InEngine {
        engine: "external",
        error: Box::new(e.into()),
    })
}

fn external_map(spec: &ExternalSpec) -> Flat {
    match serde_json::to_value(spec) {
        Ok(Value::Object(m)) => m,
        other => unreachable!("an external spec serialises to a map, got {other:?}"),
    }
}

impl EngineChoice for DenseEngine {
    const KEY: &'static str = "dense";
    const ENGINES: &'static [&'static str] = &["exact", "qdrant", "external"];
    fn read(engine: &str, rest: Flat) -> Option<Result<Self, ParamError>> {
        Some(match engine {
            "exact" => no_params("exact", &rest).map(|()| DenseEngine::Exact),
            "qdrant" => QdrantSpec::read(rest).map(DenseEngine::Qdrant),
            "external" => external(rest).map(DenseEngine::External),
            _ => return None,
        })
    }
    fn write(&self) -> (&'static str, Flat) {
        match self {
            DenseEngine::Exact => ("exact", Flat::new()),
            DenseEngine::Qdrant(s) => ("qdrant", s.write()),
            DenseEngine::External(s) => ("external", external_map(s)),
        }
    }
    fn check_choice(&self, c: &Check<'_>) -> Result<(), LegError> {
        match self {
            DenseEngine::Exact => Ok(()),
            DenseEngine::Qdrant(s) => s.check(c, Self::KEY),
            DenseEngine::External(s) => s.check(c, Self::KEY),
        }
    }
}

impl EngineChoice for LexicalEngine {
    const KEY: &'static str = "lexical";
    const ENGINES: &'static [&'static str] = &["bm25", "external"];
    fn read(engine: &str, rest: Flat) -> Option<Result<Self, ParamError>> {
        Some(match engine {
            "bm25" => no_params("bm25", &rest).map(|()| LexicalEngine::Bm25),
            "external" => external(rest).map(LexicalEngine::External),
            _ => return None,
        })
    }
    fn write(&self) -> (&'static str, Flat) {
        match self {
            LexicalEngine::Bm25 => ("bm25", Flat::new()),
            LexicalEngine::External(s) => ("external", external_map(s)),
        }
    }
    fn check_choice(&self, c: &Check<'_>) -> Result<(), LegError> {
        match self {
            LexicalEngine::Bm25 => Ok(()),
            LexicalEngine::External(s) => s.check(c, Self::KEY),
        }
    }
}

impl DenseEngine {
    /// The engine over `vectors` of `export` (starts the process of an external engine).
    pub fn build(
        &self,
        export: &Arc<Export>,
        vectors: Vectors,
    ) -> Result<Box<dyn Engine>, LegError> {
        Ok(match self {
            DenseEngine::Exact => Box::new(ExactDense::new(export.clone(), vectors)?),
            #[cfg(feature = "qdrant")]
            DenseEngine::Qdrant(spec) => Box::new(crate::engine::QdrantDense::new(
                export.clone(),
                vectors,
                spec,
            )?),
            #[cfg(not(feature = "qdrant"))]
            DenseEngine::Qdrant(_) => return Err(crate::engine::qdrant::not_built()),
            DenseEngine::External(spec) => {
                vectors.available_in(export)?;
                Box::new(ExternalEngine::start(export, Side::Dense(vectors), spec)?)
            }
        })
    }
}

impl LexicalEngine {
    /// The engine over `export` (starts the process of an external engine).
    pub fn build(&self, export: &Arc<Export>) -> Result<Box<dyn Engine>, LegError> {
        Ok(match self {
            LexicalEngine::Bm25 => Box::new(Bm25::new(export.clone())),
            LexicalEngine::External(spec) => {
                Box::new(ExternalEngine::start(export, Side::Lexical, spec)?)
            }
        })
    }
}

/// Reads side `E` from its key of `map` (absent: the built-in engine).
fn take_choice<E: EngineChoice>(map: &Flat) -> Result<E, ParamError> {
    let err = |e: ParamError| ParamError::param(E::KEY, e);
    let Some(value) = map.get(E::KEY) else {
        return Ok(E::default());
    };
    let Value::Object(group) = value else {
        return Err(err(ParamError::NotAGroup {
            default: E::ENGINES[0],
            got: value.clone(),
        }));
    };
    let mut rest = group.clone();
    let engine = match rest.remove("engine") {
        Some(Value::String(e)) => e,
        Some(other) => return Err(err(ParamError::EngineNotString { got: other })),
        None => {
            return Err(err(ParamError::MissingEngine {
                known: E::ENGINES.to_vec(),
            }))
        }
    };
    match E::read(&engine, rest) {
        Some(read) => read.map_err(err),
        None => Err(err(ParamError::UnknownEngine {
            engine,
            known: E::ENGINES.to_vec(),
        })),
    }
}

/// Writes side `E` under its key, unless it is the default (see the module docs).
fn put_choice<E: EngineChoice>(choice: &E, map: &mut Flat) {
    if *choice == E::default() {
        return;
    }
    let (engine, mut group) = choice.write();
    group.insert("engine".into(), Value::String(engine.into()));
    map.insert(E::KEY.into(), Value::Object(group));
}

/// Registers engine choices as parameter groups of one nested key each.
macro_rules! engine_params {
    ($($ty:ty),+ $(,)?) => {$(
        impl $crate::params::Params for $ty {
            fn keys(out: &mut Vec<&'static str>) {
                out.push(<$ty as EngineChoice>::KEY);
            }
            fn take(map: &Flat) -> Result<Self, ParamError> {
                take_choice(map)
            }
            fn put(&self, map: &mut Flat) {
                put_choice(self, map)
            }
            fn check(&self, c: &Check<'_>) -> Result<(), LegError> {
                self.check_choice(c)
            }
        }
    )+};
}

engine_params!(DenseEngine, LexicalEngine);

flat_params! {
    /// The hybrid first stage's parameters: `pool_k` from each engine, fused with `rrf_k`, and
    /// which engine answers each side.
    pub struct FirstStage {
        /// Candidates from each engine.
        pub pool: Pool,
        /// The fusion constant.
        pub rrf: Rrf,
        /// The dense side's engine.
        pub dense: DenseEngine,
        /// The lexical side's engine.
        pub lexical: LexicalEngine,
    }
}

impl FirstStage {
    /// The hybrid base over `export`, with the configured engines (an external one is started
    /// here, once per leg build).
    pub fn hybrid(&self, export: &Arc<Export>) -> Result<Hybrid, LegError> {
        Ok(Hybrid {
            dense: self.dense.build(export, Vectors::Full)?,
            lexical: self.lexical.build(export)?,
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
    fn retrieve(&self, q: &QueryInput<'_>) -> Result<Retrieval, LegError> {
        Ok(Retrieval {
            ranked: self.engine.search(q, self.pool_k)?,
            ..Default::default()
        })
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
    /// The fused, unit-scaled base, plus the two first-stage lists (an error when an engine
    /// could not answer).
    pub fn base(&self, q: &QueryInput<'_>) -> Result<Base, LegError> {
        let dense = self.dense.search(q, self.pool_k)?;
        let bm25 = self.lexical.search(q, self.pool_k)?;
        let fused = unit_scaled(rrf(&[&dense, &bm25], self.rrf_k, None));
        Ok(Base { fused, dense, bm25 })
    }
}

impl Ranker for Hybrid {
    fn retrieve(&self, q: &QueryInput<'_>) -> Result<Retrieval, LegError> {
        let b = self.base(q)?;
        let mut r = Retrieval {
            ranked: b.fused,
            ..Default::default()
        };
        r.diagnostics
            .insert("pool_dense".into(), b.dense.len() as f64);
        r.diagnostics
            .insert("pool_bm25".into(), b.bm25.len() as f64);
        Ok(r)
    }
}

#[cfg(test)]
mod tests {
    use crate::kinds::{dense::Dense, graph_rescue::GraphRescue, lexical::Lexical};
    use crate::registry::LegSpec;

    use super::*;

    fn parse(s: &str) -> Result<LegSpec, String> {
        serde_json::from_str(s).map_err(|e| e.to_string())
    }

    #[test]
    fn a_side_at_its_builtin_engine_is_left_out_of_the_resolved_parameters() {
        for (explicit, plain) in [
            (
                r#"{"kind":"lexical","lexical":{"engine":"bm25"}}"#,
                r#"{"kind":"lexical"}"#,
            ),
            (
                r#"{"kind":"dense","dense":{"engine":"exact"}}"#,
                r#"{"kind":"dense"}"#,
            ),
            (
                r#"{"kind":"bm25","dense":{"engine":"exact"},"lexical":{"engine":"bm25"}}"#,
                r#"{"kind":"bm25"}"#,
            ),
        ] {
            let a = parse(explicit).unwrap();
            assert_eq!(a, parse(plain).unwrap());
            // so it prints, and hashes into a cell key, exactly as before engines were a choice
            let printed = serde_json::to_string(&a).unwrap();
            assert!(!printed.contains("engine"), "{printed}");
        }
        assert_eq!(
            serde_json::to_string(&parse(r#"{"kind":"lexical"}"#).unwrap()).unwrap(),
            r#"{"kind":"lexical","pool_k":100}"#
        );
    }

    #[test]
    fn an_external_side_resolves_with_its_defaults_and_reads_back() {
        let s = parse(
            r#"{"kind":"graph_rescue","lexical":{"engine":"external","command":["python3","b.py"]}}"#,
        )
        .unwrap();
        let g = s.config::<GraphRescue>().unwrap();
        assert_eq!(g.rescue.first.dense, DenseEngine::Exact);
        let LexicalEngine::External(spec) = &g.rescue.first.lexical else {
            panic!("{g:?}")
        };
        assert_eq!(
            (spec.timeout_ms, spec.startup_timeout_ms),
            (10_000, 600_000)
        );
        let params = s.params();
        assert_eq!(params.len(), 31, "graph_rescue's 30 and the lexical group");
        assert_eq!(
            serde_json::to_string(&params["lexical"]).unwrap(),
            r#"{"command":["python3","b.py"],"engine":"external","startup_timeout_ms":600000,"timeout_ms":10000}"#
        );
        assert_eq!(parse(&serde_json::to_string(&s).unwrap()).unwrap(), s);
        s.validate("g").unwrap();
        let d = parse(
            r#"{"kind":"dense","dense":{"engine":"external","command":["x"],"timeout_ms":5}}"#,
        )
        .unwrap();
        assert!(matches!(
            &d.config::<Dense>().unwrap().dense,
            DenseEngine::External(ExternalSpec { timeout_ms: 5, .. })
        ));
    }

    #[test]
    fn bad_engine_groups_are_errors_naming_the_side_and_the_field() {
        let cases = [
            (
                r#"{"kind":"lexical","lexical":{"engine":"tantivy"}}"#,
                "parameter `lexical`: unknown engine `tantivy` (known: bm25, external)",
            ),
            (
                r#"{"kind":"dense","dense":{"engine":"bm25"}}"#,
                "parameter `dense`: unknown engine `bm25` (known: exact, qdrant, external)",
            ),
            (
                r#"{"kind":"lexical","lexical":{"command":["x"]}}"#,
                "parameter `lexical`: missing `engine` (one of: bm25, external)",
            ),
            (
                r#"{"kind":"lexical","lexical":"external"}"#,
                "parameter `lexical`: must be a map like {engine: bm25}",
            ),
            (
                r#"{"kind":"lexical","lexical":{"engine":7}}"#,
                "parameter `lexical`: `engine` must be a string",
            ),
            (
                r#"{"kind":"lexical","lexical":{"engine":"bm25","command":["x"]}}"#,
                "parameter `lexical`: engine `bm25` takes no parameters, got `command`",
            ),
            (
                r#"{"kind":"lexical","lexical":{"engine":"external"}}"#,
                "parameter `lexical`: engine `external`: missing field `command`",
            ),
            (
                r#"{"kind":"lexical","lexical":{"engine":"external","command":["x"],"timeout":5}}"#,
                "parameter `lexical`: engine `external`: unknown field `timeout`",
            ),
            (
                r#"{"kind":"lexical","dense":{"engine":"exact"}}"#,
                "unknown parameter `dense` (known: lexical, pool_k)",
            ),
            (
                r#"{"kind":"dense","lexical":{"engine":"bm25"}}"#,
                "unknown parameter `lexical` (known: dense, pool_k)",
            ),
        ];
        for (spec, want) in cases {
            let e = parse(spec).unwrap_err();
            assert!(e.contains(want), "{spec}: {e}");
        }
        let invalid = |spec: &str, field: &str| match parse(spec).unwrap().validate("leg") {
            Err(LegError::Config { leg, field: f, .. }) => {
                assert_eq!((leg.as_str(), f.as_str()), ("leg", field), "{spec}")
            }
            other => panic!("{spec}: {other:?}"),
        };
        invalid(
            r#"{"kind":"lexical","lexical":{"engine":"external","command":[]}}"#,
            "lexical.command",
        );
        invalid(
            r#"{"kind":"bm25","dense":{"engine":"external","command":[" "]}}"#,
            "dense.command",
        );
        invalid(
            r#"{"kind":"lexical","lexical":{"engine":"external","command":["x"],"timeout_ms":0}}"#,
            "lexical.timeout_ms",
        );
        invalid(
            r#"{"kind":"rescue_oracle","rescue":{"dense":{"engine":"external","command":["x"],"startup_timeout_ms":0}}}"#,
            "dense.startup_timeout_ms",
        );
    }

    #[test]
    fn every_first_stage_kind_takes_both_sides_and_the_single_engine_kinds_their_own() {
        for k in crate::kinds::KINDS {
            let keys = k.keys();
            let (dense, lexical) = (keys.contains(&"dense"), keys.contains(&"lexical"));
            match k.name {
                "dense" | "dense_content_only" => assert!(dense && !lexical, "{}", k.name),
                "lexical" => assert!(lexical && !dense, "{}", k.name),
                // CDR and CDGR score every chunk's relevance: they have no top-k first stage
                "cdr" | "cdgr" | "cdr_task" | "cdgr_task" => {
                    assert!(!dense && !lexical, "{}", k.name)
                }
                // a run leg reads a system's ranking from a file: it has no engine at all
                "run" => assert!(!dense && !lexical, "{}", k.name),
                // BM25 over the bodies is built in process from the export: no engine to swap
                "lexical_content_only" => assert!(!dense && !lexical, "{}", k.name),
                // the kinds that nest a ranking take the sides inside it
                "rescue_oracle" | "base_oracle" | "graph_rescue_coe" | "graph_rescue_packed" => {
                    assert!(keys.contains(&"rescue"), "{}", k.name)
                }
                "packer" => assert!(keys.contains(&"ranking"), "{}", k.name),
                _ => assert!(dense && lexical, "{}", k.name),
            }
        }
        let l = parse(r#"{"kind":"lexical"}"#).unwrap();
        assert_eq!(l.config::<Lexical>().unwrap().lexical, LexicalEngine::Bm25);
    }

    #[test]
    fn the_hybrid_over_an_external_side_fails_a_query_with_the_engines_error() {
        let export = crate::rescue::fixtures::synthetic();
        let fake = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/fake_backend.py"
        );
        let spec = parse(&format!(
            r#"{{"kind":"bm25","lexical":{{"engine":"external","command":["python3","{fake}","die-after","1"]}}}}"#
        ))
        .unwrap();
        let leg = spec.build("g", export.clone()).unwrap();
        let q = |i| crate::QueryInput::from_export(&export, i);
        // the first request is answered (with nothing: the base is the dense side's alone)
        let r = leg.retrieve(&q(0)).unwrap();
        assert_eq!(r.diagnostics["pool_bm25"], 0.0);
        match leg.retrieve(&q(1)) {
            Err(LegError::Engine(e)) => {
                assert_eq!(e.query_id.as_deref(), Some(export.queries[1].id.as_str()));
                assert!(e.to_string().contains("die-after 1"), "{e}");
            }
            other => panic!("{other:?}"),
        }
    }
}
