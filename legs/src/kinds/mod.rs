//! The leg kinds of the matrix: one file per kind, one line in [`KINDS`].
//!
//! A kind is a parameter struct (flat in the campaign, grouped in the code: see
//! [`crate::params`]) that implements [`LegKind`]: its name, a one-line description, any
//! cross-field checks, and how it is built from the building blocks (engines, the hybrid, the
//! Expander, the gate, the lanes, the selectors, the conversation session). Kinds compose
//! blocks; blocks never know about kinds or the campaign.
//!
//! Adding a kind: write `kinds/<name>.rs` with the struct and its `impl LegKind`, then add one
//! line `name::Type,` to the list below. The registry ([`crate::registry::LegSpec`]) parses,
//! validates, prints and builds every kind through this list alone.

use std::any::Any;
use std::fmt::Debug;
use std::path::Path;
use std::sync::Arc;

use hopbench_datasets::export::{Export, Parts};

use crate::conversation::session::TextVectors;
use crate::engine::Vectors;
use crate::leg::{Leg, LegError};
use crate::params::{Check, Flat, ParamError, Params};

/// What a kind is built with.
pub struct Build<'a> {
    /// The leg's campaign name (for messages).
    pub leg: &'a str,
    /// The export it retrieves from.
    pub export: &'a Arc<Export>,
    /// Vectors of the texts [`LegKind::texts_to_embed`] listed (none for most kinds).
    pub vectors: Option<Arc<TextVectors>>,
}

/// What a kind's numbers are: a system, a bound that reads the gold, or an ablation of a
/// system. Reports mark and set apart the non-systems by this alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// A retrieval strategy one could deploy.
    System,
    /// A bound derived from the gold: what is possible, not a system.
    Oracle,
    /// A system with one input taken away, to measure what that input is worth.
    Ablation,
}

/// A leg kind: a parameter struct that knows how to become a [`Leg`].
pub trait LegKind: Params + Debug + Clone + PartialEq + Send + Sync + 'static {
    /// The `kind:` name in the campaign.
    const NAME: &'static str;
    /// One line for `hopbench legs`.
    const ABOUT: &'static str;
    /// The fewest parameters the kind parses and validates with, as JSON: `{}` unless the kind
    /// has a parameter without a default (the registry's tests build every kind from this).
    const EXAMPLE: &'static str = "{}";
    /// What the kind's numbers are ([`Role`]).
    const ROLE: Role = Role::System;
    /// The vector set its dense side searches.
    const DENSE_VECTORS: Vectors = Vectors::Full;
    /// Whether its legs read vectors at all (a dense side, a relevance by cosine): a leg can
    /// name the model they are of (`model:`) only then.
    const READS_VECTORS: bool = true;
    /// Whether its legs rank a base a rerank stage can rescore (`rerank:`): false for the
    /// kinds that select facts rather than rank (CDR, CDGR and the assemblers over them).
    const RANKED_BASE: bool = true;

    /// Checks across groups (each group's own ranges are checked by [`Params::check`] first).
    fn check_kind(&self, _c: &Check<'_>) -> Result<(), LegError> {
        Ok(())
    }

    /// Builds the leg (the parameters are already checked).
    fn build(&self, b: &Build<'_>) -> Result<Box<dyn Leg>, LegError>;

    /// Texts this kind needs vectors for besides the prepared query vectors (the conversation
    /// kinds); the harness embeds them and passes them in [`Build::vectors`].
    fn texts_to_embed(&self, _export: &Export) -> Vec<String> {
        Vec::new()
    }

    /// Whether the kind reads each query's conversation from its own export (so it cannot time
    /// another export's queries).
    fn reads_conversation(&self) -> bool {
        false
    }

    /// Whether the built leg has a default token budget ([`Leg::default_budget`]), which is
    /// what gives a cell a budget curve. Declared by the kind so the harness can check a cached
    /// cell's curve without building the leg (opening its engines); the kinds' tests check it
    /// against the built leg.
    fn has_budget(&self) -> bool {
        false
    }

    /// The optional export parts the kind's legs read ([`hopbench_datasets::export::Part`]): prepare builds only the
    /// parts the selected legs declare, so a leg that read an undeclared one would find it
    /// missing. The kinds' tests build every kind over an export with only the parts it
    /// declares.
    fn reads(&self) -> Parts {
        Parts::NONE
    }

    /// For a kind that reads a file besides the export (`run`): the parameters with its path
    /// made absolute (a relative one is relative to `base`, the campaign file's directory) and
    /// the file's content hash written in, so the hash is part of the cell key and an edited
    /// file recomputes the cell. `None`: the kind reads no file (every other kind). Errors name
    /// leg `leg`.
    fn pin_inputs(&self, _leg: &str, _base: &Path) -> Result<Option<Self>, LegError> {
        Ok(None)
    }
}

