use super::*;
use crate::rescue::fixtures;

/// A fact space with injected similarities and edges (exact, no vectors).
struct Table {
    n: usize,
    sim: HashMap<(u32, u32), f32>,
    adj: Vec<Vec<(u32, f32)>>,
}

impl Table {
    fn new(n: usize) -> Table {
        Table {
            n,
            sim: HashMap::new(),
            adj: vec![Vec::new(); n],
        }
    }
    fn sim(mut self, a: u32, b: u32, s: f32) -> Table {
        self.sim.insert((a.min(b), a.max(b)), s);
        self
    }
    fn edge(mut self, a: u32, b: u32, w: f32) -> Table {
        self.adj[a as usize].push((b, w));
        self.adj[b as usize].push((a, w));
        self.adj[a as usize].sort_by_key(|e| e.0);
        self.adj[b as usize].sort_by_key(|e| e.0);
        self.sim(a, b, w)
    }
}

impl FactSpace for Table {
    fn num_facts(&self) -> usize {
        self.n
    }
    fn similarity(&self, a: u32, b: u32) -> f32 {
        if a == b {
            1.0
        } else {
            self.sim.get(&(a.min(b), a.max(b))).copied().unwrap_or(0.0)
        }
    }
    fn neighbours(&self, fact: u32) -> &[(u32, f32)] {
        &self.adj[fact as usize]
    }
}

fn params(fact_budget: usize) -> CdgrParams {
    CdgrParams {
        fact_budget,
        ..Default::default()
    }
}

// the worked example's facts, with ids deliberately not in reading order
const A: u32 = 3;
const B: u32 = 1;
const C: u32 = 0;
const D: u32 = 2;
const E: u32 = 4;

/// SPEC-025 §1.1/§4: A, B, C, D with their stated query similarities; edges A-B, B-C, C-D (no
/// A-D edge); E is a weakly relevant neighbour of A only.
fn kubernetes() -> (Table, Vec<f32>) {
    let t = Table::new(5)
        .edge(A, B, 0.80)
        .edge(B, C, 0.75)
        .edge(C, D, 0.78)
        .edge(A, E, 0.90);
    let mut rel = vec![0.0; 5];
    rel[A as usize] = 0.88;
    rel[B as usize] = 0.61;
    rel[C as usize] = 0.59;
    rel[D as usize] = 0.84;
    rel[E as usize] = 0.20;
    (t, rel)
}

#[test]
fn cdgr_kubernetes_worked_example_reads_a_b_c_d() {
    let (t, rel) = kubernetes();
    // 4 facts: floor(0.7 x 4) = 2 anchors (A, D) and 2 connector slots
    let p = params(4);
    assert_eq!(p.anchor_slots(), 2);
    assert_eq!(cdr_envelope(&t, &rel, &[], &p).ids(), vec![A, D, B, C]);
    let env = cdgr_envelope(&t, &rel, &[], &p);
    assert_eq!(env.ids(), vec![A, B, C, D]);
    let mean = (0.80f32 + 0.75 + 0.78) / 3.0;
    let roles: Vec<Role> = env.facts.iter().map(|f| f.role).collect();
    assert_eq!(roles[0], Role::Anchor);
    assert_eq!(roles[3], Role::Anchor);
    for (i, f) in env.facts[1..3].iter().enumerate() {
        // one bridged pair (A-D has no direct edge) x the mean weight through the connector
        let Role::Connector { bridge } = f.role else {
            panic!("position {} is not a connector", i + 1)
        };
        assert!((bridge - mean).abs() < 1e-6, "{bridge}");
        assert!((f.score - bridge * rel[f.fact as usize]).abs() < 1e-6);
    }
    assert_eq!(env.hops, 2);
    let mut d = BTreeMap::new();
    env.diagnostics(&mut d);
    assert_eq!(d["crp_graph_hops"], 2.0);
    assert_eq!(d["crp_connectors_included"], 0.5);
    assert!((d["crp_bridge_score"] - mean as f64).abs() < 1e-6);
    assert_eq!((d["cdgr_anchors"], d["cdgr_connectors"]), (2.0, 2.0));
    // graph-retrieval=off: CDR's envelope, no bridge score header
    let off = CdgrParams { graph: false, ..p };
    let env = cdgr_envelope(&t, &rel, &[], &off);
    assert_eq!(env, cdr_envelope(&t, &rel, &[], &p));
    let mut d = BTreeMap::new();
    env.diagnostics(&mut d);
    assert!(!d.contains_key("crp_bridge_score"));
    assert_eq!(d["crp_graph_hops"], 0.0);
    // max-hops=1: C is two hops from A but adjacent to D, B adjacent to A: both still found
    let one = CdgrParams { max_hops: 1, ..p };
    assert_eq!(cdgr_envelope(&t, &rel, &[], &one).ids(), vec![A, B, C, D]);
}

