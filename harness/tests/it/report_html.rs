//! The static HTML report (`hopbench::report::html::write_report`) of a small matrix: the matrix page
//! shows exactly the numbers of `matrix.md`, every referenced file exists, nothing refers to the
//! network, a second report removes its own stale files and nothing else, and the pages keep
//! their structure (inline snapshots of an outline of their elements).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use hopbench::pipeline::campaign::Campaign;
use hopbench::report::html::{write_report, ReportOptions, ReportWritten};

use crate::util::Env;

const CAMPAIGN: &str = r#"
results: results
model: model
recall_k: [1, 2, 5, 10, 20]
budgets: [500, 2000]
stats: {resamples: 200, permutations: 500, seed: 7}
datasets:
  synthetic: {format: synthetic}
  synthetic-dialogues: {format: dialogues, derive_from: synthetic}
  absent: {format: musique, files: {questions: nowhere/q.json}}
legs:
  bm25: {kind: bm25}
  dense: {kind: dense}
  packer: {kind: packer, budget: 2000}
  base_oracle: {kind: base_oracle}
  multi_horizon: {kind: multi_horizon}
"#;

/// The campaign run once: `run-matrix --threads 2 --quiet` into `results`.
fn env() -> (Env, Campaign) {
    let env = Env::new();
    std::fs::write(env.path().join("campaign.yaml"), CAMPAIGN).unwrap();
    env.ok(&[
        "run-matrix",
        "--threads",
        "2",
        "--quiet",
        "--data-dir",
        "data",
    ]);
    let (campaign, _) = Campaign::load(Some(&env.path().join("campaign.yaml"))).unwrap();
    (env, campaign)
}

fn report(env: &Env, campaign: &Campaign, out: &str, pairs: &[(&str, &str)]) -> ReportWritten {
    let compare: Vec<(String, String)> = pairs
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    write_report(&ReportOptions {
        results: &env.results("results"),
        out: &env.path().join(out),
        campaign,
        compare: &compare,
    })
    .unwrap()
}

/// Every file under `dir`, relative, with its size.
fn files(dir: &Path) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                todo.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().to_string_lossy().to_string();
                out.insert(rel, e.metadata().unwrap().len());
            }
        }
    }
    out
}

/// The text of an HTML fragment: tags removed, the five entities decoded.
fn text(html: &str) -> String {
    let mut out = String::new();
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

/// The value of attribute `name` in the start tag `tag`.
fn attr<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let at = tag.find(&format!(" {name}=\""))? + name.len() + 3;
    Some(&tag[at..at + tag[at..].find('"')?])
}

/// A row of the matrix as both pages show it: status, queries, and the text of every other
/// column by its header.
#[derive(Debug)]
struct Row {
    status: String,
    queries: String,
    cells: BTreeMap<String, String>,
    reason: Option<String>,
}

/// `matrix.md`'s rows by (dataset, leg), columns named by the metric (`recall@10`) or
/// `tokens@10`, `median_ms`, `p95_ms`.
fn md_rows(md: &str) -> BTreeMap<(String, String), Row> {
    let labels: BTreeMap<String, String> = hopbench::measure::metrics::matrix_columns(&[])
        .iter()
        .map(|(m, _)| (m.label(), m.name()))
        .collect();
    let mut lines = md.lines().filter(|l| l.starts_with("| "));
    let header: Vec<String> = lines
        .next()
        .unwrap()
        .trim_matches('|')
        .split(" | ")
        .map(|h| {
            let h = h.trim().trim_end_matches(" [95% CI]");
            match h {
                "median ms" => "median_ms".into(),
                "p95 ms" => "p95_ms".into(),
                h => labels.get(h).cloned().unwrap_or_else(|| h.to_string()),
            }
        })
        .collect();
    let mut out = BTreeMap::new();
    for line in lines {
        let f: Vec<&str> = line.trim_matches('|').split(" | ").map(str::trim).collect();
        assert_eq!(f.len(), header.len(), "{line}");
        let cells = header[4..]
            .iter()
            .cloned()
            .zip(f[4..].iter().map(|s| s.to_string()))
            .collect();
        let key = (f[0].to_string(), f[1].to_string());
        let row = Row {
            status: f[2].into(),
            queries: f[3].into(),
            cells,
            reason: None,
        };
        assert!(out.insert(key, row).is_none(), "{line}: twice in matrix.md");
    }
    out
}

