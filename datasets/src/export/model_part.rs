//! Another model's vectors of an export's texts: one part per model id, beside the export's own.
//!
//! An export is prepared with the campaign's model, whose vectors are columns of its parquet
//! files. A leg that names another model retrieves over that model's vectors of the same chunks
//! and queries, so that two embedders are two legs of one matrix, scored on one export and
//! paired query by query. Those vectors are this part:
//!
//! ```text
//! results/exports/<dataset>/models/<key>/      key: 16 hex digits of blake3(model id)
//!   passages.f32     chunks x dim      of each chunk's full text (what the export embeds)
//!   content.f32      chunks x dim      of its body alone, where some chunk has a header
//!   queries.f32      queries x dim     of each query's text
//!   subqueries.f32   sub-questions x dim, in query then hop order, where a query has a
//!                    decomposition
//!   manifest.json    the export's input key, the model id, the dimension, each file's blake3
//! ```
//!
//! The files are little-endian `f32`, row-major, with nothing else in them, so their sizes are
//! their shapes. The texts are exactly those the export's own build embeds, each in the role it
//! embeds it in (passages as passages, queries and sub-questions as queries), so a vector of this
//! part is what preparing the export with this model would have written. The part is built the
//! first time a leg asks for the model ([`model_part`]), through the caller's embedder (which
//! caches by model id and text), and written beside its place and renamed into it, so a part on
//! disk is whole. It is of one export: its manifest names the export's input key, and a part of
//! another export, or one whose files do not hash as listed, is rebuilt, never read. An export
//! that is prepared again is a new directory, without the old parts.
//!
//! The similarity graph, the knowledge graph and the BM25 index are the export's: a leg over
//! another model's vectors reads them as every leg does.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::build::subquery_texts;
use super::identity::hash_file;
use super::{EmbedFn, Export};
use crate::error::{Error, Result};
use crate::model::Role;

/// Version of the part's layout: a part of another layout is rebuilt.
pub const MODEL_PART_VERSION: u32 = 1;

/// The directory under an export that holds its other models' vectors.
pub const MODELS_DIR: &str = "models";

/// A vector set of the part: its file and the role its texts are embedded in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartSet {
    /// Each chunk's full text.
    Passages,
    /// Each chunk's body alone (only where some chunk has a header).
    Content,
    /// Each query's text.
    Queries,
    /// Each sub-question of each decomposition, in query then hop order.
    Subqueries,
}

impl PartSet {
    /// The set's file in the part.
    pub fn file(self) -> &'static str {
        match self {
            PartSet::Passages => "passages.f32",
            PartSet::Content => "content.f32",
            PartSet::Queries => "queries.f32",
            PartSet::Subqueries => "subqueries.f32",
        }
    }

    fn role(self) -> Role {
        match self {
            PartSet::Passages | PartSet::Content => Role::Passage,
            PartSet::Queries | PartSet::Subqueries => Role::Query,
        }
    }

    fn label(self) -> &'static str {
        match self {
            PartSet::Passages => "passages",
            PartSet::Content => "passages (content only)",
            PartSet::Queries => "queries",
            PartSet::Subqueries => "sub-queries",
        }
    }
}

/// What a part's `manifest.json` records.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelPartManifest {
    /// [`MODEL_PART_VERSION`] of the build that wrote it.
    pub version: u32,
    /// The input key of the export whose texts the vectors are of.
    pub export_key: String,
    /// The model's id.
    pub model_id: String,
    /// Vector dimension.
    pub dim: usize,
    /// Rows of each file, by file name.
    pub rows: BTreeMap<String, usize>,
    /// blake3 of each file, by file name.
    pub files: BTreeMap<String, String>,
}

/// A model's vectors of an export's texts, on disk and checked: its files are read on demand
/// ([`ModelPart::read`]), each checked against its hash again first.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelPart {
    /// The part's directory.
    pub dir: PathBuf,
    /// Its manifest.
    pub manifest: ModelPartManifest,
}

impl ModelPart {
    /// The model's id.
    pub fn model_id(&self) -> &str {
        &self.manifest.model_id
    }

    /// Vector dimension.
    pub fn dim(&self) -> usize {
        self.manifest.dim
    }

