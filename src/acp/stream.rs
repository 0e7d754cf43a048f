//! An E2A response stream → the ACP messages an agent sends: `session/update` notifications
//! while the turn runs, then the `session/prompt` JSON-RPC response.

use crate::shown::ShownText;
use crate::types::{AnswerResult, ChunkBody, ChunkEventType, DeltaKind};
use crate::ResponseKind;
use serde_json::{json, Map, Value};

use super::session_updates::SessionUpdateState;
use crate::frame::{Frame, Projector};
use crate::taxonomy::ErrorKind;
use crate::types::{E2AResponse, JsonRpcId};

/// Projects the frames of one `session/prompt` turn onto ACP.
///
/// ```
/// use e2a::{E2AEnvelope, acp::stream::AcpStreamProjector, frame::Projector, stream::ResponseStream};
/// let req = E2AEnvelope::new("session/prompt", serde_json::json!({})).with_session_id("s1").with_jsonrpc_id(4);
/// let mut acp = AcpStreamProjector::new("s1", req.jsonrpc_id.clone());
/// let mut s = ResponseStream::for_request(&req);
/// let update = acp.push(&s.text("Hi"));
/// assert_eq!(update[0]["params"]["update"]["sessionUpdate"], "agent_message_chunk");
/// let done = acp.push(&s.complete(serde_json::json!({})));
/// assert_eq!(done[0], serde_json::json!({"jsonrpc": "2.0", "id": 4, "result": {"stopReason": "end_turn"}}));
/// ```
#[derive(Debug, Clone)]
pub struct AcpStreamProjector {
    session_id: String,
    jsonrpc_id: Option<JsonRpcId>,
    state: SessionUpdateState,
    shown: ShownText,
}

/// The `session/update` notification carrying `update` for session `session_id`.
///
/// ```
/// let n = e2a::acp::stream::session_update("s1", serde_json::json!({"sessionUpdate": "current_mode_update", "currentModeId": "code"}));
/// assert_eq!(n["params"]["sessionId"], "s1");
/// assert_eq!(n["method"], "session/update");
/// ```
pub fn session_update(session_id: &str, update: impl Into<Value>) -> Value {
    json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session_id, "update": update.into()}})
}

impl AcpStreamProjector {
    /// A projector for the turn of `session_id` answering the request `jsonrpc_id`.
    pub fn new(session_id: impl Into<String>, jsonrpc_id: Option<JsonRpcId>) -> Self {
        AcpStreamProjector {
            session_id: session_id.into(),
            jsonrpc_id,
            state: SessionUpdateState::new(),
            shown: ShownText::default(),
        }
    }

    /// The per-turn session-update state (message ids, accumulated text, tool-call cache).
    pub fn state(&self) -> &SessionUpdateState {
        &self.state
    }

    fn id(&self) -> Value {
        self.jsonrpc_id.as_ref().map(super::rpc_id_value).unwrap_or(Value::Null)
    }

    /// An `agent_message_chunk` of `text` the agent did not stream as text (an artifact, a
    /// final content, a refusal's reason).
    fn say(&mut self, text: String, out: &mut Vec<Value>) {
        let update = self
            .state
            .update("chat.delta", &text_payload(&Value::String(text), false));
        out.extend(
            update
                .and_then(standard_update)
                .map(|u| session_update(&self.session_id, u)),
        );
    }

    /// The ACP messages for one frame given as the record (zero, one or more).
    fn project(&mut self, frame: &E2AResponse) -> Vec<Value> {
        let b = &frame.body;
        let mut out = Vec::new();
        match &frame.response_kind {
            ResponseKind::E2aChunk => {
                let update = self.chunk_update(b);
                self.notify(update, &mut out);
            }
            ResponseKind::AcpSessionUpdate => out.push(session_update(&self.session_id, b.clone())),
            ResponseKind::E2aComplete if frame.is_final => {
                // the final content not streamed as text (a reply, a summary at the end)
                if let Some(owed) = self.shown.owed(frame) {
                    self.say(owed, &mut out);
                }
                let answer = AnswerResult::of(frame);
                let stop = answer
                    .as_ref()
                    .and_then(|a| a.stop_reason.as_deref())
                    .unwrap_or("end_turn");
                out.push(
                    json!({"jsonrpc": "2.0", "id": self.id(), "result": super::prompt_result(stop,
                    self.state.user_message_id.as_deref())}),
                );
            }
            ResponseKind::E2aError | ResponseKind::AcpJsonrpcError | ResponseKind::AcpPromptResult
                if frame.is_final || frame.response_kind != ResponseKind::E2aError =>
            {
                self.end_turn(frame, &mut out);
            }
            ResponseKind::AcpOutputRequest => out.push(Value::Object(b.clone())),
            _ => {}
        }
        out
    }

