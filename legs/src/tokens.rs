//! The token counter seam: what a chunk costs against a selection budget.
//!
//! Two counters exist. [`HeuristicCounter`] (name `heuristic-v1`) is the default: download-free,
//! and the same definition as the export's `token_count` column
//! ([`hopbench_datasets::tokens::heuristic_tokens`]). [`TiktokenCounter`] (name
//! `tiktoken:<encoding>`) gives exact counts against an OpenAI BPE encoding; no encoding is assumed,
//! the configuration must name one. The encodings are compiled into the `tiktoken-rs` crate, so
//! nothing is downloaded at run time.
//!
//! A counter's [`name`](TokenCounter::name) is part of the cell key: two runs that charge tokens
//! differently are different cells.
//!
//! Configuration is a [`TokenCounterSpec`]: `"heuristic"` or `{"tiktoken": "cl100k_base"}`.

use hopbench_datasets::export::Export;
use serde::{Deserialize, Serialize};
use tiktoken_rs::CoreBPE;

use crate::leg::LegError;

/// Counts the tokens a text costs. Implementations are deterministic and thread-safe.
pub trait TokenCounter: Send + Sync {
    /// Stable name of the counting scheme (part of the cell key), e.g. `heuristic-v1`.
    fn name(&self) -> String;
    /// Tokens `text` costs.
    fn count(&self, text: &str) -> u32;
}

/// The default counter: [`hopbench_datasets::tokens::heuristic_tokens`], named `heuristic-v1`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HeuristicCounter;

impl TokenCounter for HeuristicCounter {
    fn name(&self) -> String {
        "heuristic-v1".to_string()
    }

    fn count(&self, text: &str) -> u32 {
        hopbench_datasets::tokens::heuristic_tokens(text)
    }
}

/// The tiktoken encodings a [`TiktokenCounter`] accepts.
pub const TIKTOKEN_ENCODINGS: [&str; 4] = ["cl100k_base", "o200k_base", "p50k_base", "r50k_base"];

/// The named encoding is not one of [`TIKTOKEN_ENCODINGS`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown tiktoken encoding `{name}`; valid encodings: {}", TIKTOKEN_ENCODINGS.join(", "))]
pub struct UnknownEncoding {
    /// The name that was asked for.
    pub name: String,
}

/// Exact counts against a named tiktoken encoding, named `tiktoken:<encoding>`.
///
/// Text is encoded with `encode_ordinary`: special-token strings such as `<|endoftext|>` inside a
/// chunk are counted as the ordinary text they are, never as one special token.
pub struct TiktokenCounter {
    encoding: &'static str,
    bpe: &'static CoreBPE,
}

impl std::fmt::Debug for TiktokenCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TiktokenCounter")
            .field("encoding", &self.encoding)
            .finish()
    }
}

impl TiktokenCounter {
    /// A counter for `encoding` (one of [`TIKTOKEN_ENCODINGS`]). The encoding's vocabulary is
    /// parsed once per process (embedded in the binary, no download) on first use.
    pub fn new(encoding: &str) -> Result<Self, UnknownEncoding> {
        let (name, bpe): (&'static str, &'static CoreBPE) = match encoding {
            "cl100k_base" => ("cl100k_base", tiktoken_rs::cl100k_base_singleton()),
            "o200k_base" => ("o200k_base", tiktoken_rs::o200k_base_singleton()),
            "p50k_base" => ("p50k_base", tiktoken_rs::p50k_base_singleton()),
            "r50k_base" => ("r50k_base", tiktoken_rs::r50k_base_singleton()),
            other => {
                return Err(UnknownEncoding {
                    name: other.to_string(),
                })
            }
        };
        Ok(TiktokenCounter {
            encoding: name,
            bpe,
        })
    }

    /// The encoding's name.
    pub fn encoding(&self) -> &str {
        self.encoding
    }
}

impl TokenCounter for TiktokenCounter {
    fn name(&self) -> String {
        format!("tiktoken:{}", self.encoding)
    }

    fn count(&self, text: &str) -> u32 {
        u32::try_from(self.bpe.encode_ordinary(text).len()).unwrap_or(u32::MAX)
    }
}

/// Each chunk's cost under `spec`, by chunk index. The heuristic counter's is the export's own
/// `token_count` (the same function of the same text, computed when the export was built), so
/// no text is read; any other counter reads the texts ([`Export::texts`]) and counts them.
pub fn chunk_tokens(export: &Export, spec: &TokenCounterSpec) -> Result<Vec<u32>, LegError> {
    let counter = spec.build()?;
    if *spec == TokenCounterSpec::Heuristic {
        return Ok(export.chunks.iter().map(|c| c.tokens).collect());
    }
    Ok(export
        .texts()?
        .iter()
        .map(|t| counter.count(&t.full_text()))
        .collect())
}

/// Which counter a run uses: `"heuristic"` (default) or `{"tiktoken": "<encoding>"}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum TokenCounterSpec {
    /// [`HeuristicCounter`].
    #[default]
    Heuristic,
    /// [`TiktokenCounter`] for the named encoding.
    Tiktoken(String),
}

