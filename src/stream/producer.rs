//! The producer side of the stream contract: [`ResponseStream`].

use serde_json::{json, Map, Value};

use crate::frame::{Frame, FrameBody, FrameHead, Head};
use crate::types::{
    AnswerResult, ArtifactDelta, ChunkBody, ChunkEventType, DeltaKind, E2AEnvelope, ErrorBody, PauseKind, PausedResult,
    PausedResultState, PlanApprovalRequiredBody, ReplyResult, ReplyResultReply, ResponseKind, ResponseStatus, ToolCall,
    ToolCallDelta, ToolResultDelta,
};

use super::{new_id, REFUSAL_DETAIL};

/// Produces the response frames of one request with the stream invariants built in.
///
/// Each frame is a [`Frame`]: the request's echoed fields are one [`Head`] the stream's frames
/// share (a pointer each), and the bodies this producer makes are typed ([`FrameBody`]), so a
/// frame is made without a `Map` or a serializer pass. `E2AResponse::from(frame)` gives the
/// record.
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
/// for f in [&a, &b, &fin] { v.observe(f); }
/// assert!(v.finish().is_empty());
/// ```
#[derive(Debug, Clone)]
pub struct ResponseStream {
    head: Head<FrameHead>,
    next: u64,
}

impl ResponseStream {
    /// A stream answering `request`: its correlation fields (those `schema/` marks
    /// `x-e2a-frame: echo`: `request_id`, `jsonrpc_id`, `task_id`, `session_id`, `method`,
    /// `a2a_metadata`, `acp_meta` and the others of [`FrameHead::echoing`]) are echoed on every
    /// frame.
    pub fn for_request(request: &E2AEnvelope) -> Self {
        // the request's echoed fields are the schema's (`x-e2a-frame: echo`)
        ResponseStream::with_head(Head::new(FrameHead::echoing(request)))
    }

    /// A stream whose frames share `head` (made once per request: [`FrameHead::echoing`]).
    pub fn with_head(head: Head<FrameHead>) -> Self {
        ResponseStream { head, next: 0 }
    }

    /// This stream going on from sequence `next`: the rest of a run whose first frames were made
    /// elsewhere (another process, read back from a log), so that the sequence stays unbroken.
    ///
    /// ```
    /// # use e2a::{E2AEnvelope, stream::ResponseStream};
    /// let req = E2AEnvelope::new("chat.send", serde_json::json!({})).with_request_id("r1");
    /// let mut rest = ResponseStream::for_request(&req).starting_at(3);
    /// assert_eq!(rest.text("on").sequence, 3);
    /// ```
    pub fn starting_at(mut self, next: u64) -> Self {
        self.next = next;
        self
    }

    /// The head every frame of this stream shares.
    pub fn head(&self) -> &Head<FrameHead> {
        &self.head
    }

    /// The `request_id` every frame of this stream echoes.
    pub fn request_id(&self) -> Option<&str> {
        self.head.request_id.as_deref()
    }

    /// An `e2a.chunk` frame with any chunk body (e.g. `{"delta_kind": "custom", "delta": {...}}`).
    pub fn chunk(&mut self, body: Map<String, Value>) -> Frame {
        frame(
            self,
            ResponseKind::E2aChunk,
            ResponseStatus::InProgress,
            false,
            FrameBody::Raw(body),
        )
    }

    /// An `e2a.chunk` frame with a typed chunk body.
    pub fn chunk_of(&mut self, body: ChunkBody) -> Frame {
        frame(
            self,
            ResponseKind::E2aChunk,
            ResponseStatus::InProgress,
            false,
            FrameBody::Chunk(body),
        )
    }

    /// A text delta (`delta_kind: text`).
    pub fn text(&mut self, delta: &str) -> Frame {
        self.chunk_of(ChunkBody::delta(DeltaKind::Text, delta))
    }

    /// A reasoning delta (`delta_kind: reasoning`).
    pub fn reasoning(&mut self, delta: &str) -> Frame {
        self.chunk_of(ChunkBody::delta(DeltaKind::Reasoning, delta))
    }

    /// A tool call (`delta_kind: tool`, `event_type: chat.tool_call`, a [`ToolCallDelta`] with
    /// status `in_progress`).
    pub fn tool_call(&mut self, id: &str, name: &str, arguments: Value) -> Frame {
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
        self.chunk_of(ChunkBody::structured_value(
            DeltaKind::Tool,
            ChunkEventType::ChatToolCall,
            Value::Object(delta.into_object()),
        ))
    }

