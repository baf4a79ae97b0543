//! BERT (the sentence-transformers MiniLM / BERT family): its weight names, absolute positions
//! from 0 and the token types the tokenizer gives.

use std::path::Path;

use super::encoder::{Encoder, EncoderConfig, LayerNames, Weights};
use crate::Result;

/// A BERT layer's tensors under `encoder.layer.{l}.`.
pub(crate) const BERT_LAYER: LayerNames = LayerNames {
    q: "attention.self.query",
    k: "attention.self.key",
    v: "attention.self.value",
    out: "attention.output.dense",
    attn_norm: "attention.output.LayerNorm",
    inter: "intermediate.dense",
    ffn_out: "output.dense",
    ffn_norm: "output.LayerNorm",
};

/// The BERT encoder of `config.json` (`cfg`) from the bytes of `model.safetensors` (`path` is
/// for messages), with or without the `bert.` prefix of a checkpoint saved with a task head.
pub(crate) fn load(
    cfg: EncoderConfig,
    bytes: &[u8],
    path: &Path,
    _config: &Path,
) -> Result<Encoder> {
    let w = Weights::open(
        bytes,
        path,
        &["", "bert."],
        "embeddings.word_embeddings.weight",
        "BERT",
    )?;
    embeddings_and_layers(cfg, &w, 0, &BERT_LAYER)
}

/// The encoder of a BERT-layout checkpoint (BERT itself, XLM-RoBERTa) whose first position id
/// is `position_offset`.
pub(crate) fn embeddings_and_layers(
    cfg: EncoderConfig,
    w: &Weights<'_>,
    position_offset: usize,
    names: &LayerNames,
) -> Result<Encoder> {
    let h = cfg.hidden_size;
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
    let layers = w.layers(&cfg, names)?;
    let eps = cfg.layer_norm_eps as f32;
    Ok(Encoder {
        cfg,
        eps,
        word,
        position,
        token_type: Some(token_type),
        position_offset,
        emb_norm,
        layers,
        relative_bias: None,
    })
}
