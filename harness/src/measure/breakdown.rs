//! Per-group numbers of a cell: metrics broken down by the dataset's own labels (MTRAG's
//! `multi_turn`, ...) and by the intent a conversation leg classified, the confusion of that
//! intent against each label, and reference-resolution accuracy where the dataset knows what a
//! referring expression stands for (the derived dialogues' `referent` label).
//!
//! A query belongs to every group its value names: a multi-valued label (`Follow-up,Clarification`)
//! counts the query in each. Group means are over the queries where a metric is defined, with
//! the cell's percentile-bootstrap CI settings; a group of one query has no CI.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::measure::stats_config::StatsConfig;
use hopbench_legs::Note;

use crate::measure::metrics;
use crate::measure::query::QueryResult;

/// The annotation conversation legs report their classified intent under.
pub const INTENT_ANNOTATION: &str = Note::TurnIntent.name();
/// Group key of the classified intent.
pub const INTENT_KEY: &str = "intent";
/// The label holding what a derived dialogue's referring expression stands for.
pub const REFERENT_LABEL: &str = "referent";
/// The annotation holding what a leg resolved the turn's references to (` | `-separated).
pub const RESOLUTIONS_ANNOTATION: &str = Note::Resolutions.name();

/// Metrics of one group.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Group {
    /// Queries in the group.
    pub queries: usize,
    /// Mean of each metric over the group (`null`: undefined on all of them).
    pub metrics: BTreeMap<String, Option<f64>>,
    /// Percentile-bootstrap 95% CI of each mean.
    pub metrics_ci95: BTreeMap<String, [f64; 2]>,
}

/// Group key (`label:multi_turn`, `intent`) → group value → metrics.
pub type Breakdowns = BTreeMap<String, BTreeMap<String, Group>>;

/// Label key (`label:multi_turn`) → label value → classified intent → queries.
pub type Confusion = BTreeMap<String, BTreeMap<String, BTreeMap<String, usize>>>;

/// How well a leg resolved the derived dialogues' referring expressions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReferenceAccuracy {
    /// Turns with a known referent.
    pub turns: usize,
    /// Of those, turns where the leg resolved at least one reference.
    pub resolved: usize,
    /// Turns where every referent was among the resolutions (normalised text equality, or
    /// containment when a reference resolved to a whole turn; normalised = lower case,
    /// alphanumeric words, a leading "the", "a", "in", "under", ... dropped).
    pub correct: usize,
    /// `correct / turns`.
    pub accuracy: f64,
    /// Percentile-bootstrap 95% CI of the accuracy.
    pub ci95: Option<[f64; 2]>,
}

/// The group values of one query for `label_keys` (present labels only) and its intent.
pub fn groups_of(r: &QueryResult, label_keys: &[String]) -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    for k in label_keys {
        if let Some(v) = r.labels.get(k) {
            out.insert(format!("label:{k}"), split_values(v));
        }
    }
    if let Some(i) = r.annotations.get(INTENT_ANNOTATION) {
        out.insert(INTENT_KEY.to_string(), vec![i.clone()]);
    }
    out
}

fn split_values(v: &str) -> Vec<String> {
    let mut vals: Vec<String> = v
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    vals.sort();
    vals.dedup();
    if vals.is_empty() {
        vals.push(String::new());
    }
    vals
}

/// Metrics per group, for every group key any query has.
pub fn breakdowns(
    results: &[QueryResult],
    names: &[String],
    label_keys: &[String],
    ci: &StatsConfig,
) -> Breakdowns {
    let mut members: BTreeMap<String, BTreeMap<String, Vec<usize>>> = BTreeMap::new();
    for (i, r) in results.iter().enumerate() {
        for (key, values) in groups_of(r, label_keys) {
            for v in values {
                members
                    .entry(key.clone())
                    .or_default()
                    .entry(v)
                    .or_default()
                    .push(i);
            }
        }
    }
    members
        .into_iter()
        .map(|(key, groups)| {
            let groups = groups
                .into_iter()
                .map(|(value, idx)| {
                    let mut g = Group {
                        queries: idx.len(),
                        metrics: BTreeMap::new(),
                        metrics_ci95: BTreeMap::new(),
                    };
                    for name in names {
                        let per_query = || {
                            idx.iter()
                                .map(|&i| results[i].metrics.get(name).copied().flatten())
                        };
                        g.metrics
                            .insert(name.clone(), metrics::mean_opt(per_query()).mean);
                        let values: Vec<f64> = per_query().flatten().collect();
                        if values.len() > 1 {
                            if let Some(c) = ci.mean_ci(&values) {
                                g.metrics_ci95.insert(name.clone(), c);
                            }
                        }
                    }
                    (value, g)
                })
                .collect();
            (key, groups)
        })
        .collect()
}

