//! What a user is shown of the frames a client protocol has no slot of its own for, the same
//! way in every projector ([`crate::acp::stream::AcpStreamProjector`],
//! [`crate::agui::AguiProjector`]):
//!
//! - an **artifact** (any name, any kind) is shown as text: a line naming it when it starts,
//!   then its parts: text as it is, a file by its name and URL (or its media type and size),
//!   data as JSON ([`artifact_text`]);
//! - the **final content** (an answer's or a direct reply's `result.content`) that was not
//!   streamed as text is shown as a last piece of text ([`ShownText::owed`]): an agent that
//!   answers without streaming, a remote A2A agent's `Message`, a report whose summary comes
//!   only at the end.

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::types::{
    A2aPart, AnswerResult, ArtifactDelta, ChunkEventType, DeltaKind, E2AResponse, Frame, FrameBody, ResponseKind,
    ToolCall, ToolCallDelta, ToolResultDelta,
};

/// The answer text one turn has shown so far, to tell what its final frame still owes.
#[derive(Debug, Clone, Default)]
pub struct ShownText {
    streamed: String,
}

impl ShownText {
    /// Records answer text streamed to the client.
    pub fn streamed(&mut self, text: &str) {
        self.streamed.push_str(text);
    }

    /// The text the final frame `frame` still owes the user: its content when no text was
    /// streamed, what the content adds when it goes on from the streamed text, nothing when
    /// the streamed text already holds it, and otherwise the whole content on a line of its
    /// own (a summary unlike what was streamed is still shown, not dropped).
    ///
    /// ```
    /// use e2a::{E2AEnvelope, shown::ShownText, stream::ResponseStream};
    /// let req = E2AEnvelope::new("chat.send", serde_json::json!({}));
    /// let never_streamed = e2a::E2AResponse::from(ResponseStream::for_request(&req).answer("the summary", None));
    /// assert_eq!(ShownText::default().owed(&never_streamed).as_deref(), Some("the summary"));
    /// let mut shown = ShownText::default();
    /// shown.streamed("the summary");
    /// assert_eq!(shown.owed(&never_streamed), None);
    /// let mut thinking = ShownText::default();
    /// thinking.streamed("thinking…");
    /// assert_eq!(thinking.owed(&never_streamed).as_deref(), Some("\nthe summary"));
    /// ```
    pub fn owed(&self, frame: &E2AResponse) -> Option<String> {
        if !frame.is_final {
            return None;
        }
        let content = AnswerResult::of(frame)?.content?;
        if let Some(rest) = content.strip_prefix(self.streamed.as_str()) {
            return (!rest.is_empty()).then(|| rest.to_string());
        }
        if self.streamed.contains(content.as_str()) {
            return None;
        }
        Some(format!("\n{content}"))
    }
}

/// The text shown for an artifact chunk's `delta` (an [`ArtifactDelta`]): on its first chunk
/// a line naming the artifact, then each part (text as it is; a file as `name <url>`, or its
/// name, media type and size when its bytes came inline; data as JSON). `None` when `delta` is
/// not an artifact or shows nothing.
///
/// ```
/// let delta = serde_json::json!({"artifact_id": "a1", "name": "answer", "parts": [{"text": "42"}]});
/// assert_eq!(e2a::shown::artifact_text(&delta).as_deref(), Some("\n[answer]\n42"));
/// let more = serde_json::json!({"artifact_id": "a1", "append": true, "parts": [{"url": "https://x/r.pdf", "filename": "r.pdf"}]});
/// assert_eq!(e2a::shown::artifact_text(&more).as_deref(), Some("r.pdf <https://x/r.pdf>\n"));
/// ```
pub fn artifact_text(delta: &Value) -> Option<String> {
    let artifact = ArtifactDelta::deserialize(delta).ok()?;
    let mut out = String::new();
    if !artifact.append {
        let name = artifact
            .name
            .as_deref()
            .filter(|n| !n.is_empty())
            .unwrap_or(&artifact.artifact_id);
        out.push_str(&format!("\n[{name}]\n"));
    }
    for part in &artifact.parts {
        let Ok(part) = A2aPart::deserialize(&Value::Object(part.clone())) else {
            continue;
        };
        part_text(&part, &mut out);
    }
    (!out.trim().is_empty()).then_some(out)
}

