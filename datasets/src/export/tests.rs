//! The export end to end on a tiny corpus with a fake embedder.

use super::identity::hash_file;
use super::write::f32_lists;
use super::*;
use crate::lexical::Tokenizer;
use std::collections::BTreeMap;

use crate::model::{Passage, Question, Span, SpannedDataset};
use crate::parquet_io as pq;

fn passage(id: &str, doc: &str, text: &str) -> Passage {
    Passage {
        id: id.into(),
        doc: Some(doc.into()),
        title: doc.into(),
        text: text.into(),
        header: None,
    }
}

fn raw() -> RawDataset {
    let mut q = Question::new(
        "q1",
        "where was the founder born",
        vec!["b".into(), "a".into(), "a".into()],
    );
    q.chain = Some(vec![vec!["a".into()], vec!["b".into()]]);
    RawDataset {
        passages: vec![
            passage("c", "Gamma", "gamma is unrelated"),
            passage("a", "Alpha", "alpha founded the company of Beta"),
            passage(
                "b",
                "Beta",
                "beta was born in a city. Alpha and Gamma were not.",
            ),
        ],
        questions: vec![q, Question::new("q2", "gamma", vec!["c".into()])],
    }
}

/// A deterministic fake model: the vector counts letters, so texts differ and it is cheap.
fn fake(dim: usize, calls: std::rc::Rc<std::cell::Cell<usize>>) -> EmbedFn<'static> {
    EmbedFn {
        model_id: "fake@0".into(),
        dim,
        embed: Box::new(move |texts, _, _| {
            calls.set(calls.get() + texts.len());
            Ok(texts
                .iter()
                .map(|t| {
                    let mut v = vec![0.0f32; dim];
                    for (i, b) in t.bytes().enumerate() {
                        v[(b as usize + i) % dim] += 1.0;
                    }
                    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-9);
                    v.iter().map(|x| x / n).collect()
                })
                .collect())
        }),
    }
}

fn source() -> Source {
    Source {
        name: "tiny".into(),
        format: "test".into(),
        files: vec![],
        extra: "x".into(),
        protocol: Protocol::PUBLISHED,
        vectors: None,
    }
}

#[test]
fn round_trip_sorts_chunks_resolves_gold_and_reuses() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("tiny");
    let calls = std::rc::Rc::new(std::cell::Cell::new(0));
    let (m, how) = prepare(
        &source(),
        || Ok(raw()),
        &PrepareConfig::default(),
        &mut fake(8, calls.clone()),
        &dir,
    )
    .unwrap();
    assert_eq!(how, Prepared::Written);
    assert_eq!(
        (
            m.stats.chunks,
            m.stats.queries,
            m.stats.gold_chunks,
            m.stats.queries_with_chain
        ),
        (3, 2, 3, 1)
    );
    let e = load(&dir).unwrap();
    assert_eq!(
        e.chunks.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(),
        vec!["a", "b", "c"]
    );
    assert_eq!(e.queries[0].gold, vec![0, 1]);
    assert_eq!(e.queries[0].chain, Some(vec![vec![0], vec![1]]));
    assert_eq!(e.queries[1].chain, None);
    assert_eq!(e.docs, vec!["Alpha", "Beta", "Gamma"]);
    assert_eq!(
        ["a", "b", "c", "", "bb", "0"].map(|id| e.chunk_index(id)),
        [Some(0), Some(1), Some(2), None, None, None]
    );
    assert!(!e.has_content_embeddings() && e.content_embeddings().unwrap().is_none());
    assert_eq!(e.embeddings().unwrap().len(), 3 * 8);
    assert_eq!(e.bm25.search(&Tokenizer::english(), "gamma", 5)[0].0, 2);
    // the knowledge graph: the same as building it over the loaded chunks, with its stats
    let titled: Vec<(String, String)> = e
        .texts()
        .unwrap()
        .iter()
        .map(|c| (c.title.clone(), c.full_text()))
        .collect();
    let refs: Vec<(&str, &str)> = titled
        .iter()
        .map(|(t, x)| (t.as_str(), x.as_str()))
        .collect();
    let kg = enrich::build(&refs, &EnrichConfig::default());
    // read on the first request, not at load
    assert!(!e.kg.is_read());
    // the loaded graph is the built one, its edge list given up to the adjacency
    let (ix, loaded) = (e.kg_index().unwrap(), e.kg().unwrap());
    assert!(e.kg.is_read());
    assert!(loaded.edges.is_empty());
    assert_eq!(
        loaded,
        &KnowledgeGraph {
            edges: Vec::new(),
            ..kg.clone()
        }
    );
    assert_eq!(ix.edges().collect::<Vec<_>>(), kg.edges);
    assert_eq!(ix.edge_count(), kg.edges.len());
    assert_eq!(kg.nodes, vec!["Alpha", "Beta", "Gamma"]);
    assert_eq!(kg.chunk_nodes, vec![vec![0, 1], vec![0, 1, 2], vec![2]]);
    // Alpha -> Beta (1.0), Beta -> Alpha (1.0), Beta -> Gamma (1.0), Alpha ~ Gamma in Beta (0.5)
    assert_eq!(kg.edges, vec![(0, 1, 2.0), (0, 2, 0.5), (1, 2, 1.0)]);
    assert_eq!(kg.chunk_reach(), vec![vec![2], vec![], vec![0, 1]]);
    assert_eq!(m.stats.kg, kg.stats());
    assert_eq!((m.stats.kg.entities, m.stats.kg.edges), (3, 3));
    assert_eq!(ix.query_seeds("Where was BETA born, alpha?"), vec![1, 0]);
    assert_eq!(ix.node_chunks(2), &[1, 2]);
    // unchanged inputs: reused, nothing embedded again
    let before = calls.get();
    let (m2, how) = prepare(
        &source(),
        || panic!("raw must not be read on reuse"),
        &PrepareConfig::default(),
        &mut fake(8, calls.clone()),
        &dir,
    )
    .unwrap();
    assert_eq!((how, calls.get()), (Prepared::Reused, before));
    assert_eq!(m2, m);
    // a different config is a different export
    let cfg = PrepareConfig {
        bm25: Bm25Params { k1: 1.2, b: 0.75 },
        ..Default::default()
    };
    let (_, how) = prepare(&source(), || Ok(raw()), &cfg, &mut fake(8, calls), &dir).unwrap();
    assert_eq!(how, Prepared::Written);
}

#[test]
fn headers_give_content_only_vectors() {
    let tmp = tempfile::tempdir().unwrap();
    let mut r = raw();
    r.passages[0].header = Some("World > Gamma".into());
    prepare_raw(&tmp.path().join("h"), r);
    let e = load(&tmp.path().join("h")).unwrap();
    let ce = e.content_embeddings().unwrap().unwrap();
    assert_eq!(ce.len(), 3 * 8);
    assert_ne!(
        &ce[16..24],
        &e.embeddings().unwrap()[16..24],
        "the headed chunk's content-only vector differs"
    );
    assert_eq!(
        e.texts().unwrap()[2].full_text(),
        "World > Gamma\ngamma is unrelated"
    );
}

