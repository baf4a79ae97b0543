//! `run`: a system's own ranking, read from a run file (TREC, ranx/ir_measures JSON or parquet:
//! see `hopbench_datasets::runfile`), so any retriever's output is scored with the matrix's
//! metrics, CIs, breakdowns and paired comparisons, beside the built-in legs.
//!
//! Each query's ranking is the run's documents for it by score, descending, ties on ascending
//! corpus id (the one order of hopbench; ranked here on the run's own f64 scores, since a
//! candidate's f32 score would turn nearby scores into ties), or with `ties: trec_eval` on
//! descending id, as trec_eval orders a run. The rank column of a TREC run is
//! not read. What the run says is checked against the dataset, each error naming the file and
//! the line, JSON path or row: a query id the dataset lacks, a document id its corpus lacks
//! (with `unknown_ids: drop`, such records are dropped and counted instead), one (query,
//! document) pair twice. A query the run does not mention gets an empty ranking: the system
//! returned nothing, a real zero.
//!
//! Per query the leg reports `run_ties_broken` (adjacent equal scores the id rule ordered),
//! `run_query_absent` (1 when the run has no record for the query), and the records dropped
//! under `unknown_ids: drop`: `run_dropped_unknown_docs` (the query's), and
//! `run_dropped_unknown_queries` (the whole run's: the same number on every query, so the cell's
//! mean is that count).
//!
//! `file` is relative to the campaign file's directory; when the campaign loads, it is made
//! absolute and the file's blake3 is written into `file_blake3` ([`LegKind::pin_inputs`]), so
//! the cell key holds the run's content and an edited run recomputes the cell. A run that is
//! absent makes the cell `missing-inputs`, as a dataset's absent files do.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use hopbench_datasets::export::Export;
use hopbench_datasets::runfile::{self, At, RunFormat};
use serde::{Deserialize, Serialize};

use super::{Build, LegKind};
use crate::candidate::Candidate;
use crate::leg::{Leg, LegError, QueryInput, Ranked, Ranker, Retrieval};
use crate::params::{Check, Checked};

/// What an id the dataset does not have is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UnknownIds {
    /// An error naming the file and the record.
    #[default]
    Error,
    /// The record is dropped and counted in the diagnostics.
    Drop,
}

/// The order of a query's documents with equal scores.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunTies {
    /// Ascending document id: hopbench's one order.
    #[default]
    Id,
    /// Descending document id, as trec_eval sorts a run (score descending, then docno
    /// descending), so a run with ties scores as trec_eval scores it.
    TrecEval,
}

impl RunTies {
    /// Whether this is the default order (left out of the leg's parameters, so a run leg that
    /// does not name it keeps its cell key).
    pub fn is_default(&self) -> bool {
        *self == RunTies::Id
    }

    /// The order of two chunks of equal score (chunk indices follow ascending record id).
    fn order(self, a: u32, b: u32) -> std::cmp::Ordering {
        match self {
            RunTies::Id => a.cmp(&b),
            RunTies::TrecEval => b.cmp(&a),
        }
    }
}

/// `run`'s parameters.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Run {
    /// The run file (required); relative to the campaign file's directory.
    pub file: String,
    /// `trec`, `json` or `parquet` (default: from the extension: `.trec`, `.txt`, `.run`,
    /// `.json`, `.parquet`).
    pub format: Option<RunFormat>,
    /// A query id the dataset lacks or a document id its corpus lacks: `error` or `drop`.
    pub unknown_ids: UnknownIds,
    /// The dataset the run is of: on any other dataset the cell is `missing-inputs` (default:
    /// every dataset).
    pub dataset: Option<String>,
    /// The file's blake3, written in when the campaign loads; a value given must match the file.
    pub file_blake3: Option<String>,
    /// The order of equal scores: `id` (ascending document id) or `trec_eval` (descending).
    #[serde(skip_serializing_if = "RunTies::is_default")]
    pub ties: RunTies,
}

impl Run {
    fn resolved_format(&self, c: &Check<'_>) -> Result<RunFormat, LegError> {
        match self.format.or_else(|| RunFormat::from_extension(Path::new(&self.file))) {
            Some(f) => Ok(f),
            None => Err(LegError::Config {
                leg: c.0.into(),
                field: "format".into(),
                message: format!(
                    "cannot tell the format of `{}` from its extension: give `format: trec`, \
                     `json` or `parquet`",
                    self.file
                ),
            }),
        }
    }
}

