//! Dense sentence embeddings on CPU: a sentence-transformers model directory (the default is
//! all-MiniLM-L6-v2, 384 dimensions), read as sentence-transformers reads it and run in Rust
//! with candle.
//!
//! A model directory holds the encoder (`config.json`, `model.safetensors`, `tokenizer.json`:
//! BERT, XLM-RoBERTa or MPNet) and the sentence-transformers modules around it (`modules.json`:
//! Pooling, Dense, Normalize; `config_sentence_transformers.json`: the prompts): see
//! `model_dir.rs`. `scripts/setup` installs the default one into `models/all-MiniLM-L6-v2/`.
//! [`Embedder::load`] reads it; [`Embedder::embed`] turns texts of a [`Role`] into vectors;
//! [`EmbeddingCache`] and [`embed_cached`] keep vectors on disk keyed by (model id, BLAKE3 of the
//! prompt and the text) so no text is embedded twice.
//!
//! **Determinism.** A vector is a pure function of its text and the model: it does not depend on
//! the other texts of the call, their order, the batch size or the thread count. Texts are sorted
//! by token count and packed into batches without padding; the dense layers run on the packed
//! token rows, and attention runs per text over its own rows (see `encoder.rs`), so a text's
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
//! use hopbench_datasets::embed::{default_model_dir, embed_cached, Embedder, EmbeddingCache, Role};
//! # fn main() -> hopbench_datasets::Result<()> {
//! let embedder = Embedder::load(&default_model_dir())?;
//! let mut cache = EmbeddingCache::open("cache/vectors".as_ref(), embedder.model_id(), embedder.dim())?;
//! let texts = ["The cat sat on the mat."];
//! let vectors = embed_cached(&embedder, &mut cache, Role::Passage, &texts, &mut |_| {})?;
//! assert_eq!(vectors[0].len(), 384);
//! # Ok(()) }
//! ```

mod bert;
mod cache;
mod cross_encoder;
mod encoder;
pub mod hashing;
mod kernels;
mod model_dir;
mod mpnet;
mod pooling;
mod tiny;
mod xlm_roberta;

#[cfg(test)]
mod goldens;
#[cfg(test)]
mod tests;

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use tokenizers::normalizers::utils::{Lowercase, Sequence as NormalizerSequence};
use tokenizers::normalizers::NormalizerWrapper;
use tokenizers::pre_tokenizers::metaspace::{Metaspace, PrependScheme};
use tokenizers::pre_tokenizers::sequence::Sequence as PreTokenizerSequence;
use tokenizers::pre_tokenizers::whitespace::WhitespaceSplit;
use tokenizers::{Tokenizer, TruncationDirection, TruncationParams, TruncationStrategy};

use encoder::{Architecture, Encoder, EncoderConfig};
use model_dir::ModelDir;

pub use crate::model::Role;
pub use cache::{embed_cached, EmbeddingCache};
pub use cross_encoder::CrossEncoder;
pub use hashing::{HashingEmbedder, HASHING_DIM, HASHING_MODEL, HASHING_MODEL_ID};
pub use tiny::write_tiny_model;

use crate::{Error, Result};

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
    /// The prompt prepended to texts of `role` ("" for none): part of what a cached vector is
    /// keyed by.
    fn prompt(&self, _role: Role) -> &str {
        ""
    }
    /// One vector per text of `role`, in input order; `progress(n)` after every `n` texts
    /// finished.
    fn embed(
        &self,
        texts: &[&str],
        role: Role,
        progress: &mut dyn FnMut(usize),
    ) -> Result<Vec<Vec<f32>>>;
    /// How many tokens of each text the embedder reads (its own tokenizer, after truncation):
    /// the unit its cost grows with.
    fn token_counts(&self, texts: &[&str]) -> Result<Vec<usize>>;
}

