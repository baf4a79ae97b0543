//! The export: one directory per dataset that every leg reads and nothing writes twice.
//!
//! ```text
//! results/exports/<dataset>/
//!   corpus.parquet         chunk_id, doc_id, char_start, char_end, title, text,
//!                          context_header, token_count, embedding, [embedding_content],
//!                          kg_node_ids, kg_reach, kg_community, kg_node_centrality
//!                                                          (rows sorted by chunk_id)
//!   queries.parquet        query_id, text, embedding, gold_chunk_ids, [gold_grades],
//!                          gold_doc_ids, chain_json, decomposition_json, conversation_json,
//!                          labels_json,
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
//! `gold_grades` (list<u32>, the grade of each of `gold_chunk_ids`, in that order) is there only
//! where some gold chunk has a grade other than 1 (the manifest's `stats.graded_gold` counts
//! them); without it every gold chunk has grade 1, so a binary export is what it was before
//! grades were kept.
//!
//! `char_start` and `char_end` (nullable u32) locate a chunk cut from a longer document in that
//! document's text (`doc_id`): `[char_start, char_end)` in Unicode code points (see
//! [`crate::chunk`]); both are null for passages read as published.
//!
//! Chunks are sorted by record id when the export is built, so the `u32` chunk index orders
//! exactly like the record ids and "ties break on ascending id" is an integer comparison
//! everywhere downstream. The directory is written beside its final place and renamed into it,
//! so a crash never leaves a directory with a manifest that lies about its files.
//!
//! A chunk's `context_header`, and how it joins `text`, are the source's [`Protocol`] (applied by
//! the build, recorded in the manifest's `protocol` and its input key): `embedding` and the BM25
//! index are over [`ChunkText::full_text`], `embedding_content` over `text` alone wherever some
//! chunk has a header (the text-alone ablation).
//!
//! The knowledge graph ([`crate::enrich`]) is built over `(title, header + text)` of the sorted
//! chunks; [`Export::kg`] reads it back through [`crate::enrich::read_kg`], which validates
//! every file and checks that the corpus's denormalised `kg_*` columns are what the graph files
//! imply.
//!
//! Sub-query vectors ([`subquery_texts`]) embed the *published* decomposition with each `#k`
//! replaced by the *published* answer of hop k: an oracle-ish setting (the gold intermediate
//! answers are given), for the document-task legs only; label their results accordingly.
//!
//! A dataset may bring its own vectors ([`Source::vectors`], checked by
//! [`crate::vectors_file`]): they replace the embedder's for every set they cover, each ordered
//! by the export's ids, and the sets they do not cover (content only, sub-queries) are left
//! out and named in the manifest's `vectors.absent`, so the legs that need them report
//! `missing-inputs` rather than read placeholders. The files' hashes, which file is which set
//! and the declared model id are part of the input key.
//!
//! Re-running prepare with unchanged inputs, configuration, model and export code finds the
//! same `input_key` in the existing manifest, re-hashes the files, and reuses the export.
//!
//! The code is split by what it does: `identity` decides what an export is made from (its
//! manifest's input key) and whether an existing one can be reused; `build` turns a raw dataset
//! into the export in memory (sorting, gold resolution, BM25, graphs, vectors); `write` writes it
//! atomically; `read` ([`load`]) reads and validates it back, all but the chunks' texts and
//! vectors, which `on_demand` holds until a leg first asks for them ([`Export::texts`],
//! [`Export::embeddings`]).

mod build;
mod extend;
mod head;
mod identity;
mod mapped;
mod model_part;
mod on_demand;
mod parts;
mod query_vectors;
mod read;
mod texts;
mod write;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::enrich::{self, EnrichConfig, KgIndex, KgStats, KnowledgeGraph};
use crate::error::Result;
use crate::lexical::{Bm25Index, Bm25Params};
use crate::model::Role;
use crate::model::{RawDataset, Span, SpannedDataset, SubQuestion, Turn};
use crate::protocol::{Joiner, Protocol};
use crate::simgraph::{SimGraph, SimGraphConfig, SIMGRAPH_FILES};
use crate::vectors_file::{VectorFiles, VectorSet, VectorTable};
use on_demand::OnDemand;