impl Checked for Run {
    fn check(&self, c: &Check<'_>) -> Result<(), LegError> {
        if self.file.trim().is_empty() {
            c.fail("file", "required: the path of the run file")?;
        }
        self.resolved_format(c).map(|_| ())
    }
}

crate::leaf_params!(Run);

impl LegKind for Run {
    const NAME: &'static str = "run";
    const ABOUT: &'static str = "a system's ranking read from a run file (TREC, JSON, parquet)";
    const READS_VECTORS: bool = false;
    const EXAMPLE: &'static str = r#"{"file": "system.trec"}"#;

    /// The rankings are the run's for this export's own queries (by query index), so, like a
    /// conversation kind's, they cannot stand for another export's queries.
    fn reads_conversation(&self) -> bool {
        true
    }

    fn pin_inputs(&self, leg: &str, base: &Path) -> Result<Option<Self>, LegError> {
        let c = Check(leg);
        Checked::check(self, &c)?;
        let path = std::path::absolute(base.join(&self.file))
            .map_err(|e| config(leg, "file", format!("{}: {e}", self.file)))?;
        let Some(text) = path.to_str() else {
            return Err(config(leg, "file", format!("{}: not UTF-8", path.display())));
        };
        let mut pinned = Run {
            file: text.to_string(),
            format: Some(self.resolved_format(&c)?),
            ..self.clone()
        };
        let present = hopbench_datasets::presence::file_present(&path)
            .map_err(|e| config(leg, "file", e.to_string()))?;
        if present {
            let now = runfile::hash_file(&path).map_err(|e| config(leg, "file", e.to_string()))?;
            if let Some(given) = self.file_blake3.as_ref().filter(|g| **g != now) {
                return Err(config(
                    leg,
                    "file_blake3",
                    format!(
                        "{} hashes to {now}, not {given}: the run changed since these settings \
                         were written (drop `file_blake3` to take the file as it is)",
                        path.display()
                    ),
                ));
            }
            pinned.file_blake3 = Some(now);
        }
        Ok(Some(pinned))
    }

    fn build(&self, b: &Build<'_>) -> Result<Box<dyn Leg>, LegError> {
        let dataset = &b.export.manifest.dataset;
        if let Some(d) = self.dataset.as_ref().filter(|d| *d != dataset) {
            return Err(LegError::MissingInputs(format!(
                "the run {} is of dataset `{d}`",
                self.file
            )));
        }
        let path = Path::new(&self.file);
        let present = hopbench_datasets::presence::file_present(path)
            .map_err(|e| config(b.leg, "file", e.to_string()))?;
        if !present {
            return Err(LegError::MissingInputs(format!(
                "run file {} is absent",
                path.display()
            )));
        }
        let fail = |e: hopbench_datasets::Error| config(b.leg, "file", e.to_string());
        if let Some(pinned) = &self.file_blake3 {
            if runfile::hash_file(path).map_err(fail)? != *pinned {
                return Err(config(
                    b.leg,
                    "file",
                    format!("{} changed after the campaign was loaded", path.display()),
                ));
            }
        }
        let format = self.resolved_format(&Check(b.leg))?;
        let rankings =
            Rankings::read(b.export, path, format, self.unknown_ids, self.ties).map_err(fail)?;
        Ok(Ranked::leg(b.export, rankings))
    }
}

fn config(leg: &str, field: &str, message: String) -> LegError {
    LegError::Config {
        leg: leg.into(),
        field: field.into(),
        message,
    }
}

/// Every query's ranking and diagnostics, by export query index.
struct Rankings {
    per_query: Vec<(Vec<Candidate>, BTreeMap<String, f64>)>,
}

/// One record kept for a query: score, chunk, where it was, its position in the file.
type Kept = (f64, u32, At, usize);

