//! `export::load` on a damaged copy of a valid export.
//!
//! Once per process a small valid export is prepared (hand-made dataset: 5 passages, one with a
//! context header, one untitled, one without a document; 3 queries with chain, decomposition,
//! conversation and labels; a fake 4-dimensional embedder, so no model is needed). Each input
//! rewrites every file of it into the scratch dir, damages one, and loads it.
//!
//! Input: `data[0]` picks the file (`% 11`: 0 = `manifest.json`, 1..=10 = `EXPORT_FILES`) and the
//! mode (`/ 11 % 4`); `data[1..]` is the payload.
//!
//! | mode | what happens to the file | manifest hash of the file |
//! |---|---|---|
//! | 0 | replaced by the payload | left as built (load mostly stops at the hash check) |
//! | 1 | replaced by the payload | rewritten to match |
//! | 2 | payload = 3-byte offset (LE, mod len+1) + bytes written over the file from there | rewritten |
//! | 3 | payload = 3-byte offset + bytes inserted there (no bytes: truncated there) | rewritten |
//!
//! For `manifest.json` in modes 1-3 "rewritten" means: the damaged manifest is parsed as JSON
//! and, if it has a `files` object, every entry naming a file of the export gets that file's
//! real hash, so the fuzzer can reach everything behind the check with any other field changed.
//!
//! Known findings are skipped (see `negative_column_range`) unless `HOPBENCH_FUZZ_NO_GUARDS=1`.
//! `HOPBENCH_FUZZ_VERBOSE=1` prints what `load` returned for each input.
//! `HOPBENCH_FUZZ_EXPORT_SEEDS=<dir>` makes the first run write full-file seeds there (each
//! export file in mode 1, byte-identical, so they load; see `scripts/fuzz.sh`).
#![no_main]

use std::collections::BTreeMap;
use std::sync::OnceLock;

use hopbench_datasets::export::{self, EmbedFn, PrepareConfig, Source, EXPORT_FILES};
use hopbench_datasets::lexical::Tokenizer;
use hopbench_datasets::{Passage, Question, RawDataset, SubQuestion, Turn};
use hopbench_fuzz::{scratch_dir, verbose};
use libfuzzer_sys::fuzz_target;

const DIM: usize = 4;
const MODES: u8 = 4;

struct Base {
    /// `manifest.json` first, then `EXPORT_FILES`, with their bytes.
    files: Vec<(&'static str, Vec<u8>)>,
    manifest: serde_json::Value,
}

fn passage(id: &str, doc: Option<&str>, title: &str, text: &str, header: Option<&str>) -> Passage {
    Passage {
        id: id.into(),
        doc: doc.map(Into::into),
        title: title.into(),
        text: text.into(),
        header: header.map(Into::into),
    }
}

fn raw() -> RawDataset {
    let mut q1 = Question::new(
        "q1",
        "where was the founder of Beta born",
        vec!["b".into(), "a".into()],
    );
    q1.chain = Some(vec![vec!["b".into()], vec!["a".into()]]);
    q1.decomposition = Some(vec![
        SubQuestion {
            question: "who founded Beta".into(),
            answer: "Alpha".into(),
            gold: vec!["b".into()],
        },
        SubQuestion {
            question: "where was #1 born".into(),
            answer: "Delta".into(),
            gold: vec!["a".into()],
        },
    ]);
    q1.labels = BTreeMap::from([("hops".into(), "2hop".into())]);
    let mut q2 = Question::new("q2", "and gamma?", vec!["c".into()]);
    q2.conversation = Some(vec![
        Turn {
            speaker: "user".into(),
            text: "tell me about alpha".into(),
        },
        Turn {
            speaker: "agent".into(),
            text: "Alpha founded Beta.".into(),
        },
        Turn {
            speaker: "user".into(),
            text: "and gamma?".into(),
        },
    ]);
    q2.labels = BTreeMap::from([("multi_turn".into(), "Follow-up".into())]);
    let q3 = Question::new("q3", "untitled notes", vec!["e".into(), "d".into()]);
    RawDataset {
        passages: vec![
            passage(
                "c",
                Some("Gamma"),
                "Gamma",
                "Gamma is unrelated to Alpha.",
                None,
            ),
            passage(
                "a",
                Some("Alpha"),
                "Alpha",
                "Alpha was born in Delta and founded Beta.",
                Some("Alpha > Early life"),
            ),
            passage(
                "b",
                Some("Beta"),
                "Beta",
                "Beta was founded by Alpha. Gamma and Beta merged.",
                None,
            ),
            passage(
                "d",
                None,
                "Delta",
                "Delta is a city where Alpha was born.",
                None,
            ),
            passage(
                "e",
                Some("notes"),
                "",
                "Untitled notes on Beta and Gamma.",
                None,
            ),
        ],
        questions: vec![q1, q2, q3],
    }
}

/// A deterministic fake model (the export tests' one): letter counts, L2-normalised.
fn fake_embedder() -> EmbedFn<'static> {
    EmbedFn {
        model_id: "fuzz-fake@0".into(),
        dim: DIM,
        embed: Box::new(|texts, _| {
            Ok(texts
                .iter()
                .map(|t| {
                    let mut v = [0.0f32; DIM];
                    for (i, b) in t.bytes().enumerate() {
                        v[(b as usize + i) % DIM] += 1.0;
                    }
                    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-9);
                    v.iter().map(|x| x / n).collect()
                })
                .collect())
        }),
    }
}

