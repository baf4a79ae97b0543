//! MuSiQue-Ans (Trivedi et al., 2022), in two layouts.
//!
//! A question record is `{id, question, answer, answer_aliases, answerable, paragraphs,
//! question_decomposition}` where `paragraphs[i] = {idx, title, paragraph_text, is_supporting}`
//! (20 candidates, 2-4 of them supporting) and `question_decomposition[k] = {id, question, answer,
//! paragraph_support_idx}` is the hop chain in order; `paragraph_support_idx` is the `idx` of the
//! paragraph that answers hop `k`, and later hops refer to earlier answers as `#1`, `#2`.
//!
//! * **HippoRAG layout** (`musique_train.json` + `musique_train_corpus.json`): the questions file
//!   is a JSON list, and the corpus a list of `{title, text}` with no id. A passage's id is its
//!   list index, zero-padded to at least 6 digits (`000042`), so string order is index order.
//!   A paragraph is matched to a corpus passage on `(title, paragraph_text) == (title, text)`
//!   exactly; two corpus entries with the same title and text would make that ambiguous and are a
//!   [`DuplicatePassage`](crate::Error::DuplicatePassage) error.
//!   A supporting paragraph (or a chain paragraph) with no
//!   match is [`GoldNotInCorpus`](crate::Error::GoldNotInCorpus); an unmatched distractor is
//!   ignored (the corpus file alone defines the corpus).
//! * **Release layout** (`musique_ans_v1.0_*.jsonl`, one question per line; a JSON list is also
//!   accepted): no corpus file. The corpus is the union of all questions' paragraphs,
//!   deduplicated on `(title, paragraph_text)`, ids assigned in first-seen order, zero-padded.
//!
//! In both, the document of a passage is its title (several passages share a title), gold = the
//! `is_supporting` paragraphs, chain slot `k` = the passage of `paragraph_support_idx` of hop `k`
//! (an empty slot when that index is null, as in unanswerable MuSiQue-Full records), and the
//! decomposition is kept with each hop's gold. Labels: `hops` (`2hop`/`3hop`/`4hop`, from the id
//! prefix, else from the decomposition length), `shape` (the full id prefix, e.g. `3hop1`),
//! `answerable` (when present) and `chain_order` = `ordered` (the published hop order; the `#k`
//! references in the sub-questions give the exact dependencies of the non-linear shapes).

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use super::common::{padded_ids, read_records, Ctx, SeenIds};
use super::{Format, Role};
use crate::error::{Error, Result};
use crate::model::{Passage, Question, RawDataset, SubQuestion};
use crate::protocol::Protocol;

/// `format: musique`: `questions`, optional `corpus` (the HippoRAG corpus list).
pub const FORMAT: Format = Format {
    name: "musique",
    roles: &[Role::one("questions"), Role::optional("corpus")],
    read: |files| read(files.one("questions"), files.optional("corpus")),
    // HippoRAG 2 indexes `f"{title}\n{text}"` per passage and matches gold on the same string
    // (its `main.py`); IRCoT and HippoRAG 1 index title and paragraph text together too
    protocol: Protocol::TITLE_NEWLINE,
};

/// Read MuSiQue: `questions` (JSON list or JSONL), with the HippoRAG `corpus` file (list of
/// `{title, text}`) when given, else with the corpus made of the questions' own paragraphs.
pub fn read(questions: &Path, corpus: Option<&Path>) -> Result<RawDataset> {
    let mut pool = match corpus {
        Some(path) => Pool::from_file(path)?,
        None => Pool::default(),
    };
    let mut parsed = Vec::new();
    let mut seen = SeenIds::default();
    for record in read_records(questions)? {
        let mut ctx = Ctx::new(questions, record.loc);
        parsed.push(parse_question(
            &mut ctx,
            &record.value,
            &mut pool,
            &mut seen,
        )?);
    }
    let id = padded_ids(pool.keys.len());
    let passages = pool
        .keys
        .into_iter()
        .enumerate()
        .map(|(i, (title, text))| Passage {
            id: id(i),
            doc: Some(title.clone()),
            title,
            text,
            header: None,
        })
        .collect();
    let questions = parsed
        .into_iter()
        .map(|p| {
            let ids = |slot: &[usize]| slot.iter().map(|&i| id(i)).collect::<Vec<_>>();
            let decomposition: Vec<SubQuestion> = p
                .hops
                .into_iter()
                .map(|(question, answer, slot)| SubQuestion {
                    question,
                    answer,
                    gold: ids(&slot),
                })
                .collect();
            let chain = decomposition
                .iter()
                .map(|s| s.gold.clone())
                .collect::<Vec<_>>();
            let mut q = Question::new(p.id, p.text, ids(&p.gold));
            if !chain.is_empty() {
                q.chain = Some(chain);
                q.decomposition = Some(decomposition);
            }
            q.labels = p.labels;
            q
        })
        .collect();
    Ok(RawDataset {
        passages,
        questions,
    })
}

