//! The raw dataset formats people download, each `files -> RawDataset`, registered in one list.
//!
//! A format is one module with one `const` [`Format`]: its name in campaign files, the `files:`
//! roles it reads ([`Role`]: required or optional, one file or a list) and its reader. [`FORMATS`]
//! lists them all; the campaign looks a `format:` name up there ([`find`]), checks the dataset's
//! roles against the format's when it loads ([`check_roles`]), and reads through
//! [`Format::read`]. **Adding a format** is a new module here with its `pub const FORMAT:
//! Format`, and one line (the module's name) in the `formats!` list below, which declares the
//! module too.
//!
//! | module | format | roles | corpus | gold | chain |
//! |---|---|---|---|---|---|
//! | [`musique`] | MuSiQue (HippoRAG list + corpus, or release JSONL) | `questions`, `corpus`? | corpus file, or union of paragraphs | `is_supporting` paragraphs | `question_decomposition` |
//! | [`hotpotqa`] | HotpotQA (HippoRAG list + title->sentences object, or release) | `questions`, `corpus`? | corpus object, or union of contexts | `supporting_facts` titles | one slot per gold title, unordered |
//! | [`twowiki`] | 2WikiMultihopQA v1.1 (corpus list + questions, or release) | `questions`, `corpus`? | corpus file, or union of contexts | `supporting_facts` titles | `evidences` triples |
//! | [`mtrag`] | MTRAG-UN `reference.jsonl` + BEIR qrels | `reference`, `qrels` (list) | distinct `contexts` of all tasks | qrels, score > 0 | none |
//! | [`beir`] | BEIR `corpus.jsonl`, `queries.jsonl`, `qrels/<split>.tsv` | `corpus`, `queries`, `qrels` | corpus file | qrels, score > 0 | none |
//! | [`documents`] | your own long documents (JSONL) + queries, chunked at prepare time | `documents`, `queries`, `qrels`?, `spans`? | the documents' chunks ([`crate::chunk`]) | chunks of qrels documents; chunks overlapping gold spans | none |
//!
//! Every reader validates as it goes and stops at the first problem, with an
//! [`Error`](crate::Error) that names the file, the record (position, JSONL line, id) and the
//! field: unreadable file -> `Io`; not JSON / JSONL / TSV -> `Malformed` (with the line for JSONL
//! and TSV); missing or mistyped field, or a repeated question id -> `Field`; two passages with
//! one id -> `DuplicatePassage`; a gold reference with no passage -> `GoldNotInCorpus`.
//! Questions keep file order; gold lists and chain slots are deduplicated in first-seen order.
//! Record files are read whole; a JSON list (`[`...) and JSON Lines are both accepted.
//!
//! None of these formats publishes a context breadcrumb, so every reader leaves
//! [`Passage::header`](crate::Passage::header) at `None`; the title is in its own field. What is
//! indexed is each format's [`Format::protocol`], the protocol of its published baselines
//! (applied when the export is built, see [`crate::protocol`]): `title + "\n" + text` for
//! MuSiQue, HotpotQA and 2Wiki (HippoRAG 2), `title + " " + text` for BEIR, the text alone for
//! MTRAG (its passages have no title).
//!
//! Two datasets are made from other datasets rather than read, and so are not formats here:
//! [`pool()`] unions several read datasets into one corpus, prefixing every id with its part's
//! name, and [`dialogues`] derives a labelled conversational dataset from another dataset's
//! published decompositions (one user turn per hop, with known referents). The campaign composes
//! them; they read no files of their own.

mod common;
mod hotpot_style;
mod pool;
mod qrels;
mod roles;
#[cfg(test)]
pub(crate) mod testutil;

pub mod dialogues;

pub use pool::pool;
pub use roles::{check_roles, Files, Role, RoleError};

use crate::error::Result;
use crate::model::RawDataset;
use crate::protocol::Protocol;