#[test]
fn the_protocol_decides_what_is_indexed_and_is_part_of_the_key() {
    let with = |protocol: Protocol| Source {
        protocol,
        ..source()
    };
    let key = |protocol| {
        planned_manifest(&with(protocol), &PrepareConfig::default(), "m@1", 8)
            .unwrap()
            .input_key
    };
    let all = [
        Protocol::TITLE_NEWLINE,
        Protocol::TITLE_SPACE,
        Protocol::TEXT,
        Protocol::PUBLISHED,
    ];
    let keys: std::collections::BTreeSet<String> = all.iter().map(|&p| key(p)).collect();
    assert_eq!(keys.len(), all.len(), "each protocol is its own export");

    let tmp = tempfile::tempdir().unwrap();
    let calls = std::rc::Rc::new(std::cell::Cell::new(0));
    let build = |protocol, name: &str| {
        let dir = tmp.path().join(name);
        let mut r = raw();
        r.passages[0].header = Some("World > Gamma".into());
        r.passages[1].title = String::new();
        prepare(
            &with(protocol),
            || Ok(r),
            &PrepareConfig::default(),
            &mut fake(8, calls.clone()),
            &dir,
        )
        .unwrap();
        load(&dir).unwrap()
    };
    // title + " " + text, the text alone where the title is empty (chunks sorted: a, b, c)
    let e = build(Protocol::TITLE_SPACE, "space");
    assert_eq!(e.manifest.protocol, Protocol::TITLE_SPACE);
    let full: Vec<String> = e
        .texts()
        .unwrap()
        .iter()
        .map(ChunkText::full_text)
        .collect();
    assert_eq!(
        full,
        [
            "alpha founded the company of Beta",
            "Beta beta was born in a city. Alpha and Gamma were not.",
            "Gamma gamma is unrelated",
        ]
    );
    assert_eq!(e.manifest.stats.chunks_with_header, 2);
    // BM25 indexed the title: one more token for each titled chunk
    assert_eq!(e.bm25.doc_len(), [4, 7, 3]);
    assert!(
        e.has_content_embeddings() && e.content_embeddings().unwrap().is_some(),
        "the text-alone vectors stay"
    );
    let e = build(Protocol::TITLE_NEWLINE, "newline");
    assert_eq!(
        e.texts().unwrap()[2].full_text(),
        "Gamma\ngamma is unrelated"
    );
    // the text alone: no header (a published one is dropped), no second vector set
    let e = build(Protocol::TEXT, "text");
    assert!(e.texts().unwrap().iter().all(|c| c.header.is_none()));
    assert_eq!(e.bm25.doc_len(), [4, 6, 2]);
    assert!(!e.has_content_embeddings());
    // the dataset's own header
    let e = build(Protocol::PUBLISHED, "published");
    assert_eq!(
        e.texts().unwrap()[2].full_text(),
        "World > Gamma\ngamma is unrelated"
    );
    assert_eq!(e.manifest.stats.chunks_with_header, 1);
}

fn expect_err(r: RawDataset, dim_out: usize, needle: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("bad");
    let calls = std::rc::Rc::new(std::cell::Cell::new(0));
    let mut f = fake(dim_out, calls);
    f.dim = 8;
    let err = prepare(&source(), || Ok(r), &PrepareConfig::default(), &mut f, &dir)
        .unwrap_err()
        .to_string();
    assert!(err.contains(needle), "{err}");
    assert!(!dir.exists(), "nothing half-written");
    assert_eq!(
        std::fs::read_dir(tmp.path()).unwrap().count(),
        0,
        "no temp dir left behind"
    );
}

#[test]
fn bad_inputs_are_typed_errors_and_leave_nothing_behind() {
    let mut r = raw();
    r.passages.push(passage("a", "Alpha", "again"));
    expect_err(r, 8, "duplicate passage id `a`");
    let mut r = raw();
    r.questions[0].gold.push("zzz".into());
    expect_err(
        r,
        8,
        "record q1: field `gold`: gold passage zzz is not in the corpus",
    );
    let mut r = raw();
    r.questions[0].chain = Some(vec![vec!["nope".into()]]);
    expect_err(r, 8, "field `chain`");
    expect_err(raw(), 5, "expected dimension 8, found 5");
    let mut r = raw();
    r.questions
        .push(Question::new("q1", "dup", vec!["a".into()]));
    expect_err(r, 8, "duplicate query id");
}

/// Prepares the tiny export into `dir`.
fn tiny(dir: &Path) -> Manifest {
    prepare_raw(dir, raw())
}

/// Prepares `r` with the fake 8-dimensional model into `dir`.
fn prepare_raw(dir: &Path, r: RawDataset) -> Manifest {
    let calls = std::rc::Rc::new(std::cell::Cell::new(0));
    prepare(
        &source(),
        || Ok(r),
        &PrepareConfig::default(),
        &mut fake(8, calls),
        dir,
    )
    .unwrap()
    .0
}

/// Rewrites `file` (a parquet file of `dir`) with `edit` applied to its columns, and records
/// its new hash in the manifest, so that only the content checks of `load` can object.
fn rewrite(
    dir: &Path,
    file: &str,
    edit: impl FnOnce(&str, arrow_array::ArrayRef) -> arrow_array::ArrayRef,
) {
    let path = dir.join(file);
    let batch = pq::read(&path).unwrap();
    let schema = batch.schema();
    let mut edit = Some(edit);
    let mut cols = Vec::new();
    for (f, a) in schema.fields().iter().zip(batch.columns()) {
        let a = match f.name().as_str() {
            "b" | "kg_reach" => (edit.take().unwrap())(f.name(), a.clone()),
            _ => a.clone(),
        };
        cols.push((f.name().as_str(), a));
    }
    pq::write(&path, cols).unwrap();
    record_hash(dir, file);
}

/// Records the present hash of export file `file` in `dir`'s manifest (after a test rewrote
/// it), so that only the content checks of `load` can object.
fn record_hash(dir: &Path, file: &str) {
    let mut m = read_manifest(dir).unwrap();
    m.files
        .insert(file.into(), hash_file(&dir.join(file)).unwrap());
    std::fs::write(
        dir.join("manifest.json"),
        serde_json::to_string_pretty(&m).unwrap(),
    )
    .unwrap();
}

#[test]
fn a_malformed_knowledge_graph_is_refused_when_read() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("kg");
    tiny(&dir);
    load(&dir).unwrap().kg().unwrap();
    // an edge to a node that does not exist: the legs that do not read the graph still run
    rewrite(&dir, "kg-edges.parquet", |_, _| pq::u32s(&[1, 7, 2]));
    let e = load(&dir).unwrap();
    let err = e.kg().unwrap_err().to_string();
    assert!(
        err.contains("kg-edges.parquet") && err.contains("row 1") && err.contains("`b`"),
        "{err}"
    );
    // a denormalised corpus column that disagrees with the graph files (the doctored export
    // hashes as its manifest says, so it would be reused: start afresh)
    std::fs::remove_dir_all(&dir).unwrap();
    tiny(&dir);
    rewrite(&dir, "corpus.parquet", |_, _| {
        pq::u32_lists(&[vec![2], vec![0], vec![0, 1]])
    });
    let err = load(&dir).unwrap().kg_index().unwrap_err().to_string();
    assert!(
        err.contains("corpus.parquet") && err.contains("row 1") && err.contains("`kg_reach`"),
        "{err}"
    );
}

#[test]
fn export_round_trips_simgraph_and_subquery_vectors() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("sq");
    let mut r = raw();
    r.questions[0].decomposition = Some(vec![
        SubQuestion {
            question: "who founded the company".into(),
            answer: "Alpha".into(),
            gold: vec!["a".into()],
        },
        SubQuestion {
            question: "where was #1 born".into(),
            answer: "a city".into(),
            gold: vec!["b".into()],
        },
    ]);
    // a graph with edges on this tiny corpus: keep everything
    let cfg = PrepareConfig {
        simgraph: SimGraphConfig {
            min_similarity: -1.0,
            ..Default::default()
        },
        ..Default::default()
    };
    let calls = std::rc::Rc::new(std::cell::Cell::new(0));
    let (m, _) = prepare(&source(), || Ok(r), &cfg, &mut fake(8, calls.clone()), &dir).unwrap();
    let e = load(&dir).unwrap();
    assert_eq!(m.export_version, EXPORT_VERSION);
    let g = e.simgraph().unwrap();
    assert_eq!(g.num_edges(), 3, "3 chunks, all pairs kept");
    assert_eq!(
        (m.stats.simgraph_edges, m.stats.simgraph_communities),
        (3, g.num_communities())
    );
    let v = e.embeddings().unwrap();
    let built = SimGraph::build(v, e.dim, &cfg.simgraph);
    assert_eq!(g, &built);
    assert_eq!(
        g.weight(0, 2),
        Some(crate::simgraph::dot(&v[..8], &v[16..24]))
    );
    // sub-query vectors: hop 2's `#1` became hop 1's answer
    let texts = subquery_texts(e.queries[0].decomposition.as_ref().unwrap());
    assert_eq!(
        texts,
        vec!["who founded the company", "where was Alpha born"]
    );
    let subs = e.subquery_vectors(0).unwrap().unwrap();
    assert_eq!(subs.len(), 2);
    let mut f = fake(8, calls);
    let want = (f.embed)(
        &["who founded the company", "where was Alpha born"],
        crate::model::Role::Query,
        "x",
    )
    .unwrap();
    assert_eq!(subs[0], &want[0][..]);
    assert_eq!(subs[1], &want[1][..]);
    assert!(e.subquery_embeddings().unwrap()[1].is_none());
    assert!(e.subquery_vectors(1).unwrap().is_none());
    // the default config prunes below 0.60 and differs in key
    let d = tmp.path().join("d");
    tiny(&d);
    assert_ne!(read_manifest(&d).unwrap().input_key, m.input_key);
}

