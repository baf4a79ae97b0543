//! The breakdowns of a dataset page: metrics per label value and per classified intent, the
//! intent confusion matrices and reference-resolution accuracy (conversation sets), and the
//! legs' diagnostics.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::format;
use super::matrix::{is_oracle, leg_label, ORACLE_LABEL};
use super::page::{self, esc};
use crate::measure::metrics;
use crate::store::summary::CellSummary;

/// Breakdowns by label and intent, intent confusion and reference resolution (conversation
/// sets; absent elsewhere).
pub(crate) fn conversations(ok: &[&CellSummary]) -> String {
    let mut s = String::from(
        "<section id=\"conversations\">\n<h2>Breakdowns, intents and references</h2>\n",
    );
    let any = ok.iter().any(|c| {
        !c.breakdowns.is_empty()
            || !c.intent_confusion.is_empty()
            || c.reference_resolution.is_some()
    });
    if !any {
        s.push_str("<p>No breakdown: no query of this dataset carries a breakdown label, and no leg classifies intents.</p>\n</section>\n");
        return s;
    }
    // one table per breakdown key: a row per leg, a column group per group value
    let mut keys: BTreeMap<&str, Vec<&CellSummary>> = BTreeMap::new();
    for c in ok {
        for k in c.breakdowns.keys() {
            keys.entry(k.as_str()).or_default().push(c);
        }
    }
    let columns = metrics::breakdown_columns();
    for (key, cells) in keys {
        s.push_str(&breakdown_table(key, &cells, &columns));
    }
    s.push_str(&intent_confusion(ok));
    s.push_str(&reference_resolution(ok));
    s.push_str("</section>\n");
    s
}

/// The table of breakdown `key` over the legs of `cells` that have it: a row per leg, a column
/// group per group value (the union of the legs' values), each with its query count and
/// `columns`.
fn breakdown_table(key: &str, cells: &[&CellSummary], columns: &[metrics::At]) -> String {
    let mut s = String::new();
    let values: std::collections::BTreeSet<&String> = cells
        .iter()
        .flat_map(|c| c.breakdowns[key].keys())
        .collect();
    let _ = write!(
        s,
        "<div class=\"scroll\">\n<table class=\"breakdown sortable\">\n<caption>By {}: per group of \
         queries, mean [95% CI] over the group</caption>\n<thead><tr><td></td>",
        esc(key)
    );
    for v in &values {
        let _ = write!(
            s,
            "<th scope=\"colgroup\" colspan=\"{}\" class=\"group-head\">{} = {}</th>",
            columns.len() + 1,
            esc(key.trim_start_matches("label:")),
            esc(v)
        );
    }
    s.push_str("</tr><tr>");
    s.push_str(&page::sort_th("leg", "leg", "", false));
    for v in &values {
        let col = |m: &str| format!("{v}|{m}");
        s.push_str(&page::sort_th(&col("queries"), "queries", "", true));
        for m in columns {
            s.push_str(&page::sort_th(&col(&m.name()), &m.label(), "", true));
        }
    }
    s.push_str("</tr></thead>\n<tbody>\n");
    for c in cells {
        s.push_str(&breakdown_row(key, c, &values, columns));
    }
    s.push_str("</tbody>\n</table>\n</div>\n");
    s
}

/// One leg's row of [`breakdown_table`]: per group value, its query count and `columns` (a
/// value the leg has no group of shows 0 queries and no metrics). Each cell's sort key is the
/// group's column, so sorting by one group's metric does not read the others'.
fn breakdown_row(
    key: &str,
    c: &CellSummary,
    values: &std::collections::BTreeSet<&String>,
    columns: &[metrics::At],
) -> String {
    let mut s = String::new();
    let groups = &c.breakdowns[key];
    let _ = write!(
        s,
        "<tr data-row data-leg=\"{}\"><th scope=\"row\" data-col=\"leg\" data-sort=\"{}\">{}</th>",
        esc(&c.leg),
        esc(&c.leg),
        leg_label(c)
    );
    for v in values {
        let col = |m: &str| format!("{v}|{m}");
        match groups.get(*v) {
            None => {
                s.push_str(&page::num_td(&col("queries"), "0", Some(0.0)));
                for m in columns {
                    s.push_str(&page::num_td(&col(&m.name()), format::NONE, None));
                }
            }
            Some(g) => {
                s.push_str(&page::num_td(
                    &col("queries"),
                    &g.queries.to_string(),
                    Some(g.queries as f64),
                ));
                for m in columns {
                    let n = m.name();
                    let td = page::metric_td(
                        &n,
                        g.metrics.get(&n).copied().flatten(),
                        g.metrics_ci95.get(&n).copied(),
                        None,
                        g.queries,
                    );
                    // the sort key is the group's column, not the metric's
                    s.push_str(&td.replacen(
                        &format!("data-col=\"{}\"", esc(&n)),
                        &format!("data-col=\"{}\"", esc(&col(&n))),
                        1,
                    ));
                }
            }
        }
    }
    s.push_str("</tr>\n");
    s
}

