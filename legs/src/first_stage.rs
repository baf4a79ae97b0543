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
//! `dense: {engine: NAME, ...}` and `lexical: {engine: NAME, ...}` are nested maps in the flat
//! leg map; the names and their groups are [`ENGINES`](crate::engine::ENGINES)'. The built-in
//! engine is the default, and a side left at its default is **omitted** from the resolved
//! parameters: `hopbench legs`, `--show-settings` and every cell key of a leg that does not
//! choose an engine are exactly what they were before engines could be chosen, so no cache is
//! invalidated by the option existing. A side that names another engine prints (and hashes) the
//! whole group with every default filled in. Another engine is one file `engine/<name>.rs` and
//! one line in that list; no side names it.

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use hopbench_datasets::export::Export;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::candidate::Candidate;
use crate::engine::{Engine, EngineConfig, EngineEntry, EngineKind, Side, SideKind, Vectors};
use crate::fuse::{rrf, unit_scaled};
use crate::leg::{LegError, QueryInput, Ranker, Retrieval};
use crate::params::{Check, Checked, Flat, ParamError, Params};
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

/// Which side a [`Choice`] is (a type, so each side's choice is its own parameter group).
pub trait SideKey: Send + Sync + 'static {
    /// The side.
    const SIDE: SideKind;
}

/// The dense side's key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DenseKey;
impl SideKey for DenseKey {
    const SIDE: SideKind = SideKind::Dense;
}

/// The lexical side's key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LexicalKey;
impl SideKey for LexicalKey {
    const SIDE: SideKind = SideKind::Lexical;
}

/// One side's engine, read from and written to its nested map `{engine: NAME, ...}` under the
/// side's key, through [`ENGINES`](crate::engine::ENGINES). The [`Default`] is the side's
/// built-in engine (its first in the list), which is left out of the resolved map.
pub struct Choice<S: SideKey> {
    config: Arc<dyn EngineConfig>,
    side: PhantomData<S>,
}

/// `dense`: which engine answers the dense side.
pub type DenseEngine = Choice<DenseKey>;
/// `lexical`: which engine answers the lexical side.
pub type LexicalEngine = Choice<LexicalKey>;

impl<S: SideKey> Choice<S> {
    /// The choice of the engine `config` is the group of.
    pub fn of(config: Arc<dyn EngineConfig>) -> Self {
        Choice {
            config,
            side: PhantomData,
        }
    }

    /// The engine's name.
    pub fn name(&self) -> &'static str {
        self.config.name()
    }

    /// The engine's group, if it is engine `E`.
    pub fn config<E: EngineKind>(&self) -> Option<&E> {
        self.config.as_any().downcast_ref::<E>()
    }

    /// The engine's group.
    pub fn engine(&self) -> &Arc<dyn EngineConfig> {
        &self.config
    }

    /// The engine and its parameters (every default filled in).
    fn write(&self) -> (&'static str, Flat) {
        (self.config.name(), self.config.params())
    }
}

impl<S: SideKey> Clone for Choice<S> {
    fn clone(&self) -> Self {
        Choice::of(self.config.clone())
    }
}

impl<S: SideKey> Default for Choice<S> {
    fn default() -> Self {
        let entry = EngineEntry::default_for(S::SIDE);
        Choice::of(
            entry
                .read(&Flat::new())
                .expect("a side's built-in engine reads from no parameters (checked by a test)"),
        )
    }
}

impl<S: SideKey> PartialEq for Choice<S> {
    fn eq(&self, other: &Self) -> bool {
        self.write() == other.write()
    }
}

impl<S: SideKey> fmt::Debug for Choice<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Choice")
            .field("side", &S::SIDE)
            .field("engine", &self.config)
            .finish()
    }
}

impl DenseEngine {
    /// The engine over `vectors` of `export` (starts the process of an external engine).
    pub fn build(
        &self,
        export: &Arc<Export>,
        vectors: Vectors,
    ) -> Result<Box<dyn Engine>, LegError> {
        self.config.build(export, Side::Dense(vectors))
    }
}

impl LexicalEngine {
    /// The engine over `export` (starts the process of an external engine).
    pub fn build(&self, export: &Arc<Export>) -> Result<Box<dyn Engine>, LegError> {
        self.config.build(export, Side::Lexical)
    }
}

