//! AG-UI over SSE: `POST /agui` and `POST /agents/{name}/agui` take a `RunAgentInput` and
//! stream AG-UI events.
//!
//! Protocol → E2A → agent → E2A → protocol: the input becomes an envelope through
//! [`e2a::agui::envelope_from_run_input`] (`threadId` → session and context, `runId` →
//! request id), the agent's frames pass the [`boundary`], and
//! [`e2a::agui::AguiProjector`] turns them into the events that are sent. Before any event
//! leaves, [`e2a::agui::verify_events`] checks the sequence sent so far plus the new events; a
//! violation is never sent — the run ends with `RUN_ERROR` instead. (What was sent is kept in
//! [`lifecycle_state`] form, so that the check stays linear in a long stream.)
//!
//! An approval or input pause ends the run with `RUN_FINISHED` carrying an interrupt outcome.
//! A follow-up run on the same thread answers it: its `resume` entries (`status: cancelled`,
//! or a `payload` of `false` / `{"approved": false}` / `"no"` deny; a string payload is the
//! answer; anything else approves) or, without `resume`, its last user message.

use std::convert::Infallible;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{Path, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Extension, Router};
use e2a::agui::{verify_events, AguiProjector};
use e2a::taxonomy::ErrorKind;
use serde_json::{json, Value};
use tokio::time::Instant;

use crate::agent::{Caller, RequestContext};
use crate::pipeline::boundary::{self, StopCell};
use crate::pipeline::Pipeline;
use crate::web::problem::Problem;

/// Path of the AG-UI endpoint of the gateway's agent.
pub const AGUI_PATH: &str = "/agui";
/// Path of the AG-UI endpoint of a named agent (GoAI's routing).
pub const AGENT_AGUI_PATH: &str = "/agents/{name}/agui";

/// The AG-UI routes (authentication included), to merge into the gateway's router.
pub(crate) fn router(shared: Arc<Pipeline>) -> Router {
    Router::new()
        .route(AGUI_PATH, post(run_default))
        .route(AGENT_AGUI_PATH, post(run_named))
        .route_layer(middleware::from_fn_with_state(shared.clone(), authenticate))
        .with_state(shared)
}

async fn authenticate(State(shared): State<Arc<Pipeline>>, mut req: Request, next: Next) -> Response {
    match shared.config.auth.check(req.headers()) {
        Ok(caller) => {
            req.extensions_mut().insert(caller);
            next.run(req).await
        }
        Err(p) => p.into_response(),
    }
}

