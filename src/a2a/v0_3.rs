//! A2A 0.3 on the wire, for a client of a 0.3 agent: a 1.0 request (JSON) written in 0.3's
//! form, and a 0.3 answer read back as 1.0.
//!
//! 0.3 has two wires, and they differ from 1.0 and from each other:
//! - **JSON-RPC** ([`Wire::JsonRpc`]): methods `message/send`, `message/stream`, `tasks/get`…;
//!   objects tagged by `kind` (`task`, `message`, `status-update`, `artifact-update`; parts
//!   `text`, `file`, `data`); roles `user` / `agent`; states `input-required`, `canceled`…;
//!   `configuration.blocking` and `configuration.pushNotificationConfig`.
//! - **HTTP+JSON** ([`Wire::Rest`]): 0.3's ProtoJSON under [`REST_PREFIX`] (`/v1/message:send`,
//!   `/v1/tasks/{id}`…): a message's parts are its `content`; a file part is
//!   `{file: {fileWithUri | fileWithBytes, mimeType, name}}`, a data part `{data: {data: {…}}}`;
//!   `TASK_STATE_CANCELLED`; `configuration.blocking` and `configuration.pushNotification`.
//!
//! Both carry `final` on a status update, which 1.0 dropped. A server reading 0.3 requests is
//! [`super::jsonrpc`]'s (0.3 names and shapes accepted); this module is the client's side, what
//! the official SDKs' `Compat…Transport`s do for a card whose interface says `0.3`.
//!
//! ```
//! use e2a::a2a::v0_3::{self, Wire};
//! use serde_json::json;
//! let send = json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}]},
//!                   "configuration": {"returnImmediately": true}});
//! assert_eq!(v0_3::send_params(&send, Wire::JsonRpc), json!({
//!     "message": {"kind": "message", "messageId": "m", "role": "user", "parts": [{"kind": "text", "text": "hi"}]},
//!     "configuration": {"blocking": false}}));
//! let event = json!({"kind": "status-update", "taskId": "t", "contextId": "c", "final": true,
//!                    "status": {"state": "completed"}});
//! assert_eq!(v0_3::stream_response(event, Wire::JsonRpc), json!({
//!     "statusUpdate": {"taskId": "t", "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED"}}}));
//! ```

use serde_json::{Map, Value};

use super::jsonrpc::{normalize_message, normalize_part, normalize_task_state, V0_3_METHODS};
use crate::types::A2aOperation;

/// One of A2A 0.3's two wires (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// JSON-RPC 2.0, `kind`-tagged objects.
    JsonRpc,
    /// HTTP+JSON: 0.3's ProtoJSON under [`REST_PREFIX`].
    Rest,
}

/// Where 0.3's HTTP+JSON routes are, under an interface's URL (`{url}/v1/message:send`).
pub const REST_PREFIX: &str = "/v1";

/// The 0.3 JSON-RPC method name of `op`.
///
/// ```
/// use e2a::types::A2aOperation;
/// assert_eq!(e2a::a2a::v0_3::method(A2aOperation::SendStreamingMessage), "message/stream");
/// ```
pub fn method(op: A2aOperation) -> &'static str {
    V0_3_METHODS
        .iter()
        .find(|(_, o)| *o == op)
        .map_or_else(|| op.as_str(), |(name, _)| name)
}

/// Whether an interface of `version` (an `AgentInterface.protocolVersion`) speaks 0.3: any
/// `0.x` from 0.3 on, as the official clients read it (`1.0`, later versions and none speak 1.0).
///
/// ```
/// assert!(e2a::a2a::v0_3::is_version("0.3.0"));
/// assert!(!e2a::a2a::v0_3::is_version("1.0"));
/// assert!(!e2a::a2a::v0_3::is_version("0.2.5"));
/// ```
pub fn is_version(version: &str) -> bool {
    let mut parts = version.trim().split('.');
    let (Some(major), Some(minor)) = (parts.next(), parts.next()) else {
        return false;
    };
    major == "0" && minor.parse::<u32>().is_ok_and(|m| m >= 3)
}

/// A 1.0 `SendMessageRequest` (`{message, configuration, metadata}`) in 0.3's form on `wire`.
/// What 0.3 has no place for (`tenant`, a push config's `taskId`) is left out.
pub fn send_params(params: &Value, wire: Wire) -> Value {
    let Some(p) = params.as_object() else {
        return params.clone();
    };
    let mut out = Map::new();
    for (k, v) in p {
        let v = match k.as_str() {
            "message" => message_out(v, wire),
            "configuration" => configuration_out(v, wire),
            "tenant" => continue,
            _ => v.clone(),
        };
        out.insert(k.clone(), v);
    }
    Value::Object(out)
}

