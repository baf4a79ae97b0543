//! Turning the world into English: main passages, distractor paragraphs, and questions.
//!
//! Every relation has three families of templates: a *statement* for the subject's passage
//! ("{s} was founded by {o}."), a *noun phrase* that nests ("the founder of {x}"), and a
//! *question* ("Who founded {x}?"). Several paraphrases per family keep lexical overlap between
//! questions and gold passages realistic rather than guaranteed.

use std::collections::BTreeMap;

use super::kind::Kind;
use super::world::{Fact, Rel, World};
use crate::rng::SplitMix64;

/// Statement templates: `{s}` the subject reference, `{o}` the object name, `{y}` a year.
fn statements(rel: Rel) -> &'static [&'static str] {
    match rel {
        Rel::LocatedIn => &[
            "{s} lies in {o}.",
            "{s} is located in {o}.",
            "{s} is part of {o}.",
        ],
        Rel::Capital => &[
            "The capital of {s} is {o}.",
            "{s} has its capital at {o}.",
            "{o} serves as the capital of {s}.",
        ],
        Rel::HeadOfState => &[
            "The head of state of {s} is {o}.",
            "{o} serves as head of state of {s}.",
            "{s} is led by its head of state, {o}.",
        ],
        Rel::Mayor => &[
            "The mayor of {s} is {o}.",
            "{o} serves as mayor of {s}.",
            "{s} is governed by its mayor, {o}.",
        ],
        Rel::BornIn => &[
            "{s} was born in {o}.",
            "{s} was born and raised in {o}.",
            "{o} is the birthplace of {s}.",
        ],
        Rel::SpouseOf => &[
            "{s} is married to {o}.",
            "{s} married {o} in {y}.",
            "{s}'s spouse is {o}.",
        ],
        Rel::MemberOf => &[
            "{s} is a member of {o}.",
            "{s} joined {o} in {y} and remains a member.",
            "{s} performs as a member of {o}.",
        ],
        Rel::EducatedAt => &[
            "{s} studied at {o}.",
            "{s} graduated from {o}.",
            "{s} was educated at {o}.",
        ],
        Rel::FoundedBy => &[
            "{s} was founded by {o}.",
            "{o} founded {s}.",
            "{s} was established by {o}.",
        ],
        Rel::HeadquarteredIn => &[
            "{s} is headquartered in {o}.",
            "{s} has its head office in {o}.",
            "The headquarters of {s} are in {o}.",
        ],
        Rel::BasedIn => &[
            "{s} is based in {o}.",
            "{s} rehearses and performs in {o}, its home city.",
            "{s} has been resident in {o} since its first season.",
        ],
        Rel::CampusIn => &[
            "{s} has its main campus in {o}.",
            "The campus of {s} is in {o}.",
            "{s} is situated in the city of {o}.",
        ],
        Rel::DirectedBy => &[
            "{s} was directed by {o}.",
            "{o} directed {s}.",
            "{s} is the work of director {o}.",
        ],
        Rel::ProducedBy => &[
            "{s} was produced by {o}.",
            "{o} produced {s}.",
            "{s} was made at {o}.",
        ],
        Rel::Starring => &[
            "{s} stars {o} in the lead role.",
            "{o} plays the lead in {s}.",
            "The lead role in {s} is played by {o}.",
        ],
        Rel::WrittenBy => &[
            "{s} was written by {o}.",
            "{o} wrote {s}.",
            "{s} is the work of the author {o}.",
        ],
        Rel::PublishedBy => &[
            "{s} was published by {o}.",
            "{o} published {s}.",
            "{s} first appeared under the imprint of {o}.",
        ],
        Rel::ManufacturedBy => &[
            "{s} is manufactured by {o}.",
            "{o} manufactures {s}.",
            "{s} is built by {o}.",
        ],
        Rel::DesignedBy => &[
            "{s} was designed by {o}.",
            "{o} designed {s}.",
            "The designer of {s} is {o}.",
        ],
    }
}

