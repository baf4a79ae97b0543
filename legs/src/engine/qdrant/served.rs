//! The served engine itself (built with the `qdrant` feature).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use hopbench_datasets::export::{Export, MappedVectors};
use hopbench_datasets::hnsw::{self, Expected, Hit, HnswSettings, HnswShard};

use super::{shard_dir, QdrantSpec};
use crate::candidate::{top_k, Candidate};
use crate::engine::exact::dot;
use crate::engine::{Carried, Engine, EngineError, ExportRef, Failure, ShardFailure, Vectors};
use crate::leg::{LegError, QueryInput};

/// [`EngineKind::build`](crate::engine::EngineKind::build) of the engine.
pub(super) fn build(
    spec: &QdrantSpec,
    export: &Arc<Export>,
    vectors: Vectors,
) -> Result<Box<dyn Engine>, LegError> {
    Ok(Box::new(QdrantDense::new(export.clone(), vectors, spec)?))
}

/// The probe digest the shard manifest in `dir` records, or `not built`.
pub(super) fn probe_of(dir: &Path) -> String {
    std::fs::read(dir.join(hnsw::MANIFEST))
        .ok()
        .and_then(|b| serde_json::from_slice::<hnsw::ShardManifest>(&b).ok())
        .map_or_else(|| "not built".to_string(), |m| m.probe)
}

/// The shard's source identity as its manifest records it.
fn source(export: &Export, vectors: Vectors, settings: HnswSettings) -> String {
    hnsw::cache_source(&export.vectors_key(), vectors.column(), settings)
}

/// Open shards of this process, by directory (legs over one shard share it).
fn open_shards() -> &'static Mutex<HashMap<PathBuf, Weak<HnswShard>>> {
    static OPEN: OnceLock<Mutex<HashMap<PathBuf, Weak<HnswShard>>>> = OnceLock::new();
    OPEN.get_or_init(Default::default)
}

/// The verified shard of `export`'s `vectors` under `settings`: this process's open copy, the
/// cached one on disk, or a new build. Builds and opens are serialised per process (one HNSW
/// build at a time already uses every indexing thread).
pub fn shard_for(
    export: &Export,
    vectors: Vectors,
    settings: HnswSettings,
) -> Result<Arc<HnswShard>, LegError> {
    let dir = shard_dir(ExportRef::of(export), vectors, settings);
    let mut open = open_shards().lock().unwrap_or_else(|p| p.into_inner());
    if let Some(shard) = open.get(&dir).and_then(Weak::upgrade) {
        return Ok(shard);
    }
    // the vector file, checked: a cached shard's open reads a few probe rows from it, and a
    // build its rows a batch at a time
    let map = vectors.mapped(export)?;
    let src = source(export, vectors, settings);
    let expected = Expected {
        source: &src,
        settings,
        points: export.chunks.len(),
        dim: export.dim,
    };
    let shard = if dir.join(hnsw::MANIFEST).is_file() {
        HnswShard::open(&dir, &expected, &*map)
    } else {
        let ids: Vec<&str> = export.chunks.iter().map(|c| c.id.as_str()).collect();
        HnswShard::build(&dir, &src, &*map, export.dim, &ids, settings).map(|(s, _)| s)
    }
    .map_err(|e| {
        LegError::Engine(EngineError {
            engine: "qdrant",
            command: dir.display().to_string(),
            query_id: None,
            failure: Box::new(Failure::Shard(ShardFailure::Index(Carried::new(e)))),
        })
    })?;
    let shard = Arc::new(shard);
    open.insert(dir, Arc::downgrade(&shard));
    Ok(shard)
}

/// Dense search through a Qdrant HNSW shard of the export's vectors.
pub struct QdrantDense {
    export: Arc<Export>,
    /// The export's vectors, mapped: the hits are rescored over the rows they name.
    map: Arc<MappedVectors>,
    shard: Arc<HnswShard>,
    hnsw_ef: usize,
    oversampling: Option<f64>,
}

