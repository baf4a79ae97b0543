//! `hopbench eval RUN QRELS`: scores any system's run against TREC qrels with the harness's own
//! metric code ([`crate::measure::metrics`]), trec_eval-style: no campaign, no export, no model.
//!
//! What is measured: every metric of [`metrics::measured_from_qrels`] (those a ranking and
//! judgements define alone: recall@k for the campaign's `recall_k`, nDCG@10, MRR@10), per query,
//! then the mean with the same bootstrap CI a cell reports ([`StatsConfig::mean_ci`]).
//!
//! The rules, which are the matrix's:
//!
//! - the evaluated queries are the qrels' queries with at least one relevant judgement
//!   (`rel > 0`; gains are binary, so graded qrels are read as relevant / not relevant), in the
//!   order the qrels first name them; a query judged without any relevant document is counted
//!   and not evaluated, as trec_eval does;
//! - a query's ranking is the run's documents for it by score, descending, ties on ascending
//!   document id (byte order of the id as written), and the ties this rule broke are counted;
//! - an evaluated query the run does not mention has an empty ranking and scores what the metric
//!   gives an empty ranking (0): the system returned nothing. trec_eval skips such a query unless
//!   given `-c`; ranx refuses the pair unless given `make_comparable=True`, which scores it as
//!   here; here it is counted and reported;
//! - a run query the qrels do not judge is an error naming the run file and the line (JSON path,
//!   parquet row), unless `--unknown-ids drop` drops and counts its records; one (query,
//!   document) pair twice is an error, as are malformed lines and non-finite scores
//!   ([`hopbench_datasets::runfile`]). With no corpus there is no unknown document: a document
//!   the qrels do not judge is not relevant.
//!
//! Two ways to the same numbers. [`evaluate`] streams the run and scores each query when its
//! records end, so memory holds one query's records at a time; that needs each query's records
//! to be contiguous, as every run writer emits them. When a query's records come back after
//! another query's, it reads the run again through [`evaluate_grouped`], which holds every
//! record and orders documents the way the matrix orders chunks (global ids in id order). The
//! tests check that both give identical values.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use hopbench_datasets::runfile::{self, At, RunFormat};
use hopbench_datasets::Error as DataError;
use serde::Serialize;

use crate::measure::measures::Graded;
use crate::measure::metrics::{self, At as Metric, Judged};
use crate::measure::stats_config::StatsConfig;

mod source;
pub use source::{QrelsFile, QrelsSource, RunFile, RunSource};

/// A TREC qrels file, read and checked.
#[derive(Debug)]
pub struct Qrels {
    path: PathBuf,
    queries: Vec<QrelsQuery>,
    index: IdIndex,
}

/// One judged query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QrelsQuery {
    /// Query id, as written.
    pub id: String,
    /// Every judged document and its grade, sorted by id, unique.
    pub judged: Vec<(String, i64)>,
}

impl QrelsQuery {
    /// How many documents are relevant at `level` (grade >= level).
    pub fn relevant(&self, level: i64) -> usize {
        self.judged.iter().filter(|(_, g)| *g >= level).count()
    }

    /// The query's graded view of `ranked` (grades per rank, `None`: unjudged).
    fn graded(&self, ranked: Vec<Option<i64>>) -> Graded {
        Graded::new(ranked, self.judged.iter().map(|(_, g)| *g).collect())
    }
}

/// How equal scores are ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Ties {
    /// Ascending document id (byte order), as the matrix orders chunks.
    Id,
    /// Descending document id (byte order), as trec_eval sorts (score, then docno, both
    /// descending).
    TrecEval,
}

impl Ties {
    /// Orders two document ids of equal score.
    fn cmp(self, a: &str, b: &str) -> std::cmp::Ordering {
        match self {
            Ties::Id => a.cmp(b),
            Ties::TrecEval => b.cmp(a),
        }
    }

    /// How the table says it.
    fn phrase(self) -> &'static str {
        match self {
            Ties::Id => "ascending document id",
            Ties::TrecEval => "descending document id (trec_eval's order)",
        }
    }
}

impl Qrels {
    /// Reads `path` (`qid iter docid rel`). A (query, document) pair judged twice is an error
    /// naming both lines, and so is a file without judgements.
    pub fn read(path: &Path) -> Result<Qrels, DataError> {
        Qrels::from_source(&mut QrelsFile(path.to_path_buf()))
    }

    /// [`Qrels::read`] from any source of judgements.
    pub fn from_source(source: &mut dyn QrelsSource) -> Result<Qrels, DataError> {
        let path = source.name().to_path_buf();
        let path = path.as_path();
        let mut queries: Vec<QrelsQuery> = Vec::new();
        let mut index = IdIndex::default();
        source.read(&mut |j| {
            let q = match index.get(j.query) {
                Some(&q) => q,
                None => {
                    index.insert(j.query.to_string(), queries.len());
                    queries.push(QrelsQuery {
                        id: j.query.to_string(),
                        judged: Vec::new(),
                    });
                    queries.len() - 1
                }
            };
            queries[q].judged.push((j.doc.to_string(), j.rel));
            Ok(())
        })?;
        if queries.is_empty() {
            return Err(DataError::malformed(path, "TREC qrels", "no judgements"));
        }
        let mut twice = false;
        for q in &mut queries {
            q.judged.sort_unstable();
            twice |= q.judged.windows(2).any(|w| w[0].0 == w[1].0);
        }
        if twice {
            return Err(Self::judged_twice(source));
        }
        Ok(Qrels {
            path: path.to_path_buf(),
            queries,
            index,
        })
    }

    /// Judgements a caller has read itself (the Python package reads a dict in place), in
    /// query order: each query's judged documents are sorted as [`Qrels::read`] sorts them.
    /// `None` when there is nothing judged or a query or a (query, document) pair repeats,
    /// which the caller's source then reports through [`Qrels::from_source`] with its place.
    pub fn from_queries(path: PathBuf, mut queries: Vec<QrelsQuery>) -> Option<Qrels> {
        if queries.is_empty() {
            return None;
        }
        let mut index = IdIndex::default();
        for (q, query) in queries.iter_mut().enumerate() {
            if index.insert(query.id.clone(), q).is_some() || query.judged.is_empty() {
                return None;
            }
            query.judged.sort_unstable();
            if query.judged.windows(2).any(|w| w[0].0 == w[1].0) {
                return None;
            }
        }
        Some(Qrels {
            path,
            queries,
            index,
        })
    }