/// Noun-phrase templates: `{x}` is the subject. The first list reads well whatever `{x}` is,
/// a name or a long nested phrase; the second (relative clauses that end in a verb, "the city
/// where {x} was born") only when `{x}` is a plain name.
fn noun_phrases(rel: Rel) -> (&'static [&'static str], &'static [&'static str]) {
    match rel {
        Rel::LocatedIn => (
            &["the country containing {x}"],
            &["the country in which {x} lies"],
        ),
        Rel::Capital => (&["the capital of {x}", "the capital city of {x}"], &[]),
        Rel::HeadOfState => (&["the head of state of {x}"], &[]),
        Rel::Mayor => (&["the mayor of {x}"], &[]),
        Rel::BornIn => (&["the birthplace of {x}"], &["the city where {x} was born"]),
        Rel::SpouseOf => (&["the spouse of {x}"], &["the person married to {x}"]),
        Rel::MemberOf => (
            &["the ensemble that includes {x}"],
            &["the ensemble {x} belongs to"],
        ),
        Rel::EducatedAt => (
            &["the alma mater of {x}"],
            &["the university where {x} studied"],
        ),
        Rel::FoundedBy => (&["the founder of {x}", "the person who founded {x}"], &[]),
        Rel::HeadquarteredIn => (
            &[
                "the home city of {x}",
                "the city that hosts the headquarters of {x}",
            ],
            &["the city where {x} is headquartered"],
        ),
        Rel::BasedIn => (&["the home city of {x}"], &["the city where {x} is based"]),
        Rel::CampusIn => (
            &[
                "the campus city of {x}",
                "the city that hosts the campus of {x}",
            ],
            &["the city where {x} has its campus"],
        ),
        Rel::DirectedBy => (&["the director of {x}", "the person who directed {x}"], &[]),
        Rel::ProducedBy => (
            &[
                "the studio that produced {x}",
                "the production studio of {x}",
            ],
            &[],
        ),
        Rel::Starring => (&["the lead actor of {x}", "the star of {x}"], &[]),
        Rel::WrittenBy => (&["the author of {x}", "the writer of {x}"], &[]),
        Rel::PublishedBy => (&["the publisher of {x}"], &[]),
        Rel::ManufacturedBy => (
            &["the manufacturer of {x}", "the company that makes {x}"],
            &[],
        ),
        Rel::DesignedBy => (&["the designer of {x}"], &[]),
    }
}

/// Question templates: `{x}` is the subject. As for noun phrases, the first list ends with
/// `{x}` and suits any subject; the second only a name or a `#k` reference.
fn questions(rel: Rel) -> (&'static [&'static str], &'static [&'static str]) {
    match rel {
        Rel::LocatedIn => (
            &["Which country contains {x}?"],
            &[
                "In which country is {x} located?",
                "Which country is {x} in?",
            ],
        ),
        Rel::Capital => (&["What is the capital of {x}?"], &[]),
        Rel::HeadOfState => (&["Who is the head of state of {x}?"], &[]),
        Rel::Mayor => (&["Who is the mayor of {x}?"], &[]),
        Rel::BornIn => (
            &["What is the birthplace of {x}?"],
            &["Where was {x} born?", "In which city was {x} born?"],
        ),
        Rel::SpouseOf => (&["Who is the spouse of {x}?"], &["Who is {x} married to?"]),
        Rel::MemberOf => (
            &["Which ensemble includes {x}?"],
            &["Which ensemble is {x} a member of?"],
        ),
        Rel::EducatedAt => (
            &["Which university is the alma mater of {x}?"],
            &["Where did {x} study?", "Which university did {x} attend?"],
        ),
        Rel::FoundedBy => (&["Who founded {x}?", "Who is the founder of {x}?"], &[]),
        Rel::HeadquarteredIn => (
            &[
                "What is the home city of {x}?",
                "Which city hosts the headquarters of {x}?",
            ],
            &[
                "Where is {x} headquartered?",
                "In which city is {x} headquartered?",
            ],
        ),
        Rel::BasedIn => (
            &["What is the home city of {x}?"],
            &["In which city is {x} based?"],
        ),
        Rel::CampusIn => (
            &[
                "In which city is the campus of {x}?",
                "Which city hosts the campus of {x}?",
            ],
            &[],
        ),
        Rel::DirectedBy => (&["Who directed {x}?", "Who is the director of {x}?"], &[]),
        Rel::ProducedBy => (&["Which studio produced {x}?"], &[]),
        Rel::Starring => (
            &[
                "Who played the lead role in {x}?",
                "Who is the star of {x}?",
            ],
            &[],
        ),
        Rel::WrittenBy => (&["Who wrote {x}?", "Who is the author of {x}?"], &[]),
        Rel::PublishedBy => (
            &["Which publisher released {x}?", "Who published {x}?"],
            &[],
        ),
        Rel::ManufacturedBy => (&["Which company manufactures {x}?"], &[]),
        Rel::DesignedBy => (&["Who designed {x}?"], &[]),
    }
}

