//! An on-disk cache of embedding vectors keyed by (model id, BLAKE3 of the text).
//!
//! One file per model id in the cache directory, named after the sanitised id
//! (`all-MiniLM-L6-v2@0123abcd...` -> `all-MiniLM-L6-v2_0123abcd....vecs`). Format, all integers
//! little-endian:
//!
//! ```text
//! magic    8 bytes   b"HOPVECS\0"
//! version  u32       2
//! dim      u32       vector dimension
//! id_len   u32       length of the model id
//! id       id_len    the model id, UTF-8 (guards against two ids that sanitise alike)
//! records  n ×       [32-byte BLAKE3 of the text][dim × f32][16-byte check]
//! ```
//!
//! A record's check is the first 16 bytes of BLAKE3 over its text hash and its vector bytes, so
//! a flipped byte, or a vector that moved to another text's record, fails it. Nothing read back
//! is trusted unverified: a record that fails its check is dropped (its text is embedded again
//! when next needed), a partial record at the end (a write cut short) is dropped, and a
//! version-1 file (no checks) is ignored whole; [`EmbeddingCache::repairs`] says what was
//! dropped, and the next save rewrites the file without it. A header that does not check out
//! (damaged, another version, model or dimension) makes the whole file ignored the same way;
//! so is a repeated text hash (the first record is kept).
//!
//! New vectors are appended to a verified file (a reader sees whole records and at most one
//! partial record at the end, which it drops); a new or repaired file is written whole to a
//! temporary file and renamed into place. Embedding saves every 256 texts, so a killed run keeps
//! what it embedded. One process writes a cache at a time: the harness holds the results
//! directory's lock.

use std::collections::HashMap;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use super::{Role, TextEmbedder};
use crate::{Error, Result};

const MAGIC: &[u8; 8] = b"HOPVECS\0";
const VERSION: u32 = 2;
const HASH_LEN: usize = 32;
const CHECK_LEN: usize = 16;
/// Texts embedded between two saves of the cache.
const FLUSH_EVERY: usize = 256;

fn record_check(hash: &[u8; HASH_LEN], vector: &[u8]) -> [u8; CHECK_LEN] {
    let mut h = blake3::Hasher::new();
    h.update(hash);
    h.update(vector);
    let mut out = [0u8; CHECK_LEN];
    out.copy_from_slice(&h.finalize().as_bytes()[..CHECK_LEN]);
    out
}

/// Vectors of one model, by BLAKE3 of the text; loaded from and saved to one file.
#[derive(Debug)]
pub struct EmbeddingCache {
    path: PathBuf,
    model_id: String,
    dim: usize,
    index: HashMap<[u8; HASH_LEN], usize>,
    hashes: Vec<[u8; HASH_LEN]>,
    data: Vec<f32>,
    /// Records `..base` were read from other processes' files (read-only here).
    base: usize,
    /// Records `..persisted` are on disk (`base..persisted` in this cache's own file).
    persisted: usize,
    /// Part files to remove once the main file holds their records (see [`open_part`]).
    ///
    /// [`open_part`]: EmbeddingCache::open_part
    merged_parts: Vec<PathBuf>,
    /// What opening the file dropped (records that failed their check, a partial tail, an old
    /// format), if anything.
    repairs: Option<String>,
}

/// The file name for a model id: characters other than ASCII letters, digits, `.`, `-` and `_`
/// become `_`, then `.vecs`.
pub(crate) fn file_name_for(model_id: &str) -> String {
    let mut s: String = model_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() || s.starts_with('.') {
        s.insert(0, '_');
    }
    s.push_str(".vecs");
    s
}

fn text_hash(text: &str) -> [u8; HASH_LEN] {
    *blake3::hash(text.as_bytes()).as_bytes()
}