impl QdrantDense {
    /// The engine (builds or opens the shard); `ContentOnly` fails with `MissingInputs` where
    /// the export has no content-only vectors.
    pub fn new(export: Arc<Export>, vectors: Vectors, spec: &QdrantSpec) -> Result<Self, LegError> {
        vectors.available_in(&export)?;
        // the hits are scored exactly, over the export's own vectors, mapped
        let map = vectors.mapped(&export)?;
        let shard = shard_for(&export, vectors, spec.build)?;
        Ok(QdrantDense {
            export,
            map,
            shard,
            hnsw_ef: spec.hnsw_ef,
            oversampling: spec.oversampling,
        })
    }

    /// The top `k` chunks Qdrant returns for the vector `query`, scored exactly.
    pub fn search_vector(&self, query: &[f32], k: usize) -> Result<Vec<Candidate>, Failure> {
        let carried = |e| Failure::Search(Carried::new(e));
        let mut row = vec![0.0f32; self.export.dim];
        let hits = if self.shard.is_quantized() {
            // the compressed walk's pool, rescored here, and only the kept points named
            let pool = self
                .shard
                .pool(query, k, self.hnsw_ef, self.oversampling)
                .map_err(carried)?;
            let max = self.shard.max_pool(k, self.oversampling);
            let kept = best_of_pool(&pool, max, k, |point| {
                self.map.read_row(point, &mut row).map_err(carried)?;
                Ok(dot(query, &row))
            })?;
            let ids = self.shard.record_ids(&kept).map_err(carried)?;
            kept.into_iter()
                .zip(ids)
                .map(|(point, id)| Hit {
                    point,
                    id,
                    score: 0.0,
                })
                .collect()
        } else {
            self.shard
                .search(query, k, self.hnsw_ef, self.oversampling)
                .map_err(carried)?
        };
        candidates(
            &hits,
            k,
            |id| self.export.chunk_index(id),
            |chunk| {
                self.map
                    .read_row(chunk as usize, &mut row)
                    .map_err(|e| Failure::Search(Carried::new(e)))?;
                Ok(dot(query, &row))
            },
        )
    }
}

/// The points of a quantised shard's pool (at most `max` of them) that rank in the top `k` by
/// `score` (the exact score of a row; ties on ascending point), in that order. The pool's own
/// scores are the compressed vectors' and only choose it. A point that is not a row fails in
/// `score`; a repeated one stays repeated, for [`candidates`] to refuse by its record id.
fn best_of_pool(
    pool: &[(u64, f32)],
    max: usize,
    k: usize,
    mut score: impl FnMut(usize) -> Result<f32, Failure>,
) -> Result<Vec<u64>, Failure> {
    if pool.len() > max {
        return Err(Failure::TooMany {
            got: pool.len(),
            k: max,
        });
    }
    let mut scored = Vec::with_capacity(pool.len());
    for &(point, _) in pool {
        let row = usize::try_from(point).unwrap_or(usize::MAX);
        scored.push((point, score(row)?));
    }
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    scored.truncate(k);
    Ok(scored.into_iter().map(|(point, _)| point).collect())
}

/// Qdrant's hits as ranked candidates: each hit's chunk from its payload's record id (checked
/// against its point id), scored by `score`, ranked, cut at `k`.
fn candidates(
    hits: &[Hit],
    k: usize,
    chunk_of: impl Fn(&str) -> Option<u32>,
    mut score: impl FnMut(u32) -> Result<f32, Failure>,
) -> Result<Vec<Candidate>, Failure> {
    if hits.len() > k {
        return Err(Failure::TooMany { got: hits.len(), k });
    }
    let mut out = Vec::with_capacity(hits.len());
    let mut seen = std::collections::HashSet::with_capacity(hits.len());
    for (index, hit) in hits.iter().enumerate() {
        let Some(id) = hit.id.as_deref() else {
            return Err(Failure::MissingPayload { point: hit.point });
        };
        let Some(chunk) = chunk_of(id) else {
            return Err(Failure::UnknownId {
                index,
                id: id.into(),
            });
        };
        if u64::from(chunk) != hit.point {
            return Err(Failure::PointMismatch {
                point: hit.point,
                id: id.into(),
                chunk,
            });
        }
        if !seen.insert(chunk) {
            return Err(Failure::DuplicateId {
                index,
                id: id.into(),
            });
        }
        out.push(Candidate::new(chunk, score(chunk)?));
    }
    top_k(&mut out, k);
    Ok(out)
}

