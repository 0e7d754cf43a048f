//! What every A2A operation is asked: its typed request (the generated `A2a…Request` types of
//! `schema/a2a.json`, lenient where clients are: `"5"` and `5.0` integers, `"true"` flags,
//! 0.3 names), read once by [`read`] whatever the binding, and the [`CallContext`] the binding
//! knows about the call.

use e2a::a2a::jsonrpc::A2aHeaders;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::error::A2aError;
use crate::agent::Caller;

/// What a binding knows about one A2A call besides its request.
#[derive(Debug, Clone, Default)]
pub struct CallContext {
    /// The JSON-RPC request id (null on HTTP+JSON and gRPC).
    pub id: Value,
    /// Who calls.
    pub caller: Caller,
    /// `A2A-Version` and the activated extensions.
    pub headers: A2aHeaders,
    /// The trace the call belongs to (its `traceparent` or `X-Trace-ID`): a send's envelope
    /// `correlation_id` when its message names none.
    pub trace_id: Option<String>,
    /// The request's `Idempotency-Key` (HTTP bindings): a retried send with the same key and
    /// the same request gets the first one's task; another request under it is refused (`409`).
    pub idempotency_key: Option<String>,
}

/// Reads request `params` into its typed request `T`. A field that does not read is invalid
/// params naming it: the message says `params.<path>: <reason>`, the error's pointer is the
/// field's JSON pointer (`/params/pageSize`).
pub fn read<T: DeserializeOwned>(params: &Map<String, Value>) -> Result<T, A2aError> {
    read_under(params, &[])
}

/// [`read`] of `object`, the member of the params at path `under` (`["configuration"]`).
pub(crate) fn read_under<T: DeserializeOwned>(object: &Map<String, Value>, under: &[&str]) -> Result<T, A2aError> {
    // read without tracking the path; a request that does not read is read again with it
    match T::deserialize(crate::json::object_deserializer(object)) {
        Ok(request) => Ok(request),
        Err(_) => serde_path_to_error::deserialize(crate::json::object_deserializer(object)).map_err(|e| {
            let mut path: Vec<String> = under.iter().map(|s| s.to_string()).collect();
            path.extend(crate::json::path_members(e.path()));
            let reason = e.inner().to_string();
            // serde names a missing field in its message, at the object that lacks it
            let missing = reason.strip_prefix("missing field `").and_then(|r| r.strip_suffix('`'));
            if let Some(field) = missing {
                path.push(field.to_string());
            }
            let dotted = std::iter::once("params".to_string()).chain(path.iter().cloned());
            let message = match missing {
                Some(_) => format!("{} is required", dotted.collect::<Vec<_>>().join(".")),
                None => format!("{}: {reason}", dotted.collect::<Vec<_>>().join(".")),
            };
            A2aError {
                pointer: Some(crate::json::json_pointer(
                    std::iter::once("params").chain(path.iter().map(String::as_str)),
                )),
                ..A2aError::invalid_params(message)
            }
        }),
    }
}

/// A required id (`field` of the request, read as `value`): present and not empty.
pub(crate) fn required<'a>(value: Option<&'a str>, field: &str) -> Result<&'a str, A2aError> {
    value
        .filter(|s| !s.is_empty())
        .ok_or_else(|| invalid_at(field, " is required"))
}

/// Invalid params naming field `at` (dotted, under `params`; empty: the params) and why
/// (` must be …`, `: …`, written after the field's name).
pub(crate) fn invalid_at(at: &str, why: &str) -> A2aError {
    let (dotted, pointer) = match at {
        "" => ("params".to_string(), "/params".to_string()),
        at => (format!("params.{at}"), format!("/params/{}", at.replace('.', "/"))),
    };
    A2aError {
        pointer: Some(pointer),
        ..A2aError::invalid_params(format!("{dotted}{why}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use e2a::types::{A2aGetTaskRequest, A2aListTasksRequest};
    use serde_json::json;

    fn params(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn a_request_reads_what_clients_send_and_names_what_it_cannot() {
        let r: A2aGetTaskRequest = read(&params(json!({"id": "t", "historyLength": "2"}))).expect("read");
        assert_eq!((r.id.as_str(), r.history_length.map(|c| c.get())), ("t", Some(2)));
        let e = read::<A2aGetTaskRequest>(&params(json!({}))).expect_err("no id");
        assert_eq!(
            (e.message.as_str(), e.pointer.as_deref()),
            ("params.id is required", Some("/params/id"))
        );
        let e = read::<A2aListTasksRequest>(&params(json!({"pageSize": "many"}))).expect_err("bad size");
        assert!(e.message.starts_with("params.pageSize: invalid value"), "{}", e.message);
        assert_eq!(e.pointer.as_deref(), Some("/params/pageSize"));
        let e = read::<A2aListTasksRequest>(&params(json!({"includeArtifacts": 3}))).expect_err("bad flag");
        assert_eq!(e.pointer.as_deref(), Some("/params/includeArtifacts"));
    }
}
