//! E2A over HTTP, as `generated/openapi.json` describes it: `POST /v1/e2a/requests` answered
//! as JSON (the final frame), SSE or NDJSON by `Accept`; `GET /v1/e2a/schema`; `GET /healthz`.
//! [`ROUTES`] lists what is served; a test checks it against the OpenAPI document.

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};

use crate::web::edge::Edge;
use crate::web::trace::{self, TraceContext};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Router};
use e2a::taxonomy::ErrorKind;
use e2a::E2AEnvelope;
use serde_json::json;
use std::sync::Arc;

use crate::agent::Agent;
use crate::agent::Caller;
use crate::pipeline::Pipeline;
use crate::runs::{self, Subscription};
use crate::web::problem::Problem;
use crate::web::{body, last_event_id, sse};

/// Path of the request operation.
pub use crate::protocol::REQUESTS_PATH;
/// Path of the schema operation.
pub const SCHEMA_PATH: &str = "/v1/e2a/schema";
/// Path of the health check.
pub const HEALTH_PATH: &str = "/healthz";

/// Media types of the request operation's `200` response.
pub const JSON: &str = "application/json";
/// Server-Sent Events.
pub const SSE: &str = sse::SSE;
/// Newline-delimited JSON.
pub const NDJSON: &str = "application/x-ndjson";
/// The schema's media type.
pub const SCHEMA_JSON: &str = "application/schema+json";

/// One served operation: what a test compares with the OpenAPI document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RouteSpec {
    /// Path.
    pub path: &'static str,
    /// Method (upper case).
    pub method: &'static str,
    /// Request body media types.
    pub request: &'static [&'static str],
    /// `(status, media types)` of every response.
    pub responses: &'static [(u16, &'static [&'static str])],
}

const PROBLEM: &[&str] = &[crate::web::problem::PROBLEM_JSON];

/// Every operation the router serves.
pub const ROUTES: &[RouteSpec] = &[
    RouteSpec {
        path: REQUESTS_PATH,
        method: "POST",
        request: &[JSON],
        responses: &[
            (200, &[JSON, SSE, NDJSON]),
            (400, PROBLEM),
            (401, PROBLEM),
            (404, PROBLEM),
            (406, PROBLEM),
            (408, PROBLEM),
            (409, PROBLEM),
            (413, PROBLEM),
            (415, PROBLEM),
            (422, PROBLEM),
            (503, PROBLEM),
        ],
    },
    RouteSpec {
        path: SCHEMA_PATH,
        method: "GET",
        request: &[],
        responses: &[(200, &[SCHEMA_JSON]), (401, PROBLEM)],
    },
    RouteSpec {
        path: HEALTH_PATH,
        method: "GET",
        request: &[],
        responses: &[(200, &[JSON])],
    },
];

/// How the client wants the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The final frame as one JSON document.
    Json,
    /// Every frame as an SSE event.
    Sse,
    /// Every frame as one JSON line.
    Ndjson,
}

/// Picks the answer's media type from `Accept` (quality values honoured; JSON when absent).
/// `None` when nothing acceptable is offered.
pub fn negotiate(accept: Option<&str>) -> Option<Mode> {
    let Some(accept) = accept.map(str::trim).filter(|a| !a.is_empty()) else {
        return Some(Mode::Json);
    };
    let mut best: Option<(f32, usize, Mode)> = None;
    for item in accept.split(',') {
        let Ok(m) = item.trim().parse::<mime::Mime>() else {
            continue;
        };
        let q = m
            .get_param("q")
            .and_then(|q| q.as_str().parse::<f32>().ok())
            .unwrap_or(1.0);
        if q <= 0.0 {
            continue;
        }
        let mode = match (m.type_().as_str(), m.subtype().as_str()) {
            ("application", "json") | ("application", "*") | ("*", "*") => Mode::Json,
            ("text", "event-stream") | ("text", "*") => Mode::Sse,
            ("application", "x-ndjson") => Mode::Ndjson,
            _ => continue,
        };
        // higher quality wins; on a tie, a specific type beats a wildcard, then order
        let specific = usize::from(!m.subtype().as_str().contains('*'));
        let rank = (q, specific, mode);
        let better = match best {
            None => true,
            Some((bq, bs, _)) => q > bq || (q == bq && specific > bs),
        };
        if better {
            best = Some(rank);
        }
    }
    best.map(|(_, _, m)| m)
}

