//! The hopbench library: everything the `hopbench` binary does, as modules, so that the fuzz
//! targets and the benchmarks can call the loaders and readers directly.
//!
//! The binary is a thin layer: `commands` parses the arguments (one file per command, its
//! arguments and its `run`), `settings` resolves them with the campaign and the environment
//! into one [`settings::Settings`], once, and the modules below do the work, reading it by
//! reference and passing plain structs. The folders are layers, top first, and each imports
//! only the ones below it (`scripts/module_graph.py` checks it): [`commands`]; [`bench`]
//! (speed and cost); [`report`] (renders cells); [`cluster`] (a run split into parts and
//! jobs); [`analysis`] (comparisons and `eval`, from stored cells and run files); [`pipeline`]
//! (campaign.yaml -> settings -> exports -> the matrix of legs x queries -> scores), which
//! writes through [`store`] (cells, caches, locks, atomic files, TREC files); and [`measure`]
//! (what a number is: the metrics, statistics, one query's result, the determinism contract).

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

pub mod analysis;
pub mod bench;
pub mod cluster;
pub mod commands;
pub mod measure;
pub mod pipeline;
pub mod report;
pub mod store;