pub use build::{subquery_ids, subquery_texts};
pub use head::{read_head, ExportHead, QueryHead};
pub use identity::{planned_manifest, read_manifest};
pub use mapped::{mapped_path, MappedVectors};
pub use model_part::{
    model_part, model_part_dir, ModelPart, ModelPartManifest, PartBuild, PartSet, MODELS_DIR,
    MODEL_PART_VERSION,
};
pub use parts::{Part, Parts};
pub use query_vectors::KeepVectors;
pub use read::{load, load_keeping, load_with_model};

/// Version of the export layout; part of every input key, so a layout change re-prepares, and
/// checked by [`load`], so an export of another layout is never read. 4: `char_start` and
/// `char_end` in `corpus.parquet`. 5: `gold_grades` in `queries.parquet` where some gold chunk
/// has a grade other than 1 (an export of version 4 of such a dataset dropped the grades).
pub const EXPORT_VERSION: u32 = 5;

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
    /// Embeds texts of a role (queries and sub-queries as queries, passages as passages: a
    /// model with prompts gives each its own), one vector per text, in order. The last
    /// argument is a label for progress reporting ("passages", "queries").
    #[allow(clippy::type_complexity)]
    pub embed: Box<dyn FnMut(&[&str], Role, &str) -> Result<Vec<Vec<f32>>> + 'a>,
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
    /// What each passage is indexed and embedded as (applied by the build, recorded in the
    /// manifest, hashed into the input key).
    pub protocol: Protocol,
    /// The dataset's own vectors, used instead of the embedder's (`None`: embed). Their files
    /// are hashed into the input key with the raw files, and the declared model id is the
    /// export's model id.
    pub vectors: Option<VectorFiles>,
}

/// One chunk of the corpus, as every leg reads it. What it says is [`ChunkText`], read only where
/// something asks for it ([`Export::texts`]): most legs rank by ids, vectors and indexes, and a
/// million chunks' texts are hundreds of megabytes.
#[derive(Debug, Clone, PartialEq)]
pub struct Chunk {
    /// Record id (the corpus is sorted by it).
    pub id: String,
    /// Document index into [`Export::docs`], `None` when unknown.
    pub doc: Option<u32>,
    /// Heuristic token count of the text the LLM would receive ([`ChunkText::full_text`]).
    pub tokens: u32,
    /// Where the chunk lies in its document's text, for chunks cut from longer documents.
    pub span: Option<Span>,
}

/// What a chunk says: its title, context header and body.
#[derive(Debug, Clone, PartialEq)]
pub struct ChunkText {
    /// Title as published.
    pub title: String,
    /// Body text.
    pub text: String,
    /// Context header: what the export's protocol put before the body (the title, the
    /// dataset's own header), `None` for the text alone.
    pub header: Option<String>,
    /// How the header joins the body (the export's [`Protocol::joiner`]).
    pub joiner: Joiner,
}

impl ChunkText {
    /// The text that is embedded, indexed and handed to an LLM: header, joiner and body, or the
    /// body alone.
    pub fn full_text(&self) -> String {
        match &self.header {
            Some(h) => format!("{h}{}{}", self.joiner.as_str(), self.text),
            None => self.text.clone(),
        }
    }
}

/// The graph reads a chunk's title and its text as embedded, made when it is read.
impl crate::enrich::GraphChunk for ChunkText {
    fn title(&self) -> &str {
        &self.title
    }
    fn text(&self) -> std::borrow::Cow<'_, str> {
        std::borrow::Cow::Owned(self.full_text())
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
    /// The grade of each gold chunk, in the order of `gold` (each at least 1): graded nDCG's
    /// gain. `None` where the dataset's gold is binary (every gold chunk of every query grade
    /// 1: the multi-hop sets), so no grade is stored and nDCG is the binary one.
    pub grades: Option<Vec<u32>>,
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
    /// Gold chunks whose grade is not 1, where there are any: the export is graded
    /// (`queries.parquet` has `gold_grades`). Absent for binary gold, so those manifests are
    /// what they were.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graded_gold: Option<usize>,
    /// Chunks that carry a context header.
    pub chunks_with_header: usize,
    /// Chunks cut from a longer document (with a span in it); absent in manifests written
    /// before it was counted, where it is unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunks_with_span: Option<usize>,
    /// Distinct BM25 terms.
    pub bm25_terms: usize,
    /// BM25 postings.
    pub bm25_postings: usize,
    /// Knowledge-graph counts.
    pub kg: KgStats,
    /// Similarity-graph edges (undirected); 0 where the export has no similarity graph
    /// ([`Manifest::parts`]).
    pub simgraph_edges: usize,
    /// Similarity-graph communities; 0 where the export has none.
    pub simgraph_communities: usize,
    /// How an HNSW-built similarity graph was made, and its edge recall against the exact one
    /// where that was built too (absent for an exact graph, so those manifests are unchanged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub simgraph_hnsw: Option<crate::simgraph::HnswGraphStats>,
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
    /// What each passage was indexed and embedded as.
    pub protocol: Protocol,
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
    /// Where the vectors came from when the dataset brought its own (absent otherwise, so
    /// embedded exports' manifests are what they were).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vectors: Option<VectorsRecord>,
}