/// Prompts that replace a model's own for one role (`None`: the model's; `Some("")`: none),
/// as a campaign's `query_prompt` and `passage_prompt` set them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PromptOverrides {
    /// The prompt of queries.
    pub query: Option<String>,
    /// The prompt of passages.
    pub passage: Option<String>,
}

impl PromptOverrides {
    /// The model directory `dir`'s pipeline with these prompts in place of its own.
    fn read(&self, dir: &Path) -> Result<ModelDir> {
        let mut pipeline = ModelDir::read(dir)?;
        if let Some(q) = &self.query {
            pipeline.prompts.query = q.clone();
        }
        if let Some(p) = &self.passage {
            pipeline.prompts.passage = p.clone();
        }
        Ok(pipeline)
    }
}

/// A loaded sentence-embedding model: tokenizer, encoder, and the sentence-transformers modules
/// its directory lists.
pub struct Embedder {
    dir: PathBuf,
    name: String,
    model_id: String,
    max_seq_length: usize,
    tokenizer: Tokenizer,
    encoder: Encoder,
    pipeline: ModelDir,
    /// Tokens of the query prompt that leave the pooling (0: none, or the prompt is pooled).
    query_skip: usize,
    /// The same for the passage prompt.
    passage_skip: usize,
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

/// The files of the Transformer's folder, each required.
fn required(folder: &Path, file: &str) -> Result<PathBuf> {
    let p = folder.join(file);
    if p.is_file() {
        Ok(p)
    } else {
        Err(Error::Model {
            path: p,
            message: "missing model file".into(),
        })
    }
}

impl Embedder {
    /// Loads the model in `dir`, read as sentence-transformers reads it (see `model_dir.rs`):
    /// the encoder (`config.json`, `model.safetensors`, `tokenizer.json`) and the modules
    /// `modules.json` lists. The tokenizer's own truncation and padding settings are replaced:
    /// truncation to [`max_seq_length`](Self::max_seq_length), no padding.
    ///
    /// Every failure is an [`Error::Model`] (or [`Error::Io`] / [`Error::Malformed`] /
    /// [`Error::Field`]) naming the file, and the field where there is one.
    pub fn load(dir: &Path) -> Result<Embedder> {
        Self::load_with(dir, &PromptOverrides::default())
    }

    /// [`load`](Self::load), with `prompts` in place of the model's own where they are set.
    pub fn load_with(dir: &Path, prompts: &PromptOverrides) -> Result<Embedder> {
        if !dir.is_dir() {
            return Err(Error::Model {
                path: dir.to_path_buf(),
                message: "not a directory (run scripts/setup to install the default model, or set \
                          HOPBENCH_MODEL_DIR)"
                    .into(),
            });
        }
        let name = model_name(dir);
        let pipeline = prompts.read(dir)?;
        let folder = &pipeline.transformer;
        let config_path = required(folder, "config.json")?;
        let weights_path = required(folder, "model.safetensors")?;
        let tokenizer_path = required(folder, "tokenizer.json")?;

        let cfg = EncoderConfig::read(&config_path)?;
        pipeline.check_sizes(cfg.hidden_size, &config_path)?;
        let architecture = cfg.architecture(&config_path)?;
        let bytes = std::fs::read(&weights_path).map_err(|e| Error::io(&weights_path, e))?;
        let encoder = load_encoder(cfg, &bytes, &weights_path, &config_path)?;
        let max_seq_length = max_seq_length(&pipeline, encoder.config(), encoder.position_offset);
        let model_id = model_id_from(&name, &bytes, &pipeline, max_seq_length);
        drop(bytes);

        let tokenizer = load_tokenizer(&tokenizer_path, architecture, &pipeline, max_seq_length)?;
        let vocab = tokenizer.get_vocab_size(true);
        if vocab > encoder.config().vocab_size {
            return Err(Error::Model {
                path: tokenizer_path,
                message: format!(
                    "tokenizer has {vocab} tokens but the model's vocab_size is {}",
                    encoder.config().vocab_size
                ),
            });
        }
        let mut e = Embedder {
            dir: dir.to_path_buf(),
            name,
            model_id,
            max_seq_length,
            tokenizer,
            encoder,
            pipeline,
            query_skip: 0,
            passage_skip: 0,
        };
        if !e.pipeline.pooling.include_prompt {
            e.query_skip = e.prompt_length(&e.pipeline.prompts.query)?;
            e.passage_skip = e.prompt_length(&e.pipeline.prompts.passage)?;
        }
        Ok(e)
    }

