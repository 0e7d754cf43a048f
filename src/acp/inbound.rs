//! ACP → E2A: the frames an ACP agent's `session/update`s are, the mirror of
//! [`crate::acp::stream::AcpStreamProjector`] (E2A → ACP). A gateway speaking to an ACP agent
//! as its client reads each update with [`frame_of_update`]; out and back, an E2A stream of
//! text, reasoning, tool calls and tool results comes back as it went.
//!
//! | `sessionUpdate` | E2A frame |
//! |---|---|
//! | `agent_message_chunk` (text) | text chunk |
//! | `agent_thought_chunk` (text) | reasoning chunk |
//! | `tool_call` | `chat.tool_call` chunk (`toolCall.name`, else `title` → name; `rawInput` → arguments) |
//! | `tool_call_update`, `completed` / `failed` | `chat.tool_result` chunk (`rawOutput`, else `result`, else text-only `content` as its text, else `content`) |
//! | anything else | `acp.session_update` with the update unchanged |

use serde_json::{json, Value};

use crate::stream::ResponseStream;
use crate::types::{AcpSessionUpdateKind, Frame, ResponseKind};

/// The E2A frame of one ACP `session/update` update object, made by `s`; the text of message
/// chunks is added to `text` (the turn's answer). `None` for an update that is not an object or
/// a tool call without its id.
///
/// ```
/// use e2a::{E2AEnvelope, stream::ResponseStream};
/// let mut s = ResponseStream::for_request(&E2AEnvelope::default());
/// let mut text = String::new();
/// let u = serde_json::json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}});
/// let f = e2a::acp::inbound::frame_of_update(&mut s, &u, &mut text).unwrap();
/// assert_eq!((f.body_object()["delta"].as_str(), text.as_str()), (Some("hi"), "hi"));
/// ```
pub fn frame_of_update(s: &mut ResponseStream, update: &Value, text: &mut String) -> Option<Frame> {
    let u = update.as_object()?;
    let kind = u
        .get("sessionUpdate")
        .and_then(Value::as_str)
        .and_then(|k| k.parse::<AcpSessionUpdateKind>().ok());
    let content_text = || {
        u.get("content")
            .filter(|c| c.get("type").and_then(Value::as_str) == Some("text"))
            .and_then(|c| c.get("text"))
            .and_then(Value::as_str)
    };
    match kind {
        Some(AcpSessionUpdateKind::AgentMessageChunk) if content_text().is_some() => {
            let t = content_text().unwrap_or_default();
            text.push_str(t);
            Some(s.text(t))
        }
        Some(AcpSessionUpdateKind::AgentThoughtChunk) if content_text().is_some() => {
            Some(s.reasoning(content_text().unwrap_or_default()))
        }
        Some(AcpSessionUpdateKind::ToolCall) => {
            let id = u.get("toolCallId").and_then(Value::as_str)?;
            // the tool's own name when the update carries it (`toolCall`, what this SDK's
            // projector writes), else the title an editor shows
            let name = u
                .get("toolCall")
                .and_then(|c| c.get("name"))
                .or_else(|| u.get("title"))
                .and_then(Value::as_str)
                .unwrap_or("tool");
            let args = u.get("rawInput").cloned().unwrap_or_else(|| json!({}));
            Some(s.tool_call(id, name, args))
        }
        Some(AcpSessionUpdateKind::ToolCallUpdate)
            if matches!(u.get("status").and_then(Value::as_str), Some("completed" | "failed")) =>
        {
            let id = u.get("toolCallId").and_then(Value::as_str)?;
            // `rawOutput`, else `result` (what this SDK's projector writes beside the content
            // an editor shows), else the content
            let raw = u.get("rawOutput").or_else(|| u.get("result"));
            let result = match (raw, u.get("content")) {
                (Some(raw), _) => raw.clone(),
                // content that is only text is the tool's output as the agent showed it
                (None, Some(content)) => content_blocks_text(content).map_or_else(|| content.clone(), Value::String),
                (None, None) => Value::Null,
            };
            Some(s.tool_result(id, result))
        }
        _ => Some(s.event(ResponseKind::AcpSessionUpdate, u.clone())),
    }
}

/// The text of a tool call's `content` when every block is text content
/// (`{"type": "content", "content": {"type": "text", "text": …}}`); `None` otherwise.
fn content_blocks_text(content: &Value) -> Option<String> {
    let blocks = content.as_array().filter(|b| !b.is_empty())?;
    blocks
        .iter()
        .map(|b| {
            let inner = b
                .get("content")
                .filter(|_| b.get("type").and_then(Value::as_str) == Some("content"))?;
            inner
                .get("text")
                .filter(|_| inner.get("type").and_then(Value::as_str) == Some("text"))
                .and_then(Value::as_str)
        })
        .collect::<Option<Vec<&str>>>()
        .map(|texts| texts.concat())
}

#[cfg(test)]
mod tests {
    use super::frame_of_update;
    use crate::stream::ResponseStream;
    use crate::E2AEnvelope;
    use serde_json::json;

    #[test]
    fn session_updates_become_frames() {
        let req = E2AEnvelope::new("session/prompt", json!({})).with_request_id("r");
        let mut s = ResponseStream::for_request(&req);
        let mut text = String::new();
        let mut f = |u: serde_json::Value| frame_of_update(&mut s, &u, &mut text).unwrap().to_record();
        let chunk = f(json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}}));
        assert_eq!(chunk.body["delta_kind"], "text");
        let thought = f(json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "hmm"}}));
        assert_eq!(thought.body["delta_kind"], "reasoning");
        let call = f(json!({"sessionUpdate": "tool_call", "toolCallId": "c", "title": "ls", "rawInput": {"a": 1}}));
        assert_eq!(call.body["delta"]["tool_call"]["arguments"], json!({"a": 1}));
        let running = f(json!({"sessionUpdate": "tool_call_update", "toolCallId": "c", "status": "in_progress"}));
        assert_eq!(running.response_kind.to_string(), "acp.session_update");
        let done = f(
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "c", "status": "completed", "rawOutput": {"ok": true}}),
        );
        assert_eq!(done.body["event_type"], "chat.tool_result");
        let shown = f(
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "c", "status": "completed",
            "content": [{"type": "content", "content": {"type": "text", "text": "21 °C"}}]}),
        );
        assert_eq!(shown.body["delta"]["result"], "21 °C");
        let plan = f(json!({"sessionUpdate": "plan", "entries": []}));
        assert_eq!(plan.body["sessionUpdate"], "plan");
        assert_eq!(text, "hi");
        assert!(frame_of_update(&mut s, &json!("not an object"), &mut text).is_none());
    }
}