#[test]
fn a_subquery_column_that_disagrees_with_the_decomposition_is_refused_when_read() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("sq");
    let mut r = raw();
    r.questions[0].decomposition = Some(vec![SubQuestion {
        question: "who".into(),
        answer: "Alpha".into(),
        gold: vec!["a".into()],
    }]);
    prepare_raw(&dir, r);
    let path = dir.join("queries.parquet");
    let batch = pq::read(&path).unwrap();
    let schema = batch.schema();
    let cols: Vec<(&str, arrow_array::ArrayRef)> = schema
        .fields()
        .iter()
        .zip(batch.columns())
        .map(|(f, a)| {
            let a = if f.name() == "subquery_embeddings" {
                f32_lists(&[Some(vec![0.5; 3]), None])
            } else {
                a.clone()
            };
            (f.name().as_str(), a)
        })
        .collect();
    pq::write(&path, cols).unwrap();
    record_hash(&dir, "queries.parquet");
    // the export loads (no leg has asked for the vectors); their first read refuses them, and
    // so does every read after
    let e = load(&dir).unwrap();
    for _ in 0..2 {
        let err = e.subquery_embeddings().unwrap_err().to_string();
        assert!(
            err.contains("queries.parquet")
                && err.contains("q1")
                && err.contains("`subquery_embeddings`")
                && err.contains("row 0"),
            "{err}"
        );
    }
    assert!(e.subquery_vectors(1).is_err() && e.read_all().is_err());
}

#[test]
fn subquery_texts_resolve_multi_digit_and_unknown_references() {
    let sq = |q: &str, a: &str| SubQuestion {
        question: q.into(),
        answer: a.into(),
        gold: vec![],
    };
    let d = vec![sq("x", "A1"), sq("#1 and #2 and #12 and #", "B")];
    assert_eq!(subquery_texts(&d)[1], "A1 and B and #12 and #");
}

#[test]
fn building_twice_gives_identical_files() {
    let tmp = tempfile::tempdir().unwrap();
    let a = tiny(&tmp.path().join("a"));
    let b = tiny(&tmp.path().join("b"));
    assert_eq!(a.files, b.files);
    assert_eq!(a.files.len(), EXPORT_FILES.len());
    assert_eq!(a.content_hash(), b.content_hash());
    for f in EXPORT_FILES {
        assert_eq!(
            hash_file(&tmp.path().join("a").join(f)).unwrap(),
            hash_file(&tmp.path().join("b").join(f)).unwrap(),
            "{f}"
        );
    }
}

#[test]
fn a_modified_export_file_is_refused_on_load() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t");
    let calls = std::rc::Rc::new(std::cell::Cell::new(0));
    prepare(
        &source(),
        || Ok(raw()),
        &PrepareConfig::default(),
        &mut fake(8, calls.clone()),
        &dir,
    )
    .unwrap();
    std::fs::write(dir.join("bm25-stats.json"), b"{}").unwrap();
    let err = load(&dir).unwrap_err().to_string();
    assert!(
        err.contains("bm25-stats.json") && err.contains("modified"),
        "{err}"
    );
    // and prepare rebuilds it instead of reusing it
    let (_, how) = prepare(
        &source(),
        || Ok(raw()),
        &PrepareConfig::default(),
        &mut fake(8, calls),
        &dir,
    )
    .unwrap();
    assert_eq!(how, Prepared::Written);
    load(&dir).unwrap();
}

#[test]
fn the_input_key_is_a_pinned_serialisation() {
    // the key is blake3 over a JSON object with sorted keys; a change of that serialisation
    // (a renamed field, a serde_json feature that keeps insertion order) would silently
    // re-prepare every export, so the bytes are pinned here
    let m = planned_manifest(&source(), &PrepareConfig::default(), "model@1", 8).unwrap();
    assert_eq!(m.format, "test");
    assert_eq!(m.extra, blake3::hash(b"x").to_hex().to_string());
    assert_eq!(
        m.input_key,
        "f8752f0b17e25e09f932c810cff6ed9fed6cb2378211846985718ccc47ce1ce5"
    );
}

#[test]
fn a_manifest_must_list_exactly_the_exports_files_and_each_a_regular_file() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("e");
    prepare_raw(&dir, raw());
    assert!(load(&dir).is_ok());
    let manifest = dir.join("manifest.json");
    let good = std::fs::read_to_string(&manifest).unwrap();
    let edit = |f: &dyn Fn(&mut serde_json::Value)| {
        let mut m: serde_json::Value = serde_json::from_str(&good).unwrap();
        f(&mut m);
        std::fs::write(&manifest, serde_json::to_string(&m).unwrap()).unwrap();
        load(&dir).err().map(|e| e.to_string()).unwrap_or_default()
    };
    // a name that leads out of the export is never read (it would be read whole)
    let e = edit(&|m| m["files"]["/dev/zero"] = serde_json::json!("00"));
    assert!(e.contains("manifest.json") && e.contains("`files`"), "{e}");
    // a file left out would load unverified
    let e = edit(&|m| {
        m["files"].as_object_mut().unwrap().remove("corpus.parquet");
    });
    assert!(e.contains("`files`"), "{e}");
    let e = edit(&|m| m["files"] = serde_json::json!({}));
    assert!(e.contains("`files`"), "{e}");
    // a listed name that is a directory, not a file
    std::fs::write(&manifest, &good).unwrap();
    std::fs::remove_file(dir.join("kg-edges.parquet")).unwrap();
    std::fs::create_dir(dir.join("kg-edges.parquet")).unwrap();
    let e = load(&dir).err().unwrap().to_string();
    assert!(
        e.contains("kg-edges.parquet") && e.contains("not a regular file"),
        "{e}"
    );
}

/// `raw()` with spans for two of its passages, as a chunked documents dataset would have.
fn spanned() -> SpannedDataset {
    let mut spans = BTreeMap::new();
    spans.insert("a".to_string(), Span { start: 0, end: 33 });
    spans.insert("b".to_string(), Span { start: 40, end: 90 });
    SpannedDataset { raw: raw(), spans }
}

#[test]
fn spans_round_trip_as_char_start_and_char_end() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("s");
    let calls = std::rc::Rc::new(std::cell::Cell::new(0));
    let cfg = PrepareConfig::default();
    prepare_spanned(
        &source(),
        || Ok(spanned()),
        &cfg,
        &mut fake(8, calls),
        &dir,
        Parts::all(),
    )
    .unwrap();
    let e = load(&dir).unwrap();
    let got: Vec<(&str, Option<Span>)> = e.chunks.iter().map(|c| (c.id.as_str(), c.span)).collect();
    assert_eq!(
        got,
        [
            ("a", Some(Span { start: 0, end: 33 })),
            ("b", Some(Span { start: 40, end: 90 })),
            ("c", None),
        ]
    );
    let table = pq::Table::read(dir.join("corpus.parquet")).unwrap();
    let cols = table.columns();
    assert_eq!(
        cols.opt_u32s("char_start").unwrap(),
        [Some(0), Some(40), None]
    );
    assert_eq!(
        cols.opt_u32s("char_end").unwrap(),
        [Some(33), Some(90), None]
    );
    // an export without spans has the columns too, all null
    let plain = tmp.path().join("p");
    tiny(&plain);
    assert!(load(&plain)
        .unwrap()
        .chunks
        .iter()
        .all(|c| c.span.is_none()));
}

