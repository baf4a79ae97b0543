//! Coverage-differential retrieval (CDR, CRP-SPEC-024 essentials) and its graph extension
//! (CDGR, CRP-SPEC-025) over the export's chunk similarity graph
//! ([`hopbench_datasets::simgraph`]). A "fact" is a chunk.
//!
//! # CDR
//! `relevance = cosine(query, fact)`; `novelty = 1 - max cosine(fact, delivered)` (1 when nothing
//! has been delivered, clamped to [0, 1]); `score = relevance x novelty`. Facts below the
//! relevance floor (0.55) and facts already delivered in the session are excluded. The ranking is
//! score descending, chunk ascending; the envelope is its top `fact_budget` (35), in rank order.
//! Novelty is measured against the session only, not against the envelope being built (SPEC-024
//! is not available to us; this is its documented essential).
//!
//! # CDGR (SPEC-025 §2)
//! - **Seed**: anchors = the top `S = floor(anchor_share x fact_budget)` of the CDR ranking.
//! - **Expand**: every non-anchor fact within `max_hops` edges of an anchor is a connector
//!   candidate (the set §2.3's frontier walk collects; facts already delivered are skipped).
//! - **Bridge**: the anchors a candidate *touches* are those at graph distance <= 2 (§2.4: a
//!   direct edge or a path of length <= 2, whatever `max_hops` is). With fewer than two touched
//!   anchors the bridge value is 0. `bridge_count` = touched anchor pairs with no direct edge;
//!   `avg_edge_strength` = the mean weight of the edges through the connector to its touched
//!   anchors: the direct edge for an adjacent anchor, else both edges of the strongest two-edge
//!   path (largest weight sum, ties on the lower intermediate id). `bridge = count x mean`.
//! - **Score**: `bridge x novelty x max(relevance, connector_floor)` (0.30); candidates with a
//!   score of 0 are dropped; the best `fact_budget - S` (score desc, chunk asc) are included.
//! - **Assemble** (§2.6): anchors keep CDR rank order, so the highest-CDR anchor is first and
//!   connectors never take the first or last position. Each connector goes right after the
//!   earliest (in envelope order) anchor it touches, i.e. between two anchors it bridges, so the
//!   text reads anchor -> connector -> anchor; several connectors after one anchor are ordered by
//!   distance to it (adjacent first), then score, then chunk. Connector slots left empty are
//!   back-filled with the next CDR facts (ranks S.., appended in rank order), so a graph without
//!   edges gives exactly CDR's envelope (§6). We do not re-arrange anchors into a
//!   primacy/recency U-shape: CDR's envelope is rank-ordered and §6 promises identity with it.
//!
//! # Document tasks (`*_task` legs)
//! The query's published decomposition runs as a session: each sub-query (embedded at prepare
//! time with `#k` replaced by hop k's *published answer*: an oracle-ish setting) retrieves its
//! envelope against the facts delivered so far, which then accumulate. The final context is the
//! concatenation of the envelopes in delivery order; a fact is never delivered twice (delivered
//! facts are excluded from later envelopes), so the concatenation is already deduplicated. A
//! query without a decomposition on a dataset that has some falls back to the one-shot envelope
//! (diagnostic `cdgr_task_fallback = 1`).
//!
//! # Safety policy
//! `policy: "graph-retrieval=on; max-hops=2; connector-budget=0.3"`: directives separated by
//! `;`, each `name=value`, strictly parsed. A directive that is present overrides the config
//! field (`max-hops` -> `max_hops`, `connector-budget = c` -> `anchor_share = 1 - c`);
//! `graph-retrieval=off` makes CDGR return CDR's envelope. The default policy is empty.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use hopbench_datasets::export::{Export, Part, Parts};
use hopbench_datasets::simgraph::SimGraph;
use serde::{Deserialize, Serialize};

use crate::candidate::Candidate;
use crate::leg::{Leg, LegError, QueryInput, Retrieval, Selection};
use crate::params::{Check, Checked};
use crate::tokens::TokenCounterSpec;
use hopbench_datasets::vector::dot;

