//! BEIR (Thakur et al., 2021), the generic retrieval layout: `corpus.jsonl`, `queries.jsonl`
//! and `qrels/<split>.tsv`.
//!
//! * `corpus.jsonl`: one `{_id, title, text, metadata?}` per line; `title` may be absent (`""`).
//!   Passage id = document = `_id` (BEIR has no passage/document split). A repeated `_id` is a
//!   [`DuplicatePassage`](crate::Error::DuplicatePassage) error.
//! * `queries.jsonl`: one `{_id, text, metadata?}` per line; a repeated `_id` is a field error.
//! * `qrels/<split>.tsv`: header `query-id corpus-id score`, then one judgement per line.
//!
//! Ids may be strings or integers (kept as their decimal text). Questions = the queries with at
//! least one qrel of score > 0 in the split, in `queries.jsonl` order; gold = those corpus ids,
//! first-seen order. A qrel naming an unknown query is a field error; a relevant corpus id with
//! no passage is [`GoldNotInCorpus`](crate::Error::GoldNotInCorpus). No chain, no labels.

use std::path::Path;

use super::common::{read_records, CorpusBuilder, Ctx, SeenIds};
use super::qrels::Judgements;
use super::{Format, Role};
use crate::error::{Error, Result};
use crate::model::{Passage, Question, RawDataset};
use crate::protocol::Protocol;

/// `format: beir`: `corpus`, `queries`, `qrels` (one split's file).
pub const FORMAT: Format = Format {
    name: "beir",
    roles: &[
        Role::one("corpus"),
        Role::one("queries"),
        Role::one("qrels"),
    ],
    read: |files| {
        read(
            files.one("corpus"),
            files.one("queries"),
            files.one("qrels"),
        )
    },
    // BEIR's dense corpus encoder: `(title + " " + text).strip()`; Anserini's BEIR "flat"
    // indexes concatenate title and text the same way
    protocol: Protocol::TITLE_SPACE,
};

/// Read a BEIR dataset from its three files.
pub fn read(corpus: &Path, queries: &Path, qrels: &Path) -> Result<RawDataset> {
    let mut builder = CorpusBuilder::default();
    for record in read_records(corpus)? {
        let mut ctx = Ctx::new(corpus, record.loc);
        let id = ctx.root(&record.value).get("_id")?.id()?;
        ctx.set_id(&id);
        let root = ctx.root(&record.value);
        let title = match root.opt("title")? {
            Some(t) => t.string()?,
            None => String::new(),
        };
        let text = root.get("text")?.string()?;
        let passage = Passage {
            doc: Some(id.clone()),
            id,
            title,
            text,
            header: None,
        };
        // the id is the record's `_id`: name the field, as a repeated query id does
        builder.push(corpus, passage).map_err(|e| match e {
            Error::DuplicatePassage { id, .. } => {
                ctx.field_err("_id", format!("duplicate passage id {id:?}"))
            }
            e => e,
        })?;
    }
    builder.require_some(corpus)?;
    let mut all: Vec<Question> = Vec::new();
    let mut seen = SeenIds::default();
    for record in read_records(queries)? {
        let mut ctx = Ctx::new(queries, record.loc);
        let id = ctx.root(&record.value).get("_id")?.id()?;
        ctx.set_id(&id);
        seen.check(&ctx, "_id", &id)?;
        let text = ctx.root(&record.value).get("text")?.question()?;
        all.push(Question::new(id, text, Vec::new()));
    }
    let mut judged = Judgements::new(all, queries, "query");
    judged.read(qrels, |id| builder.contains(id))?;
    Ok(RawDataset {
        questions: judged.finish(),
        passages: builder.finish(),
    })
}

