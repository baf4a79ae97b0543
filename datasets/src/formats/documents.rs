//! `documents`: your own long documents, chunked at prepare time, with gold at document level
//! or as character spans.
//!
//! * `documents` (JSONL or a JSON list): one `{id, title?, text, metadata?}` per document. `id`
//!   (or BEIR's `_id`) is a string or an integer, unique, non-empty; `text` must hold something
//!   besides white space; `title` defaults to `""`; `metadata`, if present, must be an object
//!   and is not carried into the export. A BEIR `corpus.jsonl` is a valid documents file.
//! * `queries` (JSONL or a JSON list): one `{id, text}` per query (`_id` accepted, as in BEIR's
//!   `queries.jsonl`); ids unique, texts non-empty.
//! * `qrels` (optional): document-level gold, TREC style, one judgement per line:
//!   `query-id 0 doc-id relevance`, white-space separated, or tab-separated when the line holds
//!   a tab (then ids may contain spaces, as titles do); BEIR's three columns
//!   `query-id corpus-id score` with their header line are accepted too. Relevance > 0 is gold,
//!   and is the document's grade (an integer: graded nDCG's gain, as trec_eval reads it); a
//!   document judged twice for one query keeps its highest grade.
//! * `spans` (optional): span-level gold, JSONL or a JSON list of
//!   `{query_id, doc_id, char_start, char_end}`: `[char_start, char_end)` in Unicode code points
//!   of the document's `text` (Python's `text[char_start:char_end]`), `char_end > char_start`,
//!   within the text, and not only white space. No other keys.
//!
//! At least one of `qrels` and `spans` is given; both may be. Queries keep file order; those
//! without any gold are dropped (as in BEIR).
//!
//! **Chunks.** Each document is cut by a [`Chunker`] (the dataset's `chunking` setting; without
//! one, each document is one chunk of its whole text). Chunk ids are `<doc_id>#<n>`, `n`
//! counting the document's chunks from 0 in text order, zero-padded to the width of the
//! dataset's largest chunk count so that id order is text order; the document id is the chunk's
//! document, its title the document's title, and its [`Span`] is recorded in the export
//! (`char_start`, `char_end`).
//!
//! **Gold.** A chunk is gold for a query when it shares at least one code point with one of the
//! query's gold spans ([`crate::chunk::overlapping`]): a span across a chunk border makes both
//! chunks gold, a span inside an overlap region too. Document-level gold makes *every chunk* of
//! the document gold, so chunk-level recall there measures how much of the document was
//! retrieved, not whether the answer was: read `doc_recall` for such queries. A chunk of a
//! graded document has the document's grade; a chunk gold by a span has grade 1 (a span
//! carries none), or its document's grade where that is higher. Each query is
//! labelled `gold_level` = `span` (only span gold) or `document` (some document-level gold), a
//! label breakdowns can group on. No chain, no decomposition.
//!
//! Every error names the file, the record (index, line, id) and the field.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use super::common::{kind, push_unique, read_records, read_text, Ctx, SeenIds, Val};
use super::{Files, Format, Role};
use crate::chunk::{overlapping, Chunker};
use crate::error::{Error, Result};
use crate::model::{Passage, Question, RawDataset, Span, SpannedDataset};
use crate::protocol::Protocol;

/// `format: documents`: `documents`, `queries`, and gold in `qrels` and/or `spans`.
pub const FORMAT: Format = Format {
    name: "documents",
    roles: &[
        Role::one("documents"),
        Role::one("queries"),
        Role::optional("qrels"),
        Role::optional("spans"),
    ],
    read: |files| Ok(read_files(files)?.chunk(&Chunker::whole())?.raw),
    // a user's own chunks have no published baseline: indexed as cut (each chunk keeps its
    // document's title, so `context_header: title` prefixes it)
    protocol: Protocol::TEXT,
};

/// The label every query of a documents dataset carries: `span` or `document`.
pub const GOLD_LEVEL: &str = "gold_level";

/// One document as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Document {
    /// Its id.
    pub id: String,
    /// Its title (`""` when absent).
    pub title: String,
    /// Its text.
    pub text: String,
}

/// A gold span of a query, with where it was read (for errors found later, when chunking).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GoldSpan {
    /// The document.
    pub doc: String,
    /// `[char_start, char_end)` in code points of the document's text.
    pub span: Span,
    /// The spans file.
    pub path: PathBuf,
    /// The record, as errors name it.
    pub record: String,
}

