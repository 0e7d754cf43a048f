//! An E2A response stream → A2A 1.0 `StreamResponse` events (and the JSON-RPC envelopes
//! around them): the `Task` first, text as artifact chunks, reasoning and custom events as
//! `working` status updates, then a terminal status (`COMPLETED`, `FAILED`, `CANCELED`, …).

use crate::types::{ChunkBody, DeltaKind};
use crate::ResponseKind;
use serde_json::{json, Value};

use crate::taxonomy::ErrorKind;
use crate::types::{E2AResponse, JsonRpcId};

/// Projects the frames of one request onto A2A stream events.
///
/// ```
/// use e2a::{E2AEnvelope, a2a::stream::A2aStreamProjector, stream::ResponseStream};
/// let req = E2AEnvelope::new("session/prompt", serde_json::json!({}));
/// let mut a2a = A2aStreamProjector::new("task-1", "ctx-1");
/// let mut s = ResponseStream::for_request(&req);
/// let first = a2a.push(&s.text("Hel"));
/// assert!(first[0].get("task").is_some());
/// assert_eq!(first[1]["artifactUpdate"]["artifact"]["parts"][0]["text"], "Hel");
/// let last = a2a.push(&s.complete(serde_json::json!({})));
/// assert_eq!(last.last().unwrap()["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED");
/// ```
#[derive(Debug, Clone)]
pub struct A2aStreamProjector {
    task_id: String,
    context_id: String,
    artifact_id: String,
    started: bool,
    chunks: u64,
    finished: bool,
}

impl A2aStreamProjector {
    /// A projector for task `task_id` in context `context_id`.
    pub fn new(task_id: impl Into<String>, context_id: impl Into<String>) -> Self {
        let task_id = task_id.into();
        A2aStreamProjector {
            artifact_id: format!("{task_id}-output"),
            task_id,
            context_id: context_id.into(),
            started: false,
            chunks: 0,
            finished: false,
        }
    }

    fn status(&self, state: &str, message: Option<Value>, timestamp: &Option<String>) -> Value {
        let mut status = json!({"state": state});
        if let Some(m) = message {
            status["message"] = m;
        }
        if let Some(t) = timestamp {
            status["timestamp"] = proto_timestamp(t).into();
        }
        json!({"statusUpdate": {"taskId": self.task_id, "contextId": self.context_id, "status": status}})
    }

    fn agent_message(&self, parts: Value, frame: &E2AResponse) -> Value {
        json!({"messageId": frame.response_id.clone().unwrap_or_else(|| format!("{}-{}", self.task_id, frame.sequence)),
            "taskId": self.task_id, "contextId": self.context_id, "role": "ROLE_AGENT", "parts": parts})
    }

    fn artifact(&self, text: &str, last: bool) -> Value {
        json!({"artifactUpdate": {"taskId": self.task_id, "contextId": self.context_id,
            "artifact": {"artifactId": self.artifact_id, "parts": [{"text": text}]},
            "append": self.chunks > 0, "lastChunk": last}})
    }

    /// The `StreamResponse` events for one frame (nothing after the terminal status).
    pub fn push(&mut self, frame: &E2AResponse) -> Vec<Value> {
        let mut out = Vec::new();
        if self.finished {
            return out;
        }
        if !self.started {
            self.started = true;
            out.push(json!({"task": {"id": self.task_id, "contextId": self.context_id,
                "status": {"state": "TASK_STATE_WORKING"}}}));
        }
        let b = &frame.body;
        match &frame.response_kind {
            ResponseKind::A2aStreamEvent => out.extend(super::response_to_stream_payload(frame).map(Value::Object)),
            ResponseKind::E2aChunk => {
                let delta = b.get("delta").cloned().unwrap_or(Value::Null);
                match (ChunkBody::kind_of(b), &delta) {
                    (Some(DeltaKind::Text), Value::String(t)) => {
                        out.push(self.artifact(t, false));
                        self.chunks += 1;
                    }
                    (Some(DeltaKind::Reasoning), Value::String(t)) => {
                        let mut m = self.agent_message(json!([{"text": t}]), frame);
                        m["metadata"] = json!({"e2a_delta_kind": "reasoning"});
                        out.push(self.status("TASK_STATE_WORKING", Some(m), &frame.timestamp));
                    }
                    _ => {
                        let m = self.agent_message(json!([{"data": delta}]), frame);
                        out.push(self.status("TASK_STATE_WORKING", Some(m), &frame.timestamp));
                    }
                }
            }
            ResponseKind::E2aComplete if frame.is_final => {
                if self.chunks > 0 {
                    out.push(self.artifact("", true));
                }
                self.finished = true;
                out.push(self.status("TASK_STATE_COMPLETED", None, &frame.timestamp));
            }
            ResponseKind::PlanApprovalRequired => {
                let m = self.agent_message(json!([{"data": b}]), frame);
                self.finished = true;
                out.push(self.status("TASK_STATE_INPUT_REQUIRED", Some(m), &frame.timestamp));
            }
            _ if frame.is_final => {
                if let Some(kind) = ErrorKind::of_response(frame) {
                    let state = kind.mapping().a2a_task_state.unwrap_or("TASK_STATE_FAILED");
                    let text = b.get("message").and_then(Value::as_str).unwrap_or("agent error");
                    let m = self.agent_message(json!([{"text": text}]), frame);
                    self.finished = true;
                    out.push(self.status(state, Some(m), &frame.timestamp));
                }
            }
            _ => {}
        }
        out
    }
}

