//! `formats::hotpotqa`: questions file, then optionally (after a `\n=====\n` line) the corpus file.
#![no_main]
use hopbench_datasets::formats::hotpotqa::FORMAT;
use libfuzzer_sys::fuzz_target;

mod questions_and_corpus;

fuzz_target!(|data: &[u8]| questions_and_corpus::read(&FORMAT, data));