/// One query and its gold, as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocQuery {
    /// Its id.
    pub id: String,
    /// Its text.
    pub text: String,
    /// Documents judged relevant (qrels), first-seen order, unique.
    pub gold_docs: Vec<String>,
    /// The grade of each document of `gold_docs` whose grade is not 1.
    pub doc_grades: BTreeMap<String, u32>,
    /// Gold spans, first-seen order, unique.
    pub gold_spans: Vec<GoldSpan>,
}

/// A documents dataset as read, before chunking.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocumentSet {
    /// The documents, in file order.
    pub documents: Vec<Document>,
    /// The queries with gold, in file order.
    pub queries: Vec<DocQuery>,
}

/// Reads a documents dataset from its files (checked against [`FORMAT`]'s roles).
pub fn read_files(files: &Files) -> Result<DocumentSet> {
    read(
        files.one("documents"),
        files.one("queries"),
        files.optional("qrels"),
        files.optional("spans"),
    )
}

/// Reads a documents dataset and chunks it with `chunker`: what prepare reads for a dataset
/// with a `chunking` setting.
pub fn read_spanned(files: &Files, chunker: &Chunker) -> Result<SpannedDataset> {
    read_files(files)?.chunk(chunker)
}

/// Reads the documents, the queries and the gold.
pub fn read(
    documents: &Path,
    queries: &Path,
    qrels: Option<&Path>,
    spans: Option<&Path>,
) -> Result<DocumentSet> {
    if qrels.is_none() && spans.is_none() {
        return Err(Error::Config {
            context: format!("format documents ({})", documents.display()),
            message: "no gold: give `files.qrels` (document-level) or `files.spans` (character \
                      spans), or both"
                .into(),
        });
    }
    let docs = read_documents(documents)?;
    let by_id: HashMap<&str, usize> = docs
        .iter()
        .enumerate()
        .map(|(i, d)| (d.id.as_str(), i))
        .collect();
    let mut qs = read_queries(queries)?;
    let q_index: HashMap<String, usize> = qs
        .iter()
        .enumerate()
        .map(|(i, q)| (q.id.clone(), i))
        .collect();
    if let Some(path) = qrels {
        for (line, qid, doc, grade) in read_trec_qrels(path)? {
            let q = *q_index.get(&qid).ok_or_else(|| {
                Error::field(
                    path,
                    format!("line {line}"),
                    "query-id",
                    format!("no query {qid:?} in {}", queries.display()),
                )
            })?;
            if !by_id.contains_key(doc.as_str()) {
                return Err(Error::GoldNotInCorpus {
                    path: path.to_path_buf(),
                    record: format!("line {line} (query {qid:?})"),
                    field: "doc-id".into(),
                    gold: format!("{doc:?} (no such document in {})", documents.display()),
                });
            }
            let q = &mut qs[q];
            let grade = grade.max(q.doc_grades.get(&doc).copied().unwrap_or(1));
            if grade > 1 {
                q.doc_grades.insert(doc.clone(), grade);
            }
            push_unique(&mut q.gold_docs, doc);
        }
    }
    if let Some(path) = spans {
        read_spans(path, &docs, &by_id, documents, queries, &q_index, &mut qs)?;
    }
    let queries_with_gold: Vec<DocQuery> = qs
        .into_iter()
        .filter(|q| !q.gold_docs.is_empty() || !q.gold_spans.is_empty())
        .collect();
    if queries_with_gold.is_empty() {
        let gold: Vec<String> = [qrels, spans]
            .into_iter()
            .flatten()
            .map(|p| p.display().to_string())
            .collect();
        return Err(Error::malformed(
            queries,
            "queries",
            format!("no query has gold in {}", gold.join(", ")),
        ));
    }
    Ok(DocumentSet {
        documents: docs,
        queries: queries_with_gold,
    })
}

/// `id`, or BEIR's `_id` when there is no `id`.
fn id_of(ctx: &Ctx<'_>, v: &serde_json::Value) -> Result<String> {
    let root = ctx.root(v);
    match root.opt("id")? {
        Some(id) => id.id(),
        None => match root.opt("_id")? {
            Some(id) => id.id(),
            None => Err(ctx.field_err("id", "missing")),
        },
    }
}

