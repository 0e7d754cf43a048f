//! Stream frames: the response record as a stream carries it.
//!
//! A [`Frame`] is an [`E2AResponse`] cut in two: the fields every frame
//! of a stream shares (what echoes the request, and the stream's own: a [`FrameHead`], held
//! once per stream in a [`Head`] that writes its JSON text once) and each frame's own fields,
//! with a typed [`FrameBody`]. It writes the record's canonical JSON byte for byte, and
//! converts to and from the record with `From`. The types are generated from `schema/`
//! (`x-e2a-frame` on the record and its properties, `x-e2a-body-of` on each body definition);
//! this module holds what they stand on.
//!
//! ```
//! use e2a::frame::{Frame, FrameBody, FrameHead, Head};
//! use e2a::types::{ChunkBody, DeltaKind};
//! let request = e2a::E2AEnvelope::new("chat.send", serde_json::json!({})).with_request_id("r1");
//! let head = Head::new(FrameHead::echoing(&request));
//! let frame = Frame {
//!     head: head.clone(),
//!     body: FrameBody::Chunk(ChunkBody::delta(DeltaKind::Text, "Hel")),
//!     ..Frame::default()
//! };
//! let record = e2a::E2AResponse::from(frame.clone());
//! assert_eq!(record.request_id.as_deref(), Some("r1"));
//! assert_eq!(e2a::write::to_json(&frame), record.to_json());
//! ```

mod head;
mod texts;

pub use crate::types::{Frame, FrameBody, FrameHead};
pub use head::{body_map, Framed, Head, HeadText, WriteHead};
pub use texts::FrameTexts;

use serde_json::{Map, Value};

use crate::types::{ChunkBody, DeltaKind, E2AResponse};

impl Frame {
    /// The record this frame writes (a copy: [`E2AResponse::from`] takes the frame).
    pub fn to_record(&self) -> E2AResponse {
        self.clone().into()
    }

    /// Its JSON text: the record's canonical JSON ([`E2AResponse::to_json`]), byte for byte.
    pub fn to_json(&self) -> String {
        crate::write::to_json(self)
    }

    /// The `body` as the JSON object the record holds: borrowed when it came as one
    /// ([`FrameBody::Raw`]), else made from the typed body.
    pub fn body_object(&self) -> std::borrow::Cow<'_, Map<String, Value>> {
        match &self.body {
            FrameBody::Raw(m) => std::borrow::Cow::Borrowed(m),
            typed => std::borrow::Cow::Owned(typed.clone().into_map()),
        }
    }

    /// The `delta_kind` (when it is a known kind) and `delta` of an `e2a.chunk`'s body, typed or
    /// read from the wire alike; `(None, None)` for a frame of another kind.
    pub fn chunk_delta(&self) -> (Option<DeltaKind>, Option<&Value>) {
        if self.response_kind != crate::types::ResponseKind::E2aChunk {
            return (None, None);
        }
        match &self.body {
            FrameBody::Chunk(c) => (Some(c.delta_kind), c.delta.as_ref()),
            FrameBody::Raw(m) => (ChunkBody::kind_of(m), m.get("delta")),
            _ => (None, None),
        }
    }

    /// The `event_type` and `delta` of an `e2a.chunk`'s body, typed or read from the wire
    /// alike, without a copy; `(None, None)` for a frame of another kind.
    pub fn chunk_event(&self) -> (Option<&str>, Option<&Value>) {
        if self.response_kind != crate::types::ResponseKind::E2aChunk {
            return (None, None);
        }
        match &self.body {
            FrameBody::Chunk(c) => (c.event_type.as_deref(), c.delta.as_ref()),
            FrameBody::Raw(m) => (m.get("event_type").and_then(Value::as_str), m.get("delta")),
            _ => (None, None),
        }
    }

    /// The delta of an `e2a.chunk` of `event` (a tool call, a tool result, an artifact piece)
    /// read as `T`, from the typed body or the one read from the wire alike; `None` for another
    /// frame or a delta that is not a `T` ([`ChunkBody::structured_delta`] on a body object).
    ///
    /// ```
    /// use e2a::types::{ChunkEventType, ToolResultDelta};
    /// let mut frames = e2a::stream::ResponseStream::for_request(&e2a::E2AEnvelope::default());
    /// let f = frames.tool_result("call-1", serde_json::json!({"temp_c": 21}));
    /// let r: ToolResultDelta = f.structured_delta(ChunkEventType::ChatToolResult).unwrap();
    /// assert_eq!(r.tool_call_id, "call-1");
    /// assert!(f.structured_delta::<ToolResultDelta>(ChunkEventType::ChatToolCall).is_none());
    /// ```
    pub fn structured_delta<T: serde::de::DeserializeOwned>(&self, event: crate::types::ChunkEventType) -> Option<T> {
        match self.chunk_event() {
            (Some(e), Some(delta)) if e == event.as_str() => T::deserialize(delta).ok(),
            _ => None,
        }
    }
}

/// Turns a stream's frames, one by one, into one protocol's events: the A2A
/// ([`crate::a2a::stream::A2aStreamProjector`]), ACP ([`crate::acp::stream::AcpStreamProjector`])
/// and AG-UI ([`crate::agui::AguiProjector`]) projectors. A frame's typed body is read as it
/// is (a text delta is projected without a copy of the frame); a record
/// ([`Projector::push_record`]) is read as a frame of it.
pub trait Projector {
    /// One event of the protocol.
    type Event;

    /// The events for one frame (zero, one or more).
    fn push(&mut self, frame: &Frame) -> Vec<Self::Event>;

    /// The events for one frame given as the record.
    fn push_record(&mut self, record: &E2AResponse) -> Vec<Self::Event>;
}
