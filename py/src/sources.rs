//! A run or qrels handed over from Python (`("path", ...)`, `("dict", ...)`, `("columns", ...)`,
//! see `_native.pyi`), read as the harness's [`RunSource`] / [`QrelsSource`]: the evaluation
//! streams the Python objects directly, with no copy of the run and no temporary file, and
//! refuses a bad record with the message a file's would get, its place named (`$["q"]["d"]` in a
//! dict, `row 12` in columns).

use std::path::{Path, PathBuf};

use hopbench::analysis::eval::{QrelsFile, QrelsSource, RunFile, RunSource};
use hopbench_datasets::runfile::{self, At, Qrel, Record, RunFormat};
use hopbench_datasets::Error as DataError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple};

use crate::arrow::Column;
use crate::InputError;

/// A source as the Python layer gives it.
pub(crate) enum Given<'py> {
    /// A file.
    Path(PathBuf, Option<RunFormat>),
    /// `{query: {doc: value}}`.
    Dict(PathBuf, Bound<'py, PyDict>),
    /// Three equally long sequences: query ids, document ids, values.
    Columns(PathBuf, [Bound<'py, PyAny>; 3]),
    /// Three equally long Arrow columns.
    Arrow(PathBuf, Box<[Column; 3]>),
}

impl<'py> Given<'py> {
    /// Reads the tuple `given`; `what` (`run`, `qrels`) names it in messages.
    pub(crate) fn from_tuple(given: &Bound<'py, PyAny>, what: &str) -> PyResult<Self> {
        let bad = || {
            InputError::new_err(format!(
                "{what}: expected (\"path\", path, format), (\"dict\", mapping) or (\"columns\", \
                 query_ids, doc_ids, values)"
            ))
        };
        let t = given.cast::<PyTuple>().map_err(|_| bad())?;
        let kind: String = t.get_item(0).and_then(|k| k.extract()).map_err(|_| bad())?;
        // an optional last element names the source in messages
        let name = |at: usize, default: String| -> PyResult<PathBuf> {
            Ok(match t.get_item(at) {
                Ok(n) if !n.is_none() => PathBuf::from(n.extract::<String>()?),
                _ => PathBuf::from(default),
            })
        };
        match kind.as_str() {
            "path" if t.len() == 3 => {
                let path: PathBuf = t.get_item(1)?.extract()?;
                let format = match t.get_item(2)?.extract::<Option<String>>()?.as_deref() {
                    None => None,
                    Some("trec") => Some(RunFormat::Trec),
                    Some("json") => Some(RunFormat::Json),
                    Some("parquet") => Some(RunFormat::Parquet),
                    Some(other) => {
                        return Err(InputError::new_err(format!(
                            "{what}: format `{other}`: expected trec, json or parquet"
                        )))
                    }
                };
                Ok(Given::Path(path, format))
            }
            "dict" if (2..=3).contains(&t.len()) => {
                let dict = t.get_item(1)?.cast_into::<PyDict>().map_err(|_| {
                    InputError::new_err(format!("{what}: a dict source must be a dict"))
                })?;
                Ok(Given::Dict(name(2, format!("{what} (dict)"))?, dict))
            }
            "columns" if (4..=5).contains(&t.len()) => {
                let cols = [t.get_item(1)?, t.get_item(2)?, t.get_item(3)?];
                let lens: Vec<usize> = cols.iter().map(|c| c.len()).collect::<PyResult<_>>()?;
                if lens[0] != lens[1] || lens[0] != lens[2] {
                    return Err(InputError::new_err(format!(
                        "{what}: columns of different lengths ({}, {}, {})",
                        lens[0], lens[1], lens[2]
                    )));
                }
                Ok(Given::Columns(name(4, format!("{what} (columns)"))?, cols))
            }
            "arrow" if (4..=5).contains(&t.len()) => {
                let import = |i: usize| Column::import(&t.get_item(i)?, what);
                let cols = [import(1)?, import(2)?, import(3)?];
                let lens = cols.each_ref().map(Column::len);
                if lens[0] != lens[1] || lens[0] != lens[2] {
                    return Err(InputError::new_err(format!(
                        "{what}: columns of different lengths ({}, {}, {})",
                        lens[0], lens[1], lens[2]
                    )));
                }
                Ok(Given::Arrow(
                    name(4, format!("{what} (columns)"))?,
                    Box::new(cols),
                ))
            }
            _ => Err(bad()),
        }
    }

    /// The run this source holds.
    pub(crate) fn into_run(self) -> PyResult<PyRun<'py>> {
        Ok(match self {
            Given::Path(path, format) => {
                let format = match format.or_else(|| RunFormat::from_extension(&path)) {
                    Some(f) => f,
                    None => {
                        return Err(InputError::new_err(format!(
                            "{}: cannot tell the run's format from its extension: give \
                             run_format=\"trec\", \"json\" or \"parquet\"",
                            path.display()
                        )))
                    }
                };
                PyRun::File(RunFile { path, format })
            }
            Given::Dict(name, dict) => PyRun::Dict(name, dict),
            Given::Columns(name, cols) => PyRun::Columns(name, cols),
            Given::Arrow(name, cols) => PyRun::Arrow(name, cols),
        })
    }

    /// The judgements this source holds.
    pub(crate) fn into_qrels(self) -> PyResult<PyQrels<'py>> {
        Ok(match self {
            Given::Path(path, None) => PyQrels::File(QrelsFile(path)),
            Given::Path(path, Some(_)) => {
                return Err(InputError::new_err(format!(
                    "{}: qrels are TREC qrels: give no format",
                    path.display()
                )))
            }
            Given::Dict(name, dict) => PyQrels::Dict(name, dict),
            Given::Columns(name, cols) => PyQrels::Columns(name, cols),
            Given::Arrow(name, cols) => PyQrels::Arrow(name, cols),
        })
    }
}

