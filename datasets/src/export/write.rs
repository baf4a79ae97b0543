//! The export's files -> its directory: every file is written into a staging directory beside
//! it as soon as its part is built ([`super::build`]), then hashed into the manifest, and the
//! directory renamed into place, so a crash never leaves a manifest that lies about its files.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use arrow_array::ArrayRef;
use serde::Serialize;

use super::identity::hash_file;
use super::{Bm25Stats, Chunk, ChunkText, ExportStats, Manifest, Parts, QueryRecord};
use crate::error::{Error, Result};
use crate::lexical::{Bm25Parts, Tokenizer};
use crate::parquet_io as pq;

/// A hidden sibling of the export's directory that the build writes into; removed again unless
/// it is committed ([`Staging::commit`]), so a failed or interrupted build leaves nothing.
pub(super) struct Staging {
    tmp: PathBuf,
    committed: bool,
}

impl Staging {
    /// Creates the staging directory of the export at `dir` (an old one of this process is
    /// removed first).
    pub(super) fn create(dir: &Path) -> Result<Staging> {
        let parent = dir.parent().unwrap_or(Path::new("."));
        fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        let tmp = parent.join(format!(".{name}.tmp-{}", std::process::id()));
        let _ = fs::remove_dir_all(&tmp);
        fs::create_dir_all(&tmp).map_err(|e| Error::io(&tmp, e))?;
        Ok(Staging {
            tmp,
            committed: false,
        })
    }

    /// Where the build writes.
    pub(super) fn path(&self) -> &Path {
        &self.tmp
    }

    /// Hashes the files of the core and `parts` into `manifest` with the `stats`, writes the
    /// manifest and renames the staging directory to `dir`, replacing what is there; returns
    /// the manifest.
    pub(super) fn commit(
        mut self,
        dir: &Path,
        mut manifest: Manifest,
        parts: Parts,
        stats: &ExportStats,
    ) -> Result<Manifest> {
        for f in parts.files() {
            manifest
                .files
                .insert(f.to_string(), hash_file(&self.tmp.join(f))?);
        }
        manifest.stats = stats.clone();
        let path = self.tmp.join("manifest.json");
        let text = serde_json::to_string_pretty(&manifest).expect("manifest");
        fs::write(&path, text).map_err(|e| Error::io(&path, e))?;
        if dir.exists() {
            fs::remove_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        }
        fs::rename(&self.tmp, dir).map_err(|e| Error::io(dir, e))?;
        self.committed = true;
        Ok(manifest)
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.committed {
            let _ = fs::remove_dir_all(&self.tmp);
        }
    }
}

/// What `corpus.parquet` is written from, besides the vectors.
pub(super) struct Corpus<'a> {
    pub(super) chunks: &'a [Chunk],
    pub(super) texts: &'a super::texts::Texts,
    pub(super) docs: &'a [String],
    /// The knowledge graph's per-chunk columns, made a slice at a time.
    pub(super) kg_columns: crate::enrich::CorpusColumns,
}

/// One slice's vector columns: `embedding`, and `embedding_content` where the corpus has
/// content-only vectors.
pub(super) type SliceVectors = (ArrayRef, Option<ArrayRef>);

/// Writes `corpus.parquet`: one row per chunk: ids, document, span, texts, token count, vectors
/// and the knowledge graph's columns, a row group at a time ([`pq::write_in_groups`]).
/// `vectors(rows)` gives a slice's vector columns, so vectors embedded a slice at a time are
/// written and dropped before the next group's are made.
pub(super) fn write_corpus(
    dir: &Path,
    b: Corpus<'_>,
    mut vectors: impl FnMut(std::ops::Range<usize>, &[ChunkText]) -> Result<SliceVectors>,
) -> Result<()> {
    pq::write_in_groups(&dir.join("corpus.parquet"), b.chunks.len(), |r| {
        let texts = b.texts.rows(r.clone())?;
        let v = vectors(r.clone(), &texts)?;
        Ok(corpus_rows(&b, r, &texts, v))
    })
}

