//! The in-memory shape every raw format is read into, before anything is embedded or indexed.
//!
//! A reader's whole job is `raw files -> RawDataset`; everything after (chunking, embedding, BM25,
//! the export) is format-agnostic. Ids are the dataset's own record ids (strings); the export sorts
//! chunks by them so the dense `u32` chunk index orders exactly like the record ids.

use std::collections::BTreeMap;

/// One retrievable unit of text (a paragraph or a chunk of one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Passage {
    /// Record id, unique within the dataset (e.g. the title, or a zero-padded list index).
    pub id: String,
    /// Source document; `None` when the format gives none (doc metrics then drop this passage).
    pub doc: Option<String>,
    /// Title as published ("" when the format has none).
    pub title: String,
    /// The passage body.
    pub text: String,
    /// A context header (breadcrumb) the dataset publishes, `None` where it has none. What is
    /// indexed is decided by the export's protocol ([`crate::protocol`]), which may replace it
    /// with the title or drop it.
    pub header: Option<String>,
}

/// One speaker turn of a conversation (the conversation so far, ending with the current user turn).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Turn {
    /// `user` or `agent`.
    pub speaker: String,
    /// What was said.
    pub text: String,
}

/// One hop of a published decomposition (MuSiQue `question_decomposition`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SubQuestion {
    /// The sub-question, with `#k` references to earlier answers left as published.
    pub question: String,
    /// The published answer of this hop.
    pub answer: String,
    /// Passage ids that support this hop.
    pub gold: Vec<String>,
}

/// A piece of a published sub-question: literal text, or a MuSiQue-style `#k` reference to the
/// answer of hop `k` (1-based) as written. `#` followed by ASCII digits is one reference, so `#12`
/// is hop 12, never hop 1 then `2`; a bare `#` (or digits too long for `usize`) has `hop: None`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuestionPiece<'a> {
    /// Text without references.
    Text(&'a str),
    /// A hop reference.
    HopRef {
        /// As written (`#2`).
        raw: &'a str,
        /// The hop number.
        hop: Option<usize>,
    },
}

/// Splits a sub-question into text and `#k` references, in order (the one parser of `#k` for
/// the sub-query texts of the export and the derived dialogues).
pub fn question_pieces(question: &str) -> Vec<QuestionPiece<'_>> {
    let mut out = Vec::new();
    let bytes = question.as_bytes();
    let (mut i, mut text_start) = (0, 0);
    while i < bytes.len() {
        if bytes[i] != b'#' {
            i += 1;
            continue;
        }
        if text_start < i {
            out.push(QuestionPiece::Text(&question[text_start..i]));
        }
        let mut end = i + 1;
        while end < bytes.len() && bytes[end].is_ascii_digit() {
            end += 1;
        }
        out.push(QuestionPiece::HopRef {
            raw: &question[i..end],
            hop: question[i + 1..end].parse().ok(),
        });
        i = end;
        text_start = end;
    }
    if text_start < question.len() {
        out.push(QuestionPiece::Text(&question[text_start..]));
    }
    out
}

/// One evaluation query.
#[derive(Debug, Clone, PartialEq)]
pub struct Question {
    /// Query id, unique within the dataset.
    pub id: String,
    /// The query text as it is retrieved with.
    pub text: String,
    /// Gold passage ids (a set: order is irrelevant, duplicates are removed by the export).
    pub gold: Vec<String>,
    /// The grade of each gold passage whose judgement gives it one other than 1: graded nDCG's
    /// gain. A gold passage absent here has grade 1, as every gold passage of a format whose
    /// gold is a set has (the multi-hop formats), so their nDCG is the binary one.
    pub grades: BTreeMap<String, u32>,
    /// The hop chain: one slot per hop, each the set of passage ids that satisfy that hop.
    /// `None` where the dataset publishes no chain (chain metrics are then `None`, never 0).
    pub chain: Option<Vec<Vec<String>>>,
    /// Published decomposition, where the dataset has one.
    pub decomposition: Option<Vec<SubQuestion>>,
    /// Conversation so far (conversational datasets only).
    pub conversation: Option<Vec<Turn>>,
    /// Free-form labels from the dataset (type, level, Multi-Turn label, ...), kept for breakdowns.
    pub labels: BTreeMap<String, String>,
}