#[test]
fn cdgr_redundant_links_and_single_anchor_neighbours_score_zero() {
    // add the direct A-D edge: B and C now link anchors that are already connected
    let (t, rel) = kubernetes();
    let t = t.edge(A, D, 0.7);
    let env = cdgr_envelope(&t, &rel, &[], &params(4));
    assert!(env.facts.iter().all(|f| f.role == Role::Anchor));
    // unused connector slots are back-filled with CDR's next facts
    assert_eq!(env.facts, cdr_envelope(&t, &rel, &[], &params(4)).facts);
    assert_eq!(env.hops, 2, "the walk ran");
}

#[test]
fn cdgr_connectors_may_sit_below_the_relevance_floor() {
    let (t, mut rel) = kubernetes();
    rel[B as usize] = 0.40; // below 0.55: CDR drops it, CDGR keeps it as a connector
    rel[C as usize] = 0.10; // scored with the 0.30 connector floor
    let p = params(4);
    assert_eq!(cdr_envelope(&t, &rel, &[], &p).ids(), vec![A, D]);
    let env = cdgr_envelope(&t, &rel, &[], &p);
    assert_eq!(env.ids(), vec![A, B, C, D]);
    let mean = (0.80f32 + 0.75 + 0.78) / 3.0;
    assert!((env.facts[1].score - mean * 0.40).abs() < 1e-6);
    assert!((env.facts[2].score - mean * 0.30).abs() < 1e-6);
}

#[test]
fn cdr_relevance_floor_is_inclusive_and_excludes_below() {
    let t = Table::new(4);
    let rel = vec![0.55, 0.5499, 0.9, 0.2];
    let r = cdr_rank(&t, &rel, &[], 0.55);
    assert_eq!(r.iter().map(|s| s.fact).collect::<Vec<_>>(), vec![2, 0]);
    assert!(r.iter().all(|s| s.novelty == 1.0 && s.score == s.relevance));
    // ties on score break on ascending fact
    let r = cdr_rank(&t, &[0.7, 0.7, 0.7, 0.1], &[], 0.55);
    assert_eq!(r.iter().map(|s| s.fact).collect::<Vec<_>>(), vec![0, 1, 2]);
    assert_eq!(
        cdr_envelope(&t, &[0.7, 0.7, 0.7, 0.1], &[], &params(2)).ids(),
        vec![0, 1]
    );
}

#[test]
fn cdgr_without_edges_is_exactly_cdr() {
    // injected space: many facts, no edges
    let n = 200u32;
    let mut t = Table::new(n as usize);
    for a in 0..n {
        t = t.sim(a, (a * 7 + 3) % n, ((a % 13) as f32) / 13.0);
    }
    let rel: Vec<f32> = (0..n).map(|i| ((i * 37 % 101) as f32) / 100.0).collect();
    for budget in [1, 4, 10, 35, 300] {
        let p = params(budget);
        assert_eq!(
            cdgr_envelope(&t, &rel, &[], &p).facts,
            cdr_envelope(&t, &rel, &[], &p).facts
        );
        assert_eq!(
            cdgr_envelope(&t, &rel, &[5, 9], &p).facts,
            cdr_envelope(&t, &rel, &[5, 9], &p).facts
        );
    }
    // the synthetic export's real vectors over an edgeless graph
    let export = fixtures::synthetic();
    let empty = SimGraph::empty(export.chunks.len());
    let space = ExportSpace {
        graph: Some(&empty),
        ..ExportSpace::of(&export, false).unwrap()
    };
    let p = CdgrParams {
        relevance_floor: 0.0,
        ..Default::default()
    };
    for q in 0..10 {
        let rel = space.relevance(export.query_embedding(q));
        let cdr = cdr_envelope(&space, &rel, &[], &p);
        assert_eq!(cdr.facts.len(), 35);
        assert_eq!(cdgr_envelope(&space, &rel, &[], &p).facts, cdr.facts);
    }
}