/// The corpus columns of the chunks in `rows`, with their vector columns `v`.
fn corpus_rows(
    b: &Corpus<'_>,
    rows: std::ops::Range<usize>,
    t: &[ChunkText],
    (embedding, content): SliceVectors,
) -> Vec<(&'static str, ArrayRef)> {
    let c = &b.chunks[rows.clone()];
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
        ("embedding", embedding),
    ];
    if let Some(ce) = content {
        cols.push(("embedding_content", ce));
    }
    cols.extend(b.kg_columns.rows(rows));
    cols
}

/// Writes `queries.parquet`: chunks are named by id (gold, chains) and documents by name, so the
/// file reads without the export's chunk order; `gold_grades` only for graded gold. Written a
/// slice of queries at a time ([`pq::write_in_groups`]): the sub-question vectors of 10^5
/// queries are not levelled whole.
pub(super) fn write_queries(
    dir: &Path,
    c: &[Chunk],
    docs: &[String],
    all: &[QueryRecord],
    dim: usize,
    query_embeddings: &[f32],
    subquery_embeddings: &[Option<Vec<f32>>],
) -> Result<()> {
    let graded = graded_gold(all).is_some();
    pq::write_in_groups(&dir.join("queries.parquet"), all.len(), |r| {
        Ok(query_rows(
            c,
            docs,
            &all[r.clone()],
            graded,
            dim,
            &query_embeddings[r.start * dim..r.end * dim],
            &subquery_embeddings[r],
        ))
    })
}

/// The `queries.parquet` columns of queries `q` (with `gold_grades` where the gold is
/// `graded`), their vectors and their sub-question vectors.
fn query_rows<'a>(
    c: &[Chunk],
    docs: &[String],
    q: &[QueryRecord],
    graded: bool,
    dim: usize,
    query_embeddings: &[f32],
    subquery_embeddings: &[Option<Vec<f32>>],
) -> Vec<(&'a str, ArrayRef)> {
    let ids_of = |v: &[u32]| {
        v.iter()
            .map(|&i| c[i as usize].id.clone())
            .collect::<Vec<_>>()
    };
    let gold_docs = |v: &[u32]| {
        let set: BTreeSet<u32> = v.iter().filter_map(|&i| c[i as usize].doc).collect();
        set.into_iter()
            .map(|d| docs[d as usize].clone())
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
        ("embedding", pq::vectors(query_embeddings, dim)),
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
        ("subquery_embeddings", f32_lists(subquery_embeddings)),
    ];
    // binary gold stores no grade, so its queries file is what it was before grades were kept
    if graded {
        let grades: Vec<Vec<u32>> = q
            .iter()
            .map(|q| q.grades.clone().unwrap_or_else(|| vec![1; q.gold.len()]))
            .collect();
        columns.insert(4, ("gold_grades", pq::u32_lists(&grades)));
    }
    columns
}

/// Writes the BM25 index as `bm25-stats.json` (tokenizer, parameters, document lengths) and
/// `bm25-postings.parquet` (one row per term), what loading rebuilds it from.
pub(super) fn write_bm25(dir: &Path, bm25: &Bm25Parts) -> Result<()> {
    let stats = Bm25Stats {
        tokenizer: Tokenizer::english().name().into(),
        params: bm25.params,
        chunks: bm25.doc_len.len(),
        avgdl: bm25.avgdl(),
        doc_len: bm25.doc_len.clone(),
    };
    let path = dir.join("bm25-stats.json");
    fs::write(&path, serde_json::to_vec(&stats).expect("stats"))
        .map_err(|e| Error::io(&path, e))?;
    drop(stats);
    pq::write(
        &dir.join("bm25-postings.parquet"),
        vec![
            ("term", pq::strings(&bm25.terms)),
            (
                "chunks",
                pq::u32_lists_flat(&bm25.offsets, &bm25.post_chunk),
            ),
            ("tfs", pq::u32_lists_flat(&bm25.offsets, &bm25.post_tf)),
        ],
    )?;
    Ok(())
}

/// The gold chunks whose grade is not 1 (`None`: none, binary gold).
pub(super) fn graded_gold(queries: &[QueryRecord]) -> Option<usize> {
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
