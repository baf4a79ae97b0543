//! The shard itself (built with the `qdrant` feature).

use std::path::{Path, PathBuf};
use std::time::Instant;

use qdrant_edge::{
    BinaryQuantizationConfig, Distance, EdgeConfig, EdgeOptimizersConfig, EdgeShard,
    EdgeVectorParams, HnswIndexConfig, NamedQuery, PointId, PointInsertOperations, PointOperations,
    PointStruct, QuantizationConfig, QuantizationSearchParams, QueryEnum, ScalarQuantizationConfig,
    ScalarType, SearchParams, SearchRequest, UpdateOperation, WithPayloadInterface,
};
use serde::{Deserialize, Serialize};

use super::{BuildCost, HnswSettings, Quantization, MANIFEST};
use crate::error::{Error, Result};

/// The payload field that carries a point's record id.
pub const ID_FIELD: &str = "id";
/// Qdrant's own files, under the shard directory.
const QDRANT_DIR: &str = "qdrant";
/// The engine, as recorded in every manifest.
pub const ENGINE: &str = "qdrant-edge 0.7.0";
/// The layout of a shard directory and its manifest.
pub const SHARD_FORMAT: u32 = 1;
/// Points per upsert while building (bounds the memory of one operation).
const UPSERT_BATCH: usize = 1024;
/// Probe rows whose neighbours the probe digest covers.
const PROBES: usize = 64;
/// Neighbours per probe.
const PROBE_K: usize = 10;

/// `hnsw-manifest.json`: what a shard was built from and how, and its probe digest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShardManifest {
    /// [`SHARD_FORMAT`].
    pub format: u32,
    /// [`ENGINE`].
    pub engine: String,
    /// The caller's identity of the vectors (an export's key and which vector set).
    pub source: String,
    /// Build settings.
    pub settings: HnswSettings,
    /// Points (rows).
    pub points: usize,
    /// Vector width.
    pub dim: usize,
    /// BLAKE3 of the probe rows' top-10 neighbours (see the module docs).
    pub probe: String,
}

/// One search hit: the point (the row) and the record id its payload carries, if any.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    /// The point id (the row index it was inserted as).
    pub point: u64,
    /// The payload's [`ID_FIELD`], or `None` when the point has none (a corrupt shard: callers
    /// turn it into an error, never an empty candidate).
    pub id: Option<String>,
    /// Qdrant's score (cosine).
    pub score: f32,
}

/// A built, verified shard, open for search.
pub struct HnswShard {
    dir: PathBuf,
    manifest: ShardManifest,
    shard: EdgeShard,
}

impl std::fmt::Debug for HnswShard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HnswShard")
            .field("dir", &self.dir)
            .field("manifest", &self.manifest)
            .finish_non_exhaustive()
    }
}

fn shard_err(path: &Path, message: impl std::fmt::Display) -> Error {
    Error::Config {
        context: format!("{}: HNSW shard", path.display()),
        message: message.to_string(),
    }
}

