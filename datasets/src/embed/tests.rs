//! Tests of the embedder and the cache: the tiny model always, the real model when installed.

use std::cell::Cell;
use std::path::Path;
use std::sync::OnceLock;

use super::tiny::{TINY_HIDDEN, TINY_MAX_POSITIONS};
use super::*;

fn tiny_model(seed: u64) -> (tempfile::TempDir, Embedder) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("tiny-bert");
    write_tiny_model(&dir, seed).unwrap();
    let e = Embedder::load(&dir).unwrap();
    (tmp, e)
}

/// The installed real model (scripts/setup), loaded once for all tests.
fn real_model() -> Option<&'static Embedder> {
    static REAL: OnceLock<Option<Embedder>> = OnceLock::new();
    REAL.get_or_init(|| {
        let dir = default_model_dir();
        if !dir.join("model.safetensors").is_file() {
            eprintln!(
                "real model not installed at {} (scripts/setup): skipped",
                dir.display()
            );
            return None;
        }
        Some(Embedder::load(&dir).expect("installed model loads"))
    })
    .as_ref()
}

fn norm(v: &[f32]) -> f64 {
    v.iter().map(|&x| x as f64 * x as f64).sum::<f64>().sqrt()
}

fn cosine(a: &[f32], b: &[f32]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(&x, &y)| x as f64 * y as f64)
        .sum::<f64>()
        / (norm(a) * norm(b))
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// Texts of many lengths, with several of equal length, a repeat and an empty text.
fn mixed_texts() -> Vec<String> {
    let words = [
        "the",
        "cat",
        "sat",
        "on",
        "mat",
        "river",
        "city",
        "paris",
        "is",
        "capital",
        "of",
        "france",
        "dogs",
        "played",
        "music",
        "xylophone",
        "2024",
        "queen",
        "born",
        "in",
        "london",
    ];
    let mut texts = vec![
        "The cat sat on the mat.".to_string(),
        String::new(),
        "Paris is the capital of France.".to_string(),
        "The cat sat on the mat.".to_string(),
        "A".to_string(),
    ];
    for i in 0..60usize {
        let n = 1 + (i * 7) % 23 + if i % 11 == 0 { 40 } else { 0 };
        let t: Vec<&str> = (0..n)
            .map(|j| words[(i * 3 + j * 5) % words.len()])
            .collect();
        texts.push(t.join(" "));
    }
    texts
}

fn check_alone_equals_batched(e: &Embedder, texts: &[String]) {
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let batched = e.embed(&refs, Role::Passage, &mut |_| {}).unwrap();
    let mut reversed_refs = refs.clone();
    reversed_refs.reverse();
    let mut reversed = e.embed(&reversed_refs, Role::Passage, &mut |_| {}).unwrap();
    reversed.reverse();
    for (i, t) in refs.iter().enumerate() {
        let alone = e.embed(&[t], Role::Passage, &mut |_| {}).unwrap();
        assert_eq!(
            bits(&alone[0]),
            bits(&batched[i]),
            "text {i} {t:?}: alone vs batched"
        );
        assert_eq!(
            bits(&reversed[i]),
            bits(&batched[i]),
            "text {i} {t:?}: order changed it"
        );
    }
}

#[test]
fn embed_tiny_model_loads_and_embeds() {
    let (_tmp, e) = tiny_model(7);
    assert_eq!(e.dim(), TINY_HIDDEN);
    // sentence_bert_config.json says 256; the position table has 64.
    assert_eq!(e.max_seq_length(), TINY_MAX_POSITIONS);
    assert_eq!(e.name(), "tiny-bert");
    let (name, rest) = e.model_id().split_once('@').unwrap();
    assert_eq!(name, "tiny-bert");
    let (hash, arithmetic) = rest.split_once('+').unwrap();
    assert_eq!(hash.len(), 16);
    assert!(hash.chars().all(|c| c.is_ascii_hexdigit()));
    assert_eq!(
        arithmetic,
        format!("{ARITHMETIC_VERSION}.{}", kernels::gemm_kernel())
    );
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512f") {
        assert!(arithmetic.ends_with(".avx512f"), "{arithmetic}");
    }

    let texts = [
        "The cat sat on the mat.",
        "",
        "Dogs played music in London!",
        "zzz qqq",
    ];
    let mut done = 0;
    let v = e.embed(&texts, Role::Passage, &mut |n| done += n).unwrap();
    assert_eq!(done, texts.len());
    assert_eq!(v.len(), texts.len());
    for x in &v {
        assert_eq!(x.len(), TINY_HIDDEN);
        assert!((norm(x) - 1.0).abs() < 1e-5, "norm {}", norm(x));
        assert!(x.iter().all(|f| f.is_finite()));
    }
    // Order preserved: each equals its own single embedding, and they differ.
    for (i, t) in texts.iter().enumerate() {
        assert_eq!(
            bits(&e.embed(&[t], Role::Passage, &mut |_| {}).unwrap()[0]),
            bits(&v[i])
        );
    }
    assert_ne!(bits(&v[0]), bits(&v[2]));
    assert!(e
        .embed(&[], Role::Passage, &mut |_| panic!(
            "no progress for no texts"
        ))
        .unwrap()
        .is_empty());
}

