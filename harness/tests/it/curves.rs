//! Budget curves, plots and the equal-spend comparison on the generated world.

use crate::util::Env;

const CAMPAIGN: &str = r#"
model: model
budgets: [500, 1000, 2000, 4000, 64000]
stats: {resamples: 200, permutations: 200, seed: 3}
datasets:
  synthetic: {format: synthetic}
legs:
  bm25: {kind: bm25}
  graph_rescue: {kind: graph_rescue}
  packer: {kind: packer, budget: 2000}
  graph_rescue_packed: {kind: graph_rescue_packed, budget: 2000}
  graph_rescue_coe: {kind: graph_rescue_coe, budget: 4000}
"#;

fn env() -> Env {
    let env = Env::new();
    std::fs::write(env.path().join("campaign.yaml"), CAMPAIGN).unwrap();
    env
}

fn curve(env: &Env, leg: &str) -> serde_json::Value {
    let p = env
        .results("results")
        .join(format!("curves/synthetic/{leg}.curve.json"));
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

#[test]
fn selecting_legs_get_curves_that_respect_budgets_and_match_the_unpacked_leg_at_the_top() {
    let env = env();
    let out = env.ok(&["run-matrix", "--threads", "2", "--quiet"]);
    assert!(out.contains("budget curve over 5 budgets"), "{out}");
    for leg in ["packer", "graph_rescue_packed", "graph_rescue_coe"] {
        let c = curve(&env, leg);
        let points = c["points"].as_array().unwrap();
        assert_eq!(points.len(), 5);
        for p in points {
            let budget = p["budget"].as_u64().unwrap();
            assert!(p["tokens_max"].as_u64().unwrap() <= budget, "{leg}: {p}");
        }
        // one retrieve, then every select: the curve's own key differs from the cell's
        assert_ne!(c["key"], env.summary("results", "synthetic", leg)["key"]);
    }
    assert!(
        !env.results("results")
            .join("curves/synthetic/bm25.curve.json")
            .exists(),
        "no curve for a leg that does not select"
    );
    // at a budget above the whole pool, the packed union's top 10 is the unpacked union's
    let top = curve(&env, "graph_rescue_packed")["points"][4]["metrics"]["recall@10"]
        .as_f64()
        .unwrap();
    let unpacked = env.summary("results", "synthetic", "graph_rescue")["metrics"]["recall@10"]
        .as_f64()
        .unwrap();
    assert_eq!(top, unpacked);
    // curves are cached like cells
    let again = env.ok(&["run-matrix", "--threads", "2", "--quiet"]);
    assert!(!again.contains("budget curve over"), "{again}");
}

#[test]
fn plot_writes_png_and_svg_and_compare_curves_pairs_budgets() {
    let env = env();
    env.ok(&[
        "run-matrix",
        "--threads",
        "2",
        "--quiet",
        "--legs",
        "packer,graph_rescue_packed",
    ]);
    let out = env.ok(&["plot"]);
    let png = env.results("results").join("plots/synthetic.png");
    let svg = env.results("results").join("plots/synthetic.svg");
    assert!(
        out.contains("synthetic.png") && out.contains("synthetic.svg"),
        "{out}"
    );
    let bytes = std::fs::read(&png).unwrap();
    assert_eq!(&bytes[1..4], b"PNG");
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(
        text.contains("<svg")
            && text.contains("graph_rescue_packed")
            && text.contains("60 queries"),
        "legend and title are text in the SVG"
    );
    let out = env.ok(&[
        "compare-curves",
        "--dataset",
        "synthetic",
        "packer",
        "graph_rescue_packed",
        "--json",
        "spend.json",
    ]);
    assert!(out.contains("| 500 |") && out.contains("AUC"), "{out}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(env.path().join("spend.json")).unwrap())
            .unwrap();
    assert_eq!(json["budgets"].as_object().unwrap().len(), 5);
    assert!(json["auc"]["recall@10"]["ci95"].is_array());
    // a leg without a curve is a clear error
    let bad = env.run(&["compare-curves", "--dataset", "synthetic", "packer", "bm25"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("bm25.curve.json"));
}

#[test]
fn graph_rescue_cells_report_gate_and_rescue_attribution() {
    let env = env();
    env.ok(&[
        "run-matrix",
        "--threads",
        "1",
        "--quiet",
        "--legs",
        "bm25,graph_rescue",
        "--no-curves",
    ]);
    let s = env.summary("results", "synthetic", "graph_rescue");
    let d = s["diagnostics"].as_object().unwrap();
    for key in [
        "gate_fired",
        "base_len",
        "union_len",
        "rescued_len",
        "gold_in_base",
        "rescued_gold",
    ] {
        assert!(d.contains_key(key), "missing {key}: {d:?}");
    }
    let hit = d["gate_fired"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&hit));
    let base = d["base_len"].as_f64().unwrap();
    assert!((100.0..=200.0).contains(&base), "{base}");
    // the two legs of one run, paired
    let out = env.ok(&[
        "compare-legs",
        "--dataset",
        "synthetic",
        "bm25",
        "graph_rescue",
        "--json",
        "legs.json",
    ]);
    assert!(
        out.contains("| synthetic | graph_rescue vs bm25 |"),
        "{out}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(env.path().join("legs.json")).unwrap())
            .unwrap();
    let metrics = json["cells"][0]["metrics"].as_array().unwrap();
    assert!(
        metrics
            .iter()
            .any(|m| m["metric"] == "recall@10" && m["paired_n"] == 60),
        "{json}"
    );
}
