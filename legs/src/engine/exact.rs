//! The exact dense engine: cosine over L2-normalised vectors, i.e. a dot product per chunk.
//!
//! Scores come from [`hopbench_datasets::vector::dot`], whose summation order is fixed, so a score
//! is a pure function of the two vectors whatever the thread count. The vectors are held on the
//! heap up to [`HOLD_BYTES`] and streamed from the export's mapped vector file beyond it; the
//! ranking is the same either way.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock, Weak};

use hopbench_datasets::export::{Export, MappedVectors};
use hopbench_datasets::hnsw;
use hopbench_datasets::vectors_file::VectorSet;

use super::{no_params, Carried, Engine, EngineError, EngineKind, Failure, Side, SideKind};
use crate::params::Flat;
use crate::candidate::{top_k, Candidate};
use crate::leg::{LegError, QueryInput};

pub use hopbench_datasets::vector::dot;

/// `dense: {engine: exact}`: the exact scan, the dense side's built-in engine. It takes no
/// parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Exact;

impl EngineKind for Exact {
    const NAME: &'static str = "exact";
    const SIDES: &'static [SideKind] = &[SideKind::Dense];

    fn read(rest: &Flat) -> Result<Self, crate::params::ParamError> {
        no_params(Self::NAME, rest).map(|()| Exact)
    }
    fn write(&self) -> Flat {
        Flat::new()
    }
    fn build(&self, export: &Arc<Export>, side: Side) -> Result<Box<dyn super::Engine>, LegError> {
        match side {
            Side::Dense(vectors) => Ok(Box::new(ExactDense::new(export.clone(), vectors)?)),
            Side::Lexical => Err(side.refused(Self::NAME)),
        }
    }
}

/// Which vectors a dense search uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Vectors {
    /// Header + content (the export's `embedding`).
    Full,
    /// Content only (`embedding_content`; only where the dataset has context headers).
    ContentOnly,
}

impl Vectors {
    /// The export column these vectors are (`embedding`, `embedding_content`).
    pub fn column(self) -> &'static str {
        match self {
            Vectors::Full => "embedding",
            Vectors::ContentOnly => "embedding_content",
        }
    }

    /// `MissingInputs` where `export` lacks this vector set (content-only vectors exist only
    /// where the dataset has context headers), whichever engine would search it.
    pub fn available_in(self, export: &Export) -> Result<(), LegError> {
        if self == Vectors::ContentOnly {
            if let Some(why) = export.vectors_not_brought(VectorSet::Content) {
                return Err(LegError::MissingInputs(why));
            }
        }
        if self == Vectors::ContentOnly && !export.has_content_embeddings() {
            return Err(LegError::MissingInputs(
                "the dataset indexes the text alone already (protocol `text`), so there are no \
                 content-only vectors: `dense` is the text-alone run"
                    .into(),
            ));
        }
        Ok(())
    }

    /// These vectors of `export`, row-major, read on the first call ([`Export::embeddings`]);
    /// call [`Vectors::available_in`] first.
    pub fn rows(self, export: &Export) -> Result<&[f32], LegError> {
        Ok(match self {
            Vectors::Full => export.embeddings()?,
            Vectors::ContentOnly => export.content_embeddings()?.ok_or_else(|| {
                LegError::MissingInputs("the export has no content-only vectors".into())
            })?,
        })
    }

    /// These vectors of `export` as its mapped vector file ([`Export::mapped_vectors`]): this
    /// process's open copy, or the file opened (and checked against its hash) or written now.
    /// Every engine over the same file shares one copy, checked once.
    pub fn mapped(self, export: &Export) -> Result<Arc<MappedVectors>, LegError> {
        let path = hopbench_datasets::export::mapped_path(
            &export.dir,
            &export.vectors_key(),
            self.column(),
        );
        let mut open = open_maps().lock().unwrap_or_else(|p| p.into_inner());
        if let Some(map) = open.get(&path).and_then(Weak::upgrade) {
            return Ok(map);
        }
        let map = Arc::new(export.mapped_vectors(self.column())?);
        open.insert(path, Arc::downgrade(&map));
        Ok(map)
    }
}

/// Mapped vector files open in this process, by path.
fn open_maps() -> &'static Mutex<HashMap<PathBuf, Weak<MappedVectors>>> {
    static OPEN: OnceLock<Mutex<HashMap<PathBuf, Weak<MappedVectors>>>> = OnceLock::new();
    OPEN.get_or_init(Default::default)
}

/// The largest vector set the exact engine holds on the heap, in bytes. A larger one (a little
/// over a million 384-wide chunks) is scanned from the export's mapped vector file a block at a
/// time ([`Vectors::mapped`]): ten million such chunks are 15.4 GB of vectors, more than a
/// 24 GiB machine can hold beside the rest of a run. Either way the scores are [`dot`] of the
/// same floats and the ranking the same, so the choice changes memory, never a result.
pub const HOLD_BYTES: u64 = 2 << 30;

/// Rows per read of a streamed scan: 6 MB of 384-wide vectors, large enough that the reads run
/// at the page cache's speed, small enough to stay out of the resident set's account.
const SCAN_ROWS: usize = 4096;

