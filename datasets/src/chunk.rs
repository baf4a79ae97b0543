//! The chunker: a long text -> the spans of its chunks, sentence-aware, sized in the embedder's
//! tokens or in characters, with an optional overlap.
//!
//! Splitting is delegated to the `text-splitter` crate ([`TextSplitter`]): it cuts at the
//! highest semantic level whose pieces fit (runs of line breaks, then Unicode sentences, then
//! words, graphemes, characters; UAX #29) and merges neighbouring pieces up to the size, so a
//! chunk ends at a sentence boundary whenever a sentence fits. Chunks are trimmed of leading and
//! trailing white space; white space between chunks belongs to none, and every other character
//! of the text is in at least one chunk.
//!
//! **Offsets.** A chunk is a [`Span`] of its text: `[start, end)` in Unicode code points (what
//! Python's `text[start:end]` counts, and what the `documents` format's gold spans use), so
//! `text.chars().skip(start).take(end - start)` is the chunk's text exactly
//! ([`span_text`]). Code points rather than bytes because a user citing a chunk, or writing
//! gold spans, usually does it from Python or JSON tools, where byte offsets would need an
//! encoding step; every code-point offset is a boundary, so no span can split a character.
//!
//! **Sizes.** `unit: tokens` counts the embedding model's own tokenizer (`tokenizer.json` of
//! the model directory, with its truncation and padding switched off, special tokens not
//! counted): a chunk of `size` tokens is what the embedder reads, plus `[CLS]`/`[SEP]`.
//! Chunks longer than the model's window (`max_seq_length`, 256 for the default model, special
//! tokens included) are embedded truncated, as every passage is; BM25 reads them whole.
//! `unit: chars` counts code points. `overlap` (same unit, below `size`) makes each chunk start
//! with up to that much of the end of the chunk before it, at the same semantic boundaries.

use std::path::Path;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use text_splitter::{ChunkConfig, ChunkSizer, TextSplitter};

use crate::error::{Error, Result};
use crate::model::Span;

/// The chunker's identity, hashed into the input key of every chunked export: the splitter
/// crate's version (its boundaries are what a chunk is) and this module's rules. A test checks
/// the version against `Cargo.lock`, so upgrading the crate re-prepares chunked exports.
pub const CHUNKER_ID: &str = "text-splitter 0.32.0; trim; code points; v1";

/// What a chunk's size counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChunkUnit {
    /// The embedding model's tokens (special tokens not counted).
    #[default]
    Tokens,
    /// Unicode code points.
    Chars,
}

impl ChunkUnit {
    /// As written in campaign files.
    pub fn name(self) -> &'static str {
        match self {
            ChunkUnit::Tokens => "tokens",
            ChunkUnit::Chars => "chars",
        }
    }
}

/// One chunking setting: `{size: N, overlap: M, unit: tokens | chars}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChunkSettings {
    /// The largest chunk, in `unit`s (>= 1).
    pub size: usize,
    /// How much of the previous chunk's end each chunk repeats, in `unit`s (< `size`).
    #[serde(default)]
    pub overlap: usize,
    /// What `size` and `overlap` count (default: tokens).
    #[serde(default)]
    pub unit: ChunkUnit,
}

impl ChunkSettings {
    /// `None` when the setting is usable, else what is wrong with it.
    pub fn problem(&self) -> Option<String> {
        if self.size == 0 {
            return Some("`size` must be at least 1".into());
        }
        if self.overlap >= self.size {
            return Some(format!(
                "`overlap` ({}) must be below `size` ({})",
                self.overlap, self.size
            ));
        }
        None
    }
}

/// Counts a text's tokens with the embedding model's tokenizer. `ChunkSizer::size` cannot fail,
/// so the first tokenizer error is kept and reported by [`Chunker::spans`].
struct TokenSizer {
    tokenizer: tokenizers::Tokenizer,
    failure: Mutex<Option<String>>,
}

impl ChunkSizer for TokenSizer {
    fn size(&self, chunk: &str) -> usize {
        match self.tokenizer.encode_fast(chunk, false) {
            Ok(e) => e.get_ids().len(),
            Err(e) => {
                let mut f = self.failure.lock().unwrap_or_else(|p| p.into_inner());
                f.get_or_insert_with(|| e.to_string());
                // too large to fit: the splitter keeps cutting, and the error is reported after
                usize::MAX / 2
            }
        }
    }
}

enum Kind {
    Whole,
    Chars(TextSplitter<text_splitter::Characters>),
    Tokens(
        Box<TextSplitter<Arc<TokenSizer>>>,
        Arc<TokenSizer>,
        std::path::PathBuf,
    ),
}