/// The intent confusion matrices of the legs that classify intents: per leg and label key,
/// the queries per label value (rows) and classified intent (columns); empty without any.
fn intent_confusion(ok: &[&CellSummary]) -> String {
    let mut s = String::new();
    let confusion: Vec<&&CellSummary> = ok
        .iter()
        .filter(|c| !c.intent_confusion.is_empty())
        .collect();
    if !confusion.is_empty() {
        s.push_str("<h3>Intent confusion</h3>\n<p class=\"muted\">Queries per dataset label value (rows) and intent the leg classified (columns).</p>\n<div class=\"flex\">\n");
        for c in confusion {
            for (key, rows) in &c.intent_confusion {
                let intents: std::collections::BTreeSet<&String> =
                    rows.values().flat_map(|r| r.keys()).collect();
                let _ = write!(
                    s,
                    "<table class=\"confusion\">\n<caption>{}: {} × intent</caption>\n<thead><tr><th scope=\"col\">{}</th>",
                    esc(&c.leg),
                    esc(key),
                    esc(key.trim_start_matches("label:"))
                );
                for i in &intents {
                    let _ = write!(s, "<th scope=\"col\" class=\"num\">{}</th>", esc(i));
                }
                s.push_str("<th scope=\"col\" class=\"num\">total</th></tr></thead>\n<tbody>\n");
                for (value, row) in rows {
                    let _ = write!(s, "<tr><th scope=\"row\">{}</th>", esc(value));
                    for i in &intents {
                        let _ = write!(
                            s,
                            "<td class=\"num\">{}</td>",
                            row.get(*i).copied().unwrap_or(0)
                        );
                    }
                    let _ = writeln!(
                        s,
                        "<td class=\"num\">{}</td></tr>",
                        row.values().sum::<usize>()
                    );
                }
                s.push_str("</tbody>\n</table>\n");
            }
        }
        s.push_str("</div>\n");
    }
    s
}

/// The reference-resolution accuracy of the legs that resolve references (derived dialogues);
/// empty without any.
fn reference_resolution(ok: &[&CellSummary]) -> String {
    let mut s = String::new();
    let refs: Vec<&&CellSummary> = ok
        .iter()
        .filter(|c| c.reference_resolution.is_some())
        .collect();
    if !refs.is_empty() {
        s.push_str(
            "<h3>Reference resolution</h3>\n<table class=\"references\">\n<thead><tr><th scope=\"col\">leg</th>\
             <th scope=\"col\" class=\"num\">turns with a known referent</th><th scope=\"col\" class=\"num\">resolved something</th>\
             <th scope=\"col\" class=\"num\">all referents correct</th><th scope=\"col\" class=\"num\">accuracy<br><small>[95% CI]</small></th></tr></thead>\n<tbody>\n",
        );
        for c in refs {
            let r = c.reference_resolution.as_ref().expect("filtered");
            let _ = writeln!(
                s,
                "<tr><th scope=\"row\">{}</th><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
                 <td class=\"num\"><span class=\"v\">{}{}</span></td></tr>",
                esc(&c.leg),
                r.turns,
                r.resolved,
                r.correct,
                format::mean(r.accuracy),
                r.ci95.map_or(String::new(), |c| format!(" <span class=\"ci\">{}</span>", format::ci(c)))
            );
        }
        s.push_str("</tbody>\n</table>\n");
    }
    s
}

/// The legs' diagnostics (means over the cell's queries), one table per set of diagnostic
/// names: a row per diagnostic, a column per leg.
pub(crate) fn diagnostics(ok: &[&CellSummary]) -> String {
    let mut s = String::from("<section id=\"diagnostics\">\n<h2>Diagnostics</h2>\n");
    let mut groups: BTreeMap<Vec<&String>, Vec<&CellSummary>> = BTreeMap::new();
    let mut none = Vec::new();
    for c in ok {
        if c.diagnostics.is_empty() {
            none.push(c.leg.as_str());
        } else {
            groups
                .entry(c.diagnostics.keys().collect())
                .or_default()
                .push(c);
        }
    }
    if groups.is_empty() {
        s.push_str("<p>No leg of this dataset reports diagnostics.</p>\n</section>\n");
        return s;
    }
    s.push_str(
        "<p class=\"muted\">Means over each leg's evaluated queries (n in the column header) of what \
         the leg reports about itself per query: gate decisions, rescued gold, list lengths, intent \
         shares, blend weights... Descriptive, without CI.</p>\n<div class=\"flex\">\n",
    );
    for (keys, cells) in groups {
        s.push_str("<table class=\"diagnostics\">\n<thead><tr><th scope=\"col\">diagnostic</th>");
        for c in &cells {
            let _ = write!(
                s,
                "<th scope=\"col\" class=\"num\">{}<br><small>n={}</small>{}</th>",
                esc(&c.leg),
                c.queries,
                if is_oracle(c) {
                    format!("<br><span class=\"tag\">{ORACLE_LABEL}</span>")
                } else {
                    String::new()
                }
            );
        }
        s.push_str("</tr></thead>\n<tbody>\n");
        for k in keys {
            let _ = write!(s, "<tr><th scope=\"row\">{}</th>", esc(k));
            for c in &cells {
                let _ = write!(
                    s,
                    "<td class=\"num\">{}</td>",
                    format::mean(c.diagnostics[k])
                );
            }
            s.push_str("</tr>\n");
        }
        s.push_str("</tbody>\n</table>\n");
    }
    s.push_str("</div>\n");
    if !none.is_empty() {
        let _ = writeln!(
            s,
            "<p class=\"muted\">Legs without diagnostics: {}.</p>",
            esc(&none.join(", "))
        );
    }
    s.push_str("</section>\n");
    s
}
