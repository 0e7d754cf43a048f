//! [`E2AResponse`]: defaults, builders, reading, canonical writing and typed bodies.

use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::types::{
    A2aStreamEventBody, ChunkBody, ChunkEventType, CompleteBody, CronBody, E2AResponse, ErrorBody, ExtBody,
    JsonRpcErrorBody, OutputRequestBody, PlanApprovalRequiredBody, PromptResultBody, ResponseKind, ResponseStatus,
    SessionUpdateBody,
};

/// A response `body` decoded according to `response_kind`.
///
/// Unknown kinds are preserved as raw JSON ([`ResponseBody::Unknown`]); reading a response
/// never fails because of its kind.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ResponseBody {
    /// `e2a.complete`
    Complete(CompleteBody),
    /// `e2a.chunk`
    Chunk(ChunkBody),
    /// `e2a.error`
    Error(ErrorBody),
    /// `acp.session_update`
    SessionUpdate(SessionUpdateBody),
    /// `acp.prompt_result`
    PromptResult(PromptResultBody),
    /// `acp.jsonrpc_error`
    JsonRpcError(JsonRpcErrorBody),
    /// `acp.output_request`
    OutputRequest(OutputRequestBody),
    /// `a2a.task` (A2A Task JSON, untouched)
    A2aTask(Map<String, Value>),
    /// `a2a.message` (A2A Message JSON, untouched)
    A2aMessage(Map<String, Value>),
    /// `a2a.stream_event`
    A2aStreamEvent(A2aStreamEventBody),
    /// `cron`
    Cron(CronBody),
    /// `plan.approval_required`
    PlanApprovalRequired(PlanApprovalRequiredBody),
    /// `ext`
    Ext(ExtBody),
    /// Any other kind, body kept as is.
    Unknown {
        /// The `response_kind` string.
        kind: String,
        /// The raw body.
        body: Map<String, Value>,
    },
}

