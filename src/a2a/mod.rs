//! A2A (Agent2Agent: HTTP JSON-RPC + SSE) ⇄ E2A.
//!
//! Ingress: [`envelope_from_send_message`]. Egress: [`response_to_stream_payload`] (one
//! `StreamResponse` member per `a2a.stream_event` frame).

use crate::ResponseKind;
use serde_json::{Map, Value};

pub mod errors;
pub mod inbound;
pub mod jsonrpc;
mod parts;
pub mod scalar;
pub mod stream;
mod task_state;
pub mod v0_3;

use crate::error::{Error, Result};
use crate::fields::Fields;
use crate::types::{A2aStreamBranch, ConverterId, E2AEnvelope, E2AResponse, IdentityOrigin};

/// An incoming A2A `SendMessage`, as handed to [`envelope_from_send_message`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SendMessageIngress {
    /// A2A task id.
    pub task_id: Option<String>,
    /// A2A context id.
    pub context_id: Option<String>,
    /// The A2A `Message` object, kept untouched in `params.message` (an object, or null).
    pub message_body: Value,
    /// A2A request metadata (goes to `a2a_metadata`).
    pub metadata: Option<Map<String, Value>>,
    /// `SendMessageConfiguration` (`acceptedOutputModes` → `expected_output_modes`).
    pub configuration: Option<Map<String, Value>>,
    /// Ingress channel name.
    pub channel: Option<String>,
    /// Who originated the request (default `user`).
    pub identity_origin: Option<IdentityOrigin>,
    /// Converter id to record (default: this SDK's A2A converter id).
    pub converter: Option<String>,
    /// Extra provenance details, merged over the defaults.
    pub extra_provenance_details: Option<Map<String, Value>>,
}

impl SendMessageIngress {
    /// Reads the DRIVER.md input object
    /// `{task_id, context_id, message_body, metadata?, configuration?, channel?, identity_origin?, converter?, extra_provenance_details?}`.
    pub fn from_value(v: &Value) -> Result<Self> {
        let m = v.as_object().ok_or_else(|| Error::field("", "expected object"))?;
        let f = Fields::new(m, "");
        Ok(SendMessageIngress {
            task_id: f.opt_str("task_id")?,
            context_id: f.opt_str("context_id")?,
            message_body: m.get("message_body").cloned().unwrap_or(Value::Null),
            metadata: f.opt_obj("metadata")?.cloned(),
            configuration: f.opt_obj("configuration")?.cloned(),
            channel: f.opt_str("channel")?,
            identity_origin: crate::acp::origin_arg(&f)?,
            converter: f.opt_str("converter")?,
            extra_provenance_details: f.opt_obj("extra_provenance_details")?.cloned(),
        })
    }
}

/// Normalizes an A2A `SendMessage` into a `session/prompt` envelope (provenance `a2a`).
///
/// Errors when `message_body` is neither an object (an A2A `Message`) nor null, or when
/// `configuration.acceptedOutputModes` is present but not an array of strings (DRIVER.md,
/// deliberate difference 1: a wrong JSON type is an error).
///
/// ```
/// use e2a::a2a::{envelope_from_send_message, SendMessageIngress};
/// let msg = SendMessageIngress {
///     task_id: Some("t1".into()),
///     context_id: Some("c1".into()),
///     message_body: serde_json::json!({"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}),
///     configuration: serde_json::json!({"acceptedOutputModes": ["text/plain"]}).as_object().cloned(),
///     ..Default::default()
/// };
/// let env = envelope_from_send_message(&msg).unwrap();
/// assert_eq!(env.method.as_deref(), Some("session/prompt"));
/// assert_eq!(env.expected_output_modes, vec!["text/plain"]);
/// assert_eq!(env.params["message"]["messageId"], "m1");
/// ```
pub fn envelope_from_send_message(msg: &SendMessageIngress) -> Result<E2AEnvelope> {
    // (read first: a message that does not read gets no provenance made for it)
    let env = send_message_envelope(msg)?;
    let mut details = Map::with_capacity(2);
    details.insert("kind".into(), "a2a_send_message".into());
    details.insert("abstract_operation".into(), "SendMessage".into());
    let provenance = crate::provenance::converted(
        "a2a",
        msg.converter.clone(),
        ConverterId::E2aA2aEnvelopeFromSendMessage,
        details,
        msg.extra_provenance_details.as_ref(),
    );
    Ok(E2AEnvelope { provenance, ..env })
}

