//! The legacy agent-server records ([`AgentResponse`], [`AgentResponseChunk`], `AgentRequest`)
//! and the gateway conversions between them and E2A (the reference's `gateway_normalize.py`).

use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::fields::Fields;
use crate::pyrepr::py_str;
pub use crate::types::{AgentResponse, AgentResponseChunk};

mod requests;
mod to_frames;
mod to_records;

pub use requests::{envelope_from_agent_fields, fallback_envelope, AgentFields};
pub use to_frames::{response_from_agent_chunk, response_from_agent_response};
pub use to_records::{response_to_agent_chunk, response_to_agent_response};

/// Size cap of a legacy request kept inside a fallback envelope (`MAX_LEGACY_AGENT_REQUEST_JSON_BYTES`).
pub const MAX_LEGACY_AGENT_REQUEST_JSON_BYTES: usize = 512_000;

/// Chunk payload keys copied from a legacy `chat.delta` into an `e2a.chunk` body and back.
pub const CHAT_DELTA_COPY_KEYS: [&str; 5] = ["rid", "role", "member_name", "team_name", "team_id"];

/// The object at `k`, if any (an error when it is another JSON type).
pub(crate) fn opt_obj(f: &Fields<'_>, k: &str) -> Result<Option<Map<String, Value>>> {
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

/// `s` unless it is empty.
pub(crate) fn nonempty(s: &str) -> Option<String> {
    (!s.is_empty()).then(|| s.to_string())
}
