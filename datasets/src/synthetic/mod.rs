//! The embedded default dataset: a small invented world, generated in process.
//!
//! When no data directory is given, hopbench benchmarks against this world, so a fresh clone
//! runs the whole matrix with no download. It has to be a *fair* multi-hop benchmark for three
//! very different retrievers (a real sentence-embedding model, BM25, and graph walkers), so
//! every design decision below is about removing shortcuts without adding noise.
//!
//! # What the world looks like
//!
//! A few hundred entities of eleven kinds: countries, cities, people, companies, film studios,
//! publishers, ensembles, universities, films, books and products. Names are invented from
//! syllables (`Velmoria`, `Korrinford`, `Alira Venmoth`, `Quarro 300`, `Echoes of Talvenor`),
//! unique, never a substring of one another, and checked against a list of real places, names
//! and brands, so that neither the embedding model nor a reader can answer from world knowledge:
//! the corpus is the only source of truth.
//!
//! Entities are linked by typed relations (`located_in`, `capital`, `head_of_state`, `mayor`,
//! `born_in`, `spouse_of`, `member_of`, `educated_at`, `founded_by`, `headquartered_in`,
//! `based_in`, `campus_in`, `directed_by`, `produced_by`, `starring`, `written_by`,
//! `published_by`, `manufactured_by`, `designed_by`). Every relation is *functional* from its
//! subject (a city lies in one country, a film has one director) and every fact is stated in
//! exactly one place: the subject's **main passage** (title and doc = the entity's name, header
//! `Synthetic world > People > Alira Venmoth`). A main passage says what the entity is, states
//! its 2-4 facts in plain English, naming the related entities in full, and ends with a filler
//! fact (a population, a running time). Because the objects are named in full, an entity linker
//! or a graph walker can follow every fact from passage to passage.
//!
//! # What makes it hard
//!
//! * **Distractor paragraphs.** Every entity has `distractors_per_entity` further passages of
//!   the same document (same title, same doc, header `... > Alira Venmoth > Later life`). They
//!   are on topic and full of near misses: "was briefly engaged to X, but the two never married",
//!   "X was originally attached to direct the film but left the project", "opened a regional
//!   office in Y". They share the title tokens and the topical vocabulary of the gold passage but
//!   state no fact of the world, so BM25 and dense retrieval both have to rank the passage that
//!   actually answers above the one that merely sounds like it.
//! * **Confusable entities.** `confusable_percent` of the entities are near-namesakes of an
//!   earlier entity of the same kind: siblings sharing a surname, `Korrin Dynamics` next to
//!   `Korrin Systems`, `Korrinford` next to `Korrinmere`, `Quarro 300` next to `Quarro Pro`.
//!   They have the same relation types with *different* objects, so a retriever that matches a
//!   name only approximately lands on a passage that answers the hop wrongly.
//! * **Bridges are never named.** Questions follow relation paths of 2, 3 and 4 hops, phrased
//!   as nested English ("In which country is the birthplace of the founder of Korrin
//!   Dynamics located?"). Only the start entity is named; the bridge entities and the answer
//!   share no name root with it, so nothing but the first hop is reachable by string matching.
//!
//! # What makes it fair
//!
//! * Every question has exactly one answer: each hop's relation has exactly one object for its
//!   subject, and no entity repeats along a path.
//! * Gold is exactly the passages that state the hops: the main passage of each hop's subject,
//!   one per hop. `chain` has one slot per hop holding that passage; `decomposition` is
//!   MuSiQue-style (`Where was #1 born?`), with each hop's answer and gold.
//! * Statements and questions use several paraphrases per relation, so lexical overlap between
//!   a question and its gold passages is realistic, neither absent nor guaranteed.
//! * Passage ids (`syn00000`, ...) are assigned after a seeded shuffle of all passages, so an id
//!   (and the export's chunk index, on which every leg breaks ties) says nothing about kind,
//!   role or gold-ness. Ids have five digits, or more when a world of more than 100,000
//!   passages needs them, so sorted id order is generation order at every size.
//!
//! # Scale
//!
//! A world of a million passages is generated in linear expected time: no step scans all
//! entities or all names per entity (see `substrings` for the name check and `ranked` for the
//! choice of twins), and each passage text is built once and moved into the dataset.
//!
//! # Determinism
//!
//! All randomness is a SplitMix64 seeded from [`SyntheticConfig::seed`], with one stream per
//! stage (names, facts, main text, distractor text, questions, order), and all collections are
//! `Vec`s and `BTreeMap`s: the same config yields a byte-identical dataset on every run and
//! platform, and asking for more questions or more distractors does not change the world.

