//! AG-UI over SSE: `POST /agui` and `POST /agents/{name}/agui` take a `RunAgentInput` and
//! stream AG-UI events.
//!
//! Protocol → E2A → agent → E2A → protocol: the input becomes an envelope through
//! [`e2a::agui::envelope_from_run_input`] (`threadId` → session and context, `runId` →
//! request id), the agent's frames pass the
//! [`boundary`](crate::pipeline::boundary), and
//! [`e2a::agui::AguiProjector`] turns them into the events that are sent. Before any event
//! leaves, [`e2a::agui::verify_events`] checks the sequence sent so far plus the new events; a
//! violation is never sent — the run ends with `RUN_ERROR` instead. (What was sent is kept in
//! [`lifecycle_state`] form, so that the check stays linear in a long stream.)
//!
//! An approval or input pause ends the run with `RUN_FINISHED` carrying an interrupt outcome.
//! A follow-up run on the same thread answers it: its `resume` entries (`status: cancelled`,
//! or a `payload` of `false` / `{"approved": false}` / `"no"` deny; a string payload is the
//! answer; anything else approves) or, without `resume`, its last user message.

mod resume;
mod thread_runs;

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::{get, post};
use axum::{Extension, Router};
use e2a::agui::{verify_events, AguiProjector};
use e2a::frame::Projector;
use e2a::taxonomy::ErrorKind;
use parking_lot::Mutex;
use serde::Deserialize;
use serde_json::Value;

use crate::agent::Agent;
use crate::agent::Caller;
use crate::pipeline::Pipeline;
use crate::runs::{self, Subscription};
use crate::web::edge::Edge;
use crate::web::problem::Problem;
use crate::web::{body, last_event_id, sse};

/// Path of the AG-UI endpoint of the gateway's agent.
pub const AGUI_PATH: &str = "/agui";
/// Path of the AG-UI endpoint of a named agent (GoAI's routing).
pub const AGENT_AGUI_PATH: &str = "/agents/{name}/agui";

/// The AG-UI binding of a gateway's agent.
pub(crate) struct AguiBinding(pub(crate) Arc<Pipeline>);

impl super::Binding for AguiBinding {
    fn name(&self) -> &'static str {
        crate::pipeline::Via::Agui.name()
    }

    fn routes(&self, place: super::Place<'_>, edge: &Edge) -> Router {
        match place {
            super::Place::Root => router(self.0.clone(), edge),
            super::Place::Named { routes, .. } => routes_at(self.0.clone(), &[&place.at(&routes.agui)], edge),
        }
    }

    fn endpoints(&self, place: super::Place<'_>, base: &str) -> Vec<String> {
        match place {
            super::Place::Root => vec![
                format!("POST {base}{AGUI_PATH}  AG-UI: RunAgentInput → text/event-stream"),
                format!(
                    "GET  {base}{AGUI_PATH}{}  AG-UI: a thread's runs (E2ARunPage)",
                    thread_runs::THREAD_RUNS
                ),
            ],
            super::Place::Named { routes, .. } => {
                let at = place.at(&routes.agui);
                vec![
                    format!("POST {base}{at}  AG-UI"),
                    format!("GET  {base}{at}{}  AG-UI: a thread's runs", thread_runs::THREAD_RUNS),
                ]
            }
        }
    }
}

/// The AG-UI routes under `edge` (authentication included), to merge into the gateway's router.
pub(crate) fn router(pipeline: Arc<Pipeline>, edge: &Edge) -> Router {
    routes_at(pipeline, &[AGUI_PATH, AGENT_AGUI_PATH], edge)
}