/// A kind's parameters behind a pointer: what the registry holds for each campaign leg.
pub trait LegConfig: Debug + Send + Sync {
    /// The kind's name.
    fn kind(&self) -> &'static str;
    /// Every parameter, resolved, flat.
    fn params(&self) -> Flat;
    /// Range and cross-field checks; errors name leg `leg` and the field.
    fn validate(&self, leg: &str) -> Result<(), LegError>;
    /// Builds the leg (call [`Self::validate`] first).
    fn build(&self, b: &Build<'_>) -> Result<Box<dyn Leg>, LegError>;
    /// See [`LegKind::texts_to_embed`].
    fn texts_to_embed(&self, export: &Export) -> Vec<String>;
    /// See [`LegKind::reads_conversation`].
    fn reads_conversation(&self) -> bool;
    /// See [`LegKind::has_budget`].
    fn has_budget(&self) -> bool;
    /// See [`LegKind::reads`].
    fn reads(&self) -> Parts;
    /// See [`LegKind::pin_inputs`].
    fn pin_inputs(&self, leg: &str, base: &Path) -> Result<Option<Arc<dyn LegConfig>>, LegError>;
    /// See [`LegKind::ROLE`].
    fn role(&self) -> Role;
    /// See [`LegKind::DENSE_VECTORS`].
    fn dense_vectors(&self) -> Vectors;
    /// See [`LegKind::READS_VECTORS`].
    fn reads_vectors(&self) -> bool;
    /// See [`LegKind::RANKED_BASE`].
    fn ranked_base(&self) -> bool;
    /// The concrete kind struct, for callers that need one kind's parameters.
    fn as_any(&self) -> &dyn Any;
}

impl<K: LegKind> LegConfig for K {
    fn kind(&self) -> &'static str {
        K::NAME
    }
    fn params(&self) -> Flat {
        self.to_flat()
    }
    fn validate(&self, leg: &str) -> Result<(), LegError> {
        let c = Check(leg);
        Params::check(self, &c)?;
        self.check_kind(&c)
    }
    fn build(&self, b: &Build<'_>) -> Result<Box<dyn Leg>, LegError> {
        LegKind::build(self, b)
    }
    fn texts_to_embed(&self, export: &Export) -> Vec<String> {
        LegKind::texts_to_embed(self, export)
    }
    fn reads_conversation(&self) -> bool {
        LegKind::reads_conversation(self)
    }
    fn has_budget(&self) -> bool {
        LegKind::has_budget(self)
    }
    fn reads(&self) -> Parts {
        LegKind::reads(self)
    }
    fn pin_inputs(&self, leg: &str, base: &Path) -> Result<Option<Arc<dyn LegConfig>>, LegError> {
        Ok(LegKind::pin_inputs(self, leg, base)?.map(|k| Arc::new(k) as Arc<dyn LegConfig>))
    }
    fn role(&self) -> Role {
        K::ROLE
    }
    fn dense_vectors(&self) -> Vectors {
        K::DENSE_VECTORS
    }
    fn reads_vectors(&self) -> bool {
        K::READS_VECTORS
    }
    fn ranked_base(&self) -> bool {
        K::RANKED_BASE
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// One entry of [`KINDS`].
pub struct Kind {
    /// The `kind:` name.
    pub name: &'static str,
    /// One line for `hopbench legs`.
    pub about: &'static str,
    /// [`LegKind::EXAMPLE`].
    pub example: &'static str,
    /// [`LegKind::ROLE`].
    pub role: Role,
    parse: fn(&Flat) -> Result<Arc<dyn LegConfig>, ParamError>,
    keys: fn() -> Vec<&'static str>,
}

impl Kind {
    /// The entry of kind `K`.
    pub const fn of<K: LegKind>() -> Kind {
        Kind {
            name: K::NAME,
            about: K::ABOUT,
            example: K::EXAMPLE,
            role: K::ROLE,
            parse: parse_as::<K>,
            keys: keys_of::<K>,
        }
    }

    /// Reads the kind's parameters from a flat map (without `kind`); unknown keys are errors.
    pub fn parse(&self, params: &Flat) -> Result<Arc<dyn LegConfig>, ParamError> {
        (self.parse)(params)
    }

    /// Every flat key the kind reads, in group order.
    pub fn keys(&self) -> Vec<&'static str> {
        (self.keys)()
    }

    /// The kind named `name`.
    pub fn named(name: &str) -> Option<&'static Kind> {
        KINDS.iter().find(|k| k.name == name)
    }
}

