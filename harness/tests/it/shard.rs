//! A sharded run (`prepare --shard`, `run-matrix --shard`, the parts running at once, in any
//! order) merges to the bytes of an unsharded one; `status` says what is left.

use std::process::{Child, Stdio};

use crate::util::{deterministic, Env};

const CAMPAIGN: &str = r#"
model: model
budgets: [500, 2000]
stats: {resamples: 200, permutations: 200, seed: 3}
datasets:
  synthetic: {format: synthetic}
  dialogues: {format: dialogues, derive_from: synthetic}
legs:
  bm25: {kind: bm25}
  dense: {kind: dense}
  packer: {kind: packer, budget: 2000}
  graph_rescue: {kind: graph_rescue}
"#;

const CELLS: [(&str, &str); 8] = [
    ("synthetic", "bm25"),
    ("synthetic", "dense"),
    ("synthetic", "packer"),
    ("synthetic", "graph_rescue"),
    ("dialogues", "bm25"),
    ("dialogues", "dense"),
    ("dialogues", "packer"),
    ("dialogues", "graph_rescue"),
];

fn spawn(env: &Env, args: &[&str]) -> Child {
    env.command(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn all_succeed(children: Vec<Child>, what: &str) -> String {
    let mut logs = String::new();
    for c in children {
        let out = c.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{what}: {err}");
        logs += &String::from_utf8_lossy(&out.stdout);
        logs += &err;
    }
    logs
}

fn fingerprint(env: &Env, results: &str) -> Vec<String> {
    let root = env.results(results);
    let mut out = Vec::new();
    for (d, l) in CELLS {
        out.push(deterministic(env.summary(results, d, l)));
        out.push(std::fs::read_to_string(root.join(format!("runs/{d}/{l}.trec"))).unwrap());
    }
    out.push(std::fs::read_to_string(root.join("runs/synthetic/qrels.txt")).unwrap());
    out
}

#[test]
fn parts_run_side_by_side_and_merge_to_the_bytes_of_one_run() {
    let env = Env::new();
    std::fs::write(env.path().join("campaign.yaml"), CAMPAIGN).unwrap();
    env.ok(&[
        "run-matrix",
        "--threads",
        "2",
        "--quiet",
        "--results",
        "local",
    ]);
    let local = fingerprint(&env, "local");

    // nothing yet: every cell is missing, and status says so with exit 1
    let st = env.run(&["status", "--results", "sharded"]);
    let text = String::from_utf8_lossy(&st.stdout);
    assert_eq!(st.status.code(), Some(1), "{text}");
    assert!(text.contains("8 cells: 0 done, 8 to run"), "{text}");

    // three embedding parts at once, then three cell parts at once (1 thread each)
    let n = 3;
    let embed: Vec<Child> = (0..n)
        .map(|i| {
            let shard = format!("{i}/{n}");
            spawn(
                &env,
                &[
                    "prepare",
                    "--quiet",
                    "--results",
                    "sharded",
                    "--shard",
                    &shard,
                ],
            )
        })
        .collect();
    let logs = all_succeed(embed, "prepare --shard");
    assert!(
        logs.contains("part 0/3") && logs.contains("embedded now"),
        "{logs}"
    );
    assert!(
        !env.results("sharded").join("exports/synthetic").exists(),
        "no export written"
    );
    // the parts start in reverse order; a part rerun later (any task may run twice) is cached
    let cells: Vec<Child> = (0..n)
        .rev()
        .map(|i| {
            let shard = format!("{i}/{n}");
            spawn(
                &env,
                &[
                    "run-matrix",
                    "--threads",
                    "1",
                    "--quiet",
                    "--results",
                    "sharded",
                    "--shard",
                    &shard,
                ],
            )
        })
        .collect();
    let logs = all_succeed(cells, "run-matrix --shard");
    assert!(logs.contains("part 2/3: 2 cells of the plan"), "{logs}");
    assert!(
        !env.results("sharded").join("matrix.md").exists(),
        "parts write no matrix"
    );
    // every part embedded nothing for the exports: the embedding parts had it all
    assert!(!logs.contains("embed synthetic passages"), "{logs}");
    let again = env.ok(&[
        "run-matrix",
        "--threads",
        "1",
        "--quiet",
        "--results",
        "sharded",
        "--shard",
        "1/3",
    ]);
    assert!(again.contains("0 computed, 3 cached"), "{again}");

    // the collect step finds every cell cached and writes the matrix
    let collect = env.ok(&[
        "run-matrix",
        "--threads",
        "2",
        "--quiet",
        "--results",
        "sharded",
    ]);
    assert!(
        collect.contains("8 cells: 0 computed, 8 cached"),
        "{collect}"
    );
    assert!(env.results("sharded").join("matrix.md").exists());
    assert_eq!(
        fingerprint(&env, "sharded"),
        local,
        "sharded = unsharded, byte for byte"
    );
    let st = env.ok(&["status", "--results", "sharded"]);
    assert!(st.contains("8 cells: 8 done, 0 to run"), "{st}");
}

#[test]
fn status_names_stale_and_failed_cells() {
    let env = Env::new();
    std::fs::write(env.path().join("campaign.yaml"), CAMPAIGN).unwrap();
    env.ok(&[
        "run-matrix",
        "--threads",
        "1",
        "--quiet",
        "--datasets",
        "synthetic",
        "--no-curves",
    ]);
    let results = env.results("results");
    // a failed attempt's error, and a summary whose records were damaged
    std::fs::create_dir_all(results.join("cells/dialogues")).unwrap();
    std::fs::write(
        results.join("cells/dialogues/bm25.failed.txt"),
        "cell dialogues x bm25: out of luck\n",
    )
    .unwrap();
    std::fs::write(
        results.join("cells/synthetic/dense.queries.parquet"),
        b"garbage",
    )
    .unwrap();
    let out = env.run(&["status", "--datasets", "synthetic,dialogues"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("| synthetic | bm25 | done | ok |"), "{text}");
    assert!(text.contains("| synthetic | dense | stale |"), "{text}");
    assert!(
        text.contains("| dialogues | bm25 | failed | cell dialogues x bm25: out of luck |"),
        "{text}"
    );
    assert!(text.contains("| dialogues | dense | missing |"), "{text}");
    // --cells runs exactly those
    let run = env.ok(&[
        "run-matrix",
        "--threads",
        "1",
        "--quiet",
        "--no-curves",
        "--datasets",
        "synthetic,dialogues",
        "--cells",
        "synthetic/dense,dialogues/bm25",
    ]);
    assert!(run.contains("2 cells: 2 computed"), "{run}");
    // a cell outside the selection is an error naming it, not a run of nothing
    for (flag, value, cell, says) in [
        (
            "--legs",
            "bm25",
            "synthetic/dense",
            "leg `dense` is not among the selected legs",
        ),
        (
            "--datasets",
            "synthetic",
            "dialogues/bm25",
            "dataset `dialogues` is not among",
        ),
    ] {
        let out = env.run(&[
            "run-matrix",
            "--threads",
            "1",
            "--quiet",
            flag,
            value,
            "--cells",
            cell,
        ]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{cell}: {err}");
        assert!(err.contains(says) && err.contains(cell), "{cell}: {err}");
    }
    assert!(
        !results.join("cells/dialogues/bm25.failed.txt").exists(),
        "a success clears it"
    );
}
