//! The embedder against sentence-transformers itself: vectors that
//! `SentenceTransformer.encode` computed once (`scripts/st_goldens.py`, committed with its
//! outputs in `datasets/tests/fixtures/st/`), so these tests need no torch.
//!
//! - `goldens.json`: tiny seeded encoders of each architecture (BERT, MPNet, XLM-RoBERTa), each
//!   case a sentence-transformers directory made by writing the case's files over a copy of its
//!   base: every pooling mode, several at once, prompts and `include_prompt`, Dense layers,
//!   Normalize or none, `do_lower_case`, the limits `max_seq_length` falls back to, and a
//!   directory without `modules.json`. The token ids sentence-transformers fed the model are
//!   checked too, so a tokenizer difference is told apart from an arithmetic one.
//! - `real_goldens.json`: all-MiniLM-L6-v2 and all-mpnet-base-v2, checked where they are
//!   installed under `models/` (`scripts/setup`, `scripts/setup --model all-mpnet-base-v2`).

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::*;

/// Per component, as the model issue asks of every vector.
const TOLERANCE: f32 = 1e-5;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/st")
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Standard base64 (the goldens' binary files).
fn base64(text: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => panic!("not base64: {c}"),
    };
    let digits: Vec<u8> = text
        .bytes()
        .filter(|&c| c != b'=' && !c.is_ascii_whitespace())
        .collect();
    let mut out = Vec::with_capacity(digits.len() * 3 / 4);
    for group in digits.chunks(4) {
        let mut n = 0u32;
        for (i, &c) in group.iter().enumerate() {
            n |= u32::from(value(c)) << (18 - 6 * i);
        }
        out.extend_from_slice(&n.to_be_bytes()[1..group.len()]);
    }
    out
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// The case's model directory: its base copied into `root/<name>`, its files written over it.
fn materialise(case: &Value, root: &Path) -> PathBuf {
    let name = case["name"].as_str().unwrap();
    let dir = root.join(name);
    copy_dir(&fixtures().join(case["base"].as_str().unwrap()), &dir);
    let write = |rel: &str, bytes: &[u8]| {
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    };
    for (rel, content) in case["files"].as_object().unwrap() {
        write(
            rel,
            serde_json::to_string_pretty(content).unwrap().as_bytes(),
        );
    }
    if let Some(files) = case.get("binary_files").and_then(Value::as_object) {
        for (rel, content) in files {
            write(rel, &base64(content.as_str().unwrap()));
        }
    }
    dir
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

/// A JSON list of lists, each number read by `read`.
fn rows<T>(v: &Value, read: impl Fn(&Value) -> T) -> Vec<Vec<T>> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|row| row.as_array().unwrap().iter().map(&read).collect())
        .collect()
}

fn vectors(v: &Value) -> Vec<Vec<f32>> {
    rows(v, |x| x.as_f64().unwrap() as f32)
}

fn ids(v: &Value) -> Vec<Vec<u32>> {
    rows(v, |x| x.as_u64().unwrap() as u32)
}

/// The largest component difference between two lists of vectors (and that they have the
/// same shape).
fn max_diff(name: &str, got: &[Vec<f32>], want: &[Vec<f32>]) -> f32 {
    assert_eq!(got.len(), want.len(), "{name}: vector count");
    let mut worst = 0f32;
    for (g, w) in got.iter().zip(want) {
        assert_eq!(g.len(), w.len(), "{name}: dimension");
        for (a, b) in g.iter().zip(w) {
            worst = worst.max((a - b).abs());
        }
    }
    worst
}

/// Checks one role of a case: the token ids the model was fed, then the vectors.
fn check_role(e: &Embedder, case: &Value, role: Role, key: &str) -> f32 {
    let name = case["name"].as_str().unwrap();
    let plural = if key == "query" {
        "queries"
    } else {
        "passages"
    };
    let texts = strings(&case[plural]);
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let prompt_key = format!("{key}_prompt");
    let want_prompt = case[&prompt_key].as_str().unwrap_or("");
    assert_eq!(e.prompt(role), want_prompt, "{name}: the {key} prompt");
    let got_ids: Vec<Vec<u32>> = e
        .encode(&refs, e.prompt(role))
        .unwrap()
        .into_iter()
        .map(|(i, _)| i)
        .collect();
    assert_eq!(
        got_ids,
        ids(&case[format!("{key}_input_ids")]),
        "{name}: {key} token ids"
    );
    let got = e.embed(&refs, role, &mut |_| {}).unwrap();
    max_diff(name, &got, &vectors(&case[format!("{key}_vectors")]))
}