/// The key of `text` embedded after `prompt`: the text's own hash without a prompt (so caches
/// written before prompts were read keep every record), else a hash in a domain of its own over
/// the prompt's length, the prompt and the text (no prompted input can collide with a plain one,
/// nor two splits of one string between prompt and text).
fn input_hash(prompt: &str, text: &str) -> [u8; HASH_LEN] {
    if prompt.is_empty() {
        return text_hash(text);
    }
    let mut h = blake3::Hasher::new_derive_key("hopbench embedding cache: prompt, then text");
    h.update(&(prompt.len() as u64).to_le_bytes());
    h.update(prompt.as_bytes());
    h.update(text.as_bytes());
    *h.finalize().as_bytes()
}

impl EmbeddingCache {
    /// Opens (or starts) the cache of `model_id` in `dir`. The directory is created when the
    /// cache is first saved. A cache file of another dimension or model id, or a corrupt one, is
    /// an error naming the file.
    pub fn open(dir: &Path, model_id: &str, dim: usize) -> Result<EmbeddingCache> {
        EmbeddingCache::open_part(dir, model_id, dim, None)
    }

    /// Opens the cache of `model_id` in `dir` for a writer that saves to its own part file
    /// (`<model>.part-<label>.vecs`), or to the main file (`<model>.vecs`) when `part` is
    /// `None`. Every file of the model is read (the others read-only), so a vector any writer
    /// saved is found; since a vector is a pure function of its text, records of one text in
    /// two files are the same record and the second is skipped. Parts let several processes (the
    /// tasks of a Slurm array) embed into one cache at once without sharing a file; a main
    /// writer that finds parts writes their records into the main file at its next save and
    /// removes them, which is safe because a main writer holds the results directory alone.
    pub fn open_part(
        dir: &Path,
        model_id: &str,
        dim: usize,
        part: Option<&str>,
    ) -> Result<EmbeddingCache> {
        let main = dir.join(file_name_for(model_id));
        let stem = file_name_for(model_id)
            .trim_end_matches(".vecs")
            .to_string();
        let path = match part {
            None => main.clone(),
            Some(label) => dir.join(format!("{stem}.part-{label}.vecs")),
        };
        let mut cache = EmbeddingCache {
            path: path.clone(),
            model_id: model_id.to_string(),
            dim,
            index: HashMap::new(),
            hashes: Vec::new(),
            data: Vec::new(),
            base: 0,
            persisted: 0,
            merged_parts: Vec::new(),
            repairs: None,
        };
        if dim == 0 {
            return Err(Error::Model {
                path,
                message: "embedding cache: dimension 0".into(),
            });
        }
        let mut others: Vec<PathBuf> = match std::fs::read_dir(dir) {
            Ok(entries) => entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name().is_some_and(|n| {
                        let n = n.to_string_lossy();
                        n.starts_with(&format!("{stem}.part-")) && n.ends_with(".vecs")
                    })
                })
                .collect(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(Error::io(dir, e)),
        };
        if part.is_some() {
            others.push(main);
        }
        others.retain(|p| *p != path);
        others.sort();
        for other in &others {
            match std::fs::read(other) {
                Ok(bytes) => cache.parse(other, &bytes, false)?,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::io(other, e)),
            }
        }
        cache.base = cache.hashes.len();
        cache.persisted = cache.base;
        if part.is_none() {
            // the main file takes the parts' records in at its next save
            cache.merged_parts = others;
            cache.base = 0;
        }
        match std::fs::read(&path) {
            Ok(bytes) => cache.parse(&path.clone(), &bytes, true)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io(&path, e)),
        }
        if !cache.merged_parts.is_empty() {
            cache.persisted = 0;
        }
        Ok(cache)
    }

    /// Reads the records of one file (`own`: this cache's own file, else another writer's).
    fn parse(&mut self, file: &Path, bytes: &[u8], own: bool) -> Result<()> {
        let u32_at = |at: usize| -> Option<u32> {
            bytes
                .get(at..at + 4)
                .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        };
        // The cache is only a cache: a header that does not check out (damaged, another
        // version, another model or dimension under this file name) makes the whole file
        // ignored with a warning, and its texts embedded again; the next save rewrites it.
        let header = || -> std::result::Result<usize, String> {
            if bytes.len() < 20 || &bytes[..8] != MAGIC {
                return Err("not a hopbench embedding cache (bad magic or header)".into());
            }
            let version = u32_at(8).unwrap_or(0);
            if version == 1 {
                return Err("version 1 (records without checks)".into());
            }
            if version != VERSION {
                return Err(format!(
                    "version {version}, this build reads version {VERSION}"
                ));
            }
            let dim = u32_at(12).unwrap_or(0) as usize;
            if dim != self.dim {
                return Err(format!("dimension {dim}, expected {}", self.dim));
            }
            let id_len = u32_at(16).unwrap_or(0) as usize;
            let id = bytes
                .get(20..20usize.saturating_add(id_len))
                .ok_or_else(|| "truncated header".to_string())?;
            if id != self.model_id.as_bytes() {
                return Err(format!(
                    "holds vectors of model `{}`, expected `{}`",
                    String::from_utf8_lossy(id),
                    self.model_id
                ));
            }
            Ok(id_len)
        };
        let id_len = match header() {
            Ok(n) => n,
            Err(why) => {
                self.note_repair(format!(
                    "{}: {why}: ignored, its vectors are embedded again",
                    file.display()
                ));
                return Ok(());
            }
        };
        let dim = self.dim;
        let body = &bytes[20 + id_len..];
        let record = HASH_LEN + 4 * dim + CHECK_LEN;
        let n = body.len() / record;
        let leftover = body.len() - n * record;
        self.hashes.reserve(n);
        self.data.reserve(n * dim);
        let mut failed = 0usize;
        let start = self.hashes.len();
        for rec in body.chunks_exact(record) {
            let mut h = [0u8; HASH_LEN];
            h.copy_from_slice(&rec[..HASH_LEN]);
            let vector = &rec[HASH_LEN..HASH_LEN + 4 * dim];
            if rec[HASH_LEN + 4 * dim..] != record_check(&h, vector) {
                failed += 1;
                continue;
            }
            if let Some(&first) = self.index.get(&h) {
                // one text in two files is one record (a vector is a pure function of its
                // text); twice in one file, or with other bits, the repeat is damage
                let same = self.data[first * dim..(first + 1) * dim]
                    .iter()
                    .zip(vector.chunks_exact(4))
                    .all(|(a, b)| a.to_le_bytes() == [b[0], b[1], b[2], b[3]]);
                if !same || first >= start {
                    failed += 1;
                }
                continue;
            }
            self.index.insert(h, self.hashes.len());
            self.hashes.push(h);
            self.data.extend(
                vector
                    .chunks_exact(4)
                    .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
            );
        }
        let mut dropped = Vec::new();
        if failed > 0 {
            dropped.push(format!("{failed} of {n} records failed their check"));
        }
        if leftover > 0 {
            dropped.push(format!(
                "a partial record at the end ({leftover} bytes: truncated)"
            ));
        }
        if !dropped.is_empty() {
            self.note_repair(format!(
                "{}: dropped {}; those texts are embedded again",
                file.display(),
                dropped.join(" and ")
            ));
        }
        if own {
            // a damaged own file is rewritten at the next save; another's is left as it is
            self.persisted = if dropped.is_empty() {
                self.hashes.len()
            } else {
                self.base
            };
        }
        Ok(())
    }

    fn note_repair(&mut self, what: String) {
        self.repairs = Some(match self.repairs.take() {
            Some(before) => format!("{before}; {what}"),
            None => what,
        });
    }

    /// The cached vector of `text` (embedded without a prompt), if any.
    pub fn get(&self, text: &str) -> Option<&[f32]> {
        self.get_hash(&text_hash(text))
    }

    /// The cached vector of `text` embedded after `prompt` ("" for none), if any.
    pub fn get_as(&self, prompt: &str, text: &str) -> Option<&[f32]> {
        self.get_hash(&input_hash(prompt, text))
    }

    fn get_hash(&self, hash: &[u8; HASH_LEN]) -> Option<&[f32]> {
        self.index
            .get(hash)
            .map(|&i| &self.data[i * self.dim..(i + 1) * self.dim])
    }

    /// Whether `text` (embedded without a prompt) has a cached vector.
    pub fn contains(&self, text: &str) -> bool {
        self.index.contains_key(&text_hash(text))
    }

    /// Whether `text` embedded after `prompt` ("" for none) has a cached vector.
    pub fn contains_as(&self, prompt: &str, text: &str) -> bool {
        self.index.contains_key(&input_hash(prompt, text))
    }

    /// Adds the vector of `text` embedded without a prompt (in memory; [`save`](Self::save)
    /// writes it). A text already present keeps its first vector. A vector of the wrong
    /// dimension is an error.
    pub fn insert(&mut self, text: &str, vector: &[f32]) -> Result<()> {
        self.insert_as("", text, vector)
    }

    /// [`insert`](Self::insert) for `text` embedded after `prompt`.
    pub fn insert_as(&mut self, prompt: &str, text: &str, vector: &[f32]) -> Result<()> {
        if vector.len() != self.dim {
            return Err(Error::Dimension {
                path: self.path.clone(),
                record: format!("{:?}", truncate_for_message(text)),
                field: "vector".into(),
                expected: self.dim,
                found: vector.len(),
            });
        }
        let h = input_hash(prompt, text);
        if !self.index.contains_key(&h) {
            self.index.insert(h, self.hashes.len());
            self.hashes.push(h);
            self.data.extend_from_slice(vector);
        }
        Ok(())
    }

    /// Writes the vectors not yet on disk. When the file on disk is whole and verified, they are
    /// appended (each record checks itself, so a write cut short leaves a partial record that
    /// the next open drops, never a wrong vector); otherwise the whole file is written to a
    /// temporary file in the same directory and renamed over the old one.
    pub fn save(&mut self) -> Result<()> {
        if self.persisted == self.hashes.len()
            && self.merged_parts.is_empty()
            && (self.persisted > 0 || self.path.exists())
        {
            return Ok(());
        }
        if self.persisted > self.base && self.path.is_file() && self.merged_parts.is_empty() {
            let append = || -> std::io::Result<()> {
                let file = std::fs::OpenOptions::new().append(true).open(&self.path)?;
                let mut w = BufWriter::with_capacity(1 << 20, file);
                self.write_records(&mut w, self.persisted)?;
                let file = w.into_inner().map_err(|e| e.into_error())?;
                file.sync_all()
            };
            append().map_err(|e| Error::io(&self.path, e))?;
            self.persisted = self.hashes.len();
            return Ok(());
        }
        let dir = self.path.parent().unwrap_or_else(|| Path::new("."));
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let tmp = dir.join(format!(
            ".{}.tmp-{}",
            self.path
                .file_name()
                .map(|n| n.to_string_lossy())
                .unwrap_or_default(),
            std::process::id()
        ));
        let write = || -> std::io::Result<()> {
            let file = std::fs::File::create(&tmp)?;
            let mut w = BufWriter::with_capacity(1 << 20, file);
            w.write_all(MAGIC)?;
            w.write_all(&VERSION.to_le_bytes())?;
            w.write_all(&(self.dim as u32).to_le_bytes())?;
            w.write_all(&(self.model_id.len() as u32).to_le_bytes())?;
            w.write_all(self.model_id.as_bytes())?;
            self.write_records(&mut w, self.base)?;
            let file = w.into_inner().map_err(|e| e.into_error())?;
            file.sync_all()?;
            Ok(())
        };
        if let Err(e) = write() {
            let _ = std::fs::remove_file(&tmp);
            return Err(Error::io(&tmp, e));
        }
        if let Err(e) = std::fs::rename(&tmp, &self.path) {
            let _ = std::fs::remove_file(&tmp);
            return Err(Error::io(&self.path, e));
        }
        self.persisted = self.hashes.len();
        // the main file now holds every part's records
        for part in std::mem::take(&mut self.merged_parts) {
            std::fs::remove_file(&part).map_err(|e| Error::io(&part, e))?;
        }
        Ok(())
    }

    /// Writes records `from..` (text hash, vector, check).
    fn write_records(&self, w: &mut impl Write, from: usize) -> std::io::Result<()> {
        let mut bytes = Vec::with_capacity(4 * self.dim);
        for (i, h) in self.hashes.iter().enumerate().skip(from) {
            bytes.clear();
            for v in &self.data[i * self.dim..(i + 1) * self.dim] {
                bytes.extend_from_slice(&v.to_le_bytes());
            }
            w.write_all(h)?;
            w.write_all(&bytes)?;
            w.write_all(&record_check(h, &bytes))?;
        }
        Ok(())
    }

    /// What opening the cache dropped as untrustworthy (records that failed their check, a
    /// partial tail, a file of the old unchecked format), naming the file; `None` when the file
    /// verified whole. Callers print it as a warning.
    pub fn repairs(&self) -> Option<&str> {
        self.repairs.as_deref()
    }

    /// Number of cached vectors.
    pub fn len(&self) -> usize {
        self.hashes.len()
    }

    /// Whether the cache holds no vector.
    pub fn is_empty(&self) -> bool {
        self.hashes.is_empty()
    }

    /// The cache file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The model id whose vectors this cache holds.
    pub fn model_id(&self) -> &str {
        &self.model_id
    }

    /// The vector dimension.
    pub fn dim(&self) -> usize {
        self.dim
    }
}

