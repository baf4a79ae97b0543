//! The run itself, in order: the campaign, the settings resolved once (with the shard plan: which
//! part of the cells a process runs), the exports built on demand, the matrix of legs x
//! queries, the budget curves and the scores of each query.

pub mod campaign;
pub mod chunking;
pub mod curve;
pub mod data;
pub mod evaluate;
pub mod leg_build;
pub mod leg_model;
pub mod matrix;
pub mod progress;
pub mod protocol;
pub mod reranker;
pub mod settings;
pub mod shard;
pub mod yaml;
