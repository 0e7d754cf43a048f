//! AG-UI over SSE (`Gateway::with_agui`): a real HTTP client against a gateway on 127.0.0.1;
//! every stream received is checked with `e2a::agui::verify_events` (the client's rules).

use std::sync::Arc;
use std::time::Duration;

use e2a_gateway::backends::ScriptAgent;
use e2a_gateway::{Agent, Auth, Gateway, GatewayConfig};
use futures_util::StreamExt;
use serde_json::{json, Value};

const SCRIPT: &str = r##"{"scenarios": [
  {"name": "weather", "match": {"text": "weather"}, "steps": [
    {"type": "reasoning", "text": "Call the tool."},
    {"type": "tool_call", "id": "call-1", "name": "get_weather", "arguments": {"city": "Paris"}, "result": {"temp_c": 21}},
    {"type": "text", "text": "It is 21 °C in Paris.", "chunk_size": 6}, {"type": "complete"}]},
  {"name": "fail", "match": {"text": "crash"}, "steps": [
    {"type": "text", "text": "starting"}, {"type": "fail", "message": "the model provider is down"}]},
  {"name": "deploy", "match": {"text": "deploy"}, "steps": [
    {"type": "text", "text": "Ready."},
    {"type": "approval", "prompt": "Deploy to production?", "on_deny": [{"type": "text", "text": "Not deployed."}, {"type": "complete"}]},
    {"type": "text", "text": "Deployed."}, {"type": "complete"}]},
  {"name": "forever", "match": {"text": "never finish"}, "steps": [
    {"type": "text", "text": "working on it"}, {"type": "sleep", "ms": 600000}, {"type": "complete"}]},
  {"name": "gap", "match": {"text": "misbehave"}, "steps": [
    {"type": "text", "text": "ok"}, {"type": "misbehave", "how": "gap"}, {"type": "complete"}]},
  {"name": "report", "match": {"text": "report please"}, "steps": [
    {"type": "artifact", "kind": "text", "id": "notes", "name": "notes.md", "media_type": "text/markdown", "text": "# Notes\nAll good.", "chunk_size": 6},
    {"type": "artifact", "kind": "data", "id": "rows", "name": "rows", "data": [{"n": 1}], "chunk_size": 2},
    {"type": "complete", "result": {"content": "report ready"}}]},
  {"name": "booking", "match": {"text": "book a table"}, "steps": [
    {"type": "input_required", "prompt": "For how many people?"},
    {"type": "text", "text": "A table for {answer}."}, {"type": "complete"}]},
  {"name": "trip", "match": {"text": "plan a trip"}, "steps": [
    {"type": "text", "text": "Planning a trip."},
    {"type": "input_required", "prompt": "How many travellers?", "also_ask": ["Which city?"]},
    {"type": "text", "text": "A trip for {answer}."},
    {"type": "approval", "prompt": "Book the trip?", "also_ask": ["Pay the deposit now?"],
     "on_deny": [{"type": "text", "text": "Not booked."}, {"type": "complete"}]},
    {"type": "text", "text": "Booked."}, {"type": "complete"}]},
  {"name": "echo", "steps": [{"type": "text", "text": "You said: {input}"}, {"type": "complete"}]}
]}"##;

struct Server {
    base: String,
    _stop: tokio::sync::oneshot::Sender<()>,
}

async fn serve(agent: Arc<dyn Agent>, config: GatewayConfig) -> Server {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let gateway = Gateway::with_agent(agent, config).with_agui();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(gateway.serve(listener, async move {
        let _ = rx.await;
    }));
    Server { base, _stop: tx }
}

/// The ids of the interrupts a run ended with (its last event's outcome).
fn interrupt_ids(events: &[Value]) -> Vec<Value> {
    let interrupts = &events.last().expect("events")["outcome"]["interrupts"];
    interrupts
        .as_array()
        .into_iter()
        .flatten()
        .map(|i| i["id"].clone())
        .collect()
}

/// POSTs a run input to `/agui` (the answer not read).
fn post_agui(base: &str, body: Value) -> impl std::future::Future<Output = reqwest::Result<reqwest::Response>> {
    reqwest::Client::new()
        .post(format!("{base}/agui"))
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
}

