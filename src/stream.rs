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

use std::collections::{BTreeMap, HashMap};

use serde_json::{json, Map, Value};

use crate::response::body_map;
use crate::types::{
    AnswerResult, ArtifactDelta, ChunkBody, ChunkEventType, DeltaKind, E2AEnvelope, E2AResponse, ErrorBody, PauseKind,
    PausedResult, PausedResultState, PlanApprovalRequiredBody, ReplyResult, ReplyResultReply, ResponseKind,
    ResponseStatus, ToolCall, ToolCallDelta, ToolResultDelta,
};

/// Produces the response frames of one request with the stream invariants built in.
///
/// ```
/// use e2a::{E2AEnvelope, stream::{ResponseStream, StreamValidator}};
/// let req = E2AEnvelope::new("chat.send", serde_json::json!({"query": "hi"})).with_request_id("r1");
/// let mut stream = ResponseStream::for_request(&req);
/// let a = stream.text("Hel");
/// let b = stream.text("lo");
/// let fin = stream.complete(serde_json::json!({"content": "Hello"}));
/// assert_eq!((a.sequence, b.sequence, fin.sequence), (0, 1, 2));
/// assert!(fin.is_final && fin.status == "succeeded");
/// let mut v = StreamValidator::new();
/// for f in [&a, &b, &fin] { v.push(f); }
/// assert!(v.finish().is_empty());
/// ```
#[derive(Debug, Clone)]
pub struct ResponseStream {
    template: E2AResponse,
    next: u64,
}

impl ResponseStream {
    /// A stream answering `request`: correlation fields (`request_id`, `jsonrpc_id`,
    /// `correlation_id`, `task_id`, `context_id`, `session_id`, `message_id`, `channel`,
    /// `user_id`, `agent_ref`, `source_agent_id`, `method`, `is_stream`, `channel_context`,
    /// `a2a_metadata`, `acp_meta`) are echoed on every frame.
    pub fn for_request(request: &E2AEnvelope) -> Self {
        let template = E2AResponse {
            request_id: request.request_id.clone(),
            jsonrpc_id: request.jsonrpc_id.clone(),
            correlation_id: request.correlation_id.clone(),
            task_id: request.task_id.clone(),
            context_id: request.context_id.clone(),
            session_id: request.session_id.clone(),
            message_id: request.message_id.clone(),
            channel: request.channel.clone(),
            user_id: request.user_id.clone(),
            agent_ref: request.agent_ref.clone(),
            source_agent_id: request.source_agent_id.clone(),
            method: request.method.clone(),
            is_stream: request.is_stream,
            channel_context: request.channel_context.clone(),
            a2a_metadata: request.a2a_metadata.clone(),
            acp_meta: request.acp_meta.clone(),
            ..Default::default()
        };
        ResponseStream { template, next: 0 }
    }

    /// The `request_id` every frame of this stream echoes.
    pub fn request_id(&self) -> Option<&str> {
        self.template.request_id.as_deref()
    }

    /// The sequence number the next frame will get.
    pub fn next_sequence(&self) -> u64 {
        self.next
    }

    fn frame(
        &mut self,
        kind: ResponseKind,
        status: ResponseStatus,
        is_final: bool,
        body: Map<String, Value>,
    ) -> E2AResponse {
        let mut f = self.template.clone();
        f.response_id = Some(new_id());
        f.sequence = self.next;
        f.is_final = is_final;
        f.status = status.as_str().into();
        f.response_kind = kind.as_str().into();
        f.timestamp = Some(crate::timestamp::utc_now_iso());
        f.body = body;
        self.next = self.next.saturating_add(1);
        f
    }

    /// An `e2a.chunk` frame with any chunk body (e.g. `{"delta_kind": "custom", "delta": {...}}`).
    pub fn chunk(&mut self, body: Map<String, Value>) -> E2AResponse {
        self.frame(ResponseKind::E2aChunk, ResponseStatus::InProgress, false, body)
    }

