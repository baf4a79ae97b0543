//! `index.html`: the protocol facts, the datasets, and the matrix (one row per cell, the
//! numbers of `matrix.md` in its format, every mean with its 95% CI).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::job::Job;
use super::page::{self, esc};
use super::{format, left_out, ReportOptions};
use hopbench_legs::registry::{role_of, Role};

use crate::measure::metrics;
use crate::store::summary::{CellSummary, Gain, Status};

/// The label of an oracle leg, wherever it is shown.
pub(crate) const ORACLE_LABEL: &str = "oracle: upper bound, not a system";

/// The leg kind recorded in the cell's inputs.
pub(crate) fn kind(c: &CellSummary) -> Option<&str> {
    c.inputs.leg_config.get("kind").and_then(|k| k.as_str())
}

/// Whether the cell's leg is an oracle (derived from the gold), as its kind declares. Read from
/// the kind's name in the summary, so summaries already on disk are labelled the same way.
pub(crate) fn is_oracle(c: &CellSummary) -> bool {
    kind(c).and_then(role_of) == Some(Role::Oracle)
}

/// The leg's header cell content: its name, its kind when that is not its name, and the
/// oracle label.
pub(crate) fn leg_label(c: &CellSummary) -> String {
    let mut out = format!("<span class=\"leg\">{}</span>", esc(&c.leg));
    if let Some(k) = kind(c).filter(|k| *k != c.leg) {
        let _ = write!(out, "<span class=\"kind\">kind {}</span>", esc(k));
    }
    if is_oracle(c) {
        let _ = write!(out, "<br><span class=\"tag\">{ORACLE_LABEL}</span>");
    }
    out
}

/// Distinct values of `f` over `cells`, each with the number of cells that have it when there
/// is more than one.
fn distinct(cells: &[&CellSummary], f: impl Fn(&CellSummary) -> Option<String>) -> String {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for c in cells {
        if let Some(v) = f(c) {
            *seen.entry(v).or_default() += 1;
        }
    }
    match seen.len() {
        0 => format::NONE.to_string(),
        1 => esc(seen.keys().next().expect("one value")),
        _ => seen
            .iter()
            .map(|(v, n)| format!("{} <small>({n} cells)</small>", esc(v)))
            .collect::<Vec<_>>()
            .join("; "),
    }
}

/// Per-dataset facts: distinct query counts of the cells with numbers (or of every cell), and
/// the queries without gold.
pub(crate) fn dataset_counts(cells: &[&CellSummary]) -> (String, String) {
    let measured: Vec<&&CellSummary> = cells
        .iter()
        .filter(|c| matches!(c.status, Status::Ok | Status::Empty))
        .collect();
    let join = |f: &dyn Fn(&CellSummary) -> usize| {
        let mut v: Vec<usize> = measured.iter().map(|c| f(c)).collect();
        v.sort_unstable();
        v.dedup();
        if v.is_empty() {
            format::NONE.to_string()
        } else {
            v.iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(" / ")
        }
    };
    (join(&|c| c.queries), join(&|c| c.queries_without_gold))
}

/// What a dataset's cells index per passage (their protocol label), as code.
pub(crate) fn indexed(cells: &[&CellSummary]) -> String {
    let labels = distinct(cells, |c| {
        Some(c.protocol.clone()).filter(|p| !p.is_empty())
    });
    if labels == format::NONE {
        labels
    } else {
        format!("<code>{labels}</code>")
    }
}

/// Cells per status, `12 ok, 6 missing-inputs`, then the cells left out (`1 not trusted`).
pub(crate) fn status_counts(cells: &[&CellSummary], left_out: usize) -> String {
    let mut n: BTreeMap<&str, usize> = BTreeMap::new();
    for c in cells {
        *n.entry(c.status.name()).or_default() += 1;
    }
    if left_out > 0 {
        n.insert(left_out::NOT_TRUSTED, left_out);
    }
    [
        "ok",
        "missing-inputs",
        "error",
        "empty",
        left_out::NOT_TRUSTED,
    ]
    .iter()
    .filter_map(|s| n.get(s).map(|k| format!("{k} {s}")))
    .collect::<Vec<_>>()
    .join(", ")
}