/// An E2A timestamp (`…+00:00`) as ProtoJSON writes a `google.protobuf.Timestamp`: UTC with
/// `Z`, and the fraction in groups of 0, 3, 6 or 9 digits.
///
/// ```
/// use e2a::a2a::stream::proto_timestamp;
/// assert_eq!(proto_timestamp("2026-03-26T11:33:01.150000+00:00"), "2026-03-26T11:33:01.150Z");
/// assert_eq!(proto_timestamp("2026-03-26T11:33:01+00:00"), "2026-03-26T11:33:01Z");
/// assert_eq!(proto_timestamp("2026-03-26T11:33:01.000500+00:00"), "2026-03-26T11:33:01.000500Z");
/// ```
pub fn proto_timestamp(t: &str) -> String {
    let base = t.strip_suffix("+00:00").or_else(|| t.strip_suffix('Z')).unwrap_or(t);
    let (secs, frac) = base.split_once('.').unwrap_or((base, ""));
    let frac = frac.trim_end_matches('0');
    let digits = match frac.len() {
        0 => 0,
        1..=3 => 3,
        4..=6 => 6,
        _ => 9,
    };
    if digits == 0 {
        format!("{secs}Z")
    } else {
        format!("{secs}.{frac:0<digits$}Z")
    }
}

/// A JSON-RPC success envelope around a `StreamResponse` (one SSE `data:` line).
/// ```
/// let line = e2a::a2a::stream::jsonrpc_result(Some(&3.into()), serde_json::json!({"task": {}}));
/// assert_eq!(line, serde_json::json!({"jsonrpc": "2.0", "id": 3, "result": {"task": {}}}));
/// ```
pub fn jsonrpc_result(id: Option<&JsonRpcId>, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id.map(crate::acp::rpc_id_value).unwrap_or(Value::Null), "result": result})
}

/// The A2A JSON-RPC error for a failed frame: the A2A code of its [`ErrorKind`], its message,
/// and `data` as a list with one `google.rpc.ErrorInfo` (reason = the E2A code).
///
/// ```
/// let r = e2a::E2AResponse::from_value(&serde_json::json!({"response_kind": "e2a.error", "status": "failed",
///     "is_final": true, "jsonrpc_id": 3, "body": {"code": "E2A.NOT_FOUND", "message": "no such task"}})).unwrap();
/// let err = e2a::a2a::stream::jsonrpc_error(&r).unwrap();
/// assert_eq!(err["error"]["code"], -32001);
/// ```
pub fn jsonrpc_error(frame: &E2AResponse) -> Option<Value> {
    let kind = ErrorKind::of_response(frame)?;
    let m = kind.mapping();
    let message = frame.body.get("message").and_then(Value::as_str).unwrap_or(m.name);
    Some(
        json!({"jsonrpc": "2.0", "id": frame.jsonrpc_id.as_ref().map(crate::acp::rpc_id_value).unwrap_or(Value::Null),
        "error": {"code": m.a2a_code, "message": message, "data": [{
            "@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": m.e2a_code, "domain": "e2a",
            "metadata": {}}]}}),
    )
}
