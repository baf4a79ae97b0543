//! `d-<dataset>.html` and its figures and drill-down pages: every metric of every leg and the
//! headline recall with CI whiskers (here), the budget curves ([`super::curves`]), the paired
//! comparisons ([`super::pairs`]), the breakdowns and diagnostics ([`super::groups`]).

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::Result;

use super::job::Job;
use super::matrix::{dataset_counts, is_oracle, leg_label, status_counts};
use super::page::{self, esc};
use super::svg::{self, Row};
use super::{curves, format, groups, pairs, ReportOptions};
use crate::measure::metrics;
use crate::store::summary::{CellSummary, Status};

/// What one dataset's share of the report wrote, and the budget curves it left out.
pub(crate) struct Written {
    /// Each file written, with its size.
    pub files: Vec<(PathBuf, u64)>,
    /// The curves not drawn because they do not read or verify: `(leg, why)`, in leg order.
    pub curves_left_out: Vec<(String, String)>,
}

/// Writes the dataset's page, figures and drill-down pages; returns what it wrote.
pub(crate) fn write(o: &ReportOptions, job: &Job) -> Result<Written> {
    let mut written = Vec::new();
    let mut put = |name: &str, text: &str| -> Result<()> {
        written.push(super::write(&o.out.join(name), text)?);
        Ok(())
    };
    let ok: Vec<&CellSummary> = job
        .cells
        .iter()
        .copied()
        .filter(|c| c.status == Status::Ok)
        .collect();
    let mut body = String::new();
    body.push_str(&intro(o, job));
    body.push_str(&super::left_out::section(&job.left_out, false));

    // the headline with CI whiskers, then every metric
    body.push_str("<section id=\"metrics\">\n<h2>Every metric</h2>\n");
    if let Some(fig) = recall_figure(job.dataset, &ok) {
        put(&job.files.recall, &fig.svg)?;
        let _ = writeln!(
            body,
            "<figure>{}<figcaption>{}</figcaption></figure>",
            page::img(&job.files.recall, &fig.alt, fig.size),
            esc(&fig.alt)
        );
    }
    body.push_str(&metrics_table(&ok));
    body.push_str(&without_numbers(job.cells));
    body.push_str("</section>\n");

    let (section, curves_left_out) = curves::curves_section(o, job, &mut put)?;
    body.push_str(&section);
    // every drill-down page of the dataset reads its run files from this one pass
    let legs: Vec<&str> = ok.iter().map(|c| c.leg.as_str()).collect();
    let drill = super::drill::Drill::read(o.results, job.dataset, &legs);
    body.push_str(&pairs::comparisons(o, job, &drill, &mut put)?);
    body.push_str(&drill_section(job, &legs, &drill, &mut put)?);
    body.push_str(&groups::conversations(&ok));
    body.push_str(&groups::diagnostics(&ok));

    let mut nav = vec![("index.html".to_string(), "← matrix".to_string())];
    if !job.left_out.is_empty() {
        nav.push(("#left-out".into(), "left out".into()));
    }
    nav.extend([
        ("#metrics".into(), "metrics".into()),
        ("#curves".into(), "budget curves".into()),
        ("#comparisons".into(), "paired comparisons".into()),
        ("#per-query".into(), "per query".into()),
        ("#conversations".into(), "breakdowns".into()),
        ("#diagnostics".into(), "diagnostics".into()),
    ]);
    let (queries, without) = dataset_counts(job.cells);
    let html = page::page(
        &format!("hopbench report: {}", job.dataset),
        &format!(
            "queries evaluated: {queries} · queries without gold (not evaluated): {without} · \
             cells: {}",
            status_counts(job.cells, job.left_out.len())
        ),
        &nav,
        &body,
    );
    put(&job.files.page, &html)?;
    Ok(Written {
        files: written,
        curves_left_out,
    })
}

/// The link to the every-leg drill-down (written here), or why there is none.
fn drill_section(
    job: &Job,
    legs: &[&str],
    drill: &super::drill::Drill<'_>,
    put: &mut impl FnMut(&str, &str) -> Result<()>,
) -> Result<String> {
    let mut s = String::from("<section id=\"per-query\">\n<h2>Per query, any two legs</h2>\n");
    if legs.is_empty() {
        s.push_str("<p>No leg has numbers on this dataset.</p>\n</section>\n");
        return Ok(s);
    }
    match super::drill::all_legs_page(drill, legs, &job.files.page) {
        Ok(html) => {
            put(&job.files.drill, &html)?;
            let _ = writeln!(
                s,
                "<p><a href=\"{}\">Per query: which gold chunk each of the {} legs found, at which \
                 rank; pick any two to compare →</a></p>",
                esc(&job.files.drill),
                legs.len()
            );
        }
        Err(e) => {
            let _ = writeln!(
                s,
                "<p>No per-query drill-down: {}</p>",
                esc(&format!("{e:#}"))
            );
        }
    }
    s.push_str("</section>\n");
    Ok(s)
}

fn intro(o: &ReportOptions, job: &Job) -> String {
    let mut s = String::new();
    if let Some(spec) = o.campaign.datasets.get(job.dataset) {
        let mut facts = vec![
            format!("format <code>{}</code>", esc(spec.format.name())),
            format!("indexes {}", super::matrix::indexed(job.cells)),
        ];
        if let Some(from) = &spec.derive_from {
            facts.push(format!(
                "<strong>derived</strong>: scripted dialogues made from the decompositions of \
                 <code>{}</code> (easier than human dialogue)",
                esc(from)
            ));
        }
        if !spec.pool.is_empty() {
            facts.push(format!("pool of {}", esc(&spec.pool.join(", "))));
        }
        if let Some(note) = &spec.note {
            facts.push(format!("note: {}", esc(note)));
        }
        let _ = writeln!(s, "<p>{}.</p>", facts.join("; "));
    }
    s
}