/// Appends what `part` shows as text to `out`.
fn part_text(part: &A2aPart, out: &mut String) {
    let name = part.filename.as_deref().unwrap_or("file");
    let media = part.media_type.as_deref().unwrap_or("application/octet-stream");
    if let Some(text) = &part.text {
        out.push_str(text);
    } else if let Some(url) = &part.url {
        out.push_str(&format!("{name} <{url}>\n"));
    } else if let Some(raw) = &part.raw {
        // base64: three bytes in four characters
        let bytes = raw.trim_end_matches('=').len() * 3 / 4;
        out.push_str(&format!("{name} ({media}, {bytes} bytes)\n"));
    } else if let Some(data) = &part.data {
        out.push_str(&data.to_string());
        out.push('\n');
    }
}

/// What a client that takes one frame of a run (E2A `Accept: application/json`) must still be
/// shown of the frames before it: fed every frame, [`WholeAnswer::finish`] gives the final
/// frame with what the stream carried and the final frame does not.
///
/// - an answer (`e2a.complete`) gains `result.content` (the streamed text) when it has none —
///   a pause's result, an agent that ended without one — and `result.artifacts` (each artifact
///   whole) and `result.tool_calls` (each call with its result) when the run streamed some
///   and the result has none of its own ([`AnswerResult`]);
/// - a failure (`e2a.error`) gains the same under `details` (what the run had shown before it
///   failed);
/// - anything else is left as it is.
///
/// ```
/// use e2a::{E2AEnvelope, shown::WholeAnswer, stream::ResponseStream};
/// let mut frames = ResponseStream::for_request(&E2AEnvelope::new("chat.send", serde_json::json!({})));
/// let mut whole = WholeAnswer::default();
/// whole.push(&frames.text("Here it is."));
/// let piece = |v| serde_json::from_value::<e2a::types::ArtifactDelta>(v).unwrap();
/// whole.push(&frames.artifact(&piece(serde_json::json!({"artifact_id": "a1", "name": "notes.txt", "parts": [{"text": "alpha "}]}))));
/// whole.push(&frames.artifact(&piece(serde_json::json!({"artifact_id": "a1", "append": true, "parts": [{"text": "beta"}]}))));
/// let last = frames.complete(serde_json::json!({"content": "Here it is."}));
/// let shown = whole.finish(&last).unwrap();
/// let artifacts = &shown.body["result"]["artifacts"];
/// assert_eq!(artifacts[0]["name"], "notes.txt");
/// assert_eq!(artifacts[0]["parts"], serde_json::json!([{"text": "alpha "}, {"text": "beta"}]));
/// assert_eq!(shown.body["result"]["content"], "Here it is.");
/// // a final frame that carries everything is left alone
/// assert!(WholeAnswer::default().finish(&last).is_none());
/// ```
#[derive(Debug, Clone, Default)]
pub struct WholeAnswer {
    text: String,
    artifacts: Vec<ArtifactDelta>,
    tool_calls: Vec<ToolCall>,
}

impl WholeAnswer {
    /// Takes in one frame of the run, in order (a record: `&Frame::from(record)`).
    pub fn push(&mut self, frame: &Frame) {
        if frame.response_kind != ResponseKind::E2aChunk {
            return;
        }
        match frame.chunk_delta() {
            (Some(DeltaKind::Text), delta) => {
                if let Some(text) = delta.and_then(Value::as_str) {
                    self.text.push_str(text);
                }
            }
            (Some(DeltaKind::Tool), _) => {
                if let Some(call) = frame.structured_delta::<ToolCallDelta>(ChunkEventType::ChatToolCall) {
                    self.tool_calls.push(call.tool_call);
                } else if let Some(done) = frame.structured_delta::<ToolResultDelta>(ChunkEventType::ChatToolResult) {
                    if let Some(call) = self.tool_calls.iter_mut().find(|c| c.tool_call_id == done.tool_call_id) {
                        call.result = done.result;
                        call.status = done.status.or(call.status.take());
                    }
                }
            }
            _ => {
                if let Some(piece) = frame.structured_delta::<ArtifactDelta>(ChunkEventType::Artifact) {
                    self.artifact(piece);
                }
            }
        }
    }