/// The passage pool: `(title, text)` -> index. Fixed when read from a corpus file, growing when
/// it is the union of the questions' paragraphs.
#[derive(Default)]
struct Pool {
    keys: Vec<(String, String)>,
    index: HashMap<(String, String), usize>,
    fixed: bool,
}

impl Pool {
    fn from_file(path: &Path) -> Result<Self> {
        let records = read_records(path)?;
        if records.is_empty() {
            return Err(super::common::no_passages(path));
        }
        let id = padded_ids(records.len());
        let mut pool = Pool {
            fixed: true,
            ..Pool::default()
        };
        for record in records {
            let ctx = Ctx::new(path, record.loc);
            let root = ctx.root(&record.value);
            let key = (root.get("title")?.string()?, root.get("text")?.string()?);
            let i = record.loc.index;
            if let Some(&first) = pool.index.get(&key) {
                return Err(Error::DuplicatePassage {
                    path: path.to_path_buf(),
                    id: format!("{} (same title and text as {})", id(i), id(first)),
                });
            }
            pool.index.insert(key.clone(), i);
            pool.keys.push(key);
        }
        Ok(pool)
    }

    /// The index of `(title, text)`; added when the pool grows, `None` when fixed and absent.
    fn resolve(&mut self, title: &str, text: &str) -> Option<usize> {
        let key = (title.to_string(), text.to_string());
        if let Some(&i) = self.index.get(&key) {
            return Some(i);
        }
        if self.fixed {
            return None;
        }
        let i = self.keys.len();
        self.index.insert(key.clone(), i);
        self.keys.push(key);
        Some(i)
    }
}

/// A question with passage indices, before ids are known.
struct Parsed {
    id: String,
    text: String,
    gold: Vec<usize>,
    /// (sub-question, answer, slot)
    hops: Vec<(String, String, Vec<usize>)>,
    labels: BTreeMap<String, String>,
}

