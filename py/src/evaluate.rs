//! `evaluate` and `compare`: `hopbench eval`'s evaluation of runs and qrels from Python, and a
//! paired comparison of two runs over the queries both define (bootstrap CI of the mean
//! difference, randomization test, Holm over the measures), with the statistics code the
//! matrix's comparisons use.

use hopbench::analysis::eval::{self, Evaluated, Qrels, Rules, Ties};
use hopbench::measure::metrics::At as Metric;
use hopbench::measure::stats;
use hopbench::measure::stats_config::{CiMode, StatsConfig};
use hopbench::pipeline::campaign::{Campaign, EMBEDDED};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString};

use crate::dict_run::{self, JudgedKeys};
use crate::sources::{Given, PyQrels, PyRun};
use crate::{guarded, InputError, MeasureError};

/// The settings every evaluation takes.
struct Settings {
    which: Vec<Metric>,
    level: i64,
    ties: Ties,
    drop_unknown: bool,
}

impl Settings {
    fn new(
        measures: Option<Vec<String>>,
        relevance_level: i64,
        ties: &str,
        drop_unknown: bool,
    ) -> PyResult<Self> {
        let which = match measures {
            Some(m) => Metric::parse_list(&m).map_err(MeasureError::new_err)?,
            None => {
                // `hopbench eval`'s default: the compiled-in campaign's recall k, nDCG@10, MRR@10
                let campaign = Campaign::parse(EMBEDDED, "<embedded campaign.yaml>")
                    .map_err(|e| InputError::new_err(format!("{e:#}")))?;
                hopbench::measure::metrics::measured_from_qrels(&campaign.recall_k)
            }
        };
        if relevance_level < 1 {
            return Err(InputError::new_err(format!(
                "relevance_level {relevance_level}: must be at least 1"
            )));
        }
        let ties = match ties {
            "id" => Ties::Id,
            "trec_eval" | "trec-eval" => Ties::TrecEval,
            other => {
                return Err(InputError::new_err(format!(
                    "ties `{other}`: expected \"id\" or \"trec_eval\""
                )))
            }
        };
        Ok(Settings {
            which,
            level: relevance_level,
            ties,
            drop_unknown,
        })
    }

    fn rules(&self) -> Rules<'_> {
        Rules {
            which: &self.which,
            level: self.level,
            ties: self.ties,
        }
    }
}

fn input_error(e: impl std::fmt::Display) -> PyErr {
    InputError::new_err(e.to_string())
}

/// The judgements, and for a dict the judged documents' own `str`s (for [`crate::dict_run`]).
fn read_qrels<'py>(qrels: &Bound<'py, PyAny>) -> PyResult<(Qrels, Option<JudgedKeys<'py>>)> {
    let mut source = Given::from_tuple(qrels, "qrels")?.into_qrels()?;
    if let PyQrels::Dict(name, dict) = &source {
        if let Some((qrels, keys)) = dict_run::read_qrels(name, dict) {
            return Ok((qrels, Some(keys)));
        }
    }
    let qrels = Qrels::from_source(&mut source).map_err(input_error)?;
    Ok((qrels, None))
}

/// The run's per-query values, and whether it was a dict read in place ([`crate::dict_run`]).
fn score<'py>(
    run: &Bound<'py, PyAny>,
    (qrels, keys): &(Qrels, Option<JudgedKeys<'py>>),
    s: &Settings,
) -> PyResult<(Evaluated, bool)> {
    let mut source = Given::from_tuple(run, "run")?.into_run()?;
    let in_place = match &source {
        PyRun::Dict(_, dict) => {
            dict_run::evaluate(dict, qrels, keys.as_ref(), s.rules(), s.drop_unknown)?
        }
        _ => None,
    };
    let read_in_place = in_place.is_some();
    let e = match in_place {
        Some(e) => e,
        None => eval::evaluate_source(&mut source, qrels, s.rules(), s.drop_unknown)
            .map_err(input_error)?,
    };
    if e.query_ids.is_empty() {
        return Err(InputError::new_err(format!(
            "the qrels have no query with a relevant judgement (grade >= {}): nothing to evaluate",
            s.level
        )));
    }
    Ok((e, read_in_place))
}

fn stats_config(ci: bool, resamples: usize, permutations: usize, seed: u64) -> StatsConfig {
    StatsConfig {
        resamples,
        permutations,
        seed,
        ci: if ci { CiMode::On } else { CiMode::Off },
    }
}

