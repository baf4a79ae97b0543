//! Atomic file writes: write a temp file beside the target, then rename it into place, so a
//! crash or an error never leaves a half-written result that a later run would trust.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// A temp path beside `path` (same directory, so the rename is atomic). The extension is kept
/// (`.x.tmp-PID.png`) for writers that infer the format from it.
pub fn temp_path(path: &Path) -> PathBuf {
    let stem = path
        .file_stem()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    let ext = path
        .extension()
        .map(|e| format!(".{}", e.to_string_lossy()))
        .unwrap_or_default();
    path.with_file_name(format!(".{stem}.tmp-{}{ext}", std::process::id()))
}

/// Runs `write` on a temp path beside `path`, then renames the result into place; parent
/// directories are created first, and the temp file is removed if anything fails. Every file
/// hopbench writes goes through here.
pub fn write_with(path: &Path, write: impl FnOnce(&Path) -> Result<()>) -> Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("{}: cannot create directory", dir.display()))?;
    }
    let tmp = temp_path(path);
    let res = write(&tmp).and_then(|_| {
        std::fs::rename(&tmp, path)
            .with_context(|| format!("{}: cannot rename into place", path.display()))
    });
    if res.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    res
}

/// Writes `bytes` to `path` atomically, creating parent directories.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    write_with(path, |tmp| {
        std::fs::write(tmp, bytes).with_context(|| format!("{}: cannot write", tmp.display()))
    })
}

/// Writes a parquet file atomically (temp file beside it, then rename).
pub fn write_parquet_atomic(
    path: &Path,
    columns: Vec<(String, arrow_array::ArrayRef)>,
) -> Result<()> {
    write_with(path, |tmp| {
        let columns = columns
            .iter()
            .map(|(n, a)| (n.as_str(), a.clone()))
            .collect();
        Ok(hopbench_datasets::parquet_io::write(tmp, columns)?)
    })
}

/// Removes directory `dir` by first renaming it to a temp name beside it (which a later writer
/// holding the results lock sweeps if this process dies midway), so no reader ever sees a
/// half-deleted directory under the real name.
pub fn remove_dir_atomically(dir: &Path) -> Result<()> {
    let tmp = temp_path(dir);
    std::fs::rename(dir, &tmp).with_context(|| format!("{}: cannot move aside", dir.display()))?;
    std::fs::remove_dir_all(&tmp).with_context(|| format!("{}: cannot remove", tmp.display()))
}

/// What a reader expects at a path: a directory (an export) or a regular file (a cache file).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A directory.
    Dir,
    /// A regular file.
    File,
}

/// What is in the way at a path, in words (`a file`, `a directory`, ...).
fn what_is(path: &Path) -> &'static str {
    match (std::fs::metadata(path), std::fs::symlink_metadata(path)) {
        (Ok(m), _) if m.is_dir() => "a directory",
        (Ok(m), _) if m.is_file() => "a file",
        (Ok(_), _) => "a special file (FIFO, socket or device)",
        (Err(_), Ok(_)) => "a link to nothing",
        (Err(_), Err(_)) => "nothing",
    }
}

/// Moves what is at `path` out of the way when it is not a `kind` (a plain file where an export
/// directory goes, a directory where a cache file goes), as a damaged export or cache is
/// replaced: the caller then rebuilds what goes there. What was in the way is renamed beside it
/// to `<name>.set-aside` (`<name>.set-aside-2`, ... when that is taken), kept for a look rather
/// than deleted, since hopbench did not write it. Returns what it was and where it went; `None`
/// when nothing is in the way (nothing there, or a `kind`, a link to one included).
pub fn set_aside_unless(
    path: &Path,
    kind: Kind,
) -> std::io::Result<Option<(&'static str, PathBuf)>> {
    let fits = |p: &Path| match (kind, std::fs::metadata(p)) {
        (Kind::Dir, Ok(m)) => m.is_dir(),
        (Kind::File, Ok(m)) => m.is_file(),
        (_, Err(_)) => false,
    };
    let there = |p: &Path| std::fs::symlink_metadata(p).is_ok();
    if !there(path) || fits(path) {
        return Ok(None);
    }
    let what = what_is(path);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let aside = (1..)
        .map(|i| match i {
            1 => path.with_file_name(format!("{name}.set-aside")),
            i => path.with_file_name(format!("{name}.set-aside-{i}")),
        })
        .find(|p| !there(p))
        .expect("some numbered name is free");
    match std::fs::rename(path, &aside) {
        Ok(()) => Ok(Some((what, aside))),
        // another process (a part of a sharded run) moved it first: nothing is in the way now
        Err(_) if !there(path) || fits(path) => Ok(None),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_in_the_way_is_set_aside_under_a_free_name_and_a_fit_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let export = dir.path().join("synthetic");
        assert_eq!(set_aside_unless(&export, Kind::Dir).unwrap(), None);
        std::fs::create_dir(&export).unwrap();
        assert_eq!(set_aside_unless(&export, Kind::Dir).unwrap(), None);
        std::fs::remove_dir(&export).unwrap();
        for n in ["", "-2"] {
            std::fs::write(&export, "in the way").unwrap();
            let (what, aside) = set_aside_unless(&export, Kind::Dir).unwrap().unwrap();
            assert_eq!(what, "a file");
            assert_eq!(aside, dir.path().join(format!("synthetic.set-aside{n}")));
            assert!(!export.exists() && aside.is_file());
        }
        let cache = dir.path().join("m.vecs");
        std::fs::create_dir(&cache).unwrap();
        let (what, _) = set_aside_unless(&cache, Kind::File).unwrap().unwrap();
        assert_eq!(what, "a directory");
        std::fs::write(&cache, "x").unwrap();
        assert_eq!(set_aside_unless(&cache, Kind::File).unwrap(), None);
    }
}
