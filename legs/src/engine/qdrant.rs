//! The dense side served by Qdrant's HNSW, in process (`dense: {engine: qdrant, ...}`).
//!
//! The shard is built once per export, vector set and build settings, and cached beside the
//! export under `<results>/shards/<dataset>/<key>/` ([`shard_dir`]); a process that needs it
//! again opens and verifies it ([`hopbench_datasets::hnsw::HnswShard::open`]). Within one
//! process every leg over the same shard shares one open copy.
//!
//! **What Qdrant decides, and what it does not.** Qdrant chooses *which* chunks are the top `k`
//! (the approximation being measured); each chosen chunk is then scored with the exact engine's
//! cosine ([`dot`]) and the list ranked like every engine's (score descending, ties on ascending
//! chunk). So a chunk both paths return has the same score in both, and any difference between
//! served and exact runs is the ANN's misses alone, never float noise in Qdrant's SIMD kernels.
//!
//! **The record id is the truth.** A hit is turned into a chunk through the record id in its
//! payload (the seed's serving rule), checked against the point id it was inserted as. A hit
//! without an id, with an id the corpus does not have, or with one that disagrees with its point
//! is an [`EngineError`]: the cell records `error`, never a shorter candidate list.

//!
//! The parameter group ([`QdrantSpec`]) parses in every build; the engine needs the `qdrant`
//! cargo feature, and a build without it says so when a leg names it.

use hopbench_datasets::hnsw::{HnswSettings, Quantization};
use serde::{Deserialize, Serialize};

use std::path::PathBuf;
use std::sync::Arc;

use hopbench_datasets::export::Export;
use hopbench_datasets::hnsw;

use super::{
    group_of, read_group, CacheInputs, Engine, EngineKind, ExportRef, Side, SideKind, Vectors,
};
use crate::leg::LegError;
use crate::params::{Check, Flat, ParamError};

#[cfg(feature = "qdrant")]
mod served;
#[cfg(not(feature = "qdrant"))]
#[path = "qdrant/absent.rs"]
mod served;
pub use served::{shard_for, QdrantDense};

/// Where the shard of the `vectors` of the export in `export_dir` (with `manifest`) under
/// `settings` is cached ([`hopbench_datasets::hnsw::cache_dir`]).
pub fn shard_dir(export: ExportRef<'_>, vectors: Vectors, settings: HnswSettings) -> PathBuf {
    hnsw::cache_dir(
        export.dir,
        &export.vectors_key(),
        vectors.column(),
        settings,
    )
}

/// What a build without the engine says when a leg names it.
pub const NOT_BUILT: &str = "engine `qdrant` is not in this build of hopbench: build it with \
     `cargo build --release --features qdrant` (docs/src/engines.md, \"Serving through Qdrant\")";

/// The error of building the engine in a build without it (a spec can only be made there by
/// hand: reading one already fails with [`NOT_BUILT`]).
pub fn not_built() -> LegError {
    LegError::Engine(super::EngineError {
        engine: "qdrant",
        command: String::new(),
        query_id: None,
        failure: Box::new(super::Failure::Shard(super::ShardFailure::NotBuilt(NOT_BUILT))),
    })
}

/// `dense: {engine: qdrant, hnsw_ef, m, ef_construct, on_disk, quantization, oversampling,
/// part_points}`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct QdrantSpec {
    /// Search beam width (Qdrant's `hnsw_ef`); absent: Qdrant's default, its `ef_construct`.
    pub hnsw_ef: usize,
    /// Over a quantised shard, candidates per hit taken from the compressed walk and rescored
    /// with the originals (Qdrant's `oversampling`); absent: Qdrant's default, 1. Only with a
    /// `quantization`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oversampling: Option<f64>,
    /// Graph build settings (part of the shard's cache key).
    #[serde(flatten)]
    pub build: HnswSettings,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SpecIn {
    hnsw_ef: Option<usize>,
    #[serde(default)]
    m: Option<usize>,
    #[serde(default)]
    ef_construct: Option<usize>,
    #[serde(default)]
    on_disk: Option<bool>,
    #[serde(default)]
    quantization: Option<Quantization>,
    #[serde(default)]
    oversampling: Option<f64>,
    #[serde(default)]
    part_points: Option<usize>,
}

