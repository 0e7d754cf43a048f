//! Conversation state is the caller's: two callers that send the same client-chosen ids
//! (`session_id`, `contextId`) never reach each other's conversation — not in the embedded
//! script agent's pauses, not over A2A, not in a remote E2A agent's back end.

mod common;

use std::sync::Arc;

use common::*;
use e2a::E2AResponse;
use e2a_gateway::backends::{AcpProcessAgent, AcpProcessConfig, E2aRemoteAgent, E2aRemoteConfig};
use e2a_gateway::bindings::a2a::A2aConfig;
use e2a_gateway::store::MemoryStore;
use e2a_gateway::{Auth, Gateway, GatewayConfig};
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

    // one request id, two callers: two runs at the back, each its caller's
    let mut long = envelope("never finish");
    long["request_id"] = "same-id".into();
    let submitted = client()
        .post(format!("{f}/v1/e2a/runs"))
        .bearer_auth(ONE)
        .json(&long)
        .send()
        .await
        .expect("submit");
    assert_eq!(submitted.status(), 202);
    let mut quick = envelope("weather");
    quick["request_id"] = "same-id".into();
    let resp = post_auth(f, &quick, "text/event-stream", Some(TWO)).await;
    assert_eq!(resp.status(), 200);
    let frames = sse_frames(&resp.text().await.expect("body"));
    assert_valid_stream(&frames);
    assert!(
        frames.iter().all(|fr| fr.request_id.as_deref() == Some("same-id")),
        "the client's request id comes back: {frames:?}"
    );
    let last = frames.last().expect("frames");
    assert!(last.is_final && last.response_kind.as_str() != "e2a.error", "{last:?}");
    // ONE's run still goes on at the back, and a cancel reaches it, not TWO's
    let run = json_of(client().get(format!("{f}/v1/e2a/runs/same-id")).bearer_auth(ONE)).await;
    assert_eq!(run["state"], "running", "{run}");
    let stopped = json_of(
        client()
            .post(format!("{f}/v1/e2a/runs/same-id:cancel"))
            .bearer_auth(ONE),
    )
    .await;
    assert_eq!(stopped["state"], "cancelled", "{stopped}");
    let page = json_of(client().get(format!("{}/v1/e2a/runs", back.base))).await;
    let at_back: Vec<String> = page["runs"]
        .as_array()
        .expect("runs")
        .iter()
        .map(|r| {
            format!(
                "{} {}",
                r["run_id"].as_str().unwrap_or(""),
                r["state"].as_str().unwrap_or("")
            )
        })
        .collect();
    let same: Vec<&String> = at_back.iter().filter(|r| r.contains("same-id")).collect();
    assert_eq!(same.len(), 2, "one run per caller at the back: {at_back:?}");
    assert!(
        same.iter().all(|r| !r.starts_with("same-id ")),
        "scoped ids: {at_back:?}"
    );
    eventually_cancelled(&back.base, &same).await;
}

/// The answer to `request`, as JSON.
async fn json_of(request: reqwest::RequestBuilder) -> Value {
    request.send().await.expect("send").json().await.expect("json")
}

/// Waits (bounded) until the back's runs `runs` (`"ID STATE"` lines) read: one `cancelled`
/// (ONE's) and one `succeeded` (TWO's).
async fn eventually_cancelled(back: &str, runs: &[&String]) {
    let ids: Vec<String> = runs
        .iter()
        .filter_map(|r| r.split(' ').next())
        .map(str::to_string)
        .collect();
    for _ in 0..100 {
        let mut states = Vec::new();
        for id in &ids {
            let url = format!("{back}/v1/e2a/runs/{}", id.replace(':', "%3A"));
            let run = json_of(client().get(url)).await;
            states.push(run["state"].as_str().unwrap_or("").to_string());
        }
        states.sort();
        if states == ["cancelled", "succeeded"] {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("the back's runs {ids:?} did not end as one cancelled, one succeeded");
}

/// Every text part in an A2A answer (its artifacts, status and history), in order.
fn a2a_text(v: &Value) -> String {
    match v {
        Value::Object(m) => {
            let own = m.get("text").and_then(Value::as_str).unwrap_or_default().to_string();
            m.iter()
                .filter(|(k, _)| *k != "text")
                .fold(own, |acc, (_, v)| acc + &a2a_text(v))
        }
        Value::Array(a) => a.iter().map(a2a_text).collect(),
        _ => String::new(),
    }
}

/// One blocking A2A `SendMessage` of `token`'s caller in context `context`; the answer's text.
async fn a2a_send(base: &str, token: &str, context: &str, text: &str) -> String {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {
        "messageId": uuid(), "role": "ROLE_USER", "contextId": context, "parts": [{"text": text}]}}});
    let resp = client()
        .post(format!("{base}/a2a"))
        .bearer_auth(token)
        .header("A2A-Version", "1.0")
        .json(&body)
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status(), 200);
    let v: Value = resp.json().await.expect("json");
    assert!(v.get("error").is_none(), "{v}");
    a2a_text(&v["result"]["task"]["artifacts"])
}

#[tokio::test]
async fn two_a2a_callers_with_one_context_id_never_share_an_acp_session() {
    // behind the gateway: an ACP agent program that says which session a prompt reached
    let agent = format!("{}/tests/clients/data/fake_acp_agent.py", env!("CARGO_MANIFEST_DIR"));
    let agent = AcpProcessAgent::new(AcpProcessConfig::new(vec!["python3".into(), agent])).expect("acp agent");
    let dir = tempfile::tempdir().expect("tmp");
    let config = GatewayConfig {
        auth: two_callers(&dir),
        ..fast_config()
    };
    let gateway = Gateway::new(agent, config).with_a2a(A2aConfig::default(), Arc::new(MemoryStore::new()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let server = tokio::spawn(gateway.serve(listener, std::future::pending()));

    let one = a2a_send(&base, ONE, "shared", "session").await;
    assert!(one.contains("fake-"), "{one}");
    let two = a2a_send(&base, TWO, "shared", "session").await;
    assert!(two.contains("fake-"), "{two}");
    assert_ne!(
        one, two,
        "caller TWO reached caller ONE's ACP session through contextId"
    );
    assert_eq!(
        a2a_send(&base, ONE, "shared", "session").await,
        one,
        "ONE keeps its session"
    );
    server.abort();
}
