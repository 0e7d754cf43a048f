//! The legacy agent-server records ([`AgentResponse`], [`AgentResponseChunk`], `AgentRequest`)
//! and the gateway conversions between them and E2A (the reference's `gateway_normalize.py`).

use crate::types::{ChunkBody, DeltaKind};
use crate::{ResponseKind, ResponseStatus};
use serde_json::{json, Map, Value};

use crate::error::{Error, Result};
use crate::fields::{truthy, Fields};
use crate::pyrepr::py_str;
use crate::response::body_map;
use crate::types::ErrorBody;
pub use crate::types::{AgentResponse, AgentResponseChunk};
use crate::types::{ConverterId, E2AEnvelope, E2AResponse, ErrorCode, IdentityOrigin, InternalContextKey};

/// Size cap of a legacy request kept inside a fallback envelope (`MAX_LEGACY_AGENT_REQUEST_JSON_BYTES`).
pub const MAX_LEGACY_AGENT_REQUEST_JSON_BYTES: usize = 512_000;

/// Chunk payload keys copied from a legacy `chat.delta` into an `e2a.chunk` body and back.
pub const CHAT_DELTA_COPY_KEYS: [&str; 5] = ["rid", "role", "member_name", "team_name", "team_id"];

fn opt_obj(f: &Fields<'_>, k: &str) -> Result<Option<Map<String, Value>>> {
    Ok(f.opt_obj(k)?.cloned())
}

/// The key that marks a legacy `AgentResponse` record (from `schema/legacy.json`).
pub const OK_KEY: &str = "ok";
/// The key that marks a legacy `AgentResponseChunk` record (from `schema/legacy.json`).
pub const IS_COMPLETE_KEY: &str = "is_complete";

/// How an explicit null `request_id` / `channel_id` of a legacy record reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NullId {
    /// An error naming the key (records given to the `legacy` conversions).
    Error,
    /// The reference's `str(None)`, `"None"` (records parsed off the agent-server wire).
    PyStr,
}

/// `(request_id, channel_id)` of a legacy record: strings (`request_id` required, `channel_id`
/// defaulting to `""`); any other JSON is an error naming the key (DRIVER.md, deliberate
/// difference 4); an explicit null as `ids` says.
fn record_ids(f: &Fields<'_>, ids: NullId) -> Result<(String, String)> {
    let id = |key: &str| match f.map.get(key) {
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(Value::Null) if ids == NullId::PyStr => Ok(Some(py_str(&Value::Null))),
        Some(Value::Null) | None => Ok(None),
        Some(_) => Err(f.err(key, "string")),
    };
    let request_id = id("request_id")?.ok_or_else(|| f.err("request_id", "string"))?;
    Ok((request_id, id("channel_id")?.unwrap_or_default()))
}

/// The `ok` flag of an AgentResponse record: absent → true; an explicit null → false (the
/// reference's `bool(data.get("ok", True))`, and `if resp.ok` on a record built with
/// `ok=None`: a null flag is a failure, never a success); any other non-boolean is an error
/// naming the key (DRIVER.md, deliberate difference 1).
fn ok_flag(f: &Fields<'_>) -> Result<bool> {
    match f.map.get(OK_KEY) {
        None => Ok(true),
        Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(f.err(OK_KEY, "boolean")),
    }
}

impl AgentResponse {
    /// A successful response with `payload`.
    pub fn ok(request_id: impl Into<String>, channel_id: impl Into<String>, payload: Map<String, Value>) -> Self {
        AgentResponse {
            request_id: request_id.into(),
            channel_id: channel_id.into(),
            ok: true,
            payload: Some(payload),
            metadata: None,
            agent_ref: None,
        }
    }

    /// Reads a legacy AgentResponse object (`request_id` required; `channel_id` defaults to
    /// `""`, `ok` to true).
    pub fn from_value(v: &Value) -> Result<Self> {
        Self::from_value_at(v, "")
    }

    fn from_value_at(v: &Value, base: &str) -> Result<Self> {
        let m = v.as_object().ok_or_else(|| Error::field(base, "expected object"))?;
        Self::read_record(&Fields::new(m, base), NullId::Error, &[])
    }

