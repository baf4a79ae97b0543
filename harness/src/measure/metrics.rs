//! Per-query retrieval metrics, one pure function each, and [`METRICS`], the one table that
//! says which of them a run measures, at which cut-offs, and where each is shown.
//!
//! The definitions follow the graph-rescue seed ("How the metrics are actually
//! computed", `benchmark/s5/metrics.py`) exactly, so a number produced here is the
//! same quantity as the published one.
//!
//! Everything that lists metrics is derived from the table: the evaluator and the names of
//! summary keys and record columns ([`measured`]), the matrix table's columns
//! ([`matrix_columns`]), the budget curves' metrics ([`curve_metrics`]) and the breakdown
//! table's columns ([`breakdown_columns`]). Adding a metric is one function below and one row
//! in [`METRICS`].
//!
//! Conventions shared by every function:
//! * `ranked` is a list of chunk indices in rank order (position 0 = best). It may
//!   contain duplicates: a duplicate occupies its position (it still consumes one
//!   of the `k` slots) but gains nothing the second time.
//! * `gold` is a `BTreeSet<u32>` of relevant chunk indices: gold is a *set*,
//!   because the datasets resolve one question to several chunks.
//! * `k` cuts the ranked list to `ranked[..min(k, len)]`; `k` larger than the
//!   ranking is simply the whole ranking, and `k = 0` retrieves nothing.
//! * Empty gold scores 0.0 (as the seed does), never NaN.

use std::collections::BTreeSet;

use crate::measure::measures::{self, Graded};

/// The first `k` positions of `ranked` (all of it when `k >= ranked.len()`).
fn top(ranked: &[u32], k: usize) -> &[u32] {
    &ranked[..k.min(ranked.len())]
}

/// Set recall at k: `|gold ∩ set(ranked[..k])| / |gold|`; 0.0 when gold is empty.
///
/// Set recall means a query whose evidence split into three chunks is not solved
/// by retrieving one of them, and a duplicated chunk is counted once.
pub fn recall_at_k(ranked: &[u32], gold: &BTreeSet<u32>, k: usize) -> f64 {
    if gold.is_empty() {
        return 0.0;
    }
    let hit: BTreeSet<u32> = top(ranked, k)
        .iter()
        .copied()
        .filter(|c| gold.contains(c))
        .collect();
    hit.len() as f64 / gold.len() as f64
}

/// nDCG at k with binary gains.
///
/// `DCG = Σ 1/log2(i+2)` over positions `i < k` whose chunk is gold *and* is that
/// chunk's first occurrence in the ranking (duplicates gain nothing).
/// `IDCG = Σ_{i < min(|gold|, k)} 1/log2(i+2)` — the ideal is capped at
/// `min(|gold|, k)`, so a query with 30 gold chunks cannot score below one with 2
/// merely for having more gold. Result is `DCG / IDCG`, in `[0, 1]`; 0.0 when
/// gold is empty or `k = 0`.
pub fn ndcg_at_k(ranked: &[u32], gold: &BTreeSet<u32>, k: usize) -> f64 {
    let ideal_len = gold.len().min(k);
    if ideal_len == 0 {
        return 0.0;
    }
    let mut seen = BTreeSet::new();
    let mut dcg = 0.0;
    for (i, &c) in top(ranked, k).iter().enumerate() {
        if gold.contains(&c) && seen.insert(c) {
            dcg += discount(i);
        }
    }
    let idcg: f64 = (0..ideal_len).map(discount).sum();
    dcg / idcg
}

/// Gain discount of 0-based position `i`: `1/log2(i+2)`.
fn discount(i: usize) -> f64 {
    1.0 / ((i + 2) as f64).log2()
}

/// Reciprocal rank at k: `1/(i+1)` for the 0-based position `i < k` of the first
/// gold chunk, else 0.0 (also for empty gold).
pub fn mrr_at_k(ranked: &[u32], gold: &BTreeSet<u32>, k: usize) -> f64 {
    top(ranked, k)
        .iter()
        .position(|c| gold.contains(c))
        .map_or(0.0, |i| 1.0 / (i + 1) as f64)
}

/// Document recall at k.
///
/// Both sides are mapped to documents with `doc_of` first:
/// * the ranking becomes a list of distinct documents, first occurrence wins (a
///   document takes the position of its best-ranked chunk);
/// * gold becomes the set of gold chunks' documents;
/// * a chunk whose document is unknown (`None`) is dropped from both sides — a
///   placeholder document would merge every unknown chunk into one fake document
///   and inflate the number.
///
/// Then it is set recall over the *deduplicated document list* cut at `k`
/// (`k` counts documents, not chunks): `|gold_docs ∩ docs[..k]| / |gold_docs|`;
/// 0.0 when there are no gold documents.
pub fn doc_recall_at_k(
    ranked: &[u32],
    gold: &BTreeSet<u32>,
    doc_of: impl Fn(u32) -> Option<u32>,
    k: usize,
) -> f64 {
    let gold_docs: BTreeSet<u32> = gold.iter().filter_map(|&c| doc_of(c)).collect();
    if gold_docs.is_empty() {
        return 0.0;
    }
    let mut seen = BTreeSet::new();
    let hits = ranked
        .iter()
        .filter_map(|&c| doc_of(c))
        .filter(|d| seen.insert(*d))
        .take(k)
        .filter(|d| gold_docs.contains(d))
        .count();
    hits as f64 / gold_docs.len() as f64
}

/// Number of chain slots covered in the top k, and the number of slots.
/// `None` when there is no chain or it has zero slots.
fn chain_slots_covered(
    ranked: &[u32],
    chain: Option<&[Vec<u32>]>,
    k: usize,
) -> Option<(usize, usize)> {
    let chain = chain.filter(|c| !c.is_empty())?;
    let topk: BTreeSet<u32> = top(ranked, k).iter().copied().collect();
    let covered = chain
        .iter()
        .filter(|slot| slot.iter().any(|c| topk.contains(c)))
        .count();
    Some((covered, chain.len()))
}

/// Chain coverage at k: the fraction of the gold chain's slots (hops) with at
/// least one of the slot's chunks in `ranked[..k]`.
///
/// `None` when the dataset publishes no chain (`chain` is `None`) or the chain has
/// zero slots — "no chain" is undefined, never 0.0. An *empty* slot (a hop whose
/// gold did not resolve to any chunk) still counts in the denominator and is never
/// covered: the hop exists, the retriever just cannot be credited for it.
pub fn chain_coverage_at_k(ranked: &[u32], chain: Option<&[Vec<u32>]>, k: usize) -> Option<f64> {
    chain_slots_covered(ranked, chain, k).map(|(c, n)| c as f64 / n as f64)
}

/// Full-chain hit at k: 1.0 iff every slot of the chain is covered in
/// `ranked[..k]` (see [`chain_coverage_at_k`]), else 0.0. This separates a
/// multi-hop retriever from a lucky single-hop one. `None` exactly when
/// `chain_coverage_at_k` is `None`; a chain with an empty slot never hits.
pub fn full_chain_hit_at_k(ranked: &[u32], chain: Option<&[Vec<u32>]>, k: usize) -> Option<f64> {
    chain_slots_covered(ranked, chain, k).map(|(c, n)| if c == n { 1.0 } else { 0.0 })
}

