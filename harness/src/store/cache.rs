//! Stable hashing for cell keys. A key is blake3 over a canonical JSON rendering of everything a
//! cell's numbers depend on (serde_json with `BTreeMap`s and struct field order is canonical for
//! our types). Never `DefaultHasher`: its output may change between Rust releases.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde::Serialize;

/// blake3 hex of the canonical JSON of `value`.
pub fn key_of<T: Serialize>(value: &T) -> String {
    let text = serde_json::to_string(value).expect("key inputs serialise");
    blake3::hash(text.as_bytes()).to_hex().to_string()
}

/// The file holding the running code, when it is not the executable.
static CODE_FILE: OnceLock<PathBuf> = OnceLock::new();

/// Names the file that holds the running code when that is not the executable: the Python
/// package's compiled module runs inside the Python interpreter, whose executable is `python`,
/// and a new build of the module must still recompute every cell. Call it before the first
/// [`code_version`]; a later call changes nothing.
pub fn set_code_file(path: PathBuf) {
    let _ = CODE_FILE.set(path);
}

/// The code version that every cell key includes: the package version plus the blake3 of the
/// running executable (or of [`set_code_file`]'s file). Any rebuild that changes the binary recomputes every cell; that
/// over-invalidates (a change to plotting code recomputes metrics) but can never serve numbers
/// computed by different code, which is the failure a benchmark cannot afford.
pub fn code_version() -> &'static str {
    static VERSION: OnceLock<String> = OnceLock::new();
    VERSION.get_or_init(|| {
        let exe = CODE_FILE
            .get()
            .cloned()
            .or_else(|| std::env::current_exe().ok());
        // streamed: the executable (tens of MB) is never held whole
        let hash = exe
            .as_deref()
            .and_then(|p: &Path| {
                let mut h = blake3::Hasher::new();
                h.update_reader(std::fs::File::open(p).ok()?).ok()?;
                Some(h.finalize().to_hex()[..16].to_string())
            })
            .unwrap_or_else(|| "unknown".into());
        format!("{}+{}", env!("CARGO_PKG_VERSION"), hash)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn keys_are_stable_and_sensitive() {
        let mut a = BTreeMap::new();
        a.insert("pool_k", 100);
        let k1 = key_of(&a);
        assert_eq!(k1, key_of(&a));
        a.insert("pool_k", 101);
        assert_ne!(k1, key_of(&a));
        assert_eq!(k1.len(), 64);
    }
}
