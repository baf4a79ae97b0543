//! The export: one directory per dataset that every leg reads and nothing writes twice.
//!
//! ```text
//! results/exports/<dataset>/
//!   corpus.parquet         chunk_id, doc_id, title, text, context_header, token_count,
//!                          embedding, [embedding_content],
//!                          kg_node_ids, kg_reach, kg_community, kg_node_centrality
//!                                                          (rows sorted by chunk_id)
//!   queries.parquet        query_id, text, embedding, gold_chunk_ids, gold_doc_ids,
//!                          chain_json, decomposition_json, conversation_json, labels_json,
//!                          subquery_embeddings (list<f32>: the decomposition's sub-question
//!                          vectors flattened, `dim` each; null without a decomposition)
//!   bm25-stats.json        tokenizer, k1, b, chunk count, avgdl, per-chunk lengths
//!   bm25-postings.parquet  term, chunks, tfs                 (term-major CSR, terms sorted)
//!   kg-nodes.parquet       node, name, community, centrality  (the knowledge graph: see
//!   kg-aliases.parquet     alias, node                         crate::enrich for how it is
//!   kg-edges.parquet       a, b, weight                        built and what each column
//!   kg-hyperedges.parquet  id, chunk, nodes                    means)
//!   simgraph-edges.parquet        a, b, weight   (chunk similarity graph: see
//!   simgraph-communities.parquet  chunk, community        crate::simgraph)
//!   manifest.json          blake3 of every file above, of the raw inputs and of the config
//! ```
//!
//! Chunks are sorted by record id when the export is built, so the `u32` chunk index orders
//! exactly like the record ids and "ties break on ascending id" is an integer comparison
//! everywhere downstream. The directory is written beside its final place and renamed into it,
//! so a crash never leaves a directory with a manifest that lies about its files.
//!
//! The knowledge graph ([`crate::enrich`]) is built over `(title, header + text)` of the sorted
//! chunks; [`load`] reads it back through [`crate::enrich::read_kg`], which validates every file
//! and checks that the corpus's denormalised `kg_*` columns are what the graph files imply.
//!
//! Sub-query vectors ([`subquery_texts`]) embed the *published* decomposition with each `#k`
//! replaced by the *published* answer of hop k: an oracle-ish setting (the gold intermediate
//! answers are given), for the document-task legs only; label their results accordingly.
//!
//! Re-running prepare with unchanged inputs, configuration, model and export code finds the
//! same `input_key` in the existing manifest, re-hashes the files, and reuses the export.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::enrich::{self, EnrichConfig, KgIndex, KgStats, KnowledgeGraph};
use crate::error::{Error, Result};
use crate::lexical::{Bm25Index, Bm25Params, Bm25Parts, Tokenizer};
use crate::model::{question_pieces, QuestionPiece, RawDataset, SubQuestion, Turn};
use crate::parquet_io::{self as pq, Columns};
use crate::simgraph::{SimGraph, SimGraphConfig, SIMGRAPH_FILES};
use crate::tokens::heuristic_tokens;

/// Version of the export layout; part of every input key, so a layout change re-prepares.
pub const EXPORT_VERSION: u32 = 3;

/// Settings that change what an export contains (all are hashed into its input key).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PrepareConfig {
    /// BM25 parameters.
    pub bm25: Bm25Params,
    /// Knowledge-graph enrichment.
    pub enrich: EnrichConfig,
    /// The chunk similarity graph.
    pub simgraph: SimGraphConfig,
}

/// The dense embedder as prepare sees it: an identity and a batch function. Keeping this a
/// closure keeps the export independent of the model code (and testable with a fake model).
pub struct EmbedFn<'a> {
    /// Model identity (name + weights hash); recorded in the manifest and the input key.
    pub model_id: String,
    /// Vector dimension.
    pub dim: usize,
    /// Embeds texts, one L2-normalised vector per text, in order. The second argument is a
    /// label for progress reporting ("passages", "queries").
    #[allow(clippy::type_complexity)]
    pub embed: Box<dyn FnMut(&[&str], &str) -> Result<Vec<Vec<f32>>> + 'a>,
}

/// What prepare needs to know about where a dataset came from.
#[derive(Debug, Clone)]
pub struct Source {
    /// Dataset name (directory name under the exports root).
    pub name: String,
    /// Raw format name (`musique`, `synthetic`, ...).
    pub format: String,
    /// Raw input files, hashed into the manifest (empty for generated data).
    pub files: Vec<PathBuf>,
    /// Extra identity for inputs that are not files (the synthetic generator's config).
    pub extra: String,
}

/// One chunk of the corpus.
#[derive(Debug, Clone, PartialEq)]
pub struct Chunk {
    /// Record id (the corpus is sorted by it).
    pub id: String,
    /// Document index into [`Export::docs`], `None` when unknown.
    pub doc: Option<u32>,
    /// Title as published.
    pub title: String,
    /// Body text.
    pub text: String,
    /// Context header, if the dataset has one.
    pub header: Option<String>,
    /// Heuristic token count of the text the LLM would receive (`header\ntext` or `text`).
    pub tokens: u32,
}

impl Chunk {
    /// The text that is embedded, indexed and handed to an LLM: header and body.
    pub fn full_text(&self) -> String {
        match &self.header {
            Some(h) => format!("{h}\n{}", self.text),
            None => self.text.clone(),
        }
    }
}

/// One evaluation query, with gold resolved to chunk indices.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryRecord {
    /// Query id.
    pub id: String,
    /// Query text.
    pub text: String,
    /// Gold chunk indices, ascending, unique.
    pub gold: Vec<u32>,
    /// Hop chain slots as chunk indices (`None`: no published chain).
    pub chain: Option<Vec<Vec<u32>>>,
    /// Published decomposition (gold in chunk record ids).
    pub decomposition: Option<Vec<SubQuestion>>,
    /// Conversation so far.
    pub conversation: Option<Vec<Turn>>,
    /// Dataset labels.
    pub labels: BTreeMap<String, String>,
}

