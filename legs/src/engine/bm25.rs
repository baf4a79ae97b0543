//! The BM25 engine over the export's postings (see `hopbench_datasets::lexical`): the query
//! text is tokenised with the export's analyzer (Lucene English) and scored by MaxScore,
//! document at a time, to the exhaustive sum's bits.
//!
//! The export indexes each chunk's full text (its protocol's header, then the body);
//! [`Bm25::content_only`] indexes the bodies alone, for the text-alone ablation.

use std::sync::Arc;

use hopbench_datasets::export::Export;
use hopbench_datasets::lexical::{Bm25Index, Tokenizer};

use super::{no_params, Engine, EngineError, EngineKind, Side, SideKind};
use crate::params::{Flat, ParamError};
use crate::candidate::Candidate;
use crate::leg::{LegError, QueryInput};

/// `lexical: {engine: bm25}`: the export's BM25 index, the lexical side's built-in engine. It
/// takes no parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Bm25Spec;

impl EngineKind for Bm25Spec {
    const NAME: &'static str = "bm25";
    const SIDES: &'static [SideKind] = &[SideKind::Lexical];

    fn read(rest: &Flat) -> Result<Self, ParamError> {
        no_params(Self::NAME, rest).map(|()| Bm25Spec)
    }
    fn write(&self) -> Flat {
        Flat::new()
    }
    fn build(&self, export: &Arc<Export>, side: Side) -> Result<Box<dyn Engine>, LegError> {
        match side {
            Side::Lexical => Ok(Box::new(Bm25::new(export.clone()))),
            Side::Dense(_) => Err(side.refused(Self::NAME)),
        }
    }
}

/// BM25 over an export's index, or over an index of the chunks' bodies alone.
pub struct Bm25 {
    export: Arc<Export>,
    /// The bodies-only index ([`Bm25::content_only`]); `None`: the export's own.
    content: Option<Bm25Index>,
    tokenizer: Tokenizer,
}

impl Bm25 {
    /// The engine over `export`'s postings.
    pub fn new(export: Arc<Export>) -> Self {
        Bm25 {
            export,
            content: None,
            tokenizer: Tokenizer::english(),
        }
    }

    /// The engine over the chunks' bodies without their headers, indexed here with the
    /// export's analyser and BM25 parameters: the lexical twin of the content-only vectors.
    /// It is a pure function of the export, so it needs no file of its own. `MissingInputs`
    /// where no chunk has a header: the export's index is the text alone already.
    pub fn content_only(export: Arc<Export>) -> Result<Self, LegError> {
        let texts = export.texts()?;
        if texts.iter().all(|t| t.header.is_none()) {
            return Err(LegError::MissingInputs(
                "the dataset indexes the text alone already (protocol `text`): `lexical` is the \
                 text-alone run"
                    .into(),
            ));
        }
        let tokenizer = Tokenizer::english();
        let index = Bm25Index::build(
            texts.iter().map(|t| t.text.as_str()),
            &tokenizer,
            export.bm25.params(),
        );
        Ok(Bm25 {
            export,
            content: Some(index),
            tokenizer,
        })
    }

    fn index(&self) -> &Bm25Index {
        self.content.as_ref().unwrap_or(&self.export.bm25)
    }
}

impl Engine for Bm25 {
    fn name(&self) -> &'static str {
        "bm25"
    }
    fn search(&self, query: &QueryInput<'_>, k: usize) -> Result<Vec<Candidate>, EngineError> {
        Ok(search(self.index(), &self.tokenizer, query.text, k))
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
