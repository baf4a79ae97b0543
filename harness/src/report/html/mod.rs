//! `hopbench report`: a static HTML report of a results directory.
//!
//! [`write_report`] reads only what is on disk under `results/` (cell summaries, per-query
//! records, TREC run files and qrels, budget curves) and writes a self-contained site into
//! `out`: no network reference, no script framework, no external font or style sheet; the CSS
//! is inline and the one inline script sorts tables. The pages:
//!
//! - `index.html` (`matrix`): the protocol facts (recall k values, CI settings, code version,
//!   contract), the datasets with their query counts, and the matrix: one row per cell with
//!   every number `matrix.md` shows for it, in the same format and rounding, plus the 95% CI of
//!   every mean;
//! - `d-<dataset>.html` (`dataset`): every metric of every leg, the headline recall with CI
//!   whiskers, the budget curves with CI bands (`curves`, drawn by [`crate::report::plot::svg`]), the
//!   paired comparisons of the leg pairs (`pairs`, [`crate::analysis::compare::compare_legs`]), the
//!   breakdowns, intent confusion and reference resolution of conversation sets, and the legs'
//!   diagnostics (`groups`);
//! - `q-<dataset>.html` (`drill`): per query, the rank at which every leg found each gold
//!   chunk, from the TREC run files and `qrels.txt`, narrowed to any two legs by a picker;
//! - `q-<dataset>-<a>-vs-<b>.html` (`drill`): the same for each configured pair, with its
//!   counts;
//! - `img/*.svg`: the figures (`svg` draws all but the budget curves).
//!
//! A cell whose files do not read or verify keeps its matrix row, marked not trusted with the
//! reason, and is listed on the matrix page and its dataset's page (`left_out`); a budget curve
//! that does not verify is named on its dataset's page and the figure is drawn from the others.
//! Both are said on stderr and counted in [`ReportWritten`], so a page never lacks something
//! without saying so.
//!
//! Every file written carries the marker [`MARKER`]; a later report into the same directory
//! removes the files with the marker that it did not write itself (a dataset or pair that is
//! gone), and never touches any other file. Every file is written atomically
//! ([`crate::store::fsx::write_atomic`]). The work is linear in the size of the results: one pass over
//! the summaries, one pass over each curve file, one pass over the qrels and each run file a
//! drill-down page shows, and one paired comparison per configured pair; the datasets' pages
//! are built in parallel.

mod curves;
mod dataset;
mod drill;
mod format;
mod groups;
mod job;
mod left_out;
mod matrix;
mod page;
mod pairs;
mod svg;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use rayon::prelude::*;

use crate::store::collect::LeftOut;
use crate::store::summary::{CellSummary, Status};

/// What to report and where.
pub struct ReportOptions<'a> {
    /// The results directory to read (`cells/`, `runs/`, `curves/` under it).
    pub results: &'a Path,
    /// The directory the site is written to (created if absent).
    pub out: &'a Path,
    /// The campaign: its `stats` settings drive the paired comparisons, its datasets' notes
    /// and formats label the pages.
    pub campaign: &'a crate::pipeline::campaign::Campaign,
    /// Leg pairs `(a, b)` to compare (paired statistics of b − a, per-query drill-down) on
    /// every dataset that has a cell of both. Empty: each dataset's first two `ok` legs get a
    /// drill-down and a comparison.
    pub compare: &'a [(String, String)],
}

/// What [`write_report`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportWritten {
    /// `<out>/index.html`.
    pub index: PathBuf,
    /// Files written (pages and figures).
    pub files: usize,
    /// Their total size in bytes.
    pub bytes: u64,
    /// Cells left out (their files do not read or verify): each keeps a marked row in the
    /// matrix and is named with why on the pages and on stderr.
    pub cells_left_out: usize,
    /// Budget curves left out (their files do not read or verify): named on their dataset's
    /// page and on stderr; the figure is drawn from the others.
    pub curves_left_out: usize,
}

/// The marker every file of a report carries near its start (a `<meta name="generator">` in
/// pages, a comment in figures): the files a later report may remove.
pub const MARKER: &str = "hopbench report";

/// Writes the report of `o.results` into `o.out` (see the module documentation); an error when
/// the results hold no cell summary or a file cannot be written. A cell or curve whose files do
/// not read or verify is left out, named on the pages and on stderr, and counted in what it
/// returns: the rest of the report is written.
pub fn write_report(o: &ReportOptions) -> Result<ReportWritten> {
    let trusted = crate::store::collect::trusted_summaries(o.results);
    if trusted.cells.is_empty() && trusted.left_out.is_empty() {
        bail!(
            "{}: no cell summaries under cells/ (run `hopbench run-matrix` first)",
            o.results.display()
        );
    }
    let mut by_dataset: BTreeMap<&str, Vec<&CellSummary>> = BTreeMap::new();
    for c in &trusted.cells {
        by_dataset.entry(c.dataset.as_str()).or_default().push(c);
    }
    // a dataset whose every cell is left out still has its page, naming them
    let mut left_by_dataset: BTreeMap<&str, Vec<&LeftOut>> = BTreeMap::new();
    for l in &trusted.left_out {
        by_dataset.entry(l.dataset.as_str()).or_default();
        left_by_dataset
            .entry(l.dataset.as_str())
            .or_default()
            .push(l);
    }
    let mut names = Names::default();
    let mut jobs = Vec::new();
    for (dataset, cells) in &by_dataset {
        let pairs = pairs_of(cells, o.compare);
        let files = job::Files::new(&mut names, dataset, &pairs)?;
        jobs.push(job::Job {
            dataset,
            cells: cells.as_slice(),
            left_out: left_by_dataset.remove(dataset).unwrap_or_default(),
            pairs,
            files,
        });
    }
    let index = matrix::page(o, &by_dataset, &jobs);
    let parts: Vec<dataset::Written> = jobs
        .par_iter()
        .map(|job| dataset::write(o, job))
        .collect::<Result<Vec<_>>>()?;
    // said in dataset order, after the parallel part, so stderr reads the same on every run
    let mut curves_left_out = 0;
    for (job, part) in jobs.iter().zip(&parts) {
        for (leg, why) in &part.curves_left_out {
            eprintln!(
                "warning: budget curve {} x {leg} not trusted, left out of the report ({why})",
                job.dataset
            );
            curves_left_out += 1;
        }
    }
    let mut written: Vec<(PathBuf, u64)> = parts.into_iter().flat_map(|p| p.files).collect();
    let index_path = o.out.join("index.html");
    written.push(write(&index_path, &index)?);
    remove_stale(o.out, &written.iter().map(|w| w.0.clone()).collect())?;
    Ok(ReportWritten {
        index: index_path,
        files: written.len(),
        bytes: written.iter().map(|w| w.1).sum(),
        cells_left_out: trusted.left_out.len(),
        curves_left_out,
    })
}