/// Splits texts into chunk spans under one [`ChunkSettings`] (or keeps each text whole).
pub struct Chunker {
    kind: Kind,
}

impl std::fmt::Debug for Chunker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match &self.kind {
            Kind::Whole => "whole",
            Kind::Chars(_) => "chars",
            Kind::Tokens(..) => "tokens",
        };
        f.debug_struct("Chunker").field("kind", &kind).finish()
    }
}

impl Chunker {
    /// One chunk per text: the whole text, untrimmed (what a dataset without `chunking` gets).
    pub fn whole() -> Chunker {
        Chunker { kind: Kind::Whole }
    }

    /// A chunker for `settings`. `unit: tokens` reads the model's `tokenizer.json` at
    /// `tokenizer`; `context` names the setting in errors (`datasets.x: chunking`).
    pub fn new(settings: &ChunkSettings, tokenizer: &Path, context: &str) -> Result<Chunker> {
        let bad = |message: String| Error::Config {
            context: context.to_string(),
            message,
        };
        if let Some(p) = settings.problem() {
            return Err(bad(p));
        }
        let config = ChunkConfig::new(settings.size)
            .with_trim(true)
            .with_overlap(settings.overlap)
            .map_err(|e| bad(e.to_string()))?;
        let kind = match settings.unit {
            ChunkUnit::Chars => Kind::Chars(TextSplitter::new(config)),
            ChunkUnit::Tokens => {
                if !tokenizer.is_file() {
                    return Err(Error::Model {
                        path: tokenizer.to_path_buf(),
                        message: "missing tokenizer file (needed by `chunking: {unit: tokens}`)"
                            .into(),
                    });
                }
                let tok_err = |message: String| Error::Model {
                    path: tokenizer.to_path_buf(),
                    message,
                };
                let mut t = tokenizers::Tokenizer::from_file(tokenizer)
                    .map_err(|e| tok_err(e.to_string()))?;
                t.with_truncation(None)
                    .map_err(|e| tok_err(e.to_string()))?;
                t.with_padding(None);
                let sizer = Arc::new(TokenSizer {
                    tokenizer: t,
                    failure: Mutex::new(None),
                });
                Kind::Tokens(
                    Box::new(TextSplitter::new(config.with_sizer(sizer.clone()))),
                    sizer,
                    tokenizer.to_path_buf(),
                )
            }
        };
        Ok(Chunker { kind })
    }

    /// The chunks of `text`, in text order: spans whose [`span_text`] is non-empty (unless
    /// `text` is empty) and trimmed, each starting after the one before it.
    pub fn spans(&self, text: &str) -> Result<Vec<Span>> {
        let total = text.chars().count();
        let to_u32 = |n: usize| {
            u32::try_from(n).map_err(|_| Error::Config {
                context: "chunker".into(),
                message: format!(
                    "a text of {total} code points is too long (at most {})",
                    u32::MAX
                ),
            })
        };
        let pieces: Vec<(usize, &str)> = match &self.kind {
            Kind::Whole => vec![(0, text)],
            Kind::Chars(s) => s
                .chunk_char_indices(text)
                .map(|c| (c.char_offset, c.chunk))
                .collect(),
            Kind::Tokens(s, sizer, path) => {
                let out: Vec<(usize, &str)> = s
                    .chunk_char_indices(text)
                    .map(|c| (c.char_offset, c.chunk))
                    .collect();
                let failure = sizer
                    .failure
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .take();
                if let Some(message) = failure {
                    return Err(Error::Model {
                        path: path.clone(),
                        message: format!("tokenizing a chunk: {message}"),
                    });
                }
                out
            }
        };
        pieces
            .into_iter()
            .map(|(start, chunk)| {
                Ok(Span {
                    start: to_u32(start)?,
                    end: to_u32(start + chunk.chars().count())?,
                })
            })
            .collect()
    }
}

/// The text of `span` in `text` (code-point offsets; empty where the span lies beyond it).
pub fn span_text(text: &str, span: Span) -> &str {
    let mut starts = text
        .char_indices()
        .map(|(i, _)| i)
        .chain(std::iter::once(text.len()));
    let start = starts.nth(span.start as usize);
    let end = match start {
        Some(_) if span.end > span.start => starts.nth((span.end - span.start - 1) as usize),
        other => other,
    };
    match (start, end) {
        (Some(s), Some(e)) => &text[s..e],
        (Some(s), None) => &text[s..],
        _ => "",
    }
}

