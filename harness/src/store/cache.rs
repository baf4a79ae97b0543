//! Stable hashing for cell keys. A key is blake3 over a canonical JSON rendering of everything a
//! cell's numbers depend on (serde_json with `BTreeMap`s and struct field order is canonical for
//! our types). Never `DefaultHasher`: its output may change between Rust releases.

use std::path::Path;
use std::sync::OnceLock;

use serde::Serialize;

/// blake3 hex of the canonical JSON of `value`.
pub fn key_of<T: Serialize>(value: &T) -> String {
    let text = serde_json::to_string(value).expect("key inputs serialise");
    blake3::hash(text.as_bytes()).to_hex().to_string()
}

/// The code version that every cell key includes: the package version plus the blake3 of the
/// running executable. Any rebuild that changes the binary recomputes every cell; that
/// over-invalidates (a change to plotting code recomputes metrics) but can never serve numbers
/// computed by different code, which is the failure a benchmark cannot afford.
pub fn code_version() -> &'static str {
    static VERSION: OnceLock<String> = OnceLock::new();
    VERSION.get_or_init(|| {
        let exe = std::env::current_exe().ok();
        let hash = exe
            .as_deref()
            .and_then(|p: &Path| std::fs::read(p).ok())
            .map(|bytes| blake3::hash(&bytes).to_hex()[..16].to_string())
            .unwrap_or_else(|| "unknown".into());
        format!("{}+{}", env!("CARGO_PKG_VERSION"), hash)
    })
}

/// blake3 of every file that an external engine's `command` names in a leg's resolved
/// configuration (`{engine: external, command: [...]}` at any depth), by the argument as written.
/// The command line alone would let an edited backend script be served from the cache; with its
/// bytes in the key, editing it recomputes the cell. Arguments that are not files (flags, a
/// program found on `PATH` such as `python3`) are not hashed, so an upgraded interpreter or
/// package is not seen: `--force` after one. Relative paths resolve from the working directory,
/// as the process's do. A file that cannot be read is recorded as such (the process will fail).
pub fn engine_files(config: &serde_json::Value) -> std::collections::BTreeMap<String, String> {
    use serde_json::Value;
    fn walk(v: &Value, out: &mut std::collections::BTreeMap<String, String>) {
        match v {
            Value::Object(m) => {
                if m.get("engine").and_then(Value::as_str) == Some("external") {
                    for arg in m
                        .get("command")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                    {
                        let Some(arg) = arg.as_str() else { continue };
                        let path = Path::new(arg);
                        if !path.is_file() {
                            continue;
                        }
                        let hash = match std::fs::read(path) {
                            Ok(bytes) => blake3::hash(&bytes).to_hex().to_string(),
                            Err(e) => format!("unreadable: {e}"),
                        };
                        out.insert(arg.to_string(), hash);
                    }
                }
                m.values().for_each(|x| walk(x, out));
            }
            Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    let mut out = std::collections::BTreeMap::new();
    walk(config, &mut out);
    out
}

/// The indexes the embedded engines of a leg config (`engine: qdrant`, at any depth) search over
/// the export in `export_dir` (with `manifest`), each by its cache directory's name: the probe digest its manifest records (what
/// identifies one random HNSW graph among the builds of the same vectors), or `not built`.
/// With the digest in the cell key, a rebuilt shard recomputes the cells that used the old one.
/// (Read from the manifest, not verified: the shard is verified when a leg opens it.)
#[cfg(feature = "qdrant")]
pub fn engine_shards(
    config: &serde_json::Value,
    export_dir: &std::path::Path,
    manifest: &hopbench_datasets::export::Manifest,
) -> std::collections::BTreeMap<String, String> {
    use hopbench_datasets::hnsw::{ShardManifest, MANIFEST};
    use hopbench_legs::engine::{EngineKind, QdrantSpec, Vectors};
    use serde_json::Value;
    let vectors = match config.get("kind").and_then(Value::as_str) {
        Some("dense_content_only") => Vectors::ContentOnly,
        _ => Vectors::Full,
    };
    fn walk(v: &Value, found: &mut Vec<QdrantSpec>) {
        match v {
            Value::Object(m) => {
                if m.get("engine").and_then(Value::as_str) == Some("qdrant") {
                    let mut rest = m.clone();
                    rest.remove("engine");
                    if let Ok(spec) = QdrantSpec::read(&rest) {
                        found.push(spec);
                    }
                }
                m.values().for_each(|x| walk(x, found));
            }
            Value::Array(a) => a.iter().for_each(|x| walk(x, found)),
            _ => {}
        }
    }
    let mut found = Vec::new();
    walk(config, &mut found);
    found
        .into_iter()
        .map(|spec| {
            let dir =
                hopbench_legs::engine::qdrant::shard_dir(export_dir, manifest, vectors, spec.build);
            let probe = std::fs::read(dir.join(MANIFEST))
                .ok()
                .and_then(|b| serde_json::from_slice::<ShardManifest>(&b).ok())
                .map_or_else(|| "not built".to_string(), |m| m.probe);
            let name = dir
                .file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
            (name, probe)
        })
        .collect()
}

/// Without the `qdrant` feature no leg can name an embedded engine.
#[cfg(not(feature = "qdrant"))]
pub fn engine_shards(
    _config: &serde_json::Value,
    _export_dir: &std::path::Path,
    _manifest: &hopbench_datasets::export::Manifest,
) -> std::collections::BTreeMap<String, String> {
    std::collections::BTreeMap::new()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn the_files_an_external_command_names_are_hashed_at_any_depth() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("b.py");
        std::fs::write(&script, "print(1)").unwrap();
        let s = script.display().to_string();
        let config = serde_json::json!({
            "kind": "graph_rescue_packed",
            "rescue": {"lexical": {"engine": "external", "command": ["python3", s, "--k", "3"]}},
            "dense": {"engine": "exact"},
        });
        let files = engine_files(&config);
        assert_eq!(files.keys().collect::<Vec<_>>(), vec![&s]);
        assert_eq!(files[&s], blake3::hash(b"print(1)").to_hex().to_string());
        std::fs::write(&script, "print(2)").unwrap();
        assert_ne!(
            engine_files(&config)[&s],
            files[&s],
            "an edit changes the key"
        );
        // no external engine, nothing hashed (and nothing added to the key)
        assert!(engine_files(&serde_json::json!({"kind": "bm25", "pool_k": 100})).is_empty());
    }

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