/// The matrix rows of `index.html` by (dataset, leg).
fn html_rows(html: &str) -> BTreeMap<(String, String), Row> {
    let mut out = BTreeMap::new();
    for chunk in html.split("<tr data-row ").skip(1) {
        let tr = &chunk[..chunk.find("</tr>").unwrap()];
        let start = &tr[..tr.find('>').unwrap()];
        let key = (
            attr(&format!(" {start}"), "data-dataset")
                .unwrap()
                .to_string(),
            attr(&format!(" {start}"), "data-leg").unwrap().to_string(),
        );
        let mut cells = BTreeMap::new();
        let mut queries = String::new();
        for td in tr.split("<td").skip(1) {
            let open = &td[..td.find('>').unwrap()];
            let body = &td[td.find('>').unwrap() + 1..td.find("</td>").unwrap_or(td.len())];
            let col = attr(open, "data-col").unwrap_or("");
            if let Some(m) = attr(open, "data-metric") {
                // the displayed number is the `.v` span; a count `n=` may follow it
                let v = body.split("<span class=\"n\">").next().unwrap();
                cells.insert(m.to_string(), text(v));
            } else if col == "queries" {
                queries = text(body);
            } else if !col.is_empty() && col != "status" {
                cells.insert(col.to_string(), text(body));
            }
        }
        let reason = tr
            .split("<td class=\"reason\"")
            .nth(1)
            .map(|r| text(&r[r.find('>').unwrap() + 1..]));
        let row = Row {
            status: attr(&format!(" {start}"), "data-status")
                .unwrap()
                .to_string(),
            queries,
            cells,
            reason,
        };
        assert!(out.insert(key.clone(), row).is_none(), "{key:?}: two rows");
    }
    out
}

/// Every `src`, `data` and `href` value of the page (fragment-only links excluded).
fn references(html: &str) -> Vec<String> {
    let mut out = Vec::new();
    for name in ["src", "data", "href"] {
        let pat = format!(" {name}=\"");
        for part in html.split(&pat).skip(1) {
            let v = &part[..part.find('"').unwrap()];
            if !v.starts_with('#') {
                out.push(v.split('#').next().unwrap().to_string());
            }
        }
    }
    out
}

