//! Reading a campaign's YAML strictly: what the parser would quietly reinterpret is refused.
//!
//! Two things a YAML reader lets through are refused here. A tag it does not know (`!secret 3`,
//! `!!python/object ...`) would be dropped, so the value would be read as if the tag were not
//! there: the parser is told to reject it. And a number or boolean written in quotes (`k1:
//! "0.9"`) is coerced into the numeric field without a word, which hides a campaign generated
//! with the wrong types (a template that quotes every value): [`refuse_quoted_scalars`] finds
//! each such value by reading the text a second time without types and comparing it, key by
//! key, with what the typed read produced.

use serde_json::Value;

/// The parser's options: unknown tags on values and tags on field names are errors.
pub fn options() -> serde_saphyr::Options {
    let mut o = serde_saphyr::Options::default();
    o.reject_unsupported_tags = true;
    o.reject_tagged_field_names = true;
    o
}

/// The options of the untyped read: as [`options`], with a non-finite float kept as its text
/// (an untyped value has no float to hold it in, and the typed read judges it).
fn untyped_options() -> serde_saphyr::Options {
    let mut o = options();
    o.non_finite_float_policy = serde_saphyr::NonFiniteFloatPolicy::AsString;
    o
}

/// Refuses a value written as a string in `text` where the typed read of it (`typed`, the parsed
/// value serialized back) holds a number or a boolean: the dotted key and the text are named.
pub fn refuse_quoted_scalars(text: &str, typed: &Value) -> Result<(), String> {
    let raw: Value =
        serde_saphyr::from_str_with_options(text, untyped_options()).map_err(|e| e.to_string())?;
    let mut path = Vec::new();
    match first_quoted(&raw, typed, &mut path) {
        None => Ok(()),
        Some((written, kind)) => Err(format!(
            "field `{}`: a {kind} written in quotes ({written:?}); write it without quotes",
            path.join(".")
        )),
    }
}

/// The first place (in key order) where `raw` is a string and `typed` a number or boolean,
/// leaving its keys in `path`.
fn first_quoted(
    raw: &Value,
    typed: &Value,
    path: &mut Vec<String>,
) -> Option<(String, &'static str)> {
    match (raw, typed) {
        (Value::String(s), Value::Number(_)) => Some((s.clone(), "number")),
        (Value::String(s), Value::Bool(_)) => Some((s.clone(), "boolean")),
        (Value::Object(r), Value::Object(t)) => {
            for (k, rv) in r {
                let Some(tv) = t.get(k) else { continue };
                path.push(k.clone());
                if let Some(found) = first_quoted(rv, tv, path) {
                    return Some(found);
                }
                path.pop();
            }
            None
        }
        (Value::Array(r), Value::Array(t)) if r.len() == t.len() => {
            for (i, (rv, tv)) in r.iter().zip(t).enumerate() {
                path.push(i.to_string());
                if let Some(found) = first_quoted(rv, tv, path) {
                    return Some(found);
                }
                path.pop();
            }
            None
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_quoted_number_or_boolean_is_named_by_its_dotted_key() {
        let typed = json!({"prepare": {"bm25": {"k1": 0.9, "b": 0.4}}, "run": {"force": true}});
        let e =
            refuse_quoted_scalars("prepare: {bm25: {k1: \"0.9\", b: 0.4}}\n", &typed).unwrap_err();
        assert!(
            e.contains("`prepare.bm25.k1`") && e.contains("\"0.9\""),
            "{e}"
        );
        let e = refuse_quoted_scalars("run: {force: 'true'}\n", &typed).unwrap_err();
        assert!(e.contains("`run.force`") && e.contains("boolean"), "{e}");
        let typed = json!({"budgets": [1, 2]});
        let e = refuse_quoted_scalars("budgets: [1, \"2\"]\n", &typed).unwrap_err();
        assert!(e.contains("`budgets.1`"), "{e}");
    }

    #[test]
    fn plain_numbers_strings_and_keys_the_typed_read_lacks_pass() {
        let typed = json!({"prepare": {"bm25": {"k1": 0.9}}, "results": "1234"});
        refuse_quoted_scalars("prepare: {bm25: {k1: 0.9}}\nresults: \"1234\"\n", &typed).unwrap();
        // a key the typed read does not carry back (here: absent) is not compared
        refuse_quoted_scalars("other: \"5\"\n", &typed).unwrap();
        // a non-finite float is left to the typed read's range rules
        refuse_quoted_scalars(
            "prepare: {bm25: {k1: .inf}}\n",
            &json!({"prepare": {"bm25": {"k1": null}}}),
        )
        .unwrap();
    }

    #[test]
    fn an_unknown_tag_is_refused() {
        let r: Result<Value, _> = serde_saphyr::from_str_with_options("a: !secret 3\n", options());
        assert!(r.is_err());
        let r: Result<Value, _> = serde_saphyr::from_str_with_options("a: !!int 3\n", options());
        assert_eq!(r.unwrap(), json!({"a": 3}));
    }
}
