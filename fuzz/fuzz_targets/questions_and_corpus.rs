//! The input layout of the formats that read a questions file and an optional corpus file
//! (`musique`, `hotpotqa`, `twowiki`): the questions file, then optionally (after a `\n=====\n`
//! line) the corpus file; with no separator there is no corpus (the release layout).

use hopbench_datasets::formats::Format;
use hopbench_fuzz::{read_format, RoleFile};

/// `questions` always, `corpus` when the input has a second piece.
const ROLES: &[RoleFile] = &[
    RoleFile {
        role: "questions",
        file: "questions.json",
        many: None,
        optional: false,
    },
    RoleFile {
        role: "corpus",
        file: "corpus.json",
        many: None,
        optional: true,
    },
];

/// Reads one fuzz input with `format` (see [`read_format`]).
pub fn read(format: &Format, data: &[u8]) {
    read_format(format, ROLES, data)
}
