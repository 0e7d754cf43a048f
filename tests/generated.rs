//! The committed `generated/` copy must equal what build.rs produced from `schema/`.

#[test]
fn generated_rust_matches_build_output() {
    let built = include_str!(concat!(env!("OUT_DIR"), "/e2a_types.rs"));
    let committed = include_str!("../generated/rust/e2a_types.rs");
    assert!(
        built == committed,
        "generated/rust/e2a_types.rs is stale: run `cargo xtask codegen`"
    );
}

#[test]
fn generated_schema_matches_build_output() {
    let committed = include_str!("../generated/schema/e2a.schema.json");
    assert!(
        e2a::SCHEMA_JSON == committed,
        "generated/schema/e2a.schema.json is stale: run `cargo xtask codegen`"
    );
}

#[test]
fn schema_descriptions_become_doc_comments() {
    // Every property description in schema/ must appear as a doc comment of the generated type.
    let schema: serde_json::Value = serde_json::from_str(e2a::SCHEMA_JSON).unwrap();
    let code = include_str!("../generated/rust/e2a_types.rs");
    let desc = schema
        .pointer("/$defs/E2AEnvelope/properties/request_id/description")
        .and_then(|d| d.as_str())
        .unwrap();
    assert!(
        code.contains(&format!("///{desc}")),
        "description not found as a doc comment"
    );
}

#[test]
fn legacy_record_marker_keys_are_schema_properties() {
    let schema: serde_json::Value = serde_json::from_str(e2a::SCHEMA_JSON).unwrap();
    let props = |d: &str| schema["$defs"][d]["properties"].as_object().unwrap().clone();
    assert!(props("AgentResponse").contains_key(e2a::legacy::OK_KEY));
    assert!(!props("AgentResponseChunk").contains_key(e2a::legacy::OK_KEY));
    assert!(props("AgentResponseChunk").contains_key(e2a::legacy::IS_COMPLETE_KEY));
    assert!(!props("AgentResponse").contains_key(e2a::legacy::IS_COMPLETE_KEY));
}
