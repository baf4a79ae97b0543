//! Summary collection: every cell summary of a results directory, as read, and the ones that
//! verify. What `compare`, the matrix and the report read. A summary that does not read, or
//! does not verify, is never an error of the whole read: it is a [`LeftOut`] cell, named with
//! its reason, and the rest are read on.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::measure::metrics::metric_names;
use crate::store::summary::{read_summary, verify_cell, CellPaths, CellSummary};

/// A cell a reader leaves out, and why: its summary does not parse as one of this schema (a
/// truncated or hand-edited file), or it does not verify ([`verify_cell`]). Its dataset and leg
/// are read from where the summary lies (`cells/<dataset>/<leg>.summary.json`), so a summary
/// that does not parse is still named.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LeftOut {
    /// Dataset.
    pub dataset: String,
    /// Leg.
    pub leg: String,
    /// Why, naming the file and the field.
    pub reason: String,
}

impl LeftOut {
    /// The cell whose summary is at `path`, left out for `reason`.
    fn at(path: &Path, reason: String) -> LeftOut {
        let name = |p: Option<&Path>| {
            p.and_then(Path::file_name)
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        };
        let file = name(Some(path));
        LeftOut {
            dataset: name(path.parent()),
            leg: file.trim_end_matches(".summary.json").to_string(),
            reason,
        }
    }
}

/// Every summary under `<results>/cells`: those read, and those that do not read.
#[derive(Debug, Default)]
pub struct Collected {
    /// The summaries read, sorted by (dataset, leg); not yet verified.
    pub cells: Vec<CellSummary>,
    /// The summaries that do not read, sorted by (dataset, leg).
    pub unreadable: Vec<LeftOut>,
}

/// The summaries of a results directory a report shows, and the cells it leaves out.
#[derive(Debug, Default)]
pub struct Trusted {
    /// The summaries that read and verify, sorted by (dataset, leg).
    pub cells: Vec<CellSummary>,
    /// The cells left out, sorted by (dataset, leg).
    pub left_out: Vec<LeftOut>,
}

/// The summary files under `<results>/cells`, sorted.
fn summary_paths(cells: &Path) -> Vec<PathBuf> {
    let Ok(dirs) = std::fs::read_dir(cells) else {
        return Vec::new();
    };
    let mut paths = Vec::new();
    for d in dirs.flatten() {
        if let Ok(files) = std::fs::read_dir(d.path()) {
            for f in files.flatten() {
                let p = f.path();
                if p.to_string_lossy().ends_with(".summary.json") {
                    paths.push(p);
                }
            }
        }
    }
    paths.sort();
    paths
}

/// Every summary under `<results>/cells`, as read: the caller verifies a cell before it trusts
/// its numbers (`compare` reports an untrusted one as not comparable; the reports read
/// [`trusted_summaries`]). A summary that does not read is [`Collected::unreadable`], never an
/// error: one damaged file leaves the others to be read.
pub fn collect_summaries(results: &Path) -> Collected {
    let mut out = Collected::default();
    let cells = results.join("cells");
    let mut stale = 0;
    for p in summary_paths(&cells) {
        // a summary of an older schema is a stale cell (run-matrix recomputes it), not an
        // error; a current-schema summary that does not parse is left out, named
        let version = std::fs::read(&p)
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .and_then(|v| v.get("schema_version").and_then(|x| x.as_u64()));
        if version.is_some_and(|v| v != u64::from(crate::store::summary::SCHEMA_VERSION)) {
            stale += 1;
            continue;
        }
        match read_summary(&p) {
            Ok(cell) => out.cells.push(cell),
            Err(e) => out.unreadable.push(LeftOut::at(&p, format!("{e:#}"))),
        }
    }
    if stale > 0 {
        eprintln!(
            "{}: skipped {stale} cell summaries of an older schema (rerun run-matrix to refresh them)",
            cells.display()
        );
    }
    out.cells
        .sort_by(|a, b| (&a.dataset, &a.leg).cmp(&(&b.dataset, &b.leg)));
    out.unreadable
        .sort_by(|a, b| (&a.dataset, &a.leg).cmp(&(&b.dataset, &b.leg)));
    out
}

/// The summaries of [`collect_summaries`] that verify ([`verify_cell`]): what the matrix and the
/// report show. One that does not read or verify is left out with a warning naming the file and
/// why (the next `run-matrix` recomputes it), and returned in [`Trusted::left_out`] so that what
/// shows the others can name it too.
pub fn trusted_summaries(results: &Path) -> Trusted {
    let collected = collect_summaries(results);
    let mut out = Trusted {
        cells: Vec::with_capacity(collected.cells.len()),
        left_out: collected.unreadable,
    };
    for cell in collected.cells {
        let paths = CellPaths::new(results, &cell.dataset, &cell.leg);
        match verify_cell(
            &cell,
            &paths,
            &metric_names(&cell.inputs.recall_k, &cell.inputs.measures),
        ) {
            Ok(()) => out.cells.push(cell),
            Err(reason) => out.left_out.push(LeftOut {
                dataset: cell.dataset.clone(),
                leg: cell.leg.clone(),
                reason,
            }),
        }
    }
    out.left_out
        .sort_by(|a, b| (&a.dataset, &a.leg).cmp(&(&b.dataset, &b.leg)));
    for l in &out.left_out {
        eprintln!("warning: cell not trusted, left out ({})", l.reason);
    }
    if !out.left_out.is_empty() {
        eprintln!(
            "{}: left out {} cell summaries that do not read or verify (rerun run-matrix to \
             recompute them)",
            results.join("cells").display(),
            out.left_out.len()
        );
    }
    out
}
