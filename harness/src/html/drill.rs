//! The per-query drill-downs, read from `runs/<dataset>/qrels.txt` and the legs' TREC run files
//! (one pass over each), with per-query recall@10 from the legs' records:
//!
//! - `q-<dataset>.html` ([`all_legs_page`]): per query, the rank at which *every* leg placed
//!   each gold chunk, one column per leg, with two pickers that narrow the table to any pair of
//!   legs and mark the queries on which that pair's recall differs (a few lines of inline
//!   script; without it the page shows every leg);
//! - `q-<dataset>-<a>-vs-<b>.html` ([`page`]): the same for one configured pair, with its
//!   counts (gold found in the top 10 by each, queries better / worse / equal).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;

use anyhow::{bail, Context, Result};

use super::format;
use super::page::{self, esc};
use crate::summary::CellPaths;

/// The gold of every query with gold, in `qrels.txt` order: (query id, gold chunk ids), ids as
/// the TREC files spell them (percent-encoded).
fn read_qrels(path: &Path) -> Result<Vec<(String, Vec<String>)>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("{}: cannot read", path.display()))?;
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    let mut at: HashMap<String, usize> = HashMap::new();
    for (i, line) in text.lines().enumerate() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.is_empty() {
            continue;
        }
        let [qid, _, doc, rel] = f[..] else {
            bail!(
                "{}:{}: not a qrels line `qid 0 docno rel`",
                path.display(),
                i + 1
            );
        };
        if rel.parse::<f64>().map_or(true, |r| r <= 0.0) {
            continue;
        }
        let k = *at.entry(qid.to_string()).or_insert_with(|| {
            out.push((qid.to_string(), Vec::new()));
            out.len() - 1
        });
        out[k].1.push(doc.to_string());
    }
    Ok(out)
}

/// The rank (1-based, as the run file says) of every gold chunk of every query in the run file
/// at `path`: `ranks[query][gold]`, `None` where the run does not have it.
fn gold_ranks(path: &Path, gold: &[(String, Vec<String>)]) -> Result<Vec<Vec<Option<usize>>>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("{}: cannot read", path.display()))?;
    let index: HashMap<&str, (usize, HashMap<&str, usize>)> = gold
        .iter()
        .enumerate()
        .map(|(q, (qid, docs))| {
            let docs = docs
                .iter()
                .enumerate()
                .map(|(g, d)| (d.as_str(), g))
                .collect();
            (qid.as_str(), (q, docs))
        })
        .collect();
    let mut ranks: Vec<Vec<Option<usize>>> =
        gold.iter().map(|(_, d)| vec![None; d.len()]).collect();
    for (i, line) in text.lines().enumerate() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.is_empty() {
            continue;
        }
        let [qid, _, doc, rank, _, _] = f[..] else {
            bail!(
                "{}:{}: not a TREC run line `qid Q0 docno rank score tag`",
                path.display(),
                i + 1
            );
        };
        let Some((q, docs)) = index.get(qid) else {
            continue;
        };
        if let Some(&g) = docs.get(doc) {
            let rank: usize = rank.parse().with_context(|| {
                format!(
                    "{}:{}: rank `{rank}` is not a number",
                    path.display(),
                    i + 1
                )
            })?;
            let slot = &mut ranks[*q][g];
            *slot = Some(slot.map_or(rank, |r: usize| r.min(rank)));
        }
    }
    Ok(ranks)
}

