//! How an E2A answer is given: its media type (from `Accept`), the answer of a request sent
//! again under its `Idempotency-Key`, and the answer written — the final frame as JSON, or
//! every frame as SSE or NDJSON.

use axum::body::Bytes;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use e2a::taxonomy::ErrorKind;
use e2a::E2AEnvelope;

use crate::agent::Caller;
use crate::pipeline::Pipeline;
use crate::runs::{self, Subscription};
use crate::web::body::JsonBody;
use crate::web::problem::Problem;
use crate::web::sse;
use crate::web::trace;

/// Media types of the request operation's `200` response.
pub const JSON: &str = "application/json";
/// Server-Sent Events.
pub const SSE: &str = sse::SSE;
/// Newline-delimited JSON.
pub const NDJSON: &str = "application/x-ndjson";

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

/// The request's body, read within the limits, and the envelope in it (the lenient reader),
/// correlated with the request's trace.
pub(super) async fn read_envelope(
    shared: &Pipeline,
    headers: &HeaderMap,
    body: axum::body::Body,
) -> Result<(E2AEnvelope, JsonBody), Problem> {
    let body = crate::web::body::read(headers, body, shared.config.body()).await?;
    let options = e2a::ReadOptions::lenient().with_limits(shared.config.limits);
    let mut request = E2AEnvelope::read(body.text(), &options)
        .map_err(|e| Problem::from_read_error(&e))?
        .value;
    trace::correlate(&mut request, trace::request_trace_id(headers));
    Ok((request, body))
}

/// [`negotiate`], or the `406` problem when nothing acceptable is offered.
pub(super) fn mode_of(headers: &HeaderMap) -> Result<Mode, Problem> {
    let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok());
    negotiate(accept).ok_or_else(|| {
        Problem::new(
            ErrorKind::ContentTypeNotSupported,
            "Accept must allow application/json, text/event-stream or application/x-ndjson",
        )
        .with_status(StatusCode::NOT_ACCEPTABLE)
    })
}

/// With an `Idempotency-Key`: the first request sent under it is remembered (its fingerprint,
/// and its `request_id`, given to `request` when it has none); the same request again gets a
/// reader of the first one's run (`None` when it is no longer kept: it runs again, under the
/// same `request_id`); another request under the key is `409`.
pub(super) async fn repeated(
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

pub(super) async fn respond(shared: &Pipeline, mode: Mode, mut sub: Subscription) -> Response {
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
