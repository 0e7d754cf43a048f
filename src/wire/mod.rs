//! The agent-server ⇄ gateway WebSocket wire codec (the reference's `wire_codec.py`): legacy
//! agent records encoded as E2A frames, E2A frames (and deprecated legacy shapes) parsed back.

use crate::{ResponseKind, ResponseStatus};
use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::error::{Error, Result};
use crate::legacy::{self, AgentResponse, AgentResponseChunk, NullId};
use crate::types::{ConverterId, E2AResponse, ErrorCode, WireMetadataKey};

/// True when `data` is an E2A response frame: an object, `type` not `event`,
/// `protocol_version` exactly `"1.0"` and a non-blank string `response_kind`.
///
/// ```
/// use serde_json::json;
/// assert!(e2a::wire::is_e2a_response(&json!({"protocol_version": "1.0", "response_kind": "e2a.chunk"})));
/// assert!(!e2a::wire::is_e2a_response(&json!({"request_id": "r", "channel_id": "c", "ok": true})));
/// ```
pub fn is_e2a_response(data: &Value) -> bool {
    let Some(m) = data.as_object() else { return false };
    m.get("type").and_then(Value::as_str) != Some("event")
        && m.get("protocol_version").and_then(Value::as_str) == Some(crate::E2A_PROTOCOL_VERSION)
        && m.get("response_kind")
            .and_then(Value::as_str)
            .is_some_and(|k| !crate::pyrepr::is_blank(k))
}

/// What a JSON message is, for tools that take mixed logs (`e2a validate`, `convert`,
/// `migrate`): the one classifier of message shapes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MessageShape {
    /// An E2A response frame: it has a key only responses have (`response_kind`, `sequence`,
    /// `is_final`, …; the keys of the response reader that the envelope reader does not know).
    Response,
    /// A legacy agent-server `AgentResponse` record (it has `ok`).
    AgentResponse,
    /// A legacy agent-server `AgentResponseChunk` record (it has `is_complete`).
    AgentResponseChunk,
    /// A request: an E2A envelope or a legacy `AgentRequest` (the lenient envelope reader
    /// reads both).
    Request,
}

/// Classifies a message (see [`MessageShape`]). The response-only keys come from the generated
/// key tables, so a key added to the schema is classified without a change here.
///
/// ```
/// use e2a::wire::{classify, MessageShape};
/// use serde_json::json;
/// assert_eq!(classify(&json!({"sequence": 1})), MessageShape::Response);
/// assert_eq!(classify(&json!({"request_id": "r", "channel_id": "c", "ok": true})), MessageShape::AgentResponse);
/// assert_eq!(classify(&json!({"request_id": "r", "is_complete": false})), MessageShape::AgentResponseChunk);
/// assert_eq!(classify(&json!({"req_method": "chat.send"})), MessageShape::Request);
/// ```
pub fn classify(v: &Value) -> MessageShape {
    use std::sync::OnceLock;
    static RESPONSE_ONLY: OnceLock<Vec<&'static str>> = OnceLock::new();
    let response_only = RESPONSE_ONLY.get_or_init(|| {
        let envelope = crate::types::readers::E2A_ENVELOPE_KEYS;
        crate::types::readers::E2A_RESPONSE_KEYS
            .iter()
            .filter(|k| !envelope.contains(k))
            .copied()
            .collect()
    });
    let Some(m) = v.as_object() else {
        return MessageShape::Request;
    };
    if response_only.iter().any(|k| m.contains_key(*k)) {
        MessageShape::Response
    } else if m.contains_key(legacy::OK_KEY) {
        MessageShape::AgentResponse
    } else if m.contains_key(legacy::IS_COMPLETE_KEY) {
        MessageShape::AgentResponseChunk
    } else {
        MessageShape::Request
    }
}

/// Encodes a unary [`AgentResponse`] as its final E2A frame (canonical JSON object).
///
/// ```
/// let r = e2a::legacy::AgentResponse::ok("r1", "web", serde_json::Map::new());
/// let frame = e2a::wire::encode_agent_response(&r, "resp-1", 0);
/// assert_eq!(frame["response_kind"], "e2a.complete");
/// ```
pub fn encode_agent_response(resp: &AgentResponse, response_id: &str, sequence: u64) -> Value {
    legacy::response_from_agent_response(resp, response_id, sequence, None).to_value()
}

/// Encodes an [`AgentResponseChunk`] as an E2A stream frame (canonical JSON object).
///
/// ```
/// let c = e2a::legacy::AgentResponseChunk::from_value(&serde_json::json!({"request_id": "r", "channel_id": "c",
///     "payload": {"is_complete": true}, "is_complete": true})).unwrap();
/// let frame = e2a::wire::encode_agent_chunk(&c, "resp", 3, true);
/// assert_eq!((frame["is_final"].as_bool(), frame["body"]["result"].as_object().map(|m| m.len())), (Some(true), Some(0)));
/// ```
pub fn encode_agent_chunk(chunk: &AgentResponseChunk, response_id: &str, sequence: u64, is_stream: bool) -> Value {
    legacy::response_from_agent_chunk(chunk, response_id, sequence, is_stream, None).to_value()
}