impl Question {
    /// A plain question with gold and nothing else; readers fill the rest.
    pub fn new(id: impl Into<String>, text: impl Into<String>, gold: Vec<String>) -> Self {
        Question {
            id: id.into(),
            text: text.into(),
            gold,
            grades: BTreeMap::new(),
            chain: None,
            decomposition: None,
            conversation: None,
            labels: BTreeMap::new(),
        }
    }
}

impl Question {
    /// Adds `id` to the gold at `grade` (positive): a passage already gold keeps the higher of
    /// its grades, so a judgement repeated within or across qrels files counts once, at its
    /// highest grade, whatever the order of the lines.
    pub fn add_gold(&mut self, id: String, grade: u32) {
        debug_assert!(grade > 0, "a gold passage has a positive grade");
        let grade = grade.max(self.grade(&id).unwrap_or(0));
        if !self.gold.contains(&id) {
            self.gold.push(id.clone());
        }
        if grade == 1 {
            self.grades.remove(&id);
        } else {
            self.grades.insert(id, grade);
        }
    }

    /// The grade of gold passage `id` (`None`: not gold).
    pub fn grade(&self, id: &str) -> Option<u32> {
        self.gold
            .iter()
            .any(|g| g == id)
            .then(|| self.grades.get(id).copied().unwrap_or(1))
    }
}

/// What a reader returns: the corpus and the questions over it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RawDataset {
    /// The corpus, in the reader's order (the export re-sorts by id).
    pub passages: Vec<Passage>,
    /// The questions, in the dataset's order (kept: results are reported in this order).
    pub questions: Vec<Question>,
}

/// Where a passage lies in the document it was cut from: `[start, end)` in Unicode code points
/// of the document's text (what Python's `text[start:end]` counts), so the passage's text is
/// `text.chars().skip(start).take(end - start)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Span {
    /// First code point (inclusive).
    pub start: u32,
    /// One past the last code point (exclusive).
    pub end: u32,
}

impl Span {
    /// Whether the two half-open ranges share at least one code point.
    pub fn overlaps(&self, other: &Span) -> bool {
        self.start.max(other.start) < self.end.min(other.end)
    }
}

/// A [`RawDataset`] plus, for passages cut from longer documents, where each one lies (by
/// passage id). Formats that read passages as published have no spans; the export stores a
/// span for every passage that has one (`char_start`, `char_end`) and nulls for the others.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SpannedDataset {
    /// The passages and questions.
    pub raw: RawDataset,
    /// Passage id -> its span in its document (`Passage::doc`).
    pub spans: BTreeMap<String, Span>,
}

impl From<RawDataset> for SpannedDataset {
    fn from(raw: RawDataset) -> Self {
        SpannedDataset {
            raw,
            spans: BTreeMap::new(),
        }
    }
}

/// What a text is to the model: a query or a passage. A model with prompts prepends each role's
/// own (`query: `, `passage: `); a model without treats both alike.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// A question, a sub-question, a conversation turn: what is searched with.
    Query,
    /// A passage of the corpus: what is searched.
    Passage,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn question_pieces_split_references() {
        use QuestionPiece::*;
        assert_eq!(
            question_pieces("Who is #12's #1 and # or #x?"),
            vec![
                Text("Who is "),
                HopRef {
                    raw: "#12",
                    hop: Some(12)
                },
                Text("'s "),
                HopRef {
                    raw: "#1",
                    hop: Some(1)
                },
                Text(" and "),
                HopRef {
                    raw: "#",
                    hop: None
                },
                Text(" or "),
                HopRef {
                    raw: "#",
                    hop: None
                },
                Text("x?"),
            ]
        );
        assert_eq!(question_pieces(""), vec![]);
        assert_eq!(
            question_pieces("#3"),
            vec![HopRef {
                raw: "#3",
                hop: Some(3)
            }]
        );
        assert_eq!(
            question_pieces("é#2é").len(),
            3,
            "multi-byte text around a reference"
        );
    }
}