/// Counts printed by prepare and stored in the manifest.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExportStats {
    /// Chunks in the corpus.
    pub chunks: usize,
    /// Distinct documents.
    pub documents: usize,
    /// Queries.
    pub queries: usize,
    /// Sum of |gold| over queries.
    pub gold_chunks: usize,
    /// Queries with a published chain.
    pub queries_with_chain: usize,
    /// Chunks that carry a context header.
    pub chunks_with_header: usize,
    /// Distinct BM25 terms.
    pub bm25_terms: usize,
    /// BM25 postings.
    pub bm25_postings: usize,
    /// Knowledge-graph counts.
    pub kg: KgStats,
    /// Similarity-graph edges (undirected).
    pub simgraph_edges: usize,
    /// Similarity-graph communities.
    pub simgraph_communities: usize,
}

/// `manifest.json`: what the export is, and the blake3 of everything it was made from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// [`EXPORT_VERSION`].
    pub export_version: u32,
    /// Dataset name.
    pub dataset: String,
    /// Raw format.
    pub format: String,
    /// blake3 of each raw input file, by the path it was read from.
    pub inputs: BTreeMap<String, String>,
    /// blake3 of the non-file input identity (generator config), if any.
    pub extra: String,
    /// The prepare configuration.
    pub config: PrepareConfig,
    /// Embedding model identity.
    pub model_id: String,
    /// Embedding dimension.
    pub dim: usize,
    /// blake3 over everything above: equal keys mean an identical export.
    pub input_key: String,
    /// blake3 of each file of the export.
    pub files: BTreeMap<String, String>,
    /// Counts.
    pub stats: ExportStats,
}

impl Manifest {
    /// The export's content hash: blake3 over the file hashes (what cell keys use).
    pub fn content_hash(&self) -> String {
        let mut h = blake3::Hasher::new();
        for (name, hash) in &self.files {
            h.update(name.as_bytes());
            h.update(b"\0");
            h.update(hash.as_bytes());
            h.update(b"\n");
        }
        h.finalize().to_hex().to_string()
    }
}

/// A loaded export: everything a leg or the harness needs, in memory.
#[derive(Debug)]
pub struct Export {
    /// Where it was read from.
    pub dir: PathBuf,
    /// Its manifest.
    pub manifest: Manifest,
    /// Chunks, sorted by id (index = chunk index).
    pub chunks: Vec<Chunk>,
    /// Document names by document index.
    pub docs: Vec<String>,
    /// Vector dimension.
    pub dim: usize,
    /// Header+content vectors, row-major `chunks.len() x dim`.
    pub embeddings: Vec<f32>,
    /// Content-only vectors where the dataset has context headers (`None` otherwise).
    pub content_embeddings: Option<Vec<f32>>,
    /// Queries in dataset order.
    pub queries: Vec<QueryRecord>,
    /// Query vectors, row-major.
    pub query_embeddings: Vec<f32>,
    /// BM25 index.
    pub bm25: Bm25Index,
    /// The knowledge graph (empty where enrichment found no entities).
    pub kg: KnowledgeGraph,
    /// Its query-time indices.
    pub kg_index: KgIndex,
    /// The chunk similarity graph (kNN over `embeddings`, with communities).
    pub simgraph: SimGraph,
    /// Per query: its decomposition's sub-question vectors, flattened (`dim` each, in hop
    /// order; see [`subquery_texts`]), `None` without a decomposition.
    pub subquery_embeddings: Vec<Option<Vec<f32>>>,
}

impl Export {
    /// Chunk `i`'s header+content vector.
    pub fn embedding(&self, i: u32) -> &[f32] {
        &self.embeddings[i as usize * self.dim..(i as usize + 1) * self.dim]
    }
    /// Query `q`'s vector.
    pub fn query_embedding(&self, q: usize) -> &[f32] {
        &self.query_embeddings[q * self.dim..(q + 1) * self.dim]
    }
    /// Query `q`'s sub-question vectors (`None` without a decomposition).
    pub fn subquery_vectors(&self, q: usize) -> Option<Vec<&[f32]>> {
        let dim = self.dim.max(1);
        self.subquery_embeddings[q]
            .as_ref()
            .map(|flat| flat.chunks_exact(dim).collect())
    }
    /// Document index of chunk `i`.
    pub fn doc_of(&self, i: u32) -> Option<u32> {
        self.chunks[i as usize].doc
    }
}

fn hash_file(path: &Path) -> Result<String> {
    let bytes = fs::read(path).map_err(|e| Error::io(path, e))?;
    Ok(blake3::hash(&bytes).to_hex().to_string())
}

fn input_key(m: &Manifest) -> String {
    let ident = serde_json::json!({
        "export_version": m.export_version,
        "dataset": m.dataset,
        "format": m.format,
        "inputs": m.inputs,
        "extra": m.extra,
        "config": m.config,
        "model_id": m.model_id,
        "dim": m.dim,
    });
    blake3::hash(ident.to_string().as_bytes())
        .to_hex()
        .to_string()
}

/// Reads the manifest of `dir`, if there is one.
pub fn read_manifest(dir: &Path) -> Result<Manifest> {
    let path = dir.join("manifest.json");
    let text = fs::read_to_string(&path).map_err(|e| Error::io(&path, e))?;
    serde_json::from_str(&text).map_err(|e| Error::malformed(&path, "manifest JSON", e))
}

/// Whether `dir` holds an export with this input key whose files still hash as recorded.
fn reusable(dir: &Path, key: &str) -> bool {
    let Ok(m) = read_manifest(dir) else {
        return false;
    };
    m.input_key == key
        && m.files
            .iter()
            .all(|(name, hash)| hash_file(&dir.join(name)).ok().as_deref() == Some(hash))
}

/// The input key prepare would give this dataset (used to decide reuse before embedding).
pub fn planned_manifest(
    source: &Source,
    config: &PrepareConfig,
    model_id: &str,
    dim: usize,
) -> Result<Manifest> {
    let mut inputs = BTreeMap::new();
    for f in &source.files {
        inputs.insert(f.display().to_string(), hash_file(f)?);
    }
    let mut m = Manifest {
        export_version: EXPORT_VERSION,
        dataset: source.name.clone(),
        format: source.format.clone(),
        inputs,
        extra: blake3::hash(source.extra.as_bytes()).to_hex().to_string(),
        config: config.clone(),
        model_id: model_id.to_string(),
        dim,
        input_key: String::new(),
        files: BTreeMap::new(),
        stats: ExportStats::default(),
    };
    m.input_key = input_key(&m);
    Ok(m)
}