/// A figure and its alt text.
struct Figure {
    svg: String,
    alt: String,
    size: (u32, u32),
}

/// The headline metric (recall@10) of every leg with numbers, with CI whiskers, best first.
fn recall_figure(dataset: &str, ok: &[&CellSummary]) -> Option<Figure> {
    let h = metrics::headline();
    let name = h.name();
    let mut rows: Vec<(f64, Row)> = ok
        .iter()
        .filter_map(|c| {
            let v = c.metrics.get(&name).copied().flatten()?;
            let ci = c.metrics_ci95.get(&name).copied();
            Some((
                v,
                Row {
                    label: if is_oracle(c) {
                        format!("{} (oracle)", c.leg)
                    } else {
                        c.leg.clone()
                    },
                    value: v,
                    ci,
                    hollow: is_oracle(c),
                    text: format!(
                        "{}  n={}",
                        format::metric(&c.metrics, &c.metrics_ci95, &name, true),
                        c.metrics_defined.get(&name).copied().unwrap_or(c.queries)
                    ),
                },
            ))
        })
        .collect();
    if rows.is_empty() {
        return None;
    }
    rows.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.label.cmp(&b.1.label)));
    let rows: Vec<Row> = rows.into_iter().map(|r| r.1).collect();
    let title = format!("{dataset}: {} per leg, mean and 95% CI", h.label());
    let svg = svg::forest(
        &title,
        &format!("{} (mean over queries)", h.name()),
        (0.0, 1.0),
        &[0.0, 0.25, 0.5, 0.75, 1.0],
        None,
        &rows,
    );
    let alt = format!(
        "{} of the {} legs with numbers on {dataset}, best first: a dot per leg at its mean with \
         a whisker for its 95% CI (hollow diamonds: oracles, upper bounds rather than systems); \
         the values are printed beside each row and in the table below.",
        h.label(),
        rows.len()
    );
    Some(Figure {
        size: svg::size(rows.len()),
        svg,
        alt,
    })
}

/// Every metric the cells measured, in report order.
fn metric_names(cells: &[&CellSummary]) -> Vec<(String, String)> {
    let mut ks: Vec<usize> = cells
        .iter()
        .flat_map(|c| c.inputs.recall_k.iter().copied())
        .collect();
    ks.sort_unstable();
    ks.dedup();
    let extra = crate::store::summary::extra_measures(cells.iter().copied());
    metrics::measured(&ks, &extra)
        .into_iter()
        .map(|m| (m.name(), m.label()))
        .filter(|(n, _)| cells.iter().any(|c| c.metrics.contains_key(n)))
        .collect()
}

fn metrics_table(ok: &[&CellSummary]) -> String {
    if ok.is_empty() {
        return "<p>No cell of this dataset has numbers.</p>\n".into();
    }
    let names = metric_names(ok);
    let mut s = String::from(
        "<div class=\"scroll\">\n<table class=\"sortable\" id=\"metrics-table\">\n<caption>Every \
         metric of every leg with numbers: mean and 95% CI over the row's queries (n where a \
         metric is defined on fewer)</caption>\n<thead><tr>",
    );
    s.push_str(&page::sort_th("leg", "leg", "", false));
    s.push_str(&page::sort_th("queries", "queries", "", true));
    for (n, label) in &names {
        s.push_str(&page::sort_th(n, label, "", true));
    }
    s.push_str(&page::sort_th("tokens", "tokens", "selection, mean", true));
    s.push_str(&page::sort_th("tokens@10", "tokens@10", "mean", true));
    s.push_str("</tr></thead>\n<tbody>\n");
    for c in ok {
        let _ = write!(
            s,
            "<tr data-row data-leg=\"{}\"{}><th scope=\"row\" data-col=\"leg\" data-sort=\"{}\">{}</th>",
            esc(&c.leg),
            if is_oracle(c) { " class=\"oracle\"" } else { "" },
            esc(&c.leg),
            leg_label(c)
        );
        s.push_str(&page::num_td(
            "queries",
            &c.queries.to_string(),
            Some(c.queries as f64),
        ));
        for (n, _) in &names {
            s.push_str(&page::metric_td(
                n,
                c.metrics.get(n).copied().flatten(),
                c.metrics_ci95.get(n).copied(),
                c.metrics_defined.get(n).copied(),
                c.queries,
            ));
        }
        s.push_str(&page::num_td(
            "tokens",
            &format::tokens(c.tokens.selected_mean),
            Some(c.tokens.selected_mean),
        ));
        s.push_str(&page::num_td(
            "tokens@10",
            &format::tokens(c.tokens.at_10_mean),
            Some(c.tokens.at_10_mean),
        ));
        s.push_str("</tr>\n");
    }
    s.push_str("</tbody>\n</table>\n</div>\n");
    s
}

fn without_numbers(cells: &[&CellSummary]) -> String {
    let rest: Vec<&&CellSummary> = cells.iter().filter(|c| c.status != Status::Ok).collect();
    if rest.is_empty() {
        return String::new();
    }
    let mut s = String::from("<h3>Cells without numbers</h3>\n<ul>\n");
    for c in rest {
        let _ = writeln!(
            s,
            "<li><strong>{}</strong> {}: {}</li>",
            esc(&c.leg),
            page::status(c.status),
            esc(c.reason.as_deref().unwrap_or(""))
        );
    }
    s.push_str("</ul>\n");
    s
}
