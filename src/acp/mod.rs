//! ACP (Agent Client Protocol, JSON-RPC 2.0 over stdio) ⇄ E2A.
//!
//! Ingress: [`envelope_from_jsonrpc`]. Egress: [`envelope_to_jsonrpc_call`] (with
//! [`merge_params_to_prompt`]) and [`response_to_jsonrpc_response`]. Bridge helpers for ACP
//! agents live in the submodules: prompt blocks, tool-call and text-chunk session updates, and
//! the `session/new` / `session/list` / `session/prompt` results.

use crate::ResponseKind;
use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::error::{Error, Result};
use crate::fields::{rpc_id_of, Fields};
use crate::types::{ConverterId, E2AEnvelope, E2AResponse, IdentityOrigin, JsonRpcId};

pub mod inbound;
pub mod prompt_blocks;
pub mod results;
pub mod session_updates;
pub mod stream;
pub mod tool_updates;

pub use prompt_blocks::{parse_prompt_blocks, resource_uri_to_path, ParsedPrompt};
pub use results::{prompt_result, session_list_result, session_new_result};

/// An incoming ACP JSON-RPC request, as handed to [`envelope_from_jsonrpc`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JsonRpcIngress {
    /// JSON-RPC method (e.g. `session/prompt`).
    pub method: String,
    /// JSON-RPC params (absent = `{}`).
    pub params: Option<Map<String, Value>>,
    /// JSON-RPC id (absent for notifications).
    pub jsonrpc_id: Option<JsonRpcId>,
    /// Session id known to the caller; when empty, `params.session_id` is used.
    pub session_id: Option<String>,
    /// Ingress channel name.
    pub channel: Option<String>,
    /// Who originated the request (default `user`).
    pub identity_origin: Option<IdentityOrigin>,
    /// Converter id to record (default: this SDK's ACP converter id).
    pub converter: Option<String>,
    /// Extra provenance details, merged over the defaults.
    pub extra_provenance_details: Option<Map<String, Value>>,
}

impl JsonRpcIngress {
    /// A request for `method` with `params`.
    pub fn new(method: impl Into<String>, params: Map<String, Value>) -> Self {
        JsonRpcIngress {
            method: method.into(),
            params: Some(params),
            ..Default::default()
        }
    }

    /// Reads the DRIVER.md input object
    /// `{method, params?, jsonrpc_id?, session_id?, channel?, identity_origin?, converter?, extra_provenance_details?}`.
    pub fn from_value(v: &Value) -> Result<Self> {
        let m = v.as_object().ok_or_else(|| Error::field("", "expected object"))?;
        let f = Fields::new(m, "");
        Ok(JsonRpcIngress {
            method: f.opt_str("method")?.ok_or_else(|| f.err("method", "string"))?,
            params: f.opt_obj("params")?.cloned(),
            jsonrpc_id: f.rpc_id("jsonrpc_id")?,
            session_id: f.opt_str("session_id")?,
            channel: f.opt_str("channel")?,
            identity_origin: origin_arg(&f)?,
            converter: f.opt_str("converter")?,
            extra_provenance_details: f.opt_obj("extra_provenance_details")?.cloned(),
        })
    }
}

/// An `identity_origin` argument: one of the four lowercase values.
pub(crate) fn origin_arg(f: &Fields<'_>) -> Result<Option<IdentityOrigin>> {
    match f.opt_str_ref("identity_origin")? {
        None => Ok(None),
        Some(s) => s.parse().map(Some).map_err(|_| f.err("identity_origin", "origin")),
    }
}

/// Normalizes an ACP JSON-RPC request into an envelope (provenance `acp`).
///
/// `session_id` comes from the argument when non-empty, else from the snake_case
/// `params.session_id` when it is a string (ACP's camelCase `sessionId` is not read, as in the
/// reference).
///
/// ```
/// use e2a::acp::{envelope_from_jsonrpc, JsonRpcIngress};
/// let params = serde_json::json!({"session_id": "s1", "prompt": [{"type": "text", "text": "hi"}]});
/// let mut req = JsonRpcIngress::new("session/prompt", params.as_object().unwrap().clone());
/// req.jsonrpc_id = Some(7.into());
/// let env = envelope_from_jsonrpc(&req);
/// assert_eq!(env.session_id.as_deref(), Some("s1"));
/// assert_eq!(env.provenance.source_protocol, "acp");
/// assert_eq!(env.provenance.details["jsonrpc_id"], 7);
/// ```
pub fn envelope_from_jsonrpc(req: &JsonRpcIngress) -> E2AEnvelope {
    let params = req.params.clone().unwrap_or_default();
    let session_id = match req.session_id.as_deref().filter(|s| !s.is_empty()) {
        Some(s) => Some(s.to_string()),
        None => params.get("session_id").and_then(Value::as_str).map(str::to_string),
    };
    let mut details = Map::new();
    details.insert("kind".into(), "jsonrpc_request".into());
    details.insert("jsonrpc_method".into(), req.method.clone().into());
    if let Some(id) = &req.jsonrpc_id {
        details.insert("jsonrpc_id".into(), rpc_id_value(id));
    }
    E2AEnvelope {
        provenance: crate::provenance::converted(
            "acp",
            req.converter.clone(),
            ConverterId::E2aAcpEnvelopeFromJsonrpc,
            details,
            req.extra_provenance_details.as_ref(),
        ),
        jsonrpc_id: req.jsonrpc_id.clone(),
        method: Some(req.method.clone()),
        params,
        session_id,
        channel: req.channel.clone(),
        identity_origin: req.identity_origin.unwrap_or(IdentityOrigin::User),
        ..Default::default()
    }
}