    /// A text delta (`delta_kind: text`).
    pub fn text(&mut self, delta: &str) -> E2AResponse {
        self.chunk(ChunkBody::delta(DeltaKind::Text, delta).into_map())
    }

    /// A reasoning delta (`delta_kind: reasoning`).
    pub fn reasoning(&mut self, delta: &str) -> E2AResponse {
        self.chunk(ChunkBody::delta(DeltaKind::Reasoning, delta).into_map())
    }

    /// A tool call (`delta_kind: tool`, `event_type: chat.tool_call`, a [`ToolCallDelta`] with
    /// status `in_progress`).
    pub fn tool_call(&mut self, id: &str, name: &str, arguments: Value) -> E2AResponse {
        let delta = ToolCallDelta {
            tool_call: ToolCall {
                tool_call_id: id.into(),
                name: Some(name.into()),
                arguments: Some(arguments),
                status: Some("in_progress".into()),
                result: None,
                extra: Map::new(),
            },
            extra: Map::new(),
        };
        self.chunk(ChunkBody::structured(DeltaKind::Tool, ChunkEventType::ChatToolCall, delta).into_map())
    }

    /// The result of tool call `id` (`delta_kind: tool`, `event_type: chat.tool_result`, a
    /// [`ToolResultDelta`] with status `completed`).
    pub fn tool_result(&mut self, id: &str, result: Value) -> E2AResponse {
        let delta = ToolResultDelta {
            tool_call_id: id.into(),
            result: Some(result),
            status: Some("completed".into()),
            extra: Map::new(),
        };
        self.chunk(ChunkBody::structured(DeltaKind::Tool, ChunkEventType::ChatToolResult, delta).into_map())
    }

    /// A piece of an artifact (`delta_kind: custom`, `event_type: artifact`, an
    /// [`ArtifactDelta`]).
    pub fn artifact(&mut self, piece: &ArtifactDelta) -> E2AResponse {
        self.chunk(ChunkBody::structured(DeltaKind::Custom, ChunkEventType::Artifact, piece).into_map())
    }

    /// Pauses the turn to ask the user (`kind`: approval or input): the
    /// `plan.approval_required` frame and the final `e2a.complete` whose result is a
    /// [`PausedResult`]. Consumes the stream.
    pub fn pause(self, kind: PauseKind, question: &str, resumable: bool) -> [E2AResponse; 2] {
        self.pause_with(PlanApprovalRequiredBody {
            plan_content: Some(question.into()),
            plan_slug: None,
            plan_path: None,
            input_kind: Some(kind),
            resumable: Some(resumable),
            extra: Map::new(),
        })
    }

    /// [`ResponseStream::pause`] with a whole pause body (a plan's slug and path, fields of
    /// the agent's own); what is absent reads as an approval that can be answered.
    pub fn pause_with(mut self, body: PlanApprovalRequiredBody) -> [E2AResponse; 2] {
        let result = PausedResult {
            state: PausedResultState::InputRequired,
            input_kind: Some(body.input_kind.unwrap_or(PauseKind::Approval)),
            prompt: body.plan_content.clone(),
            resumable: Some(body.resumable.unwrap_or(true)),
            extra: Map::new(),
        };
        let asked = self.event(ResponseKind::PlanApprovalRequired, body_map(body));
        [
            asked,
            self.complete(serde_json::to_value(result).unwrap_or(Value::Null)),
        ]
    }

    /// Answers with a direct message (A2A: a `Message`, no task): the `a2a.message` frame
    /// and the final `e2a.complete` whose result is a [`ReplyResult`]. Consumes the stream.
    pub fn reply(mut self, message: Map<String, Value>, text: &str) -> [E2AResponse; 2] {
        let said = self.event(ResponseKind::A2aMessage, message);
        let result = ReplyResult {
            content: Some(text.into()),
            reply: ReplyResultReply::Message,
            extra: Map::new(),
        };
        [said, self.complete(serde_json::to_value(result).unwrap_or(Value::Null))]
    }