#[test]
fn embed_model_id_and_dim_without_loading() {
    let (_tmp, e) = tiny_model(9);
    assert_eq!(model_id_of(e.dir()).unwrap(), e.model_id());
    assert_eq!(model_dim_of(e.dir()).unwrap(), e.dim());
    if let Some(real) = real_model() {
        assert_eq!(model_id_of(real.dir()).unwrap(), real.model_id());
        assert_eq!(model_dim_of(real.dir()).unwrap(), 384);
    }
}

#[test]
fn embed_tiny_model_is_reproducible_from_seed() {
    let (_a, e1) = tiny_model(42);
    let (_b, e2) = tiny_model(42);
    let (_c, e3) = tiny_model(43);
    assert_eq!(e1.model_id(), e2.model_id());
    assert_ne!(e1.model_id(), e3.model_id());
    let t = ["the queen was born in london"];
    assert_eq!(
        bits(&e1.embed(&t, Role::Passage, &mut |_| {}).unwrap()[0]),
        bits(&e2.embed(&t, Role::Passage, &mut |_| {}).unwrap()[0])
    );
}

#[test]
fn embed_overrides_tokenizer_truncation_and_padding() {
    // The tiny tokenizer.json truncates and pads to 16, like the bundled MiniLM file does at 128.
    let (_tmp, e) = tiny_model(1);
    let long = "the cat sat on the mat ".repeat(40);
    let counts = e.token_counts(&["the cat", &long]).unwrap();
    assert_eq!(
        counts,
        vec![4, TINY_MAX_POSITIONS],
        "no padding; truncation at max_seq_length"
    );
    let v = e.embed(&[&long], Role::Passage, &mut |_| {}).unwrap();
    assert!((norm(&v[0]) - 1.0).abs() < 1e-5);
}

#[test]
fn embed_vector_is_independent_of_batch() {
    let (_tmp, e) = tiny_model(3);
    let mut texts = mixed_texts();
    // More than one batch of equal length.
    for i in 0..(MAX_BATCH + 5) {
        texts.push(format!("river {} city", (b'a' + (i % 26) as u8) as char));
    }
    check_alone_equals_batched(&e, &texts);
}

#[test]
fn embed_vector_is_independent_of_thread_count() {
    let (_tmp, e) = tiny_model(5);
    let texts = mixed_texts();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let default = e.embed(&refs, Role::Passage, &mut |_| {}).unwrap();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let one = pool.install(|| e.embed(&refs, Role::Passage, &mut |_| {}).unwrap());
    for (a, b) in default.iter().zip(&one) {
        assert_eq!(bits(a), bits(b));
    }
}

#[test]
fn embed_wrong_model_dir_is_a_model_error_naming_the_path() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("no-such-model");
    match Embedder::load(&missing) {
        Err(Error::Model { path, .. }) => assert_eq!(path, missing),
        other => panic!("expected Error::Model, got {other:?}"),
    }
    // A directory without weights names the missing file.
    let dir = tmp.path().join("half");
    write_tiny_model(&dir, 1).unwrap();
    std::fs::remove_file(dir.join("model.safetensors")).unwrap();
    match Embedder::load(&dir) {
        Err(e @ Error::Model { .. }) => {
            let Error::Model { path, .. } = &e else {
                unreachable!()
            };
            assert_eq!(path, &dir.join("model.safetensors"));
            assert!(e.to_string().contains("model.safetensors"), "{e}");
        }
        other => panic!("expected Error::Model, got {other:?}"),
    }
    // Weights that are not safetensors.
    std::fs::write(dir.join("model.safetensors"), b"not a tensor file").unwrap();
    match Embedder::load(&dir) {
        Err(Error::Model { path, .. }) => assert_eq!(path, dir.join("model.safetensors")),
        other => panic!("expected Error::Model, got {other:?}"),
    }
    // An unsupported activation in config.json.
    let dir2 = tmp.path().join("relu");
    write_tiny_model(&dir2, 1).unwrap();
    let cfg = std::fs::read_to_string(dir2.join("config.json")).unwrap();
    std::fs::write(
        dir2.join("config.json"),
        cfg.replace("\"gelu\"", "\"relu\""),
    )
    .unwrap();
    match Embedder::load(&dir2) {
        Err(Error::Field {
            path,
            field,
            message,
            ..
        }) => {
            assert_eq!(path, dir2.join("config.json"));
            assert_eq!(field, "hidden_act");
            assert!(message.contains("relu"), "{message}");
        }
        other => panic!("expected Error::Field, got {other:?}"),
    }
}

