use std::path::Path;

use super::*;
use crate::vector::dot;

/// `n` pseudo-random unit vectors of width `dim`.
fn unit_vectors(n: usize, dim: usize, seed: u64) -> Vec<f32> {
    let mut s = seed;
    let mut v: Vec<f32> = (0..n * dim)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) - 0.5
        })
        .collect();
    for row in v.chunks_exact_mut(dim) {
        let norm = row.iter().map(|x| x * x).sum::<f32>().sqrt();
        row.iter_mut().for_each(|x| *x /= norm);
    }
    v
}

fn exact_top(vectors: &[f32], dim: usize, q: &[f32], k: usize) -> Vec<u64> {
    let mut all: Vec<(u64, f32)> = vectors
        .chunks_exact(dim)
        .enumerate()
        .map(|(i, v)| (i as u64, dot(q, v)))
        .collect();
    all.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    all.into_iter().take(k).map(|(i, _)| i).collect()
}

fn ids(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("doc-{i:05}")).collect()
}

fn build(dir: &Path, vectors: &[f32], dim: usize, names: &[String]) -> HnswShard {
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    HnswShard::build(dir, "test", vectors, dim, &refs, HnswSettings::default())
        .unwrap()
        .0
}

#[test]
fn a_wide_beam_finds_the_exact_neighbours_and_every_hit_carries_its_record_id() {
    let (n, dim) = (600, 16);
    let v = unit_vectors(n, dim, 7);
    let names = ids(n);
    let tmp = tempfile::tempdir().unwrap();
    let shard = build(&tmp.path().join("s"), &v, dim, &names);
    assert_eq!(shard.manifest().points, n);
    let mut found = 0;
    for q in 0..50 {
        let query = &v[q * 7 % n * dim..(q * 7 % n + 1) * dim];
        let hits = shard.search(query, 10, 512, None).unwrap();
        assert_eq!(hits.len(), 10);
        for h in &hits {
            assert_eq!(h.id.as_deref(), Some(names[h.point as usize].as_str()));
        }
        let exact = exact_top(&v, dim, query, 10);
        found += hits.iter().filter(|h| exact.contains(&h.point)).count();
        // the same query over the same graph: the same answer
        assert_eq!(shard.search(query, 10, 512, None).unwrap(), hits);
    }
    assert!(found >= 495, "recall@10 at ef 512 is {found}/500");
}

#[test]
fn a_small_shard_is_searched_through_its_graph_not_scanned() {
    // With ef = 1 and k = 1 an HNSW search is greedy and misses the true neighbour of some
    // queries; an exact scan never would. So some miss proves the graph is used.
    let (n, dim) = (800, 24);
    let v = unit_vectors(n, dim, 11);
    let q = unit_vectors(200, dim, 12);
    let tmp = tempfile::tempdir().unwrap();
    let shard = build(&tmp.path().join("s"), &v, dim, &ids(n));
    let misses = q
        .chunks_exact(dim)
        .filter(|query| {
            let hit = shard.search_points(query, 1, 1).unwrap();
            hit[0].0 != exact_top(&v, dim, query, 1)[0]
        })
        .count();
    assert!(misses > 0, "every greedy search found the exact neighbour");
}

#[test]
fn open_checks_the_manifest_and_the_graph() {
    let (n, dim) = (300, 8);
    let v = unit_vectors(n, dim, 3);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("s");
    let shard = build(&dir, &v, dim, &ids(n));
    let manifest = shard.manifest().clone();
    drop(shard);
    let expected = Expected {
        source: "test",
        settings: HnswSettings::default(),
        points: n,
        dim,
    };
    HnswShard::open(&dir, &expected, &v[..]).unwrap();

    let wrong_source = Expected {
        source: "other",
        ..expected
    };
    let e = HnswShard::open(&dir, &wrong_source, &v[..])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("hnsw-manifest.json") && e.contains("`source`"),
        "{e}"
    );

    let wrong_settings = Expected {
        settings: HnswSettings {
            m: 32,
            ..HnswSettings::default()
        },
        ..expected
    };
    let e = HnswShard::open(&dir, &wrong_settings, &v[..])
        .unwrap_err()
        .to_string();
    assert!(e.contains("`settings`"), "{e}");

    // a manifest whose probe digest is not this graph's
    let mpath = dir.join(MANIFEST);
    let mut bad = manifest.clone();
    bad.probe = "0".repeat(64);
    std::fs::write(&mpath, serde_json::to_vec(&bad).unwrap()).unwrap();
    let e = HnswShard::open(&dir, &expected, &v[..])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("`probe`") && e.contains("changed since it was built"),
        "{e}"
    );

    // an unknown manifest key
    let mut value = serde_json::to_value(&manifest).unwrap();
    value["extra"] = 1.into();
    std::fs::write(&mpath, serde_json::to_vec(&value).unwrap()).unwrap();
    let e = HnswShard::open(&dir, &expected, &v[..])
        .unwrap_err()
        .to_string();
    assert!(e.contains("unknown field `extra`"), "{e}");

    std::fs::remove_file(&mpath).unwrap();
    let e = HnswShard::open(&dir, &expected, &v[..])
        .unwrap_err()
        .to_string();
    assert!(e.contains("hnsw-manifest.json"), "{e}");
}

