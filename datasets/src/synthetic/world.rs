//! The world itself: typed entities and the typed, functional facts between them.
//!
//! Every fact `(subject, relation, object)` is *functional* from the subject's side (a city lies
//! in exactly one country, a film has exactly one director), and it is stated in exactly one
//! passage: the subject's main passage. That is what makes a relation path a well-posed
//! question: following it from a named start entity reaches exactly one answer, and each hop is
//! supported by exactly one passage.

use std::collections::{BTreeSet, VecDeque};
use std::ops::Range;

use super::kind::Kind;
use super::names::{Named, Namer};
use super::ranked::RankedSet;
use crate::rng::SplitMix64;

/// Relation types. Every one is functional from the subject's side.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Rel {
    /// City -> Country.
    LocatedIn,
    /// Country -> City.
    Capital,
    /// Country -> Person.
    HeadOfState,
    /// City -> Person.
    Mayor,
    /// Person -> City.
    BornIn,
    /// Person -> Person (stated on one side only).
    SpouseOf,
    /// Person -> Ensemble.
    MemberOf,
    /// Person -> University.
    EducatedAt,
    /// Company/Studio/Publisher/Ensemble/University -> Person.
    FoundedBy,
    /// Company/Studio/Publisher -> City.
    HeadquarteredIn,
    /// Ensemble -> City.
    BasedIn,
    /// University -> City.
    CampusIn,
    /// Film -> Person.
    DirectedBy,
    /// Film -> Studio.
    ProducedBy,
    /// Film -> Person.
    Starring,
    /// Book -> Person.
    WrittenBy,
    /// Book -> Publisher.
    PublishedBy,
    /// Product -> Company.
    ManufacturedBy,
    /// Product -> Person.
    DesignedBy,
}

impl Rel {
    /// Snake-case name (for question labels).
    pub(crate) fn label(self) -> &'static str {
        match self {
            Rel::LocatedIn => "located_in",
            Rel::Capital => "capital",
            Rel::HeadOfState => "head_of_state",
            Rel::Mayor => "mayor",
            Rel::BornIn => "born_in",
            Rel::SpouseOf => "spouse_of",
            Rel::MemberOf => "member_of",
            Rel::EducatedAt => "educated_at",
            Rel::FoundedBy => "founded_by",
            Rel::HeadquarteredIn => "headquartered_in",
            Rel::BasedIn => "based_in",
            Rel::CampusIn => "campus_in",
            Rel::DirectedBy => "directed_by",
            Rel::ProducedBy => "produced_by",
            Rel::Starring => "starring",
            Rel::WrittenBy => "written_by",
            Rel::PublishedBy => "published_by",
            Rel::ManufacturedBy => "manufactured_by",
            Rel::DesignedBy => "designed_by",
        }
    }
}

/// One entity of the world.
#[derive(Debug, Clone)]
pub(crate) struct Entity {
    pub(crate) kind: Kind,
    pub(crate) named: Named,
    /// The earlier entity of the same kind whose name this one deliberately resembles.
    pub(crate) twin_of: Option<usize>,
    /// A year: birth, founding, release or launch.
    pub(crate) year: u32,
    /// Index into the kind's descriptor tables (profession, genre, category, ...).
    pub(crate) flavor: usize,
    /// A second free number (population, running time, page count, ...).
    pub(crate) number: u32,
}

impl Entity {
    pub(crate) fn name(&self) -> &str {
        &self.named.name
    }
}

/// A fact, stated in the subject's main passage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fact {
    pub(crate) subj: usize,
    pub(crate) rel: Rel,
    pub(crate) obj: usize,
}

/// Entities, facts, and indexes over them.
#[derive(Debug, Clone)]
pub(crate) struct World {
    pub(crate) entities: Vec<Entity>,
    pub(crate) facts: Vec<Fact>,
    /// Fact indices by subject, in insertion order.
    pub(crate) by_subject: Vec<Vec<usize>>,
    /// Fact indices by object, in insertion order.
    pub(crate) by_object: Vec<Vec<usize>>,
    /// The entities of each kind: kinds are generated one after another, so each is a range.
    kind_ranges: Vec<(Kind, Range<usize>)>,
    /// How many times the name inventory ran out for a root class and was widened.
    #[cfg(test)]
    pub(crate) name_widenings: usize,
}