impl E2AResponse {
    /// A new response frame of `kind` with `body` (other fields default).
    ///
    /// ```
    /// use e2a::{E2AResponse, ResponseKind};
    /// let r = E2AResponse::new(ResponseKind::E2aChunk, serde_json::json!({"delta_kind": "text", "delta": "Hel"}));
    /// assert_eq!(r.response_kind, "e2a.chunk");
    /// ```
    pub fn new(kind: ResponseKind, body: Value) -> Self {
        let body = match body {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        E2AResponse {
            response_kind: kind.as_str().into(),
            body,
            ..Default::default()
        }
    }

    /// The known kind of this response, or `None` for an unknown `response_kind` string.
    pub fn kind(&self) -> Option<ResponseKind> {
        self.response_kind.is_known().then(|| self.response_kind.clone())
    }

    /// The known status of this response, or `None` for an unknown `status` string.
    pub fn status(&self) -> Option<ResponseStatus> {
        self.status.is_known().then(|| self.status.clone())
    }

    /// Decodes `body` according to `response_kind`.
    ///
    /// ```
    /// use e2a::{E2AResponse, ResponseBody};
    /// let r = E2AResponse::from_value(&serde_json::json!({
    ///     "response_kind": "e2a.chunk", "body": {"delta_kind": "text", "delta": "Hi"}
    /// })).unwrap();
    /// let ResponseBody::Chunk(c) = r.typed_body().unwrap() else { panic!() };
    /// assert_eq!(c.delta, Some(serde_json::json!("Hi")));
    /// let odd = E2AResponse::from_value(&serde_json::json!({"response_kind": "x.y", "body": {"a": 1}})).unwrap();
    /// assert!(matches!(odd.typed_body().unwrap(), ResponseBody::Unknown { .. }));
    /// ```
    pub fn typed_body(&self) -> Result<ResponseBody> {
        fn de<T: serde::de::DeserializeOwned>(body: &Map<String, Value>, kind: &ResponseKind) -> Result<T> {
            T::deserialize(&Value::Object(body.clone()))
                .map_err(|_| Error::field("/body", format!("does not match the {} body shape", kind.as_str())))
        }
        let b = &self.body;
        let kind = &self.response_kind;
        use ResponseKind as K;
        Ok(match kind {
            K::Other(other) => ResponseBody::Unknown {
                kind: other.clone(),
                body: b.clone(),
            },
            K::E2aComplete => ResponseBody::Complete(de(b, kind)?),
            K::E2aChunk => ResponseBody::Chunk(de(b, kind)?),
            K::E2aError => ResponseBody::Error(de(b, kind)?),
            K::AcpSessionUpdate => ResponseBody::SessionUpdate(de(b, kind)?),
            K::AcpPromptResult => ResponseBody::PromptResult(de(b, kind)?),
            K::AcpJsonrpcError => ResponseBody::JsonRpcError(de(b, kind)?),
            K::AcpOutputRequest => ResponseBody::OutputRequest(de(b, kind)?),
            K::A2aTask => ResponseBody::A2aTask(b.clone()),
            K::A2aMessage => ResponseBody::A2aMessage(b.clone()),
            K::A2aStreamEvent => ResponseBody::A2aStreamEvent(de(b, kind)?),
            K::Cron => ResponseBody::Cron(de(b, kind)?),
            K::PlanApprovalRequired => ResponseBody::PlanApprovalRequired(de(b, kind)?),
            K::Ext => ResponseBody::Ext(de(b, kind)?),
        })
    }

    /// Sets `timestamp` to now when it is null (the reference's `ensure_timestamp`).
    pub fn ensure_timestamp(&mut self) {
        if self.timestamp.is_none() {
            self.timestamp = Some(crate::timestamp::utc_now_iso());
        }
    }
}

crate::read::message_methods!(E2AResponse);

pub use crate::frame::body_map;

impl crate::types::PlanApprovalRequiredBody {
    /// A pause asking the user `question` (`kind`: approval or input); `resumable` says
    /// whether an answer continues the turn.
    ///
    /// ```
    /// use e2a::types::{PauseKind, PlanApprovalRequiredBody};
    /// let b = PlanApprovalRequiredBody::asking(PauseKind::Input, "For how many people?", true);
    /// assert_eq!(b.plan_content.as_deref(), Some("For how many people?"));
    /// ```
    pub fn asking(kind: crate::types::PauseKind, question: &str, resumable: bool) -> Self {
        crate::types::PlanApprovalRequiredBody {
            plan_content: Some(question.into()),
            plan_slug: None,
            plan_path: None,
            input_kind: Some(kind),
            resumable: Some(resumable),
            extra: Map::new(),
        }
    }
}

impl ChunkBody {
    /// An `e2a.chunk` body with one delta (`text`/`reasoning`: a string; `custom`: any JSON).
    ///
    /// ```
    /// let b = e2a::types::ChunkBody::delta(e2a::types::DeltaKind::Text, "Hel");
    /// assert_eq!(serde_json::to_value(&b).unwrap(), serde_json::json!({"delta_kind": "text", "delta": "Hel"}));
    /// ```
    pub fn delta(kind: crate::types::DeltaKind, delta: impl Into<Value>) -> Self {
        ChunkBody {
            delta: Some(delta.into()),
            delta_kind: kind,
            event_type: None,
            member_name: None,
            mime_type: None,
            rid: None,
            role: None,
            source_chunk_type: None,
            team_id: None,
            team_name: None,
            extra: Map::new(),
        }
    }

    /// A chunk body carrying a structured delta: `event_type` says which (`chat.tool_call`,
    /// `chat.tool_result`, `artifact`), `delta` is its typed value.
    pub fn structured(kind: crate::types::DeltaKind, event: ChunkEventType, delta: impl serde::Serialize) -> Self {
        Self::structured_value(kind, event, serde_json::to_value(delta).unwrap_or(Value::Null))
    }

    /// [`ChunkBody::structured`] with the delta's JSON value given (a generated type's
    /// `into_object()`, its values moved in: no serializer pass).
    ///
    /// ```
    /// use e2a::types::{ChunkBody, ChunkEventType, DeltaKind, ToolResultDelta};
    /// let done = ToolResultDelta { tool_call_id: "c1".into(), result: None, status: Some("completed".into()), extra: Default::default() };
    /// let moved = ChunkBody::structured_value(DeltaKind::Tool, ChunkEventType::ChatToolResult, done.clone().into_object().into());
    /// assert_eq!(moved, ChunkBody::structured(DeltaKind::Tool, ChunkEventType::ChatToolResult, done));
    /// ```
    pub fn structured_value(kind: crate::types::DeltaKind, event: ChunkEventType, delta: Value) -> Self {
        let mut body = ChunkBody::delta(kind, delta);
        body.event_type = Some(event.as_str().into());
        body
    }