/// The CI settings of a cell, in words.
fn ci_text(ci: &crate::measure::stats_config::StatsConfig) -> String {
    if ci.ci == crate::measure::stats_config::CiMode::Off {
        "CIs off (ci: off): no interval anywhere".into()
    } else {
        format!(
            "95% CIs: percentile bootstrap of the mean, {} resamples, seed {}",
            ci.resamples, ci.seed
        )
    }
}

/// How the campaign's `stats` compare two legs, in words.
fn comparison_text(st: &crate::measure::stats_config::StatsConfig) -> String {
    if st.ci == crate::measure::stats_config::CiMode::Off {
        "campaign stats: ci off (differences without CI or p-value)".into()
    } else {
        format!(
            "difference b − a per query: paired bootstrap 95% CI ({} resamples), paired t \
             95% CI, two-sided sign-flip randomization p ({} permutations), seed {}; \
             Holm-corrected over each pair's metrics (campaign <code>stats</code>)",
            st.resamples, st.permutations, st.seed
        )
    }
}

/// A cell's determinism contract in words: its version, target and token counter.
fn contract_text(c: &CellSummary) -> Option<String> {
    let k = &c.inputs.contract;
    serde_json::to_value(k).ok().map(|v| {
        let get = |f: &str| {
            v.get(f)
                .map(|x| x.to_string().trim_matches('"').to_string())
        };
        format!(
            "v{}, {}, token counter {}",
            get("version").unwrap_or_default(),
            get("target").unwrap_or_default(),
            get("token_counter").unwrap_or_default()
        )
    })
}

/// The configured leg pairs (`report.compare`), each with the datasets that have both legs.
fn compared_pairs(o: &ReportOptions, jobs: &[Job]) -> String {
    let pairs: Vec<String> = if o.compare.is_empty() {
        vec![
            "none configured (<code>report.compare</code>): each dataset's first two ok legs"
                .into(),
        ]
    } else {
        o.compare
            .iter()
            .map(|(a, b)| {
                let on: Vec<&str> = jobs
                    .iter()
                    .filter(|j| j.pairs.iter().any(|(x, y)| x == a && y == b))
                    .map(|j| j.dataset)
                    .collect();
                format!(
                    "{} vs {} <small>({})</small>",
                    esc(b),
                    esc(a),
                    if on.is_empty() {
                        "no dataset has both".to_string()
                    } else {
                        esc(&on.join(", "))
                    }
                )
            })
            .collect()
    };
    pairs.join("; ")
}

/// The protocol section: the settings every number of the report was made under (from the
/// cells' recorded inputs, or the campaign's for the comparisons).
fn protocol(o: &ReportOptions, cells: &[&CellSummary], jobs: &[Job]) -> String {
    let mut s =
        String::from("<section id=\"protocol\">\n<h2>Protocol</h2>\n<dl class=\"facts\">\n");
    let mut fact = |k: &str, v: String| {
        let _ = writeln!(s, "<dt>{k}</dt><dd>{v}</dd>");
    };
    fact(
        "recall k values",
        distinct(cells, |c| {
            Some(
                c.inputs
                    .recall_k
                    .iter()
                    .map(usize::to_string)
                    .collect::<Vec<_>>()
                    .join(", "),
            )
        }),
    );
    fact(
        "confidence intervals",
        distinct(cells, |c| Some(ci_text(&c.inputs.ci))),
    );
    fact("paired comparisons", comparison_text(&o.campaign.stats));
    fact(
        "query limit",
        distinct(cells, |c| {
            Some(match c.inputs.limit {
                None => "none: every query with gold".into(),
                Some(n) => {
                    format!("--limit {n}: the first {n} queries (not comparable with full runs)")
                }
            })
        }),
    );
    fact(
        "breakdown labels",
        distinct(cells, |c| Some(c.inputs.breakdown_labels.join(", "))),
    );
    fact(
        "embedding model",
        distinct(cells, |c| {
            c.inputs
                .model_id
                .as_ref()
                .map(|id| match &c.inputs.model_note {
                    Some(note) => format!("{id} ({note})"),
                    None => id.clone(),
                })
        }),
    );
    fact(
        "code version",
        distinct(cells, |c| Some(c.inputs.code_version.clone())),
    );
    fact("determinism contract", distinct(cells, contract_text));
    fact(
        "threads",
        distinct(cells, |c| {
            c.timing
                .as_ref()
                .map(|t| format!("{} ({:?})", t.threads, t.thread_source).to_lowercase())
        }),
    );
    fact("compared leg pairs", compared_pairs(o, jobs));
    s.push_str("</dl>\n");
    s.push_str(
        "<p>Each mean is over the queries in its row (a chain metric only over queries with a \
         published chain: its count is shown where it differs). One query moves a mean by 1/n: \
         read every number with its interval. Tokens and latency are descriptive (no CI): \
         tokens@10 is the mean heuristic token count of the first 10 selected chunks, latency the \
         median and 95th percentile of retrieve + select per query, in ms, at the pinned thread \
         count.</p>\n</section>\n",
    );
    s
}

