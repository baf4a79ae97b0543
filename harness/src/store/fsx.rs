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
