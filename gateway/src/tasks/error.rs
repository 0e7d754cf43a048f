//! A2A errors: one [`A2aError`] answered as a JSON-RPC error (code, message, `data` with a
//! `google.rpc.ErrorInfo`) on the JSON-RPC binding and as `application/problem+json` (with the
//! A2A `type` and the `google.rpc.Status` member the official clients read) on HTTP+JSON.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use e2a::types::{A2aErrorInfo, A2aProblem, A2aRpcCode, A2aRpcStatus, JsonRpcErrorBody};
use serde_json::Value;

pub use e2a::a2a::errors::A2aErrorKind;

/// An A2A error with its message (never a credential or a request body).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct A2aError {
    /// Which error.
    pub kind: A2aErrorKind,
    /// What went wrong.
    pub message: String,
    /// At capacity: the seconds after which to try again (answered as `503` with
    /// `Retry-After`).
    pub retry_after: Option<u64>,
    /// The HTTP status when it is not the kind's (an HTTP-level refusal: `401`, `403`, `405`,
    /// `413`, `429`…); `error.status` is then the `google.rpc.Code` of that status.
    pub status: Option<StatusCode>,
    /// The JSON pointer of the request field at fault (`/params/pageSize`), when one is: the
    /// `pointer` of the error's `google.rpc.ErrorInfo` metadata.
    pub pointer: Option<String>,
}

impl A2aError {
    /// An error of `kind`.
    pub fn new(kind: A2aErrorKind, message: impl Into<String>) -> Self {
        A2aError {
            kind,
            message: message.into(),
            retry_after: None,
            status: None,
            pointer: None,
        }
    }

    /// The same error answered with HTTP `status`.
    pub fn with_status(mut self, status: StatusCode) -> Self {
        self.status = Some(status);
        self
    }

    /// A refusal the web layer made before any A2A handler ran (authentication, rate limit,
    /// routing, body limits): the A2A error its E2A problem reads as, with the same status.
    pub(crate) fn from_problem(p: &crate::web::problem::Problem) -> Self {
        A2aError {
            retry_after: p.retry_after,
            ..A2aError::new(A2aErrorKind::from_e2a(p.kind), p.detail.clone()).with_status(p.status)
        }
    }

