//! A leg that names its own model (`model: DIR`): it runs over that model's vectors of the same
//! export, so its cell is the cell of the same leg in a campaign of that model, and it pairs
//! with the campaign model's legs query by query. The model's vectors are a part of the export,
//! added once and reused, rebuilt when damaged; a model on a leg without vectors, or a directory
//! that is not a model, is refused naming the leg and the field.

use crate::util::Env;

const TWO_MODELS: &str = r#"
results: results
model: model
recall_k: [1, 2, 5, 10, 20]
stats: {resamples: 200, permutations: 500, seed: 7}
datasets:
  synthetic:
    format: synthetic
legs:
  dense: {kind: dense, pool_k: 50}
  bm25: {kind: bm25}
  dense_m2: {kind: dense, pool_k: 50, model: model2}
  bm25_m2: {kind: bm25, model: model2}
  dense_hashing: {kind: dense, pool_k: 50, model: hashing-384}
"#;

fn env() -> Env {
    let env = Env::new();
    hopbench_datasets::embed::write_tiny_model(&env.path().join("model2"), 12).unwrap();
    std::fs::write(env.path().join("two.yaml"), TWO_MODELS).unwrap();
    env
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
    ];
    args.extend_from_slice(extra);
    env.ok(&args)
}

/// The ranking of a cell's run file, without its leg's tag.
fn ranking(env: &Env, results: &str, leg: &str) -> String {
    let text = std::fs::read_to_string(
        env.results(results)
            .join(format!("runs/synthetic/{leg}.trec")),
    )
    .unwrap();
    text.replace(&format!("hopbench-{leg}"), "TAG")
}

#[test]
fn a_leg_over_another_model_is_that_leg_in_a_campaign_of_that_model_and_pairs_with_the_others() {
    let env = env();
    let out = run(
        &env,
        &["--campaign", "two.yaml", "--results", "r1", "--legs", "all"],
    );
    assert!(
        out.contains("synthetic: added the vectors of model2 to the export"),
        "{out}"
    );
    // the same legs in a campaign whose model is model2 (and one of the hashing embedder)
    run(
        &env,
        &[
            "--model",
            "model2",
            "--results",
            "r2",
            "--legs",
            "dense,bm25",
        ],
    );
    run(
        &env,
        &[
            "--model",
            "hashing-384",
            "--results",
            "r3",
            "--legs",
            "dense",
        ],
    );
    for (leg, results, same) in [
        ("dense_m2", "r2", "dense"),
        ("bm25_m2", "r2", "bm25"),
        ("dense_hashing", "r3", "dense"),
    ] {
        let mine = env.summary("r1", "synthetic", leg);
        let theirs = env.summary(results, "synthetic", same);
        assert_eq!(mine["status"], "ok", "{leg}: {mine}");
        assert_eq!(mine["metrics"], theirs["metrics"], "{leg}");
        assert_eq!(mine["ci"], theirs["ci"], "{leg}");
        assert_eq!(
            mine["inputs"]["model_id"], theirs["inputs"]["model_id"],
            "{leg}"
        );
        assert_eq!(
            ranking(&env, "r1", leg),
            ranking(&env, results, same),
            "{leg}"
        );
        // one export: the campaign model's, with the other model's vectors beside
        assert_eq!(
            mine["inputs"]["export"],
            env.summary("r1", "synthetic", "dense")["inputs"]["export"],
            "{leg}"
        );
    }
    let own = env.summary("r1", "synthetic", "dense");
    assert_ne!(
        own["inputs"]["model_id"],
        env.summary("r1", "synthetic", "dense_m2")["inputs"]["model_id"]
    );
    let parts = std::fs::read_dir(env.results("r1").join("exports/synthetic/models"))
        .unwrap()
        .count();
    assert_eq!(parts, 2, "one part per other model");
    // two embedders, one matrix: a paired comparison
    let cmp = env.ok(&[
        "compare-legs",
        "--campaign",
        "two.yaml",
        "--results",
        "r1",
        "--dataset",
        "synthetic",
        "dense",
        "dense_m2",
    ]);
    assert!(cmp.contains("| synthetic | dense_m2 vs dense |"), "{cmp}");
    // run again: every cell cached, no part rebuilt
    let again = run(
        &env,
        &["--campaign", "two.yaml", "--results", "r1", "--legs", "all"],
    );
    assert!(!again.contains("added the vectors"), "{again}");
    assert!(again.contains("every cell cached"), "{again}");
}

