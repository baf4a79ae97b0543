//! What the report leaves out, named where it would have been shown: a cell whose summary,
//! records or run file does not read or verify keeps its row in the matrix, marked, and is
//! listed with its reason on the matrix page and its dataset's page, so a page never lacks a
//! cell without saying so.

use std::fmt::Write as _;

use super::format;
use super::page::{self, esc};
use crate::store::collect::LeftOut;

/// The status a left-out cell shows in place of its own (its summary cannot be trusted to say).
pub(crate) const NOT_TRUSTED: &str = "not trusted";

/// The section listing `cells`, one line each (with its dataset when `with_dataset`); empty
/// when there are none.
pub(crate) fn section(cells: &[&LeftOut], with_dataset: bool) -> String {
    if cells.is_empty() {
        return String::new();
    }
    let mut s = String::from(
        "<section id=\"left-out\">\n<h2>Left out: not trusted</h2>\n<p>These cells are not shown: \
         their summary, records or run file does not read or verify (damaged, truncated or edited \
         since it was written), so their numbers cannot be stood behind. The next \
         <code>hopbench run-matrix</code> recomputes them.</p>\n<ul>\n",
    );
    for c in cells {
        let dataset = if with_dataset {
            format!("<strong>{}</strong> × ", esc(&c.dataset))
        } else {
            String::new()
        };
        let _ = writeln!(
            s,
            "<li>{dataset}<strong>{}</strong>: {}</li>",
            esc(&c.leg),
            esc(&c.reason)
        );
    }
    s.push_str("</ul>\n</section>\n");
    s
}

/// The matrix row of a left-out cell: its leg, marked not trusted, and the reason across the
/// number columns (`span` of them), as a cell without numbers shows its reason.
pub(crate) fn row(c: &LeftOut, span: usize) -> String {
    let status = NOT_TRUSTED.replace(' ', "-");
    format!(
        "<tr data-row data-dataset=\"{0}\" data-leg=\"{1}\" data-status=\"{status}\">\
         <th scope=\"row\" data-col=\"leg\" data-sort=\"{1}\"><span class=\"leg\">{1}</span></th>\
         <td data-col=\"status\" data-sort=\"{status}\"><span class=\"status {status}\">{NOT_TRUSTED}</span></td>\
         {2}<td class=\"reason\" colspan=\"{span}\">{NOT_TRUSTED}, left out: {3}</td></tr>\n",
        esc(&c.dataset),
        esc(&c.leg),
        page::num_td("queries", format::NONE, None),
        esc(&c.reason)
    )
}
