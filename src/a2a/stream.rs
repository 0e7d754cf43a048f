//! An E2A response stream → A2A 1.0 `StreamResponse` events (and the JSON-RPC envelopes
//! around them): the `Task` first, text as artifact chunks, reasoning and custom events as
//! `working` status updates, then a terminal status (`COMPLETED`, `FAILED`, `CANCELED`, …).
//!
//! # E2A frames A2A has no native form for
//!
//! Text has a native form (the output artifact), and so do the terminal states. The other
//! frames are carried by the `status.message` of a status update, marked in the message's
//! `metadata` with the keys of [`A2aMetadataKey`] (declared in `schema/constants.json`), so that
//! a reader ([`carried_frame`], used by the gateway's remote A2A agent) rebuilds the same E2A
//! frame — E2A → A2A → E2A keeps their kind and body:
//!
//! | E2A frame | A2A status | `message.metadata` | `message.parts` |
//! |---|---|---|---|
//! | `e2a.chunk`, `delta_kind: reasoning` | `TASK_STATE_WORKING` | `e2a_delta_kind: "reasoning"` (+ `e2a_chunk`) | `[{"text": delta}]` |
//! | `e2a.chunk`, any other non-text kind (`tool`, `custom`, …) | `TASK_STATE_WORKING` | `e2a_delta_kind: <delta_kind>` (+ `e2a_chunk`) | `[{"data": delta}]` |
//! | `acp.session_update` | `TASK_STATE_WORKING` | `e2a_response_kind: "acp.session_update"` | `[{"data": body}]` |
//! | `plan.approval_required` | `TASK_STATE_INPUT_REQUIRED` | `e2a_response_kind: "plan.approval_required"` | `[{"text": plan_content}, {"data": body}]`, one pair per question of the pause ([`carried_pauses`]) |
//!
//! `e2a_chunk` holds the chunk body's fields other than `delta_kind` and `delta` (for example
//! `event_type: chat.tool_call`, which tells a tool call from its result); it is left out when
//! there are none. The delta and the body are never rewritten. A reader takes the first data
//! part (the pause's question comes as a text part before it, for plain clients),
//! or for a reasoning chunk the message's text. A plain A2A agent's status message has no such
//! metadata: [`carried_frame`] answers `None` and the reader treats it as plain A2A (a
//! `WORKING` message's text is reasoning, `INPUT_REQUIRED` a pause for input).
//!
//! ```
//! use e2a::{E2AEnvelope, ResponseKind, a2a::stream::{A2aStreamProjector, carried_frame}, frame::Projector, stream::ResponseStream};
//! use e2a::types::A2aStreamResponse;
//! let req = E2AEnvelope::new("session/prompt", serde_json::json!({}));
//! let mut s = ResponseStream::for_request(&req);
//! let tool = s.chunk(serde_json::from_value(serde_json::json!({"delta_kind": "tool",
//!     "event_type": "chat.tool_call", "delta": {"tool_call": {"tool_call_id": "c1", "name": "ls"}}})).unwrap());
//! let events = A2aStreamProjector::new("task-1", "ctx-1").push(&tool);
//! let A2aStreamResponse::StatusUpdate(update) = &events[1] else { panic!() };
//! let message = update.status.message.as_ref().unwrap();
//! assert_eq!(message.metadata["e2a_delta_kind"], "tool");
//! assert_eq!(carried_frame(message), Some((ResponseKind::E2aChunk, tool.body_object().into_owned())));
//! ```

use crate::types::{
    A2aArtifact, A2aMessage, A2aMetadataKey, A2aPart, A2aStreamResponse, A2aTask, A2aTaskArtifactUpdateEvent,
    A2aTaskState, A2aTaskStatus, A2aTaskStatusUpdateEvent, AnswerResult, ArtifactDelta, ChunkBody, ChunkEventType,
    DeltaKind,
};
use crate::ResponseKind;
use serde_json::{json, Map, Value};