/// The manifest's record of a dataset's own vectors.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VectorsRecord {
    /// The model id the user declared (also the manifest's `model_id`).
    pub model: String,
    /// Each vector set read from a file (`passages`, `queries`, `content`, `subqueries`) and the
    /// path it was read from.
    pub files: BTreeMap<String, String>,
    /// Sets the build computes for an embedded dataset that the files did not bring
    /// (`content`, `subqueries`): the legs that need them are `missing-inputs`.
    pub absent: Vec<String>,
}

/// A dataset's vectors files, read and checked row by row (their ids are checked against the
/// dataset's by the build).
pub(crate) struct ExternalTables {
    pub(crate) passages: VectorTable,
    pub(crate) queries: VectorTable,
    pub(crate) content: Option<VectorTable>,
    pub(crate) subqueries: Option<VectorTable>,
}

impl ExternalTables {
    fn read(v: &VectorFiles) -> Result<ExternalTables> {
        let opt =
            |p: &Option<PathBuf>, set| p.as_deref().map(|p| VectorTable::read(p, set)).transpose();
        Ok(ExternalTables {
            passages: VectorTable::read(&v.passages, VectorSet::Passages)?,
            queries: VectorTable::read(&v.queries, VectorSet::Queries)?,
            content: opt(&v.content, VectorSet::Content)?,
            subqueries: opt(&v.subqueries, VectorSet::Subqueries)?,
        })
    }
}

impl Manifest {
    /// The optional parts the export has, from the files it lists (`None`: a list that is not
    /// the core's files and whole parts).
    pub fn parts(&self) -> Option<Parts> {
        Parts::listed(self.files.keys().map(String::as_str))
    }

    /// The export's content hash: blake3 over the file hashes.
    pub fn content_hash(&self) -> String {
        self.hash_of_files(|_| true)
    }

    /// blake3 over the hashes of the core's files (every file but the optional parts'): what
    /// every leg reads, the same whatever parts were added to the export since. The export
    /// identity a cell records.
    pub fn core_hash(&self) -> String {
        let core = Parts::NONE.files();
        self.hash_of_files(|name| core.contains(&name))
    }

    /// blake3 over the hashes of part `part`'s files, `None` where the export lacks it: the
    /// identity of a part a leg reads, beside [`Manifest::core_hash`].
    pub fn part_hash(&self, part: Part) -> Option<String> {
        let files = part.files();
        files
            .iter()
            .all(|f| self.files.contains_key(*f))
            .then(|| self.hash_of_files(|name| files.contains(&name)))
    }

    fn hash_of_files(&self, keep: impl Fn(&str) -> bool) -> String {
        let mut h = blake3::Hasher::new();
        for (name, hash) in self.files.iter().filter(|(n, _)| keep(n)) {
            h.update(name.as_bytes());
            h.update(b"\0");
            h.update(hash.as_bytes());
            h.update(b"\n");
        }
        h.finalize().to_hex().to_string()
    }

    /// What the vectors of a leg over this export are keyed by (the caches built from them:
    /// mapped files, index shards): the hash of the export's core ([`Manifest::core_hash`]) for
    /// its own vectors, and for another model's ([`ModelPart`]) that hash with the model id, of
    /// which those vectors are a pure function.
    pub fn vectors_key(&self, model: Option<&str>) -> String {
        // the vectors are in the core's files: a part added later does not change them
        let content = self.core_hash();
        match model {
            None => content,
            Some(m) => {
                let mut h = blake3::Hasher::new();
                h.update(content.as_bytes());
                h.update(b"\0model\0");
                h.update(m.as_bytes());
                h.finalize().to_hex().to_string()
            }
        }
    }
}

