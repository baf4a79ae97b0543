//! Adding optional parts ([`Part`]) to an export that lacks them, without rebuilding the rest:
//! each part is built from the export's own verified files (the similarity graph from its
//! vectors), written into a temporary directory, moved into the export, and only then listed
//! in the manifest, which is replaced whole. A crash before that leaves files the manifest
//! does not list, which nothing reads and the next extension overwrites. A part built here is
//! the one a complete prepare builds: the same function over the same vectors (parquet keeps
//! every f32 exactly).

use std::fs;
use std::path::Path;

use super::identity::{hash_file, verify};
use super::{keep_shard, Manifest, Part, Parts, PrepareConfig};
use crate::error::{Error, Result};
use crate::parquet_io as pq;
use crate::simgraph::SimGraph;

/// Adds the parts of `missing` to the export in `dir` (whose manifest, `manifest`, was
/// verified); returns the manifest written.
pub(super) fn extend(
    dir: &Path,
    mut manifest: Manifest,
    missing: Parts,
    config: &PrepareConfig,
    scratch: &Path,
) -> Result<Manifest> {
    let mut shard = None;
    for part in missing.iter() {
        match part {
            Part::SimGraph => {
                // the chunk ids and vectors alone, from the corpus file checked again now (the
                // rest of the export is not decoded)
                verify(dir, &manifest, "corpus.parquet")?;
                let corpus = dir.join("corpus.parquet");
                let ids = pq::Table::read_columns(&corpus, &["chunk_id"])?
                    .columns()
                    .strings("chunk_id")?;
                let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
                let dim = manifest.dim;
                let vectors = pq::read_vectors(&corpus, "embedding", dim, ids.len())?;
                let built = crate::stages::timed("simgraph", || {
                    SimGraph::build_with(&vectors, dim, &config.simgraph, &ids, scratch)
                })?;
                move_in(dir, &mut manifest, part, |tmp| built.graph.write(tmp))?;
                manifest.stats.simgraph_edges = built.graph.num_edges();
                manifest.stats.simgraph_communities = built.graph.num_communities();
                manifest.stats.simgraph_hnsw = built.hnsw;
                shard = built.shard;
            }
        }
    }
    debug_assert!(manifest.parts().is_some(), "whole parts only");
    let path = dir.join("manifest.json");
    let tmp = dir.join(format!(".manifest.json.tmp-{}", std::process::id()));
    let text = serde_json::to_string_pretty(&manifest).expect("manifest");
    fs::write(&tmp, text)
        .and_then(|()| fs::rename(&tmp, &path))
        .map_err(|e| {
            let _ = fs::remove_file(&tmp);
            Error::io(&path, e)
        })?;
    if let Some(shard) = shard {
        keep_shard(shard, dir, &manifest, config);
    }
    Ok(manifest)
}

/// Writes `part`'s files with `write` into a temporary directory beside the export, moves each
/// into the export and records its hash in `manifest` (which is written by the caller).
fn move_in(
    dir: &Path,
    manifest: &mut Manifest,
    part: Part,
    write: impl FnOnce(&Path) -> Result<()>,
) -> Result<()> {
    let tmp = dir.join(format!(".extend.tmp-{}", std::process::id()));
    let _ = fs::remove_dir_all(&tmp);
    fs::create_dir_all(&tmp).map_err(|e| Error::io(&tmp, e))?;
    let result = (|| {
        write(&tmp)?;
        for name in part.files() {
            let from = tmp.join(name);
            let hash = hash_file(&from)?;
            let to = dir.join(name);
            fs::rename(&from, &to).map_err(|e| Error::io(&to, e))?;
            manifest.files.insert(name.to_string(), hash);
        }
        Ok(())
    })();
    let _ = fs::remove_dir_all(&tmp);
    result
}