/// A raw dataset format: a name, the file roles it reads, and its reader. Each format module
/// declares one as `pub const FORMAT: Format`.
pub struct Format {
    /// The name in campaign files (`format: musique`). It is also recorded in every export's
    /// manifest and hashed into its input key, so renaming a format re-prepares its exports.
    pub name: &'static str,
    /// The `files:` roles it reads, in the order messages list them.
    pub roles: &'static [Role],
    /// Reads a dataset from its files (already checked against [`Format::roles`]).
    pub read: fn(&Files) -> Result<RawDataset>,
    /// What its published baselines index per passage (see [`crate::protocol`]): the
    /// default of every dataset of this format, which a campaign may override as a labelled
    /// ablation. Each format says where its choice comes from.
    pub protocol: Protocol,
}

impl Format {
    /// The name in campaign files.
    pub fn name(&self) -> &'static str {
        self.name
    }
    /// The `files:` roles it reads.
    pub fn roles(&self) -> &'static [Role] {
        self.roles
    }
    /// Reads a dataset from its files (already checked against [`Format::roles`]). A dataset
    /// with no passages or no questions is an error naming its files, whatever the format: there
    /// is nothing to retrieve from, or nothing to measure, and a cell of zero queries would
    /// otherwise look like a result.
    pub fn read(&self, files: &Files) -> Result<RawDataset> {
        let raw = (self.read)(files)?;
        let empty = |what: &str| crate::Error::Malformed {
            path: files.paths().join(", ").into(),
            what: "dataset".into(),
            message: format!("no {what}"),
        };
        if raw.passages.is_empty() {
            return Err(empty("passages"));
        }
        if raw.questions.is_empty() {
            return Err(empty("questions"));
        }
        Ok(raw)
    }
}

/// Declares each format's module and lists its `FORMAT` in [`FORMATS`]: one line a format.
macro_rules! formats {
    ($($module:ident),* $(,)?) => {
        $(pub mod $module;)*
        /// Every raw format, one line each.
        pub static FORMATS: &[&Format] = &[$(&$module::FORMAT),*];
    };
}

formats! {
    musique,
    hotpotqa,
    twowiki,
    mtrag,
    beir,
    documents,
}

/// The format named `name` in [`FORMATS`].
pub fn find(name: &str) -> Option<&'static Format> {
    FORMATS.iter().copied().find(|f| f.name() == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_stable() {
        // the names are hashed into export keys: changing one changes every such export's key
        let names: Vec<_> = FORMATS.iter().map(|f| f.name()).collect();
        assert_eq!(
            names,
            [
                "musique",
                "hotpotqa",
                "twowiki",
                "mtrag",
                "beir",
                "documents"
            ]
        );
        for f in FORMATS {
            assert_eq!(find(f.name()).map(|g| g.name()), Some(f.name()));
        }
        assert!(find("hotpot").is_none() && find("two_wiki").is_none());
    }

    #[test]
    fn each_format_defaults_to_its_published_protocol() {
        // changing one changes what every such export indexes (and its key): deliberate only
        let protocols: Vec<_> = FORMATS.iter().map(|f| (f.name(), f.protocol)).collect();
        assert_eq!(
            protocols,
            [
                ("musique", Protocol::TITLE_NEWLINE),
                ("hotpotqa", Protocol::TITLE_NEWLINE),
                ("twowiki", Protocol::TITLE_NEWLINE),
                ("mtrag", Protocol::TEXT),
                ("beir", Protocol::TITLE_SPACE),
                ("documents", Protocol::TEXT),
            ]
        );
    }

    #[test]
    fn every_format_declares_distinct_roles_one_of_them_required() {
        for f in FORMATS {
            let roles = f.roles();
            for (i, r) in roles.iter().enumerate() {
                assert!(
                    roles[..i].iter().all(|s| s.name != r.name),
                    "{}: role {} twice",
                    f.name(),
                    r.name
                );
            }
            assert!(roles.iter().any(|r| r.required), "{}", f.name());
        }
    }
}
