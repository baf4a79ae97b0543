//! The KG's files in an export, and the one reader that validates them.
//!
//! ```text
//! corpus.parquet          ... kg_node_ids list<u32>, kg_reach list<u32>,
//!                         kg_community u32 (null: untitled chunk), kg_node_centrality f32
//! kg-nodes.parquet        node u32, name utf8, community u32, centrality f32   (row = node id)
//! kg-aliases.parquet      alias utf8, node u32                                  (sorted by alias)
//! kg-edges.parquet        a u32, b u32, weight f32                              (a < b, sorted)
//! kg-hyperedges.parquet   id u32, chunk u32, nodes list<u32>          (row = id, sorted by
//!                                                                      (chunk, nodes))
//! ```
//!
//! `kg_node_ids` is the only place the chunk -> nodes mentions are stored; the other three
//! corpus columns are denormalised (what the seed's consumers read per candidate) and
//! [`read_kg`] recomputes each of them from the graph files and refuses any disagreement.

use std::ops::Range;
use std::path::Path;

use arrow_array::ArrayRef;

use super::reach::Reach;
use super::text::title_aliases;
use super::{Hyperedges, KnowledgeGraph, NodeLists};
use crate::error::{Error, Result};
use crate::parquet_io::{self as pq, Columns};

/// The KG's own files in an export (besides its columns in `corpus.parquet`).
pub const KG_FILES: [&str; 4] = [
    "kg-nodes.parquet",
    "kg-aliases.parquet",
    "kg-edges.parquet",
    "kg-hyperedges.parquet",
];

/// The four denormalised corpus columns of `kg`, whole (one row per chunk): `kg_node_ids`,
/// `kg_reach`, `kg_community` (the chunk's own title node's community) and
/// `kg_node_centrality` (the peak centrality of its nodes). A corpus written a slice of rows
/// at a time takes them from [`CorpusColumns`] instead.
pub fn corpus_columns(kg: &KnowledgeGraph) -> Vec<(&'static str, ArrayRef)> {
    let columns = CorpusColumns::new(kg.clone());
    columns.rows(0..columns.len())
}

/// What the corpus's four knowledge-graph columns are written from, a slice of rows at a
/// time: each chunk's nodes, community and peak centrality, and the adjacency its reach is
/// computed from when its slice is written (the reach lists are never held whole).
#[derive(Debug, Clone, Default)]
pub struct CorpusColumns {
    chunk_nodes: NodeLists,
    community: Vec<Option<u32>>,
    centrality: Vec<f32>,
    reach: Reach,
}

impl CorpusColumns {
    /// Keeps what the columns need of `kg` and drops the rest (names, aliases, hyperedges).
    pub fn new(kg: KnowledgeGraph) -> CorpusColumns {
        let n = kg.chunk_nodes.len() as u32;
        let community = (0..n).map(|c| kg.chunk_community(c)).collect();
        let centrality = (0..n).map(|c| kg.chunk_centrality(c)).collect();
        let reach = Reach::new(kg.nodes.len(), &kg.edges);
        CorpusColumns {
            chunk_nodes: kg.chunk_nodes,
            community,
            centrality,
            reach,
        }
    }

    /// Chunks (rows).
    pub fn len(&self) -> usize {
        self.chunk_nodes.len()
    }

    /// Whether there are no chunks.
    pub fn is_empty(&self) -> bool {
        self.chunk_nodes.is_empty()
    }

    /// The four columns of the chunks in `rows` (within `0..len()`).
    pub fn rows(&self, rows: Range<usize>) -> Vec<(&'static str, ArrayRef)> {
        let nodes = || rows.clone().map(|c| &self.chunk_nodes[c]);
        vec![
            ("kg_node_ids", pq::u32_lists_of(nodes())),
            ("kg_reach", self.reach.column(nodes())),
            ("kg_community", pq::opt_u32s(&self.community[rows.clone()])),
            ("kg_node_centrality", pq::f32s(&self.centrality[rows])),
        ]
    }
}

