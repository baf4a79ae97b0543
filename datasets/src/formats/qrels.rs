//! BEIR qrels (`query-id<TAB>corpus-id<TAB>score`) and the one rule by which a format turns them
//! into gold: BEIR and MTRAG-UN both take their gold from qrels, and must agree on what a
//! judgement means.
//!
//! **The rule.** Judgements are applied file by file, line by line. A judgement naming a
//! question that does not exist is a field error (whatever its score: a typo in a query id must
//! not pass silently). A score `<= 0` is not gold; a positive score is the gold passage's grade
//! ([`grade_of`]: an integer, graded nDCG's gain, as trec_eval reads it). A relevant corpus id
//! with no passage is [`GoldNotInCorpus`](crate::Error::GoldNotInCorpus). Gold lists are
//! deduplicated in first-seen order, so a judgement repeated within or across files counts
//! once, at its highest grade ([`Question::add_gold`]). Only the questions that end up with
//! gold are kept, in their original order.

use std::collections::HashMap;
use std::path::Path;

use super::common::read_text;
use crate::error::{Error, Result};
use crate::model::Question;

/// One line of a BEIR qrels file.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Qrel {
    /// 1-based line number.
    pub line: usize,
    /// `query-id`.
    pub query: String,
    /// `corpus-id`.
    pub corpus: String,
    /// `score` (relevant when > 0).
    pub score: f64,
}

/// The grade a judgement's score gives: `None` for a score `<= 0` (not gold), the score itself
/// for a positive integer (`2` and `2.0` alike); `Err` says why any other score is refused: a
/// fractional relevance has no grade trec_eval would read (it reads an integer), so graded nDCG
/// over it would be a number no other tool prints.
pub(crate) fn grade_of(score: f64) -> std::result::Result<Option<u32>, String> {
    if score <= 0.0 {
        return Ok(None);
    }
    if score.fract() != 0.0 || score > u32::MAX as f64 {
        return Err(format!(
            "relevance {score} is not an integer grade (the grade is graded nDCG's gain, an \
             integer as trec_eval reads it)"
        ));
    }
    Ok(Some(score as u32))
}

/// Read a BEIR qrels TSV (`query-id<TAB>corpus-id<TAB>score`, header line optional, blank lines
/// skipped).
pub(crate) fn read_qrels(path: &Path) -> Result<Vec<Qrel>> {
    let text = read_text(path)?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let mut out = Vec::new();
    let mut first = true;
    for (i, line) in text.lines().enumerate() {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() {
            continue;
        }
        let cols: Vec<&str> = line.split('\t').collect();
        if std::mem::take(&mut first) && cols[0].trim().eq_ignore_ascii_case("query-id") {
            continue;
        }
        let what = format!("TSV line {}", i + 1);
        if cols.len() != 3 {
            return Err(Error::malformed(
                path,
                what,
                format!(
                    "expected 3 tab-separated columns (query-id, corpus-id, score), found {}",
                    cols.len()
                ),
            ));
        }
        let score: f64 = cols[2]
            .trim()
            .parse()
            .ok()
            .filter(|s: &f64| s.is_finite())
            .ok_or_else(|| {
                Error::malformed(
                    path,
                    what.clone(),
                    format!("score {:?} is not a number", cols[2]),
                )
            })?;
        let (query, corpus) = (cols[0].trim(), cols[1].trim());
        if query.is_empty() || corpus.is_empty() {
            return Err(Error::malformed(path, what, "empty query-id or corpus-id"));
        }
        out.push(Qrel {
            line: i + 1,
            query: query.to_string(),
            corpus: corpus.to_string(),
            score,
        });
    }
    Ok(out)
}

/// Questions collecting their gold from qrels (see the module docs for the rule).
pub(crate) struct Judgements<'a> {
    questions: Vec<Question>,
    by_id: HashMap<String, usize>,
    /// The file the questions were read from, and what it calls a question ("query", "task"):
    /// named when a judgement refers to no question.
    asked_in: &'a Path,
    noun: &'a str,
}

impl<'a> Judgements<'a> {
    /// Starts from `questions` (their gold is extended, not replaced). With repeated ids, the
    /// judgements go to the last question of that id; the readers reject repeated ids first.
    pub(crate) fn new(questions: Vec<Question>, asked_in: &'a Path, noun: &'a str) -> Self {
        let by_id = questions
            .iter()
            .enumerate()
            .map(|(i, q)| (q.id.clone(), i))
            .collect();
        Judgements {
            questions,
            by_id,
            asked_in,
            noun,
        }
    }

