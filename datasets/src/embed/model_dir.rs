//! A sentence-transformers model directory, read as sentence-transformers reads it.
//!
//! `modules.json` lists the pipeline, run in its order: the Transformer (the encoder, in the
//! directory itself or in the folder its `path` names, with `sentence_bert_config.json`'s
//! `max_seq_length` and `do_lower_case`), Pooling (`<path>/config.json`: the modes, concatenated
//! in order, and `include_prompt`), and after it any number of Dense layers (`<path>/config.json`
//! and `<path>/model.safetensors`) and Normalize. `config_sentence_transformers.json` gives the
//! prompts (applied as MTEB applies them: the prompt named `query` to queries, the one named
//! `document`, else `passage`, to passages, `default_prompt_name`'s where neither is named) and
//! `truncate_dim`. A directory without `modules.json` keeps the meaning hopbench always gave it:
//! mean pooling, then L2 normalisation, no prompts (sentence-transformers itself would not
//! normalise such a directory).
//!
//! Anything the embedder cannot run exactly (a module type, a pooling mode, an activation, a
//! Dense layer stored only as a pickle) is an error naming the file and the field: a vector that
//! is not the model's is never computed silently.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::{Error, Result};

/// One way of pooling token vectors into one vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PoolMode {
    /// The first token left in the pooling mask (`[CLS]`, or the first text token when the
    /// prompt is excluded).
    Cls,
    /// The component-wise maximum.
    Max,
    /// The mean.
    Mean,
    /// The sum over the square root of the token count.
    MeanSqrtLen,
    /// The mean weighted by position (the token at position `t` weighs `t + 1`).
    WeightedMean,
    /// The last token left in the pooling mask.
    LastToken,
}

impl PoolMode {
    /// Every mode, in the order the pre-6 boolean flags concatenate them, with its flag and its
    /// name.
    const ALL: [(PoolMode, &'static str, &'static str); 6] = [
        (PoolMode::Cls, "pooling_mode_cls_token", "cls"),
        (PoolMode::Max, "pooling_mode_max_tokens", "max"),
        (PoolMode::Mean, "pooling_mode_mean_tokens", "mean"),
        (
            PoolMode::MeanSqrtLen,
            "pooling_mode_mean_sqrt_len_tokens",
            "mean_sqrt_len_tokens",
        ),
        (
            PoolMode::WeightedMean,
            "pooling_mode_weightedmean_tokens",
            "weightedmean",
        ),
        (PoolMode::LastToken, "pooling_mode_lasttoken", "lasttoken"),
    ];

    fn named(name: &str) -> Option<PoolMode> {
        Self::ALL.iter().find(|m| m.2 == name).map(|m| m.0)
    }

    /// The mode's name in a pooling config.
    pub(crate) fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|m| m.0 == self)
            .expect("every mode is listed")
            .2
    }
}

/// The Pooling module.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Pooling {
    /// The modes, concatenated in this order.
    pub modes: Vec<PoolMode>,
    /// Whether a prompt's tokens (and the leading special token) are pooled.
    pub include_prompt: bool,
}

/// A Dense module's activation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Activation {
    Identity,
    Tanh,
    Relu,
    Sigmoid,
}

impl Activation {
    const ALL: [(Activation, &'static str); 4] = [
        (Activation::Identity, "torch.nn.modules.linear.Identity"),
        (Activation::Tanh, "torch.nn.modules.activation.Tanh"),
        (Activation::Relu, "torch.nn.modules.activation.ReLU"),
        (Activation::Sigmoid, "torch.nn.modules.activation.Sigmoid"),
    ];

    pub(crate) fn name(self) -> &'static str {
        Self::ALL.iter().find(|a| a.0 == self).expect("listed").1
    }

    pub(crate) fn apply(self, x: f64) -> f64 {
        match self {
            Activation::Identity => x,
            Activation::Tanh => x.tanh(),
            Activation::Relu => x.max(0.0),
            Activation::Sigmoid => 1.0 / (1.0 + (-x).exp()),
        }
    }
}

