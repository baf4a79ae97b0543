//! Leg parameters: flat in the campaign, grouped in the code.
//!
//! A campaign writes a leg's parameters flat (`{kind: graph_rescue, pool_k: 100, hop_weight:
//! 0.05, max_hops: 2}`), because that is how the seed's operating points are named and how a
//! user overrides one of them. The code wants them grouped: the first stage (`pool_k`, `rrf_k`),
//! the gate, each lane, the Expander are each one struct with one default and one validation
//! rule, shared by every leg kind that has them. This module is the bridge, written once:
//!
//! - a **leaf group** is an ordinary serde struct (`#[serde(default, deny_unknown_fields)]`)
//!   registered with [`leaf_params!`]; its keys are the struct's field names, read from serde's
//!   own derive, so they cannot drift from the struct;
//! - a **composite** ([`flat_params!`]) is a struct whose fields are groups; it reads each group
//!   from the same flat map, refuses keys no group claims, and writes the groups back into one
//!   flat map (so a resolved configuration prints and hashes as the campaign wrote it).
//!
//! Errors name the parameter: an unknown key lists the known ones, a value of the wrong type
//! names its key. Range checks go through [`Check`], which names the leg and the field.

use std::collections::BTreeSet;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::leg::LegError;

/// A flat parameter map as written in the campaign (without `kind`).
pub type Flat = Map<String, Value>;

/// A parameter that could not be read: unknown, or of the wrong type or shape. Each variant
/// displays as the message a campaign author reads, naming the kind, the key or the engine.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ParamError {
    /// A leg map without `kind`.
    #[error("missing `kind`")]
    MissingKind,
    /// `kind` is not a string.
    #[error("`kind` must be a string, got {got}")]
    KindNotString {
        /// The value written.
        got: Value,
    },
    /// A `kind` the registry does not list.
    #[error("unknown leg kind `{kind}` (known: {})", .known.join(", "))]
    UnknownKind {
        /// The name written.
        kind: String,
        /// Every kind's name.
        known: Vec<&'static str>,
    },
    /// `model` is not a non-empty string.
    #[error("`model` must be a model directory (a non-empty string), got {got}")]
    ModelNotString {
        /// The value written.
        got: Value,
    },
    /// `model` on a kind that reads no vectors.
    #[error("`model` names the model whose vectors a leg reads, and kind `{kind}` reads none")]
    ModelWithoutVectors {
        /// The kind.
        kind: &'static str,
    },
    /// The `rerank` group could not be read, or is out of range.
    #[error("`rerank`: {0}")]
    Rerank(String),
    /// `rerank` on a kind without a ranked base to rescore.
    #[error("`rerank` rescores a leg's ranked base, and kind `{kind}` {why}")]
    RerankWithoutBase {
        /// The kind.
        kind: &'static str,
        /// Why it has none.
        why: &'static str,
    },
    /// A parameter of kind `kind` could not be read.
    #[error("kind `{kind}`: {error}")]
    InKind {
        /// The kind.
        kind: String,
        /// Why.
        error: Box<ParamError>,
    },
    /// A key no group of the kind reads.
    #[error("unknown parameter `{key}` (known: {})", .known.join(", "))]
    UnknownKey {
        /// The key written.
        key: String,
        /// Every key the kind reads, sorted.
        known: Vec<&'static str>,
    },
    /// Parameter `key` could not be read.
    #[error("parameter `{key}`: {error}")]
    Param {
        /// The key.
        key: String,
        /// Why.
        error: Box<ParamError>,
    },
    /// A value serde could not read into its group.
    #[error("{0}")]
    Serde(Arc<serde_json::Error>),
    /// An engine side that is not a map.
    #[error("must be a map like {{engine: {default}}}, got {got}")]
    NotAGroup {
        /// The side's built-in engine.
        default: &'static str,
        /// The value written.
        got: Value,
    },
    /// `engine` is not a string.
    #[error("`engine` must be a string, got {got}")]
    EngineNotString {
        /// The value written.
        got: Value,
    },
    /// An engine group without `engine`.
    #[error("missing `engine` (one of: {})", .known.join(", "))]
    MissingEngine {
        /// The engines the side accepts.
        known: Vec<&'static str>,
    },
    /// An `engine` the side does not accept.
    #[error("unknown engine `{engine}` (known: {})", .known.join(", "))]
    UnknownEngine {
        /// The name written.
        engine: String,
        /// The engines the side accepts.
        known: Vec<&'static str>,
    },
    /// A parameter given to an engine that takes none.
    #[error("engine `{engine}` takes no parameters, got `{key}`")]
    NoParams {
        /// The engine.
        engine: &'static str,
        /// The first key given.
        key: String,
    },
    /// Engine `engine`'s group could not be read.
    #[error("engine `{engine}`: {error}")]
    InEngine {
        /// The engine.
        engine: &'static str,
        /// Why.
        error: Box<ParamError>,
    },
    /// A key the named engine does not read but another engine of the side does.
    #[error("{error} (`{key}` is a key of engine {}: write `engine: {}`)", .owners.iter().map(|o| format!("`{o}`")).collect::<Vec<_>>().join(" or "), .owners[0])]
    KeyOfOtherEngine {
        /// The key written.
        key: String,
        /// The engines of the side that read it.
        owners: Vec<&'static str>,
        /// The named engine's own error.
        error: Box<ParamError>,
    },
    /// An engine this build of hopbench lacks; `how` says how to get it.
    #[error("{how}")]
    NotBuilt {
        /// The engine.
        engine: &'static str,
        /// How to build it in.
        how: &'static str,
    },
}

