//! `hashing-384`: a labelled, non-semantic embedder for scale runs, so a benchmark at a million
//! passages measures the harness (indexes, legs, selection) rather than a neural model that
//! would take hours to run on CPU.
//!
//! A text's vector is feature hashing of its lexical tokens, the BM25 analyser's
//! ([`crate::lexical::Tokenizer::english`]: lowercase, word runs of two or more characters,
//! stop words out, Snowball English stems), into [`HASHING_DIM`] dimensions:
//!
//! 1. each token's UTF-8 bytes are hashed with 64-bit FNV-1a (offset basis
//!    `0xcbf29ce484222325`, prime `0x100000001b3`: a fixed function of the bytes on every
//!    platform and version);
//! 2. the token adds `+1` to component `h mod 384` when bit 63 of `h` is clear, `-1` when it is
//!    set (the sign keeps colliding tokens from only ever adding up);
//! 3. the sums (raw term frequency) are divided by their L2 norm, computed in `f64` over the
//!    components in index order.
//!
//! A text with no token (empty, only stop words or punctuation), or whose signed sums cancel to
//! zero, gets the all-zero vector: its cosine to everything is 0, and the dense legs' ranking
//! then breaks the all-equal scores on ascending chunk id, like every tie.
//!
//! A vector is a pure function of its text: texts are embedded in parallel on the current rayon
//! pool and put back in input order, so the vectors are bit-identical at any thread count. No
//! model directory, weights or tokenizer file is read, and nothing is cached (hashing a text is
//! cheaper than looking it up).

use rayon::prelude::*;

use super::{Role, TextEmbedder};
use crate::lexical::Tokenizer;
use crate::Result;

/// The name that selects this embedder in a campaign's `model:` or on `--model`.
pub const HASHING_MODEL: &str = "hashing-384";

/// Its model identity, recorded in export manifests and cell summaries; the suffix is the
/// version of the hashing scheme above (a change of it is a new version, so a new export key).
pub const HASHING_MODEL_ID: &str = "hashing-384@v1";

/// The vector dimension.
pub const HASHING_DIM: usize = 384;

/// What every output that shows a model id says about this one.
pub const HASHING_NOTE: &str =
    "non-semantic: feature hashing of the BM25 tokens into 384 dimensions, for scale runs";

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// 64-bit FNV-1a of `bytes`.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(FNV_OFFSET, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(FNV_PRIME)
    })
}

/// The component a token adds to and the sign it adds with (see the module docs).
pub fn slot_of(token: &str) -> (usize, f32) {
    let h = fnv1a64(token.as_bytes());
    let sign = if h >> 63 == 0 { 1.0 } else { -1.0 };
    ((h % HASHING_DIM as u64) as usize, sign)
}

/// The hashing embedder (stateless but for the analyser).
#[derive(Debug, Default)]
pub struct HashingEmbedder {
    tokenizer: Tokenizer,
}

impl HashingEmbedder {
    /// The embedder.
    pub fn new() -> HashingEmbedder {
        HashingEmbedder {
            tokenizer: Tokenizer::english(),
        }
    }

    /// The vector of one text into `out` (`HASHING_DIM` wide), overwritten.
    pub fn embed_into(&self, text: &str, out: &mut [f32]) {
        debug_assert_eq!(out.len(), HASHING_DIM);
        out.fill(0.0);
        self.tokenizer.for_each_token(text, |token| {
            let (i, sign) = slot_of(token);
            out[i] += sign;
        });
        let norm = out
            .iter()
            .map(|&x| f64::from(x) * f64::from(x))
            .sum::<f64>()
            .sqrt();
        if norm > 0.0 {
            for x in out.iter_mut() {
                *x = (f64::from(*x) / norm) as f32;
            }
        }
    }

    /// One vector per text, in input order.
    pub fn embed_texts(&self, texts: &[&str]) -> Vec<Vec<f32>> {
        texts
            .par_iter()
            .map(|t| {
                let mut v = vec![0.0f32; HASHING_DIM];
                self.embed_into(t, &mut v);
                v
            })
            .collect()
    }
}

