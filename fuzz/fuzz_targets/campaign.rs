//! `hopbench::pipeline::campaign::Campaign::parse`: the input is the campaign YAML (non-UTF-8: skipped).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let parsed = hopbench::pipeline::campaign::Campaign::parse(text, "fuzz.yaml");
    if hopbench_fuzz::verbose() {
        match parsed {
            Ok(c) => eprintln!(
                "campaign: {} datasets, {} legs",
                c.datasets.len(),
                c.legs.len()
            ),
            Err(e) => eprintln!("campaign: {e:#}"),
        }
    }
});
