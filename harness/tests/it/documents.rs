//! Your own documents end to end: a documents set written here, chunked along a matrix axis,
//! run, and every retrieved chunk traced back to its source span.

use std::collections::{BTreeMap, BTreeSet};

use hopbench_datasets::export;

use crate::util::Env;

/// Three documents of several sentences (words of the tiny model's vocabulary and others), a
/// span-gold query, a document-gold query and one with both. Text with multi-byte characters,
/// so code-point and byte offsets differ.
const DOCUMENTS: &str = r#"{"id": "river", "title": "River", "text": "The river runs through the old city. Its water is cold and clear. Fish swim in the river all year. The bridge over the river is made of stone. People walk on the bridge every morning."}
{"id": "café", "title": "Café", "text": "The café ☕ opened in spring. Its owner is Zoë, who bakes bread. The bread is sold before noon. Visitors come from far away to taste it."}
{"id": "mountain", "title": "Mountain", "text": "The mountain is high and white. Snow covers the top all winter. A small path leads to the top. Climbers start before the sun rises."}
"#;

const QUERIES: &str = r#"{"id": "q-bridge", "text": "What is the bridge made of?"}
{"id": "q-owner", "text": "Who owns the café?"}
{"id": "q-mountain", "text": "What covers the mountain?"}
{"id": "q-none", "text": "unjudged question"}
"#;

const QRELS: &str = "q-mountain 0 mountain 1\nq-owner 0 café 1\n";

/// The gold spans, written from the text so the offsets are right by construction.
fn spans() -> String {
    let docs: BTreeMap<String, String> = DOCUMENTS
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (
                v["id"].as_str().unwrap().to_string(),
                v["text"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let span = |q: &str, doc: &str, needle: &str| {
        let text = &docs[doc];
        let byte = text.find(needle).unwrap();
        let start = text[..byte].chars().count();
        let end = start + needle.chars().count();
        format!(
            r#"{{"query_id": "{q}", "doc_id": "{doc}", "char_start": {start}, "char_end": {end}}}"#
        )
    };
    [
        span(
            "q-bridge",
            "river",
            "The bridge over the river is made of stone.",
        ),
        span("q-owner", "café", "Its owner is Zoë"),
    ]
    .join("\n")
        + "\n"
}

const CAMPAIGN: &str = r#"
results: results
model: model
recall_k: [1, 5, 10]
stats: {resamples: 200, permutations: 500, seed: 7}
datasets:
  docs:
    format: documents
    files: {documents: docs/documents.jsonl, queries: docs/queries.jsonl, qrels: docs/qrels.txt, spans: docs/spans.jsonl}
    chunking: {size: [12, 48], overlap: [0, 4]}
  docs-chars:
    format: documents
    files: {documents: docs/documents.jsonl, queries: docs/queries.jsonl, spans: docs/spans.jsonl}
    chunking: {small: {size: 40, overlap: 10, unit: chars}}
  docs-whole:
    format: documents
    files: {documents: docs/documents.jsonl, queries: docs/queries.jsonl, spans: docs/spans.jsonl}
legs:
  lexical: {kind: lexical}
  dense: {kind: dense}
  bm25: {kind: bm25}
  packer: {kind: packer, budget: 60}
budgets: [20, 40, 80]
"#;

fn env() -> Env {
    let env = Env::new();
    std::fs::write(env.path().join("campaign.yaml"), CAMPAIGN).unwrap();
    let d = env.path().join("data/docs");
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("documents.jsonl"), DOCUMENTS).unwrap();
    std::fs::write(d.join("queries.jsonl"), QUERIES).unwrap();
    std::fs::write(d.join("qrels.txt"), QRELS).unwrap();
    std::fs::write(d.join("spans.jsonl"), spans()).unwrap();
    env
}

const VARIANTS: [&str; 4] = [
    "docs@size12-overlap0",
    "docs@size12-overlap4",
    "docs@size48-overlap0",
    "docs@size48-overlap4",
];

fn run(env: &Env, datasets: &str, legs: &str) -> String {
    env.ok(&[
        "run-matrix",
        "--threads",
        "1",
        "--quiet",
        "--no-report",
        "--data-dir",
        "data",
        "--datasets",
        datasets,
        "--legs",
        legs,
    ])
}

/// `runs/<dataset>/chunks.tsv` as chunk id -> (doc id, start, end), header checked.
fn chunks_tsv(env: &Env, dataset: &str) -> BTreeMap<String, (String, u32, u32)> {
    let p = env
        .results("results")
        .join("runs")
        .join(dataset)
        .join("chunks.tsv");
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("chunk_id\tdoc_id\tchar_start\tchar_end"));
    lines
        .map(|l| {
            let c: Vec<&str> = l.split('\t').collect();
            assert_eq!(c.len(), 4, "{l}");
            (
                c[0].to_string(),
                (
                    c[1].to_string(),
                    c[2].parse().unwrap(),
                    c[3].parse().unwrap(),
                ),
            )
        })
        .collect()
}

