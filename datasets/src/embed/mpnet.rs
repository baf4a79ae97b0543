//! MPNet: absolute positions after its padding index (fixed at 1 by the reference, so the first
//! position id is 2), no token types, its own attention weight names, and a relative position
//! bias shared by every layer: a learned value per (bucket of the key's offset from the query,
//! head), added to the attention scores.

use std::path::Path;

use super::encoder::{Encoder, EncoderConfig, LayerNames, RelativeBias, Weights};
use crate::{Error, Result};

/// An MPNet layer's tensors under `encoder.layer.{l}.`.
const MPNET_LAYER: LayerNames = LayerNames {
    q: "attention.attn.q",
    k: "attention.attn.k",
    v: "attention.attn.v",
    out: "attention.attn.o",
    attn_norm: "attention.LayerNorm",
    inter: "intermediate.dense",
    ffn_out: "output.dense",
    ffn_norm: "output.LayerNorm",
};

/// The buckets the reference's bucket function uses, whatever `relative_attention_num_buckets`
/// says (it only sizes the table): half for keys before the query, half for keys after.
const BUCKETS: i64 = 32;
/// Offsets up to this far apart get buckets of their own on a log scale; farther ones share the
/// last.
const MAX_DISTANCE: i64 = 128;

/// The bucket of a key `offset` positions after its query (negative: before), as the reference
/// (`MPNetEncoder.relative_position_bucket`) computes it: offsets below 8 each have a bucket,
/// larger ones a logarithmic one (the log in `f32`, truncated, as torch computes it), keys after
/// the query in the upper half.
pub(crate) fn relative_position_bucket(offset: i64) -> usize {
    let half = BUCKETS / 2;
    let n = -offset;
    let mut bucket = if n < 0 { half } else { 0 };
    let n = n.abs();
    let max_exact = half / 2;
    if n < max_exact {
        bucket += n;
    } else {
        let ratio = ((n as f32) / max_exact as f32).ln()
            / (MAX_DISTANCE as f32 / max_exact as f32).ln()
            * (half - max_exact) as f32;
        bucket += (max_exact + ratio as i64).min(half - 1);
    }
    bucket as usize
}

/// The MPNet encoder of `config.json` (`cfg`, `config` for messages) from the bytes of
/// `model.safetensors` (`path`), with or without the `mpnet.` prefix of a checkpoint saved with
/// a task head.
pub(crate) fn load(
    cfg: EncoderConfig,
    bytes: &[u8],
    path: &Path,
    config: &Path,
) -> Result<Encoder> {
    let w = Weights::open(
        bytes,
        path,
        &["", "mpnet."],
        "embeddings.word_embeddings.weight",
        "MPNet",
    )?;
    let h = cfg.hidden_size;
    let heads = cfg.num_attention_heads;
    let buckets = cfg
        .relative_attention_num_buckets
        .unwrap_or(BUCKETS as usize);
    if buckets < BUCKETS as usize {
        return Err(Error::field(
            config,
            "model",
            "relative_attention_num_buckets",
            format!("{buckets}: the bucket function needs {BUCKETS}"),
        ));
    }
    let word = w.vec("embeddings.word_embeddings.weight", &[cfg.vocab_size, h])?;
    let position = w.vec(
        "embeddings.position_embeddings.weight",
        &[cfg.max_position_embeddings, h],
    )?;
    let emb_norm = w.norm("embeddings.LayerNorm", h)?;
    let table = w.vec("encoder.relative_attention_bias.weight", &[buckets, heads])?;
    let layers = w.layers(&cfg, &MPNET_LAYER)?;
    let eps = cfg.layer_norm_eps as f32;
    Ok(Encoder {
        position_offset: cfg.position_offset(config)?,
        cfg,
        eps,
        word,
        position,
        token_type: None,
        emb_norm,
        layers,
        relative_bias: Some(RelativeBias {
            table,
            buckets,
            bucket_of: relative_position_bucket,
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference's table of buckets by offset (key - query), as torch computes it.
    #[test]
    fn buckets_match_the_reference_table() {
        let table: &[(i64, i64, usize)] = &[
            (-7, 0, usize::MAX),
            (-11, -8, 8),
            (-15, -12, 9),
            (-22, -16, 10),
            (-31, -23, 11),
            (-45, -32, 12),
            (-63, -46, 13),
            (-90, -64, 14),
            (-600, -91, 15),
            (1, 7, usize::MAX),
            (8, 11, 24),
            (12, 15, 25),
            (16, 22, 26),
            (23, 31, 27),
            (32, 45, 28),
            (46, 63, 29),
            (64, 90, 30),
            (91, 600, 31),
        ];
        for &(lo, hi, want) in table {
            for d in lo..=hi {
                let want = match want {
                    usize::MAX if d <= 0 => (-d) as usize,
                    usize::MAX => 16 + d as usize,
                    w => w,
                };
                assert_eq!(relative_position_bucket(d), want, "offset {d}");
            }
        }
    }
}
