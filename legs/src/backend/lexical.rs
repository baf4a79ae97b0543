//! BM25 first stage over the export's postings (see `hopbench_datasets::lexical`).

use hopbench_datasets::lexical::{Bm25Index, Tokenizer};

use crate::candidate::Candidate;

/// The top `k` chunks for `text` by BM25 (chunks without any query term are not returned).
pub fn search(index: &Bm25Index, tokenizer: &Tokenizer, text: &str, k: usize) -> Vec<Candidate> {
    index
        .search(tokenizer, text, k)
        .into_iter()
        .map(|(chunk, score)| Candidate::new(chunk, score))
        .collect()
}