#[test]
fn the_matrix_page_shows_matrix_md_numbers_and_every_reference_resolves_offline() {
    let (env, campaign) = env();
    let written = report(
        &env,
        &campaign,
        "report",
        &[
            ("bm25", "multi_horizon"),
            ("bm25", "dense"),
            ("nope", "bm25"),
        ],
    );
    let out = env.path().join("report");
    let on_disk = files(&out);
    assert_eq!(written.index, out.join("index.html"));
    assert_eq!(written.files, on_disk.len(), "{on_disk:?}");
    assert_eq!(written.bytes, on_disk.values().sum::<u64>());

    // one row per cell, the same numbers as matrix.md, to the same rounding
    let md = std::fs::read_to_string(env.results("results").join("matrix.md")).unwrap();
    let index = std::fs::read_to_string(out.join("index.html")).unwrap();
    let (md, html) = (md_rows(&md), html_rows(&index));
    assert_eq!(
        md.keys().collect::<Vec<_>>(),
        html.keys().collect::<Vec<_>>()
    );
    let collected = hopbench::store::collect::collect_summaries(&env.results("results"));
    assert!(
        collected.unreadable.is_empty(),
        "{:?}",
        collected.unreadable
    );
    let summaries = collected.cells;
    assert_eq!(html.len(), summaries.len());
    for (key, m) in &md {
        let h = &html[key];
        assert_eq!((&m.status, &m.queries), (&h.status, &h.queries), "{key:?}");
        if m.status != "ok" {
            assert!(m.cells.values().all(|v| v == "—"), "{key:?}");
            let c = summaries
                .iter()
                .find(|c| (&c.dataset, &c.leg) == (&key.0, &key.1))
                .unwrap();
            assert_eq!(h.reason.as_deref(), c.reason.as_deref(), "{key:?}");
            continue;
        }
        assert_eq!(
            m.cells.keys().collect::<Vec<_>>(),
            h.cells
                .keys()
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect::<Vec<_>>(),
            "{key:?}"
        );
        for (col, want) in &m.cells {
            let got = &h.cells[col];
            // matrix.md prints a CI on two columns; the page prints it wherever there is one
            let same =
                got == want || (!want.contains('[') && got.starts_with(&format!("{want} [")));
            assert!(same, "{key:?} {col}: page `{got}`, matrix.md `{want}`");
        }
    }
    // every mean of an ok cell has its CI on the page
    let r10 = &html[&("synthetic".to_string(), "bm25".to_string())].cells["recall@10"];
    assert!(r10.contains(" ["), "{r10}");
    // the oracle is labelled as such, the dialogues as derived
    let oracle = index
        .split("data-leg=\"base_oracle\"")
        .nth(1)
        .unwrap()
        .split("</tr>")
        .next()
        .unwrap();
    assert!(
        oracle.contains("oracle: upper bound, not a system"),
        "{oracle}"
    );
    let dialogues = std::fs::read_to_string(out.join("d-synthetic-dialogues.html")).unwrap();
    assert!(dialogues.contains("<strong>derived</strong>"));
    // the protocol facts
    for fact in [
        "1, 2, 5, 10, 20",
        "200 resamples, seed 7",
        "500 permutations",
    ] {
        assert!(index.contains(fact), "{fact}");
    }

    // the pages and figures of every dataset and pair (the pair whose leg is absent is skipped)
    for f in [
        "index.html",
        "d-synthetic.html",
        "d-synthetic-dialogues.html",
        "d-absent.html",
        "q-synthetic-bm25-vs-dense.html",
        "q-synthetic-dialogues-bm25-vs-multi_horizon.html",
        "q-synthetic-dialogues-bm25-vs-dense.html",
        "img/synthetic.curves.svg",
        "img/synthetic.recall.svg",
        "img/synthetic.bm25-vs-dense.delta.svg",
    ] {
        assert!(on_disk.contains_key(f), "{f} missing: {on_disk:?}");
    }
    // bm25 vs multi_horizon on synthetic: multi_horizon is missing-inputs there, so the
    // comparison says why and there is no drill-down
    let synthetic = std::fs::read_to_string(out.join("d-synthetic.html")).unwrap();
    assert!(synthetic.contains("not comparable"), "no verdict");
    assert!(!on_disk.contains_key("q-synthetic-bm25-vs-multi_horizon.html"));

    // every reference resolves to a file of the report; no URL reaches the network
    for name in on_disk.keys() {
        let path = out.join(name);
        let body = std::fs::read_to_string(&path).unwrap();
        assert!(
            body[..body.len().min(512)].contains("hopbench report"),
            "{name}: no marker"
        );
        if name.ends_with(".html") {
            for r in references(&body) {
                let target = path.parent().unwrap().join(&r);
                assert!(target.is_file(), "{name}: `{r}` does not exist");
            }
            assert!(body.contains("<html lang=\"en\">"), "{name}");
            for img in body.split("<img ").skip(1) {
                let tag = &img[..img.find('>').unwrap()];
                assert!(
                    attr(&format!(" {tag}"), "alt").is_some_and(|a| !a.is_empty()),
                    "{name}: {tag}"
                );
            }
            assert!(
                !body.contains("<th>"),
                "{name}: a header cell without scope"
            );
        }
        // the only URL-shaped strings are the SVG namespace names, which no browser fetches
        let bare = body.replace("xmlns=\"http://www.w3.org/2000/svg\"", "");
        for scheme in ["http://", "https://", "//fonts.", "@import", "url("] {
            assert!(!bare.contains(scheme), "{name}: `{scheme}`");
        }
    }

    // the drill-down's ranks are the run file's: recount the gold found in the top 10
    let drill = std::fs::read_to_string(out.join("q-synthetic-bm25-vs-dense.html")).unwrap();
    let all_legs = std::fs::read_to_string(out.join("q-synthetic.html")).unwrap();
    let runs = env.results("results").join("runs/synthetic");
    let qrels = std::fs::read_to_string(runs.join("qrels.txt")).unwrap();
    let gold: BTreeSet<(&str, &str)> = qrels
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f[0], f[2])
        })
        .collect();
    for leg in ["bm25", "dense"] {
        let run = std::fs::read_to_string(runs.join(format!("{leg}.trec"))).unwrap();
        let found = run
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .filter(|f| f[3].parse::<usize>().unwrap() <= 10 && gold.contains(&(f[0], f[2])))
            .count();
        let said = format!("<strong>{leg}</strong> {found} of {}", gold.len());
        assert!(drill.contains(&said), "{said} not in the drill-down");
        // the every-leg page bolds the same gold chunks in that leg's column
        let bold = format!("<td class=\"num found\" data-leg=\"{leg}\">");
        assert_eq!(all_legs.matches(&bold).count(), found, "{leg}");
    }
    // the every-leg page has one column per leg with numbers, and one row group per query
    let ok_legs =
        md_rows(&std::fs::read_to_string(env.results("results").join("matrix.md")).unwrap())
            .into_iter()
            .filter(|((d, _), r)| d == "synthetic" && r.status == "ok")
            .count();
    assert!(ok_legs >= 2, "{ok_legs}");
    assert_eq!(
        all_legs
            .matches("<th scope=\"col\" class=\"num\" data-leg=")
            .count(),
        ok_legs
    );
    let queries = gold.iter().map(|g| g.0).collect::<BTreeSet<_>>().len();
    assert_eq!(all_legs.matches("<tbody>").count(), queries);
    assert!(synthetic.contains("href=\"q-synthetic.html\""), "no link");
}