    /// Reads the qrels file `path` and applies it.
    pub(crate) fn read(&mut self, path: &Path, in_corpus: impl Fn(&str) -> bool) -> Result<()> {
        let qrels = read_qrels(path)?;
        self.apply(path, qrels, in_corpus)
    }

    /// Applies the judgements `qrels` of the file `path`, in order; stops at the first bad one.
    pub(crate) fn apply(
        &mut self,
        path: &Path,
        qrels: Vec<Qrel>,
        in_corpus: impl Fn(&str) -> bool,
    ) -> Result<()> {
        for qrel in qrels {
            let q = *self.by_id.get(&qrel.query).ok_or_else(|| {
                Error::field(
                    path,
                    format!("line {}", qrel.line),
                    "query-id",
                    format!(
                        "no {} {:?} in {}",
                        self.noun,
                        qrel.query,
                        self.asked_in.display()
                    ),
                )
            })?;
            let grade = grade_of(qrel.score)
                .map_err(|why| Error::field(path, format!("line {}", qrel.line), "score", why))?;
            let Some(grade) = grade else { continue };
            if !in_corpus(&qrel.corpus) {
                return Err(Error::GoldNotInCorpus {
                    path: path.to_path_buf(),
                    record: format!("line {} (query {:?})", qrel.line, qrel.query),
                    field: "corpus-id".to_string(),
                    gold: format!("{:?}", qrel.corpus),
                });
            }
            self.questions[q].add_gold(qrel.corpus, grade);
        }
        Ok(())
    }

