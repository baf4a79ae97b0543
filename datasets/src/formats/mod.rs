//! Readers for the raw dataset formats people download, each `files -> RawDataset`.
//!
//! One module per format, each with a `read` function taking the paths of the files it needs:
//!
//! | module | format | corpus | gold | chain |
//! |---|---|---|---|---|
//! | [`musique`] | MuSiQue (HippoRAG list + corpus, or release JSONL) | corpus file, or union of paragraphs | `is_supporting` paragraphs | `question_decomposition` |
//! | [`hotpotqa`] | HotpotQA (HippoRAG list + title->sentences object, or release) | corpus object, or union of contexts | `supporting_facts` titles | one slot per gold title, unordered |
//! | [`twowiki`] | 2WikiMultihopQA v1.1 (corpus list + questions, or release) | corpus file, or union of contexts | `supporting_facts` titles | `evidences` triples |
//! | [`mtrag`] | MTRAG-UN `reference.jsonl` + BEIR qrels | distinct `contexts` of all tasks | qrels, score > 0 | none |
//! | [`beir`] | BEIR `corpus.jsonl`, `queries.jsonl`, `qrels/<split>.tsv` | corpus file | qrels, score > 0 | none |
//!
//! Every reader validates as it goes and stops at the first problem, with an
//! [`Error`](crate::Error) that names the file, the record (position, JSONL line, id) and the
//! field: unreadable file -> `Io`; not JSON / JSONL / TSV -> `Malformed` (with the line for JSONL
//! and TSV); missing or mistyped field, or a repeated question id -> `Field`; two passages with
//! one id -> `DuplicatePassage`; a gold reference with no passage -> `GoldNotInCorpus`.
//! Questions keep file order; gold lists and chain slots are deduplicated in first-seen order.
//! Record files are read whole; a JSON list (`[`...) and JSON Lines are both accepted.
//!
//! None of these formats publishes a context breadcrumb, so every reader leaves
//! [`Passage::header`](crate::Passage::header) at `None`; the title is in its own field.
//!
//! [`pool`] unions several read datasets into one corpus, prefixing every id with its part's
//! name.
//!
//! [`dialogues`] is not a reader: it derives a labelled conversational dataset from another
//! dataset's published decompositions (one user turn per hop, with known referents).

mod common;

pub mod beir;
pub mod dialogues;
pub mod hotpotqa;
pub mod mtrag;
pub mod musique;
pub mod twowiki;

use std::collections::HashSet;
use std::fmt;
use std::str::FromStr;

use crate::model::RawDataset;

/// A raw dataset format, as named in configuration files (`musique`, `hotpotqa`, `twowiki`,
/// `mtrag`, `beir`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    /// MuSiQue-Ans: [`musique::read`].
    Musique,
    /// HotpotQA: [`hotpotqa::read`].
    Hotpotqa,
    /// 2WikiMultihopQA v1.1: [`twowiki::read`].
    #[serde(rename = "twowiki")]
    TwoWiki,
    /// MTRAG-UN: [`mtrag::read`].
    Mtrag,
    /// BEIR: [`beir::read`].
    Beir,
}

impl Format {
    /// Every format, in declaration order.
    pub const ALL: [Format; 5] = [
        Format::Musique,
        Format::Hotpotqa,
        Format::TwoWiki,
        Format::Mtrag,
        Format::Beir,
    ];

    /// The configuration name (`musique`, `hotpotqa`, `twowiki`, `mtrag`, `beir`).
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Musique => "musique",
            Format::Hotpotqa => "hotpotqa",
            Format::TwoWiki => "twowiki",
            Format::Mtrag => "mtrag",
            Format::Beir => "beir",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Format {
    type Err = crate::Error;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Format::ALL
            .into_iter()
            .find(|f| f.as_str() == s)
            .ok_or_else(|| crate::Error::Config {
                context: "dataset format".to_string(),
                message: format!(
                    "unknown format {s:?}; expected one of {}",
                    Format::ALL.map(Format::as_str).join(", ")
                ),
            })
    }
}

