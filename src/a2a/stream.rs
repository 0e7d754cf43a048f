//! An E2A response stream → A2A 1.0 `StreamResponse` events (and the JSON-RPC envelopes
//! around them): the `Task` first, text as artifact chunks, reasoning and custom events as
//! `working` status updates, then a terminal status (`COMPLETED`, `FAILED`, `CANCELED`, …).
//!
//! # E2A frames A2A has no native form for
//!
//! Text has a native form (the output artifact), and so do the terminal states. The other
//! frames are carried by the `status.message` of a status update, marked in the message's
//! `metadata` with the keys of [`A2aMetadataKey`] (declared in `schema/constants.json`), so that
//! a reader ([`carried_frame`], used by the gateway's remote A2A agent) rebuilds the same E2A
//! frame — E2A → A2A → E2A keeps their kind and body:
//!
//! | E2A frame | A2A status | `message.metadata` | `message.parts` |
//! |---|---|---|---|
//! | `e2a.chunk`, `delta_kind: reasoning` | `TASK_STATE_WORKING` | `e2a_delta_kind: "reasoning"` (+ `e2a_chunk`) | `[{"text": delta}]` |
//! | `e2a.chunk`, any other non-text kind (`tool`, `custom`, …) | `TASK_STATE_WORKING` | `e2a_delta_kind: <delta_kind>` (+ `e2a_chunk`) | `[{"data": delta}]` |
//! | `acp.session_update` | `TASK_STATE_WORKING` | `e2a_response_kind: "acp.session_update"` | `[{"data": body}]` |
//! | `plan.approval_required` | `TASK_STATE_INPUT_REQUIRED` | `e2a_response_kind: "plan.approval_required"` | `[{"data": body}]` |
//!
//! `e2a_chunk` holds the chunk body's fields other than `delta_kind` and `delta` (for example
//! `event_type: chat.tool_call`, which tells a tool call from its result); it is left out when
//! there are none. The delta and the body are never rewritten. A reader takes the first data
//! part (the gateway puts the pause's question as a text part before it, for plain clients),
//! or for a reasoning chunk the message's text. A plain A2A agent's status message has no such
//! metadata: [`carried_frame`] answers `None` and the reader treats it as plain A2A (a
//! `WORKING` message's text is reasoning, `INPUT_REQUIRED` a pause for input).
//!
//! ```
//! use e2a::{E2AEnvelope, ResponseKind, a2a::stream::{A2aStreamProjector, carried_frame}, stream::ResponseStream};
//! let req = E2AEnvelope::new("session/prompt", serde_json::json!({}));
//! let mut s = ResponseStream::for_request(&req);
//! let tool = s.chunk(serde_json::from_value(serde_json::json!({"delta_kind": "tool",
//!     "event_type": "chat.tool_call", "delta": {"tool_call": {"tool_call_id": "c1", "name": "ls"}}})).unwrap());
//! let events = A2aStreamProjector::new("task-1", "ctx-1").push(&tool);
//! let message = &events[1]["statusUpdate"]["status"]["message"];
//! assert_eq!(message["metadata"]["e2a_delta_kind"], "tool");
//! assert_eq!(carried_frame(message), Some((ResponseKind::E2aChunk, tool.body.clone())));
//! ```

use crate::types::{A2aMetadataKey, ChunkBody, DeltaKind};
use crate::ResponseKind;
use serde_json::{json, Map, Value};

use crate::taxonomy::ErrorKind;
use crate::types::{E2AResponse, JsonRpcId};

/// The `metadata` key naming the `response_kind` of the E2A frame a message carries.
pub const RESPONSE_KIND_KEY: &str = A2aMetadataKey::E2aResponseKind.as_str();
/// The `metadata` key naming the `delta_kind` of the E2A chunk a message carries.
pub const DELTA_KIND_KEY: &str = A2aMetadataKey::E2aDeltaKind.as_str();
/// The `metadata` key holding the carried chunk body's fields other than `delta_kind`/`delta`.
pub const CHUNK_FIELDS_KEY: &str = A2aMetadataKey::E2aChunk.as_str();

/// The `delta_kind` and `delta` keys of a chunk body (`schema/response.json`, `ChunkBody`).
const DELTA_KIND: &str = "delta_kind";
const DELTA: &str = "delta";

