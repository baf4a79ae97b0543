//! First-stage backends: exact dense search and BM25. Each returns a ranked candidate list of at
//! most `pool_k` entries in [`rank_order`](crate::candidate::rank_order).

pub mod dense;
pub mod lexical;
