//! Run files and TREC qrels: a retrieval system's ranked output per query, and the relevance
//! judgements it is scored against, in the formats trec_eval, ranx and ir_measures use. The
//! `run` leg reads runs through this module, and so does `hopbench eval`, so both accept exactly
//! the same files and report the same errors.
//!
//! Run formats ([`RunFormat`]):
//!
//! - **TREC**: `qid Q0 docid rank score tag`, one retrieved document per line, separated by any
//!   white space; blank lines are skipped. `rank` must be an integer and is otherwise ignored: a
//!   run is ordered by `score`, as trec_eval orders it.
//! - **JSON** (ranx, ir_measures): `{"qid": {"docid": score, ...}, ...}`.
//! - **parquet**: columns `query_id` and `doc_id` (utf8) and `score` (float64 or float32);
//!   other columns are ignored.
//!
//! The readers check the syntax (column counts, numbers, finiteness, UTF-8) and stream each
//! record to a visitor with where it came from ([`At`]), without holding the file in memory. The
//! caller checks the meaning (known query and document ids, duplicates) and names the same
//! place in its error ([`Record::location`]), so a message always says where to look: the line,
//! the JSON path, or the parquet row.
//!
//! TREC files cannot hold white space in an id, so hopbench writes ids percent-encoded (`%` and
//! white space only; see the harness's `trec.rs`); [`decode_id`] undoes it.

use std::io::{BufReader, Read};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{utf8_error_position, Error, Result};

mod fields;
use fields::{parse_f64, parse_i64};

/// The format of a run file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunFormat {
    /// `qid Q0 docid rank score tag` lines.
    Trec,
    /// `{qid: {docid: score}}`.
    Json,
    /// Columns `query_id`, `doc_id`, `score`.
    Parquet,
}

impl RunFormat {
    /// The format a file's extension names: `.trec`, `.txt` and `.run` are TREC, `.json` is
    /// JSON, `.parquet` is parquet; `None` for anything else.
    pub fn from_extension(path: &Path) -> Option<RunFormat> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "trec" | "txt" | "run" => Some(RunFormat::Trec),
            "json" => Some(RunFormat::Json),
            "parquet" => Some(RunFormat::Parquet),
            _ => None,
        }
    }

    /// Its name in campaigns and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            RunFormat::Trec => "trec",
            RunFormat::Json => "json",
            RunFormat::Parquet => "parquet",
        }
    }

    /// The names of the query and document id fields, as errors name them.
    pub fn id_fields(self) -> (&'static str, &'static str) {
        match self {
            RunFormat::Trec | RunFormat::Json => ("qid", "docid"),
            RunFormat::Parquet => ("query_id", "doc_id"),
        }
    }
}

/// Where a record of a run file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum At {
    /// A TREC line (1-based).
    Line(usize),
    /// A JSON entry: its place is the path of its query and document ids.
    Json,
    /// A parquet row (0-based, as the other parquet errors count rows).
    Row(usize),
}

/// One record of a run: a document retrieved for a query, with its score.
#[derive(Debug, Clone, Copy)]
pub struct Record<'a> {
    /// The query id, as written.
    pub query: &'a str,
    /// The document id, as written.
    pub doc: &'a str,
    /// The score: finite, and `-0.0` is read as `0.0` (the two are one tie).
    pub score: f64,
    /// Where it is.
    pub at: At,
}

impl Record<'_> {
    /// Its place, for messages: `line 12`, `row 7` or the JSON path `$["q1"]["d7"]`.
    pub fn location(&self) -> String {
        location(self.at, self.query, self.doc)
    }
}

/// The place of a record (see [`Record::location`]) given its ids.
pub fn location(at: At, query: &str, doc: &str) -> String {
    match at {
        At::Line(n) => format!("line {n}"),
        At::Row(n) => format!("row {n}"),
        At::Json => format!(
            "$[{}][{}]",
            serde_json::to_string(query).expect("a string serialises"),
            serde_json::to_string(doc).expect("a string serialises")
        ),
    }
}