#[test]
fn cdr_task_novelty_accumulates_across_subqueries() {
    // facts 0..4; fact 1 near-duplicates fact 0, fact 2 is unrelated to it
    let t = Table::new(4).sim(0, 1, 0.9).sim(0, 2, 0.0).sim(1, 2, 0.1);
    let sub1 = vec![0.9, 0.1, 0.1, 0.1];
    let sub2 = vec![0.95, 0.8, 0.7, 0.1];
    let p = params(1);
    // fresh, sub-query 2 alone would deliver fact 0, then fact 1
    assert_eq!(cdr_envelope(&t, &sub2, &[], &p).ids(), vec![0]);
    assert_eq!(cdr_envelope(&t, &sub2, &[], &params(2)).ids(), vec![0, 1]);
    // as a session: fact 0 is delivered by sub-query 1, so sub-query 2 cannot re-deliver it,
    // and fact 1's novelty is 1 - 0.9: fact 2 (novelty 1) wins
    let env = run_task(&t, &[sub1.clone(), sub2.clone()], &p, false);
    assert_eq!(env.ids(), vec![0, 2]);
    let r = cdr_rank(&t, &sub2, &[0], 0.55);
    assert_eq!(r.iter().map(|s| s.fact).collect::<Vec<_>>(), vec![2, 1]);
    assert!((r[1].novelty - 0.1).abs() < 1e-6 && (r[1].score - 0.08).abs() < 1e-6);
    assert!((env.facts[1].score - 0.7).abs() < 1e-6);
    // with room for two facts per sub-query: sub 2 delivers 2 then 1, never 0 again
    let env = run_task(&t, &[sub1, sub2], &params(2), true);
    assert_eq!(env.ids(), vec![0, 2, 1]);
}

#[test]
fn cdgr_policy_parses_each_directive_strictly() {
    let p = Policy::parse("l", "graph-retrieval=on; max-hops=2; connector-budget=0.30").unwrap();
    assert_eq!(
        p,
        Policy {
            graph_retrieval: Some(true),
            max_hops: Some(2),
            connector_budget: Some(0.30)
        }
    );
    assert_eq!(Policy::parse("l", "").unwrap(), Policy::default());
    assert_eq!(
        Policy::parse("l", " graph-retrieval = off ;")
            .unwrap()
            .graph_retrieval,
        Some(false)
    );
    assert_eq!(Policy::parse("l", "max-hops=3").unwrap().max_hops, Some(3));
    assert_eq!(Policy::parse("l", "max-hops=1").unwrap().max_hops, Some(1));
    assert_eq!(
        Policy::parse("l", "connector-budget=0")
            .unwrap()
            .connector_budget,
        Some(0.0)
    );
    assert_eq!(
        Policy::parse("l", "connector-budget=0.5")
            .unwrap()
            .connector_budget,
        Some(0.5)
    );
    let field = |s: &str| match Policy::parse("myleg", s) {
        Err(LegError::Config { leg, field, .. }) => {
            assert_eq!(leg, "myleg");
            field
        }
        other => panic!("{s}: {other:?}"),
    };
    assert_eq!(field("graph-retrieval=maybe"), "policy.graph-retrieval");
    assert_eq!(field("max-hops=0"), "policy.max-hops");
    assert_eq!(field("max-hops=4"), "policy.max-hops");
    assert_eq!(field("max-hops=two"), "policy.max-hops");
    assert_eq!(field("connector-budget=0.6"), "policy.connector-budget");
    assert_eq!(field("connector-budget=-0.1"), "policy.connector-budget");
    assert_eq!(field("connector-budget=NaN"), "policy.connector-budget");
    assert_eq!(field("graph-walk=on"), "policy.graph-walk");
    assert_eq!(field("max-hops=2; max-hops=3"), "policy.max-hops");
    assert_eq!(field("graph-retrieval"), "policy.graph-retrieval");
    // overrides of the config fields
    let c = CdgrConfig {
        policy: "max-hops=3; connector-budget=0.5; graph-retrieval=off".into(),
        ..Default::default()
    };
    let p = c.params("l").unwrap();
    assert_eq!((p.max_hops, p.anchor_share, p.graph), (3, 0.5, false));
    let p = CdgrConfig::default().params("l").unwrap();
    assert_eq!(p, CdgrParams::default());
    assert_eq!(p.anchor_slots(), 24);
    assert_eq!(
        CdgrParams {
            fact_budget: 30,
            ..p
        }
        .anchor_slots(),
        21
    );
}