#[test]
fn bad_spans_are_errors_naming_the_passage() {
    let tmp = tempfile::tempdir().unwrap();
    let build = |s: SpannedDataset| {
        let calls = std::rc::Rc::new(std::cell::Cell::new(0));
        let dir = tmp.path().join("x");
        let cfg = PrepareConfig::default();
        prepare_spanned(
            &source(),
            || Ok(s),
            &cfg,
            &mut fake(8, calls),
            &dir,
            Parts::all(),
        )
        .unwrap_err()
        .to_string()
    };
    let mut s = spanned();
    s.spans.insert("zz".into(), Span { start: 0, end: 1 });
    let e = build(s);
    assert!(
        e.contains("record zz") && e.contains("a span of no passage"),
        "{e}"
    );
    let mut s = spanned();
    s.spans.insert("c".into(), Span { start: 5, end: 5 });
    let e = build(s);
    assert!(e.contains("record c") && e.contains("`char_end`"), "{e}");
    let mut s = spanned();
    s.raw.passages[0].doc = None;
    s.spans.insert("c".into(), Span { start: 0, end: 5 });
    let e = build(s);
    assert!(e.contains("without a document"), "{e}");
    assert!(!tmp.path().join("x").exists(), "nothing half-written");
}

#[test]
fn an_export_of_another_layout_version_is_rebuilt_never_read() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("old");
    let m = tiny(&dir);
    // what an export of the previous layout looks like to this build: its manifest says so,
    // and its input key (which hashes the version) is not the one this build plans
    let mut old = serde_json::to_value(&m).unwrap();
    old["export_version"] = serde_json::json!(EXPORT_VERSION - 1);
    old["input_key"] = serde_json::json!("key-of-the-old-layout");
    std::fs::write(
        dir.join("manifest.json"),
        serde_json::to_string_pretty(&old).unwrap(),
    )
    .unwrap();
    let e = load(&dir).unwrap_err().to_string();
    assert!(
        e.contains("manifest.json")
            && e.contains("`export_version`")
            && e.contains("re-run prepare"),
        "{e}"
    );
    let calls = std::rc::Rc::new(std::cell::Cell::new(0));
    let (m2, how) = prepare(
        &source(),
        || Ok(raw()),
        &PrepareConfig::default(),
        &mut fake(8, calls),
        &dir,
    )
    .unwrap();
    assert_eq!(how, Prepared::Written);
    assert_eq!(m2.export_version, EXPORT_VERSION);
    load(&dir).unwrap();
}

#[test]
fn a_span_column_out_of_shape_is_refused_on_load() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("s");
    let calls = std::rc::Rc::new(std::cell::Cell::new(0));
    let cfg = PrepareConfig::default();
    prepare_spanned(
        &source(),
        || Ok(spanned()),
        &cfg,
        &mut fake(8, calls),
        &dir,
        Parts::all(),
    )
    .unwrap();
    let corpus = dir.join("corpus.parquet");
    let good = std::fs::read(&corpus).unwrap();
    let with_ends = |ends: Vec<Option<u32>>| {
        std::fs::write(&corpus, &good).unwrap();
        let batch = pq::read(&corpus).unwrap();
        let schema = batch.schema();
        let cols: Vec<(&str, arrow_array::ArrayRef)> = schema
            .fields()
            .iter()
            .zip(batch.columns())
            .map(|(f, a)| match f.name().as_str() {
                "char_end" => (f.name().as_str(), pq::opt_u32s(&ends)),
                n => (n, a.clone()),
            })
            .collect();
        pq::write(&corpus, cols).unwrap();
        record_hash(&dir, "corpus.parquet");
        load(&dir).err().map(|e| e.to_string()).unwrap_or_default()
    };
    let e = with_ends(vec![None, Some(90), None]);
    assert!(
        e.contains("row 0 (chunk \"a\")") && e.contains("null"),
        "{e}"
    );
    let e = with_ends(vec![Some(0), Some(90), None]);
    assert!(
        e.contains("row 0") && e.contains("not above char_start"),
        "{e}"
    );
    assert_eq!(with_ends(vec![Some(33), Some(90), None]), "");
}

#[test]
fn a_file_hashed_through_the_buffer_has_the_hash_of_its_bytes() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("f");
    let buffer = 1usize << 24;
    for len in [0, 1, buffer - 1, buffer, buffer + 1, 2 * buffer + 5] {
        let bytes: Vec<u8> = (0..len).map(|i| (i * 31 % 251) as u8).collect();
        std::fs::write(&path, &bytes).unwrap();
        assert_eq!(
            hash_file(&path).unwrap(),
            blake3::hash(&bytes).to_hex().to_string(),
            "{len} bytes"
        );
    }
    assert!(hash_file(&tmp.path().join("absent")).is_err());
}

#[test]
fn the_head_is_the_loaded_exports_queries_and_only_of_an_intact_current_export() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t");
    let calls = std::rc::Rc::new(std::cell::Cell::new(0));
    let (m, _) = prepare(
        &source(),
        || Ok(raw()),
        &PrepareConfig::default(),
        &mut fake(8, calls),
        &dir,
    )
    .unwrap();
    let head = read_head(&dir, &m.input_key)
        .unwrap()
        .expect("intact and current");
    let e = load(&dir).unwrap();
    assert_eq!(head.manifest, e.manifest);
    let from_load: Vec<(String, Vec<String>)> = e
        .queries
        .iter()
        .map(|q| {
            let gold = q.gold.iter().map(|&g| e.chunks[g as usize].id.clone());
            (q.id.clone(), gold.collect())
        })
        .collect();
    let from_head: Vec<(String, Vec<String>)> = head
        .queries
        .iter()
        .map(|q| (q.id.clone(), q.gold.clone()))
        .collect();
    assert_eq!(from_head, from_load);
    // another input key (a changed input, config or model): prepare would rebuild, no head
    assert!(read_head(&dir, "another key").unwrap().is_none());
    assert!(read_head(&tmp.path().join("absent"), &m.input_key)
        .unwrap()
        .is_none());
    // a damaged corpus, which the head never decodes, is still found by its hash
    let corpus = dir.join("corpus.parquet");
    let mut bytes = std::fs::read(&corpus).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0xff;
    std::fs::write(&corpus, bytes).unwrap();
    assert!(read_head(&dir, &m.input_key).unwrap().is_none());
}