/// The parsed safety-policy directives (`None`: not given, the config field applies).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Policy {
    /// `graph-retrieval=on|off`.
    pub graph_retrieval: Option<bool>,
    /// `max-hops=1..3`.
    pub max_hops: Option<usize>,
    /// `connector-budget=0.0..0.5`.
    pub connector_budget: Option<f64>,
}

impl Policy {
    /// Parses `text` strictly; errors are [`LegError::Config`] on field `policy.<directive>`.
    pub fn parse(leg: &str, text: &str) -> Result<Policy, LegError> {
        let fail = |directive: &str, message: String| {
            Err(LegError::Config {
                leg: leg.into(),
                field: format!("policy.{directive}"),
                message,
            })
        };
        let mut p = Policy::default();
        for part in text.split(';').map(str::trim).filter(|s| !s.is_empty()) {
            let Some((key, value)) = part.split_once('=') else {
                return fail(part, format!("directive `{part}` is not `name=value`"));
            };
            let (key, value) = (key.trim(), value.trim());
            let dup = match key {
                "graph-retrieval" => p.graph_retrieval.is_some(),
                "max-hops" => p.max_hops.is_some(),
                "connector-budget" => p.connector_budget.is_some(),
                _ => {
                    return fail(
                        key,
                        format!(
                            "unknown directive `{key}` (known: graph-retrieval, max-hops, \
                             connector-budget)"
                        ),
                    )
                }
            };
            if dup {
                return fail(key, format!("directive `{key}` is given twice"));
            }
            match key {
                "graph-retrieval" => match value {
                    "on" => p.graph_retrieval = Some(true),
                    "off" => p.graph_retrieval = Some(false),
                    _ => return fail(key, format!("must be `on` or `off`, got `{value}`")),
                },
                "max-hops" => match value.parse::<usize>() {
                    Ok(h) if (1..=3).contains(&h) => p.max_hops = Some(h),
                    _ => return fail(key, format!("must be an integer in 1..=3, got `{value}`")),
                },
                _ => match value.parse::<f64>() {
                    Ok(c) if (0.0..=0.5).contains(&c) => p.connector_budget = Some(c),
                    _ => {
                        return fail(
                            key,
                            format!("must be a number in [0.0, 0.5], got `{value}`"),
                        )
                    }
                },
            }
        }
        Ok(p)
    }
}

/// The resolved parameters of one CDR/CDGR run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CdgrParams {
    /// Facts per envelope.
    pub fact_budget: usize,
    /// CDR's relevance floor.
    pub relevance_floor: f32,
    /// The connector relevance floor (`MIN_CONNECTOR_RELEVANCE`).
    pub connector_floor: f32,
    /// Share of the fact budget for anchors.
    pub anchor_share: f64,
    /// Graph walk depth.
    pub max_hops: usize,
    /// Whether connector expansion runs (`graph-retrieval`).
    pub graph: bool,
}

impl Default for CdgrParams {
    fn default() -> Self {
        CdgrParams {
            fact_budget: 35,
            relevance_floor: 0.55,
            connector_floor: 0.30,
            anchor_share: 0.7,
            max_hops: 2,
            graph: true,
        }
    }
}

impl CdgrParams {
    /// Anchor slots: `floor(anchor_share x fact_budget)` (with a 1e-9 guard against 0.7 x 30
    /// rounding to 20.999...).
    pub fn anchor_slots(&self) -> usize {
        ((self.anchor_share * self.fact_budget as f64 + 1e-9).floor() as usize)
            .min(self.fact_budget)
    }
}

/// What CDR/CDGR need of a fact collection: pairwise similarity and the similarity graph.
/// The export implements it with vectors ([`ExportSpace`]); tests inject exact similarities.
pub trait FactSpace {
    /// Number of facts.
    fn num_facts(&self) -> usize;
    /// Cosine similarity of two facts.
    fn similarity(&self, a: u32, b: u32) -> f32;
    /// A fact's graph neighbours `(fact, weight)`, ascending by fact.
    fn neighbours(&self, fact: u32) -> &[(u32, f32)];
    /// The weight of edge `a ~ b`, if any.
    fn edge(&self, a: u32, b: u32) -> Option<f32> {
        let run = self.neighbours(a);
        run.binary_search_by_key(&b, |e| e.0).ok().map(|p| run[p].1)
    }
}

