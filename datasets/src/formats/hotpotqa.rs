//! HotpotQA (Yang et al., 2018), in two layouts.
//!
//! A question record is `{_id, question, answer, type, level, supporting_facts, context}` with
//! `supporting_facts = [[title, sentence_index], ...]` and `context = [[title, [sentence, ...]],
//! ...]` (10 paragraphs in the distractor setting). Sentences keep their leading spaces, so a
//! paragraph's text is its sentences joined with `""`.
//!
//! * **HippoRAG layout** (`hotpotqa_train.json` + `hotpotqa_train_corpus.json`): the questions file
//!   is a JSON list and the corpus a JSON *object* `{title: [sentence, ...]}`, read in file order;
//!   a repeated title is a [`DuplicatePassage`](crate::Error::DuplicatePassage) error. The
//!   questions' `context` is not read (the corpus file is the corpus).
//! * **Release layout** (`hotpot_train_v1.1.json`, a JSON list, or JSONL): no corpus file; the
//!   corpus is the union of all questions' `context` paragraphs in first-seen order. A title seen
//!   again with the same text is the same passage; with a different text it is a
//!   `DuplicatePassage` error.
//!
//! Passage id = document = title. Gold = the distinct titles of `supporting_facts` (first-seen
//! order). The chain has one slot per gold title in that order (two for HotpotQA), but HotpotQA
//! publishes no hop order: the slots are **unordered**, which the label `chain_order = unordered`
//! says on every question. Other labels: `type` (bridge / comparison) and `level`
//! (easy / medium / hard) when present.

use std::collections::BTreeMap;
use std::path::Path;

use super::common::{read_object_entries, CorpusBuilder, Ctx, Val};
use super::hotpot_style::{self, join_sentences, titled_passage, Layout};
use super::Format;
use crate::error::Result;
use crate::model::{Question, RawDataset};
use crate::protocol::Protocol;

/// `format: hotpotqa`: `questions`, optional `corpus` (the HippoRAG corpus object).
pub const FORMAT: Format = hotpot_style::format::<HotpotQa>();

/// Read HotpotQA: `questions` (JSON list or JSONL), with the HippoRAG `corpus` object file
/// (`{title: [sentence, ...]}`) when given, else with the corpus made of the questions' contexts.
pub fn read(questions: &Path, corpus: Option<&Path>) -> Result<RawDataset> {
    hotpot_style::read::<HotpotQa>(questions, corpus)
}

/// HotpotQA's own ways: sentences keep their leading spaces, the corpus file is an object, and
/// the chain is unordered.
struct HotpotQa;

impl Layout for HotpotQa {
    const NAME: &'static str = "hotpotqa";
    // HippoRAG 2: `f"{title}\n{text}"` per passage, gold `title + "\n" + "".join(sentences)`
    const PROTOCOL: Protocol = Protocol::TITLE_NEWLINE;
    const SENTENCE_JOINER: &'static str = "";

    /// The corpus object `{title: [sentence, ...]}`, in file order.
    fn corpus_file(path: &Path, builder: &mut CorpusBuilder) -> Result<()> {
        for (title, value) in read_object_entries(path)? {
            let ctx = Ctx::keyed(path, &title);
            let text = join_sentences(&ctx.at("sentences", &value), "")?;
            builder.push(path, titled_passage(title, text))?;
        }
        Ok(())
    }

    /// One unordered chain slot per gold title; labels `type`, `level`, `chain_order`.
    fn finish(root: &Val<'_>, mut q: Question) -> Result<Question> {
        q.chain = Some(q.gold.iter().map(|t| vec![t.clone()]).collect());
        let mut labels = BTreeMap::new();
        for key in ["type", "level"] {
            if let Some(v) = root.opt(key)? {
                labels.insert(key.to_string(), v.string()?);
            }
        }
        labels.insert("chain_order".to_string(), "unordered".to_string());
        q.labels = labels;
        Ok(q)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use crate::formats::testutil::{
        assert_malformed_at, field_error, gold_missing, real_data_dir, write,
    };
    use serde_json::json;

    fn q1() -> serde_json::Value {
        json!({
            "_id": "a1", "question": "Which league does S play in?", "answer": "MLS",
            "type": "bridge", "level": "hard",
            "supporting_facts": [["S", 0], ["MLS", 0], ["MLS", 2]],
            "context": [["X", ["X is a distractor.", " Really."]],
                        ["S", ["S plays for R."]],
                        ["MLS", ["MLS is a league.", " It has 22 teams.", " Third."]]]
        })
    }

    fn q2() -> serde_json::Value {
        json!({
            "_id": "b2", "question": "Older, A or B?", "answer": "A",
            "type": "comparison", "level": "medium",
            "supporting_facts": [["B", 1], ["A", 0]],
            "context": [["A", ["A is old."]], ["B", ["B is", " young."]], ["X", ["X is a distractor.", " Really."]]]
        })
    }

    fn corpus() -> String {
        r#"{"X": ["X is a distractor.", " Really."], "S": ["S plays for R."],
            "MLS": ["MLS is a league.", " It has 22 teams.", " Third."],
            "A": ["A is old."], "B": ["B is", " young."]}"#
            .to_string()
    }

