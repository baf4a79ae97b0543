//! A sentence-transformers cross-encoder on CPU: a (query, passage) pair read together by one
//! encoder, scored by its classification head, as `sentence_transformers.CrossEncoder.predict`
//! (sentence-transformers 6.3, transformers 5) scores it.
//!
//! **The directory.** Two layouts, as sentence-transformers tells them apart:
//!
//! - with `modules.json` (what `CrossEncoder.save_pretrained` writes since 6.0): one Transformer
//!   module and nothing after it; `config_sentence_transformers.json` says `"model_type":
//!   "CrossEncoder"` and gives the activation (`activation_fn`) and any default prompt;
//!   `sentence_bert_config.json` may give `max_seq_length` and `do_lower_case`;
//! - without it (a Hugging Face cross-encoder, and what sentence-transformers 4 and 5 saved):
//!   `config.json` alone, its `sentence_transformers.activation_fn` or the older
//!   `sbert_ce_default_activation_function`. sentence-transformers reads
//!   `config_sentence_transformers.json` only through `modules.json`, so here it is ignored.
//!
//! Either way the encoder is `config.json` + `model.safetensors` + `tokenizer.json` with a
//! sequence-classification head: BERT's `classifier(tanh(pooler.dense(h[CLS])))` (pooler under
//! the encoder's own prefix, `bert.` or none) or XLM-RoBERTa's
//! `classifier.out_proj(tanh(classifier.dense(h[<s>])))`. The activation is the first of the
//! places above that names one (Sigmoid, Identity, Tanh, ReLU by their torch paths), else Sigmoid
//! for one label and Identity for several. A checkpoint with several labels is scored by one of
//! them, chosen at load.
//!
//! **Pairs.** A pair is tokenised as a text pair, as transformers 5 builds the tokenizer: BERT
//! `[CLS] query [SEP] passage [SEP]` with token types 0 up to the first `[SEP]` and 1 after;
//! XLM-RoBERTa `<s> query </s></s> passage </s>` with one token type. A pair longer than the
//! model's limit is cut by the `tokenizers` crate's `longest_first`, the code the Python fast
//! tokenizer runs: the shorter side keeps its tokens while it has at most half the room, else
//! each side gets half and the odd token goes to the longer side (to the passage when they are
//! as long), which is not what removing one token at a time from the longer side gives (that
//! leaves the odd token to the query). The texts are **not** stripped:
//! `CrossEncoder.predict` passes them to the tokenizer as given (only its training collator
//! strips); for these tokenizers whitespace around words changes no token anyway. A default
//! prompt goes before the query alone.
//!
//! **Determinism.** As for [`Embedder`](super::Embedder): pairs are sorted by token count and
//! packed into batches without padding, attention runs per pair over its own rows, and the head
//! sums in `f64` in a fixed order, so a score is a pure function of its pair and the model,
//! whatever else is scored with it and however many threads run it. The matrix kernel is part
//! of [`CrossEncoder::model_id`].

use std::path::{Path, PathBuf};

use candle_core::safetensors::SliceSafetensors;
use candle_core::{DType, Device};
use serde_json::{Map, Value};
use tokenizers::processors::template::TemplateProcessing;
use tokenizers::{EncodeInput, Tokenizer};

use super::encoder::{Architecture, Encoder, EncoderConfig};
use super::model_dir::{bad, read_map, Activation, ModelDir, PoolMode, Pooling, Prompts};
use super::{kernels, load_encoder, load_tokenizer, model_name, required, run_packed};
use super::{ARITHMETIC_VERSION, TOKENIZE_CHUNK};
use crate::{Error, Result};

#[cfg(test)]
mod goldens;

/// Bytes of passage per token of the model's window below which a passage is tokenised whole.
const PREFIX_BYTES_PER_TOKEN: usize = 32;

/// The module types `modules.json` may name for the Transformer (before and since 6.0).
const TRANSFORMER_TYPES: [&str; 2] = [
    "sentence_transformers.models.Transformer",
    "sentence_transformers.base.modules.transformer.Transformer",
];

/// The activations a cross-encoder's config may name, by every torch path that resolves to them.
const ACTIVATIONS: [(&str, Activation); 8] = [
    ("torch.nn.modules.activation.Sigmoid", Activation::Sigmoid),
    ("torch.nn.Sigmoid", Activation::Sigmoid),
    ("torch.nn.modules.linear.Identity", Activation::Identity),
    ("torch.nn.Identity", Activation::Identity),
    ("torch.nn.modules.activation.Tanh", Activation::Tanh),
    ("torch.nn.Tanh", Activation::Tanh),
    ("torch.nn.modules.activation.ReLU", Activation::Relu),
    ("torch.nn.ReLU", Activation::Relu),
];

