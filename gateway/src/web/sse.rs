//! Streamed HTTP answers, written once: the headers of a stream (no caching, no proxy
//! buffering) and SSE with keep-alive comments while the source is quiet.

use std::convert::Infallible;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderValue};
use axum::response::Response;
use futures_util::{FutureExt, Stream, StreamExt};

/// The SSE media type.
pub(crate) const SSE: &str = "text/event-stream";

/// An SSE comment that keeps an idle connection open.
const KEEP_ALIVE: &[u8] = b": keep-alive\n\n";

/// One SSE event: `id:` (when given) and one `data:` line (`data` is one line of JSON).
pub(crate) fn event(id: Option<u64>, data: &str) -> Bytes {
    event_with(id, data.len(), |out| out.push_str(data))
}

/// One SSE event of type `kind` (an `event:` line) with one `data:` line (`data` is one line
/// of JSON).
pub(crate) fn named(kind: &str, data: &str) -> Bytes {
    let mut out = String::with_capacity(kind.len() + data.len() + 16);
    for part in ["event: ", kind, "\ndata: ", data, "\n\n"] {
        out.push_str(part);
    }
    Bytes::from(out)
}

/// One SSE event whose `data:` line (one line of JSON, about `len` bytes) `write` appends:
/// the event is written once, into one buffer.
pub(crate) fn event_with(id: Option<u64>, len: usize, write: impl FnOnce(&mut String)) -> Bytes {
    let mut out = String::with_capacity(len + 32);
    if let Some(id) = id {
        out.push_str("id: ");
        out.push_str(itoa::Buffer::new().format(id));
        out.push('\n');
    }
    out.push_str("data: ");
    write(&mut out);
    out.push_str("\n\n");
    Bytes::from(out)
}

/// A streamed response of `media_type` whose body is `chunks`.
pub(crate) fn streaming<S>(media_type: &'static str, chunks: S) -> Response
where
    S: Stream<Item = Bytes> + Send + 'static,
{
    let mut resp = Response::new(Body::from_stream(chunks.map(Ok::<_, Infallible>)));
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(media_type));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    resp
}

/// An SSE response of already encoded `events`, with a keep-alive comment after every
/// `keep_alive` without one. It ends when `events` does.
pub(crate) fn response<S>(events: S, keep_alive: Duration) -> Response
where
    S: Stream<Item = Bytes> + Send + 'static,
{
    let chunks = async_stream::stream! {
        let mut events = Box::pin(events);
        loop {
            // an event that is ready goes out without arming a timer (a burst of events
            // costs no timer each); only a wait is bounded by the keep-alive
            let next = match events.next().now_or_never() {
                Some(next) => next,
                None => match tokio::time::timeout(keep_alive, events.next()).await {
                    Ok(next) => next,
                    Err(_) => {
                        yield Bytes::from_static(KEEP_ALIVE);
                        continue;
                    }
                },
            };
            match next {
                Some(chunk) => yield chunk,
                None => break,
            }
        }
    };
    streaming(SSE, chunks)
}
