//! The JSON-RPC binding: one `POST` endpoint, 1.0 method names (0.3 names accepted), SSE for
//! the streaming methods with every event a JSON-RPC response carrying the request id.

use std::sync::Arc;

use axum::extract::{RawQuery, State};
use axum::http::{header, HeaderMap};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use e2a::a2a::jsonrpc::operation;
use e2a::types::{A2aGetExtendedAgentCardRequest, A2aOperation};
use serde_json::{Map, Value};

use crate::agent::Caller;
use crate::tasks::error::{A2aError, A2aErrorKind};
use crate::tasks::request::{read, CallContext};
use crate::tasks::TaskService;
use crate::tasks::{SendParams, Sent};
use crate::web::{body, last_event_id};

fn reply(v: Value) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], crate::json::text(&v)).into_response()
}

/// A JSON-RPC success response whose result is written as it is.
#[derive(serde::Serialize)]
struct Success<'a, T> {
    jsonrpc: &'static str,
    id: &'a Value,
    result: T,
}

fn reply_with<T: serde::Serialize>(v: &T) -> Result<Response, A2aError> {
    Ok(([(header::CONTENT_TYPE, "application/json")], super::to_json(v)?).into_response())
}

fn typed_ok<T: serde::Serialize>(id: &Value, result: &T) -> Result<Response, A2aError> {
    reply_with(&Success {
        jsonrpc: "2.0",
        id,
        result,
    })
}

fn err(id: &Value, e: &A2aError) -> Response {
    let mut resp = reply(e.to_jsonrpc(id));
    if e.retry_after.is_some() {
        // at capacity: the JSON-RPC error, with the HTTP status and header that say when
        *resp.status_mut() = e.http_status();
        e.add_retry_after(&mut resp);
        resp.extensions_mut().insert(crate::tasks::error::Answered);
    }
    resp
}

/// A JSON-RPC request, decoded: its id, operation and params (1.0 camelCase names).
struct Call {
    id: Value,
    op: A2aOperation,
    params: Map<String, Value>,
}

/// The members of a JSON-RPC request object that a call is made of, read straight from the
/// body (no map of the whole request); one left out reads as null, others are ignored.
#[derive(serde::Deserialize)]
struct Members {
    #[serde(default)]
    id: Value,
    #[serde(default)]
    jsonrpc: Value,
    #[serde(default)]
    method: Value,
    #[serde(default)]
    params: Value,
}

/// Reads a JSON-RPC request from `body`. An object is read member by member; what that read
/// refuses (not an object, a member named twice, not JSON, past a limit) is read as a value,
/// whose answer (the refusal, or the last of a member named twice) is the request's.
fn read_call(body: &body::JsonBody) -> Result<Call, Box<(Value, A2aError)>> {
    if body.text().trim_start().starts_with('{') {
        if let Ok(m) = body.parse_as::<Members>() {
            return decode_members(m);
        }
    }
    match body.value() {
        Ok(request) => decode(request),
        Err(e) => Err(Box::new((Value::Null, A2aError::from(e)))),
    }
}

/// Decodes a JSON-RPC request; an error carries the id to answer it with (null before the id
/// is known). Its members are moved out of the request, not read into another value: a large
/// message is held once (a typed read of the request rebuilt it, doubling a large request's
/// peak memory).
fn decode(request: Value) -> Result<Call, Box<(Value, A2aError)>> {
    let Value::Object(mut request) = request else {
        let e = A2aError::new(
            A2aErrorKind::InvalidRequest,
            "the request must be a JSON-RPC request object",
        );
        return Err(Box::new((Value::Null, e)));
    };
    let mut member = |key: &str| request.remove(key).unwrap_or(Value::Null);
    decode_members(Members {
        id: member("id"),
        jsonrpc: member("jsonrpc"),
        method: member("method"),
        params: member("params"),
    })
}

/// Decodes a JSON-RPC request's members (see [`decode`]).
fn decode_members(m: Members) -> Result<Call, Box<(Value, A2aError)>> {
    let invalid = |id: &Value, m: &str| Box::new((id.clone(), A2aError::new(A2aErrorKind::InvalidRequest, m)));
    let null = Value::Null;
    let Members {
        id,
        jsonrpc,
        method,
        params,
    } = m;
    if !(id.is_string() || id.is_number() || id.is_null()) {
        return Err(invalid(&null, "id must be a string, a number or null"));
    }
    if jsonrpc != "2.0" {
        return Err(invalid(&id, "jsonrpc must be \"2.0\""));
    }
    let Value::String(method) = method else {
        return Err(invalid(&id, "method must be a string"));
    };
    let params = match params {
        Value::Null => Map::new(),
        mut p @ Value::Object(_) => {
            super::camelize(&mut p);
            match p {
                Value::Object(p) => p,
                _ => Map::new(),
            }
        }
        _ => return Err(Box::new((id, A2aError::invalid_params("params must be an object")))),
    };
    let Some(op) = operation(&method) else {
        let e = A2aError::new(A2aErrorKind::MethodNotFound, format!("method {method} not found"));
        return Err(Box::new((id, e)));
    };
    Ok(Call { id, op, params })
}

