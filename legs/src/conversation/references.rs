//! Reference resolution (spec §4): detect referential expressions in the current user turn,
//! resolve each against earlier turns, and rewrite the query with the resolutions substituted.

use serde::{Deserialize, Serialize};

use super::turnlog::{LoggedTurn, Speaker};

/// The spec's reference types handled here (its "action reference", "do it again", is treated
/// as an entity reference on the pronoun "it").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReferenceKind {
    /// Pronoun or demonstrative noun phrase ("it", "they", "this company").
    Entity,
    /// A prior turn ("what you said earlier", "the previous question").
    Turn,
    /// An item of an enumeration ("the second option", "#2").
    Ordinal,
    /// A tool output ("that result", "the search results"); Tier E has no data in this project,
    /// so it resolves to the most recent agent turn.
    Tool,
}

/// What a reference resolved to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Resolution {
    /// A piece of text (an entity name or a list item).
    Text(String),
    /// A whole prior turn, by index.
    Turn(usize),
}

/// One referential expression of the current turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reference {
    /// Reference type.
    pub kind: ReferenceKind,
    /// The expression as written in the current turn.
    pub surface: String,
    /// What it resolved to; `None` when nothing earlier fits.
    pub resolved_to: Option<Resolution>,
    /// The turn the resolution came from (pulled in at full weight, spec §4.2).
    pub source_turn: Option<usize>,
    /// Byte range of `surface` in the current turn's text.
    pub span: (usize, usize),
}

/// Output of [`resolve`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resolved {
    /// Detected references in text order.
    pub references: Vec<Reference>,
    /// The current turn with each resolved reference's span replaced by its resolved text
    /// (an entity name, a list item, or the full text of the referenced turn).
    pub query_text: String,
}

impl Resolved {
    /// Number of references that resolved.
    pub fn resolved_count(&self) -> usize {
        self.references
            .iter()
            .filter(|r| r.resolved_to.is_some())
            .count()
    }
}

#[derive(Debug, Clone)]
struct Token {
    start: usize,
    end: usize,
    lower: String,
    capitalised: bool,
    sentence_initial: bool,
}

fn tokenize(text: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    let mut boundary = true; // start of text counts as a sentence start
    let is_word = |c: char| c.is_alphanumeric() || c == '\'' || c == '’' || c == '#';
    let push = |s: usize, e: usize, boundary: bool, out: &mut Vec<Token>| {
        let w = &text[s..e];
        let w = w.trim_end_matches(['\'', '’']);
        if w.is_empty() {
            return;
        }
        out.push(Token {
            start: s,
            end: s + w.len(),
            lower: w.to_lowercase(),
            capitalised: w.chars().next().is_some_and(char::is_uppercase),
            sentence_initial: boundary,
        });
    };
    for (i, c) in text.char_indices() {
        // a hyphen between word characters joins them ("Kim Jong-il", "Jean-Paul" are one word)
        let joining_hyphen = c == '-'
            && start.is_some()
            && text[i + 1..]
                .chars()
                .next()
                .is_some_and(char::is_alphanumeric);
        if is_word(c) || joining_hyphen {
            if start.is_none() {
                start = Some(i);
            }
        } else {
            if let Some(s) = start.take() {
                push(s, i, boundary, &mut out);
                boundary = false;
            }
            if matches!(c, '.' | '!' | '?' | '\n' | ':' | ';') {
                boundary = true;
            }
        }
    }
    if let Some(s) = start {
        push(s, text.len(), boundary, &mut out);
    }
    out
}

