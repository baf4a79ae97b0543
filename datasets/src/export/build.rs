//! Raw dataset -> the export: passages sorted by id into chunks, gold and chains resolved to
//! chunk indices, BM25, the knowledge graph, vectors, the similarity graph and the sub-query
//! vectors (from the embedder, or from the dataset's vectors files, read before). Each part is
//! written as soon as it is built and then dropped ([`super::write`]'s staging directory), so
//! the peak memory of a prepare is its largest stage, not the sum of every part.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use super::texts::Texts;
use super::{
    Chunk, ChunkText, EmbedFn, ExportStats, ExternalTables, Part, Parts, PrepareConfig,
    QueryRecord, Source,
};
use crate::enrich::{self, KgStats};
use crate::error::{Error, Result};
use crate::lexical::{Bm25Parts, Tokenizer};
use crate::model::Role;
use crate::model::{
    question_pieces, Passage, Question, QuestionPiece, Span, SpannedDataset, SubQuestion,
};
use crate::parquet_io as pq;
use crate::simgraph::{SimGraph, SimGraphBuild};
use crate::tokens::heuristic_tokens;
use crate::vectors_file::{VectorSet, VectorTable};

/// What a build leaves once its parts are written: their counts and what the manifest and the
/// dense engine's cache take from it.
pub(super) struct Built {
    /// The counts (`simgraph_*` zero without the graph).
    pub(super) stats: ExportStats,
    /// The optional parts written.
    pub(super) parts: Parts,
    /// The similarity graph's HNSW index, handed to the dense engine's cache once the export
    /// is in place.
    pub(super) simgraph_shard: Option<crate::hnsw::KeptShard>,
    /// Vector sets a dataset with vectors files lacks ([`VectorsRecord::absent`]).
    ///
    /// [`VectorsRecord::absent`]: super::VectorsRecord::absent
    pub(super) absent_vectors: Vec<String>,
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
    flatten_from(vectors, 0, dim, what)
}

/// [`flatten`] of the vectors of records `first..`, each named by its record number.
fn flatten_from(vectors: Vec<Vec<f32>>, first: usize, dim: usize, what: &str) -> Result<Vec<f32>> {
    let mut flat = Vec::with_capacity(vectors.len() * dim);
    for (i, v) in vectors.into_iter().enumerate() {
        if v.len() != dim {
            return Err(Error::Dimension {
                path: PathBuf::from(format!("<embedder output for {what}>")),
                record: (first + i).to_string(),
                field: "embedding".into(),
                expected: dim,
                found: v.len(),
            });
        }
        flat.extend(v);
    }
    Ok(flat)
}

/// Builds the export of `spanned` into `out` (the staging directory; `None`: an embed-only
/// pass that writes nothing): the chunks, the queries resolved to them, BM25, the knowledge
/// graph, the vectors (embedded, or from `external`) and, given a `graph_scratch` directory
/// (where a selected leg reads it), the similarity graph. Each part is written when it is built
/// and dropped after, each with the function and arrays a write of everything at the end used,
/// so the files are byte for byte what they were.
pub(super) fn build(
    source: &Source,
    spanned: SpannedDataset,
    config: &PrepareConfig,
    embed: &mut EmbedFn<'_>,
    external: Option<&ExternalTables>,
    graph_scratch: Option<&Path>,
    out: Option<&Path>,
) -> Result<Built> {
    let corpus = resolve(source, spanned, config, out)?;
    let bm25 = bm25_stage(&corpus.texts, config, out)?;
    let (kg_stats, kg_columns) = kg_stage(&corpus.texts, config, out)?;
    // a build that writes the corpus embeds its passages a slice of rows at a time as it
    // writes them (only one slice's vectors are held); an embed-only pass embeds them here
    let by_slice = out.is_some();
    let mut v = vector_sets(&corpus, external, by_slice, embed)?;
    let stats = export_stats(&corpus, bm25, kg_stats);
    let dim = v.dim;
    let absent = std::mem::take(&mut v.absent);
    let keep = graph_scratch.is_some();
    let embeddings = write_stage(out.zip(kg_columns), &corpus, v, keep, embed)?;
    let Resolved {
        chunks,
        texts,
        queries,
        ..
    } = corpus;
    drop((texts, queries));
    // no `graph_scratch`: no leg reads the graph, or an embed-only pass
    let mut built = Built {
        stats,
        parts: Parts::NONE,
        simgraph_shard: None,
        absent_vectors: absent,
    };
    if let Some(scratch) = graph_scratch {
        let sim = simgraph_stage(&chunks, &embeddings, dim, config, scratch, out)?;
        built.stats.simgraph_edges = sim.graph.num_edges();
        built.stats.simgraph_communities = sim.graph.num_communities();
        built.stats.simgraph_hnsw = sim.hnsw;
        built.simgraph_shard = sim.shard;
        built.parts = built.parts.with(Part::SimGraph);
    }
    Ok(built)
}

