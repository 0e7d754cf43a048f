//! AG-UI (HTTP POST of `RunAgentInput`, then an SSE stream of events) ⇄ E2A.
//!
//! Ingress: [`envelope_from_run_input`]. Egress: [`AguiProjector`] turns an E2A response
//! stream into AG-UI events with a valid lifecycle (`RUN_STARTED` first; text, reasoning and
//! tool-call events properly opened and closed; `RUN_FINISHED` or `RUN_ERROR` last), and
//! [`verify_events`] checks a sequence of events against the same rules as the AG-UI client.

use crate::frame::{Frame, Projector};
use crate::types::{ChunkBody, DeltaKind};
use crate::ResponseKind;
use serde_json::{json, Map, Value};

use crate::error::{Error, Result};
use crate::fields::Fields;
use crate::taxonomy::ErrorKind;
use crate::types::{E2AEnvelope, E2AResponse, IdentityOrigin};

/// The `provenance.source_protocol` written for AG-UI ingress.
pub const SOURCE_PROTOCOL: &str = "ag-ui";

/// The `provenance.details` key holding a run input's `parentRunId` (the run it branches
/// from; `E2ARun.parent_run_id` in `schema/response.json`).
pub const PARENT_RUN_ID: &str = "parent_run_id";

/// Normalizes an AG-UI `RunAgentInput` into an envelope: `threadId` → `session_id` and
/// `context_id`, `runId` → `request_id`, the messages, tools, context, state and forwarded
/// props into `params`, and the last user message's text into `params.text`.
///
/// ```
/// let input = serde_json::json!({"threadId": "t1", "runId": "run1", "messages": [
///     {"id": "m1", "role": "user", "content": "hi"}], "tools": [], "context": []});
/// let env = e2a::agui::envelope_from_run_input(&input).unwrap();
/// assert_eq!(env.request_id.as_deref(), Some("run1"));
/// assert_eq!(env.params["text"], "hi");
/// assert!(env.is_stream);
/// ```
pub fn envelope_from_run_input(input: &Value) -> Result<E2AEnvelope> {
    let m = input.as_object().ok_or_else(|| Error::field("", "expected object"))?;
    let f = Fields::new(m, "");
    let thread_id = f.opt_str("threadId")?.ok_or_else(|| f.err("threadId", "string"))?;
    let run_id = f.opt_str("runId")?.ok_or_else(|| f.err("runId", "string"))?;
    let messages = match f.get("messages") {
        None => Vec::new(),
        Some(Value::Array(a)) => a.clone(),
        Some(_) => return Err(f.err("messages", "array")),
    };
    let mut params = Map::new();
    if let Some(text) = messages
        .iter()
        .rev()
        .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))
        .map(user_text)
    {
        params.insert("text".into(), text.into());
    }
    params.insert("messages".into(), Value::Array(messages));
    for (src, dst) in [
        ("tools", "tools"),
        ("context", "context"),
        ("state", "state"),
        ("forwardedProps", "forwarded_props"),
        ("resume", "resume"),
    ] {
        if let Some(v) = f.get(src) {
            params.insert(dst.into(), v.clone());
        }
    }
    let mut env = E2AEnvelope {
        request_id: Some(run_id.clone()),
        session_id: Some(thread_id.clone()),
        context_id: Some(thread_id),
        method: Some("session/prompt".into()),
        params,
        is_stream: true,
        identity_origin: IdentityOrigin::User,
        ..Default::default()
    };
    env.provenance.source_protocol = SOURCE_PROTOCOL.into();
    env.provenance.converter = Some("e2a::agui::envelope_from_run_input".into());
    env.provenance.converted_at = Some(crate::timestamp::utc_now_iso());
    env.provenance.details.insert("kind".into(), "run_agent_input".into());
    env.provenance.details.insert(
        "protocol_version".into(),
        f.opt_str("protocolVersion")?.map(Value::from).unwrap_or(Value::Null),
    );
    if let Some(p) = f.opt_str("parentRunId")? {
        env.provenance.details.insert(PARENT_RUN_ID.into(), p.into());
    }
    Ok(env)
}

