//! What hopbench does when what it reads back from disk is damaged, or when it is killed: every
//! kind of file it reads back is flipped or truncated, and each damage must be detected (a
//! warning naming the file) and recovered from with the same numbers; a run killed with SIGKILL
//! at several points must resume to the bytes of a run that was never killed.

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::json;

use crate::util::{deterministic, edit_json, Env};

/// One selecting leg (so there is a budget curve to damage) and one that is not.
const CAMPAIGN: &str = r#"
model: model
budgets: [500, 2000]
stats: {resamples: 200, permutations: 200, seed: 3}
datasets:
  synthetic: {format: synthetic}
legs:
  bm25: {kind: bm25}
  dense: {kind: dense}
  packer: {kind: packer, budget: 2000}
"#;

const LEGS: [&str; 3] = ["bm25", "dense", "packer"];

fn env() -> Env {
    let env = Env::new();
    std::fs::write(env.path().join("campaign.yaml"), CAMPAIGN).unwrap();
    env
}

fn run_args(results: &str) -> Vec<String> {
    [
        "run-matrix",
        "--threads",
        "2",
        "--quiet",
        "--results",
        results,
    ]
    .map(String::from)
    .to_vec()
}

/// Everything a run writes that must not depend on how it got there: summaries and curves
/// without timing, run files and qrels byte for byte, curve rows byte for byte.
fn fingerprint(env: &Env, results: &str) -> Vec<(String, String)> {
    let root = env.results(results);
    let mut out = Vec::new();
    for leg in LEGS {
        out.push((
            format!("{leg} summary"),
            deterministic(env.summary(results, "synthetic", leg)),
        ));
        let run = std::fs::read(root.join(format!("runs/synthetic/{leg}.trec"))).unwrap();
        out.push((
            format!("{leg} run"),
            blake3::hash(&run).to_hex().to_string(),
        ));
    }
    let curve = root.join("curves/synthetic/packer.curve.json");
    let mut c: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&curve).unwrap()).unwrap();
    c.as_object_mut().unwrap().remove("timing");
    out.push(("packer curve".into(), c.to_string()));
    let rows = std::fs::read(root.join("curves/synthetic/packer.curve.parquet")).unwrap();
    out.push((
        "packer curve rows".into(),
        blake3::hash(&rows).to_hex().to_string(),
    ));
    out
}

fn flip_byte(path: &Path, at: usize) {
    let mut bytes = std::fs::read(path).unwrap();
    let i = at.min(bytes.len() - 1);
    bytes[i] ^= 0x55;
    std::fs::write(path, bytes).unwrap();
}

fn truncate_half(path: &Path) {
    let bytes = std::fs::read(path).unwrap();
    std::fs::write(path, &bytes[..bytes.len() / 2]).unwrap();
}

fn only_file_in(dir: &Path) -> PathBuf {
    let files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    assert_eq!(files.len(), 1, "{}: {files:?}", dir.display());
    files[0].clone()
}

/// Rewrites the hash the export manifest records for `file` to match its current bytes, so the
/// damage passes the hash check and only the loader can notice it.
fn rehash_in_manifest(export: &Path, file: &str) {
    let manifest = export.join("manifest.json");
    let mut m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&manifest).unwrap()).unwrap();
    let bytes = std::fs::read(export.join(file)).unwrap();
    m["files"][file] = serde_json::json!(blake3::hash(&bytes).to_hex().to_string());
    std::fs::write(&manifest, serde_json::to_string_pretty(&m).unwrap()).unwrap();
}

