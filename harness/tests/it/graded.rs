//! Graded judgements in the matrix: a BEIR set whose qrels carry grades keeps them through the
//! export, and its nDCG takes the grade as the gain (trec_eval's `ndcg_cut`), which the summary,
//! the qrels file and the dataset line say; the same set judged at relevance 1 only is binary,
//! and its summary carries no trace of grades.

use serde_json::Value;

use crate::util::Env;

const CORPUS: &str = r#"{"_id": "d1", "title": "One", "text": "the first document"}
{"_id": "d2", "title": "Two", "text": "the second document"}
{"_id": "d3", "title": "Three", "text": "the third document"}
{"_id": "d4", "title": "Four", "text": "the fourth document"}
{"_id": "d5", "title": "Five", "text": "the fifth document"}
"#;
const QUERIES: &str = r#"{"_id": "q1", "text": "which is first"}
{"_id": "q2", "text": "which is fourth"}
"#;
/// q1: d1 grade 3, d2 grade 1, d3 judged not relevant; q2: d4 grade 2 (also judged 1: the
/// highest counts), d5 grade 1.
const GRADED: &str =
    "query-id\tcorpus-id\tscore\nq1\td1\t3\nq1\td2\t1\nq1\td3\t0\nq2\td4\t1\nq2\td4\t2\nq2\td5\t1\n";
/// The same judgements at relevance 1.
const BINARY: &str =
    "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\t1\nq1\td3\t0\nq2\td4\t1\nq2\td5\t1\n";
/// The ranking scored: q1 d2, d3, d1; q2 d5, d4.
const RUN: &str = "q1 Q0 d2 1 3 mine\nq1 Q0 d3 2 2 mine\nq1 Q0 d1 3 1 mine\n\
                   q2 Q0 d5 1 2 mine\nq2 Q0 d4 2 1 mine\n";

/// The matrix of the fixture's datasets, one thread, no curves or report.
const MATRIX: [&str; 7] = [
    "run-matrix",
    "--threads",
    "1",
    "--no-curves",
    "--no-report",
    "--data-dir",
    "data",
];

fn setup() -> Env {
    let env = Env::new();
    for (name, qrels) in [("g", GRADED), ("b", BINARY)] {
        let dir = env.path().join("data").join(name);
        std::fs::create_dir_all(dir.join("qrels")).unwrap();
        std::fs::write(dir.join("corpus.jsonl"), CORPUS).unwrap();
        std::fs::write(dir.join("queries.jsonl"), QUERIES).unwrap();
        std::fs::write(dir.join("qrels/test.tsv"), qrels).unwrap();
    }
    std::fs::write(env.path().join("run.trec"), RUN).unwrap();
    std::fs::write(
        env.path().join("campaign.yaml"),
        "model: model\nstats: {resamples: 200, permutations: 200, seed: 3}\ndatasets:\n  \
         g: {format: beir, files: {corpus: g/corpus.jsonl, queries: g/queries.jsonl, qrels: g/qrels/test.tsv}}\n  \
         b: {format: beir, files: {corpus: b/corpus.jsonl, queries: b/queries.jsonl, qrels: b/qrels/test.tsv}}\n\
         legs:\n  mine: {kind: run, file: run.trec}\n",
    )
    .unwrap();
    env
}

/// `1/log2(i+2)` of the 0-based rank `i`.
fn d(i: usize) -> f64 {
    1.0 / ((i + 2) as f64).log2()
}

fn close(a: &Value, b: f64) {
    let a = a.as_f64().unwrap_or(f64::NAN);
    assert!((a - b).abs() < 1e-12, "{a} != {b}");
}

