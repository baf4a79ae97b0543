//! The BM25 engine over the export's postings (see `hopbench_datasets::lexical`): the query
//! text is tokenised with the export's analyzer (Lucene English) and scored term-at-a-time.

use std::sync::Arc;

use hopbench_datasets::export::Export;
use hopbench_datasets::lexical::{Bm25Index, Tokenizer};

use super::{Engine, EngineError};
use crate::candidate::Candidate;
use crate::leg::QueryInput;

/// BM25 over an export's index.
pub struct Bm25 {
    export: Arc<Export>,
    tokenizer: Tokenizer,
}

impl Bm25 {
    /// The engine over `export`'s postings.
    pub fn new(export: Arc<Export>) -> Self {
        Bm25 {
            export,
            tokenizer: Tokenizer::english(),
        }
    }
}

impl Engine for Bm25 {
    fn name(&self) -> &'static str {
        "bm25"
    }
    fn search(&self, query: &QueryInput<'_>, k: usize) -> Result<Vec<Candidate>, EngineError> {
        Ok(search(&self.export.bm25, &self.tokenizer, query.text, k))
    }
}

/// The top `k` chunks for `text` by BM25 (chunks without any query term are not returned).
pub fn search(index: &Bm25Index, tokenizer: &Tokenizer, text: &str, k: usize) -> Vec<Candidate> {
    index
        .search(tokenizer, text, k)
        .into_iter()
        .map(|(chunk, score)| Candidate::new(chunk, score))
        .collect()
}
