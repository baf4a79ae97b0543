//! The matrix as a Markdown table: printed at the end of `run-matrix` and written to
//! `results/matrix.md` (every cell found under `results/cells`).

use crate::measure::metrics;
use crate::store::collect::LeftOut;
use crate::store::summary::{CellSummary, Status};
use std::fmt::Write as _;

fn fmt_metric(c: &CellSummary, name: &str, with_ci: bool) -> String {
    match c.metrics.get(name).copied().flatten() {
        None => "—".into(),
        Some(v) => match (with_ci, c.metrics_ci95.get(name)) {
            (true, Some([lo, hi])) => format!("{v:.4} [{lo:.3}, {hi:.3}]"),
            _ => format!("{v:.4}"),
        },
    }
}

/// What each dataset of `cells` indexes per passage, in the order the cells name them:
/// `musique-train100 title+text, mtrag-un text` (a dataset whose cells disagree, e.g. from two
/// runs of different campaigns, lists each label).
pub fn protocols(cells: &[CellSummary]) -> String {
    let mut seen: Vec<(&str, Vec<&str>)> = Vec::new();
    for c in cells.iter().filter(|c| !c.protocol.is_empty()) {
        match seen.iter_mut().find(|(d, _)| *d == c.dataset) {
            Some((_, labels)) if labels.contains(&c.protocol.as_str()) => {}
            Some((_, labels)) => labels.push(&c.protocol),
            None => seen.push((&c.dataset, vec![&c.protocol])),
        }
    }
    seen.iter()
        .map(|(d, labels)| format!("{d} {}", labels.join(" / ")))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The datasets of `cells` whose nDCG has graded gains ([`crate::store::summary::Gain`]), in
/// the order the cells name them (empty: every nDCG is binary).
pub fn graded_datasets(cells: &[CellSummary]) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for c in cells.iter().filter(|c| c.inputs.gain.is_some()) {
        if !out.contains(&c.dataset.as_str()) {
            out.push(&c.dataset);
        }
    }
    out
}

