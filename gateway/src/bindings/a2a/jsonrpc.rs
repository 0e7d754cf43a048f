//! The JSON-RPC binding: one `POST` endpoint, 1.0 method names (0.3 names accepted), SSE for
//! the streaming methods with every event a JSON-RPC response carrying the request id.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{RawQuery, State};
use axum::http::{header, HeaderMap};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use e2a::a2a::jsonrpc::operation;
use serde_json::{json, Map, Value};

use crate::agent::Caller;
use crate::tasks::error::{A2aError, A2aErrorKind};
use crate::tasks::TaskService;
use crate::tasks::{history_length, trim_history, SendConfig, SendOutcome, SendParams};
use crate::web::{body, last_event_id};

fn reply(v: Value) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], v.to_string()).into_response()
}

fn ok(id: &Value, result: Value) -> Response {
    reply(json!({"jsonrpc": "2.0", "id": id, "result": result}))
}

fn err(id: &Value, e: &A2aError) -> Response {
    reply(e.to_jsonrpc(id))
}

fn is_push_method(m: &str) -> bool {
    matches!(
        m,
        "CreateTaskPushNotificationConfig"
            | "GetTaskPushNotificationConfig"
            | "ListTaskPushNotificationConfigs"
            | "DeleteTaskPushNotificationConfig"
            | "tasks/pushNotificationConfig/set"
            | "tasks/pushNotificationConfig/get"
            | "tasks/pushNotificationConfig/list"
            | "tasks/pushNotificationConfig/delete"
    )
}

/// `POST <jsonrpc_path>`.
pub(super) async fn handle(
    State(state): State<Arc<TaskService>>,
    Extension(caller): Extension<Caller>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let null = Value::Null;
    let read = body::read(&headers, body, state.shared.config.limits).await;
    let request = match read.and_then(|b| b.value()) {
        Ok(v) => v,
        Err(e) => return err(&null, &A2aError::from(e)),
    };
    let Some(obj) = request.as_object() else {
        return err(
            &null,
            &A2aError::new(
                A2aErrorKind::InvalidRequest,
                "the request must be a JSON-RPC request object",
            ),
        );
    };
    let id = obj.get("id").cloned().unwrap_or(Value::Null);
    if !(id.is_string() || id.is_number() || id.is_null()) {
        return err(
            &null,
            &A2aError::new(A2aErrorKind::InvalidRequest, "id must be a string, a number or null"),
        );
    }
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return err(
            &id,
            &A2aError::new(A2aErrorKind::InvalidRequest, "jsonrpc must be \"2.0\""),
        );
    }
    let Some(method) = obj.get("method").and_then(Value::as_str) else {
        return err(
            &id,
            &A2aError::new(A2aErrorKind::InvalidRequest, "method must be a string"),
        );
    };
    let params = match obj.get("params") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(p)) => {
            let mut p = Value::Object(p.clone());
            super::camelize(&mut p);
            match p {
                Value::Object(p) => p,
                _ => Map::new(),
            }
        }
        Some(_) => return err(&id, &A2aError::invalid_params("params must be an object")),
    };
    let a2a = match super::a2a_headers(&headers, query.as_deref()) {
        Ok(h) => h,
        Err(e) => return err(&id, &e),
    };
    if is_push_method(method) {
        return err(
            &id,
            &A2aError::new(
                A2aErrorKind::PushNotificationNotSupported,
                "push notifications are not supported",
            ),
        );
    }
    if matches!(method, "GetExtendedAgentCard" | "agent/getAuthenticatedExtendedCard") {
        return match super::extended_card(&state, &headers) {
            Ok(card) => ok(&id, card),
            Err(e) => err(&id, &e),
        };
    }
    let Some(op) = operation(method) else {
        return err(
            &id,
            &A2aError::new(A2aErrorKind::MethodNotFound, format!("method {method} not found")),
        );
    };
    let task_id = || -> Result<String, A2aError> {
        params
            .get("id")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(String::from)
            .ok_or_else(|| A2aError::invalid_params("params.id (the task id) is required"))
    };
    let keep_alive = state.shared.config.keep_alive;
    let result: Result<Response, A2aError> = async {
        match op {
            "SendMessage" | "SendStreamingMessage" => {
                let streaming = op == "SendStreamingMessage";
                let SendConfig { history, blocking } = SendConfig::read(&params)?;
                let outcome = state
                    .send(SendParams {
                        streaming,
                        id: id.clone(),
                        params: params.clone(),
                        headers: a2a,
                        caller: caller.clone(),
                    })
                    .await?;
                match (outcome, streaming) {
                    (SendOutcome::Message(m), false) => Ok(ok(&id, json!({"message": m}))),
                    (SendOutcome::Message(m), true) => {
                        let id = id.clone();
                        Ok(super::sse(
                            super::one_event(json!({"message": m})),
                            keep_alive,
                            move |e| result_or_error(&id, e),
                        ))
                    }
                    (SendOutcome::Task { events, .. }, true) => {
                        let id = id.clone();
                        Ok(super::sse(events, keep_alive, move |e| result_or_error(&id, e)))
                    }
                    (SendOutcome::Task { id: task_id, events }, false) => {
                        if blocking {
                            state.wait(events).await;
                        }
                        let rec = state.load(&task_id, &caller).await?;
                        Ok(ok(&id, json!({"task": trim_history(rec.task, history)})))
                    }
                }
            }
            "GetTask" => {
                let rec = state.load(&task_id()?, &caller).await?;
                Ok(ok(&id, trim_history(rec.task, history_length(&params)?)))
            }
            "ListTasks" => Ok(ok(&id, state.list(&params, &caller).await?)),
            "CancelTask" => Ok(ok(&id, state.cancel(&task_id()?, &caller).await?)),
            "SubscribeToTask" => {
                let events = state
                    .subscribe(&task_id()?, &caller, last_event_id::read(&headers)?)
                    .await?;
                let id = id.clone();
                Ok(super::sse(events, keep_alive, move |e| result_or_error(&id, e)))
            }
            _ => Err(A2aError::new(
                A2aErrorKind::MethodNotFound,
                format!("method {method} not found"),
            )),
        }
    }
    .await;
    result.unwrap_or_else(|e| err(&id, &e))
}

/// One event of a streamed answer: a JSON-RPC result, or the error that ends the stream.
fn result_or_error(id: &Value, event: Result<Value, A2aError>) -> Value {
    match event {
        Ok(e) => json!({"jsonrpc": "2.0", "id": id, "result": e}),
        Err(e) => e.to_jsonrpc(id),
    }
}
