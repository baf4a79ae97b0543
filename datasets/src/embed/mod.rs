//! Dense sentence embeddings on CPU: a BERT-family sentence-transformers model (the default is
//! all-MiniLM-L6-v2, 384 dimensions), run in Rust with candle.
//!
//! A model directory holds `config.json`, `model.safetensors`, `tokenizer.json` and optionally
//! `sentence_bert_config.json` (for `max_seq_length`); `scripts/setup` installs the default one
//! into `models/all-MiniLM-L6-v2/`. [`Embedder::load`] reads it; [`Embedder::embed`] turns texts
//! into mean-pooled, L2-normalised vectors; [`EmbeddingCache`] and [`embed_cached`] keep vectors
//! on disk keyed by (model id, BLAKE3 of the text) so no text is embedded twice.
//!
//! **Determinism.** A vector is a pure function of its text and the model: it does not depend on
//! the other texts of the call, their order, the batch size or the thread count. Texts are sorted
//! by token count and packed into batches without padding; the dense layers run on the packed
//! token rows, and attention runs per text over its own rows (see `bert.rs`), so a text's
//! computation is the same arithmetic whatever else is in its batch. The matrix kernel (the
//! `gemm` crate) is chosen at run time from the CPU's features (AVX-512 where the CPU has it,
//! else AVX2 + FMA), so two CPUs with different kernels differ in the last bits: the kernel is
//! part of [`Embedder::model_id`], so vectors from one are never reused as the other's.
//!
//! **Threads.** Everything runs on the current rayon pool, whose size the `RAYON_NUM_THREADS`
//! environment variable sets (default: one thread per core). candle also reads
//! `RAYON_NUM_THREADS` (falling back to the physical core count) for the number of pieces it
//! splits a matrix product into; the pieces run on the same rayon pool. [`Embedder::embed`] runs
//! one batch per pool thread at a time, because the matrix kernel alone scales poorly to two
//! threads at these sizes.
//!
//! ```no_run
//! use hopbench_datasets::embed::{default_model_dir, embed_cached, Embedder, EmbeddingCache};
//! # fn main() -> hopbench_datasets::Result<()> {
//! let embedder = Embedder::load(&default_model_dir())?;
//! let mut cache = EmbeddingCache::open("cache/vectors".as_ref(), embedder.model_id(), embedder.dim())?;
//! let vectors = embed_cached(&embedder, &mut cache, &["The cat sat on the mat."], &mut |_| {})?;
//! assert_eq!(vectors[0].len(), 384);
//! # Ok(()) }
//! ```

mod bert;
mod cache;
pub mod hashing;
mod kernels;
mod tiny;

#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};

use rayon::prelude::*;
use tokenizers::{Tokenizer, TruncationDirection, TruncationParams, TruncationStrategy};

pub use cache::{embed_cached, EmbeddingCache};
pub use hashing::{HashingEmbedder, HASHING_DIM, HASHING_MODEL, HASHING_MODEL_ID};
pub use tiny::write_tiny_model;

use crate::{Error, Result};

/// `max_seq_length` when the model directory has no `sentence_bert_config.json`.
pub const DEFAULT_MAX_SEQ_LENGTH: usize = 256;

/// At most this many texts are embedded in one forward pass.
pub const MAX_BATCH: usize = 32;

/// A forward pass takes texts while their tokens fit in this many (a longer text goes alone).
/// The pass's largest buffer, the feed-forward activations, is then about 12 MB for MiniLM:
/// small enough for the allocator to reuse across layers and batches instead of mapping fresh
/// pages for each (measured on 256-token texts: batches of 32 texts took 3.7 million page faults
/// per 900 texts against 0.7 million, and embedding took about 20% longer).
pub const MAX_BATCH_TOKENS: usize = 2048;

/// Texts are tokenised this many at a time (bounds the memory of tokeniser output).
const TOKENIZE_CHUNK: usize = 2048;

/// The environment variable that overrides [`default_model_dir`].
pub const MODEL_DIR_ENV: &str = "HOPBENCH_MODEL_DIR";

/// Where the default model lives: `$HOPBENCH_MODEL_DIR` if set, else
/// `<workspace>/models/all-MiniLM-L6-v2` (where `scripts/setup` puts it).
pub fn default_model_dir() -> PathBuf {
    match std::env::var_os(MODEL_DIR_ENV) {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .unwrap_or_else(|| Path::new("."))
            .join("models")
            .join("all-MiniLM-L6-v2"),
    }
}