/// The dataset resolved into the export's records: the chunks (and their texts) in passage id
/// order, the document names, and the queries with gold and chains as chunk indices.
struct Resolved {
    chunks: Vec<Chunk>,
    /// Spilled to the staging directory by a build that writes, held by an embed-only pass.
    texts: Texts,
    docs: Vec<String>,
    queries: Vec<QueryRecord>,
    chunks_with_header: usize,
}

impl Resolved {
    /// Whether some chunk has a context header (then its content-only vectors are made too).
    fn any_header(&self) -> bool {
        self.chunks_with_header > 0
    }
}

/// The first stage of a build: the config checked, the passages sorted into chunks, the spans
/// checked and the questions resolved, and the texts spilled to `out` where the build writes.
fn resolve(
    source: &Source,
    spanned: SpannedDataset,
    config: &PrepareConfig,
    out: Option<&Path>,
) -> Result<Resolved> {
    let SpannedDataset { raw, spans } = spanned;
    let origin = PathBuf::from(format!("<dataset {}>", source.name));
    validate_config(config)?;
    let passages = sorted_passages(source, raw.passages, &origin)?;
    let index: HashMap<&str, u32> = passages
        .iter()
        .enumerate()
        .map(|(i, p)| (p.id.as_str(), i as u32))
        .collect();
    let doc_names: BTreeSet<&str> = passages.iter().filter_map(|p| p.doc.as_deref()).collect();
    let mut docs: Vec<String> = doc_names.iter().map(|s| s.to_string()).collect();
    check_spans(&spans, &passages, &index, &origin)?;
    let queries = resolve_queries(raw.questions, &passages, &index, &origin)?;
    drop(index);
    // the passages' strings move into the chunks' texts and ids: no second copy
    let mut named = Vec::with_capacity(passages.len());
    let texts: Vec<ChunkText> = passages
        .into_iter()
        .map(|p| {
            named.push((p.id, p.doc));
            ChunkText {
                title: p.title,
                text: p.text,
                header: p.header,
                joiner: source.protocol.joiner,
            }
        })
        .collect();
    // each reader makes a chunk's full text (header, joiner, body) as it reads it: held for
    // every chunk, they would be the corpus's text a second time
    let mut chunks = chunk_records(named, &texts, &docs, &spans);
    let chunks_with_header = texts.iter().filter(|t| t.header.is_some()).count();
    // a build that writes reads its texts back a block at a time from here on; the ids and
    // document names read among the texts are moved off the texts' freed pages
    let texts = match out {
        Some(dir) => {
            let texts = Texts::spill(texts, source.protocol.joiner, dir)?;
            let mut survivors: Vec<&mut String> = chunks.iter_mut().map(|c| &mut c.id).collect();
            survivors.extend(docs.iter_mut());
            crate::memory::regather(&mut survivors);
            texts
        }
        None => Texts::held(texts),
    };
    Ok(Resolved {
        chunks,
        texts,
        docs,
        queries,
        chunks_with_header,
    })
}

