//! Plumbing shared by the format readers: files to JSON values with errors that name the file,
//! the record and the field; a corpus builder that enforces unique passage ids.
//!
//! A reader never touches `serde_json::Value` directly. It wraps each record in a [`Ctx`] (file +
//! record position + id once known) and walks it with [`Val`], whose every accessor either returns
//! the typed value or an [`Error::Field`] naming the full field path (`paragraphs[3].title`).
//!
//! Record files are accepted in both shapes people download: a JSON list (`[{...}, {...}]`) or
//! JSON Lines (one object per line). The first non-blank byte decides: `[` is a list, anything
//! else is JSONL. Errors on JSONL records carry the 1-based line number.

use std::collections::HashMap;
use std::fmt;
use std::path::Path;

use serde_json::Value;

use crate::error::{Error, Result};
use crate::model::Passage;

/// Read a whole file as UTF-8. Invalid UTF-8 is a `Malformed` error that says where (line,
/// column and byte offset of the first bad byte), so the user can find it in a large file.
pub(crate) fn read_text(path: &Path) -> Result<String> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let (line, column) = crate::error::utf8_error_position(e.as_bytes(), e.utf8_error());
        Error::malformed(
            path,
            "UTF-8",
            format!("invalid byte at line {line}, column {column} (byte offset {at})"),
        )
    })
}

/// Where a record sits in its file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Loc {
    /// 0-based position among the file's records.
    pub index: usize,
    /// 1-based line, for JSONL and TSV files.
    pub line: Option<usize>,
}

/// One record of a record file, with its position.
#[derive(Debug)]
pub(crate) struct Record {
    /// Where it is.
    pub loc: Loc,
    /// The parsed record.
    pub value: Value,
}

/// Read a JSON list or a JSONL file into its records (blank JSONL lines are skipped).
pub(crate) fn read_records(path: &Path) -> Result<Vec<Record>> {
    let text = read_text(path)?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    if text.trim_start().starts_with('[') {
        let value: Value =
            serde_json::from_str(text).map_err(|e| Error::malformed(path, "JSON", e))?;
        match value {
            Value::Array(items) => Ok(items
                .into_iter()
                .enumerate()
                .map(|(index, value)| Record {
                    loc: Loc { index, line: None },
                    value,
                })
                .collect()),
            other => Err(Error::malformed(
                path,
                "JSON",
                format!("expected a list of records, found {}", kind(&other)),
            )),
        }
    } else {
        let mut records = Vec::new();
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let value: Value = serde_json::from_str(line)
                .map_err(|e| Error::malformed(path, format!("JSONL line {}", i + 1), e))?;
            records.push(Record {
                loc: Loc {
                    index: records.len(),
                    line: Some(i + 1),
                },
                value,
            });
        }
        Ok(records)
    }
}

/// Read a file holding one JSON object, keeping its entries in file order and keeping repeated
/// keys (which `serde_json::Map` would silently collapse), so a reader can report them.
pub(crate) fn read_object_entries(path: &Path) -> Result<Vec<(String, Value)>> {
    struct Entries(Vec<(String, Value)>);
    impl<'de> serde::Deserialize<'de> for Entries {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
            struct V;
            impl<'de> serde::de::Visitor<'de> for V {
                type Value = Entries;
                fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                    f.write_str("a JSON object")
                }
                fn visit_map<A: serde::de::MapAccess<'de>>(
                    self,
                    mut map: A,
                ) -> std::result::Result<Entries, A::Error> {
                    let mut out = Vec::new();
                    while let Some((k, v)) = map.next_entry::<String, Value>()? {
                        out.push((k, v));
                    }
                    Ok(Entries(out))
                }
            }
            d.deserialize_map(V)
        }
    }
    let text = read_text(path)?;
    let entries: Entries =
        serde_json::from_str(&text).map_err(|e| Error::malformed(path, "JSON", e))?;
    Ok(entries.0)
}

/// "a string", "a list", ... for error messages.
pub(crate) fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// The error context of one record: its file, its position, and its id once read.
#[derive(Debug, Clone)]
pub(crate) struct Ctx<'a> {
    path: &'a Path,
    loc: Option<Loc>,
    key: Option<String>,
    id: Option<String>,
}

impl fmt::Display for Ctx<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut extra = Vec::new();
        if let Some(Loc {
            line: Some(line), ..
        }) = self.loc
        {
            extra.push(format!("line {line}"));
        }
        if let Some(id) = &self.id {
            extra.push(format!("id {id:?}"));
        }
        match (&self.loc, &self.key) {
            (Some(loc), _) => write!(f, "{}", loc.index)?,
            (None, Some(key)) => write!(f, "{key:?}")?,
            (None, None) => write!(f, "(file)")?,
        }
        if !extra.is_empty() {
            write!(f, " ({})", extra.join(", "))?;
        }
        Ok(())
    }
}

