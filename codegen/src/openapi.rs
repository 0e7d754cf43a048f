//! The OpenAPI 3.1 document of the gateway's HTTP routes (E2A over HTTP and A2A's HTTP+JSON
//! binding): the hand-written `info`, `tags`, paths and shared components of
//! `api/openapi.paths.json` plus `components.schemas` copied from the bundled schema (never
//! typed twice), with `#/$defs/X` rewritten to `#/components/schemas/X`. The frame keywords
//! (`x-e2a-frame`, `x-e2a-body-of`) say how e2a holds a record in memory, nothing about the
//! wire: they are left out.

use serde_json::{Map, Value};

use crate::Error;

fn rewrite(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.retain(|k, _| k != crate::frame::FRAME && k != crate::frame::BODY_OF);
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
    if let Some(tags) = src.get("tags") {
        doc.insert("tags".into(), tags.clone());
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn bundled() -> Value {
        json!({"$defs": {
            "A": {"description": "a", "type": "object", "additionalProperties": true,
                  "properties": {"b": {"description": "b", "$ref": "#/$defs/B"}}},
            "B": {"description": "b", "type": "string"}
        }})
    }

    #[test]
    fn schemas_come_from_the_bundle_with_their_refs_rewritten() {
        let paths = json!({
            "info": {"title": "t", "version": "1"},
            "tags": [{"name": "A2A"}],
            "paths": {"/a": {"get": {"responses": {"200": {"$ref": "#/components/responses/R"}}}}},
            "components": {
                "responses": {"R": {"description": "r", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/A"}}}}},
                "schemas": {"Ignored": {"type": "string"}}
            }
        });
        let doc = openapi(&bundled(), &paths).expect("document");
        assert_eq!(doc["openapi"], "3.1.0");
        assert_eq!(doc["tags"], json!([{"name": "A2A"}]));
        assert_eq!(
            doc["components"]["schemas"]["A"]["properties"]["b"]["$ref"],
            "#/components/schemas/B"
        );
        assert!(
            doc["components"]["schemas"].get("Ignored").is_none(),
            "schemas are the bundle's only"
        );
        assert_eq!(doc["components"]["responses"]["R"]["description"], "r");
    }

    #[test]
    fn tags_are_optional_and_info_and_paths_are_not() {
        let doc = openapi(&bundled(), &json!({"info": {}, "paths": {}})).expect("document");
        assert!(doc.get("tags").is_none());
        for missing in ["info", "paths"] {
            let mut src = json!({"info": {}, "paths": {}});
            src.as_object_mut().expect("object").remove(missing);
            let e = openapi(&bundled(), &src).expect_err("refused");
            assert!(e.to_string().contains(missing), "{e}");
        }
    }

    #[test]
    fn an_unresolved_ref_is_an_error() {
        let src = json!({"info": {}, "paths": {"/a": {"get": {"responses": {"200": {"$ref": "#/components/responses/Nope"}}}}}});
        let e = openapi(&bundled(), &src).expect_err("refused");
        assert!(e.to_string().contains("#/components/responses/Nope"), "{e}");
    }
}
