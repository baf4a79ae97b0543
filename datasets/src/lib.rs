//! Raw multi-hop QA datasets in, an inert and hashed export out.
//!
//! This crate is the first arrow of hopbench's pipeline: `raw dataset -> export`. A reader per raw
//! format ([`formats`]) turns downloaded files into a [`RawDataset`]; [`synthetic`] generates the
//! embedded default world; [`embed`] runs a real sentence-embedding model on CPU; [`lexical`]
//! builds BM25 postings; [`export`] writes and reads the export directory whose manifest hashes
//! every file, so that everything downstream can be keyed on content, not on paths or dates.
//!
//! Nothing here knows about legs or metrics.
#![deny(missing_docs)]

#[cfg(feature = "formats")]
pub mod chunk;
mod csr;
#[cfg(feature = "embed")]
pub mod embed;
pub mod enrich;
pub mod error;
pub mod export;
#[cfg(feature = "formats")]
pub mod formats;
pub mod hnsw;
pub mod lexical;
pub mod memory;
pub mod model;
pub mod parquet_io;
pub mod presence;
pub mod protocol;
pub mod rng;
pub mod runfile;
pub mod simgraph;
pub mod stages;
pub mod synthetic;
pub mod tokens;
pub mod vector;
pub mod vectors_file;

pub use error::{Error, Result};
pub use model::{Passage, Question, RawDataset, Span, SpannedDataset, SubQuestion, Turn};