/// The export's facts: header+content vectors and the similarity graph.
#[derive(Debug, Clone, Copy)]
pub struct ExportSpace<'a> {
    /// Row-major L2-normalised vectors.
    pub vectors: &'a [f32],
    /// Vector width.
    pub dim: usize,
    /// The similarity graph; `None` for CDR, which never walks it (and whose legs do not
    /// declare it, so an export prepared for them has none).
    pub graph: Option<&'a SimGraph>,
}

impl<'a> ExportSpace<'a> {
    /// The space of `export` (its vectors, and with `graph` its similarity graph, read on the
    /// first call: [`Export::embeddings`], [`Export::simgraph`]).
    pub fn of(export: &'a Export, graph: bool) -> Result<Self, LegError> {
        Ok(ExportSpace {
            vectors: export.embeddings()?,
            dim: export.dim,
            graph: if graph {
                Some(export.simgraph()?)
            } else {
                None
            },
        })
    }

    fn graph(&self) -> &'a SimGraph {
        self.graph
            .expect("only the graph-walking envelopes read the graph, and they load it")
    }

    fn row(&self, i: u32) -> &[f32] {
        &self.vectors[i as usize * self.dim..(i as usize + 1) * self.dim]
    }

    /// Relevance (cosine) of every fact to `query`.
    pub fn relevance(&self, query: &[f32]) -> Vec<f32> {
        if self.dim == 0 {
            return Vec::new();
        }
        self.vectors
            .chunks_exact(self.dim)
            .map(|v| dot(query, v))
            .collect()
    }
}

impl FactSpace for ExportSpace<'_> {
    fn num_facts(&self) -> usize {
        self.vectors.len().checked_div(self.dim).unwrap_or(0)
    }
    fn similarity(&self, a: u32, b: u32) -> f32 {
        dot(self.row(a), self.row(b))
    }
    fn neighbours(&self, fact: u32) -> &[(u32, f32)] {
        self.graph().neighbours(fact)
    }
    fn edge(&self, a: u32, b: u32) -> Option<f32> {
        self.graph().weight(a, b)
    }
}

/// One CDR-scored fact.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scored {
    /// Fact (chunk index).
    pub fact: u32,
    /// Cosine to the query.
    pub relevance: f32,
    /// `1 - max cosine to the delivered facts`, in [0, 1].
    pub novelty: f32,
    /// `relevance x novelty`.
    pub score: f32,
}

/// Why a fact is in an envelope.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Role {
    /// A CDR fact (anchor, or a CDR back-fill of an unused connector slot).
    Anchor,
    /// A connector, with its bridge value.
    Connector {
        /// Its bridge value (§2.4).
        bridge: f32,
    },
}

/// One fact of an envelope.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EnvelopeFact {
    /// Fact (chunk index).
    pub fact: u32,
    /// CDR score (anchors) or connector score (connectors).
    pub score: f32,
    /// Anchor or connector.
    pub role: Role,
}

/// An assembled envelope in reading order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Envelope {
    /// Facts in envelope order.
    pub facts: Vec<EnvelopeFact>,
    /// Hop depth walked (0 when the graph was not used).
    pub hops: usize,
}

impl Envelope {
    /// Facts in order.
    pub fn ids(&self) -> Vec<u32> {
        self.facts.iter().map(|f| f.fact).collect()
    }

    /// Adds `diagnostics` (the SPEC-025 headers): `crp_graph_hops`, `crp_connectors_included`
    /// (connectors / total), `crp_bridge_score` (omitted without connectors), `cdgr_anchors`,
    /// `cdgr_connectors`.
    pub fn diagnostics(&self, d: &mut BTreeMap<String, f64>) {
        let bridges: Vec<f64> = self
            .facts
            .iter()
            .filter_map(|f| match f.role {
                Role::Connector { bridge } => Some(bridge as f64),
                Role::Anchor => None,
            })
            .collect();
        let total = self.facts.len();
        d.insert("crp_graph_hops".into(), self.hops as f64);
        d.insert(
            "crp_connectors_included".into(),
            if total == 0 {
                0.0
            } else {
                bridges.len() as f64 / total as f64
            },
        );
        if !bridges.is_empty() {
            d.insert(
                "crp_bridge_score".into(),
                bridges.iter().sum::<f64>() / bridges.len() as f64,
            );
        }
        d.insert("cdgr_anchors".into(), (total - bridges.len()) as f64);
        d.insert("cdgr_connectors".into(), bridges.len() as f64);
    }
}