    /// The one reader of an AgentResponse record (`legacy.*` inputs, the deprecated unary wire
    /// shape and the legacy blob of a frame); `ids` says how a null id reads; keys in `skip`
    /// are not read (the reference builds some records without them).
    pub(crate) fn read_record(f: &Fields<'_>, ids: NullId, skip: &[&str]) -> Result<Self> {
        let (request_id, channel_id) = record_ids(f, ids)?;
        let obj = |k: &str| if skip.contains(&k) { Ok(None) } else { opt_obj(f, k) };
        Ok(AgentResponse {
            request_id,
            channel_id,
            ok: ok_flag(f)?,
            payload: obj("payload")?,
            metadata: obj("metadata")?,
            agent_ref: obj("agent_ref")?,
        })
    }

    /// As a JSON value (`{request_id, channel_id, ok, payload, metadata, agent_ref}`).
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

impl AgentResponseChunk {
    /// Reads a legacy AgentResponseChunk object (`request_id` required; `channel_id` defaults
    /// to `""`, `is_complete` to false, `metadata` to `{}`).
    pub fn from_value(v: &Value) -> Result<Self> {
        let m = v.as_object().ok_or_else(|| Error::field("", "expected object"))?;
        Self::read_record(&Fields::new(m, ""), NullId::Error, &[])
    }

    /// The one reader of an AgentResponseChunk record (`legacy.*` inputs, the deprecated
    /// stream wire shape and the legacy blob of a frame); `ids` says how a null id reads; keys
    /// in `skip` are not read (`metadata` then reads as `{}`).
    pub(crate) fn read_record(f: &Fields<'_>, ids: NullId, skip: &[&str]) -> Result<Self> {
        let (request_id, channel_id) = record_ids(f, ids)?;
        let read = |k: &str| !skip.contains(&k);
        Ok(AgentResponseChunk {
            request_id,
            channel_id,
            payload: opt_obj(f, "payload")?,
            is_complete: f.bool_or("is_complete", false)?,
            agent_ref: if read("agent_ref") {
                opt_obj(f, "agent_ref")?
            } else {
                None
            },
            metadata: Some(if read("metadata") {
                f.obj("metadata")?
            } else {
                Map::new()
            }),
        })
    }