/// A unary response whose payload is any serializable type. When the payload cannot be
/// serialized, the frame is the reference's fallback: a final `e2a.error`
/// (`E2A.WIRE_ENCODE_ERROR`) carrying what could be kept of the legacy record under
/// `metadata._e2a_wire_legacy_agent_response`, so nothing is lost silently.
///
/// ```
/// #[derive(serde::Serialize)]
/// struct Out { answer: u32 }
/// let frame = e2a::wire::encode_response_payload("r1", "web", true, &Out { answer: 42 }, None, "resp", 0);
/// assert_eq!(frame["body"]["result"]["answer"], 42);
/// ```
pub fn encode_response_payload<P: Serialize>(
    request_id: &str,
    channel_id: &str,
    ok: bool,
    payload: &P,
    metadata: Option<Map<String, Value>>,
    response_id: &str,
    sequence: u64,
) -> Value {
    match serde_json::to_value(payload) {
        Ok(Value::Object(p)) => {
            let resp = AgentResponse {
                request_id: request_id.into(),
                channel_id: channel_id.into(),
                ok,
                payload: Some(p),
                metadata,
                agent_ref: None,
            };
            encode_agent_response(&resp, response_id, sequence)
        }
        Ok(Value::Null) => {
            let resp = AgentResponse {
                request_id: request_id.into(),
                channel_id: channel_id.into(),
                ok,
                payload: None,
                metadata,
                agent_ref: None,
            };
            encode_agent_response(&resp, response_id, sequence)
        }
        Ok(_) => fallback_frame(
            request_id,
            channel_id,
            ok,
            metadata,
            "payload is not a JSON object",
            response_id,
            sequence,
        ),
        Err(e) => fallback_frame(
            request_id,
            channel_id,
            ok,
            metadata,
            &e.to_string(),
            response_id,
            sequence,
        ),
    }
}

fn fallback_frame(
    request_id: &str,
    channel_id: &str,
    ok: bool,
    metadata: Option<Map<String, Value>>,
    error: &str,
    response_id: &str,
    sequence: u64,
) -> Value {
    let blob = json!({"request_id": request_id, "channel_id": channel_id, "ok": ok, "payload": null,
        "metadata": metadata, "agent_ref": null});
    let mut frame = E2AResponse {
        response_id: Some(response_id.into()),
        request_id: Some(request_id.into()),
        sequence,
        is_final: true,
        status: ResponseStatus::Failed,
        response_kind: ResponseKind::E2aError,
        channel: Some(channel_id.to_string()).filter(|c| !c.is_empty()),
        ..Default::default()
    };
    frame.provenance.converter = Some(ConverterId::E2aWireEncodeAgentResponseFallback.as_str().into());
    frame.provenance.details = crate::response::body_map(json!({"error": error, "kind": "wire_encode_fallback"}));
    frame.body = crate::response::body_map(json!({"code": ErrorCode::E2aWireEncodeError.as_str(),
        "message": "Failed to encode AgentResponse as E2A; see metadata legacy blob",
        "details": {"error": error}}));
    frame.metadata = crate::response::body_map(json!({WireMetadataKey::E2aWireLegacyAgentResponse.as_str(): blob}));
    frame.ensure_timestamp();
    frame.to_value()
}

/// The frame a gateway answers when a request line is not valid JSON: final `e2a.error` with
/// code `E2A.INVALID_JSON`. `response_id` falls back to `request_id`, then `invalid-json`.
///
/// ```
/// let f = e2a::wire::encode_json_parse_error("", "", "bad json", "");
/// assert_eq!(f["response_id"], "invalid-json");
/// assert_eq!(f["body"]["code"], "E2A.INVALID_JSON");
/// ```
pub fn encode_json_parse_error(request_id: &str, channel_id: &str, message: &str, response_id: &str) -> Value {
    let rid = [response_id, request_id]
        .into_iter()
        .find(|s| !s.is_empty())
        .unwrap_or("invalid-json");
    let mut frame = E2AResponse {
        response_id: Some(rid.into()),
        request_id: Some(request_id.to_string()).filter(|s| !s.is_empty()),
        is_final: true,
        status: ResponseStatus::Failed,
        response_kind: ResponseKind::E2aError,
        channel: Some(channel_id.to_string()).filter(|s| !s.is_empty()),
        body: crate::response::body_map(
            json!({"code": ErrorCode::E2aInvalidJson.as_str(), "message": message, "details": {}}),
        ),
        ..Default::default()
    };
    frame.provenance.converter = Some(ConverterId::E2aWireEncodeJsonParseError.as_str().into());
    frame.provenance.details = crate::response::body_map(json!({"kind": "json_parse_error"}));
    frame.ensure_timestamp();
    frame.provenance.converted_at = frame.timestamp.clone();
    frame.to_value()
}

