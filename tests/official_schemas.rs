//! What the SDK emits on each peer protocol, checked against that protocol's own artifacts:
//! ACP against the official JSON Schema (vendored from `@agentclientprotocol/sdk`) and the
//! official `agent-client-protocol-schema` crate types; A2A 1.0 against the a2aproject's Rust
//! types (`a2a-lf`), round-tripping to the same JSON; AG-UI against the lifecycle rules.

use e2a::a2a::jsonrpc::{envelope_from_request, A2aHeaders};
use e2a::a2a::stream::{carried_frame, A2aStreamProjector};
use e2a::frame::Projector;
use e2a::types::A2aMessage;

fn message(v: Value) -> A2aMessage {
    serde_json::from_value(v).expect("an A2A message")
}
use e2a::acp::stream::AcpStreamProjector;
use e2a::agui::{verify_events, AguiProjector};
use e2a::stream::ResponseStream;
use e2a::{E2AEnvelope, E2AResponse, ResponseKind};
use serde_json::{json, Map, Value};

fn obj(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap_or_default()
}

/// A turn exercising every kind of frame the projectors handle.
fn rich_turn(fail: Option<&str>) -> Vec<E2AResponse> {
    let req = E2AEnvelope::new("session/prompt", json!({"text": "hi"}))
        .with_request_id("r1")
        .with_session_id("s1")
        .with_jsonrpc_id(9);
    let mut s = ResponseStream::for_request(&req);
    let custom = |event: &str, delta: Value| obj(json!({"delta_kind": "custom", "event_type": event, "delta": delta}));
    let mut frames = vec![
        E2AResponse::from(s.reasoning("thinking")),
        E2AResponse::from(s.text("Hello ")),
        E2AResponse::from(s.chunk(custom(
            "chat.tool_call",
            json!({"tool_call": {"id": "c1", "name": "read_file", "arguments": {"path": "src/main.rs", "line": 3}}}),
        ))),
        E2AResponse::from(s.chunk(custom(
            "chat.tool_result",
            json!({"tool_call_id": "c1", "result": "fn main() {}"}),
        ))),
        E2AResponse::from(s.chunk(custom(
            "chat.tool_call",
            json!({"tool_call": {"id": "t1", "name": "create_terminal", "arguments": {"command": "ls"}}}),
        ))),
        E2AResponse::from(s.chunk(custom(
            "chat.tool_result",
            json!({"tool_call_id": "t1", "rawOutput": {"terminalId": "term_1"}}),
        ))),
        E2AResponse::from(s.chunk(custom(
            "todo.updated",
            json!({"todos": [{"content": "write tests", "status": "in_progress"}]}),
        ))),
        E2AResponse::from(s.chunk(custom("chat.processing_status", json!({"is_processing": true})))),
        E2AResponse::from(s.event(
            ResponseKind::AcpSessionUpdate,
            obj(json!({"sessionUpdate": "current_mode_update", "currentModeId": "code"})),
        )),
        E2AResponse::from(s.text("world")),
    ];
    frames.push(match fail {
        Some(code) => E2AResponse::from(s.fail(code, "it broke", Map::new())),
        None => E2AResponse::from(s.complete(json!({"content": "Hello world"}))),
    });
    frames
}

fn acp_messages(frames: &[E2AResponse]) -> Vec<Value> {
    let mut p = AcpStreamProjector::new("s1", Some(9.into()));
    frames.iter().flat_map(|f| p.push_record(f)).collect()
}

fn acp_validator(def: &str) -> jsonschema::Validator {
    let mut schema: Value = serde_json::from_str(include_str!("fixtures/acp/schema.v1.json")).unwrap();
    schema.as_object_mut().unwrap().remove("anyOf");
    schema["$ref"] = json!(format!("#/$defs/{def}"));
    jsonschema::validator_for(&schema).unwrap()
}

