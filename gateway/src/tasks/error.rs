//! A2A errors: one [`A2aError`] answered as a JSON-RPC error (code, message, `data` with a
//! `google.rpc.ErrorInfo`) on the JSON-RPC binding and as `application/problem+json` (with the
//! A2A `type` and the `google.rpc.Status` member the official clients read) on HTTP+JSON.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use e2a::taxonomy::ErrorKind;
use serde_json::{json, Value};

/// The A2A error kinds (A2A 1.0 §5.4 plus the JSON-RPC standard errors).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum A2aErrorKind {
    /// `-32700`: the body is not JSON.
    JsonParse,
    /// `-32600`: not a valid request object.
    InvalidRequest,
    /// `-32601`: no such method.
    MethodNotFound,
    /// `-32602`: the params are invalid.
    InvalidParams,
    /// `-32603`: the gateway failed.
    Internal,
    /// `-32001`: no such task (or not the caller's).
    TaskNotFound,
    /// `-32002`: the task is already in a terminal state.
    TaskNotCancelable,
    /// `-32003`: push notifications are not supported.
    PushNotificationNotSupported,
    /// `-32004`: the operation is not supported (in this state).
    UnsupportedOperation,
    /// `-32005`: a media type of the request is not supported.
    ContentTypeNotSupported,
    /// `-32006`: the agent answered something invalid.
    InvalidAgentResponse,
    /// `-32007`: no extended agent card is configured.
    ExtendedAgentCardNotConfigured,
    /// `-32008`: a required extension was not requested.
    ExtensionSupportRequired,
    /// `-32009`: the `A2A-Version` is not supported.
    VersionNotSupported,
}

impl A2aErrorKind {
    /// The JSON-RPC `error.code`.
    pub fn code(self) -> i64 {
        use A2aErrorKind::*;
        match self {
            JsonParse => -32700,
            InvalidRequest => -32600,
            MethodNotFound => -32601,
            InvalidParams => -32602,
            Internal => -32603,
            TaskNotFound => -32001,
            TaskNotCancelable => -32002,
            PushNotificationNotSupported => -32003,
            UnsupportedOperation => -32004,
            ContentTypeNotSupported => -32005,
            InvalidAgentResponse => -32006,
            ExtendedAgentCardNotConfigured => -32007,
            ExtensionSupportRequired => -32008,
            VersionNotSupported => -32009,
        }
    }

    /// The `google.rpc.ErrorInfo` reason (the error's name in UPPER_SNAKE_CASE).
    pub fn reason(self) -> &'static str {
        use A2aErrorKind::*;
        match self {
            JsonParse => "JSON_PARSE",
            InvalidRequest => "INVALID_REQUEST",
            MethodNotFound => "METHOD_NOT_FOUND",
            InvalidParams => "INVALID_PARAMS",
            Internal => "INTERNAL_ERROR",
            TaskNotFound => "TASK_NOT_FOUND",
            TaskNotCancelable => "TASK_NOT_CANCELABLE",
            PushNotificationNotSupported => "PUSH_NOTIFICATION_NOT_SUPPORTED",
            UnsupportedOperation => "UNSUPPORTED_OPERATION",
            ContentTypeNotSupported => "CONTENT_TYPE_NOT_SUPPORTED",
            InvalidAgentResponse => "INVALID_AGENT_RESPONSE",
            ExtendedAgentCardNotConfigured => "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
            ExtensionSupportRequired => "EXTENSION_SUPPORT_REQUIRED",
            VersionNotSupported => "VERSION_NOT_SUPPORTED",
        }
    }

    /// The HTTP status on the HTTP+JSON binding (A2A 1.0 §5.4).
    pub fn http_status(self) -> StatusCode {
        use A2aErrorKind::*;
        match self {
            TaskNotFound | MethodNotFound => StatusCode::NOT_FOUND,
            TaskNotCancelable => StatusCode::CONFLICT,
            ContentTypeNotSupported => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            InvalidAgentResponse => StatusCode::BAD_GATEWAY,
            Internal => StatusCode::INTERNAL_SERVER_ERROR,
            _ => StatusCode::BAD_REQUEST,
        }
    }

    /// The `google.rpc.Code` name of the HTTP+JSON `error.status` (A2A 1.0 §5.4).
    pub fn grpc_status(self) -> &'static str {
        use A2aErrorKind::*;
        match self {
            TaskNotFound | MethodNotFound => "NOT_FOUND",
            Internal | InvalidAgentResponse => "INTERNAL",
            PushNotificationNotSupported | UnsupportedOperation | VersionNotSupported => "UNIMPLEMENTED",
            JsonParse | InvalidRequest | InvalidParams | ContentTypeNotSupported => "INVALID_ARGUMENT",
            _ => "FAILED_PRECONDITION",
        }
    }

    /// The kebab-case slug of the problem `type` URI.
    fn slug(self) -> String {
        self.reason().to_lowercase().replace('_', "-")
    }

    /// The A2A error a failed E2A frame of `kind` reads as.
    pub fn from_e2a(kind: ErrorKind) -> Self {
        match kind.mapping().a2a_code {
            -32700 => A2aErrorKind::JsonParse,
            -32600 => A2aErrorKind::InvalidRequest,
            -32601 => A2aErrorKind::MethodNotFound,
            -32602 => A2aErrorKind::InvalidParams,
            -32001 => A2aErrorKind::TaskNotFound,
            -32002 => A2aErrorKind::TaskNotCancelable,
            -32004 => A2aErrorKind::UnsupportedOperation,
            -32005 => A2aErrorKind::ContentTypeNotSupported,
            -32006 => A2aErrorKind::InvalidAgentResponse,
            -32009 => A2aErrorKind::VersionNotSupported,
            _ => A2aErrorKind::Internal,
        }
    }
}