/// Writes [`KG_FILES`] of `kg` into `dir`.
pub fn write_kg(dir: &Path, kg: &KnowledgeGraph) -> Result<()> {
    let n = kg.nodes.len() as u32;
    pq::write(
        &dir.join(KG_FILES[0]),
        vec![
            ("node", pq::u32s(&(0..n).collect::<Vec<_>>())),
            ("name", pq::strings(&kg.nodes)),
            ("community", pq::u32s(&kg.node_community)),
            ("centrality", pq::f32s(&kg.node_centrality)),
        ],
    )?;
    pq::write(
        &dir.join(KG_FILES[1]),
        vec![
            (
                "alias",
                pq::strings(&kg.aliases.iter().map(|a| a.0.as_str()).collect::<Vec<_>>()),
            ),
            (
                "node",
                pq::u32s(&kg.aliases.iter().map(|a| a.1).collect::<Vec<_>>()),
            ),
        ],
    )?;
    pq::write(
        &dir.join(KG_FILES[2]),
        vec![
            (
                "a",
                pq::u32s(&kg.edges.iter().map(|e| e.0).collect::<Vec<_>>()),
            ),
            (
                "b",
                pq::u32s(&kg.edges.iter().map(|e| e.1).collect::<Vec<_>>()),
            ),
            (
                "weight",
                pq::f32s(&kg.edges.iter().map(|e| e.2).collect::<Vec<_>>()),
            ),
        ],
    )?;
    let h = &kg.hyperedges;
    pq::write(
        &dir.join(KG_FILES[3]),
        vec![
            ("id", pq::u32s(&(0..h.len() as u32).collect::<Vec<_>>())),
            (
                "chunk",
                pq::u32s(&h.iter().map(|(chunk, _)| chunk).collect::<Vec<_>>()),
            ),
            ("nodes", pq::u32_lists_of(h.iter().map(|(_, nodes)| nodes))),
        ],
    )?;
    Ok(())
}

fn err(path: &Path, row: usize, column: &str, message: impl Into<String>) -> Error {
    Error::field(path, format!("row {row}"), column, message)
}

/// Checks that `list` is strictly ascending and below `n`.
fn check_ids(path: &Path, row: usize, column: &str, list: &[u32], n: usize) -> Result<()> {
    if let Some(&v) = list.iter().find(|&&v| v as usize >= n) {
        return Err(err(
            path,
            row,
            column,
            format!("node {v} is out of range (0..{n})"),
        ));
    }
    if list.windows(2).any(|w| w[0] >= w[1]) {
        return Err(err(path, row, column, "is not sorted ascending and unique"));
    }
    Ok(())
}

/// Reads and validates the KG of the export in `dir`, whose corpus (already read, `title` and the
/// four `kg_*` columns) is `corpus`. Every inconsistency is an [`Error::Field`] naming the file,
/// the row and the column: ids out of range, lists not ascending and unique, node ids not equal
/// to the row, node names not the sorted distinct non-empty chunk titles, non-canonical
/// community labels, non-finite or negative centrality (or not summing to 1), aliases not
/// derived from their node's name or not sorted, edges not `a < b` or unsorted or with a
/// non-positive weight, hyperedges with fewer than two nodes or nodes the chunk does not
/// mention, a chunk's `kg_node_ids` lacking its own title node, and any denormalised corpus
/// column (`kg_reach`, `kg_community`, `kg_node_centrality`) that differs from what the graph
/// files imply.
///
/// The files are read and checked one after the other in this order (nodes, the corpus titles,
/// aliases, edges, the corpus's `kg_node_ids`, hyperedges, then the denormalised columns), so
/// a damaged export reports the first problem in that order.
pub fn read_kg(dir: &Path, corpus: &Columns<'_>) -> Result<KnowledgeGraph> {
    let nodes_path = dir.join(KG_FILES[0]);
    let (nodes, node_community, node_centrality) = read_nodes(&nodes_path)?;
    let n = nodes.len();
    let chunk_title = chunk_titles(corpus, &nodes, &nodes_path)?;
    let aliases = read_aliases(&dir.join(KG_FILES[1]), &nodes)?;
    let edges = read_edges(&dir.join(KG_FILES[2]), n)?;
    let chunk_nodes = read_chunk_nodes(corpus, n, &chunk_title)?;
    let hyperedges = read_hyperedges(&dir.join(KG_FILES[3]), corpus.rows(), n, &chunk_nodes)?;
    let kg = KnowledgeGraph {
        nodes,
        aliases,
        chunk_nodes,
        node_community,
        node_centrality,
        edges,
        hyperedges,
        chunk_title,
    };
    check_denormalised(corpus, &kg)?;
    Ok(kg)
}