/// A loaded cross-encoder: tokenizer, encoder, classification head, activation and the label
/// it scores by.
pub struct CrossEncoder {
    dir: PathBuf,
    name: String,
    model_id: String,
    max_length: usize,
    /// Special tokens a pair gets (3 for BERT, 4 for XLM-RoBERTa).
    pair_specials: usize,
    tokenizer: Tokenizer,
    tokenizer_path: PathBuf,
    encoder: Encoder,
    /// BERT reads token types; XLM-RoBERTa has one.
    token_types: bool,
    head: Head,
    activation: Activation,
    labels: Vec<String>,
    label: usize,
    /// Put before every query ("" for none).
    prompt: String,
}

impl std::fmt::Debug for CrossEncoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CrossEncoder")
            .field("dir", &self.dir)
            .field("model_id", &self.model_id)
            .field("max_length", &self.max_length)
            .field("activation", &self.activation.name())
            .field("label", &self.labels[self.label])
            .finish_non_exhaustive()
    }
}

/// What the directory's sentence-transformers files say, before any weight is read.
struct Layout {
    /// The model directory.
    dir: PathBuf,
    /// The Transformer's folder: `config.json`, `model.safetensors`, `tokenizer.json`.
    transformer: PathBuf,
    /// `modules.json` and the types of the modules after the Transformer (`None`: no file).
    modules: Option<(PathBuf, Vec<String>)>,
    /// `config_sentence_transformers.json`, read only with `modules.json`.
    st_config: Option<(PathBuf, Map<String, Value>)>,
    /// `sentence_bert_config.json`'s `max_seq_length` (with `modules.json` only).
    max_seq_length: Option<usize>,
    /// Its `do_lower_case`.
    do_lower_case: bool,
}

/// The classification head: `out(tanh(dense(h[0])))`. Weights are torch `Linear` layouts
/// (`[out, in]`, row-major).
struct Head {
    hidden: usize,
    dense_w: Vec<f32>,
    dense_b: Vec<f32>,
    out_w: Vec<f32>,
    out_b: Vec<f32>,
    /// The tensor names, for the model identity and messages.
    names: [String; 4],
}

impl CrossEncoder {
    /// Loads the cross-encoder in `dir`, read as sentence-transformers reads it (see the module
    /// docs), scoring by `label`: a name of `config.json`'s `id2label` or an index. A model
    /// with one label needs none; one with several is refused without it.
    ///
    /// Every failure is an [`Error::Model`] / [`Error::Field`] (or [`Error::Io`] /
    /// [`Error::Malformed`]) naming the file, and the field where there is one: a directory
    /// without classifier weights (a sentence embedder), an activation other than the four, a
    /// head whose shapes disagree with `config.json`, a label the model does not have.
    pub fn load(dir: &Path, label: Option<&str>) -> Result<CrossEncoder> {
        if !dir.is_dir() {
            return Err(Error::Model {
                path: dir.to_path_buf(),
                message: "not a directory".into(),
            });
        }
        let layout = Layout::read(dir)?;
        let folder = &layout.transformer;
        let config_path = required(folder, "config.json")?;
        let weights_path = required(folder, "model.safetensors")?;
        let tokenizer_path = required(folder, "tokenizer.json")?;

        let cfg = EncoderConfig::read(&config_path)?;
        let architecture = supported_architecture(&cfg, &config_path)?;
        let config = read_map(&config_path)?.unwrap_or_default();
        let labels = read_labels(&config, &config_path)?;
        let bytes = std::fs::read(&weights_path).map_err(|e| Error::io(&weights_path, e))?;
        let head = Head::read(&bytes, &weights_path, architecture, &cfg, labels.len())?;
        layout.check_modules()?;
        let activation = layout.activation(&config, &config_path, labels.len())?;
        let label = pick_label(&labels, label, &config_path)?;
        let prompt = layout.prompt()?;
        let encoder = load_encoder(cfg, &bytes, &weights_path, &config_path)?;
        let settings = layout.settings()?;
        let max_length =
            super::max_seq_length(&settings, encoder.config(), encoder.position_offset);
        let (tokenizer, pair_specials) =
            pair_tokenizer(&tokenizer_path, architecture, &settings, max_length)?;
        if max_length < pair_specials + 2 {
            return Err(Error::Model {
                path: settings.transformer.join("tokenizer_config.json"),
                message: format!(
                    "a length limit of {max_length} tokens leaves no room for a pair \
                     ({pair_specials} special tokens)"
                ),
            });
        }
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
        let name = model_name(dir);
        let described = serde_json::json!({
            "kind": "cross-encoder",
            "head": head.names,
            "activation": activation.name(),
            "labels": labels.len(),
            "label": label,
            "max_length": max_length,
            "do_lower_case": settings.do_lower_case,
            "prompt": prompt,
        })
        .to_string();
        let model_id = format!(
            "{name}@{}+{ARITHMETIC_VERSION}.{}.ce{}",
            &blake3::hash(&bytes).to_hex().as_str()[..16],
            kernels::gemm_kernel(),
            &blake3::hash(described.as_bytes()).to_hex().as_str()[..12]
        );
        Ok(CrossEncoder {
            dir: dir.to_path_buf(),
            name,
            model_id,
            max_length,
            pair_specials,
            tokenizer,
            tokenizer_path,
            token_types: architecture == Architecture::Bert,
            encoder,
            head,
            activation,
            labels,
            label,
            prompt,
        })
    }

