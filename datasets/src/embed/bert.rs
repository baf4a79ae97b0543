//! A compact BERT encoder (the sentence-transformers MiniLM / BERT family) on candle's CPU
//! backend, with mean pooling and L2 normalisation.
//!
//! A batch is *packed*: the tokens of all its sequences are stacked into one `[tokens, hidden]`
//! matrix with no padding. Everything that is row-local (embeddings, the dense layers, layer
//! norm, GELU) runs on the packed matrix, so the matrix products are large; attention runs per
//! sequence on that sequence's own rows. No row ever sees another sequence or a pad token, and
//! the GEMM kernel's summation order along the inner dimension does not depend on the row count,
//! so a sequence's vector is the same bits alone or in any batch (checked by the tests).

use std::collections::HashMap;
use std::path::Path;

use candle_core::{DType, Device, Tensor};
use rayon::prelude::*;
use serde::Deserialize;

use super::kernels::{self, AddBias, BiasGelu, BiasInPlace, BiasResidualLayerNorm, SoftmaxLastDim};
use crate::{Error, Result};

/// The fields of a Hugging Face `config.json` that a BERT encoder needs.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct BertConfig {
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

impl BertConfig {
    /// Reads and checks `config.json`.
    pub(crate) fn read(path: &Path) -> Result<BertConfig> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        let cfg: BertConfig = serde_json::from_str(&text)
            .map_err(|e| Error::malformed(path, "BERT config.json", e))?;
        let bad = |message: String| Error::Model {
            path: path.to_path_buf(),
            message,
        };
        if let Some(t) = &cfg.model_type {
            if !matches!(t.as_str(), "bert" | "roberta" | "xlm-roberta") {
                return Err(bad(format!("model_type `{t}` is not a BERT encoder")));
            }
        }
        if cfg.hidden_act != "gelu" {
            return Err(bad(format!(
                "hidden_act `{}` is not supported (only the exact erf \"gelu\")",
                cfg.hidden_act
            )));
        }
        if let Some(p) = &cfg.position_embedding_type {
            if p != "absolute" {
                return Err(bad(format!(
                    "position_embedding_type `{p}` is not supported"
                )));
            }
        }
        let heads = cfg.num_attention_heads;
        if heads == 0 || cfg.hidden_size == 0 || cfg.hidden_size / heads * heads != cfg.hidden_size
        {
            return Err(bad(format!(
                "hidden_size {} is not a multiple of num_attention_heads {}",
                cfg.hidden_size, cfg.num_attention_heads
            )));
        }
        if cfg.vocab_size == 0 || cfg.max_position_embeddings == 0 || cfg.type_vocab_size == 0 {
            return Err(bad(
                "vocab_size, max_position_embeddings and type_vocab_size must be > 0".into(),
            ));
        }
        Ok(cfg)
    }
}

/// Layer-norm parameters.
struct Norm {
    gamma: Vec<f32>,
    beta: Vec<f32>,
}

/// One encoder layer. Weight matrices are stored `[in, out]`, contiguous.
struct Layer {
    /// Fused q|k|v projection `[hidden, 3 hidden]`; q is pre-scaled by 1/sqrt(head_dim).
    qkv_w: Tensor,
    qkv_b: Vec<f32>,
    out_w: Tensor,
    out_b: Vec<f32>,
    attn_norm: Norm,
    inter_w: Tensor,
    inter_b: Vec<f32>,
    ffn_out_w: Tensor,
    ffn_out_b: Vec<f32>,
    ffn_norm: Norm,
}

/// The encoder: embeddings, layers, and the pooling head.
pub(crate) struct Bert {
    cfg: BertConfig,
    eps: f32,
    word: Vec<f32>,
    position: Vec<f32>,
    token_type: Vec<f32>,
    emb_norm: Norm,
    layers: Vec<Layer>,
}

/// The tensors of a safetensors file, by name, with a leading `bert.` accepted.
struct Weights<'a> {
    tensors: HashMap<String, Tensor>,
    prefix: &'static str,
    path: &'a Path,
}