    /// One artifact piece: it starts (or replaces) its artifact, or extends it.
    fn artifact(&mut self, mut piece: ArtifactDelta) {
        let known = self.artifacts.iter_mut().find(|a| a.artifact_id == piece.artifact_id);
        match known {
            Some(whole) if piece.append => {
                whole.parts.append(&mut piece.parts);
                whole.name = whole.name.take().or(piece.name);
                whole.kind = whole.kind.take().or(piece.kind);
            }
            Some(whole) => *whole = whole_piece(piece),
            None => self.artifacts.push(whole_piece(piece)),
        }
    }

    /// The final frame `last` with what the run streamed and it does not carry; `None` when it
    /// carries everything (or is not a final answer or failure).
    pub fn finish(self, last: &Frame) -> Option<E2AResponse> {
        self.finish_frame(last).map(E2AResponse::from)
    }

    /// [`WholeAnswer::finish`] as a frame (its JSON text written by the frame's writer).
    pub fn finish_frame(self, last: &Frame) -> Option<Frame> {
        if !self.adds_to(last) {
            return None;
        }
        let mut whole = last.clone();
        self.add_to(&mut whole).then_some(whole)
    }

    /// [`WholeAnswer::finish_frame`] taking the final frame, not copying it: `last` with what
    /// the run streamed and it does not carry (`last` as it is when it carries everything, or
    /// is not a final answer or failure).
    pub fn finish_owned(self, mut last: Frame) -> Frame {
        if self.adds_to(&last) {
            self.add_to(&mut last);
        }
        last
    }

    /// Whether there is anything to add to `last`: it is final and the run streamed something.
    fn adds_to(&self, last: &Frame) -> bool {
        last.is_final && !(self.text.is_empty() && self.artifacts.is_empty() && self.tool_calls.is_empty())
    }

    /// Adds to `whole` what it does not carry; whether anything was added.
    fn add_to(self, whole: &mut Frame) -> bool {
        let Some(held) = held_object(whole) else {
            return false;
        };
        let mut added = false;
        let mut add = |name: &str, value: Value| {
            if !held.contains_key(name) {
                held.insert(name.into(), value);
                added = true;
            }
        };
        if !self.text.is_empty() {
            add("content", Value::String(self.text));
        }
        if !self.artifacts.is_empty() {
            add("artifacts", to_array(self.artifacts, ArtifactDelta::into_object));
        }
        if !self.tool_calls.is_empty() {
            add("tool_calls", to_array(self.tool_calls, ToolCall::into_object));
        }
        added
    }
}

/// The object of a final frame's body the whole answer goes in: an answer's `result`, a
/// failure's `details` (made when absent or `null`); `None` for another kind of frame, or when
/// it is not an object.
fn held_object(frame: &mut Frame) -> Option<&mut Map<String, Value>> {
    let key = match frame.response_kind {
        ResponseKind::E2aComplete => "result",
        ResponseKind::E2aError => "details",
        _ => return None,
    };
    if !matches!(
        (&frame.body, &frame.response_kind),
        (FrameBody::Complete(_), ResponseKind::E2aComplete) | (FrameBody::Error(_), ResponseKind::E2aError)
    ) {
        // a body read from the wire (or of an unexpected type): as the record holds it
        frame.body = FrameBody::Raw(std::mem::take(&mut frame.body).into_map());
    }
    match &mut frame.body {
        FrameBody::Complete(c) => Some(&mut c.result),
        FrameBody::Error(e) => Some(e.details.get_or_insert_with(Map::new)),
        FrameBody::Raw(m) => {
            let held = m.entry(key).or_insert(Value::Null);
            if held.is_null() {
                *held = Value::Object(Map::new());
            }
            held.as_object_mut()
        }
        _ => None,
    }
}

/// An artifact piece as a whole artifact (one piece: not appended, the last).
fn whole_piece(mut piece: ArtifactDelta) -> ArtifactDelta {
    piece.append = false;
    piece.last_chunk = true;
    piece
}

/// `items` as a JSON array of the objects `object` moves each into.
fn to_array<T>(items: Vec<T>, object: fn(T) -> Map<String, Value>) -> Value {
    Value::Array(items.into_iter().map(|i| Value::Object(object(i))).collect())
}
