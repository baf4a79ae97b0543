//! The knowledge graph without an LLM (the seed's chapter 4 is not available; this is the
//! simplest honest design, deterministic, no model calls).
//!
//! This documentation *is* the specification of the missing chapter as far as hopbench is
//! concerned: what the seed's consumers read (§5.3-5.4: `kg_node_ids`, `kg_reach`,
//! `kg_community`, `kg_node_centrality` per chunk; node adjacency for traversal; hyperedges for
//! the hypergraph lane; query seeds from alias n-grams) is produced by the rules below, and
//! nothing else.
//!
//! # Entities and aliases
//! * An **entity** is a distinct non-empty (after trimming) passage title, taken verbatim. Node
//!   ids are the indices of the sorted titles, so ties on node id are ties on name. Untitled
//!   chunks have no node of their own.
//! * **Case folding** is a length-preserving lowercase: each char becomes its Unicode lowercase
//!   when that is a single char of the same UTF-8 length (all of ASCII, nearly all of Unicode),
//!   else it is kept. Offsets in folded text are offsets in the original.
//! * **Aliases** of a title: the folded, trimmed title; and, when the title ends in a
//!   parenthetical qualifier, the folded title without it (`"Lilu (mythology)"` ->
//!   `"lilu (mythology)"`, `"lilu"`; nested or unbalanced parentheses are left alone; a
//!   `(disambiguation)` page keeps only its full title, its bare name being ambiguous by
//!   definition). Nothing else (no comma qualifiers, no acronyms, no first/last names). An
//!   alias is dropped when it
//!   has fewer than [`EnrichConfig::min_alias_chars`] chars, has no letter (`"1990"`), or
//!   consists only of stop words (the Lucene English set of [`crate::lexical::STOPWORDS_EN`]).
//!   An alias claimed by several titles maps to the smallest node id.
//!
//! # Matching
//! One Aho-Corasick automaton over all aliases runs on the folded chunk text (header + body, as
//! embedded). All occurrences are found (overlapping); an occurrence counts only on word
//! boundaries (the chars just before and after it are not alphanumeric, so `Lilu` is found in
//! `Lilu's` but not in `Liluana`); the survivors are reduced leftmost-longest and
//! non-overlapping. Checking boundaries *before* choosing the longest means a longer alias that
//! fails the boundary test never hides a shorter one that passes. Query seeds use the same
//! matcher on the folded query, case-insensitively. In chunk text, with
//! [`EnrichConfig::require_capitalised`] (the default), an occurrence of a node whose name
//! starts with an uppercase letter must also start with a non-lowercase char (checked on the
//! original text, before the leftmost-longest reduction): entities are names, and "the water"
//! or "his second wife" is no mention of "Water" or "Second Wife (1936 film)". A common-word
//! title still matches where the word is capitalised (a sentence start, "Princess Alice"): the
//! remaining precision cost of the simple design.
//!
//! `chunk_nodes[c]` = the chunk's own title node plus every matched node, ascending, unique.
//!
//! # Edges
//! Undirected, stored once as `(a, b)` with `a < b`, weights summed over chunks:
//! * **mention**, weight [`MENTION_WEIGHT`] (1.0) per chunk: the chunk's own title node and each
//!   other node the chunk mentions;
//! * **co-occurrence**, weight [`COOCCURRENCE_WEIGHT`] (0.5) per chunk: every pair of mentioned
//!   nodes other than the title node, among the first [`COOCCURRENCE_CAP`] (30) distinct ones
//!   in order of first occurrence (a list-like chunk costs at most 435 pairs). In an untitled
//!   chunk every mention takes part in co-occurrence.
//!
//! Weights are summed exactly (integer half-units), so they are multiples of 0.5.
//! The **reach** of chunk `c` = the union of the neighbours of `chunk_nodes[c]`, minus
//! `chunk_nodes[c]` (written to the corpus as `kg_reach`, computed a row at a time, never held:
//! [`KnowledgeGraph::chunk_reach`]).
//!
//! # Communities
//! Multi-level Louvain on the weighted entity graph (details in `community.rs`): node visiting
//! order is shuffled with a SplitMix64 seeded by [`EnrichConfig::community_seed`], a node moves
//! only for a strictly positive modularity improvement (> 1e-12), ties among other communities
//! go to the smallest community id, levels aggregate until one moves nothing. Labels are
//! canonical: communities are numbered `0, 1, ...` in order of their smallest member node id
//! (an isolated node is its own community).
//!
//! # Centrality
//! Weighted PageRank: the walk leaves a node along an edge with probability proportional to its
//! weight, dangling (edgeless) nodes spread their mass uniformly, damping
//! [`EnrichConfig::pagerank_damping`], exactly [`EnrichConfig::pagerank_iterations`] iterations
//! from the uniform vector, `f64` internally, stored as `f32` (sums to 1 up to rounding).
//!
//! # Hyperedges
//! The chunk text (original case) is split into sentences: at a newline, and after `.`, `!` or
//! `?` followed by whitespace and an uppercase letter or digit, except after an initial
//! (`George T. Solomon`) or a listed abbreviation (`Mr.`, `Dr.`, `St.`, ...). Each matched
//! occurrence belongs to the sentence it starts in. A sentence's node set is its matched nodes,
//! plus the chunk's own title node for the chunk's **first** sentence (where the title is
//! usually the implicit subject: "He was born ..." is not resolved). A set with two or more
//! nodes is a hyperedge; identical `(chunk, nodes)` are kept once; hyperedges are sorted by
//! `(chunk, nodes)` and numbered in that order.
//!
//! # Per-chunk derived values
//! [`KnowledgeGraph::chunk_community`]: the community of the chunk's own title node (`None` for
//! an untitled chunk). [`KnowledgeGraph::chunk_centrality`]: the peak centrality over the chunk's
//! nodes (0 when it has none). Both are written to the export's corpus as `kg_community` and
//! `kg_node_centrality`, next to `kg_node_ids` and `kg_reach` (see [`read_kg`] for the files).
//!
//! Everything is a pure function of the `(title, text)` list in chunk order and the
//! [`EnrichConfig`]: building twice gives identical graphs and identical files.

