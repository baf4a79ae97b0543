//! The chunk similarity graph (the CKF graph of CRP-SPEC-009 §5 as hopbench builds it).
//!
//! At prepare time every chunk gets its `k` nearest neighbours by cosine over the export's
//! header+content vectors (exact brute force), kept where the similarity is at least
//! `min_similarity`. The kNN relation is symmetrised: `a ~ b` when either side kept the other; the
//! edge weight is their cosine (identical from both sides: [`dot`] is symmetric bit for bit).
//! Among equally similar neighbours the lower chunk id wins. Communities are the same
//! deterministic Louvain the knowledge graph uses, seeded with `community_seed`.
//!
//! **At scale.** The exact scan is quadratic: fine for the real sets (6,119 chunks: 18.7M dot
//! products), impossible at a million. Above `hnsw_above` chunks (`engine: auto`, the
//! default), or always with `engine: hnsw`, each chunk's `k` nearest neighbours come from an
//! HNSW index of the same vectors (Qdrant's, [`crate::hnsw`]; the `qdrant` build feature),
//! scored with the same [`dot`] and cut by the same rules, so only the index's misses differ.
//! Where the exact graph is affordable (at most `hnsw_above` chunks) an HNSW build also builds
//! it and records the edge recall (the share of the exact graph's edges the HNSW graph has) in
//! the export manifest's `stats.simgraph_hnsw`. An HNSW graph is a random structure (see
//! [`crate::hnsw`]): two builds of the same export can differ in a few edges; the export's
//! content hash says which one a cell used.
//!
//! Determinism: each chunk's similarities are computed independently with the fixed-order
//! [`dot`] (the same eight-lane summation as the legs' dense search), each pair once (`i < j`,
//! reused for both rows), and each row's list is sorted before it is cut, so the graph is the
//! same bits at any rayon thread count.
//!
//! ```text
//! simgraph-edges.parquet        a, b, weight     (a < b, rows sorted by (a, b))
//! simgraph-communities.parquet  chunk, community (one row per chunk, in chunk order)
//! ```

use std::path::Path;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::csr::Csr;
use crate::enrich::louvain;
use crate::error::{Error, Result};
use crate::hnsw::SettingError;
use crate::parquet_io as pq;

/// The similarity graph's files in an export.
pub const SIMGRAPH_FILES: [&str; 2] = ["simgraph-edges.parquet", "simgraph-communities.parquet"];

/// Which engine finds each chunk's nearest neighbours.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SimGraphEngine {
    /// Exact up to `hnsw_above` chunks, HNSW above.
    #[default]
    Auto,
    /// Every pair (quadratic).
    Exact,
    /// An HNSW index (needs the `qdrant` build feature).
    Hnsw,
}

/// The beam width of the HNSW neighbour searches by default.
const DEFAULT_HNSW_EF: usize = 128;
/// Above this many chunks `engine: auto` uses HNSW.
const DEFAULT_HNSW_ABOVE: usize = 50_000;

/// Similarity-graph settings (hashed into the export's input key; the engine settings are
/// written only where they differ from the defaults, so the keys of exports made before they
/// existed are unchanged).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SimGraphConfig {
    /// Nearest neighbours kept per chunk before symmetrising (SPEC-009's HNSW K).
    pub k: usize,
    /// Minimum cosine for a kept neighbour (SPEC-009 §5.2).
    pub min_similarity: f32,
    /// Louvain seed for the communities.
    pub community_seed: u64,
    /// Which engine finds the neighbours.
    #[serde(skip_serializing_if = "is_default")]
    pub engine: SimGraphEngine,
    /// `engine: auto` builds the exact graph up to this many chunks, the HNSW one above.
    #[serde(skip_serializing_if = "is_default_above")]
    pub hnsw_above: usize,
    /// The HNSW index's build settings.
    #[serde(skip_serializing_if = "is_default")]
    pub hnsw: crate::hnsw::HnswSettings,
    /// The beam width of each neighbour search (`k + 1` where that is wider).
    #[serde(skip_serializing_if = "is_default_ef")]
    pub hnsw_ef: usize,
}

fn is_default<T: Default + PartialEq>(v: &T) -> bool {
    *v == T::default()
}
fn is_default_above(v: &usize) -> bool {
    *v == DEFAULT_HNSW_ABOVE
}
fn is_default_ef(v: &usize) -> bool {
    *v == DEFAULT_HNSW_EF
}

