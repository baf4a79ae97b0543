//! Building the [`KnowledgeGraph`] of a corpus: entities, aliases, mentions, edges, reach,
//! hyperedges, then communities and centrality.

use std::borrow::Cow;
use std::collections::BTreeMap;

use rayon::prelude::*;

use super::community::louvain;
use super::pagerank::pagerank;
use super::text::{alias_ok, fold, sentences, title_aliases, Hit, Matcher};
use super::{EnrichConfig, Hyperedges, KnowledgeGraph, NodeLists};

/// Co-occurrence pairs are formed among at most this many mentioned nodes per chunk (the first
/// ones in text order), so a list-like chunk costs at most `30 * 29 / 2` pairs.
pub const COOCCURRENCE_CAP: usize = 30;

/// Edge weight added per chunk in which the chunk's own title node mentions another node.
pub const MENTION_WEIGHT: f32 = 1.0;

/// Edge weight added per chunk in which two (non-title) nodes are both mentioned.
pub const COOCCURRENCE_WEIGHT: f32 = 0.5;

/// What one chunk contributes, computed independently per chunk.
struct ChunkScan {
    /// Its own title's node.
    title: Option<u32>,
    /// Title node + every matched node, ascending, unique.
    nodes: Vec<u32>,
    /// Matched nodes other than the title node, in order of first occurrence.
    mentions: Vec<u32>,
    /// Per sentence with >= 2 nodes: its nodes, ascending, unique; sorted and deduplicated.
    hyper: Vec<Vec<u32>>,
}

/// Aliases of the sorted, distinct `nodes`: folded title and title without its parenthetical
/// qualifier, filtered by [`alias_ok`]; an alias claimed by several nodes keeps the smallest id.
pub(crate) fn aliases_of(nodes: &[String], min_alias_chars: usize) -> Vec<(String, u32)> {
    let mut map: BTreeMap<String, u32> = BTreeMap::new();
    for (id, name) in nodes.iter().enumerate() {
        for alias in title_aliases(name) {
            if alias_ok(&alias, min_alias_chars) {
                map.entry(alias).or_insert(id as u32);
            }
        }
    }
    map.into_iter().collect()
}

/// Whether a node's name starts with an uppercase letter (its occurrences in chunk text must
/// then be capitalised too, when [`EnrichConfig::require_capitalised`]).
fn capitalised(name: &str) -> bool {
    name.trim_start()
        .chars()
        .next()
        .is_some_and(char::is_uppercase)
}

fn scan(title: Option<u32>, text: &str, matcher: Option<&Matcher>, caps: &[bool]) -> ChunkScan {
    let hits: Vec<Hit> = match matcher {
        Some(m) => m.hits_where(&fold(text), |h| {
            !caps.get(h.node as usize).copied().unwrap_or(false)
                || text[h.start..]
                    .chars()
                    .next()
                    .is_some_and(|c| !c.is_lowercase())
        }),
        None => Vec::new(),
    };
    let mut nodes: Vec<u32> = hits.iter().map(|h| h.node).chain(title).collect();
    nodes.sort_unstable();
    nodes.dedup();
    let mut mentions: Vec<u32> = Vec::new();
    for h in &hits {
        if Some(h.node) != title && !mentions.contains(&h.node) {
            mentions.push(h.node);
        }
    }
    let mut hyper: Vec<Vec<u32>> = Vec::new();
    if !hits.is_empty() {
        let spans = sentences(text);
        let mut k = 0;
        for (s, &(_, end)) in spans.iter().enumerate() {
            let mut set: Vec<u32> = Vec::new();
            if s == 0 {
                set.extend(title);
            }
            while k < hits.len() && hits[k].start < end {
                set.push(hits[k].node);
                k += 1;
            }
            set.sort_unstable();
            set.dedup();
            if set.len() >= 2 {
                hyper.push(set);
            }
        }
        hyper.sort();
        hyper.dedup();
    }
    ChunkScan {
        title,
        nodes,
        mentions,
        hyper,
    }
}