async fn run_default(
    State(shared): State<Arc<Pipeline>>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, Problem> {
    run(shared, caller, headers, body).await
}

async fn run_named(
    State(shared): State<Arc<Pipeline>>,
    Extension(caller): Extension<Caller>,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, Problem> {
    let agent = shared.agent.name();
    if name != agent && name != "default" {
        return Err(Problem::new(
            ErrorKind::NotFound,
            format!("no agent named `{name}` (this gateway serves `{agent}`)"),
        )
        .at("/path/name"));
    }
    run(shared, caller, headers, body).await
}

/// The answer a follow-up run gives to the interrupt it resumes.
fn resume_answer(resume: &Value) -> Option<String> {
    let entry = resume.as_array()?.first()?;
    if entry.get("status").and_then(Value::as_str) == Some("cancelled") {
        return Some("no".into());
    }
    Some(match entry.get("payload") {
        Some(Value::Bool(false)) => "no".into(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Object(m)) if m.get("approved") == Some(&Value::Bool(false)) => "no".into(),
        Some(Value::Object(m)) if m.get("answer").is_some_and(Value::is_string) => {
            m.get("answer").and_then(Value::as_str).unwrap_or_default().to_string()
        }
        _ => "yes".into(),
    })
}

async fn run(shared: Arc<Pipeline>, caller: Caller, headers: HeaderMap, body: Body) -> Result<Response, Problem> {
    let json_body = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|s| s.parse::<mime::Mime>().ok())
        .is_some_and(|m| m.type_() == mime::APPLICATION && m.subtype() == mime::JSON);
    if !json_body {
        return Err(Problem::new(
            ErrorKind::ContentTypeNotSupported,
            "the request body must be application/json (a RunAgentInput)",
        ));
    }
    let limits = shared.config.limits;
    let bytes: Bytes = axum::body::to_bytes(body, limits.max_bytes).await.map_err(|_| {
        Problem::new(
            ErrorKind::InvalidRequest,
            format!("the request body exceeds max_bytes ({} bytes)", limits.max_bytes),
        )
        .with_status(StatusCode::PAYLOAD_TOO_LARGE)
        .at("")
    })?;
    let input: Value = serde_json::from_slice(&bytes)
        .map_err(|e| Problem::new(ErrorKind::ParseError, format!("the request body is not JSON: {e}")).at(""))?;
    let mut request = e2a::agui::envelope_from_run_input(&input).map_err(|e| Problem::from_read_error(&e))?;
    if let Some(answer) = request.params.get("resume").and_then(resume_answer) {
        request.params.insert("text".into(), answer.into());
    }
    let thread_id = request.session_id.clone().unwrap_or_default();
    let run_id = request.request_id.clone().unwrap_or_default();
    if shared.runs.draining() {
        return Err(Problem::unavailable(
            "the gateway is shutting down",
            shared.config.retry_after_secs,
        ));
    }
    let permit = shared
        .streams
        .clone()
        .try_acquire_owned()
        .map_err(|_| Problem::unavailable("too many open streams", shared.config.retry_after_secs))?;
    let deadline = shared.config.max_run.map(|d| Instant::now() + d);
    let ctx = RequestContext::new(caller.clone(), deadline);
    let stop = StopCell::default();
    let agent_stream = shared.agent.run(request.clone(), ctx.clone());
    let guarded = boundary::guard(
        request,
        agent_stream,
        ctx.clone(),
        shared.config.deadlines,
        stop.clone(),
        shared.agent.name(),
    );
    // AG-UI runs are not resumable by Last-Event-ID: a key of their own in the registry
    let key = (
        caller.subject.clone(),
        format!("agui:{run_id}:{}", uuid::Uuid::new_v4()),
    );
    let run = shared.runs.start(
        key,
        guarded,
        ctx.cancel.clone(),
        stop,
        shared.config.disconnect_grace,
        permit,
    );
    let mut sub = run.subscribe(None);
    let keep_alive = shared.config.keep_alive;
    let events = async_stream::stream! {
        let mut projector = AguiProjector::new(thread_id.clone(), run_id.clone());
        // what was sent, reduced to what the lifecycle check still depends on
        let mut sent: Vec<Value> = Vec::new();
        let mut ended = false;
        loop {
            let next = tokio::time::timeout(keep_alive, sub.next()).await;
            let frame = match next {
                Ok(Some(f)) => f,
                Ok(None) => break,
                Err(_) => {
                    yield Ok::<Bytes, Infallible>(Bytes::from_static(b": keep-alive\n\n"));
                    continue;
                }
            };
            let new = projector.push(&frame);
            if new.is_empty() {
                continue;
            }
            let mut check = sent.clone();
            check.extend(new.iter().cloned());
            let batch = match verify_events(&check) {
                Ok(()) => new,
                Err(violation) => {
                    tracing::error!(run_id = %run_id, violation = %violation, "AG-UI lifecycle violation: run ended with RUN_ERROR");
                    let mut error = Vec::new();
                    if sent.is_empty() {
                        error.push(json!({"type": "RUN_STARTED", "threadId": thread_id, "runId": run_id}));
                    }
                    error.push(json!({"type": "RUN_ERROR", "message": format!("the gateway stopped an invalid event sequence: {violation}"),
                        "code": ErrorKind::InvalidAgentResponse.mapping().agui_code}));
                    ended = true;
                    error
                }
            };
            for e in &batch {
                yield Ok(Bytes::from(format!("data: {e}\n\n")));
            }
            let last = batch.last().and_then(|e| e.get("type")).and_then(Value::as_str).map(str::to_string);
            sent.extend(batch);
            sent = lifecycle_state(sent);
            if ended || matches!(last.as_deref(), Some("RUN_FINISHED" | "RUN_ERROR")) {
                break;
            }
        }
    };
    let mut resp = Response::new(Body::from_stream(events));
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    Ok(resp)
}

/// The events of a verified sequence that the lifecycle check still depends on: the run
/// events (`RUN_STARTED`, `RUN_FINISHED`, `RUN_ERROR`) and the openings of the text messages,
/// reasoning messages and tool calls not closed yet. Content events and closed pairs change
/// nothing in what [`verify_events`] accepts next, so checking `lifecycle_state(sent) + new`
/// accepts exactly what checking `sent + new` accepts.
pub fn lifecycle_state(events: Vec<Value>) -> Vec<Value> {
    let mut kept: Vec<Value> = Vec::new();
    for e in events {
        let ty = e.get("type").and_then(Value::as_str).unwrap_or("");
        let (opening, key) = match ty {
            "RUN_STARTED"
            | "RUN_FINISHED"
            | "RUN_ERROR"
            | "TEXT_MESSAGE_START"
            | "REASONING_MESSAGE_START"
            | "TOOL_CALL_START" => {
                kept.push(e);
                continue;
            }
            "TEXT_MESSAGE_END" => ("TEXT_MESSAGE_START", "messageId"),
            "REASONING_MESSAGE_END" => ("REASONING_MESSAGE_START", "messageId"),
            "TOOL_CALL_END" => ("TOOL_CALL_START", "toolCallId"),
            _ => continue,
        };
        if let Some(i) = kept
            .iter()
            .rposition(|k| k.get("type").and_then(Value::as_str) == Some(opening) && k.get(key) == e.get(key))
        {
            kept.remove(i);
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::{lifecycle_state, resume_answer};
    use e2a::agui::verify_events;
    use serde_json::json;

    #[test]
    fn resume_answers() {
        let r = |v| resume_answer(&v);
        assert_eq!(
            r(json!([{"interruptId": "i", "status": "cancelled"}])).as_deref(),
            Some("no")
        );
        assert_eq!(
            r(json!([{"interruptId": "i", "status": "resolved", "payload": {"approved": true}}])).as_deref(),
            Some("yes")
        );
        assert_eq!(
            r(json!([{"interruptId": "i", "status": "resolved", "payload": false}])).as_deref(),
            Some("no")
        );
        assert_eq!(
            r(json!([{"interruptId": "i", "status": "resolved", "payload": "4"}])).as_deref(),
            Some("4")
        );
        assert_eq!(r(json!([])), None);
    }

    #[test]
    fn the_lifecycle_state_accepts_what_the_whole_sequence_accepts() {
        let sent = vec![
            json!({"type": "RUN_STARTED", "threadId": "t", "runId": "r"}),
            json!({"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"}),
            json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "a"}),
            json!({"type": "TEXT_MESSAGE_END", "messageId": "m1"}),
            json!({"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "x"}),
            json!({"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": "{}"}),
        ];
        let state = lifecycle_state(sent.clone());
        assert_eq!(state.len(), 2);
        let nexts = [
            json!({"type": "TOOL_CALL_END", "toolCallId": "c1"}),
            json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "late"}),
            json!({"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}),
            json!({"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"}),
            json!({"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "x"}),
        ];
        for next in nexts {
            let whole = verify_events(&[sent.clone(), vec![next.clone()]].concat()).is_ok();
            let reduced = verify_events(&[state.clone(), vec![next.clone()]].concat()).is_ok();
            assert_eq!(whole, reduced, "{next}");
        }
    }
}