/// Pick from `any`, or from `any` and `simple_only` together when the subject is simple.
fn pick_template(
    rng: &mut SplitMix64,
    (any, simple_only): (&'static [&'static str], &'static [&'static str]),
    simple: bool,
) -> &'static str {
    if simple {
        let k = rng.below(any.len() + simple_only.len());
        if k < any.len() {
            any[k]
        } else {
            simple_only[k - any.len()]
        }
    } else {
        rng.pick(any)
    }
}

/// A noun phrase for one hop; `simple` says `x` is a plain name rather than a nested phrase.
pub(crate) fn noun_phrase(rng: &mut SplitMix64, rel: Rel, x: &str, simple: bool) -> String {
    pick_template(rng, noun_phrases(rel), simple).replace("{x}", x)
}

/// A question for one hop; `simple` says `x` is a plain name or `#k` rather than a phrase.
pub(crate) fn question(rng: &mut SplitMix64, rel: Rel, x: &str, simple: bool) -> String {
    pick_template(rng, questions(rel), simple).replace("{x}", x)
}

fn capitalise_first(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

fn pronoun(w: &World, e: usize) -> (&'static str, &'static str) {
    let ent = &w.entities[e];
    match ent.kind {
        Kind::Person if ent.named.female => ("she", "her"),
        Kind::Person => ("he", "his"),
        _ => ("it", "its"),
    }
}

/// How an entity is referred to after its first mention in its own passage.
fn short_ref(rng: &mut SplitMix64, w: &World, e: usize) -> String {
    let ent = &w.entities[e];
    match (ent.kind, rng.below(2)) {
        (_, 0) => ent.name().to_string(),
        (Kind::Person, _) => ent
            .named
            .surname
            .clone()
            .unwrap_or_else(|| ent.name().to_string()),
        (k, _) => k.generic().to_string(),
    }
}

/// What a person does, derived from the roles the world gives them (up to two), so that
/// passages stay coherent: a film's director is a film director, an ensemble member a musician.
fn profession(w: &World, p: usize) -> String {
    let e = &w.entities[p];
    let is = |rel: Rel| w.subjects(p, rel).next().is_some();
    let musician = [
        "cellist",
        "violinist",
        "singer",
        "oboist",
        "pianist",
        "percussionist",
    ];
    let mut roles: Vec<&str> = [
        (is(Rel::DirectedBy), "film director"),
        (is(Rel::Starring), "actor"),
        (is(Rel::WrittenBy), "novelist"),
        (is(Rel::DesignedBy), "industrial designer"),
        (w.object(p, Rel::MemberOf).is_some(), musician[e.flavor % 6]),
        (is(Rel::HeadOfState) || is(Rel::Mayor), "politician"),
        (is(Rel::FoundedBy), "entrepreneur"),
    ]
    .into_iter()
    .filter_map(|(yes, r)| yes.then_some(r))
    .collect();
    if roles.is_empty() {
        roles.push(
            [
                "historian",
                "chemist",
                "photographer",
                "architect",
                "economist",
                "journalist",
                "painter",
                "civil engineer",
                "translator",
                "botanist",
                "surgeon",
                "librarian",
            ][e.flavor % 12],
        );
    }
    roles.truncate(2);
    roles.join(" and ")
}

/// The last year anything in the world happens.
const PRESENT: u32 = 2024;

/// A year `lo..=hi` years after `year`, but never after [`PRESENT`].
fn later_year(rng: &mut SplitMix64, year: u32, lo: u32, hi: u32) -> u32 {
    let last = (year + hi).min(PRESENT);
    let first = (year + lo).min(last);
    rng.range(first, last)
}

/// "a" or "an" before `word`.
fn article(word: &str) -> &'static str {
    if word.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    }
}