fn datasets(o: &ReportOptions, jobs: &[Job]) -> String {
    let mut s = String::from(
        "<section id=\"datasets\">\n<h2>Datasets</h2>\n<table>\n<thead><tr>\
         <th scope=\"col\">dataset</th><th scope=\"col\">format</th>\
         <th scope=\"col\" class=\"num\">queries evaluated</th>\
         <th scope=\"col\" class=\"num\">queries without gold</th>\
         <th scope=\"col\">indexed (protocol)</th><th scope=\"col\">nDCG gain</th>\
         <th scope=\"col\">cells</th><th scope=\"col\">note</th></tr></thead>\n<tbody>\n",
    );
    for j in jobs {
        let (queries, without) = dataset_counts(j.cells);
        let spec = o.campaign.datasets.get(j.dataset);
        let format = spec.map_or(String::new(), |d| {
            let mut f = d.format.name().to_string();
            if let Some(from) = &d.derive_from {
                f = format!("{f} (derived from {from})");
            }
            f
        });
        let _ = writeln!(
            s,
            "<tr><th scope=\"row\"><a href=\"{}\">{}</a></th><td>{}</td><td class=\"num\">{queries}</td>\
             <td class=\"num\">{without}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&j.files.page),
            esc(j.dataset),
            esc(&format),
            indexed(j.cells),
            distinct(j.cells, |c| c.inputs.export.is_some()
                .then(|| Gain::describe(c.inputs.gain).to_string())),
            status_counts(j.cells, j.left_out.len()),
            esc(spec.and_then(|d| d.note.as_deref()).unwrap_or(""))
        );
    }
    s.push_str("</tbody>\n</table>\n</section>\n");
    s
}

/// The matrix table: one `<tbody>` per dataset (sorting keeps each dataset's legs together).
pub(crate) fn table(jobs: &[Job]) -> String {
    let columns = metrics::matrix_columns(&crate::store::summary::extra_measures(
        jobs.iter().flat_map(|j| j.cells.iter().copied()),
    ));
    let span = columns.len() + 3;
    let mut s = String::from(
        "<div class=\"scroll\">\n<table class=\"sortable\" id=\"matrix\">\n<caption>The matrix: one row per cell \
         (dataset × leg); each metric is its mean over the row's queries with its 95% CI below it; \
         latency is retrieve + select per query. Click a column header to sort each dataset's legs \
         by it.</caption>\n<thead><tr>",
    );
    s.push_str(&page::sort_th("leg", "leg", "", false));
    s.push_str(&page::sort_th("status", "status", "", false));
    s.push_str(&page::sort_th("queries", "queries", "", true));
    for (m, _) in &columns {
        s.push_str(&page::sort_th(&m.name(), &m.label(), "", true));
    }
    s.push_str(&page::sort_th("tokens@10", "tokens@10", "mean", true));
    s.push_str(&page::sort_th("median_ms", "median", "ms", true));
    s.push_str(&page::sort_th("p95_ms", "p95", "ms", true));
    s.push_str("</tr></thead>\n");
    for j in jobs {
        let (queries, without) = dataset_counts(j.cells);
        let _ = writeln!(
            s,
            "<tbody data-dataset=\"{0}\">\n<tr class=\"group\"><th scope=\"rowgroup\" colspan=\"{1}\">\
             <strong><a href=\"{2}\">{0}</a></strong> queries evaluated: {queries} · without gold: \
             {without} · cells: {3}</th></tr>",
            esc(j.dataset),
            span + 3,
            esc(&j.files.page),
            status_counts(j.cells, j.left_out.len())
        );
        // the left-out cells keep their rows, in leg order among the others
        let mut left = j.left_out.iter().peekable();
        for c in j.cells {
            while let Some(l) = left.next_if(|l| l.leg < c.leg) {
                s.push_str(&left_out::row(l, span));
            }
            s.push_str(&row(c, &columns, span));
        }
        for l in left {
            s.push_str(&left_out::row(l, span));
        }
        s.push_str("</tbody>\n");
    }
    s.push_str("</table>\n</div>\n");
    s
}

