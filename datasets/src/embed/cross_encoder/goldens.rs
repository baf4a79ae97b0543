//! The cross-encoder against sentence-transformers itself: scores that
//! `CrossEncoder.predict` computed once (`scripts/ce_goldens.py`, committed with its outputs in
//! `datasets/tests/fixtures/ce/`), so these tests need no torch.
//!
//! - `goldens.json`: tiny seeded BERT and XLM-RoBERTa cross-encoders as sentence-transformers
//!   6.3 saves them, each case a copy of its base with files deleted or written over: the
//!   activations (saved, in `config.json`, the defaults), one label and two (by name, by index),
//!   both directory layouts, `max_seq_length`, a default prompt. The token ids
//!   sentence-transformers fed the model are checked too, so a tokenizer difference is told
//!   apart from an arithmetic one.
//! - `minilm_goldens.json`: the real all-MiniLM-L6-v2 trunk with a seeded head, assembled here
//!   from the installed trunk (`scripts/setup`) and `minilm-head.safetensors`; skipped when the
//!   trunk is not installed.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Tensor};
use serde_json::Value;

use super::*;

/// Per score.
const TOLERANCE: f32 = 1e-5;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ce")
}

fn installed_models() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../models")
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
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

fn write_files(dir: &Path, files: &Value) {
    for (rel, content) in files.as_object().unwrap() {
        let text = serde_json::to_string_pretty(content).unwrap();
        std::fs::write(dir.join(rel), text).unwrap();
    }
}

/// The case's model directory: its base copied into `root/<name>`, `remove` deleted, `files`
/// written over it.
fn materialise(case: &Value, root: &Path) -> PathBuf {
    let dir = root.join(case["name"].as_str().unwrap());
    copy_dir(&fixtures().join(case["base"].as_str().unwrap()), &dir);
    for rel in case["remove"].as_array().unwrap() {
        std::fs::remove_file(dir.join(rel.as_str().unwrap())).unwrap();
    }
    write_files(&dir, &case["files"]);
    dir
}

fn find<'a>(cases: &'a Value, name: &str) -> &'a Value {
    cases
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no case {name}"))
}

fn pairs(case: &Value) -> Vec<(String, String)> {
    case["pairs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let s = |i: usize| p[i].as_str().unwrap().to_string();
            (s(0), s(1))
        })
        .collect()
}

fn as_refs(pairs: &[(String, String)]) -> Vec<(&str, &str)> {
    pairs
        .iter()
        .map(|(q, p)| (q.as_str(), p.as_str()))
        .collect()
}

fn ids(v: &Value) -> Vec<Vec<u32>> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|row| {
            row.as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_u64().unwrap() as u32)
                .collect()
        })
        .collect()
}

/// Loads the case's model, checks what it reports and the tokens it feeds the model, and
/// returns the largest score difference.
fn check_case(e: &CrossEncoder, case: &Value) -> f32 {
    let name = case["name"].as_str().unwrap();
    assert_eq!(
        e.activation(),
        case["activation"].as_str().unwrap(),
        "{name}"
    );
    assert_eq!(
        e.num_labels() as u64,
        case["num_labels"].as_u64().unwrap(),
        "{name}"
    );
    assert_eq!(
        e.max_length() as u64,
        case["max_length"].as_u64().unwrap(),
        "{name}"
    );
    let pairs = pairs(case);
    let refs = as_refs(&pairs);
    let encoded = e.encode_pairs(&refs).unwrap();
    let got_ids: Vec<Vec<u32>> = encoded.iter().map(|(i, _)| i.clone()).collect();
    assert_eq!(got_ids, ids(&case["input_ids"]), "{name}: token ids");
    let got_types: Vec<Vec<u32>> = encoded
        .iter()
        .map(|(i, t)| {
            if t.is_empty() {
                vec![0; i.len()]
            } else {
                t.clone()
            }
        })
        .collect();
    assert_eq!(
        got_types,
        ids(&case["token_type_ids"]),
        "{name}: token types"
    );
    let scores = e.score_pairs(&refs).unwrap();
    let want: Vec<f32> = case["scores"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap() as f32)
        .collect();
    assert_eq!(scores.len(), want.len(), "{name}");
    scores
        .iter()
        .zip(&want)
        .map(|(a, b)| (a - b).abs())
        .fold(0f32, f32::max)
}