/// The gateway's routes, authentication included. Merge it into your own axum app.
/// The E2A HTTP binding of a gateway's agent.
pub(crate) struct E2aHttp(pub(crate) Arc<Pipeline>);

impl super::Binding for E2aHttp {
    fn name(&self) -> &'static str {
        "e2a"
    }

    fn routes(&self, place: super::Place<'_>, edge: &Edge) -> Router {
        match place {
            super::Place::Root => router(self.0.clone(), edge),
            super::Place::Named { routes, .. } => {
                Router::new().nest(&place.at(&routes.e2a), router(self.0.clone(), edge))
            }
        }
    }

    fn endpoints(&self, place: super::Place<'_>, base: &str) -> Vec<String> {
        let at = match place {
            super::Place::Root => String::new(),
            super::Place::Named { routes, .. } => place.at(&routes.e2a),
        };
        vec![
            format!("POST {base}{at}{REQUESTS_PATH}  E2A: Accept: application/json | text/event-stream | application/x-ndjson"),
            format!("GET  {base}{at}{SCHEMA_PATH}"),
            format!("GET  {base}{at}{HEALTH_PATH}"),
        ]
    }
}

/// The binding's routes under `edge`: the health check public, the rest authenticated, an
/// unknown path under them (a named agent's `/agents/writer/nope`) a `404` problem.
pub(crate) fn router(shared: Arc<Pipeline>, edge: &Edge) -> Router {
    let api = Router::new()
        .route(REQUESTS_PATH, post(send_request).fallback(method_not_allowed_post))
        .route(SCHEMA_PATH, get(get_schema).fallback(method_not_allowed_get));
    let health = Router::new().route(HEALTH_PATH, get(health).fallback(method_not_allowed_get));
    Router::new()
        .merge(edge.around(health))
        .merge(edge.authenticated(&shared.config.auth).around(api))
        .merge(edge.around(Router::new().fallback(not_found)))
        .with_state(shared)
}

/// `404` for a route no binding serves.
pub(crate) async fn not_found() -> Problem {
    Problem::new(ErrorKind::NotFound, "no such resource")
}

async fn method_not_allowed_post() -> Problem {
    let mut p =
        Problem::new(ErrorKind::UnsupportedOperation, "method not allowed").with_status(StatusCode::METHOD_NOT_ALLOWED);
    p.allow = Some("POST");
    p
}

async fn method_not_allowed_get() -> Problem {
    let mut p =
        Problem::new(ErrorKind::UnsupportedOperation, "method not allowed").with_status(StatusCode::METHOD_NOT_ALLOWED);
    p.allow = Some("GET, HEAD");
    p
}

async fn health(State(shared): State<Arc<Pipeline>>) -> Response {
    let body = json!({
        "status": if shared.runs.draining() { "draining" } else { "ok" },
        "agent": shared.agent.name(),
        "live_streams": shared.open_streams(),
    });
    ([(header::CONTENT_TYPE, JSON)], body.to_string()).into_response()
}

async fn get_schema() -> Response {
    ([(header::CONTENT_TYPE, SCHEMA_JSON)], e2a::SCHEMA_JSON).into_response()
}

