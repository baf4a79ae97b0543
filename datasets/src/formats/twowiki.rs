//! 2WikiMultihopQA v1.1 (Ho et al., 2020), with a corpus file or as released.
//!
//! A question record is `{_id, type, question, answer, context, supporting_facts, evidences, ...}`
//! with `context = [[title, [sentence, ...]], ...]`, `supporting_facts = [[title,
//! sentence_index], ...]` and `evidences = [[subject, relation, object], ...]`, the published
//! reasoning chain. Types: `comparison`, `inference`, `compositional`, `bridge_comparison`.
//!
//! * **Corpus layout** (HippoRAG's `2wikimultihopqa_corpus.json` + questions such as KAG's
//!   `qa_sub.json`): the corpus is a list of `{title, text}`, titles unique; a repeated title is
//!   a [`DuplicatePassage`](crate::Error::DuplicatePassage) error. The questions' `context` is not
//!   read.
//! * **Release layout** (`dev.json`, a JSON list, or JSONL): no corpus file; the corpus is the
//!   union of the questions' `context` paragraphs, first-seen order, the sentences joined with a
//!   single space `" "` (2Wiki sentences carry no leading space; joining with `" "` reproduces
//!   the HippoRAG corpus texts byte for byte). A title seen again with a different text is a
//!   `DuplicatePassage` error.
//!
//! Passage id = document = title. Gold = the distinct `supporting_facts` titles, first-seen
//! order.
//!
//! **Chain.** One slot per `evidences` triple, in published order, each slot a subset of the
//! gold titles so that the chain never asks for a passage the gold does not have:
//! 1. the gold title equal to the triple's subject; else
//! 2. the gold title equal to its object (the subject has no supporting passage); else
//! 3. the same two tests ignoring case (evidence names are entity labels, which can differ from
//!    the page title in case only); else
//! 4. *fallback*: the gold titles that no other triple resolved to (or, if every gold title is
//!    already taken, all gold titles). Such slots are counted in the label `chain_fallback`.
//!
//! A slot is therefore never empty when there is gold. A question with an empty `evidences` list
//! has no chain (`None`). Labels: `type`, and `chain_order`: `ordered` (compositional,
//! inference: each triple's subject is the previous object), `unordered` (comparison: two
//! independent facts), `partial` (bridge_comparison: two independent bridges, then one fact
//! about each bridge entity), `as_published` for any other type.

use std::collections::BTreeMap;
use std::path::Path;

use super::common::{read_records, CorpusBuilder, Ctx, Val};
use super::hotpot_style::{self, titled_passage, Layout};
use super::Format;
use crate::error::Result;
use crate::model::{Question, RawDataset};
use crate::protocol::Protocol;

/// `format: twowiki`: `questions`, optional `corpus` (a list of `{title, text}`).
pub const FORMAT: Format = hotpot_style::format::<TwoWiki>();

/// Read 2WikiMultihopQA v1.1: `questions` (JSON list or JSONL), with a `corpus` file (list of
/// `{title, text}`) when given, else with the corpus made of the questions' contexts.
pub fn read(questions: &Path, corpus: Option<&Path>) -> Result<RawDataset> {
    hotpot_style::read::<TwoWiki>(questions, corpus)
}

/// 2Wiki's own ways: sentences joined with a space, the corpus file is a list of records, and
/// the chain comes from `evidences`.
struct TwoWiki;

impl Layout for TwoWiki {
    const NAME: &'static str = "twowiki";
    // HippoRAG 2: `f"{title}\n{text}"` per passage, gold `title + "\n" + " ".join(sentences)`
    const PROTOCOL: Protocol = Protocol::TITLE_NEWLINE;
    const SENTENCE_JOINER: &'static str = " ";

    /// The corpus list `[{title, text}, ...]`, in file order.
    fn corpus_file(path: &Path, builder: &mut CorpusBuilder) -> Result<()> {
        for record in read_records(path)? {
            let ctx = Ctx::new(path, record.loc);
            let root = ctx.root(&record.value);
            let title = root.get("title")?.string()?;
            let text = root.get("text")?.string()?;
            builder.push(path, titled_passage(title, text))?;
        }
        Ok(())
    }