impl Default for SimGraphConfig {
    fn default() -> Self {
        SimGraphConfig {
            k: 20,
            min_similarity: 0.60,
            community_seed: 42,
            engine: SimGraphEngine::Auto,
            hnsw_above: DEFAULT_HNSW_ABOVE,
            hnsw: crate::hnsw::HnswSettings::default(),
            hnsw_ef: DEFAULT_HNSW_EF,
        }
    }
}

/// A built similarity graph, and what its HNSW build leaves.
#[derive(Debug)]
pub struct SimGraphBuild {
    /// The graph.
    pub graph: SimGraph,
    /// What the manifest records of an HNSW build (`None`: exact).
    pub hnsw: Option<HnswGraphStats>,
    /// The HNSW index, for the dense engine's cache (`None`: exact).
    pub shard: Option<crate::hnsw::KeptShard>,
}

/// What the manifest records of an HNSW-built graph.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HnswGraphStats {
    /// Build settings.
    pub settings: crate::hnsw::HnswSettings,
    /// Beam width of the neighbour searches.
    pub hnsw_ef: usize,
    /// Edges of the exact graph, where it was built as the reference.
    pub exact_edges: Option<usize>,
    /// Share of the exact graph's edges the HNSW graph has (same weights: both use [`dot`]).
    pub edge_recall: Option<f64>,
}

impl SimGraphConfig {
    /// Checks the ranges (`min_similarity` in [-1, 1]).
    pub fn validate(&self) -> std::result::Result<(), SettingError> {
        if !(self.min_similarity >= -1.0 && self.min_similarity <= 1.0) {
            return Err(SettingError::new(
                "min_similarity",
                self.min_similarity,
                "a number in [-1, 1]",
            ));
        }
        self.hnsw.validate().map_err(|e| e.within("hnsw"))?;
        if self.hnsw_ef == 0 {
            return Err(SettingError::new("hnsw_ef", 0, "at least 1"));
        }
        Ok(())
    }

    /// Whether the graph of `n` chunks is built through HNSW.
    pub fn uses_hnsw(&self, n: usize) -> bool {
        match self.engine {
            SimGraphEngine::Exact => false,
            SimGraphEngine::Hnsw => true,
            SimGraphEngine::Auto => n > self.hnsw_above,
        }
    }
}

pub use crate::vector::dot;

/// The similarity graph in CSR form, with its communities.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SimGraph {
    /// Row `i`: chunk `i`'s `(neighbour, weight)`, sorted by ascending neighbour.
    adj: Csr<(u32, f32)>,
    /// Community of each chunk (canonical Louvain labels).
    communities: Vec<u32>,
}

impl SimGraph {
    /// Builds the graph over `n = embeddings.len() / dim` row-major, L2-normalised vectors.
    pub fn build(embeddings: &[f32], dim: usize, cfg: &SimGraphConfig) -> SimGraph {
        let n = embeddings.len().checked_div(dim).unwrap_or(0);
        let edges = knn_edges(embeddings, dim, cfg);
        let communities = louvain(n, &edges, cfg.community_seed);
        SimGraph::from_parts(n, &edges, communities)
    }

    /// Builds the graph with the engine `cfg` resolves to for this many chunks (see the module
    /// docs). An HNSW index is built in a directory under `scratch`, its point `i` carrying
    /// record id `ids[i]`, and handed back ([`SimGraphBuild::shard`]) for the dense engine's
    /// cache; what the manifest records of the build comes back too.
    pub fn build_with(
        embeddings: &[f32],
        dim: usize,
        cfg: &SimGraphConfig,
        ids: &[&str],
        scratch: &Path,
    ) -> Result<SimGraphBuild> {
        let n = embeddings.len().checked_div(dim).unwrap_or(0);
        if !cfg.uses_hnsw(n) {
            return Ok(SimGraphBuild {
                graph: SimGraph::build(embeddings, dim, cfg),
                hnsw: None,
                shard: None,
            });
        }
        let (edges, shard) = hnsw_knn_edges(embeddings, dim, cfg, ids, scratch)?;
        let (exact_edges, edge_recall) = if n <= cfg.hnsw_above {
            let exact = knn_edges(embeddings, dim, cfg);
            (Some(exact.len()), Some(edge_recall(&exact, &edges)))
        } else {
            (None, None)
        };
        let communities = louvain(n, &edges, cfg.community_seed);
        let stats = HnswGraphStats {
            settings: cfg.hnsw,
            hnsw_ef: cfg.hnsw_ef,
            exact_edges,
            edge_recall,
        };
        Ok(SimGraphBuild {
            graph: SimGraph::from_parts(n, &edges, communities),
            hnsw: Some(stats),
            shard,
        })
    }