impl<'a> Ctx<'a> {
    /// The context of a record at `loc` of `path`.
    pub fn new(path: &'a Path, loc: Loc) -> Self {
        Ctx {
            path,
            loc: Some(loc),
            key: None,
            id: None,
        }
    }
    /// The context of the entry `key` of a JSON object file (`{key: value, ...}`).
    pub fn keyed(path: &'a Path, key: &str) -> Self {
        Ctx {
            path,
            loc: None,
            key: Some(key.to_string()),
            id: None,
        }
    }
    /// Name the record by its id too, from now on.
    pub fn set_id(&mut self, id: &str) {
        self.id = Some(id.to_string());
    }
    /// A missing or mistyped `field` of this record.
    pub fn field_err(&self, field: &str, message: impl Into<String>) -> Error {
        Error::field(
            self.path,
            self,
            if field.is_empty() { "(record)" } else { field },
            message,
        )
    }
    /// The gold reference `gold`, held in `field`, resolves to no passage.
    pub fn gold_missing(&self, field: &str, gold: impl Into<String>) -> Error {
        Error::GoldNotInCorpus {
            path: self.path.to_path_buf(),
            record: self.to_string(),
            field: field.to_string(),
            gold: gold.into(),
        }
    }
    /// The record's root value, to walk with [`Val`].
    pub fn root<'v>(&'v self, v: &'v Value) -> Val<'v> {
        Val {
            ctx: self,
            field: String::new(),
            v,
        }
    }
    /// A value of this record that lives at `field`.
    pub fn at<'v>(&'v self, field: impl Into<String>, v: &'v Value) -> Val<'v> {
        Val {
            ctx: self,
            field: field.into(),
            v,
        }
    }
}

/// A JSON value inside a record, with its field path for errors.
#[derive(Debug, Clone)]
pub(crate) struct Val<'a> {
    ctx: &'a Ctx<'a>,
    field: String,
    v: &'a Value,
}

impl<'a> Val<'a> {
    /// The file this value was read from.
    pub fn path(&self) -> &'a Path {
        self.ctx.path
    }
    /// A field error at this value.
    pub fn err(&self, message: impl Into<String>) -> Error {
        self.ctx.field_err(&self.field, message)
    }
    /// A gold-not-in-corpus error at this value.
    pub fn gold_missing(&self, gold: impl Into<String>) -> Error {
        self.ctx.gold_missing(&self.field, gold)
    }
    fn expected(&self, what: &str) -> Error {
        self.err(format!("expected {what}, found {}", kind(self.v)))
    }
    fn child_name(&self, key: &str) -> String {
        if self.field.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.field)
        }
    }
    /// The member `key` of this object; an error if this is not an object or `key` is absent.
    pub fn get(&self, key: &str) -> Result<Val<'a>> {
        let map = self
            .v
            .as_object()
            .ok_or_else(|| self.expected("an object"))?;
        match map.get(key) {
            Some(v) => Ok(Val {
                ctx: self.ctx,
                field: self.child_name(key),
                v,
            }),
            None => Err(self.ctx.field_err(&self.child_name(key), "missing")),
        }
    }
    /// The member `key`, or `None` when it is absent or null.
    pub fn opt(&self, key: &str) -> Result<Option<Val<'a>>> {
        let map = self
            .v
            .as_object()
            .ok_or_else(|| self.expected("an object"))?;
        Ok(match map.get(key) {
            None | Some(Value::Null) => None,
            Some(v) => Some(Val {
                ctx: self.ctx,
                field: self.child_name(key),
                v,
            }),
        })
    }
    /// This value as a string.
    pub fn str(&self) -> Result<&'a str> {
        self.v.as_str().ok_or_else(|| self.expected("a string"))
    }
    /// This value as an owned string.
    pub fn string(&self) -> Result<String> {
        self.str().map(str::to_string)
    }
    /// This value as a question's text: a string with something besides whitespace in it. An
    /// empty question would be embedded and scored as if it asked something.
    pub fn question(&self) -> Result<String> {
        let s = self.str()?;
        if s.trim().is_empty() {
            return Err(self.err("empty question text (only whitespace)"));
        }
        Ok(s.to_string())
    }
    /// This value as an id: a string, or an integer written as one.
    pub fn id(&self) -> Result<String> {
        match self.v {
            // a TREC run or qrels line needs a token in the id column
            Value::String(s) if s.is_empty() => Err(self.err("empty id")),
            Value::String(s) => Ok(s.clone()),
            Value::Number(n) if n.is_i64() || n.is_u64() => Ok(n.to_string()),
            _ => Err(self.expected("a string or integer id")),
        }
    }
    /// This value as a boolean.
    pub fn bool(&self) -> Result<bool> {
        self.v.as_bool().ok_or_else(|| self.expected("a boolean"))
    }
    /// This value as a non-negative integer.
    pub fn usize(&self) -> Result<usize> {
        self.v
            .as_u64()
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| self.expected("a non-negative integer"))
    }
    /// This value as a list, each element named `field[i]`.
    pub fn items(&self) -> Result<Vec<Val<'a>>> {
        let items = self.v.as_array().ok_or_else(|| self.expected("a list"))?;
        Ok(items
            .iter()
            .enumerate()
            .map(|(i, v)| Val {
                ctx: self.ctx,
                field: format!("{}[{i}]", self.field),
                v,
            })
            .collect())
    }
    /// This value as a list of strings.
    pub fn strings(&self) -> Result<Vec<String>> {
        self.items()?.iter().map(Val::string).collect()
    }
    /// This value as a list of exactly `n` elements (a tuple such as `[title, sentence_index]`).
    pub fn tuple(&self, n: usize) -> Result<Vec<Val<'a>>> {
        let items = self.items()?;
        if items.len() != n {
            return Err(self.err(format!(
                "expected a list of {n} elements, found {}",
                items.len()
            )));
        }
        Ok(items)
    }
}

