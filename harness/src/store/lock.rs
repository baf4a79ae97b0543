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
//!
//! The parts of a sharded run (`--shard I/N`, the tasks of a Slurm array) write disjoint files,
//! so they hold the lock *shared*: they run side by side, and only keep out a whole-directory
//! writer. What they do share is guarded by narrower exclusive locks: an export is prepared
//! under `exports/.<name>.lock` ([`PathLock`]), and each part embeds into its own part file of
//! the embedding cache. A shared holder cannot prove the others dead, so it sweeps nothing.

use std::fs::{File, OpenOptions, TryLockError};
use std::path::Path;

use anyhow::{Context, Result};

/// The held lock; dropping it releases the results directory.
#[derive(Debug)]
pub struct ResultsLock {
    _file: File,
}

/// How a writer holds the results directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Alone (every unsharded writer).
    Exclusive,
    /// Beside other parts of a sharded run.
    Shared,
}

impl ResultsLock {
    /// Takes the lock of `results` (created if absent) exclusively: see [`ResultsLock::take`].
    pub fn acquire(results: &Path, wait: bool) -> Result<ResultsLock> {
        ResultsLock::take(results, wait, Mode::Exclusive)
    }

    /// Takes the lock of `results` (created if absent) in `mode`: at once when it is free,
    /// else after the other writer finishes (`wait`), else an error naming the directory.
    pub fn take(results: &Path, wait: bool, mode: Mode) -> Result<ResultsLock> {
        std::fs::create_dir_all(results).with_context(|| {
            format!("{}: cannot create the results directory", results.display())
        })?;
        let what = format!("writing {}", results.display());
        let file = lock_file(&results.join(".lock"), mode, wait, &what).map_err(|e| match e {
            Busy::No => anyhow::anyhow!(
                "{}: another hopbench process is writing this results directory (--no-wait)",
                results.display()
            ),
            Busy::Error(e) => e,
        })?;
        if mode == Mode::Exclusive {
            sweep_leftovers(results);
        }
        Ok(ResultsLock { _file: file })
    }
}

/// An exclusive lock on one lock file (`exports/.<name>.lock`), held while one process does
/// what the others must wait for (preparing an export they all need); released on drop.
#[derive(Debug)]
pub struct PathLock {
    _file: File,
}

impl PathLock {
    /// Takes the lock at `path` (created, with its directory, if absent), waiting for the
    /// holder and saying why (`what`: "preparing musique") when it is held.
    pub fn acquire(path: &Path, what: &str) -> Result<PathLock> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("{}: cannot create directory", dir.display()))?;
        }
        match lock_file(path, Mode::Exclusive, true, what) {
            Ok(file) => Ok(PathLock { _file: file }),
            Err(Busy::Error(e)) => Err(e),
            Err(Busy::No) => unreachable!("a waiting lock is never busy"),
        }
    }
}

/// Why [`lock_file`] returned without the lock.
enum Busy {
    /// Held by another process, and not waiting.
    No,
    /// Could not open or lock the file.
    Error(anyhow::Error),
}

/// Opens (creating) and locks `path` in `mode`; when another process holds it, waits saying
/// so (`wait`) or returns [`Busy::No`].
fn lock_file(path: &Path, mode: Mode, wait: bool, what: &str) -> Result<File, Busy> {
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .with_context(|| format!("{}: cannot open", path.display()))
        .map_err(Busy::Error)?;
    let attempt = match mode {
        Mode::Exclusive => file.try_lock(),
        Mode::Shared => file.try_lock_shared(),
    };
    match attempt {
        Ok(()) => Ok(file),
        Err(TryLockError::WouldBlock) if wait => {
            eprintln!("waiting: another hopbench process is {what} (--no-wait fails instead)");
            match mode {
                Mode::Exclusive => file.lock(),
                Mode::Shared => file.lock_shared(),
            }
            .with_context(|| format!("{}: cannot lock", path.display()))
            .map_err(Busy::Error)?;
            Ok(file)
        }
        Err(TryLockError::WouldBlock) => Err(Busy::No),
        Err(TryLockError::Error(e)) => Err(Busy::Error(
            anyhow::Error::from(e).context(format!("{}: cannot lock", path.display())),
        )),
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
