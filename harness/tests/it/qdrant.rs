//! The dense side served through Qdrant's HNSW (`dense: {engine: qdrant}`), end to end: cells
//! run and cache with the shard's identity in their key, a shard whose files changed is refused,
//! and `serving-parity` reports every beam width and writes its files.

use crate::util::{Env, CAMPAIGN};

fn with_qdrant_legs(env: &Env) {
    let campaign = format!(
        "{CAMPAIGN}  graph_rescue: {{kind: graph_rescue}}\n  dense_q: {{kind: dense, pool_k: 50, dense: {{engine: qdrant, hnsw_ef: 256}}}}\n  graph_rescue_q: {{kind: graph_rescue, dense: {{engine: qdrant, hnsw_ef: 256}}}}\n"
    );
    std::fs::write(env.path().join("campaign.yaml"), campaign).unwrap();
}

fn run(env: &Env, extra: &[&str]) -> String {
    let mut args = vec![
        "run-matrix",
        "--threads",
        "2",
        "--quiet",
        "--no-curves",
        "--datasets",
        "synthetic",
        "--legs",
        "dense,dense_q,graph_rescue,graph_rescue_q",
    ];
    args.extend_from_slice(extra);
    env.ok(&args)
}

#[test]
fn a_served_leg_runs_caches_and_keys_its_cells_on_the_shard() {
    let env = Env::new();
    with_qdrant_legs(&env);
    run(&env, &[]);
    let exact = env.summary("results", "synthetic", "dense");
    let served = env.summary("results", "synthetic", "dense_q");
    assert_eq!(served["status"], "ok", "{served}");
    assert_eq!(served["inputs"]["leg_config"]["dense"]["engine"], "qdrant");
    assert!(exact["inputs"].get("engine_shards").is_none());
    let shards = served["inputs"]["engine_shards"].as_object().unwrap();
    assert_eq!(shards.len(), 1, "{shards:?}");
    let (name, probe) = shards.iter().next().unwrap();
    assert_eq!(
        probe.as_str().unwrap().len(),
        64,
        "a digest, not `not built`"
    );
    let shard_dir = env.results("results").join("shards/synthetic").join(name);
    assert!(shard_dir.join("hnsw-manifest.json").is_file());
    // the two served legs share the one shard; a wide beam on a small corpus is the exact scan
    let gr = env.summary("results", "synthetic", "graph_rescue_q");
    assert_eq!(
        gr["inputs"]["engine_shards"],
        served["inputs"]["engine_shards"]
    );
    assert_eq!(
        exact["metrics"]["recall@10"], served["metrics"]["recall@10"],
        "ef 256 over a few hundred chunks"
    );

    // nothing changed: every cell is cached
    let again = run(&env, &[]);
    assert!(again.contains("0 computed, 4 cached"), "{again}");

    // a shard whose graph is not the one its manifest describes is refused, loudly
    let mpath = shard_dir.join("hnsw-manifest.json");
    let mut m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&mpath).unwrap()).unwrap();
    m["probe"] = "0".repeat(64).into();
    std::fs::write(&mpath, serde_json::to_string(&m).unwrap()).unwrap();
    run(&env, &[]);
    let s = env.summary("results", "synthetic", "dense_q");
    assert_eq!(s["status"], "error", "{s}");
    let why = s["reason"].as_str().unwrap_or_default().to_string() + &s.to_string();
    assert!(
        why.contains("probe") && why.contains("changed since it was built"),
        "{why}"
    );
}

#[test]
fn serving_parity_reports_each_beam_width_and_writes_its_files() {
    let env = Env::new();
    with_qdrant_legs(&env);
    let out = env.ok(&[
        "serving-parity",
        "--dataset",
        "synthetic",
        "--leg",
        "graph_rescue",
        "--hnsw-ef",
        "4,256",
        "--repeat",
        "1",
    ]);
    assert!(
        out.contains("| qdrant hnsw_ef 4 |") && out.contains("| qdrant hnsw_ef 256 |"),
        "{out}"
    );
    assert!(out.contains("queries"), "{out}");
    let dir = env.results("results").join("parity");
    for ext in ["json", "md", "png", "svg"] {
        assert!(
            dir.join(format!("parity-synthetic-graph_rescue.{ext}"))
                .is_file(),
            "{ext}"
        );
    }
    let p: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("parity-synthetic-graph_rescue.json")).unwrap(),
    )
    .unwrap();
    let rows = p["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    let wide = rows[1]["ann_recall_at_10"].as_f64().unwrap();
    assert!(wide >= 0.99, "ANN recall at ef 256: {wide}");
    assert!(rows[0]["ann_recall_at_10"].as_f64().unwrap() <= wide);
    assert!(
        rows[1]["gate_agreement"].as_f64().is_some(),
        "graph_rescue has a gate"
    );
    let metrics = rows[1]["metrics"].as_array().unwrap();
    assert!(metrics.iter().any(|m| m["metric"] == "recall@10"));

    // a leg without a dense side cannot be served, and says why
    let bad = env.run(&[
        "serving-parity",
        "--dataset",
        "synthetic",
        "--leg",
        "lexical",
    ]);
    let e = String::from_utf8_lossy(&bad.stderr);
    assert!(
        !bad.status.success() && e.contains("cannot be served through Qdrant"),
        "{e}"
    );
}

#[test]
fn a_misspelt_qdrant_parameter_is_an_error_naming_it() {
    let env = Env::new();
    let campaign =
        format!("{CAMPAIGN}  dense_q: {{kind: dense, dense: {{engine: qdrant, hnsw: 64}}}}\n");
    std::fs::write(env.path().join("campaign.yaml"), campaign).unwrap();
    let out = env.run(&["legs"]);
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{e}");
    assert!(
        e.contains("dense_q") && e.contains("unknown field `hnsw`"),
        "{e}"
    );
}