impl World {
    /// The entity indices of one kind, in generation order.
    pub(crate) fn kind_range(&self, kind: Kind) -> Range<usize> {
        self.kind_ranges
            .iter()
            .find(|(k, _)| *k == kind)
            .map(|(_, r)| r.clone())
            .expect("every kind has a range")
    }

    /// Entity indices of one kind, in generation order.
    pub(crate) fn of_kind(&self, kind: Kind) -> Vec<usize> {
        self.kind_range(kind).collect()
    }

    /// Subjects of the facts `(subject, rel, obj)`, in insertion order.
    pub(crate) fn subjects(&self, obj: usize, rel: Rel) -> impl Iterator<Item = usize> + '_ {
        self.by_object[obj]
            .iter()
            .map(|&f| self.facts[f])
            .filter(move |f| f.rel == rel)
            .map(|f| f.subj)
    }

    /// Every object of `(subj, rel)`.
    pub(crate) fn objects(&self, subj: usize, rel: Rel) -> Vec<usize> {
        self.by_subject[subj]
            .iter()
            .map(|&f| self.facts[f])
            .filter(|f| f.rel == rel)
            .map(|f| f.obj)
            .collect()
    }

    /// The single object of `(subj, rel)`, if there is exactly one.
    pub(crate) fn object(&self, subj: usize, rel: Rel) -> Option<usize> {
        match self.objects(subj, rel).as_slice() {
            [o] => Some(*o),
            _ => None,
        }
    }

    /// Facts whose subject is `subj`, in insertion order.
    pub(crate) fn facts_of(&self, subj: usize) -> Vec<Fact> {
        self.by_subject[subj]
            .iter()
            .map(|&f| self.facts[f])
            .collect()
    }

    fn add(&mut self, subj: usize, rel: Rel, obj: usize) {
        debug_assert!(self.object(subj, rel).is_none(), "relations are functional");
        self.by_subject[subj].push(self.facts.len());
        self.by_object[obj].push(self.facts.len());
        self.facts.push(Fact { subj, rel, obj });
    }
}

/// How many entities of each kind a world of `n` entities has (the remainder goes to persons).
pub(crate) fn kind_counts(n: usize) -> Vec<(Kind, usize)> {
    let mut counts: Vec<(Kind, usize)> = Kind::ALL
        .iter()
        .map(|&k| (k, (n * k.share().0 / 1000).max(k.share().1)))
        .collect();
    // At least two cities per country.
    let countries = counts[0].1;
    counts[1].1 = counts[1].1.max(2 * countries);
    let others: usize = counts
        .iter()
        .filter(|(k, _)| *k != Kind::Person)
        .map(|(_, c)| c)
        .sum();
    counts[2].1 = n.saturating_sub(others).max(Kind::Person.share().1);
    counts
}

/// Pick an element of `pool` that is not in `avoid`, trying a few times; any element otherwise.
fn pick_avoiding(rng: &mut SplitMix64, pool: &[usize], avoid: &[usize]) -> usize {
    for _ in 0..16 {
        let x = rng.pick(pool);
        if !avoid.contains(&x) {
            return x;
        }
    }
    rng.pick(pool)
}

/// Build the world: names (stream `names`), then facts and attributes (stream `world`).
///
/// Each step below draws from the `world` stream in turn, and the synthetic sets are pinned by
/// digest: the steps' order is the draw order, and must not change.
pub(crate) fn build(seed: u64, n_entities: usize, confusable_percent: u32) -> World {
    let mut names_rng = SplitMix64::stream(seed, "names");
    let mut rng = SplitMix64::stream(seed, "world");
    let mut w = name_entities(&mut names_rng, n_entities, confusable_percent);
    let city_country = place_cities(&mut w, &mut rng);
    appoint_officials(&mut w, &mut rng, &city_country);
    relate_persons(&mut w, &mut rng);
    found_organisations(&mut w, &mut rng);
    credit_works(&mut w, &mut rng);
    draw_attributes(&mut w, &mut rng);
    w
}