/// Anything that turns texts into fixed-dimension vectors under a stable model id.
/// [`Embedder`] is the real one; tests and callers may wrap or fake it.
pub trait TextEmbedder {
    /// The model identity: name and weight hash (see [`Embedder::model_id`]).
    fn model_id(&self) -> &str;
    /// The vector dimension.
    fn dim(&self) -> usize;
    /// One vector per text, in input order; `progress(n)` after every `n` texts finished.
    fn embed(&self, texts: &[&str], progress: &mut dyn FnMut(usize)) -> Result<Vec<Vec<f32>>>;
    /// How many tokens of each text the embedder reads (its own tokenizer, after truncation):
    /// the unit its cost grows with.
    fn token_counts(&self, texts: &[&str]) -> Result<Vec<usize>>;
}

/// A loaded sentence-embedding model: tokenizer, BERT encoder, mean pooling, L2 normalisation.
pub struct Embedder {
    dir: PathBuf,
    name: String,
    model_id: String,
    max_seq_length: usize,
    tokenizer: Tokenizer,
    bert: bert::Bert,
}

impl std::fmt::Debug for Embedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embedder")
            .field("dir", &self.dir)
            .field("model_id", &self.model_id)
            .field("dim", &self.dim())
            .field("max_seq_length", &self.max_seq_length)
            .finish_non_exhaustive()
    }
}

impl Embedder {
    /// Loads the model in `dir` (`config.json`, `model.safetensors`, `tokenizer.json`, optional
    /// `sentence_bert_config.json`). The tokenizer's own truncation and padding settings are
    /// replaced: truncation to [`max_seq_length`](Self::max_seq_length), no padding.
    ///
    /// Every failure is an [`Error::Model`] (or [`Error::Io`] / [`Error::Malformed`]) naming the
    /// file.
    pub fn load(dir: &Path) -> Result<Embedder> {
        if !dir.is_dir() {
            return Err(Error::Model {
                path: dir.to_path_buf(),
                message: "not a directory (run scripts/setup to install the default model, or set \
                          HOPBENCH_MODEL_DIR)"
                    .into(),
            });
        }
        let name = model_name(dir);
        let required = |file: &str| -> Result<PathBuf> {
            let p = dir.join(file);
            if p.is_file() {
                Ok(p)
            } else {
                Err(Error::Model {
                    path: p,
                    message: "missing model file".into(),
                })
            }
        };
        let config_path = required("config.json")?;
        let weights_path = required("model.safetensors")?;
        let tokenizer_path = required("tokenizer.json")?;

        let cfg = bert::BertConfig::read(&config_path)?;
        let max_seq_length = read_max_seq_length(dir)?.min(cfg.max_position_embeddings);

        let bytes = std::fs::read(&weights_path).map_err(|e| Error::io(&weights_path, e))?;
        let model_id = model_id_from(&name, &bytes);
        let bert = bert::Bert::load(cfg, &bytes, &weights_path)?;
        drop(bytes);

        let tok_err = |message: String| Error::Model {
            path: tokenizer_path.clone(),
            message,
        };
        let mut tokenizer =
            Tokenizer::from_file(&tokenizer_path).map_err(|e| tok_err(e.to_string()))?;
        tokenizer
            .with_truncation(Some(TruncationParams {
                direction: TruncationDirection::Right,
                max_length: max_seq_length,
                strategy: TruncationStrategy::LongestFirst,
                stride: 0,
            }))
            .map_err(|e| tok_err(e.to_string()))?;
        tokenizer.with_padding(None);
        let vocab = tokenizer.get_vocab_size(true);
        if vocab > bert.config().vocab_size {
            return Err(tok_err(format!(
                "tokenizer has {vocab} tokens but the model's vocab_size is {}",
                bert.config().vocab_size
            )));
        }
        Ok(Embedder {
            dir: dir.to_path_buf(),
            name,
            model_id,
            max_seq_length,
            tokenizer,
            bert,
        })
    }

    /// `"<model name>@<first 16 hex digits of BLAKE3(model.safetensors)>+<arithmetic>.<kernel>"`,
    /// where the model name is the directory's file name, the arithmetic is
    /// [`ARITHMETIC_VERSION`] and the kernel is the matrix kernel this CPU runs, e.g.
    /// `all-MiniLM-L6-v2@8087e9bf97c265f8+hb2.avx512f`.
    pub fn model_id(&self) -> &str {
        &self.model_id
    }

    /// The model name (the directory's file name).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The model directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The vector dimension (the encoder's hidden size).
    pub fn dim(&self) -> usize {
        self.bert.config().hidden_size
    }

    /// Texts are truncated to this many tokens, `[CLS]` and `[SEP]` included.
    pub fn max_seq_length(&self) -> usize {
        self.max_seq_length
    }

    /// Number of tokens of each text after truncation (`[CLS]` and `[SEP]` included).
    pub fn token_counts(&self, texts: &[&str]) -> Result<Vec<usize>> {
        let mut out = Vec::with_capacity(texts.len());
        for chunk in texts.chunks(TOKENIZE_CHUNK) {
            for enc in self.encode(chunk)? {
                out.push(enc.0.len());
            }
        }
        Ok(out)
    }