/// The AG-UI endpoint at `paths` under `edge` (authentication included).
fn routes_at(pipeline: Arc<Pipeline>, paths: &[&str], edge: &Edge) -> Router {
    let auth = pipeline.config.auth.clone();
    let state = Arc::new(Agui {
        pipeline,
        interrupts: Mutex::default(),
    });
    let mut routes = Router::new();
    for path in paths {
        routes = routes.route(path, post(run_route)).route(
            &format!("{path}{}", thread_runs::THREAD_RUNS),
            get(thread_runs::thread_runs),
        );
    }
    edge.authenticated(&auth).around(routes).with_state(state)
}

/// `POST /agui` and `POST /agents/{name}/agui` (the name must be this gateway's agent).
async fn run_route(
    State(agui): State<Arc<Agui>>,
    Extension(caller): Extension<Caller>,
    name: Option<Path<String>>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, Problem> {
    named_here(&agui, name.as_ref().map(|Path(n)| n.as_str()))?;
    run(agui, caller, headers, body).await
}

/// A route's `{name}`, when it has one, must name this gateway's agent (or be `default`).
fn named_here(agui: &Agui, name: Option<&str>) -> Result<(), Problem> {
    let agent = agui.pipeline.agent().name();
    match name.filter(|n| *n != agent && *n != "default") {
        Some(name) => Err(Problem::new(
            ErrorKind::NotFound,
            format!("no agent named `{name}` (this gateway serves `{agent}`)"),
        )
        .at("/path/name")),
        None => Ok(()),
    }
}

/// The fields of an AG-UI event the binding reads: its type, the id a lifecycle pair shares
/// and a run's outcome.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct EventHead<'a> {
    #[serde(default, rename = "type", borrow)]
    kind: std::borrow::Cow<'a, str>,
    #[serde(default, borrow)]
    message_id: Option<std::borrow::Cow<'a, str>>,
    #[serde(default, borrow)]
    tool_call_id: Option<std::borrow::Cow<'a, str>>,
    #[serde(default)]
    outcome: Option<Outcome>,
}

impl<'a> EventHead<'a> {
    fn of(event: &'a Value) -> Self {
        EventHead::deserialize(event).unwrap_or_default()
    }

    /// The id an opening and its end share: `toolCallId` of a tool call, else `messageId`.
    fn pair_id(&self, tool_call: bool) -> Option<&str> {
        match tool_call {
            true => self.tool_call_id.as_deref(),
            false => self.message_id.as_deref(),
        }
    }
}

/// `RUN_FINISHED`'s `outcome`.
#[derive(Deserialize)]
struct Outcome {
    #[serde(default, rename = "type")]
    kind: String,
    #[serde(default)]
    interrupts: Vec<Interrupt>,
}

#[derive(Deserialize)]
struct Interrupt {
    #[serde(default)]
    id: Option<String>,
}

/// The AG-UI binding's state: the pipeline and the pending interrupts.
pub(crate) struct Agui {
    pipeline: Arc<Pipeline>,
    interrupts: Mutex<resume::Interrupts>,
}

impl Agui {
    /// The pending interrupts, in this process and in the store.
    fn kept(&self) -> resume::Kept<'_> {
        resume::Kept {
            memory: &self.interrupts,
            store: self.pipeline.runs.pauses(),
        }
    }
}

/// The ids of the interrupts an event ends a run with (`RUN_FINISHED` with an interrupt outcome).
fn interrupt_ids(event: &EventHead<'_>) -> Option<Vec<String>> {
    let outcome = event.outcome.as_ref().filter(|o| o.kind == "interrupt")?;
    Some(outcome.interrupts.iter().filter_map(|i| i.id.clone()).collect())
}