use crate::frame::{Frame, Projector};
use crate::taxonomy::ErrorKind;
use crate::types::{E2AResponse, JsonRpcId};

/// The `metadata` key naming the `response_kind` of the E2A frame a message carries.
pub const RESPONSE_KIND_KEY: &str = A2aMetadataKey::E2aResponseKind.as_str();
/// The `metadata` key naming the `delta_kind` of the E2A chunk a message carries.
pub const DELTA_KIND_KEY: &str = A2aMetadataKey::E2aDeltaKind.as_str();
/// The `metadata` key holding the carried chunk body's fields other than `delta_kind`/`delta`.
pub const CHUNK_FIELDS_KEY: &str = A2aMetadataKey::E2aChunk.as_str();

/// The `delta_kind` and `delta` keys of a chunk body (`schema/response.json`, `ChunkBody`).
const DELTA_KIND: &str = "delta_kind";
const DELTA: &str = "delta";

/// The message `metadata` that carries a chunk body (see the module docs).
fn chunk_metadata(body: &Map<String, Value>) -> Map<String, Value> {
    let mut meta = Map::new();
    if let Some(kind) = body.get(DELTA_KIND) {
        meta.insert(DELTA_KIND_KEY.into(), kind.clone());
    }
    let rest: Map<String, Value> = body
        .iter()
        .filter(|(k, _)| *k != DELTA_KIND && *k != DELTA)
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if !rest.is_empty() {
        meta.insert(CHUNK_FIELDS_KEY.into(), Value::Object(rest));
    }
    meta
}

/// The E2A frame an A2A message carries under the convention of the module docs: its
/// `response_kind` and body, exactly as they were projected. `None` for a message without the
/// convention's metadata (a plain A2A agent's message) or whose carried body is missing.
///
/// ```
/// use e2a::{ResponseKind, a2a::stream::carried_frame};
/// let pause = serde_json::json!({"messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": "Deploy?"},
///     {"data": {"plan_content": "Deploy?", "input_kind": "approval"}}],
///     "metadata": {"e2a_response_kind": "plan.approval_required"}});
/// let (kind, body) = carried_frame(&serde_json::from_value(pause).unwrap()).unwrap();
/// assert_eq!(kind, ResponseKind::PlanApprovalRequired);
/// assert_eq!(body["input_kind"], "approval");
/// let plain = serde_json::json!({"messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": "thinking"}]});
/// assert_eq!(carried_frame(&serde_json::from_value(plain).unwrap()), None);
/// ```
pub fn carried_frame(message: &A2aMessage) -> Option<(ResponseKind, Map<String, Value>)> {
    let meta = &message.metadata;
    let data = message.parts.iter().find_map(|p| p.data.as_ref());
    let kind = meta
        .get(RESPONSE_KIND_KEY)
        .and_then(Value::as_str)
        .map(ResponseKind::from);
    match (kind, meta.get(DELTA_KIND_KEY)) {
        (None | Some(ResponseKind::E2aChunk), Some(delta_kind @ Value::String(_))) => {
            let mut body = meta
                .get(CHUNK_FIELDS_KEY)
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            body.insert(DELTA_KIND.into(), delta_kind.clone());
            let delta = match data {
                Some(d) => Some(d.clone()),
                None => {
                    let texts: Vec<&str> = message.parts.iter().filter_map(|p| p.text.as_deref()).collect();
                    (!texts.is_empty()).then(|| Value::String(texts.concat()))
                }
            };
            if let Some(d) = delta.filter(|d| !d.is_null()) {
                body.insert(DELTA.into(), d);
            }
            Some((ResponseKind::E2aChunk, body))
        }
        (Some(ResponseKind::E2aChunk) | None, _) => None,
        (Some(kind), _) => Some((kind, data?.as_object()?.clone())),
    }
}