    /// The error for a file that judges some pair twice, naming the first line (in file order)
    /// that repeats a pair and the line it repeats. Only read when sorting found a repeat, so
    /// the lines are not kept for files without one.
    fn judged_twice(source: &mut dyn QrelsSource) -> DataError {
        let path = source.name().to_path_buf();
        let mut seen: HashMap<(String, String), At> = HashMap::new();
        let found = source.read(&mut |j| {
            let key = (j.query.to_string(), j.doc.to_string());
            match seen.insert(key, j.at) {
                Some(first) => Err(DataError::field(
                    &path,
                    runfile::location(j.at, j.query, j.doc),
                    "docid",
                    format!(
                        "`{}` is judged twice for query `{}` (first at {})",
                        j.doc,
                        j.query,
                        runfile::location(first, j.query, j.doc)
                    ),
                )),
                None => Ok(()),
            }
        });
        found.err().unwrap_or_else(|| {
            DataError::malformed(&path, "TREC qrels", "changed while it was read")
        })
    }

    /// The judged queries, in the order the file first names them.
    pub fn queries(&self) -> &[QrelsQuery] {
        &self.queries
    }
}

/// Per-query values of one evaluation, and what it counted.
#[derive(Debug, Clone, PartialEq)]
pub struct Evaluated {
    /// Metric names, in report order.
    pub names: Vec<String>,
    /// The evaluated queries (those with a relevant document), in qrels order.
    pub query_ids: Vec<String>,
    /// Per metric (in `names` order), the value of each evaluated query (`None`: undefined).
    pub values: Vec<Vec<Option<f64>>>,
    /// Evaluated queries the run has no record for (scored as empty rankings).
    pub absent: usize,
    /// Judged queries without a relevant document (not evaluated).
    pub without_relevant: usize,
    /// Records of the run that were scored.
    pub records: usize,
    /// Records dropped because the qrels do not judge their query (`--unknown-ids drop`).
    pub dropped_unknown_queries: usize,
    /// Adjacent equal scores that the tie rule ordered, over every query.
    pub ties_broken: usize,
}

/// How to score: the measures, the relevance level, the tie order.
#[derive(Debug, Clone, Copy)]
pub struct Rules<'a> {
    /// The measures, in report order (each [`metrics::Metric::qrels_only`]).
    pub which: &'a [Metric],
    /// Relevant when grade >= level (at least 1).
    pub level: i64,
    /// The order of equal scores.
    pub ties: Ties,
}

fn unknown_query(
    path: &Path,
    format: RunFormat,
    qrels: &Qrels,
    r: &runfile::Record<'_>,
) -> DataError {
    DataError::field(
        path,
        r.location(),
        format.id_fields().0,
        format!(
            "`{}` is not a query of the qrels {}",
            r.query,
            qrels.path.display()
        ),
    )
}

fn duplicate(path: &Path, format: RunFormat, at: [At; 2], query: &str, doc: &str) -> DataError {
    DataError::field(
        path,
        runfile::location(at[1], query, doc),
        format.id_fields().1,
        format!(
            "`{doc}` is listed twice for query `{query}` (first at {})",
            runfile::location(at[0], query, doc)
        ),
    )
}

/// Per-query values and counts being filled in, in qrels query order.
struct Sheet<'a> {
    qrels: &'a Qrels,
    rules: Rules<'a>,
    /// `values[q * which.len() + m]`.
    values: Vec<Option<f64>>,
    /// Whether the run named query `q`.
    seen: Vec<bool>,
    records: usize,
    dropped: usize,
    ties: usize,
    /// Scratch space for a query's graded view.
    graded: Graded,
}

impl<'a> Sheet<'a> {
    fn new(qrels: &'a Qrels, rules: Rules<'a>) -> Self {
        let n = qrels.queries.len();
        Sheet {
            qrels,
            rules,
            values: vec![None; n * rules.which.len()],
            seen: vec![false; n],
            records: 0,
            dropped: 0,
            ties: 0,
            graded: Graded::default(),
        }
    }

    /// Scores query `q`: `ranked` in metric ids, `gold` those relevant at the level, `graded`
    /// the ranking's grades.
    fn record(&mut self, q: usize, ranked: &[u32], gold: &BTreeSet<u32>, graded: &Graded) {
        let judged = Judged {
            ranked,
            gold,
            doc_of: &|_| None,
            chain: None,
            graded: Some(graded),
            level: self.rules.level,
        };
        let m = self.rules.which.len();
        for (slot, at) in self.values[q * m..(q + 1) * m]
            .iter_mut()
            .zip(self.rules.which)
        {
            *slot = at.score(&judged);
        }
    }

    /// Scores query `q` from its records ranked: `order` the record indices in rank order,
    /// `judged_at[i]` the place of record `i`'s document in the query's judged list
    /// (`u32::MAX`: not judged); `ranked` is scratch space.
    fn record_ranked(&mut self, q: usize, order: &[u32], judged_at: &[u32], ranked: &mut Vec<u32>) {
        let query = &self.qrels.queries[q];
        let judged = &query.judged;
        // metric ids: a judged document is its place in the sorted judged list, any other
        // one |judged| + its record index (unique: no pair is listed twice)
        let g = judged.len() as u32;
        // the graded view, built in the sheet's scratch space (as `QrelsQuery::graded` builds
        // it, without an allocation per query)
        let mut graded = std::mem::take(&mut self.graded);
        graded.ranked.clear();
        ranked.clear();
        ranked.extend(order.iter().map(|&i| match judged_at[i as usize] {
            u32::MAX => {
                graded.ranked.push(None);
                g + i
            }
            j => {
                graded.ranked.push(Some(judged[j as usize].1));
                j
            }
        }));
        graded.judged.clear();
        graded.judged.extend(judged.iter().map(|(_, g)| *g));
        graded.judged.sort_unstable_by(|a, b| b.cmp(a));
        let gold = gold_ids(query, self.rules.level, |j| j as u32);
        self.record(q, ranked, &gold, &graded);
        self.graded = graded;
    }

