//! The `run` leg (a system's ranking read from a file) and `hopbench eval` (a run scored against
//! qrels without a campaign), end to end on the generated dataset: a leg's own TREC run fed back
//! as a `run` leg gives that leg's numbers exactly, in all three formats, and `eval` gives them
//! too; ties, absent queries, dropped ids, every error and the cell key.

use std::path::Path;

use serde_json::Value;

use crate::util::{Env, CAMPAIGN};

/// The test campaign with `legs` added (`name: {spec}` lines).
fn campaign_with(env: &Env, legs: &[(&str, &str)]) {
    let mut text = CAMPAIGN.to_string();
    for (name, spec) in legs {
        text.push_str(&format!("  {name}: {spec}\n"));
    }
    std::fs::write(env.path().join("campaign.yaml"), text).unwrap();
}

fn run_matrix(legs: &str) -> Vec<&str> {
    vec![
        "run-matrix",
        "--threads",
        "2",
        "--quiet",
        "--no-curves",
        "--no-report",
        "--legs",
        legs,
    ]
}

/// `lexical`'s run and the qrels, written by a first run-matrix.
fn lexical_run(env: &Env) -> (String, String) {
    env.ok(&run_matrix("lexical"));
    let runs = env.results("results").join("runs/synthetic");
    (
        std::fs::read_to_string(runs.join("lexical.trec")).unwrap(),
        std::fs::read_to_string(runs.join("qrels.txt")).unwrap(),
    )
}

/// The TREC lines as (qid, docid, score).
fn records(trec: &str) -> Vec<(String, String, f64)> {
    trec.lines()
        .map(|l| {
            let c: Vec<&str> = l.split_whitespace().collect();
            (c[0].to_string(), c[2].to_string(), c[4].parse().unwrap())
        })
        .collect()
}

/// Everything of a summary that its numbers are: what must agree between two legs that rank
/// alike.
fn numbers(s: &Value) -> Value {
    let mut out = serde_json::Map::new();
    for key in [
        "status",
        "queries",
        "queries_without_gold",
        "metrics",
        "metrics_ci95",
        "metrics_defined",
        "tokens",
        "breakdowns",
    ] {
        out.insert(key.into(), s.get(key).cloned().unwrap_or(Value::Null));
    }
    Value::Object(out)
}

fn write_parquet(path: &Path, rows: &[(String, String, f64)]) {
    use hopbench_datasets::parquet_io as pq;
    let q: Vec<&str> = rows.iter().map(|r| r.0.as_str()).collect();
    let d: Vec<&str> = rows.iter().map(|r| r.1.as_str()).collect();
    let s: Vec<f64> = rows.iter().map(|r| r.2).collect();
    pq::write(
        path,
        vec![
            ("query_id", pq::strings(&q)),
            ("doc_id", pq::strings(&d)),
            ("score", pq::f64s(&s)),
        ],
    )
    .unwrap();
}

