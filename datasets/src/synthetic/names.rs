//! Invented, pronounceable, unique names.
//!
//! Every name is built from syllables (onset + vowel + optional coda) into *roots* such as
//! `Velmora` or `Korrin`, and a root is dressed according to the entity's kind: `Velmoria`
//! (country), `Korrinford` (city), `Alira Venmoth` (person), `Korrin Dynamics` (company),
//! `Echoes of Talvenor` (film), `Quarro 300` (product). Roots are never reused by accident; a
//! *confusable* entity reuses one root of an earlier entity on purpose (a sibling with the same
//! surname, a company with the same stem and another suffix, a city with the same stem and
//! another ending). No full name is a substring of another, so a name that does not occur in a
//! question text really is absent from it, and no name is a well-known real one.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::OnceLock;

use super::kind::Kind;
use super::substrings::SubstringFree;
use crate::rng::SplitMix64;

const ONSETS: &[&str] = &[
    "b", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "c", "j", "sh", "th",
];
const CLUSTERS: &[&str] = &["br", "dr", "gr", "kr", "tr", "st", "fl", "pr", "gl"];
const VOWELS: &[&str] = &["a", "e", "i", "o", "u", "a", "e", "o", "a", "i"];
const MID_CODAS: &[&str] = &["n", "r", "l", "s", "m"];
const FINAL_CODAS: &[&str] = &["n", "r", "l", "s", "th", "m", "x", "nd", "rk", "v", "k"];

const COUNTRY_SUFFIXES: &[&str] = &[
    "ia", "ora", "esh", "aria", "ond", "avia", "eth", "any", "ir",
];
const CITY_SUFFIXES: &[&str] = &[
    "ford", "mere", "haven", "holm", "wick", "bury", "stead", "gate", "moor", "ton", "dale",
    "crest", "port", "field",
];
const FEMALE_ENDINGS: &[&str] = &["a", "ia", "elle", "ine", "ara", "ette", "is"];
const MALE_ENDINGS: &[&str] = &["in", "or", "an", "ek", "as", "ard", "io"];
const SURNAME_ENDINGS: &[&str] = &[
    "oth", "ar", "ell", "ick", "en", "ova", "ley", "mond", "ac", "ert",
];
const COMPANY_WORDS: &[&str] = &[
    "Dynamics",
    "Holdings",
    "Works",
    "Industries",
    "Systems",
    "Instruments",
    "Labs",
    "Engineering",
];
const STUDIO_WORDS: &[&str] = &["Pictures", "Studios", "Films", "Film Company"];
const PUBLISHER_WORDS: &[&str] = &["Press", "Books", "Publishing", "House"];
const ENSEMBLE_WORDS: &[&str] = &[
    "Quartet",
    "Chamber Orchestra",
    "Consort",
    "Choir",
    "Ensemble",
    "Brass Band",
];
const FILM_PATTERNS: &[&str] = &[
    "Echoes of {}",
    "The Glass {}",
    "{} Rising",
    "A Winter in {}",
    "The {} Affair",
    "Night over {}",
    "The Last of the {}",
    "{} at Dawn",
];
const BOOK_PATTERNS: &[&str] = &[
    "The {} Letters",
    "A History of {}",
    "Songs for {}",
    "The {} Archive",
    "Notes from {}",
    "The House on {} Street",
    "{} and the Tide",
    "Dreams of {}",
];
const PRODUCT_MODELS: &[&str] = &[
    "100", "200", "300", "500", "700", "X2", "X4", "Mini", "Pro", "Duo", "Lite", "Aero",
];