/// A Dense module: `activation(W x + b)`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Dense {
    pub in_features: usize,
    pub out_features: usize,
    /// `[out, in]`, row-major.
    pub weight: Vec<f32>,
    pub bias: Option<Vec<f32>>,
    pub activation: Activation,
    /// BLAKE3 of the weights file (the model identity covers it).
    pub weights_hash: String,
}

/// What runs after pooling, in `modules.json` order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Post {
    Dense(Dense),
    Normalize,
}

/// The prompts applied to each role ("" for none).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Prompts {
    pub query: String,
    pub passage: String,
}

/// The pipeline a model directory describes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ModelDir {
    /// The Transformer's folder: `config.json`, `model.safetensors`, `tokenizer.json`.
    pub transformer: PathBuf,
    /// `max_seq_length` as written (`None`: the tokenizer's and the encoder's limits decide).
    pub max_seq_length: Option<usize>,
    /// `model_max_length` of `tokenizer_config.json`, where it is a sane number.
    pub tokenizer_max_length: Option<usize>,
    /// Lower-case every input before the tokenizer's own normaliser.
    pub do_lower_case: bool,
    pub pooling: Pooling,
    pub post: Vec<Post>,
    pub prompts: Prompts,
    /// Keep only the first this many components (after every module, not renormalised).
    pub truncate_dim: Option<usize>,
    /// No `modules.json`: the pipeline is the legacy mean + normalise.
    pub legacy: bool,
}

/// A JSON file of the directory as a map; `None` when absent.
pub(super) fn read_map(path: &Path) -> Result<Option<Map<String, Value>>> {
    if !path.exists() {
        return Ok(None);
    }
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(m)) => Ok(Some(m)),
        Ok(_) => Err(Error::malformed(path, "JSON", "expected an object")),
        Err(e) => Err(Error::malformed(path, "JSON", e)),
    }
}

/// A model directory's error: `field` of the file at `path` is wrong.
pub(super) fn bad(path: &Path, field: &str, message: impl Into<String>) -> Error {
    Error::field(path, "model", field, message)
}

/// `key` of `m` as a bool (`None`: absent or null).
fn opt_bool(m: &Map<String, Value>, key: &str, path: &Path) -> Result<Option<bool>> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(v) => Err(bad(path, key, format!("expected true or false, got {v}"))),
    }
}

/// `key` of `m` as a count of at least `min` (`None`: absent or null).
fn opt_count(m: &Map<String, Value>, key: &str, min: u64, path: &Path) -> Result<Option<usize>> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => match v.as_u64() {
            Some(n) if n >= min => Ok(Some(n as usize)),
            _ => Err(bad(
                path,
                key,
                format!("expected an integer >= {min}, got {v}"),
            )),
        },
    }
}

/// The module kinds `modules.json` may name, by the last segment of their type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Transformer,
    Pooling,
    Dense,
    Normalize,
}

fn kind_of(type_name: &str) -> Option<Kind> {
    let known = [
        // pre-6 names and their 6.x homes
        (
            "sentence_transformers.models.Transformer",
            Kind::Transformer,
        ),
        ("sentence_transformers.models.Pooling", Kind::Pooling),
        ("sentence_transformers.models.Dense", Kind::Dense),
        ("sentence_transformers.models.Normalize", Kind::Normalize),
        (
            "sentence_transformers.base.modules.transformer.Transformer",
            Kind::Transformer,
        ),
        (
            "sentence_transformers.sentence_transformer.modules.pooling.Pooling",
            Kind::Pooling,
        ),
        (
            "sentence_transformers.base.modules.dense.Dense",
            Kind::Dense,
        ),
        (
            "sentence_transformers.base.modules.normalize.Normalize",
            Kind::Normalize,
        ),
    ];
    known.iter().find(|k| k.0 == type_name).map(|k| k.1)
}

