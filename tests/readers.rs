//! Lenient and strict readers on hostile and malformed input: every case is an error naming
//! the field, never a panic.

use e2a::{E2AEnvelope, E2AResponse, Error, LimitKind, Limits};
use serde_json::{json, Value};

fn field_error(input: &str) -> (String, String) {
    match E2AEnvelope::from_json(input) {
        Err(Error::Field(v)) => (v.pointer, v.reason),
        other => panic!("expected a field error for {input}, got {other:?}"),
    }
}

#[test]
fn wrong_typed_fields_name_the_field() {
    for (input, pointer) in [
        (r#"{"request_id": 5}"#, "/request_id"),
        (r#"{"is_stream": "false"}"#, "/is_stream"),
        (r#"{"is_stream": 1}"#, "/is_stream"),
        (r#"{"params": []}"#, "/params"),
        (r#"{"expected_output_modes": "text"}"#, "/expected_output_modes"),
        (r#"{"expected_output_modes": ["a", 1]}"#, "/expected_output_modes"),
        (r#"{"jsonrpc_id": 1.5}"#, "/jsonrpc_id"),
        (r#"{"jsonrpc_id": true}"#, "/jsonrpc_id"),
        (r#"{"timestamp": true}"#, "/timestamp"),
        (r#"{"timestamp": 1e20}"#, "/timestamp"),
        (r#"{"identity_origin": "USER"}"#, "/identity_origin"),
        (r#"{"provenance": {"details": []}}"#, "/provenance/details"),
        (r#"{"auth": {"extra_headers": {"X": 1}}}"#, "/auth/extra_headers"),
        (r#"{"metadata": "m"}"#, "/metadata"),
        (r#"{"a/b": 1, "channel_context": 3}"#, "/channel_context"),
        // legacy keys are strings too (DRIVER.md, deliberate differences 1)
        (r#"{"app_id": 5}"#, "/app_id"),
        (r#"{"app_id": ["a"]}"#, "/app_id"),
        (r#"{"app_id": true}"#, "/app_id"),
        (r#"{"channel_id": 5}"#, "/channel_id"),
        (r#"{"req_method": {}}"#, "/req_method"),
    ] {
        let (p, reason) = field_error(input);
        assert_eq!(p, pointer, "{input}");
        assert!(reason.starts_with("expected"), "{reason}");
    }
    let err = E2AResponse::from_json(r#"{"sequence": -1}"#).unwrap_err();
    assert_eq!(err.violations()[0].pointer, "/sequence");
    // a string app_id still lands in channel_context; null and "" are absent
    let env = E2AEnvelope::from_json(r#"{"app_id": "app"}"#).unwrap();
    assert_eq!(env.channel_context.get("app_id"), Some(&serde_json::json!("app")));
    for absent in [r#"{"app_id": null}"#, r#"{"app_id": ""}"#] {
        assert!(
            E2AEnvelope::from_json(absent).unwrap().channel_context.is_empty(),
            "{absent}"
        );
    }
}

#[test]
fn malformed_json_and_non_objects() {
    for input in ["", "{", r#"{"request_id": "#, r#"{"a":1}}"#, "nul", "\"\\u12\""] {
        assert!(
            matches!(E2AEnvelope::from_json(input), Err(Error::Json { .. })),
            "{input:?}"
        );
    }
    for input in ["[]", "1", "\"x\"", "null", "true"] {
        let err = E2AEnvelope::from_json(input).unwrap_err();
        assert_eq!(err.violations()[0].reason, "expected object", "{input}");
        assert!(E2AResponse::from_json(input).is_err());
        assert!(E2AEnvelope::read(input, &e2a::ReadOptions::canonical())
            .map(|r| r.value)
            .is_err());
    }
}

#[test]
fn deep_nesting_is_a_limit_error() {
    let deep = format!(r#"{{"params": {}1{}}}"#, "[".repeat(100), "]".repeat(100));
    match E2AEnvelope::from_json(&deep) {
        Err(Error::Limit {
            limit: LimitKind::Depth,
            max: 64,
            ..
        }) => {}
        other => panic!("{other:?}"),
    }
    // far beyond serde_json's own recursion limit: still a clean error
    let deeper = "[".repeat(100_000);
    assert!(E2AEnvelope::from_json(&deeper).is_err());
    // within the limit it reads
    let ok = format!(r#"{{"params": {{"a": {}1{}}}}}"#, "[".repeat(50), "]".repeat(50));
    assert!(E2AEnvelope::from_json(&ok).is_ok());
}

#[test]
fn too_many_values_is_a_limit_error() {
    let limits = |n| Limits {
        max_values: n,
        ..Limits::default()
    };
    let is_values = |r: e2a::Result<()>| {
        matches!(
            r,
            Err(Error::Limit {
                limit: LimitKind::Values,
                ..
            })
        )
    };
    // `[0,0,0]`: the array and its three elements
    let text = "[0,0,0]";
    let value: serde_json::Value = serde_json::from_str(text).unwrap();
    assert!(limits(4).check(text).is_ok() && limits(4).check_value(&value).is_ok());
    assert!(is_values(limits(3).check(text)) && is_values(limits(3).check_value(&value)));
    // commas and brackets inside strings are not values
    let text = r#"{"a": "x,y,z,[,{,w"}"#;
    assert!(limits(2).check(text).is_ok());
    assert!(is_values(limits(1).check(text)));
    // a reader refuses a message with too many before parsing it
    let wide = format!(r#"{{"params": {{"xs": [{}0]}}}}"#, "0,".repeat(2_000_000));
    match E2AEnvelope::from_json(&wide) {
        Err(Error::Limit {
            limit: LimitKind::Values,
            max,
            ..
        }) => assert_eq!(max, Limits::default().max_values),
        other => panic!("{:?}", other.map(|_| ())),
    }
}

#[test]
fn huge_string_is_a_limit_error() {
    let big = format!(r#"{{"request_id": "{}"}}"#, "x".repeat(50 << 20));
    match E2AEnvelope::from_json(&big) {
        Err(Error::Limit {
            limit: LimitKind::MessageBytes,
            ..
        }) => {}
        other => panic!("{:?}", other.map(|_| ())),
    }
    let limits = Limits {
        max_bytes: usize::MAX,
        ..Limits::default()
    };
    match E2AEnvelope::read(&big, &e2a::ReadOptions::lenient().with_limits(limits)) {
        Err(Error::Limit {
            limit: LimitKind::StringBytes,
            ..
        }) => {}
        other => panic!("{:?}", other.map(|_| ())),
    }
}

#[test]
fn strict_reader_lists_every_violation() {
    let mut v = E2AEnvelope::default().to_value();
    v["request_id"] = json!(5);
    v["is_stream"] = json!("yes");
    v.as_object_mut().unwrap().remove("acp_meta");
    v["bogus"] = json!(1);
    let err = E2AEnvelope::read_value(&v, &e2a::ReadOptions::strict()).unwrap_err();
    let pointers: Vec<String> = err.violations().into_iter().map(|v| v.pointer).collect();
    assert!(pointers.contains(&"/request_id".to_string()), "{pointers:?}");
    assert!(pointers.contains(&"/is_stream".to_string()), "{pointers:?}");
    assert!(err.violations().iter().any(|v| v.reason.contains("bogus")), "{err}");
    // an omitted optional field is not a strict violation (it takes its default)…
    assert!(!err.violations().iter().any(|v| v.reason.contains("acp_meta")), "{err}");
    // …but the canonical form carries every key
    let mut fixed = v.clone();
    fixed["request_id"] = json!("r");
    fixed["is_stream"] = json!(true);
    fixed.as_object_mut().unwrap().remove("bogus");
    assert!(E2AEnvelope::read_value(&fixed, &e2a::ReadOptions::strict()).is_ok());
    let err = E2AEnvelope::read_value(&fixed, &e2a::ReadOptions::canonical()).unwrap_err();
    assert_eq!(err.violations()[0].pointer, "/acp_meta", "{err}");
    // canonical output of the lenient reader is always canonical-valid
    let lenient = E2AEnvelope::from_json(r#"{"req_method":"chat.send","timestamp":0,"payload":{"a":1}}"#).unwrap();
    assert_eq!(
        E2AEnvelope::read(&lenient.to_json(), &e2a::ReadOptions::canonical())
            .unwrap()
            .value,
        lenient
    );
}

#[test]
fn strict_text_reads_structs_from_objects_only() {
    // serde's derived structs also take an array of their fields; the schema does not
    let strict = e2a::ReadOptions::strict();
    let mut resp = E2AResponse::default().to_value();
    resp["provenance"] = json!([null, null]);
    let mut env = E2AEnvelope::default().to_value();
    env["auth"] = json!([]);
    for (text, pointer) in [(resp.to_string(), "/provenance"), (env.to_string(), "/auth")] {
        let err = match serde_json::from_str::<Value>(&text).unwrap().get("response_kind") {
            Some(_) => E2AResponse::read(&text, &strict).map(|_| ()).unwrap_err(),
            None => E2AEnvelope::read(&text, &strict).map(|_| ()).unwrap_err(),
        };
        assert!(err.violations().iter().any(|v| v.pointer == pointer), "{err}");
    }
    // a message is an object, not the array of its fields
    assert!(E2AResponse::read("[]", &strict).is_err());
    assert!(E2AEnvelope::read(r#"["1.0"]"#, &strict).is_err());
}

/// The protocol's ten required response keys (§12.4), as a Go or TypeScript service writes a chunk.
const TEN_KEYS: &str = r#"{"protocol_version":"1.0","response_id":"r1","request_id":"req_1","sequence":0,"is_final":false,"status":"in_progress","response_kind":"e2a.chunk","timestamp":"2026-03-29T12:00:00+00:00","provenance":{"source_protocol":"e2a"},"body":{"delta_kind":"text","delta":"Hello"}}"#;

#[test]
fn protocol_required_sets_read_strictly() {
    use e2a::{E2AResponse, ReadOptions};
    let r = E2AResponse::read(TEN_KEYS, &ReadOptions::strict()).unwrap().value;
    // omitted optional fields take the schema defaults
    assert_eq!(r.identity_origin, e2a::IdentityOrigin::Agent);
    assert_eq!(r.provenance, e2a::E2AProvenance::default());
    assert!(r.metadata.is_empty() && r.channel.is_none() && !r.is_stream);
    // and the output still carries every key
    assert_eq!(r.to_value().as_object().unwrap().len(), 28);

    let mut missing: serde_json::Value = serde_json::from_str(TEN_KEYS).unwrap();
    missing.as_object_mut().unwrap().remove("response_id");
    let err = E2AResponse::read_value(&missing, &ReadOptions::strict()).unwrap_err();
    assert_eq!(err.violations().len(), 1, "{err}");
    assert_eq!(err.violations()[0].pointer, "/response_id", "{err}");

    let wrong = TEN_KEYS.replace(r#""sequence":0"#, r#""sequence":"1""#);
    let err = E2AResponse::read(&wrong, &ReadOptions::strict()).unwrap_err();
    assert_eq!(err.violations()[0].pointer, "/sequence", "{err}");

    // canonical mode still rejects what e2a would not write
    assert!(E2AResponse::read(TEN_KEYS, &ReadOptions::canonical()).is_err());
    assert!(E2AResponse::read(&r.to_json(), &ReadOptions::canonical()).is_ok());

    // the envelope requires nothing, and typed serde (what `axum::Json` uses) agrees
    let env: E2AEnvelope = serde_json::from_str(r#"{"method": "x"}"#).unwrap();
    assert_eq!(env.method.as_deref(), Some("x"));
    assert_eq!(
        env,
        E2AEnvelope::read(r#"{"method": "x"}"#, &ReadOptions::strict())
            .unwrap()
            .value
    );
    let file: e2a::E2AFileRef = serde_json::from_str(r#"{"uri": "file:///a"}"#).unwrap();
    assert_eq!(file.uri, "file:///a");
}

#[test]
fn reader_modes_agree_on_values_and_limits() {
    use e2a::{E2AResponse, Lenient, ReadMode, ReadOptions, Strict};
    let v: serde_json::Value = serde_json::from_str(TEN_KEYS).unwrap();
    for mode in [ReadMode::Lenient, ReadMode::Strict] {
        let o = ReadOptions {
            mode,
            ..ReadOptions::default()
        };
        assert_eq!(
            E2AResponse::read(TEN_KEYS, &o).unwrap().value,
            E2AResponse::read_value(&v, &o).unwrap().value
        );
    }
    // limits apply to values too
    let tight = ReadOptions::strict().with_limits(Limits {
        max_string_bytes: 3,
        ..Limits::default()
    });
    assert!(matches!(
        E2AResponse::read_value(&v, &tight),
        Err(Error::Limit {
            limit: LimitKind::StringBytes,
            ..
        })
    ));
    // the Deserialize wrappers
    let Strict(s) = serde_json::from_str::<Strict<E2AResponse>>(TEN_KEYS).unwrap();
    let Lenient(l) = serde_json::from_str::<Lenient<E2AResponse>>(TEN_KEYS).unwrap();
    assert_eq!(s, l);
    assert!(serde_json::from_str::<Strict<E2AResponse>>(r#"{"sequence": 1}"#).is_err());
    assert!(serde_json::from_str::<Lenient<E2AResponse>>(r#"{"sequence": 1}"#).is_ok());
}

#[test]
fn strict_errors_never_quote_values() {
    let mut v = E2AEnvelope::default().to_value();
    v["request_id"] = json!({"token": "sk-very-secret"});
    v["identity_origin"] = json!("sk-very-secret");
    let err = e2a::E2AEnvelope::read_value(&v, &e2a::ReadOptions::canonical())
        .map(|r| r.value)
        .unwrap_err();
    assert!(!err.to_string().contains("sk-very-secret"), "{err}");
}

#[test]
fn canonical_output_has_the_reference_key_sets() {
    let env = E2AEnvelope::default().to_value();
    assert_eq!(env.as_object().unwrap().len(), 29);
    assert_eq!(
        env["provenance"],
        json!({"source_protocol": "e2a", "converter": null, "converted_at": null, "details": {}})
    );
    assert_eq!(env["identity_origin"], "user");
    let resp = E2AResponse::default().to_value();
    assert_eq!(resp.as_object().unwrap().len(), 28);
    assert_eq!(resp["identity_origin"], "agent");
    assert_eq!(resp["response_kind"], "");
    let auth = E2AEnvelope::from_json(r#"{"auth": {}}"#).unwrap().to_value();
    assert_eq!(
        auth["auth"],
        json!({"method_id": null, "bearer_token": null, "api_key_ref": null, "credential_ref": null, "extra_headers": {}, "_meta": {}})
    );
}

#[test]
fn debug_redacts_credentials() {
    let env = E2AEnvelope::from_json(
        r#"{"auth": {"bearer_token": "tok-SECRET-1", "api_key_ref": "key-SECRET-2", "credential_ref": "cred-SECRET-3",
            "extra_headers": {"Authorization": "Bearer SECRET-4"}}}"#,
    )
    .unwrap();
    let dbg = format!("{env:?} {:?}", env.auth);
    assert!(!dbg.contains("SECRET"), "{dbg}");
    assert!(dbg.contains("Authorization"), "header names stay visible: {dbg}");
    // the wire form is unchanged
    assert_eq!(env.to_value()["auth"]["bearer_token"], "tok-SECRET-1");
    assert_eq!(
        env.to_value()["auth"]["extra_headers"]["Authorization"],
        "Bearer SECRET-4"
    );
}

#[test]
fn legacy_rules_are_reported() {
    let read = E2AEnvelope::read(
        r#"{"binding":"acp","payload":{"q":1},"req_method":"m","channel_id":"c","metadata":{"k":1},
            "app_id":"a","source_agent_id":" s ","workspace_dir":"w","timestamp":1,"protocol_version":null,"extra":1}"#,
        &e2a::ReadOptions::lenient(),
    )
    .unwrap();
    use e2a::LegacyRule::*;
    for r in [
        Binding,
        PayloadMerge,
        ReqMethod,
        ChannelId,
        MetadataToChannelContext,
        AppId,
        SourceAgentIdFallback,
        WorkspaceDir,
        EpochTimestamp,
        NullDefault,
        UnknownKeys,
    ] {
        assert!(read.rules.contains(&r), "{r:?} not reported: {:?}", read.rules);
    }
    let canonical = E2AEnvelope::read(
        &read.value.to_json(),
        &e2a::ReadOptions::lenient().with_limits(Limits::default()),
    )
    .unwrap();
    assert!(
        canonical.rules.is_empty(),
        "canonical input fires no legacy rule: {:?}",
        canonical.rules
    );
    assert_eq!(canonical.value, read.value);
}

#[test]
fn typed_body_by_kind() {
    use e2a::ResponseBody;
    let r = E2AResponse::from_json(r#"{"response_kind":"e2a.error","body":{"code":"E2A.X","message":"m","external":{"protocol":"acp","type":"t","payload":{}}}}"#).unwrap();
    let ResponseBody::Error(b) = r.typed_body().unwrap() else {
        panic!()
    };
    assert_eq!(b.external.unwrap().protocol.as_deref(), Some("acp"));
    let bad = E2AResponse::from_json(r#"{"response_kind":"a2a.stream_event","body":{"branch":"nope","payload":{}}}"#)
        .unwrap();
    assert_eq!(bad.typed_body().unwrap_err().violations()[0].pointer, "/body");
    let unknown = E2AResponse::from_json(r#"{"response_kind":"vendor.x","body":{"a":1}}"#).unwrap();
    assert!(matches!(unknown.typed_body().unwrap(), ResponseBody::Unknown { kind, .. } if kind == "vendor.x"));
}

/// Fuzz finding (strict_reader): a schema-valid envelope with an unstripped `agent_id` was
/// strict-valid but read differently by the lenient reader. Strict now also requires the
/// canonical form.
#[test]
fn strict_requires_canonical_form() {
    let mut v = E2AEnvelope::default().to_value();
    v["agent_id"] = json!(" tab");
    let err = e2a::E2AEnvelope::read_value(&v, &e2a::ReadOptions::canonical())
        .map(|r| r.value)
        .unwrap_err();
    assert_eq!(err.violations()[0].pointer, "/agent_id");
    v["agent_id"] = json!("tab");
    let strict = e2a::E2AEnvelope::read_value(&v, &e2a::ReadOptions::canonical())
        .map(|r| r.value)
        .unwrap();
    assert_eq!(E2AEnvelope::from_value(&v).unwrap(), strict);
}

#[test]
fn nested_objects_read_the_same_from_text_and_from_a_value() {
    // on the text path a nested reader's object (provenance, auth) is parsed into slots of its
    // own; the map path reads the parsed object: both give the same message or the same error
    for nested in [
        json!(null),
        json!("x"),
        json!(3),
        json!(1.5),
        json!(true),
        json!([1, {"a": 2}]),
        json!({}),
        json!({"source_protocol": null, "converter": "c", "unknown": [1]}),
        json!({"source_protocol": "a2a", "details": {"k": {"deep": [1, 2]}}}),
        json!({"details": 5}),
        json!({"converted_at": 7}),
        json!({"method_id": "m", "bearer_token": "tok", "extra_headers": {"X-A": "1"}, "_meta": {"m": 1}}),
        json!({"extra_headers": {"X": 1}}),
    ] {
        for key in ["provenance", "auth"] {
            let v = json!({key: nested.clone(), "binding": "acp", "request_id": "r"});
            let text = v.to_string();
            let (a, b) = (
                E2AEnvelope::read(&text, &e2a::ReadOptions::lenient()),
                E2AEnvelope::read_value(&v, &e2a::ReadOptions::lenient()),
            );
            assert_eq!(format!("{a:?}"), format!("{b:?}"), "{text}");
            if key == "provenance" {
                let v = json!({key: nested.clone(), "response_kind": "e2a.chunk"});
                let text = v.to_string();
                let (a, b) = (
                    E2AResponse::read(&text, &e2a::ReadOptions::lenient()),
                    E2AResponse::read_value(&v, &e2a::ReadOptions::lenient()),
                );
                assert_eq!(format!("{a:?}"), format!("{b:?}"), "{text}");
            }
        }
    }
}