#[test]
fn a_second_report_removes_its_own_stale_files_and_nothing_else() {
    let (env, campaign) = env();
    let first = report(&env, &campaign, "report", &[("bm25", "dense")]);
    let out = env.path().join("report");
    let index = std::fs::read(out.join("index.html")).unwrap();
    // a reader's own files beside the report, with the report's names but not its marker
    std::fs::write(out.join("notes.html"), "<p>mine</p>").unwrap();
    std::fs::write(out.join("img/mine.svg"), "<svg/>").unwrap();
    std::fs::write(out.join("q-synthetic-x-vs-y.html"), "<p>also mine</p>").unwrap();
    // the same results and options again: the same bytes (no timestamp, no ordering noise)
    let again = report(&env, &campaign, "report", &[("bm25", "dense")]);
    assert_eq!(first, again);
    assert_eq!(index, std::fs::read(out.join("index.html")).unwrap());
    // without pairs, each dataset's first two ok legs are compared: the bm25-vs-dense files go
    let third = report(&env, &campaign, "report", &[]);
    let now = files(&out);
    assert!(
        !now.contains_key("q-synthetic-bm25-vs-dense.html"),
        "{now:?}"
    );
    assert!(
        !now.contains_key("img/synthetic.bm25-vs-dense.delta.svg"),
        "{now:?}"
    );
    assert!(
        now.contains_key("q-synthetic-base_oracle-vs-bm25.html"),
        "{now:?}"
    );
    for mine in ["notes.html", "img/mine.svg", "q-synthetic-x-vs-y.html"] {
        assert!(now.contains_key(mine), "{mine} was removed");
    }
    assert_eq!(third.files + 3, now.len());
    // no temporary file is left behind
    assert!(now.keys().all(|f| !f.contains(".tmp-")), "{now:?}");
}

#[test]
fn a_large_matrix_is_one_row_per_cell() {
    // 150 cells: the synthetic bm25 cell copied under 150 leg names (its files with it, so each
    // copy verifies), as a real-set matrix has; the report reads each once
    let (env, campaign) = env();
    let results = env.results("results");
    let cells = results.join("cells/synthetic");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(cells.join("bm25.summary.json")).unwrap())
            .unwrap();
    let big = env.path().join("big");
    for sub in ["cells/synthetic", "runs/synthetic"] {
        std::fs::create_dir_all(big.join(sub)).unwrap();
    }
    std::fs::copy(
        results.join("runs/synthetic/qrels.txt"),
        big.join("runs/synthetic/qrels.txt"),
    )
    .unwrap();
    for i in 0..150 {
        let leg = format!("leg{i:03}");
        let mut s = summary.clone();
        s["leg"] = serde_json::Value::String(leg.clone());
        let path = big.join(format!("cells/synthetic/{leg}.summary.json"));
        std::fs::write(&path, serde_json::to_string_pretty(&s).unwrap()).unwrap();
        // a cell renamed on purpose: sealed again, as hopbench would have written it
        crate::util::edit_json(&path, true, |_| {});
        std::fs::copy(
            cells.join("bm25.queries.parquet"),
            big.join(format!("cells/synthetic/{leg}.queries.parquet")),
        )
        .unwrap();
        std::fs::copy(
            results.join("runs/synthetic/bm25.trec"),
            big.join(format!("runs/synthetic/{leg}.trec")),
        )
        .unwrap();
    }
    let out = env.path().join("big-report");
    let written = write_report(&ReportOptions {
        results: &big,
        out: &out,
        campaign: &campaign,
        compare: &[],
    })
    .unwrap();
    let index = std::fs::read_to_string(&written.index).unwrap();
    assert_eq!(html_rows(&index).len(), 150);
    // identical copies compare as identical, and the drill-down has every query
    let page = std::fs::read_to_string(out.join("d-synthetic.html")).unwrap();
    assert!(
        page.contains("Verdict: <strong>identical</strong>"),
        "no verdict"
    );
    let drill = std::fs::read_to_string(out.join("q-synthetic-leg000-vs-leg001.html")).unwrap();
    assert_eq!(
        drill.matches("<tbody").count(),
        summary["queries"].as_u64().unwrap() as usize
    );
    assert_eq!(written.files, files(&out).len());
}

