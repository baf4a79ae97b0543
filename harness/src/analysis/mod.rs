//! What is computed from stored cells and run files: paired comparisons of runs and legs,
//! equal-spend comparisons of budget curves, and `eval` of a user's run file.

pub mod compare;
pub mod eval;
pub mod spend;
