//! One writer per results directory: an advisory lock on `<results>/.lock`, held for the whole
//! of a command that writes (run-matrix, prepare, bench), released when the process ends, however
//! it ends (the operating system drops the lock with the file descriptor, so a killed run leaves
//! no stale lock). A second writer waits, saying so, or fails at once with `--no-wait`. Readers
//! (`compare`, `compare-legs`, `breakdown`, `plot`) take no lock: every file is written to a
//! temporary name and renamed into place, so a reader sees a whole old file or a whole new one.
//!
//! Holding the lock also proves that every temporary file a writer leaves (`.<name>.tmp-<pid>`,
//! beside its target) belongs to a process that died before its rename: the new writer removes
//! them, and says so.

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
        sweep_leftovers(results);
        Ok(ResultsLock { _file: file })
    }
}

/// The directories only writers write (`plot` writes `plots/` without the lock, so its
/// temporaries are not swept).
const WRITER_DIRS: [&str; 5] = ["exports", "embeddings", "cells", "runs", "curves"];

/// Removes the temporary files and directories of dead writers under [`WRITER_DIRS`].
fn sweep_leftovers(results: &Path) {
    fn walk(dir: &Path, found: &mut Vec<std::path::PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let path = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') && name.contains(".tmp-") {
                found.push(path);
            } else if e.file_type().is_ok_and(|t| t.is_dir()) {
                walk(&path, found);
            }
        }
    }
    let mut found = Vec::new();
    for d in WRITER_DIRS {
        walk(&results.join(d), &mut found);
    }
    for path in found {
        let removed = if path.is_dir() {
            std::fs::remove_dir_all(&path)
        } else {
            std::fs::remove_file(&path)
        };
        match removed {
            Ok(()) => eprintln!(
                "removed {}: left by a run that did not finish",
                path.display()
            ),
            Err(e) => eprintln!("warning: {}: cannot remove ({e})", path.display()),
        }
    }
}
