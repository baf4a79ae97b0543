//! An export directory -> [`Export`]: every file checked against the manifest's hashes, then
//! read through validating readers whose errors name the file, the row and the column.
//!
//! What every leg reads (ids, documents, token counts, spans, the BM25 index, the queries) is
//! decoded here; the chunks' texts and vectors, the knowledge graph, the similarity graph and
//! the sub-question vectors are not: [`texts`], [`vectors`], [`kg`], [`simgraph`] and
//! [`subqueries`] read them on a leg's first request, checking their files' hashes again first.
//! Vectors and long list columns are streamed, a batch of rows at a time, never decoded whole
//! and copied.

use std::collections::{BTreeSet, HashMap};
use std::fs;
use std::path::Path;

use serde::de::DeserializeOwned;

use super::identity::{read_manifest, verify};
use super::on_demand::OnDemand;
use super::query_vectors::{KeepVectors, QueryVectors};
use super::{
    Bm25Stats, Chunk, ChunkText, Export, Graph, Manifest, ModelPart, Part, PartSet, Parts,
    QueryRecord, EXPORT_VERSION,
};
use crate::enrich;
use crate::error::{Error, Result};
use crate::lexical::{Bm25Index, Bm25Loading, Tokenizer};
use crate::model::{Span, SubQuestion};
use crate::parquet_io::{self as pq, Columns};
use crate::simgraph::{SimGraph, SIMGRAPH_FILES};
use crate::vectors_file::VectorSet;

/// The corpus columns [`texts`] reads.
const TEXT_COLUMNS: [&str; 3] = ["title", "text", "context_header"];
/// The corpus columns [`kg`] decodes: the titles (every node is some chunk's title) and the
/// graph's denormalised columns, checked against the graph files; and [`KG_STREAMED`], which
/// it streams (checked row by row against what the graph implies, never held).
const KG_COLUMNS: [&str; 4] = ["title", "kg_node_ids", "kg_community", "kg_node_centrality"];
const KG_STREAMED: &str = "kg_reach";
/// The corpus columns [`load`] does not decode: the texts, the vectors (`embedding_content`
/// only where some chunk has a header) and the knowledge graph's.
const ON_DEMAND: [&str; 9] = [
    "text",
    "context_header",
    "embedding",
    "embedding_content",
    KG_COLUMNS[0],
    KG_COLUMNS[1],
    KG_COLUMNS[2],
    KG_COLUMNS[3],
    KG_STREAMED,
];

/// Loads the export in `dir`, checking every file against the manifest's hashes.
pub fn load(dir: &Path) -> Result<Export> {
    load_keeping(dir, None)
}

/// [`load`], holding only the vectors of the queries `keep` names (every query's when `None`):
/// for a run that evaluates some of them, whose other queries' vectors would be held unread.
/// Every query is still read and checked, its vector's row included.
pub fn load_keeping(dir: &Path, keep: Option<KeepVectors<'_>>) -> Result<Export> {
    let manifest = read_verified_manifest(dir)?;
    let dim = manifest.dim;
    let corpus = read_corpus(dir)?;
    let queries = read_queries(dir, &manifest, &corpus.ids, keep)?;
    check_stats(
        dir,
        &manifest,
        [
            ("chunks", corpus.chunks.len()),
            ("documents", corpus.docs.len()),
            ("queries", queries.records.len()),
            (
                "gold_chunks",
                queries.records.iter().map(|q| q.gold.len()).sum(),
            ),
        ],
    )?;
    let bm25 = read_bm25(dir, corpus.chunks.len())?;
    let export = Export {
        dir: dir.to_path_buf(),
        manifest,
        chunks: corpus.chunks,
        docs: corpus.docs,
        dim,
        texts: OnDemand::new(),
        embeddings: OnDemand::new(),
        has_content_embeddings: corpus.has_content_embeddings,
        content_embeddings: OnDemand::new(),
        queries: queries.records,
        query_vectors: queries.vectors,
        bm25,
        kg: OnDemand::new(),
        simgraph: OnDemand::new(),
        subquery_embeddings: OnDemand::new(),
        model_part: None,
    };
    // the decoded columns the structures were built from are gone: their pages go back
    crate::memory::release_freed();
    Ok(export)
}