    /// `"<model name>@<first 16 hex digits of BLAKE3(model.safetensors)>+<arithmetic>.<kernel>
    /// .ce<first 12 hex digits of BLAKE3(the scoring settings)>"`: the settings are the head,
    /// the activation, the label, the length limit, the lower-casing and the prompt, so anything
    /// that changes a score changes the id, and scores of one matrix kernel are never taken for
    /// another's.
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

    /// A pair is truncated to this many tokens, special tokens and the prompt included.
    pub fn max_length(&self) -> usize {
        self.max_length
    }

    /// How many labels the head scores (the score is one of them).
    pub fn num_labels(&self) -> usize {
        self.labels.len()
    }

    /// The labels, by index (`config.json`'s `id2label`, or `LABEL_<i>`).
    pub fn labels(&self) -> &[String] {
        &self.labels
    }

    /// The label the score is.
    pub fn label(&self) -> &str {
        &self.labels[self.label]
    }

    /// The activation applied to the logit, by its torch path
    /// (`torch.nn.modules.activation.Sigmoid`, ...).
    pub fn activation(&self) -> &'static str {
        self.activation.name()
    }

    /// The prompt put before every query ("" for none).
    pub fn prompt(&self) -> &str {
        &self.prompt
    }

    /// The score of `query` with each of `passages`, in passage order.
    pub fn score(&self, query: &str, passages: &[&str]) -> Result<Vec<f32>> {
        let pairs: Vec<(&str, &str)> = passages.iter().map(|&p| (query, p)).collect();
        self.score_pairs(&pairs)
    }

    /// The score of each (query, passage) pair, in input order: the activation of the chosen
    /// label's logit, as `CrossEncoder.predict` returns it. Each score is a pure function of its
    /// pair (see the module docs): pairs are sorted by (token count, input index), packed into
    /// batches of up to [`MAX_BATCH`](super::MAX_BATCH) pairs and
    /// [`MAX_BATCH_TOKENS`](super::MAX_BATCH_TOKENS) tokens without padding, one batch per pool
    /// thread at a time.
    pub fn score_pairs(&self, pairs: &[(&str, &str)]) -> Result<Vec<f32>> {
        let mut ids: Vec<Vec<u32>> = Vec::with_capacity(pairs.len());
        let mut types: Vec<Vec<u32>> = Vec::with_capacity(pairs.len());
        for chunk in pairs.chunks(TOKENIZE_CHUNK) {
            for (i, t) in self.encode_pairs(chunk)? {
                ids.push(i);
                types.push(t);
            }
        }
        let h = self.encoder.config().hidden_size;
        // the head reads the first token's row of each pair
        run_packed(
            &self.encoder,
            &self.dir,
            (&ids, &types),
            |rows| {
                let logit = self.head.logit(&rows[..h], self.label);
                self.activation.apply(f64::from(logit)) as f32
            },
            &mut |_| {},
        )
    }

    /// Token ids and type ids of each pair (the prompt before the query; truncated, with
    /// special tokens, unpadded).
    fn encode_pairs(&self, pairs: &[(&str, &str)]) -> Result<Vec<(Vec<u32>, Vec<u32>)>> {
        let inputs = pairs
            .iter()
            .map(|&(q, p)| {
                let query = format!("{}{q}", self.prompt);
                let passage = self.bounded_passage(&query, p)?;
                Ok(EncodeInput::from((query, passage)))
            })
            .collect::<Result<Vec<EncodeInput<'_>>>>()?;
        let encodings = self
            .tokenizer
            .encode_batch(inputs, true)
            .map_err(|e| self.tokenizer_error(e))?;
        Ok(encodings
            .into_iter()
            .map(|e| {
                let n = e.get_ids().len().min(self.max_length);
                let types = if self.token_types {
                    e.get_type_ids()[..n].to_vec()
                } else {
                    Vec::new()
                };
                (e.get_ids()[..n].to_vec(), types)
            })
            .collect())
    }

    fn tokenizer_error(&self, e: impl ToString) -> Error {
        Error::Model {
            path: self.tokenizer_path.clone(),
            message: e.to_string(),
        }
    }

    /// The passage, or a prefix of it that the pair's truncation cuts to the same tokens. The
    /// tokenizer builds several words of bookkeeping per token of its input before it
    /// truncates, so a 50 MB passage would otherwise take gigabytes to yield a few hundred
    /// tokens. A prefix cut just before a whitespace character never splits a word, so its
    /// tokens are the passage's first ones; once it fills the window alone, `longest_first`
    /// gives the passage the same tokens as the whole passage whenever the query has at most
    /// half the pair's room (the passage then keeps the room the query leaves). A longer query
    /// makes the cut depend on which side is longer, so the whole passage is tokenised then.
    fn bounded_passage<'t>(&self, query: &str, passage: &'t str) -> Result<&'t str> {
        let mut len = PREFIX_BYTES_PER_TOKEN * self.max_length;
        let mut prefix = passage;
        while len < passage.len() {
            while !passage.is_char_boundary(len) {
                len += 1;
            }
            let cut = passage[len..]
                .char_indices()
                .find(|(_, c)| c.is_whitespace())
                .map_or(passage.len(), |(i, _)| len + i);
            if cut == passage.len() {
                break;
            }
            let tokens = self.single_tokens(&passage[..cut], true)?;
            if tokens >= self.max_length {
                prefix = &passage[..cut];
                break;
            }
            len = cut.saturating_mul(2);
        }
        if prefix.len() == passage.len() {
            return Ok(passage);
        }
        let room = self.max_length.saturating_sub(self.pair_specials);
        let query_tokens = self.single_tokens(query, false)?;
        Ok(if 2 * query_tokens <= room {
            prefix
        } else {
            passage
        })
    }

    /// Tokens of `text` alone (truncated to the window; `specials`: with the special tokens).
    fn single_tokens(&self, text: &str, specials: bool) -> Result<usize> {
        Ok(self
            .tokenizer
            .encode(text, specials)
            .map_err(|e| self.tokenizer_error(e))?
            .get_ids()
            .len())
    }
}