/// One query's ranking beside its relevance judgements: everything a metric reads.
pub struct Judged<'a> {
    /// Selected chunk indices in rank order (duplicates possible, see the module note).
    pub ranked: &'a [u32],
    /// Gold chunk indices (relevant at [`Judged::level`]).
    pub gold: &'a BTreeSet<u32>,
    /// The document of a chunk (`None`: unknown), from the export, never from a leg.
    pub doc_of: &'a dyn Fn(u32) -> Option<u32>,
    /// The published evidence chain, one slot of chunk indices per hop (`None`: no chain).
    pub chain: Option<&'a [Vec<u32>]>,
    /// The ranking against graded judgements, where the judgements carry grades (`hopbench
    /// eval`'s qrels); `None`: gold is a set, every gold chunk grade 1, nothing else judged.
    pub graded: Option<&'a Graded>,
    /// The relevance level `gold` holds the documents of (1 for a gold set).
    pub level: i64,
}

impl Judged<'_> {
    /// The graded view, made from the gold set where there are no grades.
    fn view(&self) -> std::borrow::Cow<'_, Graded> {
        match self.graded {
            Some(g) => std::borrow::Cow::Borrowed(g),
            None => std::borrow::Cow::Owned(Graded::from_gold(self.ranked, self.gold)),
        }
    }

    /// The relevance level of a measure: its own (`P(rel=2)@5`) or the judgements'.
    fn level(&self, rel: Option<i64>) -> i64 {
        rel.unwrap_or(self.level)
    }

    /// A binary measure of the seed's rows: the gold-set function where gold is the judgement
    /// at the measure's level, else the graded one (which gives the same values on the same
    /// judgements), 0 where the graded one is undefined (the seed scores empty gold 0).
    fn seed(
        &self,
        rel: Option<i64>,
        on_gold: impl Fn(&[u32], &BTreeSet<u32>) -> f64,
        on_grades: impl Fn(&Graded, i64) -> Option<f64>,
    ) -> Option<f64> {
        if self.graded.is_none() && self.level(rel) == self.level {
            return Some(on_gold(self.ranked, self.gold));
        }
        Some(on_grades(&self.view(), self.level(rel)).unwrap_or(0.0))
    }
}

/// Where a metric's measured cut-offs come from.
#[derive(Debug, Clone, Copy)]
pub enum Cuts {
    /// These cut-offs, whatever the campaign says.
    Fixed(&'static [usize]),
    /// The campaign's `recall_k` list.
    RecallK,
}

/// Whether a metric takes a cut-off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CutRule {
    /// Always (`P@5`).
    Required,
    /// With or without (`AP`, `AP@100`).
    Optional,
    /// Never (`Rprec`).
    Never,
}

/// A matrix-table column: the metric at cut-off `k`, printed with its 95% CI when `ci`.
#[derive(Debug, Clone, Copy)]
pub struct Column {
    /// Cut-off.
    pub k: usize,
    /// Print the bootstrap CI beside the mean.
    pub ci: bool,
}

/// A metric's names in trec_eval (`None`: trec_eval has no such measure).
#[derive(Debug, Clone, Copy)]
pub struct TrecName {
    /// Without a cut-off (`map`).
    pub uncut: Option<&'static str>,
    /// The stem with a cut-off (`map_cut` -> `map_cut_100`, read as `map_cut.100` too).
    pub cut: Option<&'static str>,
}

const NO_TREC: TrecName = TrecName {
    uncut: None,
    cut: None,
};

/// One row of [`METRICS`]: a metric and every place it appears.
///
/// The views name their own cut-offs because they are fixed presentation choices: the matrix
/// table shows R@2 and R@5 even when the campaign's `recall_k` lacks them (as "—"), and a
/// budget curve measures recall@10 whatever `recall_k` is.
pub struct Metric {
    /// Name stem of the summary keys and record columns (`recall` -> `recall@10`).
    pub name: &'static str,
    /// Stem of table headers (`R` -> `R@10`).
    pub short: &'static str,
    /// Other stems that name it in a measure list (ir_measures' and ranx's; any case).
    pub aliases: &'static [&'static str],
    /// Its trec_eval names.
    pub trec: TrecName,
    /// Whether it takes a cut-off.
    pub cut: CutRule,
    /// Whether it reads a relevance level (a binary measure: `P(rel=2)@5`).
    pub leveled: bool,
    /// A count (trec_eval prints it as an integer, and its `all` line is the sum).
    pub count: bool,
    /// Cut-offs measured per query, kept in summaries and records.
    pub cuts: Cuts,
    /// The per-query value at cut-off `k` and relevance level `rel` (`None`: the judgements'
    /// level); `None`: undefined for this query.
    pub score: fn(&Judged<'_>, Option<usize>, Option<i64>) -> Option<f64>,
    /// Columns of the matrix table.
    pub matrix: &'static [Column],
    /// Cut-offs measured at every budget of a budget curve.
    pub curve: &'static [usize],
    /// Cut-offs of the per-group breakdown table (always with CIs).
    pub breakdown: &'static [usize],
    /// Whether the metric is defined by a ranking and relevance judgements alone (no corpus
    /// documents, no chain): what `hopbench eval` measures from a run and a qrels file.
    pub qrels_only: bool,
}

/// A measure only `hopbench eval -m` (or a view that names it) measures: no default cut-offs,
/// in no view, defined by a ranking and judgements alone.
const fn measure(
    name: &'static str,
    aliases: &'static [&'static str],
    trec: TrecName,
    cut: CutRule,
    leveled: bool,
    score: fn(&Judged<'_>, Option<usize>, Option<i64>) -> Option<f64>,
) -> Metric {
    Metric {
        name,
        short: name,
        aliases,
        trec,
        cut,
        leveled,
        count: false,
        cuts: Cuts::Fixed(&[]),
        score,
        matrix: &[],
        curve: &[],
        breakdown: &[],
        qrels_only: true,
    }
}