/// Push `s` unless already present (gold lists and chain slots are small sets in first-seen order).
pub(crate) fn push_unique(list: &mut Vec<String>, s: String) {
    if !list.contains(&s) {
        list.push(s);
    }
}

/// Zero-padded decimal ids whose string order is their numeric order for `0..n`.
pub(crate) fn padded_ids(n: usize) -> impl Fn(usize) -> String {
    let width = n.saturating_sub(1).to_string().len().max(6);
    move |i| format!("{i:0width$}")
}

/// The corpus under construction: passages in insertion order, ids unique.
#[derive(Debug, Default)]
pub(crate) struct CorpusBuilder {
    passages: Vec<Passage>,
    index: HashMap<String, usize>,
}

/// The error of a corpus file (or a file whose records make the corpus) that holds no passage:
/// reported before any gold is resolved against it, so the message names the corpus, not the
/// first question whose gold it lacks.
pub(crate) fn no_passages(path: &Path) -> Error {
    Error::malformed(path, "corpus", "no passages (zero records)")
}

impl CorpusBuilder {
    /// [`no_passages`] when nothing was pushed.
    pub fn require_some(&self, path: &Path) -> Result<()> {
        if self.passages.is_empty() {
            return Err(no_passages(path));
        }
        Ok(())
    }

    /// Add a passage; a second passage with the same id is a [`Error::DuplicatePassage`] in `path`.
    pub fn push(&mut self, path: &Path, passage: Passage) -> Result<()> {
        if passage.id.is_empty() {
            // a TREC run line needs a token in the document column
            return Err(Error::malformed(
                path,
                "corpus",
                format!("a passage with an empty id (title {:?})", passage.title),
            ));
        }
        if self.index.contains_key(&passage.id) {
            return Err(Error::DuplicatePassage {
                path: path.to_path_buf(),
                id: passage.id,
            });
        }
        self.index.insert(passage.id.clone(), self.passages.len());
        self.passages.push(passage);
        Ok(())
    }
    /// Add a passage to a corpus that is a union of records: an identical repeat is skipped, a
    /// passage with the same id but different content is a [`Error::DuplicatePassage`].
    pub fn merge(&mut self, path: &Path, passage: Passage) -> Result<()> {
        match self.index.get(&passage.id) {
            Some(&i) if self.passages[i] == passage => Ok(()),
            Some(_) => Err(Error::DuplicatePassage {
                path: path.to_path_buf(),
                id: format!("{} (repeated with a different content)", passage.id),
            }),
            None => self.push(path, passage),
        }
    }
    /// Whether a passage has this id.
    pub fn contains(&self, id: &str) -> bool {
        self.index.contains_key(id)
    }
    /// The passages, in insertion order.
    pub fn finish(self) -> Vec<Passage> {
        self.passages
    }
}

/// Question ids must be unique: remembers the ids seen in one file.
#[derive(Debug, Default)]
pub(crate) struct SeenIds(HashMap<String, String>);

