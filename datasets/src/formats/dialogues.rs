//! A **derived** conversational dataset: every multi-hop question with a published
//! decomposition becomes a scripted dialogue, one user turn per hop.
//!
//! **Why.** The only human conversational set here (MTRAG-UN) has no record of what a follow-up's
//! "it" or "that one" stands for, so reference resolution can only be judged end to end. Turning
//! a decomposition into a dialogue gives follow-ups whose referents are *known*: hop k's `#j`
//! (MuSiQue's reference to hop j's answer) becomes a referring expression ("that person"), and
//! the text it stands for is hop j's published answer, which an earlier agent turn stated
//! verbatim. Each turn's gold is the hop's own supporting passages. The dialogues are scripted
//! by these rules, not written by people: every question carries the label `derived`, and its
//! results must be reported as derived wherever they appear.
//!
//! **The dialogue** of a question with `n >= 2` hops (fewer hops, or no decomposition: the
//! question is skipped) is, for k = 1..n: user turn k = hop k's sub-question as published, with
//! every reference to an *earlier* hop replaced (below); then, except after the last hop, an
//! agent turn stating hop k's published answer ([`agent_turn`]).
//!
//! **References.** `#j` is `#` followed by ASCII digits, parsed like
//! [`subquery_texts`](crate::export::subquery_texts) (`#12` is hop 12, never hop 1 then `2`).
//! It is replaced only when `1 <= j < k` (an earlier hop, stated by an earlier agent turn) and
//! hop j's answer is not blank; any other `#j` (out of the decomposition, the hop itself or a
//! later one, a blank answer) and a bare `#` are left as written. The replacement is
//! [`referring_expression`] of hop j. A `the`/`The` written directly before the reference is
//! dropped (`The #1 was named for whom?` -> `That place was named for whom?`), and the expression
//! is capitalised when it opens the turn or replaces a capitalised `The`. Nothing else of the
//! sub-question changes: MuSiQue's knowledge-base style hops (`#1 >> country`) stay in that
//! style (`That place >> country`), and its spaced possessive (`#3 's`) stays spaced.
//!
//! **Queries.** One per hop whose published gold is non-empty (a hop without gold is still a turn
//! of the dialogue, it is just not scored): id = `<source id>::turn<k>` (k 1-based), text = user
//! turn k, conversation = every turn up to and including user turn k, gold = the hop's gold
//! (`SubQuestion::gold`), no chain, no decomposition (a turn is one hop). Labels, and only these
//! (the source question's own labels are not copied; join on `source_question`):
//!
//! | label | value |
//! |---|---|
//! | `derived` | `<source_name>-decomposition` |
//! | `source_question` | the source question's id |
//! | `turn` | k |
//! | `hops` | `<n>hop`, the dialogue's length, written like the `hops` label of the readers |
//! | `multi_turn` | `N/A` for k = 1, else `Follow-up` (MTRAG-UN's vocabulary) |
//! | `referent` | k >= 2 with a replaced reference: the answer(s) referred to, in order of appearance, joined with ` \| ` |
//! | `referring_expression` | alongside `referent`: the expression(s) used, lower case, same order and joiner |
//!
//! Passages are unchanged. Everything is a pure function of the input: no randomness. Any change
//! to these rules must bump [`VERSION`].

use std::collections::{BTreeMap, HashSet};

use crate::error::{Error, Result};
use crate::model::{question_pieces, Question, QuestionPiece, RawDataset, SubQuestion, Turn};

/// Version of the derivation rules. Raw files do not change when these rules do, so callers that
/// key an export on its inputs (the harness) put this number in the key: bump it with any change
/// to the dialogues, ids, gold or labels derived here.
pub const VERSION: u32 = 1;

/// The joiner of several referents (or expressions) in one label.
pub const JOIN: &str = " | ";