impl ModelDir {
    /// Reads the directory `dir`'s pipeline (not the encoder's weights).
    pub(crate) fn read(dir: &Path) -> Result<ModelDir> {
        let modules_path = dir.join("modules.json");
        if !modules_path.exists() {
            return Self::legacy(dir);
        }
        let modules = read_modules(&modules_path)?;
        let (first, rest) = modules.split_first().ok_or_else(|| {
            bad(
                &modules_path,
                "modules",
                "empty: expected a Transformer first",
            )
        })?;
        if first.1 != Kind::Transformer {
            return Err(bad(
                &modules_path,
                "modules[0].type",
                "the first module must be the Transformer",
            ));
        }
        let transformer = dir.join(&first.0);
        let mut pooling = None;
        let mut post = Vec::new();
        for (i, (path, kind)) in rest.iter().enumerate() {
            let field = format!("modules[{}]", i + 1);
            let folder = dir.join(path);
            match (kind, &pooling) {
                (Kind::Transformer, _) => {
                    return Err(bad(&modules_path, &field, "a second Transformer"));
                }
                (Kind::Pooling, None) => pooling = Some(read_pooling(&folder.join("config.json"))?),
                (Kind::Pooling, Some(_)) => {
                    return Err(bad(&modules_path, &field, "a second Pooling"));
                }
                (_, None) => {
                    return Err(bad(
                        &modules_path,
                        &field,
                        "a Dense or Normalize before the Pooling: there is no sentence vector yet",
                    ));
                }
                (Kind::Dense, Some(_)) => post.push(Post::Dense(read_dense(&folder)?)),
                (Kind::Normalize, Some(_)) => post.push(Post::Normalize),
            }
        }
        let pooling = pooling.ok_or_else(|| {
            bad(
                &modules_path,
                "modules",
                "no Pooling module: no sentence vector",
            )
        })?;
        let sbert = transformer.join("sentence_bert_config.json");
        let (max_seq_length, do_lower_case) = match read_map(&sbert)? {
            Some(m) => (
                opt_count(&m, "max_seq_length", 2, &sbert)?,
                opt_bool(&m, "do_lower_case", &sbert)?.unwrap_or(false),
            ),
            None => (None, false),
        };
        let (prompts, truncate_dim) =
            read_st_config(&dir.join("config_sentence_transformers.json"))?;
        Ok(ModelDir {
            tokenizer_max_length: tokenizer_max_length(&transformer)?,
            transformer,
            max_seq_length,
            do_lower_case,
            pooling,
            post,
            prompts,
            truncate_dim,
            legacy: false,
        })
    }

    /// A directory without `modules.json`: mean pooling and normalisation, no prompts.
    fn legacy(dir: &Path) -> Result<ModelDir> {
        let sbert = dir.join("sentence_bert_config.json");
        let (max_seq_length, do_lower_case) = match read_map(&sbert)? {
            Some(m) => (
                opt_count(&m, "max_seq_length", 2, &sbert)?,
                opt_bool(&m, "do_lower_case", &sbert)?.unwrap_or(false),
            ),
            None => (None, false),
        };
        Ok(ModelDir {
            transformer: dir.to_path_buf(),
            max_seq_length,
            tokenizer_max_length: tokenizer_max_length(dir)?,
            do_lower_case,
            pooling: Pooling {
                modes: vec![PoolMode::Mean],
                include_prompt: true,
            },
            post: vec![Post::Normalize],
            prompts: Prompts::default(),
            truncate_dim: None,
            legacy: true,
        })
    }

    /// Whether this is the pipeline every model id before pipelines were read stood for: mean
    /// pooling then normalisation, nothing else (its ids keep their old form).
    pub(crate) fn is_plain(&self) -> bool {
        self.pooling.modes == [PoolMode::Mean]
            && self.post == [Post::Normalize]
            && self.prompts == Prompts::default()
            && self.truncate_dim.is_none()
            && !self.do_lower_case
    }