impl SeenIds {
    /// Record `id` (held in `field` of the record `ctx`); a repeat is a field error.
    pub fn check(&mut self, ctx: &Ctx<'_>, field: &str, id: &str) -> Result<()> {
        if id.is_empty() {
            // a TREC run or qrels line needs a token in the id column
            return Err(ctx.field_err(field, "empty id"));
        }
        let here = ctx.to_string();
        if let Some(first) = self.0.get(id) {
            return Err(ctx.field_err(
                field,
                format!("duplicate id {id:?} (first at record {first})"),
            ));
        }
        self.0.insert(id.to_string(), here);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::testutil::{assert_malformed_at, write};

    #[test]
    fn records_list_and_jsonl() {
        let dir = tempfile::tempdir().unwrap();
        let list = write(&dir, "a.json", "[{\"x\": 1}, {\"x\": 2}]");
        let r = read_records(&list).unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!(
            r[1].loc,
            Loc {
                index: 1,
                line: None
            }
        );
        let jsonl = write(&dir, "a.jsonl", "{\"x\": 1}\n\n{\"x\": 2}\n");
        let r = read_records(&jsonl).unwrap();
        assert_eq!(
            r[1].loc,
            Loc {
                index: 1,
                line: Some(3)
            }
        );
        let bad = write(&dir, "b.jsonl", "{\"x\": 1}\n{\"x\": \n");
        let e = read_records(&bad).unwrap_err();
        assert_malformed_at(&e, "JSONL line 2");
        // a lone object is a one-line JSONL file; trailing data after a list is malformed
        let obj = write(&dir, "c.json", "{\"x\": 1}");
        assert_eq!(read_records(&obj).unwrap().len(), 1);
        let scalar = write(&dir, "d.json", "[1] 2");
        assert!(matches!(
            read_records(&scalar),
            Err(Error::Malformed { .. })
        ));
        let missing = dir.path().join("nope.json");
        assert!(matches!(read_records(&missing), Err(Error::Io { .. })));
    }

    #[test]
    fn object_entries_keep_order_and_repeats() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(&dir, "o.json", "{\"b\": 1, \"a\": 2, \"b\": 3}");
        let e = read_object_entries(&p).unwrap();
        let keys: Vec<_> = e.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["b", "a", "b"]);
        let p = write(&dir, "l.json", "[1]");
        assert!(matches!(
            read_object_entries(&p),
            Err(Error::Malformed { .. })
        ));
    }

    #[test]
    fn field_errors_name_file_record_and_field() {
        let path = Path::new("q.jsonl");
        let v: Value = serde_json::json!({"id": "q1", "paragraphs": [{"title": 3}]});
        let mut ctx = Ctx::new(
            path,
            Loc {
                index: 4,
                line: Some(5),
            },
        );
        ctx.set_id("q1");
        let root = ctx.root(&v);
        let p = &root.get("paragraphs").unwrap().items().unwrap()[0];
        let e = p.get("title").unwrap().str().unwrap_err();
        assert_eq!(
            e.to_string(),
            "q.jsonl: record 4 (line 5, id \"q1\"): field `paragraphs[0].title`: expected a string, found a number"
        );
        let e = p.get("text").unwrap_err();
        assert!(
            e.to_string()
                .ends_with("field `paragraphs[0].text`: missing"),
            "{e}"
        );
        let e = root.get("id").unwrap().items().unwrap_err();
        assert!(e.to_string().contains("field `id`: expected a list"), "{e}");
    }

    #[test]
    fn padded_ids_sort_like_numbers() {
        let f = padded_ids(1890);
        assert_eq!(f(7), "000007");
        let f = padded_ids(12_345_678);
        assert_eq!(f(7), "00000007");
        assert!(f(9) < f(10));
    }

    #[test]
    fn corpus_builder_duplicates() {
        let p = |id: &str, text: &str| Passage {
            id: id.into(),
            doc: None,
            title: String::new(),
            text: text.into(),
            header: None,
        };
        let mut c = CorpusBuilder::default();
        c.push(Path::new("f"), p("a", "x")).unwrap();
        assert!(matches!(
            c.push(Path::new("f"), p("a", "x")),
            Err(Error::DuplicatePassage { .. })
        ));
        c.merge(Path::new("f"), p("a", "x")).unwrap();
        assert!(matches!(
            c.merge(Path::new("f"), p("a", "y")),
            Err(Error::DuplicatePassage { .. })
        ));
        assert_eq!(c.finish().len(), 1);
    }
}
