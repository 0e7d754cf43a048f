//! JSON-RPC 2.0 messages as ACP's stdio transport carries them: the error codes, [`RpcError`],
//! the wire forms read and written, and what a [`Peer`](super::peer::Peer) hands over
//! ([`Incoming`]).

use std::fmt;

use agent_client_protocol_schema::v1 as acp;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Longest accepted line (one JSON-RPC message), in bytes.
pub const MAX_LINE: usize = 16 * 1024 * 1024;

/// JSON-RPC error codes used by the ACP binding.
pub mod codes {
    /// Invalid JSON.
    pub const PARSE_ERROR: i64 = -32700;
    /// Not a valid request object.
    pub const INVALID_REQUEST: i64 = -32600;
    /// Unknown method.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// Invalid params.
    pub const INVALID_PARAMS: i64 = -32602;
    /// Internal error.
    pub const INTERNAL_ERROR: i64 = -32603;
    /// ACP: authentication required.
    pub const AUTH_REQUIRED: i64 = -32000;
    /// ACP: resource (session) not found.
    pub const RESOURCE_NOT_FOUND: i64 = -32002;
    /// ACP: the request was cancelled (`$/cancel_request`).
    pub const REQUEST_CANCELLED: i64 = -32800;
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RpcError {
    /// Error code (an error object without one reads as an internal error).
    #[serde(default = "internal_error")]
    pub code: i64,
    /// Human-readable message.
    #[serde(default)]
    pub message: String,
    /// Optional data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

fn internal_error() -> i64 {
    codes::INTERNAL_ERROR
}

impl RpcError {
    /// An error with `code` and `message`.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// `-32602` naming the field at `pointer` (a JSON pointer into the params, `""` the params
    /// themselves) and why: the message says both, `data.pointer` is the pointer.
    pub fn invalid_params_at(pointer: &str, reason: impl fmt::Display) -> Self {
        let at = if pointer.is_empty() { "params" } else { pointer };
        RpcError {
            code: codes::INVALID_PARAMS,
            message: format!("invalid params at {at}: {reason}"),
            data: Some(Value::Object(serde_json::Map::from_iter([(
                "pointer".into(),
                pointer.into(),
            )]))),
        }
    }

    /// The error as a JSON-RPC `error` member.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// One JSON-RPC message as read: which of request, notification or response it is follows
/// from the members present (JSON-RPC 2.0 §4–5).
#[derive(Deserialize)]
pub(super) struct WireIn {
    #[serde(default)]
    pub(super) method: Option<String>,
    /// `Some(Value::Null)` is an explicit `"id": null`; `None` is no `id` member.
    #[serde(default, deserialize_with = "present")]
    pub(super) id: Option<Value>,
    #[serde(default)]
    pub(super) params: Value,
    #[serde(default)]
    pub(super) result: Value,
    #[serde(default)]
    pub(super) error: Option<RpcError>,
}

fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// One JSON-RPC message as written.
#[derive(Serialize)]
pub(super) struct WireOut<'a> {
    pub(super) jsonrpc: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) id: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) method: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) params: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) result: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) error: Option<&'a RpcError>,
}

impl<'a> WireOut<'a> {
    pub(super) const EMPTY: WireOut<'static> = WireOut {
        jsonrpc: "2.0",
        id: None,
        method: None,
        params: None,
        result: None,
        error: None,
    };

    pub(super) fn line(&self) -> String {
        let mut line = serde_json::to_string(self).unwrap_or_default();
        line.push('\n');
        line
    }
}

impl fmt::Display for RpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}

impl std::error::Error for RpcError {}

/// A message from the other side that is not a response.
#[derive(Debug, Clone)]
pub enum Incoming {
    /// A request: answer it with [`Peer::respond`](super::Peer::respond) or
    /// [`Peer::respond_error`](super::Peer::respond_error).
    Request {
        /// Its id.
        id: Value,
        /// Its method.
        method: String,
        /// Its params (`null` when absent).
        params: Value,
    },
    /// A notification.
    Notification {
        /// Its method.
        method: String,
        /// Its params (`null` when absent).
        params: Value,
    },
}

/// `params` read as `T`, the official type of its method (`null` reads as `{}`); a mismatch is
/// `-32602` naming the field: the message says where and why, `data.pointer` is the JSON
/// pointer.
pub fn read_params<T: DeserializeOwned>(params: &Value) -> Result<T, RpcError> {
    let empty = Value::Object(serde_json::Map::new());
    let params = if params.is_null() { &empty } else { params };
    serde_path_to_error::deserialize(params).map_err(|e| {
        RpcError::invalid_params_at(
            &crate::json::json_pointer(crate::json::path_members(e.path())),
            e.inner(),
        )
    })
}

/// The id a `$/cancel_request` names (its `requestId`, as the JSON-RPC id it is); `None` when
/// it names none.
pub fn cancelled_request(params: &Value) -> Option<Value> {
    let notification: acp::CancelRequestNotification = read_params(params).ok()?;
    serde_json::to_value(notification.request_id).ok()
}

/// The params of a `$/cancel_request` of the request `id`.
pub fn cancel_request_params(id: Value) -> Value {
    serde_json::from_value::<acp::RequestId>(id)
        .ok()
        .and_then(|id| serde_json::to_value(acp::CancelRequestNotification::new(id)).ok())
        .unwrap_or_default()
}
