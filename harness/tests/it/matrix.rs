use crate::util::{deterministic, edit_json, Env};

const LEGS: [&str; 4] = ["dense", "dense_content_only", "lexical", "bm25"];

#[test]
fn refuses_to_run_without_a_pinned_thread_count() {
    let env = Env::new();
    let out = env.run(&["run-matrix", "--quiet"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("refusing to run") && err.contains("--threads"),
        "{err}"
    );
}

#[test]
fn summaries_are_byte_identical_across_thread_counts_and_cached() {
    let env = Env::new();
    let one = env.ok(&["run-matrix", "--threads", "1", "--quiet", "--results", "r1"]);
    assert!(one.contains("| synthetic | bm25 | ok |"), "{one}");
    env.ok(&["run-matrix", "--threads", "2", "--quiet", "--results", "r2"]);
    for leg in LEGS {
        let a = env.summary("r1", "synthetic", leg);
        let b = env.summary("r2", "synthetic", leg);
        assert_eq!(a["status"], "ok", "{leg}: {a}");
        assert_eq!(
            deterministic(a),
            deterministic(b),
            "{leg} differs between 1 and 2 threads"
        );
        let ra =
            std::fs::read(env.results("r1").join(format!("runs/synthetic/{leg}.trec"))).unwrap();
        let rb =
            std::fs::read(env.results("r2").join(format!("runs/synthetic/{leg}.trec"))).unwrap();
        assert_eq!(ra, rb, "{leg}: run files differ");
    }
    // a second identical invocation recomputes nothing, and does not load the export for it;
    // the qrels it writes from the export's head are the ones the loaded export gave
    let qrels = || std::fs::read(env.results("r1").join("runs/synthetic/qrels.txt")).unwrap();
    let before = qrels();
    let again = env.ok(&["run-matrix", "--threads", "2", "--quiet", "--results", "r1"]);
    assert!(again.contains("0 computed, 4 cached"), "{again}");
    assert!(
        again.contains("synthetic: 320 chunks, 60 queries evaluated; every cell cached"),
        "{again}"
    );
    assert_eq!(qrels(), before);
    // with --limit the query set differs: recomputed, the export loaded; then cached
    let limited = || {
        env.ok(&[
            "run-matrix",
            "--threads",
            "2",
            "--quiet",
            "--results",
            "r1",
            "--limit",
            "7",
            "--legs",
            "bm25",
        ])
    };
    let first = limited();
    assert!(first.contains("1 computed, 0 cached"), "{first}");
    assert!(!first.contains("every cell cached"), "{first}");
    let second = limited();
    assert!(
        second.contains("7 queries evaluated (of 60, --limit); every cell cached"),
        "{second}"
    );
    // --force recomputes, to the same numbers
    let forced = env.ok(&[
        "run-matrix",
        "--threads",
        "2",
        "--quiet",
        "--results",
        "r1",
        "--force",
        "--legs",
        "lexical",
    ]);
    assert!(forced.contains("1 computed"), "{forced}");
    assert_eq!(
        deterministic(env.summary("r1", "synthetic", "lexical")),
        deterministic(env.summary("r2", "synthetic", "lexical"))
    );
}

#[test]
fn changing_one_leg_parameter_recomputes_only_that_leg() {
    let env = Env::new();
    env.ok(&["run-matrix", "--threads", "2", "--quiet"]);
    let before = env.summary("results", "synthetic", "bm25");
    let campaign = std::fs::read_to_string(env.path().join("campaign.yaml")).unwrap();
    std::fs::write(
        env.path().join("campaign.yaml"),
        campaign.replace(
            "dense: {kind: dense, pool_k: 50}",
            "dense: {kind: dense, pool_k: 40}",
        ),
    )
    .unwrap();
    let out = env.ok(&["run-matrix", "--threads", "2", "--quiet"]);
    assert!(out.contains("1 computed, 3 cached"), "{out}");
    assert_eq!(
        deterministic(before),
        deterministic(env.summary("results", "synthetic", "bm25"))
    );
    assert_eq!(
        env.summary("results", "synthetic", "dense")["inputs"]["leg_config"]["pool_k"],
        40
    );
}

#[test]
fn absent_files_make_missing_input_cells_not_errors() {
    let env = Env::new();
    let out = env.ok(&[
        "run-matrix",
        "--threads",
        "1",
        "--quiet",
        "--data-dir",
        "data",
    ]);
    assert!(out.contains("| absent | dense | missing-inputs |"), "{out}");
    let s = env.summary("results", "absent", "dense");
    assert_eq!(s["status"], "missing-inputs");
    assert!(
        s["reason"].as_str().unwrap().contains("musique_train.json"),
        "{s}"
    );
    assert!(
        s["metrics"].as_object().unwrap().is_empty(),
        "no zeros for missing inputs: {s}"
    );
    assert_eq!(env.summary("results", "synthetic", "dense")["status"], "ok");
}

#[test]
fn summary_has_the_promised_fields_and_sane_values() {
    let env = Env::new();
    env.ok(&[
        "run-matrix",
        "--threads",
        "2",
        "--quiet",
        "--legs",
        "bm25,lexical",
    ]);
    let s = env.summary("results", "synthetic", "bm25");
    for field in [
        "schema_version",
        "dataset",
        "leg",
        "status",
        "key",
        "queries",
        "metrics",
        "metrics_ci95",
        "timing",
    ] {
        assert!(s.get(field).is_some(), "missing {field}: {s}");
    }
    assert!(
        s["timing"]["latency_ms"]["total"]["median"]
            .as_f64()
            .unwrap()
            >= 0.0
    );
    let m = s["metrics"].as_object().unwrap();
    let r1 = m["recall@1"].as_f64().unwrap();
    let r20 = m["recall@20"].as_f64().unwrap();
    assert!(r1 <= r20 && r20 <= 1.0 && r20 > 0.0, "{m:?}");
    assert!(m["full_chain_hit@10"].as_f64().unwrap() <= m["chain_coverage@10"].as_f64().unwrap());
    let qrels =
        std::fs::read_to_string(env.results("results").join("runs/synthetic/qrels.txt")).unwrap();
    assert!(qrels.lines().count() >= s["queries"].as_u64().unwrap() as usize);
    let md = std::fs::read_to_string(env.results("results").join("matrix.md")).unwrap();
    assert!(md.contains("| synthetic | lexical | ok |"), "{md}");
}

#[test]
fn compare_reports_identical_and_not_comparable() {
    let env = Env::new();
    env.ok(&[
        "run-matrix",
        "--threads",
        "1",
        "--quiet",
        "--results",
        "a",
        "--legs",
        "lexical,bm25",
    ]);
    env.ok(&[
        "run-matrix",
        "--threads",
        "2",
        "--quiet",
        "--results",
        "b",
        "--legs",
        "lexical,bm25",
    ]);
    env.ok(&[
        "run-matrix",
        "--threads",
        "2",
        "--quiet",
        "--results",
        "c",
        "--legs",
        "lexical",
        "--limit",
        "10",
    ]);
    let out = env.ok(&["compare", "a", "b", "--json", "cmp.json"]);
    assert!(out.contains("| synthetic | lexical | identical |"), "{out}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(env.path().join("cmp.json")).unwrap())
            .unwrap();
    assert_eq!(json["cells"][0]["verdict"], "identical");
    let out = env.ok(&["compare", "a", "c"]);
    assert!(
        out.contains("not comparable (different query set)"),
        "{out}"
    );
    assert!(out.contains("only in A"), "{out}");
}

#[test]
fn unknown_campaign_keys_are_errors_naming_file_and_field() {
    let env = Env::new();
    std::fs::write(
        env.path().join("bad.yaml"),
        "datasets: {s: {format: synthetic}}\nlegs: {x: {kind: lexical, pool_kk: 3}}\n",
    )
    .unwrap();
    let out = env.run(&["run-matrix", "--threads", "1", "--campaign", "bad.yaml"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.yaml") && err.contains("pool_kk"), "{err}");
}

#[test]
fn a_data_directory_that_does_not_exist_is_an_error_and_writes_nothing() {
    let env = Env::new();
    let out = env.run(&[
        "run-matrix",
        "--threads",
        "1",
        "--quiet",
        "--data-dir",
        "no-such-dir",
        "--results",
        "r",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("data directory no-such-dir") && err.contains("not a directory"),
        "{err}"
    );
    assert!(!env.path().join("r").exists(), "nothing written");
}

/// A cached cell is served only when its records and run file are the ones written with it and
/// its means are those of its records; anything else is a warning naming the file and a
/// recompute to the same numbers.
#[test]
fn a_tampered_or_damaged_cached_cell_is_recomputed_not_served() {
    let env = Env::new();
    let run = [
        "run-matrix",
        "--threads",
        "1",
        "--quiet",
        "--no-curves",
        "--datasets",
        "synthetic",
        "--legs",
        "bm25",
        "--results",
        "r",
    ];
    env.ok(&run);
    let original = deterministic(env.summary("r", "synthetic", "bm25"));
    let cells = env.results("r").join("cells").join("synthetic");
    let summary = cells.join("bm25.summary.json");
    let records = cells.join("bm25.queries.parquet");
    let trec = env
        .results("r")
        .join("runs")
        .join("synthetic")
        .join("bm25.trec");

    // an untouched cell is served from the cache
    assert!(env.ok(&run).contains("1 cached"), "served from cache");

    type Damage<'a> = (&'a str, Box<dyn Fn() + 'a>, &'a str);
    let damages: [Damage; 5] = [
        (
            "edited mean, key kept",
            Box::new(|| {
                edit_json(&summary, false, |v| {
                    v["metrics"]["recall@10"] = serde_json::json!(0.999)
                })
            }),
            "bm25.summary.json: a field outside `timing` is not what was written",
        ),
        (
            "edited mean, key kept, seal recomputed",
            Box::new(|| {
                edit_json(&summary, true, |v| {
                    v["metrics"]["recall@10"] = serde_json::json!(0.999)
                })
            }),
            "metrics.recall@10 is not the mean of",
        ),
        (
            "truncated records",
            Box::new(|| {
                let bytes = std::fs::read(&records).unwrap();
                std::fs::write(&records, &bytes[..bytes.len() / 2]).unwrap();
            }),
            "bm25.queries.parquet: not the records written with its summary",
        ),
        (
            "deleted run file",
            Box::new(|| std::fs::remove_file(&trec).unwrap()),
            "bm25.trec: cannot read",
        ),
        (
            "edited run file",
            Box::new(|| {
                let text = std::fs::read_to_string(&trec).unwrap();
                std::fs::write(&trec, text.replacen("Q0", "Q1", 1)).unwrap();
            }),
            "bm25.trec: not the run file written with its summary",
        ),
    ];
    for (what, damage, says) in damages {
        damage();
        // a reader refuses the cell too, with the reason, instead of comparing damaged numbers,
        // and its exit status says a cell was left out
        let cmp = env.run(&["compare", "r", "r"]);
        assert_eq!(cmp.status.code(), Some(3), "{what}: compare's exit status");
        let cmp = String::from_utf8_lossy(&cmp.stdout);
        assert!(
            cmp.contains("not comparable") && cmp.contains("not trusted") && cmp.contains(says),
            "{what}: compare: {cmp}"
        );
        let out = env.ok(&run);
        assert!(
            out.contains("cached cell not trusted") && out.contains(says),
            "{what}: {out}"
        );
        assert!(out.contains("1 computed"), "{what}: recomputed: {out}");
        assert_eq!(
            deterministic(env.summary("r", "synthetic", "bm25")),
            original,
            "{what}: the same numbers"
        );
    }
}

#[test]
fn dataset_files_are_confined_to_the_data_directory_unless_allowed() {
    let env = Env::new();
    let outside = env.path().join("outside.json");
    std::fs::write(&outside, "[]").unwrap();
    std::os::unix::fs::symlink(&outside, env.path().join("data").join("link.json")).unwrap();
    let absolute = outside.display().to_string();
    for file in ["../outside.json", absolute.as_str(), "link.json"] {
        let campaign = format!(
            "model: model\ndatasets:\n  m: {{format: musique, files: {{questions: '{file}'}}}}\nlegs:\n  bm25: {{kind: bm25}}\n"
        );
        std::fs::write(env.path().join("c2.yaml"), campaign).unwrap();
        let args = ["datasets", "--campaign", "c2.yaml", "--data-dir", "data"];
        let out = env.run(&args);
        assert_eq!(out.status.code(), Some(2), "{file}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("datasets.m: files.questions")
                && err.contains("leads outside the data directory"),
            "{file}: {err}"
        );
        let allowed = env.run(&[&args[..], &["--allow-outside-data-dir"]].concat());
        assert!(allowed.status.success(), "{file}: allowed");
    }
    // a path that climbs and comes back down stays inside: accepted
    std::fs::create_dir_all(env.path().join("data/m")).unwrap();
    for file in ["./m/../m/q.json", "m/./q.json"] {
        let campaign = format!(
            "model: model\ndatasets:\n  m: {{format: musique, files: {{questions: '{file}'}}}}\nlegs:\n  bm25: {{kind: bm25}}\n"
        );
        std::fs::write(env.path().join("c3.yaml"), campaign).unwrap();
        let out = env.run(&["datasets", "--campaign", "c3.yaml", "--data-dir", "data"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{file}: {err}");
    }
    let campaign = "model: model\ndatasets:\n  m: {format: musique, files: {questions: 'm/../../x.json'}}\nlegs:\n  bm25: {kind: bm25}\n";
    std::fs::write(env.path().join("c4.yaml"), campaign).unwrap();
    let out = env.run(&["datasets", "--campaign", "c4.yaml", "--data-dir", "data"]);
    assert_eq!(out.status.code(), Some(2), "m/../../x.json climbs out");
}

#[test]
fn missing_inputs_are_not_counted_as_cached_and_disjoint_runs_do_not_compare() {
    let env = Env::new();
    let run = |datasets: &str, results: &str| {
        env.ok(&[
            "run-matrix",
            "--threads",
            "1",
            "--quiet",
            "--no-curves",
            "--data-dir",
            "data",
            "--datasets",
            datasets,
            "--legs",
            "lexical",
            "--results",
            results,
        ])
    };
    run("synthetic,absent", "a");
    let again = run("synthetic,absent", "a");
    assert!(again.contains("1 cached, 1 missing inputs"), "{again}");
    run("synthetic", "s");
    run("absent", "x");
    let out = env.run(&["compare", "s", "x"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("share no cell"), "{err}");
}

/// One writer per results directory: two run-matrix processes at once both finish with the
/// summaries a lone run writes; a writer finding the lock held waits (saying so), or fails at
/// once with `--no-wait`.
#[test]
fn writers_of_one_results_directory_take_turns() {
    use std::process::Stdio;
    let env = Env::new();
    let args = [
        "run-matrix",
        "--threads",
        "1",
        "--quiet",
        "--no-curves",
        "--datasets",
        "synthetic",
        "--legs",
        "bm25,lexical",
        "--results",
    ];
    let spawn = |results: &str, extra: &[&str]| {
        env.command(&args)
            .arg(results)
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn hopbench")
    };
    env.ok(&[&args[..], &["alone"]].concat());
    let (a, b) = (spawn("shared", &[]), spawn("shared", &[]));
    for child in [a, b] {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    for leg in ["bm25", "lexical"] {
        assert_eq!(
            deterministic(env.summary("shared", "synthetic", leg)),
            deterministic(env.summary("alone", "synthetic", leg)),
            "{leg}"
        );
    }

    // hold the lock ourselves
    std::fs::create_dir_all(env.results("held")).unwrap();
    let lock = std::fs::File::create(env.results("held").join(".lock")).unwrap();
    lock.lock().unwrap();
    let out = env.run(&[&args[..], &["held", "--no-wait"]].concat());
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("another hopbench process is writing"), "{err}");
    let waiting = spawn("held", &[]);
    std::thread::sleep(std::time::Duration::from_millis(1500));
    assert!(
        !env.results("held").join("cells").exists(),
        "nothing written while the lock is held"
    );
    lock.unlock().unwrap();
    let out = waiting.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && err.contains("waiting: another hopbench process"),
        "{err}"
    );
}

#[test]
fn a_writer_removes_what_dead_writers_left_and_nothing_else() {
    let env = Env::new();
    let r = env.results("r");
    let stale_dir = r.join("exports").join(".synthetic.tmp-4194303");
    std::fs::create_dir_all(&stale_dir).unwrap();
    std::fs::write(stale_dir.join("corpus.parquet"), b"half").unwrap();
    std::fs::create_dir_all(r.join("cells").join("synthetic")).unwrap();
    let stale_file = r
        .join("cells")
        .join("synthetic")
        .join(".bm25.summary.tmp-7.json");
    std::fs::write(&stale_file, b"{").unwrap();
    let keep = r.join("cells").join("notes.txt");
    std::fs::write(&keep, b"mine").unwrap();
    let out = env.ok(&[
        "run-matrix",
        "--threads",
        "1",
        "--quiet",
        "--no-curves",
        "--datasets",
        "synthetic",
        "--legs",
        "bm25",
        "--results",
        "r",
    ]);
    assert!(!stale_dir.exists() && !stale_file.exists(), "{out}");
    assert!(out.contains("left by a run that did not finish"), "{out}");
    assert!(keep.exists(), "other files are kept");
}

#[test]
fn each_cell_names_its_protocol_and_the_text_alone_ablations_are_the_text_alone_runs() {
    let env = Env::new();
    std::fs::write(
        env.path().join("campaign.yaml"),
        "results: results
model: model
stats: {resamples: 200, permutations: 200, seed: 3}
datasets:
  published: {format: synthetic}
  titled: {format: synthetic, context_header: title}
  alone: {format: synthetic, context_header: none}
  absent: {format: musique, files: {questions: nowhere/q.json}}
legs:
  lexical: {kind: lexical}
  lexical_content_only: {kind: lexical_content_only}
  dense: {kind: dense}
  dense_content_only: {kind: dense_content_only}
",
    )
    .unwrap();
    let out = env.ok(&[
        "run-matrix",
        "--threads",
        "2",
        "--quiet",
        "--no-curves",
        "--data-dir",
        "data",
        "--limit",
        "20",
    ]);
    let line = "Indexed per passage (protocol): absent title+text, alone text, published \
                header+text, titled title+text.";
    assert!(out.contains(line), "{out}");
    let md = std::fs::read_to_string(env.results("results").join("matrix.md")).unwrap();
    assert!(md.contains(line), "{md}");
    let cell = |d: &str, l: &str| env.summary("results", d, l);
    for (d, protocol) in [
        ("published", "header+text"),
        ("titled", "title+text"),
        ("alone", "text"),
        // a dataset that could not be read still says what it would index
        ("absent", "title+text"),
    ] {
        for l in ["lexical", "dense", "lexical_content_only"] {
            assert_eq!(cell(d, l)["protocol"], protocol, "{d} x {l}");
        }
    }
    // the ablations over a titled export are exactly the runs over the text alone
    for (ablation, full) in [
        ("lexical_content_only", "lexical"),
        ("dense_content_only", "dense"),
    ] {
        for d in ["titled", "published"] {
            let a = cell(d, ablation);
            assert_eq!(a["status"], "ok", "{a}");
            assert_eq!(
                a["metrics"],
                cell("alone", full)["metrics"],
                "{d} x {ablation}"
            );
        }
        assert_ne!(
            cell("titled", full)["metrics"],
            cell("alone", full)["metrics"],
            "the title moves {full}"
        );
        // nothing to ablate where the text alone is indexed
        let a = cell("alone", ablation);
        assert_eq!(a["status"], "missing-inputs");
        assert!(a["reason"].as_str().unwrap().contains("text alone"), "{a}");
    }
}

#[test]
fn the_similarity_graph_is_built_only_when_a_selected_leg_walks_it_and_added_later() {
    let env = Env::new();
    let campaign = crate::util::CAMPAIGN.to_string() + "  cdgr: {kind: cdgr}\n  cdr: {kind: cdr}\n";
    std::fs::write(env.path().join("campaign.yaml"), campaign).unwrap();
    let export = env.results("results").join("exports").join("synthetic");
    let listed = || -> Vec<String> {
        let text = std::fs::read_to_string(export.join("manifest.json")).unwrap();
        let m: serde_json::Value = serde_json::from_str(&text).unwrap();
        m["files"].as_object().unwrap().keys().cloned().collect()
    };
    let run = |legs: &str| {
        env.ok(&[
            "run-matrix",
            "--threads",
            "1",
            "--datasets",
            "synthetic",
            "--legs",
            legs,
        ])
    };
    // CDR ranks without the graph: the export has none
    let out = run("lexical,cdr");
    assert!(
        !listed().iter().any(|f| f.starts_with("simgraph")),
        "{:?}",
        listed()
    );
    assert!(!export.join("simgraph-edges.parquet").exists());
    assert!(!out.contains("added the similarity graph"), "{out}");
    // CDGR walks it: added to the same export, nothing else rebuilt
    let corpus = std::fs::read(export.join("corpus.parquet")).unwrap();
    let out = run("cdgr");
    assert!(
        out.contains("synthetic: added the similarity graph"),
        "{out}"
    );
    assert!(
        listed().iter().any(|f| f == "simgraph-edges.parquet"),
        "{:?}",
        listed()
    );
    assert_eq!(
        std::fs::read(export.join("corpus.parquet")).unwrap(),
        corpus
    );
    let cdgr = env.summary("results", "synthetic", "cdgr");
    assert_eq!(cdgr["status"], "ok");
    // a cell names the parts it reads: the graph is part of CDGR's identity, and not of the
    // legs that never read it, whose cells the added graph leaves cached, keys and all
    assert!(
        cdgr["inputs"]["export_parts"]["simgraph"].is_string(),
        "{cdgr}"
    );
    let keys = |legs: &[&str]| -> Vec<serde_json::Value> {
        legs.iter()
            .map(|l| {
                let s = env.summary("results", "synthetic", l);
                assert!(s["inputs"].get("export_parts").is_none(), "{l}: {s}");
                serde_json::json!([s["key"], s["inputs"]["export"]])
            })
            .collect()
    };
    let before = keys(&["lexical", "cdr"]);
    assert_eq!(cdgr["inputs"]["export"], before[0][1]);
    let out = run("lexical,cdr");
    assert!(out.contains("every cell cached"), "{out}");
    assert_eq!(keys(&["lexical", "cdr"]), before);
    // a complete prepare (every leg of the campaign) is that export, byte for byte
    env.ok(&[
        "prepare",
        "--campaign",
        "campaign.yaml",
        "--results",
        "whole",
        "--datasets",
        "synthetic",
    ]);
    let whole =
        std::fs::read_to_string(env.results("whole").join("exports/synthetic/manifest.json"))
            .unwrap();
    let whole: serde_json::Value = serde_json::from_str(&whole).unwrap();
    let grown: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(export.join("manifest.json")).unwrap())
            .unwrap();
    assert_eq!(whole["files"], grown["files"]);
}

#[test]
fn an_edited_manifest_count_is_never_printed_and_the_export_is_rebuilt() {
    let env = Env::new();
    let run = || {
        env.ok(&[
            "run-matrix",
            "--threads",
            "1",
            "--no-curves",
            "--datasets",
            "synthetic",
            "--legs",
            "lexical",
        ])
    };
    let first = run();
    let chunks = {
        let m = env
            .results("results")
            .join("exports/synthetic/manifest.json");
        let mut v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&m).unwrap()).unwrap();
        let n = v["stats"]["chunks"].as_u64().unwrap();
        v["stats"]["chunks"] = 999.into();
        std::fs::write(&m, serde_json::to_string_pretty(&v).unwrap()).unwrap();
        n
    };
    assert!(
        first.contains(&format!("synthetic: {chunks} chunks")),
        "{first}"
    );
    // every cell is cached, yet the count printed is the files', and the export is rebuilt
    let out = run();
    assert!(!out.contains("999 chunks"), "{out}");
    assert!(
        out.contains(&format!("synthetic: {chunks} chunks")),
        "{out}"
    );
    assert!(
        out.contains("field `chunks`") || out.contains("stats"),
        "the refusal names the count: {out}"
    );
    assert!(out.contains("says 999, the export's files hold"), "{out}");
    let again = run();
    assert!(again.contains("every cell cached"), "{again}");
}