/// The nodes file `path`: names, community labels and centralities, one row per node id. Its
/// rows must be numbered by row, named by sorted distinct non-empty names, labelled canonically
/// (a new community label is the next one, in node order) and hold a centrality distribution.
fn read_nodes(path: &Path) -> Result<(Vec<String>, Vec<u32>, Vec<f32>)> {
    let table = pq::Table::read(path)?;
    let cols = table.columns();
    let ids = cols.u32s("node")?;
    let nodes = cols.strings("name")?;
    let node_community = cols.u32s("community")?;
    let node_centrality = cols.f32s("centrality")?;
    let n = nodes.len();
    let mut next_label = 0u32;
    for v in 0..n {
        if ids[v] as usize != v {
            return Err(err(
                path,
                v,
                "node",
                format!("is {}, expected the row number", ids[v]),
            ));
        }
        if nodes[v].trim().is_empty() {
            return Err(err(path, v, "name", "is empty"));
        }
        if v > 0 && nodes[v - 1] >= nodes[v] {
            return Err(err(
                path,
                v,
                "name",
                "names are not sorted ascending and unique",
            ));
        }
        match node_community[v].cmp(&next_label) {
            std::cmp::Ordering::Less => {}
            std::cmp::Ordering::Equal => next_label += 1,
            std::cmp::Ordering::Greater => {
                return Err(err(
                    path,
                    v,
                    "community",
                    format!(
                        "is {}: labels must be numbered by smallest member node (next new label is {next_label})",
                        node_community[v]
                    ),
                ))
            }
        }
        let c = node_centrality[v];
        if !c.is_finite() || c < 0.0 {
            return Err(err(path, v, "centrality", format!("is {c}")));
        }
    }
    if n > 0 {
        let sum: f64 = node_centrality.iter().map(|&c| c as f64).sum();
        if (sum - 1.0).abs() > 1e-3 {
            return Err(Error::field(
                path,
                "column",
                "centrality",
                format!("sums to {sum}, not 1"),
            ));
        }
    }
    Ok((nodes, node_community, node_centrality))
}

/// Each chunk's own node, from the corpus titles (`None` for an untitled chunk): a title must
/// have a node, and every node (read from `nodes_path`) must be some chunk's title, since the
/// nodes are exactly the distinct titles.
fn chunk_titles(
    corpus: &Columns<'_>,
    nodes: &[String],
    nodes_path: &Path,
) -> Result<Vec<Option<u32>>> {
    let titles = corpus.strings("title")?;
    let mut is_title = vec![false; nodes.len()];
    let mut chunk_title = Vec::with_capacity(corpus.rows());
    for (c, t) in titles.iter().enumerate() {
        if t.trim().is_empty() {
            chunk_title.push(None);
            continue;
        }
        let v = nodes.binary_search(t).map_err(|_| {
            err(
                corpus.path,
                c,
                "title",
                format!("`{t}` has no node in {}", KG_FILES[0]),
            )
        })?;
        is_title[v] = true;
        chunk_title.push(Some(v as u32));
    }
    if let Some(v) = is_title.iter().position(|t| !t) {
        return Err(err(nodes_path, v, "name", "is not the title of any chunk"));
    }
    Ok(chunk_title)
}

/// The aliases file `path`: sorted distinct aliases, each one derived from its node's name (as
/// the builder derives them), so seed search finds what the build would.
fn read_aliases(path: &Path, nodes: &[String]) -> Result<Vec<(String, u32)>> {
    let n = nodes.len();
    let table = pq::Table::read(path)?;
    let cols = table.columns();
    let alias = cols.strings("alias")?;
    let alias_node = cols.u32s("node")?;
    for (r, (a, &v)) in alias.iter().zip(&alias_node).enumerate() {
        if v as usize >= n {
            return Err(err(
                path,
                r,
                "node",
                format!("node {v} is out of range (0..{n})"),
            ));
        }
        if r > 0 && alias[r - 1] >= *a {
            return Err(err(
                path,
                r,
                "alias",
                "aliases are not sorted ascending and unique",
            ));
        }
        if !title_aliases(&nodes[v as usize]).contains(a) {
            return Err(err(
                path,
                r,
                "alias",
                format!("`{a}` is not an alias of node {v} `{}`", nodes[v as usize]),
            ));
        }
    }
    Ok(alias.into_iter().zip(alias_node).collect())
}