impl Rankings {
    fn read(
        export: &Export,
        path: &Path,
        format: RunFormat,
        unknown: UnknownIds,
        ties: RunTies,
    ) -> hopbench_datasets::Result<Rankings> {
        use hopbench_datasets::Error;
        let dataset = &export.manifest.dataset;
        let queries: HashMap<&str, usize> = export
            .queries
            .iter()
            .enumerate()
            .map(|(i, q)| (q.id.as_str(), i))
            .collect();
        let chunks: HashMap<&str, u32> = export
            .chunks
            .iter()
            .enumerate()
            .map(|(i, c)| (c.id.as_str(), i as u32))
            .collect();
        let n = export.queries.len();
        let (qfield, dfield) = format.id_fields();
        let mut lists: Vec<Vec<Kept>> = vec![Vec::new(); n];
        let mut present = vec![false; n];
        let mut dropped_docs = vec![0usize; n];
        let mut dropped_queries = 0usize;
        let mut seq = 0usize;
        runfile::read_run(path, format, &mut |r| {
            seq += 1;
            let Some(q) = find(&queries, r.query, format) else {
                if unknown == UnknownIds::Drop {
                    dropped_queries += 1;
                    return Ok(());
                }
                return Err(Error::field(
                    path,
                    r.location(),
                    qfield,
                    format!("`{}` is not a query of dataset `{dataset}`", r.query),
                ));
            };
            present[q] = true;
            let Some(c) = find(&chunks, r.doc, format) else {
                if unknown == UnknownIds::Drop {
                    dropped_docs[q] += 1;
                    return Ok(());
                }
                return Err(Error::field(
                    path,
                    r.location(),
                    dfield,
                    format!("`{}` is not in the corpus of dataset `{dataset}`", r.doc),
                ));
            };
            lists[q].push((r.score, c, r.at, seq));
            Ok(())
        })?;
        let mut per_query = Vec::with_capacity(n);
        for (q, mut list) in lists.into_iter().enumerate() {
            list.sort_unstable_by_key(|k| (k.1, k.3));
            if let Some(w) = list.windows(2).find(|w| w[0].1 == w[1].1) {
                let (query, doc) = (&export.queries[q].id, &export.chunks[w[1].1 as usize].id);
                return Err(Error::field(
                    path,
                    runfile::location(w[1].2, query, doc),
                    dfield,
                    format!(
                        "`{doc}` is listed twice for query `{query}` (first at {})",
                        runfile::location(w[0].2, query, doc)
                    ),
                ));
            }
            list.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then(ties.order(a.1, b.1)));
            let ties = list.windows(2).filter(|w| w[0].0 == w[1].0).count();
            let diagnostics = BTreeMap::from([
                ("run_ties_broken".to_string(), ties as f64),
                ("run_query_absent".to_string(), f64::from(!present[q])),
                ("run_dropped_unknown_docs".to_string(), dropped_docs[q] as f64),
                ("run_dropped_unknown_queries".to_string(), dropped_queries as f64),
            ]);
            let ranked = list
                .iter()
                .map(|&(score, chunk, _, _)| Candidate::new(chunk, score as f32))
                .collect();
            per_query.push((ranked, diagnostics));
        }
        Ok(Rankings { per_query })
    }
}

/// The value of `id` in `map`. A TREC id hopbench wrote may be percent-encoded: the id as
/// written is looked up first, then its decoding.
fn find<V: Copy>(map: &HashMap<&str, V>, id: &str, format: RunFormat) -> Option<V> {
    match map.get(id) {
        Some(&v) => Some(v),
        None if format == RunFormat::Trec => {
            runfile::decode_id(id).and_then(|d| map.get(d.as_str()).copied())
        }
        None => None,
    }
}

