//! A dict run (`{query: {doc: score}}`, pytrec_eval's and ranx's shape) scored in place, and
//! dict qrels read in place: the entries are read where Python keeps them, with no copy of a
//! run's ids and no hash of our own.
//!
//! Reading a dict as records ([`crate::sources`]) copies each document id, hashes it to find a
//! pair listed twice and sorts each query; for ten million entries that was most of
//! `hopbench.evaluate`'s time. A dict cannot list a document twice (its keys are unique), runs
//! are written best first (so a query whose scores strictly fall needs no sort), and a judged
//! document is found by a lookup in the query's own dict, through the hash its `str` already
//! holds (the qrels' own `str` when they are a dict too, made once per judgement otherwise).
//! What is scored is scored by the harness's [`Scorer`], the code `hopbench eval` runs.
//!
//! Only the plain case is taken here: `str` ids, `dict` queries, `float` scores (subclasses
//! such as numpy's `float64` included), every score finite, every query judged (or dropped with
//! `drop_unknown`); `int` grades. Anything else gives up before it is scored, and the caller
//! reads the dict as records instead, which gives every message and every other value its
//! usual way; nothing here calls back into Python code, so giving up leaves nothing changed.

use std::path::Path;

use hopbench::analysis::eval::{self, Evaluated, Qrels, QrelsQuery, Rules, Scorer};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

/// One query's entries, kept between queries.
#[derive(Default)]
struct Entries<'a> {
    /// Each document id's UTF-8 text, held by its `str`.
    docs: Vec<&'a str>,
    scores: Vec<f64>,
    order: Vec<u32>,
    judged_at: Vec<u32>,
}

/// The UTF-8 text of `s` if it is exactly a `str` (a subclass may compare or hash unlike its
/// text) and encodes (a lone surrogate does not).
///
/// # Safety
/// `s` is a live object, the GIL held; the text lives as long as `s`.
unsafe fn exact_str<'a>(s: *mut ffi::PyObject) -> Option<&'a str> {
    if ffi::PyUnicode_CheckExact(s) == 0 {
        return None;
    }
    let mut len: ffi::Py_ssize_t = 0;
    let p = ffi::PyUnicode_AsUTF8AndSize(s, &mut len);
    if p.is_null() {
        ffi::PyErr_Clear();
        return None;
    }
    // PyUnicode_AsUTF8AndSize returns valid UTF-8 (the string's own cached encoding)
    Some(std::str::from_utf8_unchecked(std::slice::from_raw_parts(
        p.cast::<u8>(),
        len as usize,
    )))
}

/// A finite `float` score (`-0.0` read as `0.0`, as every reader does), or `None`.
///
/// # Safety
/// `v` is a live object, the GIL held.
unsafe fn float_score(v: *mut ffi::PyObject) -> Option<f64> {
    // a float or a subclass: PyFloat_AsDouble reads its value without calling Python code
    if ffi::PyFloat_Check(v) == 0 {
        return None;
    }
    let x = ffi::PyFloat_AsDouble(v);
    x.is_finite().then_some(x + 0.0)
}

/// Reads `docs`'s entries into `e`; `None` where an entry is not of the plain case.
///
/// # Safety
/// `docs` is a live dict, the GIL held; nothing mutates it while `e` holds its texts.
unsafe fn read_entries<'a>(docs: *mut ffi::PyObject, e: &mut Entries<'a>) -> Option<()> {
    e.docs.clear();
    e.scores.clear();
    let mut pos: ffi::Py_ssize_t = 0;
    let (mut d, mut v) = (std::ptr::null_mut(), std::ptr::null_mut());
    while ffi::PyDict_Next(docs, &mut pos, &mut d, &mut v) != 0 {
        e.docs.push(exact_str(d)?);
        e.scores.push(float_score(v)?);
    }
    Some(())
}

/// Each judged document's own `str`, per query and judgement in [`Qrels::queries`]' order.
pub(crate) type JudgedKeys<'py> = Vec<Vec<Bound<'py, PyAny>>>;

/// An exact `int` grade, or `None` (a bool, another type, or one beyond 64 bits).
///
/// # Safety
/// `v` is a live object, the GIL held.
unsafe fn int_grade(v: *mut ffi::PyObject) -> Option<i64> {
    if ffi::PyLong_CheckExact(v) == 0 {
        return None;
    }
    let g = ffi::PyLong_AsLongLong(v);
    if g == -1 && !ffi::PyErr_Occurred().is_null() {
        ffi::PyErr_Clear();
        return None;
    }
    Some(g)
}

