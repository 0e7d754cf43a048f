//! A2A 1.0 JSON-RPC requests → E2A, with 0.3 method names and shapes accepted and normalized
//! to the 1.0 model (`message/send` → `SendMessage`, `kind`-tagged parts → 1.0 parts,
//! lowercase roles and states → `ROLE_*` / `TASK_STATE_*`).

use serde_json::{json, Map, Value};

use crate::error::{Error, Result};
use crate::fields::{member, member_mut, rpc_id_of, Fields};
use crate::types::{A2aOperation, E2AEnvelope, E2AProvenance};

/// HTTP-level A2A facts that travel with a request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct A2aHeaders {
    /// The `A2A-Version` header (absent means 0.3).
    pub version: Option<String>,
    /// The `A2A-Extensions` header values (extension URIs).
    pub extensions: Vec<String>,
}

/// The 0.3 JSON-RPC method names of the 1.0 operations.
pub(crate) const V0_3_METHODS: [(&str, A2aOperation); 11] = [
    ("message/send", A2aOperation::SendMessage),
    ("message/stream", A2aOperation::SendStreamingMessage),
    ("tasks/get", A2aOperation::GetTask),
    ("tasks/cancel", A2aOperation::CancelTask),
    ("tasks/list", A2aOperation::ListTasks),
    ("tasks/resubscribe", A2aOperation::SubscribeToTask),
    (
        "tasks/pushNotificationConfig/set",
        A2aOperation::CreateTaskPushNotificationConfig,
    ),
    (
        "tasks/pushNotificationConfig/get",
        A2aOperation::GetTaskPushNotificationConfig,
    ),
    (
        "tasks/pushNotificationConfig/list",
        A2aOperation::ListTaskPushNotificationConfigs,
    ),
    (
        "tasks/pushNotificationConfig/delete",
        A2aOperation::DeleteTaskPushNotificationConfig,
    ),
    ("agent/getAuthenticatedExtendedCard", A2aOperation::GetExtendedAgentCard),
];

/// The A2A 1.0 operation of a JSON-RPC method name (1.0 or 0.3 spelling).
///
/// ```
/// use e2a::types::A2aOperation;
/// assert_eq!(e2a::a2a::jsonrpc::operation("message/stream"), Some(A2aOperation::SendStreamingMessage));
/// assert_eq!(e2a::a2a::jsonrpc::operation("GetTask"), Some(A2aOperation::GetTask));
/// assert_eq!(e2a::a2a::jsonrpc::operation("tasks/send"), None);
/// ```
pub fn operation(method: &str) -> Option<A2aOperation> {
    if let Ok(op) = method.parse() {
        return Some(op);
    }
    // the 0.3 names
    V0_3_METHODS.iter().find(|(name, _)| *name == method).map(|(_, op)| *op)
}

/// A 0.3 or 1.0 `Part` as a 1.0 part (`text` / `raw` / `url` / `data`, `mediaType`, `filename`).
/// ```
/// let p = e2a::a2a::jsonrpc::normalize_part(&serde_json::json!({"kind": "file", "file": {"uri": "https://x/a.png", "mimeType": "image/png"}}));
/// assert_eq!(p, serde_json::json!({"url": "https://x/a.png", "mediaType": "image/png"}));
/// ```
pub fn normalize_part(part: &Value) -> Value {
    let Some(p) = part.as_object() else { return part.clone() };
    let mut out = Map::new();
    match p.get("kind").and_then(Value::as_str) {
        Some("text") => {
            out.insert("text".into(), p.get("text").cloned().unwrap_or_else(|| "".into()));
        }
        Some("file") => {
            let f = p.get("file").and_then(Value::as_object).cloned().unwrap_or_default();
            if let Some(u) = f.get("uri") {
                out.insert("url".into(), u.clone());
            }
            if let Some(b) = f.get("bytes") {
                out.insert("raw".into(), b.clone());
            }
            if let Some(m) = f.get("mimeType") {
                out.insert("mediaType".into(), m.clone());
            }
            if let Some(n) = f.get("name") {
                out.insert("filename".into(), n.clone());
            }
        }
        Some("data") => {
            out.insert("data".into(), p.get("data").cloned().unwrap_or(Value::Null));
        }
        _ => {
            for (k, v) in p {
                let k = match k.as_str() {
                    "mimeType" | "media_type" => "mediaType",
                    "name" => "filename",
                    other => other,
                };
                out.insert(k.into(), v.clone());
            }
            return Value::Object(out);
        }
    }
    if let Some(m) = p.get("metadata") {
        out.insert("metadata".into(), m.clone());
    }
    Value::Object(out)
}