/// A loaded export: what every leg reads is in memory; the chunks' texts and vectors, the
/// knowledge graph and the similarity graph are read from their files when first asked for
/// ([`Export::texts`], [`Export::embeddings`], [`Export::content_embeddings`], [`Export::kg`],
/// [`Export::simgraph`]), so a run holds only what its legs use (a lexical leg over a million
/// chunks never decodes 1.5 GB of vectors, nor builds the alias automaton of 500,000
/// entities). Such a read checks the files against the manifest's hashes again first, as
/// [`load`] did: nothing read back is trusted unverified.
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
    /// The chunks' texts, by chunk index (read on demand).
    texts: OnDemand<Vec<ChunkText>>,
    /// Header+content vectors, row-major `chunks.len() x dim` (read on demand).
    embeddings: OnDemand<Vec<f32>>,
    /// Whether `corpus.parquet` has content-only vectors (`embedding_content`).
    has_content_embeddings: bool,
    /// Content-only (text alone) vectors where some chunk has a context header (read on
    /// demand).
    content_embeddings: OnDemand<Vec<f32>>,
    /// Queries in dataset order.
    pub queries: Vec<QueryRecord>,
    /// Query vectors: every query's, or those the load was asked to keep
    /// ([`load_keeping`]).
    query_vectors: query_vectors::QueryVectors,
    /// BM25 index.
    pub bm25: Bm25Index,
    /// The knowledge graph (empty where enrichment found no entities) with its query-time
    /// indices (read on demand: only the graph legs and the packer read them).
    kg: OnDemand<Graph>,
    /// The chunk similarity graph (kNN over the embeddings, with communities; read on demand).
    simgraph: OnDemand<SimGraph>,
    /// Per query: its decomposition's sub-question vectors, flattened (`dim` each, in hop
    /// order; see [`subquery_texts`]), `None` without a decomposition (read on demand: only
    /// the legs that run a decomposition as a task read them).
    subquery_embeddings: OnDemand<Vec<Option<Vec<f32>>>>,
    /// Another model's vectors in place of the export's own ([`load_with_model`]): every
    /// vector the export hands out is then that model's; `None` for the export's own.
    model_part: Option<ModelPart>,
}

/// The knowledge graph and the indices built from it, read together.
#[derive(Debug)]
struct Graph {
    kg: KnowledgeGraph,
    index: KgIndex,
}

impl Graph {
    /// `kg` over `num_chunks` chunks with its indices, its edge list given up to the adjacency
    /// built from it (which holds every edge under both its ends: [`KgIndex::edges`] lists them
    /// again). No reader of a loaded graph walks the list, and at a million chunks it is 64 MB
    /// beside the adjacency's 85.
    fn indexed(mut kg: KnowledgeGraph, num_chunks: usize) -> (KnowledgeGraph, KgIndex) {
        let index = KgIndex::new(&kg, num_chunks);
        kg.edges = Vec::new();
        (kg, index)
    }
}

impl Export {
    /// The chunks' texts, by chunk index: read from `corpus.parquet` (hash checked first) on the
    /// first call, the same slice after. A read that failed fails again, with the same error,
    /// without reading the file again.
    pub fn texts(&self) -> Result<&[ChunkText]> {
        self.texts
            .get_or_read(|| read::texts(self))
            .map(Vec::as_slice)
    }

    /// Header+content vectors, row-major `chunks.len() x dim`: read from `corpus.parquet` (hash
    /// checked first) on the first call, streamed into one buffer, the same slice after.
    pub fn embeddings(&self) -> Result<&[f32]> {
        self.embeddings
            .get_or_read(|| read::vectors(self, "embedding"))
            .map(Vec::as_slice)
    }

    /// The corpus's vector column `column` (`embedding` or `embedding_content`) as a mapped
    /// file, written beside the shards from the corpus on first use and checked against its
    /// hash on every open ([`MappedVectors`]): for a reader of a few rows per query, which
    /// then holds those pages rather than the column.
    pub fn mapped_vectors(&self, column: &str) -> Result<MappedVectors> {
        mapped::open_or_write(self, column)
    }