/// [`load_keeping`], with the vectors of another model's part of the export ([`ModelPart`]) in
/// place of its own: its passage, content-only, query and sub-question vectors, its dimension.
/// The part must be of this export (its manifest names the export's input key) and hold a row
/// per chunk, per query and per sub-question; its query vectors are read now (those `keep`
/// names), the rest on demand, each file checked against its hash first.
pub fn load_with_model(
    dir: &Path,
    keep: Option<KeepVectors<'_>>,
    part: &ModelPart,
) -> Result<Export> {
    let mut export = load_keeping(dir, keep)?;
    let mpath = part.dir.join("manifest.json");
    if part.manifest.export_key != export.manifest.input_key {
        return Err(Error::field(
            &mpath,
            "manifest",
            "export_key",
            format!(
                "is {}, the export's input key is {}: the part is of another export",
                part.manifest.export_key, export.manifest.input_key
            ),
        ));
    }
    let subs: usize = (export.queries.iter())
        .filter_map(|q| q.decomposition.as_ref().map(Vec::len))
        .sum();
    let any_header =
        export.has_content_embeddings || export.vectors_not_brought(VectorSet::Content).is_some();
    for (set, want) in [
        (PartSet::Passages, Some(export.chunks.len())),
        (PartSet::Content, any_header.then_some(export.chunks.len())),
        (PartSet::Queries, Some(export.queries.len())),
        (PartSet::Subqueries, (subs > 0).then_some(subs)),
    ] {
        let have = part.manifest.rows.get(set.file()).copied();
        if have != want {
            let show = |n: Option<usize>| n.map_or("no file".to_string(), |n| format!("{n} rows"));
            return Err(Error::field(
                &mpath,
                "manifest",
                "rows",
                format!(
                    "gives {} {}, the export implies {}",
                    set.file(),
                    show(have),
                    show(want)
                ),
            ));
        }
    }
    let dim = part.dim();
    let kept = keep.map(|keep| keep(&export.queries));
    export.query_vectors =
        QueryVectors::from_rows(part.read(PartSet::Queries)?, dim, kept.as_deref());
    export.dim = dim;
    export.has_content_embeddings = part.has(PartSet::Content);
    export.model_part = Some(part.clone());
    Ok(export)
}

/// The manifest's counts against what the files hold (`have`: a count's name and its value
/// there): a count is what prepare, status and run-matrix print about an export, so one that
/// says otherwise than the files is refused, never printed.
pub(super) fn check_stats<const N: usize>(
    dir: &Path,
    manifest: &Manifest,
    have: [(&str, usize); N],
) -> Result<()> {
    let st = &manifest.stats;
    for (name, value) in have {
        let said = match name {
            "chunks" => st.chunks,
            "documents" => st.documents,
            "queries" => st.queries,
            "gold_chunks" => st.gold_chunks,
            _ => unreachable!("a count the manifest has"),
        };
        if said != value {
            return Err(Error::field(
                dir.join("manifest.json"),
                "stats",
                name,
                format!("says {said}, the export's files hold {value}"),
            ));
        }
    }
    Ok(())
}

/// The manifest of the export in `dir`, with every file it lists checked against its hash
/// before anything is decoded: a stale layout or a changed file is refused up front.
fn read_verified_manifest(dir: &Path) -> Result<Manifest> {
    let manifest = read_manifest(dir)?;
    let manifest_path = dir.join("manifest.json");
    // another layout's columns mean other things (or are missing): never read one
    if manifest.export_version != EXPORT_VERSION {
        return Err(Error::field(
            &manifest_path,
            "manifest",
            "export_version",
            format!(
                "is {}, this build reads version {EXPORT_VERSION}: re-run prepare",
                manifest.export_version
            ),
        ));
    }
    // the manifest lists exactly the export's own files, the core's and whole optional
    // parts': a name that leads elsewhere (an absolute path, `..`, `/dev/zero`) would be read
    // whole, and a file it leaves out would be loaded unverified
    if manifest.parts().is_none() {
        let listed: Vec<&str> = manifest.files.keys().map(String::as_str).collect();
        return Err(Error::field(
            &manifest_path,
            "manifest",
            "files",
            format!(
                "lists {listed:?}, an export consists of {:?} and whole optional parts of {:?}: \
                 re-run prepare",
                Parts::NONE.files(),
                Parts::all()
                    .missing_from(Parts::NONE)
                    .iter()
                    .flat_map(|p| p.files())
                    .collect::<Vec<_>>()
            ),
        ));
    }
    for name in manifest.files.keys() {
        verify(dir, &manifest, name)?;
    }
    Ok(manifest)
}