fn user_text(m: &Value) -> String {
    match m.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter(|p| p.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// Projects an E2A response stream onto AG-UI events.
///
/// ```
/// use e2a::{E2AEnvelope, agui::{AguiProjector, verify_events}, frame::Projector, stream::ResponseStream};
/// let req = E2AEnvelope::new("session/prompt", serde_json::json!({})).with_request_id("run1");
/// let mut ag = AguiProjector::new("thread1", "run1");
/// let mut s = ResponseStream::for_request(&req);
/// let mut events = ag.push(&s.text("Hi"));
/// events.extend(ag.push(&s.complete(serde_json::json!({}))));
/// let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
/// assert_eq!(types, ["RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_FINISHED"]);
/// verify_events(&events).unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct AguiProjector {
    thread_id: String,
    run_id: String,
    started: bool,
    finished: bool,
    text: Option<String>,
    reasoning: Option<String>,
    counter: u64,
    shown: crate::shown::ShownText,
    /// The interrupts asked so far (each `plan.approval_required` frame), that the run ends
    /// with.
    interrupts: Vec<Value>,
}

impl AguiProjector {
    /// A projector for run `run_id` of thread `thread_id`.
    pub fn new(thread_id: impl Into<String>, run_id: impl Into<String>) -> Self {
        AguiProjector {
            thread_id: thread_id.into(),
            run_id: run_id.into(),
            started: false,
            finished: false,
            text: None,
            reasoning: None,
            counter: 0,
            shown: crate::shown::ShownText::default(),
            interrupts: Vec::new(),
        }
    }

    fn new_id(&mut self, prefix: &str) -> String {
        self.counter += 1;
        format!("{}-{prefix}-{}", self.run_id, self.counter)
    }

    fn close_text(&mut self, out: &mut Vec<Value>) {
        if let Some(id) = self.text.take() {
            out.push(json!({"type": "TEXT_MESSAGE_END", "messageId": id}));
        }
    }

    fn close_reasoning(&mut self, out: &mut Vec<Value>) {
        if let Some(id) = self.reasoning.take() {
            out.push(json!({"type": "REASONING_MESSAGE_END", "messageId": id}));
            out.push(json!({"type": "REASONING_END", "messageId": id}));
        }
    }

    /// Assistant text: into the open text message, or a new one.
    fn say(&mut self, t: String, out: &mut Vec<Value>) {
        self.close_reasoning(out);
        let id = match &self.text {
            Some(id) => id.clone(),
            None => {
                let id = self.new_id("msg");
                out.push(json!({"type": "TEXT_MESSAGE_START", "messageId": id, "role": "assistant"}));
                self.text = Some(id.clone());
                id
            }
        };
        out.push(json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": id, "delta": t}));
    }

    fn close_all(&mut self, out: &mut Vec<Value>) {
        self.close_text(out);
        self.close_reasoning(out);
    }

    /// Reasoning text: into the open reasoning message, or a new one.
    fn think(&mut self, t: String, out: &mut Vec<Value>) {
        self.close_text(out);
        let id = match &self.reasoning {
            Some(id) => id.clone(),
            None => {
                let id = self.new_id("reasoning");
                out.push(json!({"type": "REASONING_START", "messageId": id}));
                out.push(json!({"type": "REASONING_MESSAGE_START", "messageId": id, "role": "reasoning"}));
                self.reasoning = Some(id.clone());
                id
            }
        };
        out.push(json!({"type": "REASONING_MESSAGE_CONTENT", "messageId": id, "delta": t}));
    }

    /// A text or reasoning delta (not empty) of a run that has started: its events.
    fn delta(&mut self, kind: Option<DeltaKind>, delta: &Value, out: &mut Vec<Value>) -> bool {
        match (kind, delta) {
            (Some(DeltaKind::Text), Value::String(t)) if !t.is_empty() => {
                self.shown.streamed(t);
                self.say(t.clone(), out);
            }
            (Some(DeltaKind::Reasoning), Value::String(t)) if !t.is_empty() => self.think(t.clone(), out),
            _ => return false,
        }
        true
    }

    /// The AG-UI events for one frame given as the record (nothing after `RUN_FINISHED` /
    /// `RUN_ERROR`).
    fn project(&mut self, frame: &E2AResponse) -> Vec<Value> {
        let mut out = Vec::new();
        if self.finished {
            return out;
        }
        if !self.started {
            self.started = true;
            out.push(run_started(&self.thread_id, &self.run_id));
        }
        let b = &frame.body;
        match &frame.response_kind {
            ResponseKind::E2aChunk => {
                let delta = b.get("delta").unwrap_or(&Value::Null);
                if !self.delta(ChunkBody::kind_of(b), delta, &mut out) {
                    if let Value::Object(d) = delta {
                        self.custom(b, d, &mut out);
                    }
                }
            }
            ResponseKind::E2aComplete if frame.is_final && !self.interrupts.is_empty() => self.interrupted(&mut out),
            ResponseKind::E2aComplete if frame.is_final => {
                // the final content not streamed as text (a reply, a summary at the end)
                if let Some(owed) = self.shown.owed(frame) {
                    self.say(owed, &mut out);
                }
                self.close_all(&mut out);
                self.finished = true;
                let result = b.get("result").cloned().unwrap_or(Value::Null);
                out.push(
                    json!({"type": "RUN_FINISHED", "threadId": self.thread_id, "runId": self.run_id,
                    "result": result, "outcome": {"type": "success"}}),
                );
            }
            ResponseKind::PlanApprovalRequired => {
                // each question is an interrupt; the run ends with all of them at its final frame
                self.close_all(&mut out);
                let id = self.new_id("interrupt");
                // what the pause asks for (`approval`, `input`); what is absent asks for approval
                let reason = b
                    .get("input_kind")
                    .and_then(|k| serde_json::from_value::<crate::types::PauseKind>(k.clone()).ok())
                    .unwrap_or(crate::types::PauseKind::Approval);
                self.interrupts.push(json!({"id": id, "reason": reason,
                    "message": b.get("plan_content").and_then(Value::as_str).unwrap_or("Approval required"),
                    "metadata": b}));
                if frame.is_final {
                    self.interrupted(&mut out);
                }
            }
            _ if frame.is_final => {
                if let Some(kind) = ErrorKind::of_response(frame) {
                    self.close_all(&mut out);
                    self.finished = true;
                    let message = b.get("message").and_then(Value::as_str).unwrap_or("agent error");
                    out.push(run_error(message, kind));
                }
            }
            _ => {}
        }
        out
    }

    /// Ends the run waiting for the interrupts asked.
    fn interrupted(&mut self, out: &mut Vec<Value>) {
        self.close_all(out);
        self.finished = true;
        let interrupts = std::mem::take(&mut self.interrupts);
        out.push(
            json!({"type": "RUN_FINISHED", "threadId": self.thread_id, "runId": self.run_id,
            "outcome": {"type": "interrupt", "interrupts": interrupts}}),
        );
    }

    fn custom(&mut self, body: &Map<String, Value>, delta: &Map<String, Value>, out: &mut Vec<Value>) {
        let event = body.get("event_type").and_then(Value::as_str).unwrap_or("");
        match event {
            "chat.tool_call" => {
                let Some(call) = delta.get("tool_call").and_then(Value::as_object) else {
                    return;
                };
                let Some(id) = ["tool_call_id", "toolCallId", "id"]
                    .iter()
                    .find_map(|k| call.get(*k).and_then(Value::as_str))
                else {
                    return;
                };
                self.close_all(out);
                let name = call.get("name").and_then(Value::as_str).unwrap_or("tool");
                let args = match call.get("arguments") {
                    Some(Value::String(s)) => s.clone(),
                    Some(v) => v.to_string(),
                    None => "{}".into(),
                };
                out.push(json!({"type": "TOOL_CALL_START", "toolCallId": id, "toolCallName": name}));
                out.push(json!({"type": "TOOL_CALL_ARGS", "toolCallId": id, "delta": args}));
                out.push(json!({"type": "TOOL_CALL_END", "toolCallId": id}));
            }
            "chat.tool_result" => {
                let Some(id) = ["tool_call_id", "toolCallId", "id"]
                    .iter()
                    .find_map(|k| delta.get(*k).and_then(Value::as_str))
                else {
                    return;
                };
                let content = match delta.get("result").or_else(|| delta.get("content")) {
                    Some(Value::String(s)) => s.clone(),
                    Some(v) => v.to_string(),
                    None => String::new(),
                };
                let mid = self.new_id("tool");
                out.push(json!({"type": "TOOL_CALL_RESULT", "messageId": mid, "toolCallId": id, "content": content, "role": "tool"}));
            }
            _ => {
                // AG-UI has no artifacts: the user is shown one as text, an app gets it whole
                // as a CUSTOM event
                if event == crate::types::ChunkEventType::Artifact.as_str() {
                    if let Some(t) = crate::shown::artifact_text(&Value::Object(delta.clone())) {
                        self.say(t, out);
                        self.close_text(out);
                    }
                }
                out.push(
                    json!({"type": "CUSTOM", "name": if event.is_empty() { "e2a.custom" } else { event }, "value": delta}),
                );
            }
        }
    }
}

/// Projects an E2A stream onto AG-UI events.
impl Projector for AguiProjector {
    type Event = Value;

    /// The events for one frame: a text or reasoning delta of a started run as it is; any
    /// other frame is read as its record.
    fn push(&mut self, frame: &Frame) -> Vec<Value> {
        let mut out = Vec::new();
        if self.started && !self.finished {
            if let (kind @ Some(_), Some(delta)) = frame.chunk_delta() {
                if self.delta(kind, delta, &mut out) {
                    return out;
                }
            }
        }
        self.project(&frame.to_record())
    }

    fn push_record(&mut self, record: &E2AResponse) -> Vec<Value> {
        self.project(record)
    }
}

/// The `RUN_STARTED` event of run `run_id` of thread `thread_id`.
pub fn run_started(thread_id: &str, run_id: &str) -> Value {
    json!({"type": "RUN_STARTED", "threadId": thread_id, "runId": run_id})
}

/// The `RUN_ERROR` event of a run that ended with `message`, its `code` the AG-UI code of
/// `kind`.
pub fn run_error(message: &str, kind: ErrorKind) -> Value {
    json!({"type": "RUN_ERROR", "message": message, "code": kind.mapping().agui_code})
}

/// Checks an AG-UI event sequence against the client's lifecycle rules (`verifyEvents`):
/// the first event is `RUN_STARTED`; nothing follows `RUN_FINISHED`/`RUN_ERROR` except a new
/// `RUN_STARTED` after `RUN_FINISHED`; text, reasoning and tool-call events refer to an open
/// message/call of the same id, ids are not opened twice, and everything is closed before
/// `RUN_FINISHED`.
///
/// ```
/// use serde_json::json;
/// let ok = [json!({"type": "RUN_STARTED", "threadId": "t", "runId": "r"}), json!({"type": "RUN_FINISHED", "threadId": "t", "runId": "r"})];
/// assert!(e2a::agui::verify_events(&ok).is_ok());
/// assert!(e2a::agui::verify_events(&[json!({"type": "TEXT_MESSAGE_START", "messageId": "m"})]).is_err());
/// ```
pub fn verify_events(events: &[Value]) -> std::result::Result<(), String> {
    use std::collections::HashSet;
    let (mut running, mut errored, mut seen_run) = (false, false, false);
    let (mut text, mut reasoning, mut tools) = (HashSet::new(), HashSet::new(), HashSet::new());
    for (i, e) in events.iter().enumerate() {
        let ty = e
            .get("type")
            .and_then(Value::as_str)
            .ok_or(format!("event {i}: no type"))?;
        let id = |k: &str| {
            e.get(k)
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or(format!("event {i} ({ty}): no {k}"))
        };
        if errored {
            return Err(format!("event {i} ({ty}): after RUN_ERROR"));
        }
        if !running && ty != "RUN_STARTED" {
            return Err(format!(
                "event {i} ({ty}): {}",
                if seen_run {
                    "after RUN_FINISHED"
                } else {
                    "before RUN_STARTED"
                }
            ));
        }
        match ty {
            "RUN_STARTED" if running => return Err(format!("event {i}: RUN_STARTED while a run is active")),
            "RUN_STARTED" => {
                running = true;
                seen_run = true;
            }
            "RUN_FINISHED" => {
                if !text.is_empty() || !reasoning.is_empty() || !tools.is_empty() {
                    return Err(format!("event {i}: RUN_FINISHED with open messages or tool calls"));
                }
                running = false;
            }
            "RUN_ERROR" => errored = true,
            "TEXT_MESSAGE_START" if !text.insert(id("messageId")?) => {
                return Err(format!("event {i}: message already open"))
            }
            "TEXT_MESSAGE_CONTENT" if !text.contains(&id("messageId")?) => {
                return Err(format!("event {i}: no open message"))
            }
            "TEXT_MESSAGE_END" if !text.remove(&id("messageId")?) => return Err(format!("event {i}: no open message")),
            "REASONING_START" | "REASONING_END" => {}
            "REASONING_MESSAGE_START" if !reasoning.insert(id("messageId")?) => {
                return Err(format!("event {i}: reasoning already open"))
            }
            "REASONING_MESSAGE_CONTENT" if !reasoning.contains(&id("messageId")?) => {
                return Err(format!("event {i}: no open reasoning"))
            }
            "REASONING_MESSAGE_END" if !reasoning.remove(&id("messageId")?) => {
                return Err(format!("event {i}: no open reasoning"))
            }
            "TOOL_CALL_START" if !tools.insert(id("toolCallId")?) => {
                return Err(format!("event {i}: tool call already open"))
            }
            "TOOL_CALL_ARGS" if !tools.contains(&id("toolCallId")?) => {
                return Err(format!("event {i}: no open tool call"))
            }
            "TOOL_CALL_END" if !tools.remove(&id("toolCallId")?) => {
                return Err(format!("event {i}: no open tool call"))
            }
            _ => {}
        }
    }
    Ok(())
}