    /// The optional parts the export has (its manifest was checked to list whole parts when
    /// it was loaded).
    pub fn parts(&self) -> Parts {
        self.manifest.parts().unwrap_or(Parts::NONE)
    }

    /// The knowledge graph (empty where enrichment found no entities): read from its files and
    /// the corpus's `kg_*` columns (hashes checked first, then every file against the others
    /// through [`enrich::read_kg`]) on the first call, the same graph after. A read that failed
    /// fails again, with the same error.
    ///
    /// Its `edges` list is empty: the edges are in the adjacency of [`Export::kg_index`]
    /// ([`KgIndex::edges`], [`KgIndex::edge_count`]), not held twice.
    pub fn kg(&self) -> Result<&KnowledgeGraph> {
        self.graph().map(|g| &g.kg)
    }

    /// The knowledge graph's query-time indices (the alias automaton, node -> chunks, the
    /// adjacency), built when [`Export::kg`] is first read.
    pub fn kg_index(&self) -> Result<&KgIndex> {
        self.graph().map(|g| &g.index)
    }

    fn graph(&self) -> Result<&Graph> {
        self.kg.get_or_read(|| read::kg(self))
    }

    /// Puts `kg` in place of the export's knowledge graph, its indices built anew: an export
    /// assembled in memory for a study of the graph's effect (the lanes over no entities).
    pub fn replace_kg(&mut self, kg: KnowledgeGraph) {
        let (kg, index) = Graph::indexed(kg, self.chunks.len());
        self.kg = OnDemand::ready(Graph { kg, index });
    }

    /// The chunk similarity graph (kNN over the embeddings, with communities): read from its
    /// files (hashes checked first) on the first call, the same graph after. An error where the
    /// export has none ([`Part::SimGraph`]: built only for the legs that read it).
    pub fn simgraph(&self) -> Result<&SimGraph> {
        self.simgraph.get_or_read(|| read::simgraph(self))
    }

    /// Whether the export has content-only (text alone) vectors: where some chunk has a
    /// context header and the vectors were embedded or brought. Known without reading them.
    pub fn has_content_embeddings(&self) -> bool {
        self.has_content_embeddings
    }

    /// Content-only vectors (`None` where [`Export::has_content_embeddings`] is false: the
    /// header+content vectors are the text alone then), read as [`Export::embeddings`] are.
    pub fn content_embeddings(&self) -> Result<Option<&[f32]>> {
        if !self.has_content_embeddings {
            return Ok(None);
        }
        self.content_embeddings
            .get_or_read(|| read::vectors(self, "embedding_content"))
            .map(|v| Some(v.as_slice()))
    }

    /// Reads every part read on demand now: for an export whose directory will not outlive
    /// it (a temporary one), or to pay the reads up front.
    pub fn read_all(&self) -> Result<&Self> {
        self.texts()?;
        self.embeddings()?;
        self.content_embeddings()?;
        self.kg()?;
        self.subquery_embeddings()?;
        if self.parts().has(Part::SimGraph) {
            self.simgraph()?;
        }
        Ok(self)
    }

    /// Query `q`'s vector.
    ///
    /// # Panics
    /// When `q` is not a query, or the export was loaded keeping other queries' vectors
    /// ([`load_keeping`]): a caller asks only for the queries it loaded the export for.
    pub fn query_embedding(&self, q: usize) -> &[f32] {
        self.query_vectors.get(q).unwrap_or_else(|| {
            panic!(
                "query {q}'s vector is not held: {} queries, {}",
                self.queries.len(),
                if self.query_vectors.holds_all() {
                    "every vector held"
                } else {
                    "the export was loaded keeping other queries' vectors"
                }
            )
        })
    }
    /// Per query, its sub-question vectors flattened (`None` without a decomposition): read
    /// from `queries.parquet` (hash checked first, then each row against its query's
    /// decomposition) on the first call, the same slice after.
    pub fn subquery_embeddings(&self) -> Result<&[Option<Vec<f32>>]> {
        self.subquery_embeddings
            .get_or_read(|| read::subqueries(self))
            .map(Vec::as_slice)
    }
    /// Query `q`'s sub-question vectors (`None` without a decomposition), read as
    /// [`Export::subquery_embeddings`] are.
    pub fn subquery_vectors(&self, q: usize) -> Result<Option<Vec<&[f32]>>> {
        let dim = self.dim.max(1);
        Ok(self.subquery_embeddings()?[q]
            .as_ref()
            .map(|flat| flat.chunks_exact(dim).collect()))
    }
    /// Document index of chunk `i`.
    pub fn doc_of(&self, i: u32) -> Option<u32> {
        self.chunks[i as usize].doc
    }
    /// The chunk whose record id is `id` (the corpus is sorted by id), `None` if there is none.
    pub fn chunk_index(&self, id: &str) -> Option<u32> {
        self.chunks
            .binary_search_by(|c| c.id.as_str().cmp(id))
            .ok()
            .map(|i| i as u32)
    }

