//! What a task request asks, checked: the message of a send, its media types against the
//! card, `historyLength`, and the parameters of `ListTasks`.

use e2a::a2a::jsonrpc::{envelope_from_call, A2aHeaders};
use e2a::types::{A2aMessage, A2aOperation, A2aRole, A2aTaskState};
use e2a::E2AEnvelope;
use serde_json::{Map, Value};

use super::error::{A2aError, A2aErrorKind};
use crate::bindings::a2a::A2aConfig;

/// A send decoded and checked: its envelope, its message, whether to answer at once.
pub(super) struct Decoded {
    pub(super) env: E2AEnvelope,
    pub(super) message: A2aMessage,
    pub(super) return_immediately: bool,
}

/// Decodes a send (`SendStreamingMessage` when `streaming`) of JSON-RPC request `id` and
/// checks its message against `config` (parts, media types).
pub(super) fn decode_send(
    config: &A2aConfig,
    streaming: bool,
    id: Value,
    params: Map<String, Value>,
    headers: &A2aHeaders,
) -> Result<Decoded, A2aError> {
    let method = match streaming {
        true => A2aOperation::SendStreamingMessage,
        false => A2aOperation::SendMessage,
    }
    .as_str();
    let parts = params
        .get("message")
        .and_then(|m| m.get("parts"))
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    if parts > config.max_parts {
        // refused before anything copies it
        return Err(A2aError::invalid_params(format!(
            "params.message.parts: {parts} parts; at most {} are accepted",
            config.max_parts
        )));
    }
    let env =
        envelope_from_call(method, Some(&id), params, headers).map_err(|e| A2aError::invalid_params(e.to_string()))?;
    let message = read_message(env.params.get("message").unwrap_or(&Value::Null))?;
    check_input_modes(&config.card.default_input_modes, &message)?;
    check_output_modes(&config.card.default_output_modes, &env.expected_output_modes)?;
    let return_immediately = env
        .params
        .get("configuration")
        .and_then(|c| c.get("returnImmediately"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    Ok(Decoded {
        env,
        message,
        return_immediately,
    })
}

fn media_fits(modes: &[String], media: &str) -> bool {
    let base = |m: &str| m.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    let media = base(media);
    modes
        .iter()
        .map(|m| base(m))
        .any(|m| m == "*/*" || m == media || m.strip_suffix("/*").is_some_and(|t| media.split('/').next() == Some(t)))
}

fn int_of(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

/// `historyLength` of a request: `None` for all of it.
pub fn history_length(params: &Map<String, Value>) -> Result<Option<usize>, A2aError> {
    match params.get("historyLength") {
        None | Some(Value::Null) => Ok(None),
        Some(v) => match int_of(v) {
            Some(n) if n >= 0 => Ok(Some(usize::try_from(n).unwrap_or(usize::MAX))),
            _ => Err(A2aError::invalid_params("historyLength must be a non-negative integer")),
        },
    }
}

/// The message of a send, read and checked: an A2A `Message` from the user (or an agent) with
/// an id and at least one part, each holding text, bytes, a URL or data. Errors name the field.
pub(super) fn read_message(message: &Value) -> Result<A2aMessage, A2aError> {
    if !message.is_object() {
        return Err(A2aError::invalid_params("params.message must be an object"));
    }
    let m: A2aMessage = serde_path_to_error::deserialize(message).map_err(|e| {
        let at = match e.path().to_string() {
            p if p == "." => String::new(),
            p => format!(".{p}"),
        };
        A2aError::invalid_params(format!("params.message{at}: {}", e.inner()))
    })?;
    if m.message_id.is_empty() {
        return Err(A2aError::invalid_params("params.message.messageId is required"));
    }
    if m.role == A2aRole::RoleUnspecified {
        return Err(A2aError::invalid_params(
            "params.message.role must be ROLE_USER or ROLE_AGENT",
        ));
    }
    if m.parts.is_empty() {
        return Err(A2aError::invalid_params(
            "params.message.parts must be a non-empty array",
        ));
    }
    if let Some(i) = m
        .parts
        .iter()
        .position(|p| p.text.is_none() && p.raw.is_none() && p.url.is_none() && p.data.is_none())
    {
        return Err(A2aError::invalid_params(format!(
            "params.message.parts[{i}] has none of text, raw, url, data"
        )));
    }
    Ok(m)
}

/// Every part's `mediaType` must be one the card accepts (`ours`: `defaultInputModes`).
pub(super) fn check_input_modes(ours: &[String], message: &A2aMessage) -> Result<(), A2aError> {
    for (i, p) in message.parts.iter().enumerate() {
        if let Some(media) = p.media_type.as_deref().filter(|m| !m.is_empty()) {
            if !media_fits(ours, media) {
                return Err(A2aError::new(
                    A2aErrorKind::ContentTypeNotSupported,
                    format!(
                        "params.message.parts[{i}].mediaType {media} is not accepted (the agent takes {})",
                        ours.join(", ")
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// One of the client's accepted output modes must be one the agent produces (`ours`:
/// `defaultOutputModes`); none accepted means any.
pub(super) fn check_output_modes(ours: &[String], accepted: &[String]) -> Result<(), A2aError> {
    if accepted.is_empty() {
        return Ok(());
    }
    let fits = |a: &str| {
        let a = a.trim().to_ascii_lowercase();
        a == "*/*"
            || ours.iter().any(|o| {
                let o = o.to_ascii_lowercase();
                o == a || a.strip_suffix("/*").is_some_and(|t| o.starts_with(&format!("{t}/")))
            })
    };
    if accepted.iter().any(|a| fits(a)) {
        Ok(())
    } else {
        Err(A2aError::new(
            A2aErrorKind::ContentTypeNotSupported,
            format!(
                "none of the accepted output modes is produced (the agent answers {})",
                ours.join(", ")
            ),
        ))
    }
}

/// The parameters of `ListTasks` (1.0 camelCase names), checked.
pub(super) struct ListParams {
    /// Tasks per page (1–100, default 50).
    pub(super) page_size: usize,
    /// Tasks to skip (the page token).
    pub(super) offset: usize,
    /// History messages per task (`None`: all).
    pub(super) history: Option<usize>,
    /// Whether tasks carry their artifacts.
    pub(super) include_artifacts: bool,
    /// Only tasks in this state.
    pub(super) state: Option<A2aTaskState>,
    /// Only tasks of this context.
    pub(super) context_id: Option<String>,
    /// Only tasks updated after this time (Unix ms).
    pub(super) updated_after_ms: Option<i64>,
}

impl ListParams {
    /// Reads `params`; a wrong value is invalid params naming it.
    pub(super) fn read(params: &Map<String, Value>) -> Result<Self, A2aError> {
        let page_size = match params.get("pageSize") {
            None | Some(Value::Null) => 50,
            Some(v) => match int_of(v) {
                Some(n) if (1..=100).contains(&n) => usize::try_from(n).unwrap_or(50),
                Some(0) => 50,
                _ => return Err(A2aError::invalid_params("pageSize must be between 1 and 100")),
            },
        };
        let offset = match params
            .get("pageToken")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
        {
            None => 0,
            Some(t) => t
                .parse::<usize>()
                .map_err(|_| A2aError::invalid_params("pageToken is not a token this server issued"))?,
        };
        let include_artifacts = match params.get("includeArtifacts") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(Value::String(s)) if s == "true" || s == "false" => s == "true",
            Some(_) => return Err(A2aError::invalid_params("includeArtifacts must be a boolean")),
        };
        let state = match params.get("status") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) if s.is_empty() => None,
            Some(Value::String(s)) => match A2aTaskState::read(s) {
                Some(A2aTaskState::TaskStateUnspecified) => None,
                Some(state) => Some(state),
                None => return Err(A2aError::invalid_params(format!("status {s:?} is not a task state"))),
            },
            Some(_) => return Err(A2aError::invalid_params("status must be a task state")),
        };
        let updated_after_ms = match params.get("statusTimestampAfter").and_then(Value::as_str) {
            None => None,
            Some(t) => Some(
                e2a::timestamp::parse_rfc3339_ms(t)
                    .ok_or_else(|| A2aError::invalid_params("statusTimestampAfter must be an RFC 3339 timestamp"))?,
            ),
        };
        Ok(ListParams {
            page_size,
            offset,
            history: history_length(params)?,
            include_artifacts,
            state,
            context_id: params
                .get("contextId")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(String::from),
            updated_after_ms,
        })
    }
}

/// What a send's `configuration` asks of the answer, read the same way on both bindings.
pub struct SendConfig {
    /// History messages of the answered task (`None`: all).
    pub history: Option<usize>,
    /// Whether a non-streaming send waits for the turn to end: unless `returnImmediately`
    /// (1.0) or `blocking: false` (0.3).
    pub blocking: bool,
}

impl SendConfig {
    /// Reads `params.configuration`.
    pub fn read(params: &Map<String, Value>) -> Result<Self, A2aError> {
        let config = params.get("configuration").and_then(Value::as_object);
        let flag = |k: &str| config.and_then(|c| c.get(k)).and_then(Value::as_bool);
        Ok(SendConfig {
            history: config.map(history_length).transpose()?.flatten(),
            blocking: !flag("returnImmediately").unwrap_or(false) && flag("blocking").unwrap_or(true),
        })
    }
}