/// The stage `bm25`: the index's parts built over the chunks' full texts and written to `out`;
/// its term and posting counts.
fn bm25_stage(texts: &Texts, config: &PrepareConfig, out: Option<&Path>) -> Result<(usize, usize)> {
    let tokenizer = Tokenizer::english();
    crate::stages::timed("bm25", || {
        // the parts are written as they are: the impacts a search reads are computed at load
        let mut failed = None;
        let bm25 = Bm25Parts::build(texts.full_texts(&mut failed), &tokenizer, config.bm25);
        if let Some(e) = failed {
            return Err(e);
        }
        out.map(|dir| super::write::write_bm25(dir, &bm25))
            .transpose()?;
        Ok::<_, Error>((bm25.terms.len(), bm25.post_chunk.len()))
    })
}

/// The stage `kg`: the knowledge graph built and written to `out`; its counts, and the columns
/// the corpus file carries of it where the build writes.
fn kg_stage(
    texts: &Texts,
    config: &PrepareConfig,
    out: Option<&Path>,
) -> Result<(KgStats, Option<enrich::CorpusColumns>)> {
    crate::stages::timed("kg", || {
        let kg = enrich::build_blocks(texts, &config.enrich)?;
        out.map(|dir| enrich::write_kg(dir, &kg)).transpose()?;
        // what the corpus file carries of the graph is kept for it; the rest is dropped
        Ok::<_, Error>((kg.stats(), out.map(|_| enrich::CorpusColumns::new(kg))))
    })
}

/// The stage `embed`: the vector sets from the embedder, or from the `external` files; the
/// embedder's passage vectors are left to the corpus's write where `by_slice`.
fn vector_sets(
    corpus: &Resolved,
    external: Option<&ExternalTables>,
    by_slice: bool,
    embed: &mut EmbedFn<'_>,
) -> Result<VectorSets> {
    let Resolved {
        chunks,
        texts,
        queries,
        ..
    } = corpus;
    let any_header = corpus.any_header();
    let sub_texts: Vec<Option<Vec<String>>> = queries
        .iter()
        .map(|q| q.decomposition.as_deref().map(subquery_texts))
        .collect();
    let v = crate::stages::timed("embed", || match external {
        None => embedded(texts, queries, &sub_texts, any_header, by_slice, embed),
        Some(x) => from_files(x, chunks, queries, any_header),
    })?;
    drop(sub_texts);
    Ok(v)
}

/// The export's counts, but for the similarity graph's (zero until it is built).
fn export_stats(corpus: &Resolved, bm25: (usize, usize), kg: KgStats) -> ExportStats {
    let Resolved {
        chunks,
        docs,
        queries,
        chunks_with_header,
        ..
    } = corpus;
    let (bm25_terms, bm25_postings) = bm25;
    ExportStats {
        chunks: chunks.len(),
        documents: docs.len(),
        queries: queries.len(),
        gold_chunks: queries.iter().map(|q| q.gold.len()).sum(),
        queries_with_chain: queries.iter().filter(|q| q.chain.is_some()).count(),
        graded_gold: super::write::graded_gold(queries),
        chunks_with_header: *chunks_with_header,
        chunks_with_span: Some(chunks.iter().filter(|c| c.span.is_some()).count()),
        bm25_terms,
        bm25_postings,
        kg,
        simgraph_edges: 0,
        simgraph_communities: 0,
        simgraph_hnsw: None,
    }
}

