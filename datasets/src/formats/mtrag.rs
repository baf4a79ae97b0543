//! MTRAG-UN (IBM's multi-turn RAG benchmark, human conversations): `reference.jsonl` plus the
//! per-collection BEIR qrels of the retrieval tasks.
//!
//! `reference.jsonl` holds one task per line: `{conversation_id, task_id, task_type, turn,
//! dataset, contexts: [{document_id, text, title?}], input: [{speaker, text, metadata}], targets,
//! answerability[], "Question Type"[], "Multi-Turn"[], Collection}`. `input` is the conversation up
//! to and including the current user turn; `task_id` is `conversation_id<::>turn`. The qrels files
//! (`qrels_{clapnq,cloud,fiqa,govt}.tsv`) have the BEIR header `query-id corpus-id score`, with
//! query-id = task_id and corpus-id = a `document_id`.
//!
//! **Corpus.** The official corpora are not distributed with the tasks, so the corpus is the
//! distinct `contexts` passages of *all* tasks, keyed by `document_id`, first-seen order (an id
//! repeated with a different text or title is a [`DuplicatePassage`](crate::Error::DuplicatePassage)
//! error). Passage id = `document_id`; title = the context's `title` (ClapNQ and govt have one,
//! FiQA and IBM Cloud do not: `""`); text as published (ClapNQ and govt texts start with the
//! title line). This pool has no distractors, so it is easier than the official setting.
//!
//! **Documents.** A `document_id` is a source document key followed by the character span of
//! the chunk, `<doc>-<start>-<end>` (`162428-0-349` in FiQA, `ibmcld_00691-7371-8668` in IBM
//! Cloud, `2ec3def5abce1bd5-2-2124` in govt; `end - start` is the chunk's length). The document
//! is `<doc>`. ClapNQ's key is itself `<wikipedia page id>_<start>-<end>` (a passage of a page:
//! `806502664_349-964-0-615`); its document is the page id (`806502664`), which matches the
//! contexts' titles one to one. An id without a trailing `-<start>-<end>` is its own document.
//!
//! **Questions.** The tasks with at least one qrel of score > 0, in `reference.jsonl` order.
//! Text = the last user turn of `input`; conversation = all of `input` (speaker, text); gold = the
//! qrels with score > 0, first-seen order; a qrel whose query-id is no task is a field error, a
//! relevant corpus-id with no passage is [`GoldNotInCorpus`](crate::Error::GoldNotInCorpus).
//! Qrels with score <= 0 are not gold. No chain. Labels (each when present): `multi_turn`
//! (`Follow-up` / `Clarification` / `N/A`, several joined with `,`), `question_type` (joined
//! with `,`), `answerability` (joined with `,`), `collection`, `turn`, `conversation_id`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::common::{read_records, CorpusBuilder, Ctx, SeenIds};
use super::qrels::Judgements;
use super::{Format, Role};
use crate::error::{Error, Result};
use crate::model::{Passage, Question, RawDataset, Turn};
use crate::protocol::Protocol;

/// `format: mtrag`: `reference` (the tasks), `qrels` (one or more files, applied in order).
pub const FORMAT: Format = Format {
    name: "mtrag",
    roles: &[Role::one("reference"), Role::list("qrels")],
    read: |files| read(files.one("reference"), files.list("qrels")),
    // MTRAG-UN's `contexts` carry a document id and the passage text, no title: the text alone
    protocol: Protocol::TEXT,
};