    fn finish(mut self) -> Evaluated {
        let m = self.rules.which.len();
        let mut absent = 0;
        let mut without_relevant = 0;
        let mut query_ids = Vec::new();
        let mut values = vec![Vec::new(); m];
        for (q, query) in self.qrels.queries.iter().enumerate() {
            if query.relevant(self.rules.level) == 0 {
                without_relevant += 1;
                continue;
            }
            if !self.seen[q] {
                absent += 1;
                let gold = gold_ids(query, self.rules.level, |j| j as u32);
                self.record(q, &[], &gold, &query.graded(Vec::new()));
            }
            query_ids.push(query.id.clone());
            for (j, column) in values.iter_mut().enumerate() {
                column.push(self.values[q * m + j]);
            }
        }
        Evaluated {
            names: self.rules.which.iter().map(Metric::name).collect(),
            query_ids,
            values,
            absent,
            without_relevant,
            records: self.records,
            dropped_unknown_queries: self.dropped,
            ties_broken: self.ties,
        }
    }
}

/// The metric ids of `query`'s documents relevant at `level`, `id(j)` that of its `j`-th judged
/// document.
fn gold_ids(query: &QrelsQuery, level: i64, id: impl Fn(usize) -> u32) -> BTreeSet<u32> {
    (query.judged.iter().enumerate())
        .filter(|(_, (_, g))| *g >= level)
        .map(|(j, _)| id(j))
        .collect()
}

/// Why the streaming pass stopped.
enum Stop {
    /// A query's records are not contiguous: read the run grouped.
    NotContiguous,
    /// A real error.
    Error(DataError),
}

/// The records of the query being streamed.
struct Block {
    /// Its qrels index (`None`: no query yet).
    query: Option<usize>,
    /// Its id as the run writes it.
    id: String,
    /// Document ids, one after another.
    arena: String,
    /// `(score, start, end, at)` per record, in file order.
    recs: Vec<(f64, usize, usize, At)>,
    /// Scratch space, kept between queries.
    order: Vec<u32>,
    /// The hash of each record's document id.
    hashes: Vec<u64>,
    /// Open-addressed table of record indices by id hash (`u32::MAX`: empty).
    table: Vec<u32>,
    /// Per record, the index of its document among the query's judged ones (`u32::MAX`: none).
    judged_at: Vec<u32>,
    ranked: Vec<u32>,
}

/// Query ids to their qrels index, hashed with FNV-1a: looked up once per query of the run and
/// once per judgement, where SipHash's resistance to chosen keys buys nothing (the files are the
/// user's own) and showed as 3% of a 1M-query evaluation's profile.
type IdIndex = HashMap<String, usize, std::hash::BuildHasherDefault<Fnv>>;

/// FNV-1a as a [`std::hash::Hasher`], for [`IdIndex`].
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(FNV_OFFSET)
    }
}

impl std::hash::Hasher for Fnv {
    fn write(&mut self, bytes: &[u8]) {
        self.0 = bytes.iter().fold(self.0, |h, &b| fnv_step(h, b));
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

fn fnv_step(h: u64, b: u8) -> u64 {
    (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
}

/// FNV-1a: a fast 64-bit hash of a document id, to find a pair listed twice without sorting
/// strings (equal hashes are compared as strings, so a collision costs time, never a result).
fn fnv1a(s: &str) -> u64 {
    s.bytes().fold(FNV_OFFSET, fnv_step)
}

impl Block {
    /// Scores the block's query into `sheet` (a query without relevant documents is only
    /// checked), and empties the block.
    fn close(
        &mut self,
        sheet: &mut Sheet<'_>,
        path: &Path,
        format: RunFormat,
    ) -> Result<(), DataError> {
        let Some(q) = self.query.take() else {
            return Ok(());
        };
        let Block {
            id,
            arena,
            recs,
            order,
            hashes,
            table,
            judged_at,
            ranked,
            ..
        } = self;
        let n = recs.len();
        let doc = |i: u32| {
            let (_, s, e, _) = recs[i as usize];
            &arena[s..e]
        };
        // one pair listed twice: the first record (in file order) whose id an earlier record
        // has, as the grouped reader reports it; found through an open-addressed table of
        // record indices keyed by the ids' hashes (equal hashes are compared as strings)
        hashes.clear();
        hashes.extend((0..n as u32).map(|i| fnv1a(doc(i))));
        let slots = (2 * n).next_power_of_two().max(2);
        table.clear();
        table.resize(slots, u32::MAX);
        let mask = slots - 1;
        for (later, &h) in (0..n as u32).zip(hashes.iter()) {
            let mut s = h as usize & mask;
            loop {
                let earlier = table[s];
                if earlier == u32::MAX {
                    table[s] = later;
                    break;
                }
                if hashes[earlier as usize] == h && doc(earlier) == doc(later) {
                    let at = [recs[earlier as usize].3, recs[later as usize].3];
                    return Err(duplicate(path, format, at, id, doc(later)));
                }
                s = (s + 1) & mask;
            }
        }
        sheet.ties += rank(order, n, |i| recs[i as usize].0, doc, sheet.rules.ties);
        let query = &sheet.qrels.queries[q];
        if query.relevant(sheet.rules.level) > 0 {
            let judged = &query.judged;
            // the record of each judged document, found in the table of record ids
            judged_at.clear();
            judged_at.resize(n, u32::MAX);
            for (j, (d, _)) in judged.iter().enumerate() {
                let h = fnv1a(d);
                let mut s = h as usize & mask;
                loop {
                    let i = table[s];
                    if i == u32::MAX {
                        break;
                    }
                    if hashes[i as usize] == h && doc(i) == d {
                        judged_at[i as usize] = j as u32;
                        break;
                    }
                    s = (s + 1) & mask;
                }
            }
            sheet.record_ranked(q, order, judged_at, ranked);
        }
        sheet.records += n;
        recs.clear();
        arena.clear();
        Ok(())
    }
}

/// Orders a query's `n` records for scoring into `order` (record indices): score descending
/// (a run is usually in this order already, which the stable sort detects in one pass), then
/// each group of equal scores by the tie rule. Returns how many adjacent equal scores the rule
/// ordered.
pub fn rank<'d>(
    order: &mut Vec<u32>,
    n: usize,
    score: impl Fn(u32) -> f64,
    doc: impl Fn(u32) -> &'d str,
    ties: Ties,
) -> usize {
    order.clear();
    order.extend(0..n as u32);
    order.sort_by(|&a, &b| score(b).total_cmp(&score(a)));
    let mut broken = 0;
    for tied in order.chunk_by_mut(|&a, &b| score(a) == score(b)) {
        if tied.len() > 1 {
            broken += tied.len() - 1;
            tied.sort_unstable_by(|&a, &b| ties.cmp(doc(a), doc(b)));
        }
    }
    broken
}

/// The scoring [`evaluate_source`] does after it has read a query's records, for a caller that
/// reads and ranks each query itself (the Python package walks a dict run in place, where
/// every query's documents are already unique and in memory): the same per-query values and
/// counts, from the same code.
pub struct Scorer<'a> {
    sheet: Sheet<'a>,
    ranked: Vec<u32>,
}

impl<'a> Scorer<'a> {
    /// An empty sheet for `qrels` under `rules`.
    pub fn new(qrels: &'a Qrels, rules: Rules<'a>) -> Self {
        Scorer {
            sheet: Sheet::new(qrels, rules),
            ranked: Vec::new(),
        }
    }