/// Each label's values against the classified intent (empty when no query has an intent).
pub fn confusion(results: &[QueryResult], label_keys: &[String]) -> Confusion {
    let mut out: Confusion = BTreeMap::new();
    for r in results {
        let Some(intent) = r.annotations.get(INTENT_ANNOTATION) else {
            continue;
        };
        for k in label_keys {
            if let Some(v) = r.labels.get(k) {
                for value in split_values(v) {
                    *out.entry(format!("label:{k}"))
                        .or_default()
                        .entry(value)
                        .or_default()
                        .entry(intent.clone())
                        .or_default() += 1;
                }
            }
        }
    }
    out
}

/// Words a published answer may open with that are not part of the name ("in New Delhi",
/// "the Church of England", "under Trajan"): dropped from the front before comparing.
const LEADING_FUNCTION_WORDS: &[&str] = &["the", "a", "an", "in", "at", "on", "under", "of"];

/// Lower-case, alphanumerics only, single spaces, leading function words dropped.
fn normalise(s: &str) -> String {
    let lower = s.to_lowercase();
    let mut words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    while words.len() > 1 && LEADING_FUNCTION_WORDS.contains(&words[0]) {
        words.remove(0);
    }
    words.join(" ")
}

/// Whether `resolutions` (` | `-separated) cover every referent of `referents` (same format).
pub fn resolution_correct(referents: &str, resolutions: &str) -> bool {
    let got: Vec<String> = resolutions
        .split(" | ")
        .map(normalise)
        .filter(|s| !s.is_empty())
        .collect();
    let want: Vec<String> = referents
        .split(" | ")
        .map(normalise)
        .filter(|s| !s.is_empty())
        .collect();
    !want.is_empty()
        && want.iter().all(|w| {
            got.iter()
                .any(|g| g == w || format!(" {g} ").contains(&format!(" {w} ")))
        })
}