/// The stage `write`, given the staging directory and the knowledge graph's corpus columns
/// (`None`: an embed-only pass, which writes nothing): the queries, then the corpus with its
/// vectors. Gives back every passage vector, for the similarity graph: those held, or those
/// embedded a slice at a time as the corpus is written, kept where `keep` (empty otherwise).
fn write_stage(
    out: Option<(&Path, enrich::CorpusColumns)>,
    corpus: &Resolved,
    v: VectorSets,
    keep: bool,
    embed: &mut EmbedFn<'_>,
) -> Result<Vec<f32>> {
    let VectorSets {
        dim,
        passages,
        queries: query_embeddings,
        subqueries,
        ..
    } = v;
    let Resolved {
        chunks,
        texts,
        docs,
        queries,
        ..
    } = corpus;
    let any_header = corpus.any_header();
    // the similarity graph is built over every passage vector: kept as they are embedded, in
    // a buffer of their exact size (grown by doubling, it could hold twice the vectors)
    let mut kept = match (&passages, keep) {
        (Passages::BySlice, true) => Vec::with_capacity(chunks.len() * dim),
        _ => Vec::new(),
    };
    if let Some((dir, kg_columns)) = out {
        crate::stages::timed("write", || {
            // the queries first: their vectors are dropped before the corpus's are made
            super::write::write_queries(
                dir,
                chunks,
                docs,
                queries,
                dim,
                &query_embeddings,
                &subqueries,
            )?;
            drop((query_embeddings, subqueries));
            let corpus = super::write::Corpus {
                chunks,
                texts,
                docs,
                kg_columns,
            };
            super::write::write_corpus(dir, corpus, |rows, slice| match &passages {
                Passages::Held {
                    embeddings,
                    content,
                } => {
                    let at = rows.start * dim..rows.end * dim;
                    Ok((
                        pq::vectors(&embeddings[at.clone()], dim),
                        content.as_ref().map(|c| pq::vectors(&c[at], dim)),
                    ))
                }
                Passages::BySlice => {
                    let (e, c) = embed_slice(slice, rows.start, texts.len(), any_header, embed)?;
                    if keep {
                        kept.extend_from_slice(&e);
                    }
                    Ok((
                        pq::owned_vectors(e, dim),
                        c.map(|c| pq::owned_vectors(c, dim)),
                    ))
                }
            })
        })?;
    }
    Ok(match passages {
        Passages::Held { embeddings, .. } => embeddings,
        Passages::BySlice => kept,
    })
}

/// The stage `simgraph`: the similarity graph over every passage vector (`embeddings`, in
/// chunk order), its HNSW index built under `scratch`, the graph written to `out`.
fn simgraph_stage(
    chunks: &[Chunk],
    embeddings: &[f32],
    dim: usize,
    config: &PrepareConfig,
    scratch: &Path,
    out: Option<&Path>,
) -> Result<SimGraphBuild> {
    let ids: Vec<&str> = chunks.iter().map(|c| c.id.as_str()).collect();
    crate::stages::timed("simgraph", || {
        let sim = SimGraph::build_with(embeddings, dim, &config.simgraph, &ids, scratch)?;
        out.map(|dir| sim.graph.write(dir)).transpose()?;
        Ok::<_, Error>(sim)
    })
}

/// Checks the prepare config's similarity-graph and enrichment sections first, so a bad value
/// fails before any passage is read or embedded.
fn validate_config(config: &PrepareConfig) -> Result<()> {
    config.simgraph.validate().map_err(|e| Error::Config {
        context: "prepare config `simgraph`".into(),
        message: e.to_string(),
    })?;
    config.enrich.validate().map_err(|e| Error::Config {
        context: "prepare config `enrich`".into(),
        message: e.to_string(),
    })
}

/// The dataset's passages in chunk order: the source's protocol applied, sorted by id, and each
/// id once, since a chunk is addressed by its position in this order.
fn sorted_passages(source: &Source, passages: Vec<Passage>, origin: &Path) -> Result<Vec<Passage>> {
    let mut passages = passages;
    source.protocol.apply(&mut passages);
    passages.sort_by(|a, b| a.id.cmp(&b.id));
    if let Some(w) = passages.windows(2).find(|w| w[0].id == w[1].id) {
        return Err(Error::DuplicatePassage {
            path: origin.to_path_buf(),
            id: w[0].id.clone(),
        });
    }
    Ok(passages)
}