fn parse_as<K: LegKind>(params: &Flat) -> Result<Arc<dyn LegConfig>, ParamError> {
    Ok(Arc::new(K::from_flat(params)?))
}

fn keys_of<K: LegKind>() -> Vec<&'static str> {
    let mut out = Vec::new();
    K::keys(&mut out);
    out
}

/// The `LegKind` impl of a conversation kind: a session over its `first` stage in the mode its
/// `mode()` gives, embedding the texts that mode looks up.
macro_rules! conversation_kind {
    ($ty:ty, $name:literal, $about:literal) => {
        impl $crate::kinds::LegKind for $ty {
            const NAME: &'static str = $name;
            const ABOUT: &'static str = $about;

            fn build(
                &self,
                b: &$crate::kinds::Build<'_>,
            ) -> Result<Box<dyn $crate::leg::Leg>, $crate::leg::LegError> {
                $crate::conversation::session::ConvLeg::leg(
                    b.export,
                    self.mode(),
                    &self.first,
                    b.vectors.clone(),
                )
            }

            fn texts_to_embed(&self, export: &hopbench_datasets::export::Export) -> Vec<String> {
                $crate::conversation::session::texts_to_embed(export, &self.mode())
            }

            fn reads_conversation(&self) -> bool {
                true
            }
        }
    };
}
pub(crate) use conversation_kind;

macro_rules! kinds {
    ($($module:ident :: $ty:ident),* $(,)?) => {
        $(pub mod $module;)*
        /// Every leg kind, in the order `hopbench legs` lists them.
        pub const KINDS: &[Kind] = &[$(Kind::of::<$module::$ty>()),*];
    };
}