/// An outline of a page's elements: one line per element (tag, id, classes and the attributes
/// that name what it holds), indented by depth, headings with their text; a run of identical
/// sibling subtrees is written once with its count. Text, numbers and style are left out.
fn outline(html: &str) -> String {
    struct Node {
        label: String,
        children: Vec<Node>,
    }
    const VOID: &[&str] = &["meta", "img", "br", "hr", "input", "link", "col", "source"];
    let mut stack = vec![Node {
        label: String::new(),
        children: vec![],
    }];
    let mut rest = html;
    while let Some(at) = rest.find('<') {
        rest = &rest[at..];
        if rest.starts_with("<!") {
            rest = &rest[rest.find('>').unwrap() + 1..];
            continue;
        }
        let end = rest.find('>').unwrap();
        let tag = &rest[1..end];
        rest = &rest[end + 1..];
        if let Some(name) = tag.strip_prefix('/') {
            let node = stack.pop().unwrap();
            assert!(
                node.label.starts_with(name.trim()),
                "</{name}> closes {}",
                node.label
            );
            stack.last_mut().unwrap().children.push(node);
            continue;
        }
        let name = tag.split_whitespace().next().unwrap().to_string();
        let t = format!(" {tag}");
        let mut label = name.clone();
        if let Some(id) = attr(&t, "id") {
            label += &format!("#{id}");
        }
        if let Some(class) = attr(&t, "class") {
            for c in class.split_whitespace() {
                label += &format!(".{c}");
            }
        }
        for a in ["scope", "data-metric", "data-status", "lang"] {
            if let Some(v) = attr(&t, a) {
                label += &format!("[{a}={v}]");
            }
        }
        if matches!(name.as_str(), "h1" | "h2" | "h3" | "caption") {
            label += &format!(" \"{}\"", text(&rest[..rest.find("</").unwrap()]).trim());
        }
        if matches!(name.as_str(), "style" | "script") {
            rest = &rest[rest.find("</").unwrap()..];
        }
        let node = Node {
            label,
            children: vec![],
        };
        if VOID.contains(&name.as_str()) {
            stack.last_mut().unwrap().children.push(node);
        } else {
            stack.push(node);
        }
    }
    fn render(n: &Node, depth: usize, out: &mut String) {
        out.push_str(&format!("{}{}\n", "  ".repeat(depth), n.label));
        let mut i = 0;
        while i < n.children.len() {
            let mut one = String::new();
            render(&n.children[i], depth + 1, &mut one);
            let mut k = 1;
            while i + k < n.children.len() {
                let mut next = String::new();
                render(&n.children[i + k], depth + 1, &mut next);
                if next != one {
                    break;
                }
                k += 1;
            }
            if k > 1 {
                let (first, rest) = one.split_once('\n').unwrap();
                out.push_str(&format!("{first} ×{k}\n{rest}"));
            } else {
                out.push_str(&one);
            }
            i += k;
        }
    }
    let mut out = String::new();
    for c in &stack[0].children {
        render(c, 0, &mut out);
    }
    out
}

/// The outline of the page at `page`, cut after `lines` lines.
fn structure(page: &Path, lines: usize) -> String {
    let outline = outline(&std::fs::read_to_string(page).unwrap());
    let total = outline.lines().count();
    let mut out: Vec<&str> = outline.lines().take(lines).collect();
    let more = format!("… {} more lines", total - out.len());
    if total > lines {
        out.push(&more);
    }
    out.join("\n")
}

fn snapshot_settings(env: &Env) -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    for (regex, with) in env.filters() {
        settings.add_filter(&regex, with);
    }
    settings.add_filter(r"\d+\.\d+", "[NUM]");
    settings
}