#[test]
fn every_damaged_file_read_back_is_detected_and_recovered_with_the_same_numbers() {
    let env = env();
    let args = run_args("r");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    env.ok(&args);
    let clean = fingerprint(&env, "r");
    let root = env.results("r");
    let cells = root.join("cells/synthetic");
    let curves = root.join("curves/synthetic");
    let export = root.join("exports/synthetic");
    let embeddings = root.join("embeddings");

    // (what, damage, what the run must say about it)
    type Damage<'a> = (&'a str, Box<dyn Fn() + 'a>, &'a str);
    let damages: Vec<Damage> = vec![
        (
            "summary truncated",
            Box::new(|| truncate_half(&cells.join("dense.summary.json"))),
            "dense.summary.json",
        ),
        (
            "records byte flipped",
            Box::new(|| flip_byte(&cells.join("dense.queries.parquet"), 200)),
            "dense.queries.parquet: not the records written with its summary",
        ),
        (
            "curve mean edited",
            Box::new(|| {
                edit_json(&curves.join("packer.curve.json"), false, |v| {
                    v["points"][0]["metrics"]["recall@10"] = serde_json::json!(0.123)
                })
            }),
            "packer.curve.json: a field outside `timing` is not what was written",
        ),
        (
            "curve mean edited, seal recomputed",
            Box::new(|| {
                edit_json(&curves.join("packer.curve.json"), true, |v| {
                    v["points"][0]["metrics"]["recall@10"] = serde_json::json!(0.123)
                })
            }),
            "metrics.recall@10 at budget 500 is not that of",
        ),
        (
            "curve rows truncated",
            Box::new(|| truncate_half(&curves.join("packer.curve.parquet"))),
            "packer.curve.parquet: not the rows written with",
        ),
        (
            "curve rows deleted",
            Box::new(|| std::fs::remove_file(curves.join("packer.curve.parquet")).unwrap()),
            "packer.curve.parquet: cannot read",
        ),
        (
            "export corpus byte flipped",
            Box::new(|| flip_byte(&export.join("corpus.parquet"), 300)),
            "synthetic: prepared",
        ),
        (
            "export file invalid but its hash rewritten",
            Box::new(|| {
                std::fs::write(export.join("bm25-stats.json"), "{}").unwrap();
                rehash_in_manifest(&export, "bm25-stats.json");
            }),
            "does not load",
        ),
        (
            "export manifest truncated",
            Box::new(|| truncate_half(&export.join("manifest.json"))),
            "synthetic: prepared",
        ),
        (
            "export directory replaced by a plain file",
            Box::new(|| {
                std::fs::remove_dir_all(&export).unwrap();
                std::fs::write(&export, "in the way").unwrap();
            }),
            "a file, not an export directory: set aside as",
        ),
    ];
    for (what, damage, says) in damages {
        damage();
        let out = env.ok(&args);
        assert!(out.contains(says), "{what}: expected {says:?} in:\n{out}");
        assert_eq!(fingerprint(&env, "r"), clean, "{what}: the same numbers");
    }

    // the embedding cache: a flipped vector byte is dropped with a warning, and the rebuilt
    // export (its vectors re-embedded) gives the same numbers
    let cache = only_file_in(&embeddings);
    let len = std::fs::metadata(&cache).unwrap().len() as usize;
    flip_byte(&cache, len / 2);
    std::fs::remove_dir_all(&export).unwrap();
    let out = env.ok(&args);
    assert!(
        out.contains("warning: embedding cache") && out.contains("dropped"),
        "embedding cache damage: {out}"
    );
    assert_eq!(
        fingerprint(&env, "r"),
        clean,
        "embedding cache: the same numbers"
    );

    // the cache file replaced by a directory: set aside like a damaged cache, its vectors
    // embedded again into a new file, the same numbers
    let cache = only_file_in(&embeddings);
    std::fs::remove_file(&cache).unwrap();
    std::fs::create_dir_all(cache.join("inside")).unwrap();
    std::fs::remove_dir_all(&export).unwrap();
    let out = env.ok(&args);
    assert!(
        out.contains("a directory, not a cache file: set aside as"),
        "cache replaced by a directory: {out}"
    );
    assert!(cache.is_file(), "a new cache file is written");
    assert!(
        cache
            .with_file_name(format!(
                "{}.set-aside",
                cache.file_name().unwrap().to_string_lossy()
            ))
            .join("inside")
            .is_dir(),
        "what was in the way is kept, beside it"
    );
    assert_eq!(
        fingerprint(&env, "r"),
        clean,
        "cache replaced by a directory: the same numbers"
    );
}