/// Checks the spans against the passages (`index`: passage id -> position): a span locates a
/// passage in its document, so one without a passage, or on a passage without a document,
/// locates nothing, and an empty or reversed one nothing either.
fn check_spans(
    spans: &BTreeMap<String, Span>,
    passages: &[Passage],
    index: &HashMap<&str, u32>,
    origin: &Path,
) -> Result<()> {
    if let Some(id) = spans.keys().find(|id| !index.contains_key(id.as_str())) {
        return Err(Error::field(
            origin,
            id,
            "char_start",
            "a span of no passage",
        ));
    }
    if let Some(p) = passages
        .iter()
        .find(|p| p.doc.is_none() && spans.contains_key(&p.id))
    {
        return Err(Error::field(
            origin,
            &p.id,
            "char_start",
            "a span of a passage without a document",
        ));
    }
    if let Some((id, s)) = spans.iter().find(|(_, s)| s.end <= s.start) {
        return Err(Error::field(
            origin,
            id,
            "char_end",
            format!("{} must be greater than char_start ({})", s.end, s.start),
        ));
    }
    Ok(())
}

/// The chunk of each passage (`named`: its id and document): its document's index in `docs`
/// (sorted names), the token count of its full text (what is indexed and embedded) and its
/// span.
fn chunk_records(
    named: Vec<(String, Option<String>)>,
    texts: &[ChunkText],
    docs: &[String],
    spans: &BTreeMap<String, Span>,
) -> Vec<Chunk> {
    let doc_index: HashMap<&str, u32> = docs
        .iter()
        .enumerate()
        .map(|(i, d)| (d.as_str(), i as u32))
        .collect();
    named
        .into_iter()
        .zip(texts)
        .map(|((id, doc), text)| Chunk {
            doc: doc.as_deref().map(|d| doc_index[d]),
            tokens: heuristic_tokens(&text.full_text()),
            span: spans.get(&id).copied(),
            id,
        })
        .collect()
}

/// The questions as query records, in the dataset's order, with ids unique and gold and chains
/// resolved to chunk indices (`index`: passage id -> chunk index).
fn resolve_queries(
    questions: Vec<Question>,
    passages: &[Passage],
    index: &HashMap<&str, u32>,
    origin: &Path,
) -> Result<Vec<QueryRecord>> {
    let mut queries = Vec::with_capacity(questions.len());
    let mut seen_q = BTreeSet::new();
    for q in questions {
        if !seen_q.insert(q.id.clone()) {
            return Err(Error::field(origin, &q.id, "id", "duplicate query id"));
        }
        queries.push(resolve_query(q, passages, index, origin)?);
    }

    // grades are kept where they say something: a dataset whose every gold chunk has grade 1
    // (every multi-hop set, and qrels of relevance 1 only) is binary, and its export is what it
    // was before grades were kept
    let graded = queries
        .iter()
        .any(|q| q.grades.iter().flatten().any(|&g| g != 1));
    if !graded {
        for q in &mut queries {
            q.grades = None;
        }
    }
    Ok(queries)
}