impl HnswShard {
    /// Builds a shard of `vectors` (row-major, `dim` wide, unit length) whose row `i` carries
    /// record id `ids[i]`, into `dir`, which must not exist yet. The directory appears whole or
    /// not at all: everything is written beside it and renamed into place last. When another
    /// process put a shard there first, that one is opened (and verified) instead.
    pub fn build(
        dir: &Path,
        source: &str,
        vectors: &[f32],
        dim: usize,
        ids: &[&str],
        settings: HnswSettings,
    ) -> Result<(HnswShard, BuildCost)> {
        settings.validate().map_err(|m| shard_err(dir, m))?;
        if dim == 0 || vectors.len() != ids.len() * dim {
            return Err(shard_err(
                dir,
                format!(
                    "{} vector values for {} ids of dimension {dim}",
                    vectors.len(),
                    ids.len()
                ),
            ));
        }
        let parent = dir.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
        let name = dir
            .file_name()
            .map_or_else(|| "shard".into(), |n| n.to_string_lossy().into_owned());
        let tmp = TempDir::create(parent, &name)?;
        let qdir = tmp.path().join(QDRANT_DIR);
        std::fs::create_dir_all(&qdir).map_err(|e| Error::io(&qdir, e))?;

        let mut cost = BuildCost::default();
        let n = ids.len();
        {
            let shard = EdgeShard::new(&qdir, edge_config(dim, settings))
                .map_err(|e| shard_err(&qdir, e))?;
            let t = Instant::now();
            for start in (0..n).step_by(UPSERT_BATCH) {
                let end = (start + UPSERT_BATCH).min(n);
                let points = (start..end)
                    .map(|i| {
                        let mut payload = serde_json::Map::new();
                        payload.insert(ID_FIELD.into(), ids[i].into());
                        PointStruct::new(
                            PointId::NumId(i as u64),
                            &vectors[i * dim..(i + 1) * dim],
                            serde_json::Value::Object(payload),
                        )
                        .into()
                    })
                    .collect();
                shard
                    .update(UpdateOperation::PointOperation(
                        PointOperations::UpsertPoints(PointInsertOperations::PointsList(points)),
                    ))
                    .map_err(|e| shard_err(&qdir, e))?;
            }
            cost.insert_secs = t.elapsed().as_secs_f64();
            let t = Instant::now();
            shard.optimize().map_err(|e| shard_err(&qdir, e))?;
            cost.index_secs = t.elapsed().as_secs_f64();
            let info = shard.info();
            if info.points_count != n || (n > 0 && info.indexed_vectors_count != n) {
                return Err(shard_err(
                    &qdir,
                    format!(
                        "after indexing: {} points, {} in the graph, expected {n} of both",
                        info.points_count, info.indexed_vectors_count
                    ),
                ));
            }
            shard.flush();
        }
        // Every point is in the indexed segment now; the write-ahead log only repeats them.
        let wal = qdir.join("wal");
        if wal.is_dir() {
            std::fs::remove_dir_all(&wal).map_err(|e| Error::io(&wal, e))?;
        }
        let shard = EdgeShard::load(&qdir, None).map_err(|e| shard_err(&qdir, e))?;
        let manifest = ShardManifest {
            format: SHARD_FORMAT,
            engine: ENGINE.into(),
            source: source.into(),
            settings,
            points: n,
            dim,
            probe: probe_digest(&shard, settings, vectors, dim, n)
                .map_err(|e| shard_err(&qdir, e))?,
        };
        drop(shard);
        let mpath = tmp.path().join(MANIFEST);
        let json = serde_json::to_vec_pretty(&manifest).expect("a manifest serialises");
        std::fs::write(&mpath, json).map_err(|e| Error::io(&mpath, e))?;
        match std::fs::rename(tmp.path(), dir) {
            Ok(()) => tmp.disarm(),
            // Another process won the race; its shard is as good as ours once verified (and
            // ours is removed when `tmp` drops).
            Err(_) if dir.join(MANIFEST).is_file() => {}
            Err(e) => return Err(Error::io(dir, e)),
        }
        Ok((
            HnswShard::open(dir, &manifest_expectation(&manifest), vectors)?,
            cost,
        ))
    }

    /// Opens the shard in `dir` and verifies it: its manifest must describe `expected` (format,
    /// engine, source, settings, points, dimension), Qdrant must hold every point in its graph,
    /// and the probe searches over `vectors` must give the manifest's digest.
    pub fn open(dir: &Path, expected: &Expected<'_>, vectors: &[f32]) -> Result<HnswShard> {
        let mpath = dir.join(MANIFEST);
        let bytes = std::fs::read(&mpath).map_err(|e| Error::io(&mpath, e))?;
        let manifest: ShardManifest = serde_json::from_slice(&bytes)
            .map_err(|e| Error::malformed(&mpath, "HNSW shard manifest", e))?;
        let field = |name: &str, found: String, want: String| {
            Error::field(
                &mpath,
                "manifest",
                name,
                format!("is {found}, expected {want}: the directory holds another shard"),
            )
        };
        if manifest.format != SHARD_FORMAT {
            return Err(field(
                "format",
                manifest.format.to_string(),
                SHARD_FORMAT.to_string(),
            ));
        }
        if manifest.engine != ENGINE {
            return Err(field("engine", manifest.engine, ENGINE.into()));
        }
        if manifest.source != expected.source {
            return Err(field("source", manifest.source, expected.source.into()));
        }
        if manifest.settings != expected.settings {
            return Err(field(
                "settings",
                format!("{:?}", manifest.settings),
                format!("{:?}", expected.settings),
            ));
        }
        if manifest.points != expected.points || manifest.dim != expected.dim {
            return Err(field(
                "points",
                format!("{} x {}", manifest.points, manifest.dim),
                format!("{} x {}", expected.points, expected.dim),
            ));
        }
        if vectors.len() != manifest.points * manifest.dim {
            return Err(shard_err(
                dir,
                format!(
                    "{} vector values given to verify {} points of dimension {}",
                    vectors.len(),
                    manifest.points,
                    manifest.dim
                ),
            ));
        }
        let qdir = dir.join(QDRANT_DIR);
        let shard = EdgeShard::load(&qdir, None).map_err(|e| shard_err(&qdir, e))?;
        let info = shard.info();
        let n = manifest.points;
        if info.points_count != n || (n > 0 && info.indexed_vectors_count != n) {
            return Err(shard_err(
                &qdir,
                format!(
                    "holds {} points, {} in the graph; its manifest says {n}",
                    info.points_count, info.indexed_vectors_count
                ),
            ));
        }
        let probe = probe_digest(&shard, manifest.settings, vectors, manifest.dim, n)
            .map_err(|e| shard_err(&qdir, e))?;
        if probe != manifest.probe {
            return Err(Error::field(
                &mpath,
                "manifest",
                "probe",
                format!(
                    "the graph answers the probe searches with digest {probe}, the manifest \
                     says {}: the shard's files changed since it was built (delete {} to \
                     rebuild it)",
                    manifest.probe,
                    dir.display()
                ),
            ));
        }
        Ok(HnswShard {
            dir: dir.to_path_buf(),
            manifest,
            shard,
        })
    }