/// The pauses an `INPUT_REQUIRED` message of the convention carries, one per question (each
/// data part a `plan.approval_required` body); empty for any other message.
///
/// ```
/// use e2a::a2a::stream::carried_pauses;
/// let asked = serde_json::json!({"messageId": "m", "role": "ROLE_AGENT", "parts": [
///     {"text": "How many?"}, {"data": {"plan_content": "How many?", "input_kind": "input"}},
///     {"text": "Which city?"}, {"data": {"plan_content": "Which city?", "input_kind": "input"}}],
///     "metadata": {"e2a_response_kind": "plan.approval_required"}});
/// let pauses = carried_pauses(&serde_json::from_value(asked).unwrap());
/// let questions: Vec<_> = pauses.iter().filter_map(|p| p.plan_content.as_deref()).collect();
/// assert_eq!(questions, ["How many?", "Which city?"]);
/// ```
pub fn carried_pauses(message: &A2aMessage) -> Vec<crate::types::PlanApprovalRequiredBody> {
    let kind = message.metadata.get(RESPONSE_KIND_KEY).and_then(Value::as_str);
    if kind != Some(ResponseKind::PlanApprovalRequired.as_str()) {
        return Vec::new();
    }
    message
        .parts
        .iter()
        .filter_map(|p| p.data.clone())
        .filter_map(|d| serde_json::from_value(d).ok())
        .collect()
}

/// Projects the frames of one request onto typed A2A 1.0 stream events.
///
/// | E2A frame | A2A event |
/// |---|---|
/// | the first frame | the `Task` (`WORKING`) first — or, for a task already announced ([`Self::announced`]), a `WORKING` status update |
/// | `e2a.chunk` text | a piece of the `output` artifact (`{task}-output`; turn `n` > 1: `{task}-output-{n}`) |
/// | `e2a.chunk`, `event_type: artifact` ([`crate::types::ArtifactDelta`]) | an `artifactUpdate` of that artifact |
/// | other `e2a.chunk`s, `acp.session_update` | a `WORKING` status whose message carries the frame (module docs) |
/// | `a2a.stream_event` | its `StreamResponse`, as it is (dropped when it is not one) |
/// | `e2a.complete` | the output's last piece, then `COMPLETED` with the answer's text as its message |
/// | `plan.approval_required` | `INPUT_REQUIRED`: the question as a text part, then the carried body |
/// | a failure | the state of its [`ErrorKind`] with its message ([`Self::cancel_reason`] for a cancel) |
///
/// ```
/// use e2a::{E2AEnvelope, a2a::stream::A2aStreamProjector, frame::Projector, stream::ResponseStream};
/// use e2a::types::{A2aStreamResponse, A2aTaskState};
/// let req = E2AEnvelope::new("session/prompt", serde_json::json!({}));
/// let mut a2a = A2aStreamProjector::new("task-1", "ctx-1");
/// let mut s = ResponseStream::for_request(&req);
/// let first = a2a.push(&s.text("Hel"));
/// assert!(matches!(first[0], A2aStreamResponse::Task(_)));
/// assert_eq!(first[1].to_value()["artifactUpdate"]["artifact"]["parts"][0]["text"], "Hel");
/// let last = a2a.push(&s.complete(serde_json::json!({})));
/// let A2aStreamResponse::StatusUpdate(u) = last.last().unwrap() else { panic!() };
/// assert_eq!(u.status.state, A2aTaskState::TaskStateCompleted);
/// assert_eq!(u.status.message.as_ref().unwrap().parts[0].text.as_deref(), Some("Hel"));
/// ```
#[derive(Debug, Clone)]
pub struct A2aStreamProjector {
    task_id: String,
    context_id: String,
    artifact_id: String,
    announced: bool,
    started: bool,
    chunks: u64,
    text: String,
    cancel_reason: Option<String>,
    /// The questions of a pause asked so far (a text and a data part each): one
    /// `INPUT_REQUIRED` status asks them all at the turn's end, as the message of the first
    /// question's frame (`asking`: its id and time).
    asked: Vec<A2aPart>,
    asking: Option<Box<E2AResponse>>,
    finished: bool,
}