/// Read the BEIR folder layout: `dir/corpus.jsonl`, `dir/queries.jsonl`, `dir/qrels/<split>.tsv`.
pub fn read_dir(dir: &Path, split: &str) -> Result<RawDataset> {
    read(
        &dir.join("corpus.jsonl"),
        &dir.join("queries.jsonl"),
        &dir.join("qrels").join(format!("{split}.tsv")),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::testutil::{assert_malformed_at, field_error, gold_missing};
    use std::path::PathBuf;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
        p
    }

    const CORPUS: &str = r#"{"_id": "d1", "title": "One", "text": "first"}
{"_id": "d2", "title": "", "text": "second", "metadata": {}}
{"_id": 3, "text": "third"}
"#;
    const QUERIES: &str = r#"{"_id": "q1", "text": "what is first?"}
{"_id": "q2", "text": "unjudged"}
{"_id": "q3", "text": "what is third?", "metadata": {"x": 1}}
"#;
    const QRELS: &str =
        "query-id\tcorpus-id\tscore\nq3\t3\t2\nq1\td1\t1\nq1\td2\t0\nq3\td1\t1\nq3\t3\t1\n";

    fn fixture(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
        (
            write(dir, "corpus.jsonl", CORPUS),
            write(dir, "queries.jsonl", QUERIES),
            write(dir, "qrels/test.tsv", QRELS),
        )
    }

    #[test]
    fn reads_a_split() {
        let dir = tempfile::tempdir().unwrap();
        let (c, q, r) = fixture(dir.path());
        let d = read(&c, &q, &r).unwrap();
        let ids: Vec<_> = d.passages.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(ids, ["d1", "d2", "3"]);
        assert_eq!(d.passages[0].doc.as_deref(), Some("d1"));
        assert_eq!(d.passages[0].title, "One");
        assert_eq!(d.passages[2].title, "");
        let qs: Vec<_> = d
            .questions
            .iter()
            .map(|q| (q.id.as_str(), q.gold.clone()))
            .collect();
        assert_eq!(
            qs,
            [
                ("q1", vec!["d1".to_string()]),
                ("q3", vec!["3".to_string(), "d1".to_string()])
            ]
        );
        assert_eq!(d.questions[0].text, "what is first?");
        // q3 judges `3` at 2, then at 1: it keeps its highest grade
        assert_eq!(d.questions[1].grade("3"), Some(2));
        assert_eq!(d.questions[1].grade("d1"), Some(1));
        assert_eq!(d.questions[0].grades.len(), 0);
        assert!(d
            .questions
            .iter()
            .all(|q| q.chain.is_none() && q.labels.is_empty()));
        assert_eq!(read_dir(dir.path(), "test").unwrap(), d);
        assert!(matches!(read_dir(dir.path(), "dev"), Err(Error::Io { .. })));
    }

    #[test]
    fn the_registered_format_reads_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let (c, q, r) = fixture(dir.path());
        let files = [
            ("corpus", c.clone()),
            ("queries", q.clone()),
            ("qrels", r.clone()),
        ]
        .into_iter()
        .map(|(role, p)| (role.to_string(), vec![p]))
        .collect();
        let files = super::super::Files::new(&FORMAT, files).unwrap();
        assert_eq!(FORMAT.read(&files).unwrap(), read(&c, &q, &r).unwrap());
    }

    #[test]
    fn malformed_files() {
        let dir = tempfile::tempdir().unwrap();
        let (c, q, r) = fixture(dir.path());
        let bad = write(
            dir.path(),
            "bad.jsonl",
            "{\"_id\": \"d1\", \"text\": \"x\"}\n{\"_id\": \n",
        );
        let e = read(&bad, &q, &r).unwrap_err();
        assert!(
            matches!(&e, Error::Malformed { what, path, .. } if what == "JSONL line 2" && path == &bad),
            "{e}"
        );
        let bad = write(
            dir.path(),
            "bad.tsv",
            "query-id\tcorpus-id\tscore\nq1\td1\tlots\n",
        );
        let e = read(&c, &q, &bad).unwrap_err();
        assert_malformed_at(&e, "TSV line 2");
    }

    #[test]
    fn missing_and_mistyped_fields() {
        let dir = tempfile::tempdir().unwrap();
        let (c, q, r) = fixture(dir.path());
        let bad = write(
            dir.path(),
            "c.jsonl",
            "{\"_id\": \"d1\", \"text\": \"x\"}\n{\"_id\": \"d2\", \"title\": \"t\"}\n",
        );
        let e = read(&bad, &q, &r).unwrap_err();
        let (path, record, field, _) = field_error(&e);
        assert_eq!(path, &bad);
        assert_eq!(record, "1 (line 2, id \"d2\")");
        assert_eq!(field, "text");
        let bad = write(dir.path(), "q.jsonl", "{\"_id\": [1], \"text\": \"x\"}\n");
        let e = read(&c, &bad, &r).unwrap_err();
        assert!(
            matches!(&e, Error::Field { field, record, .. } if field == "_id" && record == "0 (line 1)"),
            "{e}"
        );
        let bad = write(
            dir.path(),
            "q2.jsonl",
            "{\"_id\": \"q1\", \"text\": \"x\"}\n{\"_id\": \"q1\", \"text\": \"y\"}\n",
        );
        let e = read(&c, &bad, &r).unwrap_err();
        assert!(
            matches!(&e, Error::Field { field, .. } if field == "_id"),
            "{e}"
        );
        let bad = write(
            dir.path(),
            "r.tsv",
            "query-id\tcorpus-id\tscore\nq9\td1\t1\n",
        );
        let e = read(&c, &q, &bad).unwrap_err();
        assert!(
            matches!(&e, Error::Field { field, record, .. } if field == "query-id" && record == "line 2"),
            "{e}"
        );
    }

    #[test]
    fn duplicate_passage() {
        let dir = tempfile::tempdir().unwrap();
        let (_, q, r) = fixture(dir.path());
        let bad = write(
            dir.path(),
            "c.jsonl",
            &format!("{CORPUS}{{\"_id\": \"d2\", \"text\": \"again\"}}\n"),
        );
        let e = read(&bad, &q, &r).unwrap_err();
        assert!(
            matches!(&e, Error::Field { field, path, message, .. }
                if field == "_id" && path == &bad && message.contains("\"d2\"")),
            "{e}"
        );
    }

    #[test]
    fn gold_not_in_corpus() {
        let dir = tempfile::tempdir().unwrap();
        let (c, q, _) = fixture(dir.path());
        let r = write(
            dir.path(),
            "r.tsv",
            "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td9\t1\nq1\td8\t0\n",
        );
        let e = read(&c, &q, &r).unwrap_err();
        let (path, record, field, gold) = gold_missing(&e);
        assert_eq!(path, &r);
        assert_eq!(record, "line 3 (query \"q1\")");
        assert_eq!(field, "corpus-id");
        assert_eq!(gold, "\"d9\"");
    }
}
