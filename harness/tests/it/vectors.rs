//! A dataset that brings its own vectors (`vectors:`), end to end: vectors equal to the built-in
//! embedder's give the built-in path's rankings byte for byte, without the model; the sets the
//! files do not bring make their legs `missing-inputs`; every bad file is an error naming the
//! file and the row or field, and leaves no export behind; a changed file rebuilds the export.

use std::path::Path;

use hopbench_datasets::parquet_io::{self as pq, Table};
use serde_json::Value;

use crate::util::{Env, CAMPAIGN};

/// The test campaign plus `mine`: the generated dataset again, with vectors from `data/v/`
/// (`extra` is added inside its `vectors:` group).
fn campaign(env: &Env, extra: &str) {
    let mut text = CAMPAIGN.replace(
        "legs:\n",
        &format!(
            "  mine:\n    format: synthetic\n    vectors:\n      model: my-org/tiny-copy@v1\n      \
             passages: v/passages.parquet\n      queries: v/queries.npy\n{extra}legs:\n"
        ),
    );
    text.push_str("  cdr_task: {kind: cdr_task}\n");
    std::fs::write(env.path().join("campaign.yaml"), text).unwrap();
}

/// (ids, row-major vectors, dim) of an export's parquet file.
fn read_export(path: &Path, id: &str, column: &str, dim: usize) -> (Vec<String>, Vec<f32>) {
    let t = Table::read(path).unwrap();
    let c = t.columns();
    (c.strings(id).unwrap(), c.vectors(column, dim).unwrap())
}

/// A `.npy` (v1, `<f4`, C order) of `flat` as `rows x dim`, and its `.ids.txt`.
fn write_npy(path: &Path, ids: &[String], flat: &[f32], dim: usize) {
    let mut header = format!(
        "{{'descr': '<f4', 'fortran_order': False, 'shape': ({}, {dim}), }}",
        ids.len()
    );
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend((header.len() as u16).to_le_bytes());
    bytes.extend(header.as_bytes());
    for x in flat {
        bytes.extend(x.to_le_bytes());
    }
    std::fs::write(path, bytes).unwrap();
    std::fs::write(path.with_extension("ids.txt"), ids.join("\n") + "\n").unwrap();
}

fn write_parquet(path: &Path, ids: &[String], flat: &[f32], dim: usize) {
    pq::write(
        path,
        vec![("id", pq::strings(ids)), ("vector", pq::vectors(flat, dim))],
    )
    .unwrap();
}

/// The built-in export of `synthetic` (prepared with the tiny model), written back as `mine`'s
/// vectors files: passages as `id`/`vector` parquet, queries as `.npy`.
struct Vectors {
    dim: usize,
    passages: (Vec<String>, Vec<f32>),
    queries: (Vec<String>, Vec<f32>),
}

fn export_builtin(env: &Env) -> Vectors {
    env.ok(&["prepare", "--datasets", "synthetic", "--quiet"]);
    let export = env.results("results").join("exports/synthetic");
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(export.join("manifest.json")).unwrap())
            .unwrap();
    let dim = manifest["dim"].as_u64().unwrap() as usize;
    let v = Vectors {
        dim,
        passages: read_export(&export.join("corpus.parquet"), "chunk_id", "embedding", dim),
        queries: read_export(
            &export.join("queries.parquet"),
            "query_id",
            "embedding",
            dim,
        ),
    };
    std::fs::create_dir_all(env.path().join("data/v")).unwrap();
    v.write(env);
    // the export's own corpus file, as the content-only set in the export layout
    std::fs::copy(
        export.join("corpus.parquet"),
        env.path().join("data/v/corpus.parquet"),
    )
    .unwrap();
    v
}

impl Vectors {
    fn write(&self, env: &Env) {
        let v = env.path().join("data/v");
        write_parquet(
            &v.join("passages.parquet"),
            &self.passages.0,
            &self.passages.1,
            self.dim,
        );
        write_npy(
            &v.join("queries.npy"),
            &self.queries.0,
            &self.queries.1,
            self.dim,
        );
    }
}

/// `legs` on the built-in `synthetic` dataset, with the built-in embedder, into `results/`.
fn builtin_run(legs: &str) -> Vec<&str> {
    vec![
        "run-matrix",
        "--threads",
        "2",
        "--quiet",
        "--no-curves",
        "--no-report",
        "--datasets",
        "synthetic",
        "--legs",
        legs,
    ]
}

fn run_matrix<'a>(results: &'a str, legs: &'a str) -> Vec<&'a str> {
    vec![
        "run-matrix",
        "--threads",
        "2",
        "--quiet",
        "--no-curves",
        "--no-report",
        "--data-dir",
        "data",
        "--results",
        results,
        "--legs",
        legs,
        "--datasets",
        "mine",
        // no model is needed: every vector comes from the files
        "--model",
        "nowhere",
    ]
}

