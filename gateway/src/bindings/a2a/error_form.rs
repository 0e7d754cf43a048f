//! Every error under the A2A paths in the binding's own form: what the web layer answers
//! before an A2A handler runs — `401`/`403`/`429` of the auth layer, axum's `405`, an unknown
//! route's `404`, a body limit's `413` — is rewritten as an A2A error, its status and headers
//! (`WWW-Authenticate`, `Retry-After`, `Allow`) kept: on HTTP+JSON an AIP-193 problem
//! (`application/problem+json`, or `application/json` for a client that asks for it), on
//! JSON-RPC a JSON-RPC error (`id` null). What an A2A handler answered is left as it is.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use crate::tasks::error::{A2aError, A2aErrorKind, Answered, RestError};
use crate::web::problem::{Problem, PROBLEM_JSON};

use super::rest::A2A_JSON;

/// The A2A error a response of the web layer stands for, or `None` when it is not an error
/// or an A2A handler answered it.
fn unanswered(resp: &Response) -> Option<A2aError> {
    let status = resp.status();
    if !(status.is_client_error() || status.is_server_error()) || resp.extensions().get::<Answered>().is_some() {
        return None;
    }
    Some(match resp.extensions().get::<Problem>() {
        Some(p) => A2aError::from_problem(p),
        None => error_of_status(status),
    })
}

/// An error response of the web layer that carries no problem (axum's `405`, a `413` of
/// a body limit): the A2A error of its status.
fn error_of_status(status: StatusCode) -> A2aError {
    let kind = match status {
        StatusCode::NOT_FOUND => A2aErrorKind::MethodNotFound,
        StatusCode::METHOD_NOT_ALLOWED => A2aErrorKind::UnsupportedOperation,
        StatusCode::UNSUPPORTED_MEDIA_TYPE => A2aErrorKind::ContentTypeNotSupported,
        s if s.is_client_error() => A2aErrorKind::InvalidRequest,
        _ => A2aErrorKind::Internal,
    };
    let message = status.canonical_reason().unwrap_or("error").to_lowercase();
    A2aError::new(kind, message).with_status(status)
}

/// `resp`'s headers but the body's, on `answer`.
fn keep_headers(resp: &Response, mut answer: Response) -> Response {
    for (name, value) in resp.headers() {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
            answer.headers_mut().insert(name.clone(), value.clone());
        }
    }
    answer
}

/// Whether the client asked for `application/json` and not `application/a2a+json`.
fn wants_plain_json(accept: Option<&HeaderValue>) -> bool {
    accept.and_then(|v| v.to_str().ok()).is_some_and(|a| {
        let a = a.to_ascii_lowercase();
        a.contains("application/json") && !a.contains(A2A_JSON)
    })
}

/// The wire an A2A route answers on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wire {
    /// HTTP+JSON (and the card): errors as AIP-193 problems.
    Rest,
    /// JSON-RPC: errors as JSON-RPC errors.
    JsonRpc,
}

/// The A2A bindings' form ([`crate::web::edge::Form`]) of every answer: the web layer's errors
/// in A2A's own error form, the `A2A-Extensions` the agent activated named, and on HTTP+JSON a
/// client that asks for `application/json` (not `application/a2a+json`) gets its JSON answers
/// and errors as `application/json` (streams are left as they are).
#[derive(Debug, Clone)]
pub(crate) struct A2aForm {
    wire: Wire,
    /// The URIs of the extensions the card declares.
    declared: Vec<String>,
}

impl A2aForm {
    /// The form of `wire`'s routes of an agent whose card declares the extensions `declared`.
    pub(crate) fn new(wire: Wire, declared: Vec<String>) -> Self {
        A2aForm { wire, declared }
    }
}

/// What [`A2aForm`] reads of a request.
pub(crate) struct A2aNote {
    /// The client asked for `application/json` (HTTP+JSON only).
    plain: bool,
    /// The `A2A-Extensions` answer: the request's extensions the agent supports.
    activated: Option<HeaderValue>,
}

impl crate::web::edge::Form for A2aForm {
    type Note = A2aNote;

    fn note(&self, headers: &axum::http::HeaderMap) -> A2aNote {
        A2aNote {
            plain: self.wire == Wire::Rest && wants_plain_json(headers.get(header::ACCEPT)),
            activated: activated(&self.declared, headers),
        }
    }

