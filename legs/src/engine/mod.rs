//! First-stage engines: where candidates come from.
//!
//! An [`Engine`] answers "the top `k` chunks for this query, with scores" and nothing else, so a
//! leg that composes a first stage (the hybrid, graph rescue, the packers, the conversation
//! legs) does not care what answers: the exact dense scan ([`exact`]) and the BM25 index
//! ([`bm25`]) are built in, Qdrant's HNSW in process ([`qdrant`], with the `qdrant` feature) can
//! answer the dense side, and a process outside ([`external`]) can stand in for either side
//! without any leg changing (grep-searcher drives any `Matcher` the same way). Which engine
//! answers each side is a parameter group of the first stage
//! ([`crate::first_stage::DenseSide`], [`crate::first_stage::LexicalSide`]).
//!
//! The contract every engine keeps: at most `k` candidates, in
//! [`rank_order`](crate::candidate::rank_order) (score descending, ties on ascending chunk index),
//! a deterministic function of the query and the engine's state. The built-in engines cannot
//! fail; an engine outside the process can, and says why ([`EngineError`]): the leg's
//! `retrieve` passes that on and the harness records the cell as `error`.

use std::any::Any;
use std::collections::BTreeMap;
use std::fmt::Debug;
use std::path::Path;
use std::sync::Arc;

use hopbench_datasets::export::{Export, Manifest};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use crate::candidate::Candidate;
use crate::leg::{LegError, QueryInput};
use crate::params::{Check, Flat, ParamError};

pub mod error;

/// Declares the engine modules and lists them in [`ENGINES`].
macro_rules! engines {
    ($($module:ident :: $ty:ident),* $(,)?) => {
        $(pub mod $module;)*
        /// Every engine a campaign can name, in the order messages list them; a side's first is
        /// its built-in default.
        pub const ENGINES: &[EngineEntry] = &[$(EngineEntry::of::<$module::$ty>()),*];
    };
}

engines! {
    exact::Exact,
    bm25::Bm25Spec,
    qdrant::QdrantSpec,
    external::ExternalSpec,
}

pub use bm25::{Bm25, Bm25Spec};
pub use error::{Carried, EngineError, Failure, ShardFailure};
pub use exact::{Exact, ExactDense, Vectors};
pub use external::{ExternalEngine, ExternalSpec};
pub use qdrant::{QdrantDense, QdrantSpec};

/// Which side an engine group sits under (`dense: {engine: ..}`, `lexical: {engine: ..}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SideKind {
    /// The dense side (query vectors against chunk vectors).
    Dense,
    /// The lexical side (query text against the chunks' text).
    Lexical,
}

impl SideKind {
    /// Both sides.
    pub const ALL: [SideKind; 2] = [SideKind::Dense, SideKind::Lexical];

    /// The side's key in a leg map, and its name in an engine's environment.
    pub const fn key(self) -> &'static str {
        match self {
            SideKind::Dense => "dense",
            SideKind::Lexical => "lexical",
        }
    }

    /// The side whose key is `key`.
    pub fn of_key(key: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.key() == key)
    }
}

/// The side an engine answers, with what it searches there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The dense side, over one of the export's vector sets (requests carry the query vector).
    Dense(Vectors),
    /// The lexical side (requests carry the text only).
    Lexical,
}

impl Side {
    /// Which side this is.
    pub fn kind(self) -> SideKind {
        match self {
            Side::Dense(_) => SideKind::Dense,
            Side::Lexical => SideKind::Lexical,
        }
    }

    /// The vector set of the dense side.
    pub fn vectors(self) -> Option<Vectors> {
        match self {
            Side::Dense(v) => Some(v),
            Side::Lexical => None,
        }
    }

    /// The error of asking `engine` to answer this side, which it does not serve (the registry
    /// reads an engine only on its sides, so this is a caller's mistake, named as such).
    pub fn refused(self, engine: &str) -> LegError {
        LegError::Config {
            leg: String::new(),
            field: self.kind().key().into(),
            message: format!("engine `{engine}` does not answer this side"),
        }
    }
}

/// What a cell key includes for a leg's engines besides their parameters: what they read that
/// the export's identity does not cover.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CacheInputs {
    /// blake3 of each file an engine reads besides the export, by the argument naming it.
    pub files: BTreeMap<String, String>,
    /// The identity of each index an engine built over the export, by its cache directory name.
    pub indexes: BTreeMap<String, String>,
}

/// The export an engine's cache inputs are about: its directory and manifest.
#[derive(Debug, Clone, Copy)]
pub struct ExportRef<'a> {
    /// The export's directory.
    pub dir: &'a Path,
    /// Its manifest.
    pub manifest: &'a Manifest,
    /// The model whose vectors a leg over it reads, where that is another model's part of
    /// the export ([`hopbench_datasets::export::ModelPart`]); `None` for the export's own.
    pub model: Option<&'a str>,
}