fn parse_question(
    ctx: &mut Ctx<'_>,
    value: &serde_json::Value,
    pool: &mut Pool,
    seen: &mut SeenIds,
) -> Result<Parsed> {
    let id = ctx.root(value).get("id")?.string()?;
    ctx.set_id(&id);
    seen.check(ctx, "id", &id)?;
    let ctx = &*ctx;
    let root = ctx.root(value);
    let text = root.get("question")?.question()?;

    // paragraphs: idx -> (resolved passage, title)
    let mut by_idx: HashMap<usize, (Option<usize>, String)> = HashMap::new();
    let mut gold = Vec::new();
    for p in root.get("paragraphs")?.items()? {
        let idx_val = p.get("idx")?;
        let idx = idx_val.usize()?;
        let title = p.get("title")?.string()?;
        let body = p.get("paragraph_text")?.str()?;
        let supporting = p.get("is_supporting")?.bool()?;
        let passage = pool.resolve(&title, body);
        if supporting {
            let i = passage.ok_or_else(|| {
                p.gold_missing(format!(
                    "{title:?} (no corpus passage with this title and text)"
                ))
            })?;
            if !gold.contains(&i) {
                gold.push(i);
            }
        }
        if by_idx.insert(idx, (passage, title)).is_some() {
            return Err(idx_val.err(format!("duplicate paragraph idx {idx}")));
        }
    }

    let mut hops = Vec::new();
    for h in root.get("question_decomposition")?.items()? {
        let question = h.get("question")?.question()?;
        let answer = h.get("answer")?.string()?;
        let mut slot = Vec::new();
        if let Some(support) = h.opt("paragraph_support_idx")? {
            let idx = support.usize()?;
            let (passage, title) = by_idx
                .get(&idx)
                .ok_or_else(|| support.err(format!("no paragraph has idx {idx}")))?;
            let i = passage.ok_or_else(|| {
                support.gold_missing(format!(
                    "{title:?} (paragraph idx {idx}: no corpus passage with this title and text)"
                ))
            })?;
            slot.push(i);
        }
        hops.push((question, answer, slot));
    }

    let mut labels = BTreeMap::new();
    let prefix = id.split_once("__").map(|(p, _)| p);
    let hop_count = prefix
        .and_then(|p| p.find("hop").map(|k| &p[..k]))
        .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        .map(str::to_string)
        .unwrap_or_else(|| hops.len().to_string());
    labels.insert("hops".to_string(), format!("{hop_count}hop"));
    if let Some(p) = prefix {
        labels.insert("shape".to_string(), p.to_string());
    }
    if let Some(a) = root.opt("answerable")? {
        labels.insert("answerable".to_string(), a.bool()?.to_string());
    }
    if !hops.is_empty() {
        labels.insert("chain_order".to_string(), "ordered".to_string());
    }
    Ok(Parsed {
        id,
        text,
        gold,
        hops,
        labels,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::testutil::{
        assert_malformed_at, field_error, gold_missing, real_data_dir, write,
    };
    use serde_json::json;

    fn para(idx: usize, title: &str, text: &str, sup: bool) -> serde_json::Value {
        json!({"idx": idx, "title": title, "paragraph_text": text, "is_supporting": sup})
    }

    fn q1() -> serde_json::Value {
        json!({
            "id": "2hop__1_2", "question": "Who founded the publisher of J?", "answer": "Z",
            "answer_aliases": [], "answerable": true,
            "paragraphs": [para(0, "J", "J is published by P.", true),
                           para(1, "X", "Distractor.", false),
                           para(2, "P", "P was founded by Z.", true)],
            "question_decomposition": [
                {"id": 1, "question": "Who publishes J?", "answer": "P", "paragraph_support_idx": 0},
                {"id": 2, "question": "Who founded #1?", "answer": "Z", "paragraph_support_idx": 2}]
        })
    }

    fn q2() -> serde_json::Value {
        json!({
            "id": "3hop1__3_4_5", "question": "Q2?", "answer": "A", "answer_aliases": [],
            "answerable": true,
            "paragraphs": [para(0, "P", "P was founded by Z.", true),
                           para(1, "X", "Distractor.", false),
                           para(2, "P", "P is old.", true),
                           para(3, "W", "W.", true)],
            "question_decomposition": [
                {"id": 3, "question": "h1", "answer": "a1", "paragraph_support_idx": 3},
                {"id": 4, "question": "h2 #1", "answer": "a2", "paragraph_support_idx": 0},
                {"id": 5, "question": "h3 #2", "answer": "a3", "paragraph_support_idx": 2}]
        })
    }

    fn corpus() -> serde_json::Value {
        json!([
            {"title": "X", "text": "Distractor."},
            {"title": "J", "text": "J is published by P."},
            {"title": "P", "text": "P was founded by Z."},
            {"title": "P", "text": "P is old."},
            {"title": "W", "text": "W."}
        ])
    }

    #[test]
    fn hipporag_layout() {
        let dir = tempfile::tempdir().unwrap();
        let qs = write(&dir, "q.json", &json!([q1(), q2()]).to_string());
        let c = write(&dir, "c.json", &corpus().to_string());
        let d = read(&qs, Some(&c)).unwrap();
        assert_eq!(d.passages.len(), 5);
        assert_eq!(d.passages[1].id, "000001");
        assert_eq!(d.passages[3].doc.as_deref(), Some("P"));
        assert_eq!(d.passages[3].title, "P");
        assert_eq!(d.passages[3].text, "P is old.");
        let q = &d.questions[0];
        assert_eq!(q.id, "2hop__1_2");
        assert_eq!(q.text, "Who founded the publisher of J?");
        assert_eq!(q.gold, ["000001", "000002"]);
        assert_eq!(
            q.chain,
            Some(vec![vec!["000001".to_string()], vec!["000002".to_string()]])
        );
        let dec = q.decomposition.as_ref().unwrap();
        assert_eq!(dec[1].question, "Who founded #1?");
        assert_eq!(dec[1].answer, "Z");
        assert_eq!(dec[1].gold, ["000002"]);
        assert_eq!(q.labels["hops"], "2hop");
        assert_eq!(q.labels["answerable"], "true");
        let q = &d.questions[1];
        assert_eq!(q.gold, ["000002", "000003", "000004"]);
        let chain = q.chain.as_ref().unwrap();
        assert_eq!(
            chain,
            &[
                vec!["000004".to_string()],
                vec!["000002".into()],
                vec!["000003".into()]
            ]
        );
        assert_eq!(q.labels["hops"], "3hop");
        assert_eq!(q.labels["shape"], "3hop1");
    }

    #[test]
    fn release_layout_unions_paragraphs() {
        let dir = tempfile::tempdir().unwrap();
        let qs = write(&dir, "q.jsonl", &format!("{}\n{}\n", q1(), q2()));
        let d = read(&qs, None).unwrap();
        // q1: J, X, P(founded); q2 adds P(old), W.
        let keys: Vec<_> = d
            .passages
            .iter()
            .map(|p| (p.id.as_str(), p.text.as_str()))
            .collect();
        assert_eq!(
            keys,
            [
                ("000000", "J is published by P."),
                ("000001", "Distractor."),
                ("000002", "P was founded by Z."),
                ("000003", "P is old."),
                ("000004", "W.")
            ]
        );
        assert_eq!(d.questions[0].gold, ["000000", "000002"]);
        assert_eq!(d.questions[1].gold, ["000002", "000003", "000004"]);
        assert_eq!(d.questions[1].chain.as_ref().unwrap()[0], ["000004"]);
    }

    #[test]
    fn null_support_idx_is_an_empty_slot() {
        let dir = tempfile::tempdir().unwrap();
        let mut q = q1();
        q["question_decomposition"][1]["paragraph_support_idx"] = serde_json::Value::Null;
        q["answerable"] = json!(false);
        let qs = write(&dir, "q.jsonl", &q.to_string());
        let d = read(&qs, None).unwrap();
        let chain = d.questions[0].chain.as_ref().unwrap();
        assert_eq!(chain[1], Vec::<String>::new());
        assert_eq!(d.questions[0].labels["answerable"], "false");
    }

    #[test]
    fn malformed_files() {
        let dir = tempfile::tempdir().unwrap();
        let qs = write(&dir, "q.jsonl", &format!("{}\n{{\"id\": \n", q1()));
        let e = read(&qs, None).unwrap_err();
        assert_malformed_at(&e, "JSONL line 2");
        let qs = write(&dir, "q.json", &json!([q1()]).to_string());
        let c = write(&dir, "c.json", "[{\"title\": \"X\", ");
        assert!(matches!(read(&qs, Some(&c)), Err(Error::Malformed { .. })));
        let missing = dir.path().join("missing.json");
        assert!(matches!(read(&missing, None), Err(Error::Io { .. })));
    }

    #[test]
    fn missing_and_mistyped_fields() {
        let dir = tempfile::tempdir().unwrap();
        let mut q = q2();
        q["paragraphs"][2]
            .as_object_mut()
            .unwrap()
            .remove("paragraph_text");
        let qs = write(&dir, "q.jsonl", &format!("{}\n{}\n", q1(), q));
        let e = read(&qs, None).unwrap_err();
        let (path, record, field, _) = field_error(&e);
        assert_eq!(path, &qs);
        assert_eq!(record, "1 (line 2, id \"3hop1__3_4_5\")");
        assert_eq!(field, "paragraphs[2].paragraph_text");
        let mut q = q1();
        q["paragraphs"][0]["is_supporting"] = json!("yes");
        let qs = write(&dir, "q2.jsonl", &q.to_string());
        let e = read(&qs, None).unwrap_err();
        assert!(
            e.to_string()
                .contains("field `paragraphs[0].is_supporting`: expected a boolean"),
            "{e}"
        );
        let mut q = q1();
        q["question_decomposition"][0]["paragraph_support_idx"] = json!(17);
        let qs = write(&dir, "q3.jsonl", &q.to_string());
        let e = read(&qs, None).unwrap_err();
        assert!(
            e.to_string()
                .contains("question_decomposition[0].paragraph_support_idx"),
            "{e}"
        );
        let c = write(&dir, "c.json", "[{\"title\": \"X\"}]");
        let qs = write(&dir, "q4.json", &json!([q1()]).to_string());
        let e = read(&qs, Some(&c)).unwrap_err();
        assert!(
            matches!(&e, Error::Field { field, record, .. } if field == "text" && record == "0"),
            "{e}"
        );
        let qs = write(&dir, "q5.jsonl", &format!("{}\n{}\n", q1(), q1()));
        let e = read(&qs, None).unwrap_err();
        assert!(
            matches!(&e, Error::Field { field, .. } if field == "id"),
            "{e}"
        );
    }

    #[test]
    fn duplicate_corpus_passage() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = corpus();
        c.as_array_mut()
            .unwrap()
            .push(json!({"title": "P", "text": "P is old."}));
        let c = write(&dir, "c.json", &c.to_string());
        let qs = write(&dir, "q.json", &json!([q1()]).to_string());
        let e = read(&qs, Some(&c)).unwrap_err();
        assert!(
            matches!(&e, Error::DuplicatePassage { id, .. } if id.starts_with("000005") && id.contains("000003")),
            "{e}"
        );
    }

    #[test]
    fn gold_not_in_corpus() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = corpus();
        c.as_array_mut().unwrap().remove(1); // J
        let c = write(&dir, "c.json", &c.to_string());
        let qs = write(&dir, "q.json", &json!([q1()]).to_string());
        let e = read(&qs, Some(&c)).unwrap_err();
        let (path, record, field, gold) = gold_missing(&e);
        assert_eq!(path, &qs);
        assert_eq!(record, "0 (id \"2hop__1_2\")");
        assert_eq!(field, "paragraphs[0]");
        assert!(gold.contains("\"J\""));
    }

    #[test]
    fn real_hipporag_train100() {
        let Some(root) = real_data_dir() else {
            return;
        };
        let dir = root.join("musique-train100");
        let d = read(
            &dir.join("musique_train.json"),
            Some(&dir.join("musique_train_corpus.json")),
        )
        .unwrap();
        assert_eq!(d.passages.len(), 1890);
        assert_eq!(d.questions.len(), 100);
        assert_eq!(d.questions.iter().map(|q| q.gold.len()).sum::<usize>(), 237);
        let mut hist = BTreeMap::new();
        for q in &d.questions {
            let chain = q.chain.as_ref().unwrap();
            assert!((2..=4).contains(&chain.len()), "{}", q.id);
            assert!(chain.iter().all(|s| s.len() == 1));
            // every chain slot is gold, and every gold passage is a chain slot
            let mut flat: Vec<_> = chain.iter().flatten().cloned().collect();
            flat.sort();
            let mut gold = q.gold.clone();
            gold.sort();
            assert_eq!(flat, gold, "{}", q.id);
            assert_eq!(q.labels["hops"], format!("{}hop", chain.len()));
            *hist.entry(chain.len()).or_insert(0) += 1;
        }
        println!("musique-train100 chain lengths: {hist:?}");
        assert_eq!(hist, BTreeMap::from([(2, 68), (3, 27), (4, 5)]));
        let titles: std::collections::HashSet<_> = d.passages.iter().map(|p| &p.title).collect();
        assert_eq!(titles.len(), 1764);
    }

    #[test]
    fn real_release_samples() {
        let Some(root) = real_data_dir() else {
            return;
        };
        let d = read(&root.join("samples-10q/musique_example.jsonl"), None).unwrap();
        let gold: usize = d.questions.iter().map(|q| q.gold.len()).sum();
        println!(
            "musique samples: {} passages, {} questions, {gold} gold",
            d.passages.len(),
            d.questions.len()
        );
        assert_eq!(d.passages.len(), 200);
        assert_eq!(d.questions.len(), 10);
        assert_eq!(gold, 20);
        assert!(d
            .questions
            .iter()
            .all(|q| q.chain.as_ref().unwrap().len() == 2));
    }
}