/// The architectures a cross-encoder may have: BERT and XLM-RoBERTa (MPNet's classification
/// head and RoBERTa's byte-level tokenizer are not implemented, so they are refused rather
/// than scored wrongly).
fn supported_architecture(cfg: &EncoderConfig, config: &Path) -> Result<Architecture> {
    let refuse = |what: &str| {
        Error::field(
            config,
            "model",
            "model_type",
            format!("{what} cross-encoders are not supported (bert, xlm-roberta)"),
        )
    };
    match cfg.architecture(config)? {
        Architecture::MpNet => Err(refuse("MPNet")),
        Architecture::Bert if cfg.type_vocab_size < 2 => Err(Error::field(
            config,
            "model",
            "type_vocab_size",
            format!(
                "{}: a BERT cross-encoder gives the passage token type 1",
                cfg.type_vocab_size
            ),
        )),
        a => Ok(a),
    }
}

impl Layout {
    /// Reads `modules.json` (if any), and through it `config_sentence_transformers.json` and
    /// `sentence_bert_config.json`.
    fn read(dir: &Path) -> Result<Layout> {
        let modules_path = dir.join("modules.json");
        if !modules_path.exists() {
            return Ok(Layout {
                dir: dir.to_path_buf(),
                transformer: dir.to_path_buf(),
                modules: None,
                st_config: None,
                max_seq_length: None,
                do_lower_case: false,
            });
        }
        let text =
            std::fs::read_to_string(&modules_path).map_err(|e| Error::io(&modules_path, e))?;
        let list: Vec<Map<String, Value>> = serde_json::from_str(&text)
            .map_err(|e| Error::malformed(&modules_path, "modules.json", e))?;
        let module = |i: usize, key: &str| -> Result<String> {
            match list[i].get(key) {
                Some(Value::String(s)) => Ok(s.clone()),
                _ => Err(bad(
                    &modules_path,
                    &format!("modules[{i}].{key}"),
                    "expected a string",
                )),
            }
        };
        if list.is_empty() {
            return Err(bad(
                &modules_path,
                "modules",
                "empty: expected a Transformer",
            ));
        }
        let first = module(0, "type")?;
        if !TRANSFORMER_TYPES.contains(&first.as_str()) {
            return Err(bad(
                &modules_path,
                "modules[0].type",
                format!("`{first}`: the first module must be the Transformer"),
            ));
        }
        let rel = module(0, "path")?;
        if Path::new(&rel)
            .components()
            .any(|c| !matches!(c, std::path::Component::Normal(_)))
        {
            return Err(bad(
                &modules_path,
                "modules[0].path",
                format!("`{rel}` leaves the model directory"),
            ));
        }
        let rest = (1..list.len())
            .map(|i| module(i, "type"))
            .collect::<Result<Vec<_>>>()?;
        let transformer = dir.join(&rel);
        let st_path = dir.join("config_sentence_transformers.json");
        let st_config = read_map(&st_path)?.map(|m| (st_path, m));
        let sbert = transformer.join("sentence_bert_config.json");
        let (max_seq_length, do_lower_case) = read_sbert(&sbert)?;
        Ok(Layout {
            dir: dir.to_path_buf(),
            transformer,
            modules: Some((modules_path, rest)),
            st_config,
            max_seq_length,
            do_lower_case,
        })
    }