    /// As a JSON value (`{request_id, channel_id, payload, is_complete, agent_ref, metadata}`).
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

fn nonempty(s: &str) -> Option<String> {
    (!s.is_empty()).then(|| s.to_string())
}

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
        frame.body = body_map(ErrorBody::new(ErrorCode::E2aAgentError.as_str(), message, payload));
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
            frame.body = body_map(ErrorBody::new(ErrorCode::ChatError.as_str(), message, pl));
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

/// Fields of a legacy agent request handed to [`envelope_from_agent_fields`]. Serialized, they
/// are the legacy wire object the lenient reader takes (`req_method` as `method`, empty
/// metadata left out).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct AgentFields {
    /// Request id.
    pub request_id: String,
    /// Channel id (default `""`, kept as an empty channel).
    pub channel_id: String,
    /// Session id.
    pub session_id: Option<String>,
    /// Legacy request method.
    #[serde(rename = "method")]
    pub req_method: Option<String>,
    /// Params object.
    pub params: Map<String, Value>,
    /// Streaming flag.
    pub is_stream: bool,
    /// Epoch seconds or an ISO string (default 0 → `1970-01-01T00:00:00+00:00`).
    pub timestamp: Value,
    /// Legacy metadata (merged into `channel_context`).
    #[serde(skip_serializing_if = "no_metadata")]
    pub metadata: Option<Map<String, Value>>,
    /// User id.
    pub user_id: Option<String>,
}

impl AgentFields {
    /// Reads the DRIVER.md input `{request_id, channel_id?, session_id?, req_method?, params?,
    /// is_stream?, timestamp?, metadata?, user_id?}`.
    pub fn from_value(v: &Value) -> Result<Self> {
        let m = v.as_object().ok_or_else(|| Error::field("", "expected object"))?;
        let f = Fields::new(m, "");
        Ok(AgentFields {
            request_id: f.opt_str("request_id")?.ok_or_else(|| f.err("request_id", "string"))?,
            channel_id: f.str_or("channel_id", "")?,
            session_id: f.opt_str("session_id")?,
            req_method: f.opt_str("req_method")?,
            params: f.obj("params")?,
            is_stream: f.bool_or("is_stream", false)?,
            timestamp: f.get("timestamp").cloned().unwrap_or(Value::from(0.0)),
            metadata: opt_obj(&f, "metadata")?,
            user_id: f.opt_str("user_id")?,
        })
    }
}

/// An envelope from legacy agent-request fields (the reference's `e2a_from_agent_fields`),
/// read through the lenient reader so every legacy rule applies.
///
/// ```
/// let f = e2a::legacy::AgentFields::from_value(&serde_json::json!({"request_id": "hb-1"})).unwrap();
/// let env = e2a::legacy::envelope_from_agent_fields(&f).unwrap();
/// assert_eq!(env.channel.as_deref(), Some(""));
/// assert_eq!(env.timestamp.as_deref(), Some("1970-01-01T00:00:00+00:00"));
/// ```
pub fn envelope_from_agent_fields(fields: &AgentFields) -> Result<E2AEnvelope> {
    let wire = serde_json::to_value(fields).map_err(|e| Error::Unsupported(e.to_string()))?;
    E2AEnvelope::from_value(&wire)
}

fn no_metadata(m: &Option<Map<String, Value>>) -> bool {
    m.as_ref().is_none_or(Map::is_empty)
}

/// Size of Python's `json.dumps(value, ensure_ascii=False)` in UTF-8 bytes (`", "` and `": "`
/// separators).
fn python_json_len(v: &Value) -> usize {
    match v {
        Value::Array(a) => 2 + a.iter().map(python_json_len).sum::<usize>() + 2 * a.len().saturating_sub(1),
        Value::Object(m) => {
            2 + m
                .iter()
                .map(|(k, x)| python_json_len(&Value::String(k.clone())) + 2 + python_json_len(x))
                .sum::<usize>()
                + 2 * m.len().saturating_sub(1)
        }
        other => other.to_string().len(),
    }
}

/// The envelope a gateway forwards when normalization failed: the legacy request is kept under
/// `channel_context._jiuwenswarm.legacy_agent_request` (its `params` replaced by an error marker
/// when its JSON exceeds [`MAX_LEGACY_AGENT_REQUEST_JSON_BYTES`]), with `normalize_failed: true`.
/// A request over the default [`crate::Limits`] is an error, as for every reader.
///
/// ```
/// let legacy = serde_json::json!({"request_id": "r9", "channel_id": "web", "params": {"a": 1}});
/// let env = e2a::legacy::fallback_envelope(&legacy).unwrap();
/// assert_eq!(env.channel_context["_jiuwenswarm"]["normalize_failed"], true);
/// assert_eq!(env.request_id.as_deref(), Some("r9"));
/// ```
pub fn fallback_envelope(legacy: &Value) -> Result<E2AEnvelope> {
    crate::Limits::default().check_value(legacy)?;
    let m = legacy.as_object().ok_or_else(|| Error::field("", "expected object"))?;
    let f = Fields::new(m, "");
    let text = |k: &str| match f.get(k) {
        Some(v) if truthy(v) => py_str(v),
        _ => String::new(),
    };
    let mut kept = legacy.clone();
    if python_json_len(legacy) > MAX_LEGACY_AGENT_REQUEST_JSON_BYTES {
        if let Some(k) = kept.as_object_mut() {
            k.insert(
                "params".into(),
                json!({"_e2a_fallback_error": "legacy payload too large"}),
            );
        }
    }
    let mut internal = Map::new();
    internal.insert(InternalContextKey::NormalizeFailed.as_str().into(), true.into());
    internal.insert(InternalContextKey::LegacyAgentRequest.as_str().into(), kept);
    let mut ctx = Map::new();
    ctx.insert(InternalContextKey::Jiuwenswarm.as_str().into(), Value::Object(internal));
    Ok(E2AEnvelope {
        provenance: crate::E2AProvenance::default(),
        request_id: nonempty(&text("request_id")),
        channel: nonempty(&text("channel_id")),
        session_id: f.opt_str("session_id")?,
        user_id: f.opt_str("user_id")?,
        is_stream: f.bool_or("is_stream", false)?,
        channel_context: ctx,
        ..Default::default()
    })
}