mod kind;
mod names;
#[cfg(test)]
mod pinned;
mod questions;
mod ranked;
mod substrings;
mod text;
mod world;

use crate::error::{Error, Result};
use crate::model::{Passage, RawDataset};
use crate::rng::SplitMix64;

/// Size and shape of the generated world; set from `campaign.yaml` (every field optional).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SyntheticConfig {
    /// Seed of every random choice; the same config always yields the same dataset.
    pub seed: u64,
    /// Number of entities, each with one main passage (at least [`SyntheticConfig::MIN_ENTITIES`]).
    pub entities: usize,
    /// Number of questions to generate.
    pub questions: usize,
    /// Distractor paragraphs per entity (same document, same title, near-miss content).
    pub distractors_per_entity: usize,
    /// Percentage (0-90) of entities that are near-namesakes of an earlier entity of their kind.
    pub confusable_percent: u32,
    /// Relative weights of 2-, 3- and 4-hop questions.
    pub hop_mix: [u32; 3],
}

impl Default for SyntheticConfig {
    /// 160 entities and one distractor each (320 passages), 60 questions: 30 2-hop, 21 3-hop,
    /// 9 4-hop.
    fn default() -> Self {
        SyntheticConfig {
            seed: 0x686F_7062_656E_6368, // "hopbench"
            entities: 160,
            questions: 60,
            distractors_per_entity: 1,
            confusable_percent: 30,
            hop_mix: [50, 35, 15],
        }
    }
}

impl SyntheticConfig {
    /// The smallest world that still has every kind of entity and relation.
    pub const MIN_ENTITIES: usize = 40;
    /// Most passages: ten million, the largest world a scale run asks for (the memory it needs
    /// is in docs/src/scale.md). Ids have [`SyntheticConfig::passage_id_digits`] digits, so
    /// sorted order is generation order at any size.
    pub const MAX_PASSAGES: usize = 10_000_000;
    /// Most questions. Ids have [`SyntheticConfig::question_id_digits`] digits.
    pub const MAX_QUESTIONS: usize = 100_000;

    /// Digits of a passage id (`syn00000`): five, or as many as the last index needs. Every
    /// world that fits five digits keeps the ids it always had.
    pub fn passage_id_digits(&self) -> usize {
        id_digits(self.passages(), 5)
    }

    /// Digits of a question id (`q0000`): four, or as many as the last index needs.
    pub fn question_id_digits(&self) -> usize {
        id_digits(self.questions, 4)
    }

    /// Total passages this config generates: one main passage plus the distractors per entity.
    pub fn passages(&self) -> usize {
        self.entities
            .saturating_mul(self.distractors_per_entity.saturating_add(1))
    }

    /// The number of 2-, 3- and 4-hop questions requested (largest-remainder split of
    /// `questions` by `hop_mix`).
    pub fn hop_counts(&self) -> [usize; 3] {
        let c = questions::split_counts(self.questions, &self.hop_mix);
        [c[0], c[1], c[2]]
    }