fn numbers(s: &Value) -> Value {
    let mut out = serde_json::Map::new();
    for key in ["status", "queries", "metrics", "metrics_ci95", "tokens"] {
        out.insert(key.into(), s[key].clone());
    }
    Value::Object(out)
}

#[test]
fn the_built_in_vectors_brought_back_give_the_built_in_rankings_without_the_model() {
    let env = Env::new();
    campaign(&env, "");
    let v = export_builtin(&env);
    // the built-in cell, then `mine` in a results directory of its own with no model at all
    env.ok(&builtin_run("dense"));
    env.ok(&run_matrix("r2", "dense,dense_content_only,cdr_task"));
    let runs = |r: &str, d: &str| {
        std::fs::read_to_string(env.results(r).join(format!("runs/{d}/dense.trec"))).unwrap()
    };
    let builtin = runs("results", "synthetic");
    assert!(builtin.lines().count() > 100, "{builtin}");
    assert_eq!(
        runs("r2", "mine"),
        builtin,
        "the same vectors rank the same"
    );
    let a = env.summary("results", "synthetic", "dense");
    let b = env.summary("r2", "mine", "dense");
    assert_eq!(numbers(&a), numbers(&b));
    assert_eq!(b["inputs"]["model_id"], "my-org/tiny-copy@v1");
    // the export records the declared model and the files
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(env.results("r2").join("exports/mine/manifest.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(manifest["model_id"], "my-org/tiny-copy@v1");
    assert_eq!(manifest["vectors"]["model"], "my-org/tiny-copy@v1");
    assert_eq!(
        manifest["vectors"]["absent"],
        serde_json::json!(["content", "subqueries"])
    );
    // sets the files do not bring: their legs are missing-inputs, saying which file is lacking
    for (leg, file) in [
        ("dense_content_only", "vectors.content"),
        ("cdr_task", "vectors.subqueries"),
    ] {
        let s = env.summary("r2", "mine", leg);
        assert_eq!(s["status"], "missing-inputs", "{s}");
        let reason = s["reason"].as_str().unwrap();
        assert!(reason.contains(file), "{reason}");
    }

    // the content-only set in the export's own layout: the content-only leg ranks as built in
    campaign(&env, "      content: v/corpus.parquet\n");
    env.ok(&builtin_run("dense_content_only"));
    env.ok(&run_matrix("r2", "dense_content_only"));
    let content = |r: &str, d: &str| {
        std::fs::read_to_string(
            env.results(r)
                .join(format!("runs/{d}/dense_content_only.trec")),
        )
        .unwrap()
    };
    assert_eq!(content("r2", "mine"), content("results", "synthetic"));

    // a changed file is another export: the same vectors in another row order rebuild it
    let before = manifest["input_key"].clone();
    let mut rows: Vec<usize> = (0..v.passages.0.len()).collect();
    rows.reverse();
    let ids: Vec<String> = rows.iter().map(|&i| v.passages.0[i].clone()).collect();
    let flat: Vec<f32> = rows
        .iter()
        .flat_map(|&i| v.passages.1[i * v.dim..(i + 1) * v.dim].to_vec())
        .collect();
    write_parquet(
        &env.path().join("data/v/passages.parquet"),
        &ids,
        &flat,
        v.dim,
    );
    let out = env.ok(&[
        "prepare",
        "--datasets",
        "mine",
        "--quiet",
        "--data-dir",
        "data",
        "--results",
        "r2",
    ]);
    assert!(out.contains("mine: prepared"), "{out}");
    let after: Value = serde_json::from_str(
        &std::fs::read_to_string(env.results("r2").join("exports/mine/manifest.json")).unwrap(),
    )
    .unwrap();
    assert_ne!(after["input_key"], before);
}

/// `prepare mine` over the vectors as `edit` leaves them: its stderr, after checking it failed
/// and left no export.
fn prepare_error(env: &Env, v: &Vectors, edit: impl FnOnce(&mut Vectors)) -> String {
    let mut v = Vectors {
        dim: v.dim,
        passages: v.passages.clone(),
        queries: v.queries.clone(),
    };
    edit(&mut v);
    v.write(env);
    let out = env.run(&[
        "prepare",
        "--datasets",
        "mine",
        "--quiet",
        "--data-dir",
        "data",
        "--results",
        "bad",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!out.status.success(), "{stderr}");
    assert!(
        !env.results("bad").join("exports/mine").exists(),
        "nothing half-written"
    );
    stderr
}

#[test]
fn bad_vectors_are_errors_naming_the_file_and_the_row_or_field() {
    let env = Env::new();
    campaign(&env, "");
    let v = export_builtin(&env);
    let dim = v.dim;
    let first = v.passages.0[0].clone();

    let e = prepare_error(&env, &v, |v| {
        v.passages.0.remove(3);
        v.passages.1.drain(3 * dim..4 * dim);
    });
    assert!(
        e.contains("passages.parquet")
            && e.contains("1 of the dataset's")
            && e.contains(&format!("`{}`", v.passages.0[3])),
        "{e}"
    );

    let e = prepare_error(&env, &v, |v| {
        v.queries.0[1] = v.queries.0[0].clone();
    });
    assert!(
        e.contains("queries.npy") && e.contains("row 1") && e.contains("duplicate id"),
        "{e}"
    );

    let e = prepare_error(&env, &v, |v| {
        v.passages.0.push("no-such-passage".into());
        let row = v.passages.1[..dim].to_vec();
        v.passages.1.extend(row);
    });
    assert!(
        e.contains("passages.parquet") && e.contains("`no-such-passage` is not one of"),
        "{e}"
    );

    let e = prepare_error(&env, &v, |v| v.passages.1[2 * dim + 5] = f32::NAN);
    assert!(
        e.contains("passages.parquet")
            && e.contains("row 2")
            && e.contains("column 5")
            && e.contains("not finite"),
        "{e}"
    );

    let e = prepare_error(&env, &v, |v| {
        for x in &mut v.passages.1[..dim] {
            *x *= 2.0;
        }
    });
    assert!(
        e.contains("passages.parquet")
            && e.contains("row 0")
            && e.contains(&format!("id `{first}`"))
            && e.contains("L2 norm 2.0000"),
        "{e}"
    );

    // queries of another width than the passages
    let n = v.queries.0.len();
    let narrow: Vec<f32> = (0..n)
        .flat_map(|i| {
            let mut r = vec![0.0; dim - 1];
            r[i % (dim - 1)] = 1.0;
            r
        })
        .collect();
    v.write(&env);
    write_npy(
        &env.path().join("data/v/queries.npy"),
        &v.queries.0,
        &narrow,
        dim - 1,
    );
    let out = env.run(&[
        "prepare",
        "--datasets",
        "mine",
        "--quiet",
        "--data-dir",
        "data",
        "--results",
        "bad",
    ]);
    let e = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!out.status.success());
    assert!(
        e.contains("queries.npy") && e.contains(&format!("{}", dim - 1)) && e.contains("vector"),
        "{e}"
    );
    assert!(!env.results("bad").join("exports/mine").exists());

    // an unknown key of the `vectors:` group, and a file of no known kind
    campaign(&env, "      colour: blue\n");
    let out = env.run(&["datasets"]);
    let e = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!out.status.success() && e.contains("colour"), "{e}");
    campaign(&env, "      content: v/content.csv\n");
    let out = env.run(&["datasets"]);
    let e = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(
        !out.status.success() && e.contains("vectors.content") && e.contains("content.csv"),
        "{e}"
    );
    // an absent file makes the dataset missing, naming it
    campaign(&env, "      subqueries: v/nowhere.parquet\n");
    let out = env.ok(&["datasets", "--data-dir", "data"]);
    assert!(out.contains("nowhere.parquet"), "{out}");

    // but a path that is there and is not a file is a mistake, not an absence: a directory
    // where a vectors file goes, and a `.npy` whose ids file is gone
    campaign(&env, "");
    v.write(&env);
    std::fs::create_dir_all(env.path().join("data/v/sub.parquet")).unwrap();
    campaign(&env, "      subqueries: v/sub.parquet\n");
    for args in [
        &["datasets", "--data-dir", "data"][..],
        &[
            "prepare",
            "--datasets",
            "mine",
            "--quiet",
            "--data-dir",
            "data",
            "--results",
            "bad",
        ],
    ] {
        let out = env.run(args);
        let e = String::from_utf8_lossy(&out.stderr).to_string();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {e}");
        assert!(
            e.contains("sub.parquet") && e.contains("is a directory"),
            "{e}"
        );
    }
    campaign(&env, "");
    std::fs::remove_file(env.path().join("data/v/queries.ids.txt")).unwrap();
    let out = env.run(&[
        "prepare",
        "--datasets",
        "mine",
        "--quiet",
        "--data-dir",
        "data",
        "--results",
        "bad",
    ]);
    let e = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(2), "{e}");
    assert!(
        e.contains("queries.ids.txt") && e.contains("absent, while its vectors file"),
        "{e}"
    );
    assert!(!env.results("bad").join("exports/mine").exists());
}