/// Exact cosine over one of the export's vector sets.
pub struct ExactDense {
    export: Arc<Export>,
    vectors: Vectors,
    /// Where the rows are read from.
    source: Source,
}

/// Where an [`ExactDense`] reads its rows.
enum Source {
    /// The export's vectors, read onto the heap ([`Vectors::rows`]).
    Held,
    /// The export's mapped vector file, read a block at a time at its offsets (through the
    /// page cache, not the map: a scan of every row through the map would make the whole
    /// file resident).
    Streamed(Arc<MappedVectors>),
}

impl ExactDense {
    /// The engine; `ContentOnly` fails with `MissingInputs` where the export has no headers.
    /// Vectors of at most [`HOLD_BYTES`] are read onto the heap; larger ones are streamed from
    /// the mapped file, written beside the shards on first use.
    pub fn new(export: Arc<Export>, vectors: Vectors) -> Result<Self, LegError> {
        let bytes = (export.chunks.len() as u64) * (export.dim as u64) * 4;
        if bytes > HOLD_BYTES {
            Self::streamed(export, vectors)
        } else {
            Self::held(export, vectors)
        }
    }

    /// The engine with its vectors read onto the heap, whatever their size.
    pub fn held(export: Arc<Export>, vectors: Vectors) -> Result<Self, LegError> {
        vectors.available_in(&export)?;
        vectors.rows(&export)?;
        Ok(ExactDense {
            export,
            vectors,
            source: Source::Held,
        })
    }

    /// The engine scanning the mapped vector file, whatever its size.
    pub fn streamed(export: Arc<Export>, vectors: Vectors) -> Result<Self, LegError> {
        vectors.available_in(&export)?;
        let map = vectors.mapped(&export)?;
        Ok(ExactDense {
            export,
            vectors,
            source: Source::Streamed(map),
        })
    }

    /// Whether the rows are streamed from the mapped file rather than held.
    pub fn is_streamed(&self) -> bool {
        matches!(self.source, Source::Streamed(_))
    }

    /// The top `k` chunks by cosine to the vector `query`; a streamed scan fails, naming the
    /// file, when the file changed after its check or cannot be read.
    pub fn search_vector(&self, query: &[f32], k: usize) -> Result<Vec<Candidate>, Failure> {
        let dim = self.export.dim;
        match &self.source {
            Source::Held => {
                // `held` read these vectors, and a part of an export once read stays read
                let vectors = self
                    .vectors
                    .rows(&self.export)
                    .expect("the vectors were read by ExactDense::held");
                Ok(DenseIndex { vectors, dim }.search(query, k))
            }
            Source::Streamed(map) => scan(map.as_ref(), dim, query, k)
                .map_err(|e| Failure::Search(Carried::new(e))),
        }
    }
}

/// The top `k` rows of `rows` (row-major, `dim` wide) by [`dot`] with `query`, read
/// [`SCAN_ROWS`] at a time: each block's rows join the best `k` so far, and the best `k` of
/// the union are kept. Ranking is a total order (score, then ascending row), so the best `k`
/// of the whole are the best `k` of any split into blocks: the result is [`DenseIndex::search`]'s
/// over the same rows.
pub fn scan(
    rows: &(impl hnsw::Rows + ?Sized),
    dim: usize,
    query: &[f32],
    k: usize,
) -> hopbench_datasets::Result<Vec<Candidate>> {
    if dim == 0 || k == 0 {
        return Ok(Vec::new());
    }
    let total = rows.values() / dim;
    let mut block = vec![0.0f32; SCAN_ROWS.min(total) * dim];
    let mut best: Vec<Candidate> = Vec::with_capacity(k + SCAN_ROWS);
    let mut start = 0;
    while start < total {
        let n = SCAN_ROWS.min(total - start);
        let block = &mut block[..n * dim];
        rows.read_values(start * dim, block)?;
        best.extend(
            block
                .chunks_exact(dim)
                .enumerate()
                .map(|(i, v)| Candidate::new((start + i) as u32, dot(query, v))),
        );
        top_k(&mut best, k);
        start += n;
    }
    Ok(best)
}

impl Engine for ExactDense {
    fn name(&self) -> &'static str {
        "exact"
    }
    fn search(&self, query: &QueryInput<'_>, k: usize) -> Result<Vec<Candidate>, EngineError> {
        self.search_vector(query.embedding, k)
            .map_err(|failure| EngineError {
                engine: "exact",
                command: match &self.source {
                    Source::Held => self.export.dir.display().to_string(),
                    Source::Streamed(map) => map.path().display().to_string(),
                },
                query_id: Some(query.id.to_string()),
                failure: Box::new(failure),
            })
    }
}

/// Exact search over a row-major matrix of `dim`-wide vectors.
#[derive(Debug, Clone, Copy)]
pub struct DenseIndex<'a> {
    /// Row-major vectors.
    pub vectors: &'a [f32],
    /// Vector width.
    pub dim: usize,
}

