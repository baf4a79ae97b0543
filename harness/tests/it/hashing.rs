//! `--model hashing-384`, end to end with no model directory: a small matrix runs, every summary
//! names the model and labels it non-semantic, so do matrix.md and `hopbench datasets`; the
//! rankings are the same at one and two threads; a directory named like the embedder is refused.

use crate::util::Env;

const LEGS: &str = "dense,dense_content_only,lexical,bm25";

fn run(env: &Env, results: &str, threads: &str) -> String {
    env.ok(&[
        "run-matrix",
        "--threads",
        threads,
        "--quiet",
        "--no-curves",
        "--model",
        "hashing-384",
        "--results",
        results,
        "--legs",
        LEGS,
        "--datasets",
        "synthetic",
    ])
}

#[test]
fn the_hashing_embedder_runs_a_matrix_without_a_model_and_says_so_everywhere() {
    let env = Env::new();
    std::fs::remove_dir_all(env.path().join("model")).unwrap();
    run(&env, "r1", "1");
    run(&env, "r2", "2");
    for leg in LEGS.split(',') {
        let s = env.summary("r1", "synthetic", leg);
        assert_eq!(s["status"], "ok", "{leg}: {s}");
        assert_eq!(s["inputs"]["model_id"], "hashing-384@v1", "{leg}");
        let note = s["inputs"]["model_note"].as_str().unwrap();
        assert!(note.starts_with("non-semantic"), "{note}");
        let trec = |r: &str| {
            std::fs::read_to_string(env.results(r).join(format!("runs/synthetic/{leg}.trec")))
                .unwrap()
        };
        assert_eq!(
            trec("r1"),
            trec("r2"),
            "{leg}: same ranking at 1 and 2 threads"
        );
    }
    // the lexical signal carries meaning on the generated world: dense over hashed tokens finds
    // gold, and the numbers are not the lexical leg's by construction
    let dense = env.summary("r1", "synthetic", "dense");
    let recall = dense["metrics"]["recall@10"].as_f64().unwrap();
    assert!(recall > 0.0, "{dense}");
    let manifest =
        std::fs::read_to_string(env.results("r1").join("exports/synthetic/manifest.json")).unwrap();
    assert!(
        manifest.contains(r#""model_id": "hashing-384@v1""#),
        "{manifest}"
    );
    assert!(manifest.contains(r#""dim": 384"#), "{manifest}");
    let md = std::fs::read_to_string(env.results("r1").join("matrix.md")).unwrap();
    assert!(
        md.contains("Non-semantic embedding model") && md.contains("hashing-384@v1"),
        "{md}"
    );
    let html = std::fs::read_to_string(env.results("r1").join("report/index.html")).unwrap();
    assert!(
        html.contains("hashing-384@v1 (non-semantic"),
        "the report's facts label the model"
    );
    let listing = env.ok(&["datasets", "--model", "hashing-384"]);
    assert!(
        listing.contains("model: hashing-384@v1 (non-semantic"),
        "{listing}"
    );

    // a directory of the embedder's name is refused rather than silently reinterpreted
    std::fs::create_dir_all(env.path().join("hashing-384")).unwrap();
    let out = env.run(&["datasets", "--model", "hashing-384"]);
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && e.contains("./hashing-384"), "{e}");
}