/// Outcome of [`prepare`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prepared {
    /// A fresh export was written.
    Written,
    /// An existing export had the same input key and intact files.
    Reused,
}

/// Builds (or reuses) the export of `raw` in `dir`. `raw` is only called when the export cannot
/// be reused, so reading and parsing the raw files is skipped on a cache hit too... except that
/// the raw files are still hashed, which is what makes the reuse safe.
pub fn prepare(
    source: &Source,
    raw: impl FnOnce() -> Result<RawDataset>,
    config: &PrepareConfig,
    embed: &mut EmbedFn<'_>,
    dir: &Path,
) -> Result<(Manifest, Prepared)> {
    let planned = planned_manifest(source, config, &embed.model_id, embed.dim)?;
    if reusable(dir, &planned.input_key) {
        return Ok((read_manifest(dir)?, Prepared::Reused));
    }
    let raw = raw()?;
    let built = build(source, raw, config, embed)?;
    let manifest = write_atomically(dir, planned, &built)?;
    Ok((manifest, Prepared::Written))
}

/// An export in memory before it is written.
struct Built {
    dim: usize,
    chunks: Vec<Chunk>,
    docs: Vec<String>,
    embeddings: Vec<f32>,
    content_embeddings: Option<Vec<f32>>,
    queries: Vec<QueryRecord>,
    query_embeddings: Vec<f32>,
    bm25: Bm25Index,
    kg: KnowledgeGraph,
    simgraph: SimGraph,
    subquery_embeddings: Vec<Option<Vec<f32>>>,
}

/// The texts embedded for a decomposition's sub-questions: each published sub-question with
/// every `#k` (1-based hop reference, MuSiQue style) replaced by the published answer of hop k.
/// This uses the published decomposition *and answers*: an oracle-ish setting.
pub fn subquery_texts(decomposition: &[SubQuestion]) -> Vec<String> {
    decomposition
        .iter()
        .map(|sq| {
            question_pieces(&sq.question)
                .into_iter()
                .map(|p| match p {
                    QuestionPiece::Text(t) => t,
                    QuestionPiece::HopRef { raw, hop } => hop
                        .and_then(|k| k.checked_sub(1))
                        .and_then(|k| decomposition.get(k))
                        .map_or(raw, |h| h.answer.as_str()),
                })
                .collect()
        })
        .collect()
}

fn flatten(vectors: Vec<Vec<f32>>, dim: usize, what: &str) -> Result<Vec<f32>> {
    let mut flat = Vec::with_capacity(vectors.len() * dim);
    for (i, v) in vectors.into_iter().enumerate() {
        if v.len() != dim {
            return Err(Error::Dimension {
                path: PathBuf::from(format!("<embedder output for {what}>")),
                record: i.to_string(),
                field: "embedding".into(),
                expected: dim,
                found: v.len(),
            });
        }
        flat.extend(v);
    }
    Ok(flat)
}

fn build(
    source: &Source,
    raw: RawDataset,
    config: &PrepareConfig,
    embed: &mut EmbedFn<'_>,
) -> Result<Built> {
    let origin = PathBuf::from(format!("<dataset {}>", source.name));
    config
        .simgraph
        .validate()
        .map_err(|message| Error::Config {
            context: "prepare config `simgraph`".into(),
            message,
        })?;
    config.enrich.validate().map_err(|message| Error::Config {
        context: "prepare config `enrich`".into(),
        message,
    })?;
    let mut passages = raw.passages;
    passages.sort_by(|a, b| a.id.cmp(&b.id));
    if let Some(w) = passages.windows(2).find(|w| w[0].id == w[1].id) {
        return Err(Error::DuplicatePassage {
            path: origin,
            id: w[0].id.clone(),
        });
    }
    let index: HashMap<&str, u32> = passages
        .iter()
        .enumerate()
        .map(|(i, p)| (p.id.as_str(), i as u32))
        .collect();
    let doc_names: BTreeSet<&str> = passages.iter().filter_map(|p| p.doc.as_deref()).collect();
    let docs: Vec<String> = doc_names.iter().map(|s| s.to_string()).collect();
    let doc_index: HashMap<&str, u32> = docs
        .iter()
        .enumerate()
        .map(|(i, d)| (d.as_str(), i as u32))
        .collect();
    let chunks: Vec<Chunk> = passages
        .iter()
        .map(|p| {
            let mut c = Chunk {
                id: p.id.clone(),
                doc: p.doc.as_deref().map(|d| doc_index[d]),
                title: p.title.clone(),
                text: p.text.clone(),
                header: p.header.clone(),
                tokens: 0,
            };
            c.tokens = heuristic_tokens(&c.full_text());
            c
        })
        .collect();

    let mut queries = Vec::with_capacity(raw.questions.len());
    let mut seen_q = BTreeSet::new();
    for q in raw.questions {
        if !seen_q.insert(q.id.clone()) {
            return Err(Error::field(&origin, &q.id, "id", "duplicate query id"));
        }
        let resolve = |id: &str, field: &str| {
            index
                .get(id)
                .copied()
                .ok_or_else(|| Error::GoldNotInCorpus {
                    path: origin.clone(),
                    record: q.id.clone(),
                    field: field.into(),
                    gold: id.into(),
                })
        };
        let mut gold = q
            .gold
            .iter()
            .map(|g| resolve(g, "gold"))
            .collect::<Result<Vec<_>>>()?;
        gold.sort_unstable();
        gold.dedup();
        let chain = match &q.chain {
            None => None,
            Some(slots) if slots.is_empty() => None,
            Some(slots) => Some(
                slots
                    .iter()
                    .map(|s| {
                        let mut v = s
                            .iter()
                            .map(|g| resolve(g, "chain"))
                            .collect::<Result<Vec<_>>>()?;
                        v.sort_unstable();
                        v.dedup();
                        Ok(v)
                    })
                    .collect::<Result<Vec<_>>>()?,
            ),
        };
        queries.push(QueryRecord {
            id: q.id,
            text: q.text,
            gold,
            chain,
            decomposition: q.decomposition,
            conversation: q.conversation,
            labels: q.labels,
        });
    }

    let tokenizer = Tokenizer::english();
    let full: Vec<String> = chunks.iter().map(Chunk::full_text).collect();
    let bm25 = Bm25Index::build(full.iter().map(String::as_str), &tokenizer, config.bm25);
    let titled: Vec<(&str, &str)> = chunks
        .iter()
        .zip(&full)
        .map(|(c, f)| (c.title.as_str(), f.as_str()))
        .collect();
    let kg = enrich::build(&titled, &config.enrich);

    let dim = embed.dim;
    let refs: Vec<&str> = full.iter().map(String::as_str).collect();
    let embeddings = flatten((embed.embed)(&refs, "passages")?, dim, "passages")?;
    let any_header = chunks.iter().any(|c| c.header.is_some());
    let content_embeddings = if any_header {
        let content: Vec<&str> = chunks.iter().map(|c| c.text.as_str()).collect();
        Some(flatten(
            (embed.embed)(&content, "passages (content only)")?,
            dim,
            "content",
        )?)
    } else {
        None
    };
    let qtexts: Vec<&str> = queries.iter().map(|q| q.text.as_str()).collect();
    let query_embeddings = flatten((embed.embed)(&qtexts, "queries")?, dim, "queries")?;
    let simgraph = SimGraph::build(&embeddings, dim, &config.simgraph);
    let sub_texts: Vec<Option<Vec<String>>> = queries
        .iter()
        .map(|q| q.decomposition.as_deref().map(subquery_texts))
        .collect();
    let all: Vec<&str> = sub_texts
        .iter()
        .flatten()
        .flatten()
        .map(String::as_str)
        .collect();
    let mut flat_subs = if all.is_empty() {
        Vec::new()
    } else {
        flatten((embed.embed)(&all, "sub-queries")?, dim, "sub-queries")?
    };
    let mut subquery_embeddings = Vec::with_capacity(queries.len());
    let mut at = 0;
    for t in &sub_texts {
        subquery_embeddings.push(t.as_ref().map(|t| {
            let v = flat_subs[at..at + t.len() * dim].to_vec();
            at += t.len() * dim;
            v
        }));
    }
    flat_subs.clear();
    Ok(Built {
        dim,
        chunks,
        docs,
        embeddings,
        content_embeddings,
        queries,
        query_embeddings,
        bm25,
        kg,
        simgraph,
        subquery_embeddings,
    })
}

