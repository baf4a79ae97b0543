//! `formats::hotpotqa`: questions file, then optionally (after a `\n=====\n` line) the corpus file.
#![no_main]
use hopbench_datasets::formats::hotpotqa::FORMAT;
use hopbench_fuzz::{read_format, RoleFile};
use libfuzzer_sys::fuzz_target;

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

fuzz_target!(|data: &[u8]| read_format(&FORMAT, ROLES, data));