fn input(thread: &str, text: &str) -> Value {
    json!({"threadId": thread, "runId": format!("run-{}", uuid::Uuid::new_v4()),
           "messages": [{"id": "m1", "role": "user", "content": text}],
           "tools": [], "context": [], "state": {}, "forwardedProps": {}})
}

/// POSTs a RunAgentInput and reads every SSE event (bounded).
async fn run(base: &str, path: &str, body: &Value) -> Vec<Value> {
    let resp = reqwest::Client::new()
        .post(format!("{base}{path}"))
        .header("content-type", "application/json")
        .header("accept", "text/event-stream")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    let text = tokio::time::timeout(Duration::from_secs(20), resp.text())
        .await
        .unwrap()
        .unwrap();
    events_of(&text)
}

/// The AG-UI events of an SSE body, their lifecycle verified.
fn events_of(text: &str) -> Vec<Value> {
    let events: Vec<Value> = text
        .split("\n\n")
        .filter_map(|block| block.lines().find_map(|l| l.strip_prefix("data: ")))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    e2a::agui::verify_events(&events).unwrap();
    events
}

fn types(events: &[Value]) -> Vec<&str> {
    events.iter().filter_map(|e| e["type"].as_str()).collect()
}

fn said(events: &[Value]) -> String {
    events
        .iter()
        .filter(|e| e["type"] == "TEXT_MESSAGE_CONTENT")
        .filter_map(|e| e["delta"].as_str())
        .collect()
}

fn script() -> Arc<ScriptAgent> {
    Arc::new(ScriptAgent::from_json(SCRIPT).unwrap())
}

#[tokio::test]
async fn a_run_streams_its_lifecycle_text_reasoning_and_tool_calls() {
    let s = serve(script(), GatewayConfig::default()).await;
    let body = input("t1", "what is the weather?");
    let events = run(&s.base, "/agui", &body).await;
    let t = types(&events);
    assert_eq!(t.first(), Some(&"RUN_STARTED"));
    assert_eq!(t.last(), Some(&"RUN_FINISHED"));
    assert_eq!(events[0]["threadId"], "t1");
    assert_eq!(events[0]["runId"], body["runId"]);
    for want in [
        "REASONING_START",
        "REASONING_MESSAGE_CONTENT",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "TOOL_CALL_RESULT",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_END",
    ] {
        assert!(t.contains(&want), "{want} missing: {t:?}");
    }
    assert_eq!(said(&events), "It is 21 °C in Paris.");
    assert!(t.iter().filter(|x| **x == "TEXT_MESSAGE_CONTENT").count() > 1);
    let args = events.iter().find(|e| e["type"] == "TOOL_CALL_ARGS").unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(args["delta"].as_str().unwrap()).unwrap(),
        json!({"city": "Paris"})
    );
}

#[tokio::test]
async fn artifacts_and_a_final_content_never_streamed_are_shown_as_text() {
    let s = serve(script(), GatewayConfig::default()).await;
    let events = run(&s.base, "/agui", &input("t-report", "report please")).await;
    e2a::agui::verify_events(&events).unwrap();
    let said = said(&events);
    for shown in ["[notes.md]\n# Notes\nAll good.", "[rows]\n[{\"n\":1}]", "report ready"] {
        assert!(said.contains(shown), "{shown:?} not in {said:?}");
    }
    // an app still gets each artifact whole
    assert!(
        events.iter().any(|e| e["type"] == "CUSTOM" && e["name"] == "artifact"),
        "{events:?}"
    );
}

#[tokio::test]
async fn a_failing_agent_ends_the_run_with_run_error() {
    let s = serve(script(), GatewayConfig::default()).await;
    let events = run(&s.base, "/agui", &input("t2", "crash")).await;
    let last = events.last().unwrap();
    assert_eq!(last["type"], "RUN_ERROR");
    assert_eq!(last["message"], "the model provider is down");
    assert_eq!(said(&events), "starting");
    // an agent breaking the stream invariants is cut off at the boundary: RUN_ERROR too
    let events = run(&s.base, "/agui", &input("t3", "misbehave")).await;
    assert_eq!(events.last().unwrap()["type"], "RUN_ERROR");
}

