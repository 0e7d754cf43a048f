//! Stream frames: the response record as a stream carries it.
//!
//! A [`Frame`] is an [`E2AResponse`](crate::E2AResponse) cut in two: the fields every frame
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
