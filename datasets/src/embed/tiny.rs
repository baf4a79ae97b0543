//! A tiny randomly initialised BERT model directory, so that the whole loading and embedding path
//! runs in tests without downloading anything.

use crate::rng::SplitMix64;
use std::collections::HashMap;
use std::path::Path;

use candle_core::{Device, Tensor};
use tokenizers::models::wordpiece::WordPiece;
use tokenizers::normalizers::bert::BertNormalizer;
use tokenizers::pre_tokenizers::bert::BertPreTokenizer;
use tokenizers::processors::bert::BertProcessing;
use tokenizers::{
    AddedToken, PaddingDirection, PaddingParams, PaddingStrategy, Tokenizer, TruncationParams,
};

use crate::{Error, Result};

/// Hidden size of the tiny model (its vector dimension).
pub(crate) const TINY_HIDDEN: usize = 32;
const TINY_LAYERS: usize = 2;
const TINY_HEADS: usize = 2;
const TINY_INTERMEDIATE: usize = 64;
/// Position table size; the tiny model's `max_seq_length` is clamped to it.
pub(crate) const TINY_MAX_POSITIONS: usize = 64;

const SPECIAL: [&str; 5] = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"];
const PUNCTUATION: &str = ".,!?'\"-():;";
const WORDS: &[&str] = &[
    "the",
    "a",
    "an",
    "of",
    "and",
    "or",
    "to",
    "in",
    "is",
    "was",
    "are",
    "were",
    "be",
    "on",
    "at",
    "for",
    "with",
    "by",
    "from",
    "as",
    "it",
    "its",
    "he",
    "she",
    "his",
    "her",
    "they",
    "their",
    "this",
    "that",
    "who",
    "what",
    "where",
    "when",
    "which",
    "how",
    "not",
    "no",
    "yes",
    "one",
    "two",
    "three",
    "first",
    "year",
    "years",
    "city",
    "river",
    "country",
    "state",
    "film",
    "song",
    "album",
    "band",
    "book",
    "born",
    "died",
    "king",
    "queen",
    "war",
    "world",
    "new",
    "old",
    "large",
    "small",
    "cat",
    "cats",
    "dog",
    "dogs",
    "sat",
    "sit",
    "mat",
    "house",
    "car",
    "train",
    "run",
    "ran",
    "eat",
    "ate",
    "food",
    "water",
    "sun",
    "moon",
    "day",
    "night",
    "time",
    "people",
    "man",
    "woman",
    "child",
    "school",
    "music",
    "game",
    "team",
    "play",
    "played",
    "made",
    "make",
    "has",
    "have",
    "had",
    "capital",
    "paris",
    "france",
    "london",
    "england",
    "york",
    "president",
];
const SUFFIXES: &[&str] = &[
    "s", "es", "ed", "ing", "er", "est", "ly", "ion", "tion", "al", "ic",
];

/// The tiny model's vocabulary, in id order.
fn vocabulary() -> Vec<String> {
    let mut v: Vec<String> = SPECIAL.iter().map(|s| s.to_string()).collect();
    v.extend(PUNCTUATION.chars().map(String::from));
    v.extend(('a'..='z').map(String::from));
    v.extend(('0'..='9').map(String::from));
    v.extend(WORDS.iter().map(|w| w.to_string()));
    v.extend(SUFFIXES.iter().map(|s| format!("##{s}")));
    v.extend(('a'..='z').chain('0'..='9').map(|c| format!("##{c}")));
    let mut seen = std::collections::HashSet::new();
    v.retain(|t| seen.insert(t.clone()));
    v
}