/// One question as a query record: its gold and chain slots as sorted, deduplicated chunk
/// indices (a gold id outside the corpus is an error), and a grade per gold chunk (1 where the
/// dataset gives none; a grade of a chunk that is not gold is an error).
fn resolve_query(
    q: Question,
    passages: &[Passage],
    index: &HashMap<&str, u32>,
    origin: &Path,
) -> Result<QueryRecord> {
    let resolve = |id: &str, field: &str| {
        index
            .get(id)
            .copied()
            .ok_or_else(|| Error::GoldNotInCorpus {
                path: origin.to_path_buf(),
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
    if let Some(id) = q.grades.keys().find(|id| !q.gold.contains(id)) {
        return Err(Error::field(
            origin,
            &q.id,
            "gold",
            format!("a grade for {id:?}, which is not gold"),
        ));
    }
    let grades: Vec<u32> = gold
        .iter()
        .map(|&c| {
            let id = passages[c as usize].id.as_str();
            q.grades.get(id).copied().unwrap_or(1)
        })
        .collect();
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
    Ok(QueryRecord {
        id: q.id,
        text: q.text,
        gold,
        grades: Some(grades),
        chain,
        decomposition: q.decomposition,
        conversation: q.conversation,
        labels: q.labels,
    })
}

/// Every vector set of an export, and the sets it lacks because the files did not bring them.
struct VectorSets {
    dim: usize,
    passages: Passages,
    queries: Vec<f32>,
    subqueries: Vec<Option<Vec<f32>>>,
    absent: Vec<String>,
}

/// The passages' vectors (header+content, and content only where some chunk has a header).
enum Passages {
    /// Every vector, in chunk order (from the dataset's files, or an embed-only pass).
    Held {
        embeddings: Vec<f32>,
        content: Option<Vec<f32>>,
    },
    /// Embedded a slice of rows at a time as the corpus is written ([`embed_slice`],
    /// [`pq::write_in_groups`]).
    BySlice,
}

/// The vector sets from the embedder: queries and sub-queries, and passages (with content only
/// where some chunk has a header) unless they are embedded `by_slice` as they are written.
fn embedded(
    texts: &Texts,
    queries: &[QueryRecord],
    sub_texts: &[Option<Vec<String>>],
    any_header: bool,
    by_slice: bool,
    embed: &mut EmbedFn<'_>,
) -> Result<VectorSets> {
    let dim = embed.dim;
    let passages = if by_slice {
        Passages::BySlice
    } else {
        let texts = texts.rows(0..texts.len())?;
        let embeddings = {
            let full: Vec<String> = texts.iter().map(ChunkText::full_text).collect();
            let refs: Vec<&str> = full.iter().map(String::as_str).collect();
            flatten(
                (embed.embed)(&refs, Role::Passage, "passages")?,
                dim,
                "passages",
            )?
        };
        let content = if any_header {
            let content: Vec<&str> = texts.iter().map(|t| t.text.as_str()).collect();
            Some(flatten(
                (embed.embed)(&content, Role::Passage, "passages (content only)")?,
                dim,
                "content",
            )?)
        } else {
            None
        };
        Passages::Held {
            embeddings,
            content,
        }
    };
    let qtexts: Vec<&str> = queries.iter().map(|q| q.text.as_str()).collect();
    let query_embeddings = flatten(
        (embed.embed)(&qtexts, Role::Query, "queries")?,
        dim,
        "queries",
    )?;
    let all = all_subs(sub_texts);
    let flat_subs = if all.is_empty() {
        Vec::new()
    } else {
        flatten(
            (embed.embed)(&all, Role::Query, "sub-queries")?,
            dim,
            "sub-queries",
        )?
    };
    let subqueries = split_subs(&flat_subs, sub_texts, dim);
    Ok(VectorSets {
        dim,
        passages,
        queries: query_embeddings,
        subqueries,
        absent: Vec::new(),
    })
}

/// The vectors of one slice of the corpus's `total` passages, the chunks from `first` on: of
/// their full texts (what is indexed and embedded), and of their bodies alone where the corpus
/// has headers. A vector is a function of its text alone, so they equal those of one call over
/// every passage. A slice of a larger corpus is named by its rows, so the embedder's progress
/// says how far the corpus is.
fn embed_slice(
    texts: &[ChunkText],
    first: usize,
    total: usize,
    any_header: bool,
    embed: &mut EmbedFn<'_>,
) -> Result<(Vec<f32>, Option<Vec<f32>>)> {
    let dim = embed.dim;
    let label = |what: &str| match texts.len() == total {
        true => what.to_string(),
        false => format!("{what} {}-{} of {total}", first + 1, first + texts.len()),
    };
    let embeddings = {
        let full: Vec<String> = texts.iter().map(ChunkText::full_text).collect();
        let refs: Vec<&str> = full.iter().map(String::as_str).collect();
        let vectors = (embed.embed)(&refs, Role::Passage, &label("passages"))?;
        flatten_from(vectors, first, dim, "passages")?
    };
    let content = if any_header {
        let content: Vec<&str> = texts.iter().map(|t| t.text.as_str()).collect();
        let vectors = (embed.embed)(&content, Role::Passage, &label("passages (content only)"))?;
        Some(flatten_from(vectors, first, dim, "content")?)
    } else {
        None
    };
    Ok((embeddings, content))
}

/// Every query's sub-questions (texts to embed, or ids to look up) in query order, as one
/// list: the sub-question vectors of a dataset come from one call.
fn all_subs(per_query: &[Option<Vec<String>>]) -> Vec<&str> {
    per_query
        .iter()
        .flatten()
        .flatten()
        .map(String::as_str)
        .collect()
}

/// Splits `flat`, the `dim`-float vectors of [`all_subs`] of `per_query`, back into each
/// query's share (`None` where the query has no decomposition).
fn split_subs(
    flat: &[f32],
    per_query: &[Option<Vec<String>>],
    dim: usize,
) -> Vec<Option<Vec<f32>>> {
    let mut at = 0;
    per_query
        .iter()
        .map(|subs| {
            subs.as_ref().map(|subs| {
                let v = flat[at..at + subs.len() * dim].to_vec();
                at += subs.len() * dim;
                v
            })
        })
        .collect()
}

/// The sub-question ids a `subqueries` vectors file is keyed by: `<query id>#<hop>`, hops
/// from 1, in hop order.
pub fn subquery_ids(query: &str, hops: usize) -> Vec<String> {
    (1..=hops).map(|k| format!("{query}#{k}")).collect()
}

/// The vector sets from the dataset's vectors files, each ordered by the export's ids; a set
/// the build would embed but no file brings (content only, sub-queries) is left out and named
/// in `absent`.
fn from_files(
    x: &ExternalTables,
    chunks: &[Chunk],
    queries: &[QueryRecord],
    any_header: bool,
) -> Result<VectorSets> {
    let dim = x.passages.dim();
    let same_dim = |t: &VectorTable| {
        if t.dim() == dim {
            Ok(())
        } else {
            Err(Error::Dimension {
                path: t.path().to_path_buf(),
                record: "row 0".into(),
                field: "vector".into(),
                expected: dim,
                found: t.dim(),
            })
        }
    };
    let chunk_ids: Vec<&str> = chunks.iter().map(|c| c.id.as_str()).collect();
    let embeddings = x.passages.ordered(&chunk_ids, "passage")?;
    let mut absent = Vec::new();
    let content =
        match (&x.content, any_header) {
            (Some(t), true) => {
                same_dim(t)?;
                Some(t.ordered(&chunk_ids, "passage")?)
            }
            (Some(t), false) => return Err(Error::field(
                t.path(),
                "file",
                VectorSet::Content.key(),
                "no passage of this dataset has a context header, so there are no content-only \
                 vectors to give (the passage vectors are of the text alone already)",
            )),
            (None, true) => {
                absent.push(VectorSet::Content.key().to_string());
                None
            }
            (None, false) => None,
        };
    same_dim(&x.queries)?;
    let query_ids: Vec<&str> = queries.iter().map(|q| q.id.as_str()).collect();
    let query_embeddings = x.queries.ordered(&query_ids, "query")?;
    let sub_ids: Vec<Option<Vec<String>>> = queries
        .iter()
        .map(|q| {
            q.decomposition
                .as_ref()
                .map(|d| subquery_ids(&q.id, d.len()))
        })
        .collect();
    let any_sub = sub_ids.iter().flatten().any(|ids| !ids.is_empty());
    let subqueries = match (&x.subqueries, any_sub) {
        (Some(t), true) => {
            same_dim(t)?;
            let flat = t.ordered(&all_subs(&sub_ids), "sub-question")?;
            split_subs(&flat, &sub_ids, dim)
        }
        (Some(t), false) => {
            return Err(Error::field(
                t.path(),
                "file",
                VectorSet::Subqueries.key(),
                "the dataset has no published decompositions, so there are no sub-questions",
            ))
        }
        (None, true) => {
            absent.push(VectorSet::Subqueries.key().to_string());
            vec![None; queries.len()]
        }
        (None, false) => vec![None; queries.len()],
    };
    Ok(VectorSets {
        dim,
        passages: Passages::Held {
            embeddings,
            content,
        },
        queries: query_embeddings,
        subqueries,
        absent,
    })
}