impl Weights<'_> {
    fn get(&self, name: &str, dims: &[usize]) -> Result<Tensor> {
        let full = format!("{}{name}", self.prefix);
        let t = self.tensors.get(&full).ok_or_else(|| Error::Model {
            path: self.path.to_path_buf(),
            message: format!("missing tensor `{full}`"),
        })?;
        if t.dims() != dims {
            return Err(Error::Model {
                path: self.path.to_path_buf(),
                message: format!(
                    "tensor `{full}` has shape {:?}, expected {dims:?}",
                    t.dims()
                ),
            });
        }
        t.to_dtype(DType::F32).map_err(|e| self.err(e))
    }

    fn vec(&self, name: &str, dims: &[usize]) -> Result<Vec<f32>> {
        let t = self.get(name, dims)?;
        t.flatten_all()
            .and_then(|t| t.to_vec1::<f32>())
            .map_err(|e| self.err(e))
    }

    fn norm(&self, prefix: &str, hidden: usize) -> Result<Norm> {
        Ok(Norm {
            gamma: self.vec(&format!("{prefix}.weight"), &[hidden])?,
            beta: self.vec(&format!("{prefix}.bias"), &[hidden])?,
        })
    }

    /// A torch `Linear` weight `[out, in]`, as the right-hand side `[in, out]` of `x · W^T`.
    fn linear_t(&self, name: &str, out_dim: usize, in_dim: usize) -> Result<Tensor> {
        let w = self.get(name, &[out_dim, in_dim])?;
        rhs_layout(w).map_err(|e| self.err(e))
    }

    fn err(&self, e: candle_core::Error) -> Error {
        Error::Model {
            path: self.path.to_path_buf(),
            message: e.to_string(),
        }
    }
}

impl Bert {
    /// Builds the encoder from the bytes of `model.safetensors` (`path` is for messages).
    pub(crate) fn load(cfg: BertConfig, bytes: &[u8], path: &Path) -> Result<Bert> {
        let tensors = candle_core::safetensors::load_buffer(bytes, &Device::Cpu).map_err(|e| {
            Error::Model {
                path: path.to_path_buf(),
                message: format!("not a safetensors file: {e}"),
            }
        })?;
        let prefix = if tensors.contains_key("embeddings.word_embeddings.weight") {
            ""
        } else if tensors.contains_key("bert.embeddings.word_embeddings.weight") {
            "bert."
        } else {
            return Err(Error::Model {
                path: path.to_path_buf(),
                message: "no tensor `embeddings.word_embeddings.weight`: not a BERT checkpoint"
                    .into(),
            });
        };
        let w = Weights {
            tensors,
            prefix,
            path,
        };
        let h = cfg.hidden_size;
        let heads = cfg.num_attention_heads;
        let scale = 1.0 / ((h / heads) as f64).sqrt();
        let word = w.vec("embeddings.word_embeddings.weight", &[cfg.vocab_size, h])?;
        let position = w.vec(
            "embeddings.position_embeddings.weight",
            &[cfg.max_position_embeddings, h],
        )?;
        let token_type = w.vec(
            "embeddings.token_type_embeddings.weight",
            &[cfg.type_vocab_size, h],
        )?;
        let emb_norm = w.norm("embeddings.LayerNorm", h)?;
        let mut layers = Vec::with_capacity(cfg.num_hidden_layers);
        for l in 0..cfg.num_hidden_layers {
            let p = format!("encoder.layer.{l}");
            let q = w.get(&format!("{p}.attention.self.query.weight"), &[h, h])?;
            let q = q.affine(scale, 0.0).map_err(|e| w.err(e))?;
            let k = w.get(&format!("{p}.attention.self.key.weight"), &[h, h])?;
            let v = w.get(&format!("{p}.attention.self.value.weight"), &[h, h])?;
            let qkv_w = Tensor::cat(&[&q, &k, &v], 0)
                .and_then(rhs_layout)
                .map_err(|e| w.err(e))?;
            let mut qkv_b = w.vec(&format!("{p}.attention.self.query.bias"), &[h])?;
            for b in &mut qkv_b {
                *b = (*b as f64 * scale) as f32;
            }
            qkv_b.extend(w.vec(&format!("{p}.attention.self.key.bias"), &[h])?);
            qkv_b.extend(w.vec(&format!("{p}.attention.self.value.bias"), &[h])?);
            let i = cfg.intermediate_size;
            layers.push(Layer {
                qkv_w,
                qkv_b,
                out_w: w.linear_t(&format!("{p}.attention.output.dense.weight"), h, h)?,
                out_b: w.vec(&format!("{p}.attention.output.dense.bias"), &[h])?,
                attn_norm: w.norm(&format!("{p}.attention.output.LayerNorm"), h)?,
                inter_w: w.linear_t(&format!("{p}.intermediate.dense.weight"), i, h)?,
                inter_b: w.vec(&format!("{p}.intermediate.dense.bias"), &[i])?,
                ffn_out_w: w.linear_t(&format!("{p}.output.dense.weight"), h, i)?,
                ffn_out_b: w.vec(&format!("{p}.output.dense.bias"), &[h])?,
                ffn_norm: w.norm(&format!("{p}.output.LayerNorm"), h)?,
            });
        }
        let eps = cfg.layer_norm_eps as f32;
        Ok(Bert {
            cfg,
            eps,
            word,
            position,
            token_type,
            emb_norm,
            layers,
        })
    }