/// `n` values uniform in [center - half_width, center + half_width), from `rng`.
fn fill(rng: &mut SplitMix64, n: usize, center: f32, half_width: f32) -> Vec<f32> {
    (0..n)
        .map(|_| {
            center
                + half_width * (((rng.next_u64() >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0)
        })
        .collect()
}

/// Writes a tiny randomly initialised BERT sentence-embedding model to `dir` (created if
/// needed): `config.json` (hidden 32, 2 layers, 2 heads, intermediate 64, 64 positions),
/// `model.safetensors` with weights from a SplitMix64 stream seeded by `seed`, `vocab.txt`,
/// `tokenizer.json` (WordPiece over a ~200-token vocabulary with BERT normalisation,
/// pre-tokenisation and `[CLS]`/`[SEP]` post-processing) and `sentence_bert_config.json`.
///
/// The same seed writes the same bytes. Like the real model's tokenizer file, the tokenizer
/// truncates and pads to a fixed length (16 here), which [`super::Embedder::load`] must override.
pub fn write_tiny_model(dir: &Path, seed: u64) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let vocab = vocabulary();
    write_tokenizer(dir, &vocab)?;
    write_configs(dir, vocab.len())?;
    write_weights(dir, seed, vocab.len())
}

/// A model file at `path` that could not be made, as the loader reports a bad one.
fn model_err(path: &Path, message: String) -> Error {
    Error::Model {
        path: path.to_path_buf(),
        message,
    }
}

/// Writes `vocab.txt` and `tokenizer.json` (WordPiece over `vocab`, BERT normalisation,
/// pre-tokenisation and post-processing, truncated and padded to 16 like a real model's file).
fn write_tokenizer(dir: &Path, vocab: &[String]) -> Result<()> {
    let vocab_txt: String = vocab.iter().map(|t| format!("{t}\n")).collect();
    let vocab_path = dir.join("vocab.txt");
    std::fs::write(&vocab_path, &vocab_txt).map_err(|e| Error::io(&vocab_path, e))?;
    let tok_path = dir.join("tokenizer.json");
    let id = |t: &str| vocab.iter().position(|v| v == t).unwrap_or(0) as u32;
    let build_tokenizer = || -> tokenizers::Result<Tokenizer> {
        let wordpiece = WordPiece::builder()
            .vocab(WordPiece::read_bytes(vocab_txt.as_bytes())?)
            .unk_token("[UNK]".to_string())
            .continuing_subword_prefix("##".to_string())
            .max_input_chars_per_word(100)
            .build()?;
        let mut tok = Tokenizer::new(wordpiece);
        tok.with_normalizer(Some(BertNormalizer::new(true, true, None, true)))?;
        tok.with_pre_tokenizer(Some(BertPreTokenizer));
        tok.with_post_processor(Some(BertProcessing::new(
            ("[SEP]".to_string(), id("[SEP]")),
            ("[CLS]".to_string(), id("[CLS]")),
        )));
        let special: Vec<AddedToken> = SPECIAL
            .iter()
            .map(|s| AddedToken::from(s.to_string(), true))
            .collect();
        tok.add_special_tokens(special)?;
        tok.with_truncation(Some(TruncationParams {
            max_length: 16,
            ..Default::default()
        }))?;
        tok.with_padding(Some(PaddingParams {
            strategy: PaddingStrategy::Fixed(16),
            direction: PaddingDirection::Right,
            pad_to_multiple_of: None,
            pad_id: id("[PAD]"),
            pad_type_id: 0,
            pad_token: "[PAD]".to_string(),
        }));
        Ok(tok)
    };
    let tokenizer = build_tokenizer().map_err(|e| model_err(&tok_path, e.to_string()))?;
    tokenizer
        .save(&tok_path, true)
        .map_err(|e| model_err(&tok_path, e.to_string()))?;
    Ok(())
}

/// Writes `config.json` (the tiny BERT's shape, over `vocab_len` tokens) and
/// `sentence_bert_config.json`.
fn write_configs(dir: &Path, vocab_len: usize) -> Result<()> {
    let config = serde_json::json!({
        "architectures": ["BertModel"],
        "model_type": "bert",
        "hidden_act": "gelu",
        "hidden_size": TINY_HIDDEN,
        "num_hidden_layers": TINY_LAYERS,
        "num_attention_heads": TINY_HEADS,
        "intermediate_size": TINY_INTERMEDIATE,
        "max_position_embeddings": TINY_MAX_POSITIONS,
        "type_vocab_size": 2,
        "vocab_size": vocab_len,
        "layer_norm_eps": 1e-12,
        "pad_token_id": 0,
        "position_embedding_type": "absolute",
    });
    let write_json = |name: &str, value: &serde_json::Value| -> Result<()> {
        let path = dir.join(name);
        let text = serde_json::to_string_pretty(value).unwrap_or_default();
        std::fs::write(&path, text + "\n").map_err(|e| Error::io(&path, e))
    };
    write_json("config.json", &config)?;
    // Larger than the position table on purpose: the loader clamps it.
    write_json(
        "sentence_bert_config.json",
        &serde_json::json!({"max_seq_length": 256, "do_lower_case": false}),
    )
}

/// Writes `model.safetensors`: the [`TinyWeights`] of `seed` over `vocab_len` tokens.
fn write_weights(dir: &Path, seed: u64, vocab_len: usize) -> Result<()> {
    let weights_path = dir.join("model.safetensors");
    let mut map: HashMap<String, Tensor> = HashMap::new();
    for (name, dims, values) in TinyWeights::draw(seed, vocab_len).tensors {
        let t = Tensor::from_vec(values, dims, &Device::Cpu)
            .map_err(|e| model_err(&weights_path, e.to_string()))?;
        map.insert(name, t);
    }
    candle_core::safetensors::save(&map, &weights_path)
        .map_err(|e| model_err(&weights_path, e.to_string()))?;
    Ok(())
}

/// The tiny model's tensors (name, shape, row-major values), each drawn in turn from one
/// SplitMix64 stream: the order of the draws fixes every value, so the same seed always writes
/// the same weights.
struct TinyWeights {
    rng: SplitMix64,
    tensors: Vec<(String, Vec<usize>, Vec<f32>)>,
}

impl TinyWeights {
    /// Every tensor of the tiny model from `seed`: the embedding tables and their LayerNorm,
    /// then each layer's attention, LayerNorm, feed-forward and LayerNorm.
    fn draw(seed: u64, vocab_len: usize) -> Self {
        let mut w = TinyWeights {
            rng: SplitMix64::new(seed),
            tensors: Vec::new(),
        };
        let (h, i) = (TINY_HIDDEN, TINY_INTERMEDIATE);
        w.matrix("embeddings.word_embeddings.weight", vec![vocab_len, h], 0.5);
        let positions = vec![TINY_MAX_POSITIONS, h];
        w.matrix("embeddings.position_embeddings.weight", positions, 0.2);
        w.matrix("embeddings.token_type_embeddings.weight", vec![2, h], 0.2);
        w.norm("embeddings.LayerNorm");
        for l in 0..TINY_LAYERS {
            let p = format!("encoder.layer.{l}");
            w.linear(&format!("{p}.attention.self.query"), h, h);
            w.linear(&format!("{p}.attention.self.key"), h, h);
            w.linear(&format!("{p}.attention.self.value"), h, h);
            w.linear(&format!("{p}.attention.output.dense"), h, h);
            w.norm(&format!("{p}.attention.output.LayerNorm"));
            w.linear(&format!("{p}.intermediate.dense"), i, h);
            w.linear(&format!("{p}.output.dense"), h, i);
            w.norm(&format!("{p}.output.LayerNorm"));
        }
        w
    }

    /// A `dims` table uniform in `[-scale, scale)` (embeddings).
    fn matrix(&mut self, name: &str, dims: Vec<usize>, scale: f32) {
        let n = dims.iter().product();
        let values = fill(&mut self.rng, n, 0.0, scale);
        self.tensors.push((name.to_string(), dims, values));
    }

    /// A LayerNorm: weights near 1, biases near 0, so it starts close to the identity.
    fn norm(&mut self, prefix: &str) {
        let h = TINY_HIDDEN;
        let weight = fill(&mut self.rng, h, 1.0, 0.1);
        self.tensors
            .push((format!("{prefix}.weight"), vec![h], weight));
        let bias = fill(&mut self.rng, h, 0.0, 0.05);
        self.tensors.push((format!("{prefix}.bias"), vec![h], bias));
    }

    /// A linear layer `in_dim -> out_dim`: weights uniform within `sqrt(3 / in_dim)` (unit
    /// variance through the layer), small biases.
    fn linear(&mut self, name: &str, out_dim: usize, in_dim: usize) {
        let bound = (3.0 / in_dim as f32).sqrt();
        let weight = fill(&mut self.rng, out_dim * in_dim, 0.0, bound);
        self.tensors
            .push((format!("{name}.weight"), vec![out_dim, in_dim], weight));
        let bias = fill(&mut self.rng, out_dim, 0.0, 0.05);
        self.tensors
            .push((format!("{name}.bias"), vec![out_dim], bias));
    }
}