    /// The structured delta of a chunk body whose `event_type` is `event`, typed (`None` for
    /// another chunk, or a delta that does not read as `T`).
    ///
    /// ```
    /// use e2a::types::{ChunkEventType, ToolResultDelta};
    /// let mut frames = e2a::stream::ResponseStream::for_request(&e2a::E2AEnvelope::default());
    /// let f = frames.tool_result("call-1", serde_json::json!({"temp_c": 21}));
    /// let r: ToolResultDelta = e2a::types::ChunkBody::structured_delta(&f.body_object(), ChunkEventType::ChatToolResult).unwrap();
    /// assert_eq!(r.tool_call_id, "call-1");
    /// ```
    pub fn structured_delta<T: serde::de::DeserializeOwned>(
        body: &Map<String, Value>,
        event: ChunkEventType,
    ) -> Option<T> {
        if body.get("event_type").and_then(Value::as_str) != Some(event.as_str()) {
            return None;
        }
        T::deserialize(body.get("delta")?).ok()
    }

    /// The `delta_kind` of a chunk body, when it is one of the known kinds.
    pub fn kind_of(body: &Map<String, Value>) -> Option<crate::types::DeltaKind> {
        body.get("delta_kind")?.as_str()?.parse().ok()
    }
}

impl ErrorBody {
    /// An `e2a.error` body: `{code, message, details}`.
    ///
    /// ```
    /// let b = e2a::types::ErrorBody::new("E2A.TIMEOUT", "too slow", Default::default());
    /// assert_eq!(serde_json::to_value(&b).unwrap()["details"], serde_json::json!({}));
    /// ```
    pub fn new(code: impl Into<Value>, message: impl Into<String>, details: Map<String, Value>) -> Self {
        ErrorBody {
            code: Some(code.into()),
            details: Some(details),
            external: None,
            message: Some(message.into()),
            extra: Map::new(),
        }
    }
}

/// The state of a run (the E2A run resource) whose final frame is `frame`.
impl crate::types::RunState {
    /// Where a run stands once `frame`, its final frame, is sent: `cancelled` for an
    /// `e2a.error` with code `E2A.CANCELLED`, `failed` for any other `e2a.error` or a
    /// `failed` status, `paused` for an `e2a.complete` whose `result.state` is
    /// `input_required`, else `succeeded`.
    ///
    /// ```
    /// use e2a::types::{ResponseKind, RunState};
    /// use serde_json::json;
    /// let done = e2a::E2AResponse::new(ResponseKind::E2aComplete, json!({"result": {"content": "hi"}}));
    /// assert_eq!(RunState::of_final(&done), RunState::Succeeded);
    /// let paused = e2a::E2AResponse::new(ResponseKind::E2aComplete, json!({"result": {"state": "input_required"}}));
    /// assert_eq!(RunState::of_final(&paused), RunState::Paused);
    /// let cancelled = e2a::E2AResponse::new(ResponseKind::E2aError, json!({"code": "E2A.CANCELLED"}));
    /// assert_eq!(RunState::of_final(&cancelled), RunState::Cancelled);
    /// let failed = e2a::E2AResponse::new(ResponseKind::E2aError, json!({"code": "E2A.AGENT_ERROR"}));
    /// assert_eq!(RunState::of_final(&failed), RunState::Failed);
    /// ```
    pub fn of_final(frame: &E2AResponse) -> Self {
        Self::of_final_parts(&frame.response_kind, &frame.status, &frame.body)
    }

    /// [`of_final`](crate::types::RunState::of_final) of a frame (its body read where it is: no record made).
    ///
    /// ```
    /// use e2a::types::RunState;
    /// let frames = e2a::stream::ResponseStream::for_request(&e2a::E2AEnvelope::default());
    /// assert_eq!(RunState::of_final_frame(&frames.clone().answer("hi", None)), RunState::Succeeded);
    /// assert_eq!(RunState::of_final_frame(&frames.refuse("no")), RunState::Failed);
    /// ```
    pub fn of_final_frame(frame: &crate::frame::Frame) -> Self {
        Self::of_final_parts(&frame.response_kind, &frame.status, &frame.body_object())
    }

    fn of_final_parts(kind: &ResponseKind, status: &ResponseStatus, body: &Map<String, Value>) -> Self {
        use crate::types::RunState;
        if *kind == ResponseKind::E2aError {
            let code = body.get("code").unwrap_or(&Value::Null);
            return match crate::taxonomy::ErrorKind::from_code(code, "e2a") {
                crate::taxonomy::ErrorKind::Cancelled => RunState::Cancelled,
                _ => RunState::Failed,
            };
        }
        if *status == ResponseStatus::Failed {
            return RunState::Failed;
        }
        let paused = *kind == ResponseKind::E2aComplete
            && body.get("result").and_then(|r| r.get("state")).and_then(Value::as_str) == Some("input_required");
        if paused {
            RunState::Paused
        } else {
            RunState::Succeeded
        }
    }
}