/// Capitalised words that are not entity mentions.
const NOT_ENTITY: &[&str] = &[
    "a",
    "about",
    "actually",
    "after",
    "all",
    "also",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "back",
    "because",
    "before",
    "both",
    "but",
    "by",
    "can",
    "could",
    "did",
    "do",
    "does",
    "each",
    "explain",
    "first",
    "for",
    "from",
    "give",
    "good",
    "great",
    "he",
    "hello",
    "her",
    "here",
    "hi",
    "his",
    "how",
    "however",
    "i",
    "i'm",
    "i've",
    "if",
    "in",
    "is",
    "it",
    "it's",
    "its",
    "let",
    "let's",
    "maybe",
    "my",
    "no",
    "not",
    "note",
    "of",
    "ok",
    "okay",
    "on",
    "one",
    "or",
    "our",
    "please",
    "second",
    "she",
    "should",
    "so",
    "some",
    "sure",
    "tell",
    "thank",
    "thanks",
    "that",
    "the",
    "their",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "to",
    "we",
    "well",
    "what",
    "when",
    "where",
    "which",
    "who",
    "why",
    "will",
    "with",
    "would",
    "yes",
    "you",
    "your",
    // Common sentence openers and imperatives (a capitalised opener is otherwise indistinguishable
    // from a one-word name).
    "add",
    "another",
    "answer",
    "check",
    "compare",
    "configure",
    "consider",
    "describe",
    "expand",
    "finally",
    "find",
    "go",
    "here's",
    "install",
    "just",
    "like",
    "list",
    "make",
    "more",
    "most",
    "next",
    "now",
    "oh",
    "only",
    "option",
    "options",
    "other",
    "question",
    "remove",
    "result",
    "results",
    "run",
    "search",
    "see",
    "set",
    "show",
    "since",
    "sorry",
    "start",
    "stop",
    "summarise",
    "summarize",
    "there's",
    "try",
    "unlike",
    "use",
    "while",
    "write",
    "yeah",
];

/// Lower-case words that may join two capitalised runs into one name ("University of Vienna",
/// "Church of the Holy Sepulchre", "Ludwig van Beethoven"); `the` only after another of them.
const NAME_CONNECTORS: &[&str] = &[
    "of", "de", "del", "della", "da", "du", "von", "van", "der", "den", "la", "le",
];

/// Entity mentions of a text in order of appearance: maximal runs of capitalised words, skipping
/// common function words (so a capitalised sentence opener like "The" or "What" is not an
/// entity). A run continues over [`NAME_CONNECTORS`] (and `the` after one) when a capitalised
/// word follows them directly.
pub fn extract_entities(text: &str) -> Vec<String> {
    let toks = tokenize(text);
    let ok = |t: &Token| {
        t.capitalised && !NOT_ENTITY.contains(&t.lower.as_str()) && !t.lower.starts_with('#')
    };
    // only spaces between two tokens, and the second does not open a sentence
    let adjacent = |a: &Token, b: &Token| {
        text[a.end..b.start].chars().all(|c| c == ' ') && !b.sentence_initial
    };
    let mut out = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        if !ok(&toks[i]) {
            i += 1;
            continue;
        }
        let (start, mut end, mut last) = (toks[i].start, toks[i].end, i);
        let mut j = i + 1;
        while j < toks.len() && adjacent(&toks[j - 1], &toks[j]) {
            if ok(&toks[j]) {
                end = toks[j].end;
                last = j;
                j += 1;
                continue;
            }
            let is_connector = |k: usize| {
                let w = toks[k].lower.as_str();
                !toks[k].capitalised
                    && (NAME_CONNECTORS.contains(&w)
                        || (w == "the"
                            && k > last + 1
                            && NAME_CONNECTORS.contains(&toks[k - 1].lower.as_str())))
            };
            if is_connector(j) {
                j += 1;
                continue;
            }
            break;
        }
        out.push(text[start..end].to_string());
        i = last + 1;
    }
    out
}

/// Items of the enumerated list in a text: lines opening with `1.`, `2)`, `-`, `*` or `•`.
pub fn enumerated_items(text: &str) -> Vec<String> {
    let mut items = Vec::new();
    for line in text.lines() {
        let l = line.trim_start();
        let digits = l.chars().take_while(char::is_ascii_digit).count();
        let rest = if digits > 0 && (l[digits..].starts_with(". ") || l[digits..].starts_with(") "))
        {
            Some(&l[digits + 2..])
        } else if ["- ", "* ", "• "].iter().any(|m| l.starts_with(m)) {
            l.split_once(' ').map(|(_, r)| r)
        } else {
            None
        };
        if let Some(r) = rest.map(str::trim).filter(|r| !r.is_empty()) {
            items.push(r.to_string());
        }
    }
    items
}

