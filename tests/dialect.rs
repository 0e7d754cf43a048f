//! The gateway's own frames, as `schema/` declares them: the `ResponseStream` builders write
//! exactly the shapes of `tests/exports/dialect.json` (which the TypeScript and pydantic
//! exports are checked on too), every sample reads into its generated type and writes back
//! unchanged, and the A2A projection carries each frame there and back losslessly.

use e2a::a2a::stream::{carried_frame, A2aStreamProjector};
use e2a::frame::{Frame, Projector};
use e2a::stream::ResponseStream;
use e2a::types::A2aStreamResponse;
use e2a::types::{
    ArtifactDelta, ArtifactKind, ChunkBody, ChunkEventType, PauseKind, PausedResult, PlanApprovalRequiredBody,
    ReplyResult, ToolCallDelta, ToolResultDelta,
};
use e2a::{E2AEnvelope, E2AResponse};
use serde_json::{json, Map, Value};

fn samples() -> Value {
    serde_json::from_str(include_str!("exports/dialect.json")).expect("dialect.json")
}

fn sample(name: &str, i: usize) -> Value {
    samples()[name][i].clone()
}

/// Every sample of `name` reads into `T` and writes back the same JSON.
fn round_trips<T: serde::de::DeserializeOwned + serde::Serialize>(name: &str) {
    let all = samples();
    let list = all[name].as_array().expect("samples");
    assert!(!list.is_empty(), "{name}");
    for s in list {
        let typed: T = serde_json::from_value(s.clone()).unwrap_or_else(|e| panic!("{name}: {e}: {s}"));
        assert_eq!(&serde_json::to_value(&typed).expect("write"), s, "{name}");
    }
}

#[test]
fn every_sample_reads_into_its_generated_type_and_back() {
    round_trips::<ToolCallDelta>("ToolCallDelta");
    round_trips::<ToolResultDelta>("ToolResultDelta");
    round_trips::<ArtifactDelta>("ArtifactDelta");
    round_trips::<PlanApprovalRequiredBody>("PlanApprovalRequiredBody");
    round_trips::<PausedResult>("PausedResult");
    round_trips::<ReplyResult>("ReplyResult");
}

fn request() -> E2AEnvelope {
    E2AEnvelope::new("chat.send", json!({"text": "hi"})).with_request_id("r1")
}

#[test]
fn the_builders_write_the_declared_shapes() {
    let mut s = ResponseStream::for_request(&request());
    let call = E2AResponse::from(s.tool_call("call-1", "get_weather", json!({"city": "Paris"})));
    assert_eq!(call.body["delta_kind"], "tool");
    assert_eq!(call.body["event_type"], "chat.tool_call");
    assert_eq!(call.body["delta"], sample("ToolCallDelta", 0));
    let result = E2AResponse::from(s.tool_result("call-1", json!({"temp_c": 21})));
    assert_eq!(result.body["event_type"], "chat.tool_result");
    assert_eq!(result.body["delta"], sample("ToolResultDelta", 0));
    let piece: ArtifactDelta = serde_json::from_value(sample("ArtifactDelta", 0)).unwrap();
    assert_eq!(piece.kind, Some(ArtifactKind::Text));
    let artifact = E2AResponse::from(s.artifact(&piece));
    assert_eq!(artifact.body["delta_kind"], "custom");
    assert_eq!(artifact.body["delta"], sample("ArtifactDelta", 0));
    let read: ArtifactDelta = ChunkBody::structured_delta(&artifact.body, ChunkEventType::Artifact).unwrap();
    assert_eq!(read, piece);
    assert!(ChunkBody::structured_delta::<ArtifactDelta>(&call.body, ChunkEventType::Artifact).is_none());

    let [asked, done] = s
        .pause(PlanApprovalRequiredBody::asking(
            PauseKind::Approval,
            "Deploy to production?",
            true,
        ))
        .map(E2AResponse::from);
    assert_eq!(asked.response_kind, "plan.approval_required");
    assert_eq!(Value::Object(asked.body), sample("PlanApprovalRequiredBody", 0));
    assert!(done.is_final);
    assert_eq!(done.body["result"], sample("PausedResult", 0));
    let [_, done] = ResponseStream::for_request(&request())
        .pause(PlanApprovalRequiredBody::asking(
            PauseKind::Input,
            "For how many people?",
            false,
        ))
        .map(E2AResponse::from);
    assert_eq!(done.body["result"], sample("PausedResult", 1));

    let message: Map<String, Value> = serde_json::from_value(json!({"messageId": "m1", "role": "ROLE_AGENT",
        "parts": [{"text": "a direct reply"}]}))
    .unwrap();
    let [said, done] = ResponseStream::for_request(&request())
        .reply(message, "a direct reply")
        .map(E2AResponse::from);
    assert_eq!(said.response_kind, "a2a.message");
    assert_eq!(done.body["result"], sample("ReplyResult", 0));
}