#[test]
fn a_failed_build_leaves_nothing_behind() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("s");
    let v = unit_vectors(10, 4, 1);
    let e = HnswShard::build(&dir, "t", &v[..], 4, &["a"], HnswSettings::default()).unwrap_err();
    assert!(e.to_string().contains("40 vector values for 1 ids"), "{e}");
    let bad = HnswSettings {
        m: 0,
        ..HnswSettings::default()
    };
    let refs: Vec<&str> = vec!["x"; 10];
    let e = HnswShard::build(&dir, "t", &v[..], 4, &refs, bad).unwrap_err();
    assert!(e.to_string().contains("`m` is 0"), "{e}");
    let e = HnswShard::build(&dir, "t", &v[..], 4, &refs, in_parts(0)).unwrap_err();
    assert!(e.to_string().contains("`part_points` is 0"), "{e}");
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
}

fn build_with(dir: &Path, vectors: &[f32], dim: usize, settings: HnswSettings) -> HnswShard {
    let names = ids(vectors.len() / dim);
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    HnswShard::build(dir, "test", vectors, dim, &refs, settings)
        .unwrap()
        .0
}

/// Over `queries`, the share of each exact top 10 that the top 10 of the shard's pool holds
/// once rescored with the original vectors (ties on ascending point), and the largest gap
/// between a pooled hit's score and its float32 cosine.
fn recall_and_score_gap(
    shard: &HnswShard,
    v: &[f32],
    queries: &[f32],
    dim: usize,
    oversampling: Option<f64>,
) -> (f64, f32) {
    let (mut found, mut total, mut gap) = (0, 0, 0f32);
    for q in queries.chunks_exact(dim) {
        let pool = shard.pool(q, 10, 512, oversampling).unwrap();
        // the whole pool, no more: each part's, at Qdrant's oversampled size
        assert_eq!(pool.len(), shard.max_pool(10, oversampling));
        let mut rescored: Vec<(u64, f32)> = pool
            .iter()
            .map(|&(point, score)| {
                let exact = dot(q, &v[point as usize * dim..][..dim]);
                gap = gap.max((score - exact).abs());
                (point, exact)
            })
            .collect();
        rescored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        rescored.truncate(10);
        let exact = exact_top(v, dim, q, 10);
        found += rescored.iter().filter(|h| exact.contains(&h.0)).count();
        total += exact.len();
    }
    (found as f64 / total as f64, gap)
}

#[test]
fn a_quantised_shard_walks_compressed_vectors_and_rescores_the_oversampled_top_k() {
    let (n, dim) = (1500, 64);
    let v = unit_vectors(n, dim, 21);
    let queries = unit_vectors(40, dim, 22);
    let tmp = tempfile::tempdir().unwrap();
    for (name, quantization, floor) in [
        ("int8", Quantization::Int8, 0.95),
        // a bit per value of random 64-d vectors: 0.31 at oversampling 1, 0.75 at 8 (measured)
        ("binary", Quantization::Binary, 0.7),
    ] {
        let settings = HnswSettings {
            quantization,
            ..HnswSettings::default()
        };
        let dir = tmp.path().join(name);
        let shard = build_with(&dir, &v, dim, settings);
        assert_eq!(shard.manifest().settings.quantization, quantization);
        assert!(shard.is_quantized());
        assert_eq!(shard.max_pool(10, None), 10);
        assert_eq!(shard.max_pool(10, Some(8.0)), 80);
        let (r1, gap) = recall_and_score_gap(&shard, &v, &queries, dim, None);
        let (r8, gap8) = recall_and_score_gap(&shard, &v, &queries, dim, Some(8.0));
        // the pool comes scored by the compressed copies: Qdrant did not read the originals
        // (the caller rescores with them, read where it reads its rows)
        assert!(
            gap.min(gap8) > 1e-4,
            "{name}: the pool's scores are within {gap} of the cosines"
        );
        assert!(r8 >= floor, "{name}: recall@10 with oversampling 8 is {r8}");
        assert!(
            r8 >= r1,
            "{name}: oversampling 8 recalled {r8}, 1 recalled {r1}"
        );
        if quantization == Quantization::Binary {
            // a bit per value loses neighbours that only a wider rescored pool brings back
            assert!(r8 > r1, "binary: oversampling changed nothing ({r1})");
        }
        // reopened, it is verified against its manifest, which names the quantisation
        drop(shard);
        let expected = Expected {
            source: "test",
            settings,
            points: n,
            dim,
        };
        HnswShard::open(&dir, &expected, &v[..]).unwrap();
        let text = std::fs::read_to_string(dir.join(MANIFEST)).unwrap();
        assert!(
            text.contains(&format!("\"quantization\": \"{name}\"")),
            "{text}"
        );
        let float = Expected {
            settings: HnswSettings::default(),
            ..expected
        };
        let e = HnswShard::open(&dir, &float, &v[..])
            .unwrap_err()
            .to_string();
        assert!(e.contains("`settings`"), "{e}");
    }
}

