//! The transformer encoder the three architectures share (BERT, XLM-RoBERTa, MPNet: post-norm
//! layers, exact-erf GELU), on candle's CPU backend. Each architecture's file reads its own
//! weight names and quirks into an [`Encoder`]; this file runs it.
//!
//! A batch is *packed*: the tokens of all its sequences are stacked into one `[tokens, hidden]`
//! matrix with no padding. Everything that is row-local (embeddings, the dense layers, layer
//! norm, GELU) runs on the packed matrix, so the matrix products are large; attention runs per
//! sequence on that sequence's own rows. No row ever sees another sequence or a pad token, and
//! the GEMM kernel's summation order along the inner dimension does not depend on the row count,
//! so a sequence's token vectors are the same bits alone or in any batch (checked by the tests).

use std::collections::HashMap;
use std::path::Path;

use candle_core::{DType, Device, Tensor};
use rayon::prelude::*;
use serde::Deserialize;

use super::kernels::{self, AddBias, BiasGelu, BiasInPlace, BiasResidualLayerNorm, SoftmaxLastDim};
use crate::{Error, Result};

/// The fields of a Hugging Face `config.json` an encoder needs.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct EncoderConfig {
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub intermediate_size: usize,
    pub max_position_embeddings: usize,
    #[serde(default = "default_type_vocab_size")]
    pub type_vocab_size: usize,
    #[serde(default = "default_layer_norm_eps")]
    pub layer_norm_eps: f64,
    #[serde(default = "default_hidden_act")]
    pub hidden_act: String,
    #[serde(default)]
    pub position_embedding_type: Option<String>,
    #[serde(default)]
    pub model_type: Option<String>,
    #[serde(default)]
    pub pad_token_id: Option<usize>,
    #[serde(default)]
    pub relative_attention_num_buckets: Option<usize>,
}

fn default_type_vocab_size() -> usize {
    2
}
fn default_layer_norm_eps() -> f64 {
    1e-12
}
fn default_hidden_act() -> String {
    "gelu".to_string()
}

/// The architectures hopbench runs, by `config.json`'s `model_type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Architecture {
    Bert,
    XlmRoberta,
    MpNet,
}

impl EncoderConfig {
    /// Reads and checks `config.json`.
    pub(crate) fn read(path: &Path) -> Result<EncoderConfig> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        let cfg: EncoderConfig = serde_json::from_str(&text)
            .map_err(|e| Error::malformed(path, "model config.json", e))?;
        let bad = |field: &str, message: String| Error::field(path, "model", field, message);
        cfg.architecture(path)?;
        if cfg.hidden_act != "gelu" {
            return Err(bad(
                "hidden_act",
                format!(
                    "`{}` is not supported (only the exact erf \"gelu\")",
                    cfg.hidden_act
                ),
            ));
        }
        if let Some(p) = &cfg.position_embedding_type {
            if p != "absolute" {
                return Err(bad(
                    "position_embedding_type",
                    format!("`{p}` is not supported"),
                ));
            }
        }
        let heads = cfg.num_attention_heads;
        if heads == 0 || cfg.hidden_size == 0 || cfg.hidden_size / heads * heads != cfg.hidden_size
        {
            return Err(bad(
                "hidden_size",
                format!(
                    "{} is not a multiple of num_attention_heads {}",
                    cfg.hidden_size, cfg.num_attention_heads
                ),
            ));
        }
        if cfg.vocab_size == 0 || cfg.type_vocab_size == 0 || cfg.num_hidden_layers == 0 {
            return Err(bad(
                "vocab_size",
                "vocab_size, type_vocab_size and num_hidden_layers must be > 0".into(),
            ));
        }
        if cfg.max_position_embeddings <= cfg.position_offset(path)? + 1 {
            return Err(bad(
                "max_position_embeddings",
                format!(
                    "{} leaves no room for a sequence",
                    cfg.max_position_embeddings
                ),
            ));
        }
        Ok(cfg)
    }

    /// The architecture `model_type` names (BERT when absent, as older BERT checkpoints are).
    pub(crate) fn architecture(&self, path: &Path) -> Result<Architecture> {
        match self.model_type.as_deref() {
            None | Some("bert") => Ok(Architecture::Bert),
            Some("xlm-roberta") => Ok(Architecture::XlmRoberta),
            Some("mpnet") => Ok(Architecture::MpNet),
            // RoBERTa shares XLM-R's encoder but tokenises by byte-level BPE, which the
            // XLM-R tokenizer set-up would silently get wrong: refused until it is read exactly
            Some("roberta") => Err(Error::field(
                path,
                "model",
                "model_type",
                "`roberta` (byte-level BPE) is not an architecture hopbench runs exactly yet \
                 (bert, xlm-roberta, mpnet)",
            )),
            Some(t) => Err(Error::field(
                path,
                "model",
                "model_type",
                format!("`{t}` is not an architecture hopbench runs (bert, xlm-roberta, mpnet)"),
            )),
        }
    }

    /// The first position id: BERT counts from 0; RoBERTa-style models from the padding index
    /// plus one (MPNet's padding index is fixed at 1, whatever the config says).
    pub(crate) fn position_offset(&self, path: &Path) -> Result<usize> {
        Ok(match self.architecture(path)? {
            Architecture::Bert => 0,
            Architecture::XlmRoberta => self.pad_token_id.unwrap_or(1) + 1,
            Architecture::MpNet => 2,
        })
    }
}

