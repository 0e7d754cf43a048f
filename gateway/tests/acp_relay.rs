//! The transparent ACP hop ([`e2a_gateway::bindings::acp::AcpRelay`], `e2a acp --agent acp:CMD`):
//! an editor (this test, over an in-memory pipe) and an ACP agent program
//! (`clients/data/mirror_acp_agent.py`, which answers with what reached it) see each other as if
//! nothing stood between them.

mod common;

use std::sync::Arc;
use std::time::Duration;

use e2a_gateway::backends::AcpProcessConfig;
use e2a_gateway::bindings::acp::AcpRelay;
use e2a_gateway::protocol::acp::{Incoming, Peer};
use parking_lot::Mutex;
use serde_json::{json, Value};

struct Editor {
    peer: Peer,
    /// Every notification received, in order.
    notes: Arc<Mutex<Vec<(String, Value)>>>,
    /// Every request received (method, params).
    asked: Arc<Mutex<Vec<(String, Value)>>>,
    /// Send `session/cancel` just before answering a permission request.
    cancel_first: Arc<std::sync::atomic::AtomicBool>,
    dir: tempfile::TempDir,
}

impl Editor {
    /// An editor talking to `e2a acp --agent acp:python3 mirror_acp_agent.py` (in process).
    fn start() -> Editor {
        let dir = tempfile::tempdir().unwrap();
        let agent = format!("{}/tests/clients/data/mirror_acp_agent.py", env!("CARGO_MANIFEST_DIR"));
        let mut config = AcpProcessConfig::new(vec!["python3".into(), agent]);
        config.env = vec!["MIRROR_LOG".into(), "MIRROR_STARTS".into()];
        // SAFETY: every test of this file sets the same two names to its own files before its
        // relay starts an agent; the agent reads them once, at its start
        unsafe {
            std::env::set_var("MIRROR_LOG", dir.path().join("log"));
            std::env::set_var("MIRROR_STARTS", dir.path().join("starts"));
        }
        let relay = AcpRelay::new(config).unwrap();
        let (editor_side, relay_in) = tokio::io::duplex(1 << 20);
        let (relay_out, editor_in) = tokio::io::duplex(1 << 20);
        tokio::spawn(relay.serve(relay_in, relay_out));
        let (peer, mut incoming) = Peer::start(editor_in, editor_side);
        let notes: Arc<Mutex<Vec<(String, Value)>>> = Arc::default();
        let asked: Arc<Mutex<Vec<(String, Value)>>> = Arc::default();
        let cancel_first: Arc<std::sync::atomic::AtomicBool> = Arc::default();
        let (n, a, answering, first) = (notes.clone(), asked.clone(), peer.clone(), cancel_first.clone());
        tokio::spawn(async move {
            while let Some(msg) = incoming.recv().await {
                match msg {
                    Incoming::Notification { method, params } => n.lock().push((method, params)),
                    Incoming::Request { id, method, params } => {
                        if method == "session/request_permission" && first.load(std::sync::atomic::Ordering::SeqCst) {
                            answering.notify("session/cancel", json!({"sessionId": params["sessionId"]}));
                        }
                        a.lock().push((method.clone(), params));
                        let result = match method.as_str() {
                            "session/request_permission" => {
                                json!({"outcome": {"outcome": "selected", "optionId": "yes"}})
                            }
                            "fs/read_text_file" => json!({"content": "from the editor"}),
                            _ => json!({}),
                        };
                        answering.respond(id, result);
                    }
                }
            }
        });
        Editor {
            peer,
            notes,
            asked,
            cancel_first,
            dir,
        }
    }

    async fn call(&self, method: &str, params: Value) -> Result<Value, e2a_gateway::protocol::acp::RpcError> {
        tokio::time::timeout(Duration::from_secs(20), self.peer.call(method, params))
            .await
            .expect("the relay answered in time")
    }

    /// The texts of the agent_message_chunk updates received so far (and forgets them).
    fn said(&self) -> String {
        let notes = std::mem::take(&mut *self.notes.lock());
        notes
            .iter()
            .filter(|(_, p)| p["update"]["sessionUpdate"] == "agent_message_chunk")
            .map(|(_, p)| p["update"]["content"]["text"].as_str().unwrap_or("").to_string())
            .collect()
    }

    fn agent_log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("log")).unwrap_or_default()
    }

    fn starts(&self) -> usize {
        std::fs::read_to_string(self.dir.path().join("starts"))
            .unwrap_or_default()
            .lines()
            .count()
    }

    async fn session(&self) -> String {
        let s = self
            .call("session/new", json!({"cwd": "/work", "mcpServers": []}))
            .await
            .unwrap();
        s["sessionId"].as_str().unwrap().to_string()
    }
}

fn prompt(sid: &str, text: &str) -> Value {
    json!({"sessionId": sid, "prompt": [{"type": "text", "text": text}]})
}