#[test]
fn cdgr_kinds_parse_validate_and_run_on_the_synthetic_export() {
    use crate::registry::LegSpec;
    let parse = |s: &str| serde_json::from_str::<LegSpec>(s);
    assert_eq!(
        parse(r#"{"kind":"cdgr"}"#).unwrap().params(),
        crate::params::Params::to_flat(&CdgrConfig::default())
    );
    assert!(parse(r#"{"kind":"cdr","fact_budgett":3}"#).is_err());
    let err = |s: &str| match parse(s).unwrap().validate("x") {
        Err(LegError::Config { field, .. }) => field,
        other => panic!("{s}: {other:?}"),
    };
    assert_eq!(
        err(r#"{"kind":"cdgr","policy":"max-hops=9"}"#),
        "policy.max-hops"
    );
    assert_eq!(err(r#"{"kind":"cdgr","max_hops":0}"#), "max_hops");
    assert_eq!(err(r#"{"kind":"cdr_task","fact_budget":0}"#), "fact_budget");
    assert_eq!(
        err(r#"{"kind":"cdgr_task","anchor_share":1.5}"#),
        "anchor_share"
    );
    assert_eq!(
        err(r#"{"kind":"cdgr","token_counter":{"tiktoken":"nope"}}"#),
        "token_counter.tiktoken"
    );

    let export = fixtures::synthetic();
    for kind in ["cdr", "cdgr", "cdr_task", "cdgr_task"] {
        let spec = parse(&format!(r#"{{"kind":"{kind}","relevance_floor":0.1}}"#)).unwrap();
        assert_eq!(spec.kind(), kind);
        let leg = spec.build(kind, export.clone()).unwrap();
        assert_eq!(leg.default_budget(), Some(10_000));
        for qi in 0..5 {
            let q = crate::QueryInput::from_export(&export, qi);
            let r = leg.retrieve(&q).unwrap();
            assert_eq!(r, leg.retrieve(&q).unwrap(), "deterministic");
            assert!(!r.ranked.is_empty(), "{kind}");
            assert!(r.ranked.iter().all(|c| !c.rescued));
            let mut ids: Vec<u32> = r.ranked.iter().map(|c| c.chunk).collect();
            let all = leg.select(&q, &r, None).unwrap();
            assert_eq!(all.chunks, ids, "{kind}: select(None) is the envelope");
            for key in [
                "crp_graph_hops",
                "crp_connectors_included",
                "cdgr_anchors",
                "cdgr_connectors",
            ] {
                assert!(r.diagnostics.contains_key(key), "{kind} {key}");
            }
            if kind.ends_with("_task") {
                assert!(r.diagnostics["cdgr_subqueries"] >= 2.0);
            } else {
                assert!(ids.len() <= 35);
            }
            ids.sort_unstable();
            ids.dedup();
            assert_eq!(ids.len(), r.ranked.len(), "{kind}: no fact twice");
            // a budget keeps envelope order, skipping what does not fit
            let half = all.tokens / 2;
            let s = leg.select(&q, &r, Some(half)).unwrap();
            assert!(s.tokens <= half && !s.chunks.is_empty());
            let mut it = all.chunks.iter();
            assert!(s.chunks.iter().all(|c| it.any(|x| x == c)), "a subsequence");
        }
    }
}

#[test]
fn cdgr_task_legs_are_missing_inputs_without_decompositions() {
    use crate::registry::LegSpec;
    use hopbench_datasets::{Passage, Question, RawDataset};
    let export = Arc::new(fixtures::export_of(
        || {
            Ok(RawDataset {
                passages: (0..4)
                    .map(|i| Passage {
                        id: format!("p{i}"),
                        doc: Some(format!("D{i}")),
                        title: format!("D{i}"),
                        text: format!("passage number {i} about things"),
                        header: None,
                    })
                    .collect(),
                questions: vec![Question::new("q", "things", vec!["p1".into()])],
            })
        },
        16,
    ));
    for kind in ["cdr_task", "cdgr_task"] {
        let spec: LegSpec = serde_json::from_str(&format!(r#"{{"kind":"{kind}"}}"#)).unwrap();
        match spec.build(kind, export.clone()) {
            Err(LegError::MissingInputs(m)) => assert!(m.contains(kind), "{m}"),
            Err(e) => panic!("{kind}: {e}"),
            Ok(_) => panic!("{kind} built"),
        }
    }
    for kind in ["cdr", "cdgr"] {
        let spec: LegSpec = serde_json::from_str(&format!(r#"{{"kind":"{kind}"}}"#)).unwrap();
        assert!(spec.build(kind, export.clone()).is_ok());
    }
}

/// `n` unit vectors of width `dim`: 60 topics x 5 subtopics, plus noise (deterministic LCG).
/// The topic and subtopic centroids are fixed; `seed` drives the noise only.
fn fake_vectors(n: usize, dim: usize, seed: u64) -> Vec<f32> {
    let mut s = 11u64;
    let mut next = move || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((s >> 40) as f32 / (1u64 << 24) as f32) - 0.5
    };
    let topics: Vec<f32> = (0..60 * dim).map(|_| next()).collect();
    let subs: Vec<f32> = (0..300 * dim).map(|_| next()).collect();
    let mut s = seed;
    let mut next = move || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((s >> 40) as f32 / (1u64 << 24) as f32) - 0.5
    };
    let mut out = Vec::with_capacity(n * dim);
    for i in 0..n {
        let (t, u) = ((i / 5) % 60, i % 300);
        let v: Vec<f32> = (0..dim)
            .map(|k| topics[t * dim + k] + 0.8 * subs[u * dim + k] + 0.55 * next())
            .collect();
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        out.extend(v.iter().map(|x| x / norm));
    }
    out
}

/// Median and p95 of CDR and CDGR per query on a 6k x 384 synthetic space
/// (`cargo test -p hopbench-legs cdgr_speed -- --ignored --nocapture`).
#[test]
#[ignore]
fn cdgr_speed_6k_by_384() {
    use hopbench_datasets::simgraph::SimGraphConfig;
    use std::time::Instant;
    let (n, dim) = (6000, 384);
    let vectors = fake_vectors(n, dim, 12);
    let t = Instant::now();
    let graph = SimGraph::build(&vectors, dim, &SimGraphConfig::default());
    let build = t.elapsed().as_secs_f64();
    let space = ExportSpace {
        vectors: &vectors,
        dim,
        graph: Some(&graph),
    };
    let queries = fake_vectors(300, dim, 99);
    let p = CdgrParams::default();
    let (mut cdr, mut cdgr, mut over) = (Vec::new(), Vec::new(), Vec::new());
    let (mut conns, mut eligible) = (0usize, 0usize);
    for q in queries.chunks_exact(dim) {
        let t = Instant::now();
        let rel = space.relevance(q);
        let a = cdr_envelope(&space, &rel, &[], &p);
        let t_cdr = t.elapsed().as_secs_f64() * 1e3;
        let t = Instant::now();
        let rel = space.relevance(q);
        let b = cdgr_envelope(&space, &rel, &[], &p);
        let t_cdgr = t.elapsed().as_secs_f64() * 1e3;
        eligible += rel.iter().filter(|&&r| r >= p.relevance_floor).count();
        conns += b.facts.iter().filter(|f| f.role != Role::Anchor).count();
        assert!(a.facts.len() <= 35 && b.facts.len() <= 35);
        cdr.push(t_cdr);
        cdgr.push(t_cdgr);
        over.push(t_cdgr - t_cdr);
    }
    let stat = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        (v[v.len() / 2], v[(v.len() * 95) / 100])
    };
    let (c50, c95) = stat(&mut cdr);
    let (g50, g95) = stat(&mut cdgr);
    let (o50, o95) = stat(&mut over);
    let nq = cdr.len() as f64;
    println!(
        "simgraph {n} x {dim}: built in {build:.2} s, {} edges (mean degree {:.1}), {} communities",
        graph.num_edges(),
        2.0 * graph.num_edges() as f64 / n as f64,
        graph.num_communities()
    );
    println!(
        "per query over {nq} queries: eligible facts {:.1}, connectors {:.2}",
        eligible as f64 / nq,
        conns as f64 / nq
    );
    println!("CDR  ms: median {c50:.3}, p95 {c95:.3}");
    println!("CDGR ms: median {g50:.3}, p95 {g95:.3}");
    println!("CDGR - CDR overhead ms: median {o50:.3}, p95 {o95:.3}");
}
