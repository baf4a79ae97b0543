//! Test helpers: a temp workspace with a tiny model and a campaign, and a way to run the binary.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub struct Env {
    pub dir: tempfile::TempDir,
}

pub const CAMPAIGN: &str = r#"
results: results
model: model
recall_k: [1, 2, 5, 10, 20]
stats: {resamples: 200, permutations: 500, seed: 7}
datasets:
  synthetic:
    format: synthetic
  absent:
    format: musique
    files: {questions: nowhere/musique_train.json, corpus: nowhere/musique_corpus.json}
legs:
  dense: {kind: dense, pool_k: 50}
  dense_content_only: {kind: dense_content_only}
  lexical: {kind: lexical}
  bm25: {kind: bm25}
"#;

impl Env {
    pub fn new() -> Env {
        let dir = tempfile::tempdir().expect("tempdir");
        hopbench_datasets::embed::write_tiny_model(&dir.path().join("model"), 11)
            .expect("tiny model");
        std::fs::write(dir.path().join("campaign.yaml"), CAMPAIGN).expect("campaign");
        std::fs::create_dir_all(dir.path().join("data")).expect("data dir");
        Env { dir }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn results(&self, name: &str) -> PathBuf {
        self.path().join(name)
    }

    /// `hopbench args...` to run in the temp dir, without inheriting HOPBENCH_* variables (or
    /// to spawn, for tests of processes running at once).
    pub fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_hopbench"));
        c.args(args)
            .current_dir(self.path())
            .env_remove("HOPBENCH_DATA")
            .env_remove("HOPBENCH_MODEL_DIR")
            .env_remove("RAYON_NUM_THREADS");
        c
    }

    /// Runs `hopbench args...` in the temp dir, without inheriting HOPBENCH_* variables.
    pub fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().expect("run hopbench")
    }

    /// The stdout of a successful `hopbench args...` (stderr only in the failure message).
    pub fn stdout(&self, args: &[&str]) -> String {
        let out = self.run(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "hopbench {args:?} failed:\n{stderr}");
        String::from_utf8_lossy(&out.stdout).to_string()
    }

    /// Filters for snapshots (regex, replacement), as uv's `INSTA_FILTERS`: they hide what
    /// changes from run to run and machine to machine, the temp directory and the timings.
    pub fn filters(&self) -> Vec<(String, &'static str)> {
        vec![
            (regex_escape(&self.path().display().to_string()), "[TEMP]"),
            // the matrix table's last two columns: median and p95 latency
            (
                r"(?m)\| \d+\.\d{3} \| \d+\.\d{3} \|$".to_string(),
                "| [MS] | [MS] |",
            ),
            // wall time in run-matrix's closing line
            (r"; \d+\.\d{2} s;".to_string(), "; [TIME] s;"),
        ]
    }

    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "hopbench {args:?} failed:\n{stderr}");
        String::from_utf8_lossy(&out.stdout).to_string() + &stderr
    }

    pub fn summary(&self, results: &str, dataset: &str, leg: &str) -> serde_json::Value {
        let p = self
            .results(results)
            .join("cells")
            .join(dataset)
            .join(format!("{leg}.summary.json"));
        serde_json::from_str(
            &std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display())),
        )
        .expect("summary json")
    }
}

/// A summary with its timing removed, as canonical text.
pub fn deterministic(mut v: serde_json::Value) -> String {
    v.as_object_mut().unwrap().remove("timing");
    serde_json::to_string_pretty(&v).unwrap()
}

/// Edits the summary or curve at `path` with `edit`, writing it back as hopbench writes it;
/// with `reseal` its seal is recomputed too (what a tool that knows the format could do), so
/// only the checks against the records or rows can notice the edit.
pub fn edit_json(path: &std::path::Path, reseal: bool, edit: impl FnOnce(&mut serde_json::Value)) {
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    edit(&mut v);
    let mut text = serde_json::to_string_pretty(&v).unwrap() + "\n";
    if reseal {
        v["timing"]["seal"] = hopbench::store::seal::of(&text).unwrap().into();
        text = serde_json::to_string_pretty(&v).unwrap() + "\n";
    }
    std::fs::write(path, text).unwrap();
}

/// `text` as a regex that matches it literally.
fn regex_escape(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if r"\.+*?()|[]{}^$#&-~".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// An inline insta snapshot of `value` with the filters of `env` applied (uv's `uv_snapshot!`).
macro_rules! snapshot {
    ($env:expr, $value:expr, @$snapshot:literal) => {{
        let mut settings = insta::Settings::clone_current();
        for (regex, with) in $env.filters() {
            settings.add_filter(&regex, with);
        }
        settings.bind(|| insta::assert_snapshot!($value, @$snapshot));
    }};
}