/// Every field of a cached summary or curve outside `timing` is checked, not only the means:
/// an edit to any of them makes the cell untrusted in `status` and in the report, and the next
/// run recomputes it to the same numbers.
#[test]
fn an_edit_to_any_field_of_a_cached_summary_or_curve_is_caught() {
    let env = env();
    let args = run_args("r");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    env.ok(&args);
    let clean = fingerprint(&env, "r");
    let root = env.results("r");
    let summary = root.join("cells/synthetic/dense.summary.json");
    let curve = root.join("curves/synthetic/packer.curve.json");
    type Edit<'a> = (&'a str, &'a Path, Box<dyn Fn(&mut serde_json::Value)>);
    let edits: Vec<Edit> = vec![
        (
            "a CI",
            &summary,
            Box::new(|v| v["metrics_ci95"]["recall@10"][0] = json!(0.0)),
        ),
        (
            "the tokens",
            &summary,
            Box::new(|v| v["tokens"]["selected_mean"] = json!(1.0)),
        ),
        (
            "a diagnostic",
            &summary,
            Box::new(|v| {
                let d = v["diagnostics"].as_object_mut().unwrap();
                let k = d.keys().next().cloned().unwrap_or_else(|| "added".into());
                d.insert(k, json!(1234.5));
            }),
        ),
        (
            "a defined count",
            &summary,
            Box::new(|v| v["metrics_defined"]["recall@10"] = json!(1)),
        ),
        (
            "queries_without_gold",
            &summary,
            Box::new(|v| v["queries_without_gold"] = json!(7)),
        ),
        (
            "the protocol",
            &summary,
            Box::new(|v| v["protocol"] = json!("text")),
        ),
        (
            "an added metric",
            &summary,
            Box::new(|v| v["metrics"]["recall@3"] = json!(0.5)),
        ),
        (
            "the reason",
            &summary,
            Box::new(|v| v["reason"] = json!("edited")),
        ),
        (
            "a curve's tokens",
            &curve,
            Box::new(|v| v["points"][0]["tokens_mean"] = json!(1.0)),
        ),
        (
            "a curve's CI",
            &curve,
            Box::new(|v| v["points"][1]["metrics_ci95"]["recall@10"][1] = json!(1.0)),
        ),
    ];
    for (what, path, edit) in &edits {
        edit_json(path, false, edit);
        let name = path.file_name().unwrap().to_string_lossy();
        let says = format!("{name}: a field outside `timing` is not what was written");
        if *path == summary.as_path() {
            let status = env.run(&["status", "--results", "r"]);
            let text = String::from_utf8_lossy(&status.stdout);
            assert!(
                !status.status.success() && text.contains(&says),
                "{what}: status: {text}"
            );
            let report = env.run(&["report", "--results", "r"]);
            let err = String::from_utf8_lossy(&report.stderr);
            assert!(
                err.contains("cell not trusted, left out") && err.contains(&says),
                "{what}: report: {err}"
            );
        }
        let out = env.ok(&args);
        assert!(
            out.contains("not trusted") && out.contains(&says),
            "{what}: {out}"
        );
        assert_eq!(fingerprint(&env, "r"), clean, "{what}: the same numbers");
    }

    // a cell whose status is edited away from `ok` (its key kept) still holds numbers, so it is
    // not taken for a cell without numbers
    for status in ["missing-inputs", "empty"] {
        edit_json(&summary, false, |v| v["status"] = json!(status));
        let says = format!("dense.summary.json: status `{status}` but it holds `queries`");
        let st = env.run(&["status", "--results", "r"]);
        let text = String::from_utf8_lossy(&st.stdout);
        assert!(
            !st.status.success() && text.contains(&says),
            "{status}: status: {text}"
        );
        let out = env.ok(&args);
        assert!(
            out.contains(&says) && out.contains("1 computed"),
            "{status}: {out}"
        );
        assert_eq!(fingerprint(&env, "r"), clean, "{status}: the same numbers");
    }
}