    /// The questions with at least one gold passage, in their original order.
    pub(crate) fn finish(self) -> Vec<Question> {
        self.questions
            .into_iter()
            .filter(|q| !q.gold.is_empty())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::testutil::{assert_malformed_at, gold_missing, write};

    #[test]
    fn qrels_parse() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            &dir,
            "q.tsv",
            "query-id\tcorpus-id\tscore\nq1\td1\t1\n\nq1\td2\t0\n",
        );
        let q = read_qrels(&p).unwrap();
        assert_eq!(q.len(), 2);
        assert_eq!(
            q[1],
            Qrel {
                line: 4,
                query: "q1".into(),
                corpus: "d2".into(),
                score: 0.0
            }
        );
        let p = write(&dir, "r.tsv", "query-id\tcorpus-id\tscore\nq1\td1\n");
        let e = read_qrels(&p).unwrap_err();
        assert_malformed_at(&e, "TSV line 2");
        let p = write(&dir, "s.tsv", "q1\td1\tx\n");
        assert!(matches!(read_qrels(&p), Err(Error::Malformed { .. })));
    }

    fn qrel(line: usize, query: &str, corpus: &str, score: f64) -> Qrel {
        Qrel {
            line,
            query: query.into(),
            corpus: corpus.into(),
            score,
        }
    }

    fn questions(ids: &[&str]) -> Vec<Question> {
        ids.iter()
            .map(|id| Question::new(*id, format!("text of {id}"), Vec::new()))
            .collect()
    }

    fn gold(qs: &[Question]) -> Vec<(&str, Vec<&str>)> {
        qs.iter()
            .map(|q| (q.id.as_str(), q.gold.iter().map(String::as_str).collect()))
            .collect()
    }

    const CORPUS: [&str; 3] = ["d1", "d2", "d3"];

    fn in_corpus(id: &str) -> bool {
        CORPUS.contains(&id)
    }

    #[test]
    fn relevant_judgements_become_gold_once_in_first_seen_order() {
        let mut j = Judgements::new(
            questions(&["q1", "q2", "q3"]),
            Path::new("q.jsonl"),
            "query",
        );
        // q3 first, so q3's gold starts with d3; d1 repeated within the file and again in the
        // second file; a zero and a negative score are not gold; q2 ends with no gold
        j.apply(
            Path::new("a.tsv"),
            vec![
                qrel(2, "q3", "d3", 2.0),
                qrel(3, "q1", "d1", 1.0),
                qrel(4, "q3", "d1", 1.0),
                qrel(5, "q1", "d1", 1.0),
                qrel(6, "q2", "d2", 0.0),
                qrel(7, "q1", "d2", -1.0),
            ],
            in_corpus,
        )
        .unwrap();
        j.apply(
            Path::new("b.tsv"),
            vec![qrel(2, "q1", "d1", 3.0), qrel(3, "q1", "d3", 1.0)],
            in_corpus,
        )
        .unwrap();
        let qs = j.finish();
        assert_eq!(
            gold(&qs),
            vec![("q1", vec!["d1", "d3"]), ("q3", vec!["d3", "d1"])]
        );
        assert_eq!(qs[0].text, "text of q1");
        // a repeated judgement keeps its highest grade; grade 1 is not listed
        assert_eq!(qs[0].grade("d1"), Some(3));
        assert_eq!(qs[0].grade("d3"), Some(1));
        assert_eq!(qs[0].grade("d2"), None);
        assert_eq!(qs[1].grade("d3"), Some(2));
        assert_eq!(
            qs[0].grades.iter().collect::<Vec<_>>(),
            [(&"d1".to_string(), &3)]
        );
    }

    #[test]
    fn a_grade_is_a_positive_integer() {
        assert_eq!(grade_of(0.0), Ok(None));
        assert_eq!(grade_of(-1.0), Ok(None));
        assert_eq!(grade_of(-0.5), Ok(None));
        assert_eq!(grade_of(1.0), Ok(Some(1)));
        assert_eq!(grade_of(4.0), Ok(Some(4)));
        assert!(grade_of(0.5)
            .unwrap_err()
            .contains("0.5 is not an integer grade"));
        assert!(grade_of(1e12).is_err());
        let mut j = Judgements::new(questions(&["q1"]), Path::new("q.jsonl"), "query");
        let e = j
            .apply(
                Path::new("a.tsv"),
                vec![qrel(4, "q1", "d1", 1.5)],
                in_corpus,
            )
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "a.tsv: record line 4: field `score`: relevance 1.5 is not an integer grade (the \
             grade is graded nDCG's gain, an integer as trec_eval reads it)"
        );
    }

    #[test]
    fn existing_gold_is_extended_and_repeated_question_ids_go_to_the_last() {
        let mut qs = questions(&["q1", "q1"]);
        qs[0].gold.push("d2".into());
        let mut j = Judgements::new(qs, Path::new("q.jsonl"), "query");
        j.apply(
            Path::new("a.tsv"),
            vec![qrel(1, "q1", "d1", 1.0)],
            in_corpus,
        )
        .unwrap();
        assert_eq!(
            gold(&j.finish()),
            vec![("q1", vec!["d2"]), ("q1", vec!["d1"])]
        );
    }

    #[test]
    fn empty_inputs() {
        // no judgements: no question has gold, so none is kept
        let mut j = Judgements::new(questions(&["q1"]), Path::new("q.jsonl"), "query");
        j.apply(Path::new("a.tsv"), Vec::new(), in_corpus).unwrap();
        assert!(j.finish().is_empty());
        // no questions and no judgements
        let j = Judgements::new(Vec::new(), Path::new("q.jsonl"), "query");
        assert!(j.finish().is_empty());
        // no questions: any judgement names an unknown question, even one with score 0
        let mut j = Judgements::new(Vec::new(), Path::new("r.jsonl"), "task");
        let e = j
            .apply(
                Path::new("a.tsv"),
                vec![qrel(2, "t1", "d1", 0.0)],
                in_corpus,
            )
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "a.tsv: record line 2: field `query-id`: no task \"t1\" in r.jsonl"
        );
    }

    #[test]
    fn a_relevant_passage_outside_the_corpus_is_an_error_an_irrelevant_one_is_not() {
        let mut j = Judgements::new(questions(&["q1"]), Path::new("q.jsonl"), "query");
        j.apply(
            Path::new("a.tsv"),
            vec![qrel(2, "q1", "d9", 0.0)],
            in_corpus,
        )
        .unwrap();
        let e = j
            .apply(
                Path::new("b.tsv"),
                vec![qrel(3, "q1", "d9", 1.0)],
                in_corpus,
            )
            .unwrap_err();
        let (path, record, field, gold) = gold_missing(&e);
        assert_eq!(path, Path::new("b.tsv"));
        assert_eq!(record, "line 3 (query \"q1\")");
        assert_eq!(field, "corpus-id");
        assert_eq!(gold, "\"d9\"");
    }

    #[test]
    fn a_qrels_file_is_read_then_applied() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            &dir,
            "q.tsv",
            "query-id\tcorpus-id\tscore\nq1\td2\t1\nq1\td2\t1\n",
        );
        let mut j = Judgements::new(questions(&["q1"]), Path::new("q.jsonl"), "query");
        j.read(&p, in_corpus).unwrap();
        assert_eq!(gold(&j.finish()), vec![("q1", vec!["d2"])]);
    }
}
