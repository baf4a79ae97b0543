//! `hopbench`: a reproducible benchmark harness for retrieval strategies. The command line is
//! parsed, resolved and dispatched by [`hopbench::commands::main_from`] (the Python package's
//! `hopbench` command runs the same function); each command is a file of `commands/`.

use std::process::ExitCode;

fn main() -> ExitCode {
    // before any thread starts: the process's environment is changed here alone
    hopbench_datasets::hnsw::map_files_once();
    hopbench::commands::main_from(std::env::args_os())
}