    /// The tokens of `prompt` that leave the pooling when the model pools without its prompt:
    /// the prompt tokenised alone, its leading special token included, its trailing special
    /// token not (as sentence-transformers counts them).
    fn prompt_length(&self, prompt: &str) -> Result<usize> {
        if prompt.is_empty() {
            return Ok(0);
        }
        let enc = self
            .tokenizer
            .encode(prompt, true)
            .map_err(|e| self.tokenizer_error(e))?;
        let n = enc.get_ids().len().min(self.max_seq_length);
        let trailing_special = enc.get_special_tokens_mask().get(n.wrapping_sub(1)) == Some(&1);
        Ok(n - usize::from(n > 0 && trailing_special))
    }

    fn tokenizer_error(&self, e: impl ToString) -> Error {
        Error::Model {
            path: self.pipeline.transformer.join("tokenizer.json"),
            message: e.to_string(),
        }
    }

    /// `"<model name>@<first 16 hex digits of BLAKE3(model.safetensors)>+<arithmetic>.<kernel>"`,
    /// where the model name is the directory's file name, the arithmetic is
    /// [`ARITHMETIC_VERSION`] and the kernel is the matrix kernel this CPU runs, e.g.
    /// `all-MiniLM-L6-v2@8087e9bf97c265f8+hb2.avx512f`; a model whose modules are not plain mean
    /// pooling and normalisation (other pooling, Dense layers, prompts, ...) adds
    /// `.p<first 12 hex digits of BLAKE3(its pipeline)>`.
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

    /// The vector dimension: the pooled width (the encoder's hidden size times the pooling
    /// modes), or the last Dense layer's, cut to `truncate_dim` where the model sets one.
    pub fn dim(&self) -> usize {
        self.pipeline.dim(self.encoder.config().hidden_size)
    }

    /// Texts are truncated to this many tokens, special tokens and the prompt included.
    pub fn max_seq_length(&self) -> usize {
        self.max_seq_length
    }

    /// The prompt prepended to texts of `role` ("" for none).
    pub fn prompt(&self, role: Role) -> &str {
        match role {
            Role::Query => &self.pipeline.prompts.query,
            Role::Passage => &self.pipeline.prompts.passage,
        }
    }

    /// Number of tokens of each text after truncation (special tokens included, no prompt).
    pub fn token_counts(&self, texts: &[&str]) -> Result<Vec<usize>> {
        let mut out = Vec::with_capacity(texts.len());
        for chunk in texts.chunks(TOKENIZE_CHUNK) {
            for enc in self.encode(chunk, "")? {
                out.push(enc.0.len());
            }
        }
        Ok(out)
    }