    /// Why vector set `set` (`content` or `subqueries`) is absent although the dataset has
    /// what it is computed from: the dataset brought its own vectors and no file for that set.
    /// `None` when the set is present, or absent because the dataset has no headers or
    /// decompositions.
    pub fn vectors_not_brought(&self, set: VectorSet) -> Option<String> {
        if self.model_part.is_some() {
            // another model's part embeds every set the texts have
            return None;
        }
        let v = self.manifest.vectors.as_ref()?;
        v.absent.iter().any(|a| a == set.key()).then(|| {
            format!(
                "the dataset brings its own vectors (model `{}`) and no `vectors.{}` file, so \
                 there are no {} vectors",
                v.model,
                set.key(),
                match set {
                    VectorSet::Content => "content-only (text alone)",
                    VectorSet::Subqueries => "sub-question",
                    VectorSet::Passages => "passage",
                    VectorSet::Queries => "query",
                }
            )
        })
    }

    /// Whether the vectors came from the dataset's own files rather than the embedder (texts
    /// that are not in those files, such as conversation turns, have no vector then).
    pub fn brings_vectors(&self) -> bool {
        self.model_part.is_none() && self.manifest.vectors.is_some()
    }

    /// The id of the model whose vectors the export hands out: another model's part's
    /// ([`load_with_model`]), else the export's own.
    pub fn model_id(&self) -> &str {
        match &self.model_part {
            Some(p) => p.model_id(),
            None => &self.manifest.model_id,
        }
    }

    /// The other model's part whose vectors the export hands out, `None` for its own.
    pub fn model_part(&self) -> Option<&ModelPart> {
        self.model_part.as_ref()
    }

    /// What caches built from the export's vectors are keyed by ([`Manifest::vectors_key`]).
    pub fn vectors_key(&self) -> String {
        self.manifest
            .vectors_key(self.model_part.as_ref().map(ModelPart::model_id))
    }
}

/// The file names a complete export consists of (besides the manifest); an export without an
/// optional part ([`Part`]) lacks that part's files.
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

/// `bm25-stats.json`: what the postings file needs besides the postings.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Bm25Stats {
    pub(crate) tokenizer: String,
    pub(crate) params: Bm25Params,
    pub(crate) chunks: usize,
    pub(crate) avgdl: f64,
    pub(crate) doc_len: Vec<u32>,
}

/// Outcome of [`prepare`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prepared {
    /// A fresh export was written.
    Written,
    /// An existing export had the same input key and intact files.
    Reused,
    /// An existing export had the same input key and intact files, and the parts it lacked
    /// were added to it.
    Extended(Parts),
}

/// Builds (or reuses) the complete export of `raw` in `dir`, every optional part included.
/// `raw` is only called when the export cannot be reused, so reading and parsing the raw files
/// is skipped on a cache hit too... except that the raw files are still hashed, which is what
/// makes the reuse safe.
pub fn prepare(
    source: &Source,
    raw: impl FnOnce() -> Result<RawDataset>,
    config: &PrepareConfig,
    embed: &mut EmbedFn<'_>,
    dir: &Path,
) -> Result<(Manifest, Prepared)> {
    prepare_spanned(
        source,
        || raw().map(SpannedDataset::from),
        config,
        embed,
        dir,
        Parts::all(),
    )
}