async fn run(agui: Arc<Agui>, caller: Caller, headers: HeaderMap, body: Body) -> Result<Response, Problem> {
    let shared = &agui.pipeline;
    let resume_after = last_event_id::read(&headers)?;
    let mut input = body::read(&headers, body, shared.config.body()).await?.value()?;
    if let Some(after) = resume_after {
        // the same run again, from after the last event the client saw
        let (_, ids, key) = run_of(&input, &caller, &headers)?;
        let sub = shared
            .runs
            .resume(&key, None)
            .await
            .map_err(|e| e.problem())?
            .ok_or_else(|| {
                Problem::new(ErrorKind::NotFound, "no run of this threadId and runId is retained").at("/runId")
            })?;
        return Ok(events(agui.clone(), ids, sub, after));
    }
    // admitted before a resume takes the interrupts it answers: a run refused (the gateway
    // drains, too many streams) leaves them pending
    let mut admission = shared
        .admit(caller.clone(), crate::pipeline::Via::Agui)
        .map_err(|r| shared.refused(r))?;
    // a resume answers the interrupts this caller's thread is waiting on, or nothing runs;
    // checked first, with the rest of the input, and taken only then
    let claim = agui.kept().check(caller.owner(), &mut input).await?;
    let (mut request, ids, key) = run_of(&input, &caller, &headers)?;
    if let Some(parent) = input.get("parentRunId").and_then(Value::as_str) {
        check_parent(shared, &caller, &ids.thread.1, parent).await?;
    }
    if let Some(claim) = claim {
        let entries = agui.kept().take(claim).await?;
        request
            .params
            .insert("text".into(), resume::resume_answer(&entries).into());
    }
    // the frames of a streamed answer say so
    request.is_stream = true;
    admission.for_run(&key);
    let guarded = admission.run(request.clone());
    let ctx = admission.ctx.clone();
    let grace = shared.config.cancel_after();
    let (run, pump) = shared
        .runs
        .open(key, request, &ctx, grace, admission.into_permit(), true);
    let sub = run.subscribe(None);
    pump.spawn(guarded);
    Ok(events(agui.clone(), ids, sub, 0))
}

/// A `parentRunId` must name one of the caller's own runs on the same thread (a branch of it).
async fn check_parent(shared: &Pipeline, caller: &Caller, thread: &str, parent: &str) -> Result<(), Problem> {
    let parent_key = runs::agui_key(caller, thread, parent);
    match shared.runs.view(&parent_key).await.map_err(|e| e.problem())? {
        Some(_) => Ok(()),
        None => Err(Problem::new(
            ErrorKind::InvalidParams,
            format!("parentRunId {parent:?} names no run of this caller on thread {thread:?}"),
        )
        .at("/parentRunId")),
    }
}

/// The envelope of a run input (its trace id from `headers` when it names none), which run it
/// is and the run's key.
fn run_of(
    input: &Value,
    caller: &Caller,
    headers: &HeaderMap,
) -> Result<(e2a::E2AEnvelope, RunIds, crate::agent::ConversationKey), Problem> {
    let mut request = e2a::agui::envelope_from_run_input(input).map_err(|e| Problem::from_read_error(&e))?;
    // a run and its thread are named: an empty id would name every caller's unnamed one
    for key in ["threadId", "runId"] {
        if input.get(key).and_then(Value::as_str) == Some("") {
            let p = Problem::new(ErrorKind::InvalidParams, format!("{key} must not be empty")).at(format!("/{key}"));
            return Err(p);
        }
    }
    crate::web::trace::correlate(&mut request, crate::web::trace::request_trace_id(headers));
    let ids = RunIds {
        thread: (caller.owner(), request.session_id.clone().unwrap_or_default()),
        run_id: request.request_id.clone().unwrap_or_default(),
    };
    let key = runs::agui_key(caller, &ids.thread.1, &ids.run_id);
    Ok((request, ids, key))
}

/// Which run a stream shows: its thread (with its caller) and its id.
struct RunIds {
    thread: (Option<String>, String),
    run_id: String,
}