/// Read MTRAG: the `reference` tasks file (JSONL) and the `qrels` TSV files, in the given order.
pub fn read(reference: &Path, qrels: &[impl AsRef<Path>]) -> Result<RawDataset> {
    let mut builder = CorpusBuilder::default();
    let mut tasks: Vec<Question> = Vec::new();
    let mut seen = SeenIds::default();
    let records = read_records(reference)?;
    if records.is_empty() {
        return Err(crate::Error::malformed(
            reference,
            "reference",
            "no tasks (zero records)",
        ));
    }
    for record in records {
        let mut ctx = Ctx::new(reference, record.loc);
        let id = ctx.root(&record.value).get("task_id")?.string()?;
        ctx.set_id(&id);
        seen.check(&ctx, "task_id", &id)?;
        let root = ctx.root(&record.value);
        for c in root.get("contexts")?.items()? {
            let doc_id = c.get("document_id")?.string()?;
            let title = match c.opt("title")? {
                Some(t) => t.string()?,
                None => String::new(),
            };
            let text = c.get("text")?.string()?;
            let passage = Passage {
                doc: Some(document_of(&doc_id)),
                id: doc_id,
                title,
                text,
                header: None,
            };
            builder.merge(reference, passage)?;
        }
        let input = root.get("input")?;
        let mut turns = Vec::new();
        let mut last_user = None;
        for t in input.items()? {
            let text = t.get("text")?;
            let speaker = t.get("speaker")?.string()?;
            if speaker == "user" {
                last_user = Some(text.clone());
            }
            turns.push(Turn {
                speaker,
                text: text.string()?,
            });
        }
        let text = last_user
            .ok_or_else(|| input.err("no user turn"))?
            .question()?;
        let mut labels = BTreeMap::new();
        for (key, label) in [
            ("Multi-Turn", "multi_turn"),
            ("Question Type", "question_type"),
            ("answerability", "answerability"),
        ] {
            if let Some(v) = root.opt(key)? {
                labels.insert(label.to_string(), v.strings()?.join(","));
            }
        }
        for (key, label) in [
            ("Collection", "collection"),
            ("turn", "turn"),
            ("conversation_id", "conversation_id"),
        ] {
            if let Some(v) = root.opt(key)? {
                labels.insert(label.to_string(), v.id()?);
            }
        }
        let mut q = Question::new(id, text, Vec::new());
        q.conversation = Some(turns);
        q.labels = labels;
        tasks.push(q);
    }
    builder.require_some(reference)?;
    let mut judged = Judgements::new(tasks, reference, "task");
    for path in qrels {
        judged.read(path.as_ref(), |id| builder.contains(id))?;
    }
    Ok(RawDataset {
        questions: judged.finish(),
        passages: builder.finish(),
    })
}

/// Read the MTRAG-UN folder layout: `dir/reference.jsonl` and every `dir/qrels_*.tsv`, in file
/// name order.
pub fn read_dir(dir: &Path) -> Result<RawDataset> {
    let entries = std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))?;
    let mut qrels: Vec<PathBuf> = Vec::new();
    for entry in entries {
        let path = entry.map_err(|e| Error::io(dir, e))?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.starts_with("qrels_") && name.ends_with(".tsv") {
            qrels.push(path);
        }
    }
    qrels.sort();
    read(&dir.join("reference.jsonl"), &qrels)
}

