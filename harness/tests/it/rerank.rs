//! The rerank stage end to end: a leg with `rerank:` is its unreranked leg with the base's first
//! `k` reordered by the reranker's scores (recomputed here independently: the export's vectors
//! for the bi-encoder, the CrossEncoder itself for the cross-encoder), ties on ascending id, the
//! rest kept below; the rescued tail of a rescue leg stays appended; the stage is timed apart;
//! groups that cannot run are refused by name.

use std::collections::BTreeMap;

use crate::util::Env;

const CAMPAIGN: &str = r#"
results: results
model: model
recall_k: [1, 2, 5, 10, 20]
stats: {resamples: 200, permutations: 500, seed: 7}
datasets:
  synthetic:
    format: synthetic
legs:
  bm25: {kind: bm25}
  bm25_bi: {kind: bm25, rerank: {reranker: bi_encoder, k: 20}}
  bm25_bi_m2: {kind: bm25, rerank: {reranker: bi_encoder, k: 20, model: model2}}
  bm25_ce: {kind: bm25, rerank: {reranker: cross_encoder, k: 10, model: ce}}
  graph_rescue: {kind: graph_rescue, graph_mode: force}
  graph_rescue_bi: {kind: graph_rescue, graph_mode: force, rerank: {reranker: bi_encoder, k: 30}}
"#;

fn env() -> Env {
    let env = Env::new();
    hopbench_datasets::embed::write_tiny_model(&env.path().join("model2"), 12).unwrap();
    let fixture =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../datasets/tests/fixtures/ce/bert");
    let ce = env.path().join("ce");
    std::fs::create_dir_all(&ce).unwrap();
    for f in std::fs::read_dir(&fixture).unwrap() {
        let f = f.unwrap().path();
        std::fs::copy(&f, ce.join(f.file_name().unwrap())).unwrap();
    }
    std::fs::write(env.path().join("rr.yaml"), CAMPAIGN).unwrap();
    env
}

fn run(env: &Env, results: &str, threads: &str) {
    env.ok(&[
        "run-matrix",
        "--campaign",
        "rr.yaml",
        "--threads",
        threads,
        "--quiet",
        "--no-curves",
        "--results",
        results,
        "--datasets",
        "synthetic",
        "--legs",
        "all",
    ]);
}

/// A run file's rankings: query id -> chunk ids in rank order.
fn rankings(env: &Env, results: &str, leg: &str) -> BTreeMap<String, Vec<String>> {
    let text = std::fs::read_to_string(
        env.results(results)
            .join(format!("runs/synthetic/{leg}.trec")),
    )
    .unwrap();
    let mut out: BTreeMap<String, Vec<(usize, String)>> = BTreeMap::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        out.entry(f[0].to_string())
            .or_default()
            .push((f[3].parse().unwrap(), f[2].to_string()));
    }
    out.into_iter()
        .map(|(q, mut v)| {
            v.sort();
            (q, v.into_iter().map(|(_, d)| d).collect())
        })
        .collect()
}

/// `base`'s first `k` ordered by `score` (descending, ties on ascending id), the rest after.
fn reranked(base: &[String], k: usize, score: impl Fn(&str) -> f32) -> Vec<String> {
    let head = k.min(base.len());
    let mut top: Vec<(f32, &String)> = base[..head].iter().map(|d| (score(d), d)).collect();
    top.sort_by(|a, b| b.0.partial_cmp(&a.0).unwrap().then(a.1.cmp(b.1)));
    let mut out: Vec<String> = top.into_iter().map(|(_, d)| d.clone()).collect();
    out.extend(base[head..].iter().cloned());
    out
}