    /// A non-final frame of another kind (e.g. `acp.session_update`, `a2a.stream_event`).
    pub fn event(&mut self, kind: ResponseKind, body: Map<String, Value>) -> E2AResponse {
        self.frame(kind, ResponseStatus::InProgress, false, body)
    }

    /// The final success frame (`e2a.complete`, `succeeded`, `{"result": result}`).
    /// Consumes the stream: nothing can follow.
    pub fn complete(mut self, result: Value) -> E2AResponse {
        let result = if result.is_object() { result } else { json!({}) };
        // the body `{"result": …}`, the result moved in (not copied through a serializer)
        let mut body = Map::new();
        body.insert("result".into(), result);
        self.frame(ResponseKind::E2aComplete, ResponseStatus::Succeeded, true, body)
    }

    /// Ends the turn with its answer: the final `e2a.complete` whose result is an
    /// [`AnswerResult`] (the whole `text`, and `stop_reason` when the agent said why it
    /// stopped). Consumes the stream.
    ///
    /// ```
    /// let req = e2a::E2AEnvelope::new("session/prompt", serde_json::json!({}));
    /// let done = e2a::stream::ResponseStream::for_request(&req).answer("Hello", Some("end_turn"));
    /// assert_eq!(done.body["result"], serde_json::json!({"content": "Hello", "stopReason": "end_turn"}));
    /// ```
    pub fn answer(self, text: &str, stop_reason: Option<&str>) -> E2AResponse {
        let result = AnswerResult {
            content: Some(text.into()),
            stop_reason: stop_reason.map(String::from),
            artifacts: Vec::new(),
            tool_calls: Vec::new(),
            extra: Map::new(),
        };
        self.complete(serde_json::to_value(result).unwrap_or(Value::Null))
    }

    /// The final failure frame (`e2a.error`, `failed`, `{code, message, details}`).
    /// Consumes the stream: nothing can follow.
    pub fn fail(mut self, code: &str, message: &str, details: Map<String, Value>) -> E2AResponse {
        let body = body_map(ErrorBody::new(code, message, details));
        self.frame(ResponseKind::E2aError, ResponseStatus::Failed, true, body)
    }

    /// The agent refuses the request: the final `e2a.error` of `E2A.INVALID_REQUEST` marked
    /// as a refusal (`details.rejected: true`), `message` saying why. A2A: `REJECTED`; ACP:
    /// `stopReason: "refusal"`, `message` shown; AG-UI: `RUN_ERROR`. Consumes the stream.
    ///
    /// ```
    /// let req = e2a::E2AEnvelope::new("chat.send", serde_json::json!({}));
    /// let no = e2a::stream::ResponseStream::for_request(&req).refuse("I do not do that.");
    /// assert!(e2a::stream::is_refusal(&no));
    /// assert_eq!(no.body["code"], "E2A.INVALID_REQUEST");
    /// ```
    pub fn refuse(self, message: &str) -> E2AResponse {
        let mut details = Map::new();
        details.insert(REFUSAL_DETAIL.into(), Value::Bool(true));
        self.fail(
            crate::taxonomy::ErrorKind::InvalidRequest.mapping().e2a_code,
            message,
            details,
        )
    }
}

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
}

/// What is wrong with a stream.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ViolationKind {
    /// The first frame seen for a request does not have sequence 0.
    DoesNotStartAtZero {
        /// The sequence seen.
        got: u64,
    },
    /// Frames are missing between the last one and this one.
    Gap {
        /// The sequence that was expected.
        expected: u64,
        /// The sequence seen.
        got: u64,
    },
    /// A frame with this sequence was already seen.
    Duplicate,
    /// A frame arrived after a later one (it was not seen before).
    Reorder {
        /// The sequence that was expected.
        expected: u64,
    },
    /// A frame arrived after the final frame.
    AfterFinal,
    /// A second frame with `is_final: true`.
    SecondFinal,
    /// `status`/`response_kind` disagree: `failed` without `e2a.error`, `e2a.error` not
    /// `failed`, or a final `e2a.complete` not `succeeded`.
    StatusKindMismatch,
    /// The stream ended (end of input or timeout) without a final frame.
    MissingFinal,
    /// A frame without `request_id` cannot be placed in a stream.
    MissingRequestId,
}