async fn send_request(
    State(shared): State<Arc<Pipeline>>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, Problem> {
    let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok());
    let mode = negotiate(accept).ok_or_else(|| {
        Problem::new(
            ErrorKind::ContentTypeNotSupported,
            "Accept must allow application/json, text/event-stream or application/x-ndjson",
        )
        .with_status(StatusCode::NOT_ACCEPTABLE)
    })?;
    let resume = last_event_id::read(&headers)?;
    let limits = shared.config.limits;
    let body = body::read(&headers, body, shared.config.body()).await?;
    let mut request = E2AEnvelope::read(body.text(), &e2a::ReadOptions::lenient().with_limits(limits))
        .map_err(|e| Problem::from_read_error(&e))?
        .value;
    trace::correlate(&mut request, TraceContext::from_headers(&headers).trace_id);

    // a request sent again under its `Idempotency-Key`: the first one's answer
    if resume.is_none() {
        if let Some(sub) = repeated(&shared, &caller, &headers, body.text(), &mut request).await? {
            return Ok(respond(&shared, mode, sub).await);
        }
    }

    if let Some(after) = resume {
        let Some(id) = request.request_id.clone() else {
            // only streams of requests with an id are retained
            return Err(Problem::new(
                ErrorKind::NotFound,
                "no stream is retained for a request without request_id",
            )
            .at("/request_id"));
        };
        let sub = shared
            .runs
            .resume(&runs::e2a_key(&caller, &id), Some(after))
            .await
            .map_err(|e| e.problem())?
            .ok_or_else(|| {
                Problem::new(ErrorKind::NotFound, "no stream of this request_id is retained").at("/request_id")
            })?;
        return Ok(respond(&shared, mode, sub).await);
    }

    let admission = shared.admit(caller.clone()).map_err(|r| shared.refused(r))?;
    // a JSON answer nobody can ask for again (no id of the client's, no Idempotency-Key, no
    // store keeping runs): driven here, outside the run registry
    let unnamed = request.request_id.is_none() && crate::web::idempotency_key(&headers).is_none();
    if mode == Mode::Json && unnamed && shared.runs.answers_inline() {
        return Ok(answer_inline(&shared, admission, request).await);
    }
    let id = request
        .request_id
        .get_or_insert_with(e2a::stream::new_ordered_id)
        .clone();
    // the frames of a streamed answer say so
    request.is_stream = mode != Mode::Json;
    let guarded = admission.run(request.clone());
    let key = runs::e2a_key(&caller, &id);
    let grace = shared.config.disconnect_grace;
    let ctx = admission.ctx.clone();
    let permit = admission.into_permit();
    let (run, pump) = shared.runs.open(key, request, &ctx, grace, permit, false);
    let mut sub = run.subscribe(None);
    if mode == Mode::Json {
        // the answer is the final frame (holding what the others carried): drive the run here
        // (no task, no wake-up per frame); the log is still kept for `Last-Event-ID`, and a
        // client gone drops the run at once
        sub.wants_whole();
        pump.pump(guarded).await;
    } else {
        pump.spawn(guarded);
    }
    Ok(respond(&shared, mode, sub).await)
}

/// A JSON request no one can ask for again, run outside the run registry under a `request_id`
/// the gateway makes ([`crate::runs`]' inline runs): its whole answer.
async fn answer_inline(shared: &Pipeline, admission: crate::pipeline::Admission, mut request: E2AEnvelope) -> Response {
    request.request_id = Some(e2a::stream::new_ordered_id());
    request.is_stream = false;
    let frames = admission.run(request);
    let ctx = admission.ctx.clone();
    let _permit = admission.into_permit();
    match shared.runs.answer_inline(frames, &ctx).await {
        Some(json) => ([(header::CONTENT_TYPE, JSON)], json).into_response(),
        None => Problem::new(ErrorKind::Internal, "the run ended without a frame").into_response(),
    }
}