/// `1 - max cosine(fact, delivered)`, clamped to [0, 1]; 1 when nothing is delivered.
pub fn novelty(space: &impl FactSpace, fact: u32, delivered: &[u32]) -> f32 {
    if delivered.is_empty() {
        return 1.0;
    }
    let max = delivered
        .iter()
        .map(|&d| space.similarity(fact, d))
        .fold(f32::NEG_INFINITY, f32::max);
    (1.0 - max).clamp(0.0, 1.0)
}

/// The CDR ranking: every undelivered fact with `relevance >= floor`, scored, score desc then
/// fact asc. `relevance[i]` is fact `i`'s cosine to the query.
pub fn cdr_rank(
    space: &impl FactSpace,
    relevance: &[f32],
    delivered: &[u32],
    floor: f32,
) -> Vec<Scored> {
    let mut done = delivered.to_vec();
    done.sort_unstable();
    let mut out: Vec<Scored> = relevance
        .iter()
        .enumerate()
        .filter(|&(i, &r)| r >= floor && done.binary_search(&(i as u32)).is_err())
        .map(|(i, &r)| {
            let nov = novelty(space, i as u32, delivered);
            Scored {
                fact: i as u32,
                relevance: r,
                novelty: nov,
                score: r * nov,
            }
        })
        .collect();
    out.sort_unstable_by(|a, b| b.score.total_cmp(&a.score).then(a.fact.cmp(&b.fact)));
    out
}

/// A ranked fact delivered for its own relevance (an anchor, or a CDR fact).
fn as_anchor(s: &Scored) -> EnvelopeFact {
    EnvelopeFact {
        fact: s.fact,
        score: s.score,
        role: Role::Anchor,
    }
}

/// CDR's envelope: the top `fact_budget` of [`cdr_rank`], in rank order.
pub fn cdr_envelope(
    space: &impl FactSpace,
    relevance: &[f32],
    delivered: &[u32],
    p: &CdgrParams,
) -> Envelope {
    let ranked = cdr_rank(space, relevance, delivered, p.relevance_floor);
    Envelope {
        facts: ranked.iter().take(p.fact_budget).map(as_anchor).collect(),
        hops: 0,
    }
}

/// A scored connector before assembly.
#[derive(Debug, Clone, Copy)]
struct Connector {
    fact: u32,
    score: f32,
    bridge: f32,
    /// Earliest touched anchor (index into the anchors) and the distance to it.
    first: usize,
    dist: u8,
}

/// Where each anchor's walk reached: fact -> `[(anchor index, distance)]`, anchor indices
/// ascending.
type Reach = HashMap<u32, Vec<(u32, u8)>>;

/// CDGR's envelope (SPEC-025 §2; see the module docs for every choice).
pub fn cdgr_envelope(
    space: &impl FactSpace,
    relevance: &[f32],
    delivered: &[u32],
    p: &CdgrParams,
) -> Envelope {
    if !p.graph {
        return cdr_envelope(space, relevance, delivered, p);
    }
    let ranked = cdr_rank(space, relevance, delivered, p.relevance_floor);
    let s = p.anchor_slots().min(ranked.len());
    let anchors = &ranked[..s];
    let slots = p.fact_budget - p.anchor_slots();

    // Phase B: walk the graph from every anchor (depth >= 2 so "touched" is known too)
    let anchor_of: HashMap<u32, usize> = anchors
        .iter()
        .enumerate()
        .map(|(i, a)| (a.fact, i))
        .collect();
    let reach = walk_from_anchors(space, anchors, p.max_hops.max(2));
    let adjacent = anchor_adjacency(space, anchors, &anchor_of);
    let candidates = connector_candidates(&reach, &anchor_of, delivered, p.max_hops);

    // Phase C: bridge scoring
    let mut connectors = score_connectors(
        space, relevance, delivered, p, anchors, &adjacent, candidates,
    );
    connectors.sort_unstable_by(|a, b| b.score.total_cmp(&a.score).then(a.fact.cmp(&b.fact)));
    connectors.truncate(slots);

    Envelope {
        facts: assemble(&ranked, s, &connectors, p.fact_budget),
        hops: p.max_hops,
    }
}