#[test]
fn every_golden_case_equals_sentence_transformers() {
    let cases = read_json(&fixtures().join("goldens.json"));
    let root = tempfile::tempdir().unwrap();
    let mut report = Vec::new();
    for case in cases.as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let dir = materialise(case, root.path());
        let e = Embedder::load(&dir).unwrap_or_else(|err| panic!("{name}: {err}"));
        assert_eq!(
            e.dim(),
            case["dim"].as_u64().unwrap() as usize,
            "{name}: dim"
        );
        assert_eq!(
            e.max_seq_length(),
            case["max_seq_length"].as_u64().unwrap() as usize,
            "{name}: max_seq_length"
        );
        assert_eq!(
            model_dim_of(&dir).unwrap(),
            e.dim(),
            "{name}: dim without loading"
        );
        assert_eq!(
            model_id_of(&dir).unwrap(),
            e.model_id(),
            "{name}: id without loading"
        );
        let q = check_role(&e, case, Role::Query, "query");
        let p = check_role(&e, case, Role::Passage, "passage");
        report.push((name.to_string(), q.max(p)));
    }
    assert!(report.len() >= 30, "{} cases", report.len());
    let bad: Vec<_> = report.iter().filter(|(_, d)| *d > TOLERANCE).collect();
    assert!(bad.is_empty(), "over {TOLERANCE}: {bad:?}");
}

/// The same arithmetic at one and two threads: a vector is a pure function of its text.
#[test]
fn golden_models_give_the_same_bits_at_one_and_two_threads() {
    let cases = read_json(&fixtures().join("goldens.json"));
    let root = tempfile::tempdir().unwrap();
    for case in cases.as_array().unwrap().iter().filter(|c| {
        let n = c["name"].as_str().unwrap();
        n.ends_with("-mean-normalize") || n.contains("include-prompt-false")
    }) {
        let dir = materialise(case, root.path());
        let e = Embedder::load(&dir).unwrap();
        let texts = strings(&case["passages"]);
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let at = |n: usize| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(n)
                .build()
                .unwrap();
            pool.install(|| e.embed(&refs, Role::Passage, &mut |_| {}).unwrap())
        };
        let bits = |v: Vec<Vec<f32>>| -> Vec<Vec<u32>> {
            v.iter()
                .map(|r| r.iter().map(|x| x.to_bits()).collect())
                .collect()
        };
        assert_eq!(bits(at(1)), bits(at(2)), "{}", case["name"]);
    }
}

/// A model whose directory names CLS pooling is CLS-pooled (not silently mean-pooled), and a
/// prompted model's queries differ from its passages.
#[test]
fn cls_pooling_and_prompts_change_the_vectors() {
    let cases = read_json(&fixtures().join("goldens.json"));
    let root = tempfile::tempdir().unwrap();
    let find = |n: &str| {
        cases
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == n)
            .unwrap_or_else(|| panic!("no case {n}"))
    };
    let mean = Embedder::load(&materialise(find("bert-mean-normalize"), root.path())).unwrap();
    let cls = Embedder::load(&materialise(find("bert-cls"), root.path())).unwrap();
    let t = ["how do cats sleep at night"];
    let (m, c) = (
        mean.embed(&t, Role::Passage, &mut |_| {}).unwrap(),
        cls.embed(&t, Role::Passage, &mut |_| {}).unwrap(),
    );
    assert!(
        max_diff("cls", &m, &c) > 1e-3,
        "CLS pooling is not mean pooling"
    );
    assert_ne!(mean.model_id(), cls.model_id());
    let prompted = Embedder::load(&materialise(
        find("mpnet-prompts-query-document"),
        root.path(),
    ))
    .unwrap();
    let q = prompted.embed(&t, Role::Query, &mut |_| {}).unwrap();
    let p = prompted.embed(&t, Role::Passage, &mut |_| {}).unwrap();
    assert!(
        max_diff("roles", &q, &p) > 1e-3,
        "a query and a passage get their own prompts"
    );
}