    /// Embeds `texts` of `role`: one vector of [`dim`](Self::dim) floats per text, in input
    /// order. `progress(n)` is called after each batch with the number of texts it finished.
    ///
    /// Each vector is a pure function of its text and role (see the module docs): texts are
    /// sorted by (token count, input index), packed into batches of up to [`MAX_BATCH`] texts
    /// and [`MAX_BATCH_TOKENS`] tokens without padding, and the results put back in input order.
    pub fn embed(
        &self,
        texts: &[&str],
        role: Role,
        progress: &mut dyn FnMut(usize),
    ) -> Result<Vec<Vec<f32>>> {
        let prompt = self.prompt(role);
        let skip = match role {
            Role::Query => self.query_skip,
            Role::Passage => self.passage_skip,
        };
        let mut ids: Vec<Vec<u32>> = Vec::with_capacity(texts.len());
        let mut types: Vec<Vec<u32>> = Vec::with_capacity(texts.len());
        for chunk in texts.chunks(TOKENIZE_CHUNK) {
            for (i, t) in self.encode(chunk, prompt)? {
                ids.push(i);
                types.push(t);
            }
        }
        let h = self.encoder.config().hidden_size;
        let out = run_packed(
            &self.encoder,
            &self.dir,
            (&ids, &types),
            |rows| pooling::sentence_vector(&self.pipeline, rows, h, skip),
            progress,
        )?;
        Ok(out)
    }

