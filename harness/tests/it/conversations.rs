//! The conversation legs end to end on the generated dialogues (no files needed).

use crate::util::{deterministic, Env};

const CAMPAIGN: &str = r#"
results: results
model: model
recall_k: [1, 5, 10]
stats: {resamples: 200, permutations: 500, seed: 7}
breakdown_labels: [multi_turn]
datasets:
  synthetic:
    format: synthetic
  synthetic-dialogues:
    format: dialogues
    derive_from: synthetic
legs:
  bm25: {kind: bm25}
  conv_last_turn: {kind: conv_last_turn}
  conv_full_history: {kind: conv_full_history}
  conv_cdr: {kind: conv_cdr}
  multi_horizon: {kind: multi_horizon}
"#;

fn env() -> Env {
    let env = Env::new();
    std::fs::write(env.path().join("campaign.yaml"), CAMPAIGN).unwrap();
    env
}

const LEGS: [&str; 4] = [
    "conv_last_turn",
    "conv_full_history",
    "conv_cdr",
    "multi_horizon",
];

#[test]
fn conversation_legs_run_on_dialogues_and_are_missing_inputs_elsewhere() {
    let env = env();
    let out = env.ok(&["run-matrix", "--threads", "2", "--quiet", "--no-curves"]);
    assert!(
        out.contains("synthetic-dialogues: 320 chunks, 159 queries"),
        "{out}"
    );
    for leg in LEGS {
        let s = env.summary("results", "synthetic", leg);
        assert_eq!(s["status"], "missing-inputs", "{leg}: {s}");
        assert!(s["reason"].as_str().unwrap().contains("no conversations"));
        let s = env.summary("results", "synthetic-dialogues", leg);
        assert_eq!(s["status"], "ok", "{leg}: {s}");
        assert_eq!(s["queries"], 159);
        let mt = &s["breakdowns"]["label:multi_turn"];
        assert_eq!(mt["N/A"]["queries"], 60, "{leg}: {mt}");
        assert_eq!(mt["Follow-up"]["queries"], 99, "{leg}: {mt}");
    }
    // the last turn alone is the hybrid on the question's text
    let a = env.summary("results", "synthetic-dialogues", "conv_last_turn");
    let b = env.summary("results", "synthetic-dialogues", "bm25");
    assert_eq!(a["metrics"], b["metrics"]);
    // the first turn of a dialogue has nothing earlier: every leg agrees there
    let first = |leg: &str| {
        env.summary("results", "synthetic-dialogues", leg)["breakdowns"]["label:multi_turn"]["N/A"]
            ["metrics"]
            .clone()
    };
    for leg in ["conv_cdr", "multi_horizon"] {
        assert_eq!(first(leg), first("conv_last_turn"), "{leg}");
    }
    let mh = env.summary("results", "synthetic-dialogues", "multi_horizon");
    let intents = mh["breakdowns"]["intent"].as_object().unwrap();
    let n: u64 = intents
        .values()
        .map(|g| g["queries"].as_u64().unwrap())
        .sum();
    assert_eq!(n, 159, "{intents:?}");
    let conf = &mh["intent_confusion"]["label:multi_turn"];
    assert_eq!(
        conf["N/A"]["EXPLORE"], 60,
        "an opening turn has no thread: {conf}"
    );
    let r = &mh["reference_resolution"];
    assert_eq!(r["turns"], 99, "{r}");
    let acc = r["accuracy"].as_f64().unwrap();
    assert!(acc > 0.5 && acc <= 1.0, "{r}");
    assert!(mh["diagnostics"]["intent_drill_down"].as_f64().unwrap() > 0.0);
    assert!(
        env.summary("results", "synthetic-dialogues", "conv_cdr")["reference_resolution"].is_null()
    );
    let report = env.ok(&[
        "breakdown",
        "--dataset",
        "synthetic-dialogues",
        "--legs",
        "multi_horizon",
    ]);
    assert!(
        report.contains("| label:multi_turn \\ intent |"),
        "{report}"
    );
    assert!(report.contains("reference resolution: "), "{report}");
}

#[test]
fn conversation_cells_are_identical_at_one_and_two_threads() {
    let env = env();
    for (threads, results) in [("1", "r1"), ("2", "r2")] {
        env.ok(&[
            "run-matrix",
            "--threads",
            threads,
            "--quiet",
            "--no-curves",
            "--results",
            results,
            "--datasets",
            "synthetic-dialogues",
            "--legs",
            "conv_cdr,multi_horizon",
        ]);
    }
    for leg in ["conv_cdr", "multi_horizon"] {
        let a = deterministic(env.summary("r1", "synthetic-dialogues", leg));
        let b = deterministic(env.summary("r2", "synthetic-dialogues", leg));
        assert_eq!(a, b, "{leg}");
        let rec = |r: &str| {
            std::fs::read(
                env.results(r)
                    .join(format!("cells/synthetic-dialogues/{leg}.queries.parquet")),
            )
            .unwrap()
        };
        // records hold timings, so compare the run files (ranked ids and scores) instead
        let run = |r: &str| {
            std::fs::read_to_string(
                env.results(r)
                    .join(format!("runs/synthetic-dialogues/{leg}.trec")),
            )
            .unwrap()
        };
        assert_eq!(run("r1"), run("r2"), "{leg}");
        assert!(!rec("r1").is_empty());
    }
}

#[test]
fn compare_legs_by_label_and_intent() {
    let env = env();
    env.ok(&[
        "run-matrix",
        "--threads",
        "2",
        "--quiet",
        "--no-curves",
        "--datasets",
        "synthetic-dialogues",
        "--legs",
        "conv_last_turn,multi_horizon",
    ]);
    let by_label = env.ok(&[
        "compare-legs",
        "--dataset",
        "synthetic-dialogues",
        "conv_last_turn",
        "multi_horizon",
        "--by",
        "multi_turn",
    ]);
    assert!(by_label.contains("[multi_turn=Follow-up] |"), "{by_label}");
    assert!(
        by_label.contains("[multi_turn=N/A] | identical | 60 |"),
        "{by_label}"
    );
    let by_intent = env.ok(&[
        "compare-legs",
        "--dataset",
        "synthetic-dialogues",
        "conv_last_turn",
        "multi_horizon",
        "--by",
        "intent",
    ]);
    assert!(by_intent.contains("[intent=EXPLORE]"), "{by_intent}");
    let bad = env.run(&[
        "compare-legs",
        "--dataset",
        "synthetic-dialogues",
        "conv_last_turn",
        "multi_horizon",
        "--by",
        "nope",
    ]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("`label:nope`"));
}

#[test]
fn bench_assembly_reports_the_overhead_beside_the_retrievals() {
    let env = env();
    let json = env.path().join("assembly.json");
    let out = env.ok(&[
        "bench",
        "assembly",
        "--datasets",
        "synthetic-dialogues",
        "--repeat",
        "1",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(out.contains("assemble median"), "{out}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let r = &v[0];
    assert_eq!(r["queries"], 159);
    for k in ["assemble_ms", "multi_horizon_ms", "last_turn_ms"] {
        let [m, p] = [r[k][0].as_f64().unwrap(), r[k][1].as_f64().unwrap()];
        assert!(m > 0.0 && p >= m, "{k}: {r}");
    }
    let bad = env.run(&[
        "bench",
        "assembly",
        "--datasets",
        "synthetic-dialogues",
        "--leg",
        "bm25",
    ]);
    assert!(String::from_utf8_lossy(&bad.stderr)
        .contains("(kind `bm25`) has no conversation assembler to time"));
}