/// The opening sentences of an entity's main passage (what it is) and one closing filler fact.
fn intro_and_filler(w: &World, e: usize) -> (String, String) {
    let ent = &w.entities[e];
    let name = ent.name();
    let (y, n, f) = (ent.year, ent.number, ent.flavor);
    let (pron, _) = pronoun(w, e);
    let d = descriptor(ent.kind, f);
    match ent.kind {
        Kind::Country => (
            format!("{name} is {d}. It adopted its present constitution in {y}."),
            format!("About {n} million people live in {name}."),
        ),
        Kind::City => (
            format!("{name} is {d} first recorded in {y}."),
            format!("The city has roughly {n},000 inhabitants."),
        ),
        Kind::Person => {
            let job = profession(w, e);
            let article = article(&job);
            (
                format!("{name} (born {y}) is {article} {job}."),
                format!(
                    "{} is known for {d} and has received {n} national awards.",
                    capitalise_first(pron)
                ),
            )
        }
        Kind::Company => (
            format!("{name} is {d} that began trading in {y}."),
            format!("It employs about {n} people."),
        ),
        Kind::Studio => (
            format!("{name} is {d}, in business since {y}."),
            format!("It has released more than {} feature films.", n / 40 + 5),
        ),
        Kind::Publisher => (
            format!("{name} is {d}, in business since {y}."),
            format!("Its backlist runs to about {} titles.", n / 10 + 20),
        ),
        Kind::Ensemble => (
            format!("{name} is {d} formed in {y}."),
            format!("It has {n} regular members."),
        ),
        Kind::University => (
            format!("{name} is {d} established in {y}."),
            format!("It has about {n},000 students."),
        ),
        Kind::Film => (
            format!("{name} is a {y} {d} film."),
            format!("It runs for {n} minutes."),
        ),
        Kind::Book => (
            format!("{name} is a {d} first published in {y}."),
            format!("It runs to {n} pages."),
        ),
        Kind::Product => (
            format!("{name} is {} {d} launched in {y}.", article(d)),
            format!("More than {n},000 units were sold in its first year."),
        ),
    }
}

/// The phrase that sets an entity of `kind` with flavour `f` apart in its introduction: what a
/// place or an organisation is, a work's genre, what a person is known for.
fn descriptor(kind: Kind, f: usize) -> &'static str {
    match kind {
        Kind::Country => [
            "a small coastal country",
            "a mountainous, landlocked country",
            "an island country",
            "a country of broad river plains",
            "a highland republic",
            "a federal country of lakes and forests",
        ][f % 6],
        Kind::City => [
            "a river port",
            "a hill town",
            "a university town",
            "an industrial city",
            "a coastal resort city",
            "a railway junction city",
        ][f % 6],
        Kind::Person => [
            "a restless, exacting style",
            "long collaborations with younger colleagues",
            "a series of widely read essays",
            "an unusually private public life",
            "a dry sense of humour in interviews",
            "decades of work on a single long project",
        ][f % 6],
        Kind::Company => [
            "a maker of precision pumps",
            "an electronics manufacturer",
            "a shipbuilding and engineering firm",
            "a maker of kitchen appliances",
            "a manufacturer of bicycles and small motors",
            "an optical instruments company",
        ][f % 6],
        Kind::Studio => [
            "an independent film studio",
            "a film production company known for its documentaries",
            "a studio specialising in period dramas",
            "a film studio with a large sound stage",
            "a studio known for low-budget thrillers",
            "a family-owned film studio",
        ][f % 6],
        Kind::Publisher => [
            "a publishing house specialising in fiction",
            "a small literary press",
            "a publisher of translated literature",
            "an academic and general-interest publisher",
            "a publisher of crime fiction and memoirs",
            "a publisher of illustrated books",
        ][f % 6],
        Kind::Ensemble => [
            "a chamber music group",
            "an amateur choral society",
            "an early-music ensemble",
            "a contemporary music group",
            "a touring folk ensemble",
            "a youth orchestra",
        ][f % 6],
        Kind::University => [
            "a public research university",
            "a technical university",
            "a small liberal arts college",
            "a university known for its medical school",
            "an agricultural university",
            "a university of music and fine arts",
        ][f % 6],
        Kind::Film => [
            "drama",
            "thriller",
            "comedy",
            "documentary",
            "science-fiction",
            "historical",
            "romantic",
            "animated",
        ][f % 8],
        Kind::Book => [
            "novel",
            "short-story collection",
            "memoir",
            "crime novel",
            "travel book",
            "poetry collection",
            "historical novel",
            "children's book",
        ][f % 8],
        Kind::Product => [
            "portable radio",
            "electric kettle",
            "folding bicycle",
            "desk lamp",
            "digital camera",
            "pocket calculator",
            "sewing machine",
            "coffee grinder",
        ][f % 8],
    }
}