/// Reads the run file `path` in `format`, handing every record to `visit` in file order. The
/// first error (the reader's or the visitor's) stops the read and is returned.
pub fn read_run(
    path: &Path,
    format: RunFormat,
    visit: &mut dyn FnMut(Record<'_>) -> Result<()>,
) -> Result<()> {
    match format {
        RunFormat::Trec => read_trec(path, visit),
        RunFormat::Json => read_json(path, visit),
        RunFormat::Parquet => read_parquet(path, visit),
    }
}

/// A finite score, with `-0.0` folded into `0.0`.
fn finite(score: f64) -> Option<f64> {
    // adding 0.0 turns -0.0 into 0.0 and leaves every other value alone
    score.is_finite().then_some(score + 0.0)
}

/// Bytes read per step of the line readers (lines never straddle a step's end).
const STEP: u64 = 256 << 10;

/// What [`read_rows`] hands over per line: its number, its first `N` columns, its column count.
type RowVisitor<'a, const N: usize> = dyn FnMut(usize, &[&str; N], usize) -> Result<()> + 'a;

/// Calls `each(line number, columns, count)` for every line of `path` (see
/// [`fields::for_each_row`]: its first `N` white-space separated columns and how many it has),
/// reading it in steps of [`STEP`] bytes and checking UTF-8 a step at a time. `what` names the
/// format in errors.
fn read_rows<const N: usize>(path: &Path, what: &str, each: &mut RowVisitor<'_, N>) -> Result<()> {
    let mut file = crate::presence::open_file(path)?;
    let mut buf: Vec<u8> = Vec::new();
    let mut line = 0usize;
    let mut first = true;
    loop {
        let n = (&mut file)
            .take(STEP)
            .read_to_end(&mut buf)
            .map_err(|e| Error::io(path, e))?;
        let eof = n == 0;
        // the bytes up to the last newline hold whole lines; at the end of the file, all of them
        let end = if eof {
            buf.len()
        } else {
            match buf.iter().rposition(|&b| b == b'\n') {
                Some(i) => i + 1,
                None => continue,
            }
        };
        let text = std::str::from_utf8(&buf[..end]).map_err(|e| {
            let (l, column) = utf8_error_position(&buf[..end], e);
            Error::malformed(
                path,
                format!("{what} line {}", line + l),
                format!("not UTF-8: invalid byte at column {column}"),
            )
        })?;
        let text = if std::mem::take(&mut first) {
            text.strip_prefix('\u{feff}').unwrap_or(text)
        } else {
            text
        };
        line += fields::for_each_row(text, |i, cols, count| each(line + i + 1, cols, count))?;
        buf.drain(..end);
        if eof {
            return Ok(());
        }
    }
}

fn read_trec(path: &Path, visit: &mut dyn FnMut(Record<'_>) -> Result<()>) -> Result<()> {
    read_rows::<6>(path, "TREC run", &mut |n, c, found| {
        if found == 0 {
            return Ok(());
        }
        if found != 6 {
            return Err(Error::malformed(
                path,
                format!("TREC run line {n}"),
                format!("expected 6 columns (qid Q0 docid rank score tag), found {found}"),
            ));
        }
        if parse_i64(c[3]).is_none() {
            return Err(Error::field(
                path,
                format!("line {n}"),
                "rank",
                format!("`{}` is not an integer", c[3]),
            ));
        }
        let score = parse_f64(c[4]).and_then(finite).ok_or_else(|| {
            Error::field(
                path,
                format!("line {n}"),
                "score",
                format!("`{}` is not a finite number", c[4]),
            )
        })?;
        visit(Record {
            query: c[0],
            doc: c[2],
            score,
            at: At::Line(n),
        })
    })
}

/// A key of a JSON run written twice: query `query`, or its document `doc`.
fn duplicate_key(path: &Path, query: &str, doc: Option<&str>) -> Error {
    let what = match doc {
        None => format!("query `{query}` is a key twice"),
        Some(doc) => format!("document `{doc}` is a key twice in query `{query}`"),
    };
    Error::malformed(
        path,
        "JSON run",
        format!("{what} (a JSON reader would keep only the last; write each key once)"),
    )
}

fn read_json(path: &Path, visit: &mut dyn FnMut(Record<'_>) -> Result<()>) -> Result<()> {
    use serde::de::{DeserializeSeed, Deserializer, Error as _, MapAccess, Visitor};
    use std::fmt;

    /// The visitor's own error, kept aside while serde unwinds (its error type is serde_json's).
    type Stash = Option<Error>;

    struct Top<'v, 'f> {
        path: &'f Path,
        visit: &'v mut dyn FnMut(Record<'_>) -> Result<()>,
        stash: &'f mut Stash,
    }
    struct Inner<'v, 'f, 'q> {
        path: &'f Path,
        query: &'q str,
        visit: &'v mut dyn FnMut(Record<'_>) -> Result<()>,
        stash: &'f mut Stash,
    }

    impl<'de> Visitor<'de> for Top<'_, '_> {
        type Value = ();
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an object {qid: {docid: score}}")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            // JSON parsers keep the last of two equal keys (or merge them): a query written
            // twice is refused, as a TREC line written twice is
            let mut seen = std::collections::HashSet::new();
            while let Some(query) = map.next_key::<String>()? {
                if !seen.insert(query.clone()) {
                    *self.stash = Some(duplicate_key(self.path, &query, None));
                    return Err(A::Error::custom("stopped"));
                }
                map.next_value_seed(Inner {
                    path: self.path,
                    query: &query,
                    visit: &mut *self.visit,
                    stash: &mut *self.stash,
                })?;
            }
            Ok(())
        }
    }
    impl<'de> DeserializeSeed<'de> for Top<'_, '_> {
        type Value = ();
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
            d.deserialize_map(self)
        }
    }
    impl<'de> Visitor<'de> for Inner<'_, '_, '_> {
        type Value = ();
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "an object {{docid: score}} for query {:?}", self.query)
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            let mut seen = std::collections::HashSet::new();
            while let Some(doc) = map.next_key::<String>()? {
                if seen.contains(&doc) {
                    *self.stash = Some(duplicate_key(self.path, self.query, Some(&doc)));
                    return Err(A::Error::custom("stopped"));
                }
                let raw: f64 = map.next_value()?;
                let record = Record {
                    query: self.query,
                    doc: &doc,
                    score: raw,
                    at: At::Json,
                };
                let Some(score) = finite(raw) else {
                    *self.stash = Some(Error::field(
                        self.path,
                        record.location(),
                        "score",
                        format!("{raw} is not a finite number"),
                    ));
                    return Err(A::Error::custom("stopped"));
                };
                if let Err(e) = (self.visit)(Record { score, ..record }) {
                    *self.stash = Some(e);
                    return Err(A::Error::custom("stopped"));
                }
                seen.insert(doc);
            }
            Ok(())
        }
    }
    impl<'de> DeserializeSeed<'de> for Inner<'_, '_, '_> {
        type Value = ();
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
            d.deserialize_map(self)
        }
    }

    let file = crate::presence::open_file(path)?;
    let mut de = serde_json::Deserializer::from_reader(BufReader::with_capacity(1 << 20, file));
    let mut stash: Stash = None;
    let parsed = Top {
        path,
        visit,
        stash: &mut stash,
    }
    .deserialize(&mut de)
    .and_then(|()| de.end());
    match (stash, parsed) {
        (Some(e), _) => Err(e),
        (None, Err(e)) => Err(Error::malformed(path, "JSON run", e)),
        (None, Ok(())) => Ok(()),
    }
}