kinds! {
    dense::Dense,
    dense_content_only::DenseContentOnly,
    lexical::Lexical,
    lexical_content_only::LexicalContentOnly,
    bm25::Bm25,
    kg::Kg,
    hyperedges::Hyperedges,
    graph_rescue::GraphRescue,
    packer::Packer,
    graph_rescue_packed::GraphRescuePacked,
    graph_rescue_coe::GraphRescueCoe,
    cdr::Cdr,
    cdgr::Cdgr,
    cdr_task::CdrTask,
    cdgr_task::CdgrTask,
    conv_last_turn::ConvLastTurn,
    conv_full_history::ConvFullHistory,
    conv_cdr::ConvCdr,
    multi_horizon::MultiHorizon,
    rescue_oracle::RescueOracle,
    base_oracle::BaseOracle,
    run::Run,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_no_kind_reads_a_key_twice() {
        let mut names: Vec<&str> = KINDS.iter().map(|k| k.name).collect();
        names.sort_unstable();
        let n = names.len();
        names.dedup();
        assert_eq!(names.len(), n, "duplicate kind names");
        for k in KINDS {
            let mut keys = k.keys();
            let n = keys.len();
            keys.sort_unstable();
            keys.dedup();
            assert_eq!(keys.len(), n, "kind `{}` reads a key twice", k.name);
            assert!(!keys.contains(&"kind"), "`kind` is the registry's key");
        }
    }

    #[test]
    fn a_kind_says_whether_its_legs_have_a_budget_without_building_one() {
        let export = crate::rescue::fixtures::synthetic();
        let mut built = Vec::new();
        for k in KINDS {
            let mut flat: Flat = serde_json::from_str(k.example).unwrap();
            flat.insert("kind".into(), k.name.into());
            let spec = crate::registry::LegSpec::from_flat(flat).unwrap();
            // the conversation kinds need text vectors and `run` a file: not built here
            let Ok(leg) = spec.build(k.name, export.clone()) else {
                continue;
            };
            assert_eq!(
                leg.default_budget().is_some(),
                spec.has_budget(),
                "kind `{}`",
                k.name
            );
            built.push(k.name);
        }
        for k in [
            "packer",
            "graph_rescue_packed",
            "graph_rescue_coe",
            "cdgr",
            "cdr",
            "dense",
        ] {
            assert!(built.contains(&k), "{k} was not built: {built:?}");
        }
    }

    #[test]
    fn a_kind_reads_no_export_part_it_does_not_declare() {
        use hopbench_datasets::export::Part;
        let core = crate::rescue::fixtures::synthetic_core();
        assert!(!core.parts().has(Part::SimGraph));
        let full = crate::rescue::fixtures::synthetic();
        let mut declared = Vec::new();
        for k in KINDS {
            let mut flat: Flat = serde_json::from_str(k.example).unwrap();
            flat.insert("kind".into(), k.name.into());
            let spec = crate::registry::LegSpec::from_flat(flat).unwrap();
            // an export with exactly the parts the kind declares: a read of another fails
            let export = if spec.reads().is_empty() {
                &core
            } else {
                &full
            };
            if !spec.reads().is_empty() {
                declared.push(k.name);
            }
            let leg = match spec.build(k.name, export.clone()) {
                Ok(leg) => leg,
                // the conversation kinds need text vectors and `run` a file: not built here
                Err(crate::leg::LegError::MissingInputs(_)) => continue,
                Err(e) => panic!("kind `{}` over the parts it declares: {e}", k.name),
            };
            for q in 0..3 {
                let input = crate::leg::QueryInput::from_export(export, q);
                let r = leg.retrieve(&input);
                assert!(r.is_ok(), "kind `{}` query {q}: {:?}", k.name, r.err());
            }
        }
        assert_eq!(
            declared,
            ["cdgr", "cdgr_task"],
            "the kinds that walk the graph"
        );
        // with graph retrieval off by policy, CDGR is CDR and reads no graph
        let mut flat: Flat = serde_json::from_str(r#"{"policy": "graph-retrieval=off"}"#).unwrap();
        flat.insert("kind".into(), "cdgr".into());
        let off = crate::registry::LegSpec::from_flat(flat).unwrap();
        assert!(off.reads().is_empty());
        let leg = off.build("cdgr", core.clone()).unwrap();
        leg.retrieve(&crate::leg::QueryInput::from_export(&core, 0))
            .unwrap();
    }

    #[test]
    fn every_kind_parses_its_defaults_validates_and_round_trips() {
        for k in KINDS {
            let example: Flat = serde_json::from_str(k.example).unwrap();
            let c = k.parse(&example).unwrap();
            assert_eq!(c.kind(), k.name);
            c.validate(k.name).unwrap();
            let again = k.parse(&c.params()).unwrap();
            assert_eq!(again.params(), c.params(), "{}", k.name);
        }
    }
}
