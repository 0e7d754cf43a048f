//! The OpenAPI 3.1 document of the E2A-over-HTTP binding: the hand-written paths of
//! `api/openapi.paths.json` plus `components.schemas` copied from the bundled schema (never
//! typed twice), with `#/$defs/X` rewritten to `#/components/schemas/X`.

use serde_json::{Map, Value};

use crate::Error;

fn rewrite(v: &mut Value) {
    match v {
        Value::Object(m) => {
            if let Some(Value::String(r)) = m.get_mut("$ref") {
                if let Some(name) = r.strip_prefix("#/$defs/") {
                    *r = format!("#/components/schemas/{name}");
                }
            }
            m.values_mut().for_each(rewrite);
        }
        Value::Array(a) => a.iter_mut().for_each(rewrite),
        _ => {}
    }
}

/// Builds the OpenAPI document from the bundled schema and the paths source.
pub fn openapi(bundled: &Value, paths_source: &Value) -> Result<Value, Error> {
    let src = paths_source
        .as_object()
        .ok_or_else(|| Error::Schema("api/openapi.paths.json: not an object".into()))?;
    let mut schemas = bundled.get("$defs").cloned().unwrap_or(Value::Object(Map::new()));
    rewrite(&mut schemas);
    let mut components = src
        .get("components")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    components.insert("schemas".into(), schemas);
    let mut doc = Map::new();
    doc.insert("openapi".into(), "3.1.0".into());
    doc.insert(
        "jsonSchemaDialect".into(),
        "https://json-schema.org/draft/2020-12/schema".into(),
    );
    for k in ["info", "paths"] {
        let v = src
            .get(k)
            .cloned()
            .ok_or_else(|| Error::Schema(format!("api/openapi.paths.json: no `{k}`")))?;
        doc.insert(k.into(), v);
    }
    doc.insert("components".into(), Value::Object(components));
    let doc = Value::Object(doc);
    let mut missing = Vec::new();
    crate::collect_refs(&doc, &mut |r| {
        if let Some(p) = r.strip_prefix('#') {
            if doc.pointer(p).is_none() {
                missing.push(r.to_string());
            }
        }
    });
    if !missing.is_empty() {
        return Err(Error::Schema(format!(
            "openapi: unresolved $ref: {}",
            missing.join(", ")
        )));
    }
    Ok(doc)
}