    /// A graph over `n` chunks without edges (every chunk its own community).
    pub fn empty(n: usize) -> SimGraph {
        SimGraph::from_parts(n, &[], (0..n as u32).collect())
    }

    /// From undirected edges `(a, b, w)` (`a < b < n`, unique pairs) and `n` community labels.
    pub fn from_parts(n: usize, edges: &[(u32, u32, f32)], communities: Vec<u32>) -> SimGraph {
        assert_eq!(communities.len(), n, "one community per chunk");
        SimGraph {
            adj: Csr::undirected(n, edges.iter().copied()),
            communities,
        }
    }

    /// Number of chunks.
    pub fn len(&self) -> usize {
        self.communities.len()
    }

    /// Whether the graph has no chunks.
    pub fn is_empty(&self) -> bool {
        self.communities.is_empty()
    }

    /// Chunk `chunk`'s neighbours `(chunk, cosine)`, ascending by chunk.
    pub fn neighbours(&self, chunk: u32) -> &[(u32, f32)] {
        self.adj.row(chunk as usize)
    }

    /// The weight of edge `a ~ b`, if there is one (binary search).
    pub fn weight(&self, a: u32, b: u32) -> Option<f32> {
        let run = self.neighbours(a);
        run.binary_search_by_key(&b, |e| e.0).ok().map(|p| run[p].1)
    }

    /// Community of `chunk`.
    pub fn community(&self, chunk: u32) -> u32 {
        self.communities[chunk as usize]
    }

    /// Undirected edge count.
    pub fn num_edges(&self) -> usize {
        self.adj.len() / 2
    }

    /// Distinct communities.
    pub fn num_communities(&self) -> usize {
        self.communities.iter().max().map_or(0, |&m| m as usize + 1)
    }

    /// The undirected edges `(a, b, w)` with `a < b`, sorted by `(a, b)`.
    pub fn edges(&self) -> Vec<(u32, u32, f32)> {
        (0..self.len() as u32)
            .flat_map(|a| {
                self.neighbours(a)
                    .iter()
                    .filter(move |e| e.0 > a)
                    .map(move |&(b, w)| (a, b, w))
            })
            .collect()
    }

    /// Writes the two files of [`SIMGRAPH_FILES`] into `dir`.
    pub fn write(&self, dir: &Path) -> Result<()> {
        let e = self.edges();
        pq::write(
            &dir.join(SIMGRAPH_FILES[0]),
            vec![
                ("a", pq::u32s(&e.iter().map(|e| e.0).collect::<Vec<_>>())),
                ("b", pq::u32s(&e.iter().map(|e| e.1).collect::<Vec<_>>())),
                (
                    "weight",
                    pq::f32s(&e.iter().map(|e| e.2).collect::<Vec<_>>()),
                ),
            ],
        )?;
        let n = self.len() as u32;
        pq::write(
            &dir.join(SIMGRAPH_FILES[1]),
            vec![
                ("chunk", pq::u32s(&(0..n).collect::<Vec<_>>())),
                ("community", pq::u32s(&self.communities)),
            ],
        )
    }

