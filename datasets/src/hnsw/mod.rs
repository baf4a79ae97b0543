//! Approximate nearest neighbours through Qdrant's own engine, embedded in the process
//! (the `qdrant-edge` crate: the server's segment, HNSW and payload code, without a server).
//!
//! A [`HnswShard`] is one Qdrant shard over a row-major matrix of unit vectors: point `i` is row
//! `i`, and its payload carries the record id of row `i` under [`ID_FIELD`], as the seed's
//! serving path stores it. It lives in a directory of its own with a manifest
//! ([`ShardManifest`]) that names what it was built from and how, so a caller can cache it like
//! an export and find out whether a directory on disk is the shard it wants.
//!
//! **Always an HNSW search.** Qdrant scans small segments exactly (below its
//! `indexing_threshold`, 10 MB of vectors by default, no graph is built, and below
//! `full_scan_threshold` a built graph is not used). A shard here is one segment with its graph
//! built whatever its size and always searched through the graph, so what a small real set
//! measures is the same approximation a large corpus gets.
//!
//! **Parts.** A shard of more than [`HnswSettings::part_points`] points (by default
//! [`PART_POINTS`]) is built as several Qdrant shards (parts) of equal runs of rows, none larger
//! than that, one after the other, so a build holds one part's vectors and graph rather than the
//! whole matrix's; a search asks every part for its top `k` and merges them by score, ties on
//! ascending point, as Qdrant merges the segments of one shard. A shard of at most that many
//! points is one part, on disk as it was before parts.
//!
//! **What is random, and what is not.** Qdrant draws each point's HNSW level from a thread-local
//! generator it does not let a caller seed, and inserts points on several threads, so two builds
//! of the same vectors give different graphs. A search over one graph is deterministic (the entry
//! point and the beam are functions of the graph and the query). So a shard is built once and
//! kept; its manifest records a *probe digest* (BLAKE3 of the neighbours of fixed probe rows),
//! which [`HnswShard::open`] recomputes: a shard whose graph is not the one the manifest
//! describes is an error, not a silent change of results, and two shards with equal digests
//! answered the probes alike.
//!
//! ```text
//! <dir>/hnsw-manifest.json   ShardManifest (written last: a directory without it is not a shard)
//! <dir>/qdrant/              Qdrant's files (edge_config.json, segments/, wal/), rows 0..
//! <dir>/qdrant-<p>/          part p's, rows p * points / parts.. (a shard in parts)
//! ```
//!
//! The settings ([`HnswSettings`]) are part of every build, so a campaign that names them parses
//! the same everywhere. The shard ([`HnswShard`]) needs the `qdrant` cargo feature; a build
//! without it has the same types with no values ([`BUILT`] says which), so the code that uses
//! a shard (the similarity graph, the export's hand-over to the dense engine's cache) compiles
//! and reads the same in both builds, and this module is the one place the feature is named.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

#[cfg(feature = "qdrant")]
mod shard;
#[cfg(not(feature = "qdrant"))]
#[path = "absent.rs"]
mod shard;
pub use shard::*;

/// Whether this build carries Qdrant's engine (the `qdrant` cargo feature).
pub const BUILT: bool = cfg!(feature = "qdrant");

/// Points per part, at most, unless the settings name another ([`HnswSettings::part_points`]):
/// a larger shard is built as several Qdrant shards of equal runs of rows, one after the other,
/// each closed before the next is built, and searched together. Qdrant's build holds every
/// vector of what it builds twice over (the segment the points were upserted into and the
/// indexed one it is copied into) with the graph beside them: the build of a million 384-wide
/// vectors peaked at 4,758 MiB in one part, 2,988 MiB in two (docs/src/scale-history.md, "The shard
/// built in parts"). Each part costs a search per query.
pub const PART_POINTS: usize = 1 << 19;

/// The environment variable by which Qdrant maps each of its files once.
pub const SINGLE_MAP_VAR: &str = "QDRANT_NO_MULTI_MMAP";