    /// The manifest.
    pub fn manifest(&self) -> &ShardManifest {
        &self.manifest
    }

    /// The shard's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The approximate top `k` of `query` with beam width `ef` (Qdrant's `hnsw_ef`), in
    /// Qdrant's order, each with the record id its payload carries. Over a quantised shard the
    /// graph is walked with the compressed vectors, the top `k x oversampling` (Qdrant's
    /// default 1 when `None`) rescored with the originals.
    pub fn search(
        &self,
        query: &[f32],
        k: usize,
        ef: usize,
        oversampling: Option<f64>,
    ) -> Result<Vec<Hit>> {
        let q = quantized(self.manifest.settings, oversampling);
        search(&self.shard, query, k, ef, q, true).map_err(|e| shard_err(&self.dir, e))
    }

    /// The approximate top `k` point ids alone (no payload read), for graph building.
    pub fn search_points(&self, query: &[f32], k: usize, ef: usize) -> Result<Vec<(u64, f32)>> {
        let q = quantized(self.manifest.settings, None);
        search(&self.shard, query, k, ef, q, false)
            .map(|hits| hits.into_iter().map(|h| (h.point, h.score)).collect())
            .map_err(|e| shard_err(&self.dir, e))
    }
}

/// A built shard in a scratch directory, removed on drop unless [`KeptShard::adopt`] moves it
/// into a cache: the similarity graph's index, which is the dense engine's index of the same
/// vectors under the same settings, so a prepare hands it on instead of a first query building
/// it again.
#[derive(Debug)]
pub struct KeptShard {
    dir: Option<PathBuf>,
}

impl KeptShard {
    /// The shard's directory.
    pub fn dir(&self) -> &Path {
        self.dir.as_deref().expect("not adopted yet")
    }

    /// Moves the shard to `target` with `source` as its manifest's source (the probe digest is
    /// the graph's and stays). When `target` already holds a shard, this one is dropped.
    pub fn adopt(mut self, target: &Path, source: &str) -> Result<()> {
        let dir = self.dir.take().expect("adopted once");
        let result = (|| {
            if target.join(MANIFEST).is_file() {
                return Ok(());
            }
            let mpath = dir.join(MANIFEST);
            let bytes = std::fs::read(&mpath).map_err(|e| Error::io(&mpath, e))?;
            let mut m: ShardManifest = serde_json::from_slice(&bytes)
                .map_err(|e| Error::malformed(&mpath, "HNSW shard manifest", e))?;
            m.source = source.into();
            let json = serde_json::to_vec_pretty(&m).expect("a manifest serialises");
            std::fs::write(&mpath, json).map_err(|e| Error::io(&mpath, e))?;
            if let Some(parent) = target.parent() {
                std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
            }
            match std::fs::rename(&dir, target) {
                Ok(()) => Ok(()),
                Err(_) if target.join(MANIFEST).is_file() => Ok(()),
                Err(e) => Err(Error::io(target, e)),
            }
        })();
        let _ = std::fs::remove_dir_all(&dir);
        result
    }
}