    pub(crate) fn config(&self) -> &BertConfig {
        &self.cfg
    }

    /// Embeds a batch of tokenised sequences (ids and token-type ids, each at most
    /// `max_position_embeddings` long and at least one token): one mean-pooled, L2-normalised
    /// vector per sequence.
    pub(crate) fn embed_batch(
        &self,
        ids: &[&[u32]],
        type_ids: &[&[u32]],
    ) -> candle_core::Result<Vec<Vec<f32>>> {
        let h = self.cfg.hidden_size;
        let mut spans = Vec::with_capacity(ids.len());
        let mut rows = 0usize;
        for s in ids {
            if s.is_empty() || s.len() > self.cfg.max_position_embeddings {
                candle_core::bail!(
                    "sequence of {} tokens (must be 1..={})",
                    s.len(),
                    self.cfg.max_position_embeddings
                );
            }
            spans.push((rows, s.len()));
            rows += s.len();
        }
        if rows == 0 {
            return Ok(Vec::new());
        }
        let mut x = self.embeddings(ids, type_ids, rows)?;
        for layer in &self.layers {
            x = self.layer(layer, x, &spans)?;
        }
        let hidden = x.flatten_all()?.to_vec1::<f32>()?;
        Ok(spans
            .iter()
            .map(|&(start, len)| mean_pool_normalise(&hidden[start * h..(start + len) * h], h))
            .collect())
    }

    /// word + position + token type, then layer norm: `[rows, hidden]`.
    fn embeddings(
        &self,
        ids: &[&[u32]],
        type_ids: &[&[u32]],
        rows: usize,
    ) -> candle_core::Result<Tensor> {
        let h = self.cfg.hidden_size;
        // (token id, position, type id) for every packed row.
        let mut tokens = Vec::with_capacity(rows);
        for (s, seq) in ids.iter().enumerate() {
            let types = type_ids.get(s).copied().unwrap_or(&[]);
            for (p, &id) in seq.iter().enumerate() {
                let t = types.get(p).copied().unwrap_or(0) as usize;
                if id as usize >= self.cfg.vocab_size || t >= self.cfg.type_vocab_size {
                    candle_core::bail!("token id {id} / type id {t} out of range");
                }
                tokens.push((id as usize, p, t));
            }
        }
        let mut out = vec![0f32; rows * h];
        out.par_chunks_mut(h)
            .zip(tokens.par_iter())
            .for_each(|(row, &(id, p, t))| {
                let w = &self.word[id * h..(id + 1) * h];
                let pe = &self.position[p * h..(p + 1) * h];
                let te = &self.token_type[t * h..(t + 1) * h];
                kernels::vectorized(
                    #[inline(always)]
                    || {
                        for i in 0..h {
                            row[i] = w[i] + pe[i] + te[i];
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

    fn layer(&self, l: &Layer, x: Tensor, spans: &[(usize, usize)]) -> candle_core::Result<Tensor> {
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
            .map(|&(start, len)| {
                let q = q.narrow(1, start, len)?;
                let k = k.narrow(1, start, len)?;
                let v = v.narrow(1, start, len)?;
                let probs = q.matmul(&k.t()?)?; // [heads, len, len]; q is pre-scaled
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
fn rhs_layout(w: Tensor) -> candle_core::Result<Tensor> {
    let (out_dim, in_dim) = w.dims2()?;
    let w = w.contiguous()?;
    if out_dim > 256 && out_dim <= 3 * in_dim {
        w.t()
    } else {
        w.t()?.contiguous()
    }
}

/// Mean over the rows of one sequence (`len × h`, row-major), then L2 normalisation, in f64 with
/// a fixed order. Matches sentence-transformers' `Pooling(mean)` + `Normalize` (all of a
/// sequence's tokens are real tokens: there is no padding).
fn mean_pool_normalise(rows: &[f32], h: usize) -> Vec<f32> {
    let n = rows.len() / h;
    let mut acc = vec![0f64; h];
    for row in rows.chunks_exact(h) {
        for (a, &v) in acc.iter_mut().zip(row) {
            *a += v as f64;
        }
    }
    let mean: Vec<f32> = acc.iter().map(|a| (a / n as f64) as f32).collect();
    let norm = mean
        .iter()
        .map(|&v| v as f64 * v as f64)
        .sum::<f64>()
        .sqrt()
        .max(1e-12);
    mean.iter().map(|&v| (v as f64 / norm) as f32).collect()
}
