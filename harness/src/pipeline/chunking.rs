//! A documents dataset's `chunking:`, and the matrix axis it makes.
//!
//! Three shapes, all under `datasets.<name>.chunking`:
//!
//! * one setting, `{size: 256, overlap: 32, unit: tokens}` (`overlap` defaults to 0, `unit` to
//!   `tokens`): the dataset is chunked so, and keeps its name;
//! * lists, `{size: [256, 512], overlap: [0, 64]}` (any of the three keys may be a list): the
//!   cross product, one dataset per combination, named
//!   `<name>@size<S>-overlap<O>` (plus `-<unit>` when `unit` is a list);
//! * named variants, `{small: {size: 256}, large: {size: 512, overlap: 64}}`: one dataset per
//!   variant, named `<name>@<variant>`.
//!
//! The campaign is expanded when it loads ([`expand`]): every variant is a dataset of its own
//! with one setting, so it has its own export (the setting is part of its spec, hence of its
//! export key) and its own cells, and "which chunk size" is a comparison of datasets at equal
//! token spend (`compare-curves` across the variants' budget curves, or the matrix). Selecting
//! the base name (`--datasets docs`) selects every variant; a variant's full name selects
//! it alone ([`crate::pipeline::campaign::select`]). `--show-settings` prints the expanded datasets, each
//! with its one setting, which loads back to the same matrix.

use std::collections::BTreeMap;

use anyhow::{bail, Result};
use hopbench_datasets::chunk::{ChunkSettings, ChunkUnit};
use serde::{Deserialize, Serialize};

/// What separates a dataset's name from its variant's (`docs@small`).
pub const VARIANT_SEPARATOR: char = '@';

/// A dataset's `chunking:` as written (see the module docs).
#[derive(Debug, Clone, PartialEq)]
pub enum Chunking {
    /// One setting.
    One(ChunkSettings),
    /// Lists of values: their cross product.
    Grid(Grid),
    /// Named variants.
    Named(BTreeMap<String, ChunkSettings>),
}

/// A `chunking:` of lists of values: their cross product. Each list is non-empty; `listed` says
/// which keys were written as lists (`size`, `overlap`, `unit`), for the variant names and for
/// writing the block back as it was.
#[derive(Debug, Clone, PartialEq)]
pub struct Grid {
    /// The sizes.
    pub size: Vec<usize>,
    /// The overlaps.
    pub overlap: Vec<usize>,
    /// The units.
    pub unit: Vec<ChunkUnit>,
    /// Whether `size`, `overlap`, `unit` were lists.
    pub listed: [bool; 3],
}

impl Grid {
    /// The variants, `(suffix, setting)` in name order: `size<S>-overlap<O>`, plus `-<unit>`
    /// when `unit` was a list.
    fn variants(&self) -> Vec<(String, ChunkSettings)> {
        let mut out = Vec::new();
        for &size in &self.size {
            for &overlap in &self.overlap {
                for &unit in &self.unit {
                    let mut name = format!("size{size}-overlap{overlap}");
                    if self.listed[2] {
                        name = format!("{name}-{}", unit.name());
                    }
                    out.push((
                        name,
                        ChunkSettings {
                            size,
                            overlap,
                            unit,
                        },
                    ));
                }
            }
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }
}

/// Written back as it was read: a key written as a list stays a list, a single value a value.
impl Serialize for Grid {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let value = |list: serde_json::Value, is_list: bool| {
            if is_list {
                list
            } else {
                list[0].clone()
            }
        };
        let mut m = serde_json::Map::new();
        m.insert(
            "size".into(),
            value(serde_json::json!(self.size), self.listed[0]),
        );
        m.insert(
            "overlap".into(),
            value(serde_json::json!(self.overlap), self.listed[1]),
        );
        m.insert(
            "unit".into(),
            value(serde_json::json!(self.unit), self.listed[2]),
        );
        m.serialize(s)
    }
}

impl Chunking {
    /// The setting of a dataset that is not an axis (after [`expand`], every dataset's).
    pub fn one(&self) -> Option<&ChunkSettings> {
        match self {
            Chunking::One(s) => Some(s),
            _ => None,
        }
    }