/// [`envelope_from_send_message`] without its provenance (left default): for a caller that
/// writes a provenance of its own (the JSON-RPC request's).
pub(crate) fn send_message_envelope(msg: &SendMessageIngress) -> Result<E2AEnvelope> {
    if !matches!(msg.message_body, Value::Object(_) | Value::Null) {
        return Err(Error::field("/message_body", "expected object"));
    }
    let configuration = msg.configuration.clone().unwrap_or_default();
    let expected_output_modes = if configuration.is_empty() {
        Vec::new()
    } else {
        Fields::new(&configuration, "/configuration").str_array("acceptedOutputModes")?
    };
    let mut params = Map::with_capacity(3);
    params.insert("message".into(), msg.message_body.clone());
    params.insert("configuration".into(), Value::Object(configuration));
    Ok(E2AEnvelope {
        method: Some("session/prompt".into()),
        task_id: msg.task_id.clone(),
        context_id: msg.context_id.clone(),
        channel: msg.channel.clone(),
        identity_origin: msg.identity_origin.unwrap_or(IdentityOrigin::User),
        expected_output_modes,
        params,
        a2a_metadata: msg.metadata.clone().unwrap_or_default(),
        ..Default::default()
    })
}

/// The camelCase `StreamResponse` member name of a stream branch.
/// ```
/// use e2a::types::A2aStreamBranch;
/// assert_eq!(e2a::a2a::stream_member(A2aStreamBranch::ArtifactUpdate), "artifactUpdate");
/// ```
pub fn stream_member(branch: A2aStreamBranch) -> &'static str {
    match branch {
        A2aStreamBranch::Task => "task",
        A2aStreamBranch::Message => "message",
        A2aStreamBranch::StatusUpdate => "statusUpdate",
        A2aStreamBranch::ArtifactUpdate => "artifactUpdate",
    }
}

/// The A2A `StreamResponse` for an `a2a.stream_event` frame, or `None` for any other frame.
///
/// A `projections.a2a` object with exactly one camelCase member wins; otherwise `body.branch`
/// (snake_case) and the object `body.payload` give `{"<camelCase branch>": payload}`.
///
/// ```
/// let r = e2a::E2AResponse::from_value(&serde_json::json!({"response_kind": "a2a.stream_event",
///     "body": {"branch": "status_update", "payload": {"taskId": "t"}}})).unwrap();
/// let out = e2a::a2a::response_to_stream_payload(&r).unwrap();
/// assert_eq!(serde_json::Value::Object(out), serde_json::json!({"statusUpdate": {"taskId": "t"}}));
/// ```
pub fn response_to_stream_payload(resp: &E2AResponse) -> Option<Map<String, Value>> {
    if resp.response_kind != ResponseKind::A2aStreamEvent {
        return None;
    }
    if let Some(Value::Object(proj)) = resp.projections.get("a2a") {
        if proj.len() == 1
            && proj
                .keys()
                .all(|k| ["task", "message", "statusUpdate", "artifactUpdate"].contains(&k.as_str()))
        {
            return Some(proj.clone());
        }
    }
    let branch: A2aStreamBranch = resp.body.get("branch")?.as_str()?.parse().ok()?;
    let payload = resp.body.get("payload")?.as_object()?;
    let mut out = Map::new();
    out.insert(stream_member(branch).into(), Value::Object(payload.clone()));
    Some(out)
}