    /// With `modules.json`: the Transformer alone, and a `config_sentence_transformers.json`
    /// saying `CrossEncoder` (sentence-transformers would convert anything else, with a head it
    /// makes up).
    fn check_modules(&self) -> Result<()> {
        let Some((modules_path, rest)) = &self.modules else {
            return Ok(());
        };
        if let Some(t) = rest.first() {
            return Err(bad(
                modules_path,
                "modules[1].type",
                format!("`{t}` after the Transformer: a cross-encoder is the Transformer alone"),
            ));
        }
        let (path, found) = match &self.st_config {
            None => (
                self.dir.join("config_sentence_transformers.json"),
                "no such file".to_string(),
            ),
            Some((path, m)) => match m.get("model_type") {
                Some(Value::String(t)) if t == "CrossEncoder" => return Ok(()),
                Some(v) => (path.clone(), v.to_string()),
                None => (path.clone(), "absent".to_string()),
            },
        };
        Err(bad(
            &path,
            "model_type",
            format!(
                "{found}: a directory with modules.json is a cross-encoder when this says \
                 \"CrossEncoder\""
            ),
        ))
    }

    /// The activation: `config_sentence_transformers.json`'s `activation_fn` (read through
    /// `modules.json` only), else `config.json`'s `sentence_transformers.activation_fn`, else its
    /// `sbert_ce_default_activation_function` (only when the former key is absent, as
    /// sentence-transformers looks), else Sigmoid for one label and Identity for several.
    fn activation(
        &self,
        config: &Map<String, Value>,
        config_path: &Path,
        labels: usize,
    ) -> Result<Activation> {
        if let Some((path, m)) = &self.st_config {
            if let Some(a) = activation_named(m.get("activation_fn"), path, "activation_fn")? {
                return Ok(a);
            }
        }
        let found = match config.get("sentence_transformers") {
            Some(Value::Object(st)) if st.contains_key("activation_fn") => activation_named(
                st.get("activation_fn"),
                config_path,
                "sentence_transformers.activation_fn",
            )?,
            _ => activation_named(
                config.get("sbert_ce_default_activation_function"),
                config_path,
                "sbert_ce_default_activation_function",
            )?,
        };
        Ok(found.unwrap_or(if labels == 1 {
            Activation::Sigmoid
        } else {
            Activation::Identity
        }))
    }