/// Reference-resolution accuracy over the queries with a `referent` label, for a leg that
/// reports its resolutions (`None` otherwise).
pub fn reference_accuracy(results: &[QueryResult], ci: &StatsConfig) -> Option<ReferenceAccuracy> {
    let scored: Vec<(bool, bool)> = results
        .iter()
        .filter_map(|r| {
            let want = r.labels.get(REFERENT_LABEL)?;
            let got = r.annotations.get(RESOLUTIONS_ANNOTATION)?;
            Some((!got.is_empty(), resolution_correct(want, got)))
        })
        .collect();
    if scored.is_empty() {
        return None;
    }
    let values: Vec<f64> = scored
        .iter()
        .map(|&(_, c)| f64::from(u8::from(c)))
        .collect();
    let correct = scored.iter().filter(|&&(_, c)| c).count();
    Some(ReferenceAccuracy {
        turns: scored.len(),
        resolved: scored.iter().filter(|&&(r, _)| r).count(),
        correct,
        accuracy: correct as f64 / scored.len() as f64,
        ci95: ci.mean_ci(&values),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(recall: f64, labels: &[(&str, &str)], notes: &[(&str, &str)]) -> QueryResult {
        QueryResult {
            id: "q".into(),
            metrics: [("recall@10".to_string(), Some(recall))].into(),
            tokens_selected: 0,
            tokens_at_10: 0,
            selected: 0,
            diagnostics: BTreeMap::new(),
            rescued_gold: None,
            ranked: vec![],
            retrieve_ms: 0.0,
            select_ms: 0.0,
            rerank_ms: None,
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            annotations: notes
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    fn cfg() -> StatsConfig {
        StatsConfig {
            resamples: 200,
            permutations: 100,
            seed: 7,
            ..StatsConfig::default()
        }
    }

    #[test]
    fn groups_by_label_and_intent_with_multi_valued_labels() {
        let rs = vec![
            result(
                1.0,
                &[("multi_turn", "Follow-up")],
                &[(INTENT_ANNOTATION, "DRILL_DOWN")],
            ),
            result(
                0.0,
                &[("multi_turn", "Follow-up,Clarification")],
                &[(INTENT_ANNOTATION, "EXPLORE")],
            ),
            result(0.5, &[("multi_turn", "N/A")], &[]),
            result(0.25, &[("other", "x")], &[]),
        ];
        let names = vec!["recall@10".to_string()];
        let b = breakdowns(&rs, &names, &["multi_turn".into()], &cfg());
        let mt = &b["label:multi_turn"];
        assert_eq!(mt["Follow-up"].queries, 2);
        assert_eq!(mt["Follow-up"].metrics["recall@10"], Some(0.5));
        assert_eq!(mt["Clarification"].queries, 1);
        assert_eq!(mt["Clarification"].metrics["recall@10"], Some(0.0));
        assert!(
            mt["Clarification"].metrics_ci95.is_empty(),
            "one query: no CI"
        );
        assert_eq!(mt["N/A"].metrics["recall@10"], Some(0.5));
        assert!(!b.contains_key("label:other"), "only the configured labels");
        assert_eq!(b["intent"]["DRILL_DOWN"].queries, 1);
        assert_eq!(b["intent"].len(), 2);
        let c = confusion(&rs, &["multi_turn".into()]);
        let m = &c["label:multi_turn"];
        assert_eq!(m["Follow-up"]["DRILL_DOWN"], 1);
        assert_eq!(m["Follow-up"]["EXPLORE"], 1);
        assert_eq!(m["Clarification"]["EXPLORE"], 1);
        assert!(!m.contains_key("N/A"), "no intent, not counted");
        assert!(confusion(&rs[2..], &["multi_turn".into()]).is_empty());
    }

    #[test]
    fn reference_resolution_scoring() {
        assert!(resolution_correct("Lord Byron", "lord byron"));
        assert!(resolution_correct("in New Delhi", "New Delhi"));
        assert!(resolution_correct(
            "the Church of England",
            "Church of England"
        ));
        assert!(!resolution_correct("the First World War", "World War"));
        assert!(
            resolution_correct("The", "the"),
            "a lone function word is kept"
        );
        assert!(resolution_correct("1815", "Ada was born in 1815."));
        assert!(!resolution_correct("181", "Ada was born in 1815."));
        assert!(resolution_correct("A | B", "b | a"));
        assert!(!resolution_correct("A | B", "a"));
        assert!(!resolution_correct("A", ""));
        assert!(!resolution_correct("", "a"));
        let rs = vec![
            result(
                0.0,
                &[(REFERENT_LABEL, "Paris")],
                &[(RESOLUTIONS_ANNOTATION, "Paris")],
            ),
            result(
                0.0,
                &[(REFERENT_LABEL, "Paris")],
                &[(RESOLUTIONS_ANNOTATION, "London")],
            ),
            result(
                0.0,
                &[(REFERENT_LABEL, "Paris")],
                &[(RESOLUTIONS_ANNOTATION, "")],
            ),
            result(0.0, &[], &[(RESOLUTIONS_ANNOTATION, "x")]),
            result(0.0, &[(REFERENT_LABEL, "Rome")], &[]),
        ];
        let a = reference_accuracy(&rs, &cfg()).unwrap();
        assert_eq!((a.turns, a.resolved, a.correct), (3, 2, 1));
        assert!((a.accuracy - 1.0 / 3.0).abs() < 1e-12);
        assert!(a.ci95.is_some());
        assert!(reference_accuracy(&rs[3..], &cfg()).is_none());
    }
}