/// A 0.3 or 1.0 `Message` as a 1.0 message (parts normalized, role `ROLE_USER`/`ROLE_AGENT`,
/// the 0.3 `kind` dropped).
/// ```
/// let m = e2a::a2a::jsonrpc::normalize_message(&serde_json::json!({"kind": "message", "role": "agent", "parts": [{"kind": "text", "text": "x"}]}));
/// assert_eq!(m, serde_json::json!({"role": "ROLE_AGENT", "parts": [{"text": "x"}]}));
/// ```
pub fn normalize_message(msg: &Value) -> Value {
    let Some(m) = msg.as_object() else { return msg.clone() };
    let mut out = m.clone();
    out.remove("kind");
    if let Some(role) = m.get("role").and_then(Value::as_str) {
        let r = match role {
            "user" => "ROLE_USER",
            "agent" => "ROLE_AGENT",
            other => other,
        };
        out.insert("role".into(), r.into());
    }
    if let Some(Value::Array(parts)) = m.get("parts") {
        out.insert("parts".into(), Value::Array(parts.iter().map(normalize_part).collect()));
    }
    Value::Object(out)
}

/// A 0.3 task state (`input-required`) or a 1.0 one as the 1.0 enum name.
/// ```
/// assert_eq!(e2a::a2a::jsonrpc::normalize_task_state("input-required"), "TASK_STATE_INPUT_REQUIRED");
/// ```
pub fn normalize_task_state(state: &str) -> String {
    if state.starts_with("TASK_STATE_") {
        return state.into();
    }
    format!("TASK_STATE_{}", state.replace('-', "_").to_uppercase())
}

fn normalize_configuration(c: &Map<String, Value>) -> Map<String, Value> {
    let mut out = c.clone();
    if let Some(b) = out.remove("blocking").and_then(|b| b.as_bool()) {
        out.entry("returnImmediately").or_insert(Value::Bool(!b));
    }
    if let Some(p) = out.remove("pushNotificationConfig") {
        out.entry("taskPushNotificationConfig").or_insert(p);
    }
    out
}

/// [`normalize_message`] of a message owned: a 1.0 message (no `kind`, `ROLE_*` roles, 1.0
/// parts) comes back as it went, without a copy.
fn normalize_message_owned(msg: Value) -> Value {
    let Value::Object(mut m) = msg else { return msg };
    // (members looked up by reading them: a message has a handful)
    if member(&m, "kind").is_some() {
        m.remove("kind");
    }
    if let Some(Value::String(role)) = member_mut(&mut m, "role") {
        match role.as_str() {
            "user" => *role = "ROLE_USER".into(),
            "agent" => *role = "ROLE_AGENT".into(),
            _ => {}
        }
    }
    if let Some(Value::Array(parts)) = member_mut(&mut m, "parts") {
        for p in parts.iter_mut() {
            let is_1_0 = p.as_object().is_some_and(|p| {
                !p.keys()
                    .any(|k| matches!(k.as_str(), "kind" | "mimeType" | "media_type" | "name"))
            });
            if !is_1_0 {
                *p = normalize_part(p);
            }
        }
    }
    Value::Object(m)
}

/// The text of a message: its text parts joined by newlines.
/// ```
/// let m = serde_json::json!({"parts": [{"text": "a"}, {"data": {}}, {"text": "b"}]});
/// assert_eq!(e2a::a2a::jsonrpc::message_text(&m), "a\nb");
/// ```
pub fn message_text(msg: &Value) -> String {
    let mut text = String::new();
    let parts = msg
        .as_object()
        .and_then(|m| member(m, "parts"))
        .and_then(Value::as_array);
    let texts = parts
        .into_iter()
        .flatten()
        .filter_map(|p| p.as_object().and_then(|p| member(p, "text")).and_then(Value::as_str));
    for (i, t) in texts.enumerate() {
        if i > 0 {
            text.push('\n');
        }
        text.push_str(t);
    }
    text
}