#[test]
fn texts_and_vectors_are_read_on_demand_and_checked_first() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    let mut r = raw();
    r.passages[0].header = Some("World > Gamma".into());
    prepare_raw(&dir, r);
    let e = load(&dir).unwrap();
    // load decoded none of them
    assert!(!e.texts.is_read() && !e.embeddings.is_read() && !e.content_embeddings.is_read());
    assert!(!e.simgraph.is_read() && !e.subquery_embeddings.is_read() && !e.kg.is_read());
    assert_eq!(e.simgraph().unwrap(), &SimGraph::read(&dir, 3).unwrap());
    assert!(e.has_content_embeddings());
    // on demand, each is what the whole-file reader decodes
    let table = pq::Table::read(dir.join("corpus.parquet")).unwrap();
    let cols = table.columns();
    assert_eq!(
        e.embeddings().unwrap(),
        cols.vectors("embedding", 8).unwrap()
    );
    assert!(!e.texts.is_read() && !e.content_embeddings.is_read());
    assert_eq!(
        e.content_embeddings().unwrap().unwrap(),
        cols.vectors("embedding_content", 8).unwrap()
    );
    let texts = e.texts().unwrap();
    assert_eq!(
        texts.iter().map(|t| t.title.clone()).collect::<Vec<_>>(),
        cols.strings("title").unwrap()
    );
    assert_eq!(
        texts.iter().map(|t| t.text.clone()).collect::<Vec<_>>(),
        cols.strings("text").unwrap()
    );
    assert_eq!(
        texts.iter().map(|t| t.header.clone()).collect::<Vec<_>>(),
        cols.opt_strings("context_header").unwrap()
    );
    assert!(texts.iter().all(|t| t.joiner == e.manifest.protocol.joiner));

    // the corpus changed after the export was loaded: a part read before stays, a part read
    // after is refused, naming the file, and refused again without another read
    let later = load(&dir).unwrap();
    later.texts().unwrap();
    // one bit of `file` flipped, at the byte `at(len)`
    let flip = |file: &str, at: fn(usize) -> usize| {
        let path = dir.join(file);
        let mut bytes = std::fs::read(&path).unwrap();
        let i = at(bytes.len());
        bytes[i] ^= 1;
        std::fs::write(&path, bytes).unwrap();
    };
    flip("corpus.parquet", |n| n / 2);
    let err = later.embeddings().unwrap_err().to_string();
    assert!(
        err.contains("corpus.parquet") && err.contains("blake3") && err.contains("re-run prepare"),
        "{err}"
    );
    assert_eq!(later.embeddings().unwrap_err().to_string(), err);
    assert!(later.content_embeddings().is_err());
    assert_eq!(later.texts().unwrap().len(), 3);
    // so is the knowledge graph, read from the corpus's `kg_*` columns too
    assert!(later
        .kg()
        .unwrap_err()
        .to_string()
        .contains("corpus.parquet"));
    // the graph is checked against its own files
    flip(SIMGRAPH_FILES[0], |n| n - 1);
    let err = later.simgraph().unwrap_err().to_string();
    assert!(
        err.contains(SIMGRAPH_FILES[0]) && err.contains("blake3"),
        "{err}"
    );
    // the sub-question vectors are checked against the queries file's hash when read
    flip("queries.parquet", |n| n / 2);
    let err = later.subquery_embeddings().unwrap_err().to_string();
    assert!(
        err.contains("queries.parquet") && err.contains("blake3"),
        "{err}"
    );
    // and the export no longer loads at all
    assert!(load(&dir).is_err());
    // a knowledge graph file changed after load is refused when the graph is read
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("k");
    tiny(&dir);
    let later = load(&dir).unwrap();
    let path = dir.join(crate::enrich::KG_FILES[1]);
    let mut bytes = std::fs::read(&path).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 1;
    std::fs::write(&path, bytes).unwrap();
    let err = later.kg().unwrap_err().to_string();
    assert!(
        err.contains(crate::enrich::KG_FILES[1]) && err.contains("blake3"),
        "{err}"
    );
}

#[test]
fn an_export_without_its_text_vector_or_graph_columns_does_not_load() {
    for dropped in [
        "title",
        "text",
        "context_header",
        "embedding",
        "kg_node_ids",
        "kg_reach",
        "kg_community",
        "kg_node_centrality",
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("d");
        tiny(&dir);
        let path = dir.join("corpus.parquet");
        let batch = pq::read(&path).unwrap();
        let schema = batch.schema();
        let kept: Vec<(&str, arrow_array::ArrayRef)> = schema
            .fields()
            .iter()
            .zip(batch.columns())
            .filter(|(f, _)| f.name() != dropped)
            .map(|(f, a)| (f.name().as_str(), a.clone()))
            .collect();
        pq::write(&path, kept).unwrap();
        record_hash(&dir, "corpus.parquet");
        let err = load(&dir).unwrap_err().to_string();
        assert!(
            err.contains("corpus.parquet")
                && err.contains(&format!("`{dropped}`"))
                && err.contains("missing"),
            "{dropped}: {err}"
        );
    }
}

/// [`raw`] with graded gold: `q1`'s gold `b` at grade 3 (`a` stays grade 1).
fn graded() -> RawDataset {
    let mut r = raw();
    r.questions[0].add_gold("b".into(), 3);
    r
}

#[test]
fn grades_round_trip_where_they_say_something_and_binary_gold_stores_none() {
    let tmp = tempfile::tempdir().unwrap();
    // binary gold: no column, no count, no grades
    let bin = tmp.path().join("binary");
    let m = prepare_raw(&bin, raw());
    assert_eq!(m.stats.graded_gold, None);
    assert!(!pq::column_names(&bin.join("queries.parquet"))
        .unwrap()
        .contains(&"gold_grades".to_string()));
    assert!(load(&bin)
        .unwrap()
        .queries
        .iter()
        .all(|q| q.grades.is_none()));
    assert!(!std::fs::read_to_string(bin.join("manifest.json"))
        .unwrap()
        .contains("graded_gold"));
    // grade 1 given explicitly is binary too
    let mut ones = raw();
    ones.questions[1].add_gold("c".into(), 1);
    let same = tmp.path().join("ones");
    prepare_raw(&same, ones);
    assert_eq!(
        hash_file(&same.join("queries.parquet")).unwrap(),
        hash_file(&bin.join("queries.parquet")).unwrap()
    );
    // graded: a grade per gold chunk, in gold order, for every query
    let dir = tmp.path().join("graded");
    let m = prepare_raw(&dir, graded());
    assert_eq!(m.stats.graded_gold, Some(1));
    let e = load(&dir).unwrap();
    assert_eq!(e.queries[0].gold, vec![0, 1]);
    assert_eq!(e.queries[0].grades, Some(vec![1, 3]));
    assert_eq!(e.queries[1].grades, Some(vec![1]));
    let head = read_head(&dir, &m.input_key).unwrap().unwrap();
    assert_eq!(head.queries[0].grades, Some(vec![1, 3]));
    assert_eq!(head.queries[1].grades, Some(vec![1]));
    // a grade of a passage that is not gold is refused by the build
    let mut stray = raw();
    stray.questions[1].grades.insert("a".into(), 2);
    let calls = std::rc::Rc::new(std::cell::Cell::new(0));
    let err = prepare(
        &source(),
        || Ok(stray),
        &PrepareConfig::default(),
        &mut fake(8, calls),
        &tmp.path().join("stray"),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("q2") && err.contains("not gold"), "{err}");
}

#[test]
fn grades_that_disagree_with_the_gold_or_the_manifest_are_refused_on_load() {
    let tmp = tempfile::tempdir().unwrap();
    let with_grades = |name: &str, grades: Option<Vec<Vec<u32>>>, count: Option<usize>| {
        let dir = tmp.path().join(name);
        prepare_raw(&dir, graded());
        let path = dir.join("queries.parquet");
        let batch = pq::read(&path).unwrap();
        let schema = batch.schema();
        let mut cols: Vec<(&str, arrow_array::ArrayRef)> = Vec::new();
        for (f, a) in schema.fields().iter().zip(batch.columns()) {
            match (f.name().as_str(), &grades) {
                ("gold_grades", None) => {}
                ("gold_grades", Some(g)) => cols.push(("gold_grades", pq::u32_lists(g))),
                (n, _) => cols.push((n, a.clone())),
            }
        }
        pq::write(&path, cols).unwrap();
        record_hash(&dir, "queries.parquet");
        let mut m = read_manifest(&dir).unwrap();
        m.stats.graded_gold = count;
        std::fs::write(
            dir.join("manifest.json"),
            serde_json::to_string_pretty(&m).unwrap(),
        )
        .unwrap();
        let load_err = load(&dir).unwrap_err().to_string();
        let head_err = read_head(&dir, &m.input_key)
            .map(|_| String::new())
            .unwrap_or_else(|e| e.to_string());
        (load_err, head_err)
    };
    for (name, grades, count, needle) in [
        (
            "short",
            Some(vec![vec![3], vec![1]]),
            Some(1),
            "has 1 grades for 2 gold chunks",
        ),
        ("zero", Some(vec![vec![0, 3], vec![1]]), Some(1), "grade 0"),
        (
            "count",
            Some(vec![vec![2, 3], vec![1]]),
            Some(1),
            "holds 2 grades other than 1",
        ),
        ("dropped", None, Some(1), "gold_grades"),
        (
            "uncounted",
            Some(vec![vec![1, 3], vec![1]]),
            None,
            "counts no graded gold chunk",
        ),
    ] {
        let (load_err, head_err) = with_grades(name, grades, count);
        assert!(
            load_err.contains("queries.parquet") && load_err.contains(needle),
            "{name}: {load_err}"
        );
        // the head reads the grades the manifest announces, with the same checks
        if name != "uncounted" {
            assert!(head_err.contains(needle), "{name}: {head_err}");
        }
    }
}

