//! The default token counter: a download-free estimate of what an LLM tokenizer would charge.
//!
//! Definition (stable: it is part of every cell key as `heuristic-v1`): a text costs one token per
//! standalone non-space, non-word character (punctuation, symbols), plus, for each run of word
//! characters, `ceil(chars / 6)` "word pieces" — one piece for ordinary words, more for long
//! words, numbers and identifiers, which BPE vocabularies split. On English prose this lands near
//! the ~1.3 tokens per word that BPE tokenizers charge; it is an estimate, and a run that needs
//! exact counts names a tiktoken encoding instead (legs' `TokenCounter`).

/// Heuristic token count of `text` (see the module docs for the exact definition).
pub fn heuristic_tokens(text: &str) -> u32 {
    let mut total = 0u32;
    let mut run = 0u32;
    for c in text.chars() {
        if c.is_alphanumeric() || c == '_' {
            run += 1;
        } else {
            total += run.div_ceil(6);
            run = 0;
            if !c.is_whitespace() {
                total += 1;
            }
        }
    }
    total + run.div_ceil(6)
}

#[cfg(test)]
mod tests {
    use super::heuristic_tokens;

    #[test]
    fn words_pieces_and_punctuation() {
        assert_eq!(heuristic_tokens(""), 0);
        assert_eq!(heuristic_tokens("   "), 0);
        assert_eq!(heuristic_tokens("The cat sat."), 4);
        // "internationalization" is 20 chars -> 4 pieces; "," and "!" cost one each
        assert_eq!(heuristic_tokens("internationalization, yes!"), 7);
        assert_eq!(heuristic_tokens("a-b"), 3);
    }
}