    /// The prompt `default_prompt_name` names in `config_sentence_transformers.json` ("" for
    /// none): `predict` puts it before every query.
    fn prompt(&self) -> Result<String> {
        let Some((path, m)) = &self.st_config else {
            return Ok(String::new());
        };
        let name = match m.get("default_prompt_name") {
            None | Some(Value::Null) => return Ok(String::new()),
            Some(Value::String(s)) => s,
            Some(v) => {
                return Err(bad(
                    path,
                    "default_prompt_name",
                    format!("expected a string, got {v}"),
                ))
            }
        };
        match m.get("prompts").and_then(|p| p.get(name)) {
            Some(Value::String(p)) => Ok(p.clone()),
            Some(Value::Null) => Ok(String::new()),
            Some(v) => Err(bad(
                path,
                &format!("prompts.{name}"),
                format!("expected a string, got {v}"),
            )),
            None => Err(bad(
                path,
                "default_prompt_name",
                format!("`{name}` is not one of the prompts"),
            )),
        }
    }

    /// The Transformer's settings the tokenizer and the length limit are read from, in the
    /// form the embedder's helpers take (its modules play no part here).
    fn settings(&self) -> Result<ModelDir> {
        let tokenizer_config = self.transformer.join("tokenizer_config.json");
        let tokenizer_max_length = read_map(&tokenizer_config)?
            .and_then(|m| m.get("model_max_length").and_then(Value::as_u64))
            .filter(|&n| (2..=1_000_000).contains(&n))
            .map(|n| n as usize);
        Ok(ModelDir {
            transformer: self.transformer.clone(),
            max_seq_length: self.max_seq_length,
            tokenizer_max_length,
            do_lower_case: self.do_lower_case,
            pooling: Pooling {
                modes: vec![PoolMode::Cls],
                include_prompt: true,
            },
            post: Vec::new(),
            prompts: Prompts::default(),
            truncate_dim: None,
            legacy: self.modules.is_none(),
        })
    }
}

/// `max_seq_length` and `do_lower_case` of `sentence_bert_config.json`, which must be (if it
/// says) a sequence-classification Transformer.
fn read_sbert(path: &Path) -> Result<(Option<usize>, bool)> {
    let Some(m) = read_map(path)? else {
        return Ok((None, false));
    };
    match m.get("transformer_task") {
        None | Some(Value::Null) => {}
        Some(Value::String(t)) if t == "sequence-classification" => {}
        Some(v) => {
            return Err(bad(
                path,
                "transformer_task",
                format!("{v}: a cross-encoder's Transformer is `sequence-classification`"),
            ))
        }
    }
    let max = match m.get("max_seq_length") {
        None | Some(Value::Null) => None,
        Some(v) => match v.as_u64() {
            Some(n) if n >= 4 => Some(n as usize),
            _ => {
                return Err(bad(
                    path,
                    "max_seq_length",
                    format!("expected an integer >= 4, got {v}"),
                ))
            }
        },
    };
    let lower = match m.get("do_lower_case") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(v) => {
            return Err(bad(
                path,
                "do_lower_case",
                format!("expected true or false, got {v}"),
            ))
        }
    };
    Ok((max, lower))
}

/// The activation a config value names (`None`: absent or null).
fn activation_named(value: Option<&Value>, path: &Path, field: &str) -> Result<Option<Activation>> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => ACTIVATIONS
            .iter()
            .find(|a| a.0 == s)
            .map(|a| Some(a.1))
            .ok_or_else(|| {
                let known: Vec<&str> = ACTIVATIONS.iter().step_by(2).map(|a| a.0).collect();
                bad(
                    path,
                    field,
                    format!("`{s}` is not supported (known: {})", known.join(", ")),
                )
            }),
        Some(v) => Err(bad(
            path,
            field,
            format!("expected a torch class path, got {v}"),
        )),
    }
}

