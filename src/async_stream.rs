//! The response-stream producer and validator over `futures::Stream` (feature `async`).

use std::collections::VecDeque;

use futures_util::stream::{self, Stream, StreamExt};
use serde_json::Value;

use crate::stream::{ResponseStream, StreamValidator, StreamViolation};
use crate::types::{E2AEnvelope, E2AResponse, Frame};

/// The frames answering `request` for a stream of text deltas: one `e2a.chunk` per delta, then
/// the final `e2a.complete` with `result` once the deltas end.
///
/// ```
/// use futures_util::StreamExt;
/// let req = e2a::E2AEnvelope::new("chat.send", serde_json::json!({})).with_request_id("r1");
/// let deltas = futures_util::stream::iter(vec!["Hel".to_string(), "lo".to_string()]);
/// let frames: Vec<_> = futures_executor::block_on(
///     e2a::async_stream::produce_text(&req, deltas, serde_json::json!({})).collect());
/// assert_eq!(frames.len(), 3);
/// assert!(frames[2].is_final);
/// ```
pub fn produce_text<S>(request: &E2AEnvelope, deltas: S, result: Value) -> impl Stream<Item = Frame>
where
    S: Stream<Item = String> + Unpin,
{
    let state = (Some(ResponseStream::for_request(request)), deltas, Some(result));
    stream::unfold(state, |(mut producer, mut deltas, mut result)| async move {
        let p = producer.as_mut()?;
        match deltas.next().await {
            Some(d) => {
                let frame = p.text(&d);
                Some((frame, (producer, deltas, result)))
            }
            // the final frame consumes the producer: nothing can follow it
            None => {
                let fin = producer.take()?.complete(result.take().unwrap_or(Value::Null));
                Some((fin, (None, deltas, None)))
            }
        }
    })
}

/// What [`validate`] yields: every frame, in order, then each violation as soon as it is found.
#[derive(Debug, Clone, PartialEq)]
pub enum Checked {
    /// A frame (in the order received, or reordered when a window is set).
    Frame(Box<E2AResponse>),
    /// A violation of the stream contract.
    Violation(StreamViolation),
}

/// Validates a stream of frames (records or [`Frame`]s) on the fly with `validator` (which may reorder a window):
/// frames pass through, violations are interleaved as found, and missing final frames are
/// reported when the input ends.
pub fn validate<S, F>(frames: S, validator: StreamValidator) -> impl Stream<Item = Checked>
where
    S: Stream<Item = F> + Unpin,
    F: Into<E2AResponse>,
{
    struct St<S> {
        input: S,
        v: Option<StreamValidator>,
        queue: VecDeque<Checked>,
        seen: usize,
    }
    stream::unfold(
        St {
            input: frames,
            v: Some(validator),
            queue: VecDeque::new(),
            seen: 0,
        },
        |mut st| async move {
            loop {
                if let Some(item) = st.queue.pop_front() {
                    return Some((item, st));
                }
                let v = st.v.as_mut()?;
                match st.input.next().await {
                    Some(frame) => {
                        for f in v.push(&frame.into()) {
                            st.queue.push_back(Checked::Frame(Box::new(f)));
                        }
                        for x in &v.violations()[st.seen..] {
                            st.queue.push_back(Checked::Violation(x.clone()));
                        }
                        st.seen = v.violations().len();
                    }
                    None => {
                        let seen = st.seen;
                        let all = st.v.take()?.finish();
                        st.queue.extend(all.into_iter().skip(seen).map(Checked::Violation));
                    }
                }
            }
        },
    )
}
