//! The inspector page's routes (`/ui`): the page is static and needs no credential; what it
//! shows does — a caller sees its own runs, an operator every caller's and the counts; a run's
//! frames stream from `/ui/api/runs/{id}/frames`; a pause is listed until its session goes on;
//! `[ui] enabled = false` serves none of it. (The page itself is driven in Chromium by
//! `tests/inspector/run.sh`.)

mod common;

use common::*;
use e2a_gateway::config_file::ConfigFile;
use serde_json::{json, Value};

const OPS: &str = "key-of-the-operator";
const ALICE: &str = "key-of-alice";
const BOB: &str = "key-of-bob";

/// A gateway of the script agent behind three callers, with `extra` (its runs and tasks kept in
/// memory).
async fn gateway(extra: &str) -> String {
    let sha = |k: &str| e2a_gateway::web::hmac::content_sha256(k.as_bytes());
    let text = format!(
        "agent = \"script:{}\"\n{extra}\n[callers.ops]\napi_key_sha256 = \"{}\"\n\
         [callers.alice]\napi_key_sha256 = \"{}\"\n[callers.bob]\napi_key_sha256 = \"{}\"\n",
        script_path().display(),
        sha(OPS),
        sha(ALICE),
        sha(BOB)
    );
    let file = ConfigFile::parse(&text, "e2a.toml", ".".as_ref(), &[]).expect("config");
    let store = std::sync::Arc::new(e2a_gateway::store::MemoryStore::new());
    let gateway = file.gateway(Some(store.into()), None).expect("gateway");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    tokio::spawn(gateway.serve(listener, std::future::pending()));
    base
}

async fn get(base: &str, path: &str, key: Option<&str>) -> reqwest::Response {
    let mut req = client().get(format!("{base}{path}"));
    if let Some(k) = key {
        req = req.bearer_auth(k);
    }
    req.send().await.expect("get")
}

async fn activity(base: &str, key: &str) -> Value {
    let resp = get(base, "/ui/api/activity", Some(key)).await;
    assert_eq!(resp.status(), 200);
    resp.json().await.expect("json")
}

async fn say(base: &str, key: &str, session: &str, text: &str) {
    let mut body = envelope(text);
    body["session_id"] = session.into();
    let resp = post_auth(base, &body, "application/json", Some(key)).await;
    assert_eq!(resp.status(), 200);
}

