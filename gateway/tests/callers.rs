//! Conversation state is the caller's: two callers that send the same client-chosen ids
//! (`session_id`, `contextId`) never reach each other's conversation — not in the embedded
//! script agent's pauses, not over A2A, not in a remote E2A agent's back end.

mod common;

use std::sync::Arc;

use common::*;
use e2a::E2AResponse;
use e2a_gateway::backends::{E2aRemoteAgent, E2aRemoteConfig};
use e2a_gateway::{Auth, GatewayConfig};
use serde_json::{json, Value};

const ONE: &str = "token-of-caller-one";
const TWO: &str = "token-of-caller-two";

fn two_callers(dir: &tempfile::TempDir) -> Auth {
    let path = dir.path().join("tokens.txt");
    std::fs::write(&path, format!("{ONE}\n{TWO}\n")).expect("token file");
    Auth::from_file(&path).expect("tokens")
}

/// What a run said: its text chunks, then its final frame's body (a pause's question).
fn said(frames: &[E2AResponse]) -> String {
    let mut out: String = frames
        .iter()
        .filter(|f| f.body.get("delta_kind") == Some(&json!("text")))
        .filter_map(|f| f.body.get("delta").and_then(Value::as_str))
        .collect();
    if let Some(last) = frames.last() {
        out.push_str(&Value::Object(last.body.clone()).to_string());
    }
    out
}

async fn turn(base: &str, token: &str, session: &str, text: &str) -> Vec<E2AResponse> {
    let mut body = envelope(text);
    body["session_id"] = session.into();
    let resp = post_auth(base, &body, "text/event-stream", Some(token)).await;
    assert_eq!(resp.status(), 200);
    let frames = sse_frames(&resp.text().await.expect("body"));
    assert_valid_stream(&frames);
    frames
}

#[tokio::test]
async fn two_callers_with_one_session_id_never_share_a_pause() {
    let dir = tempfile::tempdir().expect("tmp");
    let config = GatewayConfig {
        auth: two_callers(&dir),
        ..fast_config()
    };
    let server = start(Arc::new(script()), config).await;
    let b = &server.base;
    // caller ONE starts a booking: the agent asks and waits
    let asked = said(&turn(b, ONE, "default", "book a table").await);
    assert!(asked.contains("For how many people?"), "{asked}");
    // caller TWO, same session id: a new conversation, not ONE's pause
    let other = said(&turn(b, TWO, "default", "4").await);
    assert!(
        !other.contains("A table for"),
        "caller TWO answered ONE's pause: {other}"
    );
    // ONE's pause is still there for ONE
    let answered = said(&turn(b, ONE, "default", "4").await);
    assert!(answered.contains("A table for 4."), "{answered}");
}

#[tokio::test]
async fn a_remote_e2a_agent_keeps_callers_apart_at_the_back() {
    // the back gateway sees one caller (the front); the front scopes the ids it sends
    let back = start(Arc::new(script()), fast_config()).await;
    let remote = E2aRemoteAgent::new(E2aRemoteConfig::new(back.base.clone())).expect("remote agent");
    let dir = tempfile::tempdir().expect("tmp");
    let front = start(
        Arc::new(remote),
        GatewayConfig {
            auth: two_callers(&dir),
            ..fast_config()
        },
    )
    .await;
    let f = &front.base;
    let frames = turn(f, ONE, "default", "book a table").await;
    assert!(said(&frames).contains("For how many people?"));
    // the client's ids come back as the client sent them
    assert!(
        frames.iter().all(|fr| fr.session_id.as_deref() == Some("default")),
        "{frames:?}"
    );
    let other = said(&turn(f, TWO, "default", "4").await);
    assert!(
        !other.contains("A table for"),
        "caller TWO answered ONE's pause at the back: {other}"
    );
    let answered = said(&turn(f, ONE, "default", "4").await);
    assert!(answered.contains("A table for 4."), "{answered}");
}