    /// Embeds `texts`: one L2-normalised vector of [`dim`](Self::dim) floats per text, in input
    /// order. `progress(n)` is called after each batch with the number of texts it finished.
    ///
    /// Each vector is a pure function of its text (see the module docs): texts are sorted by
    /// (token count, input index), packed into batches of up to [`MAX_BATCH`] texts and
    /// [`MAX_BATCH_TOKENS`] tokens without padding, and the results put back in input order.
    pub fn embed(&self, texts: &[&str], progress: &mut dyn FnMut(usize)) -> Result<Vec<Vec<f32>>> {
        let mut ids: Vec<Vec<u32>> = Vec::with_capacity(texts.len());
        let mut types: Vec<Vec<u32>> = Vec::with_capacity(texts.len());
        for chunk in texts.chunks(TOKENIZE_CHUNK) {
            for (i, t) in self.encode(chunk)? {
                ids.push(i);
                types.push(t);
            }
        }
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| (ids[i].len(), i));
        let mut out: Vec<Vec<f32>> = vec![Vec::new(); texts.len()];
        let batches = pack_batches(&order, |i| ids[i].len());
        // One batch per worker thread at a time: the GEMM kernel alone scales poorly to two
        // threads at these sizes, batch-level parallelism keeps both busy. Results do not depend
        // on which thread runs what.
        let in_flight = rayon::current_num_threads().max(1);
        for group in batches.chunks(in_flight) {
            let results: Vec<Result<Vec<Vec<f32>>>> = group
                .par_iter()
                .map(|batch| {
                    let batch_ids: Vec<&[u32]> = batch.iter().map(|&i| ids[i].as_slice()).collect();
                    let batch_types: Vec<&[u32]> =
                        batch.iter().map(|&i| types[i].as_slice()).collect();
                    self.bert
                        .embed_batch(&batch_ids, &batch_types)
                        .map_err(|e| Error::Model {
                            path: self.dir.clone(),
                            message: format!("forward pass: {e}"),
                        })
                })
                .collect();
            for (batch, vectors) in group.iter().zip(results) {
                for (&i, v) in batch.iter().zip(vectors?) {
                    out[i] = v;
                }
                progress(batch.len());
            }
        }
        Ok(out)
    }

    /// Token ids and type ids of each text (truncated, with special tokens, unpadded).
    fn encode(&self, texts: &[&str]) -> Result<Vec<(Vec<u32>, Vec<u32>)>> {
        let texts = texts
            .iter()
            .map(|t| self.bounded_prefix(t))
            .collect::<Result<Vec<&str>>>()?;
        let encodings = self
            .tokenizer
            .encode_batch(texts, true)
            .map_err(|e| Error::Model {
                path: self.dir.join("tokenizer.json"),
                message: e.to_string(),
            })?;
        Ok(encodings
            .into_iter()
            .map(|e| {
                let n = e.get_ids().len().min(self.max_seq_length);
                (e.get_ids()[..n].to_vec(), e.get_type_ids()[..n].to_vec())
            })
            .collect())
    }
}

impl Embedder {
    /// The shortest prefix of `text`, cut just before a whitespace character, that the
    /// tokenizer truncates to the same tokens as all of `text`: the whole text when it is short,
    /// else a prefix of doubling length whose own encoding already fills
    /// [`max_seq_length`](Self::max_seq_length). The tokenizer builds several words of
    /// bookkeeping per token of its input before it truncates, so a 50 MB one-line passage
    /// would otherwise take gigabytes to yield 256 tokens. Cutting before whitespace never
    /// splits a word, so the prefix's tokens are the text's first tokens.
    fn bounded_prefix<'t>(&self, text: &'t str) -> Result<&'t str> {
        let mut len = PREFIX_BYTES_PER_TOKEN * self.max_seq_length;
        while len < text.len() {
            while !text.is_char_boundary(len) {
                len += 1;
            }
            let cut = text[len..]
                .char_indices()
                .find(|(_, c)| c.is_whitespace())
                .map_or(text.len(), |(i, _)| len + i);
            if cut == text.len() {
                break;
            }
            let prefix = &text[..cut];
            let tokens = self
                .tokenizer
                .encode(prefix, true)
                .map_err(|e| Error::Model {
                    path: self.dir.join("tokenizer.json"),
                    message: e.to_string(),
                })?
                .get_ids()
                .len();
            if tokens >= self.max_seq_length {
                return Ok(prefix);
            }
            len = cut.saturating_mul(2);
        }
        Ok(text)
    }
}