    /// Check the values are in range ([`Error::Config`] otherwise, its context the dotted
    /// key at fault: `synthetic.entities`).
    pub fn validate(&self) -> Result<()> {
        let bad = |field: &str, message: String| {
            Err(Error::Config {
                context: format!("synthetic.{field}"),
                message,
            })
        };
        if self.entities < Self::MIN_ENTITIES {
            return bad(
                "entities",
                format!(
                    "entities = {} is below the minimum of {}",
                    self.entities,
                    Self::MIN_ENTITIES
                ),
            );
        }
        if self.passages() > Self::MAX_PASSAGES {
            // the larger factor of the product is the one to lower
            let field = if self.distractors_per_entity.saturating_add(1) > self.entities {
                "distractors_per_entity"
            } else {
                "entities"
            };
            return bad(
                field,
                format!(
                    "entities x (1 + distractors_per_entity) = {} passages exceeds {}",
                    self.passages(),
                    Self::MAX_PASSAGES
                ),
            );
        }
        if self.questions == 0 || self.questions > Self::MAX_QUESTIONS {
            return bad(
                "questions",
                format!(
                    "questions = {} must be in 1..={}",
                    self.questions,
                    Self::MAX_QUESTIONS
                ),
            );
        }
        if self.questions > self.entities / 2 {
            return bad(
                "questions",
                format!(
                "questions = {} needs at least {} entities (every question starts at a distinct \
                 entity); entities = {}",
                self.questions,
                2 * self.questions,
                self.entities
            ),
            );
        }
        if self.confusable_percent > 90 {
            return bad(
                "confusable_percent",
                format!(
                    "confusable_percent = {} must be at most 90",
                    self.confusable_percent
                ),
            );
        }
        if self.hop_mix.iter().all(|&w| w == 0) {
            return bad("hop_mix", "hop_mix must have a non-zero weight".into());
        }
        Ok(())
    }
}

/// Digits of the largest of `count` zero-based indices, at least `min`.
fn id_digits(count: usize, min: usize) -> usize {
    let last = count.saturating_sub(1);
    let digits = last.checked_ilog10().map_or(1, |d| d as usize + 1);
    digits.max(min)
}

/// Generate the dataset, or say why the config cannot be honoured ([`Error::Config`]): a value
/// out of range, or a world too small for the requested number of distinct questions.
pub fn try_generate(cfg: &SyntheticConfig) -> Result<RawDataset> {
    cfg.validate()?;
    let ds = build(cfg);
    if ds.questions.len() < cfg.questions {
        return Err(Error::Config {
            context: "synthetic.questions".into(),
            message: format!(
                "a world of {} entities supports only {} of the {} requested questions with \
                 distinct start entities; raise entities or lower questions",
                cfg.entities,
                ds.questions.len(),
                cfg.questions
            ),
        });
    }
    Ok(ds)
}

/// Generate the dataset for `cfg`: deterministic, byte-identical for equal configs.
///
/// # Panics
///
/// If `cfg` is invalid (see [`try_generate`], which returns the error instead). The default
/// config never panics.
pub fn generate(cfg: &SyntheticConfig) -> RawDataset {
    try_generate(cfg).unwrap_or_else(|e| panic!("{e}"))
}

/// One passage before ids are assigned.
struct Draft {
    entity: usize,
    /// `None` for the main passage, the distractor section otherwise.
    section: Option<&'static str>,
    text: String,
}