/// The labels of `config.json`, by index, as transformers and sentence-transformers count
/// them: `num_labels` or the size of `id2label` (two, `LABEL_0` and `LABEL_1`, when it says
/// neither); one when `architectures` names no `*ForSequenceClassification` (sentence-transformers
/// then sets one label). Names are `id2label`'s, else `LABEL_<i>`.
fn read_labels(config: &Map<String, Value>, path: &Path) -> Result<Vec<String>> {
    let named = match config.get("id2label") {
        None | Some(Value::Null) => None,
        Some(Value::Object(m)) => {
            let mut names = vec![None; m.len()];
            for (k, v) in m {
                let field = format!("id2label.{k}");
                let i = k
                    .parse::<usize>()
                    .ok()
                    .filter(|&i| i < m.len())
                    .ok_or_else(|| {
                        bad(path, &field, format!("expected the indices 0..{}", m.len()))
                    })?;
                let Value::String(name) = v else {
                    return Err(bad(path, &field, format!("expected a label name, got {v}")));
                };
                names[i] = Some(name.clone());
            }
            Some(names.into_iter().flatten().collect::<Vec<String>>())
        }
        Some(v) => return Err(bad(path, "id2label", format!("expected a map, got {v}"))),
    };
    let count = match config.get("num_labels") {
        None | Some(Value::Null) => None,
        Some(v) => match v.as_u64() {
            Some(n) if n >= 1 => Some(n as usize),
            _ => {
                return Err(bad(
                    path,
                    "num_labels",
                    format!("expected an integer >= 1, got {v}"),
                ))
            }
        },
    };
    let generic = |n: usize| (0..n).map(|i| format!("LABEL_{i}")).collect::<Vec<_>>();
    let labels = match (count, named) {
        (Some(n), Some(names)) if names.len() != n => {
            return Err(bad(
                path,
                "num_labels",
                format!("{n}, but id2label has {} entries", names.len()),
            ))
        }
        (_, Some(names)) if !names.is_empty() => names,
        (Some(n), _) => generic(n),
        (None, _) => generic(2),
    };
    let classifies = matches!(config.get("architectures"), Some(Value::Array(a))
        if a.iter().any(|s| s.as_str().is_some_and(|s| s.ends_with("ForSequenceClassification"))));
    Ok(match (classifies, labels.len()) {
        (true, _) | (false, 1) => labels,
        (false, _) => generic(1),
    })
}