const TOOL_PHRASES: &[&str] = &[
    "the search results",
    "the search result",
    "the query results",
    "the query result",
    "that api response",
    "the api response",
    "those results",
    "that result",
    "the results",
    "the result",
    "that output",
    "the output",
    "this output",
];
/// Turn phrases; `true` = agent turn, `false` = the previous user turn.
const TURN_PHRASES: &[(&str, bool)] = &[
    ("what you said earlier", true),
    ("what you said before", true),
    ("what you just said", true),
    ("what you said", true),
    ("your last answer", true),
    ("your previous answer", true),
    ("your last response", true),
    ("your previous response", true),
    ("your answer", true),
    ("the previous question", false),
    ("my previous question", false),
    ("my last question", false),
    ("the last question", false),
];
const ORDINALS: &[&str] = &[
    "first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth",
];
const ORDINAL_NOUNS: &[&str] = &[
    "one",
    "option",
    "item",
    "point",
    "step",
    "choice",
    "suggestion",
    "approach",
    "thing",
    "answer",
    "idea",
    "entry",
];
const PRONOUNS: &[&str] = &["it", "he", "she", "they", "them", "him"];
const DEMONSTRATIVES: &[&str] = &["this", "that", "these", "those"];
/// Words after a demonstrative that mean it is not a demonstrative noun phrase.
const NOT_HEAD: &[&str] = &[
    "a", "an", "and", "are", "but", "can", "could", "did", "do", "does", "for", "had", "has",
    "have", "he", "i", "in", "is", "it", "it's", "of", "on", "or", "she", "should", "the", "they",
    "to", "was", "we", "were", "will", "with", "would", "you", "means", "mean", "makes", "seems",
    "sounds", "way",
];

fn match_phrase(toks: &[Token], i: usize, phrase: &str) -> Option<usize> {
    let words: Vec<&str> = phrase.split(' ').collect();
    if i + words.len() > toks.len() {
        return None;
    }
    words
        .iter()
        .enumerate()
        .all(|(k, w)| toks[i + k].lower == *w)
        .then_some(i + words.len() - 1)
}

fn last_turn_of(history: &[LoggedTurn], speaker: Speaker) -> Option<&LoggedTurn> {
    history.iter().rev().find(|t| t.speaker == speaker)
}

/// Most recent entity mention in `history`: latest turn first, last mention within a turn.
fn most_recent_entity(history: &[LoggedTurn]) -> Option<(String, usize)> {
    history
        .iter()
        .rev()
        .find_map(|t| extract_entities(&t.text).pop().map(|e| (e, t.index)))
}

fn resolve_ordinal(k: usize, history: &[LoggedTurn]) -> (Option<Resolution>, Option<usize>) {
    if let Some(t) = history
        .iter()
        .rev()
        .filter(|t| t.speaker == Speaker::Agent)
        .find(|t| !enumerated_items(&t.text).is_empty())
    {
        if let Some(item) = enumerated_items(&t.text).into_iter().nth(k - 1) {
            return (Some(Resolution::Text(item)), Some(t.index));
        }
    }
    if let Some(prev) = history.last() {
        let mut seen: Vec<String> = Vec::new();
        for e in extract_entities(&prev.text) {
            if !seen.contains(&e) {
                seen.push(e);
            }
        }
        if let Some(e) = seen.into_iter().nth(k - 1) {
            return (Some(Resolution::Text(e)), Some(prev.index));
        }
    }
    (None, None)
}

/// A reference detected at a token: its kind, its last token, what it resolved to and the turn
/// that came from.
type Hit = (ReferenceKind, usize, Option<Resolution>, Option<usize>);

/// Detect and resolve the references of `current` (the current user turn's text) against
/// `history` (every earlier turn, oldest first).
///
/// Detection scans tokens left to right, trying at each position tool phrases, turn phrases,
/// ordinal patterns and then entity pronouns/demonstratives; the first match wins and the scan
/// continues after it, so spans never overlap.
pub fn resolve(current: &str, history: &[LoggedTurn]) -> Resolved {
    let toks = tokenize(current);
    let mut refs = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        let hit = tool_phrase_at(&toks, i, history)
            .or_else(|| turn_phrase_at(&toks, i, history))
            .or_else(|| ordinal_at(&toks, i, history))
            .or_else(|| entity_at(current, &toks, i, history));
        match hit {
            Some((kind, end, resolved_to, source_turn)) => {
                let span = (toks[i].start, toks[end].end);
                refs.push(Reference {
                    kind,
                    surface: current[span.0..span.1].to_string(),
                    resolved_to,
                    source_turn,
                    span,
                });
                i = end + 1;
            }
            None => i += 1,
        }
    }
    let query_text = substitute(current, &refs, history);
    Resolved {
        references: refs,
        query_text,
    }
}

/// A reference ending at token `end` that resolves to the whole turn `t` (none when there is no
/// such turn yet).
fn whole_turn_hit(kind: ReferenceKind, end: usize, t: Option<&LoggedTurn>) -> Hit {
    (
        kind,
        end,
        t.map(|t| Resolution::Turn(t.index)),
        t.map(|t| t.index),
    )
}

