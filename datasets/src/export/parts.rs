//! The parts of an export that are built only when a selected leg reads them. The similarity
//! graph is one: at a million chunks it was 817 of prepare's 1,032 s and most of its peak
//! memory, and only the graph-walking CDGR legs read it. Each leg kind declares the parts it
//! reads; prepare builds those, and a later run that needs another adds it to the export
//! without rebuilding the rest (every file keeps its own hash in the manifest, so the files an
//! export has are checked as before, and a complete export is byte for byte what it was).

use std::fmt;

use crate::simgraph::SIMGRAPH_FILES;

/// An optional part of an export.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Part {
    /// The chunk similarity graph (`simgraph-edges.parquet`, `simgraph-communities.parquet`).
    SimGraph,
}

impl Part {
    /// Every optional part.
    pub const ALL: [Part; 1] = [Part::SimGraph];

    /// The files the part consists of.
    pub fn files(self) -> &'static [&'static str] {
        match self {
            Part::SimGraph => &SIMGRAPH_FILES,
        }
    }

    /// The part's name in a cell's inputs (`export_parts`).
    pub fn key(self) -> &'static str {
        match self {
            Part::SimGraph => "simgraph",
        }
    }

    fn bit(self) -> u8 {
        1 << self as u8
    }
}

impl fmt::Display for Part {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Part::SimGraph => "similarity graph",
        })
    }
}

/// A set of optional parts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Parts(u8);

impl Parts {
    /// No optional part: the core files only.
    pub const NONE: Parts = Parts(0);

    /// Every optional part: a complete export.
    pub fn all() -> Parts {
        Part::ALL.into_iter().fold(Parts::NONE, Parts::with)
    }

    /// This set with `p`.
    pub fn with(self, p: Part) -> Parts {
        Parts(self.0 | p.bit())
    }

    /// Whether `p` is in the set.
    pub fn has(self, p: Part) -> bool {
        self.0 & p.bit() != 0
    }

    /// Both sets.
    pub fn union(self, other: Parts) -> Parts {
        Parts(self.0 | other.0)
    }

    /// The parts of this set that `have` lacks.
    pub fn missing_from(self, have: Parts) -> Parts {
        Parts(self.0 & !have.0)
    }

    /// Whether the set is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The parts, in [`Part::ALL`] order.
    pub fn iter(self) -> impl Iterator<Item = Part> {
        Part::ALL.into_iter().filter(move |&p| self.has(p))
    }

    /// The export files of the core and these parts, sorted (a manifest's `files` order).
    pub fn files(self) -> Vec<&'static str> {
        let optional: Vec<&str> = Part::ALL.iter().flat_map(|p| p.files()).copied().collect();
        let mut files: Vec<&'static str> = (super::EXPORT_FILES.iter().copied())
            .filter(|f| !optional.contains(f))
            .chain(self.iter().flat_map(|p| p.files().iter().copied()))
            .collect();
        files.sort_unstable();
        files
    }

    /// The parts whose files, with the core's, are exactly `listed` (sorted): `None` for any
    /// other list (a part with a file missing, a name that is not the export's, a core file
    /// missing).
    pub fn listed<'a>(listed: impl IntoIterator<Item = &'a str>) -> Option<Parts> {
        let listed: Vec<&str> = listed.into_iter().collect();
        (0..1u8 << Part::ALL.len())
            .map(Parts)
            .find(|p| p.files() == listed)
    }
}

impl fmt::Display for Parts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            return f.write_str("no optional part");
        }
        let names: Vec<String> = self.iter().map(|p| p.to_string()).collect();
        f.write_str(&names.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_the_core_and_the_parts_and_lists_are_recognised() {
        let all = Parts::all().files();
        let mut every = super::super::EXPORT_FILES.to_vec();
        every.sort_unstable();
        assert_eq!(all, every, "every part: the complete export");
        let core = Parts::NONE.files();
        assert_eq!(core.len(), every.len() - SIMGRAPH_FILES.len());
        assert!(SIMGRAPH_FILES.iter().all(|f| !core.contains(f)));
        assert_eq!(Parts::listed(core.iter().copied()), Some(Parts::NONE));
        assert_eq!(Parts::listed(all.iter().copied()), Some(Parts::all()));
        // half a part, an extra name, a core file missing: none is an export's list
        let half: Vec<&str> = core.iter().copied().chain([SIMGRAPH_FILES[0]]).collect();
        let mut half = half;
        half.sort_unstable();
        assert_eq!(Parts::listed(half.iter().copied()), None);
        let extra: Vec<&str> = all.iter().copied().chain(["zz.parquet"]).collect();
        assert_eq!(Parts::listed(extra.iter().copied()), None);
        assert_eq!(Parts::listed(all[1..].iter().copied()), None);
    }

    #[test]
    fn set_operations() {
        let s = Parts::NONE.with(Part::SimGraph);
        assert!(s.has(Part::SimGraph) && !Parts::NONE.has(Part::SimGraph));
        assert_eq!(s.missing_from(Parts::NONE), s);
        assert!(s.missing_from(s).is_empty());
        assert_eq!(Parts::NONE.union(s), s);
        assert_eq!(s.to_string(), "similarity graph");
        assert_eq!(Parts::NONE.to_string(), "no optional part");
    }
}