/// The index of the label `wanted` names (a name of `labels`, else an index); `None` is the
/// only label of a one-label model.
fn pick_label(labels: &[String], wanted: Option<&str>, config: &Path) -> Result<usize> {
    let listed = || {
        labels
            .iter()
            .enumerate()
            .map(|(i, l)| format!("{i} `{l}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match wanted {
        None if labels.len() == 1 => Ok(0),
        None => Err(bad(
            config,
            "id2label",
            format!(
                "the model scores {} labels ({}): choose the label to score by",
                labels.len(),
                listed()
            ),
        )),
        Some(w) => labels
            .iter()
            .position(|l| l == w)
            .or_else(|| w.parse::<usize>().ok().filter(|&i| i < labels.len()))
            .ok_or_else(|| {
                bad(
                    config,
                    "id2label",
                    format!("no label `{w}` (the labels are {})", listed()),
                )
            }),
    }
}

impl Head {
    /// The head of `architecture` from the bytes of `model.safetensors` (`path` for messages),
    /// its shapes checked against `config.json` (`cfg`, `labels`).
    fn read(
        bytes: &[u8],
        path: &Path,
        architecture: Architecture,
        cfg: &EncoderConfig,
        labels: usize,
    ) -> Result<Head> {
        let file = SliceSafetensors::new(bytes).map_err(|e| Error::Model {
            path: path.to_path_buf(),
            message: format!("not a safetensors file: {e}"),
        })?;
        let has = |name: &str| file.get(name).is_ok();
        let (dense, out) = match architecture {
            Architecture::Bert => {
                let prefix = if has("embeddings.word_embeddings.weight") {
                    ""
                } else {
                    "bert."
                };
                (format!("{prefix}pooler.dense"), "classifier".to_string())
            }
            _ => (
                "classifier.dense".to_string(),
                "classifier.out_proj".to_string(),
            ),
        };
        if !has(&format!("{out}.weight")) {
            return Err(Error::Model {
                path: path.to_path_buf(),
                message: format!(
                    "the classifier weights are missing (no tensor `{out}.weight`): not a \
                     cross-encoder checkpoint (a sentence embedder or a base model has no \
                     classification head)"
                ),
            });
        }
        let h = cfg.hidden_size;
        let read = |name: String, dims: &[usize]| -> Result<(Vec<f32>, String)> {
            let err = |message: String| Error::Model {
                path: path.to_path_buf(),
                message,
            };
            let t = file
                .load(&name, &Device::Cpu)
                .map_err(|_| err(format!("missing tensor `{name}`")))?;
            if t.dims() != dims {
                return Err(err(format!(
                    "tensor `{name}` has shape {:?}, expected {dims:?} (from config.json: \
                     hidden_size {h}, {labels} labels)",
                    t.dims()
                )));
            }
            let v = t
                .to_dtype(DType::F32)
                .and_then(|t| t.flatten_all())
                .and_then(|t| t.to_vec1::<f32>())
                .map_err(|e| err(e.to_string()))?;
            Ok((v, name))
        };
        let (dense_w, n0) = read(format!("{dense}.weight"), &[h, h])?;
        let (dense_b, n1) = read(format!("{dense}.bias"), &[h])?;
        let (out_w, n2) = read(format!("{out}.weight"), &[labels, h])?;
        let (out_b, n3) = read(format!("{out}.bias"), &[labels])?;
        Ok(Head {
            hidden: h,
            dense_w,
            dense_b,
            out_w,
            out_b,
            names: [n0, n1, n2, n3],
        })
    }

    /// The logit of `label` for a pair whose first token's vector is `first`: each layer's sums
    /// in `f64` in index order, its output rounded to `f32` as the reference's layers give it.
    fn logit(&self, first: &[f32], label: usize) -> f32 {
        let h = self.hidden;
        let pooled: Vec<f32> = (0..h)
            .map(|o| {
                let w = &self.dense_w[o * h..(o + 1) * h];
                let s: f64 = w
                    .iter()
                    .zip(first)
                    .map(|(&a, &b)| f64::from(a) * f64::from(b))
                    .sum();
                ((s + f64::from(self.dense_b[o])) as f32).tanh()
            })
            .collect();
        let w = &self.out_w[label * h..(label + 1) * h];
        let s: f64 = w
            .iter()
            .zip(&pooled)
            .map(|(&a, &b)| f64::from(a) * f64::from(b))
            .sum();
        (s + f64::from(self.out_b[label])) as f32
    }
}

/// The tokenizer of `path` as the embedder loads it (truncation to `max_length`, no padding,
/// the lower-casing and the XLM-RoBERTa pre-tokenizer transformers applies), with the pair
/// template transformers 5 builds for the class whatever `tokenizer.json` says: BERT
/// `[CLS]:0 $A:0 [SEP]:0 $B:1 [SEP]:1`, XLM-RoBERTa `<s> $A </s> </s> $B </s>` (special tokens
/// as `tokenizer_config.json` names them). Also returns the special tokens of a pair.
fn pair_tokenizer(
    path: &Path,
    architecture: Architecture,
    settings: &ModelDir,
    max_length: usize,
) -> Result<(Tokenizer, usize)> {
    let mut tokenizer = load_tokenizer(path, architecture, settings, max_length)?;
    let tokenizer_config =
        read_map(&settings.transformer.join("tokenizer_config.json"))?.unwrap_or_default();
    let token = |key: &str, default: &str| -> String {
        match tokenizer_config.get(key) {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Object(o)) => o
                .get("content")
                .and_then(Value::as_str)
                .unwrap_or(default)
                .to_string(),
            _ => default.to_string(),
        }
    };
    let (first, sep, single, pair) = match architecture {
        Architecture::Bert => {
            let (c, s) = (token("cls_token", "[CLS]"), token("sep_token", "[SEP]"));
            let single = format!("{c}:0 $A:0 {s}:0");
            let pair = format!("{c}:0 $A:0 {s}:0 $B:1 {s}:1");
            (c, s, single, pair)
        }
        _ => {
            let (b, e) = (token("bos_token", "<s>"), token("eos_token", "</s>"));
            let single = format!("{b}:0 $A:0 {e}:0");
            let pair = format!("{b}:0 $A:0 {e}:0 {e}:0 $B:0 {e}:0");
            (b, e, single, pair)
        }
    };
    let id = |t: &str| {
        tokenizer.token_to_id(t).ok_or_else(|| Error::Model {
            path: path.to_path_buf(),
            message: format!("no token `{t}`, which a pair starts or ends with"),
        })
    };
    let specials = vec![(first.clone(), id(&first)?), (sep.clone(), id(&sep)?)];
    let template = TemplateProcessing::builder()
        .try_single(single)
        .and_then(|b| b.try_pair(pair))
        .map_err(|e| e.to_string())
        .and_then(|b| {
            b.special_tokens(specials)
                .build()
                .map_err(|e| e.to_string())
        })
        .map_err(|message| Error::Model {
            path: path.to_path_buf(),
            message,
        })?;
    let pair_specials = template.get_added_pair();
    tokenizer.with_post_processor(Some(template));
    Ok((tokenizer, pair_specials))
}
