//! The chunks' texts while an export is built. A build that writes an export spills them to an
//! unnamed temporary file in its staging directory as soon as the chunks are in order, and
//! every later stage (BM25, the knowledge graph, the corpus writer and its embedder) reads them
//! back a block of rows at a time, a few MiB, where the texts held whole stayed resident through
//! every stage (at ten million generated chunks the resident set fell from 9.8 to 2.1 GB when
//! they were spilled). An embed-only pass, which writes nothing, holds them.
//!
//! Each block is hashed as it is spilled and checked when it is read back, so a temporary file
//! changed under the build is refused rather than indexed. The file has no name, so it is gone
//! when the build ends, however it ends.

use std::borrow::Cow;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::ChunkText;
use crate::enrich::ChunkBlocks;
use crate::error::{Error, Result};
use crate::protocol::Joiner;

/// Rows per spilled block: the unit of a read and of its hash check. The corpus writer's slice,
/// so each slice it writes is one block read once; a block of long passages is a few MiB.
pub(super) const BLOCK_ROWS: usize = crate::parquet_io::WRITE_ROWS;

/// The chunks' texts in chunk order, held or spilled ([module docs](self)).
pub(super) struct Texts {
    len: usize,
    inner: Inner,
}

enum Inner {
    Held(Vec<ChunkText>),
    Spilled(Spill),
}

/// The spilled texts: the file, where each block is, and each block's hash.
struct Spill {
    file: File,
    /// What an error names: the staging directory and what the file holds.
    path: PathBuf,
    joiner: Joiner,
    /// Block `b` (rows `b * BLOCK_ROWS..`) is `bytes[b]..bytes[b + 1]` of the file.
    bytes: Vec<u64>,
    hashes: Vec<blake3::Hash>,
}

impl Texts {
    /// `texts`, held.
    pub(super) fn held(texts: Vec<ChunkText>) -> Texts {
        Texts {
            len: texts.len(),
            inner: Inner::Held(texts),
        }
    }

    /// `texts` spilled to an unnamed file in `dir` and dropped. Every text shares `joiner`
    /// (one export has one protocol).
    pub(super) fn spill(texts: Vec<ChunkText>, joiner: Joiner, dir: &Path) -> Result<Texts> {
        let path = dir.join("(chunk texts, spilled)");
        let file = tempfile::tempfile_in(dir).map_err(|e| Error::io(&path, e))?;
        let len = texts.len();
        let mut bytes = vec![0u64];
        let mut hashes = Vec::with_capacity(len.div_ceil(BLOCK_ROWS));
        {
            let mut w = BufWriter::with_capacity(1 << 20, &file);
            let mut block = Vec::new();
            let mut rows = texts.into_iter().peekable();
            while rows.peek().is_some() {
                block.clear();
                for t in rows.by_ref().take(BLOCK_ROWS) {
                    debug_assert_eq!(t.joiner, joiner, "one export, one joiner");
                    encode(&t, &mut block);
                }
                w.write_all(&block).map_err(|e| Error::io(&path, e))?;
                hashes.push(blake3::hash(&block));
                bytes.push(bytes.last().copied().unwrap_or(0) + block.len() as u64);
            }
            w.flush().map_err(|e| Error::io(&path, e))?;
        }
        Ok(Texts {
            len,
            inner: Inner::Spilled(Spill {
                file,
                path,
                joiner,
                bytes,
                hashes,
            }),
        })
    }