fn row(c: &CellSummary, columns: &[(metrics::At, bool)], span: usize) -> String {
    let mut s = format!(
        "<tr data-row data-dataset=\"{}\" data-leg=\"{}\" data-status=\"{}\"{}>",
        esc(&c.dataset),
        esc(&c.leg),
        c.status.name(),
        if is_oracle(c) {
            " class=\"oracle\""
        } else {
            ""
        }
    );
    let _ = write!(
        s,
        "<th scope=\"row\" data-col=\"leg\" data-sort=\"{}\">{}</th>\
         <td data-col=\"status\" data-sort=\"{}\">{}</td>",
        esc(&c.leg),
        leg_label(c),
        c.status.name(),
        page::status(c.status)
    );
    s.push_str(&page::num_td(
        "queries",
        &c.queries.to_string(),
        Some(c.queries as f64),
    ));
    if c.status != Status::Ok {
        let _ = write!(
            s,
            "<td class=\"reason\" colspan=\"{span}\">{}</td>",
            esc(c.reason.as_deref().unwrap_or(""))
        );
    } else {
        for (m, _) in columns {
            let name = m.name();
            s.push_str(&page::metric_td(
                &name,
                c.metrics.get(&name).copied().flatten(),
                c.metrics_ci95.get(&name).copied(),
                c.metrics_defined.get(&name).copied(),
                c.queries,
            ));
        }
        match &c.timing {
            Some(t) => {
                let l = &t.latency_ms.total;
                s.push_str(&page::num_td(
                    "tokens@10",
                    &format::tokens(c.tokens.at_10_mean),
                    Some(c.tokens.at_10_mean),
                ));
                s.push_str(&page::num_td(
                    "median_ms",
                    &format::ms(l.median),
                    Some(l.median),
                ));
                s.push_str(&page::num_td("p95_ms", &format::ms(l.p95), Some(l.p95)));
            }
            None => {
                for col in ["tokens@10", "median_ms", "p95_ms"] {
                    s.push_str(&page::num_td(col, format::NONE, None));
                }
            }
        }
    }
    s.push_str("</tr>\n");
    s
}

/// The whole index page.
pub(crate) fn page(
    o: &ReportOptions,
    by_dataset: &BTreeMap<&str, Vec<&CellSummary>>,
    jobs: &[Job],
) -> String {
    let cells: Vec<&CellSummary> = by_dataset.values().flatten().copied().collect();
    let left: Vec<&crate::store::collect::LeftOut> = jobs
        .iter()
        .flat_map(|j| j.left_out.iter().copied())
        .collect();
    let nav: Vec<(String, String)> = jobs
        .iter()
        .map(|j| (j.files.page.clone(), j.dataset.to_string()))
        .collect();
    let mut body = String::new();
    let _ = writeln!(
        body,
        "<p>{} cells ({}) over {} datasets, read from <code>{}</code>. Every number here is the \
         number <code>matrix.md</code> shows for the cell, with the same rounding; the intervals \
         beside the means are the cells' 95% CIs.</p>",
        cells.len() + left.len(),
        status_counts(&cells, left.len()),
        jobs.len(),
        esc(&o.results.display().to_string())
    );
    let _ = writeln!(
        body,
        "<p class=\"facts-line\"><strong>Protocol:</strong> recall@k for k = {} · {} · \
         queries without gold are not evaluated (counted per dataset) · \
         <a href=\"#protocol\">every protocol fact</a></p>",
        distinct(&cells, |c| Some(
            c.inputs
                .recall_k
                .iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        )),
        distinct(&cells, |c| Some(ci_text(&c.inputs.ci)))
    );
    body.push_str(&left_out::section(&left, true));
    body.push_str("<section id=\"cells\">\n<h2>Matrix</h2>\n");
    body.push_str(&table(jobs));
    body.push_str("</section>\n");
    body.push_str(&datasets(o, jobs));
    body.push_str(&protocol(o, &cells, jobs));
    page::page(
        "hopbench report",
        "Every cell's means with their 95% CIs; per dataset: budget curves, paired comparisons, \
         per-query drill-downs.",
        &nav,
        &body,
    )
}
