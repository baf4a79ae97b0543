//! XLM-RoBERTa (and RoBERTa): BERT's layout and weight names, but position ids that start after
//! the padding index (`pad_token_id + 1`, as transformers counts them for an unpadded sequence)
//! and a single token type.

use std::path::Path;

use super::bert::{embeddings_and_layers, BERT_LAYER};
use super::encoder::{Encoder, EncoderConfig, Weights};
use crate::{Error, Result};

/// The XLM-RoBERTa encoder of `config.json` (`cfg`, `config` for messages) from the bytes of
/// `model.safetensors` (`path`), with or without the `roberta.` prefix of a checkpoint saved
/// with a task head.
pub(crate) fn load(
    cfg: EncoderConfig,
    bytes: &[u8],
    path: &Path,
    config: &Path,
) -> Result<Encoder> {
    let offset = cfg.position_offset(config)?;
    if cfg.type_vocab_size != 1 {
        return Err(Error::field(
            config,
            "model",
            "type_vocab_size",
            format!(
                "{} token types: an XLM-RoBERTa encoder has one",
                cfg.type_vocab_size
            ),
        ));
    }
    let w = Weights::open(
        bytes,
        path,
        &["", "roberta."],
        "embeddings.word_embeddings.weight",
        "XLM-RoBERTa",
    )?;
    embeddings_and_layers(cfg, &w, offset, &BERT_LAYER)
}
