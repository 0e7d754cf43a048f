//! ACP `session/update` notifications from agent events (the reference's
//! `acp/session_updates.py`): text and reasoning chunks with stable message ids, incremental
//! final text, tool calls and results, plans, todos and processing status.

use serde_json::{json, Map, Value};

use super::tool_updates::{self, ToolCallCache};

/// Per-session state: message ids and accumulated text of the current turn, and the
/// tool-call cache.
#[derive(Debug, Clone, Default)]
pub struct SessionUpdateState {
    /// Message id of the agent's reply (created on first use).
    pub assistant_message_id: Option<String>,
    /// Reply text accumulated so far.
    pub assistant_text: String,
    /// Message id of the agent's reasoning (created on first use).
    pub thought_message_id: Option<String>,
    /// Reasoning text accumulated so far.
    pub thought_text: String,
    /// Id of the user message of this turn, if known.
    pub user_message_id: Option<String>,
    /// Tool calls announced so far, by id.
    pub tool_call_cache: ToolCallCache,
}

fn new_id() -> String {
    crate::stream::new_id()
}

fn is_reasoning(event_type: &str, payload: &Map<String, Value>) -> bool {
    event_type == "chat.reasoning"
        || payload.get("source_chunk_type").and_then(Value::as_str) == Some("llm_reasoning")
        || payload.get("event_type").and_then(Value::as_str) == Some("chat.reasoning")
}

fn chunk(kind: &str, id: &str, text: &str) -> Map<String, Value> {
    let v = json!({"sessionUpdate": kind, "messageId": id, "content": {"type": "text", "text": text}});
    v.as_object().cloned().unwrap_or_default()
}

fn content_text(payload: &Map<String, Value>) -> String {
    match payload.get("content") {
        Some(v) if crate::fields::truthy(v) => crate::pyrepr::py_str(v),
        _ => String::new(),
    }
}

impl SessionUpdateState {
    /// A fresh state.
    pub fn new() -> Self {
        Self::default()
    }

    /// The `session/update` update object for an agent event, or `None` when the event has no
    /// ACP counterpart.
    ///
    /// ```
    /// use e2a::acp::session_updates::SessionUpdateState;
    /// let mut st = SessionUpdateState::new();
    /// let p = serde_json::json!({"content": "Hel"});
    /// let u1 = st.update("chat.delta", p.as_object().unwrap()).unwrap();
    /// let u2 = st.update("chat.delta", serde_json::json!({"content": "lo"}).as_object().unwrap()).unwrap();
    /// assert_eq!(u1["sessionUpdate"], "agent_message_chunk");
    /// assert_eq!(u1["messageId"], u2["messageId"]);
    /// assert_eq!(st.assistant_text, "Hello");
    /// ```
    pub fn update(&mut self, event_type: &str, payload: &Map<String, Value>) -> Option<Map<String, Value>> {
        match event_type {
            "chat.delta" | "chat.reasoning" => {
                let text = content_text(payload);
                if text.is_empty() {
                    return None;
                }
                if is_reasoning(event_type, payload) {
                    self.thought_text.push_str(&text);
                    let id = self.thought_message_id.get_or_insert_with(new_id).clone();
                    Some(chunk("agent_thought_chunk", &id, &text))
                } else {
                    self.assistant_text.push_str(&text);
                    let id = self.assistant_message_id.get_or_insert_with(new_id).clone();
                    Some(chunk("agent_message_chunk", &id, &text))
                }
            }
            "chat.tool_call" => tool_updates::tool_call_update(payload, Some(&mut self.tool_call_cache)),
            "chat.tool_update" | "chat.tool_result" => {
                Some(tool_updates::tool_result_update(payload, Some(&self.tool_call_cache)))
            }
            "chat.subtask_update" => json!({"sessionUpdate": "plan", "plan": payload}).as_object().cloned(),
            "todo.updated" => tool_updates::todo_update(payload),
            "chat.processing_status" => {
                let busy = payload.get("is_processing").map(crate::fields::truthy).unwrap_or(true);
                json!({"sessionUpdate": "session_info_update", "status": if busy { "processing" } else { "idle" }})
                    .as_object()
                    .cloned()
            }
            _ => None,
        }
    }

    /// The update for the final text of a turn, sent incrementally: only the part not yet
    /// streamed; `None` when nothing is new; the full text under a new message id when the
    /// final text diverges from what was streamed.
    ///
    /// ```
    /// use e2a::acp::session_updates::SessionUpdateState;
    /// let mut st = SessionUpdateState::new();
    /// st.update("chat.delta", serde_json::json!({"content": "Hel"}).as_object().unwrap());
    /// let fin = st.final_text_update(serde_json::json!({"content": "Hello"}).as_object().unwrap()).unwrap();
    /// assert_eq!(fin["content"]["text"], "lo");
    /// assert!(st.final_text_update(serde_json::json!({"content": "Hello"}).as_object().unwrap()).is_none());
    /// ```
    pub fn final_text_update(&mut self, payload: &Map<String, Value>) -> Option<Map<String, Value>> {
        let text = content_text(payload);
        if text.is_empty() {
            return None;
        }
        let reasoning = is_reasoning("chat.final", payload);
        let (acc, id, kind) = if reasoning {
            (
                &mut self.thought_text,
                &mut self.thought_message_id,
                "agent_thought_chunk",
            )
        } else {
            (
                &mut self.assistant_text,
                &mut self.assistant_message_id,
                "agent_message_chunk",
            )
        };
        if acc.is_empty() {
            acc.push_str(&text);
            let id = id.get_or_insert_with(new_id).clone();
            return Some(chunk(kind, &id, &text));
        }
        if *acc == text {
            return None;
        }
        if let Some(suffix) = text.strip_prefix(acc.as_str()) {
            let suffix = suffix.to_string();
            *acc = text;
            let id = id.get_or_insert_with(new_id).clone();
            return Some(chunk(kind, &id, &suffix));
        }
        *acc = text.clone();
        let fresh = new_id();
        *id = Some(fresh.clone());
        Some(chunk(kind, &fresh, &text))
    }
}

/// The `usage_update` session update for a payload with a non-empty `usage` object.
/// ```
/// let p = serde_json::json!({"usage": {"used": 10, "size": 100}});
/// assert_eq!(e2a::acp::session_updates::usage_update(p.as_object().unwrap()).unwrap()["sessionUpdate"], "usage_update");
/// ```
pub fn usage_update(payload: &Map<String, Value>) -> Option<Map<String, Value>> {
    tool_updates::usage_update(payload)
}