#[test]
fn a_damaged_model_part_is_rebuilt_and_the_numbers_do_not_move() {
    let env = env();
    let args = [
        "--campaign",
        "two.yaml",
        "--results",
        "r1",
        "--legs",
        "dense_m2",
    ];
    run(&env, &args);
    let before = env.summary("r1", "synthetic", "dense_m2");
    let models = env.results("r1").join("exports/synthetic/models");
    let part = std::fs::read_dir(&models)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let file = part.join("passages.f32");
    let mut bytes = std::fs::read(&file).unwrap();
    bytes[3] ^= 0x10;
    std::fs::write(&file, &bytes).unwrap();
    let mut forced = args.to_vec();
    forced.push("--force");
    let out = run(&env, &forced);
    assert!(
        out.contains("were damaged or of another export; rebuilt them"),
        "{out}"
    );
    let after = env.summary("r1", "synthetic", "dense_m2");
    assert_eq!(before["metrics"], after["metrics"]);
    assert_eq!(before["key"], after["key"]);
}

#[test]
fn a_model_where_a_leg_reads_no_vectors_or_that_is_not_a_model_is_refused_by_name() {
    let env = env();
    let bad = TWO_MODELS.replace(
        "  bm25: {kind: bm25}\n",
        "  bm25: {kind: bm25}\n  lexical_m2: {kind: lexical, model: model2}\n",
    );
    std::fs::write(env.path().join("bad.yaml"), bad).unwrap();
    let out = env.run(&["run-matrix", "--campaign", "bad.yaml", "--legs", "dense"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("lexical_m2"), "{err}");
    assert!(err.contains("kind `lexical` reads none"), "{err}");
    // a model that is not installed: the leg's cells are missing-inputs, saying how to install it
    let missing = TWO_MODELS.replace("model: model2}", "model: models/all-mpnet-base-v2}");
    std::fs::write(env.path().join("missing.yaml"), missing).unwrap();
    env.ok(&[
        "run-matrix",
        "--threads",
        "1",
        "--quiet",
        "--no-curves",
        "--campaign",
        "missing.yaml",
        "--legs",
        "dense,dense_m2",
        "--datasets",
        "synthetic",
    ]);
    let s = env.summary("results", "synthetic", "dense_m2");
    assert_eq!(s["status"], "missing-inputs", "{s}");
    let reason = s["reason"].as_str().unwrap();
    assert!(
        reason.contains("models/all-mpnet-base-v2, which is not installed")
            && reason.contains("scripts/setup --model all-mpnet-base-v2"),
        "{reason}"
    );
    assert_eq!(env.summary("results", "synthetic", "dense")["status"], "ok");
    // a directory that is there and is not a model: an error naming the leg and the field
    std::fs::create_dir_all(env.path().join("notamodel")).unwrap();
    let wrong = TWO_MODELS.replace("model: model2}", "model: notamodel}");
    std::fs::write(env.path().join("wrong.yaml"), wrong).unwrap();
    let out = env.run(&[
        "run-matrix",
        "--threads",
        "1",
        "--campaign",
        "wrong.yaml",
        "--results",
        "r9",
        "--legs",
        "dense_m2",
        "--datasets",
        "synthetic",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("leg `dense_m2`: field `model`: `notamodel` is not a model directory"),
        "{err}"
    );
    assert!(!env.results("r9").join("cells").exists(), "nothing written");
}