    #[test]
    fn hipporag_layout() {
        let dir = tempfile::tempdir().unwrap();
        let qs = write(&dir, "q.json", &json!([q1(), q2()]).to_string());
        let c = write(&dir, "c.json", &corpus());
        let d = read(&qs, Some(&c)).unwrap();
        let ids: Vec<_> = d.passages.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(ids, ["X", "S", "MLS", "A", "B"]);
        assert_eq!(
            d.passages[2].text,
            "MLS is a league. It has 22 teams. Third."
        );
        assert_eq!(d.passages[2].doc.as_deref(), Some("MLS"));
        assert_eq!(d.passages[2].title, "MLS");
        let q = &d.questions[0];
        assert_eq!(
            (q.id.as_str(), q.text.as_str()),
            ("a1", "Which league does S play in?")
        );
        assert_eq!(q.gold, ["S", "MLS"]);
        assert_eq!(
            q.chain,
            Some(vec![vec!["S".to_string()], vec!["MLS".to_string()]])
        );
        assert_eq!(q.labels["type"], "bridge");
        assert_eq!(q.labels["level"], "hard");
        assert_eq!(q.labels["chain_order"], "unordered");
        assert_eq!(d.questions[1].gold, ["B", "A"]);
        assert!(q.decomposition.is_none() && q.conversation.is_none());
    }

    #[test]
    fn release_layout_unions_contexts() {
        let dir = tempfile::tempdir().unwrap();
        let qs = write(&dir, "q.jsonl", &format!("{}\n{}\n", q1(), q2()));
        let d = read(&qs, None).unwrap();
        let ids: Vec<_> = d.passages.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(ids, ["X", "S", "MLS", "A", "B"]);
        assert_eq!(d.passages[4].text, "B is young.");
        assert_eq!(d.questions[1].gold, ["B", "A"]);
        // a JSON list works too
        let qs = write(&dir, "q.json", &json!([q1(), q2()]).to_string());
        assert_eq!(read(&qs, None).unwrap(), d);
    }

    #[test]
    fn malformed_files() {
        let dir = tempfile::tempdir().unwrap();
        let qs = write(&dir, "q.json", &json!([q1()]).to_string());
        let c = write(&dir, "c.json", "{\"X\": [\"a\"");
        assert!(matches!(read(&qs, Some(&c)), Err(Error::Malformed { .. })));
        let c = write(&dir, "c2.json", "[]");
        assert!(matches!(read(&qs, Some(&c)), Err(Error::Malformed { .. })));
        let qs = write(&dir, "q.jsonl", &format!("{}\nnot json\n", q1()));
        let e = read(&qs, None).unwrap_err();
        assert_malformed_at(&e, "JSONL line 2");
    }

