//! What a task request asks, checked: the message of a send, its media types against the
//! card, `historyLength`, and the parameters of `ListTasks`.

use e2a::a2a::jsonrpc::{envelope_from_call, A2aHeaders};
use e2a::a2a::scalar::{Count, Flag};
use e2a::types::{A2aListTasksRequest, A2aMessage, A2aOperation, A2aRole, A2aSendMessageConfiguration, A2aTaskState};
use e2a::E2AEnvelope;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::error::{A2aError, A2aErrorKind};
use super::request::invalid_at;
use crate::tasks::config::A2aConfig;

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
    let message = read_message(&env.params)?;
    check_input_modes(&config.card.default_input_modes, &message)?;
    check_output_modes(&config.card.default_output_modes, &env.expected_output_modes)?;
    let return_immediately = SendConfig::read(&env.params)?.return_immediately;
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

/// `historyLength` of a request (`at`: its place, `historyLength` or
/// `configuration.historyLength`): `None` for all of it.
pub fn history_length(count: Option<Count>, at: &str) -> Result<Option<usize>, A2aError> {
    match count {
        None => Ok(None),
        Some(c) => c
            .non_negative()
            .map(Some)
            .ok_or_else(|| invalid_at(at, " must be an integer from 0 to 9223372036854775807")),
    }
}

/// The items a listing skips: the offset its `pageToken` stands for (0 without one); a token
/// this gateway did not give is invalid params naming it.
pub(crate) fn page_offset(token: Option<&str>) -> Result<usize, A2aError> {
    match token.filter(|s| !s.is_empty()) {
        None => Ok(0),
        Some(t) => t
            .parse::<usize>()
            .map_err(|_| invalid_at("pageToken", " is not a token this server issued")),
    }
}

