//! Adapter behaviours of the reference's own unit tests (python-reference-behavior.md §15),
//! exercised through the public Rust API.

use e2a::acp::session_updates::SessionUpdateState;
use e2a::legacy::{self, AgentResponse, AgentResponseChunk};
use e2a::{acp, wire, E2AEnvelope, E2AResponse};
use serde_json::{json, Map, Value};

fn obj(v: Value) -> Map<String, Value> {
    v.as_object().cloned().expect("object")
}

fn chunk(payload: Value, is_complete: bool) -> AgentResponseChunk {
    AgentResponseChunk::from_value(
        &json!({"request_id": "r1", "channel_id": "web", "payload": payload, "is_complete": is_complete}),
    )
    .unwrap()
}

fn chunk_roundtrip(c: &AgentResponseChunk) -> AgentResponseChunk {
    let frame = wire::encode_agent_chunk(c, "resp", 3, true);
    assert!(wire::is_e2a_response(&frame));
    wire::parse_chunk(&frame).unwrap()
}

#[test]
fn unary_ok_roundtrip_keeps_everything() {
    let mut r = AgentResponse::ok("r1", "web", obj(json!({"answer": 42})));
    r.metadata = Some(obj(json!({"m": 1})));
    let back = wire::parse_unary(&wire::encode_agent_response(&r, "resp", 0)).unwrap();
    assert_eq!(
        (back.request_id.as_str(), back.channel_id.as_str(), back.ok),
        ("r1", "web", true)
    );
    assert_eq!(back.payload, r.payload);
    assert_eq!(back.metadata, r.metadata);
}

#[test]
fn unary_error_roundtrip_keeps_details() {
    let r = AgentResponse::from_value(&json!({"request_id": "r", "channel_id": "c", "ok": false,
        "payload": {"error": "x", "code": 9}}))
    .unwrap();
    let frame = wire::encode_agent_response(&r, "resp", 0);
    assert_eq!(frame["body"]["code"], "E2A.AGENT_ERROR");
    assert_eq!(frame["body"]["message"], "x");
    let back = wire::parse_unary(&frame).unwrap();
    assert!(!back.ok);
    assert_eq!(Value::Object(back.payload.unwrap()), json!({"error": "x", "code": 9}));
}

#[test]
fn serializable_payloads_and_encode_fallback() {
    #[derive(serde::Serialize)]
    struct Schema {
        r#type: &'static str,
        index: u32,
        payload: Value,
    }
    let frame = wire::encode_response_payload(
        "r",
        "c",
        true,
        &Schema {
            r#type: "t",
            index: 1,
            payload: json!({}),
        },
        None,
        "x",
        0,
    );
    let back = wire::parse_unary(&frame).unwrap();
    assert_eq!(
        Value::Object(back.payload.unwrap()),
        json!({"type": "t", "index": 1, "payload": {}})
    );

    struct Broken;
    impl serde::Serialize for Broken {
        fn serialize<S: serde::Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
            Err(serde::ser::Error::custom("cannot serialize"))
        }
    }
    let frame = wire::encode_response_payload("r", "c", true, &Broken, None, "x", 0);
    assert_eq!(frame["response_kind"], "e2a.error");
    assert_eq!(frame["body"]["code"], "E2A.WIRE_ENCODE_ERROR");
    assert_eq!(frame["provenance"]["details"]["kind"], "wire_encode_fallback");
    // the legacy blob wins when parsing back: the request is not lost
    let back = wire::parse_unary(&frame).unwrap();
    assert_eq!((back.request_id.as_str(), back.ok), ("r", true));
}

#[test]
fn chunk_sentinel_roundtrip() {
    let back = chunk_roundtrip(&chunk(json!({"is_complete": true}), true));
    assert!(back.is_complete);
    assert_eq!(Value::Object(back.payload.unwrap()), json!({"is_complete": true}));
}

#[test]
fn chat_delta_roundtrip_keeps_reasoning_and_copy_keys() {
    let c = chunk(
        json!({"event_type": "chat.delta", "content": "think", "source_chunk_type": "llm_reasoning", "rid": 7}),
        false,
    );
    let frame = wire::encode_agent_chunk(&c, "resp", 1, true);
    assert_eq!(frame["body"]["delta_kind"], "reasoning");
    let back = chunk_roundtrip(&c);
    let p = back.payload.unwrap();
    assert_eq!(p["event_type"], "chat.delta");
    assert_eq!(p["content"], "think");
    assert_eq!(p["source_chunk_type"], "llm_reasoning");
    assert_eq!(p["rid"], 7);
    assert!(!back.is_complete);
}