    /// The session update of an `e2a.chunk` body (before [`standard_update`]): text and
    /// reasoning as message chunks, an artifact shown as text (ACP has none), any other event
    /// by its type.
    fn chunk_update(&mut self, b: &Map<String, Value>) -> Option<Map<String, Value>> {
        let delta = b.get("delta").cloned().unwrap_or(Value::Null);
        let event = b.get("event_type").and_then(Value::as_str).unwrap_or("");
        match ChunkBody::kind_of(b) {
            Some(DeltaKind::Text) => self.text_update(&delta),
            Some(DeltaKind::Reasoning) => self.state.update("chat.delta", &text_payload(&delta, true)),
            // ACP has no artifacts: the user is shown one as text
            _ if event == ChunkEventType::Artifact.as_str() => crate::shown::artifact_text(&delta)
                .and_then(|t| self.state.update("chat.delta", &text_payload(&Value::String(t), false))),
            _ => match delta {
                Value::Object(m) => self.state.update(event, &m),
                _ => None,
            },
        }
    }

    /// The session update of a text delta (shown to the user as it streams).
    fn text_update(&mut self, delta: &Value) -> Option<Map<String, Value>> {
        if let Value::String(t) = delta {
            self.shown.streamed(t);
        }
        self.state.update("chat.delta", &text_payload(delta, false))
    }

    /// The `session/update` notification of a chunk's update.
    fn notify(&self, update: Option<Map<String, Value>>, out: &mut Vec<Value>) {
        out.extend(
            update
                .and_then(standard_update)
                .map(|u| session_update(&self.session_id, u)),
        );
    }

    /// The end of a turn by an error, a JSON-RPC error or a prompt result: a cancelled turn
    /// and a refusal end with their stop reason, anything else as the JSON-RPC response.
    fn end_turn(&mut self, frame: &E2AResponse, out: &mut Vec<Value>) {
        let b = &frame.body;
        if ErrorKind::of_response(frame) == Some(ErrorKind::Cancelled) {
            // ACP: a cancelled turn is not an error.
            out.push(json!({"jsonrpc": "2.0", "id": self.id(), "result": {"stopReason": "cancelled"}}));
        } else if crate::stream::is_refusal(frame) {
            // nor is a refusal: the agent's reason shown, then `stopReason: "refusal"`
            let why = b.get("message").and_then(Value::as_str).filter(|m| !m.is_empty());
            if let Some(why) = why {
                self.say(why.to_string(), out);
            }
            out.push(
                json!({"jsonrpc": "2.0", "id": self.id(), "result": super::prompt_result("refusal",
                self.state.user_message_id.as_deref())}),
            );
        } else if let Some(mut r) = super::response_to_jsonrpc_response(frame) {
            if frame.jsonrpc_id.is_none() {
                r.insert("id".into(), self.id());
            }
            // a known E2A string code gets its ACP code from the one error table
            if let (Some(code), Some(Value::Object(err))) = (b.get("code").and_then(Value::as_str), r.get_mut("error"))
            {
                if crate::taxonomy::ERROR_TABLE.iter().any(|m| m.e2a_code == code) {
                    let kind = ErrorKind::from_code(&Value::from(code), "e2a");
                    err.insert("code".into(), kind.mapping().acp_code.into());
                }
            }
            out.push(Value::Object(r));
        }
    }
}

/// Projects a `session/prompt` turn's frames onto ACP messages.
impl Projector for AcpStreamProjector {
    type Event = Value;

    /// The messages for one frame: a text delta as its `agent_message_chunk` as it is; any
    /// other frame is read as its record.
    fn push(&mut self, frame: &Frame) -> Vec<Value> {
        if let (Some(DeltaKind::Text), Some(delta)) = frame.chunk_delta() {
            let mut out = Vec::new();
            let update = self.text_update(delta);
            self.notify(update, &mut out);
            return out;
        }
        self.project(&frame.to_record())
    }

    fn push_record(&mut self, record: &E2AResponse) -> Vec<Value> {
        self.project(record)
    }
}

