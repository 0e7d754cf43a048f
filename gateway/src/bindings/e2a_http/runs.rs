//! The E2A run resource, beside `POST /v1/e2a/requests` on the E2A HTTP binding: a run
//! submitted without waiting for it (`POST /v1/e2a/runs`: `202` and the run), looked up
//! (`GET /v1/e2a/runs/{id}`), read (`GET /v1/e2a/runs/{id}/frames`: JSON, SSE or NDJSON,
//! from `Last-Event-ID`) and cancelled (`POST /v1/e2a/runs/{id}:cancel`). A run is its
//! caller's (owner-scoped like tasks: another caller's run id is `404`), detached from any
//! client, and readable on any gateway of a store that keeps runs.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use e2a::taxonomy::ErrorKind;
use e2a::types::{E2aRun, E2aRunPage, RunState};
use e2a::{E2AEnvelope, E2AResponse};

use super::answer::{mode_of, read_envelope, repeated, respond, Mode, JSON};
use crate::agent::{Agent, Caller};
use crate::pipeline::Pipeline;
use crate::runs::{self, Cancel, RunList, RunPageAsk, RunView};
use crate::web::last_event_id;
use crate::web::problem::Problem;
use crate::web::trace;

/// How long `:cancel` waits for the run's final frame before answering with where it is.
const CANCEL_WAIT: Duration = Duration::from_secs(5);

/// `POST /v1/e2a/runs`: the request runs detached; `202` and the run (`Location` names it).
/// Under an `Idempotency-Key`, the same request again is `200` and the same run, another
/// request `409`; a `request_id` that already names a run of the caller is `409` (a run is
/// never replaced).
pub(super) async fn submit(
    State(shared): State<Arc<Pipeline>>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, Problem> {
    let (mut request, body) = read_envelope(&shared, &headers, body).await?;
    if repeated(&shared, &caller, &headers, body.text(), &mut request)
        .await?
        .is_some()
    {
        // the same request under its Idempotency-Key: the run it started
        let id = request.request_id.clone().unwrap_or_default();
        return found(&shared, &caller, &id, StatusCode::OK, Some(location(&id))).await;
    }
    let id = request
        .request_id
        .get_or_insert_with(e2a::stream::new_ordered_id)
        .clone();
    if view_of(&shared, &caller, &id).await?.is_some() {
        return Err(Problem::new(
            ErrorKind::InvalidRequest,
            format!("a run of request_id {id:?} exists: read it at its run resource, or send a new request_id"),
        )
        .at("/request_id")
        .with_status(StatusCode::CONFLICT));
    }
    start(&shared, &caller, request, &id).await
}

/// Starts `request` (of id `id`) as a detached run of `caller`: `202` and the run.
async fn start(
    shared: &Arc<Pipeline>,
    caller: &Caller,
    mut request: E2AEnvelope,
    id: &str,
) -> Result<Response, Problem> {
    let mut admission = shared
        .admit(caller.clone(), crate::pipeline::Via::E2a)
        .map_err(|r| shared.refused(r))?;
    request.is_stream = true;
    // nobody waits on it: it runs to its end whatever `on_disconnect` says
    let key = runs::e2a_key(caller, id);
    admission.for_run(&key);
    let guarded = admission.run(request.clone());
    let ctx = admission.ctx.clone();
    let (_, mut pump) = shared
        .runs
        .open(key, request, &ctx, None, admission.into_permit(), false);
    // stored before the `202`: every gateway of the store knows the run it names (should
    // the store refuse it, the run reads failed, `store_failed`, as it would from its pump)
    if let Err(e) = pump.open_in_store().await {
        tracing::warn!(error = %e, "cannot store a new run before answering 202");
    }
    pump.spawn(guarded);
    found(shared, caller, id, StatusCode::ACCEPTED, Some(location(id))).await
}

/// Where run `id` is, relative to the collection's own path (`…/v1/e2a/runs`), whatever
/// prefix it is served under.
fn location(id: &str) -> String {
    format!("runs/{}", crate::protocol::path_segment(id))
}

/// `GET /v1/e2a/runs?page_size=&page_token=`: a page of the caller's runs.
pub(super) async fn list(
    State(shared): State<Arc<Pipeline>>,
    Extension(caller): Extension<Caller>,
    RawQuery(query): RawQuery,
) -> Result<Response, Problem> {
    let ask = page_of(query.as_deref())?;
    let listed = shared
        .runs
        .list(&runs::e2a_key(&caller, ""), |id| runs::e2a_key(&caller, id), ask)
        .await
        .map_err(|e| e.problem())?;
    Ok(page_response(&shared, listed))
}

/// A page of runs, as `E2ARunPage` JSON.
pub(crate) fn page_response(shared: &Pipeline, listed: RunList) -> Response {
    let page = E2aRunPage {
        next_page_token: listed.next,
        total_size: listed.total as u64,
        runs: listed
            .runs
            .into_iter()
            .map(|(id, view)| resource(shared, &id, view))
            .collect(),
    };
    ([(header::CONTENT_TYPE, JSON)], crate::json::text(&page)).into_response()
}

/// The page a list query asks for (`page_size`, `page_token`); a wrong size is `400` naming
/// its parameter.
pub(crate) fn page_of(query: Option<&str>) -> Result<RunPageAsk, Problem> {
    let mut ask = RunPageAsk {
        cursor: None,
        limit: DEFAULT_PAGE,
    };
    for (k, v) in form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
        let bad = |why: &str| Problem::new(ErrorKind::InvalidRequest, format!("query parameter {k}: {why}"));
        match &*k {
            "page_size" => {
                ask.limit = match v.parse::<usize>() {
                    Ok(0) => DEFAULT_PAGE,
                    Ok(n) if n <= MAX_PAGE => n,
                    _ => return Err(bad(&format!("must be an integer from 0 to {MAX_PAGE}"))),
                }
            }
            "page_token" if v.is_empty() => ask.cursor = None,
            // what a page names as the next: a run's store id (a UUID), or its number here
            "page_token" if uuid::Uuid::try_parse(&v).is_ok() || v.parse::<u64>().is_ok() => {
                ask.cursor = Some(v.into_owned())
            }
            "page_token" => return Err(bad("is not a token this gateway issued")),
            _ => {}
        }
    }
    Ok(ask)
}

