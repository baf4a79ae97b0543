//! What the format readers' tests share: raw files written into a temp dir.

use std::path::PathBuf;

/// Writes `text` to `dir/name` and returns the path.
pub(crate) fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> PathBuf {
    let p = dir.path().join(name);
    std::fs::write(&p, text).unwrap();
    p
}