#[tokio::test]
async fn an_approval_is_an_interrupt_that_a_follow_up_run_resumes() {
    let s = serve(script(), GatewayConfig::default()).await;
    for (thread, resume, expected) in [
        (
            "t-allow",
            json!([{"interruptId": "i", "status": "resolved", "payload": {"approved": true}}]),
            "Deployed.",
        ),
        (
            "t-deny",
            json!([{"interruptId": "i", "status": "resolved", "payload": {"approved": false}}]),
            "Not deployed.",
        ),
        (
            "t-cancel",
            json!([{"interruptId": "i", "status": "cancelled"}]),
            "Not deployed.",
        ),
    ] {
        let events = run(&s.base, "/agui", &input(thread, "please deploy")).await;
        let last = events.last().unwrap();
        assert_eq!(last["type"], "RUN_FINISHED");
        assert_eq!(last["outcome"]["type"], "interrupt");
        let interrupt = &last["outcome"]["interrupts"][0];
        assert_eq!(interrupt["reason"], "approval");
        assert_eq!(said(&events), "Ready.");
        let mut follow = input(thread, "please deploy");
        follow["resume"] = resume.clone();
        follow["resume"][0]["interruptId"] = interrupt["id"].clone();
        let events = run(&s.base, "/agui", &follow).await;
        assert_eq!(said(&events), expected, "{thread}");
        assert_eq!(events.last().unwrap()["outcome"]["type"], "success");
    }
    // a question is an interrupt for input
    let events = run(&s.base, "/agui", &input("t-book", "book a table")).await;
    let interrupt = &events.last().unwrap()["outcome"]["interrupts"][0];
    assert_eq!(interrupt["reason"], "input", "{interrupt}");
    assert_eq!(interrupt["message"], "For how many people?", "{interrupt}");
    // without resume entries, the last user message answers
    run(&s.base, "/agui", &input("t-msg", "please deploy")).await;
    let events = run(&s.base, "/agui", &input("t-msg", "no")).await;
    assert_eq!(said(&events), "Not deployed.");
}

#[tokio::test]
async fn a_resume_naming_no_pending_interrupt_is_refused_before_the_stream() {
    let s = serve(script(), GatewayConfig::default()).await;
    let post = |body: Value| post_agui(&s.base, body);
    let resume = |thread: &str, id: &Value| {
        let mut follow = input(thread, "please deploy");
        follow["resume"] = json!([{"interruptId": id, "status": "resolved", "payload": {"approved": true}}]);
        follow
    };
    // no interrupt at all on this thread
    let r = post(resume("t-none", &json!("made-up"))).await.unwrap();
    assert_eq!(r.status(), 422);
    assert_eq!(r.headers()["content-type"], "application/problem+json");
    let p: Value = r.json().await.unwrap();
    assert_eq!(p["pointer"], "/resume/0/interruptId", "{p}");
    // a pending interrupt, but another id; then the right one, once
    let events = run(&s.base, "/agui", &input("t-one", "please deploy")).await;
    let id = interrupt_ids(&events)[0].clone();
    assert_eq!(post(resume("t-one", &json!("other"))).await.unwrap().status(), 422);
    let events = run(&s.base, "/agui", &resume("t-one", &id)).await;
    assert_eq!(said(&events), "Deployed.");
    assert_eq!(
        post(resume("t-one", &id)).await.unwrap().status(),
        422,
        "an interrupt is answered once"
    );
}

/// A run and its thread are named: an empty `runId` or `threadId` is refused (`422` naming it),
/// not run as the caller's unnamed run.
#[tokio::test]
async fn an_empty_run_or_thread_id_is_refused() {
    let s = serve(script(), GatewayConfig::default()).await;
    for key in ["runId", "threadId"] {
        let mut body = input("t-empty", "hello");
        body[key] = json!("");
        let r = post_agui(&s.base, body).await.unwrap();
        assert_eq!(r.status(), 422, "{key}");
        let p: Value = r.json().await.unwrap();
        assert_eq!(p["pointer"], format!("/{key}"), "{p}");
    }
}

