//! The per-query drill-downs, read from `runs/<dataset>/qrels.txt` and the legs' TREC run files,
//! with per-query recall@10 from the legs' records. A dataset's files are read once
//! ([`Drill::read`], the legs in parallel) and shared by all of its drill-down pages:
//!
//! - `q-<dataset>.html` ([`all_legs_page`]): per query, the rank at which *every* leg placed
//!   each gold chunk, one column per leg, with two pickers that narrow the table to any pair of
//!   legs and mark the queries on which that pair's recall differs (a few lines of inline
//!   script; without it the page shows every leg);
//! - `q-<dataset>-<a>-vs-<b>.html` ([`page`]): the same for one configured pair, with its
//!   counts (gold found in the top 10 by each, queries better / worse / equal).

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::Path;

use anyhow::{anyhow, bail, Context, Result};
use rayon::prelude::*;

use super::format;
use super::page::{self, esc};
use crate::store::summary::CellPaths;

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
        if out[k].1.iter().any(|d| d == doc) {
            bail!(
                "{}:{}: chunk `{doc}` is gold for query `{qid}` twice",
                path.display(),
                i + 1
            );
        }
        out[k].1.push(doc.to_string());
    }
    Ok(out)
}

/// The rank (1-based, as the run file says) of every gold chunk of every query in the run file
/// at `path`: `ranks[query][gold]`, `None` where the run does not have it (the smallest rank
/// where a chunk appears twice). Every line must have the six fields of
/// `qid Q0 docno rank score tag`, separated by ASCII white space (the harness writes single
/// spaces); a rank is parsed only where the chunk is gold.
fn gold_ranks(path: &Path, gold: &[(String, Vec<String>)]) -> Result<Vec<Vec<Option<usize>>>> {
    let bytes = std::fs::read(path).with_context(|| format!("{}: cannot read", path.display()))?;
    gold_ranks_in(&bytes, gold).map_err(|(line, what)| anyhow!("{}:{line}: {what}", path.display()))
}

/// [`gold_ranks`] over the run file's bytes; an error is (1-based line, what is wrong).
///
/// One pass, no allocation per line: a run lists each query's lines together, so the query of
/// the previous line is reused while the id repeats, and each query's gold is a sorted slice
/// searched by bytes.
fn gold_ranks_in(
    run: &[u8],
    gold: &[(String, Vec<String>)],
) -> std::result::Result<Vec<Vec<Option<usize>>>, (usize, String)> {
    let queries: HashMap<&[u8], usize> = gold
        .iter()
        .enumerate()
        .map(|(q, (qid, _))| (qid.as_bytes(), q))
        .collect();
    let sorted: Vec<Vec<(&[u8], usize)>> = gold
        .iter()
        .map(|(_, docs)| {
            let mut d: Vec<(&[u8], usize)> = docs
                .iter()
                .enumerate()
                .map(|(g, doc)| (doc.as_bytes(), g))
                .collect();
            d.sort_unstable();
            d
        })
        .collect();
    let mut ranks: Vec<Vec<Option<usize>>> =
        gold.iter().map(|(_, d)| vec![None; d.len()]).collect();
    let mut last: Option<(&[u8], Option<usize>)> = None;
    for (i, line) in run.split(|&b| b == b'\n').enumerate() {
        let mut fields = line
            .split(|b| b.is_ascii_whitespace())
            .filter(|f| !f.is_empty());
        let mut f: [&[u8]; 6] = [&[]; 6];
        let mut n = 0;
        for field in fields.by_ref().take(6) {
            f[n] = field;
            n += 1;
        }
        if n == 0 {
            continue;
        }
        if n < 6 || fields.next().is_some() {
            return Err((
                i + 1,
                "not a TREC run line `qid Q0 docno rank score tag`".to_string(),
            ));
        }
        let q = match last {
            Some((qid, q)) if qid == f[0] => q,
            _ => {
                let q = queries.get(f[0]).copied();
                last = Some((f[0], q));
                q
            }
        };
        let Some(q) = q else { continue };
        let docs = &sorted[q];
        let Ok(at) = docs.binary_search_by(|(d, _)| (*d).cmp(f[2])) else {
            continue;
        };
        let rank: usize = std::str::from_utf8(f[3])
            .ok()
            .and_then(|r| r.parse().ok())
            .ok_or_else(|| {
                (
                    i + 1,
                    format!("rank `{}` is not a number", String::from_utf8_lossy(f[3])),
                )
            })?;
        let slot = &mut ranks[q][docs[at].1];
        *slot = Some(slot.map_or(rank, |r: usize| r.min(rank)));
    }
    Ok(ranks)
}