/// Counts what reaches the real embedder.
struct Counting<'a> {
    inner: &'a Embedder,
    calls: Cell<usize>,
    texts: Cell<usize>,
}

impl TextEmbedder for Counting<'_> {
    fn model_id(&self) -> &str {
        self.inner.model_id()
    }
    fn dim(&self) -> usize {
        self.inner.dim()
    }
    fn embed(
        &self,
        texts: &[&str],
        role: Role,
        progress: &mut dyn FnMut(usize),
    ) -> Result<Vec<Vec<f32>>> {
        self.calls.set(self.calls.get() + 1);
        self.texts.set(self.texts.get() + texts.len());
        self.inner.embed(texts, role, progress)
    }
    fn token_counts(&self, texts: &[&str]) -> Result<Vec<usize>> {
        self.inner.token_counts(texts)
    }
}

#[test]
fn embed_cache_round_trip_and_hits() {
    let (tmp, e) = tiny_model(11);
    let cache_dir = tmp.path().join("cache");
    let counting = Counting {
        inner: &e,
        calls: Cell::new(0),
        texts: Cell::new(0),
    };
    let texts = [
        "alpha river",
        "the cat sat",
        "alpha river",
        "",
        "the cat sat",
        "paris",
    ];

    let mut cache = EmbeddingCache::open(&cache_dir, e.model_id(), e.dim()).unwrap();
    assert!(cache.is_empty());
    let mut done = 0;
    let first = embed_cached(&counting, &mut cache, Role::Passage, &texts, &mut |n| {
        done += n
    })
    .unwrap();
    assert_eq!(done, texts.len());
    assert_eq!(
        (counting.calls.get(), counting.texts.get()),
        (1, 4),
        "distinct misses only"
    );
    assert_eq!(cache.len(), 4);
    assert_eq!(bits(&first[0]), bits(&first[2]));
    let direct = e.embed(&texts, Role::Passage, &mut |_| {}).unwrap();
    for (a, b) in first.iter().zip(&direct) {
        assert_eq!(bits(a), bits(b));
    }
    // The file name is the sanitised model id.
    let name = cache
        .path()
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    assert_eq!(name, e.model_id().replace(['@', '+'], "_") + ".vecs");
    assert!(cache.path().is_file());
    // No temporary file is left behind.
    assert_eq!(std::fs::read_dir(&cache_dir).unwrap().count(), 1);

    // Reopened: everything is a hit, nothing is embedded.
    let mut reopened = EmbeddingCache::open(&cache_dir, e.model_id(), e.dim()).unwrap();
    assert_eq!(reopened.len(), 4);
    assert_eq!(bits(reopened.get("paris").unwrap()), bits(&first[5]));
    assert!(reopened.get("not cached").is_none());
    let mut done = 0;
    let again = embed_cached(&counting, &mut reopened, Role::Passage, &texts, &mut |n| {
        done += n
    })
    .unwrap();
    assert_eq!(done, texts.len());
    assert_eq!(
        counting.calls.get(),
        1,
        "cache hits do not call the embedder"
    );
    for (a, b) in first.iter().zip(&again) {
        assert_eq!(bits(a), bits(b));
    }

    // A partly new call embeds only the new text and appends it.
    let more = embed_cached(
        &counting,
        &mut reopened,
        Role::Passage,
        &["paris", "london"],
        &mut |_| {},
    )
    .unwrap();
    assert_eq!((counting.calls.get(), counting.texts.get()), (2, 5));
    assert_eq!(bits(&more[0]), bits(&first[5]));
    assert_eq!(
        EmbeddingCache::open(&cache_dir, e.model_id(), e.dim())
            .unwrap()
            .len(),
        5
    );
}

