//! The gate (the seed's §5.5): decides per query whether the graph lanes run.
//!
//! `graph_mode: auto` collects reasons to fire, in this order:
//!
//! * `relation-cue` — a lowercased query word is in the relation-cue set ([`DEFAULT_RELATION_CUES`]
//!   unless configured: interrogatives and relation words such as `spouse`, `born`, `founded`,
//!   `director`). A word is a maximal run of alphanumeric characters, so `who's` is `who`, `s`.
//! * `entity-heavy` — the query names at least `entity_heavy_seeds` KG entities (query seeds).
//! * `low-agreement` — the Jaccard overlap of the dense and BM25 top-`agreement_k` chunk sets is
//!   below `low_agreement`. It is 0.0 when either list is empty: a route that returned nothing
//!   agrees with nobody, which is a low-confidence signal, not a perfect one.
//! * `low-confidence` — the top-1 dense cosine is below `low_confidence` (0.0 when the dense list
//!   is empty). hopbench's choice for the seed's unspecified confidence: an absolute "how well
//!   does the best chunk match at all" rather than a head margin, because the fused base's margin
//!   is a rank artefact (RRF scores near the head differ by construction, whatever the query).
//!   The cosine scale is the embedding model's; the default 0.5 suits all-MiniLM-L6-v2, where a
//!   passage answering the query typically scores above it.
//!
//! A navigational query — at most `navigational_max_words` words, no relation cue, and agreement
//! at least `high_agreement` ("acme msa 2024 pdf", where both retrievers agree) — is vetoed:
//! `vetoed_by: "navigational"` when the veto overrode at least one reason. The gate fires when a
//! reason remains and nothing vetoed it.
//!
//! `off` and `force` keep the policy's opinion: the reasons are always computed and recorded.
//! `off` never fires and records `vetoed_by: "mode-off"`; `force` always fires and appends the
//! reason `mode-force`. A mode that threw the opinion away could not tell a gate that is too
//! tight from a lane that is too weak.

use serde::{Deserialize, Serialize};

use crate::candidate::Candidate;
use crate::leg::LegError;
use crate::params::{Check, Checked};

/// The default relation cues: interrogatives, kinship, life events, creation, affiliation,
/// location and comparison words (lowercase, single words).
#[rustfmt::skip]
pub const DEFAULT_RELATION_CUES: &[&str] = &[
    // interrogatives
    "who", "whom", "whose", "where", "when", "which", "what", "how", "why",
    // kinship
    "spouse", "wife", "husband", "married", "father", "mother", "parent", "parents", "son",
    "daughter", "child", "children", "sibling", "brother", "sister", "grandfather",
    "grandmother", "uncle", "aunt",
    // life events
    "born", "birth", "birthplace", "died", "death", "buried",
    // creation
    "founded", "founder", "founders", "director", "directed", "author", "wrote", "written",
    "composer", "composed", "producer", "produced", "creator", "created", "performer",
    "performed", "publisher", "published", "designer", "designed", "inventor", "invented",
    // affiliation
    "member", "employer", "worked", "studied", "educated", "attended", "university", "owner",
    "owned", "leader", "led", "president", "ceo", "chairman", "coach", "team",
    // location
    "located", "location", "headquarters", "headquartered", "based", "capital", "country",
    "nationality", "citizen", "campus",
    // comparison
    "older", "younger", "earlier", "later", "first", "same", "both",
];

/// Whether the graph lanes may run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GraphMode {
    /// The policy decides per query.
    #[default]
    Auto,
    /// Never fire (the policy's reasons are still recorded).
    Off,
    /// Always fire (the policy's reasons are still recorded, plus `mode-force`).
    Force,
}

/// The auto policy's reason names, in the order they are checked.
pub const REASONS: [&str; 4] = [
    "relation-cue",
    "entity-heavy",
    "low-agreement",
    "low-confidence",
];

/// Gate parameters (defaults: the seed's operating point; `low_confidence` is hopbench's).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GateParams {
    /// `auto`, `off` or `force`.
    pub graph_mode: GraphMode,
    /// Relation cue words (matched against lowercased query words).
    pub relation_cues: Vec<String>,
    /// Query seeds at which a query is entity-heavy.
    pub entity_heavy_seeds: usize,
    /// Head size compared by the agreement signal.
    pub agreement_k: usize,
    /// Agreement below this is a reason to fire.
    pub low_agreement: f64,
    /// Agreement at or above this (with a short, cue-free query) is navigational.
    pub high_agreement: f64,
    /// Top-1 dense cosine below this is a reason to fire.
    pub low_confidence: f64,
    /// Queries of at most this many words may be navigational.
    pub navigational_max_words: usize,
}

impl Default for GateParams {
    fn default() -> Self {
        GateParams {
            graph_mode: GraphMode::Auto,
            relation_cues: DEFAULT_RELATION_CUES
                .iter()
                .map(|s| s.to_string())
                .collect(),
            entity_heavy_seeds: 2,
            agreement_k: 10,
            low_agreement: 0.3,
            high_agreement: 0.7,
            low_confidence: 0.5,
            navigational_max_words: 3,
        }
    }
}

