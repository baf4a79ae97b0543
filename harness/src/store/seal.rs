//! The seal of a summary or a budget curve: the blake3 of its JSON text up to its last member,
//! `timing`, recorded inside `timing`. The records' and rows' hashes already guard the numbers
//! that can be recomputed from them (the means); the seal guards everything else a reader shows
//! (CIs, tokens, diagnostics, defined counts, the protocol, the status, the inputs), so an edit
//! to any field outside `timing` makes the file untrusted. It guards against accidents and stale
//! tools, not against someone who recomputes it.
//!
//! Both documents are written by `serde_json::to_string_pretty` with `timing` last, so the text
//! before `"timing"` at the top level is a deterministic function of the fields the seal covers
//! and does not depend on the seal itself.

use serde::Serialize;

/// The top-level `timing` member as `to_string_pretty` writes it (two spaces of indent; a
/// newline inside a JSON string is escaped, so this cannot occur within a value).
const TIMING: &str = "\n  \"timing\": ";

/// blake3 (hex) of `text` before its top-level `timing` member; `None` when it has none.
pub fn of(text: &str) -> Option<String> {
    let end = text.find(TIMING)?;
    Some(blake3::hash(&text.as_bytes()[..end]).to_hex().to_string())
}

/// The pretty JSON of `doc` with its seal recorded by `record` (a document without a timing
/// member to record it in is written as it is).
pub fn sealed_text<T: Serialize>(doc: &T, record: impl FnOnce(String) -> Option<T>) -> String {
    let text = serde_json::to_string_pretty(doc).expect("document serialises") + "\n";
    match of(&text).and_then(record) {
        Some(sealed) => serde_json::to_string_pretty(&sealed).expect("document serialises") + "\n",
        None => text,
    }
}

/// Why `text` does not carry the seal `recorded` (`Ok` when it does); `what` names the file.
pub fn check(what: &str, text: &str, recorded: Option<&str>) -> Result<(), String> {
    let Some(recorded) = recorded else {
        return Err(format!("{what}: records no seal of its own fields"));
    };
    match of(text) {
        Some(found) if found == recorded => Ok(()),
        _ => Err(format!(
            "{what}: a field outside `timing` is not what was written (its seal differs)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize, Clone)]
    struct Doc {
        a: f64,
        b: Vec<u32>,
        timing: Option<Timing>,
    }
    #[derive(Serialize, Clone)]
    struct Timing {
        wall: f64,
        seal: Option<String>,
    }

    fn doc() -> Doc {
        Doc {
            a: 0.25,
            b: vec![1, 2],
            timing: Some(Timing {
                wall: 3.5,
                seal: None,
            }),
        }
    }

    fn sealed(d: &Doc) -> String {
        sealed_text(d, |seal| {
            let mut d = d.clone();
            d.timing.as_mut()?.seal = Some(seal);
            Some(d)
        })
    }

    fn seal_in(text: &str) -> Option<String> {
        let v: serde_json::Value = serde_json::from_str(text).unwrap();
        v["timing"]["seal"].as_str().map(String::from)
    }

    #[test]
    fn a_sealed_text_checks_and_its_timing_may_change() {
        let text = sealed(&doc());
        let seal = seal_in(&text);
        assert!(check("d", &text, seal.as_deref()).is_ok());
        let retimed = text.replace("3.5", "99.0");
        assert_ne!(retimed, text);
        assert!(check("d", &retimed, seal.as_deref()).is_ok());
    }

    #[test]
    fn an_edit_before_timing_breaks_the_seal() {
        let text = sealed(&doc());
        let seal = seal_in(&text);
        for edited in [
            text.replace("0.25", "0.26"),
            text.replace("1,", "3,"),
            text.replace("\"b\"", "\"c\""),
        ] {
            assert_ne!(edited, text);
            let err = check("d.json", &edited, seal.as_deref()).unwrap_err();
            assert!(
                err.contains("d.json") && err.contains("seal differs"),
                "{err}"
            );
        }
    }

    #[test]
    fn no_seal_or_no_timing_is_refused() {
        let text = sealed(&doc());
        assert!(check("d", &text, None)
            .unwrap_err()
            .contains("records no seal"));
        let mut bare = doc();
        bare.timing = None;
        let text = sealed(&bare);
        assert!(text.contains("\"timing\": null"));
        assert!(check("d", &text, Some("x")).is_err());
        assert_eq!(of("{\"a\": 1}"), None);
    }

    #[test]
    fn a_nested_timing_key_is_not_the_top_level_one() {
        let text = "{\n  \"x\": {\n    \"timing\": 1\n  },\n  \"timing\": null\n}";
        let nested = text.find("    \"timing\"").unwrap();
        let top = text.find("\n  \"timing\"").unwrap();
        assert!(top > nested);
        assert_eq!(
            of(text),
            Some(blake3::hash(&text.as_bytes()[..top]).to_hex().to_string())
        );
    }
}
