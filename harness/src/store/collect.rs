//! Summary collection: every cell summary of a results directory, as read, and the ones that
//! verify. What `compare`, the matrix and the report read.

use std::path::Path;

use anyhow::Result;

use crate::measure::metrics::metric_names;
use crate::store::summary::{read_summary, verify_cell, CellPaths, CellSummary};

/// Every summary under `<results>/cells`, sorted by (dataset, leg), as read: the caller verifies
/// a cell before it trusts its numbers (`compare` reports an untrusted one as not comparable;
/// the reports read [`trusted_summaries`]).
pub fn collect_summaries(results: &Path) -> Result<Vec<CellSummary>> {
    let mut out = Vec::new();
    let cells = results.join("cells");
    let Ok(dirs) = std::fs::read_dir(&cells) else {
        return Ok(out);
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
    let mut stale = 0;
    for p in paths {
        // a summary of an older schema is a stale cell (run-matrix recomputes it), not an
        // error; a current-schema summary that does not parse still is one
        let version = std::fs::read(&p)
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .and_then(|v| v.get("schema_version").and_then(|x| x.as_u64()));
        if version.is_some_and(|v| v != u64::from(crate::store::summary::SCHEMA_VERSION)) {
            stale += 1;
            continue;
        }
        out.push(read_summary(&p)?);
    }
    if stale > 0 {
        eprintln!(
            "{}: skipped {stale} cell summaries of an older schema (rerun run-matrix to refresh them)",
            cells.display()
        );
    }
    out.sort_by(|a, b| (&a.dataset, &a.leg).cmp(&(&b.dataset, &b.leg)));
    Ok(out)
}

/// The summaries of [`collect_summaries`] that verify ([`verify_cell`]): what the matrix and the
/// report show. One that does not is left out with a warning naming the file and why (the next
/// `run-matrix` recomputes it).
pub fn trusted_summaries(results: &Path) -> Result<Vec<CellSummary>> {
    let cells = collect_summaries(results)?;
    let mut out = Vec::with_capacity(cells.len());
    let mut untrusted = 0;
    for cell in cells {
        let paths = CellPaths::new(results, &cell.dataset, &cell.leg);
        match verify_cell(
            &cell,
            &paths,
            &metric_names(&cell.inputs.recall_k, &cell.inputs.measures),
        ) {
            Ok(()) => out.push(cell),
            Err(why) => {
                eprintln!("warning: cell not trusted, left out ({why})");
                untrusted += 1;
            }
        }
    }
    if untrusted > 0 {
        eprintln!(
            "{}: left out {untrusted} cell summaries that do not verify (rerun run-matrix to \
             recompute them)",
            results.join("cells").display()
        );
    }
    Ok(out)
}
