//! Selection: what goes into the context window, under a token budget (seed §5.6, §5.10).
//!
//! Selectors are pure, deterministic functions over explicit inputs; they never see an export,
//! only the ranked union (truncated to `select_pool_k`), per-candidate token counts (from a
//! [`TokenCounter`](crate::tokens::TokenCounter)) and, for CoE, the hypergraph lane's output.
//! Both selectors only ever *drop* candidates from the pool: with the default output order the
//! selected chunks keep the pool's relative order, so a selector can never promote a candidate
//! above one the ranking placed ahead of it.
//!
//! * [`packer`] — the knapsack (QKP) packer with backfill: `packed`.
//! * [`coe`] — chain-of-evidence over hyperedges, then the seed's `_coe_select` walk: `coe`.
//!
//! The third selector, `none`, is [`select_none`](crate::leg::select_none).

pub mod coe;
pub mod packed;
pub mod packer;

pub use coe::{CoeCandidate, CoeConfig, CoeSelection, CoeSelector};
pub use packer::{Fill, PackItem, PackOrder, Packed, Packer, PackerConfig, SimilarityKey};

use hopbench_datasets::enrich::KnowledgeGraph;
use hopbench_datasets::lexical::Bm25Index;

/// Why a selector could not run on its inputs (typed, never a panic).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SelectError {
    /// The CoE selector was called without a hypergraph lane's output: CoE buys hyperedges, and a
    /// pipeline that propagated none has nothing for it to buy.
    #[error(
        "coe selector called without a hypergraph lane's output (configure a hypergraph lane)"
    )]
    MissingHypergraph,
    /// The hypergraph lane returned a hyperedge id the knowledge graph does not have.
    #[error("hyperedge id {id} out of range: the knowledge graph has {count} hyperedges")]
    UnknownHyperedge {
        /// The offending id.
        id: u32,
        /// Number of hyperedges in the graph.
        count: usize,
    },
}

/// The chunk's peak node centrality: the largest `node_centrality` over the nodes it mentions
/// (`chunk_nodes`), or 0.0 when it mentions none or lies outside the graph. This is the raw
/// PageRank value (it sums to 1 over all nodes), so on a large graph it is small next to the
/// max-scaled score the packer adds it to.
pub fn peak_centrality(kg: &KnowledgeGraph, chunk: u32) -> f32 {
    kg.chunk_nodes
        .get(chunk as usize)
        .map(|nodes| {
            nodes
                .iter()
                .filter_map(|&n| kg.node_centrality.get(n as usize).copied())
                .filter(|c| c.is_finite())
                .fold(0.0f32, f32::max)
        })
        .unwrap_or(0.0)
}

/// Per-chunk token sets (chunk-major CSR): each chunk's sorted, unique BM25 term ids. Built once
/// per export from its BM25 index (a transpose of the term-major postings), it is what
/// [`PackItem::terms`] borrows, so a select never tokenizes. The index was built with
/// [`Tokenizer::english`](hopbench_datasets::lexical::Tokenizer::english) over each chunk's full
/// text (the text its `token_count` was taken over), so these are exactly the sets the packer would
/// otherwise tokenize.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChunkTerms {
    offsets: Vec<u64>,
    terms: Vec<u32>,
}

impl ChunkTerms {
    /// Transposes `index`'s postings (O(postings) time and memory).
    pub fn from_bm25(index: &Bm25Index) -> ChunkTerms {
        // the postings read in place, not copied out of the index
        let (post_chunk, runs) = (index.post_chunk(), index.offsets());
        let n = index.num_chunks();
        let mut offsets = vec![0u64; n + 1];
        for &c in post_chunk {
            offsets[c as usize + 1] += 1;
        }
        for i in 0..n {
            offsets[i + 1] += offsets[i];
        }
        let mut fill: Vec<u64> = offsets[..n].to_vec();
        let mut terms = vec![0u32; post_chunk.len()];
        // terms ascend across the term-major runs, so each chunk's list comes out ascending
        for t in 0..index.num_terms() {
            let (s, e) = (runs[t] as usize, runs[t + 1] as usize);
            for &c in &post_chunk[s..e] {
                let slot = &mut fill[c as usize];
                terms[*slot as usize] = t as u32;
                *slot += 1;
            }
        }
        ChunkTerms { offsets, terms }
    }

    /// Number of chunks.
    pub fn num_chunks(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    /// Chunk `chunk`'s sorted, unique term ids (empty when out of range).
    pub fn terms(&self, chunk: u32) -> &[u32] {
        let c = chunk as usize;
        if c >= self.num_chunks() {
            return &[];
        }
        &self.terms[self.offsets[c] as usize..self.offsets[c + 1] as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_are_shareable_across_threads() {
        fn shareable<T: Send + Sync>() {}
        shareable::<Packer>();
        shareable::<CoeSelector>();
        shareable::<ChunkTerms>();
    }

    #[test]
    fn peak_centrality_is_the_max_over_chunk_nodes() {
        let kg = KnowledgeGraph {
            chunk_nodes: vec![vec![0, 2], vec![], vec![1]].into(),
            node_centrality: vec![0.1, 0.5, 0.4],
            ..Default::default()
        };
        assert_eq!(peak_centrality(&kg, 0), 0.4);
        assert_eq!(peak_centrality(&kg, 1), 0.0);
        assert_eq!(peak_centrality(&kg, 2), 0.5);
        assert_eq!(peak_centrality(&kg, 9), 0.0);
    }
}

#[cfg(test)]
mod chunk_terms_tests {
    use super::*;
    use hopbench_datasets::lexical::{Bm25Params, Tokenizer};

    #[test]
    fn chunk_terms_match_the_tokenizer() {
        let texts = [
            "The rivers flowed",
            "",
            "river bank, banks of money",
            "money money",
        ];
        let tk = Tokenizer::english();
        let index = Bm25Index::build(texts, &tk, Bm25Params::default());
        let ct = ChunkTerms::from_bm25(&index);
        assert_eq!(ct.num_chunks(), 4);
        let names = index.terms();
        for (c, text) in texts.iter().enumerate() {
            let ids = ct.terms(c as u32);
            assert!(ids.windows(2).all(|w| w[0] < w[1]));
            let got: Vec<&str> = ids.iter().map(|&t| names[t as usize].as_str()).collect();
            let mut want = tk.tokens(text);
            want.sort();
            want.dedup();
            assert_eq!(got, want);
        }
        assert!(ct.terms(2).len() == 3);
        assert!(ct.terms(99).is_empty());
    }
}