/// Layer-norm parameters.
pub(crate) struct Norm {
    pub gamma: Vec<f32>,
    pub beta: Vec<f32>,
}

/// One encoder layer. Weight matrices are stored `[in, out]`, contiguous.
pub(crate) struct Layer {
    /// Fused q|k|v projection `[hidden, 3 hidden]`; q is pre-scaled by 1/sqrt(head_dim).
    pub qkv_w: Tensor,
    pub qkv_b: Vec<f32>,
    pub out_w: Tensor,
    pub out_b: Vec<f32>,
    pub attn_norm: Norm,
    pub inter_w: Tensor,
    pub inter_b: Vec<f32>,
    pub ffn_out_w: Tensor,
    pub ffn_out_b: Vec<f32>,
    pub ffn_norm: Norm,
}

/// The names of one layer's tensors (`{l}` is the layer number).
pub(crate) struct LayerNames {
    pub q: &'static str,
    pub k: &'static str,
    pub v: &'static str,
    pub out: &'static str,
    pub attn_norm: &'static str,
    pub inter: &'static str,
    pub ffn_out: &'static str,
    pub ffn_norm: &'static str,
}

/// MPNet's relative position bias: one learned value per (bucket, head), added to every layer's
/// attention scores.
pub(crate) struct RelativeBias {
    /// `[buckets, heads]`, row-major.
    pub table: Vec<f32>,
    pub buckets: usize,
    /// The bucket of a key that many positions after its query (negative: before).
    pub bucket_of: fn(i64) -> usize,
}

/// The encoder: embeddings and layers.
pub(crate) struct Encoder {
    pub cfg: EncoderConfig,
    pub eps: f32,
    pub word: Vec<f32>,
    pub position: Vec<f32>,
    /// `None`: the architecture has no token types (MPNet).
    pub token_type: Option<Vec<f32>>,
    /// The position id of a sequence's first token.
    pub position_offset: usize,
    pub emb_norm: Norm,
    pub layers: Vec<Layer>,
    pub relative_bias: Option<RelativeBias>,
}

/// The tensors of a safetensors file, by name, under a prefix.
pub(crate) struct Weights<'a> {
    pub tensors: HashMap<String, Tensor>,
    pub prefix: &'static str,
    pub path: &'a Path,
}

impl<'a> Weights<'a> {
    /// The tensors of `bytes` (`path` is for messages), under the first of `prefixes` whose
    /// `probe` tensor exists.
    pub(crate) fn open(
        bytes: &[u8],
        path: &'a Path,
        prefixes: &[&'static str],
        probe: &str,
        what: &str,
    ) -> Result<Weights<'a>> {
        let tensors = candle_core::safetensors::load_buffer(bytes, &Device::Cpu).map_err(|e| {
            Error::Model {
                path: path.to_path_buf(),
                message: format!("not a safetensors file: {e}"),
            }
        })?;
        let prefix = prefixes
            .iter()
            .copied()
            .find(|p| tensors.contains_key(&format!("{p}{probe}")))
            .ok_or_else(|| Error::Model {
                path: path.to_path_buf(),
                message: format!("no tensor `{probe}`: not a {what} checkpoint"),
            })?;
        Ok(Weights {
            tensors,
            prefix,
            path,
        })
    }