impl TextEmbedder for HashingEmbedder {
    fn model_id(&self) -> &str {
        HASHING_MODEL_ID
    }
    fn dim(&self) -> usize {
        HASHING_DIM
    }
    /// Queries and passages alike: the hashing embedder has no prompts.
    fn embed(
        &self,
        texts: &[&str],
        _role: Role,
        progress: &mut dyn FnMut(usize),
    ) -> Result<Vec<Vec<f32>>> {
        let out = self.embed_texts(texts);
        progress(texts.len());
        Ok(out)
    }
    /// The BM25 analyser's tokens (what the vector hashes).
    fn token_counts(&self, texts: &[&str]) -> Result<Vec<usize>> {
        Ok(texts
            .iter()
            .map(|t| {
                let mut n = 0;
                self.tokenizer.for_each_token(t, |_| n += 1);
                n
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_matches_the_published_test_vectors() {
        // from the FNV reference test suite (64-bit FNV-1a)
        assert_eq!(fnv1a64(b""), 0xcbf29ce484222325);
        assert_eq!(fnv1a64(b"a"), 0xaf63dc4c8601ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x85944171f73967e8);
    }

    #[test]
    fn a_two_token_text_by_hand() {
        // "Cats cats dogs." -> tokens cat, cat, dog (lowercased, stemmed)
        let e = HashingEmbedder::new();
        let mut v = vec![0.0; HASHING_DIM];
        e.embed_into("Cats cats dogs.", &mut v);
        let (ic, sc) = slot_of("cat");
        let (id, sd) = slot_of("dog");
        assert_ne!(ic, id, "the two tokens land in different components");
        // raw sums: 2 * sc at ic, 1 * sd at id; norm sqrt(5)
        let mut want = vec![0.0f32; HASHING_DIM];
        want[ic] = (2.0 * f64::from(sc) / 5f64.sqrt()) as f32;
        want[id] = (f64::from(sd) / 5f64.sqrt()) as f32;
        assert_eq!(v, want);
        // by hand (Python over the bytes): FNV-1a("cat") = 0xf5e307190ce4a327, 295 mod 384,
        // bit 63 set; FNV-1a("dog") = 0xcaaf3b18f47478e9, 105 mod 384, bit 63 set; so
        // component 295 is -2/sqrt(5) and component 105 is -1/sqrt(5)
        assert_eq!(fnv1a64(b"cat"), 0xf5e3_0719_0ce4_a327);
        assert_eq!(fnv1a64(b"dog"), 0xcaaf_3b18_f474_78e9);
        assert_eq!((ic, sc, id, sd), (295, -1.0, 105, -1.0));
        assert_eq!(v[295], -0.894_427_2_f32);
        assert_eq!(v[105], -0.447_213_6_f32);
        assert_eq!(v.iter().filter(|&&x| x != 0.0).count(), 2);
        let norm: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-6);
    }

    #[test]
    fn a_text_without_tokens_is_the_zero_vector() {
        let e = HashingEmbedder::new();
        for text in ["", "the of and", "!!! ?", "a"] {
            let v = e.embed_texts(&[text]);
            assert!(v[0].iter().all(|&x| x == 0.0), "{text:?}");
        }
    }

    #[test]
    fn vectors_are_bit_identical_at_any_thread_count() {
        let texts: Vec<String> = (0..500)
            .map(|i| format!("passage {i} about river {} and mountain {}", i % 17, i % 5))
            .collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let e = HashingEmbedder::new();
        let run = |threads: usize| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(|| e.embed_texts(&refs))
        };
        let one = run(1);
        assert_eq!(one, run(2));
        assert_eq!(one, run(4));
        // and each vector is its text's alone, whatever else is in the call
        assert_eq!(e.embed_texts(&refs[7..8])[0], one[7]);
    }
}