/// A 1.0 `Message` in 0.3's form.
fn message_out(msg: &Value, wire: Wire) -> Value {
    let Some(m) = msg.as_object() else { return msg.clone() };
    let mut out = Map::new();
    if wire == Wire::JsonRpc {
        out.insert("kind".into(), "message".into());
    }
    for (k, v) in m {
        match (k.as_str(), wire) {
            ("role", Wire::JsonRpc) => {
                let role = match v.as_str() {
                    Some("ROLE_AGENT") => "agent",
                    _ => "user",
                };
                out.insert("role".into(), role.into());
            }
            ("parts", _) => {
                let parts = v.as_array().map(|ps| ps.iter().map(|p| part_out(p, wire)).collect());
                let key = if wire == Wire::Rest { "content" } else { "parts" };
                out.insert(key.into(), Value::Array(parts.unwrap_or_default()));
            }
            _ => {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    Value::Object(out)
}

/// A 1.0 `Part` (`text` / `data` / `url` / `raw`, `mediaType`, `filename`) in 0.3's form.
fn part_out(part: &Value, wire: Wire) -> Value {
    let Some(p) = part.as_object() else { return part.clone() };
    let mut out = Map::new();
    let (kind, body) = if let Some(text) = p.get("text") {
        ("text", text.clone())
    } else if let Some(data) = p.get("data") {
        // 0.3's data is an object: any other value rides under `value`
        let data = match data {
            Value::Object(_) => data.clone(),
            other => Value::Object(Map::from_iter([("value".to_string(), other.clone())])),
        };
        let data = match wire {
            Wire::JsonRpc => data,
            Wire::Rest => Value::Object(Map::from_iter([("data".to_string(), data)])),
        };
        ("data", data)
    } else {
        ("file", Value::Object(file_out(p, wire)))
    };
    if wire == Wire::JsonRpc {
        out.insert("kind".into(), kind.into());
    }
    out.insert(kind.into(), body);
    if let Some(m) = p.get("metadata") {
        out.insert("metadata".into(), m.clone());
    }
    Value::Object(out)
}

/// The `file` of a 1.0 file part (`url` or `raw`, `mediaType`, `filename`) on `wire`.
fn file_out(p: &Map<String, Value>, wire: Wire) -> Map<String, Value> {
    let names: [(&str, &str, &str); 4] = [
        ("url", "uri", "fileWithUri"),
        ("raw", "bytes", "fileWithBytes"),
        ("mediaType", "mimeType", "mimeType"),
        ("filename", "name", "name"),
    ];
    let mut file = Map::new();
    for (of_1_0, rpc, rest) in names {
        if let Some(v) = p.get(of_1_0) {
            let key = if wire == Wire::Rest { rest } else { rpc };
            file.insert(key.into(), v.clone());
        }
    }
    file
}

/// A 1.0 `SendMessageConfiguration` in 0.3's form: `returnImmediately` as `blocking`, the push
/// config under 0.3's key, its authentication's `scheme` as `schemes`.
fn configuration_out(config: &Value, wire: Wire) -> Value {
    let Some(c) = config.as_object() else {
        return config.clone();
    };
    let mut out = Map::new();
    for (k, v) in c {
        match k.as_str() {
            "returnImmediately" => {
                if !c.contains_key("blocking") {
                    out.insert("blocking".into(), Value::Bool(!v.as_bool().unwrap_or(false)));
                }
            }
            "taskPushNotificationConfig" => {
                let key = match wire {
                    Wire::JsonRpc => "pushNotificationConfig",
                    Wire::Rest => "pushNotification",
                };
                out.insert(key.into(), push_config_out(v));
            }
            _ => {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    Value::Object(out)
}

/// A 1.0 `TaskPushNotificationConfig` as 0.3's `PushNotificationConfig`.
fn push_config_out(config: &Value) -> Value {
    let Some(c) = config.as_object() else {
        return config.clone();
    };
    let mut out = Map::new();
    for (k, v) in c {
        match k.as_str() {
            "taskId" | "tenant" => {}
            "authentication" => {
                let mut auth = v.as_object().cloned().unwrap_or_default();
                if let Some(scheme) = auth.remove("scheme") {
                    auth.insert("schemes".into(), Value::Array(vec![scheme]));
                }
                out.insert(k.clone(), Value::Object(auth));
            }
            _ => {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    Value::Object(out)
}

/// A 0.3 answer of a send or an event of a stream, as 1.0's `StreamResponse` JSON (`{task}`,
/// `{message}`, `{statusUpdate}` or `{artifactUpdate}`; a send's answer is the same shape). On
/// JSON-RPC the object's `kind` says which; on HTTP+JSON its one key. Anything else comes back
/// as it was (a 1.0 answer stays one).
pub fn stream_response(answer: Value, wire: Wire) -> Value {
    let Value::Object(mut o) = answer else { return answer };
    let (key, payload) = match wire {
        Wire::JsonRpc => {
            let key = match o.get("kind").and_then(Value::as_str) {
                Some("task") => "task",
                Some("message") => "message",
                Some("status-update") => "statusUpdate",
                Some("artifact-update") => "artifactUpdate",
                _ => return Value::Object(o),
            };
            (key, Value::Object(o))
        }
        Wire::Rest => {
            let Some(key) = ["task", "message", "statusUpdate", "artifactUpdate"]
                .into_iter()
                .find(|k| o.contains_key(*k))
            else {
                return Value::Object(o);
            };
            let payload = o.remove(key).unwrap_or(Value::Null);
            (key, payload)
        }
    };
    let payload = match key {
        "task" => task(payload, wire),
        "message" => message_in(&payload, wire),
        "statusUpdate" => event_in(payload, "status", wire),
        _ => event_in(payload, "artifact", wire),
    };
    Value::Object(Map::from_iter([(key.to_string(), payload)]))
}

/// A 0.3 `Task` (a `tasks/get` answer, a push body) as a 1.0 task.
pub fn task(task: Value, wire: Wire) -> Value {
    let Value::Object(mut t) = task else { return task };
    t.remove("kind");
    if let Some(status) = t.get_mut("status") {
        *status = status_in(status.take(), wire);
    }
    if let Some(Value::Array(history)) = t.get_mut("history") {
        for m in history.iter_mut() {
            *m = message_in(m, wire);
        }
    }
    if let Some(Value::Array(artifacts)) = t.get_mut("artifacts") {
        for a in artifacts.iter_mut() {
            *a = artifact_in(a.take(), wire);
        }
    }
    Value::Object(t)
}

/// A 0.3 status or artifact update (its `member` read back), without 0.3's `kind` and `final`.
fn event_in(event: Value, member: &str, wire: Wire) -> Value {
    let Value::Object(mut e) = event else { return event };
    e.remove("kind");
    e.remove("final");
    if let Some(v) = e.get_mut(member) {
        *v = match member {
            "status" => status_in(v.take(), wire),
            _ => artifact_in(v.take(), wire),
        };
    }
    Value::Object(e)
}

/// A 0.3 `TaskStatus`: its state named as 1.0 names it, its message read back.
fn status_in(status: Value, wire: Wire) -> Value {
    let Value::Object(mut s) = status else { return status };
    if let Some(Value::String(state)) = s.get_mut("state") {
        *state = match (state.as_str(), wire) {
            ("TASK_STATE_CANCELLED", _) => "TASK_STATE_CANCELED".into(),
            ("unknown", Wire::JsonRpc) => "TASK_STATE_UNSPECIFIED".into(),
            (other, Wire::JsonRpc) => normalize_task_state(other),
            (other, Wire::Rest) => other.to_string(),
        };
    }
    if let Some(m) = s.get_mut("message") {
        *m = message_in(m, wire);
    }
    Value::Object(s)
}

/// A 0.3 `Artifact`: its parts read back.
fn artifact_in(artifact: Value, wire: Wire) -> Value {
    let Value::Object(mut a) = artifact else {
        return artifact;
    };
    if let Some(Value::Array(parts)) = a.get_mut("parts") {
        for p in parts.iter_mut() {
            *p = part_in(p, wire);
        }
    }
    Value::Object(a)
}

/// A 0.3 `Message` as a 1.0 message.
fn message_in(msg: &Value, wire: Wire) -> Value {
    match wire {
        Wire::JsonRpc => normalize_message(msg),
        Wire::Rest => {
            let Some(m) = msg.as_object() else { return msg.clone() };
            let mut out = Map::new();
            for (k, v) in m {
                if k == "content" || k == "parts" {
                    let parts = v.as_array().map(|ps| ps.iter().map(|p| part_in(p, wire)).collect());
                    out.insert("parts".into(), Value::Array(parts.unwrap_or_default()));
                } else {
                    out.insert(k.clone(), v.clone());
                }
            }
            Value::Object(out)
        }
    }
}

/// A 0.3 `Part` as a 1.0 part.
fn part_in(part: &Value, wire: Wire) -> Value {
    if wire == Wire::JsonRpc {
        return normalize_part(part);
    }
    let Some(p) = part.as_object() else { return part.clone() };
    let mut out = Map::new();
    for (k, v) in p {
        match k.as_str() {
            "file" => {
                let names = [
                    ("fileWithUri", "url"),
                    ("fileWithBytes", "raw"),
                    ("mimeType", "mediaType"),
                    ("name", "filename"),
                ];
                let file = v.as_object().cloned().unwrap_or_default();
                for (of_0_3, of_1_0) in names {
                    if let Some(v) = file.get(of_0_3) {
                        out.insert(of_1_0.into(), v.clone());
                    }
                }
            }
            "data" => {
                let inner = v.get("data").cloned().unwrap_or_else(|| v.clone());
                out.insert("data".into(), inner);
            }
            _ => {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A 1.0 message with every kind of part, with metadata.
    fn message() -> Value {
        json!({"messageId": "m1", "contextId": "c", "taskId": "t", "role": "ROLE_USER",
               "extensions": ["urn:x"], "metadata": {"k": 1},
               "parts": [{"text": "hi", "metadata": {"p": true}},
                         {"data": {"rows": [1, 2]}},
                         {"data": [1, 2]},
                         {"url": "https://x/a.png", "mediaType": "image/png", "filename": "a.png"},
                         {"raw": "aGk=", "mediaType": "text/plain"}]})
    }

    #[test]
    fn a_send_is_written_in_each_wires_form() {
        let params = json!({"message": message(), "tenant": "x", "metadata": {"m": 1},
            "configuration": {"returnImmediately": true, "acceptedOutputModes": ["text/plain"],
                "taskPushNotificationConfig": {"id": "p", "taskId": "t", "url": "https://cb", "token": "tok",
                    "authentication": {"scheme": "Bearer", "credentials": "c"}}}});
        let rpc = send_params(&params, Wire::JsonRpc);
        assert_eq!(
            rpc["message"]["parts"],
            json!([{"kind": "text", "text": "hi", "metadata": {"p": true}},
                   {"kind": "data", "data": {"rows": [1, 2]}},
                   {"kind": "data", "data": {"value": [1, 2]}},
                   {"kind": "file", "file": {"uri": "https://x/a.png", "mimeType": "image/png", "name": "a.png"}},
                   {"kind": "file", "file": {"bytes": "aGk=", "mimeType": "text/plain"}}])
        );
        assert_eq!(rpc["message"]["role"], "user");
        assert_eq!(rpc["message"]["kind"], "message");
        assert_eq!(rpc["message"]["extensions"], json!(["urn:x"]));
        assert_eq!(rpc["metadata"], json!({"m": 1}));
        assert!(rpc.get("tenant").is_none());
        assert_eq!(
            rpc["configuration"],
            json!({"blocking": false, "acceptedOutputModes": ["text/plain"],
                   "pushNotificationConfig": {"id": "p", "url": "https://cb", "token": "tok",
                       "authentication": {"schemes": ["Bearer"], "credentials": "c"}}})
        );
        let rest = send_params(&params, Wire::Rest);
        assert!(rest["message"].get("parts").is_none());
        assert_eq!(rest["message"]["role"], "ROLE_USER");
        assert_eq!(
            rest["message"]["content"],
            json!([{"text": "hi", "metadata": {"p": true}},
                   {"data": {"data": {"rows": [1, 2]}}},
                   {"data": {"data": {"value": [1, 2]}}},
                   {"file": {"fileWithUri": "https://x/a.png", "mimeType": "image/png", "name": "a.png"}},
                   {"file": {"fileWithBytes": "aGk=", "mimeType": "text/plain"}}])
        );
        assert_eq!(rest["configuration"]["pushNotification"]["url"], "https://cb");
        assert_eq!(rest["configuration"]["blocking"], false);
    }

    #[test]
    fn a_message_written_then_read_back_is_the_same_on_both_wires() {
        let mut expected = message();
        // the one thing 0.3 cannot say: data that is not an object rides under `value`
        expected["parts"][2] = json!({"data": {"value": [1, 2]}});
        for wire in [Wire::JsonRpc, Wire::Rest] {
            let there = message_out(&message(), wire);
            let wrapped = match wire {
                Wire::JsonRpc => there,
                Wire::Rest => json!({"message": there}),
            };
            let back = stream_response(wrapped, wire);
            assert_eq!(back, json!({"message": expected}), "{wire:?}");
        }
    }

    #[test]
    fn answers_read_back_as_1_0_on_json_rpc() {
        let task_0_3 = json!({"kind": "task", "id": "t", "contextId": "c",
            "status": {"state": "input-required", "message": {"kind": "message", "role": "agent", "messageId": "s",
                "parts": [{"kind": "text", "text": "how many?"}]}},
            "history": [{"kind": "message", "role": "user", "messageId": "u", "parts": [{"kind": "text", "text": "book"}]}],
            "artifacts": [{"artifactId": "a", "name": "answer", "parts": [{"kind": "file", "file": {"uri": "https://x", "name": "x"}}]}]});
        let want = json!({"id": "t", "contextId": "c",
            "status": {"state": "TASK_STATE_INPUT_REQUIRED", "message": {"role": "ROLE_AGENT", "messageId": "s",
                "parts": [{"text": "how many?"}]}},
            "history": [{"role": "ROLE_USER", "messageId": "u", "parts": [{"text": "book"}]}],
            "artifacts": [{"artifactId": "a", "name": "answer", "parts": [{"url": "https://x", "filename": "x"}]}]});
        assert_eq!(task(task_0_3.clone(), Wire::JsonRpc), want);
        assert_eq!(stream_response(task_0_3, Wire::JsonRpc), json!({"task": want}));
        let update = json!({"kind": "artifact-update", "taskId": "t", "contextId": "c", "append": true, "lastChunk": false,
            "artifact": {"artifactId": "a", "parts": [{"kind": "data", "data": {"x": 1}}]}});
        assert_eq!(
            stream_response(update, Wire::JsonRpc),
            json!({"artifactUpdate": {"taskId": "t", "contextId": "c", "append": true, "lastChunk": false,
                "artifact": {"artifactId": "a", "parts": [{"data": {"x": 1}}]}}})
        );
        for (state, want) in [
            ("canceled", "TASK_STATE_CANCELED"),
            ("unknown", "TASK_STATE_UNSPECIFIED"),
            ("auth-required", "TASK_STATE_AUTH_REQUIRED"),
        ] {
            let s = status_in(json!({"state": state}), Wire::JsonRpc);
            assert_eq!(s["state"], want);
        }
        // a 1.0 answer is left as it is
        let v1 = json!({"task": {"id": "t", "status": {"state": "TASK_STATE_WORKING"}}});
        assert_eq!(stream_response(v1.clone(), Wire::JsonRpc), v1);
    }

    #[test]
    fn answers_read_back_as_1_0_on_http_json() {
        let event = json!({"statusUpdate": {"taskId": "t", "contextId": "c", "final": true,
            "status": {"state": "TASK_STATE_CANCELLED", "message": {"role": "ROLE_AGENT", "messageId": "s",
                "content": [{"data": {"data": {"why": "asked"}}}]}}}});
        assert_eq!(
            stream_response(event, Wire::Rest),
            json!({"statusUpdate": {"taskId": "t", "contextId": "c",
                "status": {"state": "TASK_STATE_CANCELED", "message": {"role": "ROLE_AGENT", "messageId": "s",
                    "parts": [{"data": {"why": "asked"}}]}}}})
        );
        let t = json!({"id": "t", "status": {"state": "TASK_STATE_COMPLETED"},
            "artifacts": [{"artifactId": "a", "parts": [{"file": {"fileWithBytes": "aGk=", "mimeType": "text/plain"}}]}]});
        assert_eq!(
            task(t, Wire::Rest)["artifacts"][0]["parts"][0],
            json!({"raw": "aGk=", "mediaType": "text/plain"})
        );
    }

    #[test]
    fn methods_and_versions() {
        for (name, op) in V0_3_METHODS {
            assert_eq!(method(op), name);
        }
        assert_eq!(method(A2aOperation::SendMessage), "message/send");
        for (v, is) in [
            ("0.3", true),
            ("0.3.0", true),
            ("0.4.1", true),
            ("1.0", false),
            ("", false),
            ("0", false),
            ("0.x", false),
        ] {
            assert_eq!(is_version(v), is, "{v}");
        }
    }
}
