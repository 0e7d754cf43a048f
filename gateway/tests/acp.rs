//! `e2a acp`'s agent side ([`e2a_gateway::bindings::acp::AcpServer`]) driven in process over a pipe: what
//! is sent is checked against the official ACP types (`agent-client-protocol-schema`), and the
//! `e2a` binary is checked for a clean stdout.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agent_client_protocol_schema::v1 as acp;
use e2a_gateway::backends::{EchoAgent, ScriptAgent};
use e2a_gateway::bindings::acp::{AcpServer, AcpServerConfig};
use e2a_gateway::protocol::acp::{Incoming, NotificationHook, Peer, PeerOptions};
use e2a_gateway::Agent;
use serde_json::{json, Value};
use tokio::sync::mpsc;

const SCRIPT: &str = r#"{"scenarios": [
  {"name": "slow", "match": {"text": "count slowly"}, "steps": [
    {"type": "text", "text": "1 "}, {"type": "text", "text": "2 ", "delay_ms": 150},
    {"type": "text", "text": "3 ", "delay_ms": 150}, {"type": "complete", "delay_ms": 150}]},
  {"name": "forever", "match": {"text": "never finish"}, "steps": [
    {"type": "text", "text": "working on it"}, {"type": "sleep", "ms": 600000}, {"type": "complete"}]},
  {"name": "deploy", "match": {"text": "deploy"}, "steps": [
    {"type": "text", "text": "Ready."},
    {"type": "approval", "prompt": "Deploy to production?", "on_deny": [{"type": "text", "text": "Not deployed."}, {"type": "complete"}]},
    {"type": "text", "text": "Deployed."}, {"type": "complete"}]},
  {"name": "booking", "match": {"text": "book a table"}, "steps": [
    {"type": "input_required", "prompt": "For how many people?"},
    {"type": "text", "text": "A table for {answer}."}, {"type": "complete"}]},
  {"name": "fail", "match": {"text": "crash"}, "steps": [
    {"type": "text", "text": "starting"}, {"type": "fail", "message": "the model provider is down"}]},
  {"name": "refuse", "match": {"text": "forbidden"}, "steps": [{"type": "reject", "message": "I do not do that."}]},
  {"name": "echo", "steps": [{"type": "text", "text": "You said: {input}"}, {"type": "complete"}]}
]}"#;

/// A client over an in-process pipe: updates are collected in arrival order, permission
/// requests are answered by `answer`.
struct Client {
    peer: Peer,
    updates: Arc<Mutex<Vec<Value>>>,
    permissions: Arc<Mutex<Vec<Value>>>,
}

fn start(agent: Arc<dyn Agent>, answer: &'static str) -> Client {
    start_with(agent, answer, AcpServerConfig::default())
}

fn start_with(agent: Arc<dyn Agent>, answer: &'static str, config: AcpServerConfig) -> Client {
    let (client_io, agent_io) = tokio::io::duplex(1 << 16);
    let (agent_read, agent_write) = tokio::io::split(agent_io);
    tokio::spawn(AcpServer::new(agent, config).serve(agent_read, agent_write));
    let (read, write) = tokio::io::split(client_io);
    let updates: Arc<Mutex<Vec<Value>>> = Arc::default();
    let seen = updates.clone();
    let hook: NotificationHook = Arc::new(move |method: &str, params: &Value| {
        if method == "session/update" {
            let typed: Result<acp::SessionNotification, _> = serde_json::from_value(params.clone());
            assert!(
                typed.is_ok(),
                "not a valid session/update: {params} ({:?})",
                typed.err()
            );
            seen.lock().unwrap().push(params.clone());
        }
        true
    });
    let (peer, incoming) = Peer::start_with(read, write, PeerOptions::notification_hook(hook));
    let permissions: Arc<Mutex<Vec<Value>>> = Arc::default();
    tokio::spawn(answer_requests(peer.clone(), incoming, permissions.clone(), answer));
    Client {
        peer,
        updates,
        permissions,
    }
}

