//! Runs every vendored conformance vector (computed by the Python reference) in-process.
//! Cases whose function is not implemented are counted as skipped, never passed, and fail the
//! test, as does a vectors file with no case in it.

use e2a::conformance::{call, Outcome};
use serde_json::Value;

const DYN: &str = "<dynamic>";

/// `check.py`'s comparison: key order free, numbers by value, `<dynamic>` matches any string.
fn same(exp: &Value, got: &Value, path: &str) -> Option<String> {
    match (exp, got) {
        (Value::String(s), _) if s == DYN => (!got.is_string()).then(|| format!("{path}: expected a string")),
        (Value::Bool(a), Value::Bool(b)) => (a != b).then(|| format!("{path}: expected {a}, got {b}")),
        (Value::Bool(_), _) | (_, Value::Bool(_)) => Some(format!("{path}: expected {exp}, got {got}")),
        (Value::Number(a), Value::Number(b)) => {
            (a.as_f64() != b.as_f64()).then(|| format!("{path}: expected {a}, got {b}"))
        }
        (Value::Object(e), Value::Object(g)) => {
            let missing: Vec<_> = e.keys().filter(|k| !g.contains_key(*k)).collect();
            let extra: Vec<_> = g.keys().filter(|k| !e.contains_key(*k)).collect();
            if !missing.is_empty() || !extra.is_empty() {
                return Some(format!("{path}: keys missing {missing:?} extra {extra:?}"));
            }
            e.iter().find_map(|(k, v)| same(v, &g[k], &format!("{path}.{k}")))
        }
        (Value::Array(e), Value::Array(g)) if e.len() == g.len() => e
            .iter()
            .zip(g)
            .enumerate()
            .find_map(|(i, (a, b))| same(a, b, &format!("{path}[{i}]"))),
        _ => (exp != got).then(|| format!("{path}: expected {exp}, got {got}")),
    }
}

#[test]
fn conformance_vectors() {
    let text = include_str!("conformance/vectors.json");
    let doc: Value = serde_json::from_str(text).expect("vectors.json parses");
    let cases = doc["cases"].as_array().expect("cases array");
    let (mut passed, mut failed, mut skipped) = (0, 0, 0);
    let mut failures = Vec::new();
    for c in cases {
        let id = c["id"].as_str().unwrap_or("?");
        let function = c["fn"].as_str().unwrap_or("");
        let why = match (call(function, &c["input"]), &c["expect"]) {
            (Outcome::UnknownFn, _) => {
                skipped += 1;
                continue;
            }
            (Outcome::Error(_), exp) if exp.get("error").is_some() => None,
            (Outcome::Output(_), exp) if exp.get("error").is_some() => Some("expected an error, got output".into()),
            (Outcome::Error(e), _) => Some(format!("unexpected error: {e}")),
            (Outcome::Output(got), exp) => same(&exp["output"], &got, "$"),
        };
        match why {
            None => passed += 1,
            Some(w) => {
                failed += 1;
                failures.push(format!("{id} [{function}]: {w}"));
            }
        }
    }
    println!("conformance: {passed} passed, {failed} failed, {skipped} skipped");
    for f in failures.iter().take(40) {
        println!("  FAIL {f}");
    }
    assert_eq!(failed, 0, "{failed} conformance cases failed");
    assert_eq!(skipped, 0, "{skipped} conformance cases skipped (unknown function)");
    assert!(passed > 0, "no conformance case ran");
}
