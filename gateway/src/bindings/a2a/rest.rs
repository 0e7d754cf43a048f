//! The HTTP+JSON binding: `POST /message:send`, `POST /message:stream`, `GET /tasks/{id}`,
//! `GET /tasks`, `POST /tasks/{id}:cancel`, `POST|GET /tasks/{id}:subscribe`,
//! `GET /extendedAgentCard`; errors as `application/problem+json`. The `{id}:verb` segments
//! are one path segment, split in the handler.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::http::{header, HeaderMap, Method};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post};
use axum::Extension;
use axum::Router;
use e2a::types::{A2aCreateTaskPushNotificationConfigRequest, A2aTaskPushNotificationConfigRequest};
use serde_json::{Map, Value};

use crate::agent::Caller;
use crate::tasks::error::{A2aError, A2aErrorKind, RestError};
use crate::tasks::request::{read, CallContext};
use crate::tasks::{SendParams, Sent, TaskService};
use crate::web::{body, last_event_id};

/// The routes under `prefix` (empty: at the root).
pub(super) fn routes(prefix: &str) -> Router<Arc<TaskService>> {
    let p = prefix.trim_end_matches('/');
    let mut router = Router::new();
    // the collection routes answer with and without a trailing slash
    for (verb, answer) in [("send", Answer::Once), ("stream", Answer::Stream)] {
        for path in super::path_forms(&format!("{p}/message:{verb}")) {
            router = router.route(&path, post(send).layer(Extension(answer)));
        }
    }
    for path in super::path_forms(&format!("{p}/tasks")) {
        router = router.route(&path, get(list));
    }
    router
        // every method reaches `task`, which answers `405` with the `Allow` of the resource the
        // segment names (`{id}`, `{id}:cancel` and `{id}:subscribe` share the route)
        .route(&format!("{p}/tasks/{{segment}}"), any(task))
        .route(&format!("{p}/tasks/{{id}}/pushNotificationConfigs"), any(push_configs))
        .route(
            &format!("{p}/tasks/{{id}}/pushNotificationConfigs/{{config}}"),
            any(push_config),
        )
        .route(&format!("{p}/extendedAgentCard"), get(extended))
}

/// The media type of HTTP+JSON answers (A2A 1.0 §11.1).
pub(crate) const A2A_JSON: &str = "application/a2a+json";

fn json_response<T: serde::Serialize>(v: T) -> Response {
    ([(header::CONTENT_TYPE, A2A_JSON)], crate::json::text(&v)).into_response()
}

async fn body_object(state: &TaskService, headers: &HeaderMap, body: Body) -> Result<Map<String, Value>, A2aError> {
    let body = body::read(headers, body, state.pipeline().config.body()).await?;
    if body.is_empty() {
        return Ok(Map::new());
    }
    match body.value()? {
        Value::Object(m) => {
            let mut v = Value::Object(m);
            super::camelize(&mut v);
            match v {
                Value::Object(m) => Ok(m),
                _ => Ok(Map::new()),
            }
        }
        _ => Err(A2aError::new(
            A2aErrorKind::InvalidRequest,
            "the request body must be a JSON object",
        )),
    }
}

/// The send a request body asks for.
async fn send_params(
    state: &TaskService,
    caller: Caller,
    headers: &HeaderMap,
    query: Option<&str>,
    body: Body,
) -> Result<SendParams, A2aError> {
    // (the A2A headers are read first: a version refused is refused before the body is read)
    super::a2a_headers(headers, query)?;
    let params = body_object(state, headers, body).await?;
    let cx = context_of(state, caller, headers, query, Some(&params))?;
    Ok(SendParams { cx, params })
}

/// How a send route answers: `message:send` once, `message:stream` as an event stream (set on
/// the route, so the handler never reads it back from the path).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Answer {
    Once,
    Stream,
}

