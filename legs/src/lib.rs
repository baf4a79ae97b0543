//! Retrieval legs over a hopbench export.
//!
//! A leg is one retrieval system of the benchmark matrix. Every leg has the same two halves
//! ([`Leg`]): `retrieve(query) -> Retrieval` is the expensive, frozen half (first-stage fetches,
//! fusion, rescoring), and `select(query, &Retrieval, budget) -> Selection` is the cheap, pure half
//! that decides what goes into the context window. A budget curve is therefore one retrieve and N
//! selects, so every operating point is settled against the identical candidate list.
//!
//! Legs see an [`Export`](hopbench_datasets::export::Export) and nothing else: no files (save
//! the `run` kind's run file, a system's output that the campaign names and the cell key
//! hashes), no metrics. Ties break on ascending chunk index everywhere (the export sorts chunks by record id,
//! so that is ascending record id). One query's work is single-threaded and order-fixed.
//!
//! ```no_run
//! use std::sync::Arc;
//! use hopbench_legs::{registry::LegSpec, Leg, QueryInput};
//! # fn demo(export: Arc<hopbench_datasets::export::Export>) {
//! let spec: LegSpec = serde_json::from_str(r#"{"kind": "bm25"}"#).unwrap();
//! let leg = spec.build("bm25", export.clone()).unwrap();
//! let q = QueryInput::from_export(&export, 0);
//! let retrieval = leg.retrieve(&q).unwrap();
//! let selection = leg.select(&q, &retrieval, None).unwrap();
//! println!("{:?}", &selection.chunks[..10]);
//! # }
//! ```
#![deny(missing_docs)]

// the interface
pub mod leg;
pub mod params;

// building blocks: they compose each other and never know about kinds or the campaign
pub mod candidate;
pub mod cdgr;
pub mod conversation;
pub mod engine;
pub mod expand;
pub mod first_stage;
pub mod fuse;
pub mod gate;
pub mod lanes;
pub mod oracle;
pub mod rerank;
pub mod rescue;
pub mod select;
pub mod tokens;

// the leg kinds (one file each) and the registry that parses campaigns through them
pub mod kinds;
pub mod registry;

pub use candidate::Candidate;
pub use leg::{Leg, LegError, Note, QueryInput, Ranked, Ranker, Retrieval, Selection};