    /// Whether the part has vector set `set` (content and sub-questions only where the
    /// export has texts for them).
    pub fn has(&self, set: PartSet) -> bool {
        self.manifest.files.contains_key(set.file())
    }

    /// The path of set `set`'s file.
    pub fn path(&self, set: PartSet) -> PathBuf {
        self.dir.join(set.file())
    }

    /// Set `set`'s vectors, row-major, `dim` wide: the file checked against its hash and its
    /// size against its rows first. An error where the part has no such set.
    pub fn read(&self, set: PartSet) -> Result<Vec<f32>> {
        let path = self.path(set);
        let (Some(hash), Some(&rows)) = (
            self.manifest.files.get(set.file()),
            self.manifest.rows.get(set.file()),
        ) else {
            return Err(Error::field(
                self.dir.join("manifest.json"),
                "manifest",
                "files",
                format!("does not list {}", set.file()),
            ));
        };
        let bytes = fs::read(&path).map_err(|e| Error::io(&path, e))?;
        if blake3::hash(&bytes).to_hex().as_str() != hash {
            return Err(Error::field(
                &path,
                "file",
                "blake3",
                "does not match the part's manifest: the file changed since it was written",
            ));
        }
        if bytes.len() != rows * self.manifest.dim * 4 {
            return Err(Error::field(
                &path,
                "file",
                "size",
                format!(
                    "is {} bytes, {rows} rows of {} floats are {}",
                    bytes.len(),
                    self.manifest.dim,
                    rows * self.manifest.dim * 4
                ),
            ));
        }
        Ok(bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect())
    }
}

/// Where the part of model `model_id` lies under the export in `export_dir`.
pub fn model_part_dir(export_dir: &Path, model_id: &str) -> PathBuf {
    let key = blake3::hash(model_id.as_bytes()).to_hex();
    export_dir.join(MODELS_DIR).join(&key.as_str()[..16])
}

/// What [`model_part`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartBuild {
    /// The part on disk was whole, of this export and model: reused.
    Reused,
    /// Built now (there was none).
    Built,
    /// Built now in place of one that was damaged or of another export.
    Replaced,
}

/// The part of `embed`'s model for `export` (an export loaded with its own vectors): the one on
/// disk when it is of this export and model and every file hashes as listed, else built now
/// with `embed` over the export's texts and written in place of whatever was there.
pub fn model_part(export: &Export, embed: &mut EmbedFn<'_>) -> Result<(ModelPart, PartBuild)> {
    let dir = model_part_dir(&export.dir, &embed.model_id);
    let existed = dir.exists();
    if let Some(part) = open_if_current(&dir, export, &embed.model_id, embed.dim) {
        return Ok((part, PartBuild::Reused));
    }
    let part = build(export, embed, &dir)?;
    Ok((
        part,
        if existed {
            PartBuild::Replaced
        } else {
            PartBuild::Built
        },
    ))
}

/// The part in `dir` when its manifest reads, is of this layout, export, model and dimension,
/// and every file it lists hashes as listed and has its rows' size; `None` otherwise.
fn open_if_current(dir: &Path, export: &Export, model_id: &str, dim: usize) -> Option<ModelPart> {
    let text = fs::read_to_string(dir.join("manifest.json")).ok()?;
    let manifest: ModelPartManifest = serde_json::from_str(&text).ok()?;
    let current = manifest.version == MODEL_PART_VERSION
        && manifest.export_key == export.manifest.input_key
        && manifest.model_id == model_id
        && manifest.dim == dim
        && manifest.files.keys().eq(manifest.rows.keys())
        && manifest.files.contains_key(PartSet::Passages.file())
        && manifest.files.contains_key(PartSet::Queries.file());
    if !current {
        return None;
    }
    for (name, hash) in &manifest.files {
        let path = dir.join(name);
        let size_ok = fs::symlink_metadata(&path)
            .is_ok_and(|m| m.is_file() && m.len() == (manifest.rows[name] * dim * 4) as u64);
        if !size_ok || hash_file(&path).ok()? != *hash {
            return None;
        }
    }
    Some(ModelPart {
        dir: dir.to_path_buf(),
        manifest,
    })
}

