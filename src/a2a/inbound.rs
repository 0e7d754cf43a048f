//! A2A → E2A: the frames an A2A agent's `StreamResponse` events are, the mirror of
//! [`crate::a2a::stream::A2aStreamProjector`] (E2A → A2A). A gateway speaking to a remote A2A
//! agent reads its stream with [`A2aStreamReader`]; out and back, what the projector carried
//! comes back as it went.
//!
//! | event | E2A frames |
//! |---|---|
//! | `message` | the direct reply (`a2a.message` + `e2a.complete` with a `ReplyResult`) |
//! | `artifactUpdate` of the `output` artifact | text chunks |
//! | other `artifactUpdate` | `artifact` chunks (`ArtifactDelta`) |
//! | status `WORKING` carrying a frame (`A2aMetadataKey`) | that frame again |
//! | status `WORKING` with text | reasoning |
//! | status `INPUT_REQUIRED` | the pause (the carried one, else a pause for input) |
//! | status `COMPLETED` / `FAILED` / `CANCELED` / `REJECTED` / `AUTH_REQUIRED` | the final frame (`COMPLETED`'s content: the status message's text, else the `output` artifact's, else the other artifacts' text parts) |

use serde_json::{json, Map, Value};

use crate::stream::ResponseStream;
use crate::taxonomy::ErrorKind;
use crate::types::{
    A2aMessage, A2aStreamResponse, A2aTask, A2aTaskArtifactUpdateEvent, A2aTaskState, A2aTaskStatus, ArtifactDelta,
    Frame, PauseKind, PlanApprovalRequiredBody, ResponseKind,
};

use crate::a2a::stream::{carried_frame, carried_pauses, OUTPUT_ARTIFACT};
use crate::response::body_map;

fn text_of(message: Option<&A2aMessage>) -> String {
    message.map(A2aMessage::text).unwrap_or_default()
}

/// The E2A frame a status message carries ([`carried_frame`]: an e2a gateway marks the frames
/// A2A has no native form for); `None` for a plain A2A agent's message.
fn carried(status: &A2aTaskStatus) -> Option<(ResponseKind, Map<String, Value>)> {
    status.message.as_ref().and_then(carried_frame)
}