mod community;
mod graph;
mod index;
mod io;
mod node_lists;
mod pagerank;
mod reach;
mod text;

use serde::{Deserialize, Serialize};

pub(crate) use community::louvain;
pub use graph::{
    build, build_blocks, ChunkBlocks, GraphChunk, COOCCURRENCE_CAP, COOCCURRENCE_WEIGHT,
    MENTION_WEIGHT,
};
pub use index::KgIndex;
pub use io::{corpus_columns, read_kg, write_kg, CorpusColumns, KG_FILES};
pub use node_lists::{Hyperedges, NodeLists};

/// Enrichment settings (hashed into the export's input key).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EnrichConfig {
    /// Louvain seed (node visiting order is shuffled with it).
    pub community_seed: u64,
    /// PageRank damping.
    pub pagerank_damping: f64,
    /// PageRank iterations (fixed count: deterministic).
    pub pagerank_iterations: usize,
    /// Aliases shorter than this many characters are not matched (too ambiguous).
    pub min_alias_chars: usize,
    /// In chunk text, an occurrence of a node whose name starts with an uppercase letter counts
    /// only when it is written with an uppercase (non-lowercase) first char too: entities are
    /// names, and "the water" is no mention of "Water". Query seeding stays case-insensitive.
    pub require_capitalised: bool,
}

impl Default for EnrichConfig {
    fn default() -> Self {
        EnrichConfig {
            community_seed: 42,
            pagerank_damping: 0.85,
            pagerank_iterations: 50,
            min_alias_chars: 4,
            require_capitalised: true,
        }
    }
}

impl EnrichConfig {
    /// Checks the values: damping must be a number in `[0, 1)`.
    pub fn validate(&self) -> Result<(), EnrichConfigError> {
        if !(0.0..1.0).contains(&self.pagerank_damping) {
            return Err(EnrichConfigError::PagerankDamping(self.pagerank_damping));
        }
        Ok(())
    }
}

