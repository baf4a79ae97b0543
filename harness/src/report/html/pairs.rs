//! The paired comparisons of a dataset page: per leg pair, [`crate::analysis::compare::compare_legs`]'s
//! verdict, per-metric differences with their CIs and Holm-corrected p-values, a figure of the
//! differences with CI whiskers, and the link to the pair's per-query drill-down.

use std::fmt::Write as _;

use anyhow::Result;
use rayon::prelude::*;

use super::drill::{self, Drill};
use super::job::{Job, PairFiles};
use super::page::{self, esc};
use super::svg::{self, Row};
use super::{format, slug, ReportOptions};
use crate::analysis::compare::Comparison;
use crate::store::summary::Status;

/// The paired comparison of every pair, with its difference figure and drill-down page (the
/// pairs are compared in parallel: each is a bootstrap and a randomization test per metric).
pub(crate) fn comparisons(
    o: &ReportOptions,
    job: &Job,
    drill: &Drill<'_>,
    put: &mut impl FnMut(&str, &str) -> Result<()>,
) -> Result<String> {
    let mut s = String::from("<section id=\"comparisons\">\n<h2>Paired comparisons</h2>\n");
    if job.pairs.is_empty() {
        s.push_str(
            "<p>No leg pair to compare on this dataset (none of the configured pairs has both \
             legs here, or fewer than two legs have numbers).</p>\n</section>\n",
        );
        return Ok(s);
    }
    if o.compare.is_empty() {
        s.push_str(
            "<p class=\"muted\">No pair is configured (the campaign's <code>report.compare</code>): \
             the first two legs with numbers are compared.</p>\n",
        );
    }
    let parts: Vec<Result<Pair>> = job
        .pairs
        .par_iter()
        .zip(job.files.pairs.par_iter())
        .map(|((a, b), files)| pair(o, job, drill, a, b, files))
        .collect();
    for part in parts {
        let part = part?;
        for (name, text) in &part.files {
            put(name, text)?;
        }
        s.push_str(&part.html);
    }
    s.push_str("</section>\n");
    Ok(s)
}

/// One pair's share of the dataset page, and the files it needs.
struct Pair {
    html: String,
    files: Vec<(String, String)>,
}

fn pair(
    o: &ReportOptions,
    job: &Job,
    drill: &Drill<'_>,
    a: &str,
    b: &str,
    files: &PairFiles,
) -> Result<Pair> {
    let mut out = Pair {
        html: String::new(),
        files: Vec::new(),
    };
    let s = &mut out.html;
    let _ = writeln!(
        s,
        "<h3 id=\"{}\">{} vs {}</h3>",
        esc(&format!("cmp-{}-vs-{}", slug(a), slug(b))),
        esc(b),
        esc(a)
    );
    match crate::analysis::compare::compare_legs(o.results, job.dataset, a, b, &o.campaign.stats) {
        Err(e) => {
            let _ = writeln!(s, "<p>Not compared: {}</p>", esc(&format!("{e:#}")));
        }
        Ok(cmp) => {
            let (html, fig) = comparison(job.dataset, a, b, &cmp, files);
            s.push_str(&html);
            out.files.extend(fig);
        }
    }
    let ok = |leg: &str| {
        job.cells
            .iter()
            .any(|c| c.leg == leg && c.status == Status::Ok)
    };
    if ok(a) && ok(b) {
        match drill::page(drill, a, b, &job.files.page) {
            Ok(html) => {
                let _ = writeln!(
                    s,
                    "<p><a href=\"{}\">Per query: which gold chunk {} and {} found, at which rank →</a></p>",
                    esc(&files.drill),
                    esc(a),
                    esc(b)
                );
                out.files.push((files.drill.clone(), html));
            }
            Err(e) => {
                let _ = writeln!(
                    s,
                    "<p>No per-query drill-down: {}</p>",
                    esc(&format!("{e:#}"))
                );
            }
        }
    }
    Ok(out)
}