fn ids(v: &Value, list: &str) -> Vec<(String, String)> {
    v[list]
        .as_array()
        .expect("list")
        .iter()
        .map(|r| {
            (
                r["caller"].as_str().unwrap_or("").to_string(),
                r["state"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_caller_sees_its_own_runs_an_operator_everyones_and_a_pause_until_it_is_answered() {
    let base = gateway("[a2a]\nenabled = true\n[ui]\noperators = [\"ops\"]\n").await;
    say(&base, ALICE, "a", "hi").await;
    say(&base, BOB, "b", "book a table").await;
    assert_eq!(get(&base, "/ui/api/activity", None).await.status(), 401);

    let alice = activity(&base, ALICE).await;
    assert_eq!(ids(&alice, "runs"), [("alice".into(), "succeeded".into())]);
    assert_eq!(alice["agents"], Value::Null, "the counts are the operators'");
    assert_eq!(alice["viewer"], json!({"caller": "alice", "operator": false}));
    let bob = activity(&base, BOB).await;
    assert_eq!(ids(&bob, "pauses"), [("bob".into(), "paused".into())]);
    assert_eq!(bob["pauses"][0]["pause"]["prompt"], "For how many people?");
    let ops = activity(&base, OPS).await;
    assert_eq!(
        ids(&ops, "runs"),
        [("bob".into(), "paused".into()), ("alice".into(), "succeeded".into())]
    );
    assert_eq!(ops["agents"]["default"]["runs"], 2);
    assert_eq!(ops["agents"]["default"]["ended"], json!({"paused": 1, "succeeded": 1}));
    let trace = ops["runs"][0]["trace_id"].as_str().unwrap_or("");
    assert_eq!(trace.len(), 32, "{ops}");

    // bob's run: its frames for the operator, nothing for alice
    let id = ops["runs"][0]["id"].as_u64().expect("id");
    let path = format!("/ui/api/runs/{id}/frames");
    assert_eq!(get(&base, &path, Some(ALICE)).await.status(), 404);
    let resp = get(&base, &path, Some(OPS)).await;
    assert_eq!(resp.status(), 200);
    let text = resp.text().await.expect("sse");
    let frames: Vec<Value> = text
        .split("\n\n")
        .filter(|e| e.starts_with("event: frame"))
        .filter_map(|e| e.split_once("data: ").and_then(|(_, d)| serde_json::from_str(d).ok()))
        .collect();
    let sequences: Vec<u64> = frames.iter().filter_map(|f| f["sequence"].as_u64()).collect();
    assert_eq!(sequences, [0, 1, 2], "{text}");
    assert!(text.contains("event: end"), "{text}");

    // an A2A turn: its task's stored events, then its frames
    let sent = client()
        .post(format!("{base}/a2a"))
        .bearer_auth(ALICE)
        .header("A2A-Version", "1.0")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
            "params": {"message": {"messageId": "m-inspector", "role": "ROLE_USER", "parts": [{"text": "hi"}]}}}))
        .send()
        .await
        .expect("send");
    assert_eq!(sent.status(), 200);
    let ops = activity(&base, OPS).await;
    assert_eq!(ops["runs"][0]["binding"], "a2a");
    let a2a_id = ops["runs"][0]["id"].as_u64().expect("id");
    let text = get(&base, &format!("/ui/api/runs/{a2a_id}/frames"), Some(ALICE))
        .await
        .text()
        .await
        .expect("sse");
    let stored: Vec<Value> = text
        .split("\n\n")
        .filter(|e| e.starts_with("event: a2a"))
        .filter_map(|e| e.split_once("data: ").and_then(|(_, d)| serde_json::from_str(d).ok()))
        .collect();
    assert!(
        stored.first().is_some_and(|e| e["seq"] == 1 && e["event"].is_object()),
        "{text}"
    );
    assert!(text.contains("event: end"), "{text}");

    // answered in its session: no longer pending (the agent asks its next question)
    say(&base, BOB, "b", "4").await;
    let ops = activity(&base, OPS).await;
    assert_eq!(ops["runs"][0]["caller"], "bob");
    let pending: Vec<&Value> = ops["pauses"]
        .as_array()
        .expect("pauses")
        .iter()
        .map(|p| &p["pause"]["prompt"])
        .collect();
    assert_eq!(pending, [&json!("Book the table for 4 at 20:00?")]);
    assert_eq!(ops["runs"][2]["answered_by"], ops["runs"][0]["id"], "{ops}");
}

#[tokio::test]
async fn the_page_is_static_needs_no_credential_and_goes_with_ui_off() {
    let base = gateway("").await;
    let page = get(&base, "/ui", None).await;
    assert_eq!(page.status(), 200);
    let csp = page.headers()["content-security-policy"]
        .to_str()
        .unwrap_or("")
        .to_string();
    assert!(csp.contains("default-src 'self'"), "{csp}");
    let html = page.text().await.expect("html");
    assert!(
        html.contains("/ui/app.js") && !html.contains("http"),
        "nothing from elsewhere"
    );
    assert_eq!(get(&base, "/ui/app.js", None).await.status(), 200);
    for id in ["12345", "-1", "x"] {
        let resp = get(&base, &format!("/ui/api/runs/{id}/frames"), Some(OPS)).await;
        assert_eq!(resp.status(), 404, "{id}");
        assert_eq!(resp.headers()["content-type"], "application/problem+json");
    }
    let index: Value = get(&base, "/", Some(OPS)).await.json().await.expect("index");
    assert_eq!(index["ui"], "/ui");

    let off = gateway("[ui]\nenabled = false\n").await;
    for path in ["/ui", "/ui/api/activity"] {
        assert_eq!(get(&off, path, Some(OPS)).await.status(), 404, "{path}");
    }
}