/// The texts of each set the part has, in file order: the export's, as its build embeds them.
fn texts_of(export: &Export) -> Result<Vec<(PartSet, Vec<String>)>> {
    let chunks = export.texts()?;
    let mut sets = vec![(
        PartSet::Passages,
        chunks.iter().map(|t| t.full_text()).collect::<Vec<_>>(),
    )];
    if chunks.iter().any(|t| t.header.is_some()) {
        sets.push((
            PartSet::Content,
            chunks.iter().map(|t| t.text.clone()).collect(),
        ));
    }
    sets.push((
        PartSet::Queries,
        export.queries.iter().map(|q| q.text.clone()).collect(),
    ));
    let subs: Vec<String> = (export.queries.iter())
        .filter_map(|q| q.decomposition.as_deref())
        .flat_map(subquery_texts)
        .collect();
    if !subs.is_empty() {
        sets.push((PartSet::Subqueries, subs));
    }
    Ok(sets)
}

/// Embeds the export's texts with `embed` and writes the part into `dir`: every file into a
/// directory beside it, which then replaces `dir` whole.
fn build(export: &Export, embed: &mut EmbedFn<'_>, dir: &Path) -> Result<ModelPart> {
    let parent = dir.parent().expect("a part lies under the export");
    fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
    let name = dir
        .file_name()
        .map_or_else(Default::default, |n| n.to_string_lossy());
    let tmp = TempDir(parent.join(format!(".{name}.tmp-{}", std::process::id())));
    let _ = fs::remove_dir_all(&tmp.0);
    fs::create_dir(&tmp.0).map_err(|e| Error::io(&tmp.0, e))?;
    let mut manifest = ModelPartManifest {
        version: MODEL_PART_VERSION,
        export_key: export.manifest.input_key.clone(),
        model_id: embed.model_id.clone(),
        dim: embed.dim,
        rows: BTreeMap::new(),
        files: BTreeMap::new(),
    };
    for (set, texts) in texts_of(export)? {
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let vectors = (embed.embed)(&refs, set.role(), set.label())?;
        let path = tmp.0.join(set.file());
        let hash = write_rows(&path, &vectors, embed.dim, set)?;
        manifest.rows.insert(set.file().to_string(), vectors.len());
        manifest.files.insert(set.file().to_string(), hash);
    }
    let text = serde_json::to_string_pretty(&manifest).expect("a part manifest serialises");
    let mpath = tmp.0.join("manifest.json");
    fs::write(&mpath, text).map_err(|e| Error::io(&mpath, e))?;
    // whatever is in the way (a damaged part, a file under the part's name) goes first
    match fs::symlink_metadata(dir) {
        Ok(m) if m.is_dir() => fs::remove_dir_all(dir).map_err(|e| Error::io(dir, e))?,
        Ok(_) => fs::remove_file(dir).map_err(|e| Error::io(dir, e))?,
        Err(_) => {}
    }
    fs::rename(&tmp.0, dir).map_err(|e| Error::io(dir, e))?;
    std::mem::forget(tmp);
    Ok(ModelPart {
        dir: dir.to_path_buf(),
        manifest,
    })
}

/// Writes `vectors` (each `dim` floats) to `path` as little-endian rows; their blake3.
fn write_rows(path: &Path, vectors: &[Vec<f32>], dim: usize, set: PartSet) -> Result<String> {
    let file = fs::File::create(path).map_err(|e| Error::io(path, e))?;
    let mut out = std::io::BufWriter::with_capacity(1 << 20, &file);
    let mut hasher = blake3::Hasher::new();
    let mut bytes = Vec::with_capacity(dim * 4);
    for (row, v) in vectors.iter().enumerate() {
        if v.len() != dim {
            return Err(Error::Dimension {
                path: path.to_path_buf(),
                record: format!("{} row {row}", set.label()),
                field: "vector".into(),
                expected: dim,
                found: v.len(),
            });
        }
        bytes.clear();
        bytes.extend(v.iter().flat_map(|f| f.to_le_bytes()));
        hasher.update(&bytes);
        out.write_all(&bytes).map_err(|e| Error::io(path, e))?;
    }
    out.flush().map_err(|e| Error::io(path, e))?;
    drop(out);
    file.sync_all().map_err(|e| Error::io(path, e))?;
    Ok(hasher.finalize().to_hex().to_string())
}

/// A directory being written, removed unless it is renamed into place.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}