/// Nothing read back is trusted unverified: a record that fails its check, a vector moved to
/// another text's record and a partial record at the end are dropped (and reported), the other
/// records are kept, and the texts dropped are embedded again to the same vectors.
#[test]
fn embed_cache_drops_damaged_records_and_re_embeds_them() {
    let (tmp, e) = tiny_model(12);
    let dir = tmp.path().join("cache");
    let texts = ["one", "two", "three"];
    let mut cache = EmbeddingCache::open(&dir, e.model_id(), e.dim()).unwrap();
    let want = embed_cached(&e, &mut cache, Role::Passage, &texts, &mut |_| {}).unwrap();
    assert!(cache.repairs().is_none());
    let path = cache.path().to_path_buf();
    let good = std::fs::read(&path).unwrap();
    let record = 32 + 4 * e.dim() + 16;
    let body = good.len() - 3 * record;

    let reopen = |bytes: &[u8]| {
        std::fs::write(&path, bytes).unwrap();
        EmbeddingCache::open(&dir, e.model_id(), e.dim()).unwrap()
    };
    // one flipped byte in the second vector
    let mut flipped = good.clone();
    flipped[body + record + 40] ^= 0x01;
    let c = reopen(&flipped);
    assert_eq!(c.len(), 2);
    assert!(!c.contains("two") && c.contains("one") && c.contains("three"));
    let r = c.repairs().unwrap();
    assert!(
        r.contains(&path.display().to_string()) && r.contains("1 of 3 records failed"),
        "{r}"
    );
    // the vector payloads (with their checks) of records one and two swapped, hashes kept
    let mut swapped = good.clone();
    let (a, b) = (body + 32, body + record + 32);
    let payload: Vec<u8> = swapped[a..a + record - 32].to_vec();
    let other: Vec<u8> = swapped[b..b + record - 32].to_vec();
    swapped[a..a + record - 32].copy_from_slice(&other);
    swapped[b..b + record - 32].copy_from_slice(&payload);
    let c = reopen(&swapped);
    assert_eq!(c.len(), 1, "neither moved vector is served");
    assert!(c.repairs().unwrap().contains("2 of 3 records failed"));
    // a write cut short: the whole records are kept
    let mut c = reopen(&good[..good.len() - 3]);
    assert_eq!(c.len(), 2);
    assert!(c.repairs().unwrap().contains("truncated"));
    // the dropped text is embedded again, to the same vector, and the file is whole again
    let again = embed_cached(&e, &mut c, Role::Passage, &texts, &mut |_| {}).unwrap();
    assert_eq!(again, want);
    let c = EmbeddingCache::open(&dir, e.model_id(), e.dim()).unwrap();
    assert!(c.repairs().is_none() && c.len() == 3);
    // a version-1 file (no checks) is ignored, not trusted
    let mut v1 = good[..20 + e.model_id().len()].to_vec();
    v1[8..12].copy_from_slice(&1u32.to_le_bytes());
    let c = reopen(&v1);
    assert!(c.is_empty() && c.repairs().unwrap().contains("version 1"));
}

/// New vectors are appended to a verified file, and a long embedding is saved as it goes: the
/// file always reads back whole, with every vector embedded so far.
#[test]
fn embed_cache_appends_and_saves_as_it_embeds() {
    let (tmp, e) = tiny_model(12);
    let dir = tmp.path().join("cache");
    let mut cache = EmbeddingCache::open(&dir, e.model_id(), e.dim()).unwrap();
    embed_cached(&e, &mut cache, Role::Passage, &["a", "b"], &mut |_| {}).unwrap();
    let path = cache.path().to_path_buf();
    let first = std::fs::read(&path).unwrap();
    embed_cached(&e, &mut cache, Role::Passage, &["c", "a"], &mut |_| {}).unwrap();
    let second = std::fs::read(&path).unwrap();
    let record = 32 + 4 * e.dim() + 16;
    assert_eq!(second.len(), first.len() + record, "one record appended");
    assert_eq!(
        &second[..first.len()],
        &first[..],
        "the old records untouched"
    );
    // more texts than one flush: every save leaves a file that reads back whole
    let texts: Vec<String> = (0..600).map(|i| format!("text number {i}")).collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let mut saves = Vec::new();
    let watch = path.clone();
    embed_cached(&e, &mut cache, Role::Passage, &refs, &mut |_| {
        saves.push(std::fs::metadata(&watch).unwrap().len());
    })
    .unwrap();
    let header = first.len() - 2 * record;
    let on_disk: Vec<u64> = saves
        .iter()
        .map(|&len| (len as usize - header) as u64 / record as u64)
        .collect();
    assert!(
        on_disk.iter().any(|&n| n > 3 && n < 603),
        "saved part-way through: {on_disk:?}"
    );
    let c = EmbeddingCache::open(&dir, e.model_id(), e.dim()).unwrap();
    assert!(c.repairs().is_none());
    assert_eq!(c.len(), 603);
}