/// The referring expression that stands for a hop's answer in a later turn, chosen from the
/// hop's sub-question (and, for years and numbers, the shape of its answer). The first rule that
/// matches wins:
///
/// 1. **year / date**: the question starts with `when`, or says `what year` / `which year`, or
///    (knowledge-base style `subject >> relation`) the relation mentions `date`, `year`,
///    `inception` or `time`: `that year` if the answer is 3-4 ASCII digits, else `that date`.
/// 2. **number**: the question starts with `how many` / `how much`, or mentions `percentage`,
///    `population`, `amount` or `number`, or the answer is a number (digits with `,` `.` only):
///    `that number`.
/// 3. **person**: the question contains the word `who`, `whom` or `whose`, or the knowledge-base
///    relation names a person role (`author`, `composer`, `performer`, `spouse`, ... see
///    `PERSON_RELATION_WORDS`): `that person`. (MuSiQue's `performer` is sometimes a band.)
/// 4. **place**: the question starts with `where`, or contains a place word (`city`, `country`,
///    `state`, `town`, `county`, `continent`, `capital`, `birthplace`, `place`, `location`,
///    `located`, `region`, `province`, `village`, `nation`, `island`, `territorial`,
///    `border`, ...): `that place`.
/// 5. otherwise `it`.
///
/// For a knowledge-base style hop (`Hello Love >> performer`) only the relation after the last
/// `>>` is read, since the subject is a name and may contain any word. Words are maximal runs of
/// alphanumeric characters, compared lower-cased.
pub fn referring_expression(sub_question: &str, answer: &str) -> &'static str {
    let (kb, wording) = match sub_question.rsplit_once(">>") {
        Some((_, relation)) => (true, relation),
        None => (false, sub_question),
    };
    let lower = wording.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let has = |w: &str| words.contains(&w);
    let any = |list: &[&str]| list.iter().any(|w| has(w));
    let pair = |a: &[&str], b: &str| words.windows(2).any(|p| a.contains(&p[0]) && p[1] == b);
    let first = words.first().copied().unwrap_or("");

    let answer = answer.trim();
    let year_wording = if kb {
        any(&["date", "year", "inception", "time"])
    } else {
        first == "when" || pair(&["what", "which"], "year")
    };
    if year_wording {
        let year = (3..=4).contains(&answer.len()) && answer.bytes().all(|b| b.is_ascii_digit());
        return if year { "that year" } else { "that date" };
    }
    let numeric_answer = answer.bytes().any(|b| b.is_ascii_digit())
        && answer
            .bytes()
            .all(|b| b.is_ascii_digit() || b == b',' || b == b'.');
    if numeric_answer
        || (!kb && words.len() >= 2 && words[0] == "how" && matches!(words[1], "many" | "much"))
        || any(&["percentage", "population", "amount", "number"])
    {
        return "that number";
    }
    if any(&["who", "whom", "whose"]) || (kb && any(PERSON_RELATION_WORDS)) {
        return "that person";
    }
    if (!kb && first == "where") || any(PLACE_WORDS) {
        return "that place";
    }
    "it"
}

/// Knowledge-base relation words (MuSiQue's Wikidata-style hops) whose object is a person.
const PERSON_RELATION_WORDS: &[&str] = &[
    "author",
    "composer",
    "performer",
    "director",
    "producer",
    "screenwriter",
    "lyricist",
    "creator",
    "founder",
    "founded",
    "father",
    "mother",
    "spouse",
    "sibling",
    "child",
    "cast",
    "head",
    "chairperson",
    "designer",
];

/// Words that make a hop a question about a place.
const PLACE_WORDS: &[&str] = &[
    "city",
    "country",
    "state",
    "town",
    "county",
    "continent",
    "capital",
    "birthplace",
    "place",
    "location",
    "located",
    "region",
    "province",
    "village",
    "nation",
    "island",
    "territory",
    "territorial",
    "border",
    "hometown",
    "where",
];

