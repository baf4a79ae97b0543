//! Text handling of the KG: case folding, aliases of a title, sentence spans, and the alias
//! matcher shared by the graph build and query-time seeding (so both see exactly the same matches).

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};

use crate::lexical::STOPWORDS_EN;

/// Length-preserving lowercase: every char is replaced by its lowercase form when that is one
/// char of the same UTF-8 length (true for ASCII and almost all of Unicode), else kept. Byte
/// offsets in the folded string are therefore byte offsets in the original.
pub(crate) fn fold(s: &str) -> String {
    if s.is_ascii() {
        return s.to_ascii_lowercase();
    }
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        let mut lower = c.to_lowercase();
        match (lower.next(), lower.next()) {
            (Some(l), None) if l.len_utf8() == c.len_utf8() => out.push(l),
            _ => out.push(c),
        }
    }
    out
}

/// `"Lilu (mythology)"` -> `Some("Lilu")`: the title without a trailing parenthetical qualifier,
/// when what is left is non-empty and has balanced parentheses.
pub(crate) fn strip_qualifier(title: &str) -> Option<&str> {
    let inner = title.trim_end().strip_suffix(')')?;
    let open = inner.rfind('(')?;
    if inner[open + 1..].contains(['(', ')']) {
        return None;
    }
    let base = inner[..open].trim_end();
    let balanced = base.matches('(').count() == base.matches(')').count();
    (!base.is_empty() && balanced).then_some(base)
}

/// Whether an alias may be matched: at least `min_chars` chars, at least one letter, and not made
/// only of stop words.
pub(crate) fn alias_ok(alias: &str, min_chars: usize) -> bool {
    if alias.chars().count() < min_chars || !alias.chars().any(char::is_alphabetic) {
        return false;
    }
    !alias
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .all(|w| STOPWORDS_EN.contains(&w))
}

/// The candidate aliases of a title, folded: the whole title, and the title with its
/// parenthetical qualifier stripped (if any, and unless the qualifier is `(disambiguation)`: the
/// bare name of a disambiguation page is by definition ambiguous). Not yet filtered by
/// [`alias_ok`].
pub(crate) fn title_aliases(title: &str) -> Vec<String> {
    let t = title.trim();
    let mut v = vec![fold(t)];
    let disambiguation = fold(t).ends_with("(disambiguation)");
    if let Some(base) = strip_qualifier(t).filter(|_| !disambiguation) {
        let b = fold(base);
        if b != v[0] {
            v.push(b);
        }
    }
    v
}

const ABBREVIATIONS: [&str; 22] = [
    "mr", "mrs", "ms", "dr", "st", "jr", "sr", "mt", "ft", "gen", "col", "lt", "capt", "sgt",
    "rev", "prof", "hon", "gov", "sen", "rep", "pres", "vs",
];

/// Sentence spans `(start, end)` (byte offsets) of `text`. A sentence ends at a newline, or after
/// `.`, `!` or `?` followed by whitespace and then an uppercase letter or a digit, except after a
/// single capital letter (an initial, "George T. Solomon") or a common abbreviation
/// ("St. Maurice"). Spans cover the text without gaps (whitespace included); empty spans are
/// not produced.
pub(crate) fn sentences(text: &str) -> Vec<(usize, usize)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\n' => {
                if i > start {
                    out.push((start, i));
                }
                start = i + 1;
            }
            b'.' | b'!' | b'?' => {
                let mut j = i + 1;
                while j < b.len() && b[j] != b'\n' && text[j..].starts_with(char::is_whitespace) {
                    j += text[j..].chars().next().map_or(1, char::len_utf8);
                }
                let next = text[j..].chars().next();
                let starts_new = j > i + 1
                    && next.is_some_and(|c| c.is_uppercase() || c.is_ascii_digit())
                    && !(b[i] == b'.' && is_abbreviation(&text[start..i]));
                if starts_new {
                    out.push((start, j));
                    start = j;
                    i = j;
                    continue;
                }
            }
            _ => {}
        }
        i += 1;
    }
    if start < b.len() {
        out.push((start, b.len()));
    }
    out
}

/// Whether the word right before a period is an initial or a listed abbreviation.
fn is_abbreviation(before: &str) -> bool {
    let word_start = before
        .char_indices()
        .rev()
        .find(|(_, c)| !c.is_alphabetic())
        .map_or(0, |(k, c)| k + c.len_utf8());
    let word = &before[word_start..];
    let mut chars = word.chars();
    match (chars.next(), chars.next()) {
        (Some(c), None) => c.is_uppercase(),
        (Some(_), Some(_)) => ABBREVIATIONS.contains(&word.to_ascii_lowercase().as_str()),
        _ => false,
    }
}

/// One accepted alias occurrence: byte span in the (folded) text and the node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Hit {
    pub start: usize,
    pub end: usize,
    pub node: u32,
}

/// The alias automaton. Search is overlapping (standard semantics), occurrences not on word
/// boundaries are dropped, and the remaining ones are reduced leftmost-longest and
/// non-overlapping. Doing the boundary check before the leftmost-longest choice means a longer
/// alias that fails the boundary check never hides a shorter one that passes.
#[derive(Debug, Clone)]
pub(crate) struct Matcher {
    ac: AhoCorasick,
    nodes: Vec<u32>,
}

