//! Every numeric parameter of every leg kind has a range rule: a value no one could mean is
//! refused when the campaign loads, naming the field, rather than run. The test walks each
//! kind's resolved parameters (defaults filled in, nested groups included), tries values far
//! outside any sensible range at every numeric leaf, and fails for a leaf that accepts all of
//! them. A new parameter without a rule fails here until it gets one (or, if every value of
//! its type is meaningful, a line in `FREE` saying why).

use hopbench_legs::kinds::KINDS;
use hopbench_legs::params::Flat;
use hopbench_legs::registry::LegSpec;
use hopbench_legs::LegError;
use serde_json::{json, Value};

/// Numeric leaves (by field name, wherever the group sits) any value of whose type is
/// meaningful, with the reason.
const FREE: &[(&str, &str)] = &[
    (
        "seed_docs_k",
        "0 seeds the lanes from the query's entities alone; a count above the base takes all of it",
    ),
    (
        "navigational_max_words",
        "0 lets no query be navigational (the gate never vetoes); any length is a valid query",
    ),
    (
        "max_hyperedges",
        "in `coe`: 0 admits no rescued candidate; a count above the chain's length is no limit \
         (the hypergraph lane's own `max_hyperedges` has a rule)",
    ),
];

/// A kind's parameters, from its example (kinds with a required parameter, such as `run`'s
/// `file`, have one).
fn base(kind: &str, example: &str) -> Flat {
    let mut map: Flat = serde_json::from_str(example).expect("kind example is a JSON map");
    map.insert("kind".into(), json!(kind));
    map
}

/// Paths (keys from the top) of every numeric leaf of `v`.
fn numeric_leaves(v: &Value, path: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    match v {
        Value::Number(_) => out.push(path.clone()),
        Value::Object(m) => {
            for (k, v) in m {
                path.push(k.clone());
                numeric_leaves(v, path, out);
                path.pop();
            }
        }
        _ => {}
    }
}

fn set(v: &mut Value, path: &[String], to: Value) {
    let mut at = v;
    for k in path {
        at = &mut at[k.as_str()];
    }
    *at = to;
}

/// Values no range rule should let through, for a leaf whose default is `default`.
fn probes(default: &Value) -> Vec<Value> {
    if default.is_u64() {
        vec![json!(0), json!(1_000_000_000_000u64)]
    } else {
        vec![json!(-1.0), json!(-1e12), json!(1e12)]
    }
}

/// Whether `spec` (a leaf set to a probe) is refused, at parse or by the range checks, for a
/// reason naming one of the leaf's path segments.
fn refused(map: Flat, path: &[String]) -> bool {
    let names = |text: &str| path.iter().any(|seg| text.contains(seg.as_str()));
    match LegSpec::from_flat(map) {
        Err(e) => names(&e.to_string()),
        Ok(spec) => match spec.validate("probe") {
            Err(LegError::Config { field, .. }) => names(&field),
            Err(_) | Ok(()) => false,
        },
    }
}

#[test]
fn every_numeric_parameter_of_every_kind_has_a_range_rule() {
    let mut unruled = Vec::new();
    for kind in KINDS {
        let map = base(kind.name, kind.example);
        let spec = LegSpec::from_flat(map.clone())
            .unwrap_or_else(|e| panic!("kind `{}`: its example does not parse: {e}", kind.name));
        spec.validate("example")
            .unwrap_or_else(|e| panic!("kind `{}`: its example is refused: {e}", kind.name));
        let resolved = Value::Object(spec.params());
        let mut leaves = Vec::new();
        numeric_leaves(&resolved, &mut Vec::new(), &mut leaves);
        for path in leaves {
            let dotted = path.join(".");
            let leaf = path.last().map(String::as_str).unwrap_or_default();
            if FREE.iter().any(|(name, _)| *name == leaf) {
                continue;
            }
            let mut default = &resolved;
            for k in &path {
                default = &default[k.as_str()];
            }
            let any_refused = probes(default).into_iter().any(|probe| {
                let mut v = resolved.clone();
                set(&mut v, &path, probe);
                let Value::Object(mut m) = v else {
                    unreachable!()
                };
                m.insert("kind".into(), json!(kind.name));
                refused(m, &path)
            });
            if !any_refused {
                unruled.push(format!("{}.{dotted}", kind.name));
            }
        }
    }
    assert!(
        unruled.is_empty(),
        "parameters that accept any value (give each a range rule in its group's `check`, or a \
         `FREE` line saying why every value is meaningful):\n  {}",
        unruled.join("\n  ")
    );
}

#[test]
fn the_walk_sees_a_parameter_without_a_rule() {
    // `graph_rescue`'s `low_agreement` has a rule: a probe is refused naming it
    let spec = LegSpec::from_flat(base("graph_rescue", "{}")).unwrap();
    let Value::Object(mut m) = Value::Object(spec.params()) else {
        unreachable!()
    };
    m.insert("kind".into(), json!("graph_rescue"));
    m.insert("low_agreement".into(), json!(-1.0));
    assert!(refused(m.clone(), &["low_agreement".into()]));
    // a value inside the range is not refused, so the walk would report a leaf whose probes
    // all landed in its range
    m.insert("low_agreement".into(), json!(0.2));
    assert!(!refused(m, &["low_agreement".into()]));
}