/// The indices of the `chunks` that share at least one code point with `gold` (the rule that
/// makes a chunk gold for a gold span), ascending.
pub fn overlapping(chunks: &[Span], gold: Span) -> Vec<usize> {
    chunks
        .iter()
        .enumerate()
        .filter(|(_, c)| c.overlaps(&gold))
        .map(|(i, _)| i)
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    fn span(start: u32, end: u32) -> Span {
        Span { start, end }
    }

    /// A character chunker of `size` code points overlapping by `overlap` (also used by the
    /// tests of the documents format, which chunks at read time).
    pub(crate) fn chars(size: usize, overlap: usize) -> Chunker {
        let s = ChunkSettings {
            size,
            overlap,
            unit: ChunkUnit::Chars,
        };
        Chunker::new(&s, Path::new("unused"), "test").unwrap()
    }

    /// Random text over a mix of ASCII, accented Latin, CJK, emoji (astral plane), combining
    /// marks, spaces, sentence ends and line breaks.
    fn random_text(rng: &mut SplitMix64, len: usize) -> String {
        const PIECES: &[&str] = &[
            "a", "b", "Z", "é", "ß", "Ω", "ж", "中", "文", "😀", "🦀", "e\u{301}", " ", " ", " ",
            ". ", "? ", "\n", "\n\n", "\t", "\u{a0}", "1", "-",
        ];
        (0..len)
            .map(|_| PIECES[(rng.next_u64() % PIECES.len() as u64) as usize])
            .collect()
    }

    #[test]
    fn offsets_round_trip_over_random_unicode_text() {
        let mut rng = SplitMix64::new(0x5eed);
        for round in 0..300 {
            let len = (rng.next_u64() % 400) as usize;
            let text = random_text(&mut rng, len);
            let size = 1 + (rng.next_u64() % 60) as usize;
            let overlap = (rng.next_u64() % size as u64) as usize;
            let chunker = chars(size, overlap);
            let splitter = TextSplitter::new(
                ChunkConfig::new(size)
                    .with_trim(true)
                    .with_overlap(overlap)
                    .unwrap(),
            );
            let expected: Vec<&str> = splitter.chunks(&text).collect();
            let spans = chunker.spans(&text).unwrap();
            assert_eq!(spans.len(), expected.len(), "round {round}");
            let n = text.chars().count() as u32;
            for (s, want) in spans.iter().zip(&expected) {
                assert!(s.start < s.end && s.end <= n, "round {round}: {s:?}");
                assert_eq!(span_text(&text, *s), *want, "round {round}: {s:?}");
                // Python-style slicing by code points gives the same text
                let by_chars: String = text
                    .chars()
                    .skip(s.start as usize)
                    .take((s.end - s.start) as usize)
                    .collect();
                assert_eq!(by_chars, *want);
                assert!(want.chars().count() <= size, "round {round}");
            }
            for w in spans.windows(2) {
                assert!(w[0].start < w[1].start, "round {round}: {spans:?}");
            }
            // every non-white-space character is in some chunk
            for (i, c) in text.chars().enumerate() {
                if !c.is_whitespace() {
                    assert!(
                        spans.iter().any(|s| (s.start..s.end).contains(&(i as u32))),
                        "round {round}: char {i} {c:?} in no chunk"
                    );
                }
            }
        }
    }

    #[test]
    fn sentences_are_kept_whole_when_they_fit() {
        let text = "The first sentence is here. The second one follows it. A third.";
        let spans = chars(40, 0).spans(text).unwrap();
        let texts: Vec<&str> = spans.iter().map(|s| span_text(text, *s)).collect();
        assert_eq!(
            texts,
            [
                "The first sentence is here.",
                "The second one follows it. A third."
            ]
        );
        // overlap is taken at the level the text was cut at: no sentence fits in 10 characters,
        // so these chunks cannot overlap
        assert_eq!(chars(40, 10).spans(text).unwrap(), spans);
        // cut at words, each chunk starts with up to 8 characters of the end of the one before
        let text = "one two three four five six seven eight nine ten";
        let spans = chars(20, 8).spans(text).unwrap();
        let texts: Vec<&str> = spans.iter().map(|s| span_text(text, *s)).collect();
        assert_eq!(
            texts,
            [
                "one two three four",
                "four five six seven",
                "seven eight nine ten"
            ]
        );
    }

    #[test]
    fn whole_keeps_the_text_as_it_is() {
        let text = "  é 😀 x \n";
        assert_eq!(
            Chunker::whole().spans(text).unwrap(),
            [span(0, text.chars().count() as u32)]
        );
    }

    #[test]
    fn settings_are_checked() {
        let bad = |size, overlap| {
            let s = ChunkSettings {
                size,
                overlap,
                unit: ChunkUnit::Chars,
            };
            Chunker::new(&s, Path::new("x"), "datasets.d: chunking")
                .unwrap_err()
                .to_string()
        };
        assert_eq!(bad(0, 0), "datasets.d: chunking: `size` must be at least 1");
        assert_eq!(
            bad(10, 10),
            "datasets.d: chunking: `overlap` (10) must be below `size` (10)"
        );
        let tokens = ChunkSettings {
            size: 10,
            overlap: 0,
            unit: ChunkUnit::Tokens,
        };
        let e = Chunker::new(&tokens, Path::new("/nowhere/tokenizer.json"), "c").unwrap_err();
        assert!(
            e.to_string().contains("/nowhere/tokenizer.json")
                && e.to_string().contains("unit: tokens"),
            "{e}"
        );
    }

    #[test]
    fn token_sizes_use_the_model_tokenizer_without_its_truncation() {
        let dir = tempfile::tempdir().unwrap();
        crate::embed::write_tiny_model(dir.path(), 3).unwrap();
        let tokens = ChunkSettings {
            size: 6,
            overlap: 0,
            unit: ChunkUnit::Tokens,
        };
        let tok = dir.path().join("tokenizer.json");
        let chunker = Chunker::new(&tokens, &tok, "c").unwrap();
        // the tiny tokenizer truncates and pads to 16 tokens: a 40-word text must still be cut
        // into chunks of at most 6 tokens, not measured as 16
        let text = "the cat sat on the mat. ".repeat(8);
        let spans = chunker.spans(&text).unwrap();
        let mut t = tokenizers::Tokenizer::from_file(&tok).unwrap();
        t.with_truncation(None).unwrap();
        t.with_padding(None);
        assert!(spans.len() >= 8, "{spans:?}");
        for s in &spans {
            let piece = span_text(&text, *s);
            let n = t.encode(piece, false).unwrap().get_ids().len();
            assert!(n <= 6, "{piece:?}: {n} tokens");
        }
        // whole sentences ("the cat sat on the mat." is 7 tokens: too long) are cut at words
        assert_eq!(span_text(&text, spans[0]), "the cat sat on the mat");
    }

    #[test]
    fn span_text_clamps_and_counts_code_points() {
        let text = "aé😀b";
        assert_eq!(span_text(text, span(1, 3)), "é😀");
        assert_eq!(span_text(text, span(3, 4)), "b");
        assert_eq!(span_text(text, span(3, 9)), "b");
        assert_eq!(span_text(text, span(4, 4)), "");
        assert_eq!(span_text(text, span(7, 9)), "");
    }

    #[test]
    fn gold_spans_map_to_the_chunks_they_overlap() {
        // chunks [0,10) [8,20) [20,30): [8,10) is the overlap region of the first two
        let chunks = [span(0, 10), span(8, 20), span(20, 30)];
        // inside one chunk
        assert_eq!(overlapping(&chunks, span(2, 5)), [0]);
        // across the border between the second and third chunk
        assert_eq!(overlapping(&chunks, span(18, 22)), [1, 2]);
        // inside the overlap region: both chunks hold it
        assert_eq!(overlapping(&chunks, span(8, 10)), [0, 1]);
        assert_eq!(overlapping(&chunks, span(9, 10)), [0, 1]);
        // touching is not overlapping: [10,12) shares nothing with [0,10)
        assert_eq!(overlapping(&chunks, span(10, 12)), [1]);
        assert_eq!(overlapping(&chunks, span(19, 20)), [1]);
        assert_eq!(overlapping(&chunks, span(20, 21)), [2]);
        // the whole text
        assert_eq!(overlapping(&chunks, span(0, 30)), [0, 1, 2]);
        // between chunks (trimmed white space) or beyond them: none
        let gapped = [span(0, 5), span(7, 10)];
        assert!(overlapping(&gapped, span(5, 7)).is_empty());
        assert!(overlapping(&gapped, span(10, 12)).is_empty());
    }

    #[test]
    fn the_chunker_id_names_the_locked_splitter_version() {
        let lock =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../Cargo.lock")).unwrap();
        let at = lock
            .find("name = \"text-splitter\"\nversion = \"")
            .expect("text-splitter in Cargo.lock");
        let rest = &lock[at + "name = \"text-splitter\"\nversion = \"".len()..];
        let version = &rest[..rest.find('"').unwrap()];
        assert!(
            CHUNKER_ID.starts_with(&format!("text-splitter {version};")),
            "update CHUNKER_ID to the locked text-splitter {version} (it re-prepares every chunked export)"
        );
    }
}
