//! Building A2A objects: parts, artifacts, a new task, an agent's message, an event as JSON —
//! what the stream projector and the gateway's task service make their events of.

use serde_json::{Map, Value};

use crate::types::{
    A2aArtifact, A2aMessage, A2aPart, A2aRole, A2aStreamResponse, A2aTask, A2aTaskState, A2aTaskStatus,
};

/// A part holding `text`.
pub fn text_part(text: impl Into<String>) -> A2aPart {
    A2aPart {
        text: Some(text.into()),
        ..A2aPart::default()
    }
}

/// A part holding structured `data`.
pub fn data_part(data: Value) -> A2aPart {
    A2aPart {
        data: Some(data),
        ..A2aPart::default()
    }
}

/// An artifact of `parts`, without description, metadata or extensions.
pub fn artifact(artifact_id: String, name: Option<String>, parts: Vec<A2aPart>) -> A2aArtifact {
    A2aArtifact {
        artifact_id,
        name,
        description: None,
        parts,
        metadata: Map::new(),
        extensions: Vec::new(),
    }
}

impl A2aTask {
    /// A task in `state`, with no history, artifacts or metadata yet.
    pub fn new(id: impl Into<String>, context_id: impl Into<String>, state: A2aTaskState) -> Self {
        A2aTask {
            id: id.into(),
            context_id: context_id.into(),
            status: A2aTaskStatus {
                state,
                message: None,
                timestamp: None,
            },
            artifacts: Vec::new(),
            history: Vec::new(),
            metadata: Map::new(),
        }
    }
}

impl A2aMessage {
    /// The message's text: its text parts, one per line.
    ///
    /// ```
    /// let m: e2a::types::A2aMessage = serde_json::from_value(serde_json::json!({"messageId": "m",
    ///     "role": "ROLE_AGENT", "parts": [{"text": "a"}, {"data": {}}, {"text": "b"}]})).unwrap();
    /// assert_eq!(m.text(), "a\nb");
    /// ```
    pub fn text(&self) -> String {
        let texts: Vec<&str> = self.parts.iter().filter_map(|p| p.text.as_deref()).collect();
        texts.join("\n")
    }

    /// The agent's message `message_id` in task `task_id` of context `context_id`.
    pub fn agent(
        message_id: impl Into<String>,
        task_id: impl Into<String>,
        context_id: impl Into<String>,
        parts: Vec<A2aPart>,
    ) -> Self {
        A2aMessage {
            message_id: message_id.into(),
            task_id: Some(task_id.into()),
            context_id: Some(context_id.into()),
            role: A2aRole::RoleAgent,
            parts,
            metadata: Map::new(),
            extensions: Vec::new(),
            reference_task_ids: Vec::new(),
        }
    }
}

impl A2aStreamResponse {
    /// The event as JSON (`{"task": …}`, `{"statusUpdate": …}`, …).
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or_default()
    }
}