    /// The variants, `(suffix, setting)` in name order; `None` for one setting.
    pub fn variants(&self) -> Option<Vec<(String, ChunkSettings)>> {
        match self {
            Chunking::One(_) => None,
            Chunking::Named(v) => Some(v.iter().map(|(n, s)| (n.clone(), *s)).collect()),
            Chunking::Grid(g) => Some(g.variants()),
        }
    }
}

/// The keys of one setting.
const KEYS: [&str; 3] = ["size", "overlap", "unit"];

fn one_or_many<T: serde::de::DeserializeOwned>(
    key: &str,
    v: Option<&serde_json::Value>,
    default: T,
) -> Result<(Vec<T>, bool), String> {
    let parse = |v: &serde_json::Value| {
        serde_json::from_value::<T>(v.clone()).map_err(|e| format!("`{key}`: {e}"))
    };
    match v {
        None => Ok((vec![default], false)),
        Some(serde_json::Value::Array(items)) => {
            if items.is_empty() {
                return Err(format!("`{key}`: an empty list"));
            }
            let mut out = Vec::new();
            for item in items {
                out.push(parse(item)?);
            }
            Ok((out, true))
        }
        Some(v) => Ok((vec![parse(v)?], false)),
    }
}

impl<'de> Deserialize<'de> for Chunking {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        use serde::de::Error as _;
        let map = BTreeMap::<String, serde_json::Value>::deserialize(d)?;
        if map.is_empty() {
            return Err(D::Error::custom(
                "an empty chunking block (give {size, overlap, unit} or named variants)",
            ));
        }
        if map.keys().any(|k| KEYS.contains(&k.as_str())) {
            if let Some(k) = map.keys().find(|k| !KEYS.contains(&k.as_str())) {
                return Err(D::Error::custom(format!(
                    "unknown key `{k}` (a setting has size, overlap, unit; named variants are \
                     `{{small: {{size: 256}}, ...}}`)"
                )));
            }
            let Some(size) = map.get("size") else {
                return Err(D::Error::custom("`size` is required"));
            };
            let (size, ls) =
                one_or_many::<usize>("size", Some(size), 0).map_err(D::Error::custom)?;
            let (overlap, lo) =
                one_or_many::<usize>("overlap", map.get("overlap"), 0).map_err(D::Error::custom)?;
            let (unit, lu) = one_or_many::<ChunkUnit>("unit", map.get("unit"), ChunkUnit::Tokens)
                .map_err(D::Error::custom)?;
            if !(ls || lo || lu) {
                return Ok(Chunking::One(ChunkSettings {
                    size: size[0],
                    overlap: overlap[0],
                    unit: unit[0],
                }));
            }
            return Ok(Chunking::Grid(Grid {
                size,
                overlap,
                unit,
                listed: [ls, lo, lu],
            }));
        }
        let mut named = BTreeMap::new();
        for (name, v) in map {
            let s: ChunkSettings = serde_json::from_value(v)
                .map_err(|e| D::Error::custom(format!("variant `{name}`: {e}")))?;
            named.insert(name, s);
        }
        Ok(Chunking::Named(named))
    }
}

impl Serialize for Chunking {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            Chunking::One(settings) => settings.serialize(s),
            Chunking::Named(v) => v.serialize(s),
            Chunking::Grid(g) => g.serialize(s),
        }
    }
}

/// A variant's name: what a dataset name may hold, without the separator.
fn check_variant(name: &str) -> Result<()> {
    if name.is_empty()
        || name.starts_with('.')
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
    {
        bail!(
            "variant `{name}`: use only letters, digits, '.', '_' and '-' (not starting with '.')"
        );
    }
    Ok(())
}