    /// The chain from `evidences`; labels `type`, `chain_order` (with a chain), `chain_fallback`.
    fn finish(root: &Val<'_>, mut q: Question) -> Result<Question> {
        let (chain, fallback) = chain(&root.get("evidences")?, &q.gold)?;
        let mut labels = BTreeMap::new();
        let kind = match root.opt("type")? {
            Some(v) => {
                let t = v.string()?;
                labels.insert("type".to_string(), t.clone());
                t
            }
            None => String::new(),
        };
        if chain.is_some() {
            let order = match kind.as_str() {
                "compositional" | "inference" => "ordered",
                "comparison" => "unordered",
                "bridge_comparison" => "partial",
                _ => "as_published",
            };
            labels.insert("chain_order".to_string(), order.to_string());
        }
        if fallback > 0 {
            labels.insert("chain_fallback".to_string(), fallback.to_string());
        }
        q.chain = chain;
        q.labels = labels;
        Ok(q)
    }
}

/// The chain from `evidences` (see the module docs), and how many slots fell back.
fn chain(evidences: &Val<'_>, gold: &[String]) -> Result<(Option<Vec<Vec<String>>>, usize)> {
    let triples = evidences.items()?;
    if triples.is_empty() {
        return Ok((None, 0));
    }
    let find = |name: &str| -> Option<String> { gold.iter().find(|g| *g == name).cloned() };
    let find_ci = |name: &str| -> Option<String> {
        let lower = name.to_lowercase();
        let mut hits = gold.iter().filter(|g| g.to_lowercase() == lower);
        match (hits.next(), hits.next()) {
            (Some(g), None) => Some(g.clone()),
            _ => None,
        }
    };
    let mut resolved: Vec<Option<String>> = Vec::with_capacity(triples.len());
    for t in &triples {
        let parts = t.tuple(3)?;
        let subject = parts[0].str()?;
        parts[1].str()?;
        let object = parts[2].str()?;
        resolved.push(
            find(subject)
                .or_else(|| find(object))
                .or_else(|| find_ci(subject))
                .or_else(|| find_ci(object)),
        );
    }
    let leftover: Vec<String> = gold
        .iter()
        .filter(|g| !resolved.iter().any(|r| r.as_ref() == Some(*g)))
        .cloned()
        .collect();
    let fallback_slot = if leftover.is_empty() {
        gold.to_vec()
    } else {
        leftover
    };
    let mut fallbacks = 0;
    let slots = resolved
        .into_iter()
        .map(|r| match r {
            Some(t) => vec![t],
            None => {
                fallbacks += 1;
                fallback_slot.clone()
            }
        })
        .collect();
    Ok((Some(slots), fallbacks))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use crate::formats::testutil::{field_error, gold_missing, real_data_dir, write};
    use serde_json::json;

    fn compositional() -> serde_json::Value {
        json!({
            "_id": "c1", "type": "compositional", "question": "When did L's mother die?",
            "answer": "851",
            "context": [["L", ["L was a king.", "His mother was E."]],
                        ["E", ["E was a queen.", "She died in 851."]],
                        ["T", ["T is unrelated."]]],
            "supporting_facts": [["L", 1], ["E", 1]],
            "evidences": [["L", "mother", "E"], ["E", "date of death", "851"]]
        })
    }

    fn bridge_comparison() -> serde_json::Value {
        json!({
            "_id": "b2", "type": "bridge_comparison", "question": "Whose director was born first?",
            "answer": "F1",
            "context": [["F1", ["F1 is a film by D1."]], ["F2", ["F2 is a film by D2."]],
                        ["D1", ["D1 was born in 1900."]], ["D2", ["D2 was born in 1910."]],
                        ["T", ["T is unrelated."]]],
            "supporting_facts": [["F1", 0], ["F2", 0], ["D1", 0], ["D2", 0]],
            "evidences": [["F1", "director", "D1"], ["F2", "director", "D2"],
                          ["D1", "date of birth", "1900"], ["D2", "date of birth", "1910"]]
        })
    }

    fn corpus() -> serde_json::Value {
        json!([
            {"title": "T", "text": "T is unrelated."},
            {"title": "L", "text": "L was a king. His mother was E."},
            {"title": "E", "text": "E was a queen. She died in 851."},
            {"title": "F1", "text": "F1 is a film by D1."},
            {"title": "F2", "text": "F2 is a film by D2."},
            {"title": "D1", "text": "D1 was born in 1900."},
            {"title": "D2", "text": "D2 was born in 1910."}
        ])
    }

    #[test]
    fn corpus_layout() {
        let dir = tempfile::tempdir().unwrap();
        let qs = write(
            &dir,
            "q.json",
            &json!([compositional(), bridge_comparison()]).to_string(),
        );
        let c = write(&dir, "c.json", &corpus().to_string());
        let d = read(&qs, Some(&c)).unwrap();
        assert_eq!(d.passages.len(), 7);
        assert_eq!(d.passages[1].id, "L");
        assert_eq!(d.passages[1].doc.as_deref(), Some("L"));
        let q = &d.questions[0];
        assert_eq!(q.id, "c1");
        assert_eq!(q.gold, ["L", "E"]);
        assert_eq!(
            q.chain,
            Some(vec![vec!["L".to_string()], vec!["E".to_string()]])
        );
        assert_eq!(q.labels["type"], "compositional");
        assert_eq!(q.labels["chain_order"], "ordered");
        assert!(!q.labels.contains_key("chain_fallback"));
        let q = &d.questions[1];
        let chain: Vec<_> = q
            .chain
            .as_ref()
            .unwrap()
            .iter()
            .map(|s| s.join("|"))
            .collect();
        assert_eq!(chain, ["F1", "F2", "D1", "D2"]);
        assert_eq!(q.labels["chain_order"], "partial");
    }

    #[test]
    fn release_layout_joins_sentences_with_a_space() {
        let dir = tempfile::tempdir().unwrap();
        let qs = write(
            &dir,
            "q.jsonl",
            &format!("{}\n{}\n", compositional(), bridge_comparison()),
        );
        let d = read(&qs, None).unwrap();
        let ids: Vec<_> = d.passages.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(ids, ["L", "E", "T", "F1", "F2", "D1", "D2"]);
        assert_eq!(d.passages[0].text, "L was a king. His mother was E.");
        assert_eq!(d.questions[0].gold, ["L", "E"]);
    }

    #[test]
    fn chain_resolution_rules() {
        let dir = tempfile::tempdir().unwrap();
        let mut q = compositional();
        // object instead of subject; case-insensitive subject; unresolvable triple
        q["evidences"] = json!([
            ["Someone", "child", "L"],
            ["e", "date of death", "851"],
            ["?", "r", "?"]
        ]);
        let qs = write(&dir, "q.jsonl", &q.to_string());
        let d = read(&qs, None).unwrap();
        let q = &d.questions[0];
        let chain = q.chain.as_ref().unwrap();
        assert_eq!(chain[0], ["L"]);
        assert_eq!(chain[1], ["E"]);
        assert_eq!(
            chain[2],
            ["L", "E"],
            "every gold title is taken: the fallback is all gold"
        );
        assert_eq!(q.labels["chain_fallback"], "1");
        let mut q = compositional();
        q["evidences"] = json!([["L", "mother", "E"], ["Ermengarde", "date of death", "851"]]);
        let qs = write(&dir, "q2.jsonl", &q.to_string());
        let d = read(&qs, None).unwrap();
        assert_eq!(
            d.questions[0].chain.as_ref().unwrap()[1],
            ["E"],
            "the leftover gold title"
        );
        let mut q = compositional();
        q["evidences"] = json!([]);
        let qs = write(&dir, "q3.jsonl", &q.to_string());
        let d = read(&qs, None).unwrap();
        assert_eq!(d.questions[0].chain, None);
    }

    #[test]
    fn malformed_files() {
        let dir = tempfile::tempdir().unwrap();
        let qs = write(&dir, "q.json", "[{\"_id\": \"x\",]");
        assert!(matches!(read(&qs, None), Err(Error::Malformed { what, .. }) if what == "JSON"));
        let qs = write(&dir, "q2.json", &json!([compositional()]).to_string());
        let c = write(&dir, "c.json", "[{\"title\": \"L\", \"text\": \"x\"}");
        assert!(matches!(read(&qs, Some(&c)), Err(Error::Malformed { .. })));
    }

    #[test]
    fn missing_and_mistyped_fields() {
        let dir = tempfile::tempdir().unwrap();
        let mut q = bridge_comparison();
        q.as_object_mut().unwrap().remove("evidences");
        let qs = write(&dir, "q.jsonl", &format!("{}\n{}\n", compositional(), q));
        let e = read(&qs, None).unwrap_err();
        let (path, record, field, message) = field_error(&e);
        assert_eq!(path, &qs);
        assert_eq!(record, "1 (line 2, id \"b2\")");
        assert_eq!(field, "evidences");
        assert_eq!(message, "missing");
        let mut q = compositional();
        q["evidences"][1] = json!(["E", "date of death"]);
        let qs = write(&dir, "q2.jsonl", &q.to_string());
        let e = read(&qs, None).unwrap_err();
        assert!(
            e.to_string()
                .contains("field `evidences[1]`: expected a list of 3"),
            "{e}"
        );
        let mut q = compositional();
        q.as_object_mut().unwrap().remove("_id");
        let qs = write(&dir, "q3.jsonl", &q.to_string());
        let e = read(&qs, None).unwrap_err();
        assert!(
            matches!(&e, Error::Field { field, record, .. } if field == "_id" && record == "0 (line 1)"),
            "{e}"
        );
        let qs = write(&dir, "q4.json", &json!([compositional()]).to_string());
        let c = write(&dir, "c.json", "[{\"title\": \"L\", \"text\": 5}]");
        let e = read(&qs, Some(&c)).unwrap_err();
        assert!(
            matches!(&e, Error::Field { field, path, .. } if field == "text" && path == &c),
            "{e}"
        );
    }

    #[test]
    fn duplicate_passage() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = corpus();
        c.as_array_mut()
            .unwrap()
            .push(json!({"title": "E", "text": "another E"}));
        let c = write(&dir, "c.json", &c.to_string());
        let qs = write(&dir, "q.json", &json!([compositional()]).to_string());
        let e = read(&qs, Some(&c)).unwrap_err();
        assert!(
            matches!(&e, Error::DuplicatePassage { id, .. } if id == "E"),
            "{e}"
        );
    }

    #[test]
    fn gold_not_in_corpus() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = corpus();
        c.as_array_mut().unwrap().remove(2); // E
        let c = write(&dir, "c.json", &c.to_string());
        let qs = write(&dir, "q.json", &json!([compositional()]).to_string());
        let e = read(&qs, Some(&c)).unwrap_err();
        let (_, record, field, gold) = gold_missing(&e);
        assert_eq!(record, "0 (id \"c1\")");
        assert_eq!(field, "supporting_facts[1][0]");
        assert_eq!(gold, "\"E\"");
    }

    #[test]
    fn real_corpus_and_kag_questions() {
        let Some(root) = real_data_dir() else {
            return;
        };
        let dir = root.join("2wiki-corpus");
        let d = read(
            &dir.join("kag_2wiki_qa_sub.json"),
            Some(&dir.join("2wikimultihopqa_corpus.json")),
        )
        .unwrap();
        assert_eq!(d.passages.len(), 6119);
        assert_eq!(d.questions.len(), 2);
        let q = &d.questions[0];
        assert_eq!(q.gold, ["Lothair II", "Ermengarde of Tours"]);
        assert_eq!(
            q.chain.as_ref().unwrap(),
            &[
                vec!["Lothair II".to_string()],
                vec!["Ermengarde of Tours".into()]
            ]
        );
        let q = &d.questions[1];
        assert_eq!(q.gold, ["Aas Ka Panchhi", "Phoolwari"]);
        assert_eq!(q.labels["chain_order"], "unordered");
        assert!(d
            .questions
            .iter()
            .all(|q| !q.labels.contains_key("chain_fallback")));
        println!(
            "2wiki corpus: {} passages, {} questions",
            d.passages.len(),
            d.questions.len()
        );
    }

    #[test]
    fn real_release_samples_match_the_corpus_texts() {
        let Some(root) = real_data_dir() else {
            return;
        };
        let d = read(&root.join("samples-10q/wiki_example.jsonl"), None).unwrap();
        let gold: usize = d.questions.iter().map(|q| q.gold.len()).sum();
        let slots: Vec<usize> = d
            .questions
            .iter()
            .map(|q| q.chain.as_ref().unwrap().len())
            .collect();
        let fallback = d
            .questions
            .iter()
            .filter(|q| q.labels.contains_key("chain_fallback"))
            .count();
        println!("2wiki samples: {} passages, {} questions, {gold} gold, chain lengths {slots:?}, {fallback} with fallback", d.passages.len(), d.questions.len());
        assert_eq!(d.passages.len(), 99);
        assert_eq!(d.questions.len(), 10);
        assert_eq!(fallback, 0);
        for q in &d.questions {
            let flat: Vec<_> = q.chain.as_ref().unwrap().iter().flatten().collect();
            assert!(flat.iter().all(|t| q.gold.contains(t)));
            assert!(q.gold.iter().all(|g| flat.contains(&g)), "{}", q.id);
        }
        // the " " separator reproduces the corpus file's texts for the titles both hold
        let corpus = read(
            &root.join("2wiki-corpus/kag_2wiki_qa_sub.json"),
            Some(&root.join("2wiki-corpus/2wikimultihopqa_corpus.json")),
        )
        .unwrap();
        let released = read(&root.join("2wiki-corpus/kag_2wiki_qa_sub.json"), None).unwrap();
        let texts: std::collections::HashMap<_, _> = corpus
            .passages
            .iter()
            .map(|p| (p.id.as_str(), p.text.as_str()))
            .collect();
        assert_eq!(released.passages.len(), 20);
        for p in &released.passages {
            assert_eq!(texts[p.id.as_str()], p.text, "{}", p.id);
        }
    }
}