    /// Reads and validates the files of [`SIMGRAPH_FILES`] for an `n`-chunk corpus. Errors name
    /// the file, the row and the column.
    pub fn read(dir: &Path, n: usize) -> Result<SimGraph> {
        let path = dir.join(SIMGRAPH_FILES[0]);
        let table = pq::Table::read(&path)?;
        let cols = table.columns();
        let (a, b, w) = (cols.u32s("a")?, cols.u32s("b")?, cols.f32s("weight")?);
        let mut edges = Vec::with_capacity(a.len());
        for row in 0..a.len() {
            let bad = |field: &str, msg: String| {
                Err(Error::field(&path, format!("row {row}"), field, msg))
            };
            if a[row] as usize >= n {
                return bad(
                    "a",
                    format!("chunk {} is not in the {n}-chunk corpus", a[row]),
                );
            }
            if b[row] as usize >= n {
                return bad(
                    "b",
                    format!("chunk {} is not in the {n}-chunk corpus", b[row]),
                );
            }
            if a[row] >= b[row] {
                return bad(
                    "b",
                    format!("{} is not greater than a = {}", b[row], a[row]),
                );
            }
            if row > 0 && (a[row - 1], b[row - 1]) >= (a[row], b[row]) {
                return bad("a", "rows are not sorted by unique (a, b)".into());
            }
            if !(w[row] >= -1.0 - 1e-4 && w[row] <= 1.0 + 1e-4) {
                return bad("weight", format!("{} is not a cosine", w[row]));
            }
            edges.push((a[row], b[row], w[row]));
        }
        let path = dir.join(SIMGRAPH_FILES[1]);
        let table = pq::Table::read(&path)?;
        let cols = table.columns();
        let (chunk, community) = (cols.u32s("chunk")?, cols.u32s("community")?);
        if chunk.len() != n {
            return Err(Error::field(
                &path,
                "file",
                "chunk",
                format!("has {} rows for {n} chunks", chunk.len()),
            ));
        }
        for row in 0..n {
            if chunk[row] as usize != row {
                return Err(Error::field(
                    &path,
                    format!("row {row}"),
                    "chunk",
                    format!("is {}, expected {row} (rows in chunk order)", chunk[row]),
                ));
            }
            if community[row] as usize >= n {
                return Err(Error::field(
                    &path,
                    format!("row {row}"),
                    "community",
                    format!("{} is not a community label of {n} chunks", community[row]),
                ));
            }
        }
        Ok(SimGraph::from_parts(n, &edges, community))
    }
}

/// The symmetrised kNN edges `(a, b, cosine)` with `a < b`, sorted by `(a, b)`.
pub fn knn_edges(embeddings: &[f32], dim: usize, cfg: &SimGraphConfig) -> Vec<(u32, u32, f32)> {
    if dim == 0 || cfg.k == 0 {
        return Vec::new();
    }
    let n = embeddings.len() / dim;
    let row = |i: usize| &embeddings[i * dim..(i + 1) * dim];
    let thr = cfg.min_similarity;
    // upper triangle: each pair once, rows independent (any thread count gives the same lists)
    let upper: Vec<Vec<(u32, f32)>> = (0..n)
        .into_par_iter()
        .map(|i| {
            let vi = row(i);
            let mut out = Vec::new();
            for j in i + 1..n {
                let s = dot(vi, row(j));
                if s >= thr {
                    out.push((j as u32, s));
                }
            }
            out
        })
        .collect();
    // full rows: the lower half is the transpose of the upper (dot is symmetric bit for bit)
    let mut full: Vec<Vec<(u32, f32)>> = vec![Vec::new(); n];
    for (i, run) in upper.iter().enumerate() {
        for &(j, s) in run {
            full[j as usize].push((i as u32, s));
        }
    }
    for (i, run) in upper.into_iter().enumerate() {
        full[i].extend(run);
    }
    let kept: Vec<Vec<(u32, f32)>> = full
        .into_par_iter()
        .map(|mut run| {
            run.sort_by(|x, y| y.1.total_cmp(&x.1).then(x.0.cmp(&y.0)));
            run.truncate(cfg.k);
            run
        })
        .collect();
    symmetrise(&kept)
}

/// Undirected edges `(a, b, weight)`, `a < b`, sorted by pair.
type Edges = Vec<(u32, u32, f32)>;

/// The undirected edges of per-chunk neighbour lists: `a ~ b` when either kept the other.
fn symmetrise(kept: &[Vec<(u32, f32)>]) -> Vec<(u32, u32, f32)> {
    let mut edges: Vec<(u32, u32, f32)> = kept
        .iter()
        .enumerate()
        .flat_map(|(i, run)| {
            run.iter().map(move |&(j, s)| {
                let i = i as u32;
                if i < j {
                    (i, j, s)
                } else {
                    (j, i, s)
                }
            })
        })
        .collect();
    edges.sort_by_key(|e| (e.0, e.1));
    edges.dedup_by(|x, y| (x.0, x.1) == (y.0, y.1));
    edges
}