/// The agent turn after a hop: the published answer verbatim followed by `.` (nothing is
/// appended when the answer already ends with `.`, `!` or `?`); `I don't know.` for a blank
/// answer. Nothing else is said, so the agent turn adds no words of its own to the conversation.
pub fn agent_turn(answer: &str) -> String {
    let a = answer.trim();
    if a.is_empty() {
        "I don't know.".to_string()
    } else if a.ends_with(['.', '!', '?']) {
        a.to_string()
    } else {
        format!("{a}.")
    }
}

/// One replaced reference: the expression used and the answer it stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replaced {
    /// The expression, lower case (`that person`).
    pub expression: &'static str,
    /// Hop j's published answer.
    pub referent: String,
}

/// User turn `k` (1-based) of a decomposition: hop k's sub-question with its references to
/// earlier hops replaced, and the references replaced, in order of appearance (module docs).
pub fn user_turn(decomposition: &[SubQuestion], k: usize) -> (String, Vec<Replaced>) {
    let q = &decomposition[k - 1].question;
    let mut out = String::with_capacity(q.len());
    let mut replaced = Vec::new();
    for piece in question_pieces(q) {
        let (raw, hop) = match piece {
            QuestionPiece::Text(t) => {
                out.push_str(t);
                continue;
            }
            QuestionPiece::HopRef { raw, hop } => (raw, hop),
        };
        let hop = hop
            .filter(|&j| j >= 1 && j < k)
            .map(|j| &decomposition[j - 1])
            .filter(|h| !h.answer.trim().is_empty());
        let Some(h) = hop else {
            out.push_str(raw);
            continue;
        };
        let expression = referring_expression(&h.question, &h.answer);
        // drop a `the` / `The` written just before the reference
        let mut capital = out.trim().is_empty();
        for article in ["the ", "The "] {
            if let Some(before) = out.strip_suffix(article) {
                if before.is_empty() || before.ends_with(char::is_whitespace) {
                    capital = article == "The " || before.trim().is_empty();
                    out.truncate(before.len());
                    break;
                }
            }
        }
        if capital {
            let mut e = expression.chars();
            if let Some(f) = e.next() {
                out.extend(f.to_uppercase());
                out.push_str(e.as_str());
            }
        } else {
            out.push_str(expression);
        }
        replaced.push(Replaced {
            expression,
            referent: h.answer.trim().to_string(),
        });
    }
    (out, replaced)
}

/// The whole dialogue of a decomposition: user turn 1, agent turn 1, ..., user turn n (no agent
/// turn after the last), with each user turn's replaced references.
pub fn dialogue(decomposition: &[SubQuestion]) -> (Vec<Turn>, Vec<Vec<Replaced>>) {
    let mut turns = Vec::new();
    let mut refs = Vec::new();
    let n = decomposition.len();
    for k in 1..=n {
        let (text, replaced) = user_turn(decomposition, k);
        turns.push(Turn {
            speaker: "user".to_string(),
            text,
        });
        refs.push(replaced);
        if k < n {
            turns.push(Turn {
                speaker: "agent".to_string(),
                text: agent_turn(&decomposition[k - 1].answer),
            });
        }
    }
    (turns, refs)
}