/// The status message of a `statusUpdate` event as a client reads it from JSON.
fn status_message(event: &Value) -> Option<e2a::types::A2aMessage> {
    serde_json::from_value(event.pointer("/statusUpdate/status/message")?.clone()).ok()
}

/// An event as the other side reads it: written as JSON, read back.
fn over_the_wire(event: &A2aStreamResponse) -> A2aStreamResponse {
    serde_json::from_value(event.to_value()).expect("an event reads back")
}

#[test]
fn the_frames_cross_a2a_and_come_back_unchanged() {
    let mut s = ResponseStream::for_request(&request());
    let frames: Vec<E2AResponse> = vec![
        E2AResponse::from(s.tool_call("call-1", "get_weather", json!({"city": "Paris"}))),
        E2AResponse::from(s.tool_result("call-1", json!({"temp_c": 21}))),
    ];
    let mut projector = A2aStreamProjector::new("t1", "c1");
    for f in &frames {
        let events: Vec<Value> = projector
            .push_record(f)
            .iter()
            .map(A2aStreamResponse::to_value)
            .collect();
        let back: Vec<(String, Map<String, Value>)> = events
            .iter()
            .filter_map(status_message)
            .filter_map(|m| carried_frame(&m))
            .map(|(k, b)| (k.to_string(), b))
            .collect();
        assert_eq!(back, vec![(f.response_kind.to_string(), f.body.clone())], "{events:?}");
    }
    let [asked, end] = ResponseStream::for_request(&request())
        .pause(PlanApprovalRequiredBody::asking(
            PauseKind::Input,
            "For how many people?",
            false,
        ))
        .map(E2AResponse::from);
    // (the question is asked at the pause's end: a pause may ask several)
    let mut projector = A2aStreamProjector::new("t1", "c1");
    let events: Vec<A2aStreamResponse> = [&asked, &end]
        .into_iter()
        .flat_map(|f| projector.push_record(f))
        .collect();
    let events: Vec<Value> = events.iter().map(A2aStreamResponse::to_value).collect();
    let back = events.iter().filter_map(status_message).find_map(|m| carried_frame(&m));
    assert_eq!(
        back.map(|(k, b)| (k.to_string(), b)),
        Some((asked.response_kind.to_string(), asked.body.clone()))
    );
}

#[test]
fn the_frames_cross_acp_and_come_back_unchanged() {
    use e2a::acp::inbound::frame_of_update;
    use e2a::acp::stream::AcpStreamProjector;
    let req = request();
    let mut out = ResponseStream::for_request(&req);
    let frames = vec![
        out.text("It is "),
        out.reasoning("looking it up"),
        out.tool_call("call-1", "get_weather", json!({"city": "Paris"})),
        out.tool_result("call-1", json!({"temp_c": 21})),
        out.text("21 °C."),
    ];
    let mut acp = AcpStreamProjector::new("s1", None);
    let mut back = ResponseStream::for_request(&req);
    let mut text = String::new();
    for f in &frames {
        let updates: Vec<Value> = acp
            .push(f)
            .into_iter()
            .filter(|m| m["method"] == "session/update")
            .map(|m| m["params"]["update"].clone())
            .collect();
        assert_eq!(updates.len(), 1, "{f:?} → {updates:?}");
        let again = frame_of_update(&mut back, &updates[0], &mut text).expect("a frame");
        assert_eq!(again.response_kind, f.response_kind, "{updates:?}");
        assert_eq!(again.body, f.body, "{updates:?}");
    }
    assert_eq!(text, "It is 21 °C.");
}

/// Each frame's `response_kind` and body, in order: what a round trip must keep.
fn kinds_and_bodies<'a>(frames: impl IntoIterator<Item = &'a Frame>) -> Vec<(String, Map<String, Value>)> {
    frames
        .into_iter()
        .map(|f| (f.response_kind.to_string(), f.body_object().into_owned()))
        .collect()
}