#[test]
fn a_legs_own_run_fed_back_gives_its_numbers_in_every_format_and_eval_agrees() {
    let env = Env::new();
    let (trec, qrels) = lexical_run(&env);
    let rows = records(&trec);
    // the same run as ranx JSON and as parquet
    let mut json: serde_json::Map<String, Value> = serde_json::Map::new();
    for (q, d, s) in &rows {
        json.entry(q.clone())
            .or_insert_with(|| Value::Object(Default::default()))
            .as_object_mut()
            .unwrap()
            .insert(d.clone(), (*s).into());
    }
    std::fs::create_dir_all(env.path().join("mine")).unwrap();
    std::fs::write(
        env.path().join("mine/run.json"),
        Value::Object(json).to_string(),
    )
    .unwrap();
    write_parquet(&env.path().join("mine/run.parquet"), &rows);
    campaign_with(
        &env,
        &[
            (
                "mine",
                "{kind: run, file: results/runs/synthetic/lexical.trec}",
            ),
            (
                "mine_json",
                "{kind: run, file: mine/run.json, dataset: synthetic}",
            ),
            ("mine_parquet", "{kind: run, file: mine/run.parquet}"),
        ],
    );
    let out = env.ok(&run_matrix("lexical,mine,mine_json,mine_parquet"));
    assert!(out.contains("3 computed, 1 cached"), "{out}");
    let lexical = env.summary("results", "synthetic", "lexical");
    assert!(lexical["queries"].as_u64().unwrap() > 10);
    for leg in ["mine", "mine_json", "mine_parquet"] {
        let s = env.summary("results", "synthetic", leg);
        assert_eq!(numbers(&s), numbers(&lexical), "{leg}");
        let d = &s["diagnostics"];
        for name in [
            "run_ties_broken",
            "run_query_absent",
            "run_dropped_unknown_docs",
            "run_dropped_unknown_queries",
        ] {
            assert_eq!(d[name], 0.0, "{leg}: {name}");
        }
        // the leg's own TREC export is the run it read, under its own tag
        let back = std::fs::read_to_string(
            env.results("results")
                .join(format!("runs/synthetic/{leg}.trec")),
        )
        .unwrap();
        assert_eq!(
            back.replace(&format!("hopbench-{leg}"), "hopbench-lexical"),
            trec
        );
    }
    // the file the leg reads is pinned: absolute, and with its content hash
    let legs = env.stdout(&["legs"]);
    let line = legs.lines().find(|l| l.starts_with("mine ")).unwrap();
    let hash = blake3::hash(trec.as_bytes()).to_hex().to_string();
    assert!(
        line.contains(&format!(r#""file_blake3":"{hash}""#)),
        "{line}"
    );
    let abs = env.path().join("results/runs/synthetic/lexical.trec");
    assert!(line.contains(abs.to_str().unwrap()), "{line}");
    // a paired comparison finds nothing
    let cmp = env.path().join("cmp.json");
    env.ok(&[
        "compare-legs",
        "--dataset",
        "synthetic",
        "lexical",
        "mine",
        "--json",
        cmp.to_str().unwrap(),
    ]);
    let cmp: Value = serde_json::from_str(&std::fs::read_to_string(cmp).unwrap()).unwrap();
    assert_eq!(cmp["cells"][0]["verdict"], "identical", "{cmp}");

    // eval of the run file and the qrels the matrix wrote: the cell's means and CIs exactly
    let run_path = "results/runs/synthetic/lexical.trec";
    let qrels_path = "results/runs/synthetic/qrels.txt";
    let per_query = env.path().join("pq.json");
    let report: Value = serde_json::from_str(&env.stdout(&[
        "eval",
        run_path,
        qrels_path,
        "--campaign",
        "campaign.yaml",
        "--format",
        "json",
        "--per-query",
        per_query.to_str().unwrap(),
    ]))
    .unwrap();
    assert_eq!(report["queries"], lexical["queries"]);
    assert_eq!(
        (
            report["queries_absent"].as_u64(),
            report["ties_broken"].as_u64()
        ),
        (Some(0), Some(0))
    );
    let metrics = report["metrics"].as_object().unwrap();
    assert_eq!(
        metrics.keys().collect::<Vec<_>>(),
        [
            "mrr@10",
            "ndcg@10",
            "recall@1",
            "recall@10",
            "recall@2",
            "recall@20",
            "recall@5"
        ]
    );
    for (name, m) in metrics {
        assert_eq!(m["mean"], lexical["metrics"][name], "{name}");
        assert_eq!(m["ci95"], lexical["metrics_ci95"][name], "{name}");
        assert_eq!(m["queries"], lexical["queries"], "{name}");
    }
    // the JSON and parquet runs evaluate identically, and the per-query file has every query
    for other in ["mine/run.json", "mine/run.parquet"] {
        let r: Value = serde_json::from_str(&env.stdout(&[
            "eval",
            other,
            qrels_path,
            "--campaign",
            "campaign.yaml",
            "--format",
            "json",
        ]))
        .unwrap();
        assert_eq!(r["metrics"], report["metrics"], "{other}");
    }
    let pq: Value = serde_json::from_str(&std::fs::read_to_string(per_query).unwrap()).unwrap();
    let judged: std::collections::BTreeSet<&str> = qrels
        .lines()
        .map(|l| l.split(' ').next().unwrap())
        .collect();
    assert_eq!(pq.as_object().unwrap().len(), judged.len());
    // the table and TSV forms carry the same means
    let table = env.stdout(&["eval", run_path, qrels_path, "--campaign", "campaign.yaml"]);
    let tsv = env.stdout(&[
        "eval",
        run_path,
        qrels_path,
        "--campaign",
        "campaign.yaml",
        "--format",
        "tsv",
    ]);
    let r10 = lexical["metrics"]["recall@10"].as_f64().unwrap();
    assert!(table.contains(&format!("recall@10  {r10:.4}")), "{table}");
    assert!(tsv.contains(&format!("recall@10\t{r10}\t")), "{tsv}");
}

#[test]
fn ties_break_on_ascending_id_absent_queries_score_zero_and_eval_agrees() {
    let env = Env::new();
    let (trec, _) = lexical_run(&env);
    let rows = records(&trec);
    let q0 = rows[0].0.clone();
    // the first query's documents, every score 1.0, listed in descending id order
    let mut docs: Vec<String> = rows
        .iter()
        .filter(|r| r.0 == q0)
        .map(|r| r.1.clone())
        .collect();
    docs.sort_unstable();
    let n = docs.len();
    let text: String = docs
        .iter()
        .rev()
        .enumerate()
        .map(|(i, d)| format!("{q0} Q0 {d} {} 1.0 mine\n", i + 1))
        .collect();
    std::fs::write(env.path().join("ties.trec"), text).unwrap();
    campaign_with(&env, &[("ties", "{kind: run, file: ties.trec}")]);
    env.ok(&run_matrix("ties"));
    let back =
        std::fs::read_to_string(env.results("results").join("runs/synthetic/ties.trec")).unwrap();
    let order: Vec<String> = records(&back).into_iter().map(|r| r.1).collect();
    assert_eq!(order, docs, "ties break on ascending id");
    let s = env.summary("results", "synthetic", "ties");
    let queries = s["queries"].as_f64().unwrap();
    let d = &s["diagnostics"];
    // (serde_json reads floats to within an ulp, so means are compared to 1e-12)
    let close = |v: &Value, want: f64| (v.as_f64().unwrap() - want).abs() < 1e-12;
    assert!(
        close(&d["run_ties_broken"], (n - 1) as f64 / queries),
        "{d}"
    );
    assert!(
        close(&d["run_query_absent"], (queries - 1.0) / queries),
        "{d}"
    );
    // eval breaks the same ties and scores the absent queries the same
    let report: Value = serde_json::from_str(&env.stdout(&[
        "eval",
        "ties.trec",
        "results/runs/synthetic/qrels.txt",
        "--campaign",
        "campaign.yaml",
        "--format",
        "json",
    ]))
    .unwrap();
    assert_eq!(report["ties_broken"].as_u64(), Some(n as u64 - 1));
    assert_eq!(report["queries_absent"].as_f64(), Some(queries - 1.0));
    for (name, m) in report["metrics"].as_object().unwrap() {
        assert_eq!(m["mean"], s["metrics"][name], "{name}");
        assert_eq!(m["ci95"], s["metrics_ci95"][name], "{name}");
    }
}

#[test]
fn dropped_ids_are_counted_and_an_edited_run_recomputes_its_cell() {
    let env = Env::new();
    let (trec, _) = lexical_run(&env);
    let rows = records(&trec);
    let (q0, d0) = (&rows[0].0, &rows[0].1);
    let mut text = trec.clone();
    text.push_str(&format!(
        "{q0} Q0 nowhere 101 -1 x\nghost Q0 {d0} 1 1 x\nghost Q0 {d0}x 2 1 x\n"
    ));
    std::fs::write(env.path().join("drop.trec"), &text).unwrap();
    std::fs::write(env.path().join("copy.trec"), &trec).unwrap();
    campaign_with(
        &env,
        &[
            (
                "dropping",
                "{kind: run, file: drop.trec, unknown_ids: drop}",
            ),
            ("copy", "{kind: run, file: copy.trec}"),
            ("gone", "{kind: run, file: not-there.trec}"),
        ],
    );
    env.ok(&run_matrix("lexical,dropping,copy,gone"));
    let s = env.summary("results", "synthetic", "dropping");
    let queries = s["queries"].as_f64().unwrap();
    let docs = s["diagnostics"]["run_dropped_unknown_docs"]
        .as_f64()
        .unwrap();
    assert!((docs - 1.0 / queries).abs() < 1e-12, "{docs}");
    assert_eq!(
        s["diagnostics"]["run_dropped_unknown_queries"].as_f64(),
        Some(2.0)
    );
    assert_eq!(
        numbers(&s),
        numbers(&env.summary("results", "synthetic", "lexical"))
    );
    // an absent run file is a missing input, as a dataset's absent files are
    let gone = env.summary("results", "synthetic", "gone");
    assert_eq!(gone["status"], "missing-inputs");
    assert!(
        gone["reason"].as_str().unwrap().contains("not-there.trec"),
        "{gone}"
    );

    // the key holds the run's content: an edit recomputes the cell, undoing it finds the
    // first cell's key again
    let key = |env: &Env| env.summary("results", "synthetic", "copy")["key"].clone();
    let before = key(&env);
    let again = env.ok(&run_matrix("copy"));
    assert!(again.contains("0 computed, 1 cached"), "{again}");
    let mut lines: Vec<&str> = trec.lines().collect();
    lines.swap(0, 1);
    let swapped = lines.join("\n") + "\n";
    std::fs::write(env.path().join("copy.trec"), &swapped).unwrap();
    let edited = env.ok(&run_matrix("copy"));
    assert!(edited.contains("1 computed"), "{edited}");
    assert_ne!(key(&env), before);
    std::fs::write(env.path().join("copy.trec"), &trec).unwrap();
    env.ok(&run_matrix("copy"));
    assert_eq!(key(&env), before);
}

#[test]
fn bad_runs_are_errors_naming_the_file_and_the_line() {
    let env = Env::new();
    let (trec, _) = lexical_run(&env);
    let rows = records(&trec);
    let (q0, d0, d1) = (&rows[0].0, &rows[0].1, &rows[1].1);
    let ok = format!("{q0} Q0 {d0} 1 2 t\n");
    let parquet = env.path().join("bad.parquet");
    write_parquet(
        &parquet,
        &[
            (q0.clone(), d0.clone(), 1.0),
            (q0.clone(), "nowhere".into(), 0.5),
        ],
    );
    let cases: Vec<(&str, String, Vec<String>)> = vec![
        (
            "bad.trec",
            format!("{ok}ghost Q0 {d0} 1 1 t\n"),
            vec![
                "line 2".into(),
                "`ghost` is not a query of dataset `synthetic`".into(),
            ],
        ),
        (
            "bad.trec",
            format!("{ok}{q0} Q0 nowhere 2 1 t\n"),
            vec!["line 2".into(), "`nowhere` is not in the corpus".into()],
        ),
        (
            "bad.trec",
            format!("{ok}{q0} Q0 {d1} 2 1 t\n{q0} Q0 {d0} 3 0 t\n"),
            vec![
                "line 3".into(),
                "listed twice".into(),
                "first at line 1".into(),
            ],
        ),
        (
            "bad.trec",
            format!("{ok}{q0} Q0 {d1} 2 NaN t\n"),
            vec![
                "line 2".into(),
                "`score`".into(),
                "not a finite number".into(),
            ],
        ),
        (
            "bad.trec",
            format!("{ok}{q0} {d1} 2 1 t\n"),
            vec!["line 2".into(), "6 columns".into()],
        ),
        (
            "bad.json",
            format!(r#"{{"{q0}": {{"{d0}": 1, "nowhere": 2}}}}"#),
            vec![
                format!(r#"$["{q0}"]["nowhere"]"#),
                "not in the corpus".into(),
            ],
        ),
        (
            "twice.json",
            format!(r#"{{"{q0}": {{"{d0}": 1}}, "{q0}": {{"{d0}": 2}}}}"#),
            vec![format!("query `{q0}` is a key twice"), "JSON run".into()],
        ),
        (
            "twice_doc.json",
            format!(r#"{{"{q0}": {{"{d0}": 1, "{d0}": 2}}}}"#),
            vec![
                format!("document `{d0}` is a key twice in query `{q0}`"),
                "JSON run".into(),
            ],
        ),
        (
            "bad.json",
            format!(r#"{{"{q0}": {{"{d0}": 1,}}}}"#),
            vec!["malformed JSON run".into(), "line 1".into()],
        ),
        (
            "bad.parquet",
            String::new(),
            vec!["row 1".into(), "`doc_id`".into()],
        ),
    ];
    for (file, text, needles) in cases {
        if file != "bad.parquet" {
            std::fs::write(env.path().join(file), &text).unwrap();
        }
        campaign_with(&env, &[("bad", &format!("{{kind: run, file: {file}}}"))]);
        let out = env.run(&run_matrix("bad"));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{file} {text:?}: {err}");
        assert!(err.contains(file) && err.contains("leg `bad`"), "{err}");
        for n in &needles {
            assert!(err.contains(n.as_str()), "{file} {text:?}: {err} lacks {n}");
        }
        // eval reports the same errors (the qrels stand for the dataset; no corpus to check)
        if !needles[1].contains("corpus") && file != "bad.parquet" {
            let out = env.run(&["eval", file, "results/runs/synthetic/qrels.txt"]);
            let e = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "eval {file} {text:?}: {e}");
            assert!(e.contains(file) && e.contains(needles[0].as_str()), "{e}");
        }
    }
    // bad parameters are refused when the campaign loads, naming the leg and the field
    for (spec, needles) in [
        (
            "{kind: run, file: run.dat}",
            &["leg `bad`", "`format`", "run.dat"][..],
        ),
        ("{kind: run}", &["leg `bad`", "`file`", "required"]),
        (
            "{kind: run, file: a.trec, unknown_ids: skip}",
            &["unknown_ids", "skip"],
        ),
        ("{kind: run, file: a.trec, colour: red}", &["colour"]),
    ] {
        campaign_with(&env, &[("bad", spec)]);
        let out = env.run(&run_matrix("bad"));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{spec}: {err}");
        assert!(err.contains("campaign.yaml"), "{spec}: {err}");
        for n in needles {
            assert!(err.contains(n), "{spec}: {err} lacks {n}");
        }
    }
    // a pinned hash that no longer matches the file
    std::fs::write(env.path().join("a.trec"), &ok).unwrap();
    campaign_with(
        &env,
        &[("bad", "{kind: run, file: a.trec, file_blake3: abc}")],
    );
    let out = env.run(&run_matrix("bad"));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("`file_blake3`") && err.contains("changed since"),
        "{err}"
    );
    // a run path that is a directory is a mistake, not an absent run, for the leg and for eval
    std::fs::create_dir_all(env.path().join("dir.trec")).unwrap();
    campaign_with(&env, &[("bad", "{kind: run, file: dir.trec}")]);
    for args in [
        run_matrix("bad"),
        vec!["eval", "dir.trec", "results/runs/synthetic/qrels.txt"],
    ] {
        let out = env.run(&args);
        let e = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {e}");
        assert!(
            e.contains("dir.trec") && e.contains("is a directory"),
            "{args:?}: {e}"
        );
    }
    // eval's own errors: an unknown format, a qrels line without four columns, --per-query
    let out = env.run(&["eval", "a.dat", "results/runs/synthetic/qrels.txt"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--run-format"));
    std::fs::write(env.path().join("q.txt"), format!("{q0} 0 {d0}\n")).unwrap();
    let out = env.run(&["eval", "a.trec", "q.txt"]);
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.code() == Some(2) && e.contains("q.txt") && e.contains("line 1"),
        "{e}"
    );
    let out = env.run(&[
        "eval",
        "a.trec",
        "results/runs/synthetic/qrels.txt",
        "--per-query",
        "x.csv",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains(".json or .tsv"));
    // a file that cannot be written (its parent is a file) names the flag
    let out = env.run(&[
        "eval",
        "a.trec",
        "results/runs/synthetic/qrels.txt",
        "--per-query",
        "a.trec/x.json",
    ]);
    let e = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{e}");
    assert!(e.contains("--per-query a.trec/x.json: cannot write"), "{e}");
}