    pub(crate) fn get(&self, name: &str, dims: &[usize]) -> Result<Tensor> {
        let full = format!("{}{name}", self.prefix);
        let t = self.tensors.get(&full).ok_or_else(|| Error::Model {
            path: self.path.to_path_buf(),
            message: format!("missing tensor `{full}`"),
        })?;
        if t.dims() != dims {
            return Err(Error::Model {
                path: self.path.to_path_buf(),
                message: format!(
                    "tensor `{full}` has shape {:?}, expected {dims:?} (from config.json)",
                    t.dims()
                ),
            });
        }
        t.to_dtype(DType::F32).map_err(|e| self.err(e))
    }

    pub(crate) fn vec(&self, name: &str, dims: &[usize]) -> Result<Vec<f32>> {
        let t = self.get(name, dims)?;
        t.flatten_all()
            .and_then(|t| t.to_vec1::<f32>())
            .map_err(|e| self.err(e))
    }

    pub(crate) fn norm(&self, prefix: &str, hidden: usize) -> Result<Norm> {
        Ok(Norm {
            gamma: self.vec(&format!("{prefix}.weight"), &[hidden])?,
            beta: self.vec(&format!("{prefix}.bias"), &[hidden])?,
        })
    }

    /// A torch `Linear` weight `[out, in]`, as the right-hand side `[in, out]` of `x · W^T`.
    pub(crate) fn linear_t(&self, name: &str, out_dim: usize, in_dim: usize) -> Result<Tensor> {
        let w = self.get(name, &[out_dim, in_dim])?;
        rhs_layout(w).map_err(|e| self.err(e))
    }

    pub(crate) fn err(&self, e: candle_core::Error) -> Error {
        Error::Model {
            path: self.path.to_path_buf(),
            message: e.to_string(),
        }
    }

    /// The layers of `cfg` under `names` (`encoder.layer.{l}.` + each name).
    pub(crate) fn layers(&self, cfg: &EncoderConfig, names: &LayerNames) -> Result<Vec<Layer>> {
        let h = cfg.hidden_size;
        let heads = cfg.num_attention_heads;
        let scale = 1.0 / ((h / heads) as f64).sqrt();
        let i = cfg.intermediate_size;
        let mut layers = Vec::with_capacity(cfg.num_hidden_layers);
        for l in 0..cfg.num_hidden_layers {
            let name = |n: &str| format!("encoder.layer.{l}.{n}");
            let q = self.get(&name(&format!("{}.weight", names.q)), &[h, h])?;
            let q = q.affine(scale, 0.0).map_err(|e| self.err(e))?;
            let k = self.get(&name(&format!("{}.weight", names.k)), &[h, h])?;
            let v = self.get(&name(&format!("{}.weight", names.v)), &[h, h])?;
            let qkv_w = Tensor::cat(&[&q, &k, &v], 0)
                .and_then(rhs_layout)
                .map_err(|e| self.err(e))?;
            let mut qkv_b = self.vec(&name(&format!("{}.bias", names.q)), &[h])?;
            for b in &mut qkv_b {
                *b = (*b as f64 * scale) as f32;
            }
            qkv_b.extend(self.vec(&name(&format!("{}.bias", names.k)), &[h])?);
            qkv_b.extend(self.vec(&name(&format!("{}.bias", names.v)), &[h])?);
            layers.push(Layer {
                qkv_w,
                qkv_b,
                out_w: self.linear_t(&name(&format!("{}.weight", names.out)), h, h)?,
                out_b: self.vec(&name(&format!("{}.bias", names.out)), &[h])?,
                attn_norm: self.norm(&name(names.attn_norm), h)?,
                inter_w: self.linear_t(&name(&format!("{}.weight", names.inter)), i, h)?,
                inter_b: self.vec(&name(&format!("{}.bias", names.inter)), &[i])?,
                ffn_out_w: self.linear_t(&name(&format!("{}.weight", names.ffn_out)), h, i)?,
                ffn_out_b: self.vec(&name(&format!("{}.bias", names.ffn_out)), &[h])?,
                ffn_norm: self.norm(&name(names.ffn_norm), h)?,
            });
        }
        Ok(layers)
    }
}

/// The model's token vectors for a batch: `rows` (`[tokens, hidden]`, row-major) and each
/// sequence's `(first row, length)`.
pub(crate) struct Hidden {
    pub rows: Vec<f32>,
    pub spans: Vec<(usize, usize)>,
}