/// The world's entities without facts: named kind by kind (from `names_rng`), a share
/// (`confusable_percent`) of them confusable twins of an earlier same-kind one, so retrieval
/// has near-duplicate names to tell apart.
fn name_entities(names_rng: &mut SplitMix64, n_entities: usize, confusable_percent: u32) -> World {
    let mut namer = Namer::default();
    let mut entities: Vec<Entity> = Vec::with_capacity(n_entities);
    let mut kind_ranges = Vec::with_capacity(Kind::ALL.len());
    for (kind, count) in kind_counts(n_entities) {
        let first = entities.len();
        // Earlier entities of this kind that are neither a twin nor twinned, by position in
        // the kind: a draw of rank r is the r-th of them in ascending order.
        let mut free = RankedSet::new(count);
        for i in 0..count {
            let twin_of = if i >= 1 && names_rng.chance(confusable_percent) {
                if free.len() == 0 {
                    None
                } else {
                    Some(first + free.nth(names_rng.below(free.len())))
                }
            } else {
                None
            };
            let named = namer.name(names_rng, kind, twin_of.map(|j| &entities[j].named));
            // A fallback to a fresh name is not a twin.
            let twin_of = twin_of.filter(|&j| {
                let r = &entities[j].named.roots;
                named.roots.iter().any(|x| r.contains(x))
            });
            match twin_of {
                Some(j) => free.remove(j - first),
                None => free.insert(i),
            }
            entities.push(Entity {
                kind,
                named,
                twin_of,
                year: 0,
                flavor: 0,
                number: 0,
            });
        }
        kind_ranges.push((kind, first..entities.len()));
    }
    let n = entities.len();
    World {
        entities,
        facts: Vec::new(),
        by_subject: vec![Vec::new(); n],
        by_object: vec![Vec::new(); n],
        kind_ranges,
        #[cfg(test)]
        name_widenings: namer.widenings(),
    }
}

/// The twin's object for `rel`, so that a confusable entity gets a *different* object.
fn twin_obj(w: &World, e: usize, rel: Rel) -> Vec<usize> {
    w.entities[e]
        .twin_of
        .and_then(|t| w.object(t, rel))
        .into_iter()
        .collect()
}

/// Cities -> countries: two per country first (so every country has a capital and a second
/// city), the rest at random. Returns each city's country, by entity index.
fn place_cities(w: &mut World, rng: &mut SplitMix64) -> Vec<usize> {
    let countries = w.of_kind(Kind::Country);
    let cities = w.of_kind(Kind::City);
    let mut order = cities.clone();
    rng.shuffle(&mut order);
    let mut city_country = vec![usize::MAX; w.entities.len()];
    for (k, &c) in order.iter().enumerate() {
        let country = if k < 2 * countries.len() {
            countries[k % countries.len()]
        } else {
            let avoid = twin_obj(w, c, Rel::LocatedIn);
            pick_avoiding(rng, &countries, &avoid)
        };
        city_country[c] = country;
    }
    for &c in &cities {
        w.add(c, Rel::LocatedIn, city_country[c]);
    }
    city_country
}