/// The body of an entity's main passage: what it is, every fact it is the subject of, a filler.
pub(crate) fn main_text(rng: &mut SplitMix64, w: &World, e: usize) -> String {
    let (intro, filler) = intro_and_filler(w, e);
    let mut facts: Vec<Fact> = w.facts_of(e);
    rng.shuffle(&mut facts);
    let mut out = vec![intro];
    for f in facts {
        let s = short_ref(rng, w, e);
        let y = later_year(rng, w.entities[e].year, 18, 40);
        let t = rng
            .pick(statements(f.rel))
            .replace("{s}", &s)
            .replace("{o}", w.entities[f.obj].name())
            .replace("{y}", &y.to_string());
        out.push(capitalise_first(&t));
    }
    out.push(filler);
    out.join(" ")
}

/// Section titles of distractor paragraphs, by kind.
pub(crate) fn sections(kind: Kind) -> &'static [&'static str] {
    match kind {
        Kind::Country | Kind::City => &["History", "Economy", "Culture"],
        Kind::Person => &["Later life", "Career", "Reception"],
        Kind::Company | Kind::Studio | Kind::Publisher => &["History", "Operations", "Reputation"],
        Kind::Ensemble => &["History", "Recordings", "Touring"],
        Kind::University => &["History", "Academics", "Research"],
        Kind::Film => &["Production", "Reception", "Legacy"],
        Kind::Book => &["Publication history", "Adaptations", "Reception"],
        Kind::Product => &["Design and production", "Reception", "Legacy"],
    }
}

/// The first sentence of distractor paragraph `k`, aligned with [`sections`].
fn openings(kind: Kind) -> &'static [&'static str] {
    match kind {
        Kind::Country => &[
            "The history of {name} is longer than its present borders suggest.",
            "The economy of {name} has changed a great deal in recent decades.",
            "The culture of {name} draws on many neighbouring traditions.",
        ],
        Kind::City => &[
            "The history of {name} is told in its streets and bridges.",
            "The economy of {name} rests on trade and services.",
            "Cultural life in {name} centres on its old market square.",
        ],
        Kind::Person => &[
            "The later life of {name} was quieter than the early years.",
            "The career of {name} took several unexpected turns.",
            "Opinions of {name} have shifted over the years.",
        ],
        Kind::Company | Kind::Studio | Kind::Publisher => &[
            "The history of {name} includes several changes of ownership.",
            "The day-to-day operations of {name} are spread over several sites.",
            "The reputation of {name} has risen and fallen with the market.",
        ],
        Kind::Ensemble => &[
            "The history of {name} began with informal rehearsals.",
            "The recordings of {name} are widely collected.",
            "{name} tours regularly.",
        ],
        Kind::University => &[
            "The history of {name} is one of slow growth.",
            "Teaching at {name} is organised in small seminars.",
            "Research at {name} attracts funding from abroad.",
        ],
        Kind::Film => &[
            "The production of {name} was long and troubled.",
            "The reception of {name} was mixed at first.",
            "The legacy of {name} is still debated by critics.",
        ],
        Kind::Book => &[
            "The publication history of {name} is complicated.",
            "{name} has been adapted several times.",
            "The reception of {name} was warm from the start.",
        ],
        Kind::Product => &[
            "The design and production of {name} went through many prototypes.",
            "The reception of {name} was enthusiastic.",
            "The legacy of {name} is visible in later devices.",
        ],
    }
}

