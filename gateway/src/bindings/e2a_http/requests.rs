//! `POST /v1/e2a/requests`: an envelope in, its answer out — the final frame as JSON, or every
//! frame streamed — resumable with `Last-Event-ID`, safe to retry with `Idempotency-Key`.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::State;
use axum::http::{header, HeaderMap};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use e2a::taxonomy::ErrorKind;
use e2a::E2AEnvelope;

use super::answer::{mode_of, read_envelope, repeated, respond, Mode, JSON};
use crate::agent::Caller;
use crate::pipeline::Pipeline;
use crate::runs;
use crate::web::last_event_id;
use crate::web::problem::Problem;

pub(super) async fn send_request(
    State(shared): State<Arc<Pipeline>>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, Problem> {
    let mode = mode_of(&headers)?;
    let resume = last_event_id::read(&headers)?;
    let (mut request, body) = read_envelope(&shared, &headers, body).await?;

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

    let mut admission = shared
        .admit(caller.clone(), crate::pipeline::Via::E2a)
        .map_err(|r| shared.refused(r))?;
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
    let key = runs::e2a_key(&caller, &id);
    admission.for_run(&key);
    let guarded = admission.run(request.clone());
    let grace = shared.config.cancel_after();
    let ctx = admission.ctx.clone();
    let permit = admission.into_permit();
    let (run, pump) = shared.runs.open(key, request, &ctx, grace, permit, false);
    let mut sub = run.subscribe(None);
    if mode == Mode::Json {
        sub.wants_whole();
    }
    if mode == Mode::Json && grace.is_some() {
        // the answer is the final frame (holding what the others carried) and the run ends
        // with its client: drive it here (no task, no wake-up per frame); the log is still
        // kept for `Last-Event-ID`, and a client gone drops the run at once
        pump.pump(guarded).await;
    } else {
        // a detached run goes on when its client goes away
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