/// An A2A error with its message (never a credential or a request body).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct A2aError {
    /// Which error.
    pub kind: A2aErrorKind,
    /// What went wrong.
    pub message: String,
}

impl A2aError {
    /// An error of `kind`.
    pub fn new(kind: A2aErrorKind, message: impl Into<String>) -> Self {
        A2aError {
            kind,
            message: message.into(),
        }
    }

    /// `-32001` for task `id`.
    pub fn task_not_found(id: &str) -> Self {
        Self::new(A2aErrorKind::TaskNotFound, format!("task {id} not found"))
    }

    /// `-32602` with a message.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(A2aErrorKind::InvalidParams, message)
    }

    /// `-32603` with a message.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(A2aErrorKind::Internal, message)
    }

    /// The `data` / `details` list: one `google.rpc.ErrorInfo`.
    pub fn details(&self) -> Value {
        json!([{
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": self.kind.reason(),
            "domain": "a2a-protocol.org",
            "metadata": {}
        }])
    }

    /// The JSON-RPC error response for request `id`.
    pub fn to_jsonrpc(&self, id: &Value) -> Value {
        json!({"jsonrpc": "2.0", "id": id, "error": {
            "code": self.kind.code(), "message": self.message, "data": self.details()}})
    }

    /// The HTTP+JSON problem document: RFC 9457 members with the A2A `type`, and `error` as a
    /// `google.rpc.Status` (what the official SDKs parse).
    pub fn to_problem(&self) -> Value {
        let status = self.kind.http_status();
        json!({
            "type": format!("https://a2a-protocol.org/errors/{}", self.kind.slug()),
            "title": status.canonical_reason().unwrap_or("Error"),
            "status": status.as_u16(),
            "detail": self.message,
            "code": self.kind.code(),
            "error": {"code": status.as_u16(), "status": self.kind.grpc_status(),
                      "message": self.message, "details": self.details()}
        })
    }
}

impl From<crate::store::StoreError> for A2aError {
    fn from(e: crate::store::StoreError) -> Self {
        tracing::error!(error = %e, "task store failed");
        A2aError::internal("the task store failed")
    }
}

/// An [`A2aError`] answered on the HTTP+JSON binding.
#[derive(Debug)]
pub struct RestError(pub A2aError);

impl From<A2aError> for RestError {
    fn from(e: A2aError) -> Self {
        RestError(e)
    }
}

impl IntoResponse for RestError {
    fn into_response(self) -> Response {
        let status = self.0.kind.http_status();
        let mut resp = (status, self.0.to_problem().to_string()).into_response();
        resp.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(crate::web::problem::PROBLEM_JSON),
        );
        resp
    }
}