    /// The qrels index of query `id`.
    pub fn query(&self, id: &str) -> Option<usize> {
        self.sheet.qrels.index.get(id).copied()
    }

    /// Marks query `q` as read; false if it was already (its records are then not contiguous,
    /// which [`evaluate_source`] reads grouped).
    pub fn open(&mut self, q: usize) -> bool {
        !std::mem::replace(&mut self.sheet.seen[q], true)
    }

    /// Scores query `q`, opened, from its records: `order` as [`rank`] gives it, `judged_at`
    /// as [`Block`] finds it (per record, the place of its document among the query's judged
    /// ones, `u32::MAX`: not judged), `ties` as [`rank`] counts them. A query without a
    /// relevant judgement is only counted, as [`evaluate_source`] does.
    pub fn score(&mut self, q: usize, order: &[u32], judged_at: &[u32], ties: usize) {
        debug_assert!(self.sheet.seen[q] && order.len() == judged_at.len());
        if self.sheet.qrels.queries[q].relevant(self.sheet.rules.level) > 0 {
            self.sheet
                .record_ranked(q, order, judged_at, &mut self.ranked);
        }
        self.sheet.records += order.len();
        self.sheet.ties += ties;
    }

    /// Counts `records` dropped because the qrels do not judge their query.
    pub fn dropped(&mut self, records: usize) {
        self.sheet.dropped += records;
    }

    /// The per-query values and counts.
    pub fn finish(self) -> Evaluated {
        self.sheet.finish()
    }
}

/// Scores the run file `run` against `qrels` ([`evaluate_source`]).
pub fn evaluate(
    run: &Path,
    format: RunFormat,
    qrels: &Qrels,
    rules: Rules<'_>,
    drop_unknown: bool,
) -> Result<Evaluated, DataError> {
    let mut file = RunFile {
        path: run.to_path_buf(),
        format,
    };
    evaluate_source(&mut file, qrels, rules, drop_unknown)
}

/// Scores `source`'s run against `qrels`, streaming (see the module note); falls back to
/// [`evaluate_grouped_source`] when a query's records are not contiguous.
pub fn evaluate_source(
    source: &mut dyn RunSource,
    qrels: &Qrels,
    rules: Rules<'_>,
    drop_unknown: bool,
) -> Result<Evaluated, DataError> {
    let (name, format) = (source.name().to_path_buf(), source.format());
    let run = name.as_path();
    let mut sheet = Sheet::new(qrels, rules);
    let mut block = Block {
        query: None,
        id: String::new(),
        arena: String::new(),
        recs: Vec::new(),
        order: Vec::new(),
        hashes: Vec::new(),
        table: Vec::new(),
        judged_at: Vec::new(),
        ranked: Vec::new(),
    };
    // whether the block holds a dropped query's records (skipped)
    let mut dropping = false;
    let mut stop: Option<Stop> = None;
    let read = source.read(&mut |r| {
        let same = (block.query.is_some() || dropping) && block.id == r.query;
        if !same {
            if let Err(e) = block.close(&mut sheet, run, format) {
                stop = Some(Stop::Error(e));
                return Err(DataError::malformed(run, "run", "stopped"));
            }
            block.id.clear();
            block.id.push_str(r.query);
            dropping = false;
            match qrels.index.get(r.query) {
                Some(&q) if sheet.seen[q] => {
                    stop = Some(Stop::NotContiguous);
                    return Err(DataError::malformed(run, "run", "stopped"));
                }
                Some(&q) => {
                    sheet.seen[q] = true;
                    block.query = Some(q);
                }
                None if drop_unknown => dropping = true,
                None => return Err(unknown_query(run, format, qrels, &r)),
            }
        }
        if dropping {
            sheet.dropped += 1;
            return Ok(());
        }
        let start = block.arena.len();
        block.arena.push_str(r.doc);
        block.recs.push((r.score, start, block.arena.len(), r.at));
        Ok(())
    });
    match (stop, read) {
        (Some(Stop::NotContiguous), _) => {
            evaluate_grouped_source(source, qrels, rules, drop_unknown)
        }
        (Some(Stop::Error(e)), _) => Err(e),
        (None, Err(e)) => Err(e),
        (None, Ok(())) => {
            block.close(&mut sheet, run, format)?;
            Ok(sheet.finish())
        }
    }
}

/// Scores `run` against `qrels` holding every record: documents get global ids in id order
/// (as the matrix's chunks do) and each query is ranked by score descending, then by id in the
/// tie rule's direction. Any record order; the reference [`evaluate`] is tested against, and its
/// fallback.
pub fn evaluate_grouped(
    run: &Path,
    format: RunFormat,
    qrels: &Qrels,
    rules: Rules<'_>,
    drop_unknown: bool,
) -> Result<Evaluated, DataError> {
    let mut file = RunFile {
        path: run.to_path_buf(),
        format,
    };
    evaluate_grouped_source(&mut file, qrels, rules, drop_unknown)
}

/// [`evaluate_grouped`] of any source.
pub fn evaluate_grouped_source(
    source: &mut dyn RunSource,
    qrels: &Qrels,
    rules: Rules<'_>,
    drop_unknown: bool,
) -> Result<Evaluated, DataError> {
    let (name, format) = (source.name().to_path_buf(), source.format());
    let run = name.as_path();
    let mut sheet = Sheet::new(qrels, rules);
    let mut by_query: Vec<Vec<(String, f64)>> = vec![Vec::new(); qrels.queries.len()];
    let mut first: HashMap<(usize, String), At> = HashMap::new();
    source.read(&mut |r| {
        let Some(&q) = qrels.index.get(r.query) else {
            if drop_unknown {
                sheet.dropped += 1;
                return Ok(());
            }
            return Err(unknown_query(run, format, qrels, &r));
        };
        if let Some(&at) = first.get(&(q, r.doc.to_string())) {
            return Err(duplicate(run, format, [at, r.at], r.query, r.doc));
        }
        first.insert((q, r.doc.to_string()), r.at);
        sheet.seen[q] = true;
        by_query[q].push((r.doc.to_string(), r.score));
        Ok(())
    })?;
    let mut ids: BTreeMap<&str, u32> = BTreeMap::new();
    for (q, recs) in by_query.iter().enumerate() {
        ids.extend(recs.iter().map(|(d, _)| (d.as_str(), 0)));
        ids.extend(qrels.queries[q].judged.iter().map(|(d, _)| (d.as_str(), 0)));
    }
    for (i, id) in ids.values_mut().enumerate() {
        *id = i as u32;
    }
    for (q, recs) in by_query.iter().enumerate() {
        let mut ranked: Vec<(f64, u32)> = recs.iter().map(|(d, s)| (*s, ids[d.as_str()])).collect();
        ranked.sort_by(|a, b| {
            let by_id = match rules.ties {
                Ties::Id => a.1.cmp(&b.1),
                Ties::TrecEval => b.1.cmp(&a.1),
            };
            b.0.total_cmp(&a.0).then(by_id)
        });
        sheet.ties += ranked.windows(2).filter(|w| w[0].0 == w[1].0).count();
        sheet.records += recs.len();
        let query = &qrels.queries[q];
        if query.relevant(rules.level) > 0 && sheet.seen[q] {
            let judged: HashMap<u32, i64> = (query.judged.iter())
                .map(|(d, g)| (ids[d.as_str()], *g))
                .collect();
            let gold = gold_ids(query, rules.level, |j| ids[query.judged[j].0.as_str()]);
            let list: Vec<u32> = ranked.iter().map(|&(_, id)| id).collect();
            let graded = Graded::from_ids(&list, &judged);
            sheet.record(q, &list, &gold, &graded);
        }
    }
    Ok(sheet.finish())
}

/// `hopbench eval`'s settings.
#[derive(Debug, Clone)]
pub struct EvalOptions {
    /// The run file.
    pub run: PathBuf,
    /// Its format (`None`: from its extension).
    pub format: Option<RunFormat>,
    /// The TREC qrels file.
    pub qrels: PathBuf,
    /// Drop (and count) records of queries the qrels do not judge, instead of failing.
    pub drop_unknown: bool,
    /// The recall cut-offs of the default measures.
    pub recall_k: Vec<usize>,
    /// The measures (`None`: the default ones, [`metrics::measured_from_qrels`]).
    pub measures: Option<Vec<Metric>>,
    /// Relevant when grade >= level.
    pub level: i64,
    /// The order of equal scores.
    pub ties: Ties,
    /// CI settings (`ci: off` computes none).
    pub stats: StatsConfig,
}

/// One metric's line of the report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricLine {
    /// Mean over the evaluated queries where the measure is defined (`null`: on none).
    pub mean: Option<f64>,
    /// Percentile-bootstrap 95% CI of the mean (`null` with CIs off).
    pub ci95: Option<[f64; 2]>,
    /// Queries the mean is over (those where the measure is defined).
    pub queries: usize,
}