/// The comparison's verdict, difference figure (returned as `(file, svg)`) and table.
fn comparison(
    dataset: &str,
    a: &str,
    b: &str,
    cmp: &Comparison,
    files: &PairFiles,
) -> (String, Option<(String, String)>) {
    let mut s = String::new();
    let Some(cell) = cmp.cells.first() else {
        return ("<p>Nothing compared.</p>\n".into(), None);
    };
    let _ = writeln!(
        s,
        "<p>Verdict: <strong>{}</strong>{} · {} queries · Δ = {b} − {a} per query, paired; \
         p-values Holm-corrected over this pair's {} tests.</p>",
        cell.verdict.label(),
        cell.reason
            .as_ref()
            .map_or(String::new(), |r| format!(" ({})", esc(r))),
        cell.queries,
        cmp.family_size,
        a = esc(a),
        b = esc(b)
    );
    if cell.metrics.is_empty() {
        return (s, None);
    }
    let rows: Vec<Row> = cell
        .metrics
        .iter()
        .filter_map(|m| {
            let d = m.delta?;
            Some(Row {
                label: m.metric.clone(),
                value: d,
                ci: m.ci95,
                hollow: false,
                text: format!(
                    "{}{}",
                    format::delta(d),
                    m.ci95
                        .map_or(String::new(), |c| format!(" {}", format::delta_ci(c)))
                ),
            })
        })
        .collect();
    let mut fig = None;
    if !rows.is_empty() {
        let (range, ticks) = svg::symmetric_range(&rows);
        let title = format!("{dataset}: {b} − {a}, paired difference and 95% bootstrap CI");
        let svg = svg::forest(
            &title,
            "difference of means (b − a); dashed: no difference",
            range,
            &ticks,
            Some(0.0),
            &rows,
        );
        let alt = format!(
            "Paired difference {b} − {a} on {dataset} for each of {} metrics: a dot at the \
             difference of means with a whisker for its 95% paired-bootstrap CI, and a dashed \
             line at zero (no difference); the values are printed beside each row and in the \
             table below.",
            rows.len()
        );
        let _ = writeln!(
            s,
            "<figure>{}<figcaption>{}</figcaption></figure>",
            page::img(&files.delta, &alt, svg::size(rows.len())),
            esc(&alt)
        );
        fig = Some((files.delta.clone(), svg));
    }
    let _ = writeln!(
        s,
        "<div class=\"scroll\">\n<table class=\"comparison\">\n<caption>{b} − {a}: per metric, the \
         means, the paired difference with its CIs and p-values</caption>\n<thead><tr><th scope=\"col\">metric</th>\
         <th scope=\"col\" class=\"num\">{a}</th><th scope=\"col\" class=\"num\">{b}</th>\
         <th scope=\"col\" class=\"num\">Δ {b} − {a}<br><small>[95% bootstrap CI]</small></th>\
         <th scope=\"col\" class=\"num\">paired t<br><small>95% CI</small></th>\
         <th scope=\"col\" class=\"num\">p</th><th scope=\"col\" class=\"num\">p (Holm)</th>\
         <th scope=\"col\" class=\"num\">paired queries</th>\
         <th scope=\"col\" class=\"num\">one-query floor</th>\
         <th scope=\"col\">beyond the floor</th></tr></thead>\n<tbody>",
        a = esc(a),
        b = esc(b)
    );
    let opt = |v: Option<f64>, f: fn(f64) -> String| v.map_or(format::NONE.to_string(), f);
    for m in &cell.metrics {
        let beyond = match m.delta {
            None => format::NONE,
            Some(d) if d.abs() > m.floor + 1e-12 => "yes",
            Some(_) => "no",
        };
        let _ = writeln!(
            s,
            "<tr><th scope=\"row\">{}</th><td class=\"num\">{}</td><td class=\"num\">{}</td>\
             <td class=\"num\" data-metric=\"{}\"><span class=\"v\">{}{}</span></td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
             <td>{beyond}</td></tr>",
            esc(&m.metric),
            opt(m.a, format::mean),
            opt(m.b, format::mean),
            esc(&m.metric),
            opt(m.delta, format::delta),
            m.ci95
                .map_or(String::new(), |c| format!(" <span class=\"ci\">{}</span>", format::delta_ci(c))),
            m.ci95_t.map_or(format::NONE.to_string(), format::delta_ci),
            opt(m.p, format::p),
            opt(m.p_holm, format::p),
            m.paired_n,
            format::mean(m.floor)
        );
    }
    s.push_str("</tbody>\n</table>\n</div>\n");
    (s, fig)
}