impl Encoder {
    pub(crate) fn config(&self) -> &EncoderConfig {
        &self.cfg
    }

    /// The most tokens a sequence may have (the position table less its offset).
    pub(crate) fn max_tokens(&self) -> usize {
        self.cfg.max_position_embeddings - self.position_offset
    }

    /// Runs a batch of tokenised sequences (ids and token-type ids, each 1..=`max_tokens`
    /// long): the last layer's token vectors.
    pub(crate) fn hidden(
        &self,
        ids: &[&[u32]],
        type_ids: &[&[u32]],
    ) -> candle_core::Result<Hidden> {
        let h = self.cfg.hidden_size;
        let mut spans = Vec::with_capacity(ids.len());
        let mut rows = 0usize;
        for s in ids {
            if s.is_empty() || s.len() > self.max_tokens() {
                candle_core::bail!(
                    "sequence of {} tokens (must be 1..={})",
                    s.len(),
                    self.max_tokens()
                );
            }
            spans.push((rows, s.len()));
            rows += s.len();
        }
        if rows == 0 {
            return Ok(Hidden {
                rows: Vec::new(),
                spans,
            });
        }
        let biases = match &self.relative_bias {
            Some(rb) => spans
                .iter()
                .map(|&(_, len)| self.relative_bias_tensor(rb, len).map(Some))
                .collect::<candle_core::Result<Vec<_>>>()?,
            None => vec![None; spans.len()],
        };
        let mut x = self.embeddings(ids, type_ids, rows)?;
        for layer in &self.layers {
            x = self.layer(layer, x, &spans, &biases)?;
        }
        debug_assert_eq!(x.dims(), [rows, h]);
        Ok(Hidden {
            rows: x.flatten_all()?.to_vec1::<f32>()?,
            spans,
        })
    }

    /// The `[heads, len, len]` bias of a sequence of `len` tokens: entry (h, i, j) is the
    /// table's value for head h at the bucket of `j - i`.
    fn relative_bias_tensor(&self, rb: &RelativeBias, len: usize) -> candle_core::Result<Tensor> {
        let heads = self.cfg.num_attention_heads;
        // the bucket of each offset j - i, from -(len - 1) at index 0
        let buckets: Vec<usize> = (0..2 * len - 1)
            .map(|d| (rb.bucket_of)(d as i64 - (len as i64 - 1)))
            .collect();
        debug_assert!(buckets.iter().all(|&b| b < rb.buckets));
        let mut out = vec![0f32; heads * len * len];
        for (head, plane) in out.chunks_exact_mut(len * len).enumerate() {
            for (i, row) in plane.chunks_exact_mut(len).enumerate() {
                for (j, v) in row.iter_mut().enumerate() {
                    *v = rb.table[buckets[j + len - 1 - i] * heads + head];
                }
            }
        }
        Tensor::from_vec(out, (heads, len, len), &Device::Cpu)
    }

    /// word + position (+ token type), then layer norm: `[rows, hidden]`.
    fn embeddings(
        &self,
        ids: &[&[u32]],
        type_ids: &[&[u32]],
        rows: usize,
    ) -> candle_core::Result<Tensor> {
        let h = self.cfg.hidden_size;
        // (token id, position id, type id) for every packed row.
        let mut tokens = Vec::with_capacity(rows);
        let types_known = if self.token_type.is_some() {
            self.cfg.type_vocab_size
        } else {
            1
        };
        for (s, seq) in ids.iter().enumerate() {
            let types = type_ids.get(s).copied().unwrap_or(&[]);
            for (p, &id) in seq.iter().enumerate() {
                let t = types.get(p).copied().unwrap_or(0) as usize;
                if id as usize >= self.cfg.vocab_size || t >= types_known {
                    candle_core::bail!("token id {id} / type id {t} out of range");
                }
                tokens.push((id as usize, p + self.position_offset, t));
            }
        }
        let mut out = vec![0f32; rows * h];
        out.par_chunks_mut(h)
            .zip(tokens.par_iter())
            .for_each(|(row, &(id, p, t))| {
                let w = &self.word[id * h..(id + 1) * h];
                let pe = &self.position[p * h..(p + 1) * h];
                kernels::vectorized(
                    #[inline(always)]
                    || {
                        match &self.token_type {
                            Some(token_type) => {
                                let te = &token_type[t * h..(t + 1) * h];
                                for i in 0..h {
                                    row[i] = w[i] + pe[i] + te[i];
                                }
                            }
                            None => {
                                for i in 0..h {
                                    row[i] = w[i] + pe[i];
                                }
                            }
                        }
                        kernels::layer_norm_row(
                            row,
                            &self.emb_norm.gamma,
                            &self.emb_norm.beta,
                            self.eps,
                        );
                    },
                )
            });
        Tensor::from_vec(out, (rows, h), &Device::Cpu)
    }