/// `%XX` sequences of a TREC id decoded (the inverse of [`crate::store::trec::encode_id`]).
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
    let name = crate::measure::metrics::headline().name();
    let path = CellPaths::new(results, dataset, leg).records;
    let (ids, cols) = crate::store::summary::read_records(&path, std::slice::from_ref(&name))?;
    let values = cols
        .get(&name)
        .cloned()
        .unwrap_or_else(|| vec![None; ids.len()]);
    Ok(ids
        .iter()
        .map(|id| crate::store::trec::encode_id(id))
        .zip(values)
        .collect())
}

/// What the drill-down pages of one dataset show, read once: the gold, and per leg the rank of
/// each gold chunk and the per-query recall@10.
pub(crate) struct Drill<'a> {
    dataset: &'a str,
    gold: Result<Vec<(String, Vec<String>)>, String>,
    legs: BTreeMap<&'a str, Result<LegDrill, String>>,
}

/// One leg's share of a [`Drill`].
struct LegDrill {
    /// `ranks[query][gold]`, as [`gold_ranks`].
    ranks: Vec<Vec<Option<usize>>>,
    /// Per-query recall@10 by TREC-encoded query id.
    recall: HashMap<String, Option<f64>>,
}

impl<'a> Drill<'a> {
    /// Reads the qrels of `dataset` and the run file and records of every leg in `legs`, the
    /// legs in parallel. A file that cannot be read fails the pages that need it, not the
    /// report.
    pub(crate) fn read(results: &Path, dataset: &'a str, legs: &[&'a str]) -> Drill<'a> {
        let gold = read_qrels(&results.join("runs").join(dataset).join("qrels.txt"))
            .map_err(|e| format!("{e:#}"));
        let legs = match &gold {
            Err(_) => BTreeMap::new(),
            Ok(gold) => legs
                .par_iter()
                .map(|&leg| {
                    let read = || -> Result<LegDrill> {
                        Ok(LegDrill {
                            ranks: gold_ranks(&CellPaths::new(results, dataset, leg).run, gold)?,
                            recall: recall_by_query(results, dataset, leg)?,
                        })
                    };
                    (leg, read().map_err(|e| format!("{e:#}")))
                })
                .collect(),
        };
        Drill {
            dataset,
            gold,
            legs,
        }
    }

    fn gold(&self) -> Result<&[(String, Vec<String>)]> {
        self.gold.as_deref().map_err(|e| anyhow!("{e}"))
    }

    fn leg(&self, leg: &str) -> Result<&LegDrill> {
        match self.legs.get(leg) {
            Some(Ok(l)) => Ok(l),
            Some(Err(e)) => Err(anyhow!("{e}")),
            None => Err(anyhow!("leg `{leg}` has no run on {}", self.dataset)),
        }
    }
}