/// What [`load`] keeps of `corpus.parquet`.
struct Corpus {
    /// Chunk ids, sorted and unique (index = chunk index).
    ids: Vec<String>,
    /// The chunks, by chunk index.
    chunks: Vec<Chunk>,
    /// Document names by document index.
    docs: Vec<String>,
    /// Whether the corpus has content-only vectors (`embedding_content`).
    has_content_embeddings: bool,
}

/// Decodes the columns of `corpus.parquet` in `dir` that every leg needs, leaving the texts and
/// vectors ([`ON_DEMAND`]) to [`texts`] and [`vectors`]. The ids must be sorted and unique: a
/// chunk is addressed by its position.
fn read_corpus(dir: &Path) -> Result<Corpus> {
    let path = dir.join("corpus.parquet");
    let schema = pq::column_names(&path)?;
    for required in ["title", "text", "context_header", "embedding"]
        .into_iter()
        .chain(KG_COLUMNS)
        .chain([KG_STREAMED])
    {
        if !schema.iter().any(|c| c == required) {
            return Err(Error::field(&path, "schema", required, "column is missing"));
        }
    }
    let has_content_embeddings = schema.iter().any(|c| c == "embedding_content");
    let eager: Vec<&str> = schema
        .iter()
        .map(String::as_str)
        .filter(|c| !ON_DEMAND.contains(c))
        .collect();
    let table = pq::Table::read_columns(&path, &eager)?;
    let cols = table.columns();
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
    let spans = read_spans(&path, &cols, &ids, &doc_ids)?;
    let tokens = cols.u32s("token_count")?;
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
            tokens: tokens[i],
            span: spans[i],
        })
        .collect();
    Ok(Corpus {
        ids,
        chunks,
        docs,
        has_content_embeddings,
    })
}

/// Each chunk's span in its document (`char_start`, `char_end` of the corpus at `path`): both
/// ends or neither, the start below the end, and only in a chunk that names its document, since
/// a span means nothing without one.
fn read_spans(
    path: &Path,
    cols: &Columns<'_>,
    ids: &[String],
    doc_ids: &[Option<String>],
) -> Result<Vec<Option<Span>>> {
    let starts = cols.opt_u32s("char_start")?;
    let ends = cols.opt_u32s("char_end")?;
    let mut spans = Vec::with_capacity(ids.len());
    for i in 0..ids.len() {
        let bad = |field: &str, message: &str| {
            Error::field(
                path,
                format!("row {i} (chunk {:?})", ids[i]),
                field,
                message,
            )
        };
        spans.push(match (starts[i], ends[i], &doc_ids[i]) {
            (None, None, _) => None,
            (Some(start), Some(end), Some(_)) if start < end => Some(Span { start, end }),
            (Some(_), Some(_), Some(_)) => return Err(bad("char_end", "is not above char_start")),
            (Some(_), Some(_), None) => return Err(bad("char_start", "a span without a doc_id")),
            _ => return Err(bad("char_end", "one of char_start and char_end is null")),
        });
    }
    Ok(spans)
}

/// What [`load`] keeps of `queries.parquet`.
struct Queries {
    /// The queries in dataset order.
    records: Vec<QueryRecord>,
    /// Their vectors, or those of the queries the load was asked to keep.
    vectors: QueryVectors,
}