/// The undirected edges implied by the chunk scans, `a < b`, sorted, weights summed.
fn edges_of(scans: &[ChunkScan]) -> Vec<(u32, u32, f32)> {
    // weights are counted in half-units (mention = 2, co-occurrence = 1): exact integer sums
    let mut raw: Vec<(u64, u32)> = Vec::new();
    let key = |a: u32, b: u32| ((a.min(b) as u64) << 32) | a.max(b) as u64;
    for s in scans {
        if let Some(t) = s.title {
            raw.extend(s.mentions.iter().map(|&m| (key(t, m), 2)));
        }
        let capped = &s.mentions[..s.mentions.len().min(COOCCURRENCE_CAP)];
        for (i, &a) in capped.iter().enumerate() {
            raw.extend(capped[i + 1..].iter().map(|&b| (key(a, b), 1)));
        }
    }
    raw.par_sort_unstable_by_key(|r| r.0);
    let mut edges: Vec<(u32, u32, f32)> = Vec::new();
    let mut i = 0;
    while i < raw.len() {
        let k = raw[i].0;
        let mut units = 0u64;
        while i < raw.len() && raw[i].0 == k {
            units += raw[i].1 as u64;
            i += 1;
        }
        edges.push(((k >> 32) as u32, k as u32, units as f32 * 0.5));
    }
    edges
}

/// A chunk as the graph reads it: its title (an entity when not blank) and the text its
/// mentions are matched in (the text as embedded).
pub trait GraphChunk: Sync {
    /// The title, as published.
    fn title(&self) -> &str;
    /// The text as embedded: made on demand by a chunk that does not hold it, so a corpus's
    /// texts need not be held twice while its graph is built.
    fn text(&self) -> Cow<'_, str>;
}

impl GraphChunk for (&str, &str) {
    fn title(&self) -> &str {
        self.0
    }
    fn text(&self) -> Cow<'_, str> {
        Cow::Borrowed(self.1)
    }
}

/// Chunks read a block at a time, in chunk order: a corpus too large to hold reads its texts
/// back from disk ([`build_blocks`]).
pub trait ChunkBlocks {
    /// A chunk of a block.
    type Chunk: GraphChunk;
    /// Calls `f` with each block in chunk order.
    fn each_block(&self, f: &mut dyn FnMut(&[Self::Chunk])) -> crate::error::Result<()>;
}

/// Held chunks are one block.
impl<C: GraphChunk> ChunkBlocks for [C] {
    type Chunk = C;
    fn each_block(&self, f: &mut dyn FnMut(&[C])) -> crate::error::Result<()> {
        f(self);
        Ok(())
    }
}

/// Builds the knowledge graph of `chunks` (`(title, text as embedded)`, in chunk order). See
/// the [module documentation](super) for every rule.
pub fn build<C: GraphChunk>(chunks: &[C], cfg: &EnrichConfig) -> KnowledgeGraph {
    build_blocks(chunks, cfg).expect("held chunks are read without error")
}

