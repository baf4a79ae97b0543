//! The hopbench library: everything the `hopbench` binary does, as modules, so that the fuzz
//! targets and the benchmarks can call the loaders and readers directly.
//!
//! The binary is a thin layer: `commands` parses the arguments (one file per command, its
//! arguments and its `run`), `settings` resolves them with the campaign and the environment
//! into one [`settings::Settings`], once, and the modules below do the work, reading it by
//! reference and passing plain structs. The folders follow a run:
//! [`pipeline`] (campaign.yaml -> settings -> exports -> the matrix of legs x queries -> scores)
//! writes through [`store`] (cells, caches, locks, atomic files, TREC files); [`analysis`]
//! reads cells back (metrics, statistics, comparisons); [`report`] renders them; [`cluster`]
//! splits a run into parts and jobs; [`bench`] measures speed and cost.

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
pub mod pipeline;
pub mod report;
pub mod store;