/// A tool phrase at token `i`: Tier E has no tool outputs, so it names the latest agent turn.
fn tool_phrase_at(toks: &[Token], i: usize, history: &[LoggedTurn]) -> Option<Hit> {
    let end = TOOL_PHRASES.iter().find_map(|p| match_phrase(toks, i, p))?;
    let t = last_turn_of(history, Speaker::Agent);
    Some(whole_turn_hit(ReferenceKind::Tool, end, t))
}

/// A turn phrase at token `i`: the latest agent turn, or the previous user turn.
fn turn_phrase_at(toks: &[Token], i: usize, history: &[LoggedTurn]) -> Option<Hit> {
    let (end, agent) = TURN_PHRASES
        .iter()
        .find_map(|(p, a)| match_phrase(toks, i, p).map(|e| (e, *a)))?;
    let t = last_turn_of(history, if agent { Speaker::Agent } else { Speaker::User });
    Some(whole_turn_hit(ReferenceKind::Turn, end, t))
}

/// An ordinal at token `i` (`#k`, `the <ordinal> [noun]`, `option|number|item k`), resolved to
/// the k-th item of the latest enumeration (see [`resolve_ordinal`]).
fn ordinal_at(toks: &[Token], i: usize, history: &[LoggedTurn]) -> Option<Hit> {
    let w = toks[i].lower.as_str();
    let (k, end) = if let Some(n) = w.strip_prefix('#') {
        n.parse::<usize>().ok().filter(|&k| k > 0).map(|k| (k, i))
    } else if w == "the" && i + 1 < toks.len() {
        ORDINALS
            .iter()
            .position(|o| *o == toks[i + 1].lower)
            .map(|p| {
                let noun = toks
                    .get(i + 2)
                    .is_some_and(|t| ORDINAL_NOUNS.contains(&t.lower.as_str()));
                (p + 1, if noun { i + 2 } else { i + 1 })
            })
    } else if matches!(w, "option" | "number" | "item") && i + 1 < toks.len() {
        toks[i + 1]
            .lower
            .parse::<usize>()
            .ok()
            .filter(|&k| k > 0)
            .map(|k| (k, i + 1))
    } else {
        None
    }?;
    let (r, s) = resolve_ordinal(k, history);
    Some((ReferenceKind::Ordinal, end, r, s))
}

/// A pronoun, or a demonstrative (with its head noun when one follows directly), at token `i`,
/// resolved to the most recent entity mention.
fn entity_at(current: &str, toks: &[Token], i: usize, history: &[LoggedTurn]) -> Option<Hit> {
    let w = toks[i].lower.as_str();
    let end = if PRONOUNS.contains(&w) {
        Some(i)
    } else if DEMONSTRATIVES.contains(&w) {
        match toks.get(i + 1) {
            Some(n)
                if !NOT_HEAD.contains(&n.lower.as_str())
                    && current[toks[i].end..n.start]
                        .chars()
                        .all(char::is_whitespace) =>
            {
                Some(i + 1)
            }
            // A bare demonstrative counts only before punctuation or the end of the turn.
            Some(n)
                if !current[toks[i].end..n.start]
                    .chars()
                    .all(char::is_whitespace) =>
            {
                Some(i)
            }
            None => Some(i),
            _ => None,
        }
    } else {
        None
    }?;
    let e = most_recent_entity(history);
    Some((
        ReferenceKind::Entity,
        end,
        e.as_ref().map(|(e, _)| Resolution::Text(e.clone())),
        e.map(|(_, s)| s),
    ))
}

