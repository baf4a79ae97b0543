//! The set of taken names, answering "is this candidate a substring of a taken name, or a taken
//! name a substring of it?" without scanning every taken name.
//!
//! A world of a million passages has half a million names, each checked (with its rejected
//! siblings) against all the others; a scan would make naming quadratic. Two indexes answer the
//! two directions exactly:
//!
//! * *a taken name inside the candidate*: every substring of the candidate (a name is a few
//!   dozen bytes) is looked up in the hash set of taken names;
//! * *the candidate inside a taken name*: every taken name is posted under each of its 4-byte
//!   grams; a taken name containing the candidate contains all the candidate's grams, so only the
//!   names under the candidate's rarest gram need a real `contains` check. Candidates shorter
//!   than a gram are looked up in the set of all short substrings of taken names (at most a few
//!   thousand strings over this alphabet).
//!
//! The answer is a yes/no about sets, so neither the hash order nor the gram chosen can change
//! it: naming stays deterministic.

use std::collections::{HashMap, HashSet};

/// Gram length of the posting index.
const GRAM: usize = 4;

/// Taken lowercase names, indexed for substring checks in both directions.
#[derive(Debug, Default)]
pub(crate) struct SubstringFree {
    names: Vec<Box<str>>,
    taken: HashSet<Box<str>>,
    /// Name indices (ascending, each once) under every gram of the name.
    postings: HashMap<[u8; GRAM], Vec<u32>>,
    /// Every substring shorter than [`GRAM`] bytes of a taken name.
    short: HashSet<Box<str>>,
    shortest: usize,
    longest: usize,
}

impl SubstringFree {
    /// Whether `lower` contains a taken name or is contained in one (equality included).
    pub(crate) fn conflicts(&self, lower: &str) -> bool {
        self.contains_taken(lower) || self.inside_taken(lower)
    }

    fn contains_taken(&self, lower: &str) -> bool {
        if self.names.is_empty() {
            return false;
        }
        let n = lower.len();
        (0..n).any(|i| {
            (i + self.shortest..=(i + self.longest).min(n))
                .any(|j| lower.get(i..j).is_some_and(|s| self.taken.contains(s)))
        })
    }

    fn inside_taken(&self, lower: &str) -> bool {
        let bytes = lower.as_bytes();
        if bytes.len() < GRAM {
            return self.short.contains(lower);
        }
        let mut rarest: Option<&Vec<u32>> = None;
        for g in bytes.windows(GRAM) {
            let key: [u8; GRAM] = g.try_into().expect("a window of GRAM bytes");
            match self.postings.get(&key) {
                // No taken name has this gram, so none contains the candidate.
                None => return false,
                Some(p) if rarest.is_none_or(|r| p.len() < r.len()) => rarest = Some(p),
                Some(_) => {}
            }
        }
        rarest.is_some_and(|p| p.iter().any(|&k| self.names[k as usize].contains(lower)))
    }

    /// Take `lower` (the caller has checked it does not conflict).
    pub(crate) fn insert(&mut self, lower: String) {
        let k = u32::try_from(self.names.len()).expect("fewer than 2^32 names");
        let bytes = lower.as_bytes();
        for g in bytes.windows(GRAM) {
            let key: [u8; GRAM] = g.try_into().expect("a window of GRAM bytes");
            let list = self.postings.entry(key).or_default();
            if list.last() != Some(&k) {
                list.push(k);
            }
        }
        for i in 0..bytes.len() {
            for j in i + 1..=(i + GRAM - 1).min(bytes.len()) {
                if let Some(s) = lower.get(i..j) {
                    if !self.short.contains(s) {
                        self.short.insert(s.into());
                    }
                }
            }
        }
        if self.names.is_empty() {
            self.shortest = lower.len();
            self.longest = lower.len();
        } else {
            self.shortest = self.shortest.min(lower.len());
            self.longest = self.longest.max(lower.len());
        }
        let boxed: Box<str> = lower.into();
        self.taken.insert(boxed.clone());
        self.names.push(boxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    /// The scan the index replaces.
    fn naive(taken: &[String], lower: &str) -> bool {
        taken
            .iter()
            .any(|n| n.contains(lower) || lower.contains(n.as_str()))
    }

    #[test]
    fn agrees_with_the_scan_on_random_words() {
        let mut rng = SplitMix64::new(5);
        let mut index = SubstringFree::default();
        let mut taken: Vec<String> = Vec::new();
        let mut conflicts = 0;
        for _ in 0..4000 {
            let len = 1 + rng.below(9);
            let w: String = (0..len)
                .map(|_| ['a', 'b', 'c', ' ', 'd'][rng.below(5)])
                .collect();
            let expected = naive(&taken, &w);
            assert_eq!(index.conflicts(&w), expected, "{w:?}");
            if expected {
                conflicts += 1;
            } else {
                index.insert(w.clone());
                taken.push(w);
            }
        }
        assert!(
            conflicts > 100 && taken.len() > 20,
            "both answers exercised"
        );
    }

    #[test]
    fn both_directions_and_equality() {
        let mut index = SubstringFree::default();
        index.insert("korrin works".into());
        assert!(index.conflicts("korrin works"));
        assert!(
            index.conflicts("rin"),
            "short candidate inside a taken name"
        );
        assert!(index.conflicts("rin wo"), "candidate inside a taken name");
        assert!(
            index.conflicts("skorrin works ltd"),
            "taken name inside the candidate"
        );
        assert!(!index.conflicts("korrin systems"));
        assert!(!index.conflicts("xq"));
    }
}