    /// Token ids and type ids of each text with `prompt` before it (truncated, with special
    /// tokens, unpadded).
    fn encode(&self, texts: &[&str], prompt: &str) -> Result<Vec<(Vec<u32>, Vec<u32>)>> {
        let texts = texts
            .iter()
            .map(|t| {
                // a text without a prompt is tokenised in place, not copied
                self.bounded_prefix(t).map(|t| match prompt {
                    "" => Cow::Borrowed(t),
                    _ => Cow::Owned(format!("{prompt}{t}")),
                })
            })
            .collect::<Result<Vec<Cow<'_, str>>>>()?;
        let encodings = self
            .tokenizer
            .encode_batch(texts, true)
            .map_err(|e| self.tokenizer_error(e))?;
        Ok(encodings
            .into_iter()
            .map(|e| {
                let n = e.get_ids().len().min(self.max_seq_length);
                (e.get_ids()[..n].to_vec(), e.get_type_ids()[..n].to_vec())
            })
            .collect())
    }
}

/// The encoder of the architecture `config.json` (`config`) names, from the bytes of
/// `model.safetensors` (`path` is for messages).
fn load_encoder(cfg: EncoderConfig, bytes: &[u8], path: &Path, config: &Path) -> Result<Encoder> {
    match cfg.architecture(config)? {
        Architecture::Bert => bert::load(cfg, bytes, path, config),
        Architecture::XlmRoberta => xlm_roberta::load(cfg, bytes, path, config),
        Architecture::MpNet => mpnet::load(cfg, bytes, path, config),
    }
}

/// The truncation length: `max_seq_length` as the directory gives it, else the tokenizer's
/// `model_max_length` (as sentence-transformers falls back), within the position table in
/// both cases (a longer sequence has no position to take; `offset`: the first position id).
fn max_seq_length(pipeline: &ModelDir, cfg: &EncoderConfig, offset: usize) -> usize {
    let table = cfg.max_position_embeddings;
    let wanted = match pipeline.max_seq_length {
        Some(n) => n,
        None => pipeline.tokenizer_max_length.unwrap_or(table).min(table),
    };
    wanted.min(table - offset)
}

/// The tokenizer of `path` as the model reads it: truncation to `max_seq_length` and no padding
/// (whatever the file says), a lower-casing step first where `do_lower_case` asks, and for
/// XLM-RoBERTa the pre-tokenizer transformers builds for it (whitespace split, then Metaspace),
/// which real tokenizer files lack: runs of spaces, tabs and newlines are one separator, as the
/// model was trained to see them.
fn load_tokenizer(
    path: &Path,
    architecture: Architecture,
    pipeline: &ModelDir,
    max_seq_length: usize,
) -> Result<Tokenizer> {
    let err = |message: String| Error::Model {
        path: path.to_path_buf(),
        message,
    };
    let mut tokenizer = Tokenizer::from_file(path).map_err(|e| err(e.to_string()))?;
    tokenizer
        .with_truncation(Some(TruncationParams {
            direction: TruncationDirection::Right,
            max_length: max_seq_length,
            strategy: TruncationStrategy::LongestFirst,
            stride: 0,
        }))
        .map_err(|e| err(e.to_string()))?;
    tokenizer.with_padding(None);
    if pipeline.do_lower_case {
        let lowercases = |n: &NormalizerWrapper| match n {
            NormalizerWrapper::Lowercase(_) => true,
            NormalizerWrapper::Sequence(s) => s
                .as_ref()
                .iter()
                .any(|n| matches!(n, NormalizerWrapper::Lowercase(_))),
            _ => false,
        };
        match tokenizer.get_normalizer().cloned() {
            Some(n) if lowercases(&n) => {}
            existing => {
                let mut list = vec![NormalizerWrapper::Lowercase(Lowercase)];
                match existing {
                    Some(NormalizerWrapper::Sequence(s)) => list.extend(s),
                    Some(n) => list.push(n),
                    None => {}
                }
                tokenizer
                    .with_normalizer(Some(NormalizerSequence::new(list)))
                    .map_err(|e| err(e.to_string()))?;
            }
        }
    }
    if architecture == Architecture::XlmRoberta {
        tokenizer.with_pre_tokenizer(Some(PreTokenizerSequence::new(vec![
            WhitespaceSplit.into(),
            Metaspace::new('\u{2581}', PrependScheme::Always, true).into(),
        ])));
    }
    let has_special = ["[CLS]", "<s>"]
        .iter()
        .any(|t| tokenizer.token_to_id(t).is_some());
    if !has_special {
        return Err(err(
            "the tokenizer has neither `[CLS]` nor `<s>`: not a BERT-family tokenizer".into(),
        ));
    }
    Ok(tokenizer)
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

/// Runs `encoder` over the token sequences `ids` (with their token `types`) and maps each
/// sequence's hidden rows (`len x hidden_size`, its own tokens only) through `each`, in input
/// order. What makes an output a pure function of its sequence: sequences sorted by (length,
/// index), packed without padding ([`pack_batches`]), attention per sequence. One batch per pool
/// thread at a time: the GEMM kernel alone scales poorly to two threads at these sizes, and
/// batch-level parallelism keeps both busy; results do not depend on which thread runs what.
/// `progress(n)` after each batch of `n` sequences. Errors name `dir`.
pub(crate) fn run_packed<T: Clone + Default + Send>(
    encoder: &Encoder,
    dir: &Path,
    (ids, types): (&[Vec<u32>], &[Vec<u32>]),
    each: impl Fn(&[f32]) -> T + Sync,
    progress: &mut dyn FnMut(usize),
) -> Result<Vec<T>> {
    let mut order: Vec<usize> = (0..ids.len()).collect();
    order.sort_by_key(|&i| (ids[i].len(), i));
    let mut out: Vec<T> = vec![T::default(); ids.len()];
    let batches = pack_batches(&order, |i| ids[i].len());
    let h = encoder.config().hidden_size;
    let in_flight = rayon::current_num_threads().max(1);
    for group in batches.chunks(in_flight) {
        let results: Vec<Result<Vec<T>>> = group
            .par_iter()
            .map(|batch| {
                let batch_ids: Vec<&[u32]> = batch.iter().map(|&i| ids[i].as_slice()).collect();
                let batch_types: Vec<&[u32]> = batch.iter().map(|&i| types[i].as_slice()).collect();
                let hidden =
                    encoder
                        .hidden(&batch_ids, &batch_types)
                        .map_err(|e| Error::Model {
                            path: dir.to_path_buf(),
                            message: format!("forward pass: {e}"),
                        })?;
                Ok(hidden
                    .spans
                    .iter()
                    .map(|&(start, len)| each(&hidden.rows[start * h..(start + len) * h]))
                    .collect())
            })
            .collect();
        for (batch, outputs) in group.iter().zip(results) {
            for (&i, v) in batch.iter().zip(outputs?) {
                out[i] = v;
            }
            progress(batch.len());
        }
    }
    Ok(out)
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
    fn prompt(&self, role: Role) -> &str {
        Embedder::prompt(self, role)
    }
    fn embed(
        &self,
        texts: &[&str],
        role: Role,
        progress: &mut dyn FnMut(usize),
    ) -> Result<Vec<Vec<f32>>> {
        Embedder::embed(self, texts, role, progress)
    }
    fn token_counts(&self, texts: &[&str]) -> Result<Vec<usize>> {
        Embedder::token_counts(self, texts)
    }
}

/// The identity [`Embedder::model_id`] would report for the model in `dir`, computed without
/// loading the encoder (reading its configs and hashing its weights), so a reusable export can
/// be recognised without paying for a model load.
pub fn model_id_of(dir: &Path) -> Result<String> {
    model_id_with(dir, &PromptOverrides::default())
}

/// [`model_id_of`] with `prompts` in place of the model's own where they are set.
pub fn model_id_with(dir: &Path, prompts: &PromptOverrides) -> Result<String> {
    let pipeline = prompts.read(dir)?;
    let config = pipeline.transformer.join("config.json");
    let cfg = EncoderConfig::read(&config)?;
    let offset = cfg.position_offset(&config)?;
    let weights = pipeline.transformer.join("model.safetensors");
    let bytes = std::fs::read(&weights).map_err(|e| Error::io(&weights, e))?;
    let max_seq_length = max_seq_length(&pipeline, &cfg, offset);
    Ok(model_id_from(
        &model_name(dir),
        &bytes,
        &pipeline,
        max_seq_length,
    ))
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

/// `"<name>@<first 16 hex digits of BLAKE3(weights)>+<arithmetic version>.<matrix kernel>"`,
/// then `.p<pipeline hash>` for a pipeline other than plain mean pooling and normalisation.
/// The matrix kernel (`avx512f`, `fma`, `scalar`, `neon`) is the one the CPU runs: the same
/// model gives vectors that differ in their last bits between kernels.
fn model_id_from(name: &str, weights: &[u8], pipeline: &ModelDir, max_seq_length: usize) -> String {
    let base = format!(
        "{name}@{}+{ARITHMETIC_VERSION}.{}",
        &blake3::hash(weights).to_hex().as_str()[..16],
        kernels::gemm_kernel()
    );
    if pipeline.is_plain() {
        base
    } else {
        let described = pipeline.describe(max_seq_length);
        format!(
            "{base}.p{}",
            &blake3::hash(described.as_bytes()).to_hex().as_str()[..12]
        )
    }
}

/// The prompt texts of `role` were embedded after under model id `model_id`, without loading
/// the model: "" for an id of the plain pipeline (mean pooling and normalisation, no prompts),
/// else the prompt of the model in `dir`, which must be that model.
pub fn prompt_for(
    model_id: &str,
    dir: &Path,
    prompts: &PromptOverrides,
    role: Role,
) -> Result<String> {
    let kernel = model_id.rsplit('+').next().unwrap_or("");
    if !kernel.contains(".p") {
        return Ok(String::new());
    }
    let found = model_id_with(dir, prompts)?;
    if found != model_id {
        return Err(Error::Model {
            path: dir.to_path_buf(),
            message: format!(
                "the vectors were embedded with `{model_id}`, this model is `{found}`"
            ),
        });
    }
    let prompts = prompts.read(dir)?.prompts;
    Ok(match role {
        Role::Query => prompts.query,
        Role::Passage => prompts.passage,
    })
}

/// The embedding dimension of the model in `dir`, without loading it.
pub fn model_dim_of(dir: &Path) -> Result<usize> {
    let pipeline = ModelDir::read(dir)?;
    let cfg = EncoderConfig::read(&pipeline.transformer.join("config.json"))?;
    Ok(pipeline.dim(cfg.hidden_size))
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