/// Replaces every dataset whose `chunking` is an axis by its variants (`<name>@<variant>`, each
/// with its one setting), checking every setting and name on the way. `chunking_of` reads a
/// spec's chunking; `with` makes a copy of a spec with another chunking.
pub fn expand<S: Clone>(
    datasets: BTreeMap<String, S>,
    chunking_of: impl Fn(&S) -> Option<&Chunking>,
    with: impl Fn(&S, Chunking) -> S,
) -> Result<BTreeMap<String, S>> {
    let mut out = BTreeMap::new();
    let mut put = |name: String, spec: S, origin: &str| -> Result<()> {
        if out.insert(name.clone(), spec).is_some() {
            bail!("datasets.{origin}: field `chunking`: the variant `{name}` is also a dataset of the campaign");
        }
        Ok(())
    };
    for (name, spec) in datasets {
        let Some(variants) = chunking_of(&spec).and_then(Chunking::variants) else {
            if let Some(p) = chunking_of(&spec)
                .and_then(Chunking::one)
                .and_then(|s| s.problem())
            {
                bail!("datasets.{name}: field `chunking`: {p}");
            }
            put(name.clone(), spec, &name)?;
            continue;
        };
        if name.contains(VARIANT_SEPARATOR) {
            bail!(
                "datasets.{name}: field `chunking`: a dataset with chunking variants must not have \
                 '{VARIANT_SEPARATOR}' in its name (its variants are named <name>{VARIANT_SEPARATOR}<variant>)"
            );
        }
        for (variant, settings) in variants {
            check_variant(&variant)
                .map_err(|e| anyhow::anyhow!("datasets.{name}: field `chunking`: {e}"))?;
            if let Some(p) = settings.problem() {
                bail!("datasets.{name}: field `chunking`: variant `{variant}`: {p}");
            }
            let full = format!("{name}{VARIANT_SEPARATOR}{variant}");
            put(full, with(&spec, Chunking::One(settings)), &name)?;
        }
    }
    Ok(out)
}