fn read_parquet(path: &Path, visit: &mut dyn FnMut(Record<'_>) -> Result<()>) -> Result<()> {
    use arrow_array::{Array, Float32Array, Float64Array, StringArray};
    let mut row = 0usize;
    crate::parquet_io::for_each_batch(path, &mut |batch| {
        let cols = crate::parquet_io::Columns { path, batch };
        let queries: &StringArray = cols.typed("query_id", "utf8")?;
        let docs: &StringArray = cols.typed("doc_id", "utf8")?;
        let scores: Vec<Option<f64>> = match cols.typed::<Float64Array>("score", "float64") {
            Ok(a) => a.iter().collect(),
            Err(_) => cols
                .typed::<Float32Array>("score", "float64 or float32")?
                .iter()
                .map(|s| s.map(f64::from))
                .collect(),
        };
        for (i, raw) in scores.into_iter().enumerate() {
            let at = row + i;
            for (name, a) in [("query_id", queries), ("doc_id", docs)] {
                if a.is_null(i) {
                    return Err(Error::field(path, format!("row {at}"), name, "is null"));
                }
            }
            let score = raw.and_then(finite).ok_or_else(|| {
                Error::field(
                    path,
                    format!("row {at}"),
                    "score",
                    match raw {
                        None => "is null".to_string(),
                        Some(v) => format!("{v} is not a finite number"),
                    },
                )
            })?;
            visit(Record {
                query: queries.value(i),
                doc: docs.value(i),
                score,
                at: At::Row(at),
            })?;
        }
        row += batch.num_rows();
        Ok(())
    })
}

/// One line of a TREC qrels file, borrowed from the reader's buffer.
#[derive(Debug, Clone, Copy)]
pub struct Qrel<'a> {
    /// Where it is (a file's line; other sources name their own places).
    pub at: At,
    /// Query id, as written.
    pub query: &'a str,
    /// Document id, as written.
    pub doc: &'a str,
    /// Relevance grade.
    pub rel: i64,
}