/// With an `Idempotency-Key`: the first request sent under it is remembered (its fingerprint,
/// and its `request_id`, given to `request` when it has none); the same request again gets a
/// reader of the first one's run (`None` when it is no longer kept: it runs again, under the
/// same `request_id`); another request under the key is `409`.
async fn repeated(
    shared: &Pipeline,
    caller: &Caller,
    headers: &HeaderMap,
    body: &str,
    request: &mut E2AEnvelope,
) -> Result<Option<Subscription>, Problem> {
    let Some(key) = crate::web::idempotency_key(headers) else {
        return Ok(None);
    };
    let value: serde_json::Value =
        serde_json::from_str(body).map_err(|e| Problem::new(ErrorKind::ParseError, e.to_string()).at(""))?;
    let fingerprint = crate::tasks::sent::fingerprint(&value);
    let request_id = request
        .request_id
        .get_or_insert_with(e2a::stream::new_ordered_id)
        .clone();
    let record = crate::store::SentRecord {
        owner: caller.owner().unwrap_or_default(),
        key: format!("{}{key}", crate::store::E2A_SENT),
        fingerprint: fingerprint.clone(),
        task_id: request_id,
        at_ms: crate::store::now_ms(),
    };
    let Some(first) = shared
        .runs
        .remember_request(record)
        .await
        .map_err(|e| Problem::store_failed(&e))?
    else {
        return Ok(None);
    };
    if first.fingerprint != fingerprint {
        return Err(Problem::new(
            ErrorKind::InvalidRequest,
            format!(
                "Idempotency-Key {key:?} was used for another request (request_id {}): use a new key",
                first.task_id
            ),
        )
        .with_status(StatusCode::CONFLICT));
    }
    request.request_id = Some(first.task_id.clone());
    let run = runs::e2a_key(caller, &first.task_id);
    // the first request may have been remembered an instant before its run opened
    for _ in 0..20 {
        if let Some(sub) = shared.runs.resume(&run, None).await.map_err(|e| e.problem())? {
            return Ok(Some(sub));
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    Ok(None)
}

async fn respond(shared: &Pipeline, mode: Mode, mut sub: Subscription) -> Response {
    match mode {
        Mode::Json => match sub.whole_json().await {
            Ok(Some(json)) => ([(header::CONTENT_TYPE, JSON)], json).into_response(),
            Ok(None) => {
                Problem::new(ErrorKind::NotFound, "the stream has no frame after Last-Event-ID").into_response()
            }
            Err(e) => e.problem().into_response(),
        },
        Mode::Sse => {
            let events = async_stream::stream! {
                loop {
                    let mut event = Vec::with_capacity(1024);
                    let head = |sequence, out: &mut Vec<u8>| e2a::sse::event_head(sequence, out);
                    if sub.next_json(&mut event, head).await.is_none() {
                        break;
                    }
                    event.extend_from_slice(e2a::sse::EVENT_END);
                    yield Bytes::from(event);
                }
            };
            sse::response(events, shared.config.keep_alive)
        }
        Mode::Ndjson => {
            let lines = async_stream::stream! {
                loop {
                    let mut line = Vec::with_capacity(1024);
                    if sub.next_json(&mut line, |_, _| {}).await.is_none() {
                        break;
                    }
                    line.push(b'\n');
                    yield Bytes::from(line);
                }
            };
            sse::streaming(NDJSON, lines)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{negotiate, Mode};

    #[test]
    fn accept_picks_the_best_supported_media_type() {
        assert_eq!(negotiate(None), Some(Mode::Json));
        assert_eq!(negotiate(Some("*/*")), Some(Mode::Json));
        assert_eq!(negotiate(Some("text/event-stream")), Some(Mode::Sse));
        assert_eq!(negotiate(Some("application/x-ndjson")), Some(Mode::Ndjson));
        assert_eq!(
            negotiate(Some("application/json;q=0.5, text/event-stream")),
            Some(Mode::Sse)
        );
        assert_eq!(
            negotiate(Some("*/*;q=0.9, application/x-ndjson;q=0.9")),
            Some(Mode::Ndjson)
        );
        assert_eq!(
            negotiate(Some("text/event-stream;q=0, application/json")),
            Some(Mode::Json)
        );
        assert_eq!(negotiate(Some("image/png")), None);
        assert_eq!(negotiate(Some("not a media type")), None);
    }
}