/// A run from Python.
pub(crate) enum PyRun<'py> {
    File(RunFile),
    Dict(PathBuf, Bound<'py, PyDict>),
    Columns(PathBuf, [Bound<'py, PyAny>; 3]),
    Arrow(PathBuf, Box<[Column; 3]>),
}

/// Qrels from Python.
pub(crate) enum PyQrels<'py> {
    File(QrelsFile),
    Dict(PathBuf, Bound<'py, PyDict>),
    Columns(PathBuf, [Bound<'py, PyAny>; 3]),
    Arrow(PathBuf, Box<[Column; 3]>),
}

/// The text of an id, or the error naming its place: ids are `str`.
fn id_text<'a>(
    name: &Path,
    id: &'a Bound<'_, PyAny>,
    place: impl Fn() -> String,
    field: &str,
) -> Result<&'a str, DataError> {
    match id.cast::<PyString>() {
        Ok(s) => s
            .to_str()
            .map_err(|e| DataError::field(name, place(), field, format!("not valid text: {e}"))),
        Err(_) => Err(DataError::field(
            name,
            place(),
            field,
            format!("`{}` is of type {}, not str", repr(id), type_name(id)),
        )),
    }
}

fn repr(v: &Bound<'_, PyAny>) -> String {
    v.repr()
        .map(|r| r.to_string())
        .unwrap_or_else(|_| "?".into())
}

fn type_name(v: &Bound<'_, PyAny>) -> String {
    v.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into())
}

/// A run's score from Arrow: a finite number (`-0.0` read as `0.0`, as the file readers do).
fn finite(name: &Path, x: f64, place: impl Fn() -> String) -> Result<f64, DataError> {
    if x.is_finite() {
        Ok(x + 0.0)
    } else {
        // Python's spelling, as the list walk's message gives it
        let x = if x.is_nan() {
            "nan".to_string()
        } else {
            x.to_string()
        };
        Err(DataError::field(
            name,
            place(),
            "score",
            format!("`{x}` is not a finite number"),
        ))
    }
}

/// A run's score: a finite number (`-0.0` read as `0.0`, as the file readers do).
fn score(name: &Path, v: &Bound<'_, PyAny>, place: impl Fn() -> String) -> Result<f64, DataError> {
    match v.extract::<f64>() {
        Ok(x) if x.is_finite() && !v.is_instance_of::<pyo3::types::PyBool>() => Ok(x + 0.0),
        _ => Err(DataError::field(
            name,
            place(),
            "score",
            format!("`{}` is not a finite number", repr(v)),
        )),
    }
}

/// A judgement's grade: an integer.
fn grade(name: &Path, v: &Bound<'_, PyAny>, place: impl Fn() -> String) -> Result<i64, DataError> {
    match v.extract::<i64>() {
        Ok(g) if !v.is_instance_of::<pyo3::types::PyBool>() => Ok(g),
        _ => Err(DataError::field(
            name,
            place(),
            "rel",
            format!("`{}` is not an integer", repr(v)),
        )),
    }
}

/// The JSON-path place of a dict entry, as the JSON run reader names it.
fn dict_place(query: &Bound<'_, PyAny>, doc: Option<&Bound<'_, PyAny>>) -> String {
    let text = |v: &Bound<'_, PyAny>| match v.cast::<PyString>() {
        Ok(s) => s.to_string(),
        Err(_) => repr(v),
    };
    match doc {
        Some(d) => runfile::location(At::Json, &text(query), &text(d)),
        None => format!(
            "$[{}]",
            serde_json::to_string(&text(query)).expect("a string serialises")
        ),
    }
}

/// What a dict walk hands over per entry: the query and document ids, the value, and a way to
/// name the entry's place.
type DictEntry<'a> =
    dyn FnMut(&str, &str, &Bound<'_, PyAny>, &dyn Fn() -> String) -> Result<(), DataError> + 'a;

/// What a column walk hands over per row: its index, the ids, the value.
type ColumnRow<'a> = dyn FnMut(usize, &str, &str, &Bound<'_, PyAny>) -> Result<(), DataError> + 'a;