/// `e`, the error of `entry` reading `rest`, naming the engine a key belongs to where `entry`
/// does not read that key and another engine of the side does (`hnsw_ef` under `engine: exact`).
fn with_owner<S: SideKey>(entry: &EngineEntry, rest: &Flat, e: ParamError) -> ParamError {
    if matches!(e, ParamError::NotBuilt { .. }) {
        return e;
    }
    for (key, value) in rest {
        if entry.reads_key(key, value) {
            continue;
        }
        let owners: Vec<&'static str> = crate::engine::ENGINES
            .iter()
            .filter(|o| o.serves(S::SIDE) && o.name != entry.name && o.reads_key(key, value))
            .map(|o| o.name)
            .collect();
        if !owners.is_empty() {
            return ParamError::KeyOfOtherEngine {
                key: key.clone(),
                owners,
                error: Box::new(e),
            };
        }
    }
    e
}

/// Reads side `S` from its key of `map` (absent: the built-in engine).
fn take_choice<S: SideKey>(map: &Flat) -> Result<Choice<S>, ParamError> {
    let key = S::SIDE.key();
    let err = |e: ParamError| ParamError::param(key, e);
    let Some(value) = map.get(key) else {
        return Ok(Choice::default());
    };
    let Value::Object(group) = value else {
        return Err(err(ParamError::NotAGroup {
            default: EngineEntry::default_for(S::SIDE).name,
            got: value.clone(),
        }));
    };
    let mut rest = group.clone();
    let engine = match rest.remove("engine") {
        Some(Value::String(e)) => e,
        Some(other) => return Err(err(ParamError::EngineNotString { got: other })),
        None => {
            return Err(err(ParamError::MissingEngine {
                known: EngineEntry::names(S::SIDE),
            }))
        }
    };
    match EngineEntry::named(S::SIDE, &engine) {
        Some(entry) => entry
            .read(&rest)
            .map(Choice::of)
            .map_err(|e| err(with_owner::<S>(entry, &rest, e))),
        None => Err(err(ParamError::UnknownEngine {
            engine,
            known: EngineEntry::names(S::SIDE),
        })),
    }
}

impl<S: SideKey> Params for Choice<S> {
    fn keys(out: &mut Vec<&'static str>) {
        out.push(S::SIDE.key());
    }
    fn take(map: &Flat) -> Result<Self, ParamError> {
        take_choice(map)
    }
    /// Writes the side under its key, unless it is the default (see the module docs).
    fn put(&self, map: &mut Flat) {
        if *self == Choice::default() {
            return;
        }
        let (engine, mut group) = self.write();
        group.insert("engine".into(), Value::String(engine.into()));
        map.insert(S::SIDE.key().into(), Value::Object(group));
    }
    fn check(&self, c: &Check<'_>) -> Result<(), LegError> {
        self.config.check(c, S::SIDE)
    }
}

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
    use crate::engine::ExternalSpec;
    use crate::kinds::{dense::Dense, graph_rescue::GraphRescue, lexical::Lexical};
    use crate::registry::LegSpec;

    use super::*;

    fn parse(s: &str) -> Result<LegSpec, String> {
        serde_json::from_str(s).map_err(|e| e.to_string())
    }

    #[test]
    fn a_key_of_another_engine_names_the_engine_it_belongs_to() {
        let e =
            parse(r#"{"kind": "dense", "dense": {"engine": "exact", "hnsw_ef": 0}}"#).unwrap_err();
        assert!(
            e.contains("takes no parameters")
                && e.contains("`hnsw_ef` is a key of engine `qdrant`: write `engine: qdrant`"),
            "{e}"
        );
        // a key no engine of the side reads gets no hint
        let e = parse(r#"{"kind": "dense", "dense": {"engine": "exact", "hnsw": 0}}"#).unwrap_err();
        assert!(
            e.contains("takes no parameters") && !e.contains("is a key of"),
            "{e}"
        );
        // the external engine's `command` under the HNSW engine points back to it
        let e = parse(r#"{"kind": "dense", "dense": {"engine": "qdrant", "command": ["x"]}}"#)
            .unwrap_err();
        if crate::engine::ENGINES
            .iter()
            .any(|e| e.name == "qdrant" && e.built.is_ok())
        {
            assert!(e.contains("is a key of engine `external`"), "{e}");
        }
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
        assert_eq!(g.rescue.first.dense, DenseEngine::default());
        assert_eq!(g.rescue.first.dense.name(), "exact");
        let Some(spec) = g.rescue.first.lexical.config::<ExternalSpec>() else {
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
            d.config::<Dense>().unwrap().dense.config::<ExternalSpec>(),
            Some(ExternalSpec { timeout_ms: 5, .. })
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
        let lexical = &l.config::<Lexical>().unwrap().lexical;
        assert_eq!(lexical, &LexicalEngine::default());
        assert!(lexical.config::<crate::engine::Bm25Spec>().is_some());
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
