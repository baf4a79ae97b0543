//! The export in memory -> its directory: every file written into a temporary sibling, hashed
//! into the manifest, and the directory renamed into place, so a crash never leaves a manifest
//! that lies about its files.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

use serde::Serialize;

use super::build::Built;
use super::identity::hash_file;
use super::{Bm25Stats, ExportStats, Manifest, Part, Parts};
use crate::enrich;
use crate::error::{Error, Result};
use crate::lexical::{Bm25Index, Tokenizer};
use crate::parquet_io as pq;
use crate::simgraph::SimGraph;

/// Writes `b` into `dir`, replacing what is there; returns `manifest` completed with the file
/// hashes and counts.
pub(super) fn write_atomically(dir: &Path, mut manifest: Manifest, b: &Built) -> Result<Manifest> {
    let parent = dir.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    let tmp = parent.join(format!(".{name}.tmp-{}", std::process::id()));
    let _ = fs::remove_dir_all(&tmp);
    fs::create_dir_all(&tmp).map_err(|e| Error::io(&tmp, e))?;
    let result = (|| {
        write_files(&tmp, b)?;
        let parts = match b.simgraph {
            Some(_) => Parts::NONE.with(Part::SimGraph),
            None => Parts::NONE,
        };
        for f in parts.files() {
            manifest
                .files
                .insert(f.to_string(), hash_file(&tmp.join(f))?);
        }
        manifest.stats = ExportStats {
            chunks: b.chunks.len(),
            documents: b.docs.len(),
            queries: b.queries.len(),
            gold_chunks: b.queries.iter().map(|q| q.gold.len()).sum(),
            queries_with_chain: b.queries.iter().filter(|q| q.chain.is_some()).count(),
            graded_gold: graded_gold(&b.queries),
            chunks_with_header: b.texts.iter().filter(|t| t.header.is_some()).count(),
            chunks_with_span: Some(b.chunks.iter().filter(|c| c.span.is_some()).count()),
            bm25_terms: b.bm25.num_terms(),
            bm25_postings: b.bm25.num_postings(),
            kg: b.kg.stats(),
            simgraph_edges: b.simgraph.as_ref().map_or(0, SimGraph::num_edges),
            simgraph_communities: b.simgraph.as_ref().map_or(0, SimGraph::num_communities),
            simgraph_hnsw: b.simgraph_hnsw.clone(),
        };
        let path = tmp.join("manifest.json");
        let text = serde_json::to_string_pretty(&manifest).expect("manifest");
        fs::write(&path, text).map_err(|e| Error::io(&path, e))?;
        if dir.exists() {
            fs::remove_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        }
        fs::rename(&tmp, dir).map_err(|e| Error::io(dir, e))
    })();
    if result.is_err() {
        let _ = fs::remove_dir_all(&tmp);
    }
    result.map(|_| manifest)
}

/// Writes the export's files into `dir`: the corpus with the knowledge graph and the similarity
/// graph, the queries, then the BM25 index.
fn write_files(dir: &Path, b: &Built) -> Result<()> {
    write_corpus(dir, b)?;
    write_queries(dir, b)?;
    write_bm25(dir, &b.bm25)
}

/// Writes `corpus.parquet` (one row per chunk: ids, document, span, texts, token count, vectors
/// and the knowledge graph's columns), the knowledge graph's and the similarity graph's files.
fn write_corpus(dir: &Path, b: &Built) -> Result<()> {
    let (c, t) = (&b.chunks, &b.texts);
    let mut cols = vec![
        (
            "chunk_id",
            pq::strings(&c.iter().map(|c| c.id.as_str()).collect::<Vec<_>>()),
        ),
        (
            "doc_id",
            pq::opt_strings(
                &c.iter()
                    .map(|c| c.doc.map(|d| b.docs[d as usize].clone()))
                    .collect::<Vec<_>>(),
            ),
        ),
        (
            "char_start",
            pq::opt_u32s(
                &c.iter()
                    .map(|c| c.span.map(|s| s.start))
                    .collect::<Vec<_>>(),
            ),
        ),
        (
            "char_end",
            pq::opt_u32s(&c.iter().map(|c| c.span.map(|s| s.end)).collect::<Vec<_>>()),
        ),
        (
            "title",
            pq::strings(&t.iter().map(|t| t.title.as_str()).collect::<Vec<_>>()),
        ),
        (
            "text",
            pq::strings(&t.iter().map(|t| t.text.as_str()).collect::<Vec<_>>()),
        ),
        (
            "context_header",
            pq::opt_strings(&t.iter().map(|t| t.header.clone()).collect::<Vec<_>>()),
        ),
        (
            "token_count",
            pq::u32s(&c.iter().map(|c| c.tokens).collect::<Vec<_>>()),
        ),
        ("embedding", pq::vectors(&b.embeddings, b.dim)),
    ];
    if let Some(ce) = &b.content_embeddings {
        cols.push(("embedding_content", pq::vectors(ce, b.dim)));
    }
    cols.extend(enrich::corpus_columns(&b.kg));
    pq::write(&dir.join("corpus.parquet"), cols)?;
    enrich::write_kg(dir, &b.kg)?;
    match &b.simgraph {
        Some(g) => g.write(dir),
        None => Ok(()),
    }
}