/// The message `metadata` and parts that carry a chunk body (see the module docs).
fn chunk_carrier(body: &Map<String, Value>, parts: Value) -> (Value, Value) {
    let mut meta = Map::new();
    if let Some(kind) = body.get(DELTA_KIND) {
        meta.insert(DELTA_KIND_KEY.into(), kind.clone());
    }
    let rest: Map<String, Value> = body
        .iter()
        .filter(|(k, _)| *k != DELTA_KIND && *k != DELTA)
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if !rest.is_empty() {
        meta.insert(CHUNK_FIELDS_KEY.into(), Value::Object(rest));
    }
    (Value::Object(meta), parts)
}

/// The E2A frame an A2A message carries under the convention of the module docs: its
/// `response_kind` and body, exactly as they were projected. `None` for a message without the
/// convention's metadata (a plain A2A agent's message) or whose carried body is missing.
///
/// ```
/// use e2a::{ResponseKind, a2a::stream::carried_frame};
/// let pause = serde_json::json!({"role": "ROLE_AGENT", "parts": [{"text": "Deploy?"},
///     {"data": {"plan_content": "Deploy?", "input_kind": "approval"}}],
///     "metadata": {"e2a_response_kind": "plan.approval_required"}});
/// let (kind, body) = carried_frame(&pause).unwrap();
/// assert_eq!(kind, ResponseKind::PlanApprovalRequired);
/// assert_eq!(body["input_kind"], "approval");
/// assert_eq!(carried_frame(&serde_json::json!({"parts": [{"text": "thinking"}]})), None);
/// ```
pub fn carried_frame(message: &Value) -> Option<(ResponseKind, Map<String, Value>)> {
    let meta = message.get("metadata")?.as_object()?;
    let parts = message.get("parts").and_then(Value::as_array);
    let data = parts.and_then(|ps| ps.iter().find_map(|p| p.get("data")));
    let kind = meta
        .get(RESPONSE_KIND_KEY)
        .and_then(Value::as_str)
        .map(ResponseKind::from);
    match (kind, meta.get(DELTA_KIND_KEY)) {
        (None | Some(ResponseKind::E2aChunk), Some(delta_kind @ Value::String(_))) => {
            let mut body = meta
                .get(CHUNK_FIELDS_KEY)
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            body.insert(DELTA_KIND.into(), delta_kind.clone());
            let delta = match data {
                Some(d) => Some(d.clone()),
                None => {
                    let texts: Vec<&str> = parts
                        .into_iter()
                        .flatten()
                        .filter_map(|p| p.get("text").and_then(Value::as_str))
                        .collect();
                    (!texts.is_empty()).then(|| Value::String(texts.concat()))
                }
            };
            if let Some(d) = delta.filter(|d| !d.is_null()) {
                body.insert(DELTA.into(), d);
            }
            Some((ResponseKind::E2aChunk, body))
        }
        (Some(ResponseKind::E2aChunk) | None, _) => None,
        (Some(kind), _) => Some((kind, data?.as_object()?.clone())),
    }
}

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

    /// A status update whose message carries an E2A frame (see the module docs).
    fn carrier(&self, state: &str, metadata: Value, parts: Value, frame: &E2AResponse) -> Value {
        let mut m = self.agent_message(parts, frame);
        m["metadata"] = metadata;
        self.status(state, Some(m), &frame.timestamp)
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
                        let (meta, parts) = chunk_carrier(b, json!([{"text": t}]));
                        out.push(self.carrier("TASK_STATE_WORKING", meta, parts, frame));
                    }
                    _ => {
                        let (meta, parts) = chunk_carrier(b, json!([{"data": delta}]));
                        out.push(self.carrier("TASK_STATE_WORKING", meta, parts, frame));
                    }
                }
            }
            ResponseKind::AcpSessionUpdate if !frame.is_final => {
                let meta = json!({RESPONSE_KIND_KEY: frame.response_kind.as_str()});
                out.push(self.carrier("TASK_STATE_WORKING", meta, json!([{"data": b}]), frame));
            }
            ResponseKind::E2aComplete if frame.is_final => {
                if self.chunks > 0 {
                    out.push(self.artifact("", true));
                }
                self.finished = true;
                out.push(self.status("TASK_STATE_COMPLETED", None, &frame.timestamp));
            }
            ResponseKind::PlanApprovalRequired => {
                let meta = json!({RESPONSE_KIND_KEY: frame.response_kind.as_str()});
                self.finished = true;
                out.push(self.carrier("TASK_STATE_INPUT_REQUIRED", meta, json!([{"data": b}]), frame));
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
