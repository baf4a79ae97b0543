//! What a number is: the metrics (the one `METRICS` table) and the measures they call, the
//! statistics and the campaign's settings for them, one query's evaluated result, breakdowns by
//! group, and the determinism contract the numbers are computed under. The bottom of the
//! harness: everything above computes, stores, compares or shows these, and this room imports
//! nothing from them.

pub mod breakdown;
pub mod contract;
pub mod measures;
pub mod metrics;
pub mod query;
pub mod stats;
pub mod stats_config;