/// Capitals, heads of state and mayors: a capital among the country's own cities
/// (`city_country`), and distinct persons as officials where there are enough, so an
/// official's passage answers for one office.
fn appoint_officials(w: &mut World, rng: &mut SplitMix64, city_country: &[usize]) {
    let countries = w.of_kind(Kind::Country);
    let cities = w.of_kind(Kind::City);
    let mut officials: Vec<usize> = w.of_kind(Kind::Person);
    rng.shuffle(&mut officials);
    let mut next_official = 0usize;
    let mut official = |rng: &mut SplitMix64| {
        let p = if next_official < officials.len() {
            officials[next_official]
        } else {
            rng.pick(&officials)
        };
        next_official += 1;
        p
    };
    let mut own_cities: Vec<Vec<usize>> = vec![Vec::new(); w.entities.len()];
    for &c in &cities {
        own_cities[city_country[c]].push(c);
    }
    for &k in &countries {
        let capital = rng.pick(&own_cities[k]);
        w.add(k, Rel::Capital, capital);
        let leader = official(rng);
        w.add(k, Rel::HeadOfState, leader);
    }
    for &c in &cities {
        let mayor = official(rng);
        w.add(c, Rel::Mayor, mayor);
    }
}

/// Persons: born_in always; spouses in pairs (never two people sharing a surname);
/// then member_of / educated_at so that every person states 2-4 relations.
fn relate_persons(w: &mut World, rng: &mut SplitMix64) {
    let persons = w.of_kind(Kind::Person);
    let cities = w.of_kind(Kind::City);
    let ensembles = w.of_kind(Kind::Ensemble);
    let universities = w.of_kind(Kind::University);
    for &p in &persons {
        let avoid = twin_obj(w, p, Rel::BornIn);
        let city = pick_avoiding(rng, &cities, &avoid);
        w.add(p, Rel::BornIn, city);
    }
    let mut singles = persons.clone();
    rng.shuffle(&mut singles);
    // Partners are taken from the front and people pop from the back: a deque keeps both ends
    // cheap and the order unchanged.
    let mut singles = VecDeque::from(singles);
    let pairs = persons.len() * 15 / 100;
    let mut married: BTreeSet<usize> = BTreeSet::new();
    for _ in 0..pairs {
        let Some(a) = singles.pop_back() else { break };
        let a_surname = w.entities[a].named.roots[1].clone();
        if let Some(pos) = singles
            .iter()
            .position(|&b| w.entities[b].named.roots[1] != a_surname)
        {
            let b = singles.remove(pos).expect("a position found in the deque");
            w.add(a, Rel::SpouseOf, b);
            married.insert(a);
            married.insert(b);
        }
    }
    for &p in &persons {
        let has_spouse = w.object(p, Rel::SpouseOf).is_some();
        let have = 1 + usize::from(has_spouse);
        let want = (2 + rng.below(3)).max(have); // 2..=4 relations in all
        let mut extra: Vec<Rel> = vec![Rel::MemberOf, Rel::EducatedAt];
        rng.shuffle(&mut extra);
        for rel in extra.into_iter().take(want - have) {
            let pool = if rel == Rel::MemberOf {
                &ensembles
            } else {
                &universities
            };
            let avoid = twin_obj(w, p, rel);
            let o = pick_avoiding(rng, pool, &avoid);
            w.add(p, rel, o);
        }
    }
}

/// Organisations: a founder and a home city each.
fn found_organisations(w: &mut World, rng: &mut SplitMix64) {
    let persons = w.of_kind(Kind::Person);
    let cities = w.of_kind(Kind::City);
    for (kind, home) in [
        (Kind::Company, Rel::HeadquarteredIn),
        (Kind::Studio, Rel::HeadquarteredIn),
        (Kind::Publisher, Rel::HeadquarteredIn),
        (Kind::Ensemble, Rel::BasedIn),
        (Kind::University, Rel::CampusIn),
    ] {
        for o in w.of_kind(kind) {
            let avoid = twin_obj(w, o, Rel::FoundedBy);
            let founder = pick_avoiding(rng, &persons, &avoid);
            w.add(o, Rel::FoundedBy, founder);
            let avoid = twin_obj(w, o, home);
            let city = pick_avoiding(rng, &cities, &avoid);
            w.add(o, home, city);
        }
    }
}