/// Asks Qdrant to map each of its vector files once rather than twice. It maps each a second
/// time for sequential reads, and a build reads through both (the optimiser copies the rows
/// sequentially, the graph is linked through the other), so every vector's pages are resident
/// twice at the build's peak: 1.5 GB more for a million 384-wide vectors. Searches read through
/// the one map either way. Qdrant reads the variable once, when it first maps a file, and a
/// process's environment may be changed only while no other thread runs: so the binary's `main`
/// and the Python module's import call this first. A value the user set is kept.
pub fn map_files_once() {
    if std::env::var_os(SINGLE_MAP_VAR).is_none() {
        std::env::set_var(SINGLE_MAP_VAR, "1");
    }
}

/// What a build cost, for benchmarks.
#[derive(Debug, Clone, Copy, Default)]
pub struct BuildCost {
    /// Upserting the points (vectors and payloads).
    pub insert_secs: f64,
    /// Building the graph (Qdrant's indexing optimiser).
    pub index_secs: f64,
}

/// Where a shard reads the vectors it is built from and verified with: a row-major matrix in
/// memory, or a vector file read at its offsets ([`MappedVectors`](crate::export::MappedVectors)),
/// so a build of a million rows reads them a batch at a time and leaves none resident beside
/// Qdrant's own copy.
pub trait Rows {
    /// How many `f32` values there are (rows x width).
    fn values(&self) -> usize;
    /// The values `start..start + out.len()` into `out`; an error names the source when they
    /// are not all there or it changed since it was checked.
    fn read_values(&self, start: usize, out: &mut [f32]) -> crate::error::Result<()>;
}

impl Rows for [f32] {
    fn values(&self) -> usize {
        self.len()
    }
    fn read_values(&self, start: usize, out: &mut [f32]) -> crate::error::Result<()> {
        let end = start.checked_add(out.len()).filter(|&e| e <= self.len());
        let Some(end) = end else {
            return Err(crate::error::Error::Config {
                context: "vectors".into(),
                message: format!(
                    "values {start}..{} asked of {}",
                    start.saturating_add(out.len()),
                    self.len()
                ),
            });
        };
        out.copy_from_slice(&self[start..end]);
        Ok(())
    }
}

/// The manifest's file name in a shard directory.
pub const MANIFEST: &str = "hnsw-manifest.json";

/// A build setting outside the range it must lie in: the field (with the group it sits in, as
/// the campaign spells it) and the rule it breaks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field} is {value}, expected {expected}")]
pub struct SettingError {
    /// The field, as written in messages (`` `m` ``, `hnsw: `m``, `min_similarity`).
    pub field: String,
    /// The value given.
    pub value: String,
    /// The rule (`at least 2`, `a number in [-1, 1]`).
    pub expected: String,
}

impl SettingError {
    /// `field` is `value`, expected `expected`.
    pub fn new(field: &str, value: impl std::fmt::Display, expected: &str) -> SettingError {
        SettingError {
            field: field.into(),
            value: value.to_string(),
            expected: expected.into(),
        }
    }

    /// The same error for a field inside the group `group` (`hnsw: `m``).
    pub fn within(mut self, group: &str) -> SettingError {
        self.field = format!("{group}: {}", self.field);
        self
    }
}

#[cfg(all(test, feature = "qdrant"))]
mod tests;

/// How the graph is built (hashed into a shard's cache key by its callers).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HnswSettings {
    /// Links per node (Qdrant's `m`, default 16).
    pub m: usize,
    /// Beam width while building (Qdrant's `ef_construct`, default 100).
    pub ef_construct: usize,
    /// Vectors and graph memory-mapped from disk instead of held in RAM.
    pub on_disk: bool,
    /// The compressed copy of the vectors the graph is searched with (kept in RAM; the
    /// originals rescore the oversampled top k). Absent from a manifest when `none`, so the
    /// shards built before it existed keep their keys.
    #[serde(skip_serializing_if = "Quantization::is_none")]
    pub quantization: Quantization,
    /// The most points one graph holds ([`PART_POINTS`] unless set): a larger shard is built
    /// as several graphs over equal runs of rows, each walked per query. Fewer, larger parts
    /// make a search cheaper and a build hold more at once. Absent from a manifest at its
    /// default, so the shards built before it existed keep their keys.
    #[serde(skip_serializing_if = "is_default_part_points")]
    pub part_points: usize,
}