    /// The gateway is at capacity or shutting down: `-32603`, answered as `503` with
    /// `Retry-After: retry_after` (and `UNAVAILABLE` as the `google.rpc.Status`).
    pub fn unavailable(message: impl Into<String>, retry_after: u64) -> Self {
        A2aError {
            retry_after: Some(retry_after),
            ..Self::new(A2aErrorKind::Internal, message)
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

    /// The `data` / `details` entry: a `google.rpc.ErrorInfo`, its `metadata.traceId` the
    /// request's trace id (what ties the error to the gateway's log and the next hops).
    pub fn error_info(&self) -> A2aErrorInfo {
        A2aErrorInfo {
            type_: "type.googleapis.com/google.rpc.ErrorInfo".into(),
            reason: self.reason().into(),
            domain: "a2a-protocol.org".into(),
            metadata: self.metadata(),
        }
    }

    /// The `google.rpc.ErrorInfo` metadata: the request's `traceId` (what ties the error to
    /// the gateway's log and the next hops) and the `pointer` of the field at fault.
    pub fn metadata(&self) -> std::collections::BTreeMap<String, String> {
        let trace = crate::web::trace::current_trace_id().map(|t| ("traceId".to_string(), t.to_string()));
        let pointer = self.pointer.clone().map(|p| ("pointer".to_string(), p));
        trace.into_iter().chain(pointer).collect()
    }

    /// The JSON-RPC error response for request `id`.
    pub fn to_jsonrpc(&self, id: &Value) -> Value {
        #[derive(serde::Serialize)]
        struct ErrorResponse<'a> {
            jsonrpc: &'static str,
            id: &'a Value,
            error: JsonRpcErrorBody,
        }
        let error = JsonRpcErrorBody {
            code: Some(self.kind.mapping().code),
            message: Some(self.message.clone()),
            data: serde_json::to_value([self.error_info()]).ok(),
            extra: serde_json::Map::new(),
        };
        serde_json::to_value(ErrorResponse {
            jsonrpc: "2.0",
            id,
            error,
        })
        .unwrap_or_default()
    }

    /// The HTTP+JSON problem document: RFC 9457 members with the A2A `type`, and `error` as a
    /// `google.rpc.Status` (what the official SDKs parse).
    pub fn to_problem(&self) -> A2aProblem {
        let m = self.kind.mapping();
        let status = self.http_status();
        // the problem `type` names the error in kebab case (`task-not-found`)
        let slug = self.reason().to_lowercase().replace('_', "-");
        A2aProblem {
            type_: format!("https://a2a-protocol.org/errors/{slug}"),
            title: status.canonical_reason().unwrap_or("Error").into(),
            status: status.as_u16().into(),
            detail: self.message.clone(),
            code: m.code,
            error: A2aRpcStatus {
                code: status.as_u16().into(),
                status: self.grpc_status().parse().unwrap_or(A2aRpcCode::Unknown),
                message: self.message.clone(),
                details: vec![self.error_info()],
            },
        }
    }

    /// The HTTP status on the HTTP+JSON binding.
    pub fn http_status(&self) -> StatusCode {
        if let Some(s) = self.status {
            return s;
        }
        if self.retry_after.is_some() {
            return StatusCode::SERVICE_UNAVAILABLE;
        }
        StatusCode::from_u16(self.kind.mapping().http_status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }
}

impl A2aError {
    /// The `google.rpc.Code` name of HTTP+JSON's `error.status`: the kind's, or that of the
    /// HTTP status the error is answered with when it is not the kind's (AIP-193's mapping).
    pub fn grpc_status(&self) -> &'static str {
        let status = match (self.status, self.retry_after) {
            (Some(s), _) => s,
            (None, Some(_)) => StatusCode::SERVICE_UNAVAILABLE,
            (None, None) => return self.kind.mapping().grpc_status,
        };
        match status.as_u16() {
            400 | 413 | 415 => "INVALID_ARGUMENT",
            401 => "UNAUTHENTICATED",
            403 => "PERMISSION_DENIED",
            404 => "NOT_FOUND",
            405 | 501 => "UNIMPLEMENTED",
            408 | 504 => "DEADLINE_EXCEEDED",
            409 => "ABORTED",
            429 => "RESOURCE_EXHAUSTED",
            499 => "CANCELLED",
            503 => "UNAVAILABLE",
            _ => self.kind.mapping().grpc_status,
        }
    }

    /// The `google.rpc.ErrorInfo` reason: the kind's, but for a refusal A2A has no error of its
    /// own for — no or a wrong credential, a caller not allowed, over its rate limit — the
    /// `google.rpc.Code` that says it (`UNAUTHENTICATED`, `PERMISSION_DENIED`,
    /// `RESOURCE_EXHAUSTED`).
    pub fn reason(&self) -> &'static str {
        match self.status.map(|s| s.as_u16()) {
            Some(401 | 403 | 429) => self.grpc_status(),
            _ => self.kind.mapping().reason,
        }
    }

    /// Adds `Retry-After` to `resp` when the error says when to try again.
    pub(crate) fn add_retry_after(&self, resp: &mut Response) {
        if let Some(secs) = self.retry_after {
            resp.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
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
        let status = self.0.http_status();
        let mut resp = (status, crate::json::text(&self.0.to_problem())).into_response();
        resp.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(crate::web::problem::PROBLEM_JSON),
        );
        self.0.add_retry_after(&mut resp);
        resp.extensions_mut().insert(Answered);
        resp
    }
}

/// Marks a response an A2A binding answered in its own form (the error layers leave it).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Answered;
