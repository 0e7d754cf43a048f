//! One turn's frames → A2A events: the e2a projector, with the task service's bookkeeping
//! around it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use e2a::a2a::stream::A2aStreamProjector;
use e2a::types::{A2aTaskState, ArtifactDelta, ChunkBody, ChunkEventType};
use e2a::{E2AResponse, ResponseKind};
use serde_json::{json, Value};

use super::snapshot::now_ts;

/// One turn's frames → A2A events: the e2a projector, with the gateway's task bookkeeping
/// around it (the task was already sent as `SUBMITTED`, so the projector's opening `task`
/// becomes a `WORKING` status update; artifact chunks of the agent go through the projector's
/// `a2a.stream_event` path; the final status carries the final text).
pub(super) struct TurnMapper {
    projector: A2aStreamProjector,
    task_id: String,
    context_id: String,
    output: String,
    turn: usize,
    text: String,
    canceled_by_client: Arc<AtomicBool>,
}

impl TurnMapper {
    pub(super) fn new(task_id: &str, context_id: &str, turn: usize, canceled_by_client: Arc<AtomicBool>) -> Self {
        TurnMapper {
            projector: A2aStreamProjector::new(task_id, context_id),
            task_id: task_id.into(),
            context_id: context_id.into(),
            output: format!("{task_id}-output"),
            turn,
            text: String::new(),
            canceled_by_client,
        }
    }

    /// An agent's artifact chunk (`delta_kind: custom`, `event_type: artifact`) as the
    /// `a2a.stream_event` frame the projector passes through.
    fn artifact_frame(&self, frame: &E2AResponse) -> Option<E2AResponse> {
        if frame.kind() != Some(ResponseKind::E2aChunk) {
            return None;
        }
        let d: ArtifactDelta = ChunkBody::structured_delta(&frame.body, ChunkEventType::Artifact)?;
        let mut artifact = json!({"artifactId": d.artifact_id, "parts": d.parts});
        if let Some(n) = d.name {
            artifact["name"] = n.into();
        }
        let payload = json!({"taskId": self.task_id, "contextId": self.context_id, "artifact": artifact,
            "append": d.append, "lastChunk": d.last_chunk});
        let mut f = E2AResponse::new(
            ResponseKind::A2aStreamEvent,
            json!({"branch": "artifact_update", "payload": payload}),
        );
        f.sequence = frame.sequence;
        f.request_id = frame.request_id.clone();
        f.timestamp = frame.timestamp.clone();
        Some(f)
    }

    pub(super) fn push(&mut self, frame: &E2AResponse) -> Vec<Value> {
        let converted = self.artifact_frame(frame);
        let events = self.projector.push(converted.as_ref().unwrap_or(frame));
        let mut out = Vec::new();
        for mut ev in events {
            if let Some(t) = ev.get("task") {
                ev = json!({"statusUpdate": {"taskId": self.task_id, "contextId": self.context_id,
                    "status": {"state": t.pointer("/status/state").cloned().unwrap_or_else(|| json!(A2aTaskState::TaskStateWorking)),
                               "timestamp": now_ts()}}});
            }
            if let Some(u) = ev.get_mut("artifactUpdate") {
                if u.pointer("/artifact/artifactId").and_then(Value::as_str) == Some(self.output.as_str()) {
                    if let Some(Value::Array(parts)) = u.pointer("/artifact/parts") {
                        for p in parts {
                            if let Some(t) = p.get("text").and_then(Value::as_str) {
                                self.text.push_str(t);
                            }
                        }
                    }
                    if self.turn > 1 {
                        u["artifact"]["artifactId"] = format!("{}-{}", self.output, self.turn).into();
                    }
                    u["artifact"]["name"] = "output".into();
                }
            }
            if let Some(status) = ev.pointer_mut("/statusUpdate/status") {
                self.finish_status(status, frame);
            }
            out.push(ev);
        }
        out
    }

    /// The final status carries the final text; a pause says what it asks; a cancel says who.
    fn finish_status(&self, status: &mut Value, frame: &E2AResponse) {
        let Some(state) = status.get("state").and_then(Value::as_str).and_then(A2aTaskState::read) else {
            return;
        };
        let message = |text: &str| {
            json!({"messageId": frame.response_id.clone().unwrap_or_else(|| uuid::Uuid::new_v4().to_string()),
                "role": "ROLE_AGENT", "taskId": self.task_id, "contextId": self.context_id,
                "parts": [{"text": text}]})
        };
        match state {
            A2aTaskState::TaskStateCompleted if status.get("message").is_none() => {
                let text = if self.text.is_empty() {
                    frame
                        .body
                        .get("result")
                        .and_then(|r| r.get("content"))
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string()
                } else {
                    self.text.clone()
                };
                if !text.is_empty() {
                    status["message"] = message(&text);
                }
            }
            s if s.is_interrupted() => {
                let prompt = frame.body.get("plan_content").and_then(Value::as_str).map(String::from);
                if let (Some(prompt), Some(Value::Array(parts))) = (prompt, status.pointer_mut("/message/parts")) {
                    parts.insert(0, json!({"text": prompt}));
                }
            }
            A2aTaskState::TaskStateCanceled if self.canceled_by_client.load(Ordering::SeqCst) => {
                status["message"] = message("canceled by the client");
            }
            _ => {}
        }
    }
}