/// Real places, people, brands and common words a syllable generator could stumble on.
const BLOCKED: &[&str] = &[
    "maria", "paris", "roma", "rome", "milan", "lima", "oslo", "sofia", "doha", "dakar", "malta",
    "cuba", "peru", "togo", "mali", "benin", "gabon", "kenya", "tonga", "samoa", "nepal", "oman",
    "laos", "chad", "niger", "sudan", "ghana", "tirana", "riga", "minsk", "kiev", "baku", "tokyo",
    "osaka", "kobe", "delhi", "dubai", "seoul", "hanoi", "manila", "lagos", "accra", "kabul",
    "tehran", "cairo", "tunis", "rabat", "madrid", "bern", "vienna", "prague", "warsaw", "berlin",
    "bonn", "lyon", "nice", "genoa", "turin", "lisbon", "porto", "boston", "denver", "dallas",
    "austin", "toronto", "ottawa", "sydney", "perth", "darwin", "dublin", "cork", "leeds", "york",
    "derby", "bath", "anna", "elena", "sara", "laura", "nina", "lena", "mila", "tara", "dana",
    "diana", "lara", "vera", "mara", "daria", "karina", "marina", "irina", "alina", "olivia",
    "amelia", "kevin", "robin", "martin", "simon", "dorian", "adrian", "marin", "logan", "nolan",
    "tobin", "brian", "susan", "karen", "helen", "ellen", "megan", "nokia", "sony", "tesla",
    "nike", "lego", "fanta", "toyota", "mazda", "honda", "kodak", "canon", "nikon", "lada",
    "skoda", "volvo", "audi", "fiat", "rolex", "india", "russia", "syria", "libya", "bolivia",
    "serbia", "latvia", "zambia", "gambia", "namibia", "nigeria", "liberia", "armenia", "albania",
    "romania", "slovenia", "estonia", "georgia", "jordan", "israel", "iran", "iraq", "egypt",
    "china", "japan", "korea", "chile", "spain", "italy", "greece", "france", "norway", "sweden",
    "poland", "panama", "kosovo", "monaco", "nauru", "palau", "tuvalu", "vanuatu", "sparta",
    "troy", "moscow", "london", "belfast", "hamburg", "munich", "dresden", "geneva", "zurich",
    "basel", "turku", "tampere", "bergen", "malmo", "gdansk", "krakow", "brno", "split", "zadar",
    "havana", "quito", "bogota", "caracas", "salem", "dover", "hull", "reading", "bristol",
    "mordor", "narnia", "gondor", "rohan", "vulcan", "naboo", "tatooine", "arrakis", "dune",
    "hobbit", "jedi", "sith", "borg",
];
/// Substrings no name may contain.
const BLOCKED_PARTS: &[&str] = &[
    "nazi", "rape", "fuk", "fuc", "shit", "cunt", "nig", "kkk", "porn", "anal", "dick", "cock",
    "slut", "whor", "piss", "tit", "fag", "jew", "god", "sex", "ass", "cum", "poo", "pee", "kill",
    "dead", "hell", "satan", "jesus", "allah",
];

/// What a name generator returns for one entity.
#[derive(Debug, Clone)]
pub(crate) struct Named {
    /// The full name as written everywhere.
    pub(crate) name: String,
    /// The invented roots the name is built from (lowercase); shared roots mark confusables.
    pub(crate) roots: Vec<String>,
    /// Persons only: the surname, used as the short reference inside the passage.
    pub(crate) surname: Option<String>,
    /// Persons only: whether the name reads as female (for pronouns).
    pub(crate) female: bool,
    /// The invented words of the name as written, lowercase (checked against the block lists).
    words: Vec<String>,
}

/// Failed draws in a row after which a root class counts as exhausted and is widened.
///
/// Far above what a class with room left needs (a few draws, a few dozen near the end), so a
/// world whose classes never run out is named exactly as before widening existed.
const WIDEN_AFTER: usize = 2000;

/// A root class: syllable and letter ranges, as `fresh_root` is asked for them.
type RootClass = (usize, usize, usize, usize);

/// Hands out unique roots and unique, substring-free names.
#[derive(Debug, Default)]
pub(crate) struct Namer {
    roots: BTreeSet<String>,
    names: SubstringFree,
    /// How often each root class has been widened (absent: never). A widened class draws up to
    /// one more syllable and three more letters per level: new roots only once the old space is
    /// used up, so the names of a small world do not depend on the size of the inventory.
    widened: BTreeMap<RootClass, usize>,
}

fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

fn is_vowel(c: char) -> bool {
    matches!(c, 'a' | 'e' | 'i' | 'o' | 'u' | 'y')
}

/// Glue a suffix onto a stem without a vowel clash or a triple consonant.
fn join(stem: &str, suffix: &str) -> String {
    let s_last = stem.chars().last().unwrap_or('a');
    let f_first = suffix.chars().next().unwrap_or('a');
    if is_vowel(s_last) && is_vowel(f_first) {
        let mut t = stem.to_string();
        t.pop();
        format!("{t}{suffix}")
    } else if !is_vowel(s_last) && !is_vowel(f_first) {
        let b: Vec<char> = stem.chars().collect();
        if b.len() >= 2 && !is_vowel(b[b.len() - 2]) {
            format!("{stem}e{suffix}")
        } else {
            format!("{stem}{suffix}")
        }
    } else {
        format!("{stem}{suffix}")
    }
}

