//! The response-stream contract (E2A §12.2–12.3) as code.
//!
//! * [`ResponseStream`] — the producer side: bound to one request, it assigns `sequence`
//!   (0, 1, 2 …), a UUID `response_id` and an RFC 3339 UTC `timestamp` to every frame, echoes
//!   the request's correlation fields, and ends with exactly one final frame. `complete` and
//!   `fail` consume the stream, so nothing can follow the final frame — a compile-time
//!   guarantee.
//! * [`StreamValidator`] — the consumer side: accepts frames of many interleaved requests and
//!   reports every violation with the offending frame; optionally reorders a bounded window of
//!   out-of-order frames and keeps frames for `Last-Event-ID` replay.

use serde_json::Value;

use crate::types::{AnswerResult, E2AResponse, ResponseKind};

mod producer;
mod validator;

pub use producer::ResponseStream;
pub use validator::{StreamPosition, StreamValidator, StreamViolation, ViolationKind};

/// The `details` key marking an error frame a refusal ([`ResponseStream::refuse`]).
pub const REFUSAL_DETAIL: &str = "rejected";

/// Whether `frame` is an agent's refusal ([`ResponseStream::refuse`]), not a failure.
pub fn is_refusal(frame: &E2AResponse) -> bool {
    frame.is_final
        && frame.response_kind == ResponseKind::E2aError
        && frame.body.get("details").and_then(|d| d.get(REFUSAL_DETAIL)) == Some(&Value::Bool(true))
}

/// A new random (v4) UUID as text, the id of every frame, task and message this SDK makes;
/// written into a stack buffer, not through the formatting machinery.
///
/// ```
/// let id = e2a::stream::new_id();
/// assert_eq!(uuid::Uuid::parse_str(&id).map(|u| u.get_version_num()), Ok(4));
/// ```
pub fn new_id() -> String {
    let mut buf = uuid::Uuid::encode_buffer();
    uuid::Uuid::new_v4().hyphenated().encode_lower(&mut buf).to_owned()
}

/// A new time-ordered (v7) UUID as text: for ids that become keys in a store (tasks,
/// contexts, runs), so that new rows land at the end of the store's indexes instead of on a
/// random page of each (a B-tree insert with random keys rewrites a page per row).
///
/// ```
/// let (a, b) = (e2a::stream::new_ordered_id(), e2a::stream::new_ordered_id());
/// assert_eq!(uuid::Uuid::parse_str(&a).map(|u| u.get_version_num()), Ok(7));
/// assert!(a < b);
/// ```
pub fn new_ordered_id() -> String {
    let mut buf = uuid::Uuid::encode_buffer();
    uuid::Uuid::now_v7().hyphenated().encode_lower(&mut buf).to_owned()
}

impl AnswerResult {
    /// The answer a final `e2a.complete` carries (its `result` read as an [`AnswerResult`]);
    /// `None` when it has no result of that shape.
    pub fn of(frame: &E2AResponse) -> Option<AnswerResult> {
        serde::Deserialize::deserialize(frame.body.get("result")?).ok()
    }

    /// [`AnswerResult::of`] the record of `frame`, read from its typed body or the one read
    /// from the wire alike, without making the record.
    ///
    /// ```
    /// use e2a::types::{AnswerResult, CompleteBody, FrameBody};
    /// let req = e2a::E2AEnvelope::new("chat.send", serde_json::json!({}));
    /// let raw = e2a::stream::ResponseStream::for_request(&req).answer("Hi", None);
    /// let result = raw.body_object()["result"].as_object().cloned().unwrap();
    /// let (mut typed, mut empty) = (raw.clone(), raw.clone());
    /// let (extra, none) = (serde_json::Map::new(), serde_json::Map::new());
    /// typed.body = FrameBody::Complete(CompleteBody { result, extra });
    /// empty.body = FrameBody::Complete(CompleteBody { result: none, extra: serde_json::Map::new() });
    /// for f in [&raw, &typed, &empty] {
    ///     assert_eq!(AnswerResult::of_frame(f), AnswerResult::of(&f.to_record()));
    /// }
    /// assert_eq!(AnswerResult::of_frame(&typed).and_then(|a| a.content).as_deref(), Some("Hi"));
    /// ```
    pub fn of_frame(frame: &crate::frame::Frame) -> Option<AnswerResult> {
        match &frame.body {
            // (the record leaves an empty `result` out)
            crate::frame::FrameBody::Complete(c) if c.result.is_empty() => None,
            crate::frame::FrameBody::Complete(c) => serde::Deserialize::deserialize(&c.result).ok(),
            _ => serde::Deserialize::deserialize(frame.body_object().get("result")?).ok(),
        }
    }
}