impl ParamError {
    /// The engine this build lacks, when that is why the parameters could not be read (at any
    /// depth): a caller choosing among legs can leave such a leg out instead of failing.
    pub fn not_built(&self) -> Option<&'static str> {
        match self {
            ParamError::NotBuilt { engine, .. } => Some(engine),
            ParamError::InKind { error, .. }
            | ParamError::Param { error, .. }
            | ParamError::InEngine { error, .. } => error.not_built(),
            _ => None,
        }
    }

    /// `error` about parameter `key`.
    pub fn param(key: impl Into<String>, error: ParamError) -> Self {
        ParamError::Param {
            key: key.into(),
            error: Box::new(error),
        }
    }
}

impl From<serde_json::Error> for ParamError {
    fn from(e: serde_json::Error) -> Self {
        ParamError::Serde(Arc::new(e))
    }
}

/// A group of parameters that reads itself from, and writes itself into, a flat map.
pub trait Params: Sized {
    /// Appends the flat keys this group reads.
    fn keys(out: &mut Vec<&'static str>);
    /// Reads this group's keys from `map` (absent keys take their defaults; keys of other groups
    /// are left to them).
    fn take(map: &Flat) -> Result<Self, ParamError>;
    /// Writes every key of this group (defaults included) into `map`.
    fn put(&self, map: &mut Flat);
    /// Range checks; errors name leg `c.0` and the field.
    fn check(&self, c: &Check<'_>) -> Result<(), LegError>;

    /// Reads a whole flat map into this group, refusing any key no part of it reads.
    fn from_flat(map: &Flat) -> Result<Self, ParamError> {
        let mut known = Vec::new();
        Self::keys(&mut known);
        if let Some(unknown) = map.keys().find(|k| !known.contains(&k.as_str())) {
            let mut names = known.clone();
            names.sort_unstable();
            names.dedup();
            return Err(ParamError::UnknownKey {
                key: unknown.clone(),
                known: names,
            });
        }
        Self::take(map)
    }

    /// The flat map of every key of this group, sorted at every depth (whatever serde_json's
    /// map type: a dependency may switch it to insertion order).
    fn to_flat(&self) -> Flat {
        let mut map = Flat::new();
        self.put(&mut map);
        let mut v = serde_json::Value::Object(map);
        v.sort_all_objects();
        match v {
            serde_json::Value::Object(m) => m,
            _ => unreachable!("an object stays an object"),
        }
    }
}

/// The range checks of a leaf group (the composite's come from its members).
pub trait Checked {
    /// Range checks; errors name leg `c.0` and the field.
    fn check(&self, c: &Check<'_>) -> Result<(), LegError>;
}

/// The field names of a `#[derive(Deserialize)]` struct, as serde's derive declares them.
pub fn field_names<T: DeserializeOwned>() -> &'static [&'static str] {
    use serde::de::{self, Visitor};
    struct Probe(Option<&'static [&'static str]>);
    impl<'de> de::Deserializer<'de> for &mut Probe {
        type Error = de::value::Error;
        fn deserialize_any<V: Visitor<'de>>(self, _v: V) -> Result<V::Value, Self::Error> {
            Err(de::Error::custom("not a struct"))
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _name: &'static str,
            fields: &'static [&'static str],
            _v: V,
        ) -> Result<V::Value, Self::Error> {
            self.0 = Some(fields);
            Err(de::Error::custom("probed"))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
            byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map enum
            identifier ignored_any
        }
    }
    let mut probe = Probe(None);
    let _ = T::deserialize(&mut probe);
    probe
        .0
        .expect("a leaf parameter group is a struct with named fields")
}