impl Checked for GateParams {
    fn check(&self, c: &Check<'_>) -> Result<(), LegError> {
        for (i, cue) in self.relation_cues.iter().enumerate() {
            if cue.is_empty() || cue.chars().any(|ch| !ch.is_alphanumeric()) {
                return c.fail(
                    "relation_cues",
                    &format!("entry {i} ({cue:?}) must be one alphanumeric word"),
                );
            }
        }
        c.at_least("entity_heavy_seeds", self.entity_heavy_seeds, 1)?;
        c.at_least("agreement_k", self.agreement_k, 1)?;
        c.unit("low_agreement", self.low_agreement)?;
        c.unit("high_agreement", self.high_agreement)?;
        if self.low_agreement > self.high_agreement {
            return c.fail(
                "low_agreement",
                &format!(
                    "must not be above `high_agreement` ({}), got {}",
                    self.high_agreement, self.low_agreement
                ),
            );
        }
        c.range("low_confidence", self.low_confidence, -1.0, 1.0)
    }
}

crate::leaf_params!(GateParams);

/// One query's gate decision, as recorded on the retrieval.
#[derive(Debug, Clone, PartialEq)]
pub struct GateDecision {
    /// Whether the graph lanes ran.
    pub fire: bool,
    /// The policy's reasons (in [`REASONS`] order), plus `mode-force` when forced.
    pub reasons: Vec<String>,
    /// What stopped a fire: `navigational` (auto) or `mode-off`.
    pub vetoed_by: Option<String>,
    /// Jaccard of the dense and BM25 top-`agreement_k` chunk sets.
    pub agreement: f64,
    /// Top-1 dense cosine (0.0 without dense candidates).
    pub confidence: f64,
}

impl GateDecision {
    /// Whether the policy gave reason `name`.
    pub fn has_reason(&self, name: &str) -> bool {
        self.reasons.iter().any(|r| r == name)
    }
}

/// Jaccard overlap of the top-`k` chunk sets of `a` and `b`; 0.0 when either is empty.
pub fn agreement(a: &[Candidate], b: &[Candidate], k: usize) -> f64 {
    let mut x: Vec<u32> = a.iter().take(k).map(|c| c.chunk).collect();
    let mut y: Vec<u32> = b.iter().take(k).map(|c| c.chunk).collect();
    if x.is_empty() || y.is_empty() {
        return 0.0;
    }
    x.sort_unstable();
    x.dedup();
    y.sort_unstable();
    y.dedup();
    let (mut i, mut j, mut both) = (0, 0, 0usize);
    while i < x.len() && j < y.len() {
        match x[i].cmp(&y[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                both += 1;
                i += 1;
                j += 1;
            }
        }
    }
    both as f64 / (x.len() + y.len() - both) as f64
}

/// The confidence signal: the top-1 dense cosine, 0.0 for an empty list.
pub fn confidence(dense: &[Candidate]) -> f64 {
    dense.first().map_or(0.0, |c| c.score as f64)
}

/// A configured gate.
#[derive(Debug, Clone)]
pub struct Gate {
    params: GateParams,
    /// Lowercased, sorted, unique.
    cues: Vec<String>,
}

impl Gate {
    /// A gate with `params` (cues are lowercased).
    pub fn new(params: &GateParams) -> Gate {
        let mut cues: Vec<String> = params
            .relation_cues
            .iter()
            .map(|c| c.to_lowercase())
            .collect();
        cues.sort_unstable();
        cues.dedup();
        Gate {
            params: params.clone(),
            cues,
        }
    }

    /// The mode.
    pub fn mode(&self) -> GraphMode {
        self.params.graph_mode
    }