/// The edges file `path`: `a < b`, both among the `n` nodes, sorted by unique `(a, b)`, with a
/// positive finite weight.
fn read_edges(path: &Path, n: usize) -> Result<Vec<(u32, u32, f32)>> {
    let table = pq::Table::read(path)?;
    let cols = table.columns();
    let ea = cols.u32s("a")?;
    let eb = cols.u32s("b")?;
    let ew = cols.f32s("weight")?;
    let mut edges = Vec::with_capacity(ea.len());
    for r in 0..ea.len() {
        let (a, b, w) = (ea[r], eb[r], ew[r]);
        if a as usize >= n {
            return Err(err(
                path,
                r,
                "a",
                format!("node {a} is out of range (0..{n})"),
            ));
        }
        if b as usize >= n {
            return Err(err(
                path,
                r,
                "b",
                format!("node {b} is out of range (0..{n})"),
            ));
        }
        if a >= b {
            return Err(err(
                path,
                r,
                "b",
                format!("is {b}, not greater than a = {a}"),
            ));
        }
        if r > 0 && (ea[r - 1], eb[r - 1]) >= (a, b) {
            return Err(err(path, r, "a", "edges are not sorted by unique (a, b)"));
        }
        if !w.is_finite() || w <= 0.0 {
            return Err(err(
                path,
                r,
                "weight",
                format!("is {w}, not a positive number"),
            ));
        }
        edges.push((a, b, w));
    }
    Ok(edges)
}

/// The corpus's `kg_node_ids`, the only record of which nodes each chunk mentions: ascending,
/// unique ids among the `n` nodes, including the chunk's own title node.
fn read_chunk_nodes(
    corpus: &Columns<'_>,
    n: usize,
    chunk_title: &[Option<u32>],
) -> Result<NodeLists> {
    let mut chunk_nodes = NodeLists::with_capacity(corpus.rows(), 0);
    corpus.each_u32_list("kg_node_ids", |c, list| {
        check_ids(corpus.path, c, "kg_node_ids", list, n)?;
        if let Some(t) = chunk_title[c] {
            if list.binary_search(&t).is_err() {
                return Err(err(
                    corpus.path,
                    c,
                    "kg_node_ids",
                    format!("lacks the chunk's own title node {t}"),
                ));
            }
        }
        chunk_nodes.push(list);
        Ok(())
    })?;
    chunk_nodes.shrink_to_fit();
    Ok(chunk_nodes)
}

/// The hyperedges file `path`: rows numbered by row, each in one of the `num_chunks` chunks,
/// with at least two ascending unique nodes that chunk mentions (`chunk_nodes`), sorted by
/// unique `(chunk, nodes)`.
fn read_hyperedges(
    path: &Path,
    num_chunks: usize,
    n: usize,
    chunk_nodes: &NodeLists,
) -> Result<Hyperedges> {
    let table = pq::Table::read(path)?;
    let cols = table.columns();
    let hid = cols.u32s("id")?;
    let hchunk = cols.u32s("chunk")?;
    let mut hyperedges = Hyperedges::default();
    cols.each_u32_list("nodes", |r, nodes_r| {
        let Some(&chunk) = hchunk.get(r) else {
            return Err(err(path, r, "chunk", "is missing"));
        };
        if hid[r] as usize != r {
            return Err(err(
                path,
                r,
                "id",
                format!("is {}, expected the row number", hid[r]),
            ));
        }
        if chunk as usize >= num_chunks {
            return Err(err(
                path,
                r,
                "chunk",
                format!("chunk {chunk} is out of range (0..{num_chunks})"),
            ));
        }
        check_ids(path, r, "nodes", nodes_r, n)?;
        if nodes_r.len() < 2 {
            return Err(err(path, r, "nodes", "has fewer than 2 nodes"));
        }
        let mentioned = &chunk_nodes[chunk as usize];
        if let Some(v) = nodes_r.iter().find(|v| mentioned.binary_search(v).is_err()) {
            return Err(err(
                path,
                r,
                "nodes",
                format!("node {v} is not among chunk {chunk}'s kg_node_ids"),
            ));
        }
        if let Some(last) = hyperedges.len().checked_sub(1) {
            if (hyperedges.chunk(last), hyperedges.nodes(last)) >= (chunk, nodes_r) {
                return Err(err(
                    path,
                    r,
                    "chunk",
                    "rows are not sorted by unique (chunk, nodes)",
                ));
            }
        }
        hyperedges.push(chunk, nodes_r);
        Ok(())
    })?;
    hyperedges.shrink_to_fit();
    Ok(hyperedges)
}

