//! A vector column of an export's corpus as a flat file of little-endian `f32`, mapped into
//! memory rather than copied onto the heap: what the served engine rescores its hits over.
//!
//! Parquet's pages are compressed and levelled, so a column cannot be mapped where it lies; the
//! first use writes it out once, row-major, beside the shards (`<results>/shards/<dataset>/
//! vectors/`), with a sidecar naming what it was derived from (the export's content hash and the
//! column), its shape and its blake3. Every open checks the sidecar against the export and the
//! file against the sidecar's hash (read through the file, not the map, so the check leaves no
//! pages resident); a file that does not verify is written again from the corpus, itself
//! checked against the manifest first. A new file is linked in only where no whole file lies,
//! so one that another process wrote (and may have mapped) is never replaced under it. The map
//! serves the readers of the whole column (a shard's build, its probe rows); a query reads the
//! rows it rescores at their offsets ([`MappedVectors::read_row`]), so a served run holds
//! neither the 1.5 GB column of a million 384-wide chunks nor the pages around the rows it read.
//!
//! The bytes of a mapped file are read when a row is used, long after the check. So the file's
//! identity (size, modification time, inode, device) is taken when it is checked and compared again
//! each time the rows are handed out: a file replaced or written to after its check is refused,
//! naming it, as a part read after its file changed is.
//!
//! This is the workspace's second module with `unsafe` code: mapping a file.
#![allow(unsafe_code)]

use std::fs;
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

// the file is written little-endian and its bytes are read as this machine's floats
const _: () = assert!(
    cfg!(target_endian = "little"),
    "mapped vectors assume a little-endian machine"
);

use super::identity::{hash_file, verify};
use super::Export;
use crate::error::{Error, Result};
use crate::parquet_io as pq;

/// What the sidecar of a mapped file records.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Sidecar {
    /// What the file was written from: the export's content hash and the column.
    source: String,
    /// Rows and their width.
    rows: usize,
    dim: usize,
    /// blake3 of the file.
    blake3: String,
}

/// The identity of a file when it was checked: a write or a replacement changes one of these.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    len: u64,
    mtime_ns: i128,
    ino: u64,
    dev: u64,
}

impl Stamp {
    fn of(path: &Path) -> Result<Stamp> {
        let m = fs::metadata(path).map_err(|e| Error::io(path, e))?;
        Ok(Stamp {
            len: m.len(),
            mtime_ns: i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()),
            ino: m.ino(),
            dev: m.dev(),
        })
    }
}

/// A corpus vector column, mapped ([`Export::mapped_vectors`]).
#[derive(Debug)]
pub struct MappedVectors {
    path: PathBuf,
    /// The file the map is of, for [`MappedVectors::read_row`].
    file: fs::File,
    map: memmap2::Mmap,
    rows: usize,
    dim: usize,
    stamp: Stamp,
}

impl MappedVectors {
    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The rows, row-major `rows x dim`: an error naming the file if it changed since it was
    /// checked.
    pub fn rows(&self) -> Result<&[f32]> {
        if Stamp::of(&self.path)? != self.stamp {
            return Err(self.changed());
        }
        let floats: &[f32] = bytemuck::try_cast_slice(&self.map[..])
            .map_err(|e| Error::field(&self.path, "file", "contents", e.to_string()))?;
        Ok(&floats[..self.rows * self.dim])
    }

    /// Row `i` into `out` (`dim` floats), read from the file at its offset rather than through
    /// the map: a few rows per query, anywhere in the file, each read through the map would
    /// leave the 64 KB the kernel maps around a touched page resident (a hundred queries'
    /// rescoring of a hundred rows each made 0.5 GB of the file resident at 10^6 chunks, against
    /// the 15 MB they read). An error names the file if it changed since it was checked, or if
    /// `i` is not a row.
    pub fn read_row(&self, i: usize, out: &mut [f32]) -> Result<()> {
        if i >= self.rows || out.len() != self.dim {
            return Err(Error::field(
                &self.path,
                format!("row {i}"),
                "contents",
                format!("is not a row of {} x {}", self.rows, self.dim),
            ));
        }
        crate::hnsw::Rows::read_values(self, i * self.dim, out)
    }