/// Runs per page when the query names no `page_size`.
const DEFAULT_PAGE: usize = 50;
/// The most runs per page.
const MAX_PAGE: usize = 100;

/// `POST /v1/e2a/runs/{id}:replay`: a new detached run of the caller's run's request, under a
/// new request id; its provenance names the run replayed.
async fn replay(shared: &Arc<Pipeline>, caller: &Caller, headers: &HeaderMap, id: &str) -> Result<Response, Problem> {
    let view = view_of(shared, caller, id).await?.ok_or_else(|| no_run(id))?;
    let mut request = view.request.as_deref().cloned().ok_or_else(|| {
        Problem::new(
            ErrorKind::InvalidRequest,
            format!("the request of run {id:?} cannot be read back"),
        )
        .with_status(StatusCode::CONFLICT)
    })?;
    let new_id = e2a::stream::new_ordered_id();
    request.request_id = Some(new_id.clone());
    request.provenance.details.insert(REPLAY_OF.into(), id.into());
    if let Some(trace_id) = trace::request_trace_id(headers) {
        request.correlation_id = Some(trace_id);
    }
    start(shared, caller, request, &new_id).await
}

/// The key of `provenance.details` naming the run a replay replays.
const REPLAY_OF: &str = "replay_of";

/// `GET /v1/e2a/runs/{id}` and `POST /v1/e2a/runs/{id}:cancel` (one route: the segment
/// names the resource); any other method is `405` with the resource's `Allow`.
pub(super) async fn run(
    method: Method,
    State(shared): State<Arc<Pipeline>>,
    Extension(caller): Extension<Caller>,
    Path(segment): Path<String>,
    headers: HeaderMap,
) -> Result<Response, Problem> {
    match segment.rsplit_once(':') {
        Some((id, "cancel")) if method == Method::POST => cancel(&shared, &caller, id).await,
        Some((id, "replay")) if method == Method::POST => replay(&shared, &caller, &headers, id).await,
        Some((_, "cancel" | "replay")) => Err(not_allowed("POST")),
        _ if matches!(method, Method::GET | Method::HEAD) => {
            found(&shared, &caller, &segment, StatusCode::OK, None).await
        }
        _ => Err(not_allowed("GET, HEAD")),
    }
}