/// GoAI's resume body: the paused run's own `runId` and `resume`, no `threadId` and no
/// messages — the run goes on from its interrupt.
/// A `parentRunId` must name one of the caller's runs on the thread.
#[tokio::test]
async fn goais_resume_body_and_a_parent_run_id_are_checked_and_honoured() {
    let s = serve(script(), GatewayConfig::default()).await;
    let first = input("t-goai", "please deploy");
    let events = run(&s.base, "/agui", &first).await;
    let id = interrupt_ids(&events)[0].clone();
    let body = json!({"runId": first["runId"], "resume": [
        {"interruptId": id, "status": "resolved", "payload": {"approved": true, "note": "ship it"}}]});
    let events = run(&s.base, "/agui", &body).await;
    assert_eq!(events.first().unwrap()["threadId"], "t-goai");
    assert_eq!(events.first().unwrap()["runId"], first["runId"]);
    assert_eq!(said(&events), "Deployed.");
    // answered once: the run no longer waits
    let post = |body: Value| post_agui(&s.base, body);
    let again = post(body.clone()).await.unwrap();
    assert_eq!(again.status(), 422);
    let p: Value = again.json().await.unwrap();
    assert_eq!(p["pointer"], "/threadId", "{p}");
    // a parent run that is not the caller's on this thread: refused; one that is: a branch
    let mut branch = input("t-goai", "hello");
    branch["parentRunId"] = json!("no-such-run");
    let r = post(branch.clone()).await.unwrap();
    assert_eq!(r.status(), 422);
    let p: Value = r.json().await.unwrap();
    assert_eq!(p["pointer"], "/parentRunId", "{p}");
    branch["parentRunId"] = first["runId"].clone();
    let events = run(&s.base, "/agui", &branch).await;
    assert_eq!(events.last().unwrap()["type"], "RUN_FINISHED");
    let mut elsewhere = input("t-other-thread", "hello");
    elsewhere["parentRunId"] = first["runId"].clone();
    assert_eq!(
        post(elsewhere).await.unwrap().status(),
        422,
        "the parent is on another thread"
    );
}

#[tokio::test]
async fn input_limits_hold_on_agui_too() {
    let s = serve(script(), GatewayConfig::default()).await;
    let post = |body: String| {
        reqwest::Client::new()
            .post(format!("{}/agui", s.base))
            .header("content-type", "application/json")
            .body(body)
            .send()
    };
    let deep = format!("{}1{}", "[".repeat(100), "]".repeat(100));
    let mut body = input("t-deep", "hi");
    body["forwardedProps"] = serde_json::from_str::<Value>(&deep).unwrap();
    let r = post(body.to_string()).await.unwrap();
    assert_eq!(r.status(), 400);
    let p: Value = r.json().await.unwrap();
    assert!(p["detail"].as_str().unwrap_or("").contains("max_depth"), "{p}");
    let mut body = input("t-long", "hi");
    body["forwardedProps"] = json!({"s": "x".repeat(3 << 20)});
    let r = post(body.to_string()).await.unwrap();
    assert_eq!(r.status(), 413);
}