/// The source document of an MTRAG `document_id` (see the module docs).
pub fn document_of(document_id: &str) -> String {
    fn digits(s: &str) -> bool {
        !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
    }
    /// `<base>-<digits>-<digits>` -> `<base>`.
    fn strip_span(s: &str) -> Option<&str> {
        let (rest, end) = s.rsplit_once('-')?;
        let (base, start) = rest.rsplit_once('-')?;
        (digits(start) && digits(end) && !base.is_empty()).then_some(base)
    }
    let Some(key) = strip_span(document_id) else {
        return document_id.to_string();
    };
    if let Some((page, span)) = key.split_once('_') {
        if let Some((start, end)) = span.split_once('-') {
            if digits(page) && digits(start) && digits(end) {
                return page.to_string();
            }
        }
    }
    key.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::testutil::{
        assert_malformed_at, field_error, gold_missing, real_data_dir, write,
    };
    use serde_json::json;

    fn turn(speaker: &str, text: &str) -> serde_json::Value {
        json!({"speaker": speaker, "text": text, "metadata": {"author_type": "human"}})
    }

    fn task(
        conv: &str,
        turn_no: usize,
        contexts: serde_json::Value,
        input: serde_json::Value,
    ) -> serde_json::Value {
        json!({
            "conversation_id": conv, "task_id": format!("{conv}<::>{turn_no}"), "task_type": "rag",
            "turn": turn_no.to_string(), "dataset": "MT-RAG 2.0", "contexts": contexts, "input": input,
            "targets": [{"speaker": "agent", "text": "..."}], "answerability": ["ANSWERABLE"],
            "Question Type": ["Factoid", "Summarization"], "Multi-Turn": ["Follow-up"],
            "Collection": "clapnq"
        })
    }

    fn reference() -> String {
        let t1 = task(
            "c1",
            1,
            json!([{"document_id": "806502664_349-964-0-615", "title": "Primary source", "text": "Primary source\nA."},
                   {"document_id": "162428-0-349", "text": "\nB."}]),
            json!([turn("user", "first?")]),
        );
        let t2 = task(
            "c1",
            2,
            json!([{"document_id": "162428-0-349", "text": "\nB."},
                   {"document_id": "ibmcld_00691-7371-8668", "text": "\nC."}]),
            json!([
                turn("user", "first?"),
                turn("agent", "answer"),
                turn("user", "and then?")
            ]),
        );
        let t3 = task(
            "c2",
            1,
            json!([{"document_id": "plain", "text": "D."}]),
            json!([turn("user", "no qrels")]),
        );
        format!("{t1}\n{t2}\n{t3}\n")
    }

    fn qrels(dir: &tempfile::TempDir) -> Vec<PathBuf> {
        vec![
            write(dir, "qrels_a.tsv", "query-id\tcorpus-id\tscore\nc1<::>2\tibmcld_00691-7371-8668\t1\nc1<::>2\t162428-0-349\t1\n"),
            write(dir, "qrels_b.tsv", "query-id\tcorpus-id\tscore\nc1<::>1\t806502664_349-964-0-615\t1\nc1<::>2\tibmcld_00691-7371-8668\t1\nc2<::>1\tplain\t0\n"),
        ]
    }

    #[test]
    fn reads_tasks_with_qrels() {
        let dir = tempfile::tempdir().unwrap();
        let r = write(&dir, "reference.jsonl", &reference());
        let d = read(&r, &qrels(&dir)).unwrap();
        let ids: Vec<_> = d.passages.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "806502664_349-964-0-615",
                "162428-0-349",
                "ibmcld_00691-7371-8668",
                "plain"
            ]
        );
        let docs: Vec<_> = d
            .passages
            .iter()
            .map(|p| p.doc.as_deref().unwrap())
            .collect();
        assert_eq!(docs, ["806502664", "162428", "ibmcld_00691", "plain"]);
        assert_eq!(d.passages[0].title, "Primary source");
        assert_eq!(d.passages[1].title, "");
        assert_eq!(d.passages[1].text, "\nB.");
        assert_eq!(
            d.questions.len(),
            2,
            "the task whose only qrel has score 0 is not a question"
        );
        let q = &d.questions[0];
        assert_eq!(q.id, "c1<::>1");
        assert_eq!(q.text, "first?");
        assert_eq!(q.gold, ["806502664_349-964-0-615"]);
        let q = &d.questions[1];
        assert_eq!(q.text, "and then?");
        assert_eq!(q.gold, ["ibmcld_00691-7371-8668", "162428-0-349"]);
        assert_eq!(q.chain, None);
        let conv = q.conversation.as_ref().unwrap();
        assert_eq!(conv.len(), 3);
        assert_eq!(
            (conv[1].speaker.as_str(), conv[1].text.as_str()),
            ("agent", "answer")
        );
        assert_eq!(q.labels["multi_turn"], "Follow-up");
        assert_eq!(q.labels["question_type"], "Factoid,Summarization");
        assert_eq!(q.labels["collection"], "clapnq");
        assert_eq!(q.labels["turn"], "2");
        assert_eq!(q.labels["conversation_id"], "c1");
        assert_eq!(q.labels["answerability"], "ANSWERABLE");
        let via_dir = read_dir(dir.path()).unwrap();
        assert_eq!(via_dir, d);
    }

    #[test]
    fn document_keys() {
        assert_eq!(document_of("806502664_5333-5957-0-624"), "806502664");
        assert_eq!(document_of("ibmcld_16288-6287-8401"), "ibmcld_16288");
        assert_eq!(document_of("2ec3def5abce1bd5-2-2124"), "2ec3def5abce1bd5");
        assert_eq!(document_of("181880-0-671"), "181880");
        assert_eq!(document_of("plain"), "plain");
        assert_eq!(document_of("a-b-1"), "a-b-1");
        assert_eq!(document_of("-1-2"), "-1-2");
    }

    #[test]
    fn malformed_files() {
        let dir = tempfile::tempdir().unwrap();
        let r = write(&dir, "reference.jsonl", &format!("{}{{oops\n", reference()));
        let e = read(&r, &qrels(&dir)).unwrap_err();
        assert_malformed_at(&e, "JSONL line 4");
        let r = write(&dir, "reference.jsonl", &reference());
        let bad = write(
            &dir,
            "qrels_c.tsv",
            "query-id\tcorpus-id\tscore\nc1<::>1 plain 1\n",
        );
        let e = read(&r, &[bad]).unwrap_err();
        assert_malformed_at(&e, "TSV line 2");
    }

    #[test]
    fn missing_and_mistyped_fields() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = task(
            "c9",
            1,
            json!([{"document_id": "x-1-2"}]),
            json!([turn("user", "q")]),
        );
        let r = write(&dir, "r1.jsonl", &t.to_string());
        let e = read(&r, &[] as &[PathBuf]).unwrap_err();
        let (path, record, field, _) = field_error(&e);
        assert_eq!(path, &r);
        assert_eq!(record, "0 (line 1, id \"c9<::>1\")");
        assert_eq!(field, "contexts[0].text");
        t["contexts"] = json!([]);
        t["input"] = json!([turn("agent", "hello")]);
        let r = write(&dir, "r2.jsonl", &t.to_string());
        let e = read(&r, &[] as &[PathBuf]).unwrap_err();
        assert!(
            matches!(&e, Error::Field { field, message, .. } if field == "input" && message == "no user turn"),
            "{e}"
        );
        t["input"] = json!([turn("user", "q")]);
        t["Multi-Turn"] = json!("Follow-up");
        let r = write(&dir, "r3.jsonl", &t.to_string());
        let e = read(&r, &[] as &[PathBuf]).unwrap_err();
        assert!(
            matches!(&e, Error::Field { field, .. } if field == "Multi-Turn"),
            "{e}"
        );
        // a qrel naming no task
        let r = write(&dir, "reference.jsonl", &reference());
        let q = write(
            &dir,
            "q.tsv",
            "query-id\tcorpus-id\tscore\nnobody\tplain\t1\n",
        );
        let e = read(&r, &[&q]).unwrap_err();
        assert!(
            matches!(&e, Error::Field { field, record, path, .. } if field == "query-id" && record == "line 2" && path == &q),
            "{e}"
        );
    }

    #[test]
    fn duplicate_passage() {
        let dir = tempfile::tempdir().unwrap();
        let t = task(
            "c9",
            1,
            json!([{"document_id": "162428-0-349", "text": "\nB, changed."}]),
            json!([turn("user", "q")]),
        );
        let r = write(&dir, "reference.jsonl", &format!("{}{t}\n", reference()));
        let e = read(&r, &qrels(&dir)).unwrap_err();
        assert!(
            matches!(&e, Error::DuplicatePassage { id, .. } if id.starts_with("162428-0-349")),
            "{e}"
        );
    }

    #[test]
    fn gold_not_in_corpus() {
        let dir = tempfile::tempdir().unwrap();
        let r = write(&dir, "reference.jsonl", &reference());
        let q = write(
            &dir,
            "q.tsv",
            "query-id\tcorpus-id\tscore\nc1<::>1\tnowhere-0-5\t1\n",
        );
        let e = read(&r, &[&q]).unwrap_err();
        let (path, record, field, gold) = gold_missing(&e);
        assert_eq!(path, &q);
        assert_eq!(record, "line 2 (query \"c1<::>1\")");
        assert_eq!(field, "corpus-id");
        assert_eq!(gold, "\"nowhere-0-5\"");
    }

    #[test]
    fn real_mtrag_un() {
        let Some(root) = real_data_dir() else {
            return;
        };
        let d = read_dir(&root.join("mtrag-un")).unwrap();
        let qrels: usize = d.questions.iter().map(|q| q.gold.len()).sum();
        let docs: std::collections::HashSet<_> = d
            .passages
            .iter()
            .map(|p| p.doc.as_deref().unwrap())
            .collect();
        let mut by_label: BTreeMap<&str, usize> = BTreeMap::new();
        for q in &d.questions {
            *by_label.entry(&q.labels["multi_turn"]).or_default() += 1;
        }
        println!(
            "mtrag-un: {} passages ({} documents), {} questions, {qrels} qrels, multi_turn {by_label:?}",
            d.passages.len(),
            docs.len(),
            d.questions.len()
        );
        assert_eq!(d.passages.len(), 1152);
        assert_eq!(d.questions.len(), 332);
        assert_eq!(qrels, 851);
        assert!(d.questions.iter().all(|q| q
            .conversation
            .as_ref()
            .unwrap()
            .last()
            .unwrap()
            .speaker
            == "user"));
    }
}