    fn layer(
        &self,
        l: &Layer,
        x: Tensor,
        spans: &[(usize, usize)],
        biases: &[Option<Tensor>],
    ) -> candle_core::Result<Tensor> {
        let h = self.cfg.hidden_size;
        let heads = self.cfg.num_attention_heads;
        let hd = h / heads;
        let rows = x.dim(0)?;

        // Self-attention: one fused projection, then per-sequence attention over its own rows.
        // q, k, v are strided views of the projection: [heads, rows, hd], row stride 3h.
        let qkv = x.matmul(&l.qkv_w)?;
        qkv.inplace_op1(&BiasInPlace {
            bias: &l.qkv_b,
            op: AddBias,
        })?;
        let qkv = qkv.reshape((rows, 3, heads, hd))?;
        let q = qkv.get_on_dim(1, 0)?.transpose(0, 1)?;
        let k = qkv.get_on_dim(1, 1)?.transpose(0, 1)?;
        let v = qkv.get_on_dim(1, 2)?.transpose(0, 1)?;
        let contexts = spans
            .par_iter()
            .zip(biases.par_iter())
            .map(|(&(start, len), bias)| {
                let q = q.narrow(1, start, len)?;
                let k = k.narrow(1, start, len)?;
                let v = v.narrow(1, start, len)?;
                let mut probs = q.matmul(&k.t()?)?; // [heads, len, len]; q is pre-scaled
                if let Some(bias) = bias {
                    probs = (probs + bias)?;
                }
                probs.inplace_op1(&SoftmaxLastDim { width: len })?;
                // [heads, len, hd] -> [len, heads * hd]
                probs
                    .matmul(&v)?
                    .transpose(0, 1)?
                    .contiguous()?
                    .reshape((len, h))
            })
            .collect::<candle_core::Result<Vec<_>>>()?;
        drop((q, k, v, qkv));
        let context = Tensor::cat(&contexts, 0)?; // [rows, h]
        drop(contexts);
        let attn = context.matmul(&l.out_w)?;
        self.add_and_norm(&attn, &x, &l.out_b, &l.attn_norm)?;

        // Feed-forward.
        let inter = attn.matmul(&l.inter_w)?;
        inter.inplace_op1(&BiasInPlace {
            bias: &l.inter_b,
            op: BiasGelu,
        })?;
        let out = inter.matmul(&l.ffn_out_w)?;
        drop(inter);
        self.add_and_norm(&out, &attn, &l.ffn_out_b, &l.ffn_norm)?;
        Ok(out)
    }

    /// `x <- layer_norm(x + bias + residual)` with `norm` and the model's epsilon, in place: how
    /// both sub-layers of an encoder layer (attention, feed-forward) end.
    fn add_and_norm(
        &self,
        x: &Tensor,
        residual: &Tensor,
        bias: &[f32],
        norm: &Norm,
    ) -> candle_core::Result<()> {
        x.inplace_op2(
            residual,
            &BiasResidualLayerNorm {
                bias,
                gamma: &norm.gamma,
                beta: &norm.beta,
                eps: self.eps,
            },
        )
    }
}

/// The right-hand side `[in, out]` of `x · W^T` for a weight `[out, in]`, in the memory layout
/// that the GEMM kernel runs faster on (measured on AVX2/AVX-512 x86 at MiniLM's shapes): the
/// transposed view of the torch layout, except for widening projections. Narrow outputs
/// (`out <= 256`) always get the contiguous `[in, out]` layout: with the view, gemm would take a
/// different code path for tiny row counts (`rows * out <= 256`), and a sequence's bits would
/// then depend on its batch.
pub(crate) fn rhs_layout(w: Tensor) -> candle_core::Result<Tensor> {
    let (out_dim, in_dim) = w.dims2()?;
    let w = w.contiguous()?;
    if out_dim > 256 && out_dim <= 3 * in_dim {
        w.t()
    } else {
        w.t()?.contiguous()
    }
}
