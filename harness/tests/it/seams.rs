//! The seams stay seams: the harness asks a registered leg kind or engine what it is (its role,
//! its parameters, its cache inputs, whether it is built) instead of naming it, and Qdrant's
//! build feature is named only in the Qdrant engine's own files. Both are read from the source
//! tree, outside test code, so a change that breaks either fails here with the line to mend.

use std::path::{Path, PathBuf};

use hopbench_legs::engine::ENGINES;
use hopbench_legs::kinds::KINDS;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The `.rs` files below `dir` (relative to the workspace), sorted.
fn rust_files(dir: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root().join(dir)];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let p = e.expect("a directory entry").path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The lines of a file that are not test code, with their numbers: a `#[cfg(test)]` or
/// `#[cfg(all(test, ...))]` item (a module or a function) is skipped to its closing brace, a
/// file under a `tests` folder or named `tests.rs` is all test code, and comments are dropped.
fn code_lines(path: &Path) -> Vec<(usize, String)> {
    if path.components().any(|c| c.as_os_str() == "tests")
        || path.file_name().is_some_and(|n| n == "tests.rs")
    {
        return Vec::new();
    }
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut out = Vec::new();
    let mut skipping = false;
    let mut depth = 0i64;
    let mut opened = false;
    for (i, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("").trim();
        if !skipping && (code.starts_with("#[cfg(test)]") || code.starts_with("#[cfg(all(test")) {
            (skipping, depth, opened) = (true, 0, false);
            continue;
        }
        if skipping {
            depth += code.matches('{').count() as i64 - code.matches('}').count() as i64;
            opened |= code.contains('{');
            if (opened && depth <= 0) || (!opened && code.ends_with(';')) {
                skipping = false;
            }
            continue;
        }
        if !code.is_empty() {
            out.push((i + 1, code.to_string()));
        }
    }
    out
}

/// The double-quoted string literals of a line of code.
fn literals(code: &str) -> Vec<&str> {
    code.split('"').skip(1).step_by(2).collect()
}

#[test]
fn the_harness_names_no_leg_kind_and_no_engine() {
    let names: Vec<&str> = KINDS
        .iter()
        .map(|k| k.name)
        .chain(ENGINES.iter().map(|e| e.name))
        .collect();
    // A command's default campaign *leg* (a name in campaign.yaml, which the user can change),
    // not a kind; and the run file's own name in a message about a run file.
    let allowed = [
        (
            "commands/bench/assembly.rs",
            "default_value = \"multi_horizon\"",
        ),
        (
            "commands/serving_parity.rs",
            "default_value = \"graph_rescue\"",
        ),
        ("analysis/eval.rs", "DataError::malformed(run, \"run\""),
    ];
    let mut found = Vec::new();
    for path in rust_files("harness/src") {
        let rel = path.strip_prefix(root().join("harness/src")).unwrap();
        let rel = rel.to_string_lossy().replace('\\', "/");
        for (n, code) in code_lines(&path) {
            let named: Vec<&str> = literals(&code)
                .into_iter()
                .filter(|l| names.contains(l))
                .collect();
            if named.is_empty() || allowed.iter().any(|(f, s)| rel == *f && code.contains(s)) {
                continue;
            }
            found.push(format!("harness/src/{rel}:{n}: {code}"));
        }
    }
    assert!(
        found.is_empty(),
        "the harness names a leg kind or an engine; ask the registered item instead \
         (hopbench_legs::kinds::KINDS, hopbench_legs::engine::ENGINES):\n{}",
        found.join("\n")
    );
}

#[test]
fn only_the_qdrant_engines_files_name_its_build_feature() {
    // the shard (datasets) and the engine (legs); Cargo.toml files are not Rust
    let owners = ["datasets/src/hnsw/", "legs/src/engine/qdrant"];
    let mut found = Vec::new();
    for crate_dir in ["datasets/src", "legs/src", "harness/src"] {
        for path in rust_files(crate_dir) {
            let rel = path
                .strip_prefix(root())
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            if owners.iter().any(|o| rel.starts_with(o)) {
                continue;
            }
            for (n, code) in code_lines(&path) {
                if code.contains("feature = \"qdrant\"") {
                    found.push(format!("{rel}:{n}: {code}"));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "the `qdrant` feature is named outside the Qdrant engine's files; ask \
         hopbench_datasets::hnsw::BUILT or the engine's EngineKind::BUILT instead:\n{}",
        found.join("\n")
    );
}

/// The scanner itself: test items are skipped, code after them is read.
#[test]
fn the_scanner_skips_test_items_and_reads_the_rest() {
    let tmp = tempfile::tempdir().unwrap();
    let f = tmp.path().join("x.rs");
    std::fs::write(
        &f,
        "fn a() { let k = \"dense\"; }\n#[cfg(test)]\nmod tests {\n    fn b() { \"qdrant\" }\n}\n\
         #[cfg(all(test, feature = \"qdrant\"))]\n#[test]\nfn c() {\n}\nfn d() { \"bm25\" } // \"run\"\n",
    )
    .unwrap();
    let lines = code_lines(&f);
    let lits: Vec<(usize, Vec<&str>)> = lines.iter().map(|(n, c)| (*n, literals(c))).collect();
    assert_eq!(
        lits,
        vec![(1, vec!["dense"]), (10, vec!["bm25"])],
        "{lines:?}"
    );
}