fn doc_field(doc: &str, field: &str) -> String {
    DOCUMENTS
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|v| v["id"] == doc)
        .map(|v| v[field].as_str().unwrap().to_string())
        .unwrap()
}

fn doc_text(doc: &str) -> String {
    doc_field(doc, "text")
}

/// Python's `text[start:end]`.
fn slice(text: &str, start: u32, end: u32) -> String {
    text.chars()
        .skip(start as usize)
        .take((end - start) as usize)
        .collect()
}

#[test]
fn a_chunking_axis_runs_one_export_per_setting_with_every_chunk_citable() {
    let env = env();
    run(&env, "docs", "lexical,dense,bm25");
    // a cached rerun of chunked documents loads the export (`chunks.tsv` is written from its
    // corpus) and writes the same side files; everything below reads the rerun's
    let tsv_before = chunks_tsv(&env, VARIANTS[0]);
    let out = run(&env, "docs", "lexical,dense,bm25");
    assert!(out.contains("0 computed, 12 cached"), "{out}");
    assert!(!out.contains("every cell cached"), "{out}");
    assert_eq!(chunks_tsv(&env, VARIANTS[0]), tsv_before);
    let results = env.results("results");
    let mut keys = BTreeSet::new();
    for v in VARIANTS {
        for leg in ["lexical", "dense", "bm25"] {
            let s = env.summary("results", v, leg);
            assert_eq!(s["status"], "ok", "{v} x {leg}: {s}");
            assert_eq!(s["queries"], 3, "q-none has no gold");
            assert!(out.contains(&format!("| {v} | {leg} | ok |")), "{out}");
        }
        assert!(
            !results.join("cells/docs-chars@small").exists(),
            "not selected"
        );
        let e = export::load(&results.join("exports").join(v)).unwrap();
        keys.insert(e.manifest.input_key.clone());
        // every chunk: its text is its span of its document, and the side file says so
        let tsv = chunks_tsv(&env, v);
        assert_eq!(tsv.len(), e.chunks.len());
        for (c, t) in e.chunks.iter().zip(e.texts().unwrap()) {
            let span = c.span.expect("every chunk of a documents set has a span");
            let doc = &e.docs[c.doc.unwrap() as usize];
            assert_eq!(
                slice(&doc_text(doc), span.start, span.end),
                t.text,
                "{}",
                c.id
            );
            assert_eq!(tsv[&c.id], (doc.clone(), span.start, span.end));
            assert!(c.id.starts_with(&format!("{doc}#")));
            assert_eq!(t.title, doc_field(doc, "title"));
        }
        // every docno of every run file cites a span
        for leg in ["lexical", "dense", "bm25"] {
            let run =
                std::fs::read_to_string(results.join("runs").join(v).join(format!("{leg}.trec")))
                    .unwrap();
            for line in run.lines() {
                let docno = line.split(' ').nth(2).unwrap();
                assert!(
                    tsv.contains_key(docno),
                    "{v}/{leg}: {docno} not in chunks.tsv"
                );
            }
        }
        // gold: the chunks overlapping a gold span; all chunks of a judged document
        let qrels =
            std::fs::read_to_string(results.join("runs").join(v).join("qrels.txt")).unwrap();
        let gold_of = |q: &str| -> BTreeSet<String> {
            qrels
                .lines()
                .filter(|l| l.starts_with(&format!("{q} ")))
                .map(|l| l.split(' ').nth(2).unwrap().to_string())
                .collect()
        };
        let text = doc_text("river");
        let needle = "The bridge over the river is made of stone.";
        let gs = text[..text.find(needle).unwrap()].chars().count() as u32;
        let ge = gs + needle.chars().count() as u32;
        let want: BTreeSet<String> = tsv
            .iter()
            .filter(|(_, (d, s, e))| d == "river" && *s.max(&gs) < *e.min(&ge))
            .map(|(id, _)| id.clone())
            .collect();
        assert!(!want.is_empty());
        assert_eq!(gold_of("q-bridge"), want, "{v}");
        let all_of = |doc: &str| -> BTreeSet<String> {
            tsv.iter()
                .filter(|(_, (d, ..))| d == doc)
                .map(|(id, _)| id.clone())
                .collect()
        };
        assert_eq!(gold_of("q-mountain"), all_of("mountain"), "{v}");
        assert_eq!(
            gold_of("q-owner"),
            all_of("café"),
            "document gold wins: {v}"
        );
        let labels: Vec<&str> = e
            .queries
            .iter()
            .map(|q| q.labels["gold_level"].as_str())
            .collect();
        assert_eq!(labels, ["span", "document", "document"]);
    }
    assert_eq!(keys.len(), 4, "each setting is its own export");
    // smaller chunks: more of them
    let n = |v: &str| {
        export::load(&results.join("exports").join(v))
            .unwrap()
            .chunks
            .len()
    };
    assert!(
        n(VARIANTS[0]) > n(VARIANTS[2]),
        "{} vs {}",
        n(VARIANTS[0]),
        n(VARIANTS[2])
    );
    // doc_recall counts the chunk's document: on the document-gold query, finding any chunk of
    // `mountain` in the first 10 documents is a full hit
    let s = env.summary("results", VARIANTS[0], "bm25");
    assert!(s["metrics"]["doc_recall@10"].as_f64().unwrap() > 0.0, "{s}");

    // unchanged settings reuse their exports; a variant alone is selectable
    let again = run(&env, "docs@size48-overlap4,docs-chars", "lexical");
    assert!(!again.contains("docs@size48-overlap4: prepared"), "{again}");
    assert!(again.contains("docs-chars@small: prepared"), "{again}");
    assert_eq!(
        env.summary("results", "docs-chars@small", "lexical")["status"],
        "ok"
    );
    let tsv = chunks_tsv(&env, "docs-chars@small");
    assert!(tsv.values().all(|(_, s, e)| e - s <= 40));
    // a dataset without chunking: one chunk per document, spans covering the whole text
    run(&env, "docs-whole", "lexical");
    let tsv = chunks_tsv(&env, "docs-whole");
    assert_eq!(tsv.len(), 3);
    assert_eq!(
        tsv["river#0"],
        (
            "river".to_string(),
            0,
            doc_text("river").chars().count() as u32
        )
    );
    let e = env.run(&[
        "run-matrix",
        "--threads",
        "1",
        "--quiet",
        "--data-dir",
        "data",
        "--datasets",
        "docs@size99-overlap0",
    ]);
    assert!(!e.status.success());
    assert!(
        String::from_utf8_lossy(&e.stderr).contains("unknown dataset `docs@size99-overlap0`"),
        "{}",
        String::from_utf8_lossy(&e.stderr)
    );
}