fn blocked(word_lower: &str) -> bool {
    // Every drawn word is checked, so the list is looked up in a set rather than scanned.
    static BLOCKED_SET: OnceLock<HashSet<&'static str>> = OnceLock::new();
    BLOCKED_SET
        .get_or_init(|| BLOCKED.iter().copied().collect())
        .contains(word_lower)
        || BLOCKED_PARTS.iter().any(|p| word_lower.contains(p))
}

impl Namer {
    /// A lowercase syllable word of `syllables` syllables.
    fn raw_word(rng: &mut SplitMix64, syllables: usize) -> String {
        let mut w = String::new();
        for i in 0..syllables {
            let last = i + 1 == syllables;
            let after_coda = w.chars().last().is_some_and(|c| !is_vowel(c));
            match (i, rng.below(100)) {
                // A vowel-initial first syllable now and then ("Alira", "Orvane").
                (0, 0..15) => {}
                // A cluster onset, never right after a coda.
                (_, 15..27) if !after_coda => w.push_str(rng.pick(CLUSTERS)),
                _ => {
                    let onset = rng.pick(ONSETS);
                    if after_coda && (onset.len() > 1 || w.ends_with(onset)) {
                        w.push_str(if w.ends_with('r') { "d" } else { "r" });
                    } else {
                        w.push_str(onset);
                    }
                }
            }
            w.push_str(rng.pick(VOWELS));
            if last {
                if rng.chance(55) {
                    w.push_str(rng.pick(FINAL_CODAS));
                }
            } else if rng.chance(30) {
                w.push_str(rng.pick(MID_CODAS));
            }
        }
        w
    }

    /// A fresh root of `syl` syllables and `len` letters, never handed out before, and the
    /// widening level it was drawn at (0 while the class has room; see [`WIDEN_AFTER`]).
    fn fresh_root(
        &mut self,
        rng: &mut SplitMix64,
        syl: std::ops::RangeInclusive<usize>,
        len: std::ops::RangeInclusive<usize>,
    ) -> (String, usize) {
        let class = (*syl.start(), *syl.end(), *len.start(), *len.end());
        let mut level = self.widened.get(&class).copied().unwrap_or(0);
        let mut failed = 0;
        loop {
            let (syl_hi, len_hi) = (syl.end() + level, len.end() + 3 * level);
            let n = syl.start() + rng.below(syl_hi - syl.start() + 1);
            let w = Self::raw_word(rng, n);
            if (*len.start()..=len_hi).contains(&w.len())
                && !blocked(&w)
                && !self.roots.contains(&w)
            {
                self.roots.insert(w.clone());
                return (w, level);
            }
            failed += 1;
            if failed == WIDEN_AFTER {
                level += 1;
                self.widened.insert(class, level);
                failed = 0;
            }
        }
    }

    /// How many times a root class ran out and was widened.
    #[cfg(test)]
    pub(crate) fn widenings(&self) -> usize {
        self.widened.values().sum()
    }

    /// Whether `name` may be taken: not blocked, not taken, no substring relation to a taken one.
    fn acceptable(&self, named: &Named) -> bool {
        if named.words.iter().any(|w| blocked(w)) {
            return false;
        }
        !self.names.conflicts(&named.name.to_lowercase())
    }

    fn take(&mut self, named: Named) -> Named {
        self.names.insert(named.name.to_lowercase());
        named
    }

    /// A name for a new entity of `kind`; with `twin`, a confusable variant of that entity's name
    /// (sharing one root), falling back to a fresh name when no variant is free.
    pub(crate) fn name(&mut self, rng: &mut SplitMix64, kind: Kind, twin: Option<&Named>) -> Named {
        if let Some(t) = twin {
            for _ in 0..40 {
                let cand = self.variant(rng, kind, t);
                if self.acceptable(&cand) {
                    return self.take(cand);
                }
            }
        }
        loop {
            let cand = self.fresh(rng, kind);
            if self.acceptable(&cand) {
                return self.take(cand);
            }
        }
    }

    fn person(&mut self, rng: &mut SplitMix64, surname_root: String, surname: String) -> Named {
        let female = rng.chance(50);
        let first = loop {
            let (stem, level) = self.fresh_root(rng, 1..=2, 2..=5);
            let ending = rng.pick(if female { FEMALE_ENDINGS } else { MALE_ENDINGS });
            let first = join(&stem, ending);
            // A widened stem may be longer, and so may the first name built on it.
            if first.len() <= 8 + 3 * level {
                break capitalise(&first);
            }
        };
        Named {
            name: format!("{first} {surname}"),
            roots: vec![first.to_lowercase(), surname_root],
            words: vec![first.to_lowercase(), surname.to_lowercase()],
            surname: Some(surname),
            female,
        }
    }

