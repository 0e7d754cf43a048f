//! Runs of an ACP agent behind the gateway ([`AcpProcessAgent`]) as the tests drive them: a
//! prompt, its frames (within 30 s), the text they said, and their final kind with the stream's
//! invariants checked. Shared by `gateway/tests/acp_backend.rs` and `cli/tests/acp_agent.rs`.
#![allow(dead_code)]

use std::time::Duration;

use e2a::{E2AEnvelope, E2AResponse};
use e2a_gateway::backends::AcpProcessAgent;
use e2a_gateway::{Agent, Caller, RequestContext};
use futures_util::StreamExt;
use serde_json::{json, Value};

/// A prompt of `text` in session `session`, under a fresh request id.
pub fn request(text: &str, session: Option<&str>) -> E2AEnvelope {
    let mut r =
        E2AEnvelope::new("session/prompt", json!({"text": text})).with_request_id(uuid::Uuid::new_v4().to_string());
    r.session_id = session.map(str::to_string);
    r
}

/// The frames `agent` answers `req` with, asked anonymously.
pub async fn run(agent: &AcpProcessAgent, req: E2AEnvelope) -> Vec<E2AResponse> {
    run_as(agent, req, Caller::anonymous()).await
}

/// The frames `agent` answers `req` with, asked by `caller`.
pub async fn run_as(agent: &AcpProcessAgent, req: E2AEnvelope, caller: Caller) -> Vec<E2AResponse> {
    let ctx = RequestContext::new(caller, None);
    let frames = agent.run(req, ctx).map(E2AResponse::from);
    tokio::time::timeout(Duration::from_secs(30), frames.collect::<Vec<_>>())
        .await
        .expect("the run ends in time")
}

/// The text the frames said.
pub fn text(frames: &[E2AResponse]) -> String {
    frames
        .iter()
        .filter(|f| f.body.get("delta_kind").and_then(Value::as_str) == Some("text"))
        .filter_map(|f| f.body.get("delta").and_then(Value::as_str))
        .collect()
}

/// The final frame's kind; the frames numbered from 0, one final frame, last.
pub fn final_kind(frames: &[E2AResponse]) -> String {
    let last = frames.last().expect("frames");
    assert!(last.is_final, "the last frame is final");
    assert_eq!(frames.iter().filter(|f| f.is_final).count(), 1);
    for (i, f) in frames.iter().enumerate() {
        assert_eq!(f.sequence, i as u64, "sequence");
    }
    last.response_kind.to_string()
}