/// An [`EnrichConfig`] value out of its range ([`EnrichConfig::validate`]).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EnrichConfigError {
    /// `pagerank_damping` (the value given) is not in `[0, 1)`: it is the probability that the
    /// walk follows an edge, and at 1 nothing would teleport.
    #[error("pagerank_damping is {0}, expected a number in [0, 1)")]
    PagerankDamping(f64),
}

/// One hyperedge: the entity set of one sentence with two or more entities. A graph holds them
/// flat ([`Hyperedges`]); this is one on its own, to build or edit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hyperedge {
    /// The chunk the sentence is in.
    pub chunk: u32,
    /// Its entity nodes, ascending, unique, at least two.
    pub nodes: Vec<u32>,
}

/// The knowledge graph of one corpus. Node ids are dense `u32`s ordered like the sorted node names,
/// so ties on node id are ties on name. Every list is sorted ascending and deduplicated.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KnowledgeGraph {
    /// Node names (entity = a distinct passage title), sorted; node id = index.
    pub nodes: Vec<String>,
    /// Lowercased alias -> node, sorted by alias (a title, and the title with a parenthetical
    /// qualifier stripped: "Lilu (mythology)" -> "lilu (mythology)", "lilu"). An alias claimed by
    /// several titles maps to the smallest node id.
    pub aliases: Vec<(String, u32)>,
    /// Per chunk: entity nodes it mentions (its own title's node included). Its 1-hop
    /// projection (the reach) is not held: [`KnowledgeGraph::chunk_reach`]. Flat: a list per
    /// chunk would be an allocation per chunk.
    pub chunk_nodes: NodeLists,
    /// Per node: community id (Louvain over the weighted entity graph).
    pub node_community: Vec<u32>,
    /// Per node: PageRank centrality (sums to 1 over nodes).
    pub node_centrality: Vec<f32>,
    /// Undirected weighted edges `(a, b, weight)` with `a < b`, sorted by `(a, b)`: mention edges
    /// (a chunk about `a` mentions `b`) and co-occurrence edges (both mentioned in one chunk).
    /// Empty in a graph loaded from an export: its [`KgIndex`]'s adjacency holds them
    /// ([`KgIndex::edges`]), and [`KnowledgeGraph::chunk_reach`] and
    /// [`KnowledgeGraph::stats`], which read this list, are for a graph as built.
    pub edges: Vec<(u32, u32, f32)>,
    /// Hyperedges, sorted by `(chunk, nodes)`; hyperedge id = index.
    pub hyperedges: Hyperedges,
    /// Per chunk: its own title's node (`None` for an untitled chunk). Not a file of its own in
    /// the export: it is the corpus `title` looked up among the node names.
    pub chunk_title: Vec<Option<u32>>,
}

/// Counts of a [`KnowledgeGraph`] (printed by prepare, stored in the export manifest).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KgStats {
    /// Nodes (distinct non-empty titles).
    pub entities: usize,
    /// Matchable aliases.
    pub aliases: usize,
    /// Undirected edges.
    pub edges: usize,
    /// Hyperedges.
    pub hyperedges: usize,
    /// Distinct communities (isolated nodes count as their own).
    pub communities: usize,
    /// Chunks with at least one node (their own title's, or a mention).
    pub chunks_with_entities: usize,
    /// Chunks that mention at least one node other than their own title's node.
    pub chunks_with_mentions: usize,
}

impl KnowledgeGraph {
    /// Peak centrality of chunk `chunk`'s nodes (0 when it has none, or is out of range).
    pub fn chunk_centrality(&self, chunk: u32) -> f32 {
        self.chunk_nodes.get(chunk as usize).map_or(0.0, |nodes| {
            nodes
                .iter()
                .filter_map(|&v| self.node_centrality.get(v as usize).copied())
                .fold(0.0, f32::max)
        })
    }