/// Union several datasets into one corpus: every passage id, question id and document of the
/// part named `name` becomes `"<name>:<id>"`, and gold, chain slots and decomposition gold are
/// rewritten to match, so the parts cannot collide and each question's gold stays its own.
/// Passages keep their order within a part, parts keep the given order; titles, texts,
/// headers, conversations and labels are unchanged, except that every question gets the label
/// `pool` = its part's name.
///
/// # Panics
///
/// If a name is empty, contains `:`, or appears twice: the prefixed ids would not be unique.
/// Callers that take names from configuration should check them first.
pub fn pool(parts: Vec<(String, RawDataset)>) -> RawDataset {
    let mut names = HashSet::new();
    for (name, _) in &parts {
        assert!(
            !name.is_empty() && !name.contains(':') && names.insert(name.clone()),
            "pool: part names must be non-empty, distinct and free of ':' (got {name:?})"
        );
    }
    let mut out = RawDataset::default();
    for (name, part) in parts {
        let p = |id: &str| format!("{name}:{id}");
        let ids = |list: Vec<String>| list.iter().map(|id| p(id)).collect::<Vec<_>>();
        for mut passage in part.passages {
            passage.id = p(&passage.id);
            passage.doc = passage.doc.map(|d| p(&d));
            out.passages.push(passage);
        }
        for mut q in part.questions {
            q.id = p(&q.id);
            q.gold = ids(q.gold);
            q.chain = q.chain.map(|chain| chain.into_iter().map(ids).collect());
            if let Some(dec) = &mut q.decomposition {
                for sub in dec.iter_mut() {
                    sub.gold = ids(std::mem::take(&mut sub.gold));
                }
            }
            q.labels.insert("pool".to_string(), name.clone());
            out.questions.push(q);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Passage, Question, SubQuestion};

    fn part(tag: &str) -> RawDataset {
        let passage = |id: &str| Passage {
            id: id.to_string(),
            doc: Some(format!("doc-{id}")),
            title: format!("T{tag}"),
            text: format!("text {tag} {id}"),
            header: None,
        };
        let mut q = Question::new(
            "q1",
            format!("question {tag}"),
            vec!["a".into(), "b".into()],
        );
        q.chain = Some(vec![vec!["a".into()], vec!["b".into()]]);
        q.decomposition = Some(vec![SubQuestion {
            question: "h".into(),
            answer: "x".into(),
            gold: vec!["a".into()],
        }]);
        RawDataset {
            passages: vec![passage("a"), passage("b")],
            questions: vec![q],
        }
    }

    #[test]
    fn format_names() {
        for f in Format::ALL {
            let json = serde_json::to_string(&f).unwrap();
            assert_eq!(json, format!("\"{}\"", f.as_str()));
            assert_eq!(serde_json::from_str::<Format>(&json).unwrap(), f);
            assert_eq!(f.as_str().parse::<Format>().unwrap(), f);
            assert_eq!(f.to_string(), f.as_str());
        }
        assert_eq!(
            serde_json::from_str::<Format>("\"twowiki\"").unwrap(),
            Format::TwoWiki
        );
        assert!(serde_json::from_str::<Format>("\"two_wiki\"").is_err());
        assert!("hotpot".parse::<Format>().is_err());
    }

    #[test]
    fn pool_prefixes_everything() {
        let d = pool(vec![
            ("m".to_string(), part("1")),
            ("h".to_string(), part("2")),
        ]);
        let ids: Vec<_> = d.passages.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(ids, ["m:a", "m:b", "h:a", "h:b"]);
        assert_eq!(d.passages[2].doc.as_deref(), Some("h:doc-a"));
        assert_eq!(d.passages[2].text, "text 2 a");
        let q = &d.questions[1];
        assert_eq!(q.id, "h:q1");
        assert_eq!(q.text, "question 2");
        assert_eq!(q.gold, ["h:a", "h:b"]);
        assert_eq!(
            q.chain,
            Some(vec![vec!["h:a".to_string()], vec!["h:b".to_string()]])
        );
        assert_eq!(q.decomposition.as_ref().unwrap()[0].gold, ["h:a"]);
        assert_eq!(q.labels["pool"], "h");
        // ids stay unique and every gold id resolves
        let all: HashSet<_> = d.passages.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(all.len(), d.passages.len());
        assert!(d
            .questions
            .iter()
            .flat_map(|q| &q.gold)
            .all(|g| all.contains(g.as_str())));
        assert_eq!(pool(Vec::new()), RawDataset::default());
    }

    #[test]
    #[should_panic(expected = "distinct")]
    fn pool_rejects_repeated_names() {
        pool(vec![
            ("m".to_string(), part("1")),
            ("m".to_string(), part("2")),
        ]);
    }

    #[test]
    fn pool_real_sets() {
        let Some(root) = common::test_data_dir() else {
            println!("skipped: no datasets directory");
            return;
        };
        let m = root.join("musique-train100");
        let h = root.join("hotpotqa-train100");
        let parts = vec![
            (
                "musique".to_string(),
                musique::read(
                    &m.join("musique_train.json"),
                    Some(&m.join("musique_train_corpus.json")),
                )
                .unwrap(),
            ),
            (
                "hotpotqa".to_string(),
                hotpotqa::read(
                    &h.join("hotpotqa_train.json"),
                    Some(&h.join("hotpotqa_train_corpus.json")),
                )
                .unwrap(),
            ),
        ];
        let d = pool(parts);
        assert_eq!(d.passages.len(), 1890 + 994);
        assert_eq!(d.questions.len(), 200);
        let all: HashSet<_> = d.passages.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(all.len(), d.passages.len());
        for q in &d.questions {
            assert!(q.gold.iter().all(|g| all.contains(g.as_str())), "{}", q.id);
            assert!(
                q.chain
                    .iter()
                    .flatten()
                    .flatten()
                    .all(|g| all.contains(g.as_str())),
                "{}",
                q.id
            );
        }
    }
}