/// What `hopbench eval` prints (its `--format json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvalReport {
    /// The run file.
    pub run: String,
    /// Its format.
    pub format: &'static str,
    /// The qrels file.
    pub qrels: String,
    /// Evaluated queries.
    pub queries: usize,
    /// Evaluated queries absent from the run (scored as empty rankings).
    pub queries_absent: usize,
    /// Judged queries without a relevant document (not evaluated).
    pub queries_without_relevant: usize,
    /// Run records scored.
    pub records: usize,
    /// Run records dropped: their query is not judged (`--unknown-ids drop`).
    pub dropped_unknown_queries: usize,
    /// Ties broken by the tie rule.
    pub ties_broken: usize,
    /// The tie rule: `id` (ascending document id) or `trec_eval` (descending).
    pub ties: Ties,
    /// Relevant when grade >= this level (nDCG's gain is the grade, whatever the level).
    pub relevance_level: i64,
    /// Metric name -> mean, CI, query count.
    pub metrics: BTreeMap<String, MetricLine>,
    /// Metric names in report order (the table's row order).
    #[serde(skip)]
    pub order: Vec<String>,
    /// The measures, in report order.
    #[serde(skip)]
    pub measures: Vec<Metric>,
}

/// Each measure's line (in `e.names` order): the mean over the queries where it is defined, and
/// the bootstrap CI of `stats` (one pass for every measure).
pub fn summarize(e: &Evaluated, stats: &StatsConfig) -> Vec<MetricLine> {
    let defined: Vec<Vec<f64>> = (e.values.iter())
        .map(|v| v.iter().flatten().copied().collect())
        .collect();
    let columns: Vec<&[f64]> = defined.iter().map(Vec::as_slice).collect();
    let cis = stats.mean_cis(&columns);
    defined
        .iter()
        .zip(cis)
        .map(|(v, ci95)| MetricLine {
            mean: metrics::mean(v.iter().copied()),
            ci95: ci95.filter(|_| !v.is_empty()),
            queries: v.len(),
        })
        .collect()
}

/// Runs `hopbench eval`: the report and the per-query values.
pub fn run(o: &EvalOptions) -> Result<(EvalReport, Evaluated)> {
    let format = match o.format.or_else(|| RunFormat::from_extension(&o.run)) {
        Some(f) => f,
        None => anyhow::bail!(
            "{}: cannot tell the run's format from its extension: give --run-format trec, json \
             or parquet",
            o.run.display()
        ),
    };
    if o.level < 1 {
        anyhow::bail!("--relevance-level {}: must be at least 1", o.level);
    }
    let qrels = Qrels::read(&o.qrels)?;
    let which = match &o.measures {
        Some(m) => m.clone(),
        None => metrics::measured_from_qrels(&o.recall_k),
    };
    let rules = Rules {
        which: &which,
        level: o.level,
        ties: o.ties,
    };
    let e = evaluate(&o.run, format, &qrels, rules, o.drop_unknown)?;
    if e.query_ids.is_empty() {
        anyhow::bail!(
            "{}: no query has a relevant judgement (grade >= {}): nothing to evaluate",
            o.qrels.display(),
            o.level
        );
    }
    let metrics = e
        .names
        .iter()
        .cloned()
        .zip(summarize(&e, &o.stats))
        .collect();
    let report = EvalReport {
        run: o.run.display().to_string(),
        format: format.name(),
        qrels: o.qrels.display().to_string(),
        queries: e.query_ids.len(),
        queries_absent: e.absent,
        queries_without_relevant: e.without_relevant,
        records: e.records,
        dropped_unknown_queries: e.dropped_unknown_queries,
        ties_broken: e.ties_broken,
        ties: o.ties,
        relevance_level: o.level,
        metrics,
        order: e.names.clone(),
        measures: which,
    };
    Ok((report, e))
}