fn fail(s: ResponseStream, kind: ErrorKind, message: &str, details: Value) -> Frame {
    let details = match details {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    s.fail(kind.mapping().e2a_code, message, details)
}

/// Reads one A2A stream (the `result` of each `SendStreamingMessage` event) into the E2A
/// frames of one run, made by its [`ResponseStream`] (see the module docs).
#[derive(Debug)]
pub struct A2aStreamReader {
    stream: Option<ResponseStream>,
    /// The `output` artifact's text so far.
    text: String,
    /// The text parts of the other artifacts so far: the answer of an agent that streams into
    /// an artifact of its own name (an a2a-sdk agent's `add_artifact(name="answer")`).
    artifact_text: String,
}

impl A2aStreamReader {
    /// A reader making the frames of `stream`.
    pub fn new(stream: ResponseStream) -> Self {
        A2aStreamReader {
            stream: Some(stream),
            text: String::new(),
            artifact_text: String::new(),
        }
    }

    /// Whether a final frame was made (nothing more comes).
    pub fn is_done(&self) -> bool {
        self.stream.is_none()
    }

    /// The producer, to end the run another way (a broken stream, a JSON-RPC error); `None`
    /// once a final frame was made.
    pub fn take_stream(&mut self) -> Option<ResponseStream> {
        self.stream.take()
    }

    /// The frames of one A2A `StreamResponse` (`task`, `message`, `statusUpdate` or
    /// `artifactUpdate`); none once the run has ended.
    pub fn push(&mut self, event: &A2aStreamResponse) -> Vec<Frame> {
        let Some(mut s) = self.stream.take() else {
            return Vec::new();
        };
        match event {
            A2aStreamResponse::Message(m) => s.reply(body_map(m), &m.text()).into(),
            A2aStreamResponse::ArtifactUpdate(u) => {
                let frames = self.artifact_frames(&mut s, u);
                self.stream = Some(s);
                frames
            }
            A2aStreamResponse::StatusUpdate(u) => self.status_frames(s, &u.status),
            A2aStreamResponse::Task(t) => self.status_frames(s, &t.status),
        }
    }

    /// The frames of a task read whole (a `GetTask` answer, the task a push notification
    /// carries): its artifacts, each as one complete artifact update would be, then its status.
    pub fn push_task(&mut self, task: &A2aTask) -> Vec<Frame> {
        let mut frames = Vec::new();
        for artifact in &task.artifacts {
            let update = A2aTaskArtifactUpdateEvent {
                artifact: artifact.clone(),
                append: false,
                context_id: task.context_id.clone(),
                last_chunk: true,
                metadata: Map::new(),
                task_id: task.id.clone(),
            };
            frames.extend(self.push(&A2aStreamResponse::ArtifactUpdate(update)));
        }
        if let Some(s) = self.stream.take() {
            frames.extend(self.status_frames(s, &task.status));
        }
        frames
    }

    /// An artifact update: the `output` artifact's text as text chunks, any other as an
    /// artifact chunk.
    fn artifact_frames(&mut self, s: &mut ResponseStream, u: &A2aTaskArtifactUpdateEvent) -> Vec<Frame> {
        let a = &u.artifact;
        if a.name.as_deref() == Some(OUTPUT_ARTIFACT) {
            let texts = a.parts.iter().filter_map(|p| p.text.as_deref());
            return texts
                .filter(|t| !t.is_empty())
                .map(|t| {
                    self.text.push_str(t);
                    s.text(t)
                })
                .collect();
        }
        for t in a.parts.iter().filter_map(|p| p.text.as_deref()) {
            self.artifact_text.push_str(t);
        }
        let piece = ArtifactDelta {
            artifact_id: a.artifact_id.clone(),
            name: a.name.clone(),
            kind: None,
            parts: a.parts.iter().map(body_map).collect(),
            append: u.append,
            last_chunk: u.last_chunk,
            extra: Map::new(),
        };
        vec![s.artifact(&piece)]
    }

    /// A status: the final frame of a terminal state, the pause of `INPUT_REQUIRED`, else
    /// the frame it carries or its text as reasoning (the run goes on).
    fn status_frames(&mut self, s: ResponseStream, status: &A2aTaskStatus) -> Vec<Frame> {
        let state = status.state.as_str();
        let text = text_of(status.message.as_ref());
        let end = |s: ResponseStream, kind: ErrorKind, details: Value| vec![fail(s, kind, &text, details)];
        let remote = json!({"remote_state": state});
        match status.state {
            A2aTaskState::TaskStateCompleted => {
                // the status message's text, else the `output` artifact's, else the text of
                // the artifacts the agent named otherwise
                let content = [
                    text,
                    std::mem::take(&mut self.text),
                    std::mem::take(&mut self.artifact_text),
                ]
                .into_iter()
                .find(|t| !t.is_empty())
                .unwrap_or_default();
                vec![s.answer(&content, None)]
            }
            A2aTaskState::TaskStateFailed => end(s, ErrorKind::AgentError, remote),
            A2aTaskState::TaskStateCanceled => end(s, ErrorKind::Cancelled, remote),
            A2aTaskState::TaskStateRejected => vec![s.refuse(&text)],
            A2aTaskState::TaskStateAuthRequired => end(s, ErrorKind::AuthRequired, remote),
            A2aTaskState::TaskStateInputRequired => {
                // an e2a agent's pause, as it was (approval or input, its questions); a plain
                // agent's asks for input
                let mut carried = status.message.as_ref().map(carried_pauses).unwrap_or_default();
                match carried.first_mut() {
                    Some(first) => {
                        first.plan_content.get_or_insert(text);
                        s.pause_all(carried)
                    }
                    None => s
                        .pause(PlanApprovalRequiredBody::asking(PauseKind::Input, &text, true))
                        .into(),
                }
            }
            _ => {
                let mut s = s;
                let frame = match carried(status) {
                    // an e2a agent's frame without an A2A form (tool calls, plans, …), as it was
                    Some((ResponseKind::E2aChunk, body)) => Some(s.chunk(body)),
                    Some((kind @ ResponseKind::AcpSessionUpdate, body)) => Some(s.event(kind, body)),
                    _ if !text.is_empty() => Some(s.reasoning(&text)),
                    _ => None,
                };
                self.stream = Some(s);
                frame.into_iter().collect()
            }
        }
    }
}