/// Breadth-first walk of `depth` edges from each anchor in turn. A fact is recorded once per
/// anchor, at its shortest distance, so the bridge phase knows both which anchors a candidate
/// touches and how far it lies from each.
fn walk_from_anchors(space: &impl FactSpace, anchors: &[Scored], depth: usize) -> Reach {
    let mut stamp = vec![u32::MAX; space.num_facts()];
    let mut reach: Reach = HashMap::new();
    let mut frontier = Vec::new();
    let mut next = Vec::new();
    for (ai, a) in anchors.iter().enumerate() {
        stamp[a.fact as usize] = ai as u32;
        frontier.clear();
        frontier.push(a.fact);
        for d in 1..=depth {
            next.clear();
            for &f in &frontier {
                for &(nb, _) in space.neighbours(f) {
                    if stamp[nb as usize] != ai as u32 {
                        stamp[nb as usize] = ai as u32;
                        next.push(nb);
                        reach.entry(nb).or_default().push((ai as u32, d as u8));
                    }
                }
            }
            std::mem::swap(&mut frontier, &mut next);
        }
    }
    reach
}

/// The anchors' own adjacency, row-major (`[i * anchors.len() + j]`): a pair of touched anchors
/// that is already directly linked needs no bridge, so it does not count towards `bridge_count`.
fn anchor_adjacency(
    space: &impl FactSpace,
    anchors: &[Scored],
    anchor_of: &HashMap<u32, usize>,
) -> Vec<bool> {
    let s = anchors.len();
    let mut adjacent = vec![false; s * s];
    for (ai, a) in anchors.iter().enumerate() {
        for &(nb, _) in space.neighbours(a.fact) {
            if let Some(&aj) = anchor_of.get(&nb) {
                adjacent[ai * s + aj] = true;
            }
        }
    }
    adjacent
}

/// The connector candidates (§2.3's frontier): reached facts that are neither anchors nor
/// already delivered and lie within `max_hops` of some anchor, by ascending fact so the scoring
/// does not depend on the map's order.
fn connector_candidates<'a>(
    reach: &'a Reach,
    anchor_of: &HashMap<u32, usize>,
    delivered: &[u32],
    max_hops: usize,
) -> Vec<(u32, &'a Vec<(u32, u8)>)> {
    let mut done = delivered.to_vec();
    done.sort_unstable();
    let mut candidates: Vec<(u32, &Vec<(u32, u8)>)> = reach
        .iter()
        .filter(|(f, r)| {
            !anchor_of.contains_key(f)
                && done.binary_search(f).is_err()
                && r.iter().any(|&(_, d)| d as usize <= max_hops)
        })
        .map(|(&f, r)| (f, r))
        .collect();
    candidates.sort_unstable_by_key(|c| c.0);
    candidates
}

/// Phase C: the connectors with a positive score, in candidate order. A candidate bridges the
/// anchors it touches (distance <= 2) that are not directly linked to each other; one touching
/// fewer than two anchors, or only linked pairs, bridges nothing.
fn score_connectors(
    space: &impl FactSpace,
    relevance: &[f32],
    delivered: &[u32],
    p: &CdgrParams,
    anchors: &[Scored],
    adjacent: &[bool],
    candidates: Vec<(u32, &Vec<(u32, u8)>)>,
) -> Vec<Connector> {
    let s = anchors.len();
    let mut connectors: Vec<Connector> = Vec::new();
    let mut touched: Vec<(u32, u8)> = Vec::new();
    for (x, r) in candidates {
        touched.clear();
        touched.extend(r.iter().copied().filter(|&(_, d)| d <= 2));
        if touched.len() < 2 {
            continue;
        }
        let mut count = 0usize;
        for i in 0..touched.len() {
            for j in i + 1..touched.len() {
                if !adjacent[touched[i].0 as usize * s + touched[j].0 as usize] {
                    count += 1;
                }
            }
        }
        if count == 0 {
            continue;
        }
        let (sum, edges) = edge_strength(space, x, anchors, &touched);
        let bridge = count as f32 * (sum / edges.max(1) as f32);
        let score =
            bridge * novelty(space, x, delivered) * relevance[x as usize].max(p.connector_floor);
        if score > 0.0 {
            connectors.push(Connector {
                fact: x,
                score,
                bridge,
                first: touched[0].0 as usize,
                dist: touched[0].1,
            });
        }
    }
    connectors
}

