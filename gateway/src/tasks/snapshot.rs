//! A task's snapshot: the `Task` a stored event log adds up to, and the events and messages
//! the service writes itself.

use e2a::a2a::stream::text_part;
use e2a::types::{
    A2aMessage, A2aRole, A2aStreamResponse, A2aTask, A2aTaskState, A2aTaskStatus, A2aTaskStatusUpdateEvent,
};

use crate::store::TaskRecord;

pub(super) fn now_ts() -> String {
    e2a::a2a::stream::proto_timestamp(&e2a::timestamp::utc_now_iso())
}

/// The task with only its last `n` history messages (all for `None`; none for 0).
pub fn trim_history(mut task: A2aTask, n: Option<usize>) -> A2aTask {
    if let Some(n) = n {
        let skip = task.history.len().saturating_sub(n);
        task.history.drain(..skip);
    }
    task
}

/// How many of the task's messages are the user's (its turns so far; 1 for a task without
/// history).
pub(super) fn user_turns(task: &A2aTask) -> usize {
    match task.history.is_empty() {
        true => 1,
        false => task.history.iter().filter(|m| m.role == A2aRole::RoleUser).count(),
    }
}

/// A message of the agent in `rec`'s task, saying `text`.
pub(super) fn agent_message(rec: &TaskRecord, text: &str) -> A2aMessage {
    A2aMessage::agent(e2a::stream::new_id(), &rec.id, &rec.context_id, vec![text_part(text)])
}

/// A status, set now.
pub(super) fn status_now(state: A2aTaskState, message: Option<A2aMessage>) -> A2aTaskStatus {
    A2aTaskStatus {
        state,
        message,
        timestamp: Some(now_ts()),
    }
}

/// `rec`'s task enters `state` now, with `message`.
pub(super) fn status_event(rec: &TaskRecord, state: A2aTaskState, message: Option<A2aMessage>) -> A2aStreamResponse {
    A2aStreamResponse::StatusUpdate(A2aTaskStatusUpdateEvent {
        task_id: rec.id.clone(),
        context_id: rec.context_id.clone(),
        status: status_now(state, message),
        metadata: Default::default(),
    })
}

/// Applies a `StreamResponse` to a task snapshot: a `task` replaces it, a status update sets the
/// status (its message joins the history), an artifact update adds or appends to an artifact.
pub fn apply(task: &mut A2aTask, event: A2aStreamResponse) {
    match event {
        A2aStreamResponse::Task(t) => *task = t,
        A2aStreamResponse::Message(_) => {}
        A2aStreamResponse::StatusUpdate(u) => {
            if let Some(m) = &u.status.message {
                task.history.push(m.clone());
            }
            task.status = u.status;
        }
        A2aStreamResponse::ArtifactUpdate(u) => {
            let artifact = u.artifact;
            match task
                .artifacts
                .iter_mut()
                .find(|a| a.artifact_id == artifact.artifact_id)
            {
                Some(existing) if u.append => {
                    // text pieces of one text part are joined (in place: a long answer costs
                    // its length, not its length squared); other parts are added
                    for p in artifact.parts {
                        match (existing.parts.last_mut(), &p.text) {
                            (Some(last), Some(more)) if is_text(last) => {
                                if let Some(text) = last.text.as_mut() {
                                    text.push_str(more);
                                }
                            }
                            _ => existing.parts.push(p),
                        }
                    }
                }
                Some(existing) => *existing = artifact,
                None => task.artifacts.push(artifact),
            }
        }
    }
}

/// Whether a part is plain text (nothing a joined piece would change but its text).
fn is_text(p: &e2a::types::A2aPart) -> bool {
    p.text.is_some() && p.raw.is_none() && p.url.is_none() && p.data.is_none()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(v: serde_json::Value) -> A2aStreamResponse {
        serde_json::from_value(v).expect("an event")
    }

    #[test]
    fn artifacts_append() {
        let mut task = A2aTask::new("t", "c", A2aTaskState::TaskStateWorking);
        let piece = |append, text| {
            event(
                serde_json::json!({"artifactUpdate": {"taskId": "t", "contextId": "c", "append": append,
                "artifact": {"artifactId": "a", "parts": [{"text": text}]}}}),
            )
        };
        apply(&mut task, piece(false, "He"));
        apply(&mut task, piece(true, "llo"));
        assert_eq!(task.artifacts[0].parts, vec![text_part("Hello")]);
        apply(&mut task, piece(false, "new"));
        assert_eq!(task.artifacts[0].parts, vec![text_part("new")]);
        let done = event(serde_json::json!({"statusUpdate": {"taskId": "t", "contextId": "c",
            "status": {"state": "TASK_STATE_COMPLETED", "message": {"messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": "ok"}]}}}}));
        apply(&mut task, done);
        assert_eq!(task.status.state, A2aTaskState::TaskStateCompleted);
        assert_eq!(task.history.len(), 1);
        task.history.push(task.history[0].clone());
        let t = trim_history(task, Some(1));
        assert_eq!(t.history.len(), 1);
    }
}