/// Works: a film's director, studio and star (not its director), a book's author and
/// publisher, a product's maker and designer.
fn credit_works(w: &mut World, rng: &mut SplitMix64) {
    let persons = w.of_kind(Kind::Person);
    let companies = w.of_kind(Kind::Company);
    let studios = w.of_kind(Kind::Studio);
    let publishers = w.of_kind(Kind::Publisher);
    for f in w.of_kind(Kind::Film) {
        let avoid = twin_obj(w, f, Rel::DirectedBy);
        let director = pick_avoiding(rng, &persons, &avoid);
        w.add(f, Rel::DirectedBy, director);
        let avoid = twin_obj(w, f, Rel::ProducedBy);
        let studio = pick_avoiding(rng, &studios, &avoid);
        w.add(f, Rel::ProducedBy, studio);
        let mut avoid = twin_obj(w, f, Rel::Starring);
        avoid.push(director);
        let star = pick_avoiding(rng, &persons, &avoid);
        w.add(f, Rel::Starring, star);
    }
    for b in w.of_kind(Kind::Book) {
        let avoid = twin_obj(w, b, Rel::WrittenBy);
        let author = pick_avoiding(rng, &persons, &avoid);
        w.add(b, Rel::WrittenBy, author);
        let avoid = twin_obj(w, b, Rel::PublishedBy);
        let publisher = pick_avoiding(rng, &publishers, &avoid);
        w.add(b, Rel::PublishedBy, publisher);
    }
    for p in w.of_kind(Kind::Product) {
        let avoid = twin_obj(w, p, Rel::ManufacturedBy);
        let maker = pick_avoiding(rng, &companies, &avoid);
        w.add(p, Rel::ManufacturedBy, maker);
        let avoid = twin_obj(w, p, Rel::DesignedBy);
        let designer = pick_avoiding(rng, &persons, &avoid);
        w.add(p, Rel::DesignedBy, designer);
    }
}

/// Attributes: each entity's year, descriptor (`flavor`) and free number, in ranges that suit
/// its kind.
fn draw_attributes(w: &mut World, rng: &mut SplitMix64) {
    for e in 0..w.entities.len() {
        let (lo, hi, flavors, number) = match w.entities[e].kind {
            Kind::Country => (1700, 1990, 6, rng.range(2, 60)),
            Kind::City => (900, 1900, 6, rng.range(20, 900)),
            Kind::Person => (1921, 1994, 12, rng.range(2, 9)),
            Kind::Company | Kind::Studio | Kind::Publisher => (1890, 2015, 6, rng.range(40, 9000)),
            Kind::Ensemble => (1920, 2012, 6, rng.range(4, 60)),
            Kind::University => (1700, 1990, 6, rng.range(3, 40)),
            Kind::Film => (1952, 2023, 8, rng.range(84, 171)),
            Kind::Book => (1901, 2023, 8, rng.range(140, 820)),
            Kind::Product => (1971, 2023, 8, rng.range(2, 90)),
        };
        w.entities[e].year = rng.range(lo, hi);
        w.entities[e].flavor = rng.below(flavors);
        w.entities[e].number = number;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_counts_sum_to_n() {
        for n in [40, 100, 160, 500] {
            let total: usize = kind_counts(n).iter().map(|(_, c)| c).sum();
            assert_eq!(total, n, "n = {n}");
        }
    }

    #[test]
    fn relations_are_functional_and_typed() {
        let w = build(11, 160, 30);
        let mut seen = BTreeSet::new();
        for f in &w.facts {
            assert!(
                seen.insert((f.subj, f.rel)),
                "two objects for one (subject, relation)"
            );
            assert_ne!(f.subj, f.obj);
        }
        for &p in &w.of_kind(Kind::Person) {
            let k = w.facts_of(p).len();
            assert!((2..=4).contains(&k), "person states {k} relations");
        }
        for &c in &w.of_kind(Kind::Country) {
            let cap = w.object(c, Rel::Capital).unwrap();
            assert_eq!(w.object(cap, Rel::LocatedIn), Some(c));
        }
        let twins = w.entities.iter().filter(|e| e.twin_of.is_some()).count();
        assert!(twins >= 20, "only {twins} confusables");
    }
}