    /// Every chunk's reach: the nodes adjacent (by an edge) to any of its nodes, minus its own,
    /// ascending. Computed here from the edges, all at once: the corpus's `kg_reach` column is
    /// this, written and checked a slice of rows at a time, and the Expander tests adjacency
    /// directly, so nothing holds the whole table (some 400 MB at a million chunks) but a
    /// caller of this.
    pub fn chunk_reach(&self) -> Vec<Vec<u32>> {
        reach::Reach::new(self.nodes.len(), &self.edges).rows(self.chunk_nodes.iter())
    }

    /// Community of chunk `chunk`'s own title node (`None` for an untitled or out-of-range chunk).
    pub fn chunk_community(&self, chunk: u32) -> Option<u32> {
        let t = (*self.chunk_title.get(chunk as usize)?)?;
        self.node_community.get(t as usize).copied()
    }

    /// Its counts.
    pub fn stats(&self) -> KgStats {
        let mut labels = self.node_community.clone();
        labels.sort_unstable();
        labels.dedup();
        KgStats {
            entities: self.nodes.len(),
            aliases: self.aliases.len(),
            edges: self.edges.len(),
            hyperedges: self.hyperedges.len(),
            communities: labels.len(),
            chunks_with_entities: self.chunk_nodes.iter().filter(|v| !v.is_empty()).count(),
            chunks_with_mentions: self
                .chunk_nodes
                .iter()
                .enumerate()
                .filter(|(c, v)| {
                    let own = self.chunk_title.get(*c).copied().flatten();
                    v.iter().any(|&n| Some(n) != own)
                })
                .count(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_chunk_values_and_stats() {
        let kg = build(
            &[
                ("Alpha", "Alpha founded Beta. Gamma and Beta merged later."),
                ("Beta", "Beta was bought by ALPHA in 1990."),
                (
                    "Gamma",
                    "Gamma signed Delta, then Betamax failed. Beta agreed.",
                ),
                ("Delta (band)", "The band toured."),
                ("", "nothing"),
            ],
            &EnrichConfig::default(),
        );
        let peak = |c: usize| {
            kg.chunk_nodes[c]
                .iter()
                .map(|&v| kg.node_centrality[v as usize])
                .fold(0.0, f32::max)
        };
        assert_eq!(kg.chunk_centrality(0), peak(0));
        assert!(kg.chunk_centrality(0) > 0.0);
        assert_eq!(kg.chunk_centrality(4), 0.0);
        assert_eq!(kg.chunk_centrality(99), 0.0);
        assert_eq!(kg.chunk_community(2), Some(kg.node_community[3]));
        assert_eq!(kg.chunk_community(4), None);
        assert_eq!(kg.chunk_community(99), None);
        let s = kg.stats();
        assert_eq!(
            (
                s.entities,
                s.aliases,
                s.edges,
                s.hyperedges,
                s.chunks_with_entities,
                s.chunks_with_mentions
            ),
            (4, 5, 5, 4, 4, 3)
        );
        assert!(s.communities >= 1 && s.communities <= 4);
        assert!(EnrichConfig::default().validate().is_ok());
        let bad = EnrichConfig {
            pagerank_damping: 1.5,
            ..Default::default()
        };
        assert!(bad.validate().is_err());
    }
}

#[cfg(test)]
mod real_corpora {
    use super::*;
    use std::path::Path;
    use std::time::Instant;

    /// `cargo test -p hopbench-datasets --lib enrich::real_corpora -- --ignored --nocapture`
    #[test]
    #[ignore = "needs /work/shared/datasets; prints timings and stats"]
    fn time_build_on_real_corpora() {
        let root = Path::new("/work/shared/datasets");
        for file in [
            "musique-train100/musique_train_corpus.json",
            "2wiki-corpus/2wikimultihopqa_corpus.json",
        ] {
            let path = root.join(file);
            let Ok(bytes) = std::fs::read(&path) else {
                eprintln!("skipping {}: not found", path.display());
                continue;
            };
            let v: Vec<serde_json::Value> = serde_json::from_slice(&bytes).unwrap();
            let owned: Vec<(String, String)> = v
                .iter()
                .map(|p| {
                    (
                        p["title"].as_str().unwrap_or("").to_string(),
                        p["text"].as_str().unwrap_or("").to_string(),
                    )
                })
                .collect();
            let chunks: Vec<(&str, &str)> = owned
                .iter()
                .map(|(t, x)| (t.as_str(), x.as_str()))
                .collect();
            let cfg = EnrichConfig::default();
            let _warm = build(&chunks[..chunks.len().min(200)], &cfg);
            let t = Instant::now();
            let kg = build(&chunks, &cfg);
            let t_build = t.elapsed();
            let t = Instant::now();
            let kg2 = build(&chunks, &cfg);
            let t_build2 = t.elapsed();
            assert_eq!(kg, kg2, "deterministic");
            let t = Instant::now();
            let ix = KgIndex::new(&kg, chunks.len());
            let t_index = t.elapsed();
            let s = kg.stats();
            let mean = |f: &dyn Fn(usize) -> usize| {
                (0..chunks.len()).map(f).sum::<usize>() as f64 / chunks.len() as f64
            };
            let chunk_reach = kg.chunk_reach();
            let max_reach = chunk_reach.iter().map(Vec::len).max().unwrap_or(0);
            let mut sizes = vec![0usize; s.communities];
            for &c in &kg.node_community {
                sizes[c as usize] += 1;
            }
            sizes.sort_unstable_by(|a, b| b.cmp(a));
            let singletons = sizes.iter().filter(|&&x| x == 1).count();
            let mut top: Vec<(f32, &str)> = kg
                .node_centrality
                .iter()
                .zip(&kg.nodes)
                .map(|(&c, n)| (c, n.as_str()))
                .collect();
            top.sort_by(|a, b| b.0.total_cmp(&a.0));
            let tmp = tempfile::tempdir().unwrap();
            let t = Instant::now();
            let mut cols = vec![(
                "title",
                crate::parquet_io::strings(&chunks.iter().map(|c| c.0).collect::<Vec<_>>()),
            )];
            cols.extend(corpus_columns(&kg));
            let cpath = tmp.path().join("corpus.parquet");
            crate::parquet_io::write(&cpath, cols).unwrap();
            write_kg(tmp.path(), &kg).unwrap();
            let t_write = t.elapsed();
            let t = Instant::now();
            let table = crate::parquet_io::Table::read(&cpath).unwrap();
            let back = read_kg(tmp.path(), &table.columns()).unwrap();
            let t_read = t.elapsed();
            assert_eq!(back, kg);
            eprintln!("== {file}: {} chunks", chunks.len());
            eprintln!(
                "build {:?} (again {:?}), KgIndex::new {:?}, write {:?}, read_kg {:?}",
                t_build, t_build2, t_index, t_write, t_read
            );
            eprintln!("{}", serde_json::to_string(&s).unwrap());
            eprintln!(
                "mean |kg_node_ids| {:.2}, mean |kg_reach| {:.1}, max |kg_reach| {max_reach}, \
                 mean hyperedge size {:.2}",
                mean(&|c| kg.chunk_nodes[c].len()),
                mean(&|c| chunk_reach[c].len()),
                kg.hyperedges.iter().map(|(_, n)| n.len()).sum::<usize>() as f64
                    / kg.hyperedges.len().max(1) as f64
            );
            eprintln!(
                "largest communities {:?}, singleton communities {singletons}",
                &sizes[..sizes.len().min(8)]
            );
            eprintln!("top centrality {:?}", &top[..top.len().min(8)]);
            let mut df: Vec<(usize, &str)> = (0..kg.nodes.len() as u32)
                .map(|v| (ix.node_chunks(v).len(), kg.nodes[v as usize].as_str()))
                .collect();
            df.sort_by_key(|d| std::cmp::Reverse(d.0));
            eprintln!(
                "most-mentioned nodes (chunks) {:?}",
                &df[..df.len().min(15)]
            );
            let q = "Who was the spouse of the director of the film?";
            eprintln!("seeds of {q:?}: {:?}", ix.query_seeds(q));
        }
    }
}