/// Reads a TREC qrels file (`qid iter docid rel`, white-space separated, blank lines skipped),
/// handing each judgement to `visit` in file order, without holding the file. A line with
/// another column count or a `rel` that is not an integer is an error naming the line; the
/// first error (the reader's or the visitor's) stops the read.
pub fn for_each_qrel(path: &Path, visit: &mut dyn FnMut(Qrel<'_>) -> Result<()>) -> Result<()> {
    read_rows::<4>(path, "TREC qrels", &mut |n, cols, found| {
        if found == 0 {
            return Ok(());
        }
        if found != 4 {
            return Err(Error::malformed(
                path,
                format!("TREC qrels line {n}"),
                format!("expected 4 columns (qid iter docid rel), found {found}"),
            ));
        }
        let rel = parse_i64(cols[3]).ok_or_else(|| {
            Error::field(
                path,
                format!("line {n}"),
                "rel",
                format!("`{}` is not an integer", cols[3]),
            )
        })?;
        visit(Qrel {
            at: At::Line(n),
            query: cols[0],
            doc: cols[2],
            rel,
        })
    })
}

/// Undoes hopbench's TREC percent-encoding: `%XX` becomes byte `XX`. `None` when `id` holds no
/// escape, or the decoded bytes are not UTF-8 (then it was not written by hopbench).
pub fn decode_id(id: &str) -> Option<String> {
    if !id.contains('%') {
        return None;
    }
    let b = id.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    let mut decoded = false;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
        match (
            b[i],
            b.get(i + 1).copied().and_then(hex),
            b.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(h), Some(l)) => {
                out.push(h << 4 | l);
                i += 3;
                decoded = true;
            }
            (c, _, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    decoded.then(|| String::from_utf8(out).ok()).flatten()
}

/// The blake3 of a file's bytes (hex), read in steps, never whole.
pub fn hash_file(path: &Path) -> Result<String> {
    let mut file = crate::presence::open_file(path)?;
    let mut h = blake3::Hasher::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf).map_err(|e| Error::io(path, e))?;
        if n == 0 {
            return Ok(h.finalize().to_hex().to_string());
        }
        h.update(&buf[..n]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(path: &Path, format: RunFormat) -> Result<Vec<(String, String, f64, String)>> {
        let mut out = Vec::new();
        read_run(path, format, &mut |r| {
            out.push((r.query.into(), r.doc.into(), r.score, r.location()));
            Ok(())
        })?;
        Ok(out)
    }

    fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn formats_come_from_extensions() {
        for (name, want) in [
            ("a.trec", Some(RunFormat::Trec)),
            ("a.TXT", Some(RunFormat::Trec)),
            ("a.run", Some(RunFormat::Trec)),
            ("a.json", Some(RunFormat::Json)),
            ("a.parquet", Some(RunFormat::Parquet)),
            ("a.tsv", None),
            ("a", None),
        ] {
            assert_eq!(RunFormat::from_extension(Path::new(name)), want, "{name}");
        }
    }

    #[test]
    fn the_three_formats_read_the_same_records() {
        let dir = tempfile::tempdir().unwrap();
        let trec = write(
            dir.path(),
            "r.trec",
            "\u{feff}q1 Q0 d1 1 2.5 t\n\nq1\tQ0 d2 2 -0 t\r\nq2 Q0 d1 1 1e-3 t",
        );
        let json = write(
            dir.path(),
            "r.json",
            r#"{"q1": {"d1": 2.5, "d2": -0.0}, "q2": {"d1": 0.001}}"#,
        );
        let parquet = dir.path().join("r.parquet");
        crate::parquet_io::write(
            &parquet,
            vec![
                ("query_id", crate::parquet_io::strings(&["q1", "q1", "q2"])),
                ("doc_id", crate::parquet_io::strings(&["d1", "d2", "d1"])),
                ("score", crate::parquet_io::f64s(&[2.5, -0.0, 0.001])),
                ("extra", crate::parquet_io::u32s(&[1, 2, 3])),
            ],
        )
        .unwrap();
        let ids = |v: Vec<(String, String, f64, String)>| -> Vec<(String, String, u64)> {
            v.into_iter()
                .map(|(q, d, s, _)| (q, d, s.to_bits()))
                .collect()
        };
        let t = collect(&trec, RunFormat::Trec).unwrap();
        assert_eq!(
            t.iter().map(|r| r.3.as_str()).collect::<Vec<_>>(),
            ["line 1", "line 3", "line 4"]
        );
        // -0 is read as 0 (one tie with 0), so the bits agree across formats
        assert_eq!(t[1].2.to_bits(), 0.0f64.to_bits());
        let j = collect(&json, RunFormat::Json).unwrap();
        assert_eq!(j[1].3, r#"$["q1"]["d2"]"#);
        let p = collect(&parquet, RunFormat::Parquet).unwrap();
        assert_eq!(p[2].3, "row 2");
        assert_eq!(ids(t.clone()), ids(j));
        assert_eq!(ids(t), ids(p));
    }

    #[test]
    fn syntax_errors_name_the_file_and_the_place() {
        let dir = tempfile::tempdir().unwrap();
        let cases: &[(&str, &str, RunFormat, &[&str])] = &[
            (
                "a.trec",
                "q Q0 d 1 1 t\nq Q0 d 1 t\n",
                RunFormat::Trec,
                &["line 2", "6 columns", "found 5"],
            ),
            (
                "b.trec",
                "q Q0 d 1 1 t x\n",
                RunFormat::Trec,
                &["line 1", "found 7"],
            ),
            (
                "c.trec",
                "q Q0 d one 1 t\n",
                RunFormat::Trec,
                &["line 1", "`rank`", "not an integer"],
            ),
            (
                "d.trec",
                "q Q0 d 1 1 t\nq Q0 e 2 NaN t\n",
                RunFormat::Trec,
                &["line 2", "`score`", "not a finite"],
            ),
            (
                "e.trec",
                "q Q0 d 1 inf t\n",
                RunFormat::Trec,
                &["line 1", "not a finite"],
            ),
            (
                "f.trec",
                "q Q0 d 1 high t\n",
                RunFormat::Trec,
                &["line 1", "`high`"],
            ),
            (
                "g.json",
                "{\"q\": {\"d\": 1,}}",
                RunFormat::Json,
                &["JSON", "line 1"],
            ),
            (
                "h.json",
                "{\"q\": {\"d\": \"x\"}}",
                RunFormat::Json,
                &["JSON", "line 1"],
            ),
            (
                "i.json",
                "{\"q\": [1]}",
                RunFormat::Json,
                &["JSON", "docid: score"],
            ),
            (
                "j.json",
                "{\"q\": {\"d\": 1e999}}",
                RunFormat::Json,
                &["JSON"],
            ),
            ("k.json", "{} x", RunFormat::Json, &["JSON", "trailing"]),
        ];
        for (name, text, format, needles) in cases {
            let p = write(dir.path(), name, text);
            let e = collect(&p, *format).unwrap_err().to_string();
            assert!(e.contains(name), "{name}: {e}");
            for n in *needles {
                assert!(e.contains(n), "{name}: {e} lacks {n}");
            }
        }
        let bad = dir.path().join("bad.trec");
        std::fs::write(&bad, b"q Q0 d 1 1 t\nq Q0 \xff 1 1 t\n").unwrap();
        let e = collect(&bad, RunFormat::Trec).unwrap_err().to_string();
        assert!(e.contains("line 2") && e.contains("UTF-8"), "{e}");
    }

    #[test]
    fn parquet_runs_as_pandas_and_polars_write_them_are_read() {
        // large_string ids (pandas, pyarrow) and snappy compression (every writer's default)
        use arrow_array::{ArrayRef, Float64Array, LargeStringArray, RecordBatch};
        use parquet::basic::Compression;
        use parquet::file::properties::WriterProperties;
        use std::sync::Arc;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("pandas.parquet");
        let q: ArrayRef = Arc::new(LargeStringArray::from(vec!["q1", "q1", "q2"]));
        let d: ArrayRef = Arc::new(LargeStringArray::from(vec!["a", "b", "c"]));
        let s: ArrayRef = Arc::new(Float64Array::from(vec![2.0, 1.5, 0.25]));
        let batch =
            RecordBatch::try_from_iter(vec![("query_id", q), ("doc_id", d), ("score", s)]).unwrap();
        let props = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .build();
        let mut w = parquet::arrow::ArrowWriter::try_new(
            std::fs::File::create(&p).unwrap(),
            batch.schema(),
            Some(props),
        )
        .unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        let got: Vec<(String, String, f64)> = collect(&p, RunFormat::Parquet)
            .unwrap()
            .into_iter()
            .map(|(q, d, s, _)| (q, d, s))
            .collect();
        assert_eq!(
            got,
            vec![
                ("q1".into(), "a".into(), 2.0),
                ("q1".into(), "b".into(), 1.5),
                ("q2".into(), "c".into(), 0.25)
            ]
        );
    }

    #[test]
    fn parquet_nulls_and_types_name_the_row_and_column() {
        use arrow_array::{ArrayRef, Float64Array, StringArray};
        use std::sync::Arc;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("n.parquet");
        let q: ArrayRef = Arc::new(StringArray::from(vec![Some("q"), Some("q")]));
        let d: ArrayRef = Arc::new(StringArray::from(vec![Some("a"), None]));
        let s: ArrayRef = Arc::new(Float64Array::from(vec![1.0, 2.0]));
        crate::parquet_io::write(
            &p,
            vec![("query_id", q.clone()), ("doc_id", d), ("score", s)],
        )
        .unwrap();
        let e = collect(&p, RunFormat::Parquet).unwrap_err().to_string();
        assert!(
            e.contains("row 1") && e.contains("doc_id") && e.contains("null"),
            "{e}"
        );
        let d: ArrayRef = Arc::new(StringArray::from(vec!["a", "b"]));
        let s: ArrayRef = Arc::new(Float64Array::from(vec![1.0, f64::INFINITY]));
        crate::parquet_io::write(
            &p,
            vec![("query_id", q.clone()), ("doc_id", d.clone()), ("score", s)],
        )
        .unwrap();
        let e = collect(&p, RunFormat::Parquet).unwrap_err().to_string();
        assert!(
            e.contains("row 1") && e.contains("score") && e.contains("finite"),
            "{e}"
        );
        crate::parquet_io::write(
            &p,
            vec![("query_id", q), ("doc_id", d.clone()), ("score", d)],
        )
        .unwrap();
        let e = collect(&p, RunFormat::Parquet).unwrap_err().to_string();
        assert!(
            e.contains("score") && e.contains("float64 or float32"),
            "{e}"
        );
    }

    #[test]
    fn a_json_key_written_twice_is_refused_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        for (text, says) in [
            (
                r#"{"q1": {"d1": 1}, "q2": {"d2": 2}, "q1": {"d3": 3}}"#,
                "query `q1` is a key twice",
            ),
            (
                r#"{"q1": {"d1": 1, "d2": 2, "d1": 3}}"#,
                "document `d1` is a key twice in query `q1`",
            ),
        ] {
            let p = write(dir.path(), "dup.json", text);
            let e = collect(&p, RunFormat::Json).unwrap_err().to_string();
            assert!(e.contains("dup.json") && e.contains(says), "{e}");
        }
        // the same document under two queries is not a repeat
        let p = write(
            dir.path(),
            "ok.json",
            r#"{"q1": {"d1": 1}, "q2": {"d1": 2}}"#,
        );
        assert_eq!(collect(&p, RunFormat::Json).unwrap().len(), 2);
    }

    #[test]
    fn a_visitor_error_stops_the_read_and_keeps_its_place() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            dir.path(),
            "r.json",
            r#"{"q1": {"d1": 1}, "q2": {"d2": 2, "d3": 3}}"#,
        );
        let mut seen = 0;
        let e = read_run(&p, RunFormat::Json, &mut |r| {
            seen += 1;
            if r.doc == "d2" {
                return Err(Error::field(p.clone(), r.location(), "docid", "unknown"));
            }
            Ok(())
        })
        .unwrap_err()
        .to_string();
        assert_eq!(seen, 2);
        assert!(
            e.contains("r.json") && e.contains(r#"$["q2"]["d2"]"#),
            "{e}"
        );
    }

    #[test]
    fn long_files_are_read_in_steps_with_the_right_line_numbers() {
        let dir = tempfile::tempdir().unwrap();
        // more than one step, with a malformed last line
        let line = "query-0000 Q0 document-00000000 1 1.5 tag-tag-tag\n";
        let n = (STEP as usize / line.len()) * 2 + 5;
        let mut text = line.repeat(n);
        text.push_str("q Q0 d 1\n");
        let p = write(dir.path(), "big.trec", &text);
        let mut count = 0usize;
        let e = read_run(&p, RunFormat::Trec, &mut |_| {
            count += 1;
            Ok(())
        })
        .unwrap_err()
        .to_string();
        assert_eq!(count, n);
        assert!(e.contains(&format!("line {}", n + 1)), "{e}");
    }

    #[test]
    fn qrels_read_and_errors() {
        fn read_qrels(path: &Path) -> Result<Vec<(At, String, String, i64)>> {
            let mut out = Vec::new();
            for_each_qrel(path, &mut |j| {
                out.push((j.at, j.query.to_string(), j.doc.to_string(), j.rel));
                Ok(())
            })?;
            Ok(out)
        }
        let dir = tempfile::tempdir().unwrap();
        let p = write(dir.path(), "q.txt", "q1 0 d1 1\n\nq1 0 d2 0\nq2 0 d3 -1\n");
        let j = read_qrels(&p).unwrap();
        assert_eq!(j.len(), 3);
        assert_eq!((j[2].0, j[2].3, j[2].2.as_str()), (At::Line(4), -1, "d3"));
        let p = write(dir.path(), "b.txt", "q1 0 d1 1\nq1 d2 1\n");
        let e = read_qrels(&p).unwrap_err().to_string();
        assert!(
            e.contains("b.txt") && e.contains("line 2") && e.contains("4 columns"),
            "{e}"
        );
        let p = write(dir.path(), "c.txt", "q1 0 d1 yes\n");
        let e = read_qrels(&p).unwrap_err().to_string();
        assert!(e.contains("line 1") && e.contains("`rel`"), "{e}");
    }

    #[test]
    fn percent_decoding_inverts_the_harness_encoding() {
        assert_eq!(
            decode_id("Lilu%20(mythology)").as_deref(),
            Some("Lilu (mythology)")
        );
        assert_eq!(decode_id("50%25%09x").as_deref(), Some("50%\tx"));
        assert_eq!(decode_id("Caf%C3%A9").as_deref(), Some("Café"));
        assert_eq!(decode_id("plain"), None);
        assert_eq!(decode_id("100%"), None);
        assert_eq!(decode_id("%ff"), None);
    }

    #[test]
    fn file_hashes_follow_the_content() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(dir.path(), "a", "one");
        let h = hash_file(&p).unwrap();
        assert_eq!(h, blake3::hash(b"one").to_hex().to_string());
        std::fs::write(&p, "two").unwrap();
        assert_ne!(hash_file(&p).unwrap(), h);
    }
}