/// The summed weight and the number of the edges through connector `x` to its `touched`
/// anchors, in touched order: the direct edge for an adjacent anchor, else both edges of the
/// strongest two-edge path (the first of equal sums, i.e. the lower intermediate id).
fn edge_strength(
    space: &impl FactSpace,
    x: u32,
    anchors: &[Scored],
    touched: &[(u32, u8)],
) -> (f32, usize) {
    let (mut sum, mut edges) = (0.0f32, 0usize);
    for &(ai, d) in touched {
        let a = anchors[ai as usize].fact;
        if d == 1 {
            sum += space.edge(x, a).unwrap_or(0.0);
            edges += 1;
        } else {
            let mut best: Option<(f32, f32)> = None;
            for &(y, wxy) in space.neighbours(x) {
                if let Some(wya) = space.edge(y, a) {
                    if best.is_none_or(|b| wxy + wya > b.0 + b.1) {
                        best = Some((wxy, wya));
                    }
                }
            }
            if let Some((w1, w2)) = best {
                sum += w1 + w2;
                edges += 2;
            }
        }
    }
    (sum, edges)
}

/// Assembly (§2.6): the `s` anchors in CDR order, each followed by the connectors whose earliest
/// touched anchor it is; then CDR back-fill of the slots the connectors left unused, so a graph
/// without edges gives exactly CDR's envelope.
fn assemble(
    ranked: &[Scored],
    s: usize,
    connectors: &[Connector],
    budget: usize,
) -> Vec<EnvelopeFact> {
    let mut gaps: Vec<Vec<Connector>> = vec![Vec::new(); s];
    for c in connectors {
        gaps[c.first].push(*c);
    }
    let mut facts = Vec::with_capacity(budget);
    for (ai, a) in ranked[..s].iter().enumerate() {
        facts.push(as_anchor(a));
        let g = &mut gaps[ai];
        g.sort_unstable_by(|a, b| {
            a.dist
                .cmp(&b.dist)
                .then(b.score.total_cmp(&a.score))
                .then(a.fact.cmp(&b.fact))
        });
        facts.extend(g.iter().map(|c| EnvelopeFact {
            fact: c.fact,
            score: c.score,
            role: Role::Connector { bridge: c.bridge },
        }));
    }
    let free = budget.saturating_sub(s + connectors.len());
    let mut chosen: Vec<u32> = connectors.iter().map(|c| c.fact).collect();
    chosen.sort_unstable();
    facts.extend(
        ranked[s..]
            .iter()
            .filter(|f| chosen.binary_search(&f.fact).is_err())
            .take(free)
            .map(as_anchor),
    );
    facts
}

/// One envelope per sub-query, each against the facts delivered so far; the concatenation in
/// delivery order (deduplicated by construction: delivered facts are excluded later).
pub fn run_task(
    space: &impl FactSpace,
    sub_relevances: &[Vec<f32>],
    p: &CdgrParams,
    graph: bool,
) -> Envelope {
    let mut delivered: Vec<u32> = Vec::new();
    let mut out = Envelope::default();
    for rel in sub_relevances {
        let env = if graph {
            cdgr_envelope(space, rel, &delivered, p)
        } else {
            cdr_envelope(space, rel, &delivered, p)
        };
        out.hops = out.hops.max(env.hops);
        for f in env.facts {
            if !delivered.contains(&f.fact) {
                delivered.push(f.fact);
                out.facts.push(f);
            }
        }
    }
    out
}