/// What names and dates the events of one frame: its `response_id`, `sequence` and
/// `timestamp`, from the frame or its record alike.
#[derive(Clone, Copy)]
struct Stamp<'a> {
    response_id: Option<&'a str>,
    sequence: u64,
    timestamp: &'a Option<String>,
}

impl<'a> Stamp<'a> {
    fn of_record(r: &'a E2AResponse) -> Self {
        Stamp {
            response_id: r.response_id.as_deref(),
            sequence: r.sequence,
            timestamp: &r.timestamp,
        }
    }

    fn of_frame(f: &'a Frame) -> Self {
        Stamp {
            response_id: f.response_id.as_deref(),
            sequence: f.sequence,
            timestamp: &f.timestamp,
        }
    }
}

/// The name of the artifact holding the text answer.
pub const OUTPUT_ARTIFACT: &str = "output";

/// The id of a task's output artifact: `{task}-output`, or `{task}-output-{turn}` for a later
/// turn's (written without the formatting machinery: one per turn).
fn output_artifact_id(task_id: &str, turn: Option<usize>) -> String {
    let mut id = String::with_capacity(task_id.len() + OUTPUT_ARTIFACT.len() + 8);
    id.push_str(task_id);
    id.push('-');
    id.push_str(OUTPUT_ARTIFACT);
    if let Some(turn) = turn {
        id.push('-');
        id.push_str(itoa::Buffer::new().format(turn));
    }
    id
}

pub use super::parts::{artifact, data_part, text_part};

impl A2aStreamProjector {
    /// A projector for task `task_id` in context `context_id`.
    pub fn new(task_id: impl Into<String>, context_id: impl Into<String>) -> Self {
        let task_id = task_id.into();
        A2aStreamProjector {
            artifact_id: output_artifact_id(&task_id, None),
            task_id,
            context_id: context_id.into(),
            announced: false,
            started: false,
            chunks: 0,
            text: String::new(),
            cancel_reason: None,
            asked: Vec::new(),
            asking: None,
            finished: false,
        }
    }

    /// The task was already sent (a task service announces it as `SUBMITTED` before the agent
    /// runs): the stream opens with a `WORKING` status update instead of the `Task`.
    pub fn announced(mut self) -> Self {
        self.announced = true;
        self
    }

    /// This is turn `turn` of the task (the first is 1): from the second on, each turn's text
    /// goes to its own output artifact, `{task}-output-{turn}`.
    pub fn turn(mut self, turn: usize) -> Self {
        if turn > 1 {
            self.artifact_id = output_artifact_id(&self.task_id, Some(turn));
        }
        self
    }

    /// The message of a `CANCELED` final status (who canceled), instead of the frame's own.
    pub fn cancel_reason(&mut self, reason: impl Into<String>) {
        self.cancel_reason = Some(reason.into());
    }

    fn status(
        &self,
        state: A2aTaskState,
        message: Option<A2aMessage>,
        timestamp: &Option<String>,
    ) -> A2aStreamResponse {
        A2aStreamResponse::StatusUpdate(A2aTaskStatusUpdateEvent {
            task_id: self.task_id.clone(),
            context_id: self.context_id.clone(),
            status: A2aTaskStatus {
                state,
                message,
                timestamp: timestamp.as_deref().map(proto_timestamp),
            },
            metadata: Map::new(),
        })
    }

    fn agent_message(&self, parts: Vec<A2aPart>, frame: &E2AResponse) -> A2aMessage {
        self.agent_message_of(parts, frame.response_id.as_deref(), frame.sequence)
    }

    /// The agent's message of `parts`, named by the frame's `response_id` (else the task and
    /// the frame's `sequence`).
    fn agent_message_of(&self, parts: Vec<A2aPart>, response_id: Option<&str>, sequence: u64) -> A2aMessage {
        let id = response_id.map_or_else(|| format!("{}-{sequence}", self.task_id), str::to_string);
        A2aMessage::agent(id, &self.task_id, &self.context_id, parts)
    }