    /// The result of tool call `id` (`delta_kind: tool`, `event_type: chat.tool_result`, a
    /// [`ToolResultDelta`] with status `completed`).
    pub fn tool_result(&mut self, id: &str, result: Value) -> Frame {
        let delta = ToolResultDelta {
            tool_call_id: id.into(),
            result: Some(result),
            status: Some("completed".into()),
            extra: Map::new(),
        };
        self.chunk_of(ChunkBody::structured_value(
            DeltaKind::Tool,
            ChunkEventType::ChatToolResult,
            Value::Object(delta.into_object()),
        ))
    }

    /// A piece of an artifact (`delta_kind: custom`, `event_type: artifact`, an
    /// [`ArtifactDelta`]).
    pub fn artifact(&mut self, piece: &ArtifactDelta) -> Frame {
        self.chunk_of(ChunkBody::structured(
            DeltaKind::Custom,
            ChunkEventType::Artifact,
            piece,
        ))
    }

    /// Pauses the turn to ask the user: the `plan.approval_required` frame with `body` (made
    /// by [`PlanApprovalRequiredBody::asking`], or with a plan's slug and path and fields of the
    /// agent's own) and the final `e2a.complete` whose result is a [`PausedResult`]; what the
    /// body leaves out reads as an approval that can be answered. Consumes the stream.
    pub fn pause(mut self, body: PlanApprovalRequiredBody) -> [Frame; 2] {
        let result = paused_result(std::slice::from_ref(&body));
        let asked = self.ask(body);
        [asked, self.complete(result)]
    }

    /// Pauses the turn asking several things at once: a `plan.approval_required` frame per
    /// body (each its own question: an AG-UI interrupt, an A2A `INPUT_REQUIRED` status
    /// message), then the final `e2a.complete` whose [`PausedResult`] asks for approval when
    /// any body does, with the prompts one per line. Consumes the stream.
    ///
    /// ```
    /// use e2a::{stream::ResponseStream, types::{PauseKind, PlanApprovalRequiredBody}, E2AEnvelope};
    /// let req = E2AEnvelope::new("session/prompt", serde_json::json!({})).with_request_id("r1");
    /// let frames = ResponseStream::for_request(&req).pause_all(vec![
    ///     PlanApprovalRequiredBody::asking(PauseKind::Approval, "Deploy to staging?", true),
    ///     PlanApprovalRequiredBody::asking(PauseKind::Input, "Which region?", true),
    /// ]);
    /// assert_eq!(frames.len(), 3);
    /// let end = frames[2].to_record();
    /// assert_eq!(end.body["result"]["input_kind"], "approval");
    /// assert_eq!(end.body["result"]["prompt"], "Deploy to staging?\nWhich region?");
    /// ```
    pub fn pause_all(mut self, bodies: Vec<PlanApprovalRequiredBody>) -> Vec<Frame> {
        let result = paused_result(&bodies);
        let mut frames: Vec<Frame> = bodies.into_iter().map(|body| self.ask(body)).collect();
        frames.push(self.complete(result));
        frames
    }

    /// One `plan.approval_required` frame asking what `body` asks.
    fn ask(&mut self, body: PlanApprovalRequiredBody) -> Frame {
        frame(
            self,
            ResponseKind::PlanApprovalRequired,
            ResponseStatus::InProgress,
            false,
            FrameBody::PlanApprovalRequired(body),
        )
    }

    /// Answers with a direct message (A2A: a `Message`, no task): the `a2a.message` frame
    /// and the final `e2a.complete` whose result is a [`ReplyResult`]. Consumes the stream.
    pub fn reply(mut self, message: Map<String, Value>, text: &str) -> [Frame; 2] {
        let said = self.event(ResponseKind::A2aMessage, message);
        let result = ReplyResult {
            content: Some(text.into()),
            reply: ReplyResultReply::Message,
            extra: Map::new(),
        };
        [said, self.complete(Value::Object(result.into_object()))]
    }

    /// A non-final frame of another kind (e.g. `acp.session_update`, `a2a.stream_event`).
    pub fn event(&mut self, kind: ResponseKind, body: Map<String, Value>) -> Frame {
        frame(self, kind, ResponseStatus::InProgress, false, FrameBody::Raw(body))
    }