fn errors(v: &jsonschema::Validator, x: &Value) -> Vec<String> {
    v.iter_errors(x)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

#[test]
fn acp_messages_validate_against_the_official_schema_and_types() {
    let notification = acp_validator("SessionNotification");
    let prompt_response = acp_validator("PromptResponse");
    let error = acp_validator("Error");
    for fail in [None, Some("E2A.NOT_FOUND"), Some("E2A.CANCELLED")] {
        let msgs = acp_messages(&rich_turn(fail));
        assert!(msgs.len() >= 9, "{msgs:#?}");
        for m in &msgs {
            assert_eq!(m["jsonrpc"], "2.0");
            if m["method"] == "session/update" {
                let params = &m["params"];
                let e = errors(&notification, params);
                assert!(e.is_empty(), "{params}\n{e:#?}");
                let typed: agent_client_protocol_schema::v1::SessionNotification =
                    serde_json::from_value(params.clone()).unwrap_or_else(|e| panic!("{params}: {e}"));
                let _ = typed;
            } else if let Some(result) = m.get("result") {
                assert_eq!(m["id"], 9);
                assert!(errors(&prompt_response, result).is_empty(), "{result}");
                let typed: agent_client_protocol_schema::v1::PromptResponse =
                    serde_json::from_value(result.clone()).unwrap();
                let _ = typed;
            } else {
                let err = &m["error"];
                assert!(errors(&error, err).is_empty(), "{err}");
                assert_eq!(err["code"], -32002, "E2A.NOT_FOUND is ACP resource-not-found");
            }
        }
        let last = msgs.last().unwrap();
        match fail {
            Some("E2A.CANCELLED") => assert_eq!(
                last["result"]["stopReason"], "cancelled",
                "cancellation is not an error"
            ),
            Some(_) => assert!(last.get("error").is_some()),
            None => assert_eq!(last["result"]["stopReason"], "end_turn"),
        }
    }
    let init = e2a::acp::results::initialize_result("e2a", "E2A gateway", "0.1.0");
    assert!(errors(&acp_validator("InitializeResponse"), &init).is_empty(), "{init}");
    let _: agent_client_protocol_schema::v1::InitializeResponse = serde_json::from_value(init).unwrap();
    let new = e2a::acp::session_new_result(" s1 ");
    assert!(errors(&acp_validator("NewSessionResponse"), &new).is_empty(), "{new}");
    // the reference's list result has no `cwd`, which ACP v1 requires; the v1 builder adds it
    let list = e2a::acp::session_list_result(["a", "b"]);
    assert!(!errors(&acp_validator("ListSessionsResponse"), &list).is_empty());
    let list = e2a::acp::results::session_list_result_v1([("a", "/w"), ("b", "/w")]);
    assert!(
        errors(&acp_validator("ListSessionsResponse"), &list).is_empty(),
        "{list}"
    );
    let _: agent_client_protocol_schema::v1::ListSessionsResponse = serde_json::from_value(list).unwrap();
}

#[test]
fn acp_calls_validate_against_the_official_schema() {
    let mut env = E2AEnvelope::new("session/prompt", json!({"text": "hi"}))
        .with_session_id("s1")
        .with_jsonrpc_id(1);
    env.acp_meta.insert("trace".into(), "x".into());
    let call = e2a::acp::envelope_to_jsonrpc_call(&env).unwrap().to_value();
    let mut params = call["params"].clone();
    // ACP's own key is sessionId; the reference merge writes session_id (kept for parity)
    params["sessionId"] = params["session_id"].clone();
    assert!(errors(&acp_validator("PromptRequest"), &params).is_empty(), "{params}");
}

/// The JSON of an a2a-lf value, re-serialized.
fn a2a_roundtrip<T: serde::de::DeserializeOwned + serde::Serialize>(v: &Value) -> Value {
    let typed: T = serde_json::from_value(v.clone()).unwrap_or_else(|e| panic!("a2a-lf rejects {v}: {e}"));
    serde_json::to_value(typed).unwrap()
}

#[test]
fn a2a_events_roundtrip_through_the_official_types() {
    for fail in [None, Some("E2A.NOT_FOUND"), Some("E2A.CANCELLED")] {
        let mut p = A2aStreamProjector::new("task-1", "ctx-1");
        let mut frames = rich_turn(fail);
        // timestamps with trailing zeros in the fraction, as the lenient reader writes them
        for (f, ts) in frames.iter_mut().zip(
            ["2026-03-26T11:33:01.150000+00:00", "2026-03-26T11:33:01+00:00"]
                .iter()
                .cycle(),
        ) {
            f.timestamp = Some((*ts).into());
        }
        let events: Vec<Value> = frames
            .iter()
            .flat_map(|f| p.push_record(f))
            .map(|e| e.to_value())
            .collect();
        assert!(events.len() >= 6);
        for ev in &events {
            assert_eq!(
                &a2a_roundtrip::<a2a::StreamResponse>(ev),
                ev,
                "a2a-lf re-serializes differently"
            );
            let rpc = e2a::a2a::stream::jsonrpc_result(Some(&7.into()), ev.clone());
            let _: a2a::JsonRpcResponse = serde_json::from_value(rpc).unwrap();
        }
        let last = &events.last().unwrap()["statusUpdate"]["status"]["state"];
        match fail {
            None => assert_eq!(last, "TASK_STATE_COMPLETED"),
            Some("E2A.CANCELLED") => assert_eq!(last, "TASK_STATE_CANCELED"),
            Some(_) => assert_eq!(last, "TASK_STATE_FAILED"),
        }
    }
    let failed = rich_turn(Some("E2A.NOT_FOUND"));
    let err = e2a::a2a::stream::jsonrpc_error(failed.last().unwrap()).unwrap();
    assert_eq!(err["error"]["code"], -32001, "E2A.NOT_FOUND is A2A TaskNotFound");
    let _: a2a::JsonRpcResponse = serde_json::from_value(err).unwrap();
}

/// E2A → A2A → E2A: every frame A2A has no native form for (reasoning, tool calls and their
/// results, todo and status chunks, ACP session updates, the approval pause) is carried by a
/// status message that the official types accept, and `carried_frame` reads back the same
/// kind and body; text goes to the artifact and is not carried.
#[test]
fn a2a_carries_frames_without_an_a2a_form_losslessly() {
    let mut frames = rich_turn(None);
    frames.pop(); // the complete: the turn pauses instead
    let req = E2AEnvelope::new("session/prompt", json!({})).with_request_id("r2");
    let mut s = ResponseStream::for_request(&req);
    frames.extend([
        E2AResponse::from(s.chunk(obj(json!({"delta_kind": "reasoning", "delta": "hmm", "source_chunk_type": "llm_reasoning"})))),
        E2AResponse::from(s.chunk(obj(json!({"delta_kind": "tool", "event_type": "chat.tool_call",
            "delta": {"tool_call": {"tool_call_id": "call-1", "name": "get_weather", "arguments": {"city": "Paris"}, "status": "in_progress"}}})))),
        E2AResponse::from(s.chunk(obj(json!({"delta_kind": "tool", "event_type": "chat.tool_result",
            "delta": {"tool_call_id": "call-1", "result": {"temp_c": 21}, "status": "completed"}})))),
        E2AResponse::from(s.event(
            ResponseKind::AcpSessionUpdate,
            obj(json!({"sessionUpdate": "tool_call_update", "toolCallId": "call-2", "status": "failed"})),
        )),
        E2AResponse::from(s.chunk(obj(json!({"delta_kind": "custom", "event_type": "usage", "delta": 42})))),
        E2AResponse::from(s.event(
            ResponseKind::PlanApprovalRequired,
            obj(json!({"plan_content": "Deploy to production?", "input_kind": "approval", "resumable": true, "plan_slug": "deploy"})),
        )),
        // the pause's end: its question is asked then
        E2AResponse::from(s.complete(json!({"state": "input_required", "input_kind": "approval"}))),
    ]);
    let mut p = A2aStreamProjector::new("task-1", "ctx-1");
    let mut carried = Vec::new();
    let mut states = Vec::new();
    for f in &frames {
        for ev in p.push_record(f) {
            let ev = ev.to_value();
            assert_eq!(
                &a2a_roundtrip::<a2a::StreamResponse>(&ev),
                &ev,
                "a2a-lf re-serializes differently"
            );
            if let Some(status) = ev.pointer("/statusUpdate/status") {
                let message = status.get("message").cloned().map(serde_json::from_value::<A2aMessage>);
                if let Some(frame) = message.and_then(Result::ok).as_ref().and_then(carried_frame) {
                    carried.push(frame);
                    states.push(status["state"].clone());
                }
            }
        }
    }
    let is_text = |f: &E2AResponse| f.body.get("delta_kind") == Some(&json!("text"));
    let expected: Vec<(ResponseKind, Map<String, Value>)> = frames
        .iter()
        .filter(|f| !is_text(f) && !f.is_final)
        .map(|f| (f.response_kind.clone(), f.body.clone()))
        .collect();
    assert_eq!(carried.len(), expected.len());
    for (got, want) in carried.iter().zip(&expected) {
        assert_eq!(got, want);
    }
    assert_eq!(states.last(), Some(&json!("TASK_STATE_INPUT_REQUIRED")));
    assert!(states[..states.len() - 1].iter().all(|s| s == "TASK_STATE_WORKING"));
    // a plain A2A agent's messages carry no frame
    assert_eq!(
        carried_frame(&message(
            json!({"messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": "thinking"}]})
        )),
        None
    );
    assert_eq!(
        carried_frame(&message(
            json!({"messageId": "m", "role": "ROLE_AGENT", "parts": [{"data": {"x": 1}}], "metadata": {"source": "elsewhere"}})
        )),
        None
    );
}

