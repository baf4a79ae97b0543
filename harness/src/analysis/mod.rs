//! What is computed from cells and run files: the metrics (the one `METRICS` table),
//! statistics, paired comparisons, breakdowns by group, equal-spend curves and `eval`.

pub mod breakdown;
pub mod compare;
pub mod eval;
pub mod measures;
pub mod metrics;
pub mod spend;
pub mod stats;