/// A JSON-RPC id as JSON.
pub(crate) fn rpc_id_value(id: &JsonRpcId) -> Value {
    match id {
        JsonRpcId::Integer(i) => (*i).into(),
        JsonRpcId::String(s) => s.clone().into(),
    }
}

/// The `params` of the ACP call for an envelope (the reference's `merge_params_to_acp_prompt`).
///
/// For `session/prompt` without a `prompt` key: `content_blocks` (non-empty list) or the first
/// truthy of `text` / `content` / `query` (when it is a non-empty string) becomes `prompt`; then
/// `session_id` is added when absent and `acp_meta` is merged into `_meta`. When `prompt`
/// already exists the params are returned unchanged.
///
/// Errors when `acp_meta` must be merged into an existing `params._meta` that is not an object.
///
/// ```
/// use e2a::E2AEnvelope;
/// let mut env = E2AEnvelope::new("session/prompt", serde_json::json!({"text": "hi"})).with_session_id("s");
/// env.acp_meta.insert("m".into(), 1.into());
/// let p = e2a::acp::merge_params_to_prompt(&env).unwrap();
/// assert_eq!(serde_json::Value::Object(p), serde_json::json!({
///     "text": "hi", "prompt": [{"type": "text", "text": "hi"}], "session_id": "s", "_meta": {"m": 1}}));
/// ```
pub fn merge_params_to_prompt(env: &E2AEnvelope) -> Result<Map<String, Value>> {
    let mut p = env.params.clone();
    if env.method.as_deref() != Some("session/prompt") || p.contains_key("prompt") {
        return Ok(p);
    }
    let blocks: Vec<Value> = match p.get("content_blocks") {
        Some(Value::Array(a)) if !a.is_empty() => a.clone(),
        _ => {
            let first = ["text", "content", "query"]
                .iter()
                .filter_map(|k| p.get(*k))
                .find(|v| crate::fields::truthy(v));
            match first {
                Some(Value::String(s)) => vec![json!({"type": "text", "text": s})],
                _ => Vec::new(),
            }
        }
    };
    if !blocks.is_empty() {
        p.insert("prompt".into(), Value::Array(blocks));
    }
    if let Some(sid) = env.session_id.as_deref().filter(|s| !s.is_empty()) {
        p.entry("session_id").or_insert_with(|| sid.into());
    }
    if !env.acp_meta.is_empty() {
        let meta = p.entry("_meta").or_insert_with(|| Value::Object(Map::new()));
        let meta = meta
            .as_object_mut()
            .ok_or_else(|| Error::field("/params/_meta", "expected object"))?;
        meta.extend(env.acp_meta.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    Ok(p)
}

/// An outgoing JSON-RPC 2.0 call (`id` is emitted as null for notifications, never omitted).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JsonRpcCall {
    /// Always `"2.0"`.
    pub jsonrpc: String,
    /// Request id.
    pub id: Option<JsonRpcId>,
    /// Method name.
    pub method: Option<String>,
    /// Params object.
    pub params: Map<String, Value>,
}

impl JsonRpcCall {
    /// As a JSON value.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// The ACP JSON-RPC call for an envelope: `method` (or `ext_method` when `method` is `ext`),
/// params via [`merge_params_to_prompt`] for `session/prompt`.
///
/// ```
/// let mut env = e2a::E2AEnvelope::new("ext", serde_json::json!({"a": 1})).with_jsonrpc_id(3);
/// env.ext_method = Some("_zed/ping".into());
/// let call = e2a::acp::envelope_to_jsonrpc_call(&env).unwrap();
/// assert_eq!(call.to_value(), serde_json::json!({"jsonrpc": "2.0", "id": 3, "method": "_zed/ping", "params": {"a": 1}}));
/// ```
pub fn envelope_to_jsonrpc_call(env: &E2AEnvelope) -> Result<JsonRpcCall> {
    let method = match (env.method.as_deref(), env.ext_method.as_deref()) {
        (Some("ext"), Some(ext)) if !ext.is_empty() => Some(ext.to_string()),
        (m, _) => m.map(str::to_string),
    };
    Ok(JsonRpcCall {
        jsonrpc: "2.0".into(),
        id: env.jsonrpc_id.clone(),
        method,
        params: merge_params_to_prompt(env)?,
    })
}

/// The ACP JSON-RPC response for a response frame, or `None` when the frame has none.
///
/// A ready `projections.acp` JSON-RPC response wins (its `id` defaulted to `jsonrpc_id` when
/// absent). Otherwise `acp.prompt_result` → `result`, `acp.jsonrpc_error` → `error` (verbatim),
/// `e2a.error` → an error with the integer code (else -32603) and `data` carrying `details`,
/// `external` and the original non-integer code as `e2a_code`. `status` is not consulted.
///
/// ```
/// let r = e2a::E2AResponse::from_value(&serde_json::json!({
///     "response_kind": "e2a.error", "jsonrpc_id": 1, "body": {"code": "E2A.X", "message": "boom"}})).unwrap();
/// let out = e2a::acp::response_to_jsonrpc_response(&r).unwrap();
/// assert_eq!(serde_json::Value::Object(out), serde_json::json!({"jsonrpc": "2.0", "id": 1,
///     "error": {"code": -32603, "message": "boom", "data": {"e2a_code": "E2A.X"}}}));
/// ```
pub fn response_to_jsonrpc_response(resp: &E2AResponse) -> Option<Map<String, Value>> {
    if let Some(Value::Object(proj)) = resp.projections.get("acp") {
        if proj.get("jsonrpc").and_then(Value::as_str) == Some("2.0")
            && (proj.contains_key("result") || proj.contains_key("error"))
        {
            let mut out = proj.clone();
            if !out.contains_key("id") {
                out.insert(
                    "id".into(),
                    resp.jsonrpc_id.as_ref().map(rpc_id_value).unwrap_or(Value::Null),
                );
            }
            return Some(out);
        }
    }
    let id = resp.jsonrpc_id.as_ref().map(rpc_id_value).unwrap_or(Value::Null);
    let body = Value::Object(resp.body.clone());
    let payload = match &resp.response_kind {
        ResponseKind::AcpPromptResult => ("result", body),
        ResponseKind::AcpJsonrpcError => ("error", body),
        ResponseKind::E2aError => ("error", e2a_error_to_jsonrpc(&resp.body)),
        _ => return None,
    };
    let mut out = Map::new();
    out.insert("jsonrpc".into(), "2.0".into());
    out.insert("id".into(), id);
    out.insert(payload.0.into(), payload.1);
    Some(out)
}

/// An `e2a.error` body as a JSON-RPC error object.
fn e2a_error_to_jsonrpc(body: &Map<String, Value>) -> Value {
    let code = body.get("code").unwrap_or(&Value::Null);
    let int_code = code.as_i64().filter(|_| code.is_i64() || code.is_u64());
    let message = match body.get("message") {
        Some(v) if crate::fields::truthy(v) => crate::pyrepr::py_str(v),
        _ => String::new(),
    };
    let mut err = Map::new();
    err.insert("code".into(), int_code.unwrap_or(-32603).into());
    err.insert("message".into(), message.into());
    let mut data = Map::new();
    for k in ["details", "external"] {
        if let Some(v) = body.get(k).filter(|v| !v.is_null()) {
            data.insert(k.into(), v.clone());
        }
    }
    if int_code.is_none() && !code.is_null() {
        data.insert("e2a_code".into(), code.clone());
    }
    if !data.is_empty() {
        err.insert("data".into(), Value::Object(data));
    }
    Value::Object(err)
}

/// Reads a JSON-RPC id from any JSON value (string or integer).
/// ```
/// use e2a::JsonRpcId;
/// assert_eq!(e2a::acp::jsonrpc_id_from_value(&serde_json::json!(7)), Some(JsonRpcId::Integer(7)));
/// assert_eq!(e2a::acp::jsonrpc_id_from_value(&serde_json::json!(1.5)), None);
/// ```
pub fn jsonrpc_id_from_value(v: &Value) -> Option<JsonRpcId> {
    rpc_id_of(v)
}