/// The table of `cells`, one row per cell; the metric columns are
/// [`metrics::matrix_columns`] with the cells' extra measures. A line above it names what each dataset indexes (its
/// protocol): numbers of two protocols are not comparable; where some dataset's judgements
/// carry grades, a second line names the datasets whose nDCG takes the grade as the gain (every
/// other nDCG is binary, and a graded nDCG is comparable with trec_eval's `ndcg_cut`, not with
/// a binary one). A cell `left_out` (not trusted) keeps its row, in (dataset, leg) order among
/// the others, marked `not trusted` with no number.
pub fn matrix_table(cells: &[CellSummary], left_out: &[LeftOut]) -> String {
    let columns = metrics::matrix_columns(&crate::store::summary::extra_measures(cells));
    let mut out = String::new();
    let indexed = protocols(cells);
    if !indexed.is_empty() {
        let _ = writeln!(out, "Indexed per passage (protocol): {indexed}.\n");
    }
    let graded = graded_datasets(cells);
    if !graded.is_empty() {
        let _ = writeln!(
            out,
            "nDCG gain: {} on {}; binary (gold is a set) on every other dataset.\n",
            crate::store::summary::Gain::describe(Some(crate::store::summary::Gain::Graded)),
            graded.join(", ")
        );
    }
    let _ = write!(out, "| dataset | leg | status | queries |");
    for (m, ci) in &columns {
        let ci = if *ci { " [95% CI]" } else { "" };
        let _ = write!(out, " {}{ci} |", m.label());
    }
    let _ = writeln!(out, " tokens@10 | median ms | p95 ms |");
    let _ = write!(out, "|---|---|---|---:|");
    for _ in &columns {
        let _ = write!(out, "---:|");
    }
    let _ = writeln!(out, "---:|---:|---:|");
    let mut left = left_out.iter().peekable();
    let no_numbers = format!("—{}", " | —".repeat(columns.len() + 3));
    let left_row = |out: &mut String, l: &LeftOut| {
        let _ = writeln!(
            out,
            "| {} | {} | not trusted | {no_numbers} |",
            l.dataset, l.leg
        );
    };
    for c in cells {
        while let Some(l) = left.next_if(|l| (&l.dataset, &l.leg) < (&c.dataset, &c.leg)) {
            left_row(&mut out, l);
        }
        let status = c.status.name();
        let _ = write!(
            out,
            "| {} | {} | {} | {} |",
            c.dataset, c.leg, status, c.queries
        );
        for (m, ci) in &columns {
            let cell = if c.status == Status::Ok {
                fmt_metric(c, &m.name(), *ci)
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
    for l in left {
        left_row(&mut out, l);
    }
    out
}

/// A warning line naming the datasets whose vectors came from a labelled non-semantic model
/// (the hashing embedder): their dense numbers measure the harness, not a model. Empty when
/// there are none.
pub fn non_semantic_line(cells: &[CellSummary]) -> String {
    let mut flagged: Vec<(&str, &str, &str)> = cells
        .iter()
        .filter_map(|c| {
            let note = c.inputs.model_note.as_deref()?;
            Some((c.dataset.as_str(), c.inputs.model_id.as_deref()?, note))
        })
        .collect();
    flagged.sort_unstable();
    flagged.dedup();
    if flagged.is_empty() {
        return String::new();
    }
    let list: Vec<String> = flagged
        .iter()
        .map(|(d, id, note)| format!("{d} with `{id}` ({note})"))
        .collect();
    format!(
        "**Non-semantic embedding model**: {}. Dense numbers of these datasets measure the \
         harness, not a model.\n\n",
        list.join("; ")
    )
}

/// `matrix.md`: the table plus the reasons of cells without numbers, and of the cells left out
/// because their files do not read or verify.
pub fn matrix_markdown(cells: &[CellSummary], left_out: &[LeftOut]) -> String {
    let mut out = String::from("# hopbench matrix\n\n");
    out.push_str(&non_semantic_line(cells));
    out.push_str(&matrix_table(cells, left_out));
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
    if !left_out.is_empty() {
        out.push_str(
            "\nCells left out, not trusted (their summary, records or run file does not read or \
             verify; the next run-matrix recomputes them):\n\n",
        );
        for l in left_out {
            let _ = writeln!(out, "- {} x {}: {}", l.dataset, l.leg, l.reason);
        }
    }
    out.push_str(
        "\nMeans over the evaluated queries; 95% CIs are percentile bootstrap intervals of the mean \
         (fixed seed). Chain metrics average only queries with a published chain (— where none). \
         Latency is retrieve + select per query, in ms, at the pinned thread count. The protocol \
         is what BM25 and the embedder see per passage: `title+text` (the multi-hop sets' and \
         BEIR's published protocol), `header+text` (the dataset's own header) or `text`; \
         `lexical_content_only` and `dense_content_only` are the text-alone ablations.\n",
    );
    out
}

/// One cell's breakdowns as text: per group key a table of queries, R@10 and nDCG@10 with
/// 95% CIs; the intent confusion matrices; reference-resolution accuracy.
pub fn breakdown_text(c: &CellSummary) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "## {} x {} ({} queries)\n",
        c.dataset, c.leg, c.queries
    );
    if c.status != Status::Ok {
        let _ = writeln!(
            out,
            "status {:?}: {}\n",
            c.status,
            c.reason.clone().unwrap_or_default()
        );
        return out;
    }
    let fmt = |g: &crate::measure::breakdown::Group, name: &str| match g
        .metrics
        .get(name)
        .copied()
        .flatten()
    {
        None => "—".to_string(),
        Some(v) => match g.metrics_ci95.get(name) {
            Some([lo, hi]) => format!("{v:.4} [{lo:.3}, {hi:.3}]"),
            None => format!("{v:.4}"),
        },
    };
    if c.breakdowns.is_empty() {
        let _ = writeln!(out, "no breakdown labels or intents in this cell\n");
    }
    let columns = metrics::breakdown_columns();
    for (key, groups) in &c.breakdowns {
        let _ = write!(out, "| {key} | queries |");
        for m in &columns {
            let _ = write!(out, " {} [95% CI] |", m.label());
        }
        let _ = writeln!(out);
        let _ = writeln!(out, "|---|---:|{}", "---|".repeat(columns.len()));
        for (value, g) in groups {
            let _ = write!(out, "| {value} | {} |", g.queries);
            for m in &columns {
                let _ = write!(out, " {} |", fmt(g, &m.name()));
            }
            let _ = writeln!(out);
        }
        let _ = writeln!(out);
    }
    for (key, rows) in &c.intent_confusion {
        let intents: std::collections::BTreeSet<&String> =
            rows.values().flat_map(|r| r.keys()).collect();
        let _ = write!(out, "| {key} \\ intent |");
        for i in &intents {
            let _ = write!(out, " {i} |");
        }
        let _ = writeln!(out, " total |");
        let _ = write!(out, "|---|");
        for _ in &intents {
            let _ = write!(out, "---:|");
        }
        let _ = writeln!(out, "---:|");
        for (value, row) in rows {
            let _ = write!(out, "| {value} |");
            for i in &intents {
                let _ = write!(out, " {} |", row.get(*i).copied().unwrap_or(0));
            }
            let _ = writeln!(out, " {} |", row.values().sum::<usize>());
        }
        let _ = writeln!(out);
    }
    if let Some(r) = &c.reference_resolution {
        let _ = writeln!(
            out,
            "reference resolution: {} / {} turns correct = {:.4}{} ({} turns resolved something)\n",
            r.correct,
            r.turns,
            r.accuracy,
            r.ci95.map_or(String::new(), |[lo, hi]| format!(
                " [95% CI {lo:.3}, {hi:.3}]"
            )),
            r.resolved
        );
    }
    out
}