/// One test at a time: the agent's log files are named by the environment.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[tokio::test]
async fn the_editor_sees_the_agent_and_the_agent_sees_the_editor() {
    let _one = SERIAL.lock().await;
    let e = Editor::start();
    let init = e
        .call(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": true}, "terminal": true},
                   "clientInfo": {"name": "editor", "version": "9"}, "_meta": {"editor.example/x": 1}}),
        )
        .await
        .unwrap();
    // the agent's own initialize result, whole
    assert_eq!(
        init,
        json!({"protocolVersion": 1,
               "agentCapabilities": {"loadSession": true, "mcpCapabilities": {"http": true, "sse": true},
                                     "promptCapabilities": {"image": true}},
               "authMethods": [{"id": "mirror-key", "name": "Mirror key", "description": "a key"}],
               "agentInfo": {"name": "mirror", "title": "Mirror agent", "version": "1.2.3"},
               "_meta": {"mirror.example/flavour": "plain"}})
    );
    // the editor's cwd and MCP servers, and its modes
    let mcp = json!([{"name": "files", "command": "/usr/bin/mcp-files", "args": ["--root", "/work"], "env": []}]);
    let s = e
        .call("session/new", json!({"cwd": "/work/project", "mcpServers": mcp}))
        .await
        .unwrap();
    assert_eq!(s["modes"]["currentModeId"], "ask");
    let sid = s["sessionId"].as_str().unwrap().to_string();
    let log = e.agent_log();
    let new: Value = log
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|m| m["method"] == "session/new")
        .unwrap();
    assert_eq!(new["params"], json!({"cwd": "/work/project", "mcpServers": mcp}));
    let init_seen: Value = serde_json::from_str(log.lines().next().unwrap()).unwrap();
    assert_eq!(init_seen["params"]["clientCapabilities"]["terminal"], true);
    assert_eq!(init_seen["params"]["_meta"], json!({"editor.example/x": 1}));

    // an extension method, with its params as sent
    let params = json!({"sessionId": sid, "nested": {"list": [1, "two", null]}, "_meta": {"k": "v"}});
    let echoed = e.call("_mirror/echo", params.clone()).await.unwrap();
    assert_eq!(echoed, json!({"method": "_mirror/echo", "params": params}));

    // modes, and the notifications the agent sends on its own
    assert_eq!(
        e.call("session/set_mode", json!({"sessionId": sid, "modeId": "code"}))
            .await
            .unwrap(),
        json!({})
    );
    let kinds: Vec<String> = e
        .notes
        .lock()
        .iter()
        .map(|(_, p)| p["update"]["sessionUpdate"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(kinds, ["available_commands_update", "current_mode_update"]);
    e.notes.lock().clear();

    // the agent asks the editor: permission, then a file; the answers reach the agent
    let done = e.call("session/prompt", prompt(&sid, "ask")).await.unwrap();
    assert_eq!(done, json!({"stopReason": "end_turn"}));
    let asked: Vec<String> = e.asked.lock().iter().map(|(m, _)| m.clone()).collect();
    assert_eq!(asked, ["session/request_permission", "fs/read_text_file"]);
    assert_eq!(e.asked.lock()[1].1["path"], "/work/notes.txt");
    let said: Value = serde_json::from_str(&e.said()).unwrap();
    assert_eq!(
        said,
        json!([{"outcome": {"optionId": "yes", "outcome": "selected"}}, {"content": "from the editor"}])
    );

    // an agent error reaches the editor as the agent gave it
    let err = e.call("session/unknown_method", json!({})).await.unwrap_err();
    assert_eq!(
        (err.code, err.message.as_str()),
        (-32601, "Method not found: session/unknown_method")
    );
}

#[tokio::test]
async fn cancels_propagate_under_the_other_sides_ids() {
    let _one = SERIAL.lock().await;
    let e = Editor::start();
    e.call("initialize", json!({"protocolVersion": 1})).await.unwrap();
    let sid = e.session().await;
    // session/cancel
    let (_, turn) = e.peer.request("session/prompt", prompt(&sid, "slow"));
    let turn = tokio::spawn(turn);
    common::eventually("the agent said tick", || e.said() == "tick").await;
    e.peer.notify("session/cancel", json!({"sessionId": sid}));
    let done = tokio::time::timeout(Duration::from_secs(20), turn)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(done, json!({"stopReason": "cancelled"}));
    // $/cancel_request names the editor's id; the agent gets its own
    let (id, turn) = e.peer.request("session/prompt", prompt(&sid, "slow"));
    let turn = tokio::spawn(turn);
    common::eventually("the agent said tick", || e.said() == "tick").await;
    e.peer.notify("$/cancel_request", json!({"requestId": id}));
    let err = tokio::time::timeout(Duration::from_secs(20), turn)
        .await
        .unwrap()
        .unwrap()
        .unwrap_err();
    assert_eq!(err.code, -32800);
    let forwarded: Vec<Value> = e
        .agent_log()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|m| m["method"] == "$/cancel_request")
        .collect();
    let prompts: Vec<Value> = e
        .agent_log()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|m| m["method"] == "session/prompt")
        .collect();
    assert_eq!(forwarded.len(), 1);
    assert_eq!(forwarded[0]["params"]["requestId"], prompts[1]["id"]);
}