impl Matcher {
    /// A matcher over folded, distinct `aliases`; `None` when there are none.
    pub fn new<'a>(aliases: impl IntoIterator<Item = (&'a str, u32)>) -> Option<Matcher> {
        let (pats, nodes): (Vec<&str>, Vec<u32>) = aliases.into_iter().unzip();
        if pats.is_empty() {
            return None;
        }
        let ac = AhoCorasickBuilder::new()
            .match_kind(MatchKind::Standard)
            .build(&pats)
            .expect("alias automaton fits in memory");
        Some(Matcher { ac, nodes })
    }

    /// Accepted hits in `folded` (a [`fold`]ed text), in text order.
    pub fn hits(&self, folded: &str) -> Vec<Hit> {
        self.hits_where(folded, |_| true)
    }

    /// Accepted hits in `folded`, where an occurrence must also pass `keep` (checked, like word
    /// boundaries, before the leftmost-longest reduction), in text order.
    pub fn hits_where(&self, folded: &str, keep: impl Fn(&Hit) -> bool) -> Vec<Hit> {
        let mut all: Vec<Hit> = self
            .ac
            .find_overlapping_iter(folded)
            .filter(|m| on_boundaries(folded, m.start(), m.end()))
            .map(|m| Hit {
                start: m.start(),
                end: m.end(),
                node: self.nodes[m.pattern().as_usize()],
            })
            .filter(|h| keep(h))
            .collect();
        all.sort_unstable_by(|a, b| a.start.cmp(&b.start).then(b.end.cmp(&a.end)));
        let mut out = Vec::with_capacity(all.len());
        let mut last_end = 0;
        for h in all {
            if h.start >= last_end {
                last_end = h.end;
                out.push(h);
            }
        }
        out
    }
}

/// Whether `text[start..end]` is delimited by non-alphanumeric chars (or the text's ends).
fn on_boundaries(text: &str, start: usize, end: usize) -> bool {
    let before = text[..start].chars().next_back();
    let after = text[end..].chars().next();
    !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fold_preserves_offsets() {
        assert_eq!(fold("Émile ZOLA"), "émile zola");
        let s = "K\u{212A}İx"; // Kelvin sign and dotted I lowercase to other lengths: kept
        assert_eq!(fold(s).len(), s.len());
    }

    #[test]
    fn qualifiers_are_stripped() {
        assert_eq!(strip_qualifier("Lilu (mythology)"), Some("Lilu"));
        assert_eq!(
            strip_qualifier("Theodred II (Bishop of Elmham)"),
            Some("Theodred II")
        );
        assert_eq!(strip_qualifier("Lilu"), None);
        assert_eq!(strip_qualifier("(mythology)"), None);
        assert_eq!(strip_qualifier("A (b (c))"), None);
        assert_eq!(
            title_aliases("Lilu (mythology)"),
            vec!["lilu (mythology)", "lilu"]
        );
        assert_eq!(title_aliases("Teutberga"), vec!["teutberga"]);
        assert_eq!(
            title_aliases("Rose (disambiguation)"),
            vec!["rose (disambiguation)"]
        );
    }

    #[test]
    fn short_numeric_and_stopword_aliases_are_refused() {
        assert!(alias_ok("lilu", 4));
        assert!(!alias_ok("io", 4));
        assert!(!alias_ok("1990", 4));
        assert!(!alias_ok("2011–12", 4));
        assert!(!alias_ok("this is it", 4));
        assert!(alias_ok("the who", 4));
    }

    #[test]
    fn matches_respect_word_boundaries_and_prefer_longest() {
        let m = Matcher::new([("lilu", 0), ("lilu an", 1), ("new york", 2), ("york", 3)]).unwrap();
        let nodes = |t: &str| m.hits(&fold(t)).iter().map(|h| h.node).collect::<Vec<_>>();
        assert_eq!(nodes("Liluana is not Lilu."), vec![0]);
        assert_eq!(nodes("Lilu's myth"), vec![0]);
        // the longer alias fails the boundary check, the shorter one is still found
        assert_eq!(nodes("lilu ana"), vec![0]);
        assert_eq!(nodes("lilu an, new York and York"), vec![1, 2, 3]);
        assert_eq!(nodes("newyork yorkshire"), Vec::<u32>::new());
        let h = m.hits(&fold("In New York"));
        assert_eq!((h[0].start, h[0].end), (3, 11));
    }

    #[test]
    fn sentences_split_on_terminators_and_newlines() {
        let t = "Lilu is a demon. It lived in 1990! Mr. Smith met George T. Solomon.\nNext line";
        let s: Vec<&str> = sentences(t).iter().map(|&(a, b)| &t[a..b]).collect();
        assert_eq!(
            s,
            vec![
                "Lilu is a demon. ",
                "It lived in 1990! ",
                "Mr. Smith met George T. Solomon.",
                "Next line"
            ]
        );
        assert_eq!(sentences("a.b. c. D"), vec![(0, 8), (8, 9)]);
        assert!(sentences("").is_empty());
    }
}