    /// The dimension of the vectors for an encoder of hidden size `hidden`.
    pub(crate) fn dim(&self, hidden: usize) -> usize {
        let mut d = hidden * self.pooling.modes.len();
        for p in &self.post {
            if let Post::Dense(dense) = p {
                d = dense.out_features;
            }
        }
        self.truncate_dim.map_or(d, |t| t.min(d))
    }

    /// Checks the modules' sizes against the encoder's hidden size (`config` names the file).
    pub(crate) fn check_sizes(&self, hidden: usize, config: &Path) -> Result<()> {
        let mut d = hidden * self.pooling.modes.len();
        for p in &self.post {
            if let Post::Dense(dense) = p {
                if dense.in_features != d {
                    return Err(bad(
                        config,
                        "in_features",
                        format!(
                            "a Dense layer takes {} features but the pipeline gives it {d}",
                            dense.in_features
                        ),
                    ));
                }
                d = dense.out_features;
            }
        }
        Ok(())
    }

    /// A canonical description of everything in the pipeline that can change a vector, for the
    /// model identity.
    pub(crate) fn describe(&self, max_seq_length: usize) -> String {
        let post: Vec<String> = self
            .post
            .iter()
            .map(|p| match p {
                Post::Normalize => "normalize".to_string(),
                Post::Dense(d) => format!(
                    "dense({}x{},{},{},{})",
                    d.out_features,
                    d.in_features,
                    d.bias.is_some(),
                    d.activation.name(),
                    d.weights_hash
                ),
            })
            .collect();
        serde_json::json!({
            "max_seq_length": max_seq_length,
            "do_lower_case": self.do_lower_case,
            "pooling": self.pooling.modes.iter().map(|m| m.name()).collect::<Vec<_>>(),
            "include_prompt": self.pooling.include_prompt,
            "post": post,
            "query_prompt": self.prompts.query,
            "passage_prompt": self.prompts.passage,
            "truncate_dim": self.truncate_dim,
        })
        .to_string()
    }
}

/// `modules.json`: (path, kind) of each module, in order.
fn read_modules(path: &Path) -> Result<Vec<(String, Kind)>> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    let list: Vec<Value> = match serde_json::from_str::<Value>(&text) {
        Ok(Value::Array(a)) => a,
        Ok(_) => return Err(Error::malformed(path, "JSON", "expected a list of modules")),
        Err(e) => return Err(Error::malformed(path, "JSON", e)),
    };
    let mut out = Vec::with_capacity(list.len());
    for (i, m) in list.iter().enumerate() {
        let field = |f: &str| format!("modules[{i}].{f}");
        let get = |f: &str| -> Result<&str> {
            m.get(f)
                .and_then(Value::as_str)
                .ok_or_else(|| bad(path, &field(f), "expected a string"))
        };
        let type_name = get("type")?;
        let kind = kind_of(type_name).ok_or_else(|| {
            bad(
                path,
                &field("type"),
                format!(
                    "`{type_name}` is not a module hopbench can run (it runs Transformer, \
                     Pooling, Dense and Normalize)"
                ),
            )
        })?;
        let rel = get("path")?;
        if Path::new(rel)
            .components()
            .any(|c| !matches!(c, std::path::Component::Normal(_)))
        {
            return Err(bad(
                path,
                &field("path"),
                format!("`{rel}` leaves the model directory"),
            ));
        }
        out.push((rel.to_string(), kind));
    }
    Ok(out)
}