#[test]
fn every_golden_case_equals_sentence_transformers() {
    let cases = read_json(&fixtures().join("goldens.json"));
    let root = tempfile::tempdir().unwrap();
    let mut report = Vec::new();
    let mut ids_seen = HashMap::new();
    for case in cases.as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let dir = materialise(case, root.path());
        let e = CrossEncoder::load(&dir, case["label"].as_str())
            .unwrap_or_else(|err| panic!("{name}: {err}"));
        report.push((name.to_string(), check_case(&e, case)));
        // a setting that changes a score changes the id (the layouts alone do not)
        let what = format!(
            "{} {} {} {}",
            e.activation(),
            e.label(),
            e.max_length(),
            e.prompt()
        );
        let key = (e.model_id().to_string(), what.clone());
        if let Some(other) = ids_seen.insert(e.model_id().to_string(), key) {
            assert_eq!(other.1, what, "{name}: one id for two settings");
        }
    }
    assert!(report.len() >= 10, "{} cases", report.len());
    let worst = report.iter().map(|r| r.1).fold(0f32, f32::max);
    eprintln!(
        "cross-encoder goldens: {} cases, max difference {worst:e}",
        report.len()
    );
    let bad: Vec<_> = report.iter().filter(|(_, d)| *d > TOLERANCE).collect();
    assert!(bad.is_empty(), "over {TOLERANCE}: {bad:?}");
}

/// The pair `long-both` is cut on both sides by `longest_first`: each side keeps fewer tokens
/// than it has alone (so the golden above proves the cut equals the Python tokenizer's).
#[test]
fn the_long_pair_is_cut_on_both_sides() {
    let cases = read_json(&fixtures().join("goldens.json"));
    let case = find(&cases, "bert-sigmoid");
    let root = tempfile::tempdir().unwrap();
    let e = CrossEncoder::load(&materialise(case, root.path()), None).unwrap();
    let names: Vec<&str> = case["pair_names"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    let k = names.iter().position(|&n| n == "long-both").unwrap();
    let (q, p) = &pairs(case)[k];
    let types = &ids(&case["token_type_ids"])[k];
    let kept_query = types.iter().filter(|&&t| t == 0).count() - 2;
    let kept_passage = types.iter().filter(|&&t| t == 1).count() - 1;
    assert_eq!(kept_query + kept_passage + 3, e.max_length());
    assert!(e.single_tokens(q, false).unwrap() > kept_query);
    assert!(e.single_tokens(p, false).unwrap() > kept_passage);
}

/// A score is a pure function of its pair: the same bits at one and two threads, and alone.
#[test]
fn scores_are_the_same_bits_at_one_and_two_threads_and_alone() {
    let cases = read_json(&fixtures().join("goldens.json"));
    let root = tempfile::tempdir().unwrap();
    for name in [
        "bert-sigmoid",
        "xlm-roberta-sigmoid",
        "bert-2labels-relevant",
    ] {
        let case = find(&cases, name);
        let e =
            CrossEncoder::load(&materialise(case, root.path()), case["label"].as_str()).unwrap();
        let pairs = pairs(case);
        let refs = as_refs(&pairs);
        let at = |n: usize| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(n)
                .build()
                .unwrap();
            pool.install(|| e.score_pairs(&refs).unwrap())
        };
        let bits = |v: Vec<f32>| v.iter().map(|x| x.to_bits()).collect::<Vec<u32>>();
        let one = bits(at(1));
        assert_eq!(one, bits(at(2)), "{name}");
        let alone: Vec<f32> = refs
            .iter()
            .map(|&(q, p)| e.score(q, &[p]).unwrap()[0])
            .collect();
        assert_eq!(one, bits(alone), "{name}: alone");
    }
}