/// The leg pairs of one dataset: the configured pairs whose two legs both have a cell here,
/// or, with none configured, the first two `ok` legs.
fn pairs_of(cells: &[&CellSummary], compare: &[(String, String)]) -> Vec<(String, String)> {
    let has = |leg: &str| cells.iter().any(|c| c.leg == leg);
    if compare.is_empty() {
        let ok: Vec<&str> = cells
            .iter()
            .filter(|c| c.status == Status::Ok)
            .map(|c| c.leg.as_str())
            .take(2)
            .collect();
        return match ok.as_slice() {
            [a, b] => vec![(a.to_string(), b.to_string())],
            _ => vec![],
        };
    }
    let mut seen = BTreeSet::new();
    compare
        .iter()
        .filter(|(a, b)| a != b && has(a) && has(b) && seen.insert((a.clone(), b.clone())))
        .cloned()
        .collect()
}

/// Writes one file of the report atomically; returns its path and size.
fn write(path: &Path, text: &str) -> Result<(PathBuf, u64)> {
    crate::store::fsx::write_atomic(path, text.as_bytes())?;
    Ok((path.to_path_buf(), text.len() as u64))
}

/// Removes the files of an earlier report in `out` that this one did not write: `*.html` and
/// `img/*.svg` that carry [`MARKER`] in their first bytes. Nothing else is touched.
fn remove_stale(out: &Path, written: &BTreeSet<PathBuf>) -> Result<()> {
    for (dir, ext) in [(out.to_path_buf(), "html"), (out.join("img"), "svg")] {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            let ours = p.extension().is_some_and(|x| x == ext)
                && !p
                    .file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with('.'))
                && e.file_type().is_ok_and(|t| t.is_file())
                && !written.contains(&p)
                && has_marker(&p);
            if ours {
                std::fs::remove_file(&p).with_context(|| {
                    format!("{}: cannot remove a stale report file", p.display())
                })?;
            }
        }
    }
    Ok(())
}

/// Whether the file at `p` starts (within its first 512 bytes) with the report's marker.
fn has_marker(p: &Path) -> bool {
    use std::io::Read as _;
    let mut head = [0u8; 512];
    let n = std::fs::File::open(p)
        .and_then(|mut f| f.read(&mut head))
        .unwrap_or(0);
    String::from_utf8_lossy(&head[..n]).contains(MARKER)
}

/// File names of the report: every name is checked to be new, so two datasets or legs whose
/// names map to the same file are an error, never a page that overwrites another.
#[derive(Default)]
pub(crate) struct Names {
    taken: BTreeSet<String>,
}

impl Names {
    /// Claims `name` (relative to the report directory).
    pub(crate) fn claim(&mut self, name: String) -> Result<String> {
        if name == "index.html" || !self.taken.insert(name.clone()) {
            bail!("report: two pages or figures would share the file name `{name}`");
        }
        Ok(name)
    }
}

/// `name` as one file-name component: itself when it is made of ASCII letters, digits, `_`,
/// `.` and `-` (and does not start with `.`), else those characters with every other one
/// replaced by `_`, plus a short hash of the name so distinct names stay distinct.
pub(crate) fn slug(name: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-');
    if !name.is_empty() && !name.starts_with('.') && name.chars().all(safe) {
        return name.to_string();
    }
    let kept: String = name
        .chars()
        .map(|c| if safe(c) { c } else { '_' })
        .collect();
    let hash = blake3::hash(name.as_bytes()).to_hex();
    format!("{}~{}", kept.trim_start_matches('.'), &hash[..8])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_file_names_and_keep_names_apart() {
        assert_eq!(slug("musique-train100"), "musique-train100");
        assert_eq!(slug("dense_content_only"), "dense_content_only");
        let odd = slug("a/b c");
        assert!(odd.starts_with("a_b_c~"), "{odd}");
        assert_ne!(slug("a/b"), slug("a b"));
        assert!(!slug("..").contains('/') && !slug("..").starts_with('.'));
    }

    #[test]
    fn a_file_name_is_claimed_once() {
        let mut n = Names::default();
        assert!(n.claim("d-x.html".into()).is_ok());
        assert!(n.claim("d-x.html".into()).is_err());
        assert!(n.claim("index.html".into()).is_err());
    }
}
