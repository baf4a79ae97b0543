//! The matrix as a Markdown table: printed at the end of `run-matrix` and written to
//! `results/matrix.md` (every cell found under `results/cells`).

use std::fmt::Write as _;
use std::path::Path;

use anyhow::Result;

use crate::summary::{read_summary, CellSummary, Status};

/// Columns of the table: metric name and header.
const COLUMNS: [(&str, &str); 7] = [
    ("recall@2", "R@2"),
    ("recall@5", "R@5"),
    ("recall@10", "R@10 [95% CI]"),
    ("ndcg@10", "nDCG@10"),
    ("doc_recall@10", "docR@10"),
    ("chain_coverage@10", "chain@10"),
    ("full_chain_hit@10", "fullchain@10 [95% CI]"),
];

fn fmt_metric(c: &CellSummary, name: &str, with_ci: bool) -> String {
    match c.metrics.get(name).copied().flatten() {
        None => "—".into(),
        Some(v) => match (with_ci, c.metrics_ci95.get(name)) {
            (true, Some([lo, hi])) => format!("{v:.4} [{lo:.3}, {hi:.3}]"),
            _ => format!("{v:.4}"),
        },
    }
}

/// The table of `cells`, one row per cell.
pub fn matrix_table(cells: &[CellSummary]) -> String {
    let mut out = String::new();
    let _ = write!(out, "| dataset | leg | status | queries |");
    for (_, h) in COLUMNS {
        let _ = write!(out, " {h} |");
    }
    let _ = writeln!(out, " tokens@10 | median ms | p95 ms |");
    let _ = write!(out, "|---|---|---|---:|");
    for _ in COLUMNS {
        let _ = write!(out, "---:|");
    }
    let _ = writeln!(out, "---:|---:|---:|");
    for c in cells {
        let status = match c.status {
            Status::Ok => "ok",
            Status::MissingInputs => "missing-inputs",
            Status::Error => "error",
        };
        let _ = write!(
            out,
            "| {} | {} | {} | {} |",
            c.dataset, c.leg, status, c.queries
        );
        for (name, header) in COLUMNS {
            let cell = if c.status == Status::Ok {
                fmt_metric(c, name, header.contains("CI"))
            } else {
                "—".into()
            };
            let _ = write!(out, " {cell} |");
        }
        match (&c.timing, c.status) {
            (Some(t), Status::Ok) => {
                let _ = writeln!(
                    out,
                    " {:.0} | {:.3} | {:.3} |",
                    c.tokens.at_10_mean, t.latency_ms.total.median, t.latency_ms.total.p95
                );
            }
            _ => {
                let _ = writeln!(out, " — | — | — |");
            }
        }
    }
    out
}

/// `matrix.md`: the table plus the reasons of cells without numbers.
pub fn matrix_markdown(cells: &[CellSummary]) -> String {
    let mut out = String::from("# hopbench matrix\n\n");
    out.push_str(&matrix_table(cells));
    let missing: Vec<&CellSummary> = cells.iter().filter(|c| c.status != Status::Ok).collect();
    if !missing.is_empty() {
        out.push_str("\nCells without numbers:\n\n");
        for c in missing {
            let _ = writeln!(
                out,
                "- {} x {}: {}",
                c.dataset,
                c.leg,
                c.reason.as_deref().unwrap_or("")
            );
        }
    }
    out.push_str(
        "\nMeans over the evaluated queries; 95% CIs are percentile bootstrap intervals of the mean \
         (fixed seed). Chain metrics average only queries with a published chain (— where none). \
         Latency is retrieve + select per query, in ms, at the pinned thread count.\n",
    );
    out
}

/// Every summary under `<results>/cells`, sorted by (dataset, leg).
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
    for p in paths {
        out.push(read_summary(&p)?);
    }
    out.sort_by(|a, b| (&a.dataset, &a.leg).cmp(&(&b.dataset, &b.leg)));
    Ok(out)
}
