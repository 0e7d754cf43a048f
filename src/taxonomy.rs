//! One error taxonomy for every protocol.
//!
//! An E2A failure has a protocol-neutral [`ErrorKind`]. [`ERROR_TABLE`] maps each kind to the
//! code it has on every peer protocol, so the same failure reads the same way everywhere:
//!
//! | kind | E2A code | ACP JSON-RPC | A2A JSON-RPC | A2A task state | AG-UI `RUN_ERROR` code | HTTP |
//! |---|---|---|---|---|---|---|
//! | parse_error | `E2A.INVALID_JSON` | -32700 | -32700 | — | `PARSE_ERROR` | 400 |
//! | invalid_request | `E2A.INVALID_REQUEST` | -32600 | -32600 | `TASK_STATE_REJECTED` | `INVALID_REQUEST` | 400 |
//! | method_not_found | `E2A.METHOD_NOT_FOUND` | -32601 | -32601 | `TASK_STATE_REJECTED` | `METHOD_NOT_FOUND` | 404 |
//! | invalid_params | `E2A.INVALID_PARAMS` | -32602 | -32602 | `TASK_STATE_REJECTED` | `INVALID_PARAMS` | 422 |
//! | internal | `E2A.INTERNAL` | -32603 | -32603 | `TASK_STATE_FAILED` | `INTERNAL_ERROR` | 500 |
//! | agent_error | `E2A.AGENT_ERROR` | -32603 | -32603 | `TASK_STATE_FAILED` | `AGENT_ERROR` | 502 |
//! | auth_required | `E2A.AUTH_REQUIRED` | -32000 | -32603 | `TASK_STATE_AUTH_REQUIRED` | `AUTH_REQUIRED` | 401 |
//! | not_found | `E2A.NOT_FOUND` | -32002 | -32001 | `TASK_STATE_FAILED` | `NOT_FOUND` | 404 |
//! | not_cancelable | `E2A.NOT_CANCELABLE` | -32603 | -32002 | — | `NOT_CANCELABLE` | 409 |
//! | unsupported_operation | `E2A.UNSUPPORTED_OPERATION` | -32601 | -32004 | `TASK_STATE_REJECTED` | `UNSUPPORTED_OPERATION` | 400 |
//! | content_type_not_supported | `E2A.CONTENT_TYPE_NOT_SUPPORTED` | -32602 | -32005 | `TASK_STATE_REJECTED` | `CONTENT_TYPE_NOT_SUPPORTED` | 415 |
//! | invalid_agent_response | `E2A.INVALID_AGENT_RESPONSE` | -32603 | -32006 | `TASK_STATE_FAILED` | `INVALID_AGENT_RESPONSE` | 502 |
//! | version_not_supported | `E2A.VERSION_NOT_SUPPORTED` | -32600 | -32009 | `TASK_STATE_REJECTED` | `VERSION_NOT_SUPPORTED` | 400 |
//! | cancelled | `E2A.CANCELLED` | (result `stopReason: cancelled`) -32800 | -32603 | `TASK_STATE_CANCELED` | `CANCELLED` | 499 |
//! | timeout | `E2A.TIMEOUT` | -32603 | -32603 | `TASK_STATE_FAILED` | `TIMEOUT` | 504 |
//!
//! ACP -32002 ("resource not found") and A2A -32002 ("task not cancelable") are different
//! failures; going through the kind keeps them apart.

use crate::ResponseStatus;

/// A protocol-neutral failure kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The message is not valid JSON.
    ParseError,
    /// The request is malformed.
    InvalidRequest,
    /// The method does not exist.
    MethodNotFound,
    /// The params are invalid.
    InvalidParams,
    /// An internal error of the gateway or SDK.
    Internal,
    /// The agent failed (the default for legacy agent errors).
    AgentError,
    /// Authentication is required.
    AuthRequired,
    /// The task, session or resource does not exist.
    NotFound,
    /// The task cannot be cancelled.
    NotCancelable,
    /// The operation is not supported.
    UnsupportedOperation,
    /// The content type is not supported.
    ContentTypeNotSupported,
    /// The agent answered something invalid.
    InvalidAgentResponse,
    /// The protocol version is not supported.
    VersionNotSupported,
    /// The request was cancelled (not an error on ACP: the turn ends with `stopReason: cancelled`).
    Cancelled,
    /// The agent did not answer in time.
    Timeout,
}