#[test]
fn a2a_ingress_accepts_what_the_official_types_produce() {
    let msg = a2a::Message {
        message_id: "m1".into(),
        context_id: Some("ctx".into()),
        task_id: None,
        role: a2a::Role::User,
        parts: vec![
            a2a::Part::text("hello"),
            a2a::Part::url("https://example.invalid/a.png"),
        ],
        metadata: None,
        extensions: None,
        reference_task_ids: None,
    };
    let req = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": serde_json::to_value(&msg).unwrap()}});
    let env = envelope_from_request(
        &req,
        &A2aHeaders {
            version: Some("1.0".into()),
            extensions: vec!["urn:x".into()],
        },
    )
    .unwrap();
    assert_eq!(env.params["text"], "hello");
    assert_eq!(env.message_id.as_deref(), Some("m1"));
    assert_eq!(env.provenance.details["a2a_extensions"], json!(["urn:x"]));
    // the message travels untouched and still reads as the official type
    let back: a2a::Message = serde_json::from_value(env.params["message"].clone()).unwrap();
    assert_eq!(back, msg);
    let get = json!({"jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": "task-1", "historyLength": 3}});
    let env = envelope_from_request(&get, &A2aHeaders::default()).unwrap();
    assert_eq!(
        (env.method.as_deref(), env.task_id.as_deref()),
        (Some("GetTask"), Some("task-1"))
    );
    let cancel = json!({"jsonrpc": "2.0", "id": 3, "method": "tasks/cancel", "params": {"id": "task-1"}});
    assert_eq!(
        envelope_from_request(&cancel, &A2aHeaders::default())
            .unwrap()
            .method
            .as_deref(),
        Some("CancelTask")
    );
}