#[test]
fn a_part_added_later_is_the_part_a_complete_prepare_builds() {
    let tmp = tempfile::tempdir().unwrap();
    let whole = tiny(&tmp.path().join("whole"));
    let dir = tmp.path().join("grown");
    let calls = std::rc::Rc::new(std::cell::Cell::new(0));
    let cfg = PrepareConfig::default();
    let raw_reads = std::cell::Cell::new(0);
    let prep = |parts: Parts| {
        let raw_spanned = || {
            raw_reads.set(raw_reads.get() + 1);
            Ok(SpannedDataset::from(raw()))
        };
        prepare_spanned(
            &source(),
            raw_spanned,
            &cfg,
            &mut fake(8, calls.clone()),
            &dir,
            parts,
        )
        .unwrap()
    };
    let (core, how) = prep(Parts::NONE);
    assert_eq!(how, Prepared::Written);
    assert_eq!(core.parts(), Some(Parts::NONE));
    for f in crate::simgraph::SIMGRAPH_FILES {
        assert!(!dir.join(f).exists() && !core.files.contains_key(f), "{f}");
    }
    assert_eq!(
        (core.stats.simgraph_edges, core.stats.simgraph_communities),
        (0, 0)
    );
    // the export without the graph loads, and asking for the graph names what is missing
    let e = load(&dir).unwrap();
    e.read_all().unwrap();
    let err = e.simgraph().unwrap_err().to_string();
    assert!(
        err.contains("no similarity graph") && err.contains("manifest.json"),
        "{err}"
    );
    drop(e);
    // asking for no part reuses it; asking for the graph adds it, nothing else rebuilt
    let embedded = calls.get();
    let (_, how) = prep(Parts::NONE);
    assert_eq!(how, Prepared::Reused);
    let (grown, how) = prep(Parts::all());
    assert_eq!(how, Prepared::Extended(Parts::all()));
    assert_eq!(raw_reads.get(), 1, "the raw dataset is not read again");
    assert_eq!(calls.get(), embedded, "nothing is embedded again");
    // byte for byte the complete export: every file, the content hash, the counts
    assert_eq!(grown.files, whole.files);
    assert_eq!(grown.content_hash(), whole.content_hash());
    assert_eq!(grown.stats, whole.stats);
    // the core's identity is the same before and after the part was added; the part has its own
    assert_eq!(core.core_hash(), grown.core_hash());
    assert_ne!(core.core_hash(), grown.content_hash());
    assert_eq!(core.part_hash(Part::SimGraph), None);
    let part = grown.part_hash(Part::SimGraph).unwrap();
    assert_eq!(whole.part_hash(Part::SimGraph), Some(part));
    assert_eq!(read_manifest(&dir).unwrap(), grown);
    let e = load(&dir).unwrap();
    assert_eq!(
        e.simgraph().unwrap().num_edges(),
        whole.stats.simgraph_edges
    );
    assert!(!std::fs::read_dir(&dir).unwrap().any(|f| f
        .unwrap()
        .file_name()
        .to_string_lossy()
        .starts_with('.')));
    // a later run that needs fewer parts keeps the ones the export has
    let (kept, how) = prep(Parts::NONE);
    assert_eq!((how, kept.parts()), (Prepared::Reused, Some(Parts::all())));
}

#[test]
fn a_manifest_listing_half_a_part_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t");
    tiny(&dir);
    let mut m = read_manifest(&dir).unwrap();
    m.files.remove(crate::simgraph::SIMGRAPH_FILES[1]);
    std::fs::write(
        dir.join("manifest.json"),
        serde_json::to_string(&m).unwrap(),
    )
    .unwrap();
    let err = load(&dir).unwrap_err().to_string();
    assert!(err.contains("whole optional parts"), "{err}");
    // and prepare rebuilds it rather than trusting it
    let calls = std::rc::Rc::new(std::cell::Cell::new(0));
    let (_, how) = prepare(
        &source(),
        || Ok(raw()),
        &PrepareConfig::default(),
        &mut fake(8, calls),
        &dir,
    )
    .unwrap();
    assert_eq!(how, Prepared::Written);
}

/// Prepares `r` with `model` into `dir`, the corpus written in row groups of `group` rows.
fn prepare_in_groups(
    r: RawDataset,
    model: &mut EmbedFn<'_>,
    dir: &Path,
    group: usize,
) -> Result<(Manifest, Prepared)> {
    pq::with_group_rows(group, || {
        prepare(&source(), || Ok(r), &PrepareConfig::default(), model, dir)
    })
}

/// The tiny dataset with a context header on one passage, so content-only vectors are made.
fn with_header() -> RawDataset {
    let mut r = raw();
    r.passages[0].header = Some("World > Gamma".into());
    r
}

#[test]
fn passages_embedded_a_slice_at_a_time_are_the_vectors_of_one_call() {
    let tmp = tempfile::tempdir().unwrap();
    let build = |name: &str, group: usize| {
        let dir = tmp.path().join(name);
        let sizes = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        let mut model = fake(8, std::rc::Rc::new(std::cell::Cell::new(0)));
        let mut inner = std::mem::replace(&mut model.embed, Box::new(|_, _, _| unreachable!()));
        let seen = sizes.clone();
        model.embed = Box::new(move |texts, role, label| {
            seen.borrow_mut().push((label.to_string(), texts.len()));
            inner(texts, role, label)
        });
        prepare_in_groups(with_header(), &mut model, &dir, group).unwrap();
        let e = load(&dir).unwrap();
        let vectors = (
            e.embeddings().unwrap().to_vec(),
            e.content_embeddings().unwrap().map(<[f32]>::to_vec),
        );
        let calls = sizes.borrow().clone();
        (vectors, calls)
    };
    let (whole, whole_calls) = build("whole", pq::GROUP_ROWS);
    let (grouped, grouped_calls) = build("grouped", 2);
    assert!(whole.1.is_some(), "the header makes content-only vectors");
    assert_eq!(whole, grouped);
    let passages = |calls: &[(String, usize)]| -> Vec<(String, usize)> {
        calls
            .iter()
            .filter(|(l, _)| l.starts_with("passages"))
            .cloned()
            .collect()
    };
    let named = |v: &[(&str, usize)]| -> Vec<(String, usize)> {
        v.iter().map(|&(l, n)| (l.to_string(), n)).collect()
    };
    assert_eq!(
        passages(&whole_calls),
        named(&[("passages", 3), ("passages (content only)", 3)])
    );
    // header+content and content only for rows 1-2, then for row 3, each named by its rows
    assert_eq!(
        passages(&grouped_calls),
        named(&[
            ("passages 1-2 of 3", 2),
            ("passages (content only) 1-2 of 3", 2),
            ("passages 3-3 of 3", 1),
            ("passages (content only) 3-3 of 3", 1),
        ])
    );
}