impl<'a> ExportRef<'a> {
    /// A loaded export (with the model its vectors are of).
    pub fn of(export: &'a Export) -> Self {
        ExportRef {
            dir: &export.dir,
            manifest: &export.manifest,
            model: export.model_part().map(|p| p.model_id()),
        }
    }

    /// What the caches built from its vectors are keyed by ([`Manifest::vectors_key`]).
    pub fn vectors_key(&self) -> String {
        self.manifest.vectors_key(self.model)
    }
}

/// A first-stage engine a campaign can name: its parameter group, read and written as the
/// `{engine: NAME, ...}` map of a side. One file `engine/<name>.rs` and one line in
/// [`ENGINES`] add one.
pub trait EngineKind: Debug + Clone + PartialEq + Send + Sync + 'static {
    /// The `engine:` value.
    const NAME: &'static str;
    /// The sides it can answer.
    const SIDES: &'static [SideKind];
    /// Its name in report prose.
    const TITLE: &'static str = Self::NAME;
    /// `Err(how to get it)` when this build of hopbench lacks the engine: reading its group
    /// then fails with that message.
    const BUILT: Result<(), &'static str> = Ok(());

    /// The group's map without `engine`, every default filled in.
    fn read(rest: &Flat) -> Result<Self, ParamError>;
    /// The group's map without `engine`, every default written.
    fn write(&self) -> Flat;
    /// Range checks; errors name `<side>.<field>`.
    fn check(&self, _c: &Check<'_>, _side: SideKind) -> Result<(), LegError> {
        Ok(())
    }
    /// The engine answering `side` of `export` (starts a process, opens an index).
    fn build(&self, export: &Arc<Export>, side: Side) -> Result<Box<dyn Engine>, LegError>;
    /// Adds to `out` the files it reads and the indexes it builds on `side` (a cell key's
    /// inputs). `export` is `None` when the dataset has no export yet.
    fn cache_inputs(&self, _side: Side, _export: Option<ExportRef<'_>>, _out: &mut CacheInputs) {}
}

/// An engine's parameter group behind a pointer: what a side holds ([`EngineKind`] made
/// object-safe, implemented for every engine).
pub trait EngineConfig: Debug + Send + Sync {
    /// [`EngineKind::NAME`].
    fn name(&self) -> &'static str;
    /// [`EngineKind::write`].
    fn params(&self) -> Flat;
    /// [`EngineKind::check`].
    fn check(&self, c: &Check<'_>, side: SideKind) -> Result<(), LegError>;
    /// [`EngineKind::build`].
    fn build(&self, export: &Arc<Export>, side: Side) -> Result<Box<dyn Engine>, LegError>;
    /// [`EngineKind::cache_inputs`].
    fn cache_inputs(&self, side: Side, export: Option<ExportRef<'_>>, out: &mut CacheInputs);
    /// The concrete engine struct, for callers that need one engine's parameters.
    fn as_any(&self) -> &dyn Any;
}

impl<E: EngineKind> EngineConfig for E {
    fn name(&self) -> &'static str {
        E::NAME
    }
    fn params(&self) -> Flat {
        EngineKind::write(self)
    }
    fn check(&self, c: &Check<'_>, side: SideKind) -> Result<(), LegError> {
        EngineKind::check(self, c, side)
    }
    fn build(&self, export: &Arc<Export>, side: Side) -> Result<Box<dyn Engine>, LegError> {
        EngineKind::build(self, export, side)
    }
    fn cache_inputs(&self, side: Side, export: Option<ExportRef<'_>>, out: &mut CacheInputs) {
        EngineKind::cache_inputs(self, side, export, out)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// One engine of [`ENGINES`].
pub struct EngineEntry {
    /// [`EngineKind::NAME`].
    pub name: &'static str,
    /// [`EngineKind::TITLE`].
    pub title: &'static str,
    /// [`EngineKind::SIDES`].
    pub sides: &'static [SideKind],
    /// [`EngineKind::BUILT`].
    pub built: Result<(), &'static str>,
    parse: fn(&Flat) -> Result<Arc<dyn EngineConfig>, ParamError>,
}

impl EngineEntry {
    /// The entry of engine `E`.
    pub const fn of<E: EngineKind>() -> Self {
        EngineEntry {
            name: E::NAME,
            title: E::TITLE,
            sides: E::SIDES,
            built: E::BUILT,
            parse: parse_as::<E>,
        }
    }

    /// Reads the engine's group (without `engine`); an engine this build lacks says how to
    /// get it before anything else.
    pub fn read(&self, rest: &Flat) -> Result<Arc<dyn EngineConfig>, ParamError> {
        if let Err(how) = self.built {
            return Err(ParamError::NotBuilt {
                engine: self.name,
                how,
            });
        }
        (self.parse)(rest)
    }

    /// Whether its group reads `key` (set to `value`, every other key at its default), whether
    /// or not this build has the engine: to tell a user which engine a misplaced key belongs to.
    pub fn reads_key(&self, key: &str, value: &Value) -> bool {
        let mut group = Flat::new();
        group.insert(key.to_string(), value.clone());
        (self.parse)(&group).is_ok()
    }

    /// Whether it can answer `side`.
    pub fn serves(&self, side: SideKind) -> bool {
        self.sides.contains(&side)
    }

    /// The engine named `name` that answers `side`.
    pub fn named(side: SideKind, name: &str) -> Option<&'static EngineEntry> {
        ENGINES.iter().find(|e| e.name == name && e.serves(side))
    }

    /// The engines answering `side`, in [`ENGINES`] order.
    pub fn names(side: SideKind) -> Vec<&'static str> {
        ENGINES
            .iter()
            .filter(|e| e.serves(side))
            .map(|e| e.name)
            .collect()
    }

    /// The side's built-in engine: its first in [`ENGINES`].
    pub fn default_for(side: SideKind) -> &'static EngineEntry {
        ENGINES
            .iter()
            .find(|e| e.serves(side))
            .expect("ENGINES lists an engine for each side (checked by a test)")
    }
}