    /// Chunks.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// The texts of `rows`: borrowed when held, read (and checked) when spilled.
    pub(super) fn rows(&self, rows: Range<usize>) -> Result<Cow<'_, [ChunkText]>> {
        assert!(
            rows.start <= rows.end && rows.end <= self.len,
            "rows in range"
        );
        match &self.inner {
            Inner::Held(t) => Ok(Cow::Borrowed(&t[rows])),
            Inner::Spilled(s) => {
                let mut out = Vec::with_capacity(rows.len());
                let mut b = rows.start / BLOCK_ROWS;
                while b * BLOCK_ROWS < rows.end {
                    let first = b * BLOCK_ROWS;
                    let block = s.block(b)?;
                    let from = rows.start.saturating_sub(first);
                    let to = (rows.end - first).min(block.len());
                    out.extend(block.into_iter().take(to).skip(from));
                    b += 1;
                }
                Ok(Cow::Owned(out))
            }
        }
    }

    /// Calls `f` with each block of texts in chunk order, and the row of its first text.
    pub(super) fn each_block(
        &self,
        mut f: impl FnMut(usize, &[ChunkText]) -> Result<()>,
    ) -> Result<()> {
        match &self.inner {
            Inner::Held(t) => t
                .chunks(BLOCK_ROWS)
                .enumerate()
                .try_for_each(|(b, block)| f(b * BLOCK_ROWS, block)),
            Inner::Spilled(s) => {
                (0..s.hashes.len()).try_for_each(|b| f(b * BLOCK_ROWS, &s.block(b)?))
            }
        }
    }

    /// Every chunk's full text ([`ChunkText::full_text`]) in order, made a block at a time. A
    /// block that cannot be read ends the texts early and its error is left in `failed`, which
    /// the caller checks once the texts are consumed.
    pub(super) fn full_texts<'a>(
        &'a self,
        failed: &'a mut Option<Error>,
    ) -> impl Iterator<Item = String> + 'a {
        let blocks = self.len.div_ceil(BLOCK_ROWS);
        (0..blocks)
            .map_while(move |b| {
                let start = b * BLOCK_ROWS;
                match self.rows(start..(start + BLOCK_ROWS).min(self.len)) {
                    Ok(block) => Some(block.iter().map(ChunkText::full_text).collect::<Vec<_>>()),
                    Err(e) => {
                        *failed = Some(e);
                        None
                    }
                }
            })
            .flatten()
    }
}

/// The knowledge graph reads the texts a block at a time.
impl ChunkBlocks for Texts {
    type Chunk = ChunkText;
    fn each_block(&self, f: &mut dyn FnMut(&[ChunkText])) -> Result<()> {
        Texts::each_block(self, |_, b| {
            f(b);
            Ok(())
        })
    }
}

impl Spill {
    /// Block `b`, read and checked against its hash.
    fn block(&self, b: usize) -> Result<Vec<ChunkText>> {
        let (start, end) = (self.bytes[b], self.bytes[b + 1]);
        let mut buf = vec![0u8; (end - start) as usize];
        self.file
            .read_exact_at(&mut buf, start)
            .map_err(|e| Error::io(&self.path, e))?;
        if blake3::hash(&buf) != self.hashes[b] {
            return Err(Error::malformed(
                &self.path,
                format!("block {b} (rows from {})", b * BLOCK_ROWS),
                "changed since it was written: its hash differs",
            ));
        }
        let rows = (b * BLOCK_ROWS..(b + 1) * BLOCK_ROWS).len();
        let mut out = Vec::with_capacity(rows);
        let mut at = 0;
        while at < buf.len() {
            out.push(decode(&buf, &mut at, self.joiner).ok_or_else(|| {
                Error::malformed(
                    &self.path,
                    format!("block {b}"),
                    "a text runs past the block",
                )
            })?);
        }
        Ok(out)
    }
}

/// A text as `title`, `text` and `header` (absent: length `u32::MAX`), each a little-endian
/// `u32` length and its bytes.
fn encode(t: &ChunkText, out: &mut Vec<u8>) {
    let mut put = |s: Option<&str>| match s {
        Some(s) => {
            let n = u32::try_from(s.len()).expect("a passage under 4 GiB");
            assert!(n != u32::MAX, "a passage under 4 GiB");
            out.extend_from_slice(&n.to_le_bytes());
            out.extend_from_slice(s.as_bytes());
        }
        None => out.extend_from_slice(&u32::MAX.to_le_bytes()),
    };
    put(Some(&t.title));
    put(Some(&t.text));
    put(t.header.as_deref());
}