/// Sentences for distractor paragraphs: on-topic, naming other entities in near-miss roles
/// ("briefly engaged to", "originally attached to direct", "opened a regional office in"), but
/// never stating a fact of the world.
fn distractor_pool(kind: Kind) -> &'static [&'static str] {
    match kind {
        Kind::Person => &[
            "In later life {ref} divided {poss} time between {city} and {city2}.",
            "{ref} turned down a teaching post at {univ} in {y}.",
            "{pron} has often described {person} as {poss} most important influence.",
            "Biographers disagree about how much the city where {pron} was born shaped {poss} work.",
            "{ref} once shared a stage with {ensemble} at a benefit concert in {city}.",
            "A long friendship with {person} ended abruptly in {y2}.",
            "{pron} spent several years working in {country} before settling in {city2}.",
            "An exhibition about {poss} life was held in {city} in {y2}.",
            "{ref} was briefly engaged to {person2}, but the two never married.",
            "{ref} has lectured at {univ} but never studied there.",
        ],
        Kind::Company | Kind::Studio | Kind::Publisher => &[
            "{ref} opened a regional office in {city} in {y}.",
            "Among its early investors was {person}, who later sat on its board.",
            "In {y} {ref} was briefly in talks to merge with {peer}.",
            "Many of its senior staff were trained at {univ}.",
            "{ref} moved its archive to a warehouse in {city2} after a fire in {y}.",
            "{person2} served as its chief executive for much of the {decade}.",
            "{ref} has sponsored {ensemble} since {y}.",
            "Its largest foreign market is {country}.",
        ],
        Kind::Ensemble => &[
            "{ref} toured {country} in {y}.",
            "{person} conducted the ensemble for one season as a guest.",
            "Its best-known recordings were made in a church in {city}.",
            "{ref} has been sponsored by {company} since {y}.",
            "It shares a summer festival with {peer}.",
            "Several of its players previously studied at {univ}.",
            "{person2} wrote a piece for the ensemble in {y}.",
        ],
        Kind::University => &[
            "{ref} runs an exchange programme with {peer}.",
            "{person} delivered its founders' lecture in {y}.",
            "It opened a field research station in the hills near {city} in {y}.",
            "{ref} received a large endowment from {company} in {y}.",
            "Many of its graduates find work in {country}.",
            "{person2} chaired its board of governors during the {decade}.",
        ],
        Kind::Film => &[
            "{ref} was partly shot on location in {city}.",
            "{person} was originally attached to direct the film but left the project in {y}.",
            "The film was distributed in {country} by {studio}.",
            "Critics compared it to the early work of {person2}.",
            "{person2} turned down the lead role.",
            "A restored version premiered in {city2} in {y}.",
        ],
        Kind::Book => &[
            "{ref} was adapted for the stage in {city} in {y}.",
            "An early draft was circulated privately by {person}.",
            "A translated edition appeared from {publisher} in {y}.",
            "{person2} has called it the most overrated book of the {decade}.",
            "The manuscript is held in the library of {univ}.",
            "It sold especially well in {country}.",
        ],
        Kind::Product => &[
            "A licensed version of {ref} was assembled by {company} in {city}.",
            "{person} reviewed it favourably in {y}.",
            "It competed with devices made by {company2}.",
            "Early prototypes were tested at {univ}.",
            "It sold especially well in {country}.",
            "{person2} praised its design in a lecture in {city2}.",
        ],
        Kind::City => &[
            "{ref} is twinned with {city}.",
            "Many of its residents commute to {city2}.",
            "{person} served as deputy mayor of {name} for a single term.",
            "Its largest employer is {company}.",
            "Its old town was heavily rebuilt after a flood in {y}.",
            "A rail link to {city2} opened in {y2}.",
            "{ensemble} gives an open-air concert in {name} every summer.",
        ],
        Kind::Country => &[
            "{ref} has a long-running border dispute with {country}.",
            "{person} led the opposition in the {y} elections.",
            "Its main trading partner is {country2}.",
            "The second city of {name} is {own_city}.",
            "{company} is one of the largest private employers in the country.",
            "{person2} served as its ambassador to {country} during the {decade}.",
        ],
    }
}

/// Resolves placeholders of a distractor paragraph, each to one consistent choice.
struct Filler<'a> {
    w: &'a World,
    e: usize,
    /// Entities that must not be named: the entity, everything it is linked to by a fact.
    exclude: Vec<usize>,
    chosen: BTreeMap<&'static str, String>,
    used: Vec<usize>,
}