/// A label is found by its name or its index, and the score is that label's.
#[test]
fn labels_by_name_and_index_agree() {
    let cases = read_json(&fixtures().join("goldens.json"));
    let root = tempfile::tempdir().unwrap();
    let dir = materialise(find(&cases, "bert-2labels-relevant"), root.path());
    let by_name = CrossEncoder::load(&dir, Some("relevant")).unwrap();
    let by_index = CrossEncoder::load(&dir, Some("1")).unwrap();
    let other = CrossEncoder::load(&dir, Some("irrelevant")).unwrap();
    assert_eq!(by_name.labels(), ["irrelevant", "relevant"]);
    assert_eq!(
        (by_name.label(), by_index.label()),
        ("relevant", "relevant")
    );
    assert_eq!(by_name.model_id(), by_index.model_id());
    assert_ne!(by_name.model_id(), other.model_id());
    let texts = ["Cats sleep for most of the day.", "Paris is in France."];
    let a = by_name.score("where do cats sleep", &texts).unwrap();
    assert_eq!(a, by_index.score("where do cats sleep", &texts).unwrap());
    assert_ne!(a, other.score("where do cats sleep", &texts).unwrap());
}

/// A passage far longer than the window is tokenised as a prefix, to the same tokens as whole;
/// with a query of more than half the room the whole passage is read.
#[test]
fn a_huge_passage_is_cut_to_the_tokens_of_the_whole() {
    let cases = read_json(&fixtures().join("goldens.json"));
    let root = tempfile::tempdir().unwrap();
    for name in ["bert-sigmoid", "xlm-roberta-sigmoid"] {
        let e = CrossEncoder::load(&materialise(find(&cases, name), root.path()), None).unwrap();
        let huge = "The old city grew along the river,  and its people built bridges. ".repeat(400);
        let long_query = "which old city grew along the river and built bridges ".repeat(3);
        for query in ["cats", long_query.as_str()] {
            let bounded = e.bounded_passage(query, &huge).unwrap();
            if query == "cats" {
                assert!(bounded.len() < huge.len() / 10, "{name}: not cut");
            } else {
                assert_eq!(bounded.len(), huge.len(), "{name}: cut with a long query");
            }
            let whole = e
                .tokenizer
                .encode((query, huge.as_str()), true)
                .unwrap()
                .get_ids()
                .to_vec();
            let got = e.encode_pairs(&[(query, &huge)]).unwrap();
            assert_eq!(got[0].0, whole, "{name}");
        }
    }
}