/// `POST <jsonrpc_path>`.
pub(super) async fn handle(
    State(state): State<Arc<TaskService>>,
    Extension(caller): Extension<Caller>,
    RawQuery(query): RawQuery,
    request: axum::extract::Request,
) -> Response {
    // (the request's own headers, not a copy of them)
    let (parts, body) = request.into_parts();
    let headers = parts.headers;
    let call = match body::read(&headers, body, state.pipeline().config.body()).await {
        Ok(body) => read_call(&body),
        Err(e) => Err(Box::new((Value::Null, A2aError::from(e)))),
    };
    let call = match call {
        Ok(call) => call,
        Err(refused) => return err(&refused.0, &refused.1),
    };
    let id = call.id.clone();
    // A2A 1.0's multi-tenant form: `tenant` names the agent (authenticated for that agent)
    let tenant = e2a::read::member(&call.params, "tenant")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty());
    let (state, caller) = match (tenant, state.mount().tenants()) {
        (Some(t), Some(tenants)) => match tenants.get(t) {
            Some(named) => match named.pipeline().config.auth.rescope(&caller, &headers) {
                Ok(caller) => (named.clone(), caller),
                Err(p) => return p.into_response(),
            },
            None => {
                return err(
                    &id,
                    &A2aError::invalid_params(format!("no agent named `{t}` (params.tenant)")),
                )
            }
        },
        _ => (state, caller),
    };
    match dispatch(&state, call, caller, query.as_deref(), &headers).await {
        Ok(resp) => resp,
        Err(e) => err(&id, &e),
    }
}

/// Runs one decoded call on the task service and encodes its answer.
async fn dispatch(
    state: &Arc<TaskService>,
    call: Call,
    caller: Caller,
    query: Option<&str>,
    headers: &HeaderMap,
) -> Result<Response, A2aError> {
    let a2a = super::request_headers(state, headers, query, Some(&call.params))?;
    let Call { id, op, params } = call;
    let cx = CallContext {
        id: id.clone(),
        caller,
        headers: a2a,
        trace_id: crate::web::trace::request_trace_id(headers),
        idempotency_key: None,
    };
    let keep_alive = state.pipeline().config.keep_alive;
    let stream = |events| {
        let id = id.clone();
        let id_json = crate::json::text(&id);
        super::sse(events, keep_alive, move |e, out| result_or_error(&id, &id_json, e, out))
    };
    match op {
        A2aOperation::SendMessage | A2aOperation::SendStreamingMessage => {
            let send = SendParams { cx, params };
            // (boxed: a send's future is over 4 kB; inline, every future around it would be
            // that much larger, and each is copied whole when it is made)
            if op == A2aOperation::SendStreamingMessage {
                return Ok(stream(Box::pin(state.send_streaming(send)).await?));
            }
            match Box::pin(state.send_message(send)).await? {
                Sent::Message(m) => typed_ok(&id, &crate::tasks::Replied { message: &m }),
                Sent::Task(task) => {
                    // the task's JSON as written, copied in once (a `Success` of it, key for key)
                    let id = crate::json::text(&id);
                    let mut body = String::with_capacity(task.len() + id.len() + 48);
                    push_success(&mut body, &id, |out| super::push_sent_task(out, &task));
                    Ok(([(header::CONTENT_TYPE, "application/json")], body).into_response())
                }
            }
        }
        // (the other operations' futures are boxed: each is as large as a send's, and the
        // request's future, which every layer moves, is as large as the largest)
        A2aOperation::GetTask => typed_ok(&id, &Box::pin(state.get_task(&cx, read(&params)?)).await?),
        A2aOperation::ListTasks => typed_ok(&id, &Box::pin(state.list(&cx, read(&params)?)).await?),
        A2aOperation::CancelTask => typed_ok(&id, &Box::pin(state.cancel(&cx, read(&params)?)).await?),
        A2aOperation::SubscribeToTask => {
            let last_seen = last_event_id::read(headers)?;
            let events = Box::pin(state.subscribe(&cx, read(&params)?, last_seen)).await?;
            Ok(stream(events))
        }
        A2aOperation::GetExtendedAgentCard => {
            read::<A2aGetExtendedAgentCardRequest>(&params)?;
            typed_ok(&id, &super::extended_card(state, headers)?)
        }
        A2aOperation::CreateTaskPushNotificationConfig => {
            typed_ok(&id, &Box::pin(state.create_push_config(&cx, read(&params)?)).await?)
        }
        A2aOperation::GetTaskPushNotificationConfig => {
            typed_ok(&id, &Box::pin(state.get_push_config(&cx, read(&params)?)).await?)
        }
        A2aOperation::ListTaskPushNotificationConfigs => {
            typed_ok(&id, &Box::pin(state.list_push_configs(&cx, read(&params)?)).await?)
        }
        // (`google.protobuf.Empty`: no result)
        A2aOperation::DeleteTaskPushNotificationConfig => {
            Box::pin(state.delete_push_config(&cx, read(&params)?)).await?;
            typed_ok(&id, &Value::Null)
        }
    }
}

/// One event of a streamed answer, appended to `out`: a JSON-RPC result, or the error that
/// ends the stream.
fn result_or_error(id: &Value, id_json: &str, event: Result<&str, A2aError>, out: &mut String) {
    match event {
        Ok(e) => push_success(out, id_json, |out| out.push_str(e)),
        Err(e) => out.push_str(&crate::json::text(&e.to_jsonrpc(id))),
    }
}

/// A JSON-RPC success response (a [`Success`], key for key) appended to `out`: `id_json` is
/// the request id's JSON, `result` appends the result's JSON as it was written.
fn push_success(out: &mut String, id_json: &str, result: impl FnOnce(&mut String)) {
    out.push_str(r#"{"jsonrpc":"2.0","id":"#);
    out.push_str(id_json);
    out.push_str(r#","result":"#);
    result(out);
    out.push('}');
}
