//! What a run writes and reads back: cell summaries and their keys, the verified cache,
//! the results lock, atomic files and TREC run files.

pub mod cache;
pub mod collect;
pub mod fsx;
pub mod lock;
pub mod seal;
pub mod summary;
pub mod trec;