/// How one [`ErrorKind`] reads on every protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ErrorMapping {
    /// The kind.
    pub kind: ErrorKind,
    /// Stable snake_case name.
    pub name: &'static str,
    /// E2A string code written into `e2a.error` bodies.
    pub e2a_code: &'static str,
    /// ACP JSON-RPC error code.
    pub acp_code: i64,
    /// A2A JSON-RPC error code.
    pub a2a_code: i64,
    /// A2A task state the task ends in (`None`: the task state does not change).
    pub a2a_task_state: Option<&'static str>,
    /// AG-UI `RUN_ERROR` code.
    pub agui_code: &'static str,
    /// HTTP status code.
    pub http_status: u16,
}

macro_rules! row {
    ($k:ident, $n:literal, $c:literal, $acp:literal, $a2a:literal, $st:expr, $ag:literal, $http:literal) => {
        ErrorMapping {
            kind: ErrorKind::$k,
            name: $n,
            e2a_code: $c,
            acp_code: $acp,
            a2a_code: $a2a,
            a2a_task_state: $st,
            agui_code: $ag,
            http_status: $http,
        }
    };
}

/// The one table (see the module docs).
pub const ERROR_TABLE: [ErrorMapping; 15] = [
    row!(
        ParseError,
        "parse_error",
        "E2A.INVALID_JSON",
        -32700,
        -32700,
        None,
        "PARSE_ERROR",
        400
    ),
    row!(
        InvalidRequest,
        "invalid_request",
        "E2A.INVALID_REQUEST",
        -32600,
        -32600,
        Some("TASK_STATE_REJECTED"),
        "INVALID_REQUEST",
        400
    ),
    row!(
        MethodNotFound,
        "method_not_found",
        "E2A.METHOD_NOT_FOUND",
        -32601,
        -32601,
        Some("TASK_STATE_REJECTED"),
        "METHOD_NOT_FOUND",
        404
    ),
    row!(
        InvalidParams,
        "invalid_params",
        "E2A.INVALID_PARAMS",
        -32602,
        -32602,
        Some("TASK_STATE_REJECTED"),
        "INVALID_PARAMS",
        422
    ),
    row!(
        Internal,
        "internal",
        "E2A.INTERNAL",
        -32603,
        -32603,
        Some("TASK_STATE_FAILED"),
        "INTERNAL_ERROR",
        500
    ),
    row!(
        AgentError,
        "agent_error",
        "E2A.AGENT_ERROR",
        -32603,
        -32603,
        Some("TASK_STATE_FAILED"),
        "AGENT_ERROR",
        502
    ),
    row!(
        AuthRequired,
        "auth_required",
        "E2A.AUTH_REQUIRED",
        -32000,
        -32603,
        Some("TASK_STATE_AUTH_REQUIRED"),
        "AUTH_REQUIRED",
        401
    ),
    row!(
        NotFound,
        "not_found",
        "E2A.NOT_FOUND",
        -32002,
        -32001,
        Some("TASK_STATE_FAILED"),
        "NOT_FOUND",
        404
    ),
    row!(
        NotCancelable,
        "not_cancelable",
        "E2A.NOT_CANCELABLE",
        -32603,
        -32002,
        None,
        "NOT_CANCELABLE",
        409
    ),
    row!(
        UnsupportedOperation,
        "unsupported_operation",
        "E2A.UNSUPPORTED_OPERATION",
        -32601,
        -32004,
        Some("TASK_STATE_REJECTED"),
        "UNSUPPORTED_OPERATION",
        400
    ),
    row!(
        ContentTypeNotSupported,
        "content_type_not_supported",
        "E2A.CONTENT_TYPE_NOT_SUPPORTED",
        -32602,
        -32005,
        Some("TASK_STATE_REJECTED"),
        "CONTENT_TYPE_NOT_SUPPORTED",
        415
    ),
    row!(
        InvalidAgentResponse,
        "invalid_agent_response",
        "E2A.INVALID_AGENT_RESPONSE",
        -32603,
        -32006,
        Some("TASK_STATE_FAILED"),
        "INVALID_AGENT_RESPONSE",
        502
    ),
    row!(
        VersionNotSupported,
        "version_not_supported",
        "E2A.VERSION_NOT_SUPPORTED",
        -32600,
        -32009,
        Some("TASK_STATE_REJECTED"),
        "VERSION_NOT_SUPPORTED",
        400
    ),
    row!(
        Cancelled,
        "cancelled",
        "E2A.CANCELLED",
        -32800,
        -32603,
        Some("TASK_STATE_CANCELED"),
        "CANCELLED",
        499
    ),
    row!(
        Timeout,
        "timeout",
        "E2A.TIMEOUT",
        -32603,
        -32603,
        Some("TASK_STATE_FAILED"),
        "TIMEOUT",
        504
    ),
];

