//! E2A frames as legacy records: the final frame of a unary call as an [`AgentResponse`], a
//! stream frame as an [`AgentResponseChunk`].

use serde_json::{json, Map, Value};

use super::{AgentResponse, AgentResponseChunk, CHAT_DELTA_COPY_KEYS};
use crate::error::{Error, Result};
use crate::response::body_map;
use crate::types::{ChunkBody, DeltaKind, E2AResponse};
use crate::{ResponseKind, ResponseStatus};

/// The string, or `""`.
fn str_or_empty(v: Option<&String>) -> String {
    v.cloned().unwrap_or_default()
}

/// The final frame of a unary call as a legacy [`AgentResponse`]: `e2a.complete` +
/// `succeeded` → ok; `e2a.error` or any `failed` frame → not ok (payload = `details`, or
/// `{error, code}`). Other frames are an error (streams must use [`response_to_agent_chunk`]).
///
/// ```
/// let r = e2a::E2AResponse::from_value(&serde_json::json!({"response_kind": "e2a.complete", "status": "succeeded",
///     "is_final": true, "request_id": "r1", "body": {"result": {"x": 1}}})).unwrap();
/// let a = e2a::legacy::response_to_agent_response(&r).unwrap();
/// assert!(a.ok);
/// assert_eq!(a.payload.unwrap()["x"], 1);
/// ```
pub fn response_to_agent_response(resp: &E2AResponse) -> Result<AgentResponse> {
    let b = &resp.body;
    let (ok, payload) = if resp.response_kind == ResponseKind::E2aComplete && resp.status == ResponseStatus::Succeeded {
        (
            true,
            b.get("result").and_then(Value::as_object).cloned().unwrap_or_default(),
        )
    } else if resp.response_kind == ResponseKind::E2aError || resp.status == ResponseStatus::Failed {
        let payload = match b.get("details") {
            Some(Value::Object(d)) => d.clone(),
            _ => body_map(json!({
                "error": b.get("message").cloned().unwrap_or_else(|| "Agent error".into()),
                "code": b.get("code").cloned().unwrap_or(Value::Null),
            })),
        };
        (false, payload)
    } else {
        return Err(Error::Unsupported(format!(
            "e2a_response_to_agent_response: unsupported response_kind={:?} status={:?}. Streaming frames \
             (e2a.chunk / in_progress) must use the chunk path",
            resp.response_kind.as_str(),
            resp.status.as_str()
        )));
    };
    Ok(AgentResponse {
        request_id: str_or_empty(resp.request_id.as_ref()),
        channel_id: str_or_empty(resp.channel.as_ref()),
        ok,
        payload: Some(payload),
        metadata: Some(resp.metadata.clone()).filter(|m| !m.is_empty()),
        agent_ref: None,
    })
}

/// A stream frame as a legacy [`AgentResponseChunk`] (completion sentinel, `chat.delta`,
/// custom events, errors, `cron`, `acp.output_request`, `plan.approval_required`). Frames with
/// no legacy counterpart (e.g. a non-final `e2a.complete`) are an error.
///
/// ```
/// let r = e2a::E2AResponse::from_value(&serde_json::json!({"response_kind": "e2a.chunk",
///     "body": {"delta_kind": "text", "delta": "Hi"}})).unwrap();
/// let c = e2a::legacy::response_to_agent_chunk(&r).unwrap();
/// assert_eq!(serde_json::Value::Object(c.payload.unwrap()), serde_json::json!({"event_type": "chat.delta", "content": "Hi"}));
/// ```
pub fn response_to_agent_chunk(resp: &E2AResponse) -> Result<AgentResponseChunk> {
    let b = &resp.body;
    let get = |k: &str| b.get(k).cloned().unwrap_or(Value::Null);
    let (payload, is_complete) = match (&resp.response_kind, resp.is_final) {
        (ResponseKind::E2aComplete, true) => {
            let result = b.get("result").and_then(Value::as_object);
            if result.is_some_and(Map::is_empty) && b.len() == 1 {
                (body_map(json!({"is_complete": true})), true)
            } else {
                (result.cloned().unwrap_or_default(), true)
            }
        }
        (ResponseKind::E2aError, true) => (
            b.get("details")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_else(|| b.clone()),
            true,
        ),
        (ResponseKind::E2aChunk, false) => (chunk_payload(b), false),
        (ResponseKind::Cron, _) => (
            body_map(
                json!({"event_type": "cron.response", "command_id": get("command_id"), "action": get("action"),
                "status": get("status"), "data": get("data"), "message": get("message")}),
            ),
            true,
        ),
        (ResponseKind::AcpOutputRequest, _) => (
            body_map(json!({"event_type": "acp.output_request", "jsonrpc": b})),
            false,
        ),
        (ResponseKind::PlanApprovalRequired, _) => {
            let d = |k: &str| b.get(k).cloned().unwrap_or_else(|| "".into());
            (
                body_map(
                    json!({"event_type": "plan.approval_required", "plan_content": d("plan_content"),
                    "plan_slug": d("plan_slug"), "plan_path": d("plan_path"),
                    "session_id": resp.session_id.clone().unwrap_or_default()}),
                ),
                true,
            )
        }
        (kind, fin) => {
            return Err(Error::Unsupported(format!(
                "e2a_response_to_agent_chunk: unsupported response_kind={:?} is_final={}",
                kind.as_str(),
                if fin { "True" } else { "False" }
            )))
        }
    };
    Ok(AgentResponseChunk {
        request_id: str_or_empty(resp.request_id.as_ref()),
        channel_id: str_or_empty(resp.channel.as_ref()),
        payload: Some(payload),
        is_complete,
        agent_ref: resp.agent_ref.clone().filter(|a| !a.is_empty()),
        metadata: Some(resp.metadata.clone()).filter(|m| !m.is_empty()),
    })
}

/// The legacy chunk payload of an `e2a.chunk` body: a `chat.delta` for text and reasoning,
/// else the delta object (or the delta as `content`) with its `event_type`.
fn chunk_payload(b: &Map<String, Value>) -> Map<String, Value> {
    let delta_kind = ChunkBody::kind_of(b);
    let event_type = b.get("event_type").filter(|v| !v.is_null());
    if event_type.and_then(Value::as_str) == Some("chat.delta")
        || matches!(delta_kind, Some(DeltaKind::Text | DeltaKind::Reasoning))
    {
        let mut p = Map::new();
        p.insert("event_type".into(), "chat.delta".into());
        p.insert(
            "content".into(),
            b.get("delta")
                .filter(|v| !v.is_null())
                .cloned()
                .unwrap_or_else(|| "".into()),
        );
        let sct = if delta_kind == Some(DeltaKind::Reasoning) {
            Some(Value::from("llm_reasoning"))
        } else {
            b.get("source_chunk_type").filter(|v| !v.is_null()).cloned()
        };
        if let Some(s) = sct {
            p.insert("source_chunk_type".into(), s);
        }
        for k in CHAT_DELTA_COPY_KEYS {
            if let Some(v) = b.get(k).filter(|v| !v.is_null()) {
                p.insert(k.into(), v.clone());
            }
        }
        return p;
    }
    let mut p = match b.get("delta") {
        Some(Value::Object(d)) => d.clone(),
        other => {
            let mut p = Map::new();
            if let Some(e) = event_type {
                p.insert("event_type".into(), e.clone());
            }
            if let Some(d) = other.filter(|v| !v.is_null()) {
                p.insert("content".into(), d.clone());
            }
            p
        }
    };
    if let Some(e) = event_type {
        p.entry("event_type").or_insert_with(|| e.clone());
    }
    p
}