impl Ranker for Rankings {
    fn retrieve(&self, q: &QueryInput<'_>) -> Result<Retrieval, LegError> {
        let (ranked, diagnostics) = &self.per_query[q.index];
        Ok(Retrieval {
            ranked: ranked.clone(),
            diagnostics: diagnostics.clone(),
            ..Retrieval::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::LegSpec;

    fn spec(json: &str) -> LegSpec {
        serde_json::from_str(json).unwrap()
    }

    fn build(file: &Path, extra: &str) -> Result<Box<dyn Leg>, LegError> {
        let export = crate::rescue::fixtures::synthetic();
        spec(&format!(
            r#"{{"kind": "run", "file": {}{extra}}}"#,
            serde_json::to_string(file.to_str().unwrap()).unwrap()
        ))
        .build("mine", export)
    }

    fn ranking(leg: &dyn Leg, q: usize) -> (Vec<u32>, BTreeMap<String, f64>) {
        let export = leg.export();
        let r = leg.retrieve(&QueryInput::from_export(export, q)).unwrap();
        (r.ranked.iter().map(|c| c.chunk).collect(), r.diagnostics)
    }

    #[test]
    fn ranks_by_score_then_ascending_id_and_counts_ties() {
        let export = crate::rescue::fixtures::synthetic();
        let (q0, q1) = (&export.queries[0].id, &export.queries[1].id);
        let id = |c: usize| export.chunks[c].id.clone();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.trec");
        // chunk 7 and 3 tie at 2.0, and 9 and 5 at 1.0, listed against id order
        let text = format!(
            "{q0} Q0 {} 1 2.0 t\n{q0} Q0 {} 2 2.0 t\n{q0} Q0 {} 3 5 t\n{q0} Q0 {} 4 1 t\n\
             {q0} Q0 {} 5 1.0 t\n{q1} Q0 {} 1 -0 t\n{q1} Q0 {} 2 0 t\n",
            id(7),
            id(3),
            id(4),
            id(9),
            id(5),
            id(2),
            id(1)
        );
        std::fs::write(&path, text).unwrap();
        let leg = build(&path, "").unwrap();
        let (r0, d0) = ranking(leg.as_ref(), 0);
        assert_eq!(r0, [4, 3, 7, 5, 9]);
        assert_eq!(d0["run_ties_broken"], 2.0);
        assert_eq!(d0["run_query_absent"], 0.0);
        // -0 and 0 are one tie
        let (r1, d1) = ranking(leg.as_ref(), 1);
        assert_eq!((r1, d1["run_ties_broken"]), (vec![1, 2], 1.0));
        // a query the run does not mention: empty, and counted
        let (r2, d2) = ranking(leg.as_ref(), 2);
        assert!(r2.is_empty());
        assert_eq!(d2["run_query_absent"], 1.0);
    }

    #[test]
    fn trec_eval_ties_order_equal_scores_on_descending_id_and_only_then_are_written() {
        let export = crate::rescue::fixtures::synthetic();
        let q0 = &export.queries[0].id;
        let id = |c: usize| export.chunks[c].id.clone();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.trec");
        // 3, 7 and 8 tie at 2.0 (listed out of order), 4 above them, 5 and 9 tie below
        let text = format!(
            "{q0} Q0 {} 1 2.0 t\n{q0} Q0 {} 2 5 t\n{q0} Q0 {} 3 2 t\n{q0} Q0 {} 4 2.0 t\n\
             {q0} Q0 {} 5 1 t\n{q0} Q0 {} 6 1 t\n",
            id(7),
            id(4),
            id(3),
            id(8),
            id(5),
            id(9),
        );
        std::fs::write(&path, text).unwrap();
        let by_id = build(&path, "").unwrap();
        assert_eq!(ranking(by_id.as_ref(), 0).0, [4, 3, 7, 8, 5, 9]);
        let trec = build(&path, r#", "ties": "trec_eval""#).unwrap();
        let (r, d) = ranking(trec.as_ref(), 0);
        assert_eq!(r, [4, 8, 7, 3, 9, 5]);
        assert_eq!(d["run_ties_broken"], 3.0);
        // the default order is not written, so a run leg that does not name it keeps its key
        let plain = spec(r#"{"kind": "run", "file": "r.trec"}"#);
        assert!(!plain.params().contains_key("ties"), "{:?}", plain.params());
        let named = spec(r#"{"kind": "run", "file": "r.trec", "ties": "trec_eval"}"#);
        assert_eq!(named.params()["ties"], "trec_eval");
        assert!(spec(r#"{"kind": "run", "file": "r.trec", "ties": "id"}"#)
            .params()
            .get("ties")
            .is_none());
        let bad = serde_json::from_str::<LegSpec>(r#"{"kind": "run", "file": "r", "ties": "x"}"#);
        assert!(bad.is_err());
    }

    #[test]
    fn unknown_ids_are_errors_or_dropped_and_counted() {
        let export = crate::rescue::fixtures::synthetic();
        let q0 = &export.queries[0].id;
        let c0 = &export.chunks[0].id;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.json");
        let text = format!(
            r#"{{"{q0}": {{"{c0}": 1, "nowhere": 2}}, "ghost": {{"{c0}": 1, "x": 1}}}}"#
        );
        std::fs::write(&path, text).unwrap();
        let message = |e: LegError| match e {
            LegError::Config { leg, field, message } => {
                assert_eq!((leg.as_str(), field.as_str()), ("mine", "file"));
                message
            }
            other => panic!("{other:?}"),
        };
        let e = message(build(&path, "").err().unwrap());
        assert!(
            e.contains("r.json")
                && e.contains(&format!(r#"$["{q0}"]["nowhere"]"#))
                && e.contains("`docid`")
                && e.contains("not in the corpus of dataset `test`"),
            "{e}"
        );
        let leg = build(&path, r#", "unknown_ids": "drop""#).unwrap();
        let (r0, d0) = ranking(leg.as_ref(), 0);
        assert_eq!(r0, [0]);
        assert_eq!(d0["run_dropped_unknown_docs"], 1.0);
        assert_eq!(d0["run_dropped_unknown_queries"], 2.0);
        assert_eq!(ranking(leg.as_ref(), 1).1["run_dropped_unknown_docs"], 0.0);
        std::fs::write(&path, format!(r#"{{"ghost": {{"{c0}": 1}}}}"#)).unwrap();
        let e = message(build(&path, "").err().unwrap());
        assert!(e.contains("`qid`") && e.contains("`ghost` is not a query"), "{e}");
    }

    #[test]
    fn duplicates_name_both_places_and_percent_encoded_ids_resolve() {
        let export = crate::rescue::fixtures::synthetic();
        let q0 = &export.queries[0].id;
        let c0 = &export.chunks[0].id;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.run");
        std::fs::write(
            &path,
            format!("{q0} Q0 {c0} 1 3 t\n{q0} Q0 x{c0} 2 2 t\n{q0} Q0 {c0} 3 1 t\n"),
        )
        .unwrap();
        let e = format!("{}", build(&path, r#", "unknown_ids": "drop""#).err().unwrap());
        assert!(
            e.contains("line 3") && e.contains("listed twice") && e.contains("first at line 1"),
            "{e}"
        );
        // an encoded id is found through its decoding ('%41' is 'A')
        let encoded: String = c0.chars().map(|c| format!("%{:02X}", c as u32)).collect();
        std::fs::write(&path, format!("{q0} Q0 {encoded} 1 3 t\n")).unwrap();
        assert_eq!(ranking(build(&path, "").unwrap().as_ref(), 0).0, [0]);
    }

    #[test]
    fn absent_files_other_datasets_and_bad_parameters() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("none.trec");
        assert!(matches!(build(&path, ""), Err(LegError::MissingInputs(m)) if m.contains("absent")));
        std::fs::write(&path, "").unwrap();
        assert!(matches!(
            build(&path, r#", "dataset": "other""#),
            Err(LegError::MissingInputs(m)) if m.contains("dataset `other`")
        ));
        assert!(build(&path, r#", "dataset": "test""#).is_ok());
        let field = |json: &str| match spec(json).validate("l") {
            Err(LegError::Config { field, .. }) => field,
            other => panic!("{json}: {other:?}"),
        };
        assert_eq!(field(r#"{"kind": "run"}"#), "file");
        assert_eq!(field(r#"{"kind": "run", "file": "a.tsv"}"#), "format");
        spec(r#"{"kind": "run", "file": "a.tsv", "format": "trec"}"#)
            .validate("l")
            .unwrap();
        assert!(serde_json::from_str::<LegSpec>(r#"{"kind": "run", "file": "a", "fmt": "x"}"#)
            .is_err());
        assert!(serde_json::from_str::<LegSpec>(
            r#"{"kind": "run", "file": "a", "unknown_ids": "ignore"}"#
        )
        .is_err());
    }

    #[test]
    fn pinning_makes_the_path_absolute_and_hashes_the_content() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.trec"), "one").unwrap();
        let s = spec(r#"{"kind": "run", "file": "a.trec"}"#);
        let pinned = s.pin_inputs("l", dir.path()).unwrap();
        let p = pinned.params();
        let file = dir.path().join("a.trec");
        assert_eq!(p["file"], file.to_str().unwrap());
        assert_eq!(p["format"], "trec");
        let hash = p["file_blake3"].as_str().unwrap().to_string();
        assert_eq!(hash, runfile::hash_file(&file).unwrap());
        // pinning is idempotent, and a changed file changes the pin
        assert_eq!(pinned.pin_inputs("l", Path::new("/elsewhere")).unwrap(), pinned);
        std::fs::write(&file, "two").unwrap();
        assert_ne!(s.pin_inputs("l", dir.path()).unwrap(), pinned);
        // a pin that no longer matches is an error naming the field
        match pinned.pin_inputs("l", dir.path()) {
            Err(LegError::Config { field, message, .. }) => {
                assert_eq!(field, "file_blake3");
                assert!(message.contains("changed since"), "{message}");
            }
            other => panic!("{other:?}"),
        }
        // an absent file is pinned without a hash (the cell is then missing-inputs)
        let absent = spec(r#"{"kind": "run", "file": "b.json"}"#)
            .pin_inputs("l", dir.path())
            .unwrap();
        assert_eq!(absent.params()["file_blake3"], serde_json::Value::Null);
        // other kinds are left alone
        let bm25 = spec(r#"{"kind": "bm25"}"#);
        assert_eq!(bm25.pin_inputs("b", dir.path()).unwrap(), bm25);
    }
}