/// Reads the records of `path` in order, each with its context named by its id, and hands each
/// to `each`: documents and queries are both keyed by a unique `id` (or BEIR's `_id`), and a
/// record's id is checked before anything else of it.
fn for_each_by_id(
    path: &Path,
    mut each: impl FnMut(&Ctx<'_>, String, &serde_json::Value) -> Result<()>,
) -> Result<()> {
    let mut seen = SeenIds::default();
    for record in read_records(path)? {
        let mut ctx = Ctx::new(path, record.loc);
        let id = id_of(&ctx, &record.value)?;
        ctx.set_id(&id);
        seen.check(&ctx, "id", &id)?;
        each(&ctx, id, &record.value)?;
    }
    Ok(())
}

fn read_documents(path: &Path) -> Result<Vec<Document>> {
    let mut out = Vec::new();
    for_each_by_id(path, |ctx, id, value| {
        let root = ctx.root(value);
        let title = match root.opt("title")? {
            Some(t) => t.string()?,
            None => String::new(),
        };
        let text = root.get("text")?;
        let text = text.str()?;
        if text.trim().is_empty() {
            return Err(ctx.field_err("text", "empty (only white space)"));
        }
        if u32::try_from(text.chars().count()).is_err() {
            return Err(ctx.field_err("text", "longer than 4,294,967,295 code points"));
        }
        if let Some(m) = root.opt("metadata")? {
            object(&m)?;
        }
        out.push(Document {
            id,
            title,
            text: text.to_string(),
        });
        Ok(())
    })?;
    if out.is_empty() {
        return Err(super::common::no_passages(path));
    }
    Ok(out)
}

/// Checks that `v` is a JSON object (looking a member up fails, naming `v`'s field, on
/// anything else).
fn object(v: &Val<'_>) -> Result<()> {
    v.opt("").map(|_| ())
}

fn read_queries(path: &Path) -> Result<Vec<DocQuery>> {
    let mut out = Vec::new();
    for_each_by_id(path, |ctx, id, value| {
        let text = ctx.root(value).get("text")?.question()?;
        out.push(DocQuery {
            id,
            text,
            gold_docs: Vec::new(),
            doc_grades: BTreeMap::new(),
            gold_spans: Vec::new(),
        });
        Ok(())
    })?;
    Ok(out)
}

/// `(line, query id, doc id, grade)` of every relevant judgement (relevance > 0), in file
/// order.
fn read_trec_qrels(path: &Path) -> Result<Vec<(usize, String, String, u32)>> {
    let text = read_text(path)?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let mut out = Vec::new();
    let mut first = true;
    for (i, line) in text.lines().enumerate() {
        // a tab-separated line may hold spaces inside its ids (titles as document ids)
        let cols: Vec<&str> = if line.contains('\t') {
            line.split('\t').map(str::trim).collect()
        } else {
            line.split_whitespace().collect()
        };
        if cols.iter().all(|c| c.is_empty()) {
            continue;
        }
        if cols.iter().any(|c| c.is_empty()) {
            return Err(Error::malformed(
                path,
                format!("qrels line {}", i + 1),
                "an empty column",
            ));
        }
        if std::mem::take(&mut first) && cols[0].eq_ignore_ascii_case("query-id") {
            continue;
        }
        let what = format!("qrels line {}", i + 1);
        let (qid, doc, rel) = match cols[..] {
            [q, _, d, r] => (q, d, r),
            [q, d, r] => (q, d, r),
            _ => {
                return Err(Error::malformed(
                    path,
                    what,
                    format!(
                        "expected `query-id 0 doc-id relevance` (4 columns), found {} columns",
                        cols.len()
                    ),
                ))
            }
        };
        let rel: f64 = rel
            .parse()
            .ok()
            .filter(|r: &f64| r.is_finite())
            .ok_or_else(|| {
                Error::field(
                    path,
                    format!("line {}", i + 1),
                    "relevance",
                    format!("{rel:?} is not a number"),
                )
            })?;
        let grade = super::qrels::grade_of(rel)
            .map_err(|why| Error::field(path, format!("line {}", i + 1), "relevance", why))?;
        if let Some(grade) = grade {
            out.push((i + 1, qid.to_string(), doc.to_string(), grade));
        }
    }
    Ok(out)
}

const SPAN_KEYS: [&str; 4] = ["query_id", "doc_id", "char_start", "char_end"];

#[allow(clippy::too_many_arguments)]
fn read_spans(
    path: &Path,
    docs: &[Document],
    by_id: &HashMap<&str, usize>,
    documents: &Path,
    queries: &Path,
    q_index: &HashMap<String, usize>,
    qs: &mut [DocQuery],
) -> Result<()> {
    // code-point -> byte offsets of each document a span names, computed once
    let mut offsets: HashMap<usize, Vec<usize>> = HashMap::new();
    for record in read_records(path)? {
        let ctx = Ctx::new(path, record.loc);
        let root = ctx.root(&record.value);
        let map = record.value.as_object().ok_or_else(|| {
            ctx.field_err(
                "",
                format!("expected an object, found {}", kind(&record.value)),
            )
        })?;
        if let Some(k) = map.keys().find(|k| !SPAN_KEYS.contains(&k.as_str())) {
            return Err(ctx.field_err(
                k,
                format!("unknown key (a span has {})", SPAN_KEYS.join(", ")),
            ));
        }
        let qid = root.get("query_id")?.id()?;
        let q = *q_index.get(&qid).ok_or_else(|| {
            ctx.field_err(
                "query_id",
                format!("no query {qid:?} in {}", queries.display()),
            )
        })?;
        let doc = root.get("doc_id")?.id()?;
        let Some(&d) = by_id.get(doc.as_str()) else {
            return Err(ctx.gold_missing(
                "doc_id",
                format!("{doc:?} (no such document in {})", documents.display()),
            ));
        };
        let start = root.get("char_start")?.usize()?;
        let end = root.get("char_end")?.usize()?;
        if end <= start {
            return Err(ctx.field_err(
                "char_end",
                format!("{end} must be greater than char_start ({start})"),
            ));
        }
        let text = &docs[d].text;
        let starts = offsets.entry(d).or_insert_with(|| {
            text.char_indices()
                .map(|(i, _)| i)
                .chain(std::iter::once(text.len()))
                .collect()
        });
        let n = starts.len() - 1;
        if end > n {
            return Err(ctx.field_err(
                "char_end",
                format!("{end} is beyond the end of document {doc:?} ({n} code points)"),
            ));
        }
        if text[starts[start]..starts[end]].trim().is_empty() {
            return Err(ctx.field_err(
                "char_start",
                format!("[{start}, {end}) of document {doc:?} is only white space"),
            ));
        }
        let gold = GoldSpan {
            doc,
            span: Span {
                start: start as u32,
                end: end as u32,
            },
            path: path.to_path_buf(),
            record: ctx.to_string(),
        };
        let list = &mut qs[q].gold_spans;
        if !list
            .iter()
            .any(|g| g.doc == gold.doc && g.span == gold.span)
        {
            list.push(gold);
        }
    }
    Ok(())
}

impl DocumentSet {
    /// Chunks every document with `chunker` and maps the gold onto the chunks (see the module
    /// docs for the ids and the rules).
    pub fn chunk(&self, chunker: &Chunker) -> Result<SpannedDataset> {
        let mut per_doc: Vec<Vec<Span>> = Vec::with_capacity(self.documents.len());
        for d in &self.documents {
            per_doc.push(chunker.spans(&d.text)?);
        }
        let most = per_doc.iter().map(Vec::len).max().unwrap_or(1);
        let width = most.saturating_sub(1).to_string().len();
        let chunk_id = |doc: &str, n: usize| format!("{doc}#{n:0width$}");
        let doc_index: HashMap<&str, usize> = self
            .documents
            .iter()
            .enumerate()
            .map(|(i, d)| (d.id.as_str(), i))
            .collect();
        let mut passages = Vec::new();
        let mut spans = BTreeMap::new();
        for (d, chunks) in self.documents.iter().zip(&per_doc) {
            for (n, &s) in chunks.iter().enumerate() {
                let id = chunk_id(&d.id, n);
                passages.push(Passage {
                    id: id.clone(),
                    doc: Some(d.id.clone()),
                    title: d.title.clone(),
                    text: crate::chunk::span_text(&d.text, s).to_string(),
                    header: None,
                });
                spans.insert(id, s);
            }
        }
        let mut questions = Vec::with_capacity(self.queries.len());
        for q in &self.queries {
            let mut question = Question::new(q.id.clone(), q.text.clone(), Vec::new());
            for doc in &q.gold_docs {
                let d = doc_index[doc.as_str()];
                let grade = q.doc_grades.get(doc).copied().unwrap_or(1);
                for n in 0..per_doc[d].len() {
                    question.add_gold(chunk_id(doc, n), grade);
                }
            }
            for g in &q.gold_spans {
                let d = doc_index[g.doc.as_str()];
                let hit = overlapping(&per_doc[d], g.span);
                if hit.is_empty() {
                    // every character but white space is in some chunk, and a gold span holds
                    // more than white space: a chunker that breaks this is a bug, named here
                    return Err(Error::field(
                        &g.path,
                        &g.record,
                        "char_start",
                        format!(
                            "span [{}, {}) of document {:?} overlaps no chunk",
                            g.span.start, g.span.end, g.doc
                        ),
                    ));
                }
                for n in hit {
                    question.add_gold(chunk_id(&g.doc, n), 1);
                }
            }
            let level = if q.gold_docs.is_empty() {
                "span"
            } else {
                "document"
            };
            question
                .labels
                .insert(GOLD_LEVEL.to_string(), level.to_string());
            questions.push(question);
        }
        Ok(SpannedDataset {
            raw: RawDataset {
                passages,
                questions,
            },
            spans,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunk::span_text;
    use crate::chunk::tests::chars;
    use crate::formats::testutil::{assert_malformed_at, gold_missing, write};

    const DOCS: &str = r#"{"id": "alpha", "title": "Alpha", "text": "Alpha is a city. It lies on a river. The river is long.", "metadata": {"url": "x"}}
{"_id": "béta", "text": "Béta ☕ is a café. Its owner is Zoë."}
{"id": 7, "title": "Seven", "text": "Seven is a number."}
"#;
    const QUERIES: &str = r#"{"id": "q1", "text": "Which river?"}
{"_id": "q2", "text": "Who owns the café?"}
{"id": "q3", "text": "unjudged"}
{"id": "q4", "text": "What is seven?"}
"#;
    const QRELS: &str = "q4 0 7 1\nq1 0 7 0\n";
    // q1: "It lies on a river." = [17, 36) of alpha; q2: "Zoë" = [31, 34) of béta
    const SPANS: &str = r#"{"query_id": "q1", "doc_id": "alpha", "char_start": 17, "char_end": 36}
{"query_id": "q2", "doc_id": "béta", "char_start": 31, "char_end": 34}
{"query_id": "q2", "doc_id": "béta", "char_start": 31, "char_end": 34}
"#;

    struct Fixture {
        dir: tempfile::TempDir,
        docs: PathBuf,
        queries: PathBuf,
        qrels: PathBuf,
        spans: PathBuf,
    }

    fn fixture() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let docs = write(&dir, "docs.jsonl", DOCS);
        let queries = write(&dir, "queries.jsonl", QUERIES);
        let qrels = write(&dir, "qrels.txt", QRELS);
        let spans = write(&dir, "spans.jsonl", SPANS);
        Fixture {
            dir,
            docs,
            queries,
            qrels,
            spans,
        }
    }

    #[test]
    fn reads_documents_queries_and_both_kinds_of_gold() {
        let f = fixture();
        let set = read(&f.docs, &f.queries, Some(&f.qrels), Some(&f.spans)).unwrap();
        let ids: Vec<_> = set.documents.iter().map(|d| d.id.as_str()).collect();
        assert_eq!(ids, ["alpha", "béta", "7"]);
        assert_eq!(set.documents[1].title, "");
        let qs: Vec<_> = set.queries.iter().map(|q| q.id.as_str()).collect();
        assert_eq!(
            qs,
            ["q1", "q2", "q4"],
            "q3 has no gold; q1's qrel has relevance 0"
        );
        assert_eq!(set.queries[2].gold_docs, ["7"]);
        assert_eq!(
            set.queries[1].gold_spans.len(),
            1,
            "a repeated span counts once"
        );
        let alpha = &set.documents[0].text;
        let g = &set.queries[0].gold_spans[0];
        assert_eq!(span_text(alpha, g.span), "It lies on a river.");
        let g = &set.queries[1].gold_spans[0];
        assert_eq!(span_text(&set.documents[1].text, g.span), "Zoë");
    }

    #[test]
    fn chunks_carry_ids_spans_and_gold() {
        let f = fixture();
        let set = read(&f.docs, &f.queries, Some(&f.qrels), Some(&f.spans)).unwrap();
        let out = set.chunk(&chars(20, 0)).unwrap();
        let ids: Vec<_> = out.raw.passages.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(
            ids,
            ["alpha#0", "alpha#1", "alpha#2", "béta#0", "béta#1", "7#0"]
        );
        for p in &out.raw.passages {
            let doc = set
                .documents
                .iter()
                .find(|d| Some(&d.id) == p.doc.as_ref())
                .unwrap();
            assert_eq!(span_text(&doc.text, out.spans[&p.id]), p.text, "{}", p.id);
            assert_eq!(p.title, doc.title);
        }
        assert_eq!(out.raw.passages[1].text, "It lies on a river.");
        let gold: Vec<(&str, Vec<&str>, &str)> = out
            .raw
            .questions
            .iter()
            .map(|q| {
                (
                    q.id.as_str(),
                    q.gold.iter().map(String::as_str).collect(),
                    q.labels[GOLD_LEVEL].as_str(),
                )
            })
            .collect();
        assert_eq!(
            gold,
            [
                ("q1", vec!["alpha#1"], "span"),
                ("q2", vec!["béta#1"], "span"),
                ("q4", vec!["7#0"], "document"),
            ]
        );
        // the registered format reads the same documents, one whole chunk each
        let files = [
            ("documents", f.docs.clone()),
            ("queries", f.queries.clone()),
            ("spans", f.spans.clone()),
        ]
        .into_iter()
        .map(|(r, p)| (r.to_string(), vec![p]))
        .collect();
        let files = Files::new(&FORMAT, files).unwrap();
        let raw = FORMAT.read(&files).unwrap();
        let ids: Vec<_> = raw.passages.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(ids, ["alpha#0", "béta#0", "7#0"]);
        assert_eq!(raw.passages[0].text, set.documents[0].text);
        let _ = &f.dir;
    }

    #[test]
    fn document_gold_is_every_chunk_of_the_document_and_ids_are_padded() {
        let dir = tempfile::tempdir().unwrap();
        let text = (0..12)
            .map(|i| format!("Sentence number {i} ends."))
            .collect::<Vec<_>>()
            .join(" ");
        let docs = write(
            &dir,
            "d.jsonl",
            &format!("{{\"id\": \"long\", \"text\": \"{text}\"}}\n{{\"id\": \"short\", \"text\": \"Tiny.\"}}\n"),
        );
        let queries = write(&dir, "q.jsonl", "{\"id\": \"q\", \"text\": \"which?\"}\n");
        let qrels = write(&dir, "r.txt", "q 0 long 2\nq 0 short 1\nq 0 long 1\n");
        let set = read(&docs, &queries, Some(&qrels), None).unwrap();
        let out = set.chunk(&chars(25, 0)).unwrap();
        let ids: Vec<_> = out.raw.passages.iter().map(|p| p.id.clone()).collect();
        assert_eq!(ids.len(), 13);
        assert_eq!(ids[0], "long#00");
        assert_eq!(ids[11], "long#11");
        assert_eq!(ids[12], "short#00");
        let mut sorted = ids.clone();
        sorted.sort();
        assert_eq!(sorted, ids, "id order is text order");
        assert_eq!(out.raw.questions[0].gold, ids);
        // every chunk of a graded document has its grade (the highest judged: 2)
        let q = &out.raw.questions[0];
        assert!(ids[..12].iter().all(|id| q.grade(id) == Some(2)));
        assert_eq!(q.grade("short#00"), Some(1));
        // a span's chunk has grade 1, or its document's where that is higher
        let spans = write(
            &dir,
            "s.jsonl",
            "{\"query_id\": \"q\", \"doc_id\": \"long\", \"char_start\": 0, \"char_end\": 5}\n\
             {\"query_id\": \"q\", \"doc_id\": \"short\", \"char_start\": 0, \"char_end\": 4}\n",
        );
        let only_long = write(&dir, "r2.txt", "q 0 long 3\n");
        let set = read(&docs, &queries, Some(&only_long), Some(&spans)).unwrap();
        let q = set.chunk(&chars(25, 0)).unwrap().raw.questions.remove(0);
        assert_eq!(q.grade("long#00"), Some(3));
        assert_eq!(q.grade("short#00"), Some(1));
        // a fractional relevance has no grade
        let half = write(&dir, "r3.txt", "q 0 long 0.5\n");
        let e = read(&docs, &queries, Some(&half), None)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("r3.txt") && e.contains("line 1") && e.contains("not an integer grade"),
            "{e}"
        );
    }

    /// The error of reading with one file replaced by `text`, as a string.
    fn err_with(role: &str, text: &str) -> Error {
        let f = fixture();
        let bad = write(&f.dir, "bad", text);
        let pick = |r: &str, p: &PathBuf| if r == role { bad.clone() } else { p.clone() };
        read(
            &pick("documents", &f.docs),
            &pick("queries", &f.queries),
            Some(&pick("qrels", &f.qrels)),
            Some(&pick("spans", &f.spans)),
        )
        .unwrap_err()
    }

    /// Asserts a field error naming `bad`, `record` and `field`, with `says` in its message.
    fn field(e: Error, record: &str, field_name: &str, says: &str) {
        match &e {
            Error::Field {
                path,
                record: r,
                field: f,
                message,
            } => {
                assert!(path.ends_with("bad"), "{e}");
                assert_eq!(r, record, "{e}");
                assert_eq!(f, field_name, "{e}");
                assert!(message.contains(says), "{e}");
            }
            _ => panic!("not a field error: {e}"),
        }
    }

    #[test]
    fn document_errors_name_file_line_and_field() {
        let line2 = |second: &str| format!("{{\"id\": \"a\", \"text\": \"x\"}}\n{second}\n");
        field(
            err_with("documents", &line2(r#"{"id": "b", "text": "  \n "}"#)),
            "1 (line 2, id \"b\")",
            "text",
            "empty",
        );
        field(
            err_with("documents", &line2(r#"{"id": "b"}"#)),
            "1 (line 2, id \"b\")",
            "text",
            "missing",
        );
        field(
            err_with("documents", &line2(r#"{"id": "a", "text": "again"}"#)),
            "1 (line 2, id \"a\")",
            "id",
            "duplicate id \"a\"",
        );
        field(
            err_with("documents", &line2(r#"{"text": "no id"}"#)),
            "1 (line 2)",
            "id",
            "missing",
        );
        field(
            err_with("documents", &line2(r#"{"id": "", "text": "x"}"#)),
            "1 (line 2)",
            "id",
            "empty id",
        );
        field(
            err_with("documents", &line2(r#"{"id": "b", "text": 3}"#)),
            "1 (line 2, id \"b\")",
            "text",
            "expected a string",
        );
        field(
            err_with(
                "documents",
                &line2(r#"{"id": "b", "text": "x", "metadata": [1]}"#),
            ),
            "1 (line 2, id \"b\")",
            "metadata",
            "expected an object",
        );
        let e = err_with("documents", "{\"id\": \"a\", \"text\": \"x\"}\n{\"id\": \n");
        assert_malformed_at(&e, "JSONL line 2");
        let e = err_with("documents", "");
        assert!(matches!(&e, Error::Malformed { .. }), "{e}");
    }

    #[test]
    fn query_and_qrels_errors_name_file_line_and_field() {
        field(
            err_with(
                "queries",
                "{\"id\": \"q1\", \"text\": \"x\"}\n{\"id\": \"q1\", \"text\": \"y\"}\n",
            ),
            "1 (line 2, id \"q1\")",
            "id",
            "duplicate",
        );
        field(
            err_with("queries", "{\"id\": \"q1\", \"text\": \" \"}\n"),
            "0 (line 1, id \"q1\")",
            "text",
            "empty question",
        );
        field(
            err_with("qrels", "q4 0 7 1\nq9 0 7 1\n"),
            "line 2",
            "query-id",
            "no query \"q9\"",
        );
        field(
            err_with("qrels", "q4 0 7 high\n"),
            "line 1",
            "relevance",
            "not a number",
        );
        let e = err_with("qrels", "q4 0 7 1\nq4 7\n");
        assert!(
            matches!(&e, Error::Malformed { what, message, .. } if what == "qrels line 2" && message.contains("4 columns")),
            "{e}"
        );
        let e = err_with("qrels", "\n\nq4 0 nope 1\n");
        let (path, record, field, gold) = gold_missing(&e);
        assert!(path.ends_with("bad"));
        assert_eq!(record, "line 3 (query \"q4\")");
        assert_eq!(field, "doc-id");
        assert!(gold.starts_with("\"nope\""), "{gold}");
        // a tab-separated line keeps the spaces of its ids
        let f = fixture();
        let spaced = write(
            &f.dir,
            "d.jsonl",
            "{\"id\": \"Lilu (myth)\", \"text\": \"A spirit.\"}\n",
        );
        let tabbed = write(&f.dir, "t.txt", "q4\t0\tLilu (myth)\t1\n");
        let set = read(&spaced, &f.queries, Some(&tabbed), None).unwrap();
        assert_eq!(set.queries[0].gold_docs, ["Lilu (myth)"]);
        let e = read(
            &spaced,
            &f.queries,
            Some(&write(&f.dir, "u.txt", "q4\t\tx\t1\n")),
            None,
        )
        .unwrap_err();
        assert!(e.to_string().contains("an empty column"), "{e}");
        // BEIR's three-column TSV with its header is accepted
        let f = fixture();
        let beir = write(&f.dir, "beir.tsv", "query-id\tcorpus-id\tscore\nq4\t7\t1\n");
        let set = read(&f.docs, &f.queries, Some(&beir), None).unwrap();
        assert_eq!(set.queries.len(), 1);
        // no gold at all
        let e = read(&f.docs, &f.queries, None, None).unwrap_err();
        assert!(e.to_string().contains("no gold"), "{e}");
        let zero = write(&f.dir, "zero.txt", "q4 0 7 0\n");
        let e = read(&f.docs, &f.queries, Some(&zero), None).unwrap_err();
        assert!(e.to_string().contains("no query has gold"), "{e}");
    }

    #[test]
    fn span_errors_name_file_line_and_field() {
        let span = |q: &str, d: &str, s: &str, e: &str| {
            format!(
                "{{\"query_id\": \"q1\", \"doc_id\": \"alpha\", \"char_start\": 0, \"char_end\": 5}}\n\
                 {{\"query_id\": {q}, \"doc_id\": {d}, \"char_start\": {s}, \"char_end\": {e}}}\n"
            )
        };
        let rec = "1 (line 2)";
        // a second span line with these `query_id`, `doc_id`, `char_start`, `char_end` (as JSON):
        // the field at fault, and what its message says
        #[rustfmt::skip]
        let cases = [
            ("\"q1\"", "\"alpha\"", "5", "5", "char_end", "5 must be greater than char_start (5)"),
            ("\"q1\"", "\"alpha\"", "9", "3", "char_end", "greater than char_start"),
            // béta has 35 code points (and more bytes: é and ☕ and ë are multi-byte)
            ("\"q2\"", "\"béta\"", "30", "36", "char_end", "beyond the end of document \"béta\" (35 code points)"),
            ("\"q2\"", "\"béta\"", "-1", "3", "char_start", "non-negative integer"),
            ("\"q2\"", "\"béta\"", "1.5", "3", "char_start", "non-negative integer"),
            ("\"q9\"", "\"béta\"", "0", "3", "query_id", "no query \"q9\""),
            // "Alpha is a city. " : [16, 17) is the space after the first sentence
            ("\"q1\"", "\"alpha\"", "16", "17", "char_start", "only white space"),
        ];
        for (q, d, start, end, at, says) in cases {
            field(err_with("spans", &span(q, d, start, end)), rec, at, says);
        }
        let e = err_with("spans", &span("\"q1\"", "\"gamma\"", "0", "3"));
        let (_, record, field_name, _) = gold_missing(&e);
        assert_eq!(record, rec);
        assert_eq!(field_name, "doc_id");
        let e = err_with(
            "spans",
            "{\"query_id\": \"q1\", \"doc_id\": \"alpha\", \"char_start\": 0, \"char_stop\": 5}\n",
        );
        field(e, "0 (line 1)", "char_stop", "unknown key");
        field(
            err_with(
                "spans",
                "{\"query_id\": \"q1\", \"doc_id\": \"alpha\", \"char_start\": 0}\n",
            ),
            "0 (line 1)",
            "char_end",
            "missing",
        );
        field(
            err_with("spans", "[1]\n"),
            "0",
            "(record)",
            "expected an object",
        );
    }

    #[test]
    fn spans_are_code_points_not_bytes() {
        // "Béta ☕ is a café. Its owner is Zoë.": é, ☕ and ë take 2-3 bytes each, so byte and
        // code-point offsets differ; 31..34 is "Zoë" in code points only
        let f = fixture();
        let set = read(&f.docs, &f.queries, None, Some(&f.spans)).unwrap();
        let text = &set.documents[1].text;
        assert_ne!(text.len(), text.chars().count());
        assert_eq!(&text[35..39], "Zoë");
        let out = set.chunk(&chars(12, 4)).unwrap();
        let gold = &out.raw.questions[1].gold;
        for g in gold {
            let s = out.spans[g];
            assert!(s.start < 34 && s.end > 31, "{g}: {s:?}");
        }
        assert!(!gold.is_empty());
    }
}