/// `GET /v1/e2a/runs/{id}/frames`: the frames after `Last-Event-ID` (all without it) — held
/// now, as a JSON array, or streamed to the run's end (SSE, NDJSON) by `Accept`.
pub(super) async fn frames(
    State(shared): State<Arc<Pipeline>>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, Problem> {
    let mode = mode_of(&headers)?;
    let after = last_event_id::read(&headers)?;
    let mut sub = shared
        .runs
        .resume(&runs::e2a_key(&caller, &id), after)
        .await
        .map_err(|e| e.problem())?
        .ok_or_else(|| no_run(&id))?;
    if mode != Mode::Json {
        return Ok(respond(&shared, mode, sub).await);
    }
    let held = sub.held_now().await;
    let mut out = String::with_capacity(2 + held.iter().map(|f| f.len() + 1).sum::<usize>());
    out.push('[');
    out.push_str(&held.join(","));
    out.push(']');
    Ok(([(header::CONTENT_TYPE, JSON)], out).into_response())
}

/// Stops the caller's run `id` and answers with it once it ended (or after [`CANCEL_WAIT`]);
/// a run that has ended already is answered as it is.
async fn cancel(shared: &Pipeline, caller: &Caller, id: &str) -> Result<Response, Problem> {
    let key = runs::e2a_key(caller, id);
    match shared.runs.cancel(&key) {
        Cancel::Stopping(sub) => {
            to_its_end(sub).await;
        }
        Cancel::Ended => {}
        Cancel::Elsewhere => match view_of(shared, caller, id).await? {
            None => return Err(no_run(id)),
            Some(v) if !v.ended => cancel_elsewhere(shared, &key).await?,
            Some(_) => {}
        },
    }
    found(shared, caller, id, StatusCode::OK, None).await
}

/// Reads a cancelled run to its end (for [`CANCEL_WAIT`] at most).
async fn to_its_end(mut sub: runs::Subscription) {
    let _ = tokio::time::timeout(CANCEL_WAIT, async { while sub.next().await.is_some() {} }).await;
}

/// Asks the gateway of the store that runs `key` to cancel it (the store's notices), and
/// follows the run to its end (for [`CANCEL_WAIT`] at most).
async fn cancel_elsewhere(shared: &Pipeline, key: &crate::agent::ConversationKey) -> Result<(), Problem> {
    let sub = shared.runs.resume(key, None).await.map_err(|e| e.problem())?;
    let (Some(sub), Some(store)) = (sub, shared.runs.store()) else {
        return Ok(());
    };
    store.runs.request_run_cancel(&key.scoped_id()).await.map_err(|e| {
        tracing::error!(error = %e, "cannot ask for a run's cancel");
        Problem::new(ErrorKind::Internal, "the gateway cannot reach the run's gateway now")
            .with_status(StatusCode::SERVICE_UNAVAILABLE)
    })?;
    to_its_end(sub).await;
    Ok(())
}

/// The caller's run `id` as a resource, with `status`; `404` when it is not known.
async fn found(
    shared: &Pipeline,
    caller: &Caller,
    id: &str,
    status: StatusCode,
    location: Option<String>,
) -> Result<Response, Problem> {
    let view = view_of(shared, caller, id).await?.ok_or_else(|| no_run(id))?;
    let body = crate::json::text(&resource(shared, id, view));
    let mut response = (status, [(header::CONTENT_TYPE, JSON)], body).into_response();
    if let Some(at) = location.and_then(|l| HeaderValue::from_str(&l).ok()) {
        response.headers_mut().insert(header::LOCATION, at);
    }
    Ok(response)
}

/// The resource of run `id` from what is known of it.
pub(crate) fn resource(shared: &Pipeline, id: &str, view: RunView) -> E2aRun {
    let read = |text: &Option<String>| text.as_deref().and_then(|t| E2AResponse::from_json(t).ok());
    let (first, last) = (read(&view.first), read(&view.last));
    let final_frame = last.clone().filter(|_| view.ended);
    E2aRun {
        run_id: id.to_string(),
        state: final_frame.as_ref().map_or(RunState::Running, RunState::of_final),
        agent: shared.agent().name(),
        frames: view.frames,
        trace_id: last.as_ref().and_then(|f| f.correlation_id.clone()),
        created_at: first.and_then(|f| f.timestamp),
        updated_at: last.and_then(|f| f.timestamp),
        replay_of: detail(&view, REPLAY_OF),
        parent_run_id: detail(&view, e2a::agui::PARENT_RUN_ID),
        final_frame,
    }
}

/// The text under `key` in the run's request's `provenance.details`.
fn detail(view: &RunView, key: &str) -> Option<String> {
    let request = view.request.as_ref()?;
    request.provenance.details.get(key)?.as_str().map(str::to_string)
}

/// What is known of the caller's run `id` (`None`: no such run is kept).
async fn view_of(shared: &Pipeline, caller: &Caller, id: &str) -> Result<Option<RunView>, Problem> {
    shared
        .runs
        .view(&runs::e2a_key(caller, id))
        .await
        .map_err(|e| e.problem())
}

fn no_run(id: &str) -> Problem {
    Problem::new(ErrorKind::NotFound, format!("no run {id:?} of this caller is kept"))
}

pub(super) fn not_allowed(allow: &'static str) -> Problem {
    let mut p =
        Problem::new(ErrorKind::UnsupportedOperation, "method not allowed").with_status(StatusCode::METHOD_NOT_ALLOWED);
    p.allow = Some(allow);
    p
}