/// The SSE answer: the run's frames projected into AG-UI events, numbered 1, 2, 3 … in
/// `id:` — the projection is deterministic, so a client that resumes with `Last-Event-ID: N`
/// gets the same events after the `N`th (the events up to it are projected and skipped).
fn events(agui: Arc<Agui>, ids: RunIds, mut sub: Subscription, skip: u64) -> Response {
    let keep_alive = agui.pipeline.config.keep_alive;
    let events = async_stream::stream! {
        let RunIds { thread, run_id } = ids;
        let thread_id = thread.1.clone();
        let mut projector = AguiProjector::new(thread_id.clone(), run_id.clone());
        // what was sent, reduced to what the lifecycle check still depends on
        let mut sent: Vec<Value> = Vec::new();
        let mut n: u64 = 0;
        while let Some(frame) = sub.next().await {
            let new = projector.push(&frame);
            if new.is_empty() {
                continue;
            }
            let (batch, violated) = checked(&sent, new, &thread_id, &run_id);
            for e in &batch {
                n += 1;
                if n <= skip {
                    continue;
                }
                if let Some(ids) = interrupt_ids(&EventHead::of(e)) {
                    agui.kept().remember(thread.clone(), &run_id, ids).await;
                }
                yield sse::event(Some(n), &crate::json::text(e));
            }
            let ended = batch.last().map(EventHead::of).is_some_and(|e| matches!(&*e.kind, "RUN_FINISHED" | "RUN_ERROR"));
            sent.extend(batch);
            sent = lifecycle_state(sent);
            if violated || ended {
                break;
            }
        }
    };
    sse::response(events, keep_alive)
}

/// `new` if the events sent so far plus `new` keep the AG-UI lifecycle; else the run's end
/// (`RUN_ERROR`, after a `RUN_STARTED` when nothing was sent yet) and `true`: a violation is
/// never sent.
fn checked(sent: &[Value], new: Vec<Value>, thread_id: &str, run_id: &str) -> (Vec<Value>, bool) {
    let mut check = sent.to_vec();
    check.extend(new.iter().cloned());
    let Err(violation) = verify_events(&check) else {
        return (new, false);
    };
    tracing::error!(run_id, violation = %violation, "AG-UI lifecycle violation: run ended with RUN_ERROR");
    let mut error = Vec::new();
    if sent.is_empty() {
        error.push(e2a::agui::run_started(thread_id, run_id));
    }
    let message = format!("the gateway stopped an invalid event sequence: {violation}");
    error.push(e2a::agui::run_error(&message, ErrorKind::InvalidAgentResponse));
    (error, true)
}

/// The events of a verified sequence that the lifecycle check still depends on: the run
/// events (`RUN_STARTED`, `RUN_FINISHED`, `RUN_ERROR`) and the openings of the text messages,
/// reasoning messages and tool calls not closed yet. Content events and closed pairs change
/// nothing in what [`verify_events`] accepts next, so checking `lifecycle_state(sent) + new`
/// accepts exactly what checking `sent + new` accepts.
pub fn lifecycle_state(events: Vec<Value>) -> Vec<Value> {
    let mut kept: Vec<Value> = Vec::new();
    for e in events {
        let head = EventHead::of(&e);
        let (opening, tool_call) = match &*head.kind {
            "RUN_STARTED"
            | "RUN_FINISHED"
            | "RUN_ERROR"
            | "TEXT_MESSAGE_START"
            | "REASONING_MESSAGE_START"
            | "TOOL_CALL_START" => {
                kept.push(e);
                continue;
            }
            "TEXT_MESSAGE_END" => ("TEXT_MESSAGE_START", false),
            "REASONING_MESSAGE_END" => ("REASONING_MESSAGE_START", false),
            "TOOL_CALL_END" => ("TOOL_CALL_START", true),
            _ => continue,
        };
        let closes = head.pair_id(tool_call);
        if let Some(i) = kept.iter().rposition(|k| {
            let k = EventHead::of(k);
            k.kind == opening && k.pair_id(tool_call) == closes
        }) {
            kept.remove(i);
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::lifecycle_state;
    use e2a::agui::verify_events;
    use serde_json::json;

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
