//! The dense side served through Qdrant's HNSW (`dense: {engine: qdrant}`), end to end: cells
//! run and cache with the shard's identity in their key, a shard whose files changed is refused,
//! and `serving-parity` reports every beam width and quantisation and writes its files.

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
        "--quantization",
        "none,int8",
        "--oversampling",
        "2",
        "--repeat",
        "1",
    ]);
    assert!(
        out.contains("| qdrant hnsw_ef 4 |")
            && out.contains("| qdrant hnsw_ef 256 |")
            && out.contains("| qdrant int8 hnsw_ef 256 |"),
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
    assert_eq!(rows.len(), 4, "two beams for each of two quantisations");
    let wide = rows[1]["ann_recall_at_10"].as_f64().unwrap();
    assert!(wide >= 0.99, "ANN recall at ef 256: {wide}");
    assert_eq!(rows[3]["quantization"], "int8");
    let int8 = rows[3]["ann_recall_at_10"].as_f64().unwrap();
    assert!(
        int8 >= 0.95,
        "int8 rescored, oversampled 2x, at ef 256: {int8}"
    );
    let shards = p["shards"].as_array().unwrap();
    assert_eq!(shards.len(), 2, "{shards:?}");
    assert_ne!(
        shards[0]["dir"], shards[1]["dir"],
        "a shard per quantisation"
    );
    assert_eq!(p["oversampling"], 2.0);
    assert!(rows[0]["ann_recall_at_10"].as_f64().unwrap() <= wide);
    assert!(
        rows[1]["gate_agreement"].as_f64().is_some(),
        "graph_rescue has a gate"
    );
    let metrics = rows[1]["metrics"].as_array().unwrap();
    assert!(metrics.iter().any(|m| m["metric"] == "recall@10"));

    // oversampling without a quantised shard, and an unknown quantisation, are refused
    for (args, says) in [
        (
            &["--oversampling", "2"][..],
            "applies only to a quantised shard",
        ),
        (
            &["--quantization", "int4"][..],
            "`int4` is not a quantization",
        ),
    ] {
        let mut all = vec!["serving-parity", "--dataset", "synthetic", "--leg", "dense"];
        all.extend_from_slice(args);
        let bad = env.run(&all);
        let e = String::from_utf8_lossy(&bad.stderr);
        assert!(!bad.status.success() && e.contains(says), "{args:?}: {e}");
    }

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

#[test]
fn a_quantised_leg_serves_from_its_own_shard_and_records_how() {
    let env = Env::new();
    let campaign = format!(
        "{CAMPAIGN}  dense_q: {{kind: dense, pool_k: 50, dense: {{engine: qdrant, hnsw_ef: 256}}}}\n  dense_q8: {{kind: dense, pool_k: 50, dense: {{engine: qdrant, hnsw_ef: 256, quantization: int8, oversampling: 2, on_disk: true}}}}\n"
    );
    std::fs::write(env.path().join("campaign.yaml"), campaign).unwrap();
    env.ok(&[
        "run-matrix",
        "--threads",
        "2",
        "--quiet",
        "--no-curves",
        "--datasets",
        "synthetic",
        "--legs",
        "dense,dense_q,dense_q8",
    ]);
    let exact = env.summary("results", "synthetic", "dense");
    let float = env.summary("results", "synthetic", "dense_q");
    let int8 = env.summary("results", "synthetic", "dense_q8");
    assert_eq!(int8["status"], "ok", "{int8}");
    let config = &int8["inputs"]["leg_config"]["dense"];
    assert_eq!(
        (
            &config["quantization"],
            &config["oversampling"],
            &config["on_disk"]
        ),
        (&"int8".into(), &2.0.into(), &true.into()),
        "{config}"
    );
    assert!(float["inputs"]["leg_config"]["dense"]
        .get("quantization")
        .is_none());
    assert_ne!(
        int8["inputs"]["engine_shards"], float["inputs"]["engine_shards"],
        "a quantised shard is a shard of its own"
    );
    // rescored with the original vectors, a wide beam over a few hundred chunks is the exact list
    assert_eq!(exact["metrics"]["recall@10"], int8["metrics"]["recall@10"]);

    // a misplaced oversampling is an error naming the leg and the field
    let bad = format!(
        "{CAMPAIGN}  dense_q: {{kind: dense, dense: {{engine: qdrant, oversampling: 2}}}}\n"
    );
    std::fs::write(env.path().join("campaign.yaml"), bad).unwrap();
    let out = env.run(&["legs"]);
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && e.contains("dense_q") && e.contains("dense.oversampling"),
        "{e}"
    );
}