/// The denormalised corpus columns (`kg_reach`, `kg_community`, `kg_node_centrality`) must be
/// what the graph `kg` implies (`kg_reach` is read from `corpus`'s file, whether or not
/// `corpus` holds it): they are what the seed's consumers read per candidate, so a
/// disagreement would make them score another graph than the one loaded.
fn check_denormalised(corpus: &Columns<'_>, kg: &KnowledgeGraph) -> Result<()> {
    let num_chunks = corpus.rows();
    let cpath = corpus.path;
    // streamed from the file a batch of rows at a time, each row against the reach computed
    // for it alone: at a million chunks the column is some 10^8 numbers
    let reach = Reach::new(kg.nodes.len(), &kg.edges);
    let mut want = Vec::new();
    pq::for_each_u32_list(cpath, "kg_reach", |c, found| {
        let Some(nodes) = kg.chunk_nodes.get(c) else {
            return Err(err(
                cpath,
                c,
                "kg_reach",
                format!("is a row past the corpus's {num_chunks} chunks"),
            ));
        };
        reach.row_into(nodes, &mut want);
        if want.as_slice() == found {
            return Ok(());
        }
        Err(err(
            cpath,
            c,
            "kg_reach",
            format!(
                "is {found:?}, but the edges in {} give {want:?}",
                KG_FILES[2]
            ),
        ))
    })?;
    let community = corpus.opt_u32s("kg_community")?;
    if let Some(c) = (0..num_chunks).find(|&c| community[c] != kg.chunk_community(c as u32)) {
        return Err(err(
            cpath,
            c,
            "kg_community",
            format!(
                "is {:?}, but the title node's community in {} is {:?}",
                community[c],
                KG_FILES[0],
                kg.chunk_community(c as u32)
            ),
        ));
    }
    let centrality = corpus.f32s("kg_node_centrality")?;
    if let Some(c) = (0..num_chunks).find(|&c| centrality[c] != kg.chunk_centrality(c as u32)) {
        return Err(err(
            cpath,
            c,
            "kg_node_centrality",
            format!(
                "is {}, but the peak node centrality in {} is {}",
                centrality[c],
                KG_FILES[0],
                kg.chunk_centrality(c as u32)
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::{build, EnrichConfig, Hyperedge};
    use super::*;

    /// The graph tests' corpus, and an untitled chunk.
    fn chunks() -> Vec<(&'static str, &'static str)> {
        let mut chunks = super::super::graph::tests::corpus();
        chunks.push(("", "Alpha and Gamma, untitled."));
        chunks
    }

    /// The corpus columns of `corpus_kg` and the graph files of `kg`.
    fn write_mixed(dir: &Path, corpus_kg: &KnowledgeGraph, kg: &KnowledgeGraph) {
        let mut cols = vec![(
            "title",
            pq::strings(&chunks().iter().map(|c| c.0).collect::<Vec<_>>()),
        )];
        cols.extend(corpus_columns(corpus_kg));
        pq::write(&dir.join("corpus.parquet"), cols).unwrap();
        write_kg(dir, kg).unwrap();
    }

    #[test]
    fn columns_written_by_slices_equal_the_whole() {
        let kg = build(&chunks(), &EnrichConfig::default());
        let whole = corpus_columns(&kg);
        let columns = CorpusColumns::new(kg.clone());
        assert_eq!(columns.len(), kg.chunk_nodes.len());
        for cut in 0..=columns.len() {
            let (a, b) = (columns.rows(0..cut), columns.rows(cut..columns.len()));
            for ((name, w), ((na, a), (nb, b))) in whole.iter().zip(a.iter().zip(&b)) {
                assert_eq!((name, name), (na, nb));
                let rest = columns.len() - cut;
                assert_eq!(a.as_ref(), w.slice(0, cut).as_ref(), "{name} up to {cut}");
                assert_eq!(b.as_ref(), w.slice(cut, rest).as_ref(), "{name} from {cut}");
            }
        }
        assert_eq!(
            whole[1].1.as_ref(),
            pq::u32_lists(&kg.chunk_reach()).as_ref()
        );
    }

    fn write_all(dir: &Path, kg: &KnowledgeGraph) {
        write_mixed(dir, kg, kg)
    }

    fn read_back(dir: &Path) -> Result<KnowledgeGraph> {
        let path = dir.join("corpus.parquet");
        read_kg(dir, &pq::Table::read(&path)?.columns())
    }

    #[test]
    fn round_trip_is_exact() {
        let tmp = tempfile::tempdir().unwrap();
        let kg = build(&chunks(), &EnrichConfig::default());
        write_all(tmp.path(), &kg);
        assert_eq!(read_back(tmp.path()).unwrap(), kg);
        let empty = build(&[("", "no titles here")], &EnrichConfig::default());
        let t2 = tempfile::tempdir().unwrap();
        let mut cols = vec![("title", pq::strings(&[""]))];
        cols.extend(corpus_columns(&empty));
        pq::write(&t2.path().join("corpus.parquet"), cols).unwrap();
        write_kg(t2.path(), &empty).unwrap();
        assert_eq!(read_back(t2.path()).unwrap(), empty);
    }

    fn expect(kg: KnowledgeGraph, file: &str, column: &str) {
        expect_mixed(&kg, &kg, file, column)
    }

    fn expect_mixed(corpus_kg: &KnowledgeGraph, kg: &KnowledgeGraph, file: &str, column: &str) {
        let tmp = tempfile::tempdir().unwrap();
        write_mixed(tmp.path(), corpus_kg, kg);
        let e = read_back(tmp.path()).unwrap_err().to_string();
        assert!(
            e.contains(file) && e.contains(&format!("`{column}`")),
            "{e}"
        );
    }

    #[test]
    fn malformed_graphs_name_file_row_and_column() {
        let good = build(&chunks(), &EnrichConfig::default());
        let mut kg = good.clone();
        kg.edges[0].1 = 9;
        // the corpus's reach is written from a graph whose edges are in range
        expect_mixed(&good, &kg, "kg-edges.parquet", "b");
        let mut kg = good.clone();
        kg.edges.swap(0, 1);
        expect(kg, "kg-edges.parquet", "a");
        let mut kg = good.clone();
        kg.edges[1].2 = 0.0;
        expect(kg, "kg-edges.parquet", "weight");
        let hyper = |edit: &dyn Fn(&mut Vec<Hyperedge>)| {
            let mut edges = good.hyperedges.to_vec();
            edit(&mut edges);
            KnowledgeGraph {
                hyperedges: edges.into(),
                ..good.clone()
            }
        };
        expect(
            hyper(&|h| h[0].nodes.truncate(1)),
            "kg-hyperedges.parquet",
            "nodes",
        );
        expect(
            hyper(&|h| h[0].nodes = vec![1, 0]),
            "kg-hyperedges.parquet",
            "nodes",
        );
        expect(hyper(&|h| h.swap(0, 1)), "kg-hyperedges.parquet", "chunk");
        let edited = |edit: &dyn Fn(&mut Vec<Vec<u32>>)| {
            let mut lists = good.chunk_nodes.to_vecs();
            edit(&mut lists);
            KnowledgeGraph {
                chunk_nodes: lists.into(),
                ..good.clone()
            }
        };
        expect(
            edited(&|l| l[1] = vec![1, 0]),
            "corpus.parquet",
            "kg_node_ids",
        );
        expect(edited(&|l| l[3].push(7)), "corpus.parquet", "kg_node_ids");
        expect(edited(&|l| l[3].clear()), "corpus.parquet", "kg_node_ids");
        // a reach row one node longer than the edges give
        let tmp = tempfile::tempdir().unwrap();
        write_all(tmp.path(), &good);
        let mut reach = good.chunk_reach();
        reach[0].push(3);
        let mut cols = vec![(
            "title",
            pq::strings(&chunks().iter().map(|c| c.0).collect::<Vec<_>>()),
        )];
        cols.extend(corpus_columns(&good));
        cols[2].1 = pq::u32_lists(&reach);
        assert_eq!(cols[2].0, "kg_reach");
        pq::write(&tmp.path().join("corpus.parquet"), cols).unwrap();
        let e = read_back(tmp.path()).unwrap_err().to_string();
        assert!(
            e.contains("corpus.parquet") && e.contains("row 0") && e.contains("`kg_reach`"),
            "{e}"
        );
        let mut kg = good.clone();
        kg.node_community[0] = 2;
        expect(kg, "kg-nodes.parquet", "community");
        let mut kg = good.clone();
        // the nodes file still sums to ~1, every chunk's peak differs
        kg.node_centrality.iter_mut().for_each(|c| *c += 1e-4);
        expect_mixed(&good, &kg, "corpus.parquet", "kg_node_centrality");
        let mut kg = good.clone();
        kg.node_community[0] = 99;
        expect_mixed(&kg, &good, "corpus.parquet", "kg_community");
        let mut kg = good.clone();
        kg.aliases[0].1 = 1;
        expect(kg, "kg-aliases.parquet", "alias");
        let mut kg = good.clone();
        kg.nodes[1] = "Bravo".into();
        expect(kg, "corpus.parquet", "title");
    }
}