    fn changed(&self) -> Error {
        Error::field(
            &self.path,
            "file",
            "contents",
            "changed after it was checked against its blake3: remove it, and the next run \
             writes it again from the export",
        )
    }
}

/// A shard's build reads its rows here a batch at a time, at their offsets, for the reason
/// [`MappedVectors::read_row`] gives: read through the map, the whole column would stay resident
/// beside Qdrant's own copy of it.
impl crate::hnsw::Rows for MappedVectors {
    fn values(&self) -> usize {
        self.rows * self.dim
    }

    fn read_values(&self, start: usize, out: &mut [f32]) -> Result<()> {
        use std::os::unix::fs::FileExt;
        if Stamp::of(&self.path)? != self.stamp {
            return Err(self.changed());
        }
        if start
            .checked_add(out.len())
            .is_none_or(|end| end > self.values())
        {
            return Err(Error::field(
                &self.path,
                format!("values {start}..+{}", out.len()),
                "contents",
                format!("are not within {} x {}", self.rows, self.dim),
            ));
        }
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(out);
        self.file
            .read_exact_at(bytes, (start * 4) as u64)
            .map_err(|e| Error::io(&self.path, e))
    }
}

/// Where `column` of the export in `export_dir` (vectors key `vectors_key`: [`super::Manifest::vectors_key`]) is written:
/// beside the shards of the same export, named by what it is derived from.
pub fn mapped_path(export_dir: &Path, vectors_key: &str, column: &str) -> PathBuf {
    let key = blake3::hash(source(vectors_key, column).as_bytes()).to_hex();
    crate::hnsw::shards_root(export_dir)
        .join("vectors")
        .join(format!("{column}-{}.f32", &key.as_str()[..16]))
}

fn source(content_hash: &str, column: &str) -> String {
    format!("{content_hash} {column}")
}

fn sidecar_path(path: &Path) -> PathBuf {
    path.with_extension("json")
}

/// [`Export::mapped_vectors`].
pub(super) fn open_or_write(export: &Export, column: &str) -> Result<MappedVectors> {
    let content_hash = export.vectors_key();
    let path = mapped_path(&export.dir, &content_hash, column);
    let want = |blake3: String| Sidecar {
        source: source(&content_hash, column),
        rows: export.chunks.len(),
        dim: export.dim,
        blake3,
    };
    if let Some(mapped) = open_checked(&path, |s| *s == want(s.blake3.clone()))? {
        return Ok(mapped);
    }
    write(export, column, &path, want)?;
    open_checked(&path, |s| *s == want(s.blake3.clone()))?.ok_or_else(|| {
        Error::field(
            &path,
            "file",
            "blake3",
            "does not match its sidecar just after it was written",
        )
    })
}

/// The file at `path` mapped, if its sidecar passes `fits` and the file its hash; `None` when
/// either is missing or does not verify (to be written again).
fn open_checked(path: &Path, fits: impl Fn(&Sidecar) -> bool) -> Result<Option<MappedVectors>> {
    let Ok(text) = fs::read_to_string(sidecar_path(path)) else {
        return Ok(None);
    };
    let Ok(sidecar) = serde_json::from_str::<Sidecar>(&text) else {
        return Ok(None);
    };
    if !fits(&sidecar) || !path.is_file() {
        return Ok(None);
    }
    let stamp = Stamp::of(path)?;
    let bytes = (sidecar.rows as u64)
        .checked_mul(sidecar.dim as u64)
        .and_then(|n| n.checked_mul(4));
    if bytes != Some(stamp.len) || hash_file(path)? != sidecar.blake3 {
        return Ok(None);
    }
    let file = fs::File::open(path).map_err(|e| Error::io(path, e))?;
    // SAFETY: the map is read-only and private to this process's reads; the file may still
    // be changed by another process, which `MappedVectors::rows` detects through the stamp
    // (taken before the hash) and refuses, rather than reading rows that were not checked.
    let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| Error::io(path, e))?;
    if Stamp::of(path)? != stamp {
        return Ok(None);
    }
    Ok(Some(MappedVectors {
        path: path.to_path_buf(),
        file,
        map,
        rows: sidecar.rows,
        dim: sidecar.dim,
        stamp,
    }))
}