#[test]
fn an_a2a_stream_reads_back_into_the_frames_that_made_it() {
    use e2a::a2a::inbound::A2aStreamReader;
    let req = request();
    let mut out = ResponseStream::for_request(&req);
    let frames = [
        out.reasoning("looking it up"),
        out.tool_call("call-1", "get_weather", json!({"city": "Paris"})),
        out.tool_result("call-1", json!({"temp_c": 21})),
    ];
    let [asked, end] = out.pause(PlanApprovalRequiredBody::asking(
        PauseKind::Approval,
        "Deploy to production?",
        true,
    ));
    let mut projector = A2aStreamProjector::new("t1", "c1");
    let mut reader = A2aStreamReader::new(ResponseStream::for_request(&req));
    let mut back = Vec::new();
    for f in frames.iter().chain([&asked, &end]) {
        for event in projector.push(f) {
            back.extend(reader.push(&over_the_wire(&event)));
        }
    }
    // the opening task event makes no frame; every frame comes back, then the pause ends the run
    let got = kinds_and_bodies(&back);
    let want = kinds_and_bodies(frames.iter().chain([&asked]));
    assert_eq!(&got[..want.len()], &want[..]);
    let last = back.last().expect("a final frame");
    assert!(last.is_final && reader.is_done());
    assert_eq!(last.body_object()["result"], sample("PausedResult", 0));
}

#[test]
fn text_and_artifacts_cross_a2a_natively_and_come_back() {
    use e2a::a2a::inbound::A2aStreamReader;
    use e2a::types::ArtifactDelta;
    let req = request();
    let mut out = ResponseStream::for_request(&req);
    let piece = |append, last_chunk, text: &str| ArtifactDelta {
        artifact_id: "report".into(),
        name: Some("report.md".into()),
        kind: None,
        parts: vec![json!({"text": text}).as_object().cloned().unwrap_or_default()],
        append,
        last_chunk,
        extra: Map::new(),
    };
    let frames = [
        out.text("It is "),
        out.artifact(&piece(false, false, "# Weather")),
        out.artifact(&piece(true, true, "\nsunny")),
        out.text("21 °C."),
    ];
    let done = out.complete(json!({"content": "It is 21 °C."}));
    let mut projector = A2aStreamProjector::new("t1", "c1");
    let mut reader = A2aStreamReader::new(ResponseStream::for_request(&req));
    let mut events = Vec::new();
    let mut back = Vec::new();
    for f in frames.iter().chain([&done]) {
        for event in projector.push(f) {
            back.extend(reader.push(&over_the_wire(&event)));
            events.push(event);
        }
    }
    // artifact pieces travel as A2A artifact updates of their own artifact, not as carriers
    let updates: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            A2aStreamResponse::ArtifactUpdate(u) => Some((u.artifact.artifact_id.as_str(), u.append, u.last_chunk)),
            _ => None,
        })
        .collect();
    assert_eq!(
        updates,
        [
            ("t1-output", false, false),
            ("report", false, false),
            ("report", true, true),
            ("t1-output", true, false),
            ("t1-output", true, true)
        ]
    );
    assert_eq!(kinds_and_bodies(&back), kinds_and_bodies(frames.iter().chain([&done])));
    assert!(reader.is_done());
}

/// One turn and one pause, with fixed ids and times, projected onto A2A.
fn projected_samples() -> Vec<Value> {
    let mut s = ResponseStream::for_request(&request());
    let piece: ArtifactDelta = serde_json::from_value(sample("ArtifactDelta", 0)).expect("piece");
    let mut frames = vec![
        E2AResponse::from(s.text("It is 21 °C.")),
        E2AResponse::from(s.tool_call("call-1", "get_weather", json!({"city": "Paris"}))),
        E2AResponse::from(s.artifact(&piece)),
        E2AResponse::from(s.complete(json!({"content": "It is 21 °C."}))),
    ];
    let [asked, end] = ResponseStream::for_request(&request())
        .pause(PlanApprovalRequiredBody::asking(PauseKind::Approval, "Deploy?", true))
        .map(E2AResponse::from);
    frames.extend([asked, end]);
    for (i, f) in frames.iter_mut().enumerate() {
        f.response_id = Some(format!("m{i}"));
        f.timestamp = Some("2026-03-26T11:33:01.150000+00:00".into());
    }
    let (turn, pause) = frames.split_at(4);
    let mut p = A2aStreamProjector::new("t1", "c1");
    let mut out: Vec<Value> = turn
        .iter()
        .flat_map(|f| p.push_record(f))
        .map(|e| e.to_value())
        .collect();
    let mut p = A2aStreamProjector::new("t2", "c1").announced();
    out.extend(pause.iter().flat_map(|f| p.push_record(f)).map(|e| e.to_value()));
    out
}

#[test]
fn the_a2a_projection_writes_the_declared_samples() {
    let got = projected_samples();
    let want = samples()["A2aStreamResponse"].clone();
    assert_eq!(Value::Array(got), want, "tests/exports/dialect.json, A2aStreamResponse");
    round_trips::<A2aStreamResponse>("A2aStreamResponse");
}

