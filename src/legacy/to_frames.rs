//! Legacy records as E2A frames: a unary [`AgentResponse`] as the final frame, a streamed
//! [`AgentResponseChunk`] as a chunk or final frame.

use serde_json::{json, Map, Value};

use super::{nonempty, AgentResponse, AgentResponseChunk, CHAT_DELTA_COPY_KEYS};
use crate::pyrepr::py_str;
use crate::response::body_map;
use crate::types::{ConverterId, E2AResponse, ErrorBody, ErrorCode, IdentityOrigin};
use crate::{ResponseKind, ResponseStatus};

/// An E2A frame converted from a legacy record: ids, sequence, timestamp (now when none is
/// given) and the provenance of `converter`.
fn legacy_frame(
    converter: ConverterId,
    details: Map<String, Value>,
    request_id: &str,
    channel_id: &str,
    response_id: &str,
    sequence: u64,
    timestamp: Option<String>,
) -> E2AResponse {
    let ts = timestamp
        .filter(|t| !t.is_empty())
        .unwrap_or_else(crate::timestamp::utc_now_iso);
    E2AResponse {
        response_id: Some(response_id.into()),
        request_id: Some(request_id.into()),
        sequence,
        timestamp: Some(ts.clone()),
        provenance: crate::types::E2AProvenance {
            source_protocol: "e2a".into(),
            converter: Some(converter.as_str().into()),
            converted_at: Some(ts),
            details,
        },
        channel: nonempty(channel_id),
        identity_origin: IdentityOrigin::Agent,
        ..Default::default()
    }
}

/// A unary [`AgentResponse`] as the final E2A frame: `e2a.complete` with `{"result": payload}`
/// when ok, else `e2a.error` with code `E2A.AGENT_ERROR`, the payload's `error` (or `message`)
/// as message and the payload as details.
///
/// ```
/// let resp = e2a::legacy::AgentResponse::ok("r1", "web", serde_json::json!({"a": 1}).as_object().unwrap().clone());
/// let frame = e2a::legacy::response_from_agent_response(&resp, "resp-1", 0, None);
/// assert_eq!(frame.response_kind, "e2a.complete");
/// assert!(frame.is_final);
/// assert_eq!(frame.body["result"]["a"], 1);
/// ```
pub fn response_from_agent_response(
    resp: &AgentResponse,
    response_id: &str,
    sequence: u64,
    timestamp: Option<String>,
) -> E2AResponse {
    let mut details = Map::new();
    details.insert("kind".into(), "legacy_agent_response".into());
    details.insert("ok".into(), resp.ok.into());
    let mut frame = legacy_frame(
        ConverterId::E2aLegacyResponseFromAgentResponse,
        details,
        &resp.request_id,
        &resp.channel_id,
        response_id,
        sequence,
        timestamp,
    );
    let payload = resp.payload.clone().unwrap_or_default();
    if resp.ok {
        frame.status = ResponseStatus::Succeeded;
        frame.response_kind = ResponseKind::E2aComplete;
        frame.body = body_map(json!({"result": payload}));
    } else {
        let message = match payload.get("error").or_else(|| payload.get("message")) {
            Some(v) => py_str(v),
            None => "Agent error".into(),
        };
        frame.status = ResponseStatus::Failed;
        frame.response_kind = ResponseKind::E2aError;
        frame.body = ErrorBody::new(ErrorCode::E2aAgentError.as_str(), message, payload).into_object();
    }
    frame.is_final = true;
    frame.metadata = resp.metadata.clone().unwrap_or_default();
    frame.agent_ref = resp.agent_ref.clone();
    frame
}

/// A streamed [`AgentResponseChunk`] as an E2A frame: the completion sentinel and other
/// complete chunks → final `e2a.complete`; a complete `chat.error` → final `e2a.error`;
/// `chat.delta` → `e2a.chunk` (`text`, or `reasoning` for `llm_reasoning`); anything else →
/// `e2a.chunk` with `delta_kind: custom`.
///
/// ```
/// let chunk = e2a::legacy::AgentResponseChunk::from_value(&serde_json::json!({
///     "request_id": "r", "channel_id": "web", "payload": {"event_type": "chat.delta", "content": "Hi"}})).unwrap();
/// let frame = e2a::legacy::response_from_agent_chunk(&chunk, "x", 1, true, None);
/// assert_eq!(frame.body["delta_kind"], "text");
/// assert_eq!(frame.body["delta"], "Hi");
/// ```
pub fn response_from_agent_chunk(
    chunk: &AgentResponseChunk,
    response_id: &str,
    sequence: u64,
    is_stream: bool,
    timestamp: Option<String>,
) -> E2AResponse {
    let pl = chunk.payload.clone().unwrap_or_default();
    let mut details = Map::new();
    details.insert("kind".into(), "legacy_agent_response_chunk".into());
    details.insert("is_complete".into(), chunk.is_complete.into());
    let mut frame = legacy_frame(
        ConverterId::E2aLegacyResponseFromAgentChunk,
        details,
        &chunk.request_id,
        &chunk.channel_id,
        response_id,
        sequence,
        timestamp,
    );
    let event_type = pl.get("event_type").cloned().unwrap_or(Value::Null);
    if chunk.is_complete {
        frame.is_final = true;
        let sentinel = pl.len() == 1 && pl.get("is_complete") == Some(&Value::Bool(true));
        if !sentinel && event_type.as_str() == Some("chat.error") {
            let message = match pl.get("error") {
                None => String::new(),
                Some(v) => py_str(v),
            };
            frame.status = ResponseStatus::Failed;
            frame.response_kind = ResponseKind::E2aError;
            frame.body = ErrorBody::new(ErrorCode::ChatError.as_str(), message, pl).into_object();
        } else {
            frame.status = ResponseStatus::Succeeded;
            frame.response_kind = ResponseKind::E2aComplete;
            frame.body = body_map(json!({"result": if sentinel { Map::new() } else { pl }}));
        }
    } else if event_type.as_str() == Some("chat.delta") {
        let reasoning = pl.get("source_chunk_type").and_then(Value::as_str) == Some("llm_reasoning");
        let mut b = Map::new();
        b.insert("delta_kind".into(), if reasoning { "reasoning" } else { "text" }.into());
        b.insert("delta".into(), pl.get("content").cloned().unwrap_or_else(|| "".into()));
        b.insert("event_type".into(), "chat.delta".into());
        b.insert(
            "source_chunk_type".into(),
            pl.get("source_chunk_type").cloned().unwrap_or(Value::Null),
        );
        for k in CHAT_DELTA_COPY_KEYS {
            if let Some(v) = pl.get(k).filter(|v| !v.is_null()) {
                b.insert(k.into(), v.clone());
            }
        }
        frame.response_kind = ResponseKind::E2aChunk;
        frame.body = b;
    } else {
        frame.response_kind = ResponseKind::E2aChunk;
        frame.body = body_map(json!({"delta_kind": "custom", "delta": pl, "event_type": event_type}));
    }
    frame.is_stream = is_stream;
    frame.agent_ref = chunk.agent_ref.clone();
    frame.metadata = chunk.metadata.clone().unwrap_or_default();
    frame
}
