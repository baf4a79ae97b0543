//! `run-matrix --show-settings`: the resolved settings as a campaign file that, fed back with
//! `--campaign` and no flags, resolves to the same settings and runs the same cells.

use crate::util::Env;

/// The printed settings without their comment lines (which name where they came from).
fn body(yaml: &str) -> String {
    yaml.lines()
        .filter(|l| !l.starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn show_settings_fed_back_as_the_campaign_gives_the_same_settings() {
    let env = Env::new();
    let shown = env.stdout(&[
        "run-matrix",
        "--threads",
        "2",
        "--results",
        "r1",
        "--data-dir",
        "data",
        "--legs",
        "bm25,lexical",
        "--limit",
        "7",
        "--no-curves",
        "--quiet",
        "--show-settings",
    ]);
    snapshot!(env, shown, @r#"
        # hopbench settings resolved from campaign.yaml, the environment and the command line.
        # `hopbench run-matrix --campaign THIS_FILE` runs with exactly these settings.
        results: r1
        model: model
        prepare:
          bm25:
            k1: 0.9
            b: 0.4
          enrich:
            community_seed: 42
            pagerank_damping: 0.85
            pagerank_iterations: 50
            min_alias_chars: 4
            require_capitalised: true
          simgraph:
            k: 20
            min_similarity: 0.6
            community_seed: 42
        recall_k:
        - 1
        - 2
        - 5
        - 10
        - 20
        budgets:
        - 2000
        - 4000
        - 8000
        - 10000
        - 16000
        - 24000
        - 32000
        stats:
          resamples: 200
          permutations: 500
          seed: 7
        breakdown_labels:
        - multi_turn
        data_dir: data
        run:
          datasets:
          - absent
          - synthetic
          legs:
          - bm25
          - lexical
          limit: 7
          threads: 2
          force: false
          progress: false
          curves: false
        datasets:
          absent:
            format: musique
            files:
              corpus: nowhere/musique_corpus.json
              questions: nowhere/musique_train.json
            synthetic: null
            pool: []
            context_header: title
            note: null
          synthetic:
            format: synthetic
            files: {}
            synthetic: null
            pool: []
            context_header: as_published
            note: null
        legs:
          bm25:
            kind: bm25
            pool_k: 100
            rrf_k: 60.0
          dense:
            kind: dense
            pool_k: 50
          dense_content_only:
            kind: dense_content_only
            pool_k: 100
          lexical:
            kind: lexical
            pool_k: 100
        "#);
    std::fs::write(env.path().join("shown.yaml"), &shown).unwrap();
    let again = env.stdout(&["run-matrix", "--campaign", "shown.yaml", "--show-settings"]);
    assert_eq!(body(&shown), body(&again));
    // and it runs them: results, data directory, legs, limit and threads all come from the file
    let out = env.ok(&["run-matrix", "--campaign", "shown.yaml"]);
    assert!(
        out.contains("4 cells: 2 computed, 0 cached, 2 missing inputs"),
        "{out}"
    );
    let s = env.summary("r1", "synthetic", "bm25");
    assert_eq!(s["queries"], 7);
    assert_eq!(s["inputs"]["limit"], 7);
    assert_eq!(s["timing"]["threads"], 2);
    assert_eq!(s["timing"]["thread_source"], "campaign");
    assert_eq!(
        env.summary("r1", "absent", "lexical")["status"],
        "missing-inputs"
    );
    // a flag still overrides what the file pins
    let out = env.ok(&[
        "run-matrix",
        "--campaign",
        "shown.yaml",
        "--legs",
        "lexical",
        "--show-settings",
    ]);
    assert!(
        out.contains("legs:\n  - lexical\n") || out.contains("legs: [lexical]"),
        "{out}"
    );
}