impl EngineKind for QdrantSpec {
    const NAME: &'static str = "qdrant";
    const SIDES: &'static [SideKind] = &[SideKind::Dense];
    const TITLE: &'static str = "Qdrant";
    const BUILT: Result<(), &'static str> = if hnsw::BUILT {
        Ok(())
    } else {
        Err(NOT_BUILT)
    };

    fn read(rest: &Flat) -> Result<Self, ParamError> {
        let s: SpecIn = read_group(Self::NAME, rest)?;
        let d = HnswSettings::default();
        let build = HnswSettings {
            m: s.m.unwrap_or(d.m),
            ef_construct: s.ef_construct.unwrap_or(d.ef_construct),
            on_disk: s.on_disk.unwrap_or(d.on_disk),
            quantization: s.quantization.unwrap_or(d.quantization),
            part_points: s.part_points.unwrap_or(d.part_points),
        };
        Ok(QdrantSpec {
            hnsw_ef: s.hnsw_ef.unwrap_or(build.ef_construct),
            oversampling: s.oversampling,
            build,
        })
    }

    fn write(&self) -> Flat {
        group_of(self)
    }

    fn check(&self, c: &Check<'_>, side: SideKind) -> Result<(), LegError> {
        let key = side.key();
        c.at_least(&format!("{key}.hnsw_ef"), self.hnsw_ef, 1)?;
        if let Some(o) = self.oversampling {
            if self.build.quantization.is_none() {
                return c.fail(
                    &format!("{key}.oversampling"),
                    "applies only to a quantised shard: add `quantization: int8` or \
                     `quantization: binary`",
                );
            }
            if !(o.is_finite() && o >= 1.0) {
                return c.fail(
                    &format!("{key}.oversampling"),
                    &format!("must be a number of at least 1, got {o}"),
                );
            }
        }
        match self.build.validate() {
            Ok(()) => Ok(()),
            Err(e) => c.fail(key, &e.to_string()),
        }
    }

    fn build(&self, export: &Arc<Export>, side: Side) -> Result<Box<dyn Engine>, LegError> {
        let Side::Dense(vectors) = side else {
            return Err(side.refused(Self::NAME));
        };
        served::build(self, export, vectors)
    }

    /// The shard it searches, by its cache directory's name: the probe digest its manifest
    /// records (what identifies one random HNSW graph among the builds of the same vectors), or
    /// `not built`. With the digest in the cell key, a rebuilt shard recomputes the cells that
    /// used the old one. (Read from the manifest, not verified: the shard is verified when a
    /// leg opens it.)
    fn cache_inputs(&self, side: Side, export: Option<ExportRef<'_>>, out: &mut CacheInputs) {
        if let (Some(export), Some(vectors)) = (export, side.vectors()) {
            let dir = shard_dir(export, vectors, self.build);
            let name = dir
                .file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
            out.indexes.insert(name, served::probe_of(&dir));
        }
    }
}

#[cfg(all(test, feature = "qdrant"))]
mod tests {
    use super::*;

    #[test]
    fn the_spec_fills_qdrants_defaults_and_refuses_unknown_keys() {
        let read = |v: serde_json::Value| match v {
            serde_json::Value::Object(m) => QdrantSpec::read(&m),
            _ => unreachable!(),
        };
        let s = read(serde_json::json!({})).unwrap();
        assert_eq!(s.hnsw_ef, 100, "Qdrant's default beam is its ef_construct");
        assert_eq!(s.build, HnswSettings::default());
        let s = read(serde_json::json!({"ef_construct": 200})).unwrap();
        assert_eq!(s.hnsw_ef, 200);
        let s = read(serde_json::json!({"hnsw_ef": 16, "m": 32, "on_disk": true})).unwrap();
        assert_eq!((s.hnsw_ef, s.build.m, s.build.on_disk), (16, 32, true));
        assert_eq!(read(serde_json::Value::Object(s.write())).unwrap(), s);
        let e = read(serde_json::json!({"hnsw": 16})).unwrap_err();
        assert!(e.to_string().contains("unknown field `hnsw`"), "{e}");
    }

    #[test]
    fn quantisation_and_oversampling_parse_and_are_written_only_when_given() {
        let read = |v: serde_json::Value| match v {
            serde_json::Value::Object(m) => QdrantSpec::read(&m),
            _ => unreachable!(),
        };
        // a float32 spec writes what it wrote before quantisation existed (cell keys stay)
        let plain = read(serde_json::json!({})).unwrap();
        let keys: Vec<String> = plain.write().keys().cloned().collect();
        assert_eq!(keys, ["hnsw_ef", "m", "ef_construct", "on_disk"]);
        let s = read(serde_json::json!({"quantization": "int8", "oversampling": 2.5})).unwrap();
        assert_eq!(s.build.quantization, Quantization::Int8);
        assert_eq!(s.oversampling, Some(2.5));
        assert_eq!(s.write()["quantization"], "int8");
        assert_eq!(read(serde_json::Value::Object(s.write())).unwrap(), s);
        let e = read(serde_json::json!({"quantization": "pq"})).unwrap_err();
        assert!(e.to_string().contains("pq"), "{e}");
        // a part size is written when it is not the default, and read back
        let s = read(serde_json::json!({"part_points": 2_000_000})).unwrap();
        assert_eq!(s.build.part_points, 2_000_000);
        assert_eq!(s.write()["part_points"], 2_000_000);
        assert_eq!(read(serde_json::Value::Object(s.write())).unwrap(), s);
        let at_default = serde_json::json!({"part_points": hopbench_datasets::hnsw::PART_POINTS});
        assert_eq!(read(at_default).unwrap(), plain);
    }

    #[test]
    fn oversampling_needs_a_quantised_shard_and_at_least_one() {
        let check = |v: serde_json::Value| {
            let serde_json::Value::Object(m) = v else {
                unreachable!()
            };
            QdrantSpec::read(&m)
                .unwrap()
                .check(&Check("dense_q"), SideKind::Dense)
        };
        let e = check(serde_json::json!({"oversampling": 2.0})).unwrap_err();
        assert!(
            e.to_string().contains("dense.oversampling")
                && e.to_string().contains("quantization: int8"),
            "{e}"
        );
        for bad in [0.5, 0.0, -2.0] {
            let e = check(serde_json::json!({"quantization": "binary", "oversampling": bad}))
                .unwrap_err();
            assert!(e.to_string().contains("at least 1"), "{bad}: {e}");
        }
        check(serde_json::json!({"quantization": "binary", "oversampling": 1.0})).unwrap();
        let e = check(serde_json::json!({"part_points": 0})).unwrap_err();
        assert!(e.to_string().contains("`part_points` is 0"), "{e}");
    }
}