impl Drop for KeptShard {
    fn drop(&mut self) {
        if let Some(d) = self.dir.take() {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

impl HnswShard {
    /// Closes the shard and keeps its directory as a [`KeptShard`].
    pub fn keep(self) -> KeptShard {
        let dir = self.dir.clone();
        drop(self);
        KeptShard { dir: Some(dir) }
    }
}

/// A directory beside the shard's final place, removed on drop unless disarmed (so a failed
/// build leaves nothing behind).
struct TempDir(Option<PathBuf>);

impl TempDir {
    fn create(parent: &Path, name: &str) -> Result<TempDir> {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = parent.join(format!(".{name}.building-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).map_err(|e| Error::io(&path, e))?;
        Ok(TempDir(Some(path)))
    }
    fn path(&self) -> &Path {
        self.0.as_deref().expect("armed")
    }
    fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            let _ = std::fs::remove_dir_all(p);
        }
    }
}

/// What [`HnswShard::open`] checks a manifest against.
#[derive(Debug, Clone, Copy)]
pub struct Expected<'a> {
    /// The caller's identity of the vectors.
    pub source: &'a str,
    /// Build settings.
    pub settings: HnswSettings,
    /// Points.
    pub points: usize,
    /// Vector width.
    pub dim: usize,
}

fn manifest_expectation(m: &ShardManifest) -> Expected<'_> {
    Expected {
        source: &m.source,
        settings: m.settings,
        points: m.points,
        dim: m.dim,
    }
}

/// The compressed copy a quantised shard keeps, always in RAM (the graph walk reads it for
/// every step; the originals, read only to rescore, may stay on disk).
fn quantization_config(q: Quantization) -> Option<QuantizationConfig> {
    match q {
        Quantization::None => None,
        Quantization::Int8 => Some(
            ScalarQuantizationConfig {
                r#type: ScalarType::Int8,
                quantile: None,
                always_ram: Some(true),
            }
            .into(),
        ),
        Quantization::Binary => Some(
            BinaryQuantizationConfig {
                always_ram: Some(true),
                encoding: None,
                query_encoding: None,
            }
            .into(),
        ),
    }
}

/// A quantised shard's search parameters: always rescored with the original vectors (so the
/// top `k` is ranked by float32 cosine, as the exact engine ranks), with `oversampling`
/// candidates per hit taken from the compressed walk. `None` for a float32 shard.
fn quantized(s: HnswSettings, oversampling: Option<f64>) -> Option<QuantizationSearchParams> {
    (!s.quantization.is_none()).then_some(QuantizationSearchParams {
        ignore: false,
        rescore: Some(true),
        oversampling,
    })
}

/// One segment, its graph built whatever its size and always used (see the module docs); the
/// payload in RAM (it is read for every hit).
fn edge_config(dim: usize, s: HnswSettings) -> EdgeConfig {
    let threads = rayon::current_num_threads().max(1);
    let mut params = EdgeVectorParams::builder(dim, Distance::Cosine).on_disk(s.on_disk);
    if let Some(q) = quantization_config(s.quantization) {
        params = params.quantization_config(q);
    }
    EdgeConfig::builder()
        .vector("", params.build())
        .hnsw_config(HnswIndexConfig {
            m: s.m,
            ef_construct: s.ef_construct,
            full_scan_threshold: 0,
            max_indexing_threads: threads,
            on_disk: Some(s.on_disk),
            payload_m: None,
            inline_storage: None,
        })
        .optimizers(EdgeOptimizersConfig {
            deleted_threshold: None,
            vacuum_min_vector_number: None,
            default_segment_number: Some(1),
            max_segment_size: Some(usize::MAX / 4),
            indexing_threshold: Some(1),
            prevent_unoptimized: None,
        })
        .on_disk_payload(false)
        .build()
}

fn search(
    shard: &EdgeShard,
    query: &[f32],
    k: usize,
    ef: usize,
    quantization: Option<QuantizationSearchParams>,
    with_payload: bool,
) -> std::result::Result<Vec<Hit>, String> {
    if k == 0 {
        return Ok(Vec::new());
    }
    let request = SearchRequest {
        query: QueryEnum::Nearest(NamedQuery::default_dense(query.to_vec())),
        filter: None,
        params: Some(SearchParams {
            hnsw_ef: Some(ef),
            exact: false,
            quantization,
            indexed_only: false,
            acorn: None,
        }),
        limit: k,
        offset: 0,
        with_payload: Some(WithPayloadInterface::Bool(with_payload)),
        with_vector: None,
        score_threshold: None,
    };
    let points = shard.search(request).map_err(|e| e.to_string())?;
    points
        .into_iter()
        .map(|p| {
            let point = match p.id {
                PointId::NumId(i) => i,
                other => return Err(format!("point {other:?} has no numeric id")),
            };
            let id = p
                .payload
                .as_ref()
                .and_then(|pl| pl.0.get(ID_FIELD))
                .and_then(|v| v.as_str())
                .map(str::to_owned);
            Ok(Hit {
                point,
                id,
                score: p.score,
            })
        })
        .collect()
}

/// BLAKE3 over the top-[`PROBE_K`] point ids of [`PROBES`] rows spread evenly over the matrix,
/// searched with `ef` = 64.
fn probe_digest(
    shard: &EdgeShard,
    settings: HnswSettings,
    vectors: &[f32],
    dim: usize,
    n: usize,
) -> std::result::Result<String, String> {
    let mut h = blake3::Hasher::new();
    let probes = PROBES.min(n);
    for p in 0..probes {
        let row = p * n / probes;
        let hits = search(
            shard,
            &vectors[row * dim..(row + 1) * dim],
            PROBE_K,
            64,
            quantized(settings, None),
            false,
        )?;
        h.update(&(row as u64).to_le_bytes());
        for hit in hits {
            h.update(&hit.point.to_le_bytes());
        }
    }
    Ok(h.finalize().to_hex().to_string())
}
