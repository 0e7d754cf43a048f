//! Schema lint: the authoring rules that keep typify 0.8 output good (see
//! `reference/typify-notes.md` §1.6) plus documentation completeness.

use serde_json::Value;

/// Returns one message per problem found in the bundled schema (empty = clean).
///
/// Rules: every property has a `description`; every object schema with `properties` states
/// `additionalProperties` explicitly; no `prefixItems`, `unevaluatedProperties`, `not`,
/// `allOf`, `dependentSchemas` or `$dynamicRef`; no open-enum `anyOf` of consts; every `$ref`
/// is `#/$defs/Name` and resolves; the frame keywords are sound ([`crate::frame::lint`]).
pub fn lint(bundled: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    let defs = bundled.get("$defs").and_then(Value::as_object);
    let Some(defs) = defs else {
        return vec!["bundle has no $defs".into()];
    };
    for (name, def) in defs {
        if def.get("description").and_then(Value::as_str).is_none_or(str::is_empty) {
            problems.push(format!("/$defs/{name}: missing description"));
        }
        walk(def, &format!("/$defs/{name}"), defs, &mut problems);
    }
    problems.extend(crate::frame::lint(bundled));
    problems
}

fn walk(v: &Value, path: &str, defs: &serde_json::Map<String, Value>, out: &mut Vec<String>) {
    let Some(m) = v.as_object() else { return };
    for bad in [
        "prefixItems",
        "unevaluatedProperties",
        "not",
        "allOf",
        "dependentSchemas",
        "$dynamicRef",
    ] {
        if m.contains_key(bad) {
            out.push(format!("{path}: `{bad}` is not supported by typify 0.8"));
        }
    }
    if let Some(Value::String(r)) = m.get("$ref") {
        match r.strip_prefix("#/$defs/") {
            Some(n) if defs.contains_key(n) => {}
            _ => out.push(format!("{path}: $ref `{r}` does not resolve to #/$defs/Name")),
        }
    }
    if let Some(Value::Array(alts)) = m.get("anyOf") {
        if alts.iter().filter(|a| a.get("const").is_some()).count() > 0 {
            out.push(format!("{path}: open-enum `anyOf` of consts breaks typify; use `enum`"));
        }
    }
    if let Some(props) = m.get("properties").and_then(Value::as_object) {
        if !m.contains_key("additionalProperties") {
            out.push(format!(
                "{path}: object with properties must state additionalProperties"
            ));
        }
        for (k, p) in props {
            let pp = format!("{path}/properties/{k}");
            if p.get("description").and_then(Value::as_str).is_none_or(str::is_empty) {
                out.push(format!("{pp}: missing description"));
            }
            walk(p, &pp, defs, out);
        }
    }
    for key in ["items", "additionalProperties"] {
        if let Some(x) = m.get(key) {
            walk(x, &format!("{path}/{key}"), defs, out);
        }
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(a)) = m.get(key) {
            for (i, x) in a.iter().enumerate() {
                walk(x, &format!("{path}/{key}/{i}"), defs, out);
            }
        }
    }
}