/// The message of a send (`params.message`), read and checked: an A2A `Message` from the user
/// (or an agent) with an id and at least one part, each holding text, bytes, a URL or data.
/// Errors name the field.
pub(super) fn read_message(params: &Map<String, Value>) -> Result<A2aMessage, A2aError> {
    #[derive(Deserialize)]
    struct Send {
        message: A2aMessage,
    }
    // read without tracking the path; a message that does not read is read again with it,
    // for the error to name the field
    let send = match Send::deserialize(crate::json::object_deserializer(params)) {
        Ok(send) => send,
        Err(_) => serde_path_to_error::deserialize::<_, Send>(crate::json::object_deserializer(params)).map_err(
            |e| match e.path().to_string() {
                p if p == "." => A2aError::invalid_params("params.message must be an object"),
                p => A2aError::invalid_params(format!("params.{p}: {}", e.inner())),
            },
        )?,
    };
    let m = send.message;
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
    /// Checks request `r`; a wrong value is invalid params naming it.
    pub(super) fn of(r: A2aListTasksRequest) -> Result<Self, A2aError> {
        let page_size = match r.page_size.map(Count::get) {
            None | Some(0) => 50,
            Some(n @ 1..=100) => usize::try_from(n).unwrap_or(50),
            Some(_) => return Err(invalid_at("pageSize", " must be between 1 and 100")),
        };
        let state = match r.status.as_deref().filter(|s| !s.is_empty()) {
            None => None,
            Some(s) => match A2aTaskState::read(s) {
                Some(A2aTaskState::TaskStateUnspecified) => None,
                Some(state) => Some(state),
                None => return Err(invalid_at("status", &format!(" {s:?} is not a task state"))),
            },
        };
        // (an empty one is no timestamp: refused like any other)
        let updated_after_ms = match r.status_timestamp_after.as_deref() {
            None => None,
            Some(t) => Some(
                e2a::timestamp::parse_rfc3339_ms(t)
                    .ok_or_else(|| invalid_at("statusTimestampAfter", " must be an RFC 3339 timestamp"))?,
            ),
        };
        Ok(ListParams {
            page_size,
            offset: page_offset(r.page_token.as_deref())?,
            history: history_length(r.history_length, "historyLength")?,
            include_artifacts: r.include_artifacts.is_some_and(Flag::get),
            state,
            context_id: r.context_id.filter(|s| !s.is_empty()),
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
    /// `returnImmediately` (1.0): the task is answered as soon as it is stored.
    pub return_immediately: bool,
}

impl SendConfig {
    /// Reads `params.configuration` (one that is not an object asks nothing).
    pub fn read(params: &Map<String, Value>) -> Result<Self, A2aError> {
        let config: A2aSendMessageConfiguration = match e2a::read::member(params, "configuration") {
            Some(Value::Object(c)) => super::request::read_under(c, &["configuration"])?,
            _ => A2aSendMessageConfiguration::default(),
        };
        let return_immediately = config.return_immediately.unwrap_or(false);
        Ok(SendConfig {
            history: history_length(config.history_length, "configuration.historyLength")?,
            blocking: !return_immediately && config.blocking.unwrap_or(true),
            return_immediately,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn params(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    fn error_of<T>(r: Result<T, A2aError>) -> String {
        match r {
            Ok(_) => panic!("accepted"),
            Err(e) => e.message,
        }
    }

    /// `ListTasks` params read as every binding reads them: the typed request, then checked.
    fn list(v: Value) -> Result<ListParams, A2aError> {
        ListParams::of(crate::tasks::request::read(&params(v))?)
    }

    #[test]
    fn list_params_read_json_values_and_query_text_alike() {
        for p in [
            json!({"pageSize": 5, "includeArtifacts": true, "status": "TASK_STATE_WORKING", "historyLength": 2, "contextId": "c"}),
            json!({"pageSize": "5", "includeArtifacts": "true", "status": "working", "historyLength": "2", "contextId": "c"}),
        ] {
            let l = list(p).expect("read");
            assert_eq!((l.page_size, l.include_artifacts, l.history), (5, true, Some(2)));
            assert_eq!(
                (l.state, l.context_id.as_deref()),
                (Some(A2aTaskState::TaskStateWorking), Some("c"))
            );
        }
        // an integral number written as a float is that integer (JSON Schema, ProtoJSON)
        let l = list(json!({"pageSize": 5.0, "historyLength": 2e0})).expect("read");
        assert_eq!((l.page_size, l.history), (5, Some(2)));
        for huge in [json!(18_446_744_073_709_551_614u64), json!("18446744073709551614")] {
            let message = error_of(list(json!({ "pageSize": huge })));
            assert!(
                message.contains("between 1 and 100"),
                "a uint64 count is read, then out of range: {message}"
            );
        }
        for beyond in [json!(18_446_744_073_709_551_616.0), json!("18446744073709551616")] {
            let message = error_of(list(json!({ "pageSize": beyond })));
            assert!(
                message.contains("invalid value"),
                "a count beyond a uint64 is no integer: {message}"
            );
        }
        let l = list(json!({"pageSize": 0, "pageToken": "10"})).expect("read");
        assert_eq!((l.page_size, l.offset, l.state, l.history), (50, 10, None, None));
        for (bad, named) in [
            (json!({"pageSize": 101}), "pageSize"),
            (json!({"pageSize": 2.5}), "pageSize"),
            (json!({"includeArtifacts": 3}), "includeArtifacts"),
            (json!({"status": "sleeping"}), "status"),
            (json!({"status": 4}), "status"),
            (json!({"historyLength": -1}), "historyLength"),
            (json!({"historyLength": "9223372036854775808"}), "historyLength"),
            (json!({"statusTimestampAfter": ""}), "statusTimestampAfter"),
            (json!({"pageToken": "x"}), "pageToken"),
            (json!({"statusTimestampAfter": "yesterday"}), "statusTimestampAfter"),
        ] {
            let e = list(bad.clone()).err().expect("refused");
            assert!(
                e.message.starts_with(&format!("params.{named}")),
                "{bad}: {}",
                e.message
            );
            assert_eq!(e.pointer, Some(format!("/params/{named}")), "{bad}");
        }
    }

    #[test]
    fn a_send_blocks_unless_it_asks_not_to() {
        let blocking = |v: Value| SendConfig::read(&params(v)).expect("read").blocking;
        assert!(blocking(json!({})));
        assert!(blocking(json!({"configuration": "not an object"})));
        assert!(blocking(json!({"configuration": {"returnImmediately": null}})));
        for bad in [json!("yes"), json!(1), json!({})] {
            let e = error_of(SendConfig::read(&params(
                json!({"configuration": {"returnImmediately": bad}}),
            )));
            assert!(
                e.starts_with("params.configuration.returnImmediately: invalid type"),
                "{e}"
            );
        }
        assert!(!blocking(json!({"configuration": {"returnImmediately": true}})));
        assert!(!blocking(json!({"configuration": {"blocking": false}})));
        let c = SendConfig::read(&params(json!({"configuration": {"historyLength": 1}}))).expect("read");
        assert_eq!((c.history, c.return_immediately), (Some(1), false));
        assert!(error_of(SendConfig::read(&params(
            json!({"configuration": {"historyLength": "many"}})
        )))
        .contains("historyLength"));
    }

    #[test]
    fn a_bad_message_is_refused_naming_the_field() {
        for (bad, says) in [
            (json!({}), "params.message must be an object"),
            (json!({"message": "hi"}), "params.message: invalid type"),
            (
                json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": 1}]}}),
                "params.message.parts[0].text",
            ),
            (
                json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": []}}),
                "params.message.parts must be",
            ),
            (
                json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{}]}}),
                "params.message.parts[0] has none",
            ),
            (
                json!({"message": {"messageId": "m", "role": "ROLE_UNSPECIFIED", "parts": [{"text": "x"}]}}),
                "params.message.role",
            ),
        ] {
            let message = error_of(read_message(&params(bad.clone())));
            assert!(message.starts_with(says), "{bad}: {message}");
        }
        let m = read_message(&params(
            json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x"}]}}),
        ));
        assert_eq!(m.expect("read").text(), "x");
    }

    #[test]
    fn only_a_send_configuration_object_is_read() {
        let c = SendConfig::read(&params(
            json!({"configuration": {"returnImmediately": true, "historyLength": 2}}),
        ))
        .expect("read");
        assert!(c.return_immediately && !c.blocking);
        assert_eq!(c.history, Some(2));
        // no configuration, a null one or one that is not an object: the defaults
        for p in [
            json!({}),
            json!({"configuration": null}),
            json!({"configuration": [true]}),
        ] {
            let c = SendConfig::read(&params(p)).expect("read");
            assert!(!c.return_immediately && c.blocking && c.history.is_none());
        }
    }
}