#[test]
fn changing_the_chunk_setting_makes_a_new_export_and_the_settings_round_trip() {
    let env = env();
    let one = CAMPAIGN.replace(
        "chunking: {size: [12, 48], overlap: [0, 4]}",
        "chunking: {size: 12}",
    );
    std::fs::write(env.path().join("campaign.yaml"), &one).unwrap();
    let first = run(&env, "docs", "lexical");
    assert!(first.contains("docs: prepared"), "{first}");
    let dir = env.results("results").join("exports/docs");
    let key = export::load(&dir).unwrap().manifest.input_key;
    std::fs::write(
        env.path().join("campaign.yaml"),
        one.replace("chunking: {size: 12}", "chunking: {size: 12, overlap: 3}"),
    )
    .unwrap();
    let second = run(&env, "docs", "lexical");
    assert!(
        second.contains("docs: prepared"),
        "a new setting re-prepares: {second}"
    );
    assert_ne!(export::load(&dir).unwrap().manifest.input_key, key);

    // --show-settings prints the expanded axis; run from that file, it is the same matrix
    std::fs::write(env.path().join("campaign.yaml"), CAMPAIGN).unwrap();
    let shown = env.stdout(&[
        "run-matrix",
        "--threads",
        "1",
        "--data-dir",
        "data",
        "--datasets",
        "docs",
        "--legs",
        "lexical",
        "--show-settings",
    ]);
    for v in VARIANTS {
        assert!(shown.contains(v), "{v}: {shown}");
    }
    std::fs::write(env.path().join("shown.yaml"), &shown).unwrap();
    let out = env.ok(&[
        "run-matrix",
        "--campaign",
        "shown.yaml",
        "--quiet",
        "--no-report",
    ]);
    for v in VARIANTS {
        assert!(out.contains(&format!("| {v} | lexical | ok |")), "{out}");
    }
}