#[tokio::test]
async fn what_the_editor_sends_reaches_the_agent_in_the_order_sent() {
    let _one = SERIAL.lock().await;
    let e = Editor::start();
    e.call("initialize", json!({"protocolVersion": 1})).await.unwrap();
    let sid = e.session().await;
    e.cancel_first.store(true, std::sync::atomic::Ordering::SeqCst);
    for _ in 0..20 {
        e.call("session/prompt", prompt(&sid, "ask")).await.unwrap();
    }
    // every session/cancel came before the answer to the permission request it preceded
    let log: Vec<Value> = e
        .agent_log()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .collect();
    let order: Vec<&str> = log
        .iter()
        .filter_map(|m| match (m["method"].as_str(), &m["id"]) {
            (Some("session/cancel"), _) => Some("cancel"),
            (None, id) if id == "c1" => Some("answer"),
            _ => None,
        })
        .collect();
    assert_eq!(order, ["cancel", "answer"].repeat(20));
}

#[tokio::test]
async fn a_dying_agent_gives_an_error_and_the_next_request_starts_it_again() {
    let _one = SERIAL.lock().await;
    let e = Editor::start();
    e.call(
        "initialize",
        json!({"protocolVersion": 1, "clientInfo": {"name": "ed"}}),
    )
    .await
    .unwrap();
    let sid = e.session().await;
    let err = e.call("session/prompt", prompt(&sid, "crash")).await.unwrap_err();
    assert_eq!(err.code, -32603);
    assert!(err.message.contains("exited"), "{err:?}");
    assert_eq!(e.said(), "about to crash");
    // the next session starts a new agent, initialized with the editor's own params
    let sid = e.session().await;
    assert_eq!(e.starts(), 2);
    let inits: Vec<Value> = e
        .agent_log()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|m| m["method"] == "initialize")
        .collect();
    assert_eq!(inits.len(), 2);
    assert_eq!(inits[0]["params"], inits[1]["params"]);
    assert_eq!(
        e.call("session/prompt", prompt(&sid, "hello")).await.unwrap(),
        json!({"stopReason": "end_turn"})
    );
    assert_eq!(e.said(), "mirror: hello");
}

#[tokio::test]
async fn credentials_are_redacted_and_stray_output_is_never_answered() {
    let _one = SERIAL.lock().await;
    let e = Editor::start();
    e.call("initialize", json!({"protocolVersion": 1})).await.unwrap();
    let sid = e.session().await;
    e.call("session/prompt", prompt(&sid, "secret")).await.unwrap();
    assert_eq!(e.said(), "use Authorization: Bearer [REDACTED] please");
    e.call("session/prompt", prompt(&sid, "noise")).await.unwrap();
    assert_eq!(e.said(), "after noise");
    // the agent got no parse error for its stray line: nothing that is not a request,
    // a notification or an answer to its own request
    for line in e.agent_log().lines() {
        let m: Value = serde_json::from_str(line).unwrap();
        assert!(m.get("error").is_none(), "the agent was sent an error: {line}");
    }
}

#[tokio::test]
async fn an_editor_that_does_not_read_pauses_the_agent() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let _one = SERIAL.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let flooded = dir.path().join("flooded");
    let agent = format!("{}/tests/clients/data/mirror_acp_agent.py", env!("CARGO_MANIFEST_DIR"));
    let mut config = AcpProcessConfig::new(vec!["python3".into(), agent]);
    config.env = vec!["MIRROR_FLOODED".into()];
    // SAFETY: set before the relay starts its agent, which reads it; tests of this file run one
    // at a time
    unsafe { std::env::set_var("MIRROR_FLOODED", &flooded) };
    let (mut editor_out, relay_in) = tokio::io::duplex(1 << 16);
    let (relay_out, editor_in) = tokio::io::duplex(1 << 16);
    tokio::spawn(AcpRelay::new(config).unwrap().serve(relay_in, relay_out));
    let mut lines = tokio::io::BufReader::new(editor_in).lines();
    let mut send = async |m: Value| editor_out.write_all(format!("{m}\n").as_bytes()).await.unwrap();
    send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}})).await;
    send(json!({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": "/w", "mcpServers": []}})).await;
    let mut sid = String::new();
    while sid.is_empty() {
        let m: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
        if m["id"] == 2 {
            sid = m["result"]["sessionId"].as_str().unwrap().to_string();
        }
    }
    // 200,000 chunks (~30 MB of JSON) while the editor reads nothing: the agent is held back
    // once a few MiB wait for the editor, and stays so (its progress stops)
    let n = 200_000;
    send(json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": prompt(&sid, &format!("flood {n}"))}))
        .await;
    let held = common::progress_when_still(&flooded, n).await;
    assert!(
        held > 0 && held < n / 2,
        "the agent said {held} of {n} chunks although the editor read nothing"
    );
    // the editor reads: every chunk arrives, then the answer
    let mut chunks = 0;
    loop {
        let m: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
        if m["id"] == 3 {
            assert_eq!(m["result"]["stopReason"], "end_turn");
            break;
        }
        if m["params"]["update"]["sessionUpdate"] == "agent_message_chunk" {
            chunks += 1;
        }
    }
    assert_eq!(chunks, n);
    assert_eq!(common::progress(&flooded), n);
}