#[test]
fn installed_real_models_equal_sentence_transformers() {
    let models = Path::new(env!("CARGO_MANIFEST_DIR")).join("../models");
    let cases = read_json(&fixtures().join("real_goldens.json"));
    for case in cases.as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let dir = models.join(name);
        if !dir.join("model.safetensors").is_file() {
            eprintln!("skipped {name}: not installed in {}", models.display());
            continue;
        }
        let e = Embedder::load(&dir).unwrap();
        assert_eq!(e.dim(), case["dim"].as_u64().unwrap() as usize);
        assert_eq!(
            e.max_seq_length(),
            case["max_seq_length"].as_u64().unwrap() as usize
        );
        for key in ["query", "passage"] {
            let role = if key == "query" {
                Role::Query
            } else {
                Role::Passage
            };
            let d = check_role(&e, case, role, key);
            assert!(d <= TOLERANCE, "{name}, {key} role: {d}");
            eprintln!("{name}, {key} role: max difference {d:e}");
        }
    }
}

/// Each way a model directory can be wrong is refused at load, naming the file and the field,
/// never run as something else.
#[test]
fn bad_model_directories_are_refused_by_file_and_field() {
    let cases = read_json(&fixtures().join("goldens.json"));
    let base_case = cases
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "bert-mean-normalize")
        .unwrap();
    let root = tempfile::tempdir().unwrap();
    // (what is done to a good directory, the file the error names, words it must hold)
    type Damage = Box<dyn Fn(&Path)>;
    let write = |rel: &'static str, text: &'static str| -> Damage {
        Box::new(move |d: &Path| std::fs::write(d.join(rel), text).unwrap())
    };
    let edit = |rel: &'static str, from: &'static str, to: &'static str| -> Damage {
        Box::new(move |d: &Path| {
            let t = std::fs::read_to_string(d.join(rel)).unwrap();
            assert!(t.contains(from), "{rel} lacks {from}");
            std::fs::write(d.join(rel), t.replace(from, to)).unwrap();
        })
    };
    let cases: Vec<(&str, Damage, &str, &[&str])> = vec![
        (
            "a missing tokenizer",
            Box::new(|d: &Path| std::fs::remove_file(d.join("tokenizer.json")).unwrap()),
            "tokenizer.json",
            &["missing model file"],
        ),
        (
            "an unknown pooling mode",
            write("1_Pooling/config.json", r#"{"pooling_mode": "median"}"#),
            "1_Pooling/config.json",
            &["pooling_mode", "median", "known: cls"],
        ),
        (
            "an unknown key of the pooling config",
            write(
                "1_Pooling/config.json",
                r#"{"pooling_mode": "mean", "pool": 1}"#,
            ),
            "1_Pooling/config.json",
            &["pool"],
        ),
        (
            "a module hopbench cannot run",
            edit(
                "modules.json",
                "sentence_transformers.models.Normalize",
                "sentence_transformers.models.LayerNorm",
            ),
            "modules.json",
            &["modules[2].type", "LayerNorm"],
        ),
        (
            "a Pooling folder that is not there",
            Box::new(|d: &Path| std::fs::remove_dir_all(d.join("1_Pooling")).unwrap()),
            "1_Pooling/config.json",
            &["missing the Pooling module's config"],
        ),
        (
            "weights whose shapes disagree with config.json",
            edit(
                "config.json",
                "\"intermediate_size\": 37",
                "\"intermediate_size\": 38",
            ),
            "model.safetensors",
            &["shape", "expected"],
        ),
        (
            "an architecture hopbench does not run",
            edit(
                "config.json",
                "\"model_type\": \"bert\"",
                "\"model_type\": \"distilbert\"",
            ),
            "config.json",
            &["model_type", "distilbert"],
        ),
        (
            "a tokenizer without the special tokens",
            edit("tokenizer.json", "\"[CLS]\"", "\"[CLX]\""),
            "tokenizer.json",
            &["[CLS]"],
        ),
        (
            "a prompt that is not a string",
            write(
                "config_sentence_transformers.json",
                r#"{"prompts": {"query": 7}}"#,
            ),
            "config_sentence_transformers.json",
            &["prompts.query", "expected a string"],
        ),
        (
            "a default prompt that does not exist",
            write(
                "config_sentence_transformers.json",
                r#"{"prompts": {"query": "q: "}, "default_prompt_name": "search"}"#,
            ),
            "config_sentence_transformers.json",
            &["default_prompt_name", "search"],
        ),
        (
            "a cross-encoder given as an embedder",
            write(
                "config_sentence_transformers.json",
                r#"{"model_type": "CrossEncoder"}"#,
            ),
            "config_sentence_transformers.json",
            &["model_type", "CrossEncoder"],
        ),
        (
            "a max_seq_length that is not a count",
            write("sentence_bert_config.json", r#"{"max_seq_length": "long"}"#),
            "sentence_bert_config.json",
            &["max_seq_length"],
        ),
    ];
    for (n, (what, damage, file, words)) in cases.into_iter().enumerate() {
        let dir = materialise(base_case, &root.path().join(format!("case{n}")));
        assert!(
            Embedder::load(&dir).is_ok(),
            "{what}: the good directory loads"
        );
        damage(&dir);
        let err = Embedder::load(&dir).expect_err(what).to_string();
        assert!(err.contains(file), "{what}: {err}");
        for w in words {
            assert!(err.contains(w), "{what}: `{w}` not in: {err}");
        }
        // the identity (read before any export is planned) is refused alike where it reads the
        // file; the tokenizer and the weights' shapes are checked when the model loads
        if !matches!(file, "tokenizer.json" | "model.safetensors") {
            assert!(model_id_of(&dir).is_err(), "{what}: model_id_of");
        }
    }
}

/// A campaign's prompts replace the model's own: a plain model given a query prompt embeds
/// its queries exactly as a model whose directory names that prompt, under an id of its own.
#[test]
fn prompt_overrides_embed_as_the_directory_would() {
    let cases = read_json(&fixtures().join("goldens.json"));
    let find = |n: &str| {
        cases
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == n)
            .unwrap()
    };
    let root = tempfile::tempdir().unwrap();
    let plain_dir = materialise(find("bert-mean-normalize"), root.path());
    let overrides = PromptOverrides {
        query: Some("query: ".into()),
        passage: None,
    };
    let e = Embedder::load_with(&plain_dir, &overrides).unwrap();
    assert_eq!(e.prompt(Role::Query), "query: ");
    assert_eq!(e.prompt(Role::Passage), "");
    let plain = Embedder::load(&plain_dir).unwrap();
    assert_ne!(
        e.model_id(),
        plain.model_id(),
        "a prompt is part of the model's identity"
    );
    assert_eq!(model_id_with(&plain_dir, &overrides).unwrap(), e.model_id());
    let prompted = find("bert-prompt-query-only");
    let d = check_role(&e, prompted, Role::Query, "query");
    assert!(d <= TOLERANCE, "{d}");
    // and an empty override silences the model's own prompt
    let dir = materialise(find("mpnet-prompts-query-document"), root.path());
    let silent = PromptOverrides {
        query: None,
        passage: Some(String::new()),
    };
    let e = Embedder::load_with(&dir, &silent).unwrap();
    assert_eq!(
        (e.prompt(Role::Query), e.prompt(Role::Passage)),
        ("query: ", "")
    );
    let id = e.model_id().to_string();
    assert_eq!(
        prompt_for(&id, &dir, &silent, Role::Query).unwrap(),
        "query: "
    );
    assert_eq!(prompt_for(&id, &dir, &silent, Role::Passage).unwrap(), "");
    // an id of the plain pipeline needs no directory to know it has no prompt
    let missing = root.path().join("gone");
    assert_eq!(
        prompt_for(plain.model_id(), &missing, &silent, Role::Query).unwrap(),
        ""
    );
    assert!(prompt_for(&id, &missing, &silent, Role::Query).is_err());
}