/// `message:send` and `message:stream`: one decoding, two ways to answer.
async fn send(
    State(state): State<Arc<TaskService>>,
    Extension(caller): Extension<Caller>,
    Extension(answer): Extension<Answer>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, RestError> {
    let p = send_params(&state, caller, &headers, query.as_deref(), body).await?;
    if answer == Answer::Stream {
        let events = state.send_streaming(p).await?;
        return Ok(super::sse(events, state.pipeline().config.keep_alive, event_or_error));
    }
    match state.send_message(p).await? {
        Sent::Message(m) => Ok(json_response(crate::tasks::Replied { message: &m })),
        Sent::Task(task) => {
            let body = super::sent_task(&task);
            Ok(([(header::CONTENT_TYPE, A2A_JSON)], body).into_response())
        }
    }
}

/// The query string's parameters (`application/x-www-form-urlencoded`), as strings.
fn query_params(raw: Option<&str>) -> Map<String, Value> {
    form_urlencoded::parse(raw.unwrap_or("").as_bytes())
        .map(|(k, v)| (super::to_camel_key(&k), Value::String(v.into_owned())))
        .collect()
}

/// The typed request of a route: its query's parameters with the fields its path binds
/// (`path`: field, segment), as gRPC transcoding binds `/tasks/{id}`.
fn request_of<T: serde::de::DeserializeOwned>(raw: Option<&str>, path: &[(&str, &str)]) -> Result<T, A2aError> {
    let mut params = query_params(raw);
    params.extend(
        path.iter()
            .map(|(field, segment)| (field.to_string(), Value::from(*segment))),
    );
    read(&params)
}

async fn list(
    State(state): State<Arc<TaskService>>,
    Extension(caller): Extension<Caller>,
    RawQuery(raw): RawQuery,
    headers: HeaderMap,
) -> Result<Response, RestError> {
    let cx = context(&state, caller, &headers, raw.as_deref())?;
    Ok(json_response(state.list(&cx, request_of(raw.as_deref(), &[])?).await?))
}

/// `{id}` or `{id}:verb`.
fn split_segment(segment: &str) -> (&str, Option<&str>) {
    match segment.rsplit_once(':') {
        Some((id, verb)) if matches!(verb, "cancel" | "subscribe") => (id, Some(verb)),
        _ => (segment, None),
    }
}

/// `GET /tasks/{id}`, `POST /tasks/{id}:cancel`, `GET|POST /tasks/{id}:subscribe`.
async fn task(
    method: Method,
    State(state): State<Arc<TaskService>>,
    Extension(caller): Extension<Caller>,
    Path(segment): Path<String>,
    RawQuery(raw): RawQuery,
    headers: HeaderMap,
) -> Result<Response, RestError> {
    let cx = context(&state, caller, &headers, raw.as_deref())?;
    let (id, verb) = split_segment(&segment);
    // the path names the task (as gRPC transcoding binds `id` from it), the query the rest
    let path = [("id", id)];
    let (get, post) = (matches!(method, Method::GET | Method::HEAD), method == Method::POST);
    match verb {
        None if get => Ok(json_response(
            state.get_task(&cx, request_of(raw.as_deref(), &path)?).await?,
        )),
        None => Ok(not_allowed("GET,HEAD")),
        Some("cancel") if post => Ok(json_response(
            state.cancel(&cx, request_of(raw.as_deref(), &path)?).await?,
        )),
        Some("cancel") => Ok(not_allowed("POST")),
        Some("subscribe") if post || method == Method::GET => {
            let last_seen = last_event_id::read(&headers).map_err(A2aError::from)?;
            let events = state
                .subscribe(&cx, request_of(raw.as_deref(), &path)?, last_seen)
                .await?;
            Ok(super::sse(events, state.pipeline().config.keep_alive, event_or_error))
        }
        Some("subscribe") => Ok(not_allowed("GET,POST")),
        Some(_) => Err(method_not_allowed().into()),
    }
}

/// The context of a call on this binding (no JSON-RPC id; its `Idempotency-Key`).
fn context(
    state: &TaskService,
    caller: Caller,
    headers: &HeaderMap,
    query: Option<&str>,
) -> Result<CallContext, A2aError> {
    context_of(state, caller, headers, query, None)
}

/// [`context`] of a call whose `params` may activate extensions (a send's message).
fn context_of(
    state: &TaskService,
    caller: Caller,
    headers: &HeaderMap,
    query: Option<&str>,
    params: Option<&serde_json::Map<String, Value>>,
) -> Result<CallContext, A2aError> {
    Ok(CallContext {
        id: Value::Null,
        caller,
        headers: super::request_headers(state, headers, query, params)?,
        trace_id: crate::web::trace::request_trace_id(headers),
        idempotency_key: crate::web::idempotency_key(headers).map(String::from),
    })
}

/// `405` with the methods the resource takes; the binding's error layer writes it as a
/// problem, `Allow` kept.
fn not_allowed(allow: &'static str) -> Response {
    (axum::http::StatusCode::METHOD_NOT_ALLOWED, [(header::ALLOW, allow)]).into_response()
}

fn method_not_allowed() -> A2aError {
    A2aError::new(A2aErrorKind::MethodNotFound, "no such operation on this resource")
}

/// `POST /tasks/{id}/pushNotificationConfigs` (create: the body is the config) and `GET`
/// (list: `pageSize`, `pageToken` in the query).
async fn push_configs(
    method: Method,
    State(state): State<Arc<TaskService>>,
    Extension(caller): Extension<Caller>,
    Path(task_id): Path<String>,
    RawQuery(raw): RawQuery,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, RestError> {
    let cx = context(&state, caller, &headers, raw.as_deref())?;
    match method {
        Method::POST => {
            // the path names the task (as gRPC transcoding binds `task_id` from it)
            let mut request: A2aCreateTaskPushNotificationConfigRequest =
                read(&body_object(&state, &headers, body).await?)?;
            request.task_id = Some(task_id);
            Ok(json_response(state.create_push_config(&cx, request).await?))
        }
        Method::GET => {
            let request = request_of(raw.as_deref(), &[("taskId", task_id.as_str())])?;
            Ok(json_response(state.list_push_configs(&cx, request).await?))
        }
        _ => Err(method_not_allowed().into()),
    }
}

/// `GET` and `DELETE /tasks/{id}/pushNotificationConfigs/{configId}`.
async fn push_config(
    method: Method,
    State(state): State<Arc<TaskService>>,
    Extension(caller): Extension<Caller>,
    Path((task_id, config_id)): Path<(String, String)>,
    RawQuery(raw): RawQuery,
    headers: HeaderMap,
) -> Result<Response, RestError> {
    let cx = context(&state, caller, &headers, raw.as_deref())?;
    let request = A2aTaskPushNotificationConfigRequest {
        task_id: Some(task_id),
        id: Some(config_id),
        push_notification_config_id: None,
        tenant: None,
    };
    match method {
        Method::GET => Ok(json_response(state.get_push_config(&cx, request).await?)),
        Method::DELETE => {
            state.delete_push_config(&cx, request).await?;
            // `google.protobuf.Empty`
            Ok(json_response(Map::new()))
        }
        _ => Err(method_not_allowed().into()),
    }
}

async fn extended(
    State(state): State<Arc<TaskService>>,
    RawQuery(raw): RawQuery,
    headers: HeaderMap,
) -> Result<Response, RestError> {
    super::request_headers(&state, &headers, raw.as_deref(), None)?;
    Ok(json_response(super::extended_card(&state, &headers)?))
}

/// One event of a streamed answer: the event, or the error (AIP-193 form) that ends the stream.
fn event_or_error(event: Result<&str, A2aError>, out: &mut String) {
    match event {
        Ok(e) => out.push_str(e),
        Err(e) => out.push_str(&crate::json::text(&e.to_problem())),
    }
}