/// Writes `column` of `export`'s corpus (checked against the manifest first) to `path`, a
/// reader batch at a time, then its sidecar; each lands under its name only when whole.
fn write(
    export: &Export,
    column: &str,
    path: &Path,
    sidecar: impl Fn(String) -> Sidecar,
) -> Result<()> {
    let dir = path.parent().expect("a mapped file lies in a directory");
    fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let tmp = Partial::beside(path);
    let file = fs::File::create(&tmp.0).map_err(|e| Error::io(&tmp.0, e))?;
    let mut out = std::io::BufWriter::with_capacity(1 << 20, &file);
    let mut hasher = blake3::Hasher::new();
    let mut bytes = Vec::new();
    let mut put = |floats: &[f32]| {
        bytes.clear();
        bytes.extend(floats.iter().flat_map(|f| f.to_le_bytes()));
        hasher.update(&bytes);
        out.write_all(&bytes).map_err(|e| Error::io(&tmp.0, e))
    };
    match export.model_part() {
        // another model's vectors: its part's file, checked against its hash as it is read
        Some(part) => put(&part.read(super::read::part_set(column))?)?,
        None => {
            verify(&export.dir, &export.manifest, "corpus.parquet")?;
            pq::stream_vectors(
                &export.dir.join("corpus.parquet"),
                column,
                export.dim,
                export.chunks.len(),
                put,
            )?
        }
    }
    out.flush().map_err(|e| Error::io(&tmp.0, e))?;
    drop(out);
    file.sync_all().map_err(|e| Error::io(&tmp.0, e))?;
    // the sidecar first: it says what any whole file under the name must hash to (the same
    // for every writer of the same export and column)
    let side = sidecar(hasher.finalize().to_hex().to_string());
    let side_path = sidecar_path(path);
    let side_tmp = Partial::beside(&side_path);
    let text = serde_json::to_string_pretty(&side).expect("a sidecar serialises");
    fs::write(&side_tmp.0, text).map_err(|e| Error::io(&side_tmp.0, e))?;
    side_tmp.persist(&side_path)?;
    // then the file, linked in only where no file is: one another process wrote meanwhile and
    // may have mapped is never replaced under it, and a file that does not verify is removed
    // first
    for _ in 0..2 {
        match fs::hard_link(&tmp.0, path) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                if open_checked(path, |s| *s == side)?.is_some() {
                    return Ok(());
                }
                match fs::remove_file(path) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(Error::io(path, e)),
                }
            }
            Err(e) => return Err(Error::io(path, e)),
        }
    }
    Err(Error::field(
        path,
        "file",
        "contents",
        "another process keeps writing a file under this name that does not verify",
    ))
}

/// A file being written under a name of this process's own, removed unless it is persisted:
/// an interrupted or failed write leaves nothing behind.
struct Partial(PathBuf);

impl Partial {
    fn beside(path: &Path) -> Partial {
        let name = path
            .file_name()
            .map_or_else(Default::default, |n| n.to_string_lossy());
        Partial(path.with_file_name(format!(".{name}.tmp-{}", std::process::id())))
    }

    fn persist(self, to: &Path) -> Result<()> {
        fs::rename(&self.0, to).map_err(|e| Error::io(to, e))?;
        std::mem::forget(self);
        Ok(())
    }
}

impl Drop for Partial {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.0);
    }
}
