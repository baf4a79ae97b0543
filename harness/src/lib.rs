//! The hopbench library: everything the `hopbench` binary does, as modules, so that the fuzz
//! targets and the benchmarks can call the loaders and readers directly.
//!
//! The binary is a thin layer: `commands` parses the arguments (one file per command, its
//! arguments and its `run`), `settings` resolves them with the campaign and the environment
//! into one [`settings::Settings`], once, and the modules below do the work, reading it by
//! reference and passing plain structs:
//! `campaign` (typed campaign.yaml) -> `data` (raw files -> export) -> `matrix` (legs x queries)
//! -> `evaluate`/`metrics` -> `summary` (cells) -> `report`, `compare`, `trec`.

/// `println!` that ends the process quietly when stdout is closed (`hopbench ... | head`), as
/// command-line tools should, instead of panicking on the broken pipe.
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let mut stdout = std::io::stdout().lock();
        if let Err(e) = writeln!(stdout, $($arg)*).and_then(|_| stdout.flush()) {
            if e.kind() == std::io::ErrorKind::BrokenPipe {
                std::process::exit(0);
            }
            panic!("cannot write to stdout: {e}");
        }
    }};
}

pub mod bench;
pub mod bench_generate;
pub mod bench_scale;
pub mod breakdown;
pub mod cache;
pub mod campaign;
pub mod chunking;
pub mod commands;
pub mod compare;
pub mod contract;
pub mod curve;
pub mod data;
pub mod eval_cmd;
pub mod evaluate;
pub mod fsx;
pub mod html;
pub mod leg_build;
pub mod lock;
pub mod matrix;
pub mod metrics;
#[cfg(feature = "qdrant")]
pub mod parity;
#[cfg(feature = "qdrant")]
pub mod parity_plot;
pub mod plot;
pub mod progress;
pub mod protocol;
pub mod report;
pub mod settings;
pub mod shard;
pub mod slurm;
pub mod spend;
pub mod stats;
pub mod status;
pub mod summary;
pub mod trec;