    /// Decides for a query from its text, its number of query seeds and the two first-stage
    /// lists.
    pub fn decide(
        &self,
        query: &str,
        query_seeds: usize,
        dense: &[Candidate],
        bm25: &[Candidate],
    ) -> GateDecision {
        let p = &self.params;
        let lowered = query.to_lowercase();
        let mut words = 0usize;
        let mut cue = false;
        for w in lowered
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
        {
            words += 1;
            if !cue && self.cues.binary_search_by(|c| c.as_str().cmp(w)).is_ok() {
                cue = true;
            }
        }
        let agreement = agreement(dense, bm25, p.agreement_k);
        let confidence = confidence(dense);
        let mut reasons: Vec<String> = Vec::new();
        if cue {
            reasons.push(REASONS[0].into());
        }
        if query_seeds >= p.entity_heavy_seeds {
            reasons.push(REASONS[1].into());
        }
        if agreement < p.low_agreement {
            reasons.push(REASONS[2].into());
        }
        if confidence < p.low_confidence {
            reasons.push(REASONS[3].into());
        }
        let navigational =
            words <= p.navigational_max_words && !cue && agreement >= p.high_agreement;
        let (fire, vetoed_by) = match p.graph_mode {
            GraphMode::Auto => {
                if reasons.is_empty() {
                    (false, None)
                } else if navigational {
                    (false, Some("navigational".to_string()))
                } else {
                    (true, None)
                }
            }
            GraphMode::Off => (false, Some("mode-off".to_string())),
            GraphMode::Force => {
                reasons.push("mode-force".into());
                (true, None)
            }
        };
        GateDecision {
            fire,
            reasons,
            vetoed_by,
            agreement,
            confidence,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(ids: &[u32], top: f32) -> Vec<Candidate> {
        ids.iter()
            .enumerate()
            .map(|(i, &c)| Candidate::new(c, top - i as f32 * 0.01))
            .collect()
    }

    fn gate(mode: GraphMode) -> Gate {
        Gate::new(&GateParams {
            graph_mode: mode,
            ..Default::default()
        })
    }

    #[test]
    fn jaccard_hand_computed_and_zero_on_an_empty_list() {
        let a = list(&[1, 2, 3, 4], 0.9);
        let b = list(&[3, 4, 5, 6], 9.0);
        assert_eq!(agreement(&a, &b, 10), 2.0 / 6.0);
        assert_eq!(agreement(&a, &b, 2), 0.0);
        assert_eq!(agreement(&a, &a, 10), 1.0);
        assert_eq!(agreement(&a, &[], 10), 0.0);
        assert_eq!(agreement(&[], &[], 10), 0.0);
        assert_eq!(confidence(&[]), 0.0);
    }

    #[test]
    fn each_reason_alone() {
        let g = gate(GraphMode::Auto);
        let same = list(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 0.9); // agreement 1, confidence 0.9
                                                                // none: a long cue-free query with agreement and confidence
        let d = g.decide("alpha beta gamma delta epsilon", 0, &same, &same);
        assert_eq!((d.fire, d.reasons.len(), d.vetoed_by), (false, 0, None));
        let d = g.decide("Whose alpha beta gamma", 0, &same, &same);
        assert_eq!(d.reasons, vec!["relation-cue"]);
        assert!(d.fire);
        let d = g.decide("alpha beta gamma delta", 2, &same, &same);
        assert_eq!(d.reasons, vec!["entity-heavy"]);
        let other = list(&[11, 12, 13, 14, 15, 16, 17, 18, 19, 20], 9.0);
        let d = g.decide("alpha beta gamma delta", 1, &same, &other);
        assert_eq!(d.reasons, vec!["low-agreement"]);
        assert_eq!(d.agreement, 0.0);
        let weak = list(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 0.25);
        let d = g.decide("alpha beta gamma delta", 0, &weak, &same);
        assert_eq!(d.reasons, vec!["low-confidence"]);
        assert_eq!(d.confidence, 0.25);
        // all four, in order; an empty bm25 list means agreement 0.0
        let d = g.decide("who directed alpha", 3, &weak, &[]);
        assert_eq!(
            d.reasons,
            vec![
                "relation-cue",
                "entity-heavy",
                "low-agreement",
                "low-confidence"
            ]
        );
    }

    #[test]
    fn navigational_veto() {
        let g = gate(GraphMode::Auto);
        let same = list(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 0.9);
        // "acme msa 2024": 3 words, no cue, full agreement; entity-heavy would fire
        let d = g.decide("acme msa 2024", 2, &same, &same);
        assert_eq!(d.reasons, vec!["entity-heavy"]);
        assert_eq!(
            (d.fire, d.vetoed_by.as_deref()),
            (false, Some("navigational"))
        );
        // a cue or a fourth word lifts the veto
        assert!(g.decide("who is acme", 2, &same, &same).fire);
        assert!(g.decide("acme msa 2024 pdf", 2, &same, &same).fire);
        // low agreement lifts it too
        let half = list(&[1, 2, 3, 4, 5, 16, 17, 18, 19, 20], 0.9);
        assert!(g.decide("acme msa 2024", 2, &same, &half).fire);
    }

    #[test]
    fn off_and_force_record_what_auto_would_decide() {
        let same = list(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 0.9);
        let auto = gate(GraphMode::Auto).decide("who founded acme", 2, &same, &same);
        let off = gate(GraphMode::Off).decide("who founded acme", 2, &same, &same);
        assert!(auto.fire && !off.fire);
        assert_eq!(off.reasons, auto.reasons);
        assert_eq!(off.vetoed_by.as_deref(), Some("mode-off"));
        let force = gate(GraphMode::Force).decide("acme msa 2024", 0, &same, &same);
        assert!(force.fire);
        assert_eq!(force.reasons, vec!["mode-force"]);
        assert_eq!(force.vetoed_by, None);
        let force = gate(GraphMode::Force).decide("who founded acme", 2, &same, &same);
        assert_eq!(
            force.reasons,
            vec!["relation-cue", "entity-heavy", "mode-force"]
        );
        // custom cues are lowercased
        let g = Gate::new(&GateParams {
            relation_cues: vec!["Acme".into()],
            ..Default::default()
        });
        assert!(g
            .decide("acme msa 2024", 0, &same, &same)
            .has_reason("relation-cue"));
    }
}