async fn answer_requests(
    peer: Peer,
    mut incoming: mpsc::UnboundedReceiver<Incoming>,
    log: Arc<Mutex<Vec<Value>>>,
    answer: &'static str,
) {
    while let Some(m) = incoming.recv().await {
        if let Incoming::Request { id, method, params } = m {
            assert_eq!(method, "session/request_permission");
            let typed: Result<acp::RequestPermissionRequest, _> = serde_json::from_value(params.clone());
            assert!(typed.is_ok(), "invalid permission request {params}");
            log.lock().unwrap().push(params);
            let outcome = match answer {
                "never" => continue,
                "allow" => json!({"outcome": {"outcome": "selected", "optionId": "allow"}}),
                _ => json!({"outcome": {"outcome": "selected", "optionId": "reject"}}),
            };
            peer.respond(id, outcome);
        }
    }
}

impl Client {
    async fn call(&self, method: &str, params: Value) -> Result<Value, e2a_gateway::protocol::acp::RpcError> {
        tokio::time::timeout(Duration::from_secs(20), self.peer.call(method, params))
            .await
            .expect("answered in time")
    }

    async fn init(&self) -> String {
        let r = self
            .call("initialize", json!({"protocolVersion": 1, "clientCapabilities": {}}))
            .await
            .unwrap();
        let _: acp::InitializeResponse = serde_json::from_value(r).unwrap();
        let s = self
            .call("session/new", json!({"cwd": "/tmp", "mcpServers": []}))
            .await
            .unwrap();
        let s: acp::NewSessionResponse = serde_json::from_value(s).unwrap();
        s.session_id.to_string()
    }

    async fn prompt(&self, sid: &str, text: &str) -> Result<Value, e2a_gateway::protocol::acp::RpcError> {
        let r = self
            .call(
                "session/prompt",
                json!({"sessionId": sid, "prompt": [{"type": "text", "text": text}]}),
            )
            .await;
        if let Ok(v) = &r {
            let _: acp::PromptResponse = serde_json::from_value(v.clone()).expect("a valid PromptResponse");
        }
        r
    }

    fn take(&self) -> Vec<Value> {
        std::mem::take(&mut *self.updates.lock().unwrap())
    }
}

fn kinds(updates: &[Value]) -> Vec<String> {
    updates
        .iter()
        .filter_map(|u| u["update"]["sessionUpdate"].as_str().map(str::to_string))
        .collect()
}

fn text(updates: &[Value]) -> String {
    updates
        .iter()
        .filter(|u| u["update"]["sessionUpdate"] == "agent_message_chunk")
        .filter_map(|u| u["update"]["content"]["text"].as_str())
        .collect()
}

fn script() -> Arc<ScriptAgent> {
    Arc::new(ScriptAgent::from_json(SCRIPT).unwrap())
}