impl std::fmt::Display for ViolationKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ViolationKind::DoesNotStartAtZero { got } => write!(f, "stream starts at sequence {got}, not 0"),
            ViolationKind::Gap { expected, got } => write!(f, "gap: expected sequence {expected}, got {got}"),
            ViolationKind::Duplicate => f.write_str("duplicate sequence"),
            ViolationKind::Reorder { expected } => write!(f, "out of order: expected sequence {expected}"),
            ViolationKind::AfterFinal => f.write_str("frame after the final frame"),
            ViolationKind::SecondFinal => f.write_str("second final frame"),
            ViolationKind::StatusKindMismatch => f.write_str("status and response_kind disagree"),
            ViolationKind::MissingFinal => f.write_str("stream ended without a final frame"),
            ViolationKind::MissingRequestId => f.write_str("frame has no request_id"),
        }
    }
}

/// One stream violation, with the frame that showed it (`None` for a missing final frame).
#[derive(Debug, Clone, PartialEq)]
pub struct StreamViolation {
    /// The request whose stream is broken.
    pub request_id: Option<String>,
    /// What is wrong.
    pub kind: ViolationKind,
    /// The offending frame's sequence, when there is a frame.
    pub sequence: Option<u64>,
    /// The offending frame's `response_id`, when there is a frame.
    pub response_id: Option<String>,
}

impl std::fmt::Display for StreamViolation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "request {}: {}",
            self.request_id.as_deref().unwrap_or("<none>"),
            self.kind
        )?;
        if let Some(s) = self.sequence {
            write!(f, " (frame sequence {s})")?;
        }
        Ok(())
    }
}

#[derive(Debug, Default)]
struct State {
    /// Next sequence expected in order.
    expected: u64,
    /// Every sequence below this one has been seen (in-order streams need nothing else).
    contiguous: u64,
    /// Sequences seen above `contiguous` (only out-of-order streams use this).
    seen_above: std::collections::BTreeSet<u64>,
    finished: bool,
    started: bool,
    /// Out-of-order frames held back in reorder mode.
    pending: BTreeMap<u64, E2AResponse>,
    /// Frames kept for replay (in order).
    kept: Vec<E2AResponse>,
    last_activity: u64,
}

impl State {
    fn seen(&self, seq: u64) -> bool {
        seq < self.contiguous || self.seen_above.contains(&seq)
    }

    fn mark_seen(&mut self, seq: u64) {
        if seq == self.contiguous {
            self.contiguous = self.contiguous.saturating_add(1);
            while self.seen_above.remove(&self.contiguous) {
                self.contiguous = self.contiguous.saturating_add(1);
            }
        } else if seq > self.contiguous {
            self.seen_above.insert(seq);
        }
    }

    /// The checks of `f` in this stream (start, gaps, order, finals); the state moves on.
    fn check(&mut self, f: &E2AResponse) -> Vec<ViolationKind> {
        let mut found = Vec::new();
        if !self.started && f.sequence != 0 {
            found.push(ViolationKind::DoesNotStartAtZero { got: f.sequence });
        } else if f.sequence > self.expected {
            found.push(ViolationKind::Gap {
                expected: self.expected,
                got: f.sequence,
            });
        } else if f.sequence < self.expected {
            found.push(ViolationKind::Reorder {
                expected: self.expected,
            });
        }
        if self.finished {
            found.push(if f.is_final {
                ViolationKind::SecondFinal
            } else {
                ViolationKind::AfterFinal
            });
        }
        self.started = true;
        self.mark_seen(f.sequence);
        self.expected = self.expected.max(f.sequence.saturating_add(1));
        if f.is_final {
            self.finished = true;
        }
        found
    }