/// The share of `exact`'s edges (as pairs) that `approx` has; 1 when `exact` has none. Both
/// lists are sorted by pair.
pub fn edge_recall(exact: &[(u32, u32, f32)], approx: &[(u32, u32, f32)]) -> f64 {
    if exact.is_empty() {
        return 1.0;
    }
    let found = exact
        .iter()
        .filter(|e| {
            approx
                .binary_search_by_key(&(e.0, e.1), |a| (a.0, a.1))
                .is_ok()
        })
        .count();
    found as f64 / exact.len() as f64
}

/// [`knn_edges`] with each chunk's candidates from an HNSW index: its `k + 1` approximate
/// nearest points (itself among them, usually), scored with [`dot`], thresholded, sorted and
/// cut exactly as the exact scan's lists are. A build without Qdrant's engine says how to build
/// the graph instead.
fn hnsw_knn_edges(
    embeddings: &[f32],
    dim: usize,
    cfg: &SimGraphConfig,
    ids: &[&str],
    scratch: &Path,
) -> Result<(Edges, Option<crate::hnsw::KeptShard>)> {
    if !crate::hnsw::BUILT {
        let n = embeddings.len().checked_div(dim).unwrap_or(0);
        return Err(Error::Config {
            context: "prepare config `simgraph`".into(),
            message: format!(
                "the similarity graph of {n} chunks is to be built through HNSW (engine {:?}, \
                 hnsw_above {}), which needs hopbench built with `--features qdrant`; or set \
                 `simgraph: {{engine: exact}}` (every pair: {n}² dot products)",
                cfg.engine, cfg.hnsw_above
            ),
        });
    }
    if dim == 0 || cfg.k == 0 {
        return Ok((Vec::new(), None));
    }
    let n = embeddings.len() / dim;
    let row = |i: usize| &embeddings[i * dim..(i + 1) * dim];
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let dir = scratch.join(format!(
        ".simgraph-hnsw-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    let (shard, _) =
        crate::hnsw::HnswShard::build(&dir, "simgraph", embeddings, dim, ids, cfg.hnsw)?;
    let rows = (0..n)
        .into_par_iter()
        .map(|i| {
            let hits = shard.search_points(row(i), cfg.k + 1, cfg.hnsw_ef.max(cfg.k + 1))?;
            let mut run: Vec<(u32, f32)> = hits
                .into_iter()
                .filter(|&(p, _)| p as usize != i)
                .map(|(p, _)| (p as u32, dot(row(i), row(p as usize))))
                .filter(|&(_, s)| s >= cfg.min_similarity)
                .collect();
            run.sort_by(|x, y| y.1.total_cmp(&x.1).then(x.0.cmp(&y.0)));
            run.truncate(cfg.k);
            Ok(run)
        })
        .collect::<Result<Vec<_>>>();
    // the shard is removed when the kept handle drops, on the error path too
    let kept = shard.keep();
    Ok((symmetrise(&rows?), Some(kept)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` unit vectors of width `dim` around `clusters` centroids (deterministic LCG).
    pub(crate) fn clustered(n: usize, dim: usize, clusters: usize, noise: f32) -> Vec<f32> {
        let mut s = 7u64;
        let mut next = move || {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) - 0.5
        };
        let cents: Vec<f32> = (0..clusters * dim).map(|_| next()).collect();
        let mut out = Vec::with_capacity(n * dim);
        for i in 0..n {
            let c = &cents[(i % clusters) * dim..(i % clusters + 1) * dim];
            let v: Vec<f32> = c.iter().map(|x| x + noise * next()).collect();
            let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            out.extend(v.iter().map(|x| x / norm));
        }
        out
    }

    #[test]
    fn simgraph_dot_matches_naive() {
        let v = clustered(3, 385, 3, 0.1);
        let (a, b) = (&v[..385], &v[385..770]);
        let naive: f64 = a.iter().zip(b).map(|(x, y)| *x as f64 * *y as f64).sum();
        assert!((dot(a, b) as f64 - naive).abs() < 1e-5);
        assert_eq!(dot(a, b).to_bits(), dot(b, a).to_bits());
    }

    #[test]
    fn simgraph_knn_threshold_symmetrise_and_ties() {
        // 2-d: chunk 0 = (1,0); chunks 1 and 2 identical at 0.8 from 0; chunk 3 orthogonal to 0
        let v = [1.0, 0.0, 0.8, 0.6, 0.8, 0.6, 0.0, 1.0];
        let cfg = SimGraphConfig {
            k: 1,
            ..Default::default()
        };
        // 0's best: 1 and 2 tie at 0.8, the lower id (1) wins; 1's best: 2 (1.0); 2's best: 1;
        // 3's best: 1 and 2 tie at 0.6, 1 wins
        let e = knn_edges(&v, 2, &cfg);
        assert_eq!(
            e.iter().map(|e| (e.0, e.1)).collect::<Vec<_>>(),
            vec![(0, 1), (1, 2), (1, 3)]
        );
        let g = SimGraph::build(&v, 2, &cfg);
        assert_eq!(
            g.neighbours(1).iter().map(|e| e.0).collect::<Vec<_>>(),
            vec![0, 2, 3]
        );
        assert_eq!(g.weight(3, 1), g.weight(1, 3));
        assert!(g.weight(0, 3).is_none());
        assert_eq!(g.num_edges(), 3);
        // the threshold drops the 0.6 pair
        let cfg = SimGraphConfig {
            k: 1,
            min_similarity: 0.7,
            ..Default::default()
        };
        assert_eq!(knn_edges(&v, 2, &cfg).len(), 2);
        assert!(SimGraph::build(&v, 2, &cfg).neighbours(3).is_empty());
    }

    #[test]
    fn simgraph_is_the_same_bits_at_one_and_two_threads() {
        let v = clustered(600, 48, 20, 0.9);
        let cfg = SimGraphConfig::default();
        let run = |threads: usize| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(|| SimGraph::build(&v, 48, &cfg))
        };
        let (g1, g2) = (run(1), run(2));
        assert!(g1.num_edges() > 600, "{}", g1.num_edges());
        let bits = |g: &SimGraph| {
            g.edges()
                .iter()
                .map(|e| (e.0, e.1, e.2.to_bits()))
                .collect::<Vec<_>>()
        };
        assert_eq!(bits(&g1), bits(&g2));
        assert_eq!(g1.communities, g2.communities);
        assert!(g1.num_communities() > 1 && g1.num_communities() < 600);
    }

    #[test]
    fn simgraph_round_trips_and_refuses_bad_rows() {
        let v = clustered(50, 16, 5, 0.5);
        let g = SimGraph::build(&v, 16, &SimGraphConfig::default());
        let tmp = tempfile::tempdir().unwrap();
        g.write(tmp.path()).unwrap();
        assert_eq!(SimGraph::read(tmp.path(), 50).unwrap(), g);
        let err = SimGraph::read(tmp.path(), 49).unwrap_err().to_string();
        assert!(err.contains("simgraph-"), "{err}");
        pq::write(
            &tmp.path().join(SIMGRAPH_FILES[0]),
            vec![
                ("a", pq::u32s(&[0, 3])),
                ("b", pq::u32s(&[1, 2])),
                ("weight", pq::f32s(&[0.7, 0.7])),
            ],
        )
        .unwrap();
        let err = SimGraph::read(tmp.path(), 50).unwrap_err().to_string();
        assert!(
            err.contains("simgraph-edges.parquet") && err.contains("row 1") && err.contains("`b`"),
            "{err}"
        );
    }

    #[test]
    fn edge_recall_counts_the_exact_pairs_found() {
        let exact = [(0, 1, 0.9), (0, 2, 0.8), (1, 3, 0.7), (2, 3, 0.65)];
        let approx = [(0, 1, 0.9), (1, 3, 0.7), (1, 4, 0.62)];
        assert_eq!(edge_recall(&exact, &approx), 0.5);
        assert_eq!(edge_recall(&[], &approx), 1.0);
        assert_eq!(edge_recall(&exact, &[]), 0.0);
    }

    #[test]
    fn the_exact_engine_is_used_up_to_the_threshold_and_the_config_key_is_unchanged() {
        let v = clustered(120, 16, 6, 0.5);
        let tmp = tempfile::tempdir().unwrap();
        let cfg = SimGraphConfig::default();
        assert!(!cfg.uses_hnsw(50_000) && cfg.uses_hnsw(50_001));
        let ids = vec!["c"; 120];
        let b = SimGraph::build_with(&v, 16, &cfg, &ids, tmp.path()).unwrap();
        assert_eq!(b.graph, SimGraph::build(&v, 16, &cfg));
        assert!(b.hnsw.is_none() && b.shard.is_none());
        // the engine settings are not written at their defaults: export keys stay as they were
        let json = serde_json::to_value(&cfg).unwrap();
        let mut keys: Vec<&String> = json.as_object().unwrap().keys().collect();
        keys.sort();
        assert_eq!(keys, ["community_seed", "k", "min_similarity"]);
    }

    #[cfg(not(feature = "qdrant"))]
    #[test]
    fn above_the_threshold_a_build_without_hnsw_says_what_to_do() {
        let v = clustered(30, 8, 3, 0.5);
        let cfg = SimGraphConfig {
            hnsw_above: 10,
            ..Default::default()
        };
        let tmp = tempfile::tempdir().unwrap();
        let e = SimGraph::build_with(&v, 8, &cfg, &["c"; 30], tmp.path())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--features qdrant") && e.contains("engine: exact"),
            "{e}"
        );
    }

    #[cfg(feature = "qdrant")]
    #[test]
    fn an_hnsw_graph_finds_the_exact_edges_and_says_how_many() {
        let v = clustered(600, 24, 30, 0.6);
        let tmp = tempfile::tempdir().unwrap();
        let cfg = SimGraphConfig {
            engine: SimGraphEngine::Hnsw,
            ..Default::default()
        };
        let names: Vec<String> = (0..600).map(|i| format!("c{i:03}")).collect();
        let ids: Vec<&str> = names.iter().map(String::as_str).collect();
        let b = SimGraph::build_with(&v, 24, &cfg, &ids, tmp.path()).unwrap();
        let g = b.graph;
        let stats = b.hnsw.expect("an HNSW build reports itself");
        let exact = knn_edges(&v, 24, &cfg);
        assert_eq!(stats.exact_edges, Some(exact.len()));
        let recall = stats.edge_recall.unwrap();
        assert!(recall > 0.95, "edge recall {recall}");
        assert_eq!(recall, edge_recall(&exact, &g.edges()));
        // every HNSW edge is a true pair above the threshold, with the exact weight
        for (a, b, w) in g.edges() {
            assert!(w >= cfg.min_similarity);
            assert_eq!(
                w.to_bits(),
                dot(&v[a as usize * 24..][..24], &v[b as usize * 24..][..24]).to_bits()
            );
        }
        // the index is handed on, its points carrying the record ids; adopted into a cache it
        // opens as a verified shard under its new identity, and nothing is left in scratch
        let shard = b.shard.expect("the index is kept");
        let target = tmp.path().join("cache/s");
        shard.adopt(&target, "export x").unwrap();
        let expected = crate::hnsw::Expected {
            source: "export x",
            settings: cfg.hnsw,
            points: 600,
            dim: 24,
        };
        let opened = crate::hnsw::HnswShard::open(&target, &expected, &v[..]).unwrap();
        let hit = &opened.search(&v[7 * 24..8 * 24], 1, 64, None).unwrap()[0];
        assert_eq!((hit.point, hit.id.as_deref()), (7, Some("c007")));
        drop(opened);
        let left: Vec<_> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, ["cache"]);
        // above the threshold, no reference graph is built
        let auto = SimGraphConfig {
            hnsw_above: 100,
            ..Default::default()
        };
        let stats = SimGraph::build_with(&v, 24, &auto, &ids, tmp.path())
            .unwrap()
            .hnsw
            .unwrap();
        assert_eq!((stats.exact_edges, stats.edge_recall), (None, None));
    }

    /// 6k x 384 must build in under 5 s in a dev build (`--ignored --nocapture` prints it).
    #[test]
    #[ignore]
    fn simgraph_speed_6k_by_384() {
        let v = clustered(6000, 384, 300, 0.6);
        let t = std::time::Instant::now();
        let g = SimGraph::build(&v, 384, &SimGraphConfig::default());
        let s = t.elapsed().as_secs_f64();
        println!(
            "simgraph 6000 x 384: {s:.2} s, {} edges, {} communities ({} threads)",
            g.num_edges(),
            g.num_communities(),
            rayon::current_num_threads()
        );
        assert!(s < 5.0);
    }
}
