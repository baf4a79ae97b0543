//! `hopbench status`: where each cell of a selection stands, read from the results directory
//! without computing anything, so a partial run (a Slurm array some of whose tasks failed or
//! were cancelled) can be resumed for what is missing only (`hopbench slurm --only-missing`).
//!
//! A cell is *done* when its summary has the key the cell would have now (same export, leg
//! configuration, query set, code version...) and verifies against its records
//! ([`crate::store::summary::verify_cell`]); *stale* when a summary is there but of other inputs or
//! does not verify; *failed* when the last attempt left its error
//! (`cells/<d>/<leg>.failed.txt`); *missing* otherwise. Without an export on disk the key cannot
//! be computed, so only a `missing-inputs` summary counts as done then.

use std::fmt::Write as _;

use anyhow::Result;
use hopbench_datasets::export;

use crate::measure::contract::Contract;
use crate::pipeline::campaign::Campaign;
use crate::pipeline::matrix;
use crate::pipeline::settings::MatrixSettings;
use crate::store::summary::{self, CellPaths, Status};

/// Where one cell stands.
#[derive(Debug, Clone, PartialEq)]
pub enum CellState {
    /// Summary current and verified, with its status.
    Done(Status),
    /// A summary of other inputs, or one that does not verify (why).
    Stale(String),
    /// The last attempt failed (its error).
    Failed(String),
    /// Never computed.
    Missing,
}

impl CellState {
    /// Whether the cell needs (re)computing.
    pub fn pending(&self) -> bool {
        !matches!(self, CellState::Done(_))
    }
}

/// The state of every planned cell ([`matrix::planned_cells`]), in plan order.
pub fn cells(campaign: &Campaign, s: &MatrixSettings) -> Result<Vec<(String, String, CellState)>> {
    let contract = Contract::current();
    let names =
        crate::measure::metrics::metric_names(&campaign.recall_k, &campaign.extra_measures());
    let mut out = Vec::new();
    let mut loaded: Option<(String, Option<export::Export>)> = None;
    for (dataset, leg) in matrix::planned_cells(s) {
        if loaded.as_ref().is_none_or(|(d, _)| *d != dataset) {
            let dir = s.data.exports.join(&dataset);
            // an export that does not load is as good as none: its cells are not current
            let e = dir
                .join("manifest.json")
                .exists()
                .then(|| export::load(&dir).ok())
                .flatten();
            loaded = Some((dataset.clone(), e));
        }
        let export = loaded.as_ref().and_then(|(_, e)| e.as_ref());
        let paths = CellPaths::new(&s.results, &dataset, &leg);
        let prev = summary::read_summary(&paths.summary).ok();
        let failed = std::fs::read_to_string(&paths.failed).ok();
        let state = match (prev, export) {
            (Some(p), Some(e)) => {
                let (_, key) = matrix::cell_inputs(
                    campaign,
                    s,
                    &contract,
                    &leg,
                    Some(&matrix::ExportIdentity::of_export(e)),
                );
                match summary::verify_cell(&p, &paths, &names) {
                    Ok(()) if p.key == key && p.status != Status::Error => {
                        CellState::Done(p.status)
                    }
                    Ok(()) if p.status == Status::Error => {
                        CellState::Failed(p.reason.unwrap_or_default())
                    }
                    Ok(()) => CellState::Stale("computed from other inputs".into()),
                    Err(why) => CellState::Stale(why),
                }
            }
            (Some(p), None)
                if p.status == Status::MissingInputs
                    && summary::verify_cell(&p, &paths, &names).is_ok() =>
            {
                CellState::Done(Status::MissingInputs)
            }
            _ => match failed {
                Some(error) => CellState::Failed(error.trim().to_string()),
                None => CellState::Missing,
            },
        };
        out.push((dataset, leg, state));
    }
    Ok(out)
}

/// The status table, then one line of counts.
pub fn table(cells: &[(String, String, CellState)]) -> String {
    let mut t = String::from("| dataset | leg | state | detail |\n|---|---|---|---|\n");
    let (mut done, mut pending) = (0, 0);
    for (d, l, st) in cells {
        let (state, detail) = match st {
            CellState::Done(s) => {
                done += 1;
                let s = serde_json::to_value(s).expect("status serialises");
                ("done", s.as_str().unwrap_or_default().to_string())
            }
            CellState::Stale(why) => ("stale", why.clone()),
            CellState::Failed(e) => ("failed", e.lines().next().unwrap_or_default().to_string()),
            CellState::Missing => ("missing", String::new()),
        };
        if st.pending() {
            pending += 1;
        }
        let _ = writeln!(
            t,
            "| {d} | {l} | {state} | {} |",
            detail.replace('|', "\\|")
        );
    }
    let _ = write!(t, "\n{} cells: {done} done, {pending} to run", cells.len());
    t
}