/// A metric that reads more than a ranking and judgements (the corpus's documents, a query's
/// chain), so trec_eval has no name for it and `hopbench eval` does not measure it: always at
/// a cut-off `cuts`, at 10 in the matrix table (with its CI when `ci`) and the budget curves,
/// not in the breakdown.
const fn beyond_qrels(
    name: &'static str,
    short: &'static str,
    cuts: &'static [usize],
    score: fn(&Judged<'_>, Option<usize>, Option<i64>) -> Option<f64>,
    ci: bool,
) -> Metric {
    Metric {
        name,
        short,
        aliases: &[],
        trec: NO_TREC,
        cut: CutRule::Required,
        leveled: false,
        count: false,
        cuts: Cuts::Fixed(cuts),
        score,
        matrix: if ci {
            &[Column { k: 10, ci: true }]
        } else {
            &[Column { k: 10, ci: false }]
        },
        curve: &[10],
        breakdown: &[],
        qrels_only: false,
    }
}

/// A count of documents (`num_ret`): printed as an integer by trec_eval.
const fn count(
    name: &'static str,
    alias: &'static [&'static str],
    trec: &'static str,
    cut: CutRule,
    leveled: bool,
    score: fn(&Judged<'_>, Option<usize>, Option<i64>) -> Option<f64>,
) -> Metric {
    let mut m = measure(
        name,
        alias,
        TrecName {
            uncut: Some(trec),
            cut: None,
        },
        cut,
        leveled,
        score,
    );
    m.count = true;
    m
}

/// Every metric, in report order (the order of record columns and table columns).
pub const METRICS: &[Metric] = &[
    Metric {
        name: "recall",
        short: "R",
        aliases: &["R"],
        trec: TrecName {
            uncut: None,
            cut: Some("recall"),
        },
        cut: CutRule::Required,
        leveled: true,
        count: false,
        cuts: Cuts::RecallK,
        score: |q, k, rel| {
            let k = k?;
            q.seed(
                rel,
                |r, g| recall_at_k(r, g, k),
                |g, l| measures::recall(g, l, k),
            )
        },
        matrix: &[
            Column { k: 2, ci: false },
            Column { k: 5, ci: false },
            Column { k: 10, ci: true },
        ],
        curve: &[10],
        breakdown: &[10],
        qrels_only: true,
    },
    Metric {
        name: "ndcg",
        short: "nDCG",
        aliases: &[],
        trec: TrecName {
            uncut: Some("ndcg"),
            cut: Some("ndcg_cut"),
        },
        cut: CutRule::Optional,
        leveled: false,
        count: false,
        cuts: Cuts::Fixed(&[10]),
        // gain = grade where the judgements carry grades; binary on a gold set
        score: |q, k, _| match (q.graded, k) {
            (None, Some(k)) => Some(ndcg_at_k(q.ranked, q.gold, k)),
            _ => Some(measures::ndcg(&q.view(), k).unwrap_or(0.0)),
        },
        matrix: &[Column { k: 10, ci: false }],
        curve: &[10],
        breakdown: &[10],
        qrels_only: true,
    },
    Metric {
        name: "mrr",
        short: "MRR",
        aliases: &["RR"],
        trec: TrecName {
            uncut: Some("recip_rank"),
            cut: None,
        },
        cut: CutRule::Optional,
        leveled: true,
        count: false,
        cuts: Cuts::Fixed(&[10]),
        score: |q, k, rel| {
            let k = k.unwrap_or(usize::MAX);
            q.seed(
                rel,
                |r, g| mrr_at_k(r, g, k),
                |g, l| Some(measures::rr(g, l, Some(k))),
            )
        },
        matrix: &[],
        curve: &[],
        breakdown: &[],
        qrels_only: true,
    },
    beyond_qrels(
        "doc_recall",
        "docR",
        &[5, 10],
        |q, k, _| Some(doc_recall_at_k(q.ranked, q.gold, q.doc_of, k?)),
        false,
    ),
    beyond_qrels(
        "chain_coverage",
        "chain",
        &[10],
        |q, k, _| chain_coverage_at_k(q.ranked, q.chain, k?),
        false,
    ),
    beyond_qrels(
        "full_chain_hit",
        "fullchain",
        &[10],
        |q, k, _| full_chain_hit_at_k(q.ranked, q.chain, k?),
        true,
    ),
    measure(
        "AP",
        &["map"],
        TrecName {
            uncut: Some("map"),
            cut: Some("map_cut"),
        },
        CutRule::Optional,
        true,
        |q, k, rel| measures::ap(&q.view(), q.level(rel), k),
    ),
    measure(
        "P",
        &["precision"],
        TrecName {
            uncut: None,
            cut: Some("P"),
        },
        CutRule::Required,
        true,
        |q, k, rel| Some(measures::precision(&q.view(), q.level(rel), k?)),
    ),
    measure(
        "Rprec",
        &["r-precision", "r_precision"],
        TrecName {
            uncut: Some("Rprec"),
            cut: None,
        },
        CutRule::Never,
        true,
        |q, _, rel| measures::rprec(&q.view(), q.level(rel)),
    ),
    measure(
        "Success",
        &["hit_rate"],
        TrecName {
            uncut: None,
            cut: Some("success"),
        },
        CutRule::Required,
        true,
        |q, k, rel| Some(measures::success(&q.view(), q.level(rel), k?)),
    ),
    measure(
        "Judged",
        &[],
        NO_TREC,
        CutRule::Required,
        false,
        |q, k, _| Some(measures::judged(&q.view(), k?)),
    ),
    measure(
        "Bpref",
        &[],
        TrecName {
            uncut: Some("bpref"),
            cut: None,
        },
        CutRule::Never,
        true,
        |q, _, rel| measures::bpref(&q.view(), q.level(rel)),
    ),
    count(
        "NumRet",
        &[],
        "num_ret",
        CutRule::Never,
        false,
        |q, _, _| Some(measures::num_ret(&q.view())),
    ),
    count(
        "NumRel",
        &[],
        "num_rel",
        CutRule::Never,
        true,
        |q, _, rel| Some(measures::num_rel(&q.view(), q.level(rel))),
    ),
    count(
        "NumRelRet",
        &["hits"],
        "num_rel_ret",
        CutRule::Optional,
        true,
        |q, k, rel| Some(measures::num_rel_ret(&q.view(), q.level(rel), k)),
    ),
];

/// The metric a one-line comparison leads with (`compare`'s table): recall@10.
pub fn headline() -> At {
    At::new(
        METRICS
            .iter()
            .find(|m| m.name == "recall")
            .expect("recall is a row of METRICS"),
        10,
    )
}

/// One metric at one cut-off (and relevance level): a summary key, a record column, a table
/// column.
#[derive(Clone, Copy)]
pub struct At {
    /// The row.
    pub metric: &'static Metric,
    /// The cut-off (`None`: the whole ranking, for a metric whose cut-off is optional).
    pub k: Option<usize>,
    /// Its own relevance level (`P(rel=2)@5`; `None`: the judgements' level).
    pub rel: Option<i64>,
}

impl At {
    /// The row at cut-off `k`, at the judgements' level.
    pub fn new(metric: &'static Metric, k: usize) -> At {
        At {
            metric,
            k: Some(k),
            rel: None,
        }
    }

    fn with_stem(&self, stem: &str) -> String {
        let mut s = stem.to_string();
        if let Some(rel) = self.rel {
            s.push_str(&format!("(rel={rel})"));
        }
        if let Some(k) = self.k {
            s.push_str(&format!("@{k}"));
        }
        s
    }

    /// The summary key and record column (`recall@10`, `AP`, `P(rel=2)@5`).
    pub fn name(&self) -> String {
        self.with_stem(self.metric.name)
    }

    /// The table header (`R@10`).
    pub fn label(&self) -> String {
        self.with_stem(self.metric.short)
    }

    /// trec_eval's name (`ndcg_cut_10`, `map`), where trec_eval has the measure and no level
    /// of its own is asked for (trec_eval's level is one for every measure, its `-l`).
    pub fn trec_name(&self) -> Option<String> {
        if self.rel.is_some() {
            return None;
        }
        match self.k {
            None => self.metric.trec.uncut.map(str::to_string),
            Some(k) => self.metric.trec.cut.map(|c| format!("{c}_{k}")),
        }
    }

    /// The value for one query.
    pub fn score(&self, q: &Judged<'_>) -> Option<f64> {
        (self.metric.score)(q, self.k, self.rel)
    }

    /// Reads one measure name in any of the spellings the table knows: hopbench's
    /// (`recall@10`, `AP@100`), ir_measures' (`R@10`, `nDCG@10`, `P(rel=2)@5`, `RR`), ranx's
    /// (`ndcg@10`, `map@100`, `precision@5`, `mrr`) and trec_eval's (`ndcg_cut.10`,
    /// `ndcg_cut_10`, `map`, `P_5`, `recip_rank`). Stems match in any case.
    pub fn parse(text: &str) -> Result<At, String> {
        let bad = |why: &str| format!("measure `{text}`: {why}");
        let (stem, k) = match text.rsplit_once('@') {
            Some((s, k)) => (s, Some(k)),
            None => (text, None),
        };
        let (stem, rel) = match stem.strip_suffix(')').and_then(|s| s.split_once("(rel=")) {
            Some((s, r)) => (s, Some(r)),
            None => (stem, None),
        };
        let number = |s: &str, what: &str| -> Result<usize, String> {
            match s.parse::<usize>() {
                Ok(n) if n > 0 => Ok(n),
                _ => Err(bad(&format!("{what} `{s}` is not a positive integer"))),
            }
        };
        let mut k = k.map(|k| number(k, "the cut-off")).transpose()?;
        let rel = rel
            .map(|r| number(r, "the relevance level"))
            .transpose()?
            .map(|r| r as i64);
        let same = |a: &str| a.eq_ignore_ascii_case(stem);
        let mut found = METRICS
            .iter()
            .find(|m| same(m.name) || same(m.short) || m.aliases.iter().any(|a| same(a)));
        if found.is_none() && k.is_none() && rel.is_none() {
            // trec_eval: `map`, `ndcg_cut.10`, `ndcg_cut_10`
            for m in METRICS {
                if m.trec.uncut.is_some_and(same) {
                    found = Some(m);
                    break;
                }
                let Some(cut) = m.trec.cut else { continue };
                let tail = stem
                    .get(..cut.len())
                    .filter(|head| head.eq_ignore_ascii_case(cut))
                    .and_then(|_| stem[cut.len()..].strip_prefix(['.', '_']));
                if let Some(tail) = tail {
                    k = Some(number(tail, "the cut-off")?);
                    found = Some(m);
                    break;
                }
            }
        }
        let Some(metric) = found else {
            return Err(bad("unknown (`hopbench eval --help` lists the measures)"));
        };
        if !metric.qrels_only {
            return Err(bad(
                "needs the corpus's documents or a chain, which a run and qrels do not give",
            ));
        }
        match (metric.cut, k) {
            (CutRule::Required, None) => return Err(bad("needs a cut-off (`@k`)")),
            (CutRule::Never, Some(_)) => return Err(bad("takes no cut-off")),
            _ => {}
        }
        if rel.is_some() && !metric.leveled {
            return Err(bad("reads no relevance level (`(rel=N)`)"));
        }
        Ok(At { metric, k, rel })
    }

    /// Reads a measure list: each item one name or a comma list of names; a bare number after
    /// a measure with a cut-off is that measure at another cut-off (trec_eval's `P.5,10`).
    /// Repeats are dropped, the first kept.
    pub fn parse_list(items: &[String]) -> Result<Vec<At>, String> {
        let mut out: Vec<At> = Vec::new();
        for item in items {
            let mut last: Option<At> = None;
            for part in item.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                let at = match (last, part.parse::<usize>()) {
                    (Some(prev), Ok(k)) if prev.k.is_some() && k > 0 => At { k: Some(k), ..prev },
                    _ => At::parse(part)?,
                };
                last = Some(at);
                if !out.iter().any(|o| o.name() == at.name()) {
                    out.push(at);
                }
            }
        }
        Ok(out)
    }
}