/// The report as a plain-text table.
pub fn table(r: &EvalReport) -> String {
    let mut out = format!(
        "run    {} ({}): {} records scored{}\nqrels  {}: {} queries evaluated, {} absent from the \
         run (scored as empty rankings), {} judged without a relevant document (not evaluated)\n\
         ties   {} broken by {}\n\
         gains  nDCG: the grade (negative as 0); every other measure: relevant when grade >= {}\n\n",
        r.run,
        r.format,
        r.records,
        if r.dropped_unknown_queries > 0 {
            format!(
                ", {} dropped (query not in the qrels)",
                r.dropped_unknown_queries
            )
        } else {
            String::new()
        },
        r.qrels,
        r.queries,
        r.queries_absent,
        r.queries_without_relevant,
        r.ties_broken,
        r.ties.phrase(),
        r.relevance_level,
    );
    let width = r.order.iter().map(String::len).max().unwrap_or(6).max(6);
    out.push_str(&format!(
        "{:<width$}  {:>6}  {:<16}  {}\n",
        "metric", "mean", "95% CI", "queries"
    ));
    for name in &r.order {
        let m = &r.metrics[name];
        let ci = m
            .ci95
            .map_or("—".to_string(), |[lo, hi]| format!("[{lo:.4}, {hi:.4}]"));
        let mean = m.mean.map_or("—".to_string(), |v| format!("{v:.4}"));
        out.push_str(&format!(
            "{name:<width$}  {mean:>6}  {ci:<16}  {}\n",
            m.queries
        ));
    }
    out
}

/// The report as TSV: one row per metric (`metric mean ci_lo ci_hi queries`; empty CI cells
/// with CIs off), full precision.
pub fn tsv(r: &EvalReport) -> String {
    let mut out = String::from("metric\tmean\tci_lo\tci_hi\tqueries\n");
    for name in &r.order {
        let m = &r.metrics[name];
        let (lo, hi) = m.ci95.map_or((String::new(), String::new()), |[l, h]| {
            (l.to_string(), h.to_string())
        });
        let mean = m.mean.map_or(String::new(), |v| v.to_string());
        out.push_str(&format!("{name}\t{mean}\t{lo}\t{hi}\t{}\n", m.queries));
    }
    out
}

/// The values in trec_eval's output format: `measure<TAB>qid<TAB>value` lines, the measure
/// name left-aligned in 22 columns (trec_eval's `%-22s`), values with 4 decimals (`%6.4f`) and
/// counts as integers; with `per_query`, every query's lines first (queries in byte order of
/// their ids, as trec_eval sorts them), then the `all` lines: the mean over the queries where
/// the measure is defined, a count's sum. A measure trec_eval lacks keeps hopbench's name; an
/// undefined per-query value has no line.
pub fn trec_eval(e: &Evaluated, which: &[Metric], per_query: bool) -> String {
    let name = |m: &Metric| m.trec_name().unwrap_or_else(|| m.name());
    let value = |m: &Metric, v: f64| {
        if m.metric.count {
            format!("{v:.0}")
        } else {
            format!("{v:6.4}")
        }
    };
    let mut out = String::new();
    if per_query {
        let mut order: Vec<usize> = (0..e.query_ids.len()).collect();
        order.sort_by(|&a, &b| e.query_ids[a].cmp(&e.query_ids[b]));
        for i in order {
            for (m, column) in which.iter().zip(&e.values) {
                if let Some(v) = column[i] {
                    let line = format!("{:<22}\t{}\t{}\n", name(m), e.query_ids[i], value(m, v));
                    out.push_str(&line);
                }
            }
        }
    }
    for (m, column) in which.iter().zip(&e.values) {
        let defined = column.iter().flatten().copied();
        let all = if m.metric.count {
            Some(defined.sum())
        } else {
            metrics::mean(defined)
        };
        if let Some(v) = all {
            out.push_str(&format!("{:<22}\tall\t{}\n", name(m), value(m, v)));
        }
    }
    out
}