impl Filler<'_> {
    /// A uniformly drawn entity of `kind` that is neither excluded nor used yet.
    ///
    /// The draw is the r-th admissible entity in ascending order, as a pick from the filtered
    /// list of the kind would be; the list itself is never built, since the entities of a kind
    /// are one range and only the few excluded and used ones have to be skipped.
    fn entity_of(&mut self, rng: &mut SplitMix64, kind: Kind) -> Option<String> {
        let range = self.w.kind_range(kind);
        let mut skip: Vec<usize> = self
            .exclude
            .iter()
            .chain(&self.used)
            .copied()
            .filter(|i| range.contains(i))
            .collect();
        skip.sort_unstable();
        skip.dedup();
        let admissible = range.len() - skip.len();
        if admissible == 0 {
            return None;
        }
        let mut x = range.start + rng.below(admissible);
        for &s in &skip {
            if s <= x {
                x += 1;
            } else {
                break;
            }
        }
        self.used.push(x);
        Some(self.w.entities[x].name().to_string())
    }

    fn resolve(&mut self, rng: &mut SplitMix64, key: &'static str) -> Option<String> {
        if let Some(v) = self.chosen.get(key) {
            return Some(v.clone());
        }
        let ent = &self.w.entities[self.e];
        let (pron, poss) = pronoun(self.w, self.e);
        let v = match key {
            "name" => Some(ent.name().to_string()),
            "ref" => Some(short_ref(rng, self.w, self.e)),
            "pron" => Some(pron.to_string()),
            "poss" => Some(poss.to_string()),
            // A person's near misses happen in adult life; anything else's after it began.
            "y" | "y2" if ent.kind == Kind::Person => {
                Some(later_year(rng, ent.year, 22, 55).to_string())
            }
            "y" | "y2" => Some(later_year(rng, ent.year, 5, 40).to_string()),
            "decade" => Some(format!("{}s", later_year(rng, ent.year, 10, 30) / 10 * 10)),
            "city" | "city2" => self.entity_of(rng, Kind::City),
            "person" | "person2" => self.entity_of(rng, Kind::Person),
            "country" | "country2" => self.entity_of(rng, Kind::Country),
            "univ" => self.entity_of(rng, Kind::University),
            "ensemble" => self.entity_of(rng, Kind::Ensemble),
            "company" | "company2" => self.entity_of(rng, Kind::Company),
            "studio" => self.entity_of(rng, Kind::Studio),
            "publisher" => self.entity_of(rng, Kind::Publisher),
            "peer" => {
                let k = ent.kind;
                self.entity_of(rng, k)
            }
            "own_city" => {
                let mut own: Vec<usize> = self
                    .w
                    .subjects(self.e, Rel::LocatedIn)
                    .filter(|c| !self.exclude.contains(c))
                    .collect();
                // Ascending, as a scan of all entities would list them.
                own.sort_unstable();
                own.dedup();
                if own.is_empty() {
                    None
                } else {
                    Some(self.w.entities[rng.pick(&own)].name().to_string())
                }
            }
            _ => unreachable!("unknown placeholder {{{key}}}"),
        }?;
        self.chosen.insert(key, v.clone());
        Some(v)
    }

    /// Fill a template; `None` when a placeholder has no admissible value.
    fn fill(&mut self, rng: &mut SplitMix64, template: &'static str) -> Option<String> {
        let mut out = String::new();
        let mut rest = template;
        while let Some(open) = rest.find('{') {
            out.push_str(&rest[..open]);
            let close = open + rest[open..].find('}').expect("unclosed placeholder");
            let key: &'static str = &rest[open + 1..close];
            out.push_str(&self.resolve(rng, key)?);
            rest = &rest[close + 1..];
        }
        out.push_str(rest);
        Some(capitalise_first(&out))
    }
}

/// The body of distractor paragraph number `k` (0-based) of entity `e`: same document, on topic,
/// full of near misses, and stating no fact of the world.
pub(crate) fn distractor_text(rng: &mut SplitMix64, w: &World, e: usize, k: usize) -> String {
    // Only membership matters, so the indexes by subject and object give the same set as a
    // scan of every fact.
    let mut exclude: Vec<usize> = vec![e];
    exclude.extend(w.by_subject[e].iter().map(|&f| w.facts[f].obj));
    exclude.extend(w.by_object[e].iter().map(|&f| w.facts[f].subj));
    let mut filler = Filler {
        w,
        e,
        exclude,
        chosen: BTreeMap::new(),
        used: Vec::new(),
    };
    let ent = &w.entities[e];
    let openings = openings(ent.kind);
    let mut out = vec![openings[k % openings.len()].replace("{name}", ent.name())];
    let mut pool: Vec<&'static str> = distractor_pool(ent.kind).to_vec();
    rng.shuffle(&mut pool);
    for t in pool {
        if out.len() >= 4 {
            break;
        }
        if let Some(s) = filler.fill(rng, t) {
            out.push(s);
        }
    }
    out.join(" ")
}