/// [`prepare`] of a dataset whose passages may carry spans in their documents (chunked
/// documents: the spans become the corpus's `char_start` and `char_end`), building the core and
/// the optional `parts` only. An existing export with the same input key is reused, and the
/// parts of `parts` it lacks are added to it ([`Prepared::Extended`]) without rebuilding the
/// rest; parts it has beyond `parts` are kept.
pub fn prepare_spanned(
    source: &Source,
    raw: impl FnOnce() -> Result<SpannedDataset>,
    config: &PrepareConfig,
    embed: &mut EmbedFn<'_>,
    dir: &Path,
    parts: Parts,
) -> Result<(Manifest, Prepared)> {
    // a dataset's own vectors are read (and checked row by row) first: their width is part of
    // the input key
    let external = source
        .vectors
        .as_ref()
        .map(ExternalTables::read)
        .transpose()?;
    let planned = match &external {
        Some(x) => planned_manifest(source, config, &declared_model(source), x.passages.dim())?,
        None => planned_manifest(source, config, &embed.model_id, embed.dim)?,
    };
    let scratch = dir.parent().unwrap_or(Path::new("."));
    if let Some(manifest) = identity::verified_manifest(dir, &planned.input_key) {
        let have = manifest
            .parts()
            .expect("a verified manifest lists whole parts");
        let missing = parts.missing_from(have);
        if missing.is_empty() {
            return Ok((manifest, Prepared::Reused));
        }
        let manifest = extend::extend(dir, manifest, missing, config, scratch)?;
        return Ok((manifest, Prepared::Extended(missing)));
    }
    let raw = crate::stages::timed("read", raw)?;
    let graph_scratch = parts.has(Part::SimGraph).then_some(scratch);
    let staging = write::Staging::create(dir)?;
    let out = Some(staging.path());
    let mut built = build::build(
        source,
        raw,
        config,
        embed,
        external.as_ref(),
        graph_scratch,
        out,
    )?;
    let mut planned = planned;
    if let Some(v) = planned.vectors.as_mut() {
        v.absent = built.absent_vectors.clone();
    }
    let manifest = crate::stages::timed("commit", || {
        staging.commit(dir, planned, built.parts, &built.stats)
    })?;
    if let Some(shard) = built.simgraph_shard.take() {
        keep_shard(shard, dir, &manifest, config);
    }
    Ok((manifest, Prepared::Written))
}

/// Hands the similarity graph's HNSW index to the dense engine's cache: it is the engine's
/// index over `embedding` with the same settings, so no query builds it again (a failure here
/// costs that build, nothing else).
fn keep_shard(
    shard: crate::hnsw::KeptShard,
    dir: &Path,
    manifest: &Manifest,
    config: &PrepareConfig,
) {
    let (hash, s) = (manifest.content_hash(), config.simgraph.hnsw);
    let target = crate::hnsw::cache_dir(dir, &hash, "embedding", s);
    let source = crate::hnsw::cache_source(&hash, "embedding", s);
    if let Err(e) = shard.adopt(&target, &source) {
        eprintln!(
            "warning: the similarity graph's HNSW index was not kept for the dense engine: {e}"
        );
    }
}

/// Runs the build of `raw` for its calls to `embed` only, and writes nothing: a sharded
/// prepare passes an `embed` that embeds its part of each call's texts into the cache and
/// returns placeholders. Returns `false`, without calling `raw`, when `dir` already holds the
/// export (its vectors are in it: nothing to embed).
pub fn embed_only(
    source: &Source,
    raw: impl FnOnce() -> Result<RawDataset>,
    config: &PrepareConfig,
    embed: &mut EmbedFn<'_>,
    dir: &Path,
) -> Result<bool> {
    embed_only_spanned(
        source,
        || raw().map(SpannedDataset::from),
        config,
        embed,
        dir,
    )
}

/// [`embed_only`] of a dataset with spans (see [`prepare_spanned`]).
pub fn embed_only_spanned(
    source: &Source,
    raw: impl FnOnce() -> Result<SpannedDataset>,
    config: &PrepareConfig,
    embed: &mut EmbedFn<'_>,
    dir: &Path,
) -> Result<bool> {
    if source.vectors.is_some() {
        // the vectors come from the dataset's files: nothing to embed
        return Ok(true);
    }
    let planned = planned_manifest(source, config, &embed.model_id, embed.dim)?;
    if identity::reusable(dir, &planned.input_key) {
        return Ok(false);
    }
    build::build(source, raw()?, config, embed, None, None, None)?;
    Ok(true)
}

/// The declared model id of a dataset with its own vectors.
fn declared_model(source: &Source) -> String {
    source
        .vectors
        .as_ref()
        .map(|v| v.model.clone())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests;