/// Decodes `queries.parquet` in `dir` against the corpus's chunk `ids`: every gold and chain
/// chunk must be in the corpus, the grades must agree with the manifest, and each row's
/// sub-question vectors with its decomposition. Only the vectors of the queries `keep` names
/// are held (all when `None`).
fn read_queries(
    dir: &Path,
    manifest: &Manifest,
    ids: &[String],
    keep: Option<KeepVectors<'_>>,
) -> Result<Queries> {
    let dim = manifest.dim;
    let index: HashMap<&str, u32> = ids
        .iter()
        .enumerate()
        .map(|(i, s)| (s.as_str(), i as u32))
        .collect();
    let path = dir.join("queries.parquet");
    // the vectors are streamed apart; the sub-question vectors are read on demand
    let all_names = pq::column_names(&path)?;
    if !all_names.iter().any(|c| c == SUBQUERY_COLUMN) {
        return Err(Error::field(
            &path,
            "schema",
            SUBQUERY_COLUMN,
            "column is missing",
        ));
    }
    let names: Vec<String> = all_names
        .into_iter()
        .filter(|c| c != "embedding" && c != SUBQUERY_COLUMN)
        .collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let table = pq::Table::read_columns(&path, &names)?;
    let cols = table.columns();
    let qids = cols.strings("query_id")?;
    let qtexts = cols.strings("text")?;
    let gold_ids = cols.string_lists("gold_chunk_ids")?;
    let chains = cols.opt_strings("chain_json")?;
    let decomps = cols.opt_strings("decomposition_json")?;
    let convs = cols.opt_strings("conversation_json")?;
    let label_texts = cols.strings("labels_json")?;
    let gold_lens: Vec<usize> = gold_ids
        .iter()
        .map(|g| g.as_ref().map_or(0, Vec::len))
        .collect();
    let mut grades = gold_grades(&path, &cols, manifest, &qids, &gold_lens)?.map(Vec::into_iter);
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
    let mut queries = Vec::with_capacity(qids.len());
    for row in 0..qids.len() {
        let qid = &qids[row];
        let gold = gold_ids[row]
            .as_ref()
            .ok_or_else(|| Error::field(&path, qid, "gold_chunk_ids", "is null"))?
            .iter()
            .map(|g| resolve(row, "gold_chunk_ids", g))
            .collect::<Result<Vec<_>>>()?;
        let chain = match &chains[row] {
            None => None,
            Some(text) => {
                let slots: Vec<Vec<String>> = decode_json(&path, qid, "chain_json", text)?;
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
            Some(t) => Some(decode_json(&path, qid, "decomposition_json", t)?),
        };
        let conversation = match &convs[row] {
            None => None,
            Some(t) => Some(decode_json(&path, qid, "conversation_json", t)?),
        };
        let labels = decode_json(&path, qid, "labels_json", &label_texts[row])?;
        queries.push(QueryRecord {
            id: qid.clone(),
            text: qtexts[row].clone(),
            gold,
            grades: grades.as_mut().and_then(Iterator::next),
            chain,
            decomposition,
            conversation,
            labels,
        });
    }
    // after the records: which vectors to keep is decided over them
    let kept = keep.map(|keep| keep(&queries));
    let vectors = QueryVectors::read(&path, dim, qids.len(), kept.as_deref())?;
    Ok(Queries {
        records: queries,
        vectors,
    })
}

/// The JSON column `field` of query `qid` (in `queries.parquet` at `path`), parsed, then decoded
/// into `T`: a syntax error and a shape error both name the file, the query and the column.
fn decode_json<T: DeserializeOwned>(path: &Path, qid: &str, field: &str, text: &str) -> Result<T> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| Error::field(path, qid, field, e.to_string()))?;
    serde_json::from_value(value).map_err(|e| Error::field(path, qid, field, e.to_string()))
}

/// The column of `queries.parquet` holding each query's sub-question vectors.
const SUBQUERY_COLUMN: &str = "subquery_embeddings";

/// Every query's sub-question vectors from `export`'s `queries.parquet` (checked against its
/// hash first), each row checked against what its query's decomposition implies.
pub(super) fn subqueries(export: &Export) -> Result<Vec<Option<Vec<f32>>>> {
    if let Some(part) = &export.model_part {
        return part_subqueries(export, part);
    }
    verify(&export.dir, &export.manifest, "queries.parquet")?;
    let path = export.dir.join("queries.parquet");
    let table = pq::Table::read_columns(&path, &[SUBQUERY_COLUMN])?;
    let subs = read_f32_lists(&path, &table.columns(), SUBQUERY_COLUMN)?;
    if subs.len() != export.queries.len() {
        return Err(Error::field(
            &path,
            "schema",
            SUBQUERY_COLUMN,
            format!(
                "has {} rows, the export {} queries",
                subs.len(),
                export.queries.len()
            ),
        ));
    }
    // a dataset that brought its own vectors without sub-question vectors has none, by its
    // manifest
    let not_brought = export.manifest.vectors.as_ref().is_some_and(|v| {
        v.absent
            .iter()
            .any(|a| a == crate::vectors_file::VectorSet::Subqueries.key())
    });
    for (row, (q, have)) in export.queries.iter().zip(&subs).enumerate() {
        let want = q
            .decomposition
            .as_ref()
            .filter(|_| !not_brought)
            .map(|d: &Vec<SubQuestion>| d.len() * export.dim);
        check_subquery_floats(&path, &q.id, row, want, have.as_ref().map(Vec::len))?;
    }
    Ok(subs)
}

