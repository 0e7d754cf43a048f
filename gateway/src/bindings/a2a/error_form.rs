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

/// The layer of the HTTP+JSON routes: the web layer's errors as AIP-193 problems; a client
/// that asks for `application/json` (and not `application/a2a+json`) gets its JSON answers and
/// errors as `application/json` (streams are left as they are).
pub(super) async fn rest(request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let plain = wants_plain_json(request.headers().get(header::ACCEPT));
    let mut resp = next.run(request).await;
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

/// The layer of the JSON-RPC endpoint: the web layer's errors as JSON-RPC errors (`id` null:
/// the request was not read), with the HTTP status that says what happened.
pub(super) async fn jsonrpc(request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let resp = next.run(request).await;
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