impl DenseIndex<'_> {
    /// The top `k` chunks by cosine to `query`.
    pub fn search(&self, query: &[f32], k: usize) -> Vec<Candidate> {
        if self.dim == 0 {
            return Vec::new();
        }
        let mut all: Vec<Candidate> = self
            .vectors
            .chunks_exact(self.dim)
            .enumerate()
            .map(|(i, v)| Candidate::new(i as u32, dot(query, v)))
            .collect();
        top_k(&mut all, k);
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive(a: &[f32], b: &[f32]) -> f64 {
        a.iter().zip(b).map(|(x, y)| *x as f64 * *y as f64).sum()
    }

    #[test]
    fn dot_matches_naive_within_rounding_for_many_lengths() {
        let mut s = 1u64;
        let mut next = || {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) - 0.5
        };
        for n in [0, 1, 7, 8, 9, 16, 383, 384, 385] {
            let a: Vec<f32> = (0..n).map(|_| next()).collect();
            let b: Vec<f32> = (0..n).map(|_| next()).collect();
            assert!((dot(&a, &b) as f64 - naive(&a, &b)).abs() < 1e-4, "n = {n}");
        }
    }

    #[test]
    fn search_ranks_by_cosine_with_id_tiebreak() {
        // four 2-d unit vectors; chunks 1 and 2 are identical (a tie)
        let v = [1.0, 0.0, 0.6, 0.8, 0.6, 0.8, 0.0, 1.0];
        let idx = DenseIndex {
            vectors: &v,
            dim: 2,
        };
        let hits = idx.search(&[0.0, 1.0], 3);
        assert_eq!(
            hits.iter().map(|c| c.chunk).collect::<Vec<_>>(),
            vec![3, 1, 2]
        );
        assert_eq!(hits[1].score, hits[2].score);
    }

    /// Rows with many exact ties (each of a few patterns repeated), over more than two blocks.
    fn tied_rows(n: usize, dim: usize) -> Vec<f32> {
        (0..n)
            .flat_map(|i| {
                let pattern = (i * 7919) % 13;
                (0..dim).map(move |d| ((pattern * 31 + d * 17) % 11) as f32 / 11.0 - 0.4)
            })
            .collect()
    }

    #[test]
    fn a_scan_in_blocks_is_the_search_over_the_whole_matrix() {
        let dim = 5;
        for n in [0, 1, SCAN_ROWS - 1, SCAN_ROWS, 2 * SCAN_ROWS + 3] {
            let rows = tied_rows(n, dim);
            let whole = DenseIndex {
                vectors: &rows,
                dim,
            };
            for query in [[0.3, -0.1, 0.5, 0.2, -0.4], [0.0; 5]] {
                for k in [0, 1, 7, 100, n, n + 5] {
                    let scanned = scan(rows.as_slice(), dim, &query, k).unwrap();
                    let reference = whole.search(&query, k);
                    let bits = |c: &[Candidate]| -> Vec<(u32, u32)> {
                        c.iter().map(|c| (c.chunk, c.score.to_bits())).collect()
                    };
                    assert_eq!(bits(&scanned), bits(&reference), "n = {n}, k = {k}");
                }
            }
        }
    }

    #[test]
    fn streamed_rows_rank_as_held_rows_and_a_changed_file_is_refused() {
        use crate::rescue::fixtures::{embed, export_in};
        use hopbench_datasets::export::Parts;
        use hopbench_datasets::protocol::Protocol;

        let tmp = tempfile::tempdir().unwrap();
        let dim = 16;
        let export = Arc::new(export_in(
            &tmp.path().join("export"),
            || Ok(hopbench_datasets::synthetic::generate(&Default::default())),
            dim,
            Protocol::PUBLISHED,
            Parts::NONE,
        ));
        // the fake model's bag of words in 16 dimensions: many chunks tie
        let held = ExactDense::held(export.clone(), Vectors::Full).unwrap();
        let streamed = ExactDense::streamed(export.clone(), Vectors::Full).unwrap();
        assert!(!held.is_streamed() && streamed.is_streamed());
        assert!(!ExactDense::new(export.clone(), Vectors::Full).unwrap().is_streamed());
        let n = export.chunks.len();
        let mut ties = 0;
        for q in &export.queries {
            let query = embed(&q.text, dim);
            for k in [1, 10, n] {
                let a = held.search_vector(&query, k).unwrap();
                let b = streamed.search_vector(&query, k).unwrap();
                assert_eq!(a.len(), b.len());
                for (x, y) in a.iter().zip(&b) {
                    assert_eq!((x.chunk, x.score.to_bits()), (y.chunk, y.score.to_bits()));
                }
                ties += a.windows(2).filter(|w| w[0].score == w[1].score).count();
            }
        }
        assert!(ties > 0, "the fixture has tied scores to break");

        // the file rewritten in place after its check: the scan refuses it, naming it
        let Source::Streamed(map) = &streamed.source else {
            unreachable!()
        };
        let path = map.path().to_path_buf();
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[0] ^= 1;
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(&path, &bytes).unwrap();
        let err = streamed
            .search_vector(&embed("anything", dim), 3)
            .unwrap_err()
            .to_string();
        assert!(err.contains(&path.display().to_string()), "{err}");
        assert!(err.contains("changed after it was checked"), "{err}");
    }
}
