//! End-to-end tests of the `hopbench` binary, built as one test binary (ripgrep's `tests/`
//! layout). Each test gets its own temp directory, a tiny randomly initialised model (no
//! download) and a small generated dataset.

#[macro_use]
mod util;

mod conversations;
mod curves;
mod matrix;
mod settings;
mod snapshots;