/// The drill-down page of legs `a` and `b` on `dataset`; `back` is the dataset page.
pub(crate) fn page(drill: &Drill<'_>, a: &str, b: &str, back: &str) -> Result<String> {
    let dataset = drill.dataset;
    let gold = drill.gold()?;
    let (la, lb) = (drill.leg(a)?, drill.leg(b)?);
    let (ra, rb) = (&la.ranks, &lb.ranks);
    let (qa, qb) = (&la.recall, &lb.recall);
    let headline = crate::measure::metrics::headline();
    let label = headline.label();
    let total: usize = gold.iter().map(|(_, d)| d.len()).sum();
    let count = |r: &[Vec<Option<usize>>], k: usize| {
        r.iter()
            .flatten()
            .filter(|x| x.is_some_and(|x| x <= k))
            .count()
    };
    let (mut better, mut worse, mut same) = (0, 0, 0);
    for (qid, _) in gold {
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
        count(ra, 10),
        count(rb, 10),
        count(ra, usize::MAX),
        count(rb, usize::MAX),
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
    Ok(drill_page(
        dataset,
        &format!("{dataset}: {b} vs {a}, per query"),
        back,
        &body,
    ))
}

/// A drill-down page of `dataset` titled `title`, with the lead both kinds share and the
/// links back to the matrix and to the dataset page `back`.
fn drill_page(dataset: &str, title: &str, back: &str, body: &str) -> String {
    page::page(
        title,
        &format!(
            "Which gold chunk each leg found, at which rank (from <code>runs/{}/</code>).",
            esc(dataset)
        ),
        &[
            ("index.html".into(), "← matrix".into()),
            (back.into(), format!("← {dataset}")),
        ],
        body,
    )
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
pub(crate) fn all_legs_page(drill: &Drill<'_>, legs: &[&str], back: &str) -> Result<String> {
    let dataset = drill.dataset;
    let gold = drill.gold()?;
    let read = legs
        .iter()
        .map(|leg| drill.leg(leg))
        .collect::<Result<Vec<_>>>()?;
    let ranks: Vec<&Vec<Vec<Option<usize>>>> = read.iter().map(|l| &l.ranks).collect();
    let recalls: Vec<&HashMap<String, Option<f64>>> = read.iter().map(|l| &l.recall).collect();
    let label = crate::measure::metrics::headline().label();
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
    Ok(drill_page(
        dataset,
        &format!("{dataset}: every leg, per query"),
        back,
        &body,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`gold_ranks_in`] as the plain reading it is: split every line on white space, look
    /// the query and the chunk up in maps.
    fn gold_ranks_reference(text: &str, gold: &[(String, Vec<String>)]) -> Vec<Vec<Option<usize>>> {
        let mut ranks: Vec<Vec<Option<usize>>> =
            gold.iter().map(|(_, d)| vec![None; d.len()]).collect();
        for line in text.lines() {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.is_empty() {
                continue;
            }
            let Some(q) = gold.iter().position(|(qid, _)| qid == f[0]) else {
                continue;
            };
            if let Some(g) = gold[q].1.iter().position(|d| d == f[2]) {
                let rank: usize = f[3].parse().unwrap();
                let slot = &mut ranks[q][g];
                *slot = Some(slot.map_or(rank, |r: usize| r.min(rank)));
            }
        }
        ranks
    }

    #[test]
    fn the_one_pass_reading_is_the_plain_one() {
        let mut rng = hopbench_datasets::rng::SplitMix64::new(5);
        let mut pick = |n: u64| (rng.next_u64() % n) as usize;
        for round in 0..200 {
            let gold: Vec<(String, Vec<String>)> = (0..1 + pick(6))
                .map(|q| {
                    let mut docs: Vec<String> =
                        (0..1 + pick(5)).map(|_| format!("c{}", pick(30))).collect();
                    docs.sort();
                    docs.dedup();
                    (format!("q{q}"), docs)
                })
                .collect();
            // queries in blocks, some interleaved, some unknown; repeated chunks; blank lines,
            // tabs and CRLF line ends
            let mut text = String::new();
            for _ in 0..pick(80) {
                let q = pick(8);
                let sep = if pick(4) == 0 { "\t" } else { " " };
                for r in 1..=1 + pick(5) {
                    let _ = write!(text, "q{q} Q0{sep}c{} {r} 0.5 t", pick(30));
                    text.push_str(if pick(5) == 0 { "\r\n" } else { "\n" });
                }
                if pick(6) == 0 {
                    text.push('\n');
                }
            }
            assert_eq!(
                gold_ranks_in(text.as_bytes(), &gold).unwrap(),
                gold_ranks_reference(&text, &gold),
                "round {round}:\n{text}"
            );
        }
    }

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
        for bad in ["q1 Q0 c1\n", "q1 Q0 c1 1 2 t extra\n"] {
            std::fs::write(&run, format!("q2 Q0 c4 1 1 t\n{bad}")).unwrap();
            let e = gold_ranks(&run, &gold).unwrap_err().to_string();
            assert!(e.contains("a.trec:2: not a TREC run line"), "{e}");
        }
        std::fs::write(&run, "q1 Q0 c1 first 1 t\n").unwrap();
        let e = gold_ranks(&run, &gold).unwrap_err().to_string();
        assert!(e.contains("a.trec:1: rank `first` is not a number"), "{e}");
        // a qrels file that lists a chunk twice for one query is not the harness's
        std::fs::write(&qrels, "q1 0 c1 1\nq1 0 c1 1\n").unwrap();
        let e = read_qrels(&qrels).unwrap_err().to_string();
        assert!(
            e.contains("qrels.txt:2: chunk `c1` is gold for query `q1` twice"),
            "{e}"
        );
    }
}