/// Writes `queries.parquet`: chunks are named by id (gold, chains) and documents by name, so the
/// file reads without the export's chunk order; `gold_grades` only for graded gold.
fn write_queries(dir: &Path, b: &Built) -> Result<()> {
    let c = &b.chunks;
    let q = &b.queries;
    let ids_of = |v: &[u32]| {
        v.iter()
            .map(|&i| c[i as usize].id.clone())
            .collect::<Vec<_>>()
    };
    let gold_docs = |v: &[u32]| {
        let set: BTreeSet<u32> = v.iter().filter_map(|&i| c[i as usize].doc).collect();
        set.into_iter()
            .map(|d| b.docs[d as usize].clone())
            .collect::<Vec<_>>()
    };
    let mut columns = vec![
        (
            "query_id",
            pq::strings(&q.iter().map(|q| q.id.as_str()).collect::<Vec<_>>()),
        ),
        (
            "text",
            pq::strings(&q.iter().map(|q| q.text.as_str()).collect::<Vec<_>>()),
        ),
        ("embedding", pq::vectors(&b.query_embeddings, b.dim)),
        (
            "gold_chunk_ids",
            pq::string_lists(&q.iter().map(|q| Some(ids_of(&q.gold))).collect::<Vec<_>>()),
        ),
        (
            "gold_doc_ids",
            pq::string_lists(
                &q.iter()
                    .map(|q| Some(gold_docs(&q.gold)))
                    .collect::<Vec<_>>(),
            ),
        ),
        (
            "chain_json",
            pq::opt_strings(
                &q.iter()
                    .map(|q| {
                        json_opt(
                            &q.chain
                                .as_ref()
                                .map(|s| s.iter().map(|s| ids_of(s)).collect::<Vec<_>>()),
                        )
                    })
                    .collect::<Vec<_>>(),
            ),
        ),
        (
            "decomposition_json",
            pq::opt_strings(
                &q.iter()
                    .map(|q| json_opt(&q.decomposition))
                    .collect::<Vec<_>>(),
            ),
        ),
        (
            "conversation_json",
            pq::opt_strings(
                &q.iter()
                    .map(|q| json_opt(&q.conversation))
                    .collect::<Vec<_>>(),
            ),
        ),
        (
            "labels_json",
            pq::strings(
                &q.iter()
                    .map(|q| serde_json::to_string(&q.labels).expect("labels"))
                    .collect::<Vec<_>>(),
            ),
        ),
        ("subquery_embeddings", f32_lists(&b.subquery_embeddings)),
    ];
    // binary gold stores no grade, so its queries file is what it was before grades were kept
    if graded_gold(q).is_some() {
        let grades: Vec<Vec<u32>> = q
            .iter()
            .map(|q| q.grades.clone().unwrap_or_else(|| vec![1; q.gold.len()]))
            .collect();
        columns.insert(4, ("gold_grades", pq::u32_lists(&grades)));
    }
    pq::write(&dir.join("queries.parquet"), columns)
}

/// Writes the BM25 index as `bm25-stats.json` (tokenizer, parameters, document lengths) and
/// `bm25-postings.parquet` (one row per term), what loading rebuilds it from.
fn write_bm25(dir: &Path, bm25: &Bm25Index) -> Result<()> {
    let parts = bm25.to_parts();
    let stats = Bm25Stats {
        tokenizer: Tokenizer::english().name().into(),
        params: parts.params,
        chunks: parts.doc_len.len(),
        avgdl: bm25.avgdl(),
        doc_len: parts.doc_len.clone(),
    };
    let path = dir.join("bm25-stats.json");
    fs::write(&path, serde_json::to_vec(&stats).expect("stats"))
        .map_err(|e| Error::io(&path, e))?;
    let runs: Vec<(Vec<u32>, Vec<u32>)> = (0..parts.terms.len())
        .map(|t| {
            let (s, e) = (parts.offsets[t] as usize, parts.offsets[t + 1] as usize);
            (
                parts.post_chunk[s..e].to_vec(),
                parts.post_tf[s..e].to_vec(),
            )
        })
        .collect();
    pq::write(
        &dir.join("bm25-postings.parquet"),
        vec![
            ("term", pq::strings(&parts.terms)),
            (
                "chunks",
                pq::u32_lists(&runs.iter().map(|r| r.0.clone()).collect::<Vec<_>>()),
            ),
            (
                "tfs",
                pq::u32_lists(&runs.iter().map(|r| r.1.clone()).collect::<Vec<_>>()),
            ),
        ],
    )?;
    Ok(())
}

/// The gold chunks whose grade is not 1 (`None`: none, binary gold).
fn graded_gold(queries: &[super::QueryRecord]) -> Option<usize> {
    let n = queries
        .iter()
        .flat_map(|q| q.grades.iter().flatten())
        .filter(|&&g| g != 1)
        .count();
    (n > 0).then_some(n)
}

fn json_opt<T: Serialize>(v: &Option<T>) -> Option<String> {
    v.as_ref()
        .map(|x| serde_json::to_string(x).expect("serialisable"))
}

/// A nullable `list<float32>` column.
pub(super) fn f32_lists(rows: &[Option<Vec<f32>>]) -> arrow_array::ArrayRef {
    use arrow_array::builder::{Float32Builder, ListBuilder};
    let mut b = ListBuilder::new(Float32Builder::new());
    for row in rows {
        match row {
            Some(v) => {
                b.values().append_slice(v);
                b.append(true);
            }
            None => b.append(false),
        }
    }
    std::sync::Arc::new(b.finish())
}