fn legacy_blob(resp: &E2AResponse, key: WireMetadataKey) -> Option<&Value> {
    resp.metadata.get(key.as_str()).filter(|v| v.is_object())
}

/// Parses a unary wire message into an [`AgentResponse`]: an E2A frame (a legacy blob in its
/// metadata wins), or the deprecated legacy shape (`request_id`, `channel_id`, `ok`).
/// Anything else — including stream frames — is an error.
///
/// ```
/// let r = e2a::wire::parse_unary(&serde_json::json!({"protocol_version": "1.0",
///     "response_kind": "e2a.complete", "status": "succeeded", "body": {"result": {"x": 1}}})).unwrap();
/// assert!(r.ok);
/// assert_eq!(r.payload.unwrap()["x"], 1);
/// ```
pub fn parse_unary(data: &Value) -> Result<AgentResponse> {
    if is_e2a_response(data) {
        let resp = E2AResponse::from_value(data)?;
        if let Some(blob) = legacy_blob(&resp, WireMetadataKey::E2aWireLegacyAgentResponse) {
            return from_blob(blob, WireMetadataKey::E2aWireLegacyAgentResponse, agent_response_record);
        }
        return legacy::response_to_agent_response(&resp);
    }
    let m = data.as_object().ok_or_else(|| Error::field("", "expected object"))?;
    if ["request_id", "channel_id", "ok"].iter().all(|k| m.contains_key(*k)) {
        return agent_response_record(&crate::fields::Fields::new(m, ""));
    }
    Err(unrecognized("parse_agent_server_wire_unary", m))
}

fn unrecognized(what: &str, m: &Map<String, Value>) -> Error {
    let keys: Vec<&str> = m.keys().take(32).map(String::as_str).collect();
    Error::Unsupported(format!("{what}: unrecognized wire shape keys={keys:?}"))
}

/// The legacy record kept under `metadata.<key>` of a frame, read with `read`.
fn from_blob<T>(
    blob: &Value,
    key: WireMetadataKey,
    read: impl FnOnce(&crate::fields::Fields<'_>) -> Result<T>,
) -> Result<T> {
    let base = format!("/metadata/{}", key.as_str());
    let m = blob
        .as_object()
        .ok_or_else(|| Error::field(base.as_str(), "expected object"))?;
    read(&crate::fields::Fields::new(m, &base))
}

/// An AgentResponse record off the wire (the deprecated unary shape, or the legacy blob of a
/// frame): the reference builds it without `agent_ref`.
fn agent_response_record(f: &crate::fields::Fields<'_>) -> Result<AgentResponse> {
    AgentResponse::read_record(f, NullId::PyStr, &["agent_ref"])
}

fn blob_chunk(f: &crate::fields::Fields<'_>) -> Result<AgentResponseChunk> {
    AgentResponseChunk::read_record(f, NullId::PyStr, &[])
}

/// Parses a stream wire message into an [`AgentResponseChunk`]: an E2A frame (a legacy chunk
/// blob in its metadata wins), or the deprecated legacy shape (`request_id`, `channel_id`,
/// `is_complete`, `payload`, no `ok`).
///
/// ```
/// let c = e2a::wire::parse_chunk(&serde_json::json!({"protocol_version": "1.0", "response_kind": "e2a.chunk",
///     "body": {"delta_kind": "reasoning", "delta": "hm"}})).unwrap();
/// assert_eq!(c.payload.unwrap()["source_chunk_type"], "llm_reasoning");
/// ```
pub fn parse_chunk(data: &Value) -> Result<AgentResponseChunk> {
    if is_e2a_response(data) {
        let resp = E2AResponse::from_value(data)?;
        if let Some(blob) = legacy_blob(&resp, WireMetadataKey::E2aWireLegacyAgentChunk) {
            return from_blob(blob, WireMetadataKey::E2aWireLegacyAgentChunk, blob_chunk);
        }
        return legacy::response_to_agent_chunk(&resp);
    }
    let m = data.as_object().ok_or_else(|| Error::field("", "expected object"))?;
    if ["request_id", "channel_id", "is_complete", "payload"]
        .iter()
        .all(|k| m.contains_key(*k))
        && !m.contains_key("ok")
    {
        // the deprecated stream shape: the reference keeps neither agent_ref nor metadata
        let f = crate::fields::Fields::new(m, "");
        return AgentResponseChunk::read_record(&f, NullId::PyStr, &["agent_ref", "metadata"]);
    }
    Err(unrecognized("parse_agent_server_wire_chunk", m))
}