/// Each way a directory can be wrong is refused at load, naming the file and the field.
#[test]
fn bad_cross_encoder_directories_are_refused_by_file_and_field() {
    let cases = read_json(&fixtures().join("goldens.json"));
    let root = tempfile::tempdir().unwrap();
    type Damage = Box<dyn Fn(&Path)>;
    // (case, label, damage, the file the error names, words it must hold)
    type Refusal = (
        &'static str,
        Option<&'static str>,
        Damage,
        &'static str,
        &'static [&'static str],
    );
    let write = |rel: &'static str, text: String| -> Damage {
        Box::new(move |d: &Path| std::fs::write(d.join(rel), &text).unwrap())
    };
    let edit = |rel: &'static str, from: &'static str, to: &'static str| -> Damage {
        Box::new(move |d: &Path| {
            let t = std::fs::read_to_string(d.join(rel)).unwrap();
            assert!(t.contains(from), "{rel} lacks {from}");
            std::fs::write(d.join(rel), t.replace(from, to)).unwrap();
        })
    };
    let st = |a: &str| {
        format!(r#"{{"model_type": "CrossEncoder", "activation_fn": "{a}", "prompts": {{}}}}"#)
    };
    let list: Vec<Refusal> = vec![
        (
            "bert-sigmoid",
            None,
            write(
                "config_sentence_transformers.json",
                st("torch.nn.modules.activation.Softmax"),
            ),
            "config_sentence_transformers.json",
            &["activation_fn", "Softmax", "known:"],
        ),
        (
            "bert-sigmoid",
            None,
            write(
                "config_sentence_transformers.json",
                st("my_package.Sharpen"),
            ),
            "config_sentence_transformers.json",
            &["activation_fn", "my_package.Sharpen"],
        ),
        (
            "bert-legacy-config-tanh",
            None,
            edit(
                "config.json",
                "torch.nn.modules.activation.Tanh",
                "torch.nn.modules.activation.GELU",
            ),
            "config.json",
            &["sentence_transformers.activation_fn", "GELU"],
        ),
        (
            "bert-sigmoid",
            None,
            edit(
                "config.json",
                r#""0": "LABEL_0""#,
                r#""0": "a", "1": "b", "2": "c""#,
            ),
            "model.safetensors",
            &["classifier.weight", "[1, 32]", "[3, 32]", "config.json"],
        ),
        (
            "bert-sigmoid",
            None,
            edit(
                "config.json",
                r#""hidden_size": 32"#,
                r#""hidden_size": 32, "num_labels": 2"#,
            ),
            "config.json",
            &["num_labels", "id2label"],
        ),
        (
            "bert-2labels-relevant",
            None,
            Box::new(|_: &Path| {}),
            "config.json",
            &["id2label", "2 labels", "irrelevant", "relevant"],
        ),
        (
            "bert-2labels-relevant",
            Some("maybe"),
            Box::new(|_: &Path| {}),
            "config.json",
            &["id2label", "maybe", "0 `irrelevant`, 1 `relevant`"],
        ),
        (
            "bert-2labels-relevant",
            Some("2"),
            Box::new(|_: &Path| {}),
            "config.json",
            &["no label `2`"],
        ),
        (
            "bert-sigmoid",
            Some("LABEL_1"),
            Box::new(|_: &Path| {}),
            "config.json",
            &["no label `LABEL_1`", "0 `LABEL_0`"],
        ),
        (
            "bert-sigmoid",
            None,
            edit(
                "config_sentence_transformers.json",
                "CrossEncoder",
                "SentenceTransformer",
            ),
            "config_sentence_transformers.json",
            &["model_type", "SentenceTransformer"],
        ),
        (
            "bert-sigmoid",
            None,
            edit(
                "modules.json",
                "\n]",
                r#", {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]"#,
            ),
            "modules.json",
            &["modules[1].type", "Pooling"],
        ),
        (
            "bert-sigmoid",
            None,
            edit(
                "sentence_bert_config.json",
                "sequence-classification",
                "feature-extraction",
            ),
            "sentence_bert_config.json",
            &["transformer_task", "feature-extraction"],
        ),
        (
            "bert-default-prompt",
            None,
            edit(
                "config_sentence_transformers.json",
                r#""default_prompt_name": "rerank""#,
                r#""default_prompt_name": "search""#,
            ),
            "config_sentence_transformers.json",
            &["default_prompt_name", "search"],
        ),
    ];
    for (n, (name, label, damage, file, words)) in list.into_iter().enumerate() {
        let dir = materialise(find(&cases, name), &root.path().join(format!("case{n}")));
        let good_label = find(&cases, name)["label"].as_str();
        assert!(
            CrossEncoder::load(&dir, good_label).is_ok(),
            "case {n}: the good directory loads"
        );
        damage(&dir);
        let err = CrossEncoder::load(&dir, label).expect_err(file).to_string();
        assert!(err.contains(file), "case {n}: {err}");
        for w in words {
            assert!(err.contains(w), "case {n}: `{w}` not in: {err}");
        }
    }
}