    /// A status update whose message carries an E2A frame (see the module docs).
    fn carrier(
        &self,
        state: A2aTaskState,
        metadata: Map<String, Value>,
        parts: Vec<A2aPart>,
        frame: &E2AResponse,
    ) -> A2aStreamResponse {
        let mut m = self.agent_message(parts, frame);
        m.metadata = metadata;
        self.status(state, Some(m), &frame.timestamp)
    }

    /// The `INPUT_REQUIRED` status asking the pause's questions; the stream ends with it.
    fn ask(&mut self, frame: &E2AResponse) -> A2aStreamResponse {
        self.finished = true;
        let meta = Map::from_iter([(
            RESPONSE_KIND_KEY.into(),
            ResponseKind::PlanApprovalRequired.as_str().into(),
        )]);
        let parts = std::mem::take(&mut self.asked);
        let asking = self.asking.take();
        let by = asking.as_deref().unwrap_or(frame);
        self.carrier(A2aTaskState::TaskStateInputRequired, meta, parts, by)
    }

    fn artifact_update(&self, artifact: A2aArtifact, append: bool, last_chunk: bool) -> A2aStreamResponse {
        A2aStreamResponse::ArtifactUpdate(A2aTaskArtifactUpdateEvent {
            task_id: self.task_id.clone(),
            context_id: self.context_id.clone(),
            artifact,
            append,
            last_chunk,
            metadata: Map::new(),
        })
    }

    fn output(&mut self, text: &str, last: bool) -> A2aStreamResponse {
        self.text.push_str(text);
        let artifact = artifact(
            self.artifact_id.clone(),
            Some(OUTPUT_ARTIFACT.into()),
            vec![text_part(text)],
        );
        let append = self.chunks > 0;
        self.chunks += 1;
        self.artifact_update(artifact, append, last)
    }

    /// An agent's artifact piece (`event_type: artifact`) as its own `artifactUpdate`; `None`
    /// when the chunk is not one or its parts are not A2A parts.
    fn artifact_piece(&self, body: &Map<String, Value>) -> Option<A2aStreamResponse> {
        let d: ArtifactDelta = ChunkBody::structured_delta(body, ChunkEventType::Artifact)?;
        let parts = d
            .parts
            .into_iter()
            .map(|p| serde_json::from_value(Value::Object(p)))
            .collect::<Result<Vec<A2aPart>, _>>()
            .ok()?;
        Some(self.artifact_update(artifact(d.artifact_id, d.name, parts), d.append, d.last_chunk))
    }

    fn opening(&self, timestamp: &Option<String>) -> A2aStreamResponse {
        if self.announced {
            return self.status(A2aTaskState::TaskStateWorking, None, timestamp);
        }
        A2aStreamResponse::Task(A2aTask::new(
            &self.task_id,
            &self.context_id,
            A2aTaskState::TaskStateWorking,
        ))
    }