    /// [`State::check`] of a frame not kept: a duplicate is only reported.
    fn observe(&mut self, f: &E2AResponse, clock: u64) -> Vec<ViolationKind> {
        self.last_activity = clock;
        if self.seen(f.sequence) {
            return vec![ViolationKind::Duplicate];
        }
        self.check(f)
    }
}

/// Checks the stream invariants over frames of many interleaved requests.
///
/// ```
/// use e2a::stream::{StreamValidator, ViolationKind};
/// let frame = |seq: u64, fin: bool| e2a::E2AResponse::from_value(&serde_json::json!({
///     "request_id": "r", "sequence": seq, "is_final": fin,
///     "response_kind": if fin { "e2a.complete" } else { "e2a.chunk" },
///     "status": if fin { "succeeded" } else { "in_progress" }})).unwrap();
/// let mut v = StreamValidator::new();
/// v.push(&frame(0, false));
/// v.push(&frame(2, true));
/// let found = v.finish();
/// assert_eq!(found[0].kind, ViolationKind::Gap { expected: 1, got: 2 });
/// ```
#[derive(Debug, Default)]
pub struct StreamValidator {
    streams: HashMap<Option<String>, State>,
    violations: Vec<StreamViolation>,
    reorder_window: usize,
    keep_for_replay: bool,
    clock: u64,
}

impl StreamValidator {
    /// A validator that reports violations as frames arrive (no reordering, no replay).
    pub fn new() -> Self {
        Self::default()
    }

    /// Holds back up to `window` out-of-order frames per request and releases them in order
    /// (frames beyond the window are reported as gaps).
    pub fn with_reorder_window(mut self, window: usize) -> Self {
        self.reorder_window = window;
        self
    }

    /// Keeps accepted frames so [`StreamValidator::replay_after`] can serve `Last-Event-ID`
    /// resumption.
    pub fn with_replay(mut self) -> Self {
        self.keep_for_replay = true;
        self
    }

    fn report(&mut self, f: &E2AResponse, kind: ViolationKind) {
        self.violations.push(StreamViolation {
            request_id: f.request_id.clone(),
            kind,
            sequence: Some(f.sequence),
            response_id: f.response_id.clone(),
        });
    }

    /// Accepts one frame; returns the frames released in order (the frame itself, plus held
    /// frames it unblocked; empty while it is held back).
    pub fn push(&mut self, f: &E2AResponse) -> Vec<E2AResponse> {
        self.frame_checks(f);
        let key = f.request_id.clone();
        let window = self.reorder_window;
        let clock = self.clock;
        let st = self.streams.entry(key.clone()).or_default();
        st.last_activity = clock;
        if st.seen(f.sequence) {
            self.report(f, ViolationKind::Duplicate);
            return Vec::new();
        }
        if f.sequence > st.expected && window > 0 && st.pending.len() < window && !st.finished {
            st.mark_seen(f.sequence);
            st.pending.insert(f.sequence, f.clone());
            return Vec::new();
        }
        let mut released = Vec::new();
        self.accept(&key, f.clone(), &mut released);
        // drain held frames that are now in order
        while let Some(next) = self
            .streams
            .get_mut(&key)
            .and_then(|st| st.pending.remove(&st.expected))
        {
            self.accept(&key, next, &mut released);
        }
        released
    }

    /// Checks `f` as [`StreamValidator::push`] does, without keeping or returning it (no
    /// copy of the frame): what a gateway's stream boundary needs. A validator with a reorder
    /// window or replay does what `push` does.
    pub fn observe(&mut self, f: &E2AResponse) {
        if self.reorder_window > 0 || self.keep_for_replay {
            drop(self.push(f));
            return;
        }
        self.frame_checks(f);
        let clock = self.clock;
        // one lookup for a stream already known (the request id is hashed once per frame)
        let found = match self.streams.get_mut(&f.request_id) {
            Some(st) => st.observe(f, clock),
            None => self.streams.entry(f.request_id.clone()).or_default().observe(f, clock),
        };
        for k in found {
            self.report(f, k);
        }
    }