/// `1_Pooling/config.json` (or wherever the module's path points).
fn read_pooling(path: &Path) -> Result<Pooling> {
    let m = read_map(path)?.ok_or_else(|| Error::Model {
        path: path.to_path_buf(),
        message: "missing the Pooling module's config (modules.json names its folder)".into(),
    })?;
    let flags: Vec<&str> = PoolMode::ALL.iter().map(|m| m.1).collect();
    for key in m.keys() {
        let known = flags.contains(&key.as_str())
            || matches!(
                key.as_str(),
                "word_embedding_dimension"
                    | "embedding_dimension"
                    | "pooling_mode"
                    | "include_prompt"
            );
        if !known {
            return Err(bad(path, key, "not a key of a Pooling config"));
        }
    }
    let mode_of = |name: &str, field: &str| {
        PoolMode::named(name).ok_or_else(|| {
            let known: Vec<&str> = PoolMode::ALL.iter().map(|m| m.2).collect();
            bad(
                path,
                field,
                format!(
                    "unknown pooling mode `{name}` (known: {})",
                    known.join(", ")
                ),
            )
        })
    };
    let modes = match m.get("pooling_mode") {
        Some(Value::String(s)) => vec![mode_of(s, "pooling_mode")?],
        Some(Value::Array(list)) if !list.is_empty() => list
            .iter()
            .enumerate()
            .map(|(i, v)| match v {
                Value::String(s) => mode_of(s, &format!("pooling_mode[{i}]")),
                other => Err(bad(
                    path,
                    &format!("pooling_mode[{i}]"),
                    format!("expected a string, got {other}"),
                )),
            })
            .collect::<Result<Vec<_>>>()?,
        Some(Value::Null) | None => {
            let mut modes = Vec::new();
            for (mode, flag, _) in PoolMode::ALL {
                if opt_bool(&m, flag, path)?.unwrap_or(false) {
                    modes.push(mode);
                }
            }
            if modes.is_empty() {
                modes.push(PoolMode::Mean);
            }
            modes
        }
        Some(other) => {
            return Err(bad(
                path,
                "pooling_mode",
                format!("expected a mode name or a list of them, got {other}"),
            ))
        }
    };
    Ok(Pooling {
        modes,
        include_prompt: opt_bool(&m, "include_prompt", path)?.unwrap_or(true),
    })
}

/// A Dense module's folder: `config.json` and `model.safetensors`.
fn read_dense(folder: &Path) -> Result<Dense> {
    let path = folder.join("config.json");
    let m = read_map(&path)?.ok_or_else(|| Error::Model {
        path: path.clone(),
        message: "missing the Dense module's config (modules.json names its folder)".into(),
    })?;
    let in_features = opt_count(&m, "in_features", 1, &path)?
        .ok_or_else(|| bad(&path, "in_features", "missing"))?;
    let out_features = opt_count(&m, "out_features", 1, &path)?
        .ok_or_else(|| bad(&path, "out_features", "missing"))?;
    let has_bias = opt_bool(&m, "bias", &path)?.unwrap_or(true);
    if opt_bool(&m, "use_residual", &path)?.unwrap_or(false) {
        return Err(bad(
            &path,
            "use_residual",
            "a residual Dense layer is not supported",
        ));
    }
    for key in ["module_input_name", "module_output_name"] {
        match m.get(key) {
            None | Some(Value::Null) => {}
            Some(Value::String(s)) if s == "sentence_embedding" => {}
            Some(v) => {
                return Err(bad(
                    &path,
                    key,
                    format!("only `sentence_embedding` is supported, got {v}"),
                ))
            }
        }
    }
    // sentence-transformers' default when the key is missing
    let activation = match m.get("activation_function") {
        None | Some(Value::Null) => Activation::Tanh,
        Some(Value::String(s)) => Activation::ALL
            .iter()
            .find(|a| a.1 == s)
            .map(|a| a.0)
            .ok_or_else(|| {
                let known: Vec<&str> = Activation::ALL.iter().map(|a| a.1).collect();
                bad(
                    &path,
                    "activation_function",
                    format!("`{s}` is not supported (known: {})", known.join(", ")),
                )
            })?,
        Some(v) => {
            return Err(bad(
                &path,
                "activation_function",
                format!("expected a string, got {v}"),
            ))
        }
    };
    let weights = folder.join("model.safetensors");
    if !weights.is_file() {
        let message = if folder.join("pytorch_model.bin").is_file() {
            "the Dense layer's weights are a pickle (pytorch_model.bin); save them as \
             model.safetensors"
        } else {
            "missing the Dense layer's weights"
        };
        return Err(Error::Model {
            path: weights,
            message: message.into(),
        });
    }
    let bytes = std::fs::read(&weights).map_err(|e| Error::io(&weights, e))?;
    let tensors = candle_core::safetensors::load_buffer(&bytes, &candle_core::Device::Cpu)
        .map_err(|e| Error::Model {
            path: weights.clone(),
            message: format!("not a safetensors file: {e}"),
        })?;
    let read = |name: &str, dims: &[usize]| -> Result<Vec<f32>> {
        let t = tensors.get(name).ok_or_else(|| Error::Model {
            path: weights.clone(),
            message: format!("missing tensor `{name}`"),
        })?;
        if t.dims() != dims {
            return Err(Error::Model {
                path: weights.clone(),
                message: format!(
                    "tensor `{name}` has shape {:?}, expected {dims:?}",
                    t.dims()
                ),
            });
        }
        t.to_dtype(candle_core::DType::F32)
            .and_then(|t| t.flatten_all())
            .and_then(|t| t.to_vec1::<f32>())
            .map_err(|e| Error::Model {
                path: weights.clone(),
                message: e.to_string(),
            })
    };
    let weight = read("linear.weight", &[out_features, in_features])?;
    let bias = if has_bias {
        Some(read("linear.bias", &[out_features])?)
    } else {
        None
    };
    Ok(Dense {
        in_features,
        out_features,
        weight,
        bias,
        activation,
        weights_hash: blake3::hash(&bytes).to_hex()[..16].to_string(),
    })
}