#[test]
fn embed_cache_ignores_a_file_whose_header_does_not_check_out_and_rewrites_it() {
    let (tmp, e) = tiny_model(12);
    let dir = tmp.path().join("cache");
    let mut cache = EmbeddingCache::open(&dir, e.model_id(), e.dim()).unwrap();
    embed_cached(&e, &mut cache, Role::Passage, &["one", "two"], &mut |_| {}).unwrap();
    let path = cache.path().to_path_buf();
    let good = std::fs::read(&path).unwrap();

    // the cache is only a cache: a damaged or foreign header is a warning naming the file, the
    // file is ignored whole (its texts are embedded again), never an error and never trusted
    let expect_ignored = |what: &str, dim: usize| {
        let c = EmbeddingCache::open(&dir, e.model_id(), dim).unwrap();
        let why = c.repairs().unwrap_or_else(|| panic!("{what}: no warning"));
        assert!(why.contains(&path.display().to_string()), "{what}: {why}");
        assert!(c.get("one").is_none(), "{what}: nothing of it is used");
        why.to_string()
    };
    std::fs::write(&path, b"definitely not a cache").unwrap();
    assert!(expect_ignored("garbage", e.dim()).contains("bad magic"));
    std::fs::write(&path, &good[..22]).unwrap();
    assert!(expect_ignored("short header", e.dim()).contains("truncated header"));
    std::fs::write(&path, &good).unwrap();
    assert!(expect_ignored("another dimension", e.dim() + 1).contains("dimension"));
    let mut flipped = good.clone();
    flipped[21] ^= 0x20; // a byte of the model id
    std::fs::write(&path, &flipped).unwrap();
    assert!(expect_ignored("another model id", e.dim()).contains("holds vectors of model"));
    // the next save rewrites it whole, and it verifies again
    let mut c = EmbeddingCache::open(&dir, e.model_id(), e.dim()).unwrap();
    embed_cached(&e, &mut c, Role::Passage, &["one"], &mut |_| {}).unwrap();
    let again = EmbeddingCache::open(&dir, e.model_id(), e.dim()).unwrap();
    assert!(again.repairs().is_none() && again.get("one").is_some());

    // A cache opened for another model id cannot be used with this embedder.
    let mut other = EmbeddingCache::open(&dir, "other-model@0000", e.dim()).unwrap();
    assert!(matches!(
        embed_cached(&e, &mut other, Role::Passage, &["x"], &mut |_| {}),
        Err(Error::Model { .. })
    ));
    // Wrong vector dimension on insert.
    assert!(matches!(
        cache.insert("x", &[0.0; 3]),
        Err(Error::Dimension { .. })
    ));
}

#[test]
fn embed_default_model_dir_respects_env_or_workspace() {
    let d = default_model_dir();
    match std::env::var_os(MODEL_DIR_ENV) {
        Some(v) if !v.is_empty() => assert_eq!(d, Path::new(&v)),
        _ => {
            assert!(d.ends_with("models/all-MiniLM-L6-v2"));
            assert!(d
                .parent()
                .unwrap()
                .parent()
                .unwrap()
                .join("Cargo.toml")
                .is_file());
        }
    }
}

#[test]
fn embed_real_model_semantics() {
    let Some(e) = real_model() else { return };
    assert_eq!(e.dim(), 384);
    assert_eq!(e.max_seq_length(), 256);
    assert!(e.model_id().starts_with(&format!("{}@", e.name())));
    let texts = [
        "The cat sat on the mat.",
        "A cat was sitting on a rug.",
        "The stock market fell sharply on Tuesday.",
    ];
    let v = e.embed(&texts, Role::Passage, &mut |_| {}).unwrap();
    for x in &v {
        assert!((norm(x) - 1.0).abs() < 1e-5);
    }
    let para = cosine(&v[0], &v[1]);
    let unrelated = cosine(&v[0], &v[2]);
    eprintln!("cos(paraphrase) = {para:.4}, cos(unrelated) = {unrelated:.4}");
    assert!(
        para > unrelated + 0.3,
        "paraphrase {para} vs unrelated {unrelated}"
    );
    // Truncation at 256 tokens, not at the tokenizer file's 128.
    let long = "word ".repeat(400);
    assert_eq!(e.token_counts(&[&long, "hello"]).unwrap(), vec![256, 3]);
}

#[test]
fn embed_real_model_vector_is_independent_of_batch() {
    let Some(e) = real_model() else { return };
    let mut texts = mixed_texts();
    // Long texts (up to the 256-token window), so that batches close on their token budget.
    for i in 0..14usize {
        let t: Vec<String> = (0..(120 + i * 13))
            .map(|j| format!("w{}", (i * 31 + j * 7) % 97))
            .collect();
        texts.push(t.join(" "));
    }
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let total: usize = e.token_counts(&refs).unwrap().iter().sum();
    assert!(total > 2 * MAX_BATCH_TOKENS, "{total} tokens");
    check_alone_equals_batched(e, &texts);
}