/// `%XX` sequences of a TREC id decoded (the inverse of [`crate::trec::encode_id`]).
fn decode(id: &str) -> String {
    let b = id.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        if b[i] == b'%' && i + 2 < b.len() {
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Per-query recall@10 of a leg's records, by TREC-encoded query id.
fn recall_by_query(
    results: &Path,
    dataset: &str,
    leg: &str,
) -> Result<HashMap<String, Option<f64>>> {
    let name = crate::metrics::headline().name();
    let path = CellPaths::new(results, dataset, leg).records;
    let (ids, cols) = crate::summary::read_records(&path, std::slice::from_ref(&name))?;
    let values = cols
        .get(&name)
        .cloned()
        .unwrap_or_else(|| vec![None; ids.len()]);
    Ok(ids
        .iter()
        .map(|id| crate::trec::encode_id(id))
        .zip(values)
        .collect())
}

/// The drill-down page of legs `a` and `b` on `dataset`; `back` is the dataset page.
pub(crate) fn page(results: &Path, dataset: &str, a: &str, b: &str, back: &str) -> Result<String> {
    let runs = results.join("runs").join(dataset);
    let gold = read_qrels(&runs.join("qrels.txt"))?;
    let ra = gold_ranks(&CellPaths::new(results, dataset, a).run, &gold)?;
    let rb = gold_ranks(&CellPaths::new(results, dataset, b).run, &gold)?;
    let (qa, qb) = (
        recall_by_query(results, dataset, a)?,
        recall_by_query(results, dataset, b)?,
    );
    let headline = crate::metrics::headline();
    let label = headline.label();
    let total: usize = gold.iter().map(|(_, d)| d.len()).sum();
    let count = |r: &[Vec<Option<usize>>], k: usize| {
        r.iter()
            .flatten()
            .filter(|x| x.is_some_and(|x| x <= k))
            .count()
    };
    let (mut better, mut worse, mut same) = (0, 0, 0);
    for (qid, _) in &gold {
        match (
            qa.get(qid).copied().flatten(),
            qb.get(qid).copied().flatten(),
        ) {
            (Some(x), Some(y)) if y > x => better += 1,
            (Some(x), Some(y)) if y < x => worse += 1,
            (Some(_), Some(_)) => same += 1,
            _ => {}
        }
    }
    let mut body = String::new();
    let _ = writeln!(
        body,
        "<p>{} queries with gold, {total} gold chunks. Gold chunks in the top 10: <strong>{a}</strong> \
         {} of {total}, <strong>{b}</strong> {} of {total}; anywhere in the run: {} and {}. \
         Per query {label}: {b} higher on {better}, lower on {worse}, equal on {same} queries.</p>",
        gold.len(),
        count(&ra, 10),
        count(&rb, 10),
        count(&ra, usize::MAX),
        count(&rb, usize::MAX),
        a = esc(a),
        b = esc(b),
    );
    body.push_str(
        "<p class=\"muted\">Rank: 1-based position in the leg's TREC run file; <strong>bold</strong>: \
         within the top 10; —: not in the run. ≠ marks a query whose per-query recall@10 \
         differs between the legs. Ids are as the dataset spells them.</p>\n",
    );
    let _ = writeln!(
        body,
        "<table id=\"drill\">\n<caption>{} vs {} on {}: gold chunks per query</caption>\n\
         <thead><tr><th scope=\"col\">query</th><th scope=\"col\">gold chunk</th>\
         <th scope=\"col\" class=\"num\">rank in {a}</th><th scope=\"col\" class=\"num\">rank in {b}</th>\
         <th scope=\"col\" class=\"num\">{label} {a}</th><th scope=\"col\" class=\"num\">{label} {b}</th></tr></thead>",
        esc(b),
        esc(a),
        esc(dataset),
        a = esc(a),
        b = esc(b)
    );
    let rank = |r: Option<usize>| match r {
        Some(r) if r <= 10 => format!("<td class=\"num found\">{r}</td>"),
        Some(r) => format!("<td class=\"num\">{r}</td>"),
        None => format!("<td class=\"num\">{}</td>", format::NONE),
    };
    let recall = |v: Option<f64>| v.map_or(format::NONE.to_string(), format::mean);
    for (q, (qid, docs)) in gold.iter().enumerate() {
        let (x, y) = (
            qa.get(qid).copied().flatten(),
            qb.get(qid).copied().flatten(),
        );
        let n = docs.len();
        let _ = write!(
            body,
            "<tbody{}>",
            if x != y { " class=\"differs\"" } else { "" }
        );
        for (g, doc) in docs.iter().enumerate() {
            body.push_str("<tr>");
            if g == 0 {
                let _ = write!(
                    body,
                    "<th scope=\"rowgroup\" rowspan=\"{n}\" class=\"q\">{}</th>",
                    esc(&decode(qid))
                );
            }
            let _ = write!(body, "<td><code>{}</code></td>", esc(&decode(doc)));
            body.push_str(&rank(ra[q][g]));
            body.push_str(&rank(rb[q][g]));
            if g == 0 {
                let _ = write!(
                    body,
                    "<td class=\"num\" rowspan=\"{n}\">{}</td><td class=\"num\" rowspan=\"{n}\">{}</td>",
                    recall(x),
                    recall(y)
                );
            }
            body.push_str("</tr>");
        }
        body.push_str("</tbody>\n");
    }
    body.push_str("</table>\n");
    Ok(page::page(
        &format!("{dataset}: {b} vs {a}, per query"),
        &format!(
            "Which gold chunk each leg found, at which rank (from <code>runs/{}/</code>).",
            esc(dataset)
        ),
        &[
            ("index.html".into(), "← matrix".into()),
            (back.into(), format!("← {dataset}")),
        ],
        &body,
    ))
}

/// The inline script of [`all_legs_page`]: the two pickers show the columns of legs A and B
/// only (or every leg), and mark each query whose per-query recall differs between A and B.
/// A link may preselect the pair with the fragment `#pair=A,B` (URI-encoded names).
/// It records the number of leg columns in `<table data-legs>` once wired (what the browser
/// check can read).
const PICKER: &str = r#"
(function(){
var t=document.getElementById('drill-all');if(!t)return;
var a=document.getElementById('pick-a'),b=document.getElementById('pick-b');
function show(){
var x=a.value,y=b.value,all=(x==='*'||y==='*');
t.querySelectorAll('[data-leg]').forEach(function(c){var l=c.getAttribute('data-leg');c.hidden=!(all||l===x||l===y);});
Array.prototype.forEach.call(t.tBodies,function(tb){
var r=function(l){var c=tb.querySelector('td.recall[data-leg="'+CSS.escape(l)+'"]');return c?c.getAttribute('data-sort'):null;};
tb.classList.toggle('differs',!all&&r(x)!==r(y));});
var n=t.querySelectorAll('tbody.differs').length;
document.getElementById('pick-count').textContent=all?'':(n+' of '+t.tBodies.length+' queries differ');}
var h=/^#pair=([^,]*),(.*)$/.exec(location.hash);
function has(s,v){return Array.prototype.some.call(s.options,function(o){return o.value===v;});}
if(h){var x=decodeURIComponent(h[1]),y=decodeURIComponent(h[2]);if(has(a,x)&&has(b,y)){a.value=x;b.value=y;}}
a.addEventListener('change',show);b.addEventListener('change',show);show();
t.setAttribute('data-legs',String(t.querySelectorAll('thead th[data-leg]').length));
})();
"#;

/// The drill-down page of every leg in `legs` (in column order) on `dataset`: per query, the
/// rank of each gold chunk in each leg's run and each leg's per-query recall@10; `back` is the
/// dataset page.
pub(crate) fn all_legs_page(
    results: &Path,
    dataset: &str,
    legs: &[&str],
    back: &str,
) -> Result<String> {
    let runs = results.join("runs").join(dataset);
    let gold = read_qrels(&runs.join("qrels.txt"))?;
    let ranks = legs
        .iter()
        .map(|leg| gold_ranks(&CellPaths::new(results, dataset, leg).run, &gold))
        .collect::<Result<Vec<_>>>()?;
    let recalls = legs
        .iter()
        .map(|leg| recall_by_query(results, dataset, leg))
        .collect::<Result<Vec<_>>>()?;
    let label = crate::metrics::headline().label();
    let total: usize = gold.iter().map(|(_, d)| d.len()).sum();
    let mut body = String::new();
    let _ = writeln!(
        body,
        "<p>{} queries with gold, {total} gold chunks, {} legs. Pick two legs to compare them \
         side by side; queries on which their per-query {label} differs are marked ≠.</p>",
        gold.len(),
        legs.len()
    );
    let options = |selected: usize| {
        let mut o = String::from("<option value=\"*\">every leg</option>");
        for (i, leg) in legs.iter().enumerate() {
            let _ = write!(
                o,
                "<option value=\"{0}\"{1}>{0}</option>",
                esc(leg),
                if i == selected { " selected" } else { "" }
            );
        }
        o
    };
    let _ = writeln!(
        body,
        "<form class=\"pick\" onsubmit=\"return false\"><label>leg A <select id=\"pick-a\">{}</select></label> \
         <label>leg B <select id=\"pick-b\">{}</select></label> <output id=\"pick-count\"></output></form>",
        options(usize::MAX),
        options(usize::MAX)
    );
    body.push_str(
        "<p class=\"muted\">Rank: 1-based position in the leg's TREC run file; <strong>bold</strong>: \
         within the top 10; —: not in the run. The first row of each query is each leg's \
         per-query recall@10 (from its records). Ids are as the dataset spells them.</p>\n",
    );
    let _ = write!(
        body,
        "<div class=\"scroll\"><table id=\"drill-all\">\n<caption>{} legs on {}: gold chunks per query</caption>\n\
         <thead><tr><th scope=\"col\">query</th><th scope=\"col\">gold chunk</th>",
        legs.len(),
        esc(dataset)
    );
    for leg in legs {
        let _ = write!(
            body,
            "<th scope=\"col\" class=\"num\" data-leg=\"{0}\">{0}</th>",
            esc(leg)
        );
    }
    body.push_str("</tr></thead>\n");
    for (q, (qid, docs)) in gold.iter().enumerate() {
        let values: Vec<Option<f64>> = recalls
            .iter()
            .map(|r| r.get(qid).copied().flatten())
            .collect();
        let _ = write!(
            body,
            "<tbody><tr><th scope=\"rowgroup\" rowspan=\"{}\" class=\"q\">{}</th><td class=\"muted\">{label}</td>",
            docs.len() + 1,
            esc(&decode(qid))
        );
        for (leg, v) in legs.iter().zip(&values) {
            let _ = write!(
                body,
                "<td class=\"num recall\" data-leg=\"{}\" data-sort=\"{}\">{}</td>",
                esc(leg),
                v.map_or(String::new(), |v| format!("{v}")),
                v.map_or(format::NONE.to_string(), format::mean)
            );
        }
        body.push_str("</tr>");
        for (g, doc) in docs.iter().enumerate() {
            let _ = write!(body, "<tr><td><code>{}</code></td>", esc(&decode(doc)));
            for (leg, r) in legs.iter().zip(&ranks) {
                let (class, text) = match r[q][g] {
                    Some(r) if r <= 10 => ("num found", r.to_string()),
                    Some(r) => ("num", r.to_string()),
                    None => ("num", format::NONE.to_string()),
                };
                let _ = write!(
                    body,
                    "<td class=\"{class}\" data-leg=\"{}\">{text}</td>",
                    esc(leg)
                );
            }
            body.push_str("</tr>");
        }
        body.push_str("</tbody>\n");
    }
    body.push_str("</table></div>\n");
    let _ = writeln!(body, "<script>{PICKER}</script>");
    Ok(page::page(
        &format!("{dataset}: every leg, per query"),
        &format!(
            "Which gold chunk each leg found, at which rank (from <code>runs/{}/</code>).",
            esc(dataset)
        ),
        &[
            ("index.html".into(), "← matrix".into()),
            (back.into(), format!("← {dataset}")),
        ],
        &body,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_come_from_the_run_and_absent_gold_is_none() {
        let dir = tempfile::tempdir().unwrap();
        let qrels = dir.path().join("qrels.txt");
        let run = dir.path().join("a.trec");
        std::fs::write(&qrels, "q1 0 c1 1\nq1 0 c2 1\nq2 0 c%203 1\n").unwrap();
        std::fs::write(
            &run,
            "q1 Q0 c9 1 3 t\nq1 Q0 c2 2 2 t\nq1 Q0 c1 3 1 t\nq2 Q0 c4 1 1 t\n",
        )
        .unwrap();
        let gold = read_qrels(&qrels).unwrap();
        assert_eq!(gold[1], ("q2".to_string(), vec!["c%203".to_string()]));
        let r = gold_ranks(&run, &gold).unwrap();
        assert_eq!(r, vec![vec![Some(3), Some(2)], vec![None]]);
        assert_eq!(decode("c%203"), "c 3");
        assert_eq!(decode("50%25%09x"), "50%\tx");
        assert_eq!(decode("odd%2"), "odd%2");
        std::fs::write(&run, "q1 Q0 c1\n").unwrap();
        let e = gold_ranks(&run, &gold).unwrap_err().to_string();
        assert!(e.contains("a.trec:1"), "{e}");
    }
}
