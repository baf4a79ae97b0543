//! The budget curves of a dataset page: the figure ([`crate::report::plot::svg`], with CI bands) and
//! a table of every point's numbers.

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::Result;

use super::job::Job;
use super::page::{self, esc};
use super::{format, ReportOptions};
use crate::pipeline::curve::Curve;

/// The dataset's budget curves: the figure (drawn by [`crate::report::plot::svg`] from the
/// curves that verify) and their numbers, and the curves that do not read or verify, named with
/// why on the page and returned as `(leg, why)` for the caller to say on stderr.
pub(crate) fn curves_section(
    o: &ReportOptions,
    job: &Job,
    put: &mut impl FnMut(&str, &str) -> Result<()>,
) -> Result<(String, Vec<(String, String)>)> {
    let mut s = String::from("<section id=\"curves\">\n<h2>Budget curves</h2>\n");
    let dir = o.results.join("curves").join(job.dataset);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| p.to_string_lossy().ends_with(".curve.json"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    let mut curves: Vec<Curve> = Vec::new();
    let mut untrusted = Vec::new();
    for p in &files {
        let leg = p
            .file_name()
            .map(|n| {
                n.to_string_lossy()
                    .trim_end_matches(".curve.json")
                    .to_string()
            })
            .unwrap_or_default();
        let (json, rows) = crate::pipeline::curve::paths(o.results, job.dataset, &leg);
        match crate::pipeline::curve::read_verified(&json, &rows) {
            Ok(c) => curves.push(c),
            Err(e) => untrusted.push((leg, format!("{e:#}"))),
        }
    }
    if curves.is_empty() && untrusted.is_empty() {
        s.push_str(
            "<p>No budget curve: no selecting leg ran on this dataset (or <code>--no-curves</code>).</p>\n</section>\n",
        );
        return Ok((s, untrusted));
    }
    if !curves.is_empty() {
        let text = format!(
            "<!-- {} -->\n{}",
            super::MARKER,
            crate::report::plot::svg(job.dataset, &curves)?
        );
        put(&job.files.curves, &text)?;
        let names = crate::pipeline::curve::metric_names();
        let alt = format!(
            "Budget curves of {} legs on {}: one panel per metric ({}) and one of tokens spent, \
             mean over {} queries against the token budget on a log axis; each leg is a line with \
             its own colour, marker shape and dash pattern, the shaded band around it its 95% CI \
             (the tokens panel has no CI: curve files record the mean and maximum spend only). \
             The numbers are in the table below the figure.",
            curves.len(),
            job.dataset,
            names.join(", "),
            curves.iter().map(|c| c.queries).max().unwrap_or(0)
        );
        let _ = writeln!(
            s,
            "<figure>{}<figcaption>{}</figcaption></figure>",
            page::img(&job.files.curves, &alt, (1500, 900)),
            esc(&alt)
        );
        s.push_str(&curve_table(&curves, &names));
    }
    if !untrusted.is_empty() {
        s.push_str(
            "<p>Curves left out, not trusted: their file or rows do not read or verify (the \
             next <code>hopbench run-matrix</code> recomputes them):</p>\n<ul>\n",
        );
        for (leg, why) in &untrusted {
            let _ = writeln!(s, "<li>{}: {}</li>", esc(leg), esc(why));
        }
        s.push_str("</ul>\n");
    }
    s.push_str("</section>\n");
    Ok((s, untrusted))
}

fn curve_table(curves: &[Curve], names: &[String]) -> String {
    let mut s = String::from(
        "<details>\n<summary>The curves' numbers: mean [95% CI] per budget</summary>\n<div class=\"scroll\">\n\
         <table id=\"curve-table\">\n<thead><tr><th scope=\"col\">leg</th><th scope=\"col\" class=\"num\">budget</th>\
         <th scope=\"col\" class=\"num\">queries</th>",
    );
    for n in names {
        let _ = write!(s, "<th scope=\"col\" class=\"num\">{}</th>", esc(n));
    }
    s.push_str(
        "<th scope=\"col\" class=\"num\">tokens spent<br><small>mean</small></th>\
         <th scope=\"col\" class=\"num\">tokens spent<br><small>max</small></th>\
         <th scope=\"col\" class=\"num\">chunks<br><small>mean</small></th></tr></thead>\n",
    );
    for c in curves {
        let _ = write!(s, "<tbody>");
        for (i, p) in c.points.iter().enumerate() {
            s.push_str("<tr>");
            if i == 0 {
                let _ = write!(
                    s,
                    "<th scope=\"rowgroup\" rowspan=\"{}\">{}</th>",
                    c.points.len(),
                    esc(&c.leg)
                );
            }
            let _ = write!(
                s,
                "<td class=\"num\">{}</td><td class=\"num\">{}</td>",
                p.budget, c.queries
            );
            for n in names {
                s.push_str(&page::metric_td(
                    n,
                    p.metrics.get(n).copied().flatten(),
                    p.metrics_ci95.get(n).copied(),
                    None,
                    c.queries,
                ));
            }
            let _ = write!(
                s,
                "<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{:.1}</td></tr>",
                format::tokens(p.tokens_mean),
                p.tokens_max,
                p.selected_mean
            );
        }
        s.push_str("</tbody>\n");
    }
    s.push_str("</table>\n</div>\n</details>\n");
    s
}