/// Rewrites the reference's project-specific update shapes into standard ACP v1 ones:
/// `todo_update` becomes a `plan` (entries with content, priority, status); a `plan` whose
/// payload has no `entries` and a `usage_update` without `used`/`size` are dropped (they have
/// no ACP form); a `tool_call_update` with a structured result shows it as JSON text (a
/// deliberate difference from the reference, which shows a Python repr); everything else
/// passes through.
/// ```
/// let todo = serde_json::json!({"sessionUpdate": "todo_update", "todos": [{"content": "a", "status": "done"}]});
/// let plan = e2a::acp::stream::standard_update(todo.as_object().unwrap().clone()).unwrap();
/// assert_eq!(serde_json::Value::Object(plan), serde_json::json!({"sessionUpdate": "plan",
///     "entries": [{"content": "a", "priority": "medium", "status": "completed"}]}));
/// let done = serde_json::json!({"sessionUpdate": "tool_call_update", "result": {"temp_c": 21},
///     "content": [{"type": "content", "content": {"type": "text", "text": "{'temp_c': 21}"}}]});
/// let shown = e2a::acp::stream::standard_update(done.as_object().unwrap().clone()).unwrap();
/// assert_eq!(shown["content"][0]["content"]["text"], r#"{"temp_c":21}"#);
/// ```
pub fn standard_update(update: Map<String, Value>) -> Option<Map<String, Value>> {
    let kind = update.get("sessionUpdate").and_then(Value::as_str).unwrap_or("");
    match kind {
        "todo_update" => {
            let entries: Vec<Value> = update
                .get("todos")?
                .as_array()?
                .iter()
                .filter_map(Value::as_object)
                .map(|t| {
                    let status = match t.get("status").and_then(Value::as_str) {
                        Some(s @ ("pending" | "in_progress" | "completed")) => s,
                        Some("done" | "complete") => "completed",
                        _ => "pending",
                    };
                    let priority = t
                        .get("priority")
                        .and_then(Value::as_str)
                        .filter(|p| ["high", "medium", "low"].contains(p))
                        .unwrap_or("medium");
                    let content = t
                        .get("content")
                        .or_else(|| t.get("title"))
                        .and_then(Value::as_str)
                        .unwrap_or("");
                    json!({"content": content, "priority": priority, "status": status})
                })
                .collect();
            json!({"sessionUpdate": "plan", "entries": entries})
                .as_object()
                .cloned()
        }
        "plan" => {
            let entries = update
                .get("entries")
                .or_else(|| update.get("plan").and_then(|p| p.get("entries")))?;
            json!({"sessionUpdate": "plan", "entries": entries})
                .as_object()
                .cloned()
        }
        "usage_update" => {
            let usage = update.get("usage").and_then(Value::as_object).unwrap_or(&update);
            let (used, size) = (usage.get("used")?.as_u64()?, usage.get("size")?.as_u64()?);
            let mut u = json!({"sessionUpdate": "usage_update", "used": used, "size": size});
            if let Some(cost) = usage.get("cost").filter(|c| c.is_object()) {
                u["cost"] = cost.clone();
            }
            u.as_object().cloned()
        }
        "tool_call_update" => Some(json_result_text(update)),
        _ => Some(update),
    }
}

/// A tool-call update whose `result` is structured (an object or a list) shows it as JSON text,
/// not as the reference's Python repr (`{'temp_c': 21}`), which [`super::tool_updates::tool_result_update`]
/// keeps for conformance: the text is what an editor displays.
fn json_result_text(mut update: Map<String, Value>) -> Map<String, Value> {
    let structured = update.get("result").filter(|r| r.is_object() || r.is_array());
    if let Some(text) = structured.and_then(|r| serde_json::to_string(r).ok()) {
        if let Some(Value::Array(content)) = update.get_mut("content") {
            if let [Value::Object(item)] = content.as_mut_slice() {
                if let Some(Value::Object(c)) = item.get_mut("content") {
                    if c.get("type").and_then(Value::as_str) == Some("text") {
                        c.insert("text".into(), text.into());
                    }
                }
            }
        }
    }
    update
}

fn text_payload(delta: &Value, reasoning: bool) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("content".into(), delta.clone());
    if reasoning {
        m.insert("source_chunk_type".into(), "llm_reasoning".into());
    }
    m
}

/// True when an envelope is an ACP `session/cancel` notification (ingress side of
/// cancellation: the gateway stops the turn, which then ends with `stopReason: cancelled`).
/// ```
/// let env = e2a::E2AEnvelope::new("session/cancel", serde_json::json!({"sessionId": "s"}));
/// assert!(e2a::acp::stream::is_cancel(&env));
/// ```
pub fn is_cancel(env: &crate::E2AEnvelope) -> bool {
    env.method.as_deref() == Some("session/cancel")
}