fn truncate_for_message(text: &str) -> String {
    let mut s: String = text.chars().take(40).collect();
    if s.len() < text.len() {
        s.push('…');
    }
    s
}

/// Embeds `texts` of `role` through `cache`: only texts without a cached vector (under the
/// role's prompt) are embedded (each distinct text once), the new vectors are added and the
/// cache saved, and one vector per text is returned in input order.
///
/// `progress(n)` counts texts: first the ones answered from the cache, then the newly embedded
/// ones as they finish, then the repeats of newly embedded texts; the calls add up to
/// `texts.len()`. The cache must belong to the embedder's model id and dimension.
pub fn embed_cached<E: TextEmbedder + ?Sized>(
    embedder: &E,
    cache: &mut EmbeddingCache,
    role: Role,
    texts: &[&str],
    progress: &mut dyn FnMut(usize),
) -> Result<Vec<Vec<f32>>> {
    let prompt = embedder.prompt(role);
    if cache.model_id() != embedder.model_id() || cache.dim() != embedder.dim() {
        return Err(Error::Model {
            path: cache.path().to_path_buf(),
            message: format!(
                "embedding cache is for model `{}` (dimension {}), the embedder is `{}` (dimension {})",
                cache.model_id(),
                cache.dim(),
                embedder.model_id(),
                embedder.dim()
            ),
        });
    }
    let hashes: Vec<[u8; HASH_LEN]> = texts.iter().map(|t| input_hash(prompt, t)).collect();
    let mut seen = std::collections::HashSet::new();
    let mut misses: Vec<&str> = Vec::new();
    let mut hits = 0usize;
    for (t, h) in texts.iter().zip(&hashes) {
        if cache.index.contains_key(h) {
            hits += 1;
        } else if seen.insert(*h) {
            misses.push(t);
        }
    }
    if hits > 0 {
        progress(hits);
    }
    // saved every FLUSH_EVERY texts, so a run killed mid-embedding keeps what it embedded
    // (a vector is a pure function of its text, whatever the batch it is embedded in)
    for chunk in misses.chunks(FLUSH_EVERY) {
        let vectors = embedder.embed(chunk, role, progress)?;
        if vectors.len() != chunk.len() {
            return Err(Error::Model {
                path: cache.path().to_path_buf(),
                message: format!(
                    "embedder returned {} vectors for {} texts",
                    vectors.len(),
                    chunk.len()
                ),
            });
        }
        for (t, v) in chunk.iter().zip(&vectors) {
            cache.insert_as(prompt, t, v)?;
        }
        cache.save()?;
    }
    let repeats = texts.len() - hits - misses.len();
    if repeats > 0 {
        progress(repeats);
    }
    hashes
        .iter()
        .map(|h| {
            cache
                .get_hash(h)
                .map(<[f32]>::to_vec)
                .ok_or_else(|| Error::Model {
                    path: cache.path().to_path_buf(),
                    message: "internal: vector missing after embedding".into(),
                })
        })
        .collect()
}