fn base() -> &'static Base {
    static BASE: OnceLock<Base> = OnceLock::new();
    BASE.get_or_init(|| {
        let tmp = tempfile::tempdir().expect("temp dir");
        let dir = tmp.path().join("fuzz");
        let source = Source {
            name: "fuzz".into(),
            format: "fuzz".into(),
            files: vec![],
            extra: "fuzz".into(),
            protocol: hopbench_datasets::protocol::Protocol::PUBLISHED,
            vectors: None,
        };
        export::prepare(
            &source,
            || Ok(raw()),
            &PrepareConfig::default(),
            &mut fake_embedder(),
            &dir,
        )
        .expect("the base export builds");
        export::load(&dir).expect("the base export loads");
        let names = std::iter::once("manifest.json").chain(EXPORT_FILES);
        let files: Vec<(&'static str, Vec<u8>)> = names
            .map(|n| (n, std::fs::read(dir.join(n)).expect("export file")))
            .collect();
        let manifest = serde_json::from_slice(&files[0].1).expect("manifest JSON");
        if let Some(seeds) = std::env::var_os("HOPBENCH_FUZZ_EXPORT_SEEDS") {
            let seeds = std::path::PathBuf::from(seeds);
            std::fs::create_dir_all(&seeds).expect("seed dir");
            for (i, (name, bytes)) in files.iter().enumerate() {
                let mut input = vec![11 + i as u8];
                input.extend_from_slice(bytes);
                std::fs::write(seeds.join(format!("full-{name}")), input).expect("seed");
            }
        }
        Base { files, manifest }
    })
}

fn blake3_hex(bytes: &[u8]) -> String {
    blake3::hash(bytes).to_hex().to_string()
}

/// `(offset, bytes)` of a patch payload, the offset taken mod `len + 1`.
fn patch(payload: &[u8], len: usize) -> (usize, &[u8]) {
    let mut off = [0u8; 4];
    let n = payload.len().min(3);
    off[..n].copy_from_slice(&payload[..n]);
    (u32::from_le_bytes(off) as usize % (len + 1), &payload[n..])
}

fn damage(mode: u8, original: &[u8], payload: &[u8]) -> Vec<u8> {
    match mode {
        0 | 1 => payload.to_vec(),
        2 => {
            let (at, bytes) = patch(payload, original.len());
            let mut out = original.to_vec();
            let end = (at + bytes.len()).min(out.len());
            out[at..end].copy_from_slice(&bytes[..end - at]);
            out.extend_from_slice(&bytes[end - at..]);
            out
        }
        _ => {
            let (at, bytes) = patch(payload, original.len());
            let mut out = original[..at].to_vec();
            if !bytes.is_empty() {
                out.extend_from_slice(bytes);
                out.extend_from_slice(&original[at..]);
            }
            out
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, payload)) = data.split_first() else {
        return;
    };
    let base = base();
    let which = (selector % 11) as usize;
    let mode = selector / 11 % MODES;
    let mut files: Vec<(&str, Vec<u8>)> = base.files.iter().map(|(n, b)| (*n, b.clone())).collect();
    files[which].1 = damage(mode, &files[which].1, payload);
    if mode > 0 {
        let hashes: BTreeMap<&str, String> = files[1..]
            .iter()
            .map(|(n, b)| (*n, blake3_hex(b)))
            .collect();
        if which == 0 {
            // keep the damaged manifest, but make its `files` hashes true where it names ours
            if let Ok(mut m) = serde_json::from_slice::<serde_json::Value>(&files[0].1) {
                if let Some(fs) = m.get_mut("files").and_then(|f| f.as_object_mut()) {
                    for (name, hash) in fs.iter_mut() {
                        if let Some(h) = hashes.get(name.as_str()) {
                            *hash = serde_json::Value::String(h.clone());
                        }
                    }
                    files[0].1 = serde_json::to_vec(&m).expect("JSON");
                }
            }
        } else {
            let mut m = base.manifest.clone();
            m["files"][files[which].0] = serde_json::Value::String(hashes[files[which].0].clone());
            files[0].1 = serde_json::to_vec(&m).expect("JSON");
        }
    }
    if guards_on() && files[which].0.ends_with(".parquet") && negative_column_range(&files[which].1)
    {
        // known finding F1 (fuzz/README.md): parquet's `ColumnChunkMetaData::byte_range` panics
        return;
    }
    let dir = scratch_dir();
    if guards_on() && which == 0 && names_a_special_file(dir, &files[0].1) {
        // known finding F2 (fuzz/README.md): load reads any path the manifest names, unbounded
        return;
    }
    for (name, bytes) in &files {
        std::fs::write(dir.join(name), bytes).expect("write export file");
    }
    match export::load(dir) {
        Ok(e) => {
            use_export(&e);
            if verbose() {
                eprintln!(
                    "export: loaded ({} chunks, {} queries)",
                    e.chunks.len(),
                    e.queries.len()
                );
            }
        }
        Err(e) if verbose() => eprintln!("export: {e}"),
        Err(_) => {}
    }
});

