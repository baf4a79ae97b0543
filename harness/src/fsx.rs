//! Atomic file writes: write a temp file beside the target, then rename it into place, so a
//! crash or an error never leaves a half-written result that a later run would trust.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// A temp path beside `path` (same directory, so the rename is atomic).
pub fn temp_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.tmp-{}", std::process::id()))
}

/// Writes `bytes` to `path` atomically, creating parent directories.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("{}: cannot create directory", dir.display()))?;
    }
    let tmp = temp_path(path);
    let res = std::fs::write(&tmp, bytes)
        .with_context(|| format!("{}: cannot write", tmp.display()))
        .and_then(|_| {
            std::fs::rename(&tmp, path)
                .with_context(|| format!("{}: cannot rename into place", path.display()))
        });
    if res.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    res
}