/// Every query's sub-question vectors from another model's part, split by the decompositions
/// (whose total the part's rows were checked against when it was loaded).
fn part_subqueries(export: &Export, part: &ModelPart) -> Result<Vec<Option<Vec<f32>>>> {
    let flat = if part.has(PartSet::Subqueries) {
        part.read(PartSet::Subqueries)?
    } else {
        Vec::new()
    };
    let dim = export.dim;
    let mut at = 0;
    let mut out = Vec::with_capacity(export.queries.len());
    for q in &export.queries {
        out.push(match &q.decomposition {
            None => None,
            Some(d) => {
                let end = at + d.len() * dim;
                let Some(rows) = flat.get(at..end) else {
                    return Err(Error::field(
                        part.path(PartSet::Subqueries),
                        &q.id,
                        "vectors",
                        "the file ends before this query's sub-questions",
                    ));
                };
                at = end;
                Some(rows.to_vec())
            }
        });
    }
    Ok(out)
}

/// Checks that row `row` (query `qid`) holds the sub-question vector floats its decomposition
/// implies (`want`, `None`: no vectors) rather than `have`, so a leg never reads another
/// query's sub-question vectors.
fn check_subquery_floats(
    path: &Path,
    qid: &str,
    row: usize,
    want: Option<usize>,
    have: Option<usize>,
) -> Result<()> {
    if want == have {
        return Ok(());
    }
    let show = |x: Option<usize>| x.map_or("null".to_string(), |n| format!("{n} floats"));
    Err(Error::field(
        path,
        qid,
        "subquery_embeddings",
        format!(
            "is {}, the decomposition implies {} (row {row})",
            show(have),
            show(want)
        ),
    ))
}

/// The BM25 index from `bm25-stats.json` and `bm25-postings.parquet` in `dir`: the stats must
/// come from this build's tokenizer and cover all `chunks` of the corpus, or the scores would
/// mean something else.
fn read_bm25(dir: &Path, chunks: usize) -> Result<Bm25Index> {
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
    if stats.doc_len.len() != chunks {
        return Err(Error::field(
            &path,
            "stats",
            "doc_len",
            format!("has {} entries for {} chunks", stats.doc_len.len(), chunks),
        ));
    }
    let path = dir.join("bm25-postings.parquet");
    let terms = pq::Table::read_columns(&path, &["term"])?
        .columns()
        .strings("term")?;
    // the postings stream in: at a million chunks each column is 26 million items; the
    // frequencies are made into impacts a term at a time as they come, never held
    let [chunks_of] = pq::read_u32_lists(&path, ["chunks"])?;
    if terms.len() != chunks_of.ends.len() {
        return Err(Error::malformed(
            &path,
            "parquet",
            "the file's row count is not what its metadata says",
        ));
    }
    let offsets = std::iter::once(0)
        .chain(chunks_of.ends.iter().map(|&e| e as u32))
        .collect();
    let mut loading = Bm25Loading::new(
        stats.params,
        stats.doc_len,
        terms,
        offsets,
        chunks_of.values,
    )
    .map_err(|e| Error::field(&path, "postings", "chunks", e.to_string()))?;
    pq::for_each_u32_list(&path, "tfs", |row, tfs| {
        loading.term(tfs).map_err(|_| {
            Error::field(
                &path,
                format!("row {row}"),
                "tfs",
                "length differs from `chunks`",
            )
        })
    })?;
    loading
        .finish()
        .map_err(|e| Error::field(&path, "postings", "tfs", e.to_string()))
}

/// The corpus columns `names` of `export`, decoded whole after the file is checked against its
/// hash: as many rows as the export has chunks, or an error naming the first column.
fn corpus_columns(export: &Export, names: &[&str]) -> Result<pq::Table> {
    verify(&export.dir, &export.manifest, "corpus.parquet")?;
    let path = export.dir.join("corpus.parquet");
    let table = pq::Table::read_columns(&path, names)?;
    let rows = table.columns().rows();
    if rows != export.chunks.len() {
        return Err(Error::field(
            &path,
            "schema",
            names[0],
            format!("has {rows} rows, the export {} chunks", export.chunks.len()),
        ));
    }
    Ok(table)
}

/// The chunks' texts of `export`, from its corpus file (checked against its hash first).
pub(super) fn texts(export: &Export) -> Result<Vec<ChunkText>> {
    let table = corpus_columns(export, &TEXT_COLUMNS)?;
    let cols = table.columns();
    let titles = cols.strings("title")?;
    let texts = cols.strings("text")?;
    let headers = cols.opt_strings("context_header")?;
    Ok(titles
        .into_iter()
        .zip(texts)
        .zip(headers)
        .map(|((title, text), header)| ChunkText {
            title,
            text,
            header,
            joiner: export.manifest.protocol.joiner,
        })
        .collect())
}

