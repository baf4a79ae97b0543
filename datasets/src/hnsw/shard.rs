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

use super::{BuildCost, HnswSettings, Quantization, Rows, MANIFEST};
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
    /// How many parts the shard has, when more than one: part `p` holds rows
    /// `p * points / parts..(p + 1) * points / parts`, in `qdrant-<p>/` (`qdrant/` for the
    /// first). Absent for a shard of one part.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parts: Option<usize>,
}

impl ShardManifest {
    /// The parts' row ranges, in order.
    fn part_rows(&self) -> Vec<std::ops::Range<usize>> {
        part_ranges(self.points, self.parts.unwrap_or(1))
    }
}

/// Rows `0..n` cut into `parts` runs whose lengths differ by at most one (so no part is a
/// sliver too small for Qdrant to index).
fn part_ranges(n: usize, parts: usize) -> Vec<std::ops::Range<usize>> {
    let parts = parts.max(1);
    (0..parts)
        .map(|p| p * n / parts..(p + 1) * n / parts)
        .collect()
}

/// Where part `p` of a shard keeps Qdrant's files.
fn part_dir(shard_dir: &Path, p: usize) -> PathBuf {
    if p == 0 {
        shard_dir.join(QDRANT_DIR)
    } else {
        shard_dir.join(format!("{QDRANT_DIR}-{p}"))
    }
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
    /// One Qdrant shard per part, in row order.
    parts: Vec<EdgeShard>,
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
    /// record id `ids[i]`, into `dir`, which must not exist yet. The rows are read a batch at a
    /// time ([`Rows`]). The directory appears whole or not at all: everything is written beside
    /// it and renamed into place last. When another process put a shard there first, that one
    /// is opened (and verified) instead.
    pub fn build<R: Rows + ?Sized>(
        dir: &Path,
        source: &str,
        vectors: &R,
        dim: usize,
        ids: &[&str],
        settings: HnswSettings,
    ) -> Result<(HnswShard, BuildCost)> {
        settings.validate().map_err(|m| shard_err(dir, m))?;
        if dim == 0 || vectors.values() != ids.len() * dim {
            return Err(shard_err(
                dir,
                format!(
                    "{} vector values for {} ids of dimension {dim}",
                    vectors.values(),
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

        let n = ids.len();
        let parts = n.div_ceil(settings.part_points).max(1);
        let ranges = part_ranges(n, parts);
        let mut cost = BuildCost::default();
        for (p, rows) in ranges.iter().enumerate() {
            let qdir = part_dir(tmp.path(), p);
            build_part(&qdir, vectors, dim, ids, rows.clone(), settings, &mut cost)?;
        }
        let opened = (0..parts)
            .map(|p| load_part(&part_dir(tmp.path(), p)))
            .collect::<Result<Vec<_>>>()?;
        let manifest = ShardManifest {
            format: SHARD_FORMAT,
            engine: ENGINE.into(),
            source: source.into(),
            settings,
            points: n,
            dim,
            probe: probe_digest(&opened, settings, vectors, dim, n)?,
            parts: (parts > 1).then_some(parts),
        };
        drop(opened);
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
    pub fn open<R: Rows + ?Sized>(
        dir: &Path,
        expected: &Expected<'_>,
        vectors: &R,
    ) -> Result<HnswShard> {
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
        if vectors.values() != manifest.points * manifest.dim {
            return Err(shard_err(
                dir,
                format!(
                    "{} vector values given to verify {} points of dimension {}",
                    vectors.values(),
                    manifest.points,
                    manifest.dim
                ),
            ));
        }
        if let Some(p) = manifest.parts.filter(|&p| p < 2 || p > manifest.points) {
            return Err(field(
                "parts",
                p.to_string(),
                format!(
                    "2 to {} (one part is written without the field)",
                    manifest.points
                ),
            ));
        }
        let mut parts = Vec::new();
        for (p, rows) in manifest.part_rows().into_iter().enumerate() {
            let qdir = part_dir(dir, p);
            if !qdir.is_dir() {
                return Err(shard_err(
                    &qdir,
                    format!("is missing: part {p} (rows {}..{})", rows.start, rows.end),
                ));
            }
            let shard = load_part(&qdir)?;
            let info = shard.info();
            let n = rows.len();
            if info.points_count != n || (n > 0 && info.indexed_vectors_count != n) {
                return Err(shard_err(
                    &qdir,
                    format!(
                        "holds {} points, {} in the graph; its manifest says {n} (rows {}..{})",
                        info.points_count, info.indexed_vectors_count, rows.start, rows.end
                    ),
                ));
            }
            parts.push(shard);
        }
        let n = manifest.points;
        let probe = probe_digest(&parts, manifest.settings, vectors, manifest.dim, n)?;
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
            parts,
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
    /// Qdrant's order, each with Qdrant's score and the record id its payload carries. Over a
    /// quantised shard, see [`HnswShard::pool`] instead (this rescores through Qdrant).
    pub fn search(
        &self,
        query: &[f32],
        k: usize,
        ef: usize,
        oversampling: Option<f64>,
    ) -> Result<Vec<Hit>> {
        let q = quantized(self.manifest.settings, oversampling);
        search(&self.parts, query, k, ef, q, true).map_err(|e| shard_err(&self.dir, e))
    }

    /// Whether the shard walks compressed vectors (searched through [`HnswShard::pool`]).
    pub fn is_quantized(&self) -> bool {
        !self.manifest.settings.quantization.is_none()
    }

    /// A quantised shard's candidates for a top `k`, to be rescored by the caller: each part's
    /// top `k x oversampling` (Qdrant's own pool: `(oversampling * k) as usize` when
    /// `oversampling` is above 1, else `k`) by the walk over the compressed vectors, as `(point,
    /// compressed score)`, part after part, at most [`HnswShard::max_pool`]. Rescored with the
    /// original vectors and cut at `k`, the pool gives what Qdrant's rescoring gives, but the
    /// originals are read where the caller reads its rows (at their offsets), not through
    /// Qdrant's map of them, where every rescored row leaves the pages around it resident (213
    /// MB after 100 queries at 10^6 chunks; the whole file over a full query set). No payload is
    /// read: the kept points are named by [`HnswShard::record_ids`].
    pub fn pool(
        &self,
        query: &[f32],
        k: usize,
        ef: usize,
        oversampling: Option<f64>,
    ) -> Result<Vec<(u64, f32)>> {
        let size = pool_size(k, oversampling);
        let mut pool = Vec::with_capacity(size * self.parts.len());
        for part in &self.parts {
            let hits = search_part(part, query, size, ef, UNRESCORED, false)
                .map_err(|e| shard_err(&self.dir, e))?;
            pool.extend(hits.into_iter().map(|h| (h.point, h.score)));
        }
        Ok(pool)
    }

    /// The most candidates [`HnswShard::pool`] returns for a top `k`.
    pub fn max_pool(&self, k: usize, oversampling: Option<f64>) -> usize {
        pool_size(k, oversampling) * self.parts.len()
    }

    /// The record id each point's payload carries, in the order given (`None` for a point the
    /// shard does not hold or whose payload has none), read from the part that holds it.
    pub fn record_ids(&self, points: &[u64]) -> Result<Vec<Option<String>>> {
        let rows = self.manifest.part_rows();
        let mut out = vec![None; points.len()];
        for (part, range) in self.parts.iter().zip(&rows) {
            let (at, ids): (Vec<usize>, Vec<PointId>) = points
                .iter()
                .enumerate()
                .filter(|(_, &p)| range.contains(&(p as usize)))
                .map(|(i, &p)| (i, PointId::NumId(p)))
                .unzip();
            if ids.is_empty() {
                continue;
            }
            let records = part
                .retrieve(&ids, Some(WithPayloadInterface::Bool(true)), None)
                .map_err(|e| shard_err(&self.dir, e))?;
            let mut found: std::collections::HashMap<PointId, Option<String>> = records
                .into_iter()
                .map(|r| {
                    let id = record_id(r.payload.as_ref());
                    (r.id, id)
                })
                .collect();
            for (i, id) in at.into_iter().zip(&ids) {
                out[i] = found.remove(id).flatten();
            }
        }
        Ok(out)
    }

    /// The approximate top `k` point ids alone (no payload read), for graph building.
    pub fn search_points(&self, query: &[f32], k: usize, ef: usize) -> Result<Vec<(u64, f32)>> {
        let q = quantized(self.manifest.settings, None);
        search(&self.parts, query, k, ef, q, false)
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

/// Builds one part, rows `rows` of `vectors`, in `qdir`: upserted a batch at a time, indexed,
/// checked, flushed and closed (so its files' pages are no longer this process's while the next
/// part is built).
fn build_part<R: Rows + ?Sized>(
    qdir: &Path,
    vectors: &R,
    dim: usize,
    ids: &[&str],
    rows: std::ops::Range<usize>,
    settings: HnswSettings,
    cost: &mut BuildCost,
) -> Result<()> {
    std::fs::create_dir_all(qdir).map_err(|e| Error::io(qdir, e))?;
    let n = rows.len();
    {
        let shard =
            EdgeShard::new(qdir, edge_config(dim, settings)).map_err(|e| shard_err(qdir, e))?;
        let t = Instant::now();
        let mut batch = Vec::new();
        for start in rows.clone().step_by(UPSERT_BATCH) {
            let end = (start + UPSERT_BATCH).min(rows.end);
            batch.resize((end - start) * dim, 0.0);
            vectors.read_values(start * dim, &mut batch)?;
            let points = (start..end)
                .map(|i| {
                    let mut payload = serde_json::Map::new();
                    payload.insert(ID_FIELD.into(), ids[i].into());
                    let at = (i - start) * dim;
                    PointStruct::new(
                        PointId::NumId(i as u64),
                        &batch[at..at + dim],
                        serde_json::Value::Object(payload),
                    )
                    .into()
                })
                .collect();
            shard
                .update(UpdateOperation::PointOperation(
                    PointOperations::UpsertPoints(PointInsertOperations::PointsList(points)),
                ))
                .map_err(|e| shard_err(qdir, e))?;
        }
        cost.insert_secs += t.elapsed().as_secs_f64();
        let t = Instant::now();
        shard.optimize().map_err(|e| shard_err(qdir, e))?;
        cost.index_secs += t.elapsed().as_secs_f64();
        let info = shard.info();
        if info.points_count != n || (n > 0 && info.indexed_vectors_count != n) {
            return Err(shard_err(
                qdir,
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
    Ok(())
}

fn load_part(qdir: &Path) -> Result<EdgeShard> {
    EdgeShard::load(qdir, None).map_err(|e| shard_err(qdir, e))
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

/// The candidates a quantised search draws per part for a top `k`, as Qdrant sizes its
/// oversampled pool.
fn pool_size(k: usize, oversampling: Option<f64>) -> usize {
    match oversampling {
        Some(o) if o > 1.0 => (o * k as f64) as usize,
        _ => k,
    }
}

/// A quantised shard's walk with no rescoring: the pool, scored by the compressed vectors.
const UNRESCORED: Option<QuantizationSearchParams> = Some(QuantizationSearchParams {
    ignore: false,
    rescore: Some(false),
    oversampling: None,
});

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
/// payload mapped from its file, not read into RAM when the shard opens: a search reads the
/// record ids of its hits alone, a few pages, where the whole payload (some 100 MB per
/// 500,000 points) would stay resident for them.
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
        .on_disk_payload(true)
        .build()
}

/// The top `k` over every part: one part's hits in Qdrant's order; several parts' merged by
/// score, ties on ascending point (as Qdrant merges the segments of one shard).
fn search(
    parts: &[EdgeShard],
    query: &[f32],
    k: usize,
    ef: usize,
    quantization: Option<QuantizationSearchParams>,
    with_payload: bool,
) -> std::result::Result<Vec<Hit>, String> {
    if let [one] = parts {
        return search_part(one, query, k, ef, quantization, with_payload);
    }
    let mut hits = Vec::with_capacity(k * parts.len());
    for part in parts {
        hits.extend(search_part(part, query, k, ef, quantization, with_payload)?);
    }
    hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.point.cmp(&b.point)));
    hits.truncate(k);
    Ok(hits)
}

fn search_part(
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
            let id = record_id(p.payload.as_ref());
            Ok(Hit {
                point,
                id,
                score: p.score,
            })
        })
        .collect()
}

/// The record id a point's payload carries under [`ID_FIELD`], if any.
fn record_id(payload: Option<&qdrant_edge::Payload>) -> Option<String> {
    payload
        .and_then(|pl| pl.0.get(ID_FIELD))
        .and_then(|v| v.as_str())
        .map(str::to_owned)
}

/// BLAKE3 over the top-[`PROBE_K`] point ids of [`PROBES`] rows spread evenly over the matrix,
/// searched with `ef` = 64.
fn probe_digest<R: Rows + ?Sized>(
    parts: &[EdgeShard],
    settings: HnswSettings,
    vectors: &R,
    dim: usize,
    n: usize,
) -> Result<String> {
    let mut h = blake3::Hasher::new();
    let probes = PROBES.min(n);
    let mut query = vec![0.0f32; dim];
    for p in 0..probes {
        let row = p * n / probes;
        vectors.read_values(row * dim, &mut query)?;
        let hits = search(parts, &query, PROBE_K, 64, quantized(settings, None), false)
            .map_err(|e| shard_err(parts[0].path(), e))?;
        h.update(&(row as u64).to_le_bytes());
        for hit in hits {
            h.update(&hit.point.to_le_bytes());
        }
    }
    Ok(h.finalize().to_hex().to_string())
}