/// [`Params::take`] for a leaf group: its own keys of `map`, deserialised. A value of the wrong
/// type is reported with its key (serde_json's struct errors do not name the field).
pub fn take_leaf<T: DeserializeOwned>(map: &Flat) -> Result<T, ParamError> {
    let fields = field_names::<T>();
    let own: Flat = map
        .iter()
        .filter(|(k, _)| fields.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    serde_json::from_value(Value::Object(own.clone())).map_err(|e| {
        let culprit = own.iter().find_map(|(k, v)| {
            let one: Flat = [(k.clone(), v.clone())].into_iter().collect();
            serde_json::from_value::<T>(Value::Object(one))
                .err()
                .map(|e| ParamError::param(k.as_str(), e.into()))
        });
        culprit.unwrap_or_else(|| e.into())
    })
}

/// [`Params::put`] for a leaf group.
pub fn put_leaf<T: Serialize>(group: &T, map: &mut Flat) {
    match serde_json::to_value(group) {
        Ok(Value::Object(own)) => map.extend(own),
        other => unreachable!("a leaf parameter group serialises to a map, got {other:?}"),
    }
}

/// Registers serde structs as leaf parameter groups (they must implement [`Checked`]).
#[macro_export]
macro_rules! leaf_params {
    ($($ty:ty),+ $(,)?) => {$(
        impl $crate::params::Params for $ty {
            fn keys(out: &mut Vec<&'static str>) {
                out.extend_from_slice($crate::params::field_names::<$ty>());
            }
            fn take(map: &$crate::params::Flat) -> Result<Self, $crate::params::ParamError> {
                $crate::params::take_leaf(map)
            }
            fn put(&self, map: &mut $crate::params::Flat) {
                $crate::params::put_leaf(self, map)
            }
            fn check(&self, c: &$crate::params::Check<'_>) -> Result<(), $crate::LegError> {
                $crate::params::Checked::check(self, c)
            }
        }
    )+};
}

/// Declares a composite parameter struct: every field is a [`Params`] group read from, and
/// written to, one flat map. It derives `Debug`, `Clone`, `PartialEq` and `Default`, and
/// implements serde's traits through the flat map (unknown keys are errors), so a composite
/// nests inside another serde struct like any value.
#[macro_export]
macro_rules! flat_params {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $( $(#[$fmeta:meta])* pub $field:ident : $ty:ty ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Default)]
        $vis struct $name {
            $( $(#[$fmeta])* pub $field: $ty, )*
        }

        impl $crate::params::Params for $name {
            fn keys(out: &mut Vec<&'static str>) {
                $( <$ty as $crate::params::Params>::keys(out); )*
            }
            fn take(map: &$crate::params::Flat) -> Result<Self, $crate::params::ParamError> {
                Ok($name { $( $field: <$ty as $crate::params::Params>::take(map)?, )* })
            }
            fn put(&self, map: &mut $crate::params::Flat) {
                $( $crate::params::Params::put(&self.$field, map); )*
            }
            fn check(&self, c: &$crate::params::Check<'_>) -> Result<(), $crate::LegError> {
                $( $crate::params::Params::check(&self.$field, c)?; )*
                Ok(())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                serde::Serialize::serialize(&$crate::params::Params::to_flat(self), s)
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let map = <$crate::params::Flat as serde::Deserialize>::deserialize(d)?;
                <$name as $crate::params::Params>::from_flat(&map)
                    .map_err(<D::Error as serde::de::Error>::custom)
            }
        }
    };
}

/// Keys claimed by more than one group of `P` (a composite must not read one key twice).
pub fn duplicate_keys<P: Params>() -> Vec<&'static str> {
    let mut keys = Vec::new();
    P::keys(&mut keys);
    let mut seen = BTreeSet::new();
    keys.into_iter().filter(|k| !seen.insert(*k)).collect()
}

/// Range checks that name the leg and the field.
#[derive(Debug, Clone, Copy)]
pub struct Check<'a>(pub &'a str);

impl Check<'_> {
    /// A configuration error for `field`.
    pub fn fail(&self, field: &str, message: &str) -> Result<(), LegError> {
        Err(LegError::Config {
            leg: self.0.into(),
            field: field.into(),
            message: message.into(),
        })
    }
    /// `v >= min`.
    pub fn at_least(&self, field: &str, v: usize, min: usize) -> Result<(), LegError> {
        if v < min {
            return self.fail(field, &format!("must be at least {min}, got {v}"));
        }
        Ok(())
    }
    /// `v <= max`.
    pub fn at_most(&self, field: &str, v: usize, max: usize) -> Result<(), LegError> {
        if v > max {
            return self.fail(field, &format!("must be at most {max}, got {v}"));
        }
        Ok(())
    }
    /// `lo <= v <= hi` (NaN fails).
    pub fn range(&self, field: &str, v: f64, lo: f64, hi: f64) -> Result<(), LegError> {
        if !(v >= lo && v <= hi) {
            return self.fail(field, &format!("must be in [{lo}, {hi}], got {v}"));
        }
        Ok(())
    }
    /// `0 <= v <= 1`.
    pub fn unit(&self, field: &str, v: f64) -> Result<(), LegError> {
        self.range(field, v, 0.0, 1.0)
    }
    /// Finite and `>= 0`.
    pub fn non_negative(&self, field: &str, v: f64) -> Result<(), LegError> {
        if !(v >= 0.0 && v.is_finite()) {
            return self.fail(field, &format!("must be a finite number >= 0, got {v}"));
        }
        Ok(())
    }
    /// Finite and `> 0`.
    pub fn positive(&self, field: &str, v: f64) -> Result<(), LegError> {
        if !(v > 0.0 && v.is_finite()) {
            return self.fail(field, &format!("must be a finite number > 0, got {v}"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde::{Deserialize, Serialize};

    use super::*;

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    #[serde(default, deny_unknown_fields)]
    struct A {
        a: usize,
        shared_doc: String,
    }
    impl Default for A {
        fn default() -> Self {
            A {
                a: 3,
                shared_doc: "x".into(),
            }
        }
    }
    impl Checked for A {
        fn check(&self, c: &Check<'_>) -> Result<(), LegError> {
            c.at_least("a", self.a, 1)
        }
    }

    #[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
    #[serde(default, deny_unknown_fields)]
    struct B {
        b: f32,
        nested: Vec<u8>,
    }
    impl Checked for B {
        fn check(&self, c: &Check<'_>) -> Result<(), LegError> {
            c.non_negative("b", self.b as f64)
        }
    }
    leaf_params!(A, B);

    flat_params! {
        struct AB {
            pub a: A,
            pub b: B,
        }
    }
    flat_params! {
        struct Outer {
            pub ab: AB,
        }
    }
    flat_params! {
        struct Twice {
            pub one: A,
            pub two: A,
        }
    }

    fn flat(json: &str) -> Flat {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn field_names_come_from_serde() {
        assert_eq!(field_names::<A>(), &["a", "shared_doc"]);
    }

    #[test]
    fn a_composite_reads_defaults_overrides_and_nests() {
        let ab = AB::from_flat(&flat(r#"{"b": 2.5}"#)).unwrap();
        assert_eq!(ab.a, A::default());
        assert_eq!(ab.b.b, 2.5);
        let outer: Outer = serde_json::from_str(r#"{"a": 7, "nested": [1, 2]}"#).unwrap();
        assert_eq!(outer.ab.a.a, 7);
        assert_eq!(outer.ab.b.nested, vec![1, 2]);
    }

    #[test]
    fn a_composite_writes_one_flat_sorted_map_that_reads_back() {
        let ab = AB::from_flat(&flat(r#"{"a": 5}"#)).unwrap();
        let v = serde_json::to_value(&ab).unwrap();
        assert_eq!(
            v.to_string(),
            r#"{"a":5,"b":0.0,"nested":[],"shared_doc":"x"}"#
        );
        assert_eq!(serde_json::from_value::<AB>(v).unwrap(), ab);
    }

    #[test]
    fn unknown_keys_and_wrong_types_name_the_parameter() {
        let e = AB::from_flat(&flat(r#"{"a": 1, "c": 2}"#)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown parameter `c` (known: a, b, nested, shared_doc)"
        );
        let e = AB::from_flat(&flat(r#"{"a": "many", "b": 1}"#)).unwrap_err();
        assert!(
            matches!(&e, ParamError::Param { key, .. } if key == "a"),
            "{e:?}"
        );
        assert!(
            e.to_string().starts_with("parameter `a`: invalid type"),
            "{e}"
        );
        let e = serde_json::from_str::<Outer>(r#"{"nested": 3}"#).unwrap_err();
        assert!(e.to_string().contains("parameter `nested`"), "{e}");
    }

    #[test]
    fn checks_run_in_member_order_and_name_the_field() {
        let ab = AB::from_flat(&flat(r#"{"a": 0, "b": -1}"#)).unwrap();
        match ab.check(&Check("leg")) {
            Err(LegError::Config { leg, field, .. }) => {
                assert_eq!((leg.as_str(), field.as_str()), ("leg", "a"))
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn duplicate_keys_are_found() {
        assert!(duplicate_keys::<Outer>().is_empty());
        assert_eq!(duplicate_keys::<Twice>(), vec!["a", "shared_doc"]);
    }
}