/// A pause asking two things at once (an approval and a question).
fn two_questions() -> Vec<e2a::types::PlanApprovalRequiredBody> {
    use e2a::types::{PauseKind, PlanApprovalRequiredBody};
    vec![
        PlanApprovalRequiredBody::asking(PauseKind::Approval, "Deploy to staging?", true),
        PlanApprovalRequiredBody::asking(PauseKind::Input, "Which region?", true),
    ]
}

/// Every question of a pause reaches an A2A client in the one `INPUT_REQUIRED` status that
/// ends the turn (a streaming client stops at it): each question's text and carried pause, in
/// order — and a gateway reading that status (the `a2a:` agent) rebuilds the same pause.
#[test]
fn a2a_streams_show_every_question_of_a_pause() {
    use e2a::a2a::stream::carried_pauses;
    use e2a::types::{A2aStreamResponse, A2aTaskState};
    let req = E2AEnvelope::new("session/prompt", json!({})).with_request_id("r1");
    let s = ResponseStream::for_request(&req);
    let mut p = A2aStreamProjector::new("task-1", "ctx-1");
    let events: Vec<A2aStreamResponse> = s.pause_all(two_questions()).iter().flat_map(|f| p.push(f)).collect();
    let statuses: Vec<&e2a::types::A2aTaskStatus> = events
        .iter()
        .filter_map(|e| match e {
            A2aStreamResponse::StatusUpdate(u) if u.status.state != A2aTaskState::TaskStateWorking => Some(&u.status),
            _ => None,
        })
        .collect();
    assert_eq!(statuses.len(), 1, "{events:#?}");
    assert_eq!(statuses[0].state, A2aTaskState::TaskStateInputRequired);
    let message = statuses[0].message.as_ref().expect("the question");
    let said: Vec<&str> = message.parts.iter().filter_map(|p| p.text.as_deref()).collect();
    assert_eq!(said, ["Deploy to staging?", "Which region?"]);
    let pauses = carried_pauses(message);
    assert_eq!(pauses, two_questions());
    // read back (the `a2a:` agent): the same two questions, then the pause's end
    let mut inbound = e2a::a2a::inbound::A2aStreamReader::new(ResponseStream::for_request(&req));
    let frames: Vec<E2AResponse> = events
        .iter()
        .flat_map(|e| inbound.push(e))
        .map(|f| f.to_record())
        .collect();
    let asked: Vec<&Value> = frames
        .iter()
        .filter(|f| f.response_kind == ResponseKind::PlanApprovalRequired)
        .map(|f| &f.body["plan_content"])
        .collect();
    assert_eq!(asked, [&json!("Deploy to staging?"), &json!("Which region?")]);
    assert_eq!(frames.last().expect("frames").body["result"]["state"], "input_required");
}