/// A plain A2A agent that streams its answer into an artifact of its own name (an a2a-sdk
/// agent's `add_artifact(name="answer")`) and completes without a status message: the answer
/// is that artifact's text (it was empty).
#[test]
fn a_named_artifacts_text_is_the_answer_of_a_task_completed_without_a_message() {
    use e2a::a2a::inbound::A2aStreamReader;
    let req = request();
    let mut reader = A2aStreamReader::new(ResponseStream::for_request(&req));
    let events = [
        json!({"artifactUpdate": {"taskId": "t1", "contextId": "c1",
            "artifact": {"artifactId": "a1", "name": "answer", "parts": [{"text": "forty"}]}}}),
        json!({"artifactUpdate": {"taskId": "t1", "contextId": "c1", "append": true,
            "artifact": {"artifactId": "a1", "name": "answer", "parts": [{"text": "-two"}]}}}),
        json!({"statusUpdate": {"taskId": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_COMPLETED"}}}),
    ];
    let mut frames = Vec::new();
    for e in &events {
        let event: A2aStreamResponse = serde_json::from_value(e.clone()).expect("an event");
        frames.extend(reader.push(&event));
    }
    let last = frames.last().expect("a final frame");
    assert!(last.is_final, "{last:?}");
    assert_eq!(last.body_object()["result"]["content"], "forty-two");
}

#[test]
fn a_task_read_whole_reads_as_its_artifacts_then_its_status() {
    use e2a::a2a::inbound::A2aStreamReader;
    use e2a::a2a::stream::OUTPUT_ARTIFACT;
    use e2a::types::A2aTask;
    let task: A2aTask = serde_json::from_value(json!({
        "id": "child-1",
        "contextId": "c1",
        "status": {"state": "TASK_STATE_COMPLETED"},
        "artifacts": [
            {"artifactId": "child-1-output", "name": OUTPUT_ARTIFACT, "parts": [{"text": "It is 21 °C."}]},
            {"artifactId": "report", "name": "report.md", "parts": [{"text": "# Weather"}]}
        ]
    }))
    .expect("a task");
    // a run that made 2 frames elsewhere goes on from sequence 2
    let mut reader = A2aStreamReader::new(ResponseStream::for_request(&request()).starting_at(2));
    let frames = reader.push_task(&task);
    let seqs: Vec<u64> = frames.iter().map(|f| f.sequence).collect();
    assert_eq!(seqs, [2, 3, 4]);
    let bodies: Vec<Map<String, Value>> = frames.iter().map(|f| f.body_object().into_owned()).collect();
    assert_eq!(bodies[0]["delta"], "It is 21 °C.");
    assert_eq!(bodies[1]["delta"]["artifact_id"], "report");
    assert_eq!(bodies[1]["delta"]["last_chunk"], true);
    let last = frames.last().expect("a final frame");
    assert!(last.is_final && reader.is_done());
    assert_eq!(bodies[2]["result"]["content"], "It is 21 °C.");
    // a task that failed: its artifacts, then the error
    let failed: A2aTask = serde_json::from_value(json!({
        "id": "child-2", "contextId": "c1",
        "status": {"state": "TASK_STATE_FAILED", "message": {"messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": "no data"}]}}
    }))
    .expect("a task");
    let frames = A2aStreamReader::new(ResponseStream::for_request(&request())).push_task(&failed);
    assert_eq!(frames.len(), 1);
    assert_eq!(frames[0].body_object()["code"], "E2A.AGENT_ERROR");
}

/// A turn's text goes to its output artifact: `{task}-output` for the first turn, and
/// `{task}-output-{turn}` for each later one.
#[test]
fn each_turn_writes_its_text_to_an_output_artifact_of_its_own() {
    let artifact_of = |turn: usize| {
        let mut s = ResponseStream::for_request(&request());
        let mut projector = A2aStreamProjector::new("t1", "c1").announced().turn(turn);
        let ids: Vec<String> = [s.text("Hi"), s.complete(json!({"content": "Hi"}))]
            .iter()
            .flat_map(|f| projector.push(f))
            .filter_map(|e| match e {
                A2aStreamResponse::ArtifactUpdate(u) => Some(u.artifact.artifact_id),
                _ => None,
            })
            .collect();
        ids
    };
    assert_eq!(artifact_of(1).first().map(String::as_str), Some("t1-output"));
    assert_eq!(artifact_of(2).first().map(String::as_str), Some("t1-output-2"));
    assert_eq!(artifact_of(12).first().map(String::as_str), Some("t1-output-12"));
}