fn json_opt<T: Serialize>(v: &Option<T>) -> Option<String> {
    v.as_ref()
        .map(|x| serde_json::to_string(x).expect("serialisable"))
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Bm25Stats {
    tokenizer: String,
    params: Bm25Params,
    chunks: usize,
    avgdl: f64,
    doc_len: Vec<u32>,
}

fn write_files(dir: &Path, b: &Built) -> Result<()> {
    let c = &b.chunks;
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
            "title",
            pq::strings(&c.iter().map(|c| c.title.as_str()).collect::<Vec<_>>()),
        ),
        (
            "text",
            pq::strings(&c.iter().map(|c| c.text.as_str()).collect::<Vec<_>>()),
        ),
        (
            "context_header",
            pq::opt_strings(&c.iter().map(|c| c.header.clone()).collect::<Vec<_>>()),
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
    b.simgraph.write(dir)?;

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
    pq::write(
        &dir.join("queries.parquet"),
        vec![
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
        ],
    )?;

    let parts = b.bm25.to_parts();
    let stats = Bm25Stats {
        tokenizer: Tokenizer::english().name().into(),
        params: parts.params,
        chunks: parts.doc_len.len(),
        avgdl: b.bm25.avgdl(),
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

/// The file names an export consists of (besides the manifest).
pub const EXPORT_FILES: [&str; 10] = [
    "corpus.parquet",
    "queries.parquet",
    "bm25-stats.json",
    "bm25-postings.parquet",
    enrich::KG_FILES[0],
    enrich::KG_FILES[1],
    enrich::KG_FILES[2],
    enrich::KG_FILES[3],
    SIMGRAPH_FILES[0],
    SIMGRAPH_FILES[1],
];

/// A nullable `list<float32>` column.
fn f32_lists(rows: &[Option<Vec<f32>>]) -> arrow_array::ArrayRef {
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

/// Reads the nullable `list<float32>` column `name` (null items are an error).
fn read_f32_lists(path: &Path, cols: &Columns<'_>, name: &str) -> Result<Vec<Option<Vec<f32>>>> {
    use arrow_array::{Array, Float32Array, ListArray};
    let a = cols
        .batch
        .column_by_name(name)
        .ok_or_else(|| Error::field(path, "schema", name, "column is missing"))?
        .as_any()
        .downcast_ref::<ListArray>()
        .ok_or_else(|| Error::field(path, "schema", name, "expected list<float32>"))?;
    (0..a.len())
        .map(|i| {
            if a.is_null(i) {
                return Ok(None);
            }
            let inner = a.value(i);
            let v = inner
                .as_any()
                .downcast_ref::<Float32Array>()
                .ok_or_else(|| {
                    Error::field(path, format!("row {i}"), name, "expected list<float32>")
                })?;
            if v.null_count() > 0 {
                return Err(Error::field(
                    path,
                    format!("row {i}"),
                    name,
                    "holds null items",
                ));
            }
            Ok(Some(v.values().to_vec()))
        })
        .collect()
}

fn write_atomically(dir: &Path, mut manifest: Manifest, b: &Built) -> Result<Manifest> {
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
        for f in EXPORT_FILES {
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
            chunks_with_header: b.chunks.iter().filter(|c| c.header.is_some()).count(),
            bm25_terms: b.bm25.num_terms(),
            bm25_postings: b.bm25.num_postings(),
            kg: b.kg.stats(),
            simgraph_edges: b.simgraph.num_edges(),
            simgraph_communities: b.simgraph.num_communities(),
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

/// Loads the export in `dir`, checking every file against the manifest's hashes.
pub fn load(dir: &Path) -> Result<Export> {
    let manifest = read_manifest(dir)?;
    for (name, hash) in &manifest.files {
        let path = dir.join(name);
        let actual = hash_file(&path)?;
        if &actual != hash {
            return Err(Error::field(
                &path,
                "file",
                "blake3",
                format!(
                    "is {actual}, manifest says {hash}: the export was modified; re-run prepare"
                ),
            ));
        }
    }
    let dim = manifest.dim;

    let path = dir.join("corpus.parquet");
    let batch = pq::read(&path)?;
    let cols = Columns {
        path: &path,
        batch: &batch,
    };
    let ids = cols.strings("chunk_id")?;
    if let Some(w) = ids.windows(2).position(|w| w[0] >= w[1]) {
        return Err(Error::field(
            &path,
            format!("row {}", w + 1),
            "chunk_id",
            "rows are not sorted by unique chunk id",
        ));
    }
    let doc_ids = cols.opt_strings("doc_id")?;
    let titles = cols.strings("title")?;
    let texts = cols.strings("text")?;
    let headers = cols.opt_strings("context_header")?;
    let tokens = cols.u32s("token_count")?;
    let kg = enrich::read_kg(dir, &cols)?;
    let embeddings = cols.vectors("embedding", dim)?;
    let content_embeddings = if cols.has("embedding_content") {
        Some(cols.vectors("embedding_content", dim)?)
    } else {
        None
    };
    let doc_set: BTreeSet<&str> = doc_ids.iter().flatten().map(String::as_str).collect();
    let docs: Vec<String> = doc_set.iter().map(|s| s.to_string()).collect();
    let doc_index: HashMap<&str, u32> = docs
        .iter()
        .enumerate()
        .map(|(i, d)| (d.as_str(), i as u32))
        .collect();
    let chunks: Vec<Chunk> = (0..ids.len())
        .map(|i| Chunk {
            id: ids[i].clone(),
            doc: doc_ids[i].as_deref().map(|d| doc_index[d]),
            title: titles[i].clone(),
            text: texts[i].clone(),
            header: headers[i].clone(),
            tokens: tokens[i],
        })
        .collect();
    let index: HashMap<&str, u32> = ids
        .iter()
        .enumerate()
        .map(|(i, s)| (s.as_str(), i as u32))
        .collect();

    let path = dir.join("queries.parquet");
    let batch = pq::read(&path)?;
    let cols = Columns {
        path: &path,
        batch: &batch,
    };
    let qids = cols.strings("query_id")?;
    let qtexts = cols.strings("text")?;
    let query_embeddings = cols.vectors("embedding", dim)?;
    let gold_ids = cols.string_lists("gold_chunk_ids")?;
    let chains = cols.opt_strings("chain_json")?;
    let decomps = cols.opt_strings("decomposition_json")?;
    let convs = cols.opt_strings("conversation_json")?;
    let labels = cols.strings("labels_json")?;
    let subs = read_f32_lists(&path, &cols, "subquery_embeddings")?;
    let resolve = |row: usize, field: &str, id: &str| {
        index
            .get(id)
            .copied()
            .ok_or_else(|| Error::GoldNotInCorpus {
                path: path.clone(),
                record: qids[row].clone(),
                field: field.into(),
                gold: id.into(),
            })
    };
    let parse = |row: usize, field: &str, text: &str| -> Result<serde_json::Value> {
        serde_json::from_str(text)
            .map_err(|e| Error::field(&path, &qids[row], field, e.to_string()))
    };
    let mut queries = Vec::with_capacity(qids.len());
    for row in 0..qids.len() {
        let gold = gold_ids[row]
            .as_ref()
            .ok_or_else(|| Error::field(&path, &qids[row], "gold_chunk_ids", "is null"))?
            .iter()
            .map(|g| resolve(row, "gold_chunk_ids", g))
            .collect::<Result<Vec<_>>>()?;
        let chain = match &chains[row] {
            None => None,
            Some(text) => {
                let slots: Vec<Vec<String>> =
                    serde_json::from_value(parse(row, "chain_json", text)?).map_err(|e| {
                        Error::field(&path, &qids[row], "chain_json", e.to_string())
                    })?;
                Some(
                    slots
                        .iter()
                        .map(|s| {
                            s.iter()
                                .map(|g| resolve(row, "chain_json", g))
                                .collect::<Result<Vec<_>>>()
                        })
                        .collect::<Result<Vec<_>>>()?,
                )
            }
        };
        let decomposition = match &decomps[row] {
            None => None,
            Some(t) => Some(
                serde_json::from_value(parse(row, "decomposition_json", t)?).map_err(|e| {
                    Error::field(&path, &qids[row], "decomposition_json", e.to_string())
                })?,
            ),
        };
        let conversation = match &convs[row] {
            None => None,
            Some(t) => Some(
                serde_json::from_value(parse(row, "conversation_json", t)?).map_err(|e| {
                    Error::field(&path, &qids[row], "conversation_json", e.to_string())
                })?,
            ),
        };
        let labels = serde_json::from_value(parse(row, "labels_json", &labels[row])?)
            .map_err(|e| Error::field(&path, &qids[row], "labels_json", e.to_string()))?;
        let want = decomposition
            .as_ref()
            .map(|d: &Vec<SubQuestion>| d.len() * dim);
        let have = subs[row].as_ref().map(Vec::len);
        if want != have {
            let show = |x: Option<usize>| x.map_or("null".to_string(), |n| format!("{n} floats"));
            return Err(Error::field(
                &path,
                &qids[row],
                "subquery_embeddings",
                format!(
                    "is {}, the decomposition implies {} (row {row})",
                    show(have),
                    show(want)
                ),
            ));
        }
        queries.push(QueryRecord {
            id: qids[row].clone(),
            text: qtexts[row].clone(),
            gold,
            chain,
            decomposition,
            conversation,
            labels,
        });
    }

    let path = dir.join("bm25-stats.json");
    let text = fs::read_to_string(&path).map_err(|e| Error::io(&path, e))?;
    let stats: Bm25Stats =
        serde_json::from_str(&text).map_err(|e| Error::malformed(&path, "BM25 stats JSON", e))?;
    if stats.tokenizer != Tokenizer::english().name() {
        return Err(Error::field(
            &path,
            "stats",
            "tokenizer",
            format!(
                "`{}` is not the tokenizer this build has ({})",
                stats.tokenizer,
                Tokenizer::english().name()
            ),
        ));
    }
    if stats.doc_len.len() != chunks.len() {
        return Err(Error::field(
            &path,
            "stats",
            "doc_len",
            format!(
                "has {} entries for {} chunks",
                stats.doc_len.len(),
                chunks.len()
            ),
        ));
    }
    let path = dir.join("bm25-postings.parquet");
    let batch = pq::read(&path)?;
    let cols = Columns {
        path: &path,
        batch: &batch,
    };
    let terms = cols.strings("term")?;
    let runs_c = cols.u32_lists("chunks")?;
    let runs_t = cols.u32_lists("tfs")?;
    let mut parts = Bm25Parts {
        params: stats.params,
        doc_len: stats.doc_len,
        terms,
        offsets: vec![0],
        post_chunk: Vec::new(),
        post_tf: Vec::new(),
    };
    for (row, (c, t)) in runs_c.into_iter().zip(runs_t).enumerate() {
        if c.len() != t.len() {
            return Err(Error::field(
                &path,
                format!("row {row}"),
                "tfs",
                "length differs from `chunks`",
            ));
        }
        parts.post_chunk.extend(c);
        parts.post_tf.extend(t);
        parts.offsets.push(parts.post_chunk.len() as u32);
    }
    let simgraph = SimGraph::read(dir, ids.len())?;
    let bm25 =
        Bm25Index::from_parts(parts).map_err(|m| Error::field(&path, "postings", "chunks", m))?;

    Ok(Export {
        dir: dir.to_path_buf(),
        manifest,
        chunks,
        docs,
        dim,
        embeddings,
        content_embeddings,
        queries,
        query_embeddings,
        bm25,
        kg_index: KgIndex::new(&kg, ids.len()),
        kg,
        simgraph,
        subquery_embeddings: subs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Passage, Question};

    fn passage(id: &str, doc: &str, text: &str) -> Passage {
        Passage {
            id: id.into(),
            doc: Some(doc.into()),
            title: doc.into(),
            text: text.into(),
            header: None,
        }
    }

    fn raw() -> RawDataset {
        let mut q = Question::new(
            "q1",
            "where was the founder born",
            vec!["b".into(), "a".into(), "a".into()],
        );
        q.chain = Some(vec![vec!["a".into()], vec!["b".into()]]);
        RawDataset {
            passages: vec![
                passage("c", "Gamma", "gamma is unrelated"),
                passage("a", "Alpha", "alpha founded the company of Beta"),
                passage(
                    "b",
                    "Beta",
                    "beta was born in a city. Alpha and Gamma were not.",
                ),
            ],
            questions: vec![q, Question::new("q2", "gamma", vec!["c".into()])],
        }
    }

    /// A deterministic fake model: the vector counts letters, so texts differ and it is cheap.
    fn fake(dim: usize, calls: std::rc::Rc<std::cell::Cell<usize>>) -> EmbedFn<'static> {
        EmbedFn {
            model_id: "fake@0".into(),
            dim,
            embed: Box::new(move |texts, _| {
                calls.set(calls.get() + texts.len());
                Ok(texts
                    .iter()
                    .map(|t| {
                        let mut v = vec![0.0f32; dim];
                        for (i, b) in t.bytes().enumerate() {
                            v[(b as usize + i) % dim] += 1.0;
                        }
                        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-9);
                        v.iter().map(|x| x / n).collect()
                    })
                    .collect())
            }),
        }
    }

    fn source() -> Source {
        Source {
            name: "tiny".into(),
            format: "test".into(),
            files: vec![],
            extra: "x".into(),
        }
    }

    #[test]
    fn round_trip_sorts_chunks_resolves_gold_and_reuses() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("tiny");
        let calls = std::rc::Rc::new(std::cell::Cell::new(0));
        let (m, how) = prepare(
            &source(),
            || Ok(raw()),
            &PrepareConfig::default(),
            &mut fake(8, calls.clone()),
            &dir,
        )
        .unwrap();
        assert_eq!(how, Prepared::Written);
        assert_eq!(
            (
                m.stats.chunks,
                m.stats.queries,
                m.stats.gold_chunks,
                m.stats.queries_with_chain
            ),
            (3, 2, 3, 1)
        );
        let e = load(&dir).unwrap();
        assert_eq!(
            e.chunks.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(),
            vec!["a", "b", "c"]
        );
        assert_eq!(e.queries[0].gold, vec![0, 1]);
        assert_eq!(e.queries[0].chain, Some(vec![vec![0], vec![1]]));
        assert_eq!(e.queries[1].chain, None);
        assert_eq!(e.docs, vec!["Alpha", "Beta", "Gamma"]);
        assert!(e.content_embeddings.is_none());
        assert_eq!(e.embedding(2).len(), 8);
        assert_eq!(e.bm25.search(&Tokenizer::english(), "gamma", 5)[0].0, 2);
        // the knowledge graph: the same as building it over the loaded chunks, with its stats
        let titled: Vec<(String, String)> = e
            .chunks
            .iter()
            .map(|c| (c.title.clone(), c.full_text()))
            .collect();
        let refs: Vec<(&str, &str)> = titled
            .iter()
            .map(|(t, x)| (t.as_str(), x.as_str()))
            .collect();
        let kg = enrich::build(&refs, &EnrichConfig::default());
        assert_eq!(e.kg, kg);
        assert_eq!(e.kg.nodes, vec!["Alpha", "Beta", "Gamma"]);
        assert_eq!(e.kg.chunk_nodes, vec![vec![0, 1], vec![0, 1, 2], vec![2]]);
        // Alpha -> Beta (1.0), Beta -> Alpha (1.0), Beta -> Gamma (1.0), Alpha ~ Gamma in Beta (0.5)
        assert_eq!(e.kg.edges, vec![(0, 1, 2.0), (0, 2, 0.5), (1, 2, 1.0)]);
        assert_eq!(e.kg.chunk_reach, vec![vec![2], vec![], vec![0, 1]]);
        assert_eq!(m.stats.kg, e.kg.stats());
        assert_eq!((m.stats.kg.entities, m.stats.kg.edges), (3, 3));
        assert_eq!(
            e.kg_index.query_seeds("Where was BETA born, alpha?"),
            vec![1, 0]
        );
        assert_eq!(e.kg_index.node_chunks(2), &[1, 2]);
        // unchanged inputs: reused, nothing embedded again
        let before = calls.get();
        let (m2, how) = prepare(
            &source(),
            || panic!("raw must not be read on reuse"),
            &PrepareConfig::default(),
            &mut fake(8, calls.clone()),
            &dir,
        )
        .unwrap();
        assert_eq!((how, calls.get()), (Prepared::Reused, before));
        assert_eq!(m2, m);
        // a different config is a different export
        let cfg = PrepareConfig {
            bm25: Bm25Params { k1: 1.2, b: 0.75 },
            ..Default::default()
        };
        let (_, how) = prepare(&source(), || Ok(raw()), &cfg, &mut fake(8, calls), &dir).unwrap();
        assert_eq!(how, Prepared::Written);
    }

    #[test]
    fn headers_give_content_only_vectors() {
        let tmp = tempfile::tempdir().unwrap();
        let mut r = raw();
        r.passages[0].header = Some("World > Gamma".into());
        let calls = std::rc::Rc::new(std::cell::Cell::new(0));
        prepare(
            &source(),
            || Ok(r),
            &PrepareConfig::default(),
            &mut fake(8, calls),
            &tmp.path().join("h"),
        )
        .unwrap();
        let e = load(&tmp.path().join("h")).unwrap();
        let ce = e.content_embeddings.as_ref().unwrap();
        assert_eq!(ce.len(), 3 * 8);
        assert_ne!(
            &ce[16..24],
            e.embedding(2),
            "the headed chunk's content-only vector differs"
        );
        assert_eq!(e.chunks[2].full_text(), "World > Gamma\ngamma is unrelated");
    }

    fn expect_err(r: RawDataset, dim_out: usize, needle: &str) {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("bad");
        let calls = std::rc::Rc::new(std::cell::Cell::new(0));
        let mut f = fake(dim_out, calls);
        f.dim = 8;
        let err = prepare(&source(), || Ok(r), &PrepareConfig::default(), &mut f, &dir)
            .unwrap_err()
            .to_string();
        assert!(err.contains(needle), "{err}");
        assert!(!dir.exists(), "nothing half-written");
        assert_eq!(
            std::fs::read_dir(tmp.path()).unwrap().count(),
            0,
            "no temp dir left behind"
        );
    }

    #[test]
    fn bad_inputs_are_typed_errors_and_leave_nothing_behind() {
        let mut r = raw();
        r.passages.push(passage("a", "Alpha", "again"));
        expect_err(r, 8, "duplicate passage id `a`");
        let mut r = raw();
        r.questions[0].gold.push("zzz".into());
        expect_err(
            r,
            8,
            "record q1: field `gold`: gold passage zzz is not in the corpus",
        );
        let mut r = raw();
        r.questions[0].chain = Some(vec![vec!["nope".into()]]);
        expect_err(r, 8, "field `chain`");
        expect_err(raw(), 5, "expected dimension 8, found 5");
        let mut r = raw();
        r.questions
            .push(Question::new("q1", "dup", vec!["a".into()]));
        expect_err(r, 8, "duplicate query id");
    }

    /// Prepares the tiny export into `dir`.
    fn tiny(dir: &Path) -> Manifest {
        let calls = std::rc::Rc::new(std::cell::Cell::new(0));
        prepare(
            &source(),
            || Ok(raw()),
            &PrepareConfig::default(),
            &mut fake(8, calls),
            dir,
        )
        .unwrap()
        .0
    }

    /// Rewrites `file` (a parquet file of `dir`) with `edit` applied to its columns, and records
    /// its new hash in the manifest, so that only the content checks of `load` can object.
    fn rewrite(
        dir: &Path,
        file: &str,
        edit: impl FnOnce(&str, arrow_array::ArrayRef) -> arrow_array::ArrayRef,
    ) {
        let path = dir.join(file);
        let batch = pq::read(&path).unwrap();
        let schema = batch.schema();
        let mut edit = Some(edit);
        let mut cols = Vec::new();
        for (f, a) in schema.fields().iter().zip(batch.columns()) {
            let a = match f.name().as_str() {
                "b" | "kg_reach" => (edit.take().unwrap())(f.name(), a.clone()),
                _ => a.clone(),
            };
            cols.push((f.name().as_str(), a));
        }
        pq::write(&path, cols).unwrap();
        let mut m = read_manifest(dir).unwrap();
        m.files.insert(file.into(), hash_file(&path).unwrap());
        std::fs::write(
            dir.join("manifest.json"),
            serde_json::to_string_pretty(&m).unwrap(),
        )
        .unwrap();
    }

    #[test]
    fn a_malformed_knowledge_graph_is_refused_on_load() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("kg");
        tiny(&dir);
        load(&dir).unwrap();
        // an edge to a node that does not exist
        rewrite(&dir, "kg-edges.parquet", |_, _| pq::u32s(&[1, 7, 2]));
        let err = load(&dir).unwrap_err().to_string();
        assert!(
            err.contains("kg-edges.parquet") && err.contains("row 1") && err.contains("`b`"),
            "{err}"
        );
        // a denormalised corpus column that disagrees with the graph files (the doctored export
        // hashes as its manifest says, so it would be reused: start afresh)
        std::fs::remove_dir_all(&dir).unwrap();
        tiny(&dir);
        rewrite(&dir, "corpus.parquet", |_, _| {
            pq::u32_lists(&[vec![2], vec![0], vec![0, 1]])
        });
        let err = load(&dir).unwrap_err().to_string();
        assert!(
            err.contains("corpus.parquet") && err.contains("row 1") && err.contains("`kg_reach`"),
            "{err}"
        );
    }

    #[test]
    fn export_round_trips_simgraph_and_subquery_vectors() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("sq");
        let mut r = raw();
        r.questions[0].decomposition = Some(vec![
            SubQuestion {
                question: "who founded the company".into(),
                answer: "Alpha".into(),
                gold: vec!["a".into()],
            },
            SubQuestion {
                question: "where was #1 born".into(),
                answer: "a city".into(),
                gold: vec!["b".into()],
            },
        ]);
        // a graph with edges on this tiny corpus: keep everything
        let cfg = PrepareConfig {
            simgraph: SimGraphConfig {
                min_similarity: -1.0,
                ..Default::default()
            },
            ..Default::default()
        };
        let calls = std::rc::Rc::new(std::cell::Cell::new(0));
        let (m, _) = prepare(&source(), || Ok(r), &cfg, &mut fake(8, calls.clone()), &dir).unwrap();
        let e = load(&dir).unwrap();
        assert_eq!(m.export_version, 3);
        assert_eq!(e.simgraph.num_edges(), 3, "3 chunks, all pairs kept");
        assert_eq!(
            (m.stats.simgraph_edges, m.stats.simgraph_communities),
            (3, e.simgraph.num_communities())
        );
        let built = SimGraph::build(&e.embeddings, e.dim, &cfg.simgraph);
        assert_eq!(e.simgraph, built);
        assert_eq!(
            e.simgraph.weight(0, 2),
            Some(crate::simgraph::dot(e.embedding(0), e.embedding(2)))
        );
        // sub-query vectors: hop 2's `#1` became hop 1's answer
        let texts = subquery_texts(e.queries[0].decomposition.as_ref().unwrap());
        assert_eq!(
            texts,
            vec!["who founded the company", "where was Alpha born"]
        );
        let subs = e.subquery_vectors(0).unwrap();
        assert_eq!(subs.len(), 2);
        let mut f = fake(8, calls);
        let want = (f.embed)(&["who founded the company", "where was Alpha born"], "x").unwrap();
        assert_eq!(subs[0], &want[0][..]);
        assert_eq!(subs[1], &want[1][..]);
        assert!(e.subquery_embeddings[1].is_none() && e.subquery_vectors(1).is_none());
        // the default config prunes below 0.60 and differs in key
        let d = tmp.path().join("d");
        tiny(&d);
        assert_ne!(read_manifest(&d).unwrap().input_key, m.input_key);
    }

    #[test]
    fn a_subquery_column_that_disagrees_with_the_decomposition_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("sq");
        let mut r = raw();
        r.questions[0].decomposition = Some(vec![SubQuestion {
            question: "who".into(),
            answer: "Alpha".into(),
            gold: vec!["a".into()],
        }]);
        let calls = std::rc::Rc::new(std::cell::Cell::new(0));
        prepare(
            &source(),
            || Ok(r),
            &PrepareConfig::default(),
            &mut fake(8, calls),
            &dir,
        )
        .unwrap();
        let path = dir.join("queries.parquet");
        let batch = pq::read(&path).unwrap();
        let schema = batch.schema();
        let cols: Vec<(&str, arrow_array::ArrayRef)> = schema
            .fields()
            .iter()
            .zip(batch.columns())
            .map(|(f, a)| {
                let a = if f.name() == "subquery_embeddings" {
                    f32_lists(&[Some(vec![0.5; 3]), None])
                } else {
                    a.clone()
                };
                (f.name().as_str(), a)
            })
            .collect();
        pq::write(&path, cols).unwrap();
        let mut m = read_manifest(&dir).unwrap();
        m.files
            .insert("queries.parquet".into(), hash_file(&path).unwrap());
        std::fs::write(
            dir.join("manifest.json"),
            serde_json::to_string_pretty(&m).unwrap(),
        )
        .unwrap();
        let err = load(&dir).unwrap_err().to_string();
        assert!(
            err.contains("queries.parquet")
                && err.contains("q1")
                && err.contains("`subquery_embeddings`")
                && err.contains("row 0"),
            "{err}"
        );
    }

    #[test]
    fn subquery_texts_resolve_multi_digit_and_unknown_references() {
        let sq = |q: &str, a: &str| SubQuestion {
            question: q.into(),
            answer: a.into(),
            gold: vec![],
        };
        let d = vec![sq("x", "A1"), sq("#1 and #2 and #12 and #", "B")];
        assert_eq!(subquery_texts(&d)[1], "A1 and B and #12 and #");
    }

    #[test]
    fn building_twice_gives_identical_files() {
        let tmp = tempfile::tempdir().unwrap();
        let a = tiny(&tmp.path().join("a"));
        let b = tiny(&tmp.path().join("b"));
        assert_eq!(a.files, b.files);
        assert_eq!(a.files.len(), EXPORT_FILES.len());
        assert_eq!(a.content_hash(), b.content_hash());
        for f in EXPORT_FILES {
            assert_eq!(
                hash_file(&tmp.path().join("a").join(f)).unwrap(),
                hash_file(&tmp.path().join("b").join(f)).unwrap(),
                "{f}"
            );
        }
    }

    #[test]
    fn a_modified_export_file_is_refused_on_load() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("t");
        let calls = std::rc::Rc::new(std::cell::Cell::new(0));
        prepare(
            &source(),
            || Ok(raw()),
            &PrepareConfig::default(),
            &mut fake(8, calls.clone()),
            &dir,
        )
        .unwrap();
        std::fs::write(dir.join("bm25-stats.json"), b"{}").unwrap();
        let err = load(&dir).unwrap_err().to_string();
        assert!(
            err.contains("bm25-stats.json") && err.contains("modified"),
            "{err}"
        );
        // and prepare rebuilds it instead of reusing it
        let (_, how) = prepare(
            &source(),
            || Ok(raw()),
            &PrepareConfig::default(),
            &mut fake(8, calls),
            &dir,
        )
        .unwrap();
        assert_eq!(how, Prepared::Written);
        load(&dir).unwrap();
    }
}