/// A sentence embedder (no classification head) is refused, saying the classifier weights are
/// missing: the st fixture's plain BERT always, the installed all-MiniLM-L6-v2 where it is.
#[test]
fn a_sentence_embedder_is_not_a_cross_encoder() {
    let st_bert = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/st/bert");
    let minilm = installed_models().join("all-MiniLM-L6-v2");
    let mut dirs = vec![st_bert];
    if minilm.join("model.safetensors").is_file() {
        dirs.push(minilm);
    } else {
        eprintln!(
            "all-MiniLM-L6-v2 not installed in {}: only the fixture checked",
            installed_models().display()
        );
    }
    for dir in dirs {
        let err = CrossEncoder::load(&dir, None)
            .expect_err("an embedder")
            .to_string();
        assert!(err.contains("model.safetensors"), "{err}");
        assert!(err.contains("the classifier weights are missing"), "{err}");
        assert!(err.contains("classifier.weight"), "{err}");
    }
    let mpnet = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/st/mpnet");
    let err = CrossEncoder::load(&mpnet, None)
        .expect_err("mpnet")
        .to_string();
    assert!(
        err.contains("config.json") && err.contains("model_type") && err.contains("MPNet"),
        "{err}"
    );
}

/// The checkpoint `minilm_goldens.json` describes, assembled in `dest` from the installed trunk
/// and the committed head as `scripts/ce_goldens.py` assembles it.
fn assemble_minilm(golden: &Value, trunk: &Path, dest: &Path) {
    std::fs::create_dir_all(dest).unwrap();
    for f in golden["trunk_files"].as_array().unwrap() {
        let f = f.as_str().unwrap();
        std::fs::copy(trunk.join(f), dest.join(f)).unwrap();
    }
    write_files(dest, &golden["files"]);
    let trunk_tensors =
        candle_core::safetensors::load(trunk.join("model.safetensors"), &Device::Cpu).unwrap();
    let mut tensors: HashMap<String, Tensor> = trunk_tensors
        .into_iter()
        .filter(|(k, _)| !k.starts_with("pooler.") && k != "embeddings.position_ids")
        .map(|(k, v)| (format!("bert.{k}"), v))
        .collect();
    let head_path = fixtures().join(golden["head"].as_str().unwrap());
    for (k, v) in candle_core::safetensors::load(&head_path, &Device::Cpu).unwrap() {
        let name = if k.starts_with("classifier.") {
            k
        } else {
            format!("bert.{k}")
        };
        tensors.insert(name, v.to_dtype(DType::F32).unwrap());
    }
    candle_core::safetensors::save(&tensors, dest.join("model.safetensors")).unwrap();
}

#[test]
fn installed_minilm_trunk_with_a_seeded_head_equals_sentence_transformers() {
    let golden = read_json(&fixtures().join("minilm_goldens.json"));
    let trunk = installed_models().join(golden["trunk"].as_str().unwrap());
    if !trunk.join("model.safetensors").is_file() {
        eprintln!(
            "skipped: {} is not installed (scripts/setup)",
            trunk.display()
        );
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("minilm-ce");
    assemble_minilm(&golden, &trunk, &dir);
    let e = CrossEncoder::load(&dir, None).unwrap();
    let d = check_case(&e, &golden);
    eprintln!("all-MiniLM-L6-v2 trunk, seeded head: max difference {d:e}");
    assert!(d <= TOLERANCE, "{d}");
    // at this model's shapes too, a pair's score is the same bits alone and in a batch
    let pairs = pairs(&golden);
    let refs = as_refs(&pairs);
    let batch = e.score_pairs(&refs).unwrap();
    for (k, &(q, p)) in refs.iter().enumerate() {
        assert_eq!(
            e.score(q, &[p]).unwrap()[0].to_bits(),
            batch[k].to_bits(),
            "pair {k}"
        );
    }
}