#[test]
fn batches_hold_at_most_their_texts_and_tokens_and_keep_the_order() {
    let lens = [5usize, 3000, 700, 700, 700, 10, 1, 1];
    let order: Vec<usize> = (0..lens.len()).collect();
    let got = pack_batches(&order, |i| lens[i]);
    let want: Vec<&[usize]> = vec![&[0], &[1], &[2, 3], &[4, 5, 6, 7]];
    assert_eq!(got, want);
    // the text count closes a batch too
    let many: Vec<usize> = (0..(2 * MAX_BATCH + 1)).collect();
    let got = pack_batches(&many, |_| 1);
    assert_eq!(
        got.iter().map(|b| b.len()).collect::<Vec<_>>(),
        vec![MAX_BATCH, MAX_BATCH, 1]
    );
    assert!(pack_batches(&[], |_| 1).is_empty());
    // every batch within both limits unless it is one text
    let lens: Vec<usize> = (0..500).map(|i| 1 + (i * 37) % 300).collect();
    let order: Vec<usize> = (0..lens.len()).collect();
    let got = pack_batches(&order, |i| lens[i]);
    assert_eq!(got.concat(), order);
    for b in &got {
        let sum: usize = b.iter().map(|&i| lens[i]).sum();
        assert!(b.len() <= MAX_BATCH && (sum <= MAX_BATCH_TOKENS || b.len() == 1));
    }
}

/// A slow, obvious f64 BERT forward pass straight from `model.safetensors` (torch weight
/// layout, exact erf, plain softmax): the oracle for the optimised candle path.
fn reference_embedding(dir: &Path, ids: &[u32]) -> Vec<f32> {
    let cfg = encoder::EncoderConfig::read(&dir.join("config.json")).unwrap();
    let tensors =
        candle_core::safetensors::load(dir.join("model.safetensors"), &candle_core::Device::Cpu)
            .unwrap();
    let get = |name: &str| -> Vec<f64> {
        let t = &tensors[name];
        let t = t
            .to_dtype(candle_core::DType::F64)
            .unwrap()
            .flatten_all()
            .unwrap();
        t.to_vec1::<f64>().unwrap()
    };
    let (h, heads, t_len) = (cfg.hidden_size, cfg.num_attention_heads, ids.len());
    let hd = h / heads;
    let layer_norm = |x: &mut [f64], g: &[f64], b: &[f64]| {
        for row in x.chunks_mut(h) {
            let mean = row.iter().sum::<f64>() / h as f64;
            let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / h as f64;
            for (i, v) in row.iter_mut().enumerate() {
                *v = (*v - mean) / (var + cfg.layer_norm_eps).sqrt() * g[i] + b[i];
            }
        }
    };
    // y[t][o] = sum_i x[t][i] w[o][i] + b[o]
    let linear = |x: &[f64], w: &[f64], b: &[f64], in_dim: usize, out_dim: usize| -> Vec<f64> {
        let mut y = vec![0.0; t_len * out_dim];
        for t in 0..t_len {
            for o in 0..out_dim {
                let mut acc = b[o];
                for i in 0..in_dim {
                    acc += x[t * in_dim + i] * w[o * in_dim + i];
                }
                y[t * out_dim + o] = acc;
            }
        }
        y
    };
    let (word, pos, typ) = (
        get("embeddings.word_embeddings.weight"),
        get("embeddings.position_embeddings.weight"),
        get("embeddings.token_type_embeddings.weight"),
    );
    let mut x = vec![0.0; t_len * h];
    for (t, &id) in ids.iter().enumerate() {
        for i in 0..h {
            x[t * h + i] = word[id as usize * h + i] + pos[t * h + i] + typ[i];
        }
    }
    layer_norm(
        &mut x,
        &get("embeddings.LayerNorm.weight"),
        &get("embeddings.LayerNorm.bias"),
    );
    for l in 0..cfg.num_hidden_layers {
        let p = |s: &str| get(&format!("encoder.layer.{l}.{s}"));
        let q = linear(
            &x,
            &p("attention.self.query.weight"),
            &p("attention.self.query.bias"),
            h,
            h,
        );
        let k = linear(
            &x,
            &p("attention.self.key.weight"),
            &p("attention.self.key.bias"),
            h,
            h,
        );
        let v = linear(
            &x,
            &p("attention.self.value.weight"),
            &p("attention.self.value.bias"),
            h,
            h,
        );
        let mut ctx = vec![0.0; t_len * h];
        for head in 0..heads {
            for i in 0..t_len {
                let scores: Vec<f64> = (0..t_len)
                    .map(|j| {
                        (0..hd)
                            .map(|d| q[i * h + head * hd + d] * k[j * h + head * hd + d])
                            .sum::<f64>()
                            / (hd as f64).sqrt()
                    })
                    .collect();
                let max = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let exps: Vec<f64> = scores.iter().map(|s| (s - max).exp()).collect();
                let sum: f64 = exps.iter().sum();
                for d in 0..hd {
                    ctx[i * h + head * hd + d] = (0..t_len)
                        .map(|j| exps[j] / sum * v[j * h + head * hd + d])
                        .sum::<f64>();
                }
            }
        }
        let attn = linear(
            &ctx,
            &p("attention.output.dense.weight"),
            &p("attention.output.dense.bias"),
            h,
            h,
        );
        let mut x1: Vec<f64> = attn.iter().zip(&x).map(|(a, b)| a + b).collect();
        layer_norm(
            &mut x1,
            &p("attention.output.LayerNorm.weight"),
            &p("attention.output.LayerNorm.bias"),
        );
        let i_dim = cfg.intermediate_size;
        let mut inter = linear(
            &x1,
            &p("intermediate.dense.weight"),
            &p("intermediate.dense.bias"),
            h,
            i_dim,
        );
        for v in &mut inter {
            *v = 0.5 * *v * (1.0 + candle_core::cpu::erf::erf_f64(*v / std::f64::consts::SQRT_2));
        }
        let out = linear(
            &inter,
            &p("output.dense.weight"),
            &p("output.dense.bias"),
            i_dim,
            h,
        );
        x = out.iter().zip(&x1).map(|(a, b)| a + b).collect();
        layer_norm(
            &mut x,
            &p("output.LayerNorm.weight"),
            &p("output.LayerNorm.bias"),
        );
    }
    let mut mean = vec![0.0; h];
    for row in x.chunks(h) {
        for i in 0..h {
            mean[i] += row[i] / t_len as f64;
        }
    }
    let n = mean.iter().map(|v| v * v).sum::<f64>().sqrt();
    mean.iter().map(|v| (v / n) as f32).collect()
}