/// [`build`] over chunks read a block at a time (twice: their titles, then their mentions);
/// the graph is the one [`build`] makes of the same chunks held, whatever the blocks.
pub fn build_blocks<B: ChunkBlocks + ?Sized>(
    chunks: &B,
    cfg: &EnrichConfig,
) -> crate::error::Result<KnowledgeGraph> {
    let mut nodes: Vec<String> = Vec::new();
    chunks.each_block(&mut |block| {
        nodes.extend(
            block
                .iter()
                .map(GraphChunk::title)
                .filter(|t| !t.trim().is_empty())
                .map(str::to_string),
        )
    })?;
    nodes.sort_unstable();
    nodes.dedup();
    let n = nodes.len();
    let aliases = aliases_of(&nodes, cfg.min_alias_chars);
    let matcher = Matcher::new(aliases.iter().map(|(a, id)| (a.as_str(), *id)));
    let title_node = |t: &str| {
        nodes
            .binary_search_by(|x| x.as_str().cmp(t))
            .ok()
            .map(|i| i as u32)
    };

    let caps: Vec<bool> = if cfg.require_capitalised {
        nodes.iter().map(|n| capitalised(n)).collect()
    } else {
        Vec::new()
    };
    let mut scans: Vec<ChunkScan> = Vec::new();
    chunks.each_block(&mut |block| {
        scans.par_extend(
            block
                .par_iter()
                .map(|c| scan(title_node(c.title()), &c.text(), matcher.as_ref(), &caps)),
        )
    })?;

    let edges = edges_of(&scans);
    let mut hyperedges = Hyperedges::default();
    for (c, s) in scans.iter().enumerate() {
        for h in &s.hyper {
            hyperedges.push(c as u32, h);
        }
    }
    hyperedges.shrink_to_fit();
    let chunk_title: Vec<Option<u32>> = scans.iter().map(|s| s.title).collect();
    // each chunk's node list is copied out of its scan into one flat run, and the scans go
    let chunk_nodes = NodeLists::from_iter(scans.iter().map(|s| s.nodes.as_slice()));
    drop(scans);
    let (node_community, node_centrality) = rayon::join(
        || louvain(n, &edges, cfg.community_seed),
        || pagerank(n, &edges, cfg.pagerank_damping, cfg.pagerank_iterations),
    );
    Ok(KnowledgeGraph {
        nodes,
        aliases,
        chunk_nodes,
        node_community,
        node_centrality,
        edges,
        hyperedges,
        chunk_title,
    })
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::enrich::Hyperedge;

    /// The hyperedge of `nodes` in chunk `chunk`.
    fn hyper(chunk: u32, nodes: &[u32]) -> Hyperedge {
        Hyperedge {
            chunk,
            nodes: nodes.to_vec(),
        }
    }

    /// Four passages: Alpha mentions Beta and Gamma; Beta mentions Alpha; Gamma mentions Beta and
    /// the qualified "Delta (band)" by its short alias; Delta mentions nobody (also the titled
    /// chunks of the graph files' tests).
    pub(in crate::enrich) fn corpus() -> Vec<(&'static str, &'static str)> {
        vec![
            ("Alpha", "Alpha founded Beta. Gamma and Beta merged later."),
            ("Beta", "Beta was bought by ALPHA in 1990."),
            (
                "Gamma",
                "Gamma signed Delta, then Betamax failed. Beta agreed.",
            ),
            ("Delta (band)", "The band toured."),
        ]
    }

    #[test]
    fn entities_aliases_mentions_edges_and_reach() {
        let kg = build(&corpus(), &EnrichConfig::default());
        assert_eq!(kg.nodes, vec!["Alpha", "Beta", "Delta (band)", "Gamma"]);
        assert_eq!(
            kg.aliases,
            vec![
                ("alpha".to_string(), 0),
                ("beta".to_string(), 1),
                ("delta".to_string(), 2),
                ("delta (band)".to_string(), 2),
                ("gamma".to_string(), 3),
            ]
        );
        // "Betamax" is no mention of Beta
        assert_eq!(
            kg.chunk_nodes,
            vec![vec![0, 1, 3], vec![0, 1], vec![1, 2, 3], vec![2]]
        );
        assert_eq!(kg.chunk_title, vec![Some(0), Some(1), Some(3), Some(2)]);
        // mentions: 0->1 (1.0), 0->3 (1.0), 1->0 (1.0), 3->2 (1.0), 3->1 (1.0);
        // co-occurrence: chunk 0 {1,3} (0.5), chunk 2 {2,1} (0.5)
        assert_eq!(
            kg.edges,
            vec![
                (0, 1, 2.0),
                (0, 3, 1.0),
                (1, 2, 0.5),
                (1, 3, 1.5),
                (2, 3, 1.0)
            ]
        );
        assert_eq!(
            kg.chunk_reach(),
            vec![vec![2], vec![2, 3], vec![0], vec![1, 3]]
        );
        // sentence 0 of chunk 0 has Alpha (title, first sentence) and Beta; sentence 1 Gamma+Beta
        assert_eq!(
            kg.hyperedges,
            vec![
                hyper(0, &[0, 1]),
                hyper(0, &[1, 3]),
                hyper(1, &[0, 1]),
                hyper(2, &[2, 3]),
            ]
        );
        let sum: f32 = kg.node_centrality.iter().sum();
        assert!((sum - 1.0).abs() < 1e-5);
        assert_eq!(kg.node_community.len(), 4);
        assert_eq!(
            kg.node_community[0], 0,
            "canonical: node 0 is in community 0"
        );
        assert_eq!(
            build(&corpus(), &EnrichConfig::default()),
            kg,
            "deterministic"
        );
    }

    /// Chunks handed over `n` at a time.
    struct InBlocks<'a>(&'a [(&'static str, &'static str)], usize);

    impl ChunkBlocks for InBlocks<'_> {
        type Chunk = (&'static str, &'static str);
        fn each_block(&self, f: &mut dyn FnMut(&[Self::Chunk])) -> crate::error::Result<()> {
            self.0.chunks(self.1).for_each(f);
            Ok(())
        }
    }

    #[test]
    fn a_graph_built_in_blocks_is_the_graph_built_whole() {
        let mut chunks = corpus();
        chunks.extend([
            ("", "Alpha and Beta, untitled."),
            ("Epsilon", "Gamma. Delta."),
        ]);
        let whole = build(&chunks, &EnrichConfig::default());
        for n in 1..=chunks.len() {
            let blocks = build_blocks(&InBlocks(&chunks, n), &EnrichConfig::default()).unwrap();
            assert_eq!(blocks, whole, "blocks of {n}");
        }
    }

    #[test]
    fn hyperedges_follow_sentences_and_dedupe() {
        let chunks = vec![
            (
                "Alpha",
                "Nothing here. Beta met Gamma. Gamma met Beta! beta, gamma.\nDelta alone.",
            ),
            ("Beta", "x"),
            ("Gamma", "y"),
            ("Delta", "z"),
            ("", "Alpha and Beta, untitled."),
        ];
        let kg = build(&chunks, &EnrichConfig::default());
        assert_eq!(kg.hyperedges, vec![hyper(0, &[1, 3]), hyper(4, &[0, 1]),]);
        assert_eq!(kg.chunk_title[4], None);
        assert_eq!(kg.chunk_nodes[4], vec![0, 1]);
        // untitled chunk: its two mentions co-occur (0.5); Alpha mentions Beta, Gamma, Delta (1.0)
        // and Beta, Gamma, Delta co-occur in Alpha's chunk (0.5 each)
        assert_eq!(
            kg.edges,
            vec![
                (0, 1, 1.5),
                (0, 2, 1.0),
                (0, 3, 1.0),
                (1, 2, 0.5),
                (1, 3, 0.5),
                (2, 3, 0.5)
            ]
        );
    }

    #[test]
    fn capitalised_names_need_capitalised_mentions() {
        let chunks = vec![
            ("Water", "x"),
            ("iPod", "y"),
            (
                "Lake",
                "The water of the lake. Water is wet. An IPOD and an ipod.",
            ),
        ];
        let kg = build(&chunks, &EnrichConfig::default());
        assert_eq!(kg.nodes, vec!["Lake", "Water", "iPod"]);
        assert_eq!(kg.chunk_nodes[2], vec![0, 1, 2]);
        let lax = EnrichConfig {
            require_capitalised: false,
            ..Default::default()
        };
        let only_lower = vec![("Water", "x"), ("Lake", "the water of the lake")];
        assert_eq!(
            build(&only_lower, &EnrichConfig::default()).chunk_nodes[1],
            vec![0]
        );
        assert_eq!(build(&only_lower, &lax).chunk_nodes[1], vec![0, 1]);
    }

    #[test]
    fn cooccurrence_is_capped() {
        let names: Vec<String> = (0..40).map(|i| format!("Entity{i:02}")).collect();
        let list = names.join(", ");
        let mut chunks: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "-")).collect();
        chunks.push(("", &list));
        let kg = build(&chunks, &EnrichConfig::default());
        assert_eq!(
            kg.edges.len(),
            COOCCURRENCE_CAP * (COOCCURRENCE_CAP - 1) / 2
        );
        assert_eq!(kg.chunk_nodes[40].len(), 40);
        assert_eq!(kg.hyperedges.len(), 1);
        assert_eq!(kg.hyperedges.nodes(0).len(), 40);
    }

    #[test]
    fn shared_aliases_go_to_the_smallest_node() {
        let chunks = vec![
            ("Lilu", "a"),
            ("Lilu (mythology)", "b"),
            ("Zed", "Lilu, Liluana"),
        ];
        let kg = build(&chunks, &EnrichConfig::default());
        assert_eq!(
            kg.aliases,
            vec![("lilu".to_string(), 0), ("lilu (mythology)".to_string(), 1)]
        );
        assert_eq!(kg.chunk_nodes[2], vec![0, 2]);
        assert_eq!(kg.edges, vec![(0, 2, 1.0)]);
        let empty = build::<(&str, &str)>(&[], &EnrichConfig::default());
        assert_eq!(empty, KnowledgeGraph::default());
    }
}