fn parse_as<E: EngineKind>(rest: &Flat) -> Result<Arc<dyn EngineConfig>, ParamError> {
    Ok(Arc::new(E::read(rest)?))
}

/// [`EngineKind::read`] for a built-in engine that takes no parameters: anything besides
/// `engine` is a mistake, not a no-op.
pub fn no_params(engine: &'static str, rest: &Flat) -> Result<(), ParamError> {
    match rest.keys().next() {
        Some(k) => Err(ParamError::NoParams {
            engine,
            key: k.clone(),
        }),
        None => Ok(()),
    }
}

/// [`EngineKind::read`] through serde (the struct refuses unknown keys itself).
pub fn read_group<T: DeserializeOwned>(engine: &'static str, rest: &Flat) -> Result<T, ParamError> {
    serde_json::from_value(Value::Object(rest.clone())).map_err(|e| ParamError::InEngine {
        engine,
        error: Box::new(e.into()),
    })
}

/// [`EngineKind::write`] through serde.
pub fn group_of<T: Serialize + Debug>(spec: &T) -> Flat {
    match serde_json::to_value(spec) {
        Ok(Value::Object(m)) => m,
        other => unreachable!("an engine group serialises to a map, got {other:?} for {spec:?}"),
    }
}

/// A source of first-stage candidates.
pub trait Engine: Send + Sync {
    /// The engine's name as recorded in diagnostics and errors (`exact`, `qdrant`, `bm25`,
    /// `external`).
    fn name(&self) -> &'static str;

    /// The top `k` chunks for `query`, in rank order, or why the engine could not answer.
    fn search(&self, query: &QueryInput<'_>, k: usize) -> Result<Vec<Candidate>, EngineError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_engine_list_is_well_formed() {
        let mut names: Vec<_> = ENGINES.iter().map(|e| e.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ENGINES.len(), "engine names are unique");
        for e in ENGINES {
            assert!(!e.sides.is_empty(), "{} answers a side", e.name);
        }
        for side in SideKind::ALL {
            assert_eq!(SideKind::of_key(side.key()), Some(side));
            let d = EngineEntry::default_for(side);
            assert_eq!(
                d.built,
                Ok(()),
                "{}: a side's default is always built",
                d.name
            );
            let config = d.read(&Flat::new()).unwrap();
            assert!(config.params().is_empty(), "{} takes no parameters", d.name);
        }
        // the order messages list a side's engines in
        assert_eq!(
            EngineEntry::names(SideKind::Dense),
            ["exact", "qdrant", "external"]
        );
        assert_eq!(EngineEntry::names(SideKind::Lexical), ["bm25", "external"]);
        assert!(EngineEntry::named(SideKind::Lexical, "exact").is_none());
        assert!(EngineEntry::named(SideKind::Dense, "external").is_some());
    }

    #[test]
    fn every_built_engine_reads_back_what_it_writes() {
        let example = |name: &str| match name {
            "external" => serde_json::json!({"command": ["x"]}),
            _ => serde_json::json!({}),
        };
        for e in ENGINES.iter().filter(|e| e.built.is_ok()) {
            let Value::Object(m) = example(e.name) else {
                unreachable!()
            };
            let a = e.read(&m).unwrap();
            let b = e.read(&a.params()).unwrap();
            assert_eq!(a.params(), b.params(), "{}", e.name);
            assert_eq!(a.name(), e.name);
        }
    }

    #[test]
    fn an_engine_asked_for_a_side_it_does_not_answer_says_so() {
        let export = crate::rescue::fixtures::synthetic();
        let e = EngineKind::build(&Exact, &export, Side::Lexical)
            .err()
            .unwrap();
        assert!(
            e.to_string().contains("engine `exact` does not answer"),
            "{e}"
        );
        let e = EngineKind::build(&Bm25Spec, &export, Side::Dense(Vectors::Full))
            .err()
            .unwrap();
        assert!(
            e.to_string().contains("engine `bm25` does not answer"),
            "{e}"
        );
    }
}