fn build(cfg: &SyntheticConfig) -> RawDataset {
    let w = world::build(cfg.seed, cfg.entities, cfg.confusable_percent);
    let n = w.entities.len();

    let mut text_rng = SplitMix64::stream(cfg.seed, "text");
    let mut distractor_rng = SplitMix64::stream(cfg.seed, "distractors");
    let mut drafts: Vec<Draft> = Vec::with_capacity(cfg.passages());
    for e in 0..n {
        drafts.push(Draft {
            entity: e,
            section: None,
            text: text::main_text(&mut text_rng, &w, e),
        });
    }
    for e in 0..n {
        let sections = text::sections(w.entities[e].kind);
        for k in 0..cfg.distractors_per_entity {
            drafts.push(Draft {
                entity: e,
                section: Some(sections[k % sections.len()]),
                text: text::distractor_text(&mut distractor_rng, &w, e, k),
            });
        }
    }

    // Ids in a seeded random order: an id says nothing about kind, role or gold-ness.
    let mut order: Vec<usize> = (0..drafts.len()).collect();
    SplitMix64::stream(cfg.seed, "order").shuffle(&mut order);
    let width = cfg.passage_id_digits();
    let mut main_id = vec![String::new(); n];
    let mut section_seen: Vec<std::collections::BTreeMap<&str, usize>> =
        vec![Default::default(); n];
    let mut passages = Vec::with_capacity(drafts.len());
    for (i, &d) in order.iter().enumerate() {
        let draft = &mut drafts[d];
        let ent = &w.entities[draft.entity];
        let id = format!("syn{i:0width$}");
        let base = format!("Synthetic world > {} > {}", ent.kind.section(), ent.name());
        let header = match draft.section {
            None => {
                main_id[draft.entity] = id.clone();
                base
            }
            Some(s) => {
                // Repeated sections (more distractors than section names) are numbered.
                let seen = section_seen[draft.entity].entry(s).or_insert(0);
                *seen += 1;
                if *seen == 1 {
                    format!("{base} > {s}")
                } else {
                    format!("{base} > {s} ({})", *seen)
                }
            }
        };
        passages.push(Passage {
            id,
            doc: Some(ent.name().to_string()),
            title: ent.name().to_string(),
            // Moved, not copied: every text is held once.
            text: std::mem::take(&mut draft.text),
            header: Some(header),
        });
    }

    drop(drafts);

    let mut q_rng = SplitMix64::stream(cfg.seed, "questions");
    let paths = questions::choose_paths(&mut q_rng, &w, &cfg.hop_counts());
    let q_width = cfg.question_id_digits();
    let questions = paths
        .iter()
        .enumerate()
        .map(|(i, p)| questions::phrase(&mut q_rng, &w, p, format!("q{i:0q_width$}"), &main_id))
        .collect();
    RawDataset {
        passages,
        questions,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    fn default_ds() -> RawDataset {
        generate(&SyntheticConfig::default())
    }

    #[test]
    fn deterministic_for_a_config_and_seed_sensitive() {
        let cfg = SyntheticConfig::default();
        let a = generate(&cfg);
        let b = generate(&cfg);
        assert_eq!(a, b);
        assert_eq!(format!("{a:?}"), format!("{b:?}"), "byte-identical");
        let c = generate(&SyntheticConfig {
            seed: cfg.seed + 1,
            ..cfg.clone()
        });
        assert_ne!(a.passages, c.passages);
        assert_ne!(a.questions, c.questions);
    }

    #[test]
    fn more_questions_or_distractors_keep_the_world() {
        let cfg = SyntheticConfig::default();
        let a = generate(&cfg);
        let b = generate(&SyntheticConfig {
            distractors_per_entity: 2,
            ..cfg.clone()
        });
        let mains = |ds: &RawDataset| -> BTreeSet<(String, String)> {
            ds.passages
                .iter()
                .filter(|p| {
                    p.header
                        .as_deref()
                        .is_some_and(|h| h.matches(" > ").count() == 2)
                })
                .map(|p| (p.title.clone(), p.text.clone()))
                .collect()
        };
        assert_eq!(mains(&a), mains(&b));
    }

    #[test]
    fn default_sizes_and_hop_mix() {
        let ds = default_ds();
        assert!(
            (250..=400).contains(&ds.passages.len()),
            "{} passages",
            ds.passages.len()
        );
        assert_eq!(ds.passages.len(), SyntheticConfig::default().passages());
        assert_eq!(ds.questions.len(), 60);
        let count = |h: &str| {
            ds.questions
                .iter()
                .filter(|q| q.labels["hops"] == h)
                .count()
        };
        assert_eq!([count("2hop"), count("3hop"), count("4hop")], [30, 21, 9]);
    }

    #[test]
    fn ids_unique_sorted_and_well_formed() {
        check_ids_unique_sorted_and_well_formed(&default_ds());
    }

    fn check_ids_unique_sorted_and_well_formed(ds: &RawDataset) {
        let ids: Vec<&str> = ds.passages.iter().map(|p| p.id.as_str()).collect();
        let set: BTreeSet<&str> = ids.iter().copied().collect();
        assert_eq!(set.len(), ids.len(), "duplicate passage id");
        assert!(
            ids.windows(2).all(|w| w[0] < w[1]),
            "sorted order = generation order"
        );
        let width = 3 + id_digits(ids.len(), 5);
        assert!(ids
            .iter()
            .all(|id| id.len() == width && id.starts_with("syn")));
        let qids: BTreeSet<&str> = ds.questions.iter().map(|q| q.id.as_str()).collect();
        assert_eq!(qids.len(), ds.questions.len());
        let q_width = 1 + id_digits(ds.questions.len(), 4);
        assert!(qids
            .iter()
            .all(|id| id.len() == q_width && id.starts_with('q')));
    }

    #[test]
    fn headers_docs_titles_present() {
        let ds = default_ds();
        for p in &ds.passages {
            let h = p.header.as_deref().expect("header");
            assert!(h.starts_with("Synthetic world > "), "{h}");
            assert!(h.contains(&p.title));
            assert_eq!(p.doc.as_deref(), Some(p.title.as_str()));
            assert!(
                p.text.contains(&p.title),
                "{}: text does not name its entity",
                p.id
            );
        }
        // Every document has one main passage and `distractors_per_entity` distractors.
        let docs: BTreeSet<&str> = ds
            .passages
            .iter()
            .filter_map(|p| p.doc.as_deref())
            .collect();
        assert_eq!(docs.len(), SyntheticConfig::default().entities);
    }

    #[test]
    fn gold_chain_and_decomposition_are_consistent() {
        check_gold_chain_and_decomposition_are_consistent(&default_ds());
    }

    fn check_gold_chain_and_decomposition_are_consistent(ds: &RawDataset) {
        let ids: BTreeSet<&str> = ds.passages.iter().map(|p| p.id.as_str()).collect();
        for q in &ds.questions {
            let hops: usize = q.labels["hops"][..1].parse().unwrap();
            assert_eq!(q.gold.len(), hops, "{}", q.id);
            let gold: BTreeSet<&str> = q.gold.iter().map(String::as_str).collect();
            assert_eq!(gold.len(), hops, "one distinct gold passage per hop");
            assert!(
                q.gold.iter().all(|g| ids.contains(g.as_str())),
                "gold not in corpus"
            );
            let chain = q.chain.as_ref().expect("chain");
            assert_eq!(chain.len(), hops);
            for (slot, g) in chain.iter().zip(&q.gold) {
                assert!(!slot.is_empty());
                assert_eq!(slot, &vec![g.clone()]);
            }
            let dec = q.decomposition.as_ref().expect("decomposition");
            assert_eq!(dec.len(), hops);
            for (i, sq) in dec.iter().enumerate() {
                assert_eq!(sq.gold, vec![q.gold[i].clone()]);
                if i > 0 {
                    assert!(sq.question.contains(&format!("#{i}")), "{}", sq.question);
                }
            }
        }
    }

    #[test]
    fn each_hop_passage_states_its_hop() {
        check_each_hop_passage_states_its_hop(&default_ds());
    }

    fn check_each_hop_passage_states_its_hop(ds: &RawDataset) {
        let by_id: std::collections::BTreeMap<&str, &Passage> =
            ds.passages.iter().map(|p| (p.id.as_str(), p)).collect();
        for q in &ds.questions {
            let dec = q.decomposition.as_ref().unwrap();
            for (i, sq) in dec.iter().enumerate() {
                let p = by_id[sq.gold[0].as_str()];
                // The hop passage names the hop's answer, and is the previous answer's document.
                assert!(
                    p.text.contains(&sq.answer),
                    "{}: {} lacks {}",
                    q.id,
                    p.id,
                    sq.answer
                );
                if i > 0 {
                    assert_eq!(p.title, dec[i - 1].answer);
                }
            }
        }
    }

    #[test]
    fn bridges_and_answers_are_not_named_in_the_question() {
        check_bridges_and_answers_are_not_named_in_the_question(&default_ds());
    }

    fn check_bridges_and_answers_are_not_named_in_the_question(ds: &RawDataset) {
        for q in &ds.questions {
            for sq in q.decomposition.as_ref().unwrap() {
                assert!(
                    !q.text.contains(&sq.answer),
                    "{}: {:?} names {}",
                    q.id,
                    q.text,
                    sq.answer
                );
            }
        }
    }

    #[test]
    fn answers_are_unique_in_the_world() {
        check_answers_are_unique_in_the_world(&default_ds());
    }

    // Titles (entity names) are unique per entity, and each hop's answer is a title.
    fn check_answers_are_unique_in_the_world(ds: &RawDataset) {
        let titles: BTreeSet<&str> = ds.passages.iter().map(|p| p.title.as_str()).collect();
        for q in &ds.questions {
            for sq in q.decomposition.as_ref().unwrap() {
                assert!(titles.contains(sq.answer.as_str()));
            }
        }
        let texts: BTreeSet<&str> = ds.questions.iter().map(|q| q.text.as_str()).collect();
        assert_eq!(texts.len(), ds.questions.len(), "duplicate question text");
    }

    #[test]
    fn config_parses_with_defaults_and_rejects_unknown_fields() {
        let c: SyntheticConfig = serde_json::from_str(r#"{"seed": 7, "questions": 20}"#).unwrap();
        assert_eq!(c.seed, 7);
        assert_eq!(c.questions, 20);
        assert_eq!(c.entities, SyntheticConfig::default().entities);
        assert!(serde_json::from_str::<SyntheticConfig>(r#"{"sed": 7}"#).is_err());
    }

    #[test]
    fn invalid_configs_are_errors() {
        let d = SyntheticConfig::default();
        for bad in [
            SyntheticConfig {
                entities: 10,
                ..d.clone()
            },
            SyntheticConfig {
                questions: 0,
                ..d.clone()
            },
            SyntheticConfig {
                questions: 200,
                ..d.clone()
            },
            SyntheticConfig {
                hop_mix: [0, 0, 0],
                ..d.clone()
            },
            SyntheticConfig {
                confusable_percent: 95,
                ..d.clone()
            },
            SyntheticConfig {
                entities: 5_000_001,
                distractors_per_entity: 1,
                ..d.clone()
            },
            SyntheticConfig {
                entities: 250_001,
                questions: 100_001,
                ..d.clone()
            },
        ] {
            assert!(
                matches!(try_generate(&bad), Err(Error::Config { .. })),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn limit_errors_name_the_field() {
        let message = |cfg: SyntheticConfig| match cfg.validate() {
            Err(Error::Config { message, .. }) => message,
            other => panic!("{cfg:?}: {other:?}"),
        };
        let d = SyntheticConfig::default();
        let m = message(SyntheticConfig {
            entities: 4_000_000,
            distractors_per_entity: 2,
            ..d.clone()
        });
        assert!(m.contains("12000000 passages exceeds 10000000"), "{m}");
        let m = message(SyntheticConfig {
            entities: 300_000,
            questions: 100_001,
            ..d.clone()
        });
        assert!(
            m.contains("questions = 100001") && m.contains("100000"),
            "{m}"
        );
        let most = SyntheticConfig {
            entities: 5_000_000,
            questions: 100_000,
            ..d
        };
        assert!(most.validate().is_ok(), "the largest world is valid");
    }

    #[test]
    fn id_widths_grow_only_past_the_old_limits() {
        assert_eq!(id_digits(0, 5), 5);
        assert_eq!(id_digits(320, 5), 5);
        assert_eq!(
            id_digits(100_000, 5),
            5,
            "syn99999 is the last five-digit id"
        );
        assert_eq!(id_digits(100_001, 5), 6);
        assert_eq!(id_digits(1_000_000, 5), 6);
        assert_eq!(id_digits(1_000_001, 5), 7);
        assert_eq!(id_digits(10_000, 4), 4);
        assert_eq!(id_digits(10_001, 4), 5);
        assert_eq!(id_digits(100_000, 4), 5);
    }

    /// A world past both old limits (99,999 passages, 9,999 questions): six-digit passage ids
    /// and five-digit question ids, still unique and in generation order, and every invariant
    /// of the default world still holds.
    #[test]
    fn a_world_past_the_old_limits_widens_its_ids() {
        let cfg = SyntheticConfig {
            seed: 3,
            entities: 34_000,
            questions: 10_001,
            distractors_per_entity: 2,
            ..SyntheticConfig::default()
        };
        let ds = try_generate(&cfg).unwrap();
        assert_eq!(ds.passages.len(), 102_000);
        assert_eq!(ds.questions.len(), 10_001);
        assert_eq!(ds.passages[0].id, "syn000000");
        assert_eq!(ds.passages[101_999].id, "syn101999");
        assert_eq!(ds.questions[10_000].id, "q10000");
        check_ids_unique_sorted_and_well_formed(&ds);
        check_gold_chain_and_decomposition_are_consistent(&ds);
        check_each_hop_passage_states_its_hop(&ds);
        check_bridges_and_answers_are_not_named_in_the_question(&ds);
        check_answers_are_unique_in_the_world(&ds);
        let titles: BTreeSet<&str> = ds.passages.iter().map(|p| p.title.as_str()).collect();
        assert_eq!(titles.len(), cfg.entities, "one unique name per entity");
    }

    /// The largest world: `cargo test --release -p hopbench-datasets --lib
    /// synthetic::tests::a_million_passages -- --ignored` (timings: `hopbench bench generate`).
    #[test]
    #[ignore = "a million passages: run in release"]
    fn a_million_passages() {
        let cfg = SyntheticConfig {
            entities: 500_000,
            questions: 100_000,
            ..SyntheticConfig::default()
        };
        let ds = try_generate(&cfg).unwrap();
        assert_eq!(ds.passages.len(), 1_000_000);
        assert_eq!(ds.passages[999_999].id, "syn999999");
        assert_eq!(ds.questions[99_999].id, "q99999");
        check_ids_unique_sorted_and_well_formed(&ds);
        check_gold_chain_and_decomposition_are_consistent(&ds);
        check_each_hop_passage_states_its_hop(&ds);
        check_bridges_and_answers_are_not_named_in_the_question(&ds);
        check_answers_are_unique_in_the_world(&ds);
    }

    #[test]
    fn other_sizes_and_seeds_work() {
        for seed in 0..6 {
            let cfg = SyntheticConfig {
                seed,
                entities: 40,
                questions: 12,
                distractors_per_entity: 0,
                ..SyntheticConfig::default()
            };
            let ds = try_generate(&cfg).unwrap();
            assert_eq!(ds.passages.len(), 40);
            assert_eq!(ds.questions.len(), 12);
        }
        let big = SyntheticConfig {
            entities: 600,
            questions: 250,
            ..SyntheticConfig::default()
        };
        let ds = try_generate(&big).unwrap();
        assert_eq!(ds.passages.len(), 1200);
    }
}

#[cfg(test)]
mod sample {
    use super::*;

    /// `cargo test -p hopbench-datasets --lib synthetic::sample -- --ignored --nocapture`
    /// prints the default world, for eyeballing.
    #[test]
    #[ignore = "prints the default dataset"]
    fn print_default_dataset() {
        let ds = generate(&SyntheticConfig::default());
        for p in &ds.passages {
            println!(
                "{} [{}]\n    {}\n",
                p.id,
                p.header.as_deref().unwrap_or(""),
                p.text
            );
        }
        for q in &ds.questions {
            println!("{} {:?} {}\n    gold {:?}", q.id, q.labels, q.text, q.gold);
            for sq in q.decomposition.as_deref().unwrap_or(&[]) {
                println!("    - {} -> {} {:?}", sq.question, sq.answer, sq.gold);
            }
        }
    }
}
