//! Legacy agent requests as envelopes: [`AgentFields`] read through the lenient reader, and the
//! fallback envelope a gateway forwards when normalization failed.

use serde_json::{json, Map, Value};

use super::{nonempty, opt_obj, MAX_LEGACY_AGENT_REQUEST_JSON_BYTES};
use crate::error::{Error, Result};
use crate::fields::{truthy, Fields};
use crate::pyrepr::py_str;
use crate::types::{E2AEnvelope, InternalContextKey};

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

/// Whether there is no legacy metadata (none, or empty): it is then left out.
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