#[tokio::test]
async fn named_agent_routes_and_request_errors() {
    let s = serve(script(), GatewayConfig::default()).await;
    assert_eq!(
        said(&run(&s.base, "/agents/script/agui", &input("n1", "hi")).await),
        "You said: hi"
    );
    assert_eq!(
        said(&run(&s.base, "/agents/default/agui", &input("n2", "hi")).await),
        "You said: hi"
    );
    let client = reqwest::Client::new();
    let post = |path: &str, ct: &str, body: String| {
        client
            .post(format!("{}{path}", s.base))
            .header("content-type", ct)
            .body(body)
            .send()
    };
    let r = post("/agents/nobody/agui", "application/json", input("n3", "hi").to_string())
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    assert_eq!(r.headers()["content-type"], "application/problem+json");
    let r = post("/agui", "text/plain", "hi".into()).await.unwrap();
    assert_eq!(r.status(), 415);
    let r = post("/agui", "application/json", "{not json".into()).await.unwrap();
    assert_eq!(r.status(), 400);
    let r = post("/agui", "application/json", json!({"runId": "r"}).to_string())
        .await
        .unwrap();
    assert!(r.status().is_client_error());
    let problem: Value = r.json().await.unwrap();
    assert!(
        problem["detail"].as_str().unwrap_or_default().contains("threadId"),
        "{problem}"
    );
    // the E2A binding is still served next to AG-UI
    let health: Value = client
        .get(format!("{}/healthz", s.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(health["status"], "ok");
}

#[tokio::test]
async fn agui_needs_the_token_when_auth_is_on() {
    let config = GatewayConfig {
        auth: Auth::token("s3cret-token"),
        ..GatewayConfig::default()
    };
    let s = serve(script(), config).await;
    let client = reqwest::Client::new();
    let r = client
        .post(format!("{}/agui", s.base))
        .header("content-type", "application/json")
        .body(input("a1", "hi").to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    assert!(r.headers().contains_key("www-authenticate"));
    assert!(!r.text().await.unwrap().contains("s3cret-token"));
    let r = client
        .post(format!("{}/agui", s.base))
        .header("content-type", "application/json")
        .header("authorization", "Bearer s3cret-token")
        .body(input("a1", "hi").to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
}

/// Starts a run that never finishes on thread `thread` and reads its SSE body until the agent's
/// first words; the body, and what was read of it.
async fn never_finishing(
    base: &str,
    thread: &str,
) -> (
    impl futures_util::Stream<Item = reqwest::Result<axum::body::Bytes>>,
    String,
) {
    let resp = reqwest::Client::new()
        .post(format!("{base}/agui"))
        .header("content-type", "application/json")
        .body(input(thread, "never finish").to_string())
        .send()
        .await
        .unwrap();
    let mut body = Box::pin(resp.bytes_stream());
    let mut seen = String::new();
    while !seen.contains("working on it") {
        let chunk = tokio::time::timeout(Duration::from_secs(10), body.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    (body, seen)
}

#[tokio::test]
async fn with_on_disconnect_cancel_a_client_that_goes_away_cancels_the_run() {
    let agent = script();
    let stats = agent.stats();
    let config = GatewayConfig {
        on_disconnect: e2a::types::OnDisconnect::Cancel,
        disconnect_grace: Duration::from_millis(100),
        ..GatewayConfig::default()
    };
    let s = serve(agent, config).await;
    let (body, _) = never_finishing(&s.base, "d1").await;
    drop(body);
    for _ in 0..200 {
        if stats.cancelled() == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(stats.cancelled(), 1, "the agent's run was stopped");
}

/// A graceful shutdown cuts a run still going at the drain deadline with `RUN_ERROR` saying
/// the gateway is shutting down (code `CANCELLED`), not "the client went away".
#[tokio::test]
async fn a_run_cut_off_by_a_shutdown_says_so() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let config = GatewayConfig {
        drain_timeout: Duration::from_millis(300),
        ..GatewayConfig::default()
    };
    let gateway = Gateway::with_agent(script(), config).with_agui();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(gateway.serve(listener, async move {
        let _ = stopped.await;
    }));
    let (mut body, mut seen) = never_finishing(&base, "s1").await;
    let _ = stop.send(());
    while let Some(chunk) = tokio::time::timeout(Duration::from_secs(10), body.next())
        .await
        .unwrap()
    {
        seen.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
    }
    let events = events_of(&seen);
    let last = events.last().unwrap();
    assert_eq!(last["type"], "RUN_ERROR", "{last}");
    assert_eq!(last["code"], "CANCELLED", "{last}");
    assert!(
        last["message"].as_str().unwrap_or("").contains("shutting down"),
        "{last}"
    );
    let _ = tokio::time::timeout(Duration::from_secs(5), served).await;
}

/// A resume the gateway refuses for want of a stream slot (`503`) leaves its interrupt pending:
/// the same answer later is honoured.
#[tokio::test]
async fn a_resume_refused_for_want_of_a_stream_slot_leaves_the_interrupt_pending() {
    let config = GatewayConfig {
        max_streams: 1,
        ..GatewayConfig::default()
    };
    let s = serve(script(), config).await;
    let first = input("t-full", "please deploy");
    let events = run(&s.base, "/agui", &first).await;
    let id = interrupt_ids(&events)[0].clone();
    let http = reqwest::Client::new();
    // the one slot taken by a run that goes on
    let hold = json!({"method": "chat.send", "request_id": "hold", "params": {"query": "never finish"}});
    let held = http
        .post(format!("{}/v1/e2a/runs", s.base))
        .header("content-type", "application/json")
        .body(hold.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(held.status(), 202);
    let answer = json!({"threadId": "t-full", "runId": format!("run-{}", uuid::Uuid::new_v4()),
        "messages": [], "resume": [{"interruptId": id, "status": "resolved", "payload": {"approved": true}}]});
    let refused = http
        .post(format!("{}/agui", s.base))
        .header("content-type", "application/json")
        .body(answer.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 503);
    let cancelled = http
        .post(format!("{}/v1/e2a/runs/hold:cancel", s.base))
        .send()
        .await
        .unwrap();
    assert_eq!(cancelled.status(), 200);
    // the slot comes back once the held run has ended (bounded)
    for _ in 0..100 {
        let resp = http
            .post(format!("{}/agui", s.base))
            .header("content-type", "application/json")
            .body(answer.to_string())
            .send()
            .await
            .unwrap();
        if resp.status() == 503 {
            tokio::time::sleep(Duration::from_millis(20)).await;
            continue;
        }
        assert_eq!(resp.status(), 200);
        let events = events_of(&resp.text().await.unwrap());
        assert_eq!(said(&events), "Deployed.");
        return;
    }
    panic!("the stream slot never came back");
}

/// A resume refused for the rest of its input — a `parentRunId` naming no run of the caller,
/// `messages` that are not an array — is refused before it takes its interrupts: the same
/// answer, corrected, is honoured.
#[tokio::test]
async fn a_resume_refused_for_the_rest_of_its_input_leaves_the_interrupt_pending() {
    let s = serve(script(), GatewayConfig::default()).await;
    let first = input("t-checked", "please deploy");
    let events = run(&s.base, "/agui", &first).await;
    let id = interrupt_ids(&events)[0].clone();
    let answer = json!({"threadId": "t-checked", "runId": format!("run-{}", uuid::Uuid::new_v4()),
        "messages": [], "resume": [{"interruptId": id, "status": "resolved", "payload": {"approved": true}}]});
    let post = |body: Value| post_agui(&s.base, body);
    let mut orphan = answer.clone();
    orphan["parentRunId"] = json!("no-such-run");
    let r = post(orphan).await.unwrap();
    assert_eq!(r.status(), 422);
    let p: Value = r.json().await.unwrap();
    assert_eq!(p["pointer"], "/parentRunId", "{p}");
    let mut malformed = answer.clone();
    malformed["messages"] = json!("not a list");
    let r = post(malformed).await.unwrap();
    assert_eq!(r.status(), 422);
    let p: Value = r.json().await.unwrap();
    assert_eq!(p["pointer"], "/messages", "{p}");
    // the answer, corrected, is the one the interrupt gets
    let mut branch = answer.clone();
    branch["parentRunId"] = first["runId"].clone();
    let events = run(&s.base, "/agui", &branch).await;
    assert_eq!(said(&events), "Deployed.");
}

/// A thread's runs, newest first, a page at a time, each naming the run it branched from: the
/// lineage `parentRunId` makes is kept and can be walked; another thread's and another
/// caller's runs are not listed.
#[tokio::test]
async fn a_threads_runs_are_listed_with_their_lineage() {
    threads_runs_are_listed(serve(script(), GatewayConfig::default()).await).await;
    // with a store that keeps runs, the list is the store's
    let store = Arc::new(e2a_gateway::store::SqliteStore::in_memory().expect("sqlite"));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let gateway = Gateway::with_agent(script(), GatewayConfig::default())
        .with_agui()
        .with_store(store);
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(gateway.serve(listener, async move {
        let _ = rx.await;
    }));
    threads_runs_are_listed(Server { base, _stop: tx }).await;
}

async fn threads_runs_are_listed(s: Server) {
    let root = input("t-tree", "hello");
    run(&s.base, "/agui", &root).await;
    let mut branch = input("t-tree", "hello again");
    branch["parentRunId"] = root["runId"].clone();
    run(&s.base, "/agui", &branch).await;
    let mut leaf = input("t-tree", "and again");
    leaf["parentRunId"] = branch["runId"].clone();
    run(&s.base, "/agui", &leaf).await;
    run(&s.base, "/agui", &input("t-elsewhere", "hello")).await;
    let get = |path: String| async move {
        let r = reqwest::get(path).await.unwrap();
        let status = r.status();
        (status, r.json::<Value>().await.unwrap())
    };
    let (status, first) = get(format!("{}/agui/threads/t-tree/runs?page_size=2", s.base)).await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["total_size"], 3, "{first}");
    let runs = first["runs"].as_array().unwrap();
    assert_eq!(runs[0]["run_id"], leaf["runId"], "{first}");
    assert_eq!(runs[0]["parent_run_id"], branch["runId"], "{first}");
    assert_eq!(runs[1]["run_id"], branch["runId"], "{first}");
    assert_eq!(runs[1]["parent_run_id"], root["runId"], "{first}");
    assert_eq!(runs[1]["state"], "succeeded", "{first}");
    let token = first["next_page_token"].as_str().expect("a next page");
    let (_, second) = get(format!(
        "{}/agents/default/agui/threads/t-tree/runs?page_size=2&page_token={token}",
        s.base
    ))
    .await;
    let runs = second["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1, "{second}");
    assert_eq!(runs[0]["run_id"], root["runId"], "{second}");
    assert_eq!(runs[0]["parent_run_id"], Value::Null, "{second}");
    assert_eq!(second["next_page_token"], Value::Null, "{second}");
    let (_, none) = get(format!("{}/agui/threads/t-nothing/runs", s.base)).await;
    assert_eq!(none["total_size"], 0, "{none}");
    let (status, p) = get(format!("{}/agui/threads/t-tree/runs?page_token=x", s.base)).await;
    assert_eq!(
        (status.as_u16(), &p["code"]),
        (400, &json!("E2A.INVALID_REQUEST")),
        "{p}"
    );
}

/// A pause asking two things at once is two interrupts of one `RUN_FINISHED`: a resume must
/// answer both (one alone is refused, and leaves both pending); the agent gets the answers, one
/// per line, and a denial of either of two approvals denies.
#[tokio::test]
async fn a_pause_asking_two_things_is_two_interrupts_answered_together() {
    let s = serve(script(), GatewayConfig::default()).await;
    let first = input("t-trip", "plan a trip");
    let events = run(&s.base, "/agui", &first).await;
    assert_eq!(said(&events), "Planning a trip.");
    let outcome = &events.last().unwrap()["outcome"];
    assert_eq!(outcome["type"], "interrupt", "{outcome}");
    let asked: Vec<(&Value, &Value)> = outcome["interrupts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| (&i["message"], &i["reason"]))
        .collect();
    assert_eq!(
        asked,
        [
            (&json!("How many travellers?"), &json!("input")),
            (&json!("Which city?"), &json!("input"))
        ]
    );
    let (a, b) = (interrupt_ids(&events)[0].clone(), interrupt_ids(&events)[1].clone());
    let post = |body: Value| post_agui(&s.base, body);
    let one = json!({"runId": first["runId"], "resume": [{"interruptId": a, "payload": "4"}]});
    let r = post(one).await.unwrap();
    assert_eq!(r.status(), 422);
    let p: Value = r.json().await.unwrap();
    assert_eq!(p["pointer"], "/resume", "{p}");
    // both, in any order (GoAI's body): the answers reach the agent in the entries' order
    let both = json!({"runId": first["runId"], "resume": [
        {"interruptId": a, "status": "resolved", "payload": "4"},
        {"interruptId": b, "status": "resolved", "payload": {"answer": "Lisbon"}}]});
    let events = run(&s.base, "/agui", &both).await;
    assert_eq!(said(&events), "A trip for 4\nLisbon.");
    let approvals = interrupt_ids(&events);
    assert_eq!(approvals.len(), 2, "{:?}", events.last());
    // one approval of two denied: the whole is denied
    let answer = json!({"runId": first["runId"], "resume": [
        {"interruptId": approvals[0], "payload": {"approved": true}},
        {"interruptId": approvals[1], "payload": {"approved": false}}]});
    let events = run(&s.base, "/agui", &answer).await;
    assert_eq!(said(&events), "Not booked.");
}
