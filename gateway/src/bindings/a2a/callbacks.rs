//! The callback route of an agent that delegates with callbacks (`delegate = "callback"`):
//! `POST {prefix}/callbacks/tasks/{id}`, where a child agent's push notifications for the task it
//! was delegated come back ([`crate::backends::Callbacks::deliver`]). It is authenticated by the
//! token bound to that one task (`X-A2A-Notification-Token`, or GoAI's `A2A-Notification-Token`),
//! not by a bearer credential: a child's push sender holds none. A callback signed with
//! GoAI-HMAC-SHA256 (GoAI's children sign theirs) is first verified as its caller of `[callers]`
//! — key, time window, nonce, body digest, allow-list — then by its token; with `[delegation]
//! signed_callbacks = true` an unsigned one is refused. Answers `202`
//! (a terminal event handed to its run, the same one again, or a progress event acknowledged),
//! and in the A2A HTTP+JSON error form `404` (no such delegated task), `401` (token missing or
//! wrong), `400` (not a `StreamResponse`), `409` (another terminal event came before) and `503`
//! with `Retry-After` (the run's gateway is gone and its lease has not run out: send it again).

use std::sync::Arc;

use axum::extract::{Path, Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use e2a::taxonomy::ErrorKind;

use crate::backends::{CallbackError, Delivered};
use crate::tasks::error::{A2aError, A2aErrorKind, RestError};
use crate::tasks::TaskService;
use crate::web::problem::Problem;
use crate::web::{body, hmac};

/// The headers a push notification's token comes in (A2A's, then GoAI's).
const TOKEN_HEADERS: [&str; 2] = ["x-a2a-notification-token", "a2a-notification-token"];

/// The callback route under `prefix` (the agent's HTTP+JSON prefix).
pub(super) fn routes(prefix: &str) -> Router<Arc<TaskService>> {
    let p = prefix.trim_end_matches('/');
    Router::new().route(&format!("{p}/callbacks/tasks/{{id}}"), post(callback))
}

async fn callback(
    State(state): State<Arc<TaskService>>,
    Path(id): Path<String>,
    request: Request,
) -> Result<Response, RestError> {
    let Some(callbacks) = &state.mount().config().callbacks else {
        return Err(A2aError::task_not_found(&id).into());
    };
    // a signed callback is its caller's: verified like every signed request, then by its token
    let request = if hmac::is_signed(request.headers()) {
        let auth = &state.pipeline().config.auth;
        let (caller, request) = auth
            .check_request(request)
            .await
            .map_err(|p| A2aError::from_problem(&p))?;
        tracing::info!(delegation = %id, caller = caller.name.as_deref(), "a signed callback");
        request
    } else if callbacks.requires_signatures() {
        let problem = Problem::new(ErrorKind::AuthRequired, "this gateway takes signed callbacks only");
        return Err(A2aError::from_problem(&problem).into());
    } else {
        request
    };
    let (parts, body) = request.into_parts();
    let headers = parts.headers;
    let token = TOKEN_HEADERS
        .iter()
        .find_map(|h| headers.get(*h))
        .and_then(|v| v.to_str().ok());
    let read = body::read(&headers, body, state.pipeline().config.body()).await;
    let event = read.and_then(|b| b.value()).map_err(A2aError::from)?;
    let runs = &state.pipeline().runs;
    match callbacks.deliver(&id, token, event, runs).await {
        Ok(delivered) => {
            match delivered {
                Delivered::Accepted => tracing::info!(delegation = %id, "a delegated task's answer came back"),
                Delivered::Relayed => tracing::debug!(delegation = %id, "a delegated task's progress, relayed"),
                Delivered::Ignored => tracing::debug!(delegation = %id, "a delegated task's progress event"),
            }
            Ok(StatusCode::ACCEPTED.into_response())
        }
        Err(e) => {
            tracing::info!(delegation = %id, reason = %e, "callback refused");
            Err(refusal(&id, e, state.pipeline().retry_after()).into())
        }
    }
}

/// A refused callback in the A2A error form (`retry_after`: the seconds a busy one is told).
fn refusal(id: &str, e: CallbackError, retry_after: u64) -> A2aError {
    match e {
        CallbackError::NotFound(_) => A2aError::task_not_found(id),
        CallbackError::Unauthorized => {
            let problem = Problem::new(ErrorKind::AuthRequired, e.to_string());
            A2aError::from_problem(&problem)
        }
        CallbackError::BadEvent(_) => A2aError::invalid_params(e.to_string()),
        CallbackError::Conflict => {
            A2aError::new(A2aErrorKind::InvalidRequest, e.to_string()).with_status(StatusCode::CONFLICT)
        }
        CallbackError::Busy => A2aError::unavailable(e.to_string(), retry_after),
        CallbackError::Store(_) => A2aError::internal(e.to_string()),
    }
}