#[test]
fn custom_event_and_chat_error_roundtrip() {
    let back = chunk_roundtrip(&chunk(
        json!({"event_type": "history.message", "message": {"id": 1}}),
        false,
    ));
    let p = back.payload.unwrap();
    assert_eq!(p["event_type"], "history.message");
    assert_eq!(p["message"], json!({"id": 1}));

    let c = chunk(json!({"event_type": "chat.error", "error": "boom"}), true);
    let frame = wire::encode_agent_chunk(&c, "resp", 2, true);
    assert_eq!(
        (frame["status"].as_str(), frame["response_kind"].as_str()),
        (Some("failed"), Some("e2a.error"))
    );
    let back = chunk_roundtrip(&c);
    assert!(back.is_complete);
    let p = back.payload.unwrap();
    assert_eq!(
        (p["event_type"].as_str(), p["error"].as_str()),
        (Some("chat.error"), Some("boom"))
    );
}

#[test]
fn deprecated_legacy_shapes_parse() {
    let u =
        wire::parse_unary(&json!({"request_id": "old", "channel_id": "ch", "ok": true, "payload": {"x": 1}})).unwrap();
    assert_eq!(u.request_id, "old");
    let c =
        wire::parse_chunk(&json!({"request_id": "old", "channel_id": "ch", "is_complete": false, "payload": {"x": 1}}))
            .unwrap();
    assert_eq!(c.payload.unwrap()["x"], 1);
    let err = wire::parse_unary(&json!({"foo": 1})).unwrap_err();
    assert!(err.to_string().contains("unrecognized wire shape"), "{err}");
}

#[test]
fn legacy_blob_wins_over_error_body() {
    let frame = json!({"protocol_version": "1.0", "response_kind": "e2a.error", "status": "failed",
        "body": {"code": "E2A.X", "message": "m"},
        "metadata": {"_e2a_wire_legacy_agent_response": {"request_id": "L", "channel_id": "c", "ok": true, "payload": {"v": 1}}}});
    let r = wire::parse_unary(&frame).unwrap();
    assert!(r.ok);
    assert_eq!(r.request_id, "L");
}

#[test]
fn unary_parser_rejects_chunk_frames() {
    let c = chunk(json!({"event_type": "chat.delta", "content": "x"}), false);
    let frame = wire::encode_agent_chunk(&c, "resp", 0, true);
    assert!(wire::parse_unary(&frame).is_err());
}

#[test]
fn fallback_envelope_carries_the_legacy_request() {
    let legacy = json!({"request_id": "r9", "channel_id": "web", "req_method": "history.get", "params": {"a": 1}});
    let env = legacy::fallback_envelope(&legacy).unwrap();
    assert_eq!(env.channel_context["_jiuwenswarm"]["normalize_failed"], true);
    assert_eq!(
        env.channel_context["_jiuwenswarm"]["legacy_agent_request"]["req_method"],
        "history.get"
    );
    assert!(env.method.is_none());
    // too large: params replaced by a marker, the rest kept
    let big = json!({"request_id": "r", "params": {"blob": "x".repeat(600_000)}, "req_method": "m"});
    let env = legacy::fallback_envelope(&big).unwrap();
    let kept = &env.channel_context["_jiuwenswarm"]["legacy_agent_request"];
    assert_eq!(
        kept["params"],
        json!({"_e2a_fallback_error": "legacy payload too large"})
    );
    assert_eq!(kept["req_method"], "m");
}

#[test]
fn plan_approval_required_becomes_a_terminal_chunk() {
    let r = E2AResponse::from_value(&json!({"response_kind": "plan.approval_required", "session_id": "s",
        "body": {"plan_content": "do x", "plan_slug": "x"}}))
    .unwrap();
    let c = legacy::response_to_agent_chunk(&r).unwrap();
    assert!(c.is_complete);
    let p = c.payload.unwrap();
    assert_eq!(p["event_type"], "plan.approval_required");
    assert_eq!(p["plan_content"], "do x");
    assert_eq!(p["session_id"], "s");
}