#[test]
fn bad_documents_input_is_an_error_naming_file_line_and_field() {
    let env = env();
    let path = env.path().join("data/docs/spans.jsonl");
    std::fs::write(
        &path,
        spans().lines().next().unwrap().to_string()
            + "\n{\"query_id\": \"q-owner\", \"doc_id\": \"café\", \"char_start\": 10, \"char_end\": 999}\n",
    )
    .unwrap();
    let out = env.run(&[
        "run-matrix",
        "--threads",
        "1",
        "--quiet",
        "--data-dir",
        "data",
        "--datasets",
        "docs-whole",
        "--legs",
        "lexical",
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("spans.jsonl: record 1 (line 2): field `char_end`: 999 is beyond the end of document \"café\""),
        "{err}"
    );
    assert!(
        !env.results("results").join("exports/docs-whole").exists(),
        "nothing half-written"
    );

    // chunks sized in tokens under the hashing model, which has no tokenizer: the message
    // names the setting, not the tokenizer file that is not there
    let out = env.run(&[
        "prepare",
        "--quiet",
        "--model",
        "hashing-384",
        "--data-dir",
        "data",
        "--datasets",
        "docs@size12-overlap0",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("datasets.docs@size12-overlap0: field `chunking`: `unit: tokens`")
            && !err.contains("tokenizer.json"),
        "{err}"
    );
}

#[test]
fn chunk_sizes_compare_at_equal_token_spend() {
    let env = env();
    run(
        &env,
        "docs@size12-overlap0,docs@size48-overlap0,docs-chars",
        "packer",
    );
    let out = env.stdout(&[
        "compare-curves",
        "--dataset",
        "docs@size12-overlap0",
        "--dataset-b",
        "docs@size48-overlap0",
        "packer",
        "packer",
        "--json",
        "cmp.json",
    ]);
    assert!(
        out.starts_with(
            "B = docs@size48-overlap0 x packer minus A = docs@size12-overlap0 x packer at equal token budgets (3 queries"
        ),
        "{out}"
    );
    for budget in ["| 20 |", "| 40 |", "| 80 |"] {
        assert!(out.contains(budget), "{out}");
    }
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(env.path().join("cmp.json")).unwrap())
            .unwrap();
    assert_eq!(json["dataset_b"], "docs@size48-overlap0");
    // docs-chars has no qrels: 2 queries, not the same query set
    let bad = env.run(&[
        "compare-curves",
        "--dataset",
        "docs@size12-overlap0",
        "--dataset-b",
        "docs-chars@small",
        "packer",
        "packer",
    ]);
    assert!(!bad.status.success());
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("different query sets"),
        "{}",
        String::from_utf8_lossy(&bad.stderr)
    );
    let legs = env.run(&[
        "compare-legs",
        "--dataset",
        "docs@size12-overlap0",
        "--dataset-b",
        "x",
        "packer",
        "packer",
    ]);
    // `--dataset-b` is compare-curves' flag alone: compare-legs does not know it
    assert_eq!(legs.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&legs.stderr).contains("unexpected argument '--dataset-b'"),
        "{}",
        String::from_utf8_lossy(&legs.stderr)
    );
}

#[test]
fn a_pool_of_documents_sets_keeps_every_span() {
    let env = env();
    std::fs::write(
        env.path().join("campaign.yaml"),
        format!("{CAMPAIGN}\n").replace(
            "datasets:\n",
            "datasets:\n  both: {format: pool, pool: [docs-whole, docs-chars@small]}\n",
        ),
    )
    .unwrap();
    run(&env, "both,docs-chars", "lexical");
    let pooled = chunks_tsv(&env, "both");
    let part = chunks_tsv(&env, "docs-chars@small");
    assert_eq!(pooled.len(), part.len() + 3);
    for (id, (doc, s, e)) in &part {
        assert_eq!(
            pooled[&format!("docs-chars@small:{id}")],
            (format!("docs-chars@small:{doc}"), *s, *e)
        );
    }
    assert_eq!(pooled["docs-whole:café#0"].1, 0);
}