    fn answer(&self, note: A2aNote, resp: Response) -> Response {
        let mut resp = match self.wire {
            Wire::Rest => rest(note.plain, resp),
            Wire::JsonRpc => jsonrpc(resp),
        };
        if let Some(v) = note.activated {
            resp.headers_mut().insert(EXTENSIONS, v);
        }
        resp
    }
}

/// The `A2A-Extensions` header's name.
const EXTENSIONS: header::HeaderName = header::HeaderName::from_static("a2a-extensions");

/// The extensions of the request's `A2A-Extensions` the agent declares (the ones it
/// activated), as the answer's header; `None` when there are none.
fn activated(declared: &[String], headers: &axum::http::HeaderMap) -> Option<HeaderValue> {
    if declared.is_empty() {
        return None;
    }
    let activated: Vec<&str> = headers
        .get_all(EXTENSIONS)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|u| declared.iter().any(|e| e == u))
        .collect();
    match activated.is_empty() {
        true => None,
        false => HeaderValue::from_str(&activated.join(", ")).ok(),
    }
}

/// An HTTP+JSON answer: the web layer's errors as AIP-193 problems, `application/json` for a
/// `plain` client.
fn rest(plain: bool, mut resp: Response) -> Response {
    if let Some(e) = unanswered(&resp) {
        resp = keep_headers(&resp, RestError(e).into_response());
    }
    if plain {
        let ours = resp.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok());
        if matches!(ours, Some(A2A_JSON | PROBLEM_JSON)) {
            resp.headers_mut()
                .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        }
    }
    resp
}

/// A JSON-RPC answer: the web layer's errors as JSON-RPC errors (`id` null: the request was
/// not read), with the HTTP status that says what happened.
fn jsonrpc(resp: Response) -> Response {
    match unanswered(&resp) {
        Some(e) => {
            let mut answer = (
                e.http_status(),
                [(header::CONTENT_TYPE, "application/json")],
                e.to_jsonrpc(&Value::Null).to_string(),
            )
                .into_response();
            answer.extensions_mut().insert(Answered);
            keep_headers(&resp, answer)
        }
        None => resp,
    }
}

/// The paths the A2A bindings own: an unknown route there is answered in A2A's form.
#[derive(Debug, Clone, Default)]
pub(crate) struct A2aPaths {
    /// Prefixes (no trailing slash): the bindings' paths, named agents' and tenants' prefixes,
    /// the card listings.
    prefixes: Vec<String>,
    /// The HTTP+JSON routes are at the root: `/tasks…`, `/message…`, `/extendedAgentCard`.
    at_root: bool,
}

impl A2aPaths {
    /// Adds the paths of one A2A service: its HTTP+JSON prefix and JSON-RPC path.
    pub(crate) fn add(&mut self, config: &super::A2aConfig) {
        let rest = config.rest_path.trim_end_matches('/');
        if rest.is_empty() {
            self.at_root = true;
        }
        self.add_prefix(rest);
        self.add_prefix(&config.jsonrpc_path);
    }

    /// Adds a prefix (`/a2a/agents`, `/writer`).
    pub(crate) fn add_prefix(&mut self, prefix: &str) {
        let p = prefix.trim_end_matches('/');
        if !p.is_empty() && !self.prefixes.iter().any(|q| q == p) {
            self.prefixes.push(p.to_string());
        }
    }

    /// Whether `path` is under an A2A path.
    pub(crate) fn covers(&self, path: &str) -> bool {
        let under = |p: &str| {
            path.strip_prefix(p)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
        };
        (self.at_root && (under("/tasks") || path.starts_with("/message") || under("/extendedAgentCard")))
            || self.prefixes.iter().any(|p| under(p))
    }
}

/// An unknown route under an A2A path: `404` as an AIP-193 problem.
pub(crate) fn not_found(path: &str) -> Response {
    let e = A2aError::new(
        e2a::a2a::errors::A2aErrorKind::MethodNotFound,
        format!("no A2A operation at {path}"),
    )
    .with_status(StatusCode::NOT_FOUND);
    RestError(e).into_response()
}
