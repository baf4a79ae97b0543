//! End-to-end tests of the `hopbench` binary, built as one test binary (ripgrep's `tests/`
//! layout). Each test gets its own temp directory, a tiny randomly initialised model (no
//! download) and a small generated dataset.

#[macro_use]
mod util;

mod bad_input;
mod conversations;
mod curves;
mod docs;
mod documents;
mod engines;
mod graded;
mod hashing;
mod leg_models;
mod matrix;
#[cfg(feature = "qdrant")]
mod qdrant;
mod reliability;
mod report_html;
mod rerank;
mod run_leg;
mod seams;
mod settings;
mod shard;
mod slurm;
mod snapshots;
mod vectors;
