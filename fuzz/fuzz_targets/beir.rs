//! `formats::beir`: `corpus.jsonl`, `queries.jsonl`, `qrels.tsv`, separated by `\n=====\n`
//! lines (a missing file is empty).
#![no_main]
use hopbench_datasets::formats::beir::FORMAT;
use hopbench_fuzz::{read_format, RoleFile};
use libfuzzer_sys::fuzz_target;

const ROLES: &[RoleFile] = &[
    RoleFile {
        role: "corpus",
        file: "corpus.jsonl",
        many: None,
        optional: false,
    },
    RoleFile {
        role: "queries",
        file: "queries.jsonl",
        many: None,
        optional: false,
    },
    RoleFile {
        role: "qrels",
        file: "qrels.tsv",
        many: None,
        optional: false,
    },
];

fuzz_target!(|data: &[u8]| read_format(&FORMAT, ROLES, data));