#[test]
fn a_float32_shard_keeps_the_key_and_manifest_it_had_before_quantisation() {
    let s = HnswSettings::default();
    assert_eq!(
        cache_source("h", "embedding", s),
        "export h vectors embedding m 16 ef_construct 100 on_disk false"
    );
    let int8 = HnswSettings {
        quantization: Quantization::Int8,
        ..s
    };
    assert_eq!(
        cache_source("h", "embedding", int8),
        "export h vectors embedding m 16 ef_construct 100 on_disk false quantization int8"
    );
    let json = serde_json::to_string(&s).unwrap();
    assert_eq!(json, r#"{"m":16,"ef_construct":100,"on_disk":false}"#);
    // a part size other than the default is named in both, and read back
    let parts = HnswSettings {
        part_points: 1 << 21,
        ..int8
    };
    assert_eq!(
        cache_source("h", "embedding", parts),
        "export h vectors embedding m 16 ef_construct 100 on_disk false quantization int8 \
         part_points 2097152"
    );
    let json = serde_json::to_string(&parts).unwrap();
    assert!(json.ends_with(r#""part_points":2097152}"#), "{json}");
    let back: HnswSettings = serde_json::from_str(&json).unwrap();
    assert_eq!(back, parts);
    let back: HnswSettings = serde_json::from_str(&serde_json::to_string(&int8).unwrap()).unwrap();
    assert_eq!(back, int8);
    let e = serde_json::from_str::<HnswSettings>(r#"{"quantization":"int4"}"#).unwrap_err();
    assert!(e.to_string().contains("int4"), "{e}");
}

fn build_parts(
    dir: &Path,
    vectors: &[f32],
    dim: usize,
    names: &[String],
    part: usize,
) -> HnswShard {
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    HnswShard::build(dir, "test", vectors, dim, &refs, in_parts(part))
        .unwrap()
        .0
}

/// The default settings with parts of at most `part` points.
fn in_parts(part: usize) -> HnswSettings {
    HnswSettings {
        part_points: part,
        ..HnswSettings::default()
    }
}

#[test]
fn a_shard_in_parts_answers_as_the_exact_scan_over_all_of_them() {
    // a beam wider than a part finds each part's exact top k, so the merge is the exact top k
    // of the whole matrix, ties on ascending point
    let (n, dim) = (250, 8);
    let mut v = unit_vectors(n, dim, 31);
    // two rows equal to row 3, in other parts: a three-way tie that the merge must order
    let row3 = v[3 * dim..4 * dim].to_vec();
    v[120 * dim..121 * dim].copy_from_slice(&row3);
    v[247 * dim..248 * dim].copy_from_slice(&row3);
    let names = ids(n);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("s");
    let shard = build_parts(&dir, &v, dim, &names, 100);
    assert_eq!(shard.manifest().parts, Some(3));
    for part in ["qdrant", "qdrant-1", "qdrant-2"] {
        assert!(dir.join(part).is_dir(), "{part}");
    }
    assert!(!dir.join("qdrant-3").exists());
    let queries = unit_vectors(30, dim, 32);
    for q in queries.chunks_exact(dim).chain([&row3[..]]) {
        let hits = shard.search(q, 10, 256, None).unwrap();
        let got: Vec<u64> = hits.iter().map(|h| h.point).collect();
        assert_eq!(got, exact_top(&v, dim, q, 10));
        for h in &hits {
            assert_eq!(h.id.as_deref(), Some(names[h.point as usize].as_str()));
        }
    }
    let tied: Vec<u64> = shard
        .search(&row3, 3, 256, None)
        .unwrap()
        .iter()
        .map(|h| h.point)
        .collect();
    assert_eq!(tied, vec![3, 120, 247]);
}

#[test]
fn a_quantised_shard_in_parts_pools_each_parts_candidates_with_their_record_ids() {
    let (n, dim) = (300, 16);
    let v = unit_vectors(n, dim, 33);
    let names = ids(n);
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let tmp = tempfile::tempdir().unwrap();
    let settings = HnswSettings {
        quantization: Quantization::Int8,
        ..in_parts(100)
    };
    let dir = tmp.path().join("s");
    let shard = HnswShard::build(&dir, "test", &v[..], dim, &refs, settings)
        .unwrap()
        .0;
    assert_eq!(shard.manifest().parts, Some(3));
    // Qdrant's pool: (2.5 * 5) as usize = 12 per part
    assert_eq!(shard.max_pool(5, Some(2.5)), 36);
    let queries = unit_vectors(10, dim, 34);
    for q in queries.chunks_exact(dim) {
        let pool = shard.pool(q, 5, 256, Some(2.5)).unwrap();
        assert_eq!(pool.len(), 36);
        // part after part, each part's own rows
        for (i, &(point, _)) in pool.iter().enumerate() {
            let part = (i / 12) as u64;
            assert!(
                (part * 100..(part + 1) * 100).contains(&point),
                "{i}: {point}"
            );
        }
        // rescored exactly, a beam wider than a part gives the exact top 5
        let mut rescored: Vec<(u64, f32)> = pool
            .iter()
            .map(|&(point, _)| (point, dot(q, &v[point as usize * dim..][..dim])))
            .collect();
        rescored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        let top: Vec<u64> = rescored.iter().take(5).map(|h| h.0).collect();
        assert_eq!(top, exact_top(&v, dim, q, 5));
    }
    // each point named by its payload, read from the part that holds it, in the order asked;
    // a point the shard does not hold has no name
    let ids = shard.record_ids(&[250, 3, 120, 999, 99, 100]).unwrap();
    let want = |p: usize| Some(names[p].clone());
    assert_eq!(
        ids,
        vec![want(250), want(3), want(120), None, want(99), want(100)]
    );
    assert!(shard.record_ids(&[]).unwrap().is_empty());
}

#[test]
fn a_shard_in_parts_is_verified_part_by_part_when_opened() {
    let (n, dim) = (130, 8);
    let v = unit_vectors(n, dim, 41);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("s");
    let manifest = build_parts(&dir, &v, dim, &ids(n), 50).manifest().clone();
    let expected = Expected {
        source: "test",
        settings: in_parts(50),
        points: n,
        dim,
    };
    let reopened = HnswShard::open(&dir, &expected, &v[..]).unwrap();
    assert_eq!(reopened.manifest(), &manifest);
    drop(reopened);
    // a manifest that cuts the rows otherwise does not describe these parts
    let text = std::fs::read_to_string(dir.join(MANIFEST)).unwrap();
    assert!(text.contains("\"parts\": 3"), "{text}");
    let with_parts = |p: &str| {
        std::fs::write(
            dir.join(MANIFEST),
            text.replace("\"parts\": 3", &format!("\"parts\": {p}")),
        )
        .unwrap();
        HnswShard::open(&dir, &expected, &v[..])
            .unwrap_err()
            .to_string()
    };
    let e = with_parts("4");
    assert!(
        e.contains("qdrant:")
            && e.contains("holds 43 points")
            && e.contains("its manifest says 32"),
        "{e}"
    );
    let e = with_parts("1");
    assert!(e.contains("`parts`") && e.contains("2 to 130"), "{e}");
    std::fs::write(dir.join(MANIFEST), &text).unwrap();
    HnswShard::open(&dir, &expected, &v[..]).unwrap();
    // a missing part is named
    std::fs::remove_dir_all(dir.join("qdrant-2")).unwrap();
    let e = HnswShard::open(&dir, &expected, &v[..])
        .unwrap_err()
        .to_string();
    assert!(e.contains("qdrant-2"), "{e}");
}

#[test]
fn a_shard_of_one_part_writes_the_manifest_it_wrote_before_parts() {
    let (n, dim) = (40, 16);
    let v = unit_vectors(n, dim, 51);
    let tmp = tempfile::tempdir().unwrap();
    // parts as large as the shard, or larger, are one part: no field, one directory
    for part in [n, n + 1, PART_POINTS] {
        let dir = tmp.path().join(format!("s{part}"));
        let shard = build_parts(&dir, &v, dim, &ids(n), part);
        assert_eq!(shard.manifest().parts, None);
        let text = std::fs::read_to_string(dir.join(MANIFEST)).unwrap();
        assert!(!text.contains("parts"), "{text}");
        assert!(!dir.join("qdrant-1").exists());
    }
}