fn check_against_reference(e: &Embedder, texts: &[&str], tolerance: f32) {
    let got = e.embed(texts, Role::Passage, &mut |_| {}).unwrap();
    let encoded = e.encode(texts, "").unwrap();
    for ((t, (ids, _)), v) in texts.iter().zip(&encoded).zip(&got) {
        let want = reference_embedding(e.dir(), ids);
        let worst = want
            .iter()
            .zip(v)
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max);
        eprintln!(
            "{t:?}: {} tokens, max |diff| vs f64 reference = {worst:e}",
            ids.len()
        );
        assert!(
            worst < tolerance,
            "{t:?}: max |diff| {worst:e} >= {tolerance:e}"
        );
    }
}

#[test]
fn embed_tiny_model_matches_f64_reference() {
    let (_tmp, e) = tiny_model(21);
    check_against_reference(
        &e,
        &[
            "The cat sat on the mat.",
            "",
            &"river city paris ".repeat(30),
        ],
        1e-6,
    );
}

#[test]
fn embed_real_model_matches_f64_reference() {
    let Some(e) = real_model() else { return };
    check_against_reference(
        e,
        &[
            "The cat sat on the mat.",
            "Who directed the film Jaws, released in 1975?",
        ],
        1e-6,
    );
}

/// Release benchmark: `cargo test --release -p hopbench-datasets --lib embed -- --ignored bench
/// --nocapture`. Uses the first 200 MuSiQue passages from shared/datasets when present.
#[test]
#[ignore]
fn embed_bench_real_model() {
    let Some(e) = real_model() else { return };
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/datasets/musique-train100/musique_train_corpus.json");
    let passages: Vec<String> = match std::fs::read_to_string(&corpus) {
        Ok(text) => {
            let v: serde_json::Value = serde_json::from_str(&text).unwrap();
            v.as_array()
                .unwrap()
                .iter()
                .take(200)
                .map(|p| {
                    format!(
                        "{}\n{}",
                        p["title"].as_str().unwrap(),
                        p["text"].as_str().unwrap()
                    )
                })
                .collect()
        }
        Err(_) => (0..200)
            .map(|i| format!("passage {i} ").repeat(25))
            .collect(),
    };
    let refs: Vec<&str> = passages.iter().map(String::as_str).collect();
    let tokens: usize = e.token_counts(&refs).unwrap().iter().sum();
    let _warm = e.embed(&refs[..8], Role::Passage, &mut |_| {}).unwrap();
    let t = std::time::Instant::now();
    let v = e.embed(&refs, Role::Passage, &mut |_| {}).unwrap();
    let secs = t.elapsed().as_secs_f64();
    let checksum = blake3::hash(
        &v.iter()
            .flatten()
            .flat_map(|x| x.to_le_bytes())
            .collect::<Vec<u8>>(),
    );
    eprintln!(
        "passages: {} texts, {:.1} tokens/text, {:.2} s, {:.1} texts/s, checksum {}",
        refs.len(),
        tokens as f64 / refs.len() as f64,
        secs,
        refs.len() as f64 / secs,
        &checksum.to_hex()[..16]
    );
    let queries: Vec<String> = passages
        .iter()
        .map(|p| p.split_whitespace().take(12).collect::<Vec<_>>().join(" ") + "?")
        .collect();
    let qrefs: Vec<&str> = queries.iter().map(String::as_str).collect();
    let qtokens: usize = e.token_counts(&qrefs).unwrap().iter().sum();
    let t = std::time::Instant::now();
    let _ = e.embed(&qrefs, Role::Passage, &mut |_| {}).unwrap();
    let secs = t.elapsed().as_secs_f64();
    eprintln!(
        "queries: {} texts, {:.1} tokens/text, {:.2} s, {:.1} texts/s",
        qrefs.len(),
        qtokens as f64 / qrefs.len() as f64,
        secs,
        qrefs.len() as f64 / secs
    );
}