/// Normalizes an A2A JSON-RPC request (1.0 `SendMessage`, `SendStreamingMessage`, `GetTask`,
/// `CancelTask`, …, or their 0.3 names) into an envelope.
///
/// `SendMessage`/`SendStreamingMessage` become `session/prompt` with `params.message` (1.0
/// shape), `params.configuration`, `params.text` (the text parts), `expected_output_modes`,
/// `a2a_metadata`, the message's `messageId`/`taskId`/`contextId`, and `is_stream` for the
/// streaming method. Other operations keep their 1.0 name as `method` with `task_id` from
/// `params.id`. Provenance records the operation, the `A2A-Version` (default `0.3`) and the
/// requested extensions.
///
/// ```
/// use e2a::a2a::jsonrpc::{envelope_from_request, A2aHeaders};
/// let req = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "message/stream", "params": {
///     "message": {"kind": "message", "messageId": "m1", "role": "user", "parts": [{"kind": "text", "text": "hi"}]}}});
/// let env = envelope_from_request(&req, &A2aHeaders::default()).unwrap();
/// assert!(env.is_stream);
/// assert_eq!(env.params["message"]["role"], "ROLE_USER");
/// assert_eq!(env.params["message"]["parts"][0], serde_json::json!({"text": "hi"}));
/// assert_eq!(env.provenance.details["a2a_version"], "0.3");
/// ```
pub fn envelope_from_request(req: &Value, headers: &A2aHeaders) -> Result<E2AEnvelope> {
    let m = req.as_object().ok_or_else(|| Error::field("", "expected object"))?;
    let f = Fields::new(m, "");
    let method = f.opt_str_ref("method")?.ok_or_else(|| f.err("method", "string"))?;
    envelope_from_call(method, m.get("id"), f.obj("params")?, headers)
}

/// [`envelope_from_request`] for a request already taken apart: its `method`, `id` and
/// `params` (moved in, not copied; errors point into `/params` as for the whole request).
///
/// ```
/// use e2a::a2a::jsonrpc::{envelope_from_call, A2aHeaders};
/// let params = serde_json::json!({"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}});
/// let env = envelope_from_call("SendMessage", Some(&1.into()), params.as_object().cloned().unwrap(), &A2aHeaders::default()).unwrap();
/// assert_eq!(env.params["text"], "hi");
/// assert_eq!(env.message_id.as_deref(), Some("m1"));
/// ```
pub fn envelope_from_call(
    method: &str,
    id: Option<&Value>,
    mut params: Map<String, Value>,
    headers: &A2aHeaders,
) -> Result<E2AEnvelope> {
    let op = operation(method).ok_or_else(|| Error::field("/method", "not an A2A method"))?;
    let jsonrpc_id = match id {
        None | Some(Value::Null) => None,
        Some(v) => Some(rpc_id_of(v).ok_or_else(|| Error::field("/id", "expected rpcid"))?),
    };
    let mut details = Map::with_capacity(5);
    details.insert("kind".into(), "a2a_jsonrpc_request".into());
    details.insert("jsonrpc_method".into(), method.into());
    details.insert("abstract_operation".into(), op.as_str().into());
    details.insert(
        "a2a_version".into(),
        headers.version.clone().unwrap_or_else(|| "0.3".into()).into(),
    );
    if !headers.extensions.is_empty() {
        details.insert("a2a_extensions".into(), json!(headers.extensions));
    }
    let mut env = match op {
        A2aOperation::SendMessage | A2aOperation::SendStreamingMessage => {
            let message = match params.remove("message") {
                Some(m @ Value::Object(_)) => normalize_message_owned(m),
                _ => return Err(Error::field("/params/message", "expected object")),
            };
            let (task_id, context_id, message_id) = {
                let mf = message.as_object().map(|m| Fields::new(m, "/params/message"));
                let opt = |k: &str| mf.as_ref().map_or(Ok(None), |f| f.opt_str(k));
                (opt("taskId")?, opt("contextId")?, opt("messageId")?)
            };
            let pf = Fields::new(&params, "/params");
            let ingress = super::SendMessageIngress {
                task_id,
                context_id,
                message_body: Value::Null,
                metadata: pf.opt_obj("metadata")?.cloned(),
                configuration: pf.opt_obj("configuration")?.map(normalize_configuration),
                ..Default::default()
            };
            // (its provenance is the request's, written below)
            let mut env = super::send_message_envelope(&ingress)?;
            env.message_id = message_id;
            let text = message_text(&message);
            if !text.is_empty() {
                env.params.insert("text".into(), text.into());
            }
            env.params.insert("message".into(), message);
            env.is_stream = op == A2aOperation::SendStreamingMessage;
            env
        }
        _ => {
            let pf = Fields::new(&params, "/params");
            E2AEnvelope {
                method: Some(op.as_str().into()),
                task_id: pf.opt_str("id")?,
                context_id: pf.opt_str("contextId")?,
                is_stream: op == A2aOperation::SubscribeToTask,
                params,
                ..Default::default()
            }
        }
    };
    env.jsonrpc_id = jsonrpc_id;
    env.provenance = E2AProvenance {
        source_protocol: "a2a".into(),
        converter: Some("e2a::a2a::jsonrpc::envelope_from_request".into()),
        converted_at: Some(crate::timestamp::utc_now_iso()),
        details,
    };
    Ok(env)
}
