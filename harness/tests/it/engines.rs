//! External first-stage engines end to end: a leg composed over a process speaking the
//! JSON-lines protocol ranks like the built-in engine it replaces, and a process that breaks the
//! protocol makes its cell `error` with a reason naming the query and the command, while the
//! other cells run and no process is left behind.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::Env;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `true` when `python3` can import every module (the test prints `SKIPPED:` otherwise).
fn python_has(modules: &str) -> bool {
    Command::new("python3")
        .args(["-c", &format!("import {modules}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The run file of a cell without its tag column (the tag is `hopbench-<leg>`).
fn run_without_tag(env: &Env, leg: &str) -> String {
    let p = env
        .results("results")
        .join("runs/synthetic")
        .join(format!("{leg}.trec"));
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    assert!(!text.is_empty(), "{}", p.display());
    text.lines()
        .map(|l| l.rsplit_once(' ').expect("a run line").0)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Pids of live processes whose command line contains `needle` (zombies have none).
fn processes_with(needle: &str) -> Vec<String> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        if let Ok(cmd) = std::fs::read(entry.path().join("cmdline")) {
            if String::from_utf8_lossy(&cmd).contains(needle) {
                out.push(name);
            }
        }
    }
    out
}

#[test]
fn legs_over_the_bm25s_backend_rank_like_the_builtin_bm25() {
    if !python_has("bm25s, Stemmer, regex, pyarrow, numpy") {
        println!(
            "SKIPPED: python3 cannot import bm25s \
             (pip install bm25s==0.3.16 PyStemmer==2.2.0.3 regex==2026.5.9 pyarrow)"
        );
        return;
    }
    let env = Env::new();
    let backend = repo().join("scripts/backends/bm25s_backend.py");
    let ext = format!(
        "{{engine: external, command: [python3, '{}'], timeout_ms: 30000}}",
        backend.display()
    );
    let campaign = format!(
        r#"
results: results
model: model
recall_k: [1, 2, 5, 10, 20]
stats: {{resamples: 200, permutations: 500, seed: 7}}
datasets:
  synthetic: {{format: synthetic}}
legs:
  lexical: {{kind: lexical}}
  lexical_ext: {{kind: lexical, lexical: {ext}}}
  graph_rescue: {{kind: graph_rescue}}
  graph_rescue_ext: {{kind: graph_rescue, lexical: {ext}}}
"#
    );
    std::fs::write(env.path().join("campaign.yaml"), campaign).unwrap();
    env.ok(&[
        "run-matrix",
        "--threads",
        "2",
        "--quiet",
        "--data-dir",
        "data",
        "--no-curves",
    ]);
    for (builtin, external) in [
        ("lexical", "lexical_ext"),
        ("graph_rescue", "graph_rescue_ext"),
    ] {
        let (a, b) = (
            env.summary("results", "synthetic", builtin),
            env.summary("results", "synthetic", external),
        );
        assert_eq!(b["status"], "ok", "{b}");
        assert_eq!(a["metrics"], b["metrics"], "{builtin} vs {external}");
        assert_eq!(
            a["diagnostics"], b["diagnostics"],
            "{builtin} vs {external}"
        );
        assert!(
            run_without_tag(&env, builtin) == run_without_tag(&env, external),
            "{builtin} and {external} rank differently"
        );
        // the default engine adds nothing to a leg's configuration (nor to its cell key)
        let config = a["inputs"]["leg_config"].as_object().unwrap();
        assert!(
            !config.contains_key("lexical") && !config.contains_key("dense"),
            "{config:?}"
        );
        assert_eq!(
            b["inputs"]["leg_config"]["lexical"]["command"][1],
            backend.display().to_string()
        );
        // the backend's bytes are in the external leg's key, and nothing in the built-in's
        assert!(a["inputs"].get("engine_files").is_none(), "{}", a["inputs"]);
        let files = b["inputs"]["engine_files"].as_object().unwrap();
        assert_eq!(
            files.keys().collect::<Vec<_>>(),
            vec![&backend.display().to_string()]
        );
    }
    assert_eq!(
        env.summary("results", "synthetic", "lexical")["inputs"]["leg_config"],
        serde_json::json!({"kind": "lexical", "pool_k": 100})
    );
}

#[test]
fn a_broken_backend_makes_its_cell_an_error_naming_query_and_command() {
    let env = Env::new();
    // a copy under the test's own directory, so its processes are told apart from any other's
    let fake = env.path().join("fake_backend.py");
    std::fs::copy(repo().join("legs/tests/fixtures/fake_backend.py"), &fake).unwrap();
    let leg = |side: &str, kind: &str, args: &str, timeout: u64| {
        format!(
            "{{kind: {kind}, {side}: {{engine: external, command: [python3, '{}', {args}], timeout_ms: {timeout}}}}}",
            fake.display()
        )
    };
    let campaign = format!(
        r#"
results: results
model: model
recall_k: [1, 2, 5, 10, 20]
stats: {{resamples: 200, permutations: 500, seed: 7}}
datasets:
  synthetic: {{format: synthetic}}
legs:
  lexical: {{kind: lexical}}
  dies: {}
  hangs: {}
  unknown_id: {}
  nan: {}
  no_start: {}
  packed_dies: {}
"#,
        leg("lexical", "lexical", "die-after, '3'", 10_000),
        leg("lexical", "bm25", "hang", 300),
        leg("dense", "dense", "unknown-id", 10_000),
        leg("lexical", "graph_rescue", "nan, syn00001", 10_000),
        leg("dense", "bm25", "exit-at-start", 10_000),
        "{kind: graph_rescue_packed, rescue: {lexical: {engine: external, command: [python3, 'FAKE', wrong-query]}}}"
            .replace("FAKE", &fake.display().to_string()),
    );
    std::fs::write(env.path().join("campaign.yaml"), campaign).unwrap();
    let out = env.ok(&[
        "run-matrix",
        "--threads",
        "2",
        "--quiet",
        "--data-dir",
        "data",
    ]);
    assert!(out.contains("| synthetic | lexical | ok |"), "{out}");
    let command = format!("`python3 {}", fake.display());
    for (leg, side, what) in [
        ("dies", "lexical", "the process exited (exit status: 1) before answering; its stderr ends: fake: giving up"),
        ("hangs", "lexical", "no answer within 300 ms (the process was killed)"),
        ("unknown_id", "dense", "names `no-such-chunk`, which is not a chunk id of the corpus"),
        ("nan", "lexical", "has the non-finite score NaN"),
        ("packed_dies", "lexical", "the answer is for query `"),
    ] {
        let s = env.summary("results", "synthetic", leg);
        assert_eq!(s["status"], "error", "{leg}: {s}");
        assert_eq!(s["metrics"], serde_json::json!({}), "{leg}: no numbers, never zeros");
        let reason = s["reason"].as_str().unwrap();
        assert!(reason.starts_with(&format!("external {side} engine {command}")), "{leg}: {reason}");
        assert!(reason.contains(", request for query `q"), "{leg}: {reason}");
        assert!(reason.contains(what), "{leg}: {reason}");
        assert!(out.contains(&format!("| synthetic | {leg} | error |")), "{out}");
    }
    // `die-after 3`: three queries were answered; the first failing request is a later one
    let reason = env.summary("results", "synthetic", "dies")["reason"].to_string();
    assert!(
        !reason.contains("not sent"),
        "the root cause is reported: {reason}"
    );
    let s = env.summary("results", "synthetic", "no_start");
    assert_eq!(s["status"], "error");
    let reason = s["reason"].as_str().unwrap();
    assert!(
        reason.starts_with(&format!("external dense engine {command}"))
            && reason.contains("exit-at-start`, at start-up: the process exited")
            && reason.contains("fake: cannot load the index"),
        "{reason}"
    );
    // every process was reaped: none of this test's backends is still running
    let left = processes_with(&fake.display().to_string());
    assert!(left.is_empty(), "processes left behind: {left:?}");
}

/// The top `n` chunk ids per query of a run file.
fn top_n(env: &Env, leg: &str, n: usize) -> std::collections::BTreeMap<String, Vec<String>> {
    let p = env
        .results("results")
        .join("runs/synthetic")
        .join(format!("{leg}.trec"));
    let mut out: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for line in std::fs::read_to_string(&p).unwrap().lines() {
        let f: Vec<&str> = line.split(' ').collect();
        let list = out.entry(f[0].to_string()).or_default();
        if list.len() < n {
            list.push(f[2].to_string());
        }
    }
    out
}

#[test]
fn a_dense_leg_over_the_hnswlib_backend_finds_what_the_exact_scan_finds() {
    if !python_has("hnswlib, pyarrow, numpy") {
        println!("SKIPPED: python3 cannot import hnswlib (pip install hnswlib==0.8.0 pyarrow)");
        return;
    }
    let env = Env::new();
    let backend = repo().join("scripts/backends/hnswlib_backend.py");
    let ext = format!(
        "{{engine: external, command: [python3, '{}', --ef, '200'], timeout_ms: 30000}}",
        backend.display()
    );
    let campaign = format!(
        r#"
results: results
model: model
recall_k: [1, 2, 5, 10, 20]
stats: {{resamples: 200, permutations: 500, seed: 7}}
datasets:
  synthetic: {{format: synthetic}}
legs:
  dense: {{kind: dense}}
  dense_hnsw: {{kind: dense, dense: {ext}}}
  dense_content_only: {{kind: dense_content_only}}
  dense_content_only_hnsw: {{kind: dense_content_only, dense: {ext}}}
"#
    );
    std::fs::write(env.path().join("campaign.yaml"), campaign).unwrap();
    env.ok(&[
        "run-matrix",
        "--threads",
        "2",
        "--quiet",
        "--data-dir",
        "data",
    ]);
    assert_eq!(
        env.summary("results", "synthetic", "dense_hnsw")["status"],
        "ok"
    );
    for (exact, approx) in [
        ("dense", "dense_hnsw"),
        ("dense_content_only", "dense_content_only_hnsw"),
    ] {
        let (a, b) = (
            env.summary("results", "synthetic", exact),
            env.summary("results", "synthetic", approx),
        );
        // a dataset without content-only vectors is `missing-inputs` whichever engine answers
        assert_eq!(a["status"], b["status"], "{approx}: {b}");
        if a["status"] != "ok" {
            continue;
        }
        let (ta, tb) = (top_n(&env, exact, 10), top_n(&env, approx, 10));
        assert_eq!(ta.keys().collect::<Vec<_>>(), tb.keys().collect::<Vec<_>>());
        let overlap: f64 = ta
            .iter()
            .map(|(q, a)| a.iter().filter(|c| tb[q].contains(c)).count() as f64 / a.len() as f64)
            .sum::<f64>()
            / ta.len() as f64;
        // HNSW is approximate; at ef 200 over a few hundred chunks it misses almost nothing
        assert!(
            overlap >= 0.95,
            "{approx}: mean top-10 overlap with {exact} {overlap}"
        );
    }
}

#[test]
fn editing_a_backend_script_recomputes_its_cell() {
    let env = Env::new();
    let fake = env.path().join("fake_backend.py");
    std::fs::copy(repo().join("legs/tests/fixtures/fake_backend.py"), &fake).unwrap();
    let campaign = format!(
        r#"
results: results
model: model
recall_k: [1, 2, 5, 10, 20]
stats: {{resamples: 200, permutations: 500, seed: 7}}
datasets:
  synthetic: {{format: synthetic}}
legs:
  lexical: {{kind: lexical}}
  nothing: {{kind: lexical, lexical: {{engine: external, command: [python3, '{}', ok]}}}}
"#,
        fake.display()
    );
    std::fs::write(env.path().join("campaign.yaml"), campaign).unwrap();
    let run = [
        "run-matrix",
        "--threads",
        "2",
        "--quiet",
        "--data-dir",
        "data",
        "--no-curves",
    ];
    let out = env.ok(&run);
    assert!(out.contains("2 cells: 2 computed, 0 cached"), "{out}");
    // an engine that answers nothing is a measured zero, not an error
    let s = env.summary("results", "synthetic", "nothing");
    assert_eq!(
        (&s["status"], &s["metrics"]["recall@10"]),
        (&"ok".into(), &0.0.into())
    );
    assert!(env.ok(&run).contains("2 cells: 0 computed, 2 cached"));
    let mut text = std::fs::read_to_string(&fake).unwrap();
    text.push_str("\n# edited\n");
    std::fs::write(&fake, text).unwrap();
    let out = env.ok(&run);
    assert!(out.contains("2 cells: 1 computed, 1 cached"), "{out}");
}

#[cfg(not(feature = "qdrant"))]
#[test]
fn a_leg_naming_qdrant_in_a_build_without_it_says_how_to_build_it() {
    let env = Env::new();
    let campaign = format!(
        "{}  dense_q: {{kind: dense, dense: {{engine: qdrant}}}}\n",
        crate::util::CAMPAIGN
    );
    std::fs::write(env.path().join("campaign.yaml"), campaign).unwrap();
    let out = env.run(&["legs"]);
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{e}");
    assert!(
        e.contains("dense_q") && e.contains("--features qdrant"),
        "{e}"
    );
    let out = env.run(&[
        "serving-parity",
        "--dataset",
        "synthetic",
        "--leg",
        "dense",
        "--engine",
        "{engine: qdrant}",
    ]);
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && e.contains("--engine: ") && e.contains("--features qdrant"),
        "{e}"
    );
}

/// `serving-parity --leg LEG --repeat 1` with `args` after, in `env`.
fn serving_parity(env: &Env, leg: &str, args: &[&str]) -> std::process::Output {
    let mut all = vec![
        "serving-parity",
        "--dataset",
        "synthetic",
        "--leg",
        leg,
        "--repeat",
        "1",
    ];
    all.extend_from_slice(args);
    env.run(&all)
}

#[test]
fn serving_parity_refuses_a_bad_engine_or_vary_naming_the_flag() {
    let env = Env::new();
    let fake = repo().join("legs/tests/fixtures/fake_backend.py");
    let ext = format!(
        "{{engine: external, command: [python3, '{}', ok]}}",
        fake.display()
    );
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec![], "--engine <GROUP>"),
        (
            vec!["--engine", "external"],
            "--engine: must be a YAML map like {engine: NAME",
        ),
        (
            vec!["--engine", "{m: 16}"],
            "--engine: missing `engine` (one of: ",
        ),
        (
            vec!["--engine", "{engine: faiss}"],
            "--engine: unknown engine `faiss`",
        ),
        (
            vec!["--engine", "{engine: bm25}"],
            "--engine: engine `bm25` does not answer the dense side",
        ),
        (
            vec!["--engine", "{engine: exact}"],
            "comparing it with itself measures nothing",
        ),
        (
            vec!["--engine", "{engine: external, command: [x], bogus: 1}"],
            "--engine: engine `external`: unknown field `bogus`",
        ),
        (
            vec!["--engine", "{engine: external}"],
            "--engine: engine `external`: missing field `command`",
        ),
        (
            vec!["--engine", &ext, "--vary", "bogus=1,2"],
            "--vary variant `bogus=1`: engine `external`: unknown field `bogus`",
        ),
        (
            vec!["--engine", &ext, "--vary", "timeout_ms=5000,0"],
            "--vary variant `timeout_ms=0`: leg `dense`: field `dense.timeout_ms`",
        ),
        (
            vec!["--engine", &ext, "--vary", "timeout_ms='5000'"],
            "--vary variant `timeout_ms=5000`: engine `external`: invalid type: string",
        ),
        (
            vec![
                "--engine",
                &ext,
                "--vary",
                "timeout_ms=1",
                "--vary",
                "timeout_ms=2",
            ],
            "key `timeout_ms` is varied twice",
        ),
        (
            vec!["--engine", &ext, "--vary", "timeout_ms="],
            "no values after `=`",
        ),
        (
            vec!["--engine", &ext, "--vary", "timeout_ms=1,,2"],
            "an empty value",
        ),
        (
            vec!["--engine", &ext, "--vary", "engine=a,b"],
            "not a key to vary",
        ),
        (
            vec![
                "--engine",
                &ext,
                "--vary",
                "timeout_ms=1,2,3,4,5,6,7,8,9",
                "--vary",
                "startup_timeout_ms=1,2,3,4,5,6,7,8",
            ],
            "--vary: 72 variants (the product of the value lists) is more than 64",
        ),
        (vec!["--engine", &ext, "--limit", "0"], "--limit: 0 queries"),
    ];
    for (args, says) in cases {
        let out = serving_parity(&env, "dense", &args);
        let e = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && e.contains(says), "{args:?}: {e}");
    }
    // a leg without a dense side has nothing to serve, and says why
    let out = serving_parity(&env, "lexical", &["--engine", &ext]);
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && e.contains("leg `lexical` (kind `lexical`) has no dense side"),
        "{e}"
    );
    // nothing was measured, nor written
    assert!(!env.results("results").join("parity").exists());
}