/// Known finding F1 (fuzz/README.md): a parquet footer whose column chunk has a negative start
/// offset or compressed size makes `parquet_io::read` panic inside parquet
/// (`ColumnChunkMetaData::byte_range`, "column start and length should not be negative")
/// instead of returning `Error::Malformed`. This says whether `bytes` is such a file, so the
/// target can skip it and keep fuzzing past it; `HOPBENCH_FUZZ_NO_GUARDS=1` turns the skip off.
fn negative_column_range(bytes: &[u8]) -> bool {
    let b = bytes::Bytes::copy_from_slice(bytes);
    let Ok(meta) = parquet::file::metadata::ParquetMetaDataReader::new().parse_and_finish(&b)
    else {
        return false;
    };
    meta.row_groups()
        .iter()
        .flat_map(|rg| rg.columns())
        .any(|c| {
            c.dictionary_page_offset().unwrap_or(c.data_page_offset()) < 0
                || c.compressed_size() < 0
        })
}

/// Known finding F2 (fuzz/README.md): `load` hashes every path the manifest's `files` names,
/// joined to the export dir unchecked (absolute, `..`), with an unbounded `fs::read`: a device
/// such as `/dev/zero` is an out-of-memory abort, a FIFO or `/dev/stdin` a hang. This says
/// whether `manifest` names something that exists and is neither a regular file nor a
/// directory (what makes that happen), so the target can skip it.
fn names_a_special_file(dir: &std::path::Path, manifest: &[u8]) -> bool {
    let Ok(m) = serde_json::from_slice::<serde_json::Value>(manifest) else {
        return false;
    };
    let Some(files) = m.get("files").and_then(|f| f.as_object()) else {
        return false;
    };
    files
        .keys()
        .any(|name| std::fs::metadata(dir.join(name)).is_ok_and(|md| !md.is_file() && !md.is_dir()))
}

fn guards_on() -> bool {
    static G: OnceLock<bool> = OnceLock::new();
    *G.get_or_init(|| std::env::var_os("HOPBENCH_FUZZ_NO_GUARDS").is_none())
}

/// What a leg does with a loaded export, on every chunk, query and node: `load` validated it,
/// so none of this may panic. The parts read on demand (texts, vectors) may fail, with an error,
/// and must hold a row per chunk when they do not.
fn use_export(e: &export::Export) {
    let tok = Tokenizer::english();
    if let Ok(texts) = e.texts() {
        assert_eq!(texts.len(), e.chunks.len());
    }
    for rows in [e.embeddings().ok(), e.content_embeddings().ok().flatten()]
        .into_iter()
        .flatten()
    {
        assert_eq!(rows.len(), e.chunks.len() * e.dim);
    }
    for i in 0..e.chunks.len() as u32 {
        if let Some(d) = e.doc_of(i) {
            let _ = &e.docs[d as usize];
        }
        if let Ok(g) = e.simgraph() {
            let _ = g.neighbours(i);
            let _ = g.community(i);
        }
    }
    for (q, query) in e.queries.iter().enumerate() {
        let _ = e.query_embedding(q);
        let _ = e.subquery_vectors(q);
        let _ = e.bm25.search(&tok, &query.text, 5);
        if let Ok(ix) = e.kg_index() {
            let _ = ix.query_seeds(&query.text);
        }
    }
    if let (Ok(kg), Ok(ix)) = (e.kg(), e.kg_index()) {
        for node in 0..kg.nodes.len() as u32 {
            let _ = ix.node_chunks(node);
            let _ = ix.neighbours(node);
            let _ = ix.node_hyperedges(node);
        }
    }
}