impl PartialEq for At {
    fn eq(&self, other: &At) -> bool {
        std::ptr::eq(self.metric, other.metric) && self.k == other.k && self.rel == other.rel
    }
}

impl std::fmt::Debug for At {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name())
    }
}

/// What a run measures per query, in report order: every row of [`METRICS`] at its cut-offs
/// (the campaign's `recall_k` for recall), then `extra`, the campaign's own `metrics:` as
/// [`extra_measures`] names them, each once. A name that does not parse measures nothing (a
/// campaign's are checked when it loads, and a summary's are sealed with it).
pub fn measured(recall_k: &[usize], extra: &[String]) -> Vec<At> {
    let mut out: Vec<At> = METRICS
        .iter()
        .flat_map(|metric| {
            let cuts = match metric.cuts {
                Cuts::Fixed(ks) => ks,
                Cuts::RecallK => recall_k,
            };
            cuts.iter().map(move |&k| At::new(metric, k))
        })
        .collect();
    let extras = new_extras(extra, &out);
    out.extend(extras);
    out
}

/// The measures of `extra` (names from [`extra_measures`]; one that does not parse is left
/// out) that `have` does not hold already, each once.
fn new_extras(extra: &[String], have: &[At]) -> Vec<At> {
    let mut out: Vec<At> = Vec::new();
    for at in extra.iter().filter_map(|name| At::parse(name).ok()) {
        if !have.iter().chain(&out).any(|o| o.name() == at.name()) {
            out.push(at);
        }
    }
    out
}

/// The campaign's `metrics:` list as the measures it adds to every cell: each parsed in any
/// spelling `hopbench eval -m` reads, named as hopbench names it ([`At::name`]), without the
/// ones every cell measures anyway, in the list's order. An entry that is not a measure is an
/// error naming it.
pub fn extra_measures(recall_k: &[usize], listed: &[String]) -> Result<Vec<String>, String> {
    let always: Vec<String> = measured(recall_k, &[]).iter().map(At::name).collect();
    Ok(At::parse_list(listed)?
        .iter()
        .map(At::name)
        .filter(|n| !always.contains(n))
        .collect())
}

/// What `hopbench eval` measures from a run and qrels: the rows of [`measured`] that need no
/// corpus documents and no chain ([`Metric::qrels_only`]).
pub fn measured_from_qrels(recall_k: &[usize]) -> Vec<At> {
    measured(recall_k, &[])
        .into_iter()
        .filter(|m| m.metric.qrels_only)
        .collect()
}

/// The matrix table's metric columns, in order, each with its CI flag: the table's own, then
/// `extra` (the campaign's `metrics:`, [`extra_measures`]) with their CIs.
pub fn matrix_columns(extra: &[String]) -> Vec<(At, bool)> {
    let mut out: Vec<(At, bool)> = METRICS
        .iter()
        .flat_map(|metric| {
            metric
                .matrix
                .iter()
                .map(move |c| (At::new(metric, c.k), c.ci))
        })
        .collect();
    let have: Vec<At> = out.iter().map(|(at, _)| *at).collect();
    out.extend(new_extras(extra, &have).into_iter().map(|at| (at, true)));
    out
}

/// The metrics of a budget curve, in order.
pub fn curve_metrics() -> Vec<At> {
    views(|m| m.curve)
}

/// The columns of the per-group breakdown table, in order.
pub fn breakdown_columns() -> Vec<At> {
    views(|m| m.breakdown)
}