/// `current` with every resolved reference replaced by its resolution (last first, so the
/// earlier spans stay valid); an unresolved reference, or one naming a turn not in `history`,
/// keeps its text.
fn substitute(current: &str, refs: &[Reference], history: &[LoggedTurn]) -> String {
    let mut query_text = current.to_string();
    for r in refs.iter().rev() {
        let text = match &r.resolved_to {
            Some(Resolution::Text(t)) => t.clone(),
            Some(Resolution::Turn(k)) => match history.iter().find(|t| t.index == *k) {
                Some(t) => t.text.clone(),
                None => continue,
            },
            None => continue,
        };
        query_text.replace_range(r.span.0..r.span.1, &text);
    }
    query_text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log(turns: &[(&str, &str)]) -> Vec<LoggedTurn> {
        turns
            .iter()
            .enumerate()
            .map(|(index, (s, t))| LoggedTurn {
                index,
                speaker: Speaker::parse(s),
                text: t.to_string(),
                vector: vec![],
            })
            .collect()
    }

    #[test]
    fn names_with_connectors_are_one_entity() {
        assert_eq!(
            extract_entities("Try the University of Vienna or the Church of the Holy Sepulchre."),
            vec!["University of Vienna", "Church of the Holy Sepulchre"]
        );
        // a connector not followed by a capitalised word ends the run before it
        assert_eq!(
            extract_entities("Ada Lovelace of course. Paris of the"),
            vec!["Ada Lovelace", "Paris"]
        );
        assert_eq!(extract_entities("Ada and Charles"), vec!["Ada", "Charles"]);
    }

    #[test]
    fn hyphenated_names_are_one_word() {
        assert_eq!(
            extract_entities("Kim Jong-il ruled after Kim Il-sung - then what?"),
            vec!["Kim Jong-il", "Kim Il-sung"]
        );
    }

    #[test]
    fn entities_skip_sentence_openers() {
        assert_eq!(
            extract_entities("The Eiffel Tower is in Paris. What about Rome?"),
            vec!["Eiffel Tower", "Paris", "Rome"]
        );
        assert!(extract_entities("How do I do it?").is_empty());
    }

    #[test]
    fn entity_reference_resolves_to_latest_mention() {
        let h = log(&[
            ("user", "Who founded Acme Corp?"),
            ("agent", "Acme Corp was founded by Jane Doe."),
        ]);
        let r = resolve("Where was she born?", &h);
        assert_eq!(r.references.len(), 1);
        assert_eq!(r.references[0].kind, ReferenceKind::Entity);
        assert_eq!(
            r.references[0].resolved_to,
            Some(Resolution::Text("Jane Doe".into()))
        );
        assert_eq!(r.references[0].source_turn, Some(1));
        assert_eq!(r.query_text, "Where was Jane Doe born?");
        let r = resolve("When did this company go public?", &h);
        assert_eq!(r.references[0].surface, "this company");
        assert_eq!(r.query_text, "When did Jane Doe go public?");
        // "that" as a conjunction is not a reference.
        assert!(resolve("I think that the plan works", &h)
            .references
            .is_empty());
    }

    #[test]
    fn turn_reference_resolves_to_turn_index() {
        let h = log(&[
            ("user", "q one"),
            ("agent", "answer one"),
            ("user", "q two"),
            ("agent", "answer two"),
        ]);
        let r = resolve("Expand on your last answer", &h);
        assert_eq!(r.references[0].kind, ReferenceKind::Turn);
        assert_eq!(r.references[0].resolved_to, Some(Resolution::Turn(3)));
        assert_eq!(r.query_text, "Expand on answer two");
        let r = resolve("Go back to the previous question", &h);
        assert_eq!(r.references[0].resolved_to, Some(Resolution::Turn(2)));
    }

    #[test]
    fn ordinal_reference_resolves_list_item_then_entity() {
        let h = log(&[
            ("user", "Which databases?"),
            ("agent", "Options:\n1. Postgres\n2. SQLite\n3. Redis"),
        ]);
        let r = resolve("Tell me about the second option", &h);
        assert_eq!(r.references[0].kind, ReferenceKind::Ordinal);
        assert_eq!(r.references[0].surface, "the second option");
        assert_eq!(r.query_text, "Tell me about SQLite");
        let r = resolve("and #3?", &h);
        assert_eq!(
            r.references[0].resolved_to,
            Some(Resolution::Text("Redis".into()))
        );
        let h = log(&[("user", "x"), ("agent", "Compare Rust and Go and Zig.")]);
        let r = resolve("I like the first one", &h);
        assert_eq!(
            r.references[0].resolved_to,
            Some(Resolution::Text("Rust".into()))
        );
    }

    #[test]
    fn tool_reference_resolves_to_last_agent_turn() {
        let h = log(&[("user", "search for etcd"), ("agent", "found 3 docs")]);
        let r = resolve("Summarise the search results", &h);
        assert_eq!(r.references.len(), 1);
        assert_eq!(r.references[0].kind, ReferenceKind::Tool);
        assert_eq!(r.references[0].resolved_to, Some(Resolution::Turn(1)));
        assert_eq!(r.query_text, "Summarise found 3 docs");
    }

    #[test]
    fn nothing_to_resolve_on_first_turn() {
        let r = resolve("What is it?", &[]);
        assert_eq!(r.references.len(), 1);
        assert_eq!(r.resolved_count(), 0);
        assert_eq!(r.query_text, "What is it?");
    }
}