#[test]
fn agui_event_sequences_pass_the_lifecycle_rules() {
    for fail in [None, Some("E2A.TIMEOUT")] {
        let mut p = AguiProjector::new("thread", "run");
        let events: Vec<Value> = rich_turn(fail).iter().flat_map(|f| p.push_record(f)).collect();
        verify_events(&events).unwrap_or_else(|e| panic!("{e}\n{events:#?}"));
        assert_eq!(events[0]["type"], "RUN_STARTED");
        let types: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
        for t in [
            "REASONING_MESSAGE_CONTENT",
            "TEXT_MESSAGE_CONTENT",
            "TOOL_CALL_START",
            "TOOL_CALL_ARGS",
            "TOOL_CALL_END",
            "TOOL_CALL_RESULT",
        ] {
            assert!(types.contains(&t), "{t} missing: {types:?}");
        }
        match fail {
            None => assert_eq!(*types.last().unwrap(), "RUN_FINISHED"),
            Some(_) => {
                assert_eq!(events.last().unwrap()["type"], "RUN_ERROR");
                assert_eq!(events.last().unwrap()["code"], "TIMEOUT");
            }
        }
    }
    // interrupts: every question of a pause is one, and the run ends with all of them
    let req = E2AEnvelope::new("session/prompt", json!({}));
    let mut s = ResponseStream::for_request(&req);
    let mut p = AguiProjector::new("thread", "run");
    let mut events = p.push(&s.text("plan:"));
    events.extend(p.push(&s.event(ResponseKind::PlanApprovalRequired, obj(json!({"plan_content": "do x"})))));
    events.extend(s.pause_all(two_questions()).iter().flat_map(|f| p.push(f)));
    verify_events(&events).unwrap();
    let finished: Vec<&Value> = events.iter().filter(|e| e["type"] == "RUN_FINISHED").collect();
    assert_eq!(finished.len(), 1, "{events:#?}");
    let interrupts = finished[0]["outcome"]["interrupts"].as_array().expect("interrupts");
    let asked: Vec<(&Value, &Value)> = interrupts.iter().map(|i| (&i["message"], &i["reason"])).collect();
    assert_eq!(
        asked,
        [
            (&json!("do x"), &json!("approval")),
            (&json!("Deploy to staging?"), &json!("approval")),
            (&json!("Which region?"), &json!("input"))
        ]
    );
    let ids: std::collections::HashSet<&Value> = interrupts.iter().map(|i| &i["id"]).collect();
    assert_eq!(ids.len(), 3, "each interrupt its own id");
    // the checker itself rejects broken sequences
    for bad in [
        vec![json!({"type": "TEXT_MESSAGE_START", "messageId": "m"})],
        vec![
            json!({"type": "RUN_STARTED"}),
            json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "x"}),
        ],
        vec![
            json!({"type": "RUN_STARTED"}),
            json!({"type": "TEXT_MESSAGE_START", "messageId": "m"}),
            json!({"type": "RUN_FINISHED"}),
        ],
        vec![
            json!({"type": "RUN_STARTED"}),
            json!({"type": "RUN_ERROR", "message": "x"}),
            json!({"type": "RUN_STARTED"}),
        ],
    ] {
        assert!(verify_events(&bad).is_err(), "{bad:?}");
    }
}

#[test]
fn agui_ingress() {
    let input = json!({"threadId": "t", "runId": "r", "protocolVersion": "1.0", "messages": [
        {"id": "1", "role": "user", "content": [{"type": "text", "text": "look"}]}], "tools": [{"name": "f", "description": "d", "parameters": {}}]});
    let env = e2a::agui::envelope_from_run_input(&input).unwrap();
    assert_eq!(env.params["text"], "look");
    assert_eq!(env.provenance.source_protocol, "ag-ui");
    e2a::E2AEnvelope::read_value(&env.to_value(), &e2a::ReadOptions::canonical())
        .map(|r| r.value)
        .unwrap();
    assert!(e2a::agui::envelope_from_run_input(&json!({"runId": "r"})).is_err());
}