#[test]
fn graded_qrels_give_graded_ndcg_and_say_so_binary_qrels_stay_binary() {
    let env = setup();
    let out = env.run(&MATRIX);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    // the dataset line and the table say which gain each dataset used
    assert!(
        err.contains("g: 5 chunks, 2 queries evaluated; nDCG gain graded"),
        "{err}"
    );
    assert!(!err.contains("b: 5 chunks, 2 queries evaluated;"), "{err}");
    assert!(
        stdout.contains("nDCG gain: graded (gain = grade, as trec_eval's ndcg_cut) on g; binary"),
        "{stdout}"
    );

    // graded, by hand: q1 DCG = 1·d(0) + 3·d(2), ideal 3·d(0) + 1·d(1) (d3's 0 gains nothing);
    // q2 DCG = 1·d(0) + 2·d(1), ideal 2·d(0) + 1·d(1)
    let q1 = (d(0) + 3.0 * d(2)) / (3.0 * d(0) + d(1));
    let q2 = (d(0) + 2.0 * d(1)) / (2.0 * d(0) + d(1));
    let g = env.summary("results", "g", "mine");
    assert_eq!(g["inputs"]["gain"], "graded", "{g}");
    close(&g["metrics"]["ndcg@10"], (q1 + q2) / 2.0);
    // binary, by hand: q1 (d(0) + d(2)) / (d(0) + d(1)), q2 1
    let b1 = (d(0) + d(2)) / (d(0) + d(1));
    let b = env.summary("results", "b", "mine");
    assert!(b["inputs"].get("gain").is_none(), "{b}");
    close(&b["metrics"]["ndcg@10"], (b1 + 1.0) / 2.0);
    assert!(
        (q1 + q2 - b1 - 1.0).abs() > 0.1,
        "the two gains differ here"
    );
    // the binary measures read the same gold either way
    for m in [
        "recall@1",
        "recall@2",
        "recall@10",
        "mrr@10",
        "doc_recall@5",
    ] {
        assert_eq!(g["metrics"][m], b["metrics"][m], "{m}");
    }
    close(&g["metrics"]["recall@1"], (0.5 + 0.5) / 2.0);
    close(&g["metrics"]["mrr@10"], 1.0);

    // the qrels file carries the grades, so trec_eval recomputes the graded number ...
    let runs = env.results("results").join("runs");
    let qrels = std::fs::read_to_string(runs.join("g/qrels.txt")).unwrap();
    assert_eq!(qrels, "q1 0 d1 3\nq1 0 d2 1\nq2 0 d4 2\nq2 0 d5 1\n");
    let binary = std::fs::read_to_string(runs.join("b/qrels.txt")).unwrap();
    assert_eq!(binary, "q1 0 d1 1\nq1 0 d2 1\nq2 0 d4 1\nq2 0 d5 1\n");
    // ... and so does `hopbench eval`, which reads grades from a qrels file
    let run = runs.join("g/mine.trec");
    let eval = env.ok(&[
        "eval",
        run.to_str().unwrap(),
        runs.join("g/qrels.txt").to_str().unwrap(),
        "-m",
        "nDCG@10",
        "--format",
        "trec-eval",
    ]);
    let fields: Vec<&str> = eval.trim().split('\t').map(str::trim).collect();
    assert_eq!(
        fields,
        ["ndcg_cut_10", "all", &format!("{:.4}", (q1 + q2) / 2.0)]
    );

    // a rerun finds every cell cached, from the export's head, and writes the same qrels
    let again = env.run(&MATRIX);
    let err = String::from_utf8_lossy(&again.stderr);
    assert!(
        err.contains("g: 5 chunks, 2 queries evaluated; nDCG gain graded")
            && err.contains("every cell cached"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(runs.join("g/qrels.txt")).unwrap(),
        qrels
    );
}

/// The campaign's `metrics:` adds measures to every cell (in any spelling `eval -m` reads),
/// named as hopbench names them, each a matrix column with its CI; a campaign without it keeps
/// its cell keys; an entry that is not a measure is refused naming the field.
#[test]
fn a_campaigns_metrics_add_measures_to_every_cell_and_a_column_to_the_matrix() {
    let env = setup();
    let args = [&MATRIX[..], &["--datasets", "g"]].concat();
    env.ok(&args);
    let plain = env.summary("results", "g", "mine");
    assert!(plain["inputs"].get("measures").is_none(), "{plain}");
    assert!(plain["metrics"].get("AP").is_none(), "{plain}");

    let campaign = env.path().join("campaign.yaml");
    let text = std::fs::read_to_string(&campaign).unwrap();
    // `recall@10` is measured anyway: listed, it adds nothing
    let with = text.replace(
        "legs:\n",
        "metrics: [map, P.1, ndcg_cut.3, recall@10]\nlegs:\n",
    );
    std::fs::write(&campaign, &with).unwrap();
    let out = env.ok(&args);
    let g = env.summary("results", "g", "mine");
    assert_eq!(
        g["inputs"]["measures"],
        serde_json::json!(["AP", "P@1", "ndcg@3"]),
        "{g}"
    );
    assert_ne!(g["key"], plain["key"], "the measures are part of the key");
    // by hand (ranking q1 d2, d3, d1 with d1 grade 3, d2 grade 1; q2 d5, d4 both relevant):
    // AP q1 = (1/1 + 2/3) / 2, q2 = (1 + 1) / 2; P@1 = 1 for both; graded nDCG@3 is the
    // nDCG@10 of the graded test (every ranking is 3 long or less)
    close(&g["metrics"]["AP"], ((1.0 + 2.0 / 3.0) / 2.0 + 1.0) / 2.0);
    close(&g["metrics"]["P@1"], 1.0);
    close(
        &g["metrics"]["ndcg@3"],
        g["metrics"]["ndcg@10"].as_f64().unwrap(),
    );
    assert!(g["metrics_ci95"]["AP"].is_array(), "{g}");
    // the matrix has a column for each, with its CI
    assert!(
        out.contains("| AP [95% CI] | P@1 [95% CI] | nDCG@3 [95% CI] |"),
        "{out}"
    );
    // the records carry them, so `eval` on the leg's run gives the same numbers
    let runs = env.results("results").join("runs");
    let eval = env.ok(&[
        "eval",
        runs.join("g/mine.trec").to_str().unwrap(),
        runs.join("g/qrels.txt").to_str().unwrap(),
        "-m",
        "AP",
        "--format",
        "trec-eval",
    ]);
    let fields: Vec<&str> = eval.trim().split('\t').map(str::trim).collect();
    assert_eq!(
        fields,
        [
            "map",
            "all",
            &format!("{:.4}", g["metrics"]["AP"].as_f64().unwrap())
        ]
    );

    // back to no `metrics:`: the first cell's key again
    std::fs::write(&campaign, &text).unwrap();
    env.ok(&args);
    let again = env.summary("results", "g", "mine");
    assert_eq!(again["key"], plain["key"]);

    std::fs::write(
        &campaign,
        text.replace("legs:\n", "metrics: [AP, nDCG@x]\nlegs:\n"),
    )
    .unwrap();
    let bad = env.run(&args);
    let err = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(bad.status.code(), Some(2), "{err}");
    assert!(
        err.contains("field `metrics`") && err.contains("nDCG@x"),
        "{err}"
    );
}