#[tokio::test]
async fn initialize_negotiates_and_sessions_have_a_lifecycle() {
    let c = start(Arc::new(EchoAgent::new()), "allow");
    // a client asking for a newer version gets the latest this agent speaks
    let r = c
        .call("initialize", json!({"protocolVersion": 7, "clientCapabilities": {}}))
        .await
        .unwrap();
    let typed: acp::InitializeResponse = serde_json::from_value(r.clone()).unwrap();
    assert_eq!(r["protocolVersion"], 1);
    assert_eq!(r["authMethods"], json!([]));
    assert!(typed.agent_capabilities.load_session);
    assert_eq!(
        r["agentCapabilities"]["sessionCapabilities"],
        json!({"list": {}, "resume": {}, "close": {}, "delete": {}})
    );

    let err = c.call("authenticate", json!({"methodId": "nope"})).await.unwrap_err();
    assert_eq!(err.code, -32602);

    let s = c
        .call("session/new", json!({"cwd": "/w", "mcpServers": []}))
        .await
        .unwrap();
    let sid = s["sessionId"].as_str().unwrap().to_string();
    let other = c
        .call("session/new", json!({"cwd": "/x", "mcpServers": []}))
        .await
        .unwrap();
    let listed = c.call("session/list", json!({})).await.unwrap();
    let _: acp::ListSessionsResponse = serde_json::from_value(listed.clone()).unwrap();
    assert_eq!(listed["sessions"].as_array().unwrap().len(), 2);
    let only_w = c.call("session/list", json!({"cwd": "/w"})).await.unwrap();
    assert_eq!(only_w["sessions"][0]["sessionId"], sid.as_str());
    assert_eq!(only_w["sessions"].as_array().unwrap().len(), 1);

    // resuming a session this agent never made is refused: no phantom session appears
    let unknown = c
        .call("session/resume", json!({"sessionId": "elsewhere", "cwd": "/w"}))
        .await
        .unwrap_err();
    assert_eq!(unknown.code, -32002, "{unknown:?}");
    assert_eq!(
        c.call("session/resume", json!({"sessionId": sid, "cwd": "/w"}))
            .await
            .unwrap(),
        json!({"configOptions": []})
    );
    assert_eq!(
        c.call("session/close", json!({"sessionId": other["sessionId"]}))
            .await
            .unwrap(),
        json!({})
    );
    assert_eq!(
        c.call("session/close", json!({"sessionId": "nope"}))
            .await
            .unwrap_err()
            .code,
        -32002
    );
    assert_eq!(
        c.call(
            "session/load",
            json!({"sessionId": "nope", "cwd": "/w", "mcpServers": []})
        )
        .await
        .unwrap_err()
        .code,
        -32002
    );
    assert_eq!(
        c.call("session/prompt", json!({"sessionId": "nope", "prompt": []}))
            .await
            .unwrap_err()
            .code,
        -32002
    );
    assert_eq!(
        c.call("session/prompt", json!({"sessionId": sid, "prompt": "hi"}))
            .await
            .unwrap_err()
            .code,
        -32602
    );
    assert_eq!(
        c.call("session/set_mode", json!({"sessionId": sid, "modeId": "x"}))
            .await
            .unwrap_err()
            .code,
        -32601
    );
    assert_eq!(c.call("no/such", json!({})).await.unwrap_err().code, -32601);
    assert_eq!(c.call("session/new", json!([1])).await.unwrap_err().code, -32602);
    // ACP's cwd is an absolute path, and required
    for params in [
        json!({"cwd": "relative/dir", "mcpServers": []}),
        json!({"mcpServers": []}),
        json!({"cwd": 7}),
    ] {
        let e = c.call("session/new", params.clone()).await.unwrap_err();
        assert_eq!(e.code, -32602, "{params}");
        assert!(e.message.contains("cwd"), "{params}: {}", e.message);
    }
}

#[tokio::test]
async fn a_prompt_streams_every_update_kind_through_the_projector() {
    let c = start(Arc::new(EchoAgent::new()), "allow");
    let sid = c.init().await;
    let r = c.prompt(&sid, "hello there").await.unwrap();
    assert_eq!(r["stopReason"], "end_turn");
    let updates = c.take();
    let k = kinds(&updates);
    for want in [
        "agent_thought_chunk",
        "tool_call",
        "tool_call_update",
        "agent_message_chunk",
    ] {
        assert!(k.iter().any(|x| x == want), "{want} missing from {k:?}");
    }
    assert_eq!(text(&updates), "You said: hello there");
    assert!(updates.iter().all(|u| u["sessionId"] == sid.as_str()));

    // a second prompt in the same session, then the whole conversation replayed by session/load
    c.prompt(&sid, "again").await.unwrap();
    assert_eq!(text(&c.take()), "You said: again");
    let loaded = c
        .call(
            "session/load",
            json!({"sessionId": sid, "cwd": "/tmp", "mcpServers": []}),
        )
        .await
        .unwrap();
    // no modes declared: the session's (empty) config options
    assert_eq!(loaded, json!({"configOptions": []}));
    let replay = c.take();
    assert_eq!(
        replay
            .iter()
            .filter(|u| u["update"]["sessionUpdate"] == "user_message_chunk")
            .count(),
        2
    );
    assert_eq!(text(&replay), "You said: hello thereYou said: again");
}

