//! A results directory from Python: its cells, one cell's per-query values and its budget curve,
//! each read through the same verification as the CLI's reports (a cell whose files are not
//! the ones its summary names is reported with the reason, never returned).

use std::path::{Path, PathBuf};

use hopbench::measure::metrics::metric_names;
use hopbench::pipeline::curve;
use hopbench::store::summary::{read_records, read_summary, verify_cell, CellPaths, CellSummary};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::{guarded, ResultsError};

/// Every `<results>/cells/<dataset>/<leg>.summary.json`, sorted by (dataset, leg).
fn summary_files(results: &Path) -> PyResult<Vec<(String, String, PathBuf)>> {
    let cells = results.join("cells");
    let dirs = std::fs::read_dir(&cells).map_err(|e| {
        ResultsError::new_err(format!(
            "{}: not a results directory: {e}",
            results.display()
        ))
    })?;
    let mut out = Vec::new();
    for d in dirs.flatten() {
        let dataset = d.file_name().to_string_lossy().into_owned();
        for f in std::fs::read_dir(d.path()).into_iter().flatten().flatten() {
            let name = f.file_name().to_string_lossy().into_owned();
            if let Some(leg) = name.strip_suffix(".summary.json") {
                out.push((dataset.clone(), leg.to_string(), f.path()));
            }
        }
    }
    out.sort();
    Ok(out)
}

/// The cell (`dataset`, `leg`), read and verified; the error says why it is not trusted.
fn verified(results: &Path, dataset: &str, leg: &str, file: &Path) -> Result<CellSummary, String> {
    let cell = read_summary(file).map_err(|e| format!("{e:#}"))?;
    if (cell.dataset.as_str(), cell.leg.as_str()) != (dataset, leg) {
        return Err(format!(
            "{}: holds the cell {} x {}",
            file.display(),
            cell.dataset,
            cell.leg
        ));
    }
    let paths = CellPaths::new(results, dataset, leg);
    verify_cell(&cell, &paths, &names(&cell))?;
    Ok(cell)
}

fn names(cell: &CellSummary) -> Vec<String> {
    metric_names(&cell.inputs.recall_k, &cell.inputs.measures)
}

/// Every cell of `results`: the verified ones as flat rows, the others with the reason.
#[pyfunction]
pub fn load_results<'py>(py: Python<'py>, results: PathBuf) -> PyResult<Bound<'py, PyDict>> {
    guarded(|| {
        let cells = pyo3::types::PyList::empty(py);
        let rejected = pyo3::types::PyList::empty(py);
        for (dataset, leg, file) in summary_files(&results)? {
            match verified(&results, &dataset, &leg, &file) {
                Ok(cell) => cells.append(row(py, &cell)?)?,
                Err(reason) => {
                    let r = PyDict::new(py);
                    r.set_item("dataset", &dataset)?;
                    r.set_item("leg", &leg)?;
                    r.set_item("reason", reason)?;
                    rejected.append(r)?;
                }
            }
        }
        let out = PyDict::new(py);
        out.set_item("cells", cells)?;
        out.set_item("rejected", rejected)?;
        Ok(out)
    })
}

/// A cell as one flat row: what it is, then every metric's mean and CI, then its spend.
fn row<'py>(py: Python<'py>, cell: &CellSummary) -> PyResult<Bound<'py, PyDict>> {
    let r = PyDict::new(py);
    r.set_item("dataset", &cell.dataset)?;
    r.set_item("leg", &cell.leg)?;
    r.set_item("status", cell.status.name())?;
    r.set_item("reason", &cell.reason)?;
    r.set_item("queries", cell.queries)?;
    for name in names(cell) {
        let ci = cell.metrics_ci95.get(&name);
        r.set_item(&name, cell.metrics.get(&name).copied().flatten())?;
        r.set_item(format!("{name}_ci_lo"), ci.map(|c| c[0]))?;
        r.set_item(format!("{name}_ci_hi"), ci.map(|c| c[1]))?;
    }
    r.set_item("tokens_selected_mean", cell.tokens.selected_mean)?;
    r.set_item("tokens_at_10_mean", cell.tokens.at_10_mean)?;
    Ok(r)
}

fn verified_cell(results: &Path, dataset: &str, leg: &str) -> PyResult<CellSummary> {
    let file = CellPaths::new(results, dataset, leg).summary;
    if !file.exists() {
        return Err(ResultsError::new_err(format!(
            "{}: no cell {dataset} x {leg}",
            results.display()
        )));
    }
    verified(results, dataset, leg, &file)
        .map_err(|why| ResultsError::new_err(format!("cell {dataset} x {leg} not trusted: {why}")))
}

/// One verified cell's per-query values.
#[pyfunction]
pub fn per_query<'py>(
    py: Python<'py>,
    results: PathBuf,
    dataset: &str,
    leg: &str,
) -> PyResult<Bound<'py, PyDict>> {
    guarded(|| {
        let cell = verified_cell(&results, dataset, leg)?;
        let paths = CellPaths::new(&results, dataset, leg);
        let (ids, columns) = read_records(&paths.records, &names(&cell))
            .map_err(|e| ResultsError::new_err(format!("{e:#}")))?;
        let out = PyDict::new(py);
        out.set_item("query_id", ids)?;
        for name in names(&cell) {
            if let Some(values) = columns.get(&name) {
                out.set_item(&name, values)?;
            }
        }
        Ok(out)
    })
}

/// One verified cell's budget curve, a row per budget.
#[pyfunction]
pub fn curves<'py>(
    py: Python<'py>,
    results: PathBuf,
    dataset: &str,
    leg: &str,
) -> PyResult<Bound<'py, PyDict>> {
    guarded(|| {
        let (json, rows) = curve::paths(&results, dataset, leg);
        if !json.exists() {
            return Err(ResultsError::new_err(format!(
                "{}: no budget curve for {dataset} x {leg} (a selecting leg writes one, unless \
                 run with --no-curves)",
                results.display()
            )));
        }
        let c = curve::read_verified(&json, &rows).map_err(|e| {
            ResultsError::new_err(format!("curve {dataset} x {leg} not trusted: {e:#}"))
        })?;
        let out = PyDict::new(py);
        out.set_item(
            "budget",
            c.points.iter().map(|p| p.budget).collect::<Vec<_>>(),
        )?;
        for name in curve::metric_names() {
            let pick = |f: &dyn Fn(&curve::CurvePoint) -> Option<f64>| -> Vec<Option<f64>> {
                c.points.iter().map(f).collect()
            };
            out.set_item(&name, pick(&|p| p.metrics.get(&name).copied().flatten()))?;
            out.set_item(
                format!("{name}_ci_lo"),
                pick(&|p| p.metrics_ci95.get(&name).map(|c| c[0])),
            )?;
            out.set_item(
                format!("{name}_ci_hi"),
                pick(&|p| p.metrics_ci95.get(&name).map(|c| c[1])),
            )?;
        }
        out.set_item(
            "tokens_mean",
            c.points.iter().map(|p| p.tokens_mean).collect::<Vec<_>>(),
        )?;
        out.set_item(
            "tokens_max",
            c.points.iter().map(|p| p.tokens_max).collect::<Vec<_>>(),
        )?;
        out.set_item(
            "selected_mean",
            c.points.iter().map(|p| p.selected_mean).collect::<Vec<_>>(),
        )?;
        Ok(out)
    })
}