/// Scores `run` against `qrels` as `hopbench eval` does; see `_native.pyi`.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub fn evaluate<'py>(
    py: Python<'py>,
    run: &Bound<'py, PyAny>,
    qrels: &Bound<'py, PyAny>,
    measures: Option<Vec<String>>,
    relevance_level: i64,
    ties: &str,
    drop_unknown: bool,
    per_query: bool,
    ci: bool,
    resamples: usize,
    seed: u64,
) -> PyResult<Bound<'py, PyDict>> {
    guarded(|| {
        let s = Settings::new(measures, relevance_level, ties, drop_unknown)?;
        let qrels = read_qrels(qrels)?;
        let (e, run_in_place) = score(run, &qrels, &s)?;
        let stats = stats_config(ci, resamples, StatsConfig::default().permutations, seed);
        let lines = eval::summarize(&e, &stats);
        let out = PyDict::new(py);
        out.set_item("measure", &e.names)?;
        out.set_item("mean", lines.iter().map(|l| l.mean).collect::<Vec<_>>())?;
        out.set_item(
            "ci_lo",
            lines
                .iter()
                .map(|l| l.ci95.map(|c| c[0]))
                .collect::<Vec<_>>(),
        )?;
        out.set_item(
            "ci_hi",
            lines
                .iter()
                .map(|l| l.ci95.map(|c| c[1]))
                .collect::<Vec<_>>(),
        )?;
        out.set_item(
            "queries",
            lines.iter().map(|l| l.queries).collect::<Vec<_>>(),
        )?;
        if per_query {
            // packed: each query id and measure name once, the values as little-endian f64
            // bytes, query-major; the frame repeats the ids and names (a Python object per
            // row of 10^5 queries x 3 measures cost a tenth of the whole call)
            let n = e.query_ids.len();
            let ids: Vec<_> = e.query_ids.iter().map(|id| PyString::new(py, id)).collect();
            let mut values = Vec::with_capacity(n * e.names.len() * 8);
            for q in 0..n {
                for column in &e.values {
                    // undefined for this query: NaN, which no defined value is
                    let v = column[q].unwrap_or(f64::NAN);
                    values.extend_from_slice(&v.to_le_bytes());
                }
            }
            let pq = PyDict::new(py);
            pq.set_item("query_ids", ids)?;
            pq.set_item("measures", &e.names)?;
            pq.set_item("values", PyBytes::new(py, &values))?;
            out.set_item("per_query", pq)?;
        }
        let info = PyDict::new(py);
        info.set_item("records", e.records)?;
        info.set_item("queries", e.query_ids.len())?;
        info.set_item("queries_absent", e.absent)?;
        info.set_item("queries_without_relevant", e.without_relevant)?;
        info.set_item("ties_broken", e.ties_broken)?;
        info.set_item("dropped_unknown_queries", e.dropped_unknown_queries)?;
        info.set_item(
            "ties",
            match s.ties {
                Ties::Id => "id",
                Ties::TrecEval => "trec_eval",
            },
        )?;
        info.set_item("relevance_level", s.level)?;
        // how the inputs were read: a dict in place, or as records (same values either way)
        info.set_item("run_in_place", run_in_place)?;
        info.set_item("qrels_in_place", qrels.1.is_some())?;
        out.set_item("info", info)?;
        Ok(out)
    })
}

/// One measure of a paired comparison.
struct Paired {
    mean_a: Option<f64>,
    mean_b: Option<f64>,
    diff: Option<f64>,
    ci: Option<[f64; 2]>,
    p: Option<f64>,
    queries: usize,
}

/// `b - a` for measure `j` over the queries where both runs define it.
fn paired(a: &Evaluated, b: &Evaluated, j: usize, stats: &StatsConfig) -> Paired {
    let (x, y): (Vec<f64>, Vec<f64>) = a.values[j]
        .iter()
        .zip(&b.values[j])
        .filter_map(|(x, y)| Some(((*x)?, (*y)?)))
        .unzip();
    let mean = |v: &[f64]| hopbench::measure::metrics::mean(v.iter().copied());
    let d: Vec<f64> = x.iter().zip(&y).map(|(x, y)| y - x).collect();
    Paired {
        mean_a: mean(&x),
        mean_b: mean(&y),
        diff: mean(&d),
        ci: if x.is_empty() {
            None
        } else {
            stats.paired_ci(&x, &y)
        },
        p: if x.is_empty() {
            None
        } else {
            stats.p_value(&x, &y)
        },
        queries: x.len(),
    }
}

/// Compares `run_b` with `run_a` on `qrels`, paired by query; see `_native.pyi`.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub fn compare<'py>(
    py: Python<'py>,
    run_a: &Bound<'py, PyAny>,
    run_b: &Bound<'py, PyAny>,
    qrels: &Bound<'py, PyAny>,
    measures: Option<Vec<String>>,
    relevance_level: i64,
    ties: &str,
    drop_unknown: bool,
    resamples: usize,
    permutations: usize,
    seed: u64,
) -> PyResult<Bound<'py, PyDict>> {
    guarded(|| {
        let s = Settings::new(measures, relevance_level, ties, drop_unknown)?;
        let qrels = read_qrels(qrels)?;
        let (a, _) = score(run_a, &qrels, &s)?;
        let (b, _) = score(run_b, &qrels, &s)?;
        let stats = stats_config(true, resamples, permutations, seed);
        let rows: Vec<Paired> = (0..a.names.len())
            .map(|j| paired(&a, &b, j, &stats))
            .collect();
        // Holm over the measures that have a p-value
        let tested: Vec<f64> = rows.iter().filter_map(|r| r.p).collect();
        let mut adjusted = stats::holm(&tested).into_iter();
        let holm: Vec<Option<f64>> = rows
            .iter()
            .map(|r| r.p.and_then(|_| adjusted.next()))
            .collect();
        let out = PyDict::new(py);
        out.set_item("measure", &a.names)?;
        out.set_item("mean_a", rows.iter().map(|r| r.mean_a).collect::<Vec<_>>())?;
        out.set_item("mean_b", rows.iter().map(|r| r.mean_b).collect::<Vec<_>>())?;
        out.set_item("diff", rows.iter().map(|r| r.diff).collect::<Vec<_>>())?;
        out.set_item(
            "ci_lo",
            rows.iter().map(|r| r.ci.map(|c| c[0])).collect::<Vec<_>>(),
        )?;
        out.set_item(
            "ci_hi",
            rows.iter().map(|r| r.ci.map(|c| c[1])).collect::<Vec<_>>(),
        )?;
        out.set_item("p", rows.iter().map(|r| r.p).collect::<Vec<_>>())?;
        out.set_item("p_holm", holm)?;
        out.set_item(
            "queries",
            rows.iter().map(|r| r.queries).collect::<Vec<_>>(),
        )?;
        Ok(out)
    })
}