    /// The checks of one frame on its own: it names its request, and its status fits its kind.
    fn frame_checks(&mut self, f: &E2AResponse) {
        self.clock = self.clock.saturating_add(1);
        if f.request_id.is_none() {
            self.report(f, ViolationKind::MissingRequestId);
        }
        let kind_ok = match (&f.status, &f.response_kind) {
            (ResponseStatus::Failed, k) => *k == ResponseKind::E2aError,
            (_, ResponseKind::E2aError) => false,
            (s, ResponseKind::E2aComplete) if f.is_final => *s == ResponseStatus::Succeeded,
            _ => true,
        };
        if !kind_ok {
            self.report(f, ViolationKind::StatusKindMismatch);
        }
    }

    fn accept(&mut self, key: &Option<String>, f: E2AResponse, released: &mut Vec<E2AResponse>) {
        self.check(key, &f);
        if self.keep_for_replay {
            if let Some(st) = self.streams.get_mut(key) {
                st.kept.push(f.clone());
            }
        }
        released.push(f);
    }

    /// The checks of `f` in its stream (start, gaps, order, finals), in the stream's state.
    fn check(&mut self, key: &Option<String>, f: &E2AResponse) {
        let Some(st) = self.streams.get_mut(key) else { return };
        for k in st.check(f) {
            self.report(f, k);
        }
    }

    /// Frames of `request_id` with a sequence greater than `after` (for `Last-Event-ID`),
    /// in order. Needs [`StreamValidator::with_replay`].
    pub fn replay_after(&self, request_id: &str, after: u64) -> Vec<E2AResponse> {
        let Some(st) = self.streams.get(&Some(request_id.to_string())) else {
            return Vec::new();
        };
        let mut out: Vec<E2AResponse> = st.kept.iter().filter(|f| f.sequence > after).cloned().collect();
        out.sort_by_key(|f| f.sequence);
        out
    }

    /// Violations found so far (not including missing finals).
    pub fn violations(&self) -> &[StreamViolation] {
        &self.violations
    }

    /// Streams with no activity during the last `frames` pushes and no final frame are
    /// reported as [`ViolationKind::MissingFinal`] (a timeout measured in frames, so the
    /// check is deterministic) and forgotten.
    pub fn expire_idle(&mut self, frames: u64) -> Vec<StreamViolation> {
        let now = self.clock;
        let idle: Vec<Option<String>> = self
            .streams
            .iter()
            .filter(|(_, s)| !s.finished && now.saturating_sub(s.last_activity) >= frames)
            .map(|(k, _)| k.clone())
            .collect();
        let mut out = Vec::new();
        for k in idle {
            self.streams.remove(&k);
            out.push(StreamViolation {
                request_id: k,
                kind: ViolationKind::MissingFinal,
                sequence: None,
                response_id: None,
            });
        }
        self.violations.extend(out.iter().cloned());
        out
    }

    /// Ends the input: held frames are released (their gaps reported) and every stream
    /// without a final frame is reported. Returns all violations.
    pub fn finish(mut self) -> Vec<StreamViolation> {
        let keys: Vec<Option<String>> = self.streams.keys().cloned().collect();
        for key in keys {
            let pending: Vec<E2AResponse> = self
                .streams
                .get_mut(&key)
                .map(|s| std::mem::take(&mut s.pending).into_values().collect())
                .unwrap_or_default();
            let mut released = Vec::new();
            for f in pending {
                self.accept(&key, f, &mut released);
            }
        }
        let mut missing: Vec<StreamViolation> = self
            .streams
            .iter()
            .filter(|(_, s)| !s.finished)
            .map(|(k, _)| StreamViolation {
                request_id: k.clone(),
                kind: ViolationKind::MissingFinal,
                sequence: None,
                response_id: None,
            })
            .collect();
        missing.sort_by(|a, b| a.request_id.cmp(&b.request_id));
        self.violations.extend(missing);
        self.violations
    }
}
