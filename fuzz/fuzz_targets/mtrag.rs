//! `formats::mtrag`: the `reference.jsonl` file, then each `\n=====\n` line starts one more
//! qrels TSV file (up to 4; with none, one empty qrels file).
#![no_main]
use hopbench_datasets::formats::mtrag::FORMAT;
use hopbench_fuzz::{read_format, RoleFile};
use libfuzzer_sys::fuzz_target;

const ROLES: &[RoleFile] = &[
    RoleFile {
        role: "reference",
        file: "reference.jsonl",
        many: None,
        optional: false,
    },
    RoleFile {
        role: "qrels",
        file: "qrels_{i}.tsv",
        many: Some(4),
        optional: false,
    },
];

fuzz_target!(|data: &[u8]| read_format(&FORMAT, ROLES, data));