/// Whether the campaign name `name` is selected by `want`: the name itself, or a variant of
/// the dataset `want` (`want@...`).
pub fn selects(want: &str, name: &str) -> bool {
    name == want
        || name
            .strip_prefix(want)
            .is_some_and(|rest| rest.starts_with(VARIANT_SEPARATOR))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(yaml: &str) -> Result<Chunking, String> {
        serde_saphyr::from_str::<Chunking>(yaml).map_err(|e| e.to_string())
    }

    fn cs(size: usize, overlap: usize, unit: ChunkUnit) -> ChunkSettings {
        ChunkSettings {
            size,
            overlap,
            unit,
        }
    }

    #[test]
    fn the_three_shapes_parse_and_write_back() {
        use ChunkUnit::*;
        let one = parse("{size: 256}").unwrap();
        assert_eq!(one, Chunking::One(cs(256, 0, Tokens)));
        assert_eq!(one.variants(), None);
        let grid = parse("{size: [256, 512], overlap: [0, 64], unit: chars}").unwrap();
        let names: Vec<_> = grid.variants().unwrap().into_iter().map(|v| v.0).collect();
        assert_eq!(
            names,
            [
                "size256-overlap0",
                "size256-overlap64",
                "size512-overlap0",
                "size512-overlap64"
            ]
        );
        assert_eq!(
            grid.variants().unwrap()[1].1,
            cs(256, 64, Chars),
            "scalars apply to every variant"
        );
        let units = parse("{size: 100, unit: [tokens, chars]}").unwrap();
        let names: Vec<_> = units.variants().unwrap().into_iter().map(|v| v.0).collect();
        assert_eq!(names, ["size100-overlap0-chars", "size100-overlap0-tokens"]);
        let named = parse("{small: {size: 128}, large: {size: 512, overlap: 64}}").unwrap();
        assert_eq!(
            named.variants().unwrap(),
            [
                ("large".to_string(), cs(512, 64, Tokens)),
                ("small".to_string(), cs(128, 0, Tokens))
            ]
        );
        for c in [&one, &grid, &units, &named] {
            let json = serde_json::to_string(c).unwrap();
            assert_eq!(
                &serde_json::from_str::<Chunking>(&json).unwrap(),
                c,
                "{json}"
            );
        }
        assert_eq!(
            serde_json::to_string(&one).unwrap(),
            r#"{"size":256,"overlap":0,"unit":"tokens"}"#
        );
    }

    #[test]
    fn bad_blocks_are_errors_naming_the_key() {
        for (yaml, says) in [
            ("{}", "empty chunking block"),
            ("{size: 10, overlop: 2}", "unknown key `overlop`"),
            ("{overlap: 2}", "`size` is required"),
            ("{size: []}", "`size`: an empty list"),
            ("{size: -3}", "`size`"),
            ("{size: 10, unit: words}", "`unit`"),
            ("{small: {size: 10, overlop: 1}}", "variant `small`"),
            ("{small: 10}", "variant `small`"),
        ] {
            let e = parse(yaml).unwrap_err();
            assert!(e.contains(says), "{yaml}: {e}");
        }
    }

    type Spec = Option<Chunking>;

    fn run(datasets: &[(&str, Spec)]) -> Result<Vec<(String, Spec)>> {
        let map: BTreeMap<String, Spec> = datasets
            .iter()
            .map(|(n, s)| (n.to_string(), s.clone()))
            .collect();
        Ok(expand(map, |s| s.as_ref(), |_, c| Some(c))?
            .into_iter()
            .collect())
    }

    #[test]
    fn axes_expand_into_named_datasets_with_one_setting_each() {
        let grid = parse("{size: [256, 512], overlap: [0, 64]}").ok();
        let one = parse("{size: 100, overlap: 10, unit: chars}").ok();
        let out = run(&[("docs", grid), ("plain", None), ("fixed", one.clone())]).unwrap();
        let names: Vec<&str> = out.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "docs@size256-overlap0",
                "docs@size256-overlap64",
                "docs@size512-overlap0",
                "docs@size512-overlap64",
                "fixed",
                "plain"
            ]
        );
        assert_eq!(
            out[1].1,
            Some(Chunking::One(cs(256, 64, ChunkUnit::Tokens)))
        );
        assert_eq!(out[4].1, one, "one setting stays as it is");
        // expanding the expansion changes nothing (what --show-settings writes loads back)
        let again = run(&out
            .iter()
            .map(|(n, s)| (n.as_str(), s.clone()))
            .collect::<Vec<_>>())
        .unwrap();
        assert_eq!(again, out);
    }

    #[test]
    fn bad_axes_are_errors_naming_the_dataset_and_variant() {
        let e = |datasets: &[(&str, Spec)]| format!("{:#}", run(datasets).unwrap_err());
        let msg = e(&[("d", parse("{size: [64, 256], overlap: [0, 128]}").ok())]);
        assert_eq!(
            msg,
            "datasets.d: field `chunking`: variant `size64-overlap128`: `overlap` (128) must be below `size` (64)"
        );
        let msg = e(&[("d", parse("{size: 10, overlap: 10}").ok())]);
        assert!(
            msg.starts_with("datasets.d: field `chunking`: `overlap`"),
            "{msg}"
        );
        let msg = e(&[("d", parse("{size: [0, 5]}").ok())]);
        assert!(
            msg.contains("variant `size0-overlap0`: `size` must be at least 1"),
            "{msg}"
        );
        let msg = e(&[
            ("d", parse("{a: {size: 5}}").ok()),
            ("d@a", parse("{size: 5}").ok()),
        ]);
        assert!(msg.contains("the variant `d@a` is also a dataset"), "{msg}");
        let msg = e(&[("d@x", parse("{a: {size: 5}, b: {size: 6}}").ok())]);
        assert!(msg.contains("must not have '@'"), "{msg}");
        let msg = e(&[("d", parse("{'a b': {size: 5}}").ok())]);
        assert!(msg.contains("variant `a b`"), "{msg}");
    }

    #[test]
    fn a_base_name_selects_its_variants() {
        assert!(selects("docs", "docs"));
        assert!(selects("docs", "docs@small"));
        assert!(selects("docs@small", "docs@small"));
        assert!(!selects("docs@small", "docs@smaller"));
        assert!(!selects("doc", "docs@small"));
        assert!(!selects("docs", "docs2"));
        assert!(!selects("docs", "docs-x"));
    }
}