impl TokenCounterSpec {
    /// An unknown tiktoken encoding is a configuration error at campaign load, not mid-run.
    pub fn check(&self, c: &crate::params::Check<'_>) -> Result<(), LegError> {
        match self {
            TokenCounterSpec::Tiktoken(enc) if !TIKTOKEN_ENCODINGS.contains(&enc.as_str()) => c
                .fail(
                    "token_counter.tiktoken",
                    &format!(
                        "unknown encoding `{enc}` (known: {})",
                        TIKTOKEN_ENCODINGS.join(", ")
                    ),
                ),
            _ => Ok(()),
        }
    }

    /// Builds the counter. An unknown tiktoken encoding is a [`LegError::Config`] on field
    /// `token_counter` that lists the valid encodings.
    pub fn build(&self) -> Result<Box<dyn TokenCounter>, LegError> {
        match self {
            TokenCounterSpec::Heuristic => Ok(Box::new(HeuristicCounter)),
            TokenCounterSpec::Tiktoken(encoding) => match TiktokenCounter::new(encoding) {
                Ok(counter) => Ok(Box::new(counter)),
                Err(e) => Err(LegError::Config {
                    leg: "token_counter".to_string(),
                    field: "tiktoken".to_string(),
                    message: e.to_string(),
                }),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_heuristic_costs_are_the_exports_counts_of_the_texts() {
        // the fast path (the export's `token_count`) against counting every text again
        let export = crate::rescue::fixtures::synthetic();
        let fast = chunk_tokens(&export, &TokenCounterSpec::Heuristic).unwrap();
        let slow: Vec<u32> = export
            .texts()
            .unwrap()
            .iter()
            .map(|t| HeuristicCounter.count(&t.full_text()))
            .collect();
        assert_eq!(fast, slow);
        assert!(fast.iter().any(|&t| t > 0));
        // another counter counts the texts
        let tik = TokenCounterSpec::Tiktoken("cl100k_base".into());
        let counted = chunk_tokens(&export, &tik).unwrap();
        assert_eq!(counted.len(), export.chunks.len());
        assert_ne!(counted, fast);
    }

    #[test]
    fn heuristic_counter_name_and_count() {
        let c = HeuristicCounter;
        assert_eq!(c.name(), "heuristic-v1");
        assert_eq!(c.count("The cat sat."), 4);
        assert_eq!(c.count(""), 0);
    }

    #[test]
    fn tiktoken_counts_known_strings() {
        let c = TiktokenCounter::new("cl100k_base").unwrap();
        assert_eq!(c.name(), "tiktoken:cl100k_base");
        assert_eq!(c.count("hello world"), 2);
        assert_eq!(c.count(""), 0);
        // special-token text is counted as ordinary text, never as one special token
        assert!(c.count("<|endoftext|>") > 1);
        let o = TiktokenCounter::new("o200k_base").unwrap();
        assert_eq!(o.name(), "tiktoken:o200k_base");
        assert_eq!(o.count("hello world"), 2);
        for enc in TIKTOKEN_ENCODINGS {
            let t = TiktokenCounter::new(enc).unwrap();
            assert_eq!(t.encoding(), enc);
            assert!(t.count("hello world") >= 2);
        }
    }

    #[test]
    fn unknown_encoding_lists_the_valid_ones() {
        let e = TiktokenCounter::new("gpt2").unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("`gpt2`"), "{msg}");
        for enc in TIKTOKEN_ENCODINGS {
            assert!(msg.contains(enc), "{msg}");
        }
        let spec = TokenCounterSpec::Tiktoken("cl100k".to_string());
        match spec.build() {
            Err(LegError::Config { field, message, .. }) => {
                assert_eq!(field, "tiktoken");
                assert!(message.contains("cl100k_base"), "{message}");
            }
            _ => panic!("expected a config error"),
        }
    }

    #[test]
    fn spec_deserializes_both_forms_and_rejects_unknown() {
        let h: TokenCounterSpec = serde_json::from_str(r#""heuristic""#).unwrap();
        assert_eq!(h, TokenCounterSpec::Heuristic);
        assert_eq!(h.build().unwrap().name(), "heuristic-v1");
        let t: TokenCounterSpec = serde_json::from_str(r#"{"tiktoken": "p50k_base"}"#).unwrap();
        assert_eq!(t, TokenCounterSpec::Tiktoken("p50k_base".to_string()));
        assert_eq!(t.build().unwrap().name(), "tiktoken:p50k_base");
        assert!(serde_json::from_str::<TokenCounterSpec>(r#""tiktoken""#).is_err());
        assert!(serde_json::from_str::<TokenCounterSpec>(r#"{"bpe": "x"}"#).is_err());
        assert!(serde_json::from_str::<TokenCounterSpec>(r#""exact""#).is_err());
        assert_eq!(TokenCounterSpec::default(), TokenCounterSpec::Heuristic);
    }
}
