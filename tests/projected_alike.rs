//! A projector reads a frame as it reads the frame's record: the fast paths that project a
//! typed frame without making its record (text deltas, a typed final answer) give the events
//! the record gives, frame by frame, for A2A, ACP and AG-UI alike.

use e2a::a2a::stream::A2aStreamProjector;
use e2a::acp::stream::AcpStreamProjector;
use e2a::agui::AguiProjector;
use e2a::frame::{Frame, Projector};
use e2a::stream::ResponseStream;
use e2a::types::{CompleteBody, FrameBody};
use e2a::{E2AEnvelope, ResponseKind};
use proptest::prelude::*;
use serde_json::{json, Map, Value};

/// One frame of a made-up stream, before its end.
#[derive(Debug, Clone)]
enum Step {
    Text(String),
    Reasoning(String),
    ToolCall,
    ToolResult,
}

/// How the stream ends.
#[derive(Debug, Clone)]
enum End {
    Answer(String),
    Complete(Value),
    Fail,
    Refuse,
    Pause,
}

fn stream(steps: &[Step], end: &End) -> Vec<Frame> {
    let request = E2AEnvelope::new("chat.send", json!({"query": "q"})).with_request_id("r1");
    let mut s = ResponseStream::for_request(&request);
    let mut frames: Vec<Frame> = steps
        .iter()
        .enumerate()
        .map(|(i, step)| match step {
            Step::Text(t) => s.text(t),
            Step::Reasoning(t) => s.reasoning(t),
            Step::ToolCall => s.tool_call(&format!("c{i}"), "ls", json!({"path": "/"})),
            Step::ToolResult => s.tool_result(&format!("c{}", i.saturating_sub(1)), json!({"ok": true})),
        })
        .collect();
    match end {
        End::Answer(t) => frames.push(s.answer(t, Some("end_turn"))),
        End::Complete(result) => frames.push(s.complete(result.clone())),
        End::Fail => frames.push(s.fail("E2A.AGENT_ERROR", "boom", Map::new())),
        End::Refuse => frames.push(s.refuse("no")),
        End::Pause => {
            let body = serde_json::from_value(json!({"plan_content": "go?", "options": ["yes", "no"]})).unwrap();
            frames.extend(s.pause(body));
        }
    }
    frames
}

/// The events of `frames` projected by `p` as frames and, from a copy of `p`, as records.
fn both<P>(p: P, frames: &[Frame]) -> (Vec<Value>, Vec<Value>)
where
    P: Projector + Clone,
    P::Event: serde::Serialize,
{
    let (mut by_frame, mut by_record) = (p.clone(), p);
    let json = |events: Vec<P::Event>| {
        events
            .iter()
            .map(|e| ids_masked(serde_json::to_value(e).unwrap()))
            .collect::<Vec<_>>()
    };
    let a = frames.iter().flat_map(|f| json(by_frame.push(f))).collect();
    let b = frames
        .iter()
        .flat_map(|f| json(by_record.push_record(&f.to_record())))
        .collect();
    (a, b)
}

/// `f` with an `e2a.complete` body read from the wire typed as a [`CompleteBody`].
fn typed_answer(mut f: Frame) -> Frame {
    if let (FrameBody::Raw(m), ResponseKind::E2aComplete) = (&f.body, &f.response_kind) {
        let typed: CompleteBody = serde_json::from_value(Value::Object(m.clone())).unwrap();
        f.body = FrameBody::Complete(typed);
    }
    f
}

/// `v` with every UUID a projector made (a message id of its own) as `<uuid>`.
fn ids_masked(v: Value) -> Value {
    match v {
        Value::String(s) if uuid::Uuid::parse_str(&s).is_ok() => Value::String("<uuid>".into()),
        Value::Array(a) => Value::Array(a.into_iter().map(ids_masked).collect()),
        Value::Object(m) => Value::Object(m.into_iter().map(|(k, v)| (k, ids_masked(v))).collect()),
        other => other,
    }
}

fn steps() -> impl Strategy<Value = Vec<Step>> {
    proptest::collection::vec(
        prop_oneof![
            "[a-z ]{0,6}".prop_map(Step::Text),
            "[a-z ]{1,6}".prop_map(Step::Reasoning),
            Just(Step::ToolCall),
            Just(Step::ToolResult),
        ],
        0..6,
    )
}

fn end() -> impl Strategy<Value = End> {
    prop_oneof![
        "[a-z ]{0,6}".prop_map(End::Answer),
        prop_oneof![
            Just(json!({})),
            Just(json!({"content": "done"})),
            Just(json!({"content": 7})),
            Just(json!({"content": "x", "tool_calls": "not a list"})),
        ]
        .prop_map(End::Complete),
        Just(End::Fail),
        Just(End::Refuse),
        Just(End::Pause),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn frames_and_records_project_alike(steps in steps(), end in end(), announced in any::<bool>(), retyped in any::<bool>()) {
        let made = stream(&steps, &end);
        // the same frames, a final answer's body typed (as a Rust agent may make it)
        let typed: Vec<Frame> = made.iter().cloned().map(typed_answer).collect();
        let frames = if retyped { typed } else { made };
        let a2a = A2aStreamProjector::new("t1", "c1");
        let a2a = if announced { a2a.announced() } else { a2a };
        let (f, r) = both(a2a, &frames);
        prop_assert_eq!(f, r, "A2A");
        let (f, r) = both(AcpStreamProjector::new("s1", Some(7.into())), &frames);
        prop_assert_eq!(f, r, "ACP");
        let (f, r) = both(AguiProjector::new("th1", "run1"), &frames);
        prop_assert_eq!(f, r, "AG-UI");
    }
}