    /// The final success frame (`e2a.complete`, `succeeded`, `{"result": result}`).
    /// Consumes the stream: nothing can follow.
    pub fn complete(mut self, result: Value) -> Frame {
        let result = if result.is_object() { result } else { json!({}) };
        // the body `{"result": …}`, the result moved in (not copied through a serializer)
        let mut body = Map::with_capacity(1);
        body.insert("result".into(), result);
        frame(
            &mut self,
            ResponseKind::E2aComplete,
            ResponseStatus::Succeeded,
            true,
            FrameBody::Raw(body),
        )
    }

    /// Ends the turn with its answer: the final `e2a.complete` whose result is an
    /// [`AnswerResult`] (the whole `text`, and `stop_reason` when the agent said why it
    /// stopped). Consumes the stream.
    ///
    /// ```
    /// let req = e2a::E2AEnvelope::new("session/prompt", serde_json::json!({}));
    /// let done = e2a::E2AResponse::from(e2a::stream::ResponseStream::for_request(&req).answer("Hello", Some("end_turn")));
    /// assert_eq!(done.body["result"], serde_json::json!({"content": "Hello", "stopReason": "end_turn"}));
    /// ```
    pub fn answer(self, text: &str, stop_reason: Option<&str>) -> Frame {
        let result = AnswerResult {
            content: Some(text.into()),
            stop_reason: stop_reason.map(String::from),
            artifacts: Vec::new(),
            tool_calls: Vec::new(),
            extra: Map::new(),
        };
        self.complete(Value::Object(result.into_object()))
    }

    /// The final failure frame (`e2a.error`, `failed`, `{code, message, details}`).
    /// Consumes the stream: nothing can follow.
    pub fn fail(mut self, code: &str, message: &str, details: Map<String, Value>) -> Frame {
        let body = FrameBody::Error(ErrorBody::new(code, message, details));
        frame(&mut self, ResponseKind::E2aError, ResponseStatus::Failed, true, body)
    }

    /// The agent refuses the request: the final `e2a.error` of `E2A.INVALID_REQUEST` marked
    /// as a refusal (`details.rejected: true`), `message` saying why. A2A: `REJECTED`; ACP:
    /// `stopReason: "refusal"`, `message` shown; AG-UI: `RUN_ERROR`. Consumes the stream.
    ///
    /// ```
    /// let req = e2a::E2AEnvelope::new("chat.send", serde_json::json!({}));
    /// let no = e2a::E2AResponse::from(e2a::stream::ResponseStream::for_request(&req).refuse("I do not do that."));
    /// assert!(e2a::stream::is_refusal(&no));
    /// assert_eq!(no.body["code"], "E2A.INVALID_REQUEST");
    /// ```
    pub fn refuse(self, message: &str) -> Frame {
        let mut details = Map::new();
        details.insert(REFUSAL_DETAIL.into(), Value::Bool(true));
        self.fail(
            crate::taxonomy::ErrorKind::InvalidRequest.mapping().e2a_code,
            message,
            details,
        )
    }
}

/// The next frame of `stream`: its head with this frame's own fields.
fn frame(
    stream: &mut ResponseStream,
    kind: ResponseKind,
    status: ResponseStatus,
    is_final: bool,
    body: FrameBody,
) -> Frame {
    let sequence = stream.next;
    stream.next = stream.next.saturating_add(1);
    Frame {
        head: stream.head.clone(),
        body,
        is_final,
        projections: Map::new(),
        response_id: Some(new_id()),
        response_kind: kind,
        sequence,
        status,
        timestamp: Some(crate::timestamp::utc_now_iso()),
    }
}

/// The result of a pause asking `bodies`: approval when any asks for approval (or none says),
/// the prompts one per line, resumable when every one is.
fn paused_result(bodies: &[PlanApprovalRequiredBody]) -> Value {
    let kind_of = |b: &PlanApprovalRequiredBody| b.input_kind.unwrap_or(PauseKind::Approval);
    let input_kind = match bodies.is_empty() || bodies.iter().any(|b| kind_of(b) == PauseKind::Approval) {
        true => PauseKind::Approval,
        false => PauseKind::Input,
    };
    let prompts: Vec<&str> = bodies.iter().filter_map(|b| b.plan_content.as_deref()).collect();
    let result = PausedResult {
        state: PausedResultState::InputRequired,
        input_kind: Some(input_kind),
        prompt: (!prompts.is_empty()).then(|| prompts.join("\n")),
        resumable: Some(bodies.iter().all(|b| b.resumable.unwrap_or(true))),
        extra: Map::new(),
    };
    Value::Object(result.into_object())
}