#[test]
fn a_bad_vector_in_a_later_slice_names_its_chunk_in_the_whole_corpus() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("bad");
    let mut model = fake(8, std::rc::Rc::new(std::cell::Cell::new(0)));
    let mut inner = std::mem::replace(&mut model.embed, Box::new(|_, _, _| unreachable!()));
    // chunk `c` (the third by id) gets a vector of the wrong width
    model.embed = Box::new(move |texts, role, label| {
        let mut v = inner(texts, role, label)?;
        for (t, v) in texts.iter().zip(&mut v) {
            if t.contains("unrelated") {
                v.truncate(5);
            }
        }
        Ok(v)
    });
    let err = prepare_in_groups(raw(), &mut model, &dir, 2)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("<embedder output for passages>") && err.contains("record 2"),
        "{err}"
    );
    assert!(!dir.exists(), "nothing half-written");
    assert_eq!(
        std::fs::read_dir(tmp.path()).unwrap().count(),
        0,
        "no staging left"
    );
}

#[test]
fn mapped_vectors_are_the_column_written_once_and_checked_on_every_open() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("exports").join("m");
    let mut r = raw();
    r.passages[0].header = Some("World > Gamma".into());
    prepare_raw(&dir, r);
    let e = load(&dir).unwrap();
    let path = mapped_path(&dir, &e.vectors_key(), "embedding");
    assert!(path.starts_with(tmp.path().join("shards").join("m")));
    assert!(!path.exists());
    // written on first use: the column's rows, and nothing else left in the directory
    let m = e.mapped_vectors("embedding").unwrap();
    assert_eq!(m.rows().unwrap(), e.embeddings().unwrap());
    // a row read at its offset is the row of the map
    let mut row = vec![0.0f32; e.dim];
    for (i, want) in e.embeddings().unwrap().chunks_exact(e.dim).enumerate() {
        m.read_row(i, &mut row).unwrap();
        assert_eq!(row, want, "row {i}");
    }
    let err = m.read_row(3, &mut row).unwrap_err().to_string();
    assert!(
        err.contains("row 3") && err.contains("not a row of 3 x 8"),
        "{err}"
    );
    // a block read at its offset (what a shard's build reads) is the same values, and one
    // past the end is refused, naming the file
    use crate::hnsw::Rows;
    let all = e.embeddings().unwrap();
    assert_eq!(m.values(), all.len());
    let mut block = vec![0.0f32; 2 * e.dim + 1];
    m.read_values(e.dim - 1, &mut block).unwrap();
    assert_eq!(block, all[e.dim - 1..3 * e.dim]);
    let err = m.read_values(e.dim, &mut block).unwrap_err().to_string();
    assert!(
        err.contains(&path.display().to_string()) && err.contains("not within 3 x 8"),
        "{err}"
    );
    assert!(all.read_values(e.dim, &mut block).is_err());
    let c = e.mapped_vectors("embedding_content").unwrap();
    assert_eq!(Some(c.rows().unwrap()), e.content_embeddings().unwrap());
    let listed = |d: &Path| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|f| f.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    let names = listed(path.parent().unwrap());
    assert_eq!(names.len(), 4, "{names:?}");
    assert!(names.iter().all(|n| !n.starts_with('.')), "{names:?}");
    // opened again, not written again
    let written = std::fs::metadata(&path).unwrap().modified().unwrap();
    drop(m);
    let m = e.mapped_vectors("embedding").unwrap();
    assert_eq!(
        std::fs::metadata(&path).unwrap().modified().unwrap(),
        written
    );
    // changed after its check: refused when its rows are asked for, naming it
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[5] ^= 1;
    std::fs::write(&path, &bytes).unwrap();
    let err = m.rows().unwrap_err().to_string();
    assert!(
        err.contains(&path.display().to_string()) && err.contains("changed after"),
        "{err}"
    );
    let err = m.read_row(0, &mut row).unwrap_err().to_string();
    assert!(err.contains("changed after"), "{err}");
    let err = m.read_values(0, &mut block).unwrap_err().to_string();
    assert!(err.contains("changed after"), "{err}");
    // the next open finds it does not verify and writes it again from the corpus
    let again = e.mapped_vectors("embedding").unwrap();
    assert_eq!(again.rows().unwrap(), e.embeddings().unwrap());
    // a sidecar from another export is not trusted either
    let side = path.with_extension("json");
    let text = std::fs::read_to_string(&side).unwrap();
    std::fs::write(&side, text.replace(&e.vectors_key(), "0000")).unwrap();
    let again = e.mapped_vectors("embedding").unwrap();
    assert_eq!(again.rows().unwrap(), e.embeddings().unwrap());
    assert!(std::fs::read_to_string(&side)
        .unwrap()
        .contains(&e.vectors_key()));
    // written again where a whole file already lies (a process that lost its sidecar, or
    // raced another to write): the file in place, which others may have mapped, is kept
    let held = e.mapped_vectors("embedding").unwrap();
    std::fs::remove_file(&side).unwrap();
    let inode = |p: &Path| std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(p).unwrap());
    let before = inode(&path);
    let again = e.mapped_vectors("embedding").unwrap();
    assert_eq!(inode(&path), before);
    assert_eq!(held.rows().unwrap(), again.rows().unwrap());
    // a column the corpus lacks is an error naming it, and leaves nothing behind
    let err = e.mapped_vectors("no_such").unwrap_err().to_string();
    assert!(err.contains("no_such") && err.contains("missing"), "{err}");
    assert_eq!(listed(path.parent().unwrap()), names);
}

#[test]
fn a_load_keeping_some_queries_vectors_holds_those_alone_as_the_whole_load_reads_them() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    let mut r = raw();
    r.questions
        .push(Question::new("q3", "alpha founded", vec!["a".into()]));
    prepare_raw(&dir, r);
    let all = load(&dir).unwrap();
    assert_eq!(all.queries.len(), 3);
    // out of order, twice, and a position past the queries: q3 and q1 are held, once each
    let seen = std::cell::Cell::new(0);
    let keep = |qs: &[QueryRecord]| {
        seen.set(qs.len());
        vec![2, 0, 2, 7]
    };
    let some = load_keeping(&dir, Some(&keep)).unwrap();
    assert_eq!(
        seen.get(),
        3,
        "the records are read whole before the choice"
    );
    assert_eq!(some.queries, all.queries);
    for q in [0, 2] {
        assert_eq!(some.query_embedding(q), all.query_embedding(q));
        assert_eq!(some.query_embedding(q).len(), all.dim);
    }
    assert_ne!(some.query_embedding(0), some.query_embedding(2));
    assert_eq!(some.query_vectors.data.len(), 2 * all.dim);
    let unheld = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        some.query_embedding(1).to_vec()
    }))
    .unwrap_err();
    let msg = unheld.downcast_ref::<String>().unwrap();
    assert!(msg.contains("query 1's vector is not held"), "{msg}");
    // keeping none holds none, and still reads and checks every row
    let none = load_keeping(&dir, Some(&|_| Vec::new())).unwrap();
    assert!(none.query_vectors.data.is_empty());
    assert_eq!(none.queries, all.queries);
}