/// The knowledge graph of `export` with its indices, from its files and the corpus's
/// [`KG_COLUMNS`] and [`KG_STREAMED`] (all checked against their hashes first).
pub(super) fn kg(export: &Export) -> Result<Graph> {
    for name in enrich::KG_FILES {
        verify(&export.dir, &export.manifest, name)?;
    }
    let table = corpus_columns(export, &KG_COLUMNS)?;
    let cols = table.columns();
    let kg = enrich::read_kg(&export.dir, &cols)?;
    drop(table);
    let (kg, index) = Graph::indexed(kg, export.chunks.len());
    // the decoded columns the graph was checked against are gone: their pages go back
    crate::memory::release_freed();
    Ok(Graph { kg, index })
}

/// The similarity graph of `export`, from its files (checked against their hashes first).
pub(super) fn simgraph(export: &Export) -> Result<SimGraph> {
    if !export.parts().has(Part::SimGraph) {
        return Err(Error::field(
            export.dir.join("manifest.json"),
            "manifest",
            "files",
            "the export has no similarity graph (it is built only for the legs that read it, \
             which declare it): prepare the dataset with such a leg selected",
        ));
    }
    for name in SIMGRAPH_FILES {
        verify(&export.dir, &export.manifest, name)?;
    }
    SimGraph::read(&export.dir, export.chunks.len())
}

/// The vector column `column` of `export`'s corpus (checked against its hash first), streamed
/// into one row-major buffer.
pub(super) fn vectors(export: &Export, column: &str) -> Result<Vec<f32>> {
    if let Some(part) = &export.model_part {
        return part.read(part_set(column));
    }
    verify(&export.dir, &export.manifest, "corpus.parquet")?;
    let path = export.dir.join("corpus.parquet");
    pq::read_vectors(&path, column, export.dim, export.chunks.len())
}

/// The set of a model part that holds what corpus column `column` holds for the export's own
/// model.
pub(super) fn part_set(column: &str) -> PartSet {
    match column {
        "embedding_content" => PartSet::Content,
        _ => PartSet::Passages,
    }
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

/// The `gold_grades` column of `queries.parquet` (at `path`), checked against the manifest and
/// the gold: there exactly when the manifest counts graded gold chunks
/// ([`super::ExportStats::graded_gold`]), one grade of at least 1 per gold chunk of each row
/// (`gold_lens`), as many grades other than 1 as the manifest counts. `None`: binary gold.
pub(super) fn gold_grades(
    path: &Path,
    cols: &Columns<'_>,
    manifest: &Manifest,
    qids: &[String],
    gold_lens: &[usize],
) -> Result<Option<Vec<Vec<u32>>>> {
    const COLUMN: &str = "gold_grades";
    let counted = manifest.stats.graded_gold;
    match (cols.has(COLUMN), counted) {
        (false, None) => return Ok(None),
        (false, Some(n)) => {
            return Err(Error::field(
                path,
                "schema",
                COLUMN,
                format!("is missing, the manifest counts {n} graded gold chunks"),
            ))
        }
        (true, None) => {
            return Err(Error::field(
                path,
                "schema",
                COLUMN,
                "is there, the manifest counts no graded gold chunk",
            ))
        }
        (true, Some(_)) => {}
    }
    let grades = cols.u32_lists(COLUMN)?;
    let mut other_than_one = 0;
    for (row, g) in grades.iter().enumerate() {
        let bad = |why: String| Error::field(path, &qids[row], COLUMN, why);
        if g.len() != gold_lens[row] {
            return Err(bad(format!(
                "has {} grades for {} gold chunks (row {row})",
                g.len(),
                gold_lens[row]
            )));
        }
        if g.contains(&0) {
            return Err(bad(format!("holds grade 0, not a gold grade (row {row})")));
        }
        other_than_one += g.iter().filter(|&&x| x != 1).count();
    }
    if Some(other_than_one) != counted || other_than_one == 0 {
        return Err(Error::field(
            path,
            "column",
            COLUMN,
            format!(
                "holds {other_than_one} grades other than 1, the manifest counts {}",
                counted.unwrap_or(0)
            ),
        ));
    }
    Ok(Some(grades))
}