fn fact_budget() -> usize {
    35
}
fn budget() -> u64 {
    10_000
}

/// Configuration of the `cdr`, `cdgr`, `cdr_task` and `cdgr_task` legs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CdgrConfig {
    /// Facts per envelope (per sub-query for the task legs).
    pub fact_budget: usize,
    /// CDR's relevance floor.
    pub relevance_floor: f32,
    /// Connector relevance floor (`MIN_CONNECTOR_RELEVANCE`).
    pub connector_floor: f32,
    /// Share of the fact budget for anchors (overridden by `connector-budget`).
    pub anchor_share: f64,
    /// Graph walk depth, 1..=3 (overridden by `max-hops`).
    pub max_hops: usize,
    /// Safety-policy directives, e.g. `graph-retrieval=on; max-hops=2; connector-budget=0.3`.
    pub policy: String,
    /// Token counter for budgeted selection.
    pub token_counter: TokenCounterSpec,
    /// Default token budget (budget curves).
    pub budget: u64,
}

impl Default for CdgrConfig {
    fn default() -> Self {
        let p = CdgrParams::default();
        CdgrConfig {
            fact_budget: fact_budget(),
            relevance_floor: p.relevance_floor,
            connector_floor: p.connector_floor,
            anchor_share: p.anchor_share,
            max_hops: p.max_hops,
            policy: String::new(),
            token_counter: TokenCounterSpec::default(),
            budget: budget(),
        }
    }
}

impl Checked for CdgrConfig {
    /// Range checks, the token counter and the policy's parse.
    fn check(&self, c: &Check<'_>) -> Result<(), LegError> {
        self.token_counter.check(c)?;
        c.at_least("fact_budget", self.fact_budget, 1)?;
        c.range("relevance_floor", self.relevance_floor as f64, -1.0, 1.0)?;
        c.unit("connector_floor", self.connector_floor as f64)?;
        c.unit("anchor_share", self.anchor_share)?;
        c.at_least("max_hops", self.max_hops, 1)?;
        c.at_most("max_hops", self.max_hops, 3)?;
        c.at_least("budget", self.budget as usize, 1)?;
        Policy::parse(c.0, &self.policy)?;
        Ok(())
    }
}

crate::leaf_params!(CdgrConfig);

impl CdgrConfig {
    /// The parameters after the policy's overrides.
    pub fn params(&self, name: &str) -> Result<CdgrParams, LegError> {
        let pol = Policy::parse(name, &self.policy)?;
        Ok(CdgrParams {
            fact_budget: self.fact_budget,
            relevance_floor: self.relevance_floor,
            connector_floor: self.connector_floor,
            anchor_share: pol.connector_budget.map_or(self.anchor_share, |c| 1.0 - c),
            max_hops: pol.max_hops.unwrap_or(self.max_hops),
            graph: pol.graph_retrieval.unwrap_or(true),
        })
    }
}

/// Which of the four legs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CdgrMode {
    /// `cdr`: one-shot CDR.
    Cdr,
    /// `cdgr`: one-shot CDGR.
    Cdgr,
    /// `cdr_task`: CDR over the decomposition as a document task.
    CdrTask,
    /// `cdgr_task`: CDGR over the decomposition as a document task.
    CdgrTask,
}

/// Whether a leg of `mode` with `params` walks the similarity graph: the CDGR modes, unless
/// the policy turns graph retrieval off (CDR then).
fn walks_graph(mode: CdgrMode, params: &CdgrParams) -> bool {
    mode.graph() && params.graph
}

impl CdgrConfig {
    /// The export parts a leg of `mode` with these parameters reads: the similarity graph
    /// where it walks it ([`walks_graph`]).
    pub fn reads(&self, mode: CdgrMode) -> Parts {
        // an unparsable policy is refused by `check`; here it reads as the default (a walk)
        let graph =
            Policy::parse("", &self.policy).map_or(true, |p| p.graph_retrieval.unwrap_or(true));
        if mode.graph() && graph {
            Parts::NONE.with(Part::SimGraph)
        } else {
            Parts::NONE
        }
    }
}