#[test]
fn an_export_of_texts_spilled_in_several_blocks_is_the_held_texts_export() {
    // more chunks than two spilled blocks, in an order the build must sort, a header on some
    let n = 2 * super::texts::BLOCK_ROWS + 3;
    let names = ["Alpha", "Beta", "Gamma", "Delta Force"];
    let mut r = raw();
    r.passages = (0..n)
        .rev()
        .map(|i| {
            let mut p = passage(
                &format!("p{i:06}"),
                names[i % names.len()],
                &format!("{} met {} in {i}.", names[(i + 1) % 4], names[(i + 2) % 4]),
            );
            if i % 5 == 0 {
                p.header = Some(format!("Section {i}"));
            }
            p
        })
        .collect();
    r.questions = vec![Question::new("q", "alpha met beta", vec!["p000007".into()])];
    let tmp = tempfile::tempdir().unwrap();
    let calls = std::rc::Rc::new(std::cell::Cell::new(0));
    prepare(
        &source(),
        || Ok(r.clone()),
        &PrepareConfig::default(),
        &mut fake(8, calls),
        tmp.path(),
    )
    .unwrap();
    let e = load(tmp.path()).unwrap();
    // what the build reads back is what it was handed, in chunk order
    let mut sorted = r.passages.clone();
    source().protocol.apply(&mut sorted);
    sorted.sort_by(|a, b| a.id.cmp(&b.id));
    let held: Vec<ChunkText> = sorted
        .into_iter()
        .map(|p| ChunkText {
            title: p.title,
            text: p.text,
            header: p.header,
            joiner: source().protocol.joiner,
        })
        .collect();
    assert_eq!(e.texts().unwrap(), held.as_slice());
    let full: Vec<String> = held.iter().map(ChunkText::full_text).collect();
    let bm25 = Bm25Index::build(&full, &Tokenizer::english(), PrepareConfig::default().bm25);
    assert_eq!(e.bm25.doc_len(), bm25.doc_len());
    let kg = enrich::build(&held, &EnrichConfig::default());
    let loaded = e.kg().unwrap();
    assert_eq!(loaded.nodes, kg.nodes);
    assert_eq!(loaded.chunk_nodes, kg.chunk_nodes);
    assert_eq!(loaded.hyperedges, kg.hyperedges);
    assert_eq!(e.kg_index().unwrap().edges().collect::<Vec<_>>(), kg.edges);
}

/// A second fake model, of another dimension and telling queries from passages (as a model
/// with prompts does), so a vector in the wrong role or from the wrong model shows.
fn other_model(calls: std::rc::Rc<std::cell::Cell<usize>>) -> EmbedFn<'static> {
    let dim = 12;
    EmbedFn {
        model_id: "other@1".into(),
        dim,
        embed: Box::new(move |texts, role, _| {
            calls.set(calls.get() + texts.len());
            Ok(texts
                .iter()
                .map(|t| {
                    let mut v = vec![0.0f32; dim];
                    v[0] = if role == crate::model::Role::Query {
                        3.0
                    } else {
                        0.5
                    };
                    for (i, b) in t.bytes().enumerate() {
                        v[(b as usize * 7 + i) % dim] += 1.0;
                    }
                    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-9);
                    v.iter().map(|x| x / n).collect()
                })
                .collect())
        }),
    }
}

/// A dataset with every vector set: headers (content-only vectors) and a decomposition.
fn every_set() -> RawDataset {
    let mut r = with_header();
    r.questions[0].decomposition = Some(vec![
        SubQuestion {
            question: "who founded the company".into(),
            answer: "Alpha".into(),
            gold: vec!["a".into()],
        },
        SubQuestion {
            question: "where was #1 born".into(),
            answer: "a city".into(),
            gold: vec!["b".into()],
        },
    ]);
    r
}

#[test]
fn another_models_part_holds_the_vectors_preparing_with_that_model_writes() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    let calls = std::rc::Rc::new(std::cell::Cell::new(0));
    let cfg = PrepareConfig::default();
    prepare(
        &source(),
        || Ok(every_set()),
        &cfg,
        &mut fake(8, calls.clone()),
        &a,
    )
    .unwrap();
    prepare(
        &source(),
        || Ok(every_set()),
        &cfg,
        &mut other_model(calls.clone()),
        &b,
    )
    .unwrap();
    let own = load(&a).unwrap();
    let want = load(&b).unwrap();
    let mut other = other_model(calls.clone());
    let (part, how) = model_part(&own, &mut other).unwrap();
    assert_eq!(how, PartBuild::Built);
    assert_eq!(part.dir, model_part_dir(&a, "other@1"));
    let view = load_with_model(&a, None, &part).unwrap();
    // every vector set is the one an export prepared with the other model holds
    assert_eq!((view.dim, view.model_id()), (12, "other@1"));
    assert_eq!(view.embeddings().unwrap(), want.embeddings().unwrap());
    assert_eq!(
        view.content_embeddings().unwrap(),
        want.content_embeddings().unwrap()
    );
    assert!(view.content_embeddings().unwrap().is_some());
    for q in 0..view.queries.len() {
        assert_eq!(
            view.query_embedding(q),
            want.query_embedding(q),
            "query {q}"
        );
    }
    assert_eq!(
        view.subquery_embeddings().unwrap(),
        want.subquery_embeddings().unwrap()
    );
    // everything else is the export's own, and the caches over the vectors are keyed apart
    assert_eq!(view.chunks, own.chunks);
    assert_eq!(view.manifest, own.manifest);
    assert_eq!(own.vectors_key(), own.manifest.core_hash());
    assert_ne!(view.vectors_key(), own.vectors_key());
    assert_eq!(
        view.mapped_vectors("embedding").unwrap().rows().unwrap(),
        want.embeddings().unwrap()
    );
    // a view keeping some queries' vectors holds those
    let keep = |_: &[QueryRecord]| vec![1usize];
    let some = load_with_model(&a, Some(&keep), &part).unwrap();
    assert_eq!(some.query_embedding(1), want.query_embedding(1));
    // asked again: reused, nothing embedded
    let before = calls.get();
    let (again, how) = model_part(&own, &mut other_model(calls.clone())).unwrap();
    assert_eq!((how, calls.get()), (PartBuild::Reused, before));
    assert_eq!(again, part);
}

#[test]
fn a_damaged_or_foreign_model_part_is_rebuilt_and_a_mismatched_one_never_loads() {
    let tmp = tempfile::tempdir().unwrap();
    let a = tmp.path().join("a");
    let calls = std::rc::Rc::new(std::cell::Cell::new(0));
    prepare(
        &source(),
        || Ok(every_set()),
        &PrepareConfig::default(),
        &mut fake(8, calls.clone()),
        &a,
    )
    .unwrap();
    let own = load(&a).unwrap();
    let (part, _) = model_part(&own, &mut other_model(calls.clone())).unwrap();
    let good = part.read(PartSet::Passages).unwrap();
    // a changed byte: refused when read, rebuilt when asked for
    let file = part.path(PartSet::Passages);
    let mut bytes = std::fs::read(&file).unwrap();
    bytes[5] ^= 0x40;
    std::fs::write(&file, &bytes).unwrap();
    let e = part.read(PartSet::Passages).unwrap_err().to_string();
    assert!(e.contains("passages.f32") && e.contains("blake3"), "{e}");
    let (fixed, how) = model_part(&own, &mut other_model(calls.clone())).unwrap();
    assert_eq!(how, PartBuild::Replaced);
    assert_eq!(fixed.read(PartSet::Passages).unwrap(), good);
    // a part of another export (its manifest names another input key) is rebuilt, and never
    // loads as this export's
    let mpath = part.dir.join("manifest.json");
    let text = std::fs::read_to_string(&mpath).unwrap();
    let foreign = text.replace(&own.manifest.input_key, &"0".repeat(64));
    std::fs::write(&mpath, &foreign).unwrap();
    let mut stale = fixed.clone();
    stale.manifest.export_key = "0".repeat(64);
    let e = load_with_model(&a, None, &stale).unwrap_err().to_string();
    assert!(
        e.contains("export_key") && e.contains("another export"),
        "{e}"
    );
    assert_eq!(
        model_part(&own, &mut other_model(calls.clone())).unwrap().1,
        PartBuild::Replaced
    );
    // rows that disagree with the export: named
    let mut short = fixed.clone();
    short.manifest.rows.insert("queries.f32".into(), 1);
    let e = load_with_model(&a, None, &short).unwrap_err().to_string();
    assert!(
        e.contains("queries.f32") && e.contains("1 rows") && e.contains("2 rows"),
        "{e}"
    );
    // a file in the way of the part: set aside and rebuilt
    std::fs::remove_dir_all(&part.dir).unwrap();
    std::fs::write(&part.dir, b"in the way").unwrap();
    let (p, how) = model_part(&own, &mut other_model(calls)).unwrap();
    assert_eq!(how, PartBuild::Replaced);
    assert_eq!(p.read(PartSet::Passages).unwrap(), good);
}
