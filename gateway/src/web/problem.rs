//! `application/problem+json` (RFC 9457) errors carrying the e2a taxonomy code and the JSON
//! pointer of the offending field.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use e2a::taxonomy::ErrorKind;
use e2a::{LimitKind, Violation};
use serde_json::Value;

/// The media type of every error the gateway answers.
pub const PROBLEM_JSON: &str = "application/problem+json";

/// A request the gateway refused before (or instead of) running an agent.
#[derive(Debug, Clone)]
pub struct Problem {
    /// The taxonomy kind (gives `code` and, unless overridden, the HTTP status).
    pub kind: ErrorKind,
    /// The HTTP status.
    pub status: StatusCode,
    /// What went wrong (never the offending value).
    pub detail: String,
    /// JSON pointer of the offending field (`""` for the whole body), when there is one.
    pub pointer: Option<String>,
    /// Every violation found, each with its pointer.
    pub errors: Vec<Violation>,
    /// Seconds after which to retry (`Retry-After`).
    pub retry_after: Option<u64>,
    /// Whether to send `WWW-Authenticate: Bearer`.
    pub authenticate: bool,
    /// Methods allowed on the resource (`Allow`, for 405).
    pub allow: Option<&'static str>,
}

impl Problem {
    /// A problem of `kind` with the kind's HTTP status.
    pub fn new(kind: ErrorKind, detail: impl Into<String>) -> Self {
        let status = StatusCode::from_u16(kind.mapping().http_status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        Problem {
            kind,
            status,
            detail: detail.into(),
            pointer: None,
            errors: Vec::new(),
            retry_after: None,
            authenticate: false,
            allow: None,
        }
    }

    /// Overrides the HTTP status.
    pub fn with_status(mut self, status: StatusCode) -> Self {
        self.status = status;
        self
    }

    /// Names the offending field.
    pub fn at(mut self, pointer: impl Into<String>) -> Self {
        self.pointer = Some(pointer.into());
        self
    }

    /// `401`: no or a wrong bearer token.
    pub fn unauthorized() -> Self {
        let mut p = Problem::new(ErrorKind::AuthRequired, "a valid bearer token is required");
        p.authenticate = true;
        p
    }

    /// `503`: too many streams or shutting down.
    pub fn unavailable(detail: impl Into<String>, retry_after: u64) -> Self {
        let mut p = Problem::new(ErrorKind::Internal, detail).with_status(StatusCode::SERVICE_UNAVAILABLE);
        p.retry_after = Some(retry_after);
        p
    }

    /// The problem for an error of the e2a readers: invalid JSON is `400`, a limit `413` (size)
    /// or `400` (depth), a wrong field `422` naming the field.
    pub fn from_read_error(e: &e2a::Error) -> Self {
        match e {
            e2a::Error::Json { .. } => Problem::new(ErrorKind::ParseError, e.to_string()).at(""),
            e2a::Error::Limit { limit, .. } => {
                let p = Problem::new(ErrorKind::InvalidRequest, e.to_string()).at("");
                match limit {
                    LimitKind::Depth => p,
                    _ => p.with_status(StatusCode::PAYLOAD_TOO_LARGE),
                }
            }
            e2a::Error::Field(_) | e2a::Error::Schema(_) => {
                let errors = e.violations();
                let mut p = Problem::new(ErrorKind::InvalidParams, e.to_string());
                p.pointer = errors.first().map(|v| v.pointer.clone());
                p.errors = errors;
                p
            }
            _ => Problem::new(ErrorKind::InvalidRequest, e.to_string()),
        }
    }

    /// The problem document.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self.document()).unwrap_or_default()
    }

    /// The problem document as written.
    fn document(&self) -> Document<'_> {
        let m = self.kind.mapping();
        Document {
            type_: format!("urn:e2a:problem:{}", m.name),
            title: self.status.canonical_reason().unwrap_or("Error"),
            status: self.status.as_u16(),
            detail: &self.detail,
            code: m.e2a_code,
            pointer: self.pointer.as_deref(),
            trace_id: crate::web::trace::current_trace_id().map(|t| t.to_string()),
            errors: self
                .errors
                .iter()
                .map(|e| FieldError {
                    pointer: &e.pointer,
                    detail: &e.reason,
                })
                .collect(),
        }
    }
}

/// An `application/problem+json` document (RFC 9457) with the e2a members: `code` (the error
/// taxonomy's), `pointer` (the first offending field), `trace_id`, `errors` (every field).
#[derive(serde::Serialize)]
struct Document<'a> {
    #[serde(rename = "type")]
    type_: String,
    title: &'a str,
    status: u16,
    detail: &'a str,
    code: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pointer: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    trace_id: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    errors: Vec<FieldError<'a>>,
}

/// One offending field of a problem.
#[derive(serde::Serialize)]
struct FieldError<'a> {
    pointer: &'a str,
    detail: &'a str,
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        let body = crate::json::text(&self.document());
        let mut resp = (self.status, body).into_response();
        let h = resp.headers_mut();
        h.insert(header::CONTENT_TYPE, HeaderValue::from_static(PROBLEM_JSON));
        if self.authenticate {
            h.insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"e2a\""),
            );
        }
        if let Some(s) = self.retry_after {
            h.insert(header::RETRY_AFTER, HeaderValue::from(s));
        }
        if let Some(a) = self.allow {
            h.insert(header::ALLOW, HeaderValue::from_static(a));
        }
        // a binding with an error form of its own (A2A) answers the problem in that form
        resp.extensions_mut().insert(self);
        resp
    }
}

impl From<crate::web::body::BodyError> for Problem {
    fn from(e: crate::web::body::BodyError) -> Self {
        match e {
            crate::web::body::BodyError::MediaType => Problem::new(
                ErrorKind::ContentTypeNotSupported,
                "the request body must be JSON (Content-Type: application/json)",
            ),
            crate::web::body::BodyError::Input(e) => Problem::from_read_error(&e),
            crate::web::body::BodyError::Timeout(t) => Problem::new(
                ErrorKind::Timeout,
                format!("the request body did not arrive within {} s", t.as_secs()),
            )
            .with_status(axum::http::StatusCode::REQUEST_TIMEOUT),
        }
    }
}

impl From<crate::web::last_event_id::NotASequence> for Problem {
    fn from(_: crate::web::last_event_id::NotASequence) -> Self {
        Problem::new(
            ErrorKind::InvalidRequest,
            crate::web::last_event_id::NotASequence::MESSAGE,
        )
        .at("/headers/Last-Event-ID")
    }
}
