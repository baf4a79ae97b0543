//! `hopbench._native`: the `hopbench` Python package's compiled core. Every function runs the
//! harness's own Rust code (`hopbench eval`'s evaluation, the command line, the results store's
//! verification) in this process; the Python layer (`python/hopbench`) turns its inputs into
//! the shapes here and its outputs into DataFrames. The contract is `python/hopbench/_native.pyi`.

use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

mod arrow;
mod dict_run;
mod evaluate;
mod results;
mod sources;

create_exception!(
    _native,
    InputError,
    PyValueError,
    "A run, qrels or results file, or a record of one, that hopbench refuses."
);
create_exception!(
    _native,
    MeasureError,
    InputError,
    "A measure name hopbench does not know."
);
create_exception!(
    _native,
    ResultsError,
    InputError,
    "A results directory, or a cell of one, that does not verify."
);

/// Runs `work` with a panic turned into `RuntimeError`: nothing unwinds across the boundary.
pub(crate) fn guarded<T>(work: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)) {
        Ok(r) => r,
        Err(panic) => {
            let what = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("a panic without a message");
            Err(PyRuntimeError::new_err(format!(
                "hopbench: internal error (please report it): {what}"
            )))
        }
    }
}

/// The `hopbench` command line, run in this process: `argv[0]` is the program's name. Returns
/// the exit status. The GIL is released while it runs.
#[pyfunction]
fn cli(py: Python<'_>, argv: Vec<String>) -> PyResult<u8> {
    guarded(|| {
        // cell keys name the code that computed them: this module's file, not python's
        let file: std::path::PathBuf = py
            .import("hopbench._native")?
            .getattr("__file__")?
            .extract()?;
        hopbench::store::cache::set_code_file(file);
        let code = py.detach(|| hopbench::commands::main_from(argv));
        // `ExitCode` keeps its number private; the commands return 0, 1 or 2
        Ok((0..=u8::MAX)
            .find(|&n| std::process::ExitCode::from(n) == code)
            .unwrap_or(1))
    })
}

/// `hopbench --version`'s line: the version and what the build holds.
#[pyfunction]
fn version() -> String {
    format!("hopbench {}", hopbench::commands::VERSION)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // at import, before `cli` can open a shard: Qdrant reads this once
    hopbench_datasets::hnsw::map_files_once();
    let py = m.py();
    m.add("InputError", py.get_type::<InputError>())?;
    m.add("MeasureError", py.get_type::<MeasureError>())?;
    m.add("ResultsError", py.get_type::<ResultsError>())?;
    m.add_function(wrap_pyfunction!(cli, m)?)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(evaluate::evaluate, m)?)?;
    m.add_function(wrap_pyfunction!(evaluate::compare, m)?)?;
    m.add_function(wrap_pyfunction!(results::load_results, m)?)?;
    m.add_function(wrap_pyfunction!(results::per_query, m)?)?;
    m.add_function(wrap_pyfunction!(results::curves, m)?)?;
    Ok(())
}