/// Writes the per-query values to `path`: `.json` gives `{qid: {metric: value}}` (the shape
/// pytrec_eval returns), `.tsv` a `query_id` column and one per metric, in qrels order.
pub fn write_per_query(path: &Path, e: &Evaluated) -> Result<()> {
    let ext = path
        .extension()
        .and_then(|x| x.to_str())
        .map(str::to_ascii_lowercase);
    let text = match ext.as_deref() {
        Some("json") => {
            let map: BTreeMap<&str, BTreeMap<&str, Option<f64>>> = e
                .query_ids
                .iter()
                .enumerate()
                .map(|(i, q)| {
                    let row = e
                        .names
                        .iter()
                        .zip(&e.values)
                        .map(|(n, v)| (n.as_str(), v[i]))
                        .collect();
                    (q.as_str(), row)
                })
                .collect();
            serde_json::to_string_pretty(&map).expect("values serialise") + "\n"
        }
        Some("tsv") => {
            let mut out = format!("query_id\t{}\n", e.names.join("\t"));
            for (i, q) in e.query_ids.iter().enumerate() {
                out.push_str(q);
                for v in &e.values {
                    out.push('\t');
                    out.push_str(&v[i].map_or(String::new(), |x| x.to_string()));
                }
                out.push('\n');
            }
            out
        }
        _ => anyhow::bail!(
            "--per-query {}: the file name must end in .json or .tsv",
            path.display()
        ),
    };
    crate::store::fsx::write_atomic(path, text.as_bytes())
        .with_context(|| format!("--per-query {}: cannot write", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use hopbench_datasets::rng::SplitMix64;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    fn which() -> Vec<Metric> {
        metrics::measured_from_qrels(&[1, 2, 5, 10, 20])
    }

    /// Every measure `eval` can compute, at a few cut-offs, one at its own level.
    fn every_measure() -> Vec<Metric> {
        let names = "recall@1,recall@30,ndcg,ndcg@3,mrr,mrr@2,AP,AP@5,P@1,P@40,Rprec,\
                     Success@3,Judged@5,Bpref,NumRet,NumRel,NumRelRet,NumRelRet@4,P(rel=2)@5";
        Metric::parse_list(&[names.to_string()]).unwrap()
    }

    /// The default measures, level 1, ties by ascending id.
    fn rules(which: &[Metric]) -> Rules<'_> {
        Rules {
            which,
            level: 1,
            ties: Ties::Id,
        }
    }

    fn both(run: &Path, qrels: &Qrels, drop: bool) -> Result<Evaluated, String> {
        let which = which();
        let fast =
            evaluate(run, RunFormat::Trec, qrels, rules(&which), drop).map_err(|e| e.to_string());
        let slow = evaluate_grouped(run, RunFormat::Trec, qrels, rules(&which), drop)
            .map_err(|e| e.to_string());
        assert_eq!(fast, slow);
        fast
    }

    /// `1/log2(i+2)`.
    fn d(i: usize) -> f64 {
        1.0 / ((i + 2) as f64).log2()
    }

    #[test]
    fn hand_computed_values_ties_absent_and_unjudged_queries() {
        let dir = tempfile::tempdir().unwrap();
        let qrels = write(
            dir.path(),
            "q.txt",
            "a 0 d1 1\na 0 d2 2\na 0 d9 0\nb 0 x 1\nc 0 y 0\nz 0 w 1\n",
        );
        // query a: d3 and d1 tie at 5 (d1 first by id), d2 at 4: ranking d1 d3 d2
        let run = write(
            dir.path(),
            "r.trec",
            "a Q0 d3 1 5 t\na Q0 d1 2 5 t\na Q0 d2 3 4 t\nc Q0 y 1 1 t\nb Q0 q 1 1 t\nb Q0 x 2 0.5 t\n",
        );
        let q = Qrels::read(&qrels).unwrap();
        let e = both(&run, &q, false).unwrap();
        assert_eq!(e.query_ids, ["a", "b", "z"]);
        assert_eq!(
            (e.absent, e.without_relevant, e.ties_broken, e.records),
            (1, 1, 1, 6)
        );
        let col = |name: &str| &e.values[e.names.iter().position(|n| n == name).unwrap()];
        let some = |v: [f64; 3]| v.map(Some);
        assert_eq!(col("recall@1"), &some([0.5, 0.0, 0.0]));
        assert_eq!(col("recall@2"), &some([0.5, 1.0, 0.0]));
        assert_eq!(col("recall@5"), &some([1.0, 1.0, 0.0]));
        assert_eq!(col("mrr@10"), &some([1.0, 0.5, 0.0]));
        let ndcg = col("ndcg@10");
        // query a is graded: d1 (grade 1) at rank 0, d2 (grade 2) at rank 2; ideal 2, 1
        let want = (d(0) + 2.0 * d(2)) / (2.0 * d(0) + d(1));
        assert!((ndcg[0].unwrap() - want).abs() < 1e-15);
        assert!((ndcg[1].unwrap() - d(1)).abs() < 1e-15);
        assert_eq!(ndcg[2], Some(0.0));
    }

    #[test]
    fn run_errors_name_the_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let q = Qrels::read(&write(dir.path(), "q.txt", "a 0 d1 1\nb 0 d1 1\n")).unwrap();
        for (text, needles) in [
            (
                "a Q0 d1 1 1 t\nghost Q0 d1 1 1 t\n",
                &["line 2", "`qid`", "`ghost` is not a query", "q.txt"][..],
            ),
            (
                "a Q0 d1 1 1 t\na Q0 d2 2 1 t\na Q0 d1 3 0 t\n",
                &["line 3", "listed twice", "first at line 1"],
            ),
            ("a Q0 d1 1 1 t\na Q0 d2 2 nan t\n", &["line 2", "`score`"]),
            ("a Q0 d1 1 1\n", &["line 1", "6 columns"]),
        ] {
            let run = write(dir.path(), "r.trec", text);
            let e = both(&run, &q, false).unwrap_err();
            assert!(e.contains("r.trec"), "{e}");
            for n in needles {
                assert!(e.contains(n), "{text:?}: {e} lacks {n}");
            }
        }
        let run = write(
            dir.path(),
            "r.trec",
            "ghost Q0 d1 1 1 t\nghost Q0 d2 1 1 t\na Q0 d1 1 1 t\n",
        );
        let e = both(&run, &q, true).unwrap();
        assert_eq!((e.dropped_unknown_queries, e.records, e.absent), (2, 1, 1));
    }

    #[test]
    fn qrels_errors_name_the_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let e =
            Qrels::read(&write(dir.path(), "q.txt", "a 0 d 1\nb 0 e 1\na 0 d 0\n")).unwrap_err();
        let e = e.to_string();
        assert!(
            e.contains("q.txt") && e.contains("line 3") && e.contains("first at line 1"),
            "{e}"
        );
        let e = Qrels::read(&write(dir.path(), "q.txt", "\n"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("no judgements"), "{e}");
    }

    /// A random run of `queries` queries (some absent, some with ties, some documents
    /// relevant) and its qrels, with each query's records contiguous or shuffled.
    fn random_case(seed: u64, contiguous: bool) -> (String, String) {
        let mut rng = SplitMix64::new(seed);
        let queries = 1 + rng.below(12);
        let mut qrels = String::new();
        let mut lines = Vec::new();
        for q in 0..queries {
            let docs = rng.below(30);
            for d in 0..docs {
                // coarse scores make ties; ids of varying length exercise byte order
                let score = rng.below(6) as f64 / 2.0;
                lines.push(format!(
                    "q{q} Q0 doc{}{d} {d} {score} t",
                    "x".repeat(rng.below(3))
                ));
            }
            for d in 0..rng.below(5) {
                let rel = rng.below(5) as i64 - 1;
                let name = format!("doc{}{}", "x".repeat(rng.below(3)), rng.below(40) + d * 50);
                qrels.push_str(&format!("q{q} 0 {name} {rel}\n"));
            }
            // every query is judged; some have no relevant document at all
            qrels.push_str(&format!("q{q} 0 never {}\n", rng.below(2)));
        }
        qrels.push_str("lonely 0 x 1\n");
        if !contiguous {
            rng.shuffle(&mut lines);
        }
        (lines.join("\n"), qrels)
    }

    #[test]
    fn streaming_equals_the_grouped_reference_on_random_runs() {
        let dir = tempfile::tempdir().unwrap();
        let (mut fell_back, mut compared) = (0, 0);
        for seed in 0..300 {
            let (run, qrels) = random_case(seed, seed % 3 != 0);
            let run = write(dir.path(), "r.trec", &run);
            let qrels = write(dir.path(), "q.txt", &qrels);
            let q = match Qrels::read(&qrels) {
                Ok(q) => q,
                // a random qrels may judge one pair twice: the error is the point of another test
                Err(_) => continue,
            };
            // every measure, either tie order, levels 1 and 2
            let all = every_measure();
            let r = Rules {
                which: &all,
                level: 1 + (seed % 2) as i64,
                ties: if seed % 4 < 2 {
                    Ties::Id
                } else {
                    Ties::TrecEval
                },
            };
            let fast = evaluate(&run, RunFormat::Trec, &q, r, false);
            let slow = evaluate_grouped(&run, RunFormat::Trec, &q, r, false);
            match (fast, slow) {
                (Ok(f), Ok(s)) => {
                    assert_eq!(f, s, "seed {seed}");
                    compared += usize::from(seed % 3 != 0);
                }
                (f, s) => assert_eq!(
                    f.map_err(|e| e.to_string()),
                    s.map_err(|e| e.to_string()),
                    "seed {seed}"
                ),
            }
            fell_back += usize::from(seed % 3 == 0);
        }
        assert!(fell_back > 50 && compared > 100, "{fell_back} {compared}");
    }

    /// Judgements read by a caller give the qrels the file gives, in any judgement order; a
    /// repeated query or pair, or nothing judged, is left to the file's reading to report.
    #[test]
    fn qrels_from_queries_equal_the_files() {
        let dir = tempfile::tempdir().unwrap();
        let mut built = 0;
        for seed in 0..100 {
            let (_, text) = random_case(seed, true);
            let Ok(file) = Qrels::read(&write(dir.path(), "q.txt", &text)) else {
                continue;
            };
            let mut queries = file.queries.clone();
            for q in &mut queries {
                q.judged.reverse();
            }
            let got = Qrels::from_queries(file.path.clone(), queries.clone()).unwrap();
            assert_eq!((&got.queries, &got.index), (&file.queries, &file.index));
            built += 1;
            let mut twice = queries.clone();
            twice.push(twice[0].clone());
            assert!(Qrels::from_queries(file.path.clone(), twice).is_none());
            let mut pair = queries.clone();
            let first = pair[0].judged[0].clone();
            pair[0].judged.push((first.0, first.1 + 1));
            assert!(Qrels::from_queries(file.path.clone(), pair).is_none());
        }
        assert!(built > 50, "{built}");
        assert!(Qrels::from_queries(PathBuf::from("q"), Vec::new()).is_none());
    }

    /// A caller that reads and ranks each query itself (as the Python package does a dict
    /// run) gets from [`Scorer`] the values and counts the streaming reader gives.
    #[test]
    fn the_scorer_gives_the_streaming_readers_values() {
        let dir = tempfile::tempdir().unwrap();
        let mut scored = 0;
        for seed in 0..200 {
            let (run, qrels) = random_case(seed, true);
            let path = write(dir.path(), "r.trec", &run);
            let Ok(q) = Qrels::read(&write(dir.path(), "q.txt", &qrels)) else {
                continue;
            };
            let all = every_measure();
            let r = Rules {
                which: &all,
                level: 1 + (seed % 2) as i64,
                ties: [Ties::Id, Ties::TrecEval][(seed % 4 / 2) as usize],
            };
            let want = evaluate(&path, RunFormat::Trec, &q, r, false).unwrap();
            let mut scorer = Scorer::new(&q, r);
            let lines: Vec<Vec<&str>> = run
                .lines()
                .map(|l| l.split_whitespace().collect())
                .collect();
            let (mut order, mut judged_at) = (Vec::new(), Vec::new());
            for recs in lines.chunk_by(|a, b| a[0] == b[0]) {
                let at = scorer.query(recs[0][0]).unwrap();
                assert!(scorer.open(at));
                let doc = |i: u32| recs[i as usize][2];
                let score = |i: u32| recs[i as usize][4].parse::<f64>().unwrap();
                let ties = rank(&mut order, recs.len(), score, doc, r.ties);
                let judged = &q.queries()[at].judged;
                judged_at.clear();
                judged_at.extend((0..recs.len() as u32).map(|i| {
                    judged
                        .iter()
                        .position(|(d, _)| d == doc(i))
                        .map_or(u32::MAX, |j| j as u32)
                }));
                scorer.score(at, &order, &judged_at, ties);
                assert!(!scorer.open(at));
            }
            assert_eq!(scorer.finish(), want, "seed {seed}");
            scored += 1;
        }
        assert!(scored > 100, "{scored}");
    }

    #[test]
    fn trec_json_and_parquet_runs_give_identical_values() {
        let dir = tempfile::tempdir().unwrap();
        let (run, qrels) = random_case(7, true);
        let q = Qrels::read(&write(dir.path(), "q.txt", &qrels)).unwrap();
        let trec = write(dir.path(), "r.trec", &run);
        let mut json: BTreeMap<String, BTreeMap<String, f64>> = BTreeMap::new();
        let (mut qs, mut ds, mut ss) = (Vec::new(), Vec::new(), Vec::new());
        for line in run.lines() {
            let c: Vec<&str> = line.split(' ').collect();
            json.entry(c[0].into())
                .or_default()
                .insert(c[2].into(), c[4].parse().unwrap());
            qs.push(c[0].to_string());
            ds.push(c[2].to_string());
            ss.push(c[4].parse::<f64>().unwrap());
        }
        let json_path = write(dir.path(), "r.json", &serde_json::to_string(&json).unwrap());
        let pq_path = dir.path().join("r.parquet");
        hopbench_datasets::parquet_io::write(
            &pq_path,
            vec![
                ("query_id", hopbench_datasets::parquet_io::strings(&qs)),
                ("doc_id", hopbench_datasets::parquet_io::strings(&ds)),
                ("score", hopbench_datasets::parquet_io::f64s(&ss)),
            ],
        )
        .unwrap();
        let t = evaluate(&trec, RunFormat::Trec, &q, rules(&which()), false).unwrap();
        let j = evaluate(&json_path, RunFormat::Json, &q, rules(&which()), false).unwrap();
        let p = evaluate(&pq_path, RunFormat::Parquet, &q, rules(&which()), false).unwrap();
        assert!(t.ties_broken > 0);
        assert_eq!(t, j);
        assert_eq!(t, p);
    }
}