    /// The `StreamResponse` events for one frame given as the record (nothing after the
    /// terminal status).
    fn project(&mut self, frame: &E2AResponse) -> Vec<A2aStreamResponse> {
        let mut out = Vec::new();
        if self.finished {
            return out;
        }
        if !self.started {
            self.started = true;
            out.push(self.opening(&frame.timestamp));
        }
        let b = &frame.body;
        match &frame.response_kind {
            ResponseKind::A2aStreamEvent => out.extend(
                super::response_to_stream_payload(frame).and_then(|m| serde_json::from_value(Value::Object(m)).ok()),
            ),
            ResponseKind::E2aChunk => out.push(self.chunk(frame)),
            ResponseKind::AcpSessionUpdate if !frame.is_final => {
                let meta = Map::from_iter([(RESPONSE_KIND_KEY.into(), frame.response_kind.as_str().into())]);
                let parts = vec![data_part(Value::Object(b.clone()))];
                out.push(self.carrier(A2aTaskState::TaskStateWorking, meta, parts, frame));
            }
            ResponseKind::E2aComplete if frame.is_final && !self.asked.is_empty() => out.push(self.ask(frame)),
            ResponseKind::E2aComplete if frame.is_final => {
                let answered = AnswerResult::of(frame).and_then(|a| a.content);
                self.completed(&mut out, answered, Stamp::of_record(frame));
            }
            ResponseKind::PlanApprovalRequired => {
                // another question of the same pause may follow: all are asked at its end
                let question = b.get("plan_content").and_then(Value::as_str).map(text_part);
                self.asked.extend(question);
                self.asked.push(data_part(Value::Object(b.clone())));
                if self.asking.is_none() {
                    self.asking = Some(Box::new(frame.clone()));
                }
                if frame.is_final {
                    out.push(self.ask(frame));
                }
            }
            _ if frame.is_final => {
                if let Some(kind) = ErrorKind::of_response(frame) {
                    let state = kind
                        .mapping()
                        .a2a_task_state
                        .and_then(A2aTaskState::read)
                        .unwrap_or(A2aTaskState::TaskStateFailed);
                    let text = match (&self.cancel_reason, state) {
                        (Some(reason), A2aTaskState::TaskStateCanceled) => reason.as_str(),
                        _ => b.get("message").and_then(Value::as_str).unwrap_or("agent error"),
                    };
                    let m = self.agent_message(vec![text_part(text)], frame);
                    self.finished = true;
                    out.push(self.status(state, Some(m), &frame.timestamp));
                }
            }
            _ => {}
        }
        out
    }

    /// The end of a completed turn: the output's last chunk (when text was streamed) and the
    /// `COMPLETED` status, whose message is the streamed text, else the answer's `content`.
    fn completed(&mut self, out: &mut Vec<A2aStreamResponse>, answered: Option<String>, at: Stamp<'_>) {
        if self.chunks > 0 {
            out.push(self.output("", true));
        }
        self.finished = true;
        let text = match self.text.is_empty() {
            true => answered.as_deref().unwrap_or(""),
            false => self.text.as_str(),
        };
        let message =
            (!text.is_empty()).then(|| self.agent_message_of(vec![text_part(text)], at.response_id, at.sequence));
        out.push(self.status(A2aTaskState::TaskStateCompleted, message, at.timestamp));
    }

    /// An `e2a.chunk`: text into the output, an artifact piece as itself, anything else carried.
    fn chunk(&mut self, frame: &E2AResponse) -> A2aStreamResponse {
        let b = &frame.body;
        let delta = b.get(DELTA);
        match (ChunkBody::kind_of(b), delta) {
            (Some(DeltaKind::Text), Some(Value::String(t))) => self.output(t, false),
            (Some(DeltaKind::Reasoning), Some(Value::String(t))) => {
                let parts = vec![text_part(t.as_str())];
                self.carrier(A2aTaskState::TaskStateWorking, chunk_metadata(b), parts, frame)
            }
            _ => self.artifact_piece(b).unwrap_or_else(|| {
                let parts = vec![data_part(delta.cloned().unwrap_or(Value::Null))];
                self.carrier(A2aTaskState::TaskStateWorking, chunk_metadata(b), parts, frame)
            }),
        }
    }
}

/// Projects an E2A stream onto A2A `StreamResponse` events (see the module docs).
impl Projector for A2aStreamProjector {
    type Event = A2aStreamResponse;

    /// The events for one frame: a text delta goes into the output artifact as it is, and a
    /// final answer ends the turn, both read from the frame; any other frame is read as its
    /// record.
    fn push(&mut self, frame: &Frame) -> Vec<A2aStreamResponse> {
        if self.finished {
            return Vec::new();
        }
        let text = match frame.chunk_delta() {
            (Some(DeltaKind::Text), Some(Value::String(t))) => Some(t),
            _ => None,
        };
        // the final answer of a turn that asked nothing
        let answers = frame.is_final && frame.response_kind == ResponseKind::E2aComplete && self.asked.is_empty();
        if text.is_none() && !answers {
            return self.project(&frame.to_record());
        }
        let mut out = Vec::with_capacity(2);
        if !self.started {
            self.started = true;
            out.push(self.opening(&frame.timestamp));
        }
        match text {
            Some(t) => out.push(self.output(t, false)),
            None => {
                let answered = AnswerResult::of_frame(frame).and_then(|a| a.content);
                self.completed(&mut out, answered, Stamp::of_frame(frame))
            }
        }
        out
    }