#[test]
fn a_run_killed_at_any_point_resumes_to_the_bytes_of_an_unkilled_run() {
    let env = env();
    let clean_args = run_args("clean");
    let clean_args: Vec<&str> = clean_args.iter().map(String::as_str).collect();
    let started = Instant::now();
    env.ok(&clean_args);
    let whole = started.elapsed();
    let clean = fingerprint(&env, "clean");
    // kill points spread over the run: during embedding/prepare, during cells, during curves
    for (i, fraction) in [0.1, 0.3, 0.5, 0.7, 0.9].into_iter().enumerate() {
        let name = format!("killed{i}");
        let args = run_args(&name);
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut child = env
            .command(&argv)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(whole.mul_f64(fraction));
        // SIGKILL: no destructor, no flush, no cleanup
        child.kill().unwrap();
        child.wait().unwrap();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let resumed = env.ok(&args);
        assert_eq!(
            fingerprint(&env, &name),
            clean,
            "killed at {:.0}% of the run, then resumed:\n{resumed}",
            fraction * 100.0
        );
        // nothing a dead writer left behind survives the resume
        let leftovers: Vec<String> = walk(&env.results(&name))
            .into_iter()
            .filter(|p| p.contains(".tmp-"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
    }
}

fn walk(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let p = e.path();
        out.push(p.display().to_string());
        if p.is_dir() {
            out.extend(walk(&p));
        }
    }
    out
}

/// A HotpotQA release file (no corpus file): question `q{i}` is gold-less when `gold[i]` is false.
fn hotpot(env: &Env, gold: &[bool]) {
    let records: Vec<serde_json::Value> = gold
        .iter()
        .enumerate()
        .map(|(i, &g)| {
            serde_json::json!({
                "_id": format!("q{i}"),
                "question": format!("where was queen {i} born"),
                "answer": "london",
                "supporting_facts": if g { serde_json::json!([[format!("Queen {i}"), 0]]) } else { serde_json::json!([]) },
                "context": [[format!("Queen {i}"), [format!("Queen {i} was born in London.")]],
                            ["City", ["London is a city."]]],
            })
        })
        .collect();
    std::fs::write(
        env.path().join("data/h.json"),
        serde_json::to_string(&records).unwrap(),
    )
    .unwrap();
    std::fs::write(
        env.path().join("campaign.yaml"),
        "model: model\nstats: {resamples: 200, permutations: 200, seed: 3}\ndatasets:\n  h:\n    format: hotpotqa\n    files: {questions: h.json}\nlegs:\n  bm25: {kind: bm25}\n",
    )
    .unwrap();
}

#[test]
fn queries_without_gold_are_counted_not_scored_and_a_cell_of_none_is_empty() {
    let env = Env::new();
    let args = [
        "run-matrix",
        "--threads",
        "1",
        "--quiet",
        "--data-dir",
        "data",
        "--datasets",
        "h",
    ];
    hotpot(&env, &[true, false, true]);
    let out = env.ok(&args);
    assert!(
        out.contains("2 queries evaluated; 1 queries without gold not evaluated"),
        "{out}"
    );
    let s = env.summary("results", "h", "bm25");
    assert_eq!(
        (s["status"].as_str(), s["queries"].as_u64()),
        (Some("ok"), Some(2)),
        "{s}"
    );
    assert_eq!(s["queries_without_gold"], 1, "{s}");
    // the qrels file trec_eval reads judges only the evaluated queries
    let qrels = std::fs::read_to_string(env.results("results").join("runs/h/qrels.txt")).unwrap();
    assert!(
        qrels.contains("q0 ") && !qrels.contains("q1 ") && qrels.contains("q2 "),
        "{qrels}"
    );

    hotpot(&env, &[false, false]);
    let out = env.ok(&args);
    let s = env.summary("results", "h", "bm25");
    assert_eq!(s["status"], "empty", "{s}");
    assert_eq!(
        (s["queries"].as_u64(), s["queries_without_gold"].as_u64()),
        (Some(0), Some(2))
    );
    assert!(s["reason"].as_str().unwrap().contains("has gold"), "{s}");
    assert_eq!(
        s["metrics"],
        serde_json::json!({}),
        "no numbers, never zeros: {s}"
    );
    assert!(out.contains("| h | bm25 | empty |"), "{out}");
}

#[test]
fn a_dataset_with_no_questions_is_an_error_naming_its_files_once() {
    // a BEIR set whose queries are judged only with score 0 has no gold at all; the reader
    // keeps none of them, so the dataset has no questions: an error naming the files
    let env = Env::new();
    let data = env.path().join("data/b");
    std::fs::create_dir_all(data.join("qrels")).unwrap();
    std::fs::write(
        data.join("corpus.jsonl"),
        "{\"_id\": \"d1\", \"title\": \"One\", \"text\": \"the queen was born in london\"}\n",
    )
    .unwrap();
    std::fs::write(
        data.join("queries.jsonl"),
        "{\"_id\": \"q1\", \"text\": \"where was the queen born\"}\n",
    )
    .unwrap();
    std::fs::write(
        data.join("qrels/test.tsv"),
        "query-id\tcorpus-id\tscore\nq1\td1\t0\n",
    )
    .unwrap();
    std::fs::write(
        env.path().join("campaign.yaml"),
        "model: model\nstats: {resamples: 200, permutations: 200, seed: 3}\ndatasets:\n  b:\n    format: beir\n    files: {corpus: b/corpus.jsonl, queries: b/queries.jsonl, qrels: b/qrels/test.tsv}\nlegs:\n  bm25: {kind: bm25}\n",
    )
    .unwrap();
    let out = env.run(&["prepare", "--datasets", "b", "--data-dir", "data"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("queries.jsonl") && err.contains("no questions"),
        "{err}"
    );
    // said once, not once per error in the chain
    assert_eq!(err.matches("no questions").count(), 1, "{err}");
}

#[test]
fn ci_off_is_the_only_way_to_no_intervals_and_it_turns_them_all_off() {
    let env = env();
    let campaign = CAMPAIGN.replace(
        "stats: {resamples: 200, permutations: 200, seed: 3}",
        "stats: {resamples: 0, permutations: 0, seed: 3}",
    );
    std::fs::write(env.path().join("campaign.yaml"), &campaign).unwrap();
    let refused = env.run(&["run-matrix", "--threads", "1", "--quiet"]);
    let err = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{err}");
    assert!(
        err.contains("stats.resamples") && err.contains("ci: off"),
        "{err}"
    );
    std::fs::write(
        env.path().join("campaign.yaml"),
        campaign.replace(
            "stats: {resamples: 0, permutations: 0, seed: 3}",
            "stats: {ci: off}",
        ),
    )
    .unwrap();
    env.ok(&[
        "run-matrix",
        "--threads",
        "1",
        "--quiet",
        "--legs",
        "bm25,packer",
    ]);
    let s = env.summary("results", "synthetic", "bm25");
    assert_eq!(s["status"], "ok");
    assert!(s["metrics"]["recall@10"].as_f64().is_some(), "{s}");
    assert_eq!(s["metrics_ci95"], serde_json::json!({}), "{s}");
    let c: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            env.results("results")
                .join("curves/synthetic/packer.curve.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(c["points"][0]["metrics_ci95"], serde_json::json!({}), "{c}");
    let cmp = env.ok(&["compare-legs", "--dataset", "synthetic", "bm25", "packer"]);
    let rows: Vec<&str> = cmp
        .lines()
        .filter(|l| l.starts_with("| synthetic"))
        .collect();
    assert!(!rows.is_empty(), "{cmp}");
    for row in rows {
        assert!(
            !row.contains('[') && row.ends_with("| — |"),
            "no interval, no p: {row}"
        );
    }
}

/// Two selecting legs, so a damaged curve leaves the other to draw the figure from.
const READ_CAMPAIGN: &str = r#"
model: model
budgets: [500, 2000]
stats: {resamples: 200, permutations: 200, seed: 3}
datasets:
  synthetic: {format: synthetic}
legs:
  bm25: {kind: bm25}
  dense: {kind: dense}
  packer: {kind: packer, budget: 2000}
  packer_small: {kind: packer, budget: 500}
"#;

/// `from` copied to `to` (which is replaced), file by file.
fn copy_dir(from: &Path, to: &Path) {
    if to.exists() {
        std::fs::remove_dir_all(to).unwrap();
    }
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let (src, dst) = (e.path(), to.join(e.file_name()));
        if src.is_dir() {
            copy_dir(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).unwrap();
        }
    }
}

/// `text` as the report writes it into a page.
fn html(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

/// What was damaged: a cell's file, or a budget curve's, of leg `.1`.
#[derive(Clone, Copy)]
enum Damaged<'a> {
    Cell(&'a str),
    Curve(&'a str),
}

/// Runs the read commands over results `r` (damaged) beside `clean` and checks what they say of
/// the damage: `report` and `compare` exit 3 (`compare-legs` too, for a cell), name the damaged
/// cell or curve with `says` on stderr and where it would have shown (a cell keeps its matrix
/// row, marked, and is listed on the matrix page and its dataset's page; a curve is listed on its
/// dataset's page and the figure is drawn from the others), and read everything else; the pages
/// are the same bytes when written again.
fn read_path_leaves_out(env: &Env, what: &str, damaged: Damaged, says: &str) {
    let text = |o: &std::process::Output| {
        String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr)
    };
    let report = env.run(&["report", "--results", "r"]);
    let out = text(&report);
    assert_eq!(report.status.code(), Some(3), "{what}: report: {out}");
    assert!(out.contains(says), "{what}: report names it: {out}");
    let pages = env.results("r").join("report");
    let read = |page: &str| std::fs::read_to_string(pages.join(page)).unwrap();
    let (index, dataset) = (read("index.html"), read("d-synthetic.html"));
    for leg in ["bm25", "packer", "packer_small"] {
        assert!(
            index.contains(&format!("data-leg=\"{leg}\" data-status=\"ok\"")),
            "{what}: {leg} is still reported"
        );
    }
    match damaged {
        Damaged::Cell(leg) => {
            assert!(out.contains("cell not trusted, left out"), "{what}: {out}");
            let row = format!("data-leg=\"{leg}\" data-status=\"not-trusted\"");
            let row = index
                .split(&row)
                .nth(1)
                .map(|r| &r[..r.find("</tr>").unwrap()]);
            assert!(
                row.is_some_and(
                    |r| r.contains("not trusted, left out: ") && r.contains(&html(says))
                ),
                "{what}: the matrix row stays, marked: {row:?}"
            );
            for (page, body) in [("index.html", &index), ("d-synthetic.html", &dataset)] {
                let listed = body.split("<section id=\"left-out\">").nth(1);
                assert!(
                    listed.is_some_and(|l| l.contains(&format!("<strong>{leg}</strong>: "))
                        && l.contains(&html(says))),
                    "{what}: {page} lists it with why"
                );
            }
            let cmp = env.run(&["compare", "clean", "r"]);
            let cmp_out = text(&cmp);
            assert_eq!(cmp.status.code(), Some(3), "{what}: compare: {cmp_out}");
            assert!(
                cmp_out.contains(&format!(
                    "| synthetic | {leg} | not comparable (B's cell is not trusted: "
                )) && cmp_out.contains(says)
                    && cmp_out.contains("| synthetic | bm25 | identical |"),
                "{what}: compare: {cmp_out}"
            );
            let legs = env.run(&[
                "compare-legs",
                "--results",
                "r",
                "--dataset",
                "synthetic",
                "bm25",
                leg,
            ]);
            let legs_out = text(&legs);
            assert_eq!(
                legs.status.code(),
                Some(3),
                "{what}: compare-legs: {legs_out}"
            );
            assert!(
                legs_out.contains("B's cell is not trusted: ") && legs_out.contains(says),
                "{what}: compare-legs: {legs_out}"
            );
        }
        Damaged::Curve(leg) => {
            assert!(
                out.contains(&format!(
                    "budget curve synthetic x {leg} not trusted, left out"
                )),
                "{what}: {out}"
            );
            assert!(
                !index.contains("id=\"left-out\""),
                "{what}: every cell is shown"
            );
            let curves = dataset.split("<section id=\"curves\">").nth(1).unwrap();
            let curves = &curves[..curves.find("</section>").unwrap()];
            assert!(
                curves.contains(&format!("<li>{leg}: ")) && curves.contains(&html(says)),
                "{what}: the page names the curve with why: {curves}"
            );
            assert!(
                curves.contains("img/synthetic.curves.svg")
                    && pages.join("img/synthetic.curves.svg").is_file(),
                "{what}: the figure is drawn from the curve that verifies"
            );
        }
    }
    // the same inputs, the same bytes
    let again = env.run(&["report", "--results", "r", "--out", "r/report-again"]);
    assert_eq!(again.status.code(), Some(3));
    for page in ["index.html", "d-synthetic.html"] {
        let second = std::fs::read_to_string(env.results("r/report-again").join(page)).unwrap();
        assert_eq!(read(page), second, "{what}: {page} is deterministic");
    }
}

/// A damaged cell (any field of its summary edited, the summary truncated, its records truncated,
/// two ranks of its run file swapped) or budget curve is left out by the read path, named where
/// it would have shown with the reason its verification gives, and the rest is read: see
/// [`read_path_leaves_out`].
#[test]
fn a_damaged_cell_or_curve_is_named_where_it_would_show_and_the_rest_is_read() {
    let env = Env::new();
    std::fs::write(env.path().join("campaign.yaml"), READ_CAMPAIGN).unwrap();
    let args = run_args("clean");
    env.ok(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let clean = env.results("clean");
    let report = env.run(&["report", "--results", "clean"]);
    assert_eq!(report.status.code(), Some(0), "nothing left out, exit 0");
    assert!(!std::fs::read_to_string(clean.join("report/index.html"))
        .unwrap()
        .contains("left-out"));

    let r = env.results("r");
    let summary = r.join("cells/synthetic/dense.summary.json");
    let curve = r.join("curves/synthetic/packer.curve.json");
    let edited = "dense.summary.json: a field outside `timing` is not what was written";
    let curve_edited = "packer.curve.json: a field outside `timing` is not what was written";
    type Case<'a> = (&'a str, Box<dyn Fn() + 'a>, Damaged<'a>, &'a str);
    let cell = Damaged::Cell("dense");
    let cases: Vec<Case> = vec![
        (
            "a mean edited",
            Box::new(|| {
                edit_json(&summary, false, |v| {
                    v["metrics"]["recall@10"] = json!(0.999)
                })
            }),
            cell,
            edited,
        ),
        (
            "a CI edited",
            Box::new(|| {
                edit_json(&summary, false, |v| {
                    v["metrics_ci95"]["recall@10"][0] = json!(0.0)
                })
            }),
            cell,
            edited,
        ),
        (
            "the tokens edited",
            Box::new(|| edit_json(&summary, false, |v| v["tokens"]["at_10_mean"] = json!(1.0))),
            cell,
            edited,
        ),
        (
            "a diagnostic edited",
            Box::new(|| {
                edit_json(&summary, false, |v| {
                    let d = v["diagnostics"].as_object_mut().unwrap();
                    let k = d.keys().next().cloned().unwrap_or_else(|| "added".into());
                    d.insert(k, json!(1234.5));
                })
            }),
            cell,
            edited,
        ),
        (
            "the status edited",
            Box::new(|| edit_json(&summary, false, |v| v["status"] = json!("missing-inputs"))),
            cell,
            "dense.summary.json: status `missing-inputs` but it holds `queries`",
        ),
        (
            "the records truncated",
            Box::new(|| truncate_half(&r.join("cells/synthetic/dense.queries.parquet"))),
            cell,
            "dense.queries.parquet: not the records written with its summary",
        ),
        (
            "two ranks swapped in the run file",
            Box::new(|| {
                let run = r.join("runs/synthetic/dense.trec");
                let text = std::fs::read_to_string(&run).unwrap();
                let mut lines: Vec<Vec<&str>> =
                    text.lines().map(|l| l.split(' ').collect()).collect();
                let (first, second) = (lines[0][2], lines[1][2]);
                (lines[0][2], lines[1][2]) = (second, first);
                let lines: Vec<String> = lines.iter().map(|l| l.join(" ")).collect();
                std::fs::write(&run, lines.join("\n") + "\n").unwrap();
            }),
            cell,
            "dense.trec: not the run file written with its summary",
        ),
        (
            "the summary truncated",
            Box::new(|| truncate_half(&summary)),
            cell,
            "dense.summary.json: not a hopbench cell summary",
        ),
        (
            "a curve mean edited",
            Box::new(|| {
                edit_json(&curve, false, |v| {
                    v["points"][0]["metrics"]["recall@10"] = json!(0.123)
                })
            }),
            Damaged::Curve("packer"),
            curve_edited,
        ),
        (
            "a curve's tokens_mean edited",
            Box::new(|| {
                edit_json(&curve, false, |v| {
                    v["points"][0]["tokens_mean"] = json!(1.0)
                })
            }),
            Damaged::Curve("packer"),
            curve_edited,
        ),
        (
            "a curve mean edited, its seal recomputed",
            Box::new(|| {
                edit_json(&curve, true, |v| {
                    v["points"][0]["metrics"]["recall@10"] = json!(0.123)
                })
            }),
            Damaged::Curve("packer"),
            "metrics.recall@10 at budget 500 is not that of",
        ),
    ];
    for (what, damage, damaged, says) in cases {
        copy_dir(&clean, &r);
        damage();
        read_path_leaves_out(&env, what, damaged, says);
    }

    // a run of other legs leaves a damaged cell outside its selection alone, and the matrix it
    // writes keeps the cell's row, marked, with the reason below the table; the run exits 0
    copy_dir(&clean, &r);
    truncate_half(&summary);
    let run = [
        &run_args("r")[..],
        &["--legs".to_string(), "bm25".to_string()],
    ]
    .concat();
    let out = env.ok(&run.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(out.contains("cell not trusted, left out"), "{out}");
    let md = std::fs::read_to_string(r.join("matrix.md")).unwrap();
    assert!(
        md.contains("| synthetic | dense | not trusted | — |")
            && md.contains("| synthetic | bm25 | ok |")
            && md.contains("Cells left out, not trusted")
            && md.contains(
                "- synthetic x dense: r/cells/synthetic/dense.summary.json: not a hopbench cell \
                 summary"
            ),
        "{md}"
    );
    let index = std::fs::read_to_string(r.join("report/index.html")).unwrap();
    assert!(index.contains("data-leg=\"dense\" data-status=\"not-trusted\""));
}