impl Engine for QdrantDense {
    fn name(&self) -> &'static str {
        "qdrant"
    }
    fn search(&self, query: &QueryInput<'_>, k: usize) -> Result<Vec<Candidate>, EngineError> {
        self.search_vector(query.embedding, k)
            .map_err(|failure| EngineError {
                engine: "qdrant",
                command: self.shard.dir().display().to_string(),
                query_id: Some(query.id.to_string()),
                failure: Box::new(failure),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(point: u64, id: Option<&str>) -> Hit {
        Hit {
            point,
            id: id.map(str::to_owned),
            score: 0.0,
        }
    }

    fn chunk_of(id: &str) -> Option<u32> {
        id.strip_prefix('c').and_then(|n| n.parse().ok())
    }

    #[test]
    fn hits_are_rescored_and_ranked_with_ties_on_ascending_chunk() {
        let hits = [hit(5, Some("c5")), hit(2, Some("c2")), hit(9, Some("c9"))];
        // chunk 9 scores highest; 2 and 5 tie, so 2 comes first whatever Qdrant's order
        let score = |c: u32| Ok(if c == 9 { 0.9 } else { 0.5 });
        let got = candidates(&hits, 3, chunk_of, score).unwrap();
        let order: Vec<u32> = got.iter().map(|c| c.chunk).collect();
        assert_eq!(order, vec![9, 2, 5]);
        assert_eq!(got[0].score, 0.9);
    }

    #[test]
    fn a_hit_without_a_record_id_is_an_error_not_a_shorter_list() {
        let hits = [hit(1, Some("c1")), hit(2, None)];
        let e = candidates(&hits, 5, chunk_of, |_| Ok(0.0)).unwrap_err();
        assert_eq!(e, Failure::MissingPayload { point: 2 });
        assert!(e.to_string().contains("point 2"), "{e}");
    }

    #[test]
    fn unknown_mismatched_and_repeated_ids_are_errors() {
        let e = candidates(&[hit(1, Some("zz"))], 5, chunk_of, |_| Ok(0.0)).unwrap_err();
        assert!(matches!(e, Failure::UnknownId { index: 0, .. }), "{e:?}");
        let e = candidates(&[hit(1, Some("c3"))], 5, chunk_of, |_| Ok(0.0)).unwrap_err();
        assert_eq!(
            e,
            Failure::PointMismatch {
                point: 1,
                id: "c3".into(),
                chunk: 3
            }
        );
        let e = candidates(
            &[hit(3, Some("c3")), hit(3, Some("c3"))],
            5,
            chunk_of,
            |_| Ok(0.0),
        )
        .unwrap_err();
        assert!(matches!(e, Failure::DuplicateId { index: 1, .. }), "{e:?}");
        let e = candidates(
            &[hit(3, Some("c3")), hit(4, Some("c4"))],
            1,
            chunk_of,
            |_| Ok(0.0),
        )
        .unwrap_err();
        assert_eq!(e, Failure::TooMany { got: 2, k: 1 });
    }

    #[test]
    fn a_pool_is_ranked_by_the_exact_scores_not_its_own() {
        // four points in the compressed walk's order and scores, for a top 2
        let pool = [(1, 0.9), (2, 0.8), (3, 0.7), (4, 0.6)];
        let exact = |row: usize| Ok([0.0, 0.1, 0.4, 0.3, 0.4][row]);
        // 2 and 4 tie exactly: 2 first
        assert_eq!(best_of_pool(&pool, 4, 2, exact).unwrap(), vec![2, 4]);
        assert_eq!(best_of_pool(&pool, 4, 9, exact).unwrap(), vec![2, 4, 3, 1]);
        assert_eq!(best_of_pool(&pool, 4, 0, exact).unwrap(), Vec::<u64>::new());
        let e = best_of_pool(&pool, 3, 2, exact).unwrap_err();
        assert_eq!(e, Failure::TooMany { got: 4, k: 3 });
        // a point that is not a row fails where its row is read
        let e = best_of_pool(&[(7, 0.5)], 4, 2, |row| {
            Err(Failure::UnknownId {
                index: row,
                id: "row".into(),
            })
        })
        .unwrap_err();
        assert!(matches!(e, Failure::UnknownId { index: 7, .. }), "{e:?}");
    }
}
