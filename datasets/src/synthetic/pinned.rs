//! Pinned digests of generated worlds. The digests were computed by the generator as it was
//! before its limits were raised and its steps made linear, so these tests prove that every
//! world that could be generated then still comes out byte for byte the same: names, texts,
//! ids, order, questions and gold.

use super::*;

/// blake3 of the dataset's `Debug` rendering, which spells out every field of every passage
/// and question, in order; a generated world's gold is a set (no question has a grade), and
/// the empty `grades` field, added after the digests were pinned, is left out of the text.
fn digest(ds: &RawDataset) -> String {
    assert!(ds.questions.iter().all(|q| q.grades.is_empty()));
    let text = format!("{ds:?}").replace(" grades: {},", "");
    blake3::hash(text.as_bytes()).to_hex().to_string()
}

/// A mid-size world: another seed, more entities, two distractors each.
fn mid_size(entities: usize, questions: usize, distractors_per_entity: usize) -> SyntheticConfig {
    SyntheticConfig {
        seed: 7,
        entities,
        questions,
        distractors_per_entity,
        ..SyntheticConfig::default()
    }
}

fn assert_digest(cfg: &SyntheticConfig, expected: &str) {
    let w = world::build(cfg.seed, cfg.entities, cfg.confusable_percent);
    assert_eq!(
        w.name_widenings, 0,
        "{cfg:?}: the name inventory never runs out"
    );
    assert_eq!(digest(&generate(cfg)), expected, "{cfg:?}");
}

#[test]
fn default_world_is_unchanged() {
    assert_digest(
        &SyntheticConfig::default(),
        "795e1e57d2806b8e62e26ea00af545e1160d135d0640e6599df26e0352c8801d",
    );
}

#[test]
fn mid_size_worlds_are_unchanged() {
    assert_digest(
        &SyntheticConfig {
            entities: 600,
            questions: 250,
            ..SyntheticConfig::default()
        },
        "4ca8dc6e57de4ea80d7981a4759e6bf2ab0e3526daf7f65eaf388549674b3070",
    );
    assert_digest(
        &mid_size(2000, 600, 2),
        "5639c5a8a05f5cc4506e5173df358447ed4e255d3b9d65b7f4b2575d8181c9f0",
    );
    assert_digest(
        &mid_size(5000, 1250, 1),
        "cb4fc3f67aa789cc115e410a4de33d94c850b15ba49621937d078cd19462570b",
    );
}

/// `PIN_SIZES=5000,10000 cargo test -p hopbench-datasets --lib synthetic::pinned -- --ignored
/// --nocapture` prints the digests of `mid_size(n, n / 4, 1)` worlds, to compare two builds.
#[test]
#[ignore = "prints digests for comparing two builds"]
fn print_digests() {
    let sizes = std::env::var("PIN_SIZES").unwrap_or_default();
    for n in sizes.split(',').filter(|x| !x.is_empty()) {
        let n: usize = n.parse().expect("PIN_SIZES: comma-separated entity counts");
        let cfg = mid_size(n, n / 4, 1);
        let t = std::time::Instant::now();
        let ds = generate(&cfg);
        let w = world::build(cfg.seed, cfg.entities, cfg.confusable_percent);
        eprintln!(
            "entities {n} passages {} in {:?}: {} (name widenings {})",
            ds.passages.len(),
            t.elapsed(),
            digest(&ds),
            w.name_widenings
        );
    }
}