impl CdgrMode {
    fn graph(self) -> bool {
        matches!(self, CdgrMode::Cdgr | CdgrMode::CdgrTask)
    }
    fn task(self) -> bool {
        matches!(self, CdgrMode::CdrTask | CdgrMode::CdgrTask)
    }
}

/// The `cdr`, `cdgr`, `cdr_task` and `cdgr_task` legs. `retrieve` computes the whole envelope
/// (`ranked` = envelope order, scores = CDR / connector scores); `select(None)` returns it;
/// `select(Some(t))` walks it in order keeping every fact that still fits `t` tokens
/// (skip-and-continue).
pub struct CdgrLeg {
    export: Arc<Export>,
    mode: CdgrMode,
    params: CdgrParams,
    budget: u64,
    tokens: Vec<u32>,
}

impl CdgrLeg {
    /// Builds the leg; the task legs need sub-query vectors (`MissingInputs` without).
    pub fn new(
        name: &str,
        export: &Arc<Export>,
        mode: CdgrMode,
        c: &CdgrConfig,
    ) -> Result<Self, LegError> {
        crate::params::Params::check(c, &Check(name))?;
        if let Some(why) = mode
            .task()
            .then(|| {
                export.vectors_not_brought(hopbench_datasets::vectors_file::VectorSet::Subqueries)
            })
            .flatten()
        {
            return Err(LegError::MissingInputs(format!(
                "leg `{name}` runs the published decomposition as a document task: {why}"
            )));
        }
        // the sub-question vectors are read now, so a damaged file fails the build
        if mode.task() && export.subquery_embeddings()?.iter().all(Option::is_none) {
            return Err(LegError::MissingInputs(format!(
                "leg `{name}` runs the published decomposition as a document task; this \
                 dataset has no decompositions (no sub-query vectors)"
            )));
        }
        let tokens = crate::tokens::chunk_tokens(export, &c.token_counter)?;
        // the facts are the export's vectors and graph: read now, so a damaged file fails the
        // build
        let params = c.params(name)?;
        ExportSpace::of(export, walks_graph(mode, &params))?;
        Ok(CdgrLeg {
            params,
            budget: c.budget,
            mode,
            tokens,
            export: export.clone(),
        })
    }
}

impl Leg for CdgrLeg {
    fn export(&self) -> &Export {
        &self.export
    }

    fn retrieve(&self, q: &QueryInput<'_>) -> Result<Retrieval, LegError> {
        let space = ExportSpace::of(&self.export, walks_graph(self.mode, &self.params))?;
        let mut diagnostics = BTreeMap::new();
        let subs = if self.mode.task() {
            self.export.subquery_vectors(q.index)?
        } else {
            None
        };
        let env = match subs {
            Some(subs) => {
                let rels: Vec<Vec<f32>> = subs.iter().map(|v| space.relevance(v)).collect();
                diagnostics.insert("cdgr_subqueries".into(), rels.len() as f64);
                run_task(&space, &rels, &self.params, self.mode.graph())
            }
            None => {
                if self.mode.task() {
                    diagnostics.insert("cdgr_task_fallback".into(), 1.0);
                }
                let rel = space.relevance(q.embedding);
                if self.mode.graph() {
                    cdgr_envelope(&space, &rel, &[], &self.params)
                } else {
                    cdr_envelope(&space, &rel, &[], &self.params)
                }
            }
        };
        env.diagnostics(&mut diagnostics);
        Ok(Retrieval {
            ranked: env
                .facts
                .iter()
                .map(|f| Candidate::new(f.fact, f.score))
                .collect(),
            diagnostics,
            ..Default::default()
        })
    }

    fn select(
        &self,
        _q: &QueryInput<'_>,
        r: &Retrieval,
        budget: Option<u64>,
    ) -> Result<Selection, LegError> {
        let mut sel = Selection::default();
        for c in &r.ranked {
            let t = self.tokens[c.chunk as usize] as u64;
            if budget.is_none_or(|b| sel.tokens + t <= b) {
                sel.chunks.push(c.chunk);
                sel.tokens += t;
            }
        }
        Ok(sel)
    }

    fn default_budget(&self) -> Option<u64> {
        Some(self.budget)
    }
}

#[cfg(test)]
mod tests;