#[test]
fn a_long_text_is_encoded_from_a_bounded_prefix_with_the_same_tokens() {
    let (_tmp, e) = tiny_model(1);
    let whole = |t: &str| {
        let enc = e.tokenizer.encode(t, true).unwrap();
        let n = enc.get_ids().len().min(e.max_seq_length());
        (
            enc.get_ids()[..n].to_vec(),
            enc.get_type_ids()[..n].to_vec(),
        )
    };
    let texts = [
        "the cat sat on the mat ".repeat(5_000),
        // multi-byte characters around every cut, a long whitespace run, no trailing space
        format!("{}é{}", "ü ".repeat(3_000), "riverñ city ".repeat(2_000)),
        format!("{}{}", " ".repeat(40_000), "queen london ".repeat(100)),
        // one huge word: no whitespace to cut at, so it is encoded whole
        "x".repeat(20_000),
        "short text".to_string(),
    ];
    for t in &texts {
        let got = e.encode(&[t.as_str()], "").unwrap();
        assert_eq!(got[0], whole(t), "{:?}...", &t[..20]);
        assert!(e.bounded_prefix(t).unwrap().len() <= t.len());
    }
    // the prefix really is bounded for a long text of words
    assert!(e.bounded_prefix(&texts[0]).unwrap().len() < texts[0].len() / 10);
}

#[test]
fn parts_of_one_cache_are_read_by_every_writer_and_merged_into_the_main_file() {
    let (tmp, e) = tiny_model(13);
    let dir = tmp.path().join("cache");
    let vector = |c: &EmbeddingCache, t: &str| c.get(t).map(<[f32]>::to_vec);
    // two array tasks embed their parts at once, one text in both
    let mut a = EmbeddingCache::open_part(&dir, e.model_id(), e.dim(), Some("0-of-2")).unwrap();
    let mut b = EmbeddingCache::open_part(&dir, e.model_id(), e.dim(), Some("1-of-2")).unwrap();
    embed_cached(&e, &mut a, Role::Passage, &["alpha", "shared"], &mut |_| {}).unwrap();
    embed_cached(&e, &mut b, Role::Passage, &["beta", "shared"], &mut |_| {}).unwrap();
    // a third reader sees both parts, the shared text once and without a warning
    let c = EmbeddingCache::open_part(&dir, e.model_id(), e.dim(), Some("0-of-1")).unwrap();
    assert!(c.repairs().is_none(), "{:?}", c.repairs());
    for t in ["alpha", "beta", "shared"] {
        assert_eq!(vector(&c, t), vector(&a, t).or(vector(&b, t)), "{t}");
    }
    assert_eq!(c.len(), 3);
    // the main writer takes the parts in at its next save and removes them
    let mut main = EmbeddingCache::open(&dir, e.model_id(), e.dim()).unwrap();
    embed_cached(&e, &mut main, Role::Passage, &["gamma"], &mut |_| {}).unwrap();
    let files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|f| f.file_name().to_string_lossy().to_string())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let again = EmbeddingCache::open(&dir, e.model_id(), e.dim()).unwrap();
    assert!(again.repairs().is_none());
    for t in ["alpha", "beta", "shared", "gamma"] {
        assert_eq!(vector(&again, t), vector(&main, t), "{t}");
        assert!(again.contains(t));
    }
}
