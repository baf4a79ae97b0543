//! The dense side served through Qdrant's HNSW (`dense: {engine: qdrant}`), end to end: cells
//! run and cache with the shard's identity in their key, a shard whose files changed is refused,
//! and `serving-parity` reports every variant of the served group and writes its files.

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

/// `serving-parity --dataset synthetic --repeat 1` with `args` after.
fn serving_parity(env: &Env, args: &[&str]) -> std::process::Output {
    let mut all = vec!["serving-parity", "--dataset", "synthetic", "--repeat", "1"];
    all.extend_from_slice(args);
    env.run(&all)
}

fn parity_json(env: &Env, leg: &str) -> serde_json::Value {
    let p = env
        .results("results")
        .join("parity")
        .join(format!("parity-synthetic-{leg}.json"));
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

#[test]
fn serving_parity_reports_each_variant_and_writes_its_files() {
    let env = Env::new();
    with_qdrant_legs(&env);
    let args = [
        "--leg",
        "graph_rescue",
        "--engine",
        "{engine: qdrant, m: 16}",
        "--vary",
        "quantization=none,int8",
        "--vary",
        "hnsw_ef=4,256",
    ];
    let out = serving_parity(&env, &args);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("| path | quantization | hnsw_ef | ANN R@10")
            && stdout.contains("| qdrant | none | 4 |")
            && stdout.contains("| qdrant | none | 256 |")
            && stdout.contains("| qdrant | int8 | 256 |")
            && stdout.contains("| quantization | hnsw_ef | metric |"),
        "{stdout}"
    );
    let dir = env.results("results").join("parity");
    for ext in ["json", "md", "png", "svg"] {
        assert!(
            dir.join(format!("parity-synthetic-graph_rescue.{ext}"))
                .is_file(),
            "{ext}"
        );
    }
    let p = parity_json(&env, "graph_rescue");
    assert_eq!(
        (&p["engine"], &p["base"]),
        (&"qdrant".into(), &serde_json::json!({"m": 16}))
    );
    let rows = p["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 4, "two beams for each of two quantisations");
    let order: Vec<(&str, u64)> = rows
        .iter()
        .map(|r| {
            (
                r["params"]["quantization"].as_str().unwrap(),
                r["params"]["hnsw_ef"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        order,
        [("none", 4), ("none", 256), ("int8", 4), ("int8", 256)]
    );
    // the whole group as the engine resolved it
    assert_eq!(rows[3]["group"]["quantization"], "int8");
    assert_eq!(rows[3]["group"]["ef_construct"], 100);
    let wide = rows[1]["ann_recall_at_10"].as_f64().unwrap();
    assert!(wide >= 0.99, "ANN recall at ef 256: {wide}");
    assert!(rows[0]["ann_recall_at_10"].as_f64().unwrap() <= wide);
    assert!(
        rows[1]["gate_agreement"].as_f64().is_some(),
        "graph_rescue has a gate"
    );
    let metrics = rows[1]["metrics"].as_array().unwrap();
    assert!(metrics.iter().any(|m| m["metric"] == "recall@10"));

    // an index per quantisation: the beam width is a search-time key, so the two variants of
    // each quantisation share one entry, which the first of them paid for
    let indexes = p["indexes"].as_array().unwrap();
    assert_eq!(indexes.len(), 2, "{indexes:?}");
    assert_ne!(indexes[0]["name"], indexes[1]["name"]);
    assert_eq!(
        (&indexes[0]["first_row"], &indexes[1]["first_row"]),
        (&0.into(), &2.into())
    );
    assert_eq!(rows[0]["indexes"], serde_json::json!([indexes[0]["name"]]));
    assert_eq!(rows[0]["indexes"], rows[1]["indexes"]);
    assert_eq!(rows[2]["indexes"], rows[3]["indexes"]);
    assert_ne!(rows[0]["indexes"], rows[2]["indexes"]);
    for ix in indexes {
        assert_eq!(
            ix["cached"], false,
            "a fresh results directory builds: {ix}"
        );
        assert_eq!(ix["identity"].as_str().unwrap().len(), 64, "{ix}");
        let shard = env
            .results("results")
            .join("shards/synthetic")
            .join(ix["name"].as_str().unwrap());
        assert!(
            shard.join("hnsw-manifest.json").is_file(),
            "{}",
            shard.display()
        );
    }
    // run again: both indexes are found and reused, with the same identities
    let again = serving_parity(&env, &args);
    assert!(
        again.status.success(),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    let q = parity_json(&env, "graph_rescue");
    for (a, b) in indexes.iter().zip(q["indexes"].as_array().unwrap()) {
        assert_eq!((&a["name"], &a["identity"]), (&b["name"], &b["identity"]));
        assert_eq!(b["cached"], true, "{b}");
    }

    // a quantised shard searched oversampled: rescored with the originals, as good as float32
    let out = serving_parity(
        &env,
        &[
            "--leg",
            "graph_rescue",
            "--engine",
            "{engine: qdrant, quantization: int8, oversampling: 2}",
            "--vary",
            "hnsw_ef=256",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let p = parity_json(&env, "graph_rescue");
    let int8 = p["rows"][0]["ann_recall_at_10"].as_f64().unwrap();
    assert!(
        int8 >= 0.95,
        "int8 rescored, oversampled 2x, at ef 256: {int8}"
    );
    assert_eq!(p["rows"][0]["group"]["oversampling"], 2.0);
    assert_eq!(
        p["indexes"][0]["cached"], true,
        "the int8 shard of the first run"
    );
}

#[test]
fn serving_parity_refuses_what_the_engine_refuses_naming_the_variant() {
    let env = Env::new();
    with_qdrant_legs(&env);
    for (args, says) in [
        (
            &["--engine", "{engine: qdrant, oversampling: 2}"][..],
            "--engine: leg `dense`: field `dense.oversampling`: applies only to a quantised shard",
        ),
        (
            &["--engine", "{engine: qdrant, hnsw: 16}"][..],
            "--engine: engine `qdrant`: unknown field `hnsw`",
        ),
        (
            &["--engine", "{engine: qdrant}", "--vary", "hnsw=16,32"][..],
            "--vary variant `hnsw=16`: engine `qdrant`: unknown field `hnsw`",
        ),
        (
            &[
                "--engine",
                "{engine: qdrant}",
                "--vary",
                "quantization=none,int4",
            ][..],
            "--vary variant `quantization=int4`: engine `qdrant`: ",
        ),
        (
            &["--engine", "{engine: qdrant}", "--vary", "hnsw_ef=16,0"][..],
            "--vary variant `hnsw_ef=0`: leg `dense`: field `dense.hnsw_ef`",
        ),
    ] {
        let mut all = vec!["--leg", "dense"];
        all.extend_from_slice(args);
        let bad = serving_parity(&env, &all);
        let e = String::from_utf8_lossy(&bad.stderr);
        assert!(!bad.status.success() && e.contains(says), "{args:?}: {e}");
    }
    // nothing was built before the refusal
    assert!(!env.results("results").join("shards").exists());
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
