//! A task's snapshot: the `Task` a stored event log adds up to, and the events and messages
//! the service writes itself.

use e2a::types::A2aTaskState;
use serde_json::{json, Value};

use crate::store::TaskRecord;

pub(super) fn now_ts() -> String {
    e2a::a2a::stream::proto_timestamp(&e2a::timestamp::utc_now_iso())
}

/// The task with only its last `n` history messages (all for `None`; none for 0).
pub fn trim_history(mut task: Value, n: Option<usize>) -> Value {
    if let (Some(n), Some(t)) = (n, task.as_object_mut()) {
        if n == 0 {
            t.remove("history");
        } else if let Some(Value::Array(h)) = t.get_mut("history") {
            let skip = h.len().saturating_sub(n);
            h.drain(..skip);
        }
    }
    task
}

pub(super) fn user_turns(task: &Value) -> usize {
    task.get("history")
        .and_then(Value::as_array)
        .map(|h| {
            h.iter()
                .filter(|m| m.get("role").and_then(Value::as_str) == Some("ROLE_USER"))
                .count()
        })
        .unwrap_or(1)
}

pub(super) fn agent_message(rec: &TaskRecord, text: &str) -> Value {
    json!({"messageId": uuid::Uuid::new_v4().to_string(), "role": "ROLE_AGENT",
        "taskId": rec.id, "contextId": rec.context_id, "parts": [{"text": text}]})
}

pub(super) fn status_event(rec: &TaskRecord, state: A2aTaskState, message: Option<Value>) -> Value {
    let mut status = json!({"state": state, "timestamp": now_ts()});
    if let Some(m) = message {
        status["message"] = m;
    }
    json!({"statusUpdate": {"taskId": rec.id, "contextId": rec.context_id, "status": status}})
}

/// Applies a `StreamResponse` to a task snapshot: a `task` replaces it, a status update sets the
/// status (its message joins the history), an artifact update adds or appends to an artifact.
pub fn apply(task: &mut Value, event: &Value) {
    if let Some(t) = event.get("task") {
        *task = t.clone();
        return;
    }
    let Some(obj) = task.as_object_mut() else { return };
    if let Some(u) = event.get("statusUpdate") {
        if let Some(status) = u.get("status") {
            if let Some(m) = status.get("message") {
                if let Some(Value::Array(h)) = obj.get_mut("history") {
                    h.push(m.clone());
                } else {
                    obj.insert("history".into(), json!([m]));
                }
            }
            obj.insert("status".into(), status.clone());
        }
    } else if let Some(u) = event.get("artifactUpdate") {
        let Some(artifact) = u.get("artifact") else { return };
        let id = artifact.get("artifactId").cloned();
        let append = u.get("append").and_then(Value::as_bool).unwrap_or(false);
        let list = obj.entry("artifacts").or_insert_with(|| json!([]));
        let Some(list) = list.as_array_mut() else { return };
        match list.iter_mut().find(|a| a.get("artifactId") == id.as_ref()) {
            Some(existing) if append => {
                let new_parts = artifact
                    .get("parts")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                if let Some(Value::Array(parts)) = existing.get_mut("parts") {
                    // text pieces of one text part are joined; other parts are added
                    for p in new_parts {
                        // in place: a long answer costs its length, not its length squared
                        match (parts.last_mut().and_then(|l| l.get_mut("text")), p.get("text")) {
                            (Some(Value::String(text)), Some(Value::String(more))) => text.push_str(more),
                            _ => parts.push(p),
                        }
                    }
                }
            }
            Some(existing) => *existing = artifact.clone(),
            None => list.push(artifact.clone()),
        }
    }
}

#[cfg(test)]
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn artifacts_append() {
        let mut task = json!({"id": "t", "artifacts": []});
        apply(
            &mut task,
            &json!({"artifactUpdate": {"artifact": {"artifactId": "a", "parts": [{"text": "He"}]}}}),
        );
        apply(
            &mut task,
            &json!({"artifactUpdate": {"append": true, "artifact": {"artifactId": "a", "parts": [{"text": "llo"}]}}}),
        );
        assert_eq!(task["artifacts"][0]["parts"], json!([{"text": "Hello"}]));
        let t = trim_history(json!({"history": [1, 2, 3]}), Some(2));
        assert_eq!(t["history"], json!([2, 3]));
    }
}