#[test]
fn serving_parity_serves_the_product_of_the_varied_keys_in_order() {
    let env = Env::new();
    let fake = env.path().join("fake_backend.py");
    std::fs::copy(repo().join("legs/tests/fixtures/fake_backend.py"), &fake).unwrap();
    let ext = format!(
        "{{engine: external, command: [python3, '{}', ok]}}",
        fake.display()
    );
    let out = serving_parity(
        &env,
        "dense",
        &[
            "--engine",
            &ext,
            "--vary",
            "timeout_ms=6000,5000",
            "--vary",
            "startup_timeout_ms=20000,30000",
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("| path | timeout_ms | startup_timeout_ms | ANN R@10")
            && stdout.contains("| exact | - | - | 1 |")
            && stdout.contains("| external | 6000 | 30000 | 0.000000")
            && stdout.contains("| timeout_ms | startup_timeout_ms | metric |"),
        "{stdout}"
    );
    let dir = env.results("results").join("parity");
    for ext in ["json", "md", "png", "svg"] {
        assert!(
            dir.join(format!("parity-synthetic-dense.{ext}")).is_file(),
            "{ext}"
        );
    }
    let text = std::fs::read_to_string(dir.join("parity-synthetic-dense.json")).unwrap();
    // each row's varied values in --vary order, the first --vary outermost, values as given
    let p: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(p["engine"], "external");
    assert_eq!(p["reference"], "exact");
    assert_eq!(p["base"]["command"][2], "ok");
    assert_eq!(
        p["vary"],
        serde_json::json!([
            {"key": "timeout_ms", "values": [6000, 5000]},
            {"key": "startup_timeout_ms", "values": [20000, 30000]},
        ])
    );
    let rows = p["rows"].as_array().unwrap();
    let got: Vec<(u64, u64)> = rows
        .iter()
        .map(|r| {
            (
                r["params"]["timeout_ms"].as_u64().unwrap(),
                r["params"]["startup_timeout_ms"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [(6000, 20000), (6000, 30000), (5000, 20000), (5000, 30000)]
    );
    let block = &text[text.find("\"params\": {").unwrap()..];
    let block = &block[..block.find('}').unwrap()];
    assert!(
        block.find("\"timeout_ms\"").unwrap() < block.find("\"startup_timeout_ms\"").unwrap(),
        "written in --vary order, not sorted: {block}"
    );
    for r in rows {
        // the engine's whole group, every default filled in
        assert_eq!(r["group"]["command"], p["base"]["command"]);
        assert_eq!(r["group"]["timeout_ms"], r["params"]["timeout_ms"]);
        // an engine answering nothing misses the whole exact top-10
        assert_eq!(r["ann_recall_at_10"], 0.0, "{r}");
        assert_eq!(r["indexes"], serde_json::json!([]));
    }
    assert_eq!(
        p["indexes"],
        serde_json::json!([]),
        "the external engine builds no index"
    );

    // a list value, and no --vary: one row, the group as given
    let listed = format!("[python3, '{}', ok]", fake.display());
    let out = serving_parity(
        &env,
        "dense",
        &[
            "--engine",
            &ext,
            "--vary",
            &format!("command={listed},{listed}"),
        ],
    );
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && e.contains("given twice"), "{e}");
    let checked = format!("[python3, '{}', check]", fake.display());
    let out = serving_parity(
        &env,
        "dense",
        &[
            "--engine",
            &ext,
            "--vary",
            &format!("command={listed},{checked}"),
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let p: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("parity-synthetic-dense.json")).unwrap(),
    )
    .unwrap();
    let modes: Vec<&serde_json::Value> = p["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["params"]["command"][2])
        .collect();
    assert_eq!(modes, ["ok", "check"]);
    let out = serving_parity(&env, "dense", &["--engine", &ext]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let p: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("parity-synthetic-dense.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(p["rows"].as_array().unwrap().len(), 1);
    assert_eq!(p["rows"][0]["params"], serde_json::json!({}));
    assert_eq!(p["vary"], serde_json::json!([]));
    // every process was reaped
    let left = processes_with(&fake.display().to_string());
    assert!(left.is_empty(), "processes left behind: {left:?}");
}
