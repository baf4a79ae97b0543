//! One writer per results directory: an advisory lock on `<results>/.lock`, held for the whole
//! of a command that writes (run-matrix, prepare, bench), released when the process ends, however
//! it ends (the operating system drops the lock with the file descriptor, so a killed run leaves
//! no stale lock). A second writer waits, saying so, or fails at once with `--no-wait`. Readers
//! (`compare`, `compare-legs`, `breakdown`, `plot`) take no lock: every file is written to a
//! temporary name and renamed into place, so a reader sees a whole old file or a whole new one.

use std::fs::{File, OpenOptions, TryLockError};
use std::path::Path;

use anyhow::{bail, Context, Result};

/// The held lock; dropping it releases the results directory.
#[derive(Debug)]
pub struct ResultsLock {
    _file: File,
}

impl ResultsLock {
    /// Takes the lock of `results` (created if absent): at once when it is free, else after
    /// the other writer finishes (`wait`), else an error naming the directory.
    pub fn acquire(results: &Path, wait: bool) -> Result<ResultsLock> {
        std::fs::create_dir_all(results).with_context(|| {
            format!("{}: cannot create the results directory", results.display())
        })?;
        let path = results.join(".lock");
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .with_context(|| format!("{}: cannot open", path.display()))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) if wait => {
                eprintln!(
                    "waiting: another hopbench process is writing {} (--no-wait fails instead)",
                    results.display()
                );
                file.lock()
                    .with_context(|| format!("{}: cannot lock", path.display()))?;
            }
            Err(TryLockError::WouldBlock) => bail!(
                "{}: another hopbench process is writing this results directory (--no-wait)",
                results.display()
            ),
            Err(TryLockError::Error(e)) => {
                return Err(e).with_context(|| format!("{}: cannot lock", path.display()))
            }
        }
        Ok(ResultsLock { _file: file })
    }
}