#[test]
fn the_pages_keep_their_structure() {
    let (env, campaign) = env();
    report(&env, &campaign, "report", &[("bm25", "multi_horizon")]);
    let out = env.path().join("report");
    let settings = snapshot_settings(&env);
    let index = structure(&out.join("index.html"), 400);
    settings.bind(|| insta::assert_snapshot!(index, @r#"
        html[lang=en]
          head
            meta ×4
            title
            style
          body
            header.top
              h1 "hopbench report"
              p
              nav
                a ×3
            main
              p
                code ×2
              p.facts-line
                strong
                a
              section#cells
                h2 "Matrix"
                div.scroll
                  table#matrix.sortable
                    caption "The matrix: one row per cell (dataset × leg); each metric is its mean over the row's queries with its 95% CI below it; latency is retrieve + select per query. Click a column header to sort each dataset's legs by it."
                    thead
                      tr
                        th[scope=col] ×2
                          button.sort
                        th.num[scope=col] ×8
                          button.sort
                        th.num[scope=col] ×3
                          button.sort
                          br
                          small
                    tbody
                      tr.group
                        th[scope=rowgroup]
                          strong
                            a
                      tr.oracle[data-status=missing-inputs]
                        th[scope=row]
                          span.leg
                          br
                          span.tag
                        td
                          span.status.missing-inputs
                        td.num
                        td.reason
                      tr[data-status=missing-inputs] ×4
                        th[scope=row]
                          span.leg
                        td
                          span.status.missing-inputs
                        td.num
                        td.reason
                    tbody
                      tr.group
                        th[scope=rowgroup]
                          strong
                            a
                      tr.oracle[data-status=ok]
                        th[scope=row]
                          span.leg
                          br
                          span.tag
                        td
                          span.status.ok
                        td.num
                        td.num[data-metric=recall@2]
                          span.v
                            span.ci
                        td.num[data-metric=recall@5]
                          span.v
                            span.ci
                        td.num[data-metric=recall@10]
                          span.v
                            span.ci
                        td.num[data-metric=ndcg@10]
                          span.v
                            span.ci
                        td.num[data-metric=doc_recall@10]
                          span.v
                            span.ci
                        td.num[data-metric=chain_coverage@10]
                          span.v
                            span.ci
                        td.num[data-metric=full_chain_hit@10]
                          span.v
                            span.ci
                        td.num ×3
                      tr[data-status=ok] ×2
                        th[scope=row]
                          span.leg
                        td
                          span.status.ok
                        td.num
                        td.num[data-metric=recall@2]
                          span.v
                            span.ci
                        td.num[data-metric=recall@5]
                          span.v
                            span.ci
                        td.num[data-metric=recall@10]
                          span.v
                            span.ci
                        td.num[data-metric=ndcg@10]
                          span.v
                            span.ci
                        td.num[data-metric=doc_recall@10]
                          span.v
                            span.ci
                        td.num[data-metric=chain_coverage@10]
                          span.v
                            span.ci
                        td.num[data-metric=full_chain_hit@10]
                          span.v
                            span.ci
                        td.num ×3
                      tr[data-status=missing-inputs]
                        th[scope=row]
                          span.leg
                        td
                          span.status.missing-inputs
                        td.num
                        td.reason
                      tr[data-status=ok]
                        th[scope=row]
                          span.leg
                        td
                          span.status.ok
                        td.num
                        td.num[data-metric=recall@2]
                          span.v
                            span.ci
                        td.num[data-metric=recall@5]
                          span.v
                            span.ci
                        td.num[data-metric=recall@10]
                          span.v
                            span.ci
                        td.num[data-metric=ndcg@10]
                          span.v
                            span.ci
                        td.num[data-metric=doc_recall@10]
                          span.v
                            span.ci
                        td.num[data-metric=chain_coverage@10]
                          span.v
                            span.ci
                        td.num[data-metric=full_chain_hit@10]
                          span.v
                            span.ci
                        td.num ×3
                    tbody
                      tr.group
                        th[scope=rowgroup]
                          strong
                            a
                      tr.oracle[data-status=ok]
                        th[scope=row]
                          span.leg
                          br
                          span.tag
                        td
                          span.status.ok
                        td.num
                        td.num[data-metric=recall@2]
                          span.v
                            span.ci
                        td.num[data-metric=recall@5]
                          span.v
                            span.ci
                        td.num[data-metric=recall@10]
                          span.v
                            span.ci
                        td.num[data-metric=ndcg@10]
                          span.v
                            span.ci
                        td.num[data-metric=doc_recall@10]
                          span.v
                            span.ci
                        td.num[data-metric=chain_coverage@10]
                          span.v
                        td.num[data-metric=full_chain_hit@10]
                          span.v
                        td.num ×3
                      tr[data-status=ok] ×4
                        th[scope=row]
                          span.leg
                        td
                          span.status.ok
                        td.num
                        td.num[data-metric=recall@2]
                          span.v
                            span.ci
                        td.num[data-metric=recall@5]
                          span.v
                            span.ci
                        td.num[data-metric=recall@10]
                          span.v
                            span.ci
                        td.num[data-metric=ndcg@10]
                          span.v
                            span.ci
                        td.num[data-metric=doc_recall@10]
                          span.v
                            span.ci
                        td.num[data-metric=chain_coverage@10]
                          span.v
                        td.num[data-metric=full_chain_hit@10]
                          span.v
                        td.num ×3
              section#datasets
                h2 "Datasets"
                table
                  thead
                    tr
                      th[scope=col] ×2
                      th.num[scope=col] ×2
                      th[scope=col] ×4
                  tbody
                    tr ×3
                      th[scope=row]
                        a
                      td
                      td.num ×2
                      td
                        code
                      td ×3
              section#protocol
                h2 "Protocol"
                dl.facts
                  dt
                  dd
                  dt
                  dd
                  dt
                  dd
                    code
                  dt
                  dd
                  dt
                  dd
                  dt
                  dd
                  dt
                  dd
                  dt
                  dd
                  dt
                  dd
                  dt
                  dd
                    small
                p
            footer
              p
                code
            script
        "#));
    let dialogues = structure(&out.join("d-synthetic-dialogues.html"), 400);
    settings.bind(|| insta::assert_snapshot!(dialogues, @r#"
        html[lang=en]
          head
            meta ×4
            title
            style
          body
            header.top
              h1 "hopbench report: synthetic-dialogues"
              p
              nav
                a ×7
            main
              p
                code ×2
                strong
                code
              section#metrics
                h2 "Every metric"
                figure
                  img
                  figcaption
                div.scroll
                  table#metrics-table.sortable
                    caption "Every metric of every leg with numbers: mean and 95% CI over the row's queries (n where a metric is defined on fewer)"
                    thead
                      tr
                        th[scope=col]
                          button.sort
                        th.num[scope=col] ×12
                          button.sort
                        th.num[scope=col] ×2
                          button.sort
                          br
                          small
                    tbody
                      tr.oracle
                        th[scope=row]
                          span.leg
                          br
                          span.tag
                        td.num
                        td.num[data-metric=recall@1]
                          span.v
                            span.ci
                        td.num[data-metric=recall@2]
                          span.v
                            span.ci
                        td.num[data-metric=recall@5]
                          span.v
                            span.ci
                        td.num[data-metric=recall@10]
                          span.v
                            span.ci
                        td.num[data-metric=recall@20]
                          span.v
                            span.ci
                        td.num[data-metric=ndcg@10]
                          span.v
                            span.ci
                        td.num[data-metric=mrr@10]
                          span.v
                            span.ci
                        td.num[data-metric=doc_recall@5]
                          span.v
                            span.ci
                        td.num[data-metric=doc_recall@10]
                          span.v
                            span.ci
                        td.num[data-metric=chain_coverage@10]
                          span.v
                        td.num[data-metric=full_chain_hit@10]
                          span.v
                        td.num ×2
                      tr ×4
                        th[scope=row]
                          span.leg
                        td.num
                        td.num[data-metric=recall@1]
                          span.v
                            span.ci
                        td.num[data-metric=recall@2]
                          span.v
                            span.ci
                        td.num[data-metric=recall@5]
                          span.v
                            span.ci
                        td.num[data-metric=recall@10]
                          span.v
                            span.ci
                        td.num[data-metric=recall@20]
                          span.v
                            span.ci
                        td.num[data-metric=ndcg@10]
                          span.v
                            span.ci
                        td.num[data-metric=mrr@10]
                          span.v
                            span.ci
                        td.num[data-metric=doc_recall@5]
                          span.v
                            span.ci
                        td.num[data-metric=doc_recall@10]
                          span.v
                            span.ci
                        td.num[data-metric=chain_coverage@10]
                          span.v
                        td.num[data-metric=full_chain_hit@10]
                          span.v
                        td.num ×2
              section#curves
                h2 "Budget curves"
                figure
                  img
                  figcaption
                details
                  summary
                  div.scroll
                    table#curve-table
                      thead
                        tr
                          th[scope=col]
                          th.num[scope=col] ×7
                          th.num[scope=col] ×3
                            br
                            small
                      tbody
                        tr
                          th[scope=rowgroup]
                          td.num ×2
                          td.num[data-metric=recall@10]
                            span.v
                              span.ci
                          td.num[data-metric=ndcg@10]
                            span.v
                              span.ci
                          td.num[data-metric=doc_recall@10]
                            span.v
                              span.ci
                          td.num[data-metric=chain_coverage@10]
                            span.v
                          td.num[data-metric=full_chain_hit@10]
                            span.v
                          td.num ×3
                        tr
                          td.num ×2
                          td.num[data-metric=recall@10]
                            span.v
                              span.ci
                          td.num[data-metric=ndcg@10]
                            span.v
                              span.ci
                          td.num[data-metric=doc_recall@10]
                            span.v
                              span.ci
                          td.num[data-metric=chain_coverage@10]
                            span.v
                          td.num[data-metric=full_chain_hit@10]
                            span.v
                          td.num ×3
              section#comparisons
                h2 "Paired comparisons"
                h3#cmp-bm25-vs-multi_horizon "multi_horizon vs bm25"
                p
                  strong
                figure
                  img
                  figcaption
                div.scroll
                  table.comparison
                    caption "multi_horizon − bm25: per metric, the means, the paired difference with its CIs and p-values"
                    thead
                      tr
                        th[scope=col]
                        th.num[scope=col] ×2
                        th.num[scope=col] ×2
                          br
                          small
                        th.num[scope=col] ×4
                        th[scope=col]
                    tbody
                      tr
                        th[scope=row]
                        td.num ×2
                        td.num[data-metric=recall@1]
                          span.v
                            span.ci
                        td.num ×5
                        td
                      tr
                        th[scope=row]
                        td.num ×2
                        td.num[data-metric=recall@2]
                          span.v
                            span.ci
                        td.num ×5
                        td
                      tr
                        th[scope=row]
                        td.num ×2
                        td.num[data-metric=recall@5]
                          span.v
                            span.ci
                        td.num ×5
                        td
                      tr
                        th[scope=row]
                        td.num ×2
                        td.num[data-metric=recall@10]
                          span.v
                            span.ci
                        td.num ×5
                        td
                      tr
                        th[scope=row]
                        td.num ×2
                        td.num[data-metric=recall@20]
                          span.v
                            span.ci
                        td.num ×5
                        td
                      tr
                        th[scope=row]
                        td.num ×2
                        td.num[data-metric=ndcg@10]
                          span.v
                            span.ci
                        td.num ×5
                        td
                      tr
                        th[scope=row]
                        td.num ×2
                        td.num[data-metric=mrr@10]
                          span.v
                            span.ci
                        td.num ×5
                        td
                      tr
                        th[scope=row]
                        td.num ×2
                        td.num[data-metric=doc_recall@5]
                          span.v
                            span.ci
                        td.num ×5
                        td
                      tr
                        th[scope=row]
                        td.num ×2
                        td.num[data-metric=doc_recall@10]
                          span.v
                            span.ci
                        td.num ×5
                        td
                      tr
                        th[scope=row]
                        td.num ×2
                        td.num[data-metric=chain_coverage@10]
                          span.v
                        td.num ×5
                        td
                      tr
                        th[scope=row]
                        td.num ×2
                        td.num[data-metric=full_chain_hit@10]
                          span.v
                        td.num ×5
                        td
                p
                  a
              section#per-query
                h2 "Per query, any two legs"
                p
                  a
              section#conversations
                h2 "Breakdowns, intents and references"
                div.scroll
                  table.breakdown.sortable
                    caption "By intent: per group of queries, mean [95% CI] over the group"
                    thead
                      tr
                        td
                        th.group-head[scope=colgroup] ×2
                      tr
                        th[scope=col]
                          button.sort
                        th.num[scope=col] ×6
                          button.sort
                    tbody
                      tr
                        th[scope=row]
                          span.leg
                        td.num
                        td.num[data-metric=recall@10]
                          span.v
                            span.ci
                        td.num[data-metric=ndcg@10]
                          span.v
                            span.ci
                        td.num
                        td.num[data-metric=recall@10]
                          span.v
                            span.ci
                        td.num[data-metric=ndcg@10]
                          span.v
                            span.ci
                div.scroll
                  table.breakdown.sortable
                    caption "By label:multi_turn: per group of queries, mean [95% CI] over the group"
                    thead
                      tr
                        td
                        th.group-head[scope=colgroup] ×2
                      tr
                        th[scope=col]
                          button.sort
                        th.num[scope=col] ×6
                          button.sort
                    tbody
                      tr
                        th[scope=row]
                          span.leg
                          br
                          span.tag
                        td.num
                        td.num[data-metric=recall@10]
                          span.v
                            span.ci
                        td.num[data-metric=ndcg@10]
                          span.v
                            span.ci
                        td.num
                        td.num[data-metric=recall@10]
                          span.v
                            span.ci
                        td.num[data-metric=ndcg@10]
                          span.v
                            span.ci
                      tr ×4
                        th[scope=row]
                          span.leg
                        td.num
                        td.num[data-metric=recall@10]
                          span.v
                            span.ci
                        td.num[data-metric=ndcg@10]
                          span.v
                            span.ci
                        td.num
                        td.num[data-metric=recall@10]
                          span.v
                            span.ci
                        td.num[data-metric=ndcg@10]
                          span.v
                            span.ci
                h3 "Intent confusion"
                p.muted
                div.flex
                  table.confusion
                    caption "multi_horizon: label:multi_turn × intent"
                    thead
                      tr
                        th[scope=col]
                        th.num[scope=col] ×3
                    tbody
                      tr ×2
                        th[scope=row]
                        td.num ×3
                h3 "Reference resolution"
                table.references
                  thead
                    tr
                      th[scope=col]
                      th.num[scope=col] ×3
                      th.num[scope=col]
                        br
                        small
                  tbody
                    tr
                      th[scope=row]
                      td.num ×3
                      td.num
                        span.v
                          span.ci
              section#diagnostics
                h2 "Diagnostics"
                p.muted
                div.flex
                  table.diagnostics
                    thead
                      tr
                        th[scope=col]
                        th.num[scope=col]
                          br
                          small
                          br
                          span.tag
                    tbody
                      tr ×18
                        th[scope=row]
                        td.num
                  table.diagnostics
        … 37 more lines
        "#));
    let drill = structure(
        &out.join("q-synthetic-dialogues-bm25-vs-multi_horizon.html"),
        40,
    );
    settings.bind(|| {
        insta::assert_snapshot!(drill, @r#"
        html[lang=en]
          head
            meta ×4
            title
            style
          body
            header.top
              h1 "synthetic-dialogues: multi_horizon vs bm25, per query"
              p
                code
              nav
                a ×2
            main
              p
                strong ×2
              p.muted
                strong
              table#drill
                caption "multi_horizon vs bm25 on synthetic-dialogues: gold chunks per query"
                thead
                  tr
                    th[scope=col] ×2
                    th.num[scope=col] ×4
                tbody
                  tr
                    th.q[scope=rowgroup]
                    td
                      code
                    td.num.found ×2
                    td.num ×2
                tbody.differs ×2
                  tr
                    th.q[scope=rowgroup]
                    td
                      code
                    td.num
                    td.num.found
                    td.num ×2
                tbody
                  tr
        … 864 more lines
        "#)
    });
}