    fn push_record(&mut self, record: &E2AResponse) -> Vec<A2aStreamResponse> {
        self.project(record)
    }
}

/// An E2A timestamp (`…+00:00`) as ProtoJSON writes a `google.protobuf.Timestamp`: UTC with
/// `Z`, and the fraction in groups of 0, 3, 6 or 9 digits.
///
/// ```
/// use e2a::a2a::stream::proto_timestamp;
/// assert_eq!(proto_timestamp("2026-03-26T11:33:01.150000+00:00"), "2026-03-26T11:33:01.150Z");
/// assert_eq!(proto_timestamp("2026-03-26T11:33:01+00:00"), "2026-03-26T11:33:01Z");
/// assert_eq!(proto_timestamp("2026-03-26T11:33:01.000500+00:00"), "2026-03-26T11:33:01.000500Z");
/// ```
pub fn proto_timestamp(t: &str) -> String {
    let base = t.strip_suffix("+00:00").or_else(|| t.strip_suffix('Z')).unwrap_or(t);
    let (secs, frac) = base.split_once('.').unwrap_or((base, ""));
    let frac = frac.trim_end_matches('0');
    let digits = match frac.len() {
        0 => 0,
        1..=3 => 3,
        4..=6 => 6,
        _ => 9,
    };
    // `{secs}.{frac:0<digits$}Z`, without the formatting machinery
    let mut out = String::with_capacity(secs.len() + frac.len().max(digits) + 2);
    out.push_str(secs);
    if digits > 0 {
        out.push('.');
        out.push_str(frac);
        for _ in frac.len()..digits {
            out.push('0');
        }
    }
    out.push('Z');
    out
}

/// A JSON-RPC success envelope around a `StreamResponse` (one SSE `data:` line).
/// ```
/// let line = e2a::a2a::stream::jsonrpc_result(Some(&3.into()), serde_json::json!({"task": {}}));
/// assert_eq!(line, serde_json::json!({"jsonrpc": "2.0", "id": 3, "result": {"task": {}}}));
/// ```
pub fn jsonrpc_result(id: Option<&JsonRpcId>, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id.map(crate::acp::rpc_id_value).unwrap_or(Value::Null), "result": result})
}

/// The A2A JSON-RPC error for a failed frame: the A2A code of its [`ErrorKind`], its message,
/// and `data` as a list with one `google.rpc.ErrorInfo` (reason = the E2A code).
///
/// ```
/// let r = e2a::E2AResponse::from_value(&serde_json::json!({"response_kind": "e2a.error", "status": "failed",
///     "is_final": true, "jsonrpc_id": 3, "body": {"code": "E2A.NOT_FOUND", "message": "no such task"}})).unwrap();
/// let err = e2a::a2a::stream::jsonrpc_error(&r).unwrap();
/// assert_eq!(err["error"]["code"], -32001);
/// ```
pub fn jsonrpc_error(frame: &E2AResponse) -> Option<Value> {
    let kind = ErrorKind::of_response(frame)?;
    let m = kind.mapping();
    let message = frame.body.get("message").and_then(Value::as_str).unwrap_or(m.name);
    Some(
        json!({"jsonrpc": "2.0", "id": frame.jsonrpc_id.as_ref().map(crate::acp::rpc_id_value).unwrap_or(Value::Null),
        "error": {"code": m.a2a_code, "message": message, "data": [{
            "@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": m.e2a_code, "domain": "e2a",
            "metadata": {}}]}}),
    )
}