/// Walks `{query: {doc: value}}`, handing each entry to `each` with its place.
fn walk_dict(
    name: &Path,
    dict: &Bound<'_, PyDict>,
    each: &mut DictEntry<'_>,
) -> Result<(), DataError> {
    for (q, docs) in dict.iter() {
        let query = id_text(name, &q, || dict_place(&q, None), "qid")?;
        let docs = docs.cast::<PyDict>().map_err(|_| {
            DataError::field(
                name,
                dict_place(&q, None),
                "qid",
                format!(
                    "its value is of type {}, not a dict of documents",
                    type_name(&docs)
                ),
            )
        })?;
        for (d, v) in docs.iter() {
            let place = || dict_place(&q, Some(&d));
            let doc = id_text(name, &d, place, "docid")?;
            each(query, doc, &v, &place)?;
        }
    }
    Ok(())
}

/// Walks three columns in step, handing each row to `each` with its index.
fn walk_columns<'py>(
    name: &Path,
    cols: &[Bound<'py, PyAny>; 3],
    fields: (&str, &str),
    each: &mut ColumnRow<'_>,
) -> Result<(), DataError> {
    let iter = |c: &Bound<'py, PyAny>| -> Result<Bound<'py, pyo3::types::PyIterator>, DataError> {
        c.try_iter().map_err(|e| {
            DataError::malformed(name, "columns", format!("a column is not iterable: {e}"))
        })
    };
    let (qs, ds, vs) = (iter(&cols[0])?, iter(&cols[1])?, iter(&cols[2])?);
    for (row, ((q, d), v)) in qs.zip(ds).zip(vs).enumerate() {
        let place = || format!("row {row}");
        let broken = |e: PyErr| DataError::malformed(name, "columns", e.to_string());
        let (q, d, v) = (q.map_err(broken)?, d.map_err(broken)?, v.map_err(broken)?);
        let query = id_text(name, &q, place, fields.0)?;
        let doc = id_text(name, &d, place, fields.1)?;
        each(row, query, doc, &v)?;
    }
    Ok(())
}

impl RunSource for PyRun<'_> {
    fn name(&self) -> &Path {
        match self {
            PyRun::File(f) => f.name(),
            PyRun::Dict(n, _) | PyRun::Columns(n, _) | PyRun::Arrow(n, _) => n,
        }
    }

    fn format(&self) -> RunFormat {
        match self {
            PyRun::File(f) => f.format(),
            // their messages name places as these formats do: a JSON path, a row
            PyRun::Dict(..) => RunFormat::Json,
            PyRun::Columns(..) | PyRun::Arrow(..) => RunFormat::Parquet,
        }
    }

    fn read(
        &mut self,
        visit: &mut dyn FnMut(Record<'_>) -> Result<(), DataError>,
    ) -> Result<(), DataError> {
        match self {
            PyRun::File(f) => f.read(visit),
            PyRun::Dict(name, dict) => walk_dict(name, dict, &mut |query, doc, v, place| {
                let score = score(name, v, place)?;
                visit(Record {
                    query,
                    doc,
                    score,
                    at: At::Json,
                })
            }),
            PyRun::Columns(name, cols) => walk_columns(
                name,
                cols,
                ("query_id", "doc_id"),
                &mut |row, query, doc, v| {
                    let score = score(name, v, || format!("row {row}"))?;
                    visit(Record {
                        query,
                        doc,
                        score,
                        at: At::Row(row),
                    })
                },
            ),
            PyRun::Arrow(name, cols) => {
                crate::arrow::run_rows(name, cols, |row, query, doc, score| {
                    let score = finite(name, score, || format!("row {row}"))?;
                    visit(Record {
                        query,
                        doc,
                        score,
                        at: At::Row(row),
                    })
                })
            }
        }
    }
}

impl QrelsSource for PyQrels<'_> {
    fn name(&self) -> &Path {
        match self {
            PyQrels::File(f) => f.name(),
            PyQrels::Dict(n, _) | PyQrels::Columns(n, _) | PyQrels::Arrow(n, _) => n,
        }
    }

    fn read(
        &mut self,
        visit: &mut dyn FnMut(Qrel<'_>) -> Result<(), DataError>,
    ) -> Result<(), DataError> {
        match self {
            PyQrels::File(f) => f.read(visit),
            PyQrels::Dict(name, dict) => walk_dict(name, dict, &mut |query, doc, v, place| {
                let rel = grade(name, v, place)?;
                visit(Qrel {
                    at: At::Json,
                    query,
                    doc,
                    rel,
                })
            }),
            PyQrels::Columns(name, cols) => walk_columns(
                name,
                cols,
                ("query_id", "doc_id"),
                &mut |row, query, doc, v| {
                    let rel = grade(name, v, || format!("row {row}"))?;
                    visit(Qrel {
                        at: At::Row(row),
                        query,
                        doc,
                        rel,
                    })
                },
            ),
            PyQrels::Arrow(name, cols) => {
                let (qs, ds) = (
                    cols[0].strs(name, "query_id")?,
                    cols[1].strs(name, "doc_id")?,
                );
                let grades = cols[2].grades(name, "rel")?;
                for (row, ((query, doc), rel)) in qs.zip(ds).zip(grades).enumerate() {
                    visit(Qrel {
                        at: At::Row(row),
                        query,
                        doc,
                        rel: rel?,
                    })?;
                }
                Ok(())
            }
        }
    }
}