impl ErrorKind {
    /// This kind's row of [`ERROR_TABLE`].
    pub fn mapping(self) -> &'static ErrorMapping {
        ERROR_TABLE.iter().find(|m| m.kind == self).unwrap_or(&ERROR_TABLE[4])
    }

    /// The kind of an `e2a.error` body `code`: an E2A string code of the table (`chat.error`
    /// reads as an agent error), or a JSON-RPC integer code read as `protocol` (`"acp"` or
    /// `"a2a"`) defines it. Unknown codes are [`ErrorKind::AgentError`] for strings and
    /// [`ErrorKind::Internal`] for integers.
    ///
    /// ```
    /// use e2a::taxonomy::ErrorKind;
    /// let code = serde_json::json!(-32002);
    /// assert_eq!(ErrorKind::from_code(&code, "acp"), ErrorKind::NotFound);
    /// assert_eq!(ErrorKind::from_code(&code, "a2a"), ErrorKind::NotCancelable);
    /// assert_eq!(ErrorKind::from_code(&serde_json::json!("E2A.CANCELLED"), "e2a"), ErrorKind::Cancelled);
    /// ```
    pub fn from_code(code: &serde_json::Value, protocol: &str) -> ErrorKind {
        if let Some(s) = code.as_str() {
            return ERROR_TABLE
                .iter()
                .find(|m| m.e2a_code == s)
                .map(|m| m.kind)
                .unwrap_or(ErrorKind::AgentError);
        }
        let Some(n) = code.as_i64().filter(|_| !code.is_boolean()) else {
            return ErrorKind::AgentError;
        };
        let found = match protocol {
            "a2a" => ERROR_TABLE.iter().find(|m| m.a2a_code == n),
            _ => ERROR_TABLE.iter().find(|m| m.acp_code == n),
        };
        found.map(|m| m.kind).unwrap_or(ErrorKind::Internal)
    }

    /// The kind of a response frame, when it is a failure (`e2a.error`, or `failed` status).
    ///
    /// ```
    /// let r = e2a::E2AResponse::from_value(&serde_json::json!({"response_kind": "e2a.error", "body": {"code": "E2A.TIMEOUT"}})).unwrap();
    /// assert_eq!(e2a::taxonomy::ErrorKind::of_response(&r), Some(e2a::taxonomy::ErrorKind::Timeout));
    /// ```
    pub fn of_response(resp: &crate::E2AResponse) -> Option<ErrorKind> {
        let failed = resp.response_kind == "e2a.error" || resp.status() == Some(ResponseStatus::Failed);
        failed.then(|| {
            let protocol = resp
                .body
                .get("external")
                .and_then(|e| e.get("protocol"))
                .and_then(serde_json::Value::as_str)
                .unwrap_or("e2a");
            ErrorKind::from_code(resp.body.get("code").unwrap_or(&serde_json::Value::Null), protocol)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_complete_and_unique() {
        for (i, a) in ERROR_TABLE.iter().enumerate() {
            assert_eq!(a.kind.mapping().name, a.name);
            for b in &ERROR_TABLE[i + 1..] {
                assert_ne!(a.e2a_code, b.e2a_code);
                assert_ne!(a.kind, b.kind);
            }
        }
    }

    #[test]
    fn a2a_codes_roundtrip_through_the_kind() {
        for m in ERROR_TABLE.iter().filter(|m| (-32009..=-32001).contains(&m.a2a_code)) {
            assert_eq!(ErrorKind::from_code(&m.a2a_code.into(), "a2a"), m.kind);
        }
    }
}