fn is_default_part_points(n: &usize) -> bool {
    *n == PART_POINTS
}

/// Qdrant's vector quantisation: the search walks the graph over compressed vectors held in
/// RAM, takes the top `k x oversampling`, and rescores them with the original float vectors
/// (which may stay on disk), returning the top `k`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Quantization {
    /// Float32 vectors only.
    #[default]
    None,
    /// Scalar quantisation: one byte per value (4x smaller), over the values' whole range.
    Int8,
    /// Binary quantisation: one bit per value (32x smaller).
    Binary,
}

impl Quantization {
    /// Whether this is [`Quantization::None`].
    pub fn is_none(&self) -> bool {
        *self == Quantization::None
    }

    /// The name a campaign spells it with.
    pub fn name(self) -> &'static str {
        match self {
            Quantization::None => "none",
            Quantization::Int8 => "int8",
            Quantization::Binary => "binary",
        }
    }
}

impl std::fmt::Display for Quantization {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Default for HnswSettings {
    fn default() -> Self {
        HnswSettings {
            m: 16,
            ef_construct: 100,
            on_disk: false,
            quantization: Quantization::None,
            part_points: PART_POINTS,
        }
    }
}

impl HnswSettings {
    /// The ranges Qdrant accepts, as a message naming the field (`m` 0 would silently build no
    /// graph at all, so it is refused).
    pub fn validate(&self) -> std::result::Result<(), SettingError> {
        if self.m < 2 {
            return Err(SettingError::new("`m`", self.m, "at least 2"));
        }
        if self.ef_construct < 4 {
            return Err(SettingError::new(
                "`ef_construct`",
                self.ef_construct,
                "at least 4",
            ));
        }
        if self.part_points == 0 {
            return Err(SettingError::new(
                "`part_points`",
                self.part_points,
                "at least 1",
            ));
        }
        Ok(())
    }
}

/// The identity a cached shard's manifest records as its `source`: the export's content hash,
/// the vector set (`embedding` or `embedding_content`) and the build settings (the
/// quantisation named only when there is one, the part size only when it is not the default, so
/// the shards built before either existed keep the keys they had).
pub fn cache_source(content_hash: &str, vectors: &str, settings: HnswSettings) -> String {
    let mut s = format!(
        "export {content_hash} vectors {vectors} m {} ef_construct {} on_disk {}",
        settings.m, settings.ef_construct, settings.on_disk
    );
    if !settings.quantization.is_none() {
        s += &format!(" quantization {}", settings.quantization);
    }
    if !is_default_part_points(&settings.part_points) {
        s += &format!(" part_points {}", settings.part_points);
    }
    s
}

/// Where the shard of an export's vector set is cached: beside the export
/// (`<results>/exports/<dataset>/` gives `<results>/shards/<dataset>/<key>/`), the key the
/// first 16 hex digits of the BLAKE3 of its [`cache_source`].
pub fn cache_dir(export_dir: &Path, content_hash: &str, vectors: &str, s: HnswSettings) -> PathBuf {
    let key = blake3::hash(cache_source(content_hash, vectors, s).as_bytes()).to_hex();
    shards_root(export_dir).join(&key.as_str()[..16])
}

/// Where the shards (and other files derived from it for serving) of the export in
/// `export_dir` (`<results>/exports/<dataset>`) lie: `<results>/shards/<dataset>`.
pub fn shards_root(export_dir: &Path) -> PathBuf {
    let name = export_dir
        .file_name()
        .map_or_else(|| "export".into(), |n| n.to_string_lossy().into_owned());
    let results = export_dir
        .parent()
        .and_then(|p| p.parent())
        .map_or_else(|| export_dir.join(".."), PathBuf::from);
    results.join("shards").join(name)
}