/// Reads the dict `qrels` (`{query: {doc: grade}}`) named `name` as [`Qrels::from_source`]
/// would, keeping each judged document's `str` for the run's lookups; `None` where it is not
/// of the plain case.
pub(crate) fn read_qrels<'py>(
    name: &Path,
    qrels: &Bound<'py, PyDict>,
) -> Option<(Qrels, JudgedKeys<'py>)> {
    let py = qrels.py();
    let mut queries = Vec::new();
    let mut keys = Vec::new();
    let mut judged: Vec<(&str, i64, *mut ffi::PyObject)> = Vec::new();
    let mut pos: ffi::Py_ssize_t = 0;
    let (mut q, mut docs) = (std::ptr::null_mut(), std::ptr::null_mut());
    // SAFETY: the GIL is held (`py`); the dicts are live and not mutated (nothing here runs
    // Python code); each kept key is a new strong reference.
    unsafe {
        while ffi::PyDict_Next(qrels.as_ptr(), &mut pos, &mut q, &mut docs) != 0 {
            let query = exact_str(q)?;
            if ffi::PyDict_CheckExact(docs) == 0 {
                return None;
            }
            judged.clear();
            let mut at: ffi::Py_ssize_t = 0;
            let (mut d, mut v) = (std::ptr::null_mut(), std::ptr::null_mut());
            while ffi::PyDict_Next(docs, &mut at, &mut d, &mut v) != 0 {
                judged.push((exact_str(d)?, int_grade(v)?, d));
            }
            if judged.is_empty() {
                // no judgement: the query is not in the qrels, as a file without its lines
                continue;
            }
            // the order the harness keeps a query's judgements in (a dict's keys are unique)
            judged.sort_unstable_by(|a, b| a.0.cmp(b.0));
            queries.push(QrelsQuery {
                id: query.to_string(),
                judged: judged.iter().map(|&(d, g, _)| (d.to_string(), g)).collect(),
            });
            keys.push(
                judged
                    .iter()
                    .map(|&(_, _, k)| Bound::from_borrowed_ptr(py, k))
                    .collect(),
            );
        }
    }
    let qrels = Qrels::from_queries(name.to_path_buf(), queries)?;
    Some((qrels, keys))
}

/// Scores the dict `run` against `qrels` as [`eval::evaluate_source`] would score it read as
/// records; `None` where the dict is not of the plain case (see the module note). `keys`: the
/// judged documents' `str`s, where the qrels were a dict ([`read_qrels`]).
pub(crate) fn evaluate<'py>(
    run: &Bound<'py, PyDict>,
    qrels: &Qrels,
    keys: Option<&JudgedKeys<'py>>,
    rules: Rules<'_>,
    drop_unknown: bool,
) -> PyResult<Option<Evaluated>> {
    let py = run.py();
    let mut scorer = Scorer::new(qrels, rules);
    let mut e = Entries::default();
    let mut pos: ffi::Py_ssize_t = 0;
    let (mut q, mut docs) = (std::ptr::null_mut(), std::ptr::null_mut());
    // SAFETY: the GIL is held (`py`); `run` and each query's dict are live and not mutated
    // (nothing below runs Python code: the keys are exact `str`s, compared by CPython itself,
    // and the scores are read without a call); the borrowed texts in `e` are dropped before
    // the next query's are read.
    unsafe {
        while ffi::PyDict_Next(run.as_ptr(), &mut pos, &mut q, &mut docs) != 0 {
            let Some(query) = exact_str(q) else {
                return Ok(None);
            };
            if ffi::PyDict_CheckExact(docs) == 0 {
                return Ok(None);
            }
            if read_entries(docs, &mut e).is_none() {
                return Ok(None);
            }
            let n = e.docs.len();
            if n == 0 {
                // no record: the query is not read (absent if judged), as a file without it
                continue;
            }
            let at = match scorer.query(query) {
                Some(at) => at,
                None if drop_unknown => {
                    scorer.dropped(n);
                    continue;
                }
                // the records' reading names the first entry
                None => return Ok(None),
            };
            if !scorer.open(at) {
                return Ok(None);
            }
            // the ranking: a query whose scores strictly fall is in rank order already
            let in_order = e.scores.windows(2).all(|w| w[0] > w[1]);
            let ties = if in_order {
                e.order.clear();
                e.order.extend(0..n as u32);
                0
            } else {
                let (docs, scores) = (&e.docs, &e.scores);
                eval::rank(
                    &mut e.order,
                    n,
                    |i| scores[i as usize],
                    |i| docs[i as usize],
                    rules.ties,
                )
            };
            // each judged document's entry: looked up in the query's dict, then found among the
            // entries of its score (one, unless scores tie) by its text
            e.judged_at.clear();
            e.judged_at.resize(n, u32::MAX);
            let judged = &qrels.queries()[at].judged;
            for (j, (doc, _)) in judged.iter().enumerate() {
                let made;
                let key = match keys {
                    Some(keys) => keys[at][j].as_ptr(),
                    None => {
                        made = PyString::new(py, doc);
                        made.as_ptr()
                    }
                };
                let v = ffi::PyDict_GetItemWithError(docs, key);
                if v.is_null() {
                    if !ffi::PyErr_Occurred().is_null() {
                        return Err(PyErr::fetch(py));
                    }
                    continue;
                }
                let Some(score) = float_score(v) else {
                    return Ok(None);
                };
                // the entry of that score and that text (found by halving where the entries
                // are in rank order, their scores distinct)
                let first = if in_order {
                    e.scores.partition_point(|&s| s > score)
                } else {
                    0
                };
                let found = (first..n).find(|&i| e.scores[i] == score && e.docs[i] == doc.as_str());
                let Some(i) = found else {
                    return Ok(None);
                };
                e.judged_at[i] = j as u32;
            }
            scorer.score(at, &e.order, &e.judged_at, ties);
        }
    }
    Ok(Some(scorer.finish()))
}
