//! What an export is made from, as one hash: the manifest's `input_key` is blake3 over a JSON
//! object of the export version, dataset name, format name, the blake3 of every raw input file,
//! of the non-file identity (`Source::extra`), the prepare configuration, the indexing protocol
//! and the model. JSON
//! object keys are written sorted, so the key does not depend on declaration order. Equal keys
//! and intact files mean the existing export is the one prepare would write.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use super::{ExportStats, Manifest, PrepareConfig, Source, EXPORT_VERSION};
use crate::error::{Error, Result};

/// blake3 of a file, hex. Streamed through one 16 MiB buffer, each buffer hashed on every
/// core: a million-chunk corpus file is gigabytes, and is hashed on every open.
pub(crate) fn hash_file(path: &Path) -> Result<String> {
    use std::io::Read;
    let mut file = fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut hasher = blake3::Hasher::new();
    let mut buf = vec![0u8; 1 << 24];
    loop {
        // fill the buffer (a read may return less), so every update but the last is whole
        let mut filled = 0;
        while filled < buf.len() {
            match file.read(&mut buf[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Error::io(path, e)),
            }
        }
        if filled == 0 {
            break;
        }
        hasher.update_rayon(&buf[..filled]);
        if filled < buf.len() {
            break;
        }
    }
    Ok(hasher.finalize().to_hex().to_string())
}

fn input_key(m: &Manifest) -> String {
    let mut ident = serde_json::json!({
        "export_version": m.export_version,
        "dataset": m.dataset,
        "format": m.format,
        "inputs": m.inputs,
        "extra": m.extra,
        "config": m.config,
        "protocol": m.protocol,
        "model_id": m.model_id,
        "dim": m.dim,
    });
    // a dataset's own vectors: the declared model (already `model_id`) and which file is which
    // set (the files' hashes are among `inputs`); absent for embedded exports, whose keys are
    // what they were
    if let Some(v) = &m.vectors {
        ident["vectors"] = serde_json::json!({ "model": v.model, "files": v.files });
    }
    // sorted whatever the map type: a dependency may switch serde_json to insertion order
    // (`preserve_order`, as qdrant-edge does), and the key must not change with the build
    ident.sort_all_objects();
    blake3::hash(ident.to_string().as_bytes())
        .to_hex()
        .to_string()
}

/// Reads the manifest of `dir`, if there is one.
pub fn read_manifest(dir: &Path) -> Result<Manifest> {
    let path = dir.join("manifest.json");
    let text = fs::read_to_string(&path).map_err(|e| Error::io(&path, e))?;
    serde_json::from_str(&text).map_err(|e| Error::malformed(&path, "manifest JSON", e))
}

/// Whether `dir` holds an export with this input key whose files still hash as recorded.
pub(super) fn reusable(dir: &Path, key: &str) -> bool {
    verified_manifest(dir, key).is_some()
}

/// The manifest of the export in `dir` if it has this input key and its files still hash as
/// recorded ([`reusable`]).
pub(super) fn verified_manifest(dir: &Path, key: &str) -> Option<Manifest> {
    let m = read_manifest(dir).ok()?;
    // only the export's own names are hashed (a manifest naming `/dev/zero` is not reusable,
    // and is never read): the core files and whole optional parts
    let intact = m.input_key == key
        && m.parts().is_some()
        && m.files.keys().all(|name| verify(dir, &m, name).is_ok());
    intact.then_some(m)
}

/// Checks export file `name` against the hash `manifest` records for it: it must be a regular
/// file (not a link that leads elsewhere) whose blake3 is the manifest's.
pub(super) fn verify(dir: &Path, manifest: &Manifest, name: &str) -> Result<()> {
    let path = dir.join(name);
    let Some(hash) = manifest.files.get(name) else {
        return Err(Error::field(
            dir.join("manifest.json"),
            "manifest",
            "files",
            format!("does not list {name}: re-run prepare"),
        ));
    };
    if !fs::symlink_metadata(&path).is_ok_and(|m| m.is_file()) {
        return Err(Error::field(
            &path,
            "file",
            "type",
            "is missing or not a regular file: re-run prepare",
        ));
    }
    let actual = hash_file(&path)?;
    if &actual != hash {
        return Err(Error::field(
            &path,
            "file",
            "blake3",
            format!("is {actual}, manifest says {hash}: the export was modified; re-run prepare"),
        ));
    }
    Ok(())
}

/// The input key prepare would give this dataset (used to decide reuse before embedding).
pub fn planned_manifest(
    source: &Source,
    config: &PrepareConfig,
    model_id: &str,
    dim: usize,
) -> Result<Manifest> {
    let mut inputs = BTreeMap::new();
    let vector_files = source
        .vectors
        .as_ref()
        .map(|v| v.files())
        .unwrap_or_default();
    for f in source.files.iter().chain(&vector_files) {
        inputs.insert(f.display().to_string(), hash_file(f)?);
    }
    let vectors = source.vectors.as_ref().map(|v| super::VectorsRecord {
        model: v.model.clone(),
        files: v
            .sets()
            .into_iter()
            .map(|(set, p)| (set.key().to_string(), p.display().to_string()))
            .collect(),
        absent: Vec::new(),
    });
    let mut m = Manifest {
        export_version: EXPORT_VERSION,
        dataset: source.name.clone(),
        format: source.format.clone(),
        inputs,
        extra: blake3::hash(source.extra.as_bytes()).to_hex().to_string(),
        config: config.clone(),
        protocol: source.protocol,
        model_id: model_id.to_string(),
        dim,
        input_key: String::new(),
        files: BTreeMap::new(),
        stats: ExportStats::default(),
        vectors,
    };
    m.input_key = input_key(&m);
    Ok(m)
}