/// Derive the dialogue dataset of `raw` (module docs); `source_name` names the source in the
/// `derived` label. Fails only when two derived ids would coincide (a source id that already
/// ends in `::turn<k>`).
pub fn derive(raw: RawDataset, source_name: &str) -> Result<RawDataset> {
    let derived = format!("{source_name}-decomposition");
    let mut questions = Vec::new();
    let mut seen = HashSet::new();
    for src in &raw.questions {
        let Some(dec) = src.decomposition.as_deref().filter(|d| d.len() >= 2) else {
            continue;
        };
        let n = dec.len();
        let (turns, refs) = dialogue(dec);
        for k in 1..=n {
            let hop = &dec[k - 1];
            if hop.gold.is_empty() {
                continue;
            }
            let id = format!("{}::turn{k}", src.id);
            if !seen.insert(id.clone()) {
                return Err(Error::Config {
                    context: format!("dialogues derived from {source_name}"),
                    message: format!("two derived questions would have the id {id:?}"),
                });
            }
            // user turn k is at index 2(k-1)
            let conversation = turns[..2 * (k - 1) + 1].to_vec();
            let mut q = Question::new(
                id,
                conversation.last().expect("a user turn").text.clone(),
                hop.gold.clone(),
            );
            q.conversation = Some(conversation);
            let mut labels = BTreeMap::new();
            labels.insert("derived".to_string(), derived.clone());
            labels.insert("source_question".to_string(), src.id.clone());
            labels.insert("turn".to_string(), k.to_string());
            labels.insert("hops".to_string(), format!("{n}hop"));
            let multi = if k == 1 { "N/A" } else { "Follow-up" };
            labels.insert("multi_turn".to_string(), multi.to_string());
            let r = &refs[k - 1];
            if k >= 2 && !r.is_empty() {
                let join =
                    |f: fn(&Replaced) -> &str| r.iter().map(f).collect::<Vec<_>>().join(JOIN);
                labels.insert("referent".to_string(), join(|x| &x.referent));
                labels.insert("referring_expression".to_string(), join(|x| x.expression));
            }
            q.labels = labels;
            questions.push(q);
        }
    }
    Ok(RawDataset {
        passages: raw.passages,
        questions,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::testutil::real_data_dir;
    use crate::model::Passage;

    fn sq(question: &str, answer: &str, gold: &[&str]) -> SubQuestion {
        SubQuestion {
            question: question.into(),
            answer: answer.into(),
            gold: gold.iter().map(|g| g.to_string()).collect(),
        }
    }

    fn question(id: &str, dec: Vec<SubQuestion>) -> Question {
        let mut q = Question::new(id, format!("whole question {id}"), vec!["x".into()]);
        q.chain = Some(dec.iter().map(|s| s.gold.clone()).collect());
        q.decomposition = Some(dec);
        q.labels.insert("shape".into(), "2hop1".into());
        q
    }

    fn raw(questions: Vec<Question>) -> RawDataset {
        RawDataset {
            passages: vec![Passage {
                id: "p1".into(),
                doc: None,
                title: "T".into(),
                text: "text".into(),
                header: None,
            }],
            questions,
        }
    }

    fn turn(speaker: &str, text: &str) -> Turn {
        Turn {
            speaker: speaker.into(),
            text: text.into(),
        }
    }

    #[test]
    fn expression_rules() {
        let e = referring_expression;
        // person
        assert_eq!(e("Who directed Big Eyes?", "Tim Burton"), "that person");
        assert_eq!(
            e("The director of Jump for Glory is who?", "Raoul Walsh"),
            "that person"
        );
        assert_eq!(e("Hello Love >> performer", "Hank Snow"), "that person");
        assert_eq!(e("#1 >> spouse", "Helena Bonham Carter"), "that person");
        assert_eq!(e("Who is the head of state of X?", "Ann"), "that person");
        // place
        assert_eq!(e("Where was X born?", "Paris"), "that place");
        assert_eq!(e("In which country is X located?", "France"), "that place");
        assert_eq!(e("What is the capital of X?", "Paris"), "that place");
        assert_eq!(e("Bubye River >> country", "Zimbabwe"), "that place");
        assert_eq!(
            e(
                "X >> located in the administrative territorial entity",
                "McDowell County"
            ),
            "that place"
        );
        // year / date
        assert_eq!(e("What year did #1 dissolve?", "1995"), "that year");
        assert_eq!(e("when did italy enter #3", "1915"), "that year");
        assert_eq!(e("When did #1 fall?", "June 6"), "that date");
        assert_eq!(e("X >> date of birth", "4 May 1901"), "that date");
        // number: wording or a numeric answer
        assert_eq!(e("how many publix stores are in #3", "35"), "that number");
        assert_eq!(e("What percentage was #1 ?", "5.1"), "that number");
        assert_eq!(e("What is the area code for Y?", "513"), "that number");
        assert_eq!(
            e("What amount of TEUs did #1 handle?", "273,282"),
            "that number"
        );
        // otherwise it
        assert_eq!(e("Which ensemble includes X?", "The Quartet"), "it");
        assert_eq!(e("David Jones >> sport", "rugby league"), "it");
        assert_eq!(e("", ""), "it");
        // only the relation of a knowledge-base hop is read: the subject's `Who` is a name
        assert_eq!(e("Who Killed Bambi? >> country", "UK"), "that place");
        assert_eq!(
            e("Where Eagles Dare >> director", "Brian Hutton"),
            "that person"
        );
        // the rule is on words, not substrings
        assert_eq!(
            e("What is the acronym for the statewide agency?", "TBI"),
            "it"
        );
    }

    #[test]
    fn agent_turn_states_the_answer_verbatim() {
        assert_eq!(agent_turn("Tim Burton"), "Tim Burton.");
        assert_eq!(agent_turn("  Washington, D.C."), "Washington, D.C.");
        assert_eq!(agent_turn("Who?"), "Who?");
        assert_eq!(agent_turn(" "), "I don't know.");
    }

    #[test]
    fn user_turn_replacement() {
        let dec = vec![
            sq("Who wrote Brand?", "Henrik Ibsen", &["a"]),
            sq("Where was #1 born?", "Skien", &["b"]),
            sq(
                "The #2 has what river? And the #1 , #12 and # and #3?",
                "Skienselva",
                &["c"],
            ),
        ];
        assert_eq!(user_turn(&dec, 1), ("Who wrote Brand?".to_string(), vec![]));
        let (t, r) = user_turn(&dec, 2);
        assert_eq!(t, "Where was that person born?");
        assert_eq!(
            r,
            [Replaced {
                expression: "that person",
                referent: "Henrik Ibsen".into()
            }]
        );
        let (t, r) = user_turn(&dec, 3);
        assert_eq!(
            t,
            "That place has what river? And that person , #12 and # and #3?"
        );
        let exprs: Vec<_> = r
            .iter()
            .map(|x| (x.expression, x.referent.as_str()))
            .collect();
        assert_eq!(
            exprs,
            [("that place", "Skien"), ("that person", "Henrik Ibsen")]
        );
        // a reference opening the turn is capitalised; `the` inside a word is kept
        let dec = vec![
            sq("X >> country", "Norway", &[]),
            sq("#1 >> capital; bathe #1", "Oslo", &[]),
        ];
        assert_eq!(
            user_turn(&dec, 2).0,
            "That place >> capital; bathe that place"
        );
        // a blank answer has nothing to refer to
        let dec = vec![sq("Who?", " ", &[]), sq("Where is #1?", "x", &[])];
        assert_eq!(user_turn(&dec, 2), ("Where is #1?".to_string(), vec![]));
    }

    #[test]
    fn two_hop_question() {
        let q = question(
            "2hop__1_2",
            vec![
                sq("Aschenbrödel >> composer", "Johann Strauss II", &["p6"]),
                sq("#1 >> country of citizenship", "Austria", &["p4", "p5"]),
            ],
        );
        let src = raw(vec![q]);
        let d = derive(src.clone(), "musique").unwrap();
        assert_eq!(d.passages, src.passages);
        assert_eq!(d.questions.len(), 2);
        let (a, b) = (&d.questions[0], &d.questions[1]);
        assert_eq!(a.id, "2hop__1_2::turn1");
        assert_eq!(b.id, "2hop__1_2::turn2");
        assert_eq!(a.text, "Aschenbrödel >> composer");
        assert_eq!(b.text, "That person >> country of citizenship");
        assert_eq!(a.gold, ["p6"]);
        assert_eq!(b.gold, ["p4", "p5"]);
        assert_eq!(a.conversation.as_deref().unwrap(), [turn("user", &a.text)]);
        assert_eq!(
            b.conversation.as_deref().unwrap(),
            [
                turn("user", "Aschenbrödel >> composer"),
                turn("agent", "Johann Strauss II."),
                turn("user", "That person >> country of citizenship"),
            ]
        );
        for q in [a, b] {
            assert_eq!(q.chain, None);
            assert_eq!(q.decomposition, None);
            assert_eq!(q.labels["derived"], "musique-decomposition");
            assert_eq!(q.labels["source_question"], "2hop__1_2");
            assert_eq!(q.labels["hops"], "2hop");
            assert!(
                !q.labels.contains_key("shape"),
                "source labels are not copied"
            );
        }
        assert_eq!(a.labels["turn"], "1");
        assert_eq!(a.labels["multi_turn"], "N/A");
        assert_eq!(a.labels.len(), 5, "no referent on turn 1");
        assert_eq!(b.labels["turn"], "2");
        assert_eq!(b.labels["multi_turn"], "Follow-up");
        assert_eq!(b.labels["referent"], "Johann Strauss II");
        assert_eq!(b.labels["referring_expression"], "that person");
    }

    #[test]
    fn three_hop_question_with_a_skipped_hop_and_odd_references() {
        let q = question(
            "3hop1__9",
            vec![
                sq("Where was Hans Edler from?", "Sweden", &["p17"]),
                // no gold: a turn of the dialogue, not a query
                sq("Who was king of #1 in 1920?", "Gustaf V", &[]),
                sq("When did #2 marry in #1 , not #4 or #0?", "1881", &["p9"]),
            ],
        );
        let d = derive(raw(vec![q]), "src").unwrap();
        let ids: Vec<_> = d.questions.iter().map(|q| q.id.as_str()).collect();
        assert_eq!(ids, ["3hop1__9::turn1", "3hop1__9::turn3"]);
        let last = &d.questions[1];
        assert_eq!(
            last.text,
            "When did that person marry in that place , not #4 or #0?"
        );
        assert_eq!(last.gold, ["p9"]);
        assert_eq!(
            last.conversation.as_deref().unwrap(),
            [
                turn("user", "Where was Hans Edler from?"),
                turn("agent", "Sweden."),
                turn("user", "Who was king of that place in 1920?"),
                turn("agent", "Gustaf V."),
                turn(
                    "user",
                    "When did that person marry in that place , not #4 or #0?"
                ),
            ]
        );
        assert_eq!(last.labels["turn"], "3");
        assert_eq!(last.labels["hops"], "3hop");
        assert_eq!(last.labels["multi_turn"], "Follow-up");
        assert_eq!(last.labels["derived"], "src-decomposition");
        assert_eq!(last.labels["referent"], "Gustaf V | Sweden");
        assert_eq!(
            last.labels["referring_expression"],
            "that person | that place"
        );
    }

    #[test]
    fn follow_up_without_reference_has_no_referent() {
        let q = question(
            "q",
            vec![
                sq("Who wrote X?", "A", &["p1"]),
                sq("Where is Y?", "B", &["p2"]),
                sq("What about #7?", "C", &["p3"]),
            ],
        );
        let d = derive(raw(vec![q]), "s").unwrap();
        for q in &d.questions[1..] {
            assert_eq!(q.labels["multi_turn"], "Follow-up");
            assert!(!q.labels.contains_key("referent"));
            assert!(!q.labels.contains_key("referring_expression"));
        }
        assert_eq!(
            d.questions[2].text, "What about #7?",
            "out of range: as written"
        );
    }

    #[test]
    fn short_or_missing_decompositions_are_skipped() {
        let plain = Question::new("plain", "no decomposition", vec!["p1".into()]);
        let one = question("one", vec![sq("Who?", "A", &["p1"])]);
        let d = derive(raw(vec![plain, one]), "s").unwrap();
        assert!(d.questions.is_empty());
        assert_eq!(d.passages.len(), 1);
    }

    #[test]
    fn colliding_ids_are_an_error() {
        let dec = || vec![sq("a", "A", &["p1"]), sq("b", "B", &["p1"])];
        let e = derive(raw(vec![question("x", dec()), question("x", dec())]), "s").unwrap_err();
        assert!(e.to_string().contains("x::turn1"), "{e}");
    }

    /// Every referent was stated verbatim by an agent turn before the user turn naming it.
    fn check_referents(d: &RawDataset) -> usize {
        let mut with_referent = 0;
        for q in &d.questions {
            let conv = q.conversation.as_ref().unwrap();
            assert_eq!(conv.last().unwrap().speaker, "user");
            assert_eq!(conv.last().unwrap().text, q.text);
            assert_eq!(
                conv.len(),
                2 * q.labels["turn"].parse::<usize>().unwrap() - 1
            );
            let Some(referents) = q.labels.get("referent") else {
                continue;
            };
            with_referent += 1;
            let exprs = q.labels["referring_expression"].split(JOIN).count();
            assert_eq!(referents.split(JOIN).count(), exprs, "{}", q.id);
            for r in referents.split(JOIN) {
                assert!(
                    conv[..conv.len() - 1]
                        .iter()
                        .any(|t| t.speaker == "agent" && t.text.contains(r)),
                    "{}: referent {r:?} not stated earlier",
                    q.id
                );
            }
        }
        with_referent
    }

    #[test]
    fn synthetic_dialogues() {
        let src = crate::synthetic::generate(&Default::default());
        let expected: usize = src
            .questions
            .iter()
            .filter_map(|q| q.decomposition.as_ref())
            .filter(|d| d.len() >= 2)
            .map(|d| d.iter().filter(|h| !h.gold.is_empty()).count())
            .sum();
        let d = derive(src.clone(), "synthetic").unwrap();
        assert_eq!(d.questions.len(), expected);
        // 30 2-hop, 21 3-hop, 9 4-hop, every hop with gold
        assert_eq!(expected, 30 * 2 + 21 * 3 + 9 * 4);
        assert_eq!(d.passages, src.passages);
        let follow_ups = d
            .questions
            .iter()
            .filter(|q| q.labels["turn"] != "1")
            .count();
        // every synthetic follow-up hop refers to the previous answer
        assert_eq!(check_referents(&d), follow_ups);
        assert!(d.questions.iter().all(|q| !q.text.contains('#')));
        assert_eq!(d, derive(src, "synthetic").unwrap(), "deterministic");
    }

    #[test]
    fn real_musique_dialogues() {
        let Some(root) = real_data_dir() else {
            return;
        };
        let m = root.join("musique-train100");
        let src = super::super::musique::read(
            &m.join("musique_train.json"),
            Some(&m.join("musique_train_corpus.json")),
        )
        .unwrap();
        let d = derive(src, "musique-train100").unwrap();
        let with_referent = check_referents(&d);
        let mut exprs: BTreeMap<&str, usize> = BTreeMap::new();
        for q in &d.questions {
            for e in q
                .labels
                .get("referring_expression")
                .into_iter()
                .flat_map(|e| e.split(JOIN))
            {
                *exprs.entry(e).or_default() += 1;
            }
        }
        println!(
            "musique-train100 dialogues: {} queries, {with_referent} with a referent, expressions {exprs:?}",
            d.questions.len()
        );
        // 68 2-hop + 27 3-hop + 5 4-hop, every hop with a supporting paragraph
        assert_eq!(d.questions.len(), 68 * 2 + 27 * 3 + 5 * 4);
    }
}