fn views(cuts: impl Fn(&'static Metric) -> &'static [usize]) -> Vec<At> {
    METRICS
        .iter()
        .flat_map(|metric| cuts(metric).iter().map(move |&k| At::new(metric, k)))
        .collect()
}

/// Arithmetic mean, summed sequentially in iteration order (deterministic).
/// `None` for no values rather than NaN.
pub fn mean(values: impl IntoIterator<Item = f64>) -> Option<f64> {
    let (sum, n) = values
        .into_iter()
        .fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    (n > 0).then(|| sum / n as f64)
}

/// Mean over the defined values of an optional metric.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MeanOpt {
    /// Mean of the `Some` values; `None` when no value was defined.
    pub mean: Option<f64>,
    /// How many values were `Some` (the mean's denominator).
    pub defined: usize,
    /// How many values were seen in total (`Some` and `None`).
    pub total: usize,
}

/// Mean of only the `Some` values (e.g. chain metrics, undefined on queries
/// without a chain), so undefined queries neither count as 0.0 nor dilute the
/// denominator. Reports how many values were defined.
pub fn mean_opt(values: impl IntoIterator<Item = Option<f64>>) -> MeanOpt {
    let mut total = 0;
    let mut defined = 0;
    let mut sum = 0.0;
    for v in values {
        total += 1;
        if let Some(v) = v {
            defined += 1;
            sum += v;
        }
    }
    MeanOpt {
        mean: (defined > 0).then(|| sum / defined as f64),
        defined,
        total,
    }
}

/// The `p`-th percentile (`p` in `[0, 100]`) by linear interpolation between
/// closest ranks — numpy's default (`method="linear"`): with the values sorted
/// ascending as `v[0..n]`, `h = (n-1)·p/100`, result `v[⌊h⌋] + (h-⌊h⌋)·(v[⌊h⌋+1] - v[⌊h⌋])`.
/// `None` for no values, a NaN value, or `p` outside `[0, 100]`.
pub fn percentile(values: &[f64], p: f64) -> Option<f64> {
    if values.is_empty() || values.iter().any(|v| v.is_nan()) || !(0.0..=100.0).contains(&p) {
        return None;
    }
    let mut v = values.to_vec();
    let h = (v.len() - 1) as f64 * p / 100.0;
    let lo = h.floor() as usize;
    // the lo-th and the next order statistic by selection, not a sort: under `total_cmp` an
    // order statistic is one bit pattern, so this is the sorted-array value exactly
    let (_, &mut at_lo, above) = v.select_nth_unstable_by(lo, f64::total_cmp);
    let at_hi = above
        .iter()
        .copied()
        .min_by(f64::total_cmp)
        .unwrap_or(at_lo);
    Some(at_lo + (h - lo as f64) * (at_hi - at_lo))
}

/// Median = [`percentile`] at 50 (mean of the two middle values for even n).
pub fn median(values: &[f64]) -> Option<f64> {
    percentile(values, 50.0)
}