    #[test]
    fn missing_and_mistyped_fields() {
        let dir = tempfile::tempdir().unwrap();
        let mut q = q2();
        q.as_object_mut().unwrap().remove("supporting_facts");
        let qs = write(&dir, "q.json", &json!([q1(), q]).to_string());
        let c = write(&dir, "c.json", &corpus());
        let e = read(&qs, Some(&c)).unwrap_err();
        let (path, record, field, _) = field_error(&e);
        assert_eq!(path, &qs);
        assert_eq!(record, "1 (id \"b2\")");
        assert_eq!(field, "supporting_facts");
        let mut q = q1();
        q["supporting_facts"][1] = json!(["MLS"]);
        let qs = write(&dir, "q2.json", &json!([q]).to_string());
        let e = read(&qs, Some(&c)).unwrap_err();
        assert!(
            e.to_string()
                .contains("field `supporting_facts[1]`: expected a list of 2"),
            "{e}"
        );
        let c2 = write(&dir, "c2.json", r#"{"X": ["a", 3]}"#);
        let e = read(&qs, Some(&c2)).unwrap_err();
        let (_, record, field, _) = field_error(&e);
        assert_eq!(record, "\"X\"");
        assert_eq!(field, "sentences[1]");
        let mut q = q1();
        q["context"][1][1] = json!("S plays for R.");
        let qs = write(&dir, "q3.jsonl", &q.to_string());
        let e = read(&qs, None).unwrap_err();
        assert!(
            e.to_string()
                .contains("field `context[1][1]`: expected a list"),
            "{e}"
        );
        let mut q = q1();
        q["type"] = json!(3);
        let qs = write(&dir, "q4.jsonl", &q.to_string());
        assert!(matches!(read(&qs, None), Err(Error::Field { field, .. }) if field == "type"));
    }

    #[test]
    fn duplicate_passage() {
        let dir = tempfile::tempdir().unwrap();
        let qs = write(&dir, "q.json", &json!([q1()]).to_string());
        let c = write(
            &dir,
            "c.json",
            r#"{"S": ["S plays for R."], "MLS": ["m"], "S": ["again"]}"#,
        );
        let e = read(&qs, Some(&c)).unwrap_err();
        assert!(
            matches!(&e, Error::DuplicatePassage { id, path } if id == "S" && path == &c),
            "{e}"
        );
        // release layout: same title, different text
        let mut q = q2();
        q["context"][2][1] = json!(["X is something else."]);
        let qs = write(&dir, "q.jsonl", &format!("{}\n{}\n", q1(), q));
        let e = read(&qs, None).unwrap_err();
        assert!(
            matches!(&e, Error::DuplicatePassage { id, .. } if id.starts_with("X ")),
            "{e}"
        );
    }

    #[test]
    fn gold_not_in_corpus() {
        let dir = tempfile::tempdir().unwrap();
        let qs = write(&dir, "q.json", &json!([q1()]).to_string());
        let c = write(&dir, "c.json", r#"{"S": ["S plays for R."]}"#);
        let e = read(&qs, Some(&c)).unwrap_err();
        let (path, record, field, gold) = gold_missing(&e);
        assert_eq!(path, &qs);
        assert_eq!(record, "0 (id \"a1\")");
        assert_eq!(field, "supporting_facts[1][0]");
        assert_eq!(gold, "\"MLS\"");
        let mut q = q1();
        q["supporting_facts"][0][0] = json!("Nowhere");
        let qs = write(&dir, "q.jsonl", &q.to_string());
        assert!(matches!(
            read(&qs, None),
            Err(Error::GoldNotInCorpus { .. })
        ));
    }

    #[test]
    fn real_hipporag_train100() {
        let Some(root) = real_data_dir() else {
            return;
        };
        let dir = root.join("hotpotqa-train100");
        let d = read(
            &dir.join("hotpotqa_train.json"),
            Some(&dir.join("hotpotqa_train_corpus.json")),
        )
        .unwrap();
        assert_eq!(d.passages.len(), 994);
        assert_eq!(d.questions.len(), 100);
        assert!(d.questions.iter().all(|q| q.gold.len() == 2));
        assert!(d
            .questions
            .iter()
            .all(|q| q.chain.as_ref().unwrap().len() == 2));
        let bridge = d
            .questions
            .iter()
            .filter(|q| q.labels["type"] == "bridge")
            .count();
        assert_eq!(bridge, 78);
        // the corpus text equals the joined context sentences of the questions
        let raw: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.join("hotpotqa_train.json")).unwrap(),
        )
        .unwrap();
        let texts: std::collections::HashMap<_, _> = d
            .passages
            .iter()
            .map(|p| (p.id.as_str(), p.text.as_str()))
            .collect();
        for q in raw.as_array().unwrap() {
            for c in q["context"].as_array().unwrap() {
                let joined: String = c[1]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|s| s.as_str().unwrap())
                    .collect();
                assert_eq!(texts[c[0].as_str().unwrap()], joined);
            }
        }
        println!(
            "hotpotqa-train100: {} passages, {} questions",
            d.passages.len(),
            d.questions.len()
        );
    }

    #[test]
    fn real_release_samples() {
        let Some(root) = real_data_dir() else {
            return;
        };
        let d = read(&root.join("samples-10q/hotpot_example.jsonl"), None).unwrap();
        println!(
            "hotpot samples: {} passages, {} questions",
            d.passages.len(),
            d.questions.len()
        );
        assert_eq!(d.passages.len(), 100);
        assert_eq!(d.questions.len(), 10);
        assert!(d.questions.iter().all(|q| q.gold.len() == 2));
    }
}
