//! The page skeleton every report page shares: escaping, the inline style sheet, the inline
//! table-sorting script, and the few table helpers the pages build on.
//!
//! Pages reference nothing outside the report directory: a Content-Security-Policy forbids
//! every fetch but the report's own images, so even a link a reader adds later cannot make the
//! page reach the network.

use std::fmt::Write as _;

use super::MARKER;

/// `text` escaped for HTML text and attribute values.
pub(crate) fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The style sheet: system fonts only, tabular figures, and states told apart by text and line
/// style (dashed, dotted, bold), never by colour alone, so a greyscale print keeps them.
const CSS: &str = r#"
:root{--fg:#1b1b1b;--muted:#555;--line:#cfcfcf;--band:#efefef;--link:#0b4f8a}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,"DejaVu Sans",sans-serif;color:var(--fg);background:#fff}
a{color:var(--link)}
header.top{padding:14px 24px 10px;border-bottom:2px solid var(--fg)}
header.top h1{margin:0 0 4px;font-size:21px}
header.top p{margin:0;color:var(--muted)}
nav{margin-top:6px;font-size:13px}
nav a{margin-right:14px;white-space:nowrap}
main{padding:4px 24px 28px}
footer{padding:10px 24px 24px;color:var(--muted);font-size:12.5px;border-top:1px solid var(--line)}
h2{font-size:17px;margin:26px 0 8px;padding-bottom:3px;border-bottom:1px solid var(--line)}
h3{font-size:15px;margin:18px 0 6px}
p{margin:6px 0;max-width:72em}
table{border-collapse:collapse;font-variant-numeric:tabular-nums;margin:6px 0 14px;font-size:13px}
caption{text-align:left;padding:2px 0 6px;color:var(--muted);font-size:13px;max-width:90em}
th,td{padding:3px 7px;border-bottom:1px solid var(--line);text-align:left;vertical-align:top}
thead th{position:sticky;top:0;z-index:1;background:#fff;border-bottom:2px solid var(--fg);vertical-align:bottom;font-weight:600}
th small,td small{font-weight:400;color:var(--muted)}
.num{text-align:right;white-space:nowrap}
.v{white-space:nowrap}
.ci{display:block;font-size:11px;color:var(--muted)}
.n{display:block;font-size:11px;color:var(--muted)}
tbody th{font-weight:600}
tr.group th{background:var(--band);border-top:2px solid var(--fg);font-weight:400}
tr.group th strong{font-size:15px;margin-right:8px}
button.sort{font:inherit;font-weight:600;color:inherit;background:none;border:0;padding:0;cursor:pointer;text-align:inherit}
button.sort::after{content:" \2195";color:#999;font-weight:400}
th[aria-sort=ascending] button.sort::after{content:" \25B2";color:inherit}
th[aria-sort=descending] button.sort::after{content:" \25BC";color:inherit}
button.sort:focus-visible{outline:2px solid var(--fg);outline-offset:2px}
.status{display:inline-block;font-size:12px;line-height:1.3;padding:0 5px;border:1px solid var(--fg);border-radius:3px;white-space:nowrap}
.status.ok{border-color:transparent;padding-left:0}
.status.missing-inputs{border-style:dashed}
.status.empty{border-style:dotted}
.status.error{border-width:2px;font-weight:700}
td.reason{color:var(--muted);font-style:italic;min-width:24em;max-width:60em}
th.group-head{text-align:center;border-bottom:1px solid var(--fg)}
p.facts-line{font-size:13px}
.kind{display:block;font-size:11.5px;font-weight:400;color:var(--muted)}
.tag{display:inline-block;font-size:11px;font-weight:400;font-style:italic;border:1px dashed var(--fg);border-radius:3px;padding:0 4px;margin-top:2px;white-space:nowrap}
tr.oracle th .leg{font-style:italic}
.scroll{overflow-x:auto;max-width:100%}
figure{margin:8px 0 16px}
figure img{max-width:100%;height:auto;border:1px solid var(--line)}
figcaption{color:var(--muted);font-size:13px;max-width:72em}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:3px 18px;margin:8px 0}
dl.facts dt{font-weight:600}
dl.facts dd{margin:0}
.muted{color:var(--muted)}
.flex{display:flex;flex-wrap:wrap;gap:8px 28px;align-items:flex-start}
details{margin:6px 0 14px}
details summary{cursor:pointer;font-weight:600}
code{font-size:12.5px}
td.found{font-weight:700}
tbody.differs th.q::after{content:" \2260";font-weight:700}
form.pick{margin:8px 0}form.pick label{margin-right:18px;font-weight:600}
[hidden]{display:none!important}
@media print{thead th{position:static}nav{display:none}a{color:inherit;text-decoration:none}button.sort::after{content:""}}
"#;

/// The one script: click a header's button to sort the table's rows by that column (numbers
/// by value, text alphabetically; rows without a value last), within each `<tbody>`, so the
/// matrix sorts each dataset's legs among themselves. Once wired, it records the number of
/// sortable tables in `<html data-sortable>` (what the browser check reads to know it ran).
const SCRIPT: &str = r#"
(function(){
function key(r,col){var c=r.querySelector('[data-col="'+CSS.escape(col)+'"]');if(!c)return null;var s=c.getAttribute('data-sort');if(s===null||s==='')return null;var n=Number(s);return isNaN(n)?s.toLowerCase():n;}
var wired=0;
document.querySelectorAll('table.sortable').forEach(function(t){
wired++;
t.querySelectorAll('thead th[data-col]').forEach(function(th){
var b=th.querySelector('button.sort');if(!b)return;
b.addEventListener('click',function(){
var col=th.getAttribute('data-col'),first=th.getAttribute('data-first')||'ascending';
var cur=th.getAttribute('aria-sort');var dir=cur?(cur==='ascending'?'descending':'ascending'):first;
t.querySelectorAll('thead th[aria-sort]').forEach(function(h){h.removeAttribute('aria-sort');});
th.setAttribute('aria-sort',dir);
Array.prototype.forEach.call(t.tBodies,function(tb){
var rows=Array.prototype.filter.call(tb.rows,function(r){return r.hasAttribute('data-row');});
rows.sort(function(a,b){var x=key(a,col),y=key(b,col);if(x===null||y===null)return x===y?0:(x===null?1:-1);var c=x<y?-1:(x>y?1:0);return dir==='ascending'?c:-c;});
rows.forEach(function(r){tb.appendChild(r);});});});});});
document.documentElement.setAttribute('data-sortable',String(wired));
})();
"#;

/// The attributes every `<img>` of the report carries besides `src` and `alt`: the image
/// records whether it loaded (`data-loaded="1"`, or `"0"` on error or when it has no pixels),
/// which `scripts/report_browser_check.py` reads from the rendered page.
pub(crate) const IMG_LOAD: &str = r#"onload="this.setAttribute('data-loaded',this.naturalWidth>0?'1':'0')" onerror="this.setAttribute('data-loaded','0')""#;

/// A whole page: `title` in `<title>` and `<h1>`, `subtitle` under it, the `nav` links
/// (`(href, text)`), then `body` (already HTML) and the footer.
pub(crate) fn page(title: &str, subtitle: &str, nav: &[(String, String)], body: &str) -> String {
    let mut out = String::with_capacity(body.len() + CSS.len() + SCRIPT.len() + 2048);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"generator\" content=\"{MARKER}\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         img-src 'self' file:; style-src 'unsafe-inline'; script-src 'unsafe-inline'; \
         base-uri 'none'; form-action 'none'\">\n\
         <title>{}</title>\n<style>{CSS}</style>\n</head>\n<body>\n\
         <header class=\"top\">\n<h1>{}</h1>\n",
        esc(title),
        esc(title)
    );
    if !subtitle.is_empty() {
        let _ = writeln!(out, "<p>{subtitle}</p>");
    }
    if !nav.is_empty() {
        out.push_str("<nav aria-label=\"report pages\">");
        for (href, text) in nav {
            let _ = write!(out, "<a href=\"{}\">{}</a>", esc(href), esc(text));
        }
        out.push_str("</nav>\n");
    }
    out.push_str("</header>\n<main>\n");
    out.push_str(body);
    out.push_str(
        "</main>\n<footer>\n<p>Written by <code>hopbench report</code> from the files of a \
         results directory (cell summaries, per-query records, TREC run files, budget curves); \
         self-contained: no script framework, no external resource. Means come with their 95% \
         percentile-bootstrap CI (fixed seed) and the queries they are over.</p>\n</footer>\n",
    );
    let _ = write!(out, "<script>{SCRIPT}</script>\n</body>\n</html>\n");
    out
}

/// A sortable column header: `col` names the column (its cells carry `data-col` = `col` and
/// a `data-sort` value); `numeric` columns sort descending first.
pub(crate) fn sort_th(col: &str, label: &str, sub: &str, numeric: bool) -> String {
    let sub = if sub.is_empty() {
        String::new()
    } else {
        format!("<br><small>{sub}</small>")
    };
    format!(
        "<th scope=\"col\" data-col=\"{}\"{}{}><button type=\"button\" class=\"sort\">{}</button>{sub}</th>",
        esc(col),
        if numeric { " class=\"num\"" } else { "" },
        if numeric {
            " data-first=\"descending\""
        } else {
            ""
        },
        label
    )
}

/// A metric cell: the text `matrix.md` prints for the mean (`shown`), then the CI on a line of
/// its own (same text node order, so the cell's text is `0.3194 [0.264, 0.381]`), then the
/// query count the mean is over when it is not the row's. `sort`: the mean at full precision.
pub(crate) fn metric_td(
    name: &str,
    mean: Option<f64>,
    ci: Option<[f64; 2]>,
    defined: Option<usize>,
    queries: usize,
) -> String {
    use super::format;
    let mut out = format!(
        "<td class=\"num\" data-col=\"{0}\" data-metric=\"{0}\" data-sort=\"{1}\"",
        esc(name),
        mean.map_or(String::new(), |v| v.to_string())
    );
    match mean {
        None => {
            out.push_str(&format!("><span class=\"v\">{}</span>", format::NONE));
        }
        Some(v) => {
            let _ = write!(out, "><span class=\"v\">{}", format::mean(v));
            if let Some(c) = ci {
                let _ = write!(out, " <span class=\"ci\">{}</span>", format::ci(c));
            }
            out.push_str("</span>");
            if let Some(n) = defined.filter(|&n| n != queries) {
                let _ = write!(out, "<span class=\"n\">n={n}</span>");
            }
        }
    }
    out.push_str("</td>");
    out
}

/// A plain numeric cell of column `col` showing `text`, sorted by `sort`.
pub(crate) fn num_td(col: &str, text: &str, sort: Option<f64>) -> String {
    format!(
        "<td class=\"num\" data-col=\"{}\" data-sort=\"{}\">{}</td>",
        esc(col),
        sort.map_or(String::new(), |v| v.to_string()),
        esc(text)
    )
}

/// A status badge (text and border style, not colour).
pub(crate) fn status(s: crate::store::summary::Status) -> String {
    let s = s.name();
    format!("<span class=\"status {s}\">{s}</span>")
}

/// An image of the report: `src` relative to the page, with its alt text and size.
pub(crate) fn img(src: &str, alt: &str, (w, h): (u32, u32)) -> String {
    format!(
        "<img src=\"{}\" alt=\"{}\" width=\"{w}\" height=\"{h}\" loading=\"eager\" {IMG_LOAD}>",
        esc(src),
        esc(alt)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped() {
        assert_eq!(
            esc(r#"<a href="x">&'"#),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
    }

    #[test]
    fn a_metric_cell_reads_as_matrix_md_prints_it() {
        let td = metric_td(
            "recall@10",
            Some(0.31944),
            Some([0.2644, 0.3811]),
            Some(60),
            60,
        );
        let text: String = {
            let mut t = String::new();
            let mut in_tag = false;
            for c in td.chars() {
                match c {
                    '<' => in_tag = true,
                    '>' => in_tag = false,
                    c if !in_tag => t.push(c),
                    _ => {}
                }
            }
            t
        };
        assert_eq!(text, "0.3194 [0.264, 0.381]");
        assert!(td.contains("data-metric=\"recall@10\""));
        assert!(metric_td("c", Some(0.5), None, Some(40), 60).contains("n=40"));
    }
}