/// Names of the quality metrics, in report order, for a given recall k list and the
/// campaign's extra measures: the summary's keys and the records' columns, which an evaluated
/// query fills exactly.
pub fn metric_names(recall_k: &[usize], extra: &[String]) -> Vec<String> {
    measured(recall_k, extra).iter().map(|m| m.name()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOL: f64 = 1e-12;

    #[test]
    fn a_percentile_is_the_sorted_arrays_bit_for_bit() {
        let sorted_percentile = |values: &[f64], p: f64| {
            let mut v = values.to_vec();
            v.sort_by(f64::total_cmp);
            let h = (v.len() - 1) as f64 * p / 100.0;
            let lo = h.floor() as usize;
            let hi = (lo + 1).min(v.len() - 1);
            v[lo] + (h - lo as f64) * (v[hi] - v[lo])
        };
        let mut rng = hopbench_datasets::rng::SplitMix64::new(3);
        for n in [1usize, 2, 3, 10, 101, 1000] {
            // few distinct values (ties), signed zeros, and a wide range
            let values: Vec<f64> = (0..n)
                .map(|i| match rng.next_u64() % 4 {
                    0 => (rng.next_u64() % 5) as f64 / 4.0,
                    1 if i % 2 == 0 => -0.0,
                    1 => 0.0,
                    _ => (rng.next_u64() >> 11) as f64 * 1e-9 - 4e6,
                })
                .collect();
            for p in [0.0, 2.5, 25.0, 50.0, 97.5, 99.9, 100.0] {
                assert_eq!(
                    percentile(&values, p).unwrap().to_bits(),
                    sorted_percentile(&values, p).to_bits(),
                    "n {n}, p {p}"
                );
            }
        }
    }

    fn set(v: &[u32]) -> BTreeSet<u32> {
        v.iter().copied().collect()
    }

    fn close(a: f64, b: f64) {
        assert!((a - b).abs() < TOL, "{a} != {b}");
    }

    /// 1/log2(i+2) written out for the positions the tests use.
    fn d(i: usize) -> f64 {
        1.0 / ((i + 2) as f64).log2()
    }

    #[test]
    fn recall_basic_and_duplicates() {
        let gold = set(&[1, 2, 3]);
        // top-3 = [1, 1, 2] -> {1, 2}: 2/3 (the duplicate 1 used a slot, gained nothing).
        close(recall_at_k(&[1, 1, 2, 3], &gold, 3), 2.0 / 3.0);
        // top-4 reaches 3: 3/3.
        close(recall_at_k(&[1, 1, 2, 3], &gold, 4), 1.0);
        // k larger than the ranking: whole ranking [9, 2] -> {2}: 1/3.
        close(recall_at_k(&[9, 2], &gold, 100), 1.0 / 3.0);
        // k = 0 retrieves nothing.
        close(recall_at_k(&[1, 2], &gold, 0), 0.0);
    }

    #[test]
    fn empty_gold_and_empty_ranking() {
        let empty = BTreeSet::new();
        let gold = set(&[4]);
        assert_eq!(recall_at_k(&[1, 2], &empty, 10), 0.0);
        assert_eq!(ndcg_at_k(&[1, 2], &empty, 10), 0.0);
        assert_eq!(mrr_at_k(&[1, 2], &empty, 10), 0.0);
        assert_eq!(doc_recall_at_k(&[1, 2], &empty, Some, 10), 0.0);
        assert_eq!(recall_at_k(&[], &gold, 10), 0.0);
        assert_eq!(ndcg_at_k(&[], &gold, 10), 0.0);
        assert_eq!(mrr_at_k(&[], &gold, 10), 0.0);
        assert_eq!(doc_recall_at_k(&[], &gold, Some, 10), 0.0);
    }

    #[test]
    fn ndcg_hand_computed() {
        let gold = set(&[5, 7]);
        // Hits at positions 1 and 2: DCG = 1/log2(3) + 1/log2(4) = 1/log2(3) + 1/2.
        // IDCG = 1/log2(2) + 1/log2(3) = 1 + 1/log2(3).
        let want = (1.0 / 3f64.log2() + 0.5) / (1.0 + 1.0 / 3f64.log2());
        close(ndcg_at_k(&[0, 5, 7], &gold, 10), want);
        // Perfect ranking is exactly 1.
        close(ndcg_at_k(&[7, 5, 0], &gold, 10), 1.0);
    }

    #[test]
    fn ndcg_duplicates_gain_once() {
        let gold = set(&[5, 7]);
        // [5, 5, 7]: pos 0 gains d(0)=1, pos 1 is a duplicate (0), pos 2 gains d(2)=1/2.
        // DCG = 1.5; IDCG = 1 + 1/log2(3).
        close(
            ndcg_at_k(&[5, 5, 7], &gold, 10),
            1.5 / (1.0 + 1.0 / 3f64.log2()),
        );
        // Without first-occurrence, [5, 5] would score (1 + 1/log2 3)/IDCG = 1 with
        // only half the gold: it must be 1/(1 + 1/log2 3) instead.
        close(ndcg_at_k(&[5, 5], &gold, 10), 1.0 / (1.0 + d(1)));
    }

    #[test]
    fn ndcg_ideal_capped_when_gold_larger_than_k() {
        // 30 gold chunks, k = 2: IDCG = d(0) + d(1), so two hits in the top 2 give 1.0.
        let gold: BTreeSet<u32> = (0..30).collect();
        close(ndcg_at_k(&[3, 4, 99], &gold, 2), 1.0);
        // One hit at position 1 of 2: d(1) / (d(0) + d(1)) = (1/log2 3)/(1 + 1/log2 3).
        close(ndcg_at_k(&[99, 4], &gold, 2), d(1) / (d(0) + d(1)));
        // Never above 1 even with many hits beyond k in the list.
        assert!(ndcg_at_k(&(0..30).collect::<Vec<_>>(), &gold, 10) <= 1.0 + TOL);
    }

    #[test]
    fn ndcg_k_larger_than_ranking() {
        // gold {1,2,3}, k = 10, ranking [1] only: DCG = 1; IDCG = d0+d1+d2 = 1 + 1/log2 3 + 1/2.
        let gold = set(&[1, 2, 3]);
        close(ndcg_at_k(&[1], &gold, 10), 1.0 / (1.0 + d(1) + 0.5));
    }

    #[test]
    fn mrr_hand_computed() {
        let gold = set(&[8]);
        // First gold at position 2 -> 1/3.
        close(mrr_at_k(&[1, 1, 8, 8], &gold, 10), 1.0 / 3.0);
        // Outside the top 2 -> 0.
        close(mrr_at_k(&[1, 1, 8], &gold, 2), 0.0);
        close(mrr_at_k(&[8], &gold, 1), 1.0);
    }

    #[test]
    fn doc_recall_dedup_first_occurrence_and_unknown_dropped() {
        // chunk -> doc: 10,11 -> doc 1; 20,21 -> doc 2; 30 -> doc 3; 99 unknown.
        let doc_of = |c: u32| match c {
            10 | 11 => Some(1),
            20 | 21 => Some(2),
            30 => Some(3),
            _ => None,
        };
        // gold chunks {11, 21, 99}: gold docs {1, 2} (99 dropped, not a fake doc).
        let gold = set(&[11, 21, 99]);
        // ranking [10, 99, 11, 30, 20] -> docs [1, (drop), 1 dup, 3, 2] = [1, 3, 2].
        let ranked = [10, 99, 11, 30, 20];
        // k = 2 over documents: {1, 3} ∩ {1, 2} = {1} -> 1/2.
        close(doc_recall_at_k(&ranked, &gold, doc_of, 2), 0.5);
        // k = 3: {1, 3, 2} -> 2/2. (Over chunks, top 3 would only reach doc 1.)
        close(doc_recall_at_k(&ranked, &gold, doc_of, 3), 1.0);
        // k beyond the document list: still 1.
        close(doc_recall_at_k(&ranked, &gold, doc_of, 50), 1.0);
        // Gold only of unknown chunks -> no gold documents -> 0.
        close(doc_recall_at_k(&ranked, &set(&[99]), doc_of, 10), 0.0);
    }

    #[test]
    fn chain_metrics() {
        let chain = vec![vec![1, 2], vec![3], vec![4, 5]];
        // top-3 = {2, 9, 3}: slots 0 and 1 covered, slot 2 not -> 2/3, no full hit.
        let ranked = [2, 9, 3, 5];
        close(
            chain_coverage_at_k(&ranked, Some(&chain), 3).unwrap(),
            2.0 / 3.0,
        );
        assert_eq!(full_chain_hit_at_k(&ranked, Some(&chain), 3), Some(0.0));
        // top-4 adds 5: all three slots -> 1, full hit.
        close(chain_coverage_at_k(&ranked, Some(&chain), 4).unwrap(), 1.0);
        assert_eq!(full_chain_hit_at_k(&ranked, Some(&chain), 4), Some(1.0));
        // Empty ranking with a chain is 0.0, not None.
        assert_eq!(chain_coverage_at_k(&[], Some(&chain), 10), Some(0.0));
    }

    #[test]
    fn chain_with_empty_slot_is_never_covered() {
        // Slot 1 did not resolve: 1 of 2 slots covered -> 1/2; full hit impossible.
        let chain = vec![vec![1], vec![]];
        assert_eq!(chain_coverage_at_k(&[1, 2, 3], Some(&chain), 10), Some(0.5));
        assert_eq!(full_chain_hit_at_k(&[1, 2, 3], Some(&chain), 10), Some(0.0));
    }

    #[test]
    fn no_chain_is_none() {
        assert_eq!(chain_coverage_at_k(&[1], None, 10), None);
        assert_eq!(full_chain_hit_at_k(&[1], None, 10), None);
        let zero: Vec<Vec<u32>> = vec![];
        assert_eq!(chain_coverage_at_k(&[1], Some(&zero), 10), None);
        assert_eq!(full_chain_hit_at_k(&[1], Some(&zero), 10), None);
    }

    #[test]
    fn means() {
        assert_eq!(mean(Vec::<f64>::new()), None);
        close(mean([1.0, 2.0, 4.0]).unwrap(), 7.0 / 3.0);
        let m = mean_opt([Some(1.0), None, Some(0.0), None]);
        assert_eq!(m.defined, 2);
        assert_eq!(m.total, 4);
        close(m.mean.unwrap(), 0.5);
        let none = mean_opt([None, None]);
        assert_eq!((none.mean, none.defined, none.total), (None, 0, 2));
    }

    /// Every row of the table at the given cut-off on one query, by summary name.
    fn rows(
        ranked: &[u32],
        gold: &BTreeSet<u32>,
        doc_of: &dyn Fn(u32) -> Option<u32>,
        chain: Option<&[Vec<u32>]>,
    ) -> std::collections::BTreeMap<String, Option<f64>> {
        let q = Judged {
            ranked,
            gold,
            doc_of,
            chain,
            graded: None,
            level: 1,
        };
        measured(&[1, 2, 5, 10, 20], &[])
            .iter()
            .map(|m| (m.name(), m.score(&q)))
            .collect()
    }

    fn check(got: &std::collections::BTreeMap<String, Option<f64>>, want: &[(&str, Option<f64>)]) {
        assert_eq!(got.len(), want.len(), "{got:?}");
        for (name, w) in want {
            match (got[*name], w) {
                (Some(g), Some(w)) => assert!((g - w).abs() < TOL, "{name}: {g} != {w}"),
                (g, w) => assert_eq!(g, *w, "{name}"),
            }
        }
    }

    #[test]
    fn every_row_on_a_hand_computed_query() {
        // chunk c belongs to document c / 10; chunk 99 has no known document
        let doc_of = |c: u32| (c != 99).then_some(c / 10);
        // positions: 0:40 1:11* 2:11(dup) 3:99* 4:21* 5:50 6:12* 7:60 8:70 9:31* | 10:80 11:32
        let ranked = [40, 11, 11, 99, 21, 50, 12, 60, 70, 31, 80, 32];
        let gold = set(&[11, 12, 21, 31, 99]);
        // the last hop did not resolve to any chunk
        let chain = vec![vec![11], vec![21, 22], vec![31], vec![]];
        let got = rows(&ranked, &gold, &doc_of, Some(&chain));
        check(
            &got,
            &[
                // top 1 {40}: 0 of 5
                ("recall@1", Some(0.0)),
                // top 2 {40, 11}: 1 of 5
                ("recall@2", Some(0.2)),
                // top 5 {40, 11, 99, 21}: the duplicate 11 used a slot: 3 of 5
                ("recall@5", Some(0.6)),
                ("recall@10", Some(1.0)),
                ("recall@20", Some(1.0)),
                // first occurrences of gold at 1, 3, 4, 6, 9; ideal: 5 hits at 0..=4
                (
                    "ndcg@10",
                    Some((d(1) + d(3) + d(4) + d(6) + d(9)) / (d(0) + d(1) + d(2) + d(3) + d(4))),
                ),
                ("mrr@10", Some(0.5)),
                // gold documents {1, 2, 3} (11 and 12 tie on document 1; 99 is dropped);
                // ranked documents [4, 1, 2, 5, 6, 7, 3, 8]: top 5 documents hold 1 and 2
                ("doc_recall@5", Some(2.0 / 3.0)),
                ("doc_recall@10", Some(1.0)),
                // slots [11], [21, 22], [31] covered; the empty slot never is
                ("chain_coverage@10", Some(0.75)),
                ("full_chain_hit@10", Some(0.0)),
            ],
        );
    }

    #[test]
    fn every_row_with_empty_gold_empty_ranking_and_duplicates() {
        let doc = |c: u32| Some(c);
        let zeros = |chain: Option<f64>| {
            let mut v: Vec<(&str, Option<f64>)> = [
                "recall@1",
                "recall@2",
                "recall@5",
                "recall@10",
                "recall@20",
                "ndcg@10",
                "mrr@10",
                "doc_recall@5",
                "doc_recall@10",
            ]
            .map(|n| (n, Some(0.0)))
            .to_vec();
            v.push(("chain_coverage@10", chain));
            v.push(("full_chain_hit@10", chain));
            v
        };
        // empty gold and no chain: zeros, and the chain metrics are undefined
        check(
            &rows(&[1, 2, 3], &BTreeSet::new(), &doc, None),
            &zeros(None),
        );
        // an empty ranking scores zero everywhere, chain metrics included
        let chain = vec![vec![1], vec![2]];
        check(
            &rows(&[], &set(&[1, 2]), &doc, Some(&chain)),
            &zeros(Some(0.0)),
        );
        // one chunk repeated: it counts once everywhere
        let got = rows(
            &[5, 5, 5, 5],
            &set(&[5, 6]),
            &doc,
            Some(&[vec![5], vec![6]]),
        );
        let half = Some(0.5);
        check(
            &got,
            &[
                ("recall@1", half),
                ("recall@2", half),
                ("recall@5", half),
                ("recall@10", half),
                ("recall@20", half),
                ("ndcg@10", Some(d(0) / (d(0) + d(1)))),
                ("mrr@10", Some(1.0)),
                ("doc_recall@5", half),
                ("doc_recall@10", half),
                ("chain_coverage@10", half),
                ("full_chain_hit@10", Some(0.0)),
            ],
        );
        // two slots sharing one chunk are both covered by it
        let shared = vec![vec![5], vec![5, 7]];
        let got = rows(&[5], &set(&[5]), &doc, Some(&shared));
        assert_eq!(got["chain_coverage@10"], Some(1.0));
        assert_eq!(got["full_chain_hit@10"], Some(1.0));
    }

    #[test]
    fn views_derive_the_published_names_and_columns() {
        let names: Vec<String> = measured(&[1, 2, 5, 10, 20], &[])
            .iter()
            .map(At::name)
            .collect();
        assert_eq!(
            names,
            [
                "recall@1",
                "recall@2",
                "recall@5",
                "recall@10",
                "recall@20",
                "ndcg@10",
                "mrr@10",
                "doc_recall@5",
                "doc_recall@10",
                "chain_coverage@10",
                "full_chain_hit@10"
            ]
        );
        let columns: Vec<(String, String, bool)> = matrix_columns(&[])
            .iter()
            .map(|(m, ci)| (m.name(), m.label(), *ci))
            .collect();
        let want = [
            ("recall@2", "R@2", false),
            ("recall@5", "R@5", false),
            ("recall@10", "R@10", true),
            ("ndcg@10", "nDCG@10", false),
            ("doc_recall@10", "docR@10", false),
            ("chain_coverage@10", "chain@10", false),
            ("full_chain_hit@10", "fullchain@10", true),
        ]
        .map(|(n, l, ci)| (n.to_string(), l.to_string(), ci));
        assert_eq!(columns, want);
        let curve: Vec<String> = curve_metrics().iter().map(At::name).collect();
        assert_eq!(
            curve,
            [
                "recall@10",
                "ndcg@10",
                "doc_recall@10",
                "chain_coverage@10",
                "full_chain_hit@10"
            ]
        );
        let breakdown: Vec<String> = breakdown_columns().iter().map(At::label).collect();
        assert_eq!(breakdown, ["R@10", "nDCG@10"]);
        assert_eq!(headline().name(), "recall@10");
        let from_qrels: Vec<String> = measured_from_qrels(&[1, 10]).iter().map(At::name).collect();
        assert_eq!(from_qrels, ["recall@1", "recall@10", "ndcg@10", "mrr@10"]);
        // a campaign's recall k list only changes the recall row
        let few: Vec<String> = measured(&[3], &[]).iter().map(At::name).collect();
        assert_eq!(few[0], "recall@3");
        assert_eq!(few.len(), 7);
        // names, headers and aliases each name one row (in any case)
        for (i, a) in METRICS.iter().enumerate() {
            for b in &METRICS[i + 1..] {
                let stems = |m: &Metric| {
                    let mut v = vec![m.name, m.short];
                    v.extend(m.aliases);
                    v.extend(m.trec.uncut);
                    v.iter().map(|s| s.to_ascii_lowercase()).collect::<Vec<_>>()
                };
                let (sa, sb) = (stems(a), stems(b));
                assert!(
                    sa.iter().all(|s| !sb.contains(s)),
                    "{} and {}",
                    a.name,
                    b.name
                );
            }
        }
    }

    #[test]
    fn measure_names_in_every_spelling() {
        let name = |s: &str| At::parse(s).map(|a| a.name());
        for (spellings, want) in [
            (
                &["recall@100", "R@100", "recall_100", "recall.100"][..],
                "recall@100",
            ),
            (
                &[
                    "ndcg@10",
                    "nDCG@10",
                    "NDCG@10",
                    "ndcg_cut_10",
                    "ndcg_cut.10",
                ],
                "ndcg@10",
            ),
            (&["ndcg", "nDCG"], "ndcg"),
            (&["mrr", "RR", "recip_rank"], "mrr"),
            (&["mrr@10", "RR@10"], "mrr@10"),
            (&["AP", "map"], "AP"),
            (
                &["AP@100", "map@100", "map_cut_100", "map_cut.100"],
                "AP@100",
            ),
            (&["P@5", "precision@5", "P_5", "P.5"], "P@5"),
            (&["Rprec", "r-precision", "R-Precision"], "Rprec"),
            (
                &["Success@5", "hit_rate@5", "success_5", "success.5"],
                "Success@5",
            ),
            (&["Judged@10"], "Judged@10"),
            (&["Bpref", "bpref"], "Bpref"),
            (&["NumRet", "num_ret"], "NumRet"),
            (&["NumRelRet", "num_rel_ret"], "NumRelRet"),
            (&["P(rel=2)@5"], "P(rel=2)@5"),
        ] {
            for s in spellings {
                assert_eq!(name(s).as_deref(), Ok(want), "{s}");
            }
        }
        let trec = |s: &str| At::parse(s).unwrap().trec_name();
        assert_eq!(trec("nDCG@10").as_deref(), Some("ndcg_cut_10"));
        assert_eq!(trec("AP").as_deref(), Some("map"));
        assert_eq!(trec("RR").as_deref(), Some("recip_rank"));
        assert_eq!(trec("RR@10"), None);
        assert_eq!(trec("P(rel=2)@5"), None);
        for (bad, why) in [
            ("P", "needs a cut-off"),
            ("Rprec@10", "takes no cut-off"),
            ("P@0", "not a positive integer"),
            ("P@x", "not a positive integer"),
            ("nDCG(rel=2)@10", "reads no relevance level"),
            ("doc_recall@10", "needs the corpus"),
            ("ERR@10", "unknown"),
        ] {
            let e = At::parse(bad).unwrap_err();
            assert!(e.contains(bad) && e.contains(why), "{bad}: {e}");
        }
        let list = |items: &[&str]| {
            let items: Vec<String> = items.iter().map(|s| s.to_string()).collect();
            At::parse_list(&items).map(|v| v.iter().map(At::name).collect::<Vec<_>>())
        };
        assert_eq!(
            list(&["nDCG@10,AP", "P.5,10", "ndcg_cut_10"]).unwrap(),
            ["ndcg@10", "AP", "P@5", "P@10"]
        );
        assert!(list(&["AP,10"]).is_err());
    }

    #[test]
    fn the_seed_functions_equal_the_graded_ones_on_binary_judgements() {
        // the gold-set path (the matrix's) against the graded path (eval's), on random rankings
        // with repeats, ties of nothing, empty gold and cut-offs beyond the ranking
        let mut rng = hopbench_datasets::rng::SplitMix64::new(11);
        for _ in 0..2000 {
            let n = rng.below(25);
            let ranked: Vec<u32> = (0..n).map(|_| rng.below(30) as u32).collect();
            let gold: BTreeSet<u32> = (0..rng.below(8)).map(|_| rng.below(30) as u32).collect();
            let graded = Graded::from_gold(&ranked, &gold);
            for k in [1, 2, 5, 10, 40] {
                let on_gold = Judged {
                    ranked: &ranked,
                    gold: &gold,
                    doc_of: &|_| None,
                    chain: None,
                    graded: None,
                    level: 1,
                };
                let on_grades = Judged {
                    graded: Some(&graded),
                    ..on_gold
                };
                for name in ["recall", "ndcg", "mrr"] {
                    let m = METRICS.iter().find(|m| m.name == name).unwrap();
                    let at = At::new(m, k);
                    let (a, b) = (at.score(&on_gold).unwrap(), at.score(&on_grades).unwrap());
                    assert!(
                        (a - b).abs() < TOL,
                        "{name}@{k} {ranked:?} {gold:?}: {a} {b}"
                    );
                }
            }
        }
    }

    #[test]
    fn percentiles_with_ties() {
        // sorted [2, 2, 2, 5]: median h = 1.5 -> 2 + 0.5·0 = 2; p95 h = 2.85 -> 2 + 0.85·3
        let v = [5.0, 2.0, 2.0, 2.0];
        close(median(&v).unwrap(), 2.0);
        close(percentile(&v, 95.0).unwrap(), 2.0 + 0.85 * 3.0);
        close(percentile(&[4.0; 3], 37.0).unwrap(), 4.0);
    }

    #[test]
    fn percentiles_linear_interpolation() {
        // Sorted [1, 2, 3, 4]: median h = 3·0.5 = 1.5 -> 2 + 0.5·1 = 2.5 (numpy: 2.5).
        let v = [4.0, 1.0, 3.0, 2.0];
        close(median(&v).unwrap(), 2.5);
        // p95: h = 3·0.95 = 2.85 -> 3 + 0.85·1 = 3.85 (numpy: 3.85).
        close(percentile(&v, 95.0).unwrap(), 3.85);
        close(percentile(&v, 0.0).unwrap(), 1.0);
        close(percentile(&v, 100.0).unwrap(), 4.0);
        close(median(&[7.0]).unwrap(), 7.0);
        close(median(&[3.0, 1.0, 2.0]).unwrap(), 2.0);
        assert_eq!(median(&[]), None);
        assert_eq!(percentile(&v, 101.0), None);
        assert_eq!(percentile(&[1.0, f64::NAN], 50.0), None);
    }

    #[test]
    fn a_campaigns_extra_measures_are_named_once_after_the_default_set() {
        let ks = [1, 2, 5, 10, 20];
        let listed: Vec<String> = ["map", "P.5,10", "ndcg_cut.3", "R@10", "nDCG@10", "AP", "RR"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        // recall@10 and ndcg@10 are measured anyway; AP is map again; RR is mrr uncut
        let extra = extra_measures(&ks, &listed).unwrap();
        assert_eq!(extra, ["AP", "P@5", "P@10", "ndcg@3", "mrr"]);
        // each name reads back as itself, so a summary's names measure the same
        for name in &extra {
            assert_eq!(&At::parse(name).unwrap().name(), name);
        }
        let all: Vec<String> = measured(&ks, &extra).iter().map(At::name).collect();
        let base: Vec<String> = measured(&ks, &[]).iter().map(At::name).collect();
        assert_eq!(all[..base.len()], base[..]);
        assert_eq!(all[base.len()..], extra[..]);
        let columns: Vec<String> = matrix_columns(&extra)
            .iter()
            .map(|(a, _)| a.name())
            .collect();
        assert_eq!(columns[columns.len() - extra.len()..], extra[..]);
        assert!(
            matrix_columns(&extra)[columns.len() - 1].1,
            "extra columns carry a CI"
        );
        let e = extra_measures(&ks, &["AP".into(), "nDCG@x".into()]).unwrap_err();
        assert!(e.contains("nDCG@x"), "{e}");
        assert!(extra_measures(&ks, &[]).unwrap().is_empty());
    }
}