/// `config_sentence_transformers.json`: the prompts each role gets, and `truncate_dim`.
fn read_st_config(path: &Path) -> Result<(Prompts, Option<usize>)> {
    let Some(m) = read_map(path)? else {
        return Ok((Prompts::default(), None));
    };
    if let Some(Value::String(t)) = m.get("model_type") {
        if t != "SentenceTransformer" {
            return Err(bad(
                path,
                "model_type",
                format!("a `{t}`, not a sentence embedder (SentenceTransformer)"),
            ));
        }
    }
    let mut prompts = std::collections::BTreeMap::new();
    match m.get("prompts") {
        None | Some(Value::Null) => {}
        Some(Value::Object(p)) => {
            for (name, v) in p {
                match v {
                    Value::String(s) => {
                        prompts.insert(name.clone(), s.clone());
                    }
                    Value::Null => {}
                    other => {
                        return Err(bad(
                            path,
                            &format!("prompts.{name}"),
                            format!("expected a string, got {other}"),
                        ))
                    }
                }
            }
        }
        Some(other) => {
            return Err(bad(
                path,
                "prompts",
                format!("expected a map of names to strings, got {other}"),
            ))
        }
    }
    let default = match m.get("default_prompt_name") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(prompts.get(s).cloned().ok_or_else(|| {
            bad(
                path,
                "default_prompt_name",
                format!("`{s}` is not one of the prompts"),
            )
        })?),
        Some(other) => {
            return Err(bad(
                path,
                "default_prompt_name",
                format!("expected a string, got {other}"),
            ))
        }
    };
    let pick = |names: &[&str]| {
        names
            .iter()
            .find_map(|n| prompts.get(*n).cloned())
            .or_else(|| default.clone())
            .unwrap_or_default()
    };
    let resolved = Prompts {
        query: pick(&["query"]),
        passage: pick(&["document", "passage"]),
    };
    Ok((resolved, opt_count(&m, "truncate_dim", 1, path)?))
}

/// `model_max_length` of the Transformer's `tokenizer_config.json`, where it is a plausible
/// limit (tokenizers without one write a huge sentinel).
fn tokenizer_max_length(transformer: &Path) -> Result<Option<usize>> {
    let path = transformer.join("tokenizer_config.json");
    let Some(m) = read_map(&path)? else {
        return Ok(None);
    };
    Ok(m.get("model_max_length")
        .and_then(Value::as_u64)
        .filter(|&n| (2..=1_000_000).contains(&n))
        .map(|n| n as usize))
}