#[test]
fn gateway_request_fields_reach_the_envelope() {
    let fields = legacy::AgentFields::from_value(
        &json!({"request_id": "r", "channel_id": "web", "req_method": "chat.send",
        "user_id": "u1", "metadata": {"method": "x"}, "params": {"q": 1}}),
    )
    .unwrap();
    let env = legacy::envelope_from_agent_fields(&fields).unwrap();
    assert_eq!(env.user_id.as_deref(), Some("u1"));
    assert_eq!(env.method.as_deref(), Some("chat.send"));
    assert_eq!(env.channel_context["method"], "x");
    assert_eq!(env.timestamp.as_deref(), Some("1970-01-01T00:00:00+00:00"));
    // agent_id never comes from agent_ref.id; an explicit agent_id is kept next to agent_ref
    let env = E2AEnvelope::from_json(r#"{"agent_ref": {"id": "office"}}"#).unwrap();
    assert!(env.agent_id.is_none());
    let env =
        E2AEnvelope::from_json(r#"{"agent_ref": {"id": "office"}, "agent_id": "a1", "service_id": "s1"}"#).unwrap();
    assert_eq!(
        (env.agent_id.as_deref(), env.service_id.as_deref()),
        (Some("a1"), Some("s1"))
    );
}

#[test]
fn prompt_blocks_reference_cases() {
    let p = obj(json!({"prompt": [
        {"type": "text", "text": "a"}, {"type": "text", "text": "b"},
        {"type": "resource", "resource": {"uri": "file:///x.py", "text": "code"}},
        {"type": "resource_link", "uri": "file:///tmp/r.txt"},
        {"type": "resource_link", "uri": "https://h/p"},
        {"type": "image", "data": "AA", "mimeType": "image/png"},
        {"type": "resource", "resource": {"uri": "file:///i.webp", "blob": "BB", "mimeType": "image/webp"}},
        {"type": "resource", "resource": {"uri": "file:///d.bin", "blob": "CC", "mimeType": "application/octet-stream"}},
        {"type": "mystery"}, "junk", {"type": "text"}
    ]}));
    let parsed = acp::parse_prompt_blocks(&p);
    assert_eq!(
        parsed.text,
        "a\nb\n<context uri=\"file:///x.py\">\ncode\n</context>\n[Linked resource] resource: https://h/p"
    );
    assert_eq!(parsed.attachments.len(), 1);
    assert_eq!(parsed.attachments[0].filename, "r.txt");
    assert_eq!(parsed.media_items.len(), 2);
    assert_eq!(parsed.media_items[1].filename.as_deref(), Some("i.webp"));
    // custom fallback order and the media-only placeholder
    let p = obj(json!({"query": " q ", "text": " t "}));
    assert_eq!(
        acp::prompt_blocks::parse_prompt_blocks_with(&p, &["query", "text"]).text,
        "q"
    );
    let p = obj(json!({"prompt": [{"type": "image", "data": "AA"}]}));
    assert_eq!(acp::parse_prompt_blocks(&p).text, "(see attached context)");
    assert!(!acp::parse_prompt_blocks(&obj(json!({"prompt": []}))).has_content());
}

#[test]
fn session_updates_follow_the_reference() {
    let mut st = SessionUpdateState::new();
    assert!(st.update("chat.symphony_status", &obj(json!({"x": 1}))).is_none());
    assert!(st.assistant_message_id.is_none(), "no id allocated for ignored events");
    let a = st.update("chat.reasoning", &obj(json!({"content": "hmm"}))).unwrap();
    let b = st
        .update(
            "chat.delta",
            &obj(json!({"content": "hmm", "source_chunk_type": "llm_reasoning"})),
        )
        .unwrap();
    assert_eq!(a["sessionUpdate"], "agent_thought_chunk");
    assert_eq!(
        a, b,
        "reasoning delta and reasoning event give identical thought chunks"
    );
    let todo = st
        .update(
            "todo.updated",
            &obj(json!({"todos": [{"content": "a", "status": "pending"}]})),
        )
        .unwrap();
    assert_eq!(todo["todos"][0]["status"], "pending");
    st.update(
        "chat.tool_call",
        &obj(json!({"tool_call": {"id": "t", "name": "create_terminal", "arguments": {"command": "ls"}}})),
    );
    let res = st
        .update(
            "chat.tool_result",
            &obj(json!({"tool_call_id": "t", "rawOutput": {"terminalId": "term_1"}, "result": "x"})),
        )
        .unwrap();
    assert_eq!(res["content"], json!([{"type": "terminal", "terminalId": "term_1"}]));
    assert_eq!(res["status"], "in_progress");
    assert!(!res.contains_key("result"));
    assert_eq!(res["title"], "Running ls");
    let upd = st
        .update(
            "chat.tool_update",
            &obj(json!({"tool_call_id": "t", "status": "in_progress"})),
        )
        .unwrap();
    assert_eq!(upd["status"], "in_progress");
    let fin = st
        .final_text_update(&obj(json!({"content": "deep", "event_type": "chat.reasoning"})))
        .unwrap();
    assert_eq!(fin["sessionUpdate"], "agent_thought_chunk");
    let status = st
        .update("chat.processing_status", &obj(json!({"is_processing": false})))
        .unwrap();
    assert_eq!(status["status"], "idle");
}

#[test]
fn diverging_final_text_gets_a_new_message_id() {
    let mut st = SessionUpdateState::new();
    let first = st.update("chat.delta", &obj(json!({"content": "Hello"}))).unwrap();
    let fin = st.final_text_update(&obj(json!({"content": "Goodbye"}))).unwrap();
    assert_eq!(fin["content"]["text"], "Goodbye");
    assert_ne!(fin["messageId"], first["messageId"]);
}

#[test]
fn merge_params_early_return_and_meta() {
    let mut env = E2AEnvelope::new("session/prompt", json!({"prompt": null})).with_session_id("s");
    env.acp_meta.insert("m".into(), 1.into());
    assert_eq!(
        Value::Object(acp::merge_params_to_prompt(&env).unwrap()),
        json!({"prompt": null})
    );
    let env2 = E2AEnvelope::new("session/prompt", json!({"text": "", "content": ["x"], "query": "q"}));
    assert_eq!(
        Value::Object(acp::merge_params_to_prompt(&env2).unwrap()),
        json!({"text": "", "content": ["x"], "query": "q"})
    );
    let mut env3 = E2AEnvelope::new("session/prompt", json!({"text": "hi", "_meta": "bad"}));
    env3.acp_meta.insert("m".into(), 1.into());
    assert_eq!(
        acp::merge_params_to_prompt(&env3).unwrap_err().violations()[0].pointer,
        "/params/_meta"
    );
}

/// Fuzz finding (wire_parse): an agent whose own metadata uses the reserved wire key gets a
/// frame whose legacy blob takes precedence on parse (reference behaviour); a blob without
/// `request_id` is then a typed error naming the field, never a panic.
#[test]
fn reserved_metadata_key_in_agent_metadata_is_an_error_not_a_panic() {
    let r = AgentResponse::from_value(&json!({"request_id": "r", "channel_id": "c",
        "metadata": {"_e2a_wire_legacy_agent_response": {"x": 1}}}))
    .unwrap();
    let frame = wire::encode_agent_response(&r, "x", 0);
    let err = wire::parse_unary(&frame).unwrap_err();
    assert_eq!(
        err.violations()[0].pointer,
        "/metadata/_e2a_wire_legacy_agent_response/request_id"
    );
}

#[test]
fn legacy_shapes_read_string_ids_and_stringify_null_like_the_reference() {
    // DRIVER.md: a number or a list is an error naming the key; an explicit null is `str(None)`.
    let err = wire::parse_chunk(&json!({"request_id": 7, "channel_id": null, "is_complete": true, "payload": null}))
        .unwrap_err();
    assert_eq!(err.violations()[0].pointer, "/request_id");
    let c = wire::parse_chunk(&json!({"request_id": "7", "channel_id": null, "is_complete": true, "payload": null}))
        .unwrap();
    assert_eq!((c.request_id.as_str(), c.channel_id.as_str()), ("7", "None"));
    let err = wire::parse_unary(&json!({"request_id": "r", "channel_id": ["c"], "ok": true})).unwrap_err();
    assert_eq!(err.violations()[0].pointer, "/channel_id");
    let u = wire::parse_unary(&json!({"request_id": null, "channel_id": "c", "ok": true})).unwrap();
    assert_eq!(u.request_id, "None");
}