    fn fresh(&mut self, rng: &mut SplitMix64, kind: Kind) -> Named {
        match kind {
            Kind::Person => {
                let surname = if rng.chance(70) {
                    let (stem, _) = self.fresh_root(rng, 1..=1, 2..=4);
                    capitalise(&join(&stem, rng.pick(SURNAME_ENDINGS)))
                } else {
                    capitalise(&self.fresh_root(rng, 2..=2, 5..=8).0)
                };
                let root = surname.to_lowercase();
                self.person(rng, root, surname)
            }
            Kind::Country | Kind::City => {
                let (root, _) = self.fresh_root(rng, 1..=2, 3..=6);
                self.dress(rng, kind, &root)
            }
            _ => {
                let (root, _) = self.fresh_root(rng, 2..=2, 4..=7);
                self.dress(rng, kind, &root)
            }
        }
    }

    fn variant(&mut self, rng: &mut SplitMix64, kind: Kind, twin: &Named) -> Named {
        match kind {
            Kind::Person => {
                let surname = twin.surname.clone().unwrap_or_default();
                self.person(rng, twin.roots[1].clone(), surname)
            }
            _ => {
                let root = twin.roots[0].clone();
                self.dress(rng, kind, &root)
            }
        }
    }

    /// Dress a root as a name of `kind` (never a person).
    fn dress(&mut self, rng: &mut SplitMix64, kind: Kind, root: &str) -> Named {
        let cap = capitalise(root);
        let mut word = root.to_string();
        let name = match kind {
            Kind::Country => {
                word = join(root, rng.pick(COUNTRY_SUFFIXES));
                capitalise(&word)
            }
            Kind::City => {
                word = join(root, rng.pick(CITY_SUFFIXES));
                capitalise(&word)
            }
            Kind::Company => format!("{cap} {}", rng.pick(COMPANY_WORDS)),
            Kind::Studio => format!("{cap} {}", rng.pick(STUDIO_WORDS)),
            Kind::Publisher => format!("{cap} {}", rng.pick(PUBLISHER_WORDS)),
            Kind::Ensemble => format!("{cap} {}", rng.pick(ENSEMBLE_WORDS)),
            Kind::University => match rng.below(4) {
                0 => format!("University of {cap}"),
                1 => format!("{cap} Institute of Technology"),
                2 => format!("{cap} College"),
                _ => format!("{cap} Polytechnic"),
            },
            Kind::Film => rng.pick(FILM_PATTERNS).replace("{}", &cap),
            Kind::Book => rng.pick(BOOK_PATTERNS).replace("{}", &cap),
            Kind::Product => format!("{cap} {}", rng.pick(PRODUCT_MODELS)),
            Kind::Person => unreachable!("persons are named by Namer::person"),
        };
        Named {
            name,
            roots: vec![root.to_string()],
            surname: None,
            female: false,
            words: vec![word],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn join_avoids_clashes() {
        assert_eq!(join("velmo", "ia"), "velmia");
        assert_eq!(join("kess", "ford"), "kesseford");
        assert_eq!(join("kor", "ford"), "korford");
        assert_eq!(join("tala", "ford"), "talaford");
    }

    #[test]
    fn names_are_unique_and_substring_free() {
        let mut rng = SplitMix64::new(3);
        let mut namer = Namer::default();
        let kinds = [
            Kind::Country,
            Kind::City,
            Kind::Person,
            Kind::Company,
            Kind::Film,
        ];
        let mut all: Vec<Named> = Vec::new();
        for i in 0..300 {
            let kind = kinds[i % kinds.len()];
            let twin = if i >= 10 && i % 3 == 0 {
                Some(all[i - 5].clone())
            } else {
                None
            };
            let n = namer.name(&mut rng, kind, twin.as_ref());
            all.push(n);
        }
        for (i, a) in all.iter().enumerate() {
            for b in &all[i + 1..] {
                let (x, y) = (a.name.to_lowercase(), b.name.to_lowercase());
                assert!(
                    !x.contains(&y) && !y.contains(&x),
                    "{} / {}",
                    a.name,
                    b.name
                );
            }
        }
    }
}