#[test]
fn a_reranked_leg_is_its_base_reordered_by_the_rerankers_scores() {
    let env = env();
    run(&env, "r1", "2");
    for leg in ["bm25_bi", "bm25_bi_m2", "bm25_ce", "graph_rescue_bi"] {
        let s = env.summary("r1", "synthetic", leg);
        assert_eq!(s["status"], "ok", "{leg}: {s}");
        assert!(
            s["timing"]["latency_ms"]["rerank"]["median"].is_number(),
            "{leg}: {s}"
        );
    }
    let plain = env.summary("r1", "synthetic", "bm25");
    assert!(plain["timing"]["latency_ms"].get("rerank").is_none());
    assert!(plain["inputs"].get("reranker").is_none());
    let ce_id = env.summary("r1", "synthetic", "bm25_ce")["inputs"]["reranker"].clone();
    assert!(ce_id.as_str().unwrap().starts_with("ce@"), "{ce_id}");

    let export =
        hopbench_datasets::export::load(&env.results("r1").join("exports/synthetic")).unwrap();
    let qindex: BTreeMap<&str, usize> = (export.queries.iter().enumerate())
        .map(|(i, q)| (q.id.as_str(), i))
        .collect();
    let bm25 = rankings(&env, "r1", "bm25");
    // the bi-encoder over the leg's own vectors: the export's cosine
    let vecs = export.embeddings().unwrap();
    let dim = export.dim;
    for (q, got) in rankings(&env, "r1", "bm25_bi") {
        let qv = export.query_embedding(qindex[q.as_str()]);
        let cos = |d: &str| {
            let c = export.chunk_index(d).unwrap() as usize;
            hopbench_datasets::vector::dot(qv, &vecs[c * dim..(c + 1) * dim])
        };
        assert_eq!(got, reranked(&bm25[&q], 20, cos), "bm25_bi {q}");
    }
    // the cross-encoder: the CrossEncoder's own scores of (query, chunk full text)
    let ce = hopbench_datasets::embed::CrossEncoder::load(&env.path().join("ce"), None).unwrap();
    let texts = export.texts().unwrap();
    for (q, got) in rankings(&env, "r1", "bm25_ce") {
        let query = &export.queries[qindex[q.as_str()]].text;
        let score = |d: &str| {
            let c = export.chunk_index(d).unwrap() as usize;
            ce.score(query, &[&texts[c].full_text()]).unwrap()[0]
        };
        assert_eq!(got, reranked(&bm25[&q], 10, score), "bm25_ce {q}");
    }
    // graph rescue: the base reranked, the rescued tail as graph_rescue appended it
    let rescue = rankings(&env, "r1", "graph_rescue");
    let rescue_bi = rankings(&env, "r1", "graph_rescue_bi");
    let mut moved = 0;
    for (q, got) in &rescue_bi {
        let mut a = got.clone();
        let mut b = rescue[q].clone();
        assert_eq!(a.len(), b.len(), "{q}");
        moved += usize::from(a != b);
        a.sort();
        b.sort();
        assert_eq!(a, b, "{q}: the same candidates");
    }
    assert!(moved > 0, "the stage reorders something");
    // the rerank stage's scores are a pure function of the pairs: 1 thread gives the same runs
    run(&env, "r2", "1");
    for leg in ["bm25_bi", "bm25_bi_m2", "bm25_ce", "graph_rescue_bi"] {
        assert_eq!(
            rankings(&env, "r1", leg),
            rankings(&env, "r2", leg),
            "{leg}"
        );
    }
}

#[test]
fn rerank_groups_that_cannot_run_are_refused_naming_the_field() {
    let env = env();
    // `hopbench legs` shows the group resolved (its default `k` filled in), after `kind`
    let legs = env.ok(&["legs", "--campaign", "rr.yaml"]);
    for want in [
        r#"{"kind":"bm25","rerank":{"reranker":"cross_encoder","k":10,"model":"ce"},"pool_k":100"#,
        r#"{"kind":"graph_rescue","rerank":{"reranker":"bi_encoder","k":30},"#,
    ] {
        assert!(legs.contains(want), "{want} in {legs}");
    }
    for (leg, needle) in [
        (
            "{kind: cdgr, rerank: {reranker: bi_encoder}}",
            "kind `cdgr` selects facts rather than ranking a base",
        ),
        (
            "{kind: base_oracle, rerank: {reranker: bi_encoder}}",
            "kind `base_oracle` is a bound that reads the gold",
        ),
        (
            "{kind: bm25, rerank: {reranker: bi_encoder, k: 0}}",
            "field `k`",
        ),
        (
            "{kind: bm25, rerank: {reranker: cross_encoder}}",
            "field `model`",
        ),
        (
            "{kind: bm25, rerank: {reranker: magic}}",
            "unknown variant `magic`",
        ),
    ] {
        let text = format!("{CAMPAIGN}  bad: {leg}\n");
        std::fs::write(env.path().join("bad.yaml"), text).unwrap();
        let out = env.run(&["legs", "--campaign", "bad.yaml"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{leg}: {err}");
        assert!(err.contains(needle), "{leg}: {err}");
    }
    // a directory that is not a cross-encoder (the embedder): refused before anything runs
    let text = CAMPAIGN.replace("model: ce}", "model: model}");
    std::fs::write(env.path().join("bad.yaml"), text).unwrap();
    let out = env.run(&[
        "run-matrix",
        "--campaign",
        "bad.yaml",
        "--threads",
        "1",
        "--results",
        "r9",
        "--legs",
        "bm25_ce",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("bm25_ce") && err.contains("rerank.model"),
        "{err}"
    );
    assert!(!env.results("r9").join("cells").exists());
}
