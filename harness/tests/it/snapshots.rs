//! Snapshots of every report the binary prints or writes: the matrix table and `matrix.md`,
//! `compare`, `compare-legs` (whole and by group), `breakdown` and `compare-curves`. The
//! numbers are deterministic (fixed seeds, a seeded tiny model); the filters of
//! [`Env::filters`] hide the timings and the temp directory.

use crate::util::Env;

const CAMPAIGN: &str = r#"
results: results
model: model
recall_k: [1, 2, 5, 10, 20]
budgets: [500, 2000]
stats: {resamples: 200, permutations: 500, seed: 7}
datasets:
  synthetic: {format: synthetic}
  synthetic-dialogues: {format: dialogues, derive_from: synthetic}
  absent: {format: musique, files: {questions: nowhere/q.json}}
legs:
  lexical: {kind: lexical}
  bm25: {kind: bm25}
  packer: {kind: packer, budget: 2000}
  graph_rescue_packed: {kind: graph_rescue_packed, budget: 2000}
  multi_horizon: {kind: multi_horizon}
"#;

fn env() -> Env {
    let env = Env::new();
    std::fs::write(env.path().join("campaign.yaml"), CAMPAIGN).unwrap();
    env
}

/// One run of the whole campaign into `a`, then the same cells with one bm25 parameter changed
/// into `b` (a copy of `a`, so only the changed cells are recomputed), and every report.
#[test]
fn every_report_of_a_small_matrix() {
    let env = env();
    let run = [
        "run-matrix",
        "--threads",
        "2",
        "--quiet",
        "--data-dir",
        "data",
    ];
    let table = env.stdout(&[&run[..], &["--limit", "24", "--results", "a"]].concat());
    snapshot!(env, table, @r#"
        Indexed per passage (protocol): absent title+text, synthetic header+text, synthetic-dialogues header+text.

        | dataset | leg | status | queries | R@2 | R@5 | R@10 [95% CI] | nDCG@10 | docR@10 | chain@10 | fullchain@10 [95% CI] | tokens@10 | median ms | p95 ms |
        |---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|
        | absent | bm25 | missing-inputs | 0 | — | — | — | — | — | — | — | — | — | — |
        | absent | graph_rescue_packed | missing-inputs | 0 | — | — | — | — | — | — | — | — | — | — |
        | absent | lexical | missing-inputs | 0 | — | — | — | — | — | — | — | — | — | — |
        | absent | multi_horizon | missing-inputs | 0 | — | — | — | — | — | — | — | — | — | — |
        | absent | packer | missing-inputs | 0 | — | — | — | — | — | — | — | — | — | — |
        | synthetic | bm25 | ok | 24 | 0.2569 | 0.3264 | 0.3611 [0.250, 0.469] | 0.3226 | 0.3958 | 0.3611 | 0.0833 [0.000, 0.208] | 664 | [MS] | [MS] |
        | synthetic | graph_rescue_packed | ok | 24 | 0.2361 | 0.3056 | 0.3611 [0.250, 0.469] | 0.2997 | 0.3958 | 0.3611 | 0.0833 [0.000, 0.208] | 668 | [MS] | [MS] |
        | synthetic | lexical | ok | 24 | 0.3229 | 0.4340 | 0.5417 [0.448, 0.625] | 0.5197 | 0.5938 | 0.5417 | 0.1667 [0.042, 0.333] | 633 | [MS] | [MS] |
        | synthetic | multi_horizon | missing-inputs | 0 | — | — | — | — | — | — | — | — | — | — |
        | synthetic | packer | ok | 24 | 0.1771 | 0.2951 | 0.3437 [0.246, 0.462] | 0.3063 | 0.4583 | 0.3437 | 0.0833 [0.000, 0.208] | 653 | [MS] | [MS] |
        | synthetic-dialogues | bm25 | ok | 24 | 0.3333 | 0.4583 | 0.5417 [0.332, 0.750] | 0.3815 | 0.5417 | — | — | 658 | [MS] | [MS] |
        | synthetic-dialogues | graph_rescue_packed | ok | 24 | 0.2917 | 0.5000 | 0.5417 [0.332, 0.750] | 0.3801 | 0.5833 | — | — | 661 | [MS] | [MS] |
        | synthetic-dialogues | lexical | ok | 24 | 0.5000 | 0.5833 | 0.5833 [0.333, 0.750] | 0.4619 | 0.5833 | — | — | 639 | [MS] | [MS] |
        | synthetic-dialogues | multi_horizon | ok | 24 | 0.5833 | 0.8750 | 0.9583 [0.874, 1.000] | 0.7043 | 1.0000 | — | — | 672 | [MS] | [MS] |
        | synthetic-dialogues | packer | ok | 24 | 0.2917 | 0.4167 | 0.5417 [0.333, 0.750] | 0.3714 | 0.5417 | — | — | 650 | [MS] | [MS] |
        "#);
    let md = std::fs::read_to_string(env.results("a").join("matrix.md")).unwrap();
    snapshot!(env, md, @r#"
        # hopbench matrix

        Indexed per passage (protocol): absent title+text, synthetic header+text, synthetic-dialogues header+text.

        | dataset | leg | status | queries | R@2 | R@5 | R@10 [95% CI] | nDCG@10 | docR@10 | chain@10 | fullchain@10 [95% CI] | tokens@10 | median ms | p95 ms |
        |---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|
        | absent | bm25 | missing-inputs | 0 | — | — | — | — | — | — | — | — | — | — |
        | absent | graph_rescue_packed | missing-inputs | 0 | — | — | — | — | — | — | — | — | — | — |
        | absent | lexical | missing-inputs | 0 | — | — | — | — | — | — | — | — | — | — |
        | absent | multi_horizon | missing-inputs | 0 | — | — | — | — | — | — | — | — | — | — |
        | absent | packer | missing-inputs | 0 | — | — | — | — | — | — | — | — | — | — |
        | synthetic | bm25 | ok | 24 | 0.2569 | 0.3264 | 0.3611 [0.250, 0.469] | 0.3226 | 0.3958 | 0.3611 | 0.0833 [0.000, 0.208] | 664 | [MS] | [MS] |
        | synthetic | graph_rescue_packed | ok | 24 | 0.2361 | 0.3056 | 0.3611 [0.250, 0.469] | 0.2997 | 0.3958 | 0.3611 | 0.0833 [0.000, 0.208] | 668 | [MS] | [MS] |
        | synthetic | lexical | ok | 24 | 0.3229 | 0.4340 | 0.5417 [0.448, 0.625] | 0.5197 | 0.5938 | 0.5417 | 0.1667 [0.042, 0.333] | 633 | [MS] | [MS] |
        | synthetic | multi_horizon | missing-inputs | 0 | — | — | — | — | — | — | — | — | — | — |
        | synthetic | packer | ok | 24 | 0.1771 | 0.2951 | 0.3437 [0.246, 0.462] | 0.3063 | 0.4583 | 0.3437 | 0.0833 [0.000, 0.208] | 653 | [MS] | [MS] |
        | synthetic-dialogues | bm25 | ok | 24 | 0.3333 | 0.4583 | 0.5417 [0.332, 0.750] | 0.3815 | 0.5417 | — | — | 658 | [MS] | [MS] |
        | synthetic-dialogues | graph_rescue_packed | ok | 24 | 0.2917 | 0.5000 | 0.5417 [0.332, 0.750] | 0.3801 | 0.5833 | — | — | 661 | [MS] | [MS] |
        | synthetic-dialogues | lexical | ok | 24 | 0.5000 | 0.5833 | 0.5833 [0.333, 0.750] | 0.4619 | 0.5833 | — | — | 639 | [MS] | [MS] |
        | synthetic-dialogues | multi_horizon | ok | 24 | 0.5833 | 0.8750 | 0.9583 [0.874, 1.000] | 0.7043 | 1.0000 | — | — | 672 | [MS] | [MS] |
        | synthetic-dialogues | packer | ok | 24 | 0.2917 | 0.4167 | 0.5417 [0.333, 0.750] | 0.3714 | 0.5417 | — | — | 650 | [MS] | [MS] |

        Cells without numbers:

        - absent x bm25: raw files absent: data/nowhere/q.json
        - absent x graph_rescue_packed: raw files absent: data/nowhere/q.json
        - absent x lexical: raw files absent: data/nowhere/q.json
        - absent x multi_horizon: raw files absent: data/nowhere/q.json
        - absent x packer: raw files absent: data/nowhere/q.json
        - synthetic x multi_horizon: the dataset has no conversations (the conversation legs need the turns so far per query: MTRAG-UN or a derived dialogue set)

        Means over the evaluated queries; 95% CIs are percentile bootstrap intervals of the mean (fixed seed). Chain metrics average only queries with a published chain (— where none). Latency is retrieve + select per query, in ms, at the pinned thread count. The protocol is what BM25 and the embedder see per passage: `title+text` (the multi-hop sets' and BEIR's published protocol), `header+text` (the dataset's own header) or `text`; `lexical_content_only` and `dense_content_only` are the text-alone ablations.
        "#);

    copy_dir(&env.results("a"), &env.results("b"));
    let campaign = CAMPAIGN.replace("bm25: {kind: bm25}", "bm25: {kind: bm25, rrf_k: 2}");
    std::fs::write(env.path().join("changed.yaml"), campaign).unwrap();
    let changed = [
        &run[..],
        &[
            "--limit",
            "24",
            "--results",
            "b",
            "--campaign",
            "changed.yaml",
        ],
    ];
    let out = env.ok(&changed.concat());
    assert!(out.contains(": 2 computed,"), "{out}");
    snapshot!(env, env.stdout(&["compare", "a", "b"]), @r#"
        A = a
        B = b

        | dataset | leg | verdict | queries | R@10 A | R@10 B | Δ [95% CI] | p (Holm) |
        |---|---|---|---:|---:|---:|---|---:|
        | absent | bm25 | not comparable (status MissingInputs vs MissingInputs) | 0 | — | — | — | — |
        | absent | graph_rescue_packed | not comparable (status MissingInputs vs MissingInputs) | 0 | — | — | — | — |
        | absent | lexical | not comparable (status MissingInputs vs MissingInputs) | 0 | — | — | — | — |
        | absent | multi_horizon | not comparable (status MissingInputs vs MissingInputs) | 0 | — | — | — | — |
        | absent | packer | not comparable (status MissingInputs vs MissingInputs) | 0 | — | — | — | — |
        | synthetic | bm25 | moved | 24 | 0.3611 | 0.4549 | +0.0938 [-0.028, +0.202] | 1.0000 |
        | synthetic | graph_rescue_packed | identical | 24 | 0.3611 | 0.3611 | +0.0000 [+0.000, +0.000] | 1.0000 |
        | synthetic | lexical | identical | 24 | 0.5417 | 0.5417 | +0.0000 [+0.000, +0.000] | 1.0000 |
        | synthetic | multi_horizon | not comparable (status MissingInputs vs MissingInputs) | 0 | — | — | — | — |
        | synthetic | packer | identical | 24 | 0.3437 | 0.3437 | +0.0000 [+0.000, +0.000] | 1.0000 |
        | synthetic-dialogues | bm25 | moved | 24 | 0.5417 | 0.5833 | +0.0417 [-0.125, +0.208] | 1.0000 |
        | synthetic-dialogues | graph_rescue_packed | identical | 24 | 0.5417 | 0.5417 | +0.0000 [+0.000, +0.000] | 1.0000 |
        | synthetic-dialogues | lexical | identical | 24 | 0.5833 | 0.5833 | +0.0000 [+0.000, +0.000] | 1.0000 |
        | synthetic-dialogues | multi_horizon | identical | 24 | 0.9583 | 0.9583 | +0.0000 [+0.000, +0.000] | 1.0000 |
        | synthetic-dialogues | packer | identical | 24 | 0.5417 | 0.5417 | +0.0000 [+0.000, +0.000] | 1.0000 |

        Metrics beyond the one-query floor:

        - synthetic x bm25 recall@1: +0.1528 (floor 0.0417), 95% CI [+0.0693, +0.2361], p_holm 0.7106
        - synthetic x bm25 recall@2: +0.0590 (floor 0.0417), 95% CI [-0.0625, +0.1738], p_holm 1.0000
        - synthetic x bm25 recall@5: +0.0729 (floor 0.0417), 95% CI [-0.0036, +0.1495], p_holm 1.0000
        - synthetic x bm25 recall@10: +0.0938 (floor 0.0417), 95% CI [-0.0278, +0.2016], p_holm 1.0000
        - synthetic x bm25 recall@20: +0.1493 (floor 0.0417), 95% CI [+0.0415, +0.2780], p_holm 1.0000
        - synthetic x bm25 ndcg@10: +0.1355 (floor 0.0417), 95% CI [+0.0364, +0.2433], p_holm 1.0000
        - synthetic x bm25 mrr@10: +0.2441 (floor 0.0417), 95% CI [+0.0942, +0.3987], p_holm 0.8782
        - synthetic x bm25 doc_recall@5: +0.0521 (floor 0.0417), 95% CI [-0.0208, +0.1354], p_holm 1.0000
        - synthetic x bm25 doc_recall@10: +0.0938 (floor 0.0417), 95% CI [-0.0244, +0.1982], p_holm 1.0000
        - synthetic x bm25 chain_coverage@10: +0.0938 (floor 0.0417), 95% CI [-0.0278, +0.2016], p_holm 1.0000
        - synthetic-dialogues x bm25 recall@5: +0.0833 (floor 0.0417), 95% CI [-0.0833, +0.2094], p_holm 1.0000
        - synthetic-dialogues x bm25 recall@20: -0.0833 (floor 0.0417), 95% CI [-0.2083, +0.0000], p_holm 1.0000
        - synthetic-dialogues x bm25 ndcg@10: +0.0553 (floor 0.0417), 95% CI [-0.0485, +0.1475], p_holm 1.0000
        - synthetic-dialogues x bm25 mrr@10: +0.0576 (floor 0.0417), 95% CI [-0.0424, +0.1552], p_holm 1.0000

        Holm family: 89 paired tests.
        "#);

    let legs = ["compare-legs", "--results", "a", "--dataset"];
    snapshot!(env, env.stdout(&[&legs[..], &["synthetic", "lexical", "bm25"]].concat()), @r#"
        A = a#lexical
        B = a#bm25

        | dataset | leg | verdict | queries | R@10 A | R@10 B | Δ [95% CI] | p (Holm) |
        |---|---|---|---:|---:|---:|---|---:|
        | synthetic | bm25 vs lexical | moved | 24 | 0.5417 | 0.3611 | -0.1806 [-0.316, -0.052] | 0.1078 |

        Metrics beyond the one-query floor:

        - synthetic x bm25 vs lexical recall@1: -0.1736 (floor 0.0417), 95% CI [-0.2639, -0.0868], p_holm 0.0220
        - synthetic x bm25 vs lexical recall@2: -0.0660 (floor 0.0417), 95% CI [-0.1736, +0.0313], p_holm 0.5549
        - synthetic x bm25 vs lexical recall@5: -0.1076 (floor 0.0417), 95% CI [-0.2119, -0.0173], p_holm 0.4232
        - synthetic x bm25 vs lexical recall@10: -0.1806 (floor 0.0417), 95% CI [-0.3161, -0.0521], p_holm 0.1078
        - synthetic x bm25 vs lexical recall@20: -0.1736 (floor 0.0417), 95% CI [-0.2959, -0.0659], p_holm 0.0978
        - synthetic x bm25 vs lexical ndcg@10: -0.1971 (floor 0.0417), 95% CI [-0.3068, -0.1032], p_holm 0.0319
        - synthetic x bm25 vs lexical mrr@10: -0.3282 (floor 0.0417), 95% CI [-0.4852, -0.1747], p_holm 0.0220
        - synthetic x bm25 vs lexical doc_recall@5: -0.1076 (floor 0.0417), 95% CI [-0.2326, +0.0002], p_holm 0.4232
        - synthetic x bm25 vs lexical doc_recall@10: -0.1979 (floor 0.0417), 95% CI [-0.2952, -0.0971], p_holm 0.0220
        - synthetic x bm25 vs lexical chain_coverage@10: -0.1806 (floor 0.0417), 95% CI [-0.3161, -0.0521], p_holm 0.1078
        - synthetic x bm25 vs lexical full_chain_hit@10: -0.0833 (floor 0.0417), 95% CI [-0.2500, +0.0833], p_holm 0.6547

        Holm family: 11 paired tests.
        "#);
    let by = [
        "synthetic-dialogues",
        "bm25",
        "multi_horizon",
        "--by",
        "multi_turn",
    ];
    snapshot!(env, env.stdout(&[&legs[..], &by[..]].concat()), @r#"
        A = a#bm25
        B = a#multi_horizon

        | dataset | leg | verdict | queries | R@10 A | R@10 B | Δ [95% CI] | p (Holm) |
        |---|---|---|---:|---:|---:|---|---:|
        | synthetic-dialogues | multi_horizon vs bm25 [multi_turn=Follow-up] | moved | 14 | 0.2143 | 0.9286 | +0.7143 [+0.498, +0.929] | 0.0359 |
        | synthetic-dialogues | multi_horizon vs bm25 [multi_turn=N/A] | identical | 10 | 1.0000 | 1.0000 | +0.0000 [+0.000, +0.000] | 1.0000 |

        Metrics beyond the one-query floor:

        - synthetic-dialogues x multi_horizon vs bm25 [multi_turn=Follow-up] recall@1: +0.4286 (floor 0.0714), 95% CI [+0.1429, +0.7143], p_holm 0.4172
        - synthetic-dialogues x multi_horizon vs bm25 [multi_turn=Follow-up] recall@2: +0.4286 (floor 0.0714), 95% CI [+0.1429, +0.7143], p_holm 0.4172
        - synthetic-dialogues x multi_horizon vs bm25 [multi_turn=Follow-up] recall@5: +0.7143 (floor 0.0714), 95% CI [+0.5000, +0.9286], p_holm 0.0359
        - synthetic-dialogues x multi_horizon vs bm25 [multi_turn=Follow-up] recall@10: +0.7143 (floor 0.0714), 95% CI [+0.4982, +0.9286], p_holm 0.0359
        - synthetic-dialogues x multi_horizon vs bm25 [multi_turn=Follow-up] recall@20: +0.5714 (floor 0.0714), 95% CI [+0.2857, +0.7875], p_holm 0.0958
        - synthetic-dialogues x multi_horizon vs bm25 [multi_turn=Follow-up] ndcg@10: +0.5534 (floor 0.0714), 95% CI [+0.3580, +0.7520], p_holm 0.0359
        - synthetic-dialogues x multi_horizon vs bm25 [multi_turn=Follow-up] mrr@10: +0.5024 (floor 0.0714), 95% CI [+0.2797, +0.7224], p_holm 0.0359
        - synthetic-dialogues x multi_horizon vs bm25 [multi_turn=Follow-up] doc_recall@5: +0.7857 (floor 0.0714), 95% CI [+0.5714, +1.0000], p_holm 0.0359
        - synthetic-dialogues x multi_horizon vs bm25 [multi_turn=Follow-up] doc_recall@10: +0.7857 (floor 0.0714), 95% CI [+0.5714, +1.0000], p_holm 0.0359

        Holm family: 18 paired tests.
        "#);

    let breakdown = [
        "breakdown",
        "--results",
        "a",
        "--dataset",
        "synthetic-dialogues",
        "--legs",
        "bm25,multi_horizon",
    ];
    snapshot!(env, env.stdout(&breakdown), @r#"
        ## synthetic-dialogues x bm25 (24 queries)

        | label:multi_turn | queries | R@10 [95% CI] | nDCG@10 [95% CI] |
        |---|---:|---|---|
        | Follow-up | 14 | 0.2143 [0.000, 0.429] | 0.1229 [0.000, 0.262] |
        | N/A | 10 | 1.0000 [1.000, 1.000] | 0.7436 [0.576, 0.886] |


        ## synthetic-dialogues x multi_horizon (24 queries)

        | intent | queries | R@10 [95% CI] | nDCG@10 [95% CI] |
        |---|---:|---|---|
        | DRILL_DOWN | 14 | 0.9286 [0.784, 1.000] | 0.6763 [0.485, 0.840] |
        | EXPLORE | 10 | 1.0000 [1.000, 1.000] | 0.7436 [0.576, 0.886] |

        | label:multi_turn | queries | R@10 [95% CI] | nDCG@10 [95% CI] |
        |---|---:|---|---|
        | Follow-up | 14 | 0.9286 [0.784, 1.000] | 0.6763 [0.485, 0.840] |
        | N/A | 10 | 1.0000 [1.000, 1.000] | 0.7436 [0.576, 0.886] |

        | label:multi_turn \ intent | DRILL_DOWN | EXPLORE | total |
        |---|---:|---:|---:|
        | Follow-up | 14 | 0 | 14 |
        | N/A | 0 | 10 | 10 |

        reference resolution: 14 / 14 turns correct = 1.0000 [95% CI 1.000, 1.000] (14 turns resolved something)
        "#);

    let curves = ["compare-curves", "--results", "a", "--dataset", "synthetic"];
    let pair = ["packer", "graph_rescue_packed"];
    snapshot!(env, env.stdout(&[&curves[..], &pair[..]].concat()), @r#"
        synthetic: B = graph_rescue_packed minus A = packer at equal token budgets (24 queries; Δ [95% paired bootstrap CI])

        | budget | tokens A | tokens B | Δ recall@10 | Δ ndcg@10 | Δ doc_recall@10 | Δ chain_coverage@10 | Δ full_chain_hit@10 |
        |---:|---:|---:|---|---|---|---|---|
        | 500 | 481 | 490 | -0.0660 [-0.188, +0.035] | -0.0484 [-0.165, +0.059] | -0.0799 [-0.194, +0.021] | -0.0660 [-0.188, +0.035] | -0.0833 [-0.208, +0.000] |
        | 2000 | 1979 | 1984 | +0.0174 [-0.056, +0.097] | -0.0066 [-0.080, +0.072] | -0.0625 [-0.174, +0.042] | +0.0174 [-0.056, +0.097] | +0.0000 [+0.000, +0.000] |
        | AUC (log2 budget) | | | -0.0243 [-0.096, +0.035] | -0.0275 [-0.105, +0.042] | -0.0712 [-0.160, +0.009] | -0.0243 [-0.096, +0.035] | -0.0417 [-0.104, +0.000] |
        "#);
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
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