/// The text [`encode`] wrote at `at`, `at` moved past it; `None` where the bytes end early or
/// are not UTF-8 (the hash check makes both impossible for a block this process wrote).
fn decode(buf: &[u8], at: &mut usize, joiner: Joiner) -> Option<ChunkText> {
    let mut take = || -> Option<Option<String>> {
        let n = u32::from_le_bytes(buf.get(*at..*at + 4)?.try_into().ok()?);
        *at += 4;
        if n == u32::MAX {
            return Some(None);
        }
        let s = buf.get(*at..*at + n as usize)?;
        *at += n as usize;
        Some(Some(String::from_utf8(s.to_vec()).ok()?))
    };
    Some(ChunkText {
        title: take()??,
        text: take()??,
        header: take()?,
        joiner,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(n: usize) -> Vec<ChunkText> {
        (0..n)
            .map(|i| ChunkText {
                title: format!("title {i}"),
                text: "é".repeat(i % 7),
                header: (i % 3 == 0).then(|| format!("h{i}")),
                joiner: Joiner::Newline,
            })
            .collect()
    }

    #[test]
    fn spilled_rows_and_blocks_are_the_held_ones() {
        let dir = tempfile::tempdir().unwrap();
        for n in [0, 1, BLOCK_ROWS - 1, BLOCK_ROWS, 2 * BLOCK_ROWS + 5] {
            let held = Texts::held(texts(n));
            let spilled = Texts::spill(texts(n), Joiner::Newline, dir.path()).unwrap();
            assert_eq!(spilled.len(), n);
            for r in [0..n, 0..0, n / 3..n, n / 2..n / 2 + 1.min(n - n / 2)] {
                assert_eq!(spilled.rows(r.clone()).unwrap(), held.rows(r).unwrap());
            }
            if n > BLOCK_ROWS {
                let r = BLOCK_ROWS - 2..BLOCK_ROWS + 3;
                assert_eq!(spilled.rows(r.clone()).unwrap(), held.rows(r).unwrap());
            }
            let collect = |t: &Texts| {
                let mut seen = Vec::new();
                t.each_block(|first, b| {
                    seen.push((first, b.to_vec()));
                    Ok(())
                })
                .unwrap();
                seen
            };
            assert_eq!(collect(&spilled), collect(&held));
            let mut failed = None;
            let full: Vec<String> = spilled.full_texts(&mut failed).collect();
            assert!(failed.is_none());
            assert_eq!(
                full,
                texts(n)
                    .iter()
                    .map(ChunkText::full_text)
                    .collect::<Vec<_>>()
            );
        }
    }

    #[test]
    fn a_block_changed_after_its_spill_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let t = Texts::spill(texts(BLOCK_ROWS + 10), Joiner::Newline, dir.path()).unwrap();
        let Inner::Spilled(s) = &t.inner else {
            panic!("spilled")
        };
        // one byte of the second block's first title flipped
        let at = s.bytes[1] + 4;
        let mut b = [0u8];
        s.file.read_exact_at(&mut b, at).unwrap();
        s.file.write_all_at(&[b[0] ^ 1], at).unwrap();
        assert_eq!(t.rows(0..3).unwrap().len(), 3, "the first block is intact");
        let e = t.rows(BLOCK_ROWS..BLOCK_ROWS + 1).unwrap_err().to_string();
        assert!(
            e.contains("block 1") && e.contains("changed since it was written"),
            "{e}"
        );
        let mut failed = None;
        assert_eq!(t.full_texts(&mut failed).count(), BLOCK_ROWS);
        assert!(failed.is_some(), "the iterator stops and says why");
    }
}