/// Cuts `order` (texts by index, already sorted) into consecutive batches of at most
/// [`MAX_BATCH`] texts and [`MAX_BATCH_TOKENS`] tokens (`tokens(i)` of text `i`); a text longer
/// than the budget makes a batch alone.
fn pack_batches(order: &[usize], tokens: impl Fn(usize) -> usize) -> Vec<&[usize]> {
    let mut batches = Vec::new();
    let (mut start, mut sum) = (0, 0);
    for (k, &i) in order.iter().enumerate() {
        let n = tokens(i);
        if k > start && (k - start == MAX_BATCH || sum + n > MAX_BATCH_TOKENS) {
            batches.push(&order[start..k]);
            start = k;
            sum = 0;
        }
        sum += n;
    }
    if start < order.len() {
        batches.push(&order[start..]);
    }
    batches
}

/// Bytes of text per token of the model's window below which a text is tokenized whole.
const PREFIX_BYTES_PER_TOKEN: usize = 32;

impl TextEmbedder for Embedder {
    fn model_id(&self) -> &str {
        Embedder::model_id(self)
    }
    fn dim(&self) -> usize {
        Embedder::dim(self)
    }
    fn embed(&self, texts: &[&str], progress: &mut dyn FnMut(usize)) -> Result<Vec<Vec<f32>>> {
        Embedder::embed(self, texts, progress)
    }
    fn token_counts(&self, texts: &[&str]) -> Result<Vec<usize>> {
        Embedder::token_counts(self, texts)
    }
}

/// `max_seq_length` from `sentence_bert_config.json`, or [`DEFAULT_MAX_SEQ_LENGTH`].
fn read_max_seq_length(dir: &Path) -> Result<usize> {
    let path = dir.join("sentence_bert_config.json");
    if !path.is_file() {
        return Ok(DEFAULT_MAX_SEQ_LENGTH);
    }
    let text = std::fs::read_to_string(&path).map_err(|e| Error::io(&path, e))?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| Error::malformed(&path, "JSON", e))?;
    match value.get("max_seq_length") {
        None | Some(serde_json::Value::Null) => Ok(DEFAULT_MAX_SEQ_LENGTH),
        Some(v) => match v.as_u64() {
            Some(n) if n >= 2 => Ok(n as usize),
            _ => Err(Error::field(
                &path,
                "sentence_bert_config",
                "max_seq_length",
                "expected an integer >= 2",
            )),
        },
    }
}

/// The identity [`Embedder::model_id`] would report for the model in `dir`, computed without
/// loading the model (hashing `model.safetensors` only), so a reusable export can be recognised
/// without paying for a model load.
pub fn model_id_of(dir: &Path) -> Result<String> {
    let weights = dir.join("model.safetensors");
    let bytes = std::fs::read(&weights).map_err(|e| Error::io(&weights, e))?;
    Ok(model_id_from(&model_name(dir), &bytes))
}

/// The model name: the directory's file name.
fn model_name(dir: &Path) -> String {
    dir.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "model".to_string())
}

/// The version of the forward pass's arithmetic (kernels, their summation orders, the pooling).
/// A change that can move any bit of any vector is a new version, so that vectors of the old
/// arithmetic are never served (from the embedding cache or an export) as if computed now.
pub const ARITHMETIC_VERSION: &str = "hb2";

/// `"<name>@<first 16 hex digits of BLAKE3(weights)>+<arithmetic version>.<matrix kernel>"`.
/// The matrix kernel (`avx512f`, `fma`, `scalar`, `neon`) is the one the CPU runs: the same
/// model gives vectors that differ in their last bits between kernels.
fn model_id_from(name: &str, weights: &[u8]) -> String {
    format!(
        "{name}@{}+{ARITHMETIC_VERSION}.{}",
        &blake3::hash(weights).to_hex().as_str()[..16],
        kernels::gemm_kernel()
    )
}

/// The embedding dimension of the model in `dir` (its config's `hidden_size`), without loading it.
pub fn model_dim_of(dir: &Path) -> Result<usize> {
    Ok(bert::BertConfig::read(&dir.join("config.json"))?.hidden_size)
}

/// Whether a `model` setting (campaign `model:`, `--model`, `HOPBENCH_MODEL_DIR`) selects the
/// built-in [`hashing`] embedder: exactly the text `hashing-384`. Any other spelling is a model
/// directory, so a directory of that name is reached as `./hashing-384`.
pub fn is_hashing_model(setting: &Path) -> bool {
    setting.as_os_str() == HASHING_MODEL
}

/// What outputs showing `model_id` add to it: `Some` for the non-semantic hashing embedder
/// (whose numbers measure the harness, not a model), `None` for a real model.
pub fn model_note(model_id: &str) -> Option<&'static str> {
    (model_id == HASHING_MODEL_ID).then_some(hashing::HASHING_NOTE)
}

/// `model_id`, with its [`model_note`] in parentheses where it has one.
pub fn describe_model(model_id: &str) -> String {
    match model_note(model_id) {
        Some(note) => format!("{model_id} ({note})"),
        None => model_id.to_string(),
    }
}