#[tokio::test]
async fn updates_are_sent_as_frames_arrive_and_other_requests_are_answered_meanwhile() {
    let c = Arc::new(start(script(), "allow"));
    let sid = c.init().await;
    let started = Instant::now();
    let turn = {
        let (c, sid) = (c.clone(), sid.clone());
        tokio::spawn(async move { c.prompt(&sid, "count slowly").await })
    };
    // the first chunk is sent long before the turn ends
    while text(&c.updates.lock().unwrap()).is_empty() {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "no update while the turn runs"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let first = started.elapsed();
    // the connection keeps answering during the turn
    let listed = c.call("session/list", json!({})).await.unwrap();
    assert_eq!(listed["sessions"][0]["sessionId"], sid.as_str());
    assert!(!turn.is_finished());
    let r = turn.await.unwrap().unwrap();
    assert_eq!(r["stopReason"], "end_turn");
    assert!(started.elapsed() >= first + Duration::from_millis(300));
    assert_eq!(text(&c.take()), "1 2 3 ");
}

#[tokio::test]
async fn session_cancel_ends_the_turn_with_cancelled_and_stops_the_agent() {
    let agent = script();
    let stats = agent.stats();
    let c = Arc::new(start(agent, "allow"));
    let sid = c.init().await;
    let turn = {
        let (c, sid) = (c.clone(), sid.clone());
        tokio::spawn(async move { c.prompt(&sid, "never finish").await })
    };
    while text(&c.updates.lock().unwrap()).is_empty() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    c.peer.notify("session/cancel", json!({"sessionId": sid}));
    let r = turn.await.unwrap().unwrap();
    assert_eq!(r["stopReason"], "cancelled");
    for _ in 0..100 {
        if stats.cancelled() == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(stats.cancelled(), 1, "the agent's run was stopped");
    // the session takes the next prompt
    assert_eq!(c.prompt(&sid, "hi").await.unwrap()["stopReason"], "end_turn");
}

#[tokio::test]
async fn cancel_request_cancels_one_request() {
    let c = Arc::new(start(script(), "allow"));
    let sid = c.init().await;
    let (id, answer) = c.peer.request(
        "session/prompt",
        json!({"sessionId": sid, "prompt": [{"type": "text", "text": "never finish"}]}),
    );
    while text(&c.updates.lock().unwrap()).is_empty() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    c.peer.notify("$/cancel_request", json!({"requestId": id}));
    let err = tokio::time::timeout(Duration::from_secs(10), answer)
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(err.code, -32800);
}

#[tokio::test]
async fn an_approval_pause_is_a_permission_request_whose_answer_resumes_the_run() {
    for (answer, expected) in [("allow", "Ready.Deployed."), ("deny", "Ready.Not deployed.")] {
        let c = start(script(), answer);
        let sid = c.init().await;
        let r = c.prompt(&sid, "please deploy").await.unwrap();
        assert_eq!(r["stopReason"], "end_turn");
        assert_eq!(text(&c.take()), expected, "answer {answer}");
        let asked = c.permissions.lock().unwrap().clone();
        assert_eq!(asked.len(), 1);
        assert_eq!(asked[0]["toolCall"]["title"], "Deploy to production?");
        assert_eq!(asked[0]["sessionId"], sid.as_str());
    }
}

#[tokio::test]
async fn a_cancel_while_the_permission_is_pending_ends_the_turn_cancelled() {
    let c = Arc::new(start(script(), "never"));
    let sid = c.init().await;
    let turn = {
        let (c, sid) = (c.clone(), sid.clone());
        tokio::spawn(async move { c.prompt(&sid, "deploy").await })
    };
    while c.permissions.lock().unwrap().is_empty() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    c.peer.notify("session/cancel", json!({"sessionId": sid}));
    assert_eq!(turn.await.unwrap().unwrap()["stopReason"], "cancelled");
}

#[tokio::test]
async fn an_input_pause_shows_the_question_and_the_next_prompt_answers_it() {
    let c = start(script(), "allow");
    let sid = c.init().await;
    assert_eq!(c.prompt(&sid, "book a table").await.unwrap()["stopReason"], "end_turn");
    assert_eq!(text(&c.take()), "For how many people?");
    c.prompt(&sid, "4").await.unwrap();
    assert_eq!(text(&c.take()), "A table for 4.");
    // the task is over: the next prompt is a new one
    c.prompt(&sid, "hello").await.unwrap();
    assert_eq!(text(&c.take()), "You said: hello");
}

#[tokio::test]
async fn turns_of_one_session_run_one_at_a_time() {
    let c = Arc::new(start(script(), "allow"));
    let sid = c.init().await;
    let first = {
        let (c, sid) = (c.clone(), sid.clone());
        tokio::spawn(async move { c.prompt(&sid, "count slowly").await })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    let second = c.prompt(&sid, "hi").await.unwrap();
    assert_eq!(second["stopReason"], "end_turn");
    assert!(first.is_finished(), "the second turn waited for the first");
    assert_eq!(text(&c.take()), "1 2 3 You said: hi");
}

#[tokio::test]
async fn a_refusal_is_stop_reason_refusal_with_its_reason_shown() {
    let c = start(script(), "allow");
    let sid = c.init().await;
    let r = c
        .prompt(&sid, "forbidden thing")
        .await
        .expect("a refusal is no JSON-RPC error");
    assert_eq!(r["stopReason"], "refusal");
    assert_eq!(text(&c.take()), "I do not do that.");
}

#[tokio::test]
async fn an_agent_failure_is_a_jsonrpc_error() {
    let c = start(script(), "allow");
    let sid = c.init().await;
    let err = c.prompt(&sid, "crash").await.unwrap_err();
    assert!(err.message.contains("the model provider is down"), "{err}");
    assert_eq!(text(&c.take()), "starting");
}

#[tokio::test]
async fn malformed_input_gets_jsonrpc_errors() {
    let (client_io, agent_io) = tokio::io::duplex(1 << 16);
    let (agent_read, agent_write) = tokio::io::split(agent_io);
    let server = tokio::spawn(
        AcpServer::new(Arc::new(EchoAgent::new()), AcpServerConfig::default()).serve(agent_read, agent_write),
    );
    let (read, mut write) = tokio::io::split(client_io);
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    write
        .write_all(b"not json\n[1,2]\n{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"nope\"}\n")
        .await
        .unwrap();
    let mut lines = tokio::io::BufReader::new(read).lines();
    let mut got = Vec::new();
    for _ in 0..3 {
        let line = tokio::time::timeout(Duration::from_secs(5), lines.next_line())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        got.push(serde_json::from_str::<Value>(&line).unwrap());
    }
    assert_eq!(got[0]["error"]["code"], -32700);
    assert_eq!(got[0]["id"], Value::Null);
    assert_eq!(got[1]["error"]["code"], -32600);
    assert_eq!(got[2]["error"]["code"], -32601);
    assert_eq!(got[2]["id"], 5);
    // end of input (both halves of the pipe gone): the server returns
    drop(lines);
    drop(write);
    tokio::time::timeout(Duration::from_secs(5), server)
        .await
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn a_cancel_sent_right_after_the_prompt_is_not_lost() {
    let c = start(script(), "allow");
    let sid = c.init().await;
    for _ in 0..20 {
        let (_, turn) = c.peer.request(
            "session/prompt",
            json!({"sessionId": sid, "prompt": [{"type": "text", "text": "never finish"}]}),
        );
        c.peer.notify("session/cancel", json!({"sessionId": sid}));
        let r = tokio::time::timeout(Duration::from_secs(10), turn)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(r["stopReason"], "cancelled");
    }
    // a prompt after the cancel runs normally
    assert_eq!(c.prompt(&sid, "hi").await.unwrap()["stopReason"], "end_turn");
}

#[tokio::test]
async fn a_bad_request_is_refused_naming_its_field() {
    let c = start(Arc::new(EchoAgent::new()), "allow");
    // what clients really send as the version (acplint: "1"), or a version this agent does not
    // speak: answered with its own
    for asked in [json!("1"), json!(99), json!("v2"), Value::Null] {
        let r = c
            .call(
                "initialize",
                json!({"protocolVersion": asked, "clientCapabilities": {}}),
            )
            .await
            .unwrap();
        assert_eq!(r["protocolVersion"], 1, "asked {asked}");
    }
    let sid = c.init().await;
    let cases = [
        ("session/new", json!({"cwd": 7, "mcpServers": []}), "/cwd"),
        ("session/new", json!({"cwd": "relative", "mcpServers": []}), "/cwd"),
        (
            "session/new",
            json!({"cwd": "/w", "mcpServers": [{"name": "x", "command": "y", "args": "not a list", "env": []}]}),
            "/mcpServers/0",
        ),
        ("session/prompt", json!({"sessionId": sid, "prompt": "hi"}), "/prompt"),
        (
            "session/prompt",
            json!({"sessionId": sid, "prompt": [{"type": "text"}]}),
            "/prompt/0",
        ),
        (
            "session/set_config_option",
            json!({"sessionId": sid, "configId": 5, "value": "x"}),
            "/configId",
        ),
    ];
    for (method, params, pointer) in cases {
        let e = c.call(method, params.clone()).await.unwrap_err();
        assert_eq!(e.code, -32602, "{method} {params}");
        let at = e.data.as_ref().and_then(|d| d["pointer"].as_str()).unwrap_or_default();
        assert!(
            at.starts_with(pointer),
            "{method} {params}: pointer {at:?}, not under {pointer}"
        );
        assert!(e.message.contains(pointer), "{method} {params}: {}", e.message);
    }
    // the session is still usable
    assert_eq!(c.prompt(&sid, "still here").await.unwrap()["stopReason"], "end_turn");
}

#[tokio::test]
async fn a_turn_runs_through_the_pipeline_its_permits_and_its_frame_log() {
    // no stream permit: the turn is refused as the other bindings refuse a run
    let mut busy = AcpServerConfig::default();
    busy.gateway.max_streams = 0;
    let c = start_with(Arc::new(EchoAgent::new()), "allow", busy);
    let sid = c.init().await;
    let e = c.prompt(&sid, "hello").await.unwrap_err();
    assert!(e.message.contains("too many open streams"), "{e:?}");
    assert!(e.data.as_ref().is_some_and(|d| d["retryAfterSecs"].is_u64()), "{e:?}");

    // the frame log gets every frame of the turn
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("frames.jsonl");
    let mut logged = AcpServerConfig::default();
    logged.gateway.frame_log = Some(
        e2a_gateway::frame_log::FrameLog::open(&e2a_gateway::frame_log::FrameLogConfig {
            path: path.clone(),
            max_bytes: 1 << 20,
            keep: 1,
            max_line_bytes: 16 * 1024,
        })
        .unwrap(),
    );
    let c = start_with(Arc::new(EchoAgent::new()), "allow", logged);
    let sid = c.init().await;
    assert_eq!(c.prompt(&sid, "log me").await.unwrap()["stopReason"], "end_turn");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let frames: Vec<Value> = text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
        if frames.iter().any(|f| f["is_final"] == true) {
            assert!(text.contains("log me"), "{text}");
            assert!(frames.iter().all(|f| f["session_id"] == sid.as_str()), "{text}");
            break;
        }
        assert!(Instant::now() < deadline, "no final frame logged: {text}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
