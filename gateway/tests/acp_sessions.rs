//! `e2a acp` in front of a non-ACP agent ([`e2a_gateway::bindings::acp::AcpServer`]) as a full
//! ACP server: operator-declared modes and config options (and the agent seeing them), close is
//! not delete, questions as `elicitation/create` for clients that fill forms, MCP servers passed
//! or refused with a note, input rules, and credentials redacted on the way out. Every message
//! is checked against the official ACP types (`agent-client-protocol-schema`).

use std::sync::Arc;
use std::time::Duration;

use agent_client_protocol_schema::v1 as acp;
use e2a::E2AEnvelope;
use e2a_gateway::agent::FrameStream;
use e2a_gateway::backends::ScriptAgent;
use e2a_gateway::bindings::acp::{AcpServer, AcpServerConfig, HistoryLimits, LIST_PAGE, SESSION_CONTEXT_KEY};
use e2a_gateway::protocol::acp::{Incoming, Peer, RpcError};
use e2a_gateway::store::{MemoryStore, SessionQuery, SessionRecord, SessionStore, SqliteStore};
use e2a_gateway::{Agent, RequestContext};
use parking_lot::Mutex;
use serde_json::{json, Value};

const SCRIPT: &str = r#"{"scenarios": [
  {"name": "booking", "match": {"text": "book a table"}, "steps": [
    {"type": "input_required", "prompt": "For how many people?"},
    {"type": "text", "text": "A table for {answer}."}, {"type": "complete"}]},
  {"name": "leak", "match": {"text": "leak"}, "steps": [
    {"type": "text", "text": "the key is sk-proj-0123456789abcdefXYZ and Bearer abcdefgh12345678"}, {"type": "complete"}]},
  {"name": "echo", "steps": [{"type": "text", "text": "You said: {input}"}, {"type": "complete"}]}
]}"#;

/// The script agent, remembering every envelope it was given.
struct Recording {
    inner: ScriptAgent,
    seen: Arc<Mutex<Vec<E2AEnvelope>>>,
}

impl Agent for Recording {
    fn run(&self, request: E2AEnvelope, ctx: RequestContext) -> FrameStream {
        self.seen.lock().push(request.clone());
        self.inner.run(request, ctx)
    }
}

struct Client {
    peer: Peer,
    updates: Arc<Mutex<Vec<Value>>>,
    asked: Arc<Mutex<Vec<(String, Value)>>>,
    seen: Arc<Mutex<Vec<E2AEnvelope>>>,
}

/// A client of `e2a acp --mode ask=Ask --mode code=Code --config-option model=fast,smart`;
/// it answers an elicitation with `form_answer` (`None`: declines).
fn start(form_answer: Option<&'static str>) -> Client {
    start_on(form_answer, Arc::new(MemoryStore::new()), AcpServerConfig::default())
}

/// Like [`start`], sessions kept in `store`, `base` giving the history limits.
fn start_on(
    form_answer: Option<&'static str>,
    store: impl Into<e2a_gateway::store::Stores>,
    base: AcpServerConfig,
) -> Client {
    let seen: Arc<Mutex<Vec<E2AEnvelope>>> = Arc::default();
    let agent = Recording {
        inner: ScriptAgent::from_json(SCRIPT).unwrap(),
        seen: seen.clone(),
    };
    let config = AcpServerConfig {
        modes: vec!["ask=Ask".parse().unwrap(), "code=Code".parse().unwrap()],
        config_options: vec!["model=fast,smart".parse().unwrap()],
        ..base
    };
    let (client_io, agent_io) = tokio::io::duplex(1 << 16);
    let (agent_read, agent_write) = tokio::io::split(agent_io);
    let server = AcpServer::with_store(Arc::new(agent), config, store).unwrap();
    tokio::spawn(server.serve(agent_read, agent_write));
    let (read, write) = tokio::io::split(client_io);
    let (peer, mut incoming) = Peer::start(read, write);
    let updates: Arc<Mutex<Vec<Value>>> = Arc::default();
    let asked: Arc<Mutex<Vec<(String, Value)>>> = Arc::default();
    let (u, a, answering) = (updates.clone(), asked.clone(), peer.clone());
    tokio::spawn(async move {
        while let Some(m) = incoming.recv().await {
            match m {
                Incoming::Notification { method, params } => {
                    assert_eq!(method, "session/update");
                    let typed: Result<acp::SessionNotification, _> = serde_json::from_value(params.clone());
                    assert!(typed.is_ok(), "not a valid session/update: {params}");
                    u.lock().push(params);
                }
                Incoming::Request { id, method, params } => {
                    a.lock().push((method.clone(), params));
                    let answer = match form_answer {
                        Some(text) => json!({"action": "accept", "content": {"answer": text}}),
                        None => json!({"action": "decline"}),
                    };
                    answering.respond(id, answer);
                }
            }
        }
    });
    Client {
        peer,
        updates,
        asked,
        seen,
    }
}

impl Client {
    async fn call(&self, method: &str, params: Value) -> Result<Value, RpcError> {
        tokio::time::timeout(Duration::from_secs(20), self.peer.call(method, params))
            .await
            .expect("answered in time")
    }

    async fn init(&self, capabilities: Value) {
        let r = self
            .call(
                "initialize",
                json!({"protocolVersion": 1, "clientCapabilities": capabilities}),
            )
            .await
            .unwrap();
        let r: acp::InitializeResponse = serde_json::from_value(r).unwrap();
        let caps = serde_json::to_value(&r.agent_capabilities).unwrap();
        assert!(caps["sessionCapabilities"]["delete"].is_object(), "{caps}");
    }

    async fn new_session(&self, mcp: Value) -> (String, Value) {
        let s = self
            .call("session/new", json!({"cwd": "/work", "mcpServers": mcp}))
            .await
            .unwrap();
        let _: acp::NewSessionResponse = serde_json::from_value(s.clone()).unwrap();
        (s["sessionId"].as_str().unwrap().to_string(), s)
    }

    async fn prompt(&self, sid: &str, text: &str) -> Result<Value, RpcError> {
        self.call(
            "session/prompt",
            json!({"sessionId": sid, "prompt": [{"type": "text", "text": text}]}),
        )
        .await
    }

    async fn load(&self, sid: &str) -> Result<Value, RpcError> {
        self.call(
            "session/load",
            json!({"sessionId": sid, "cwd": "/work", "mcpServers": []}),
        )
        .await
    }

    /// The text of the agent_message_chunks received so far (forgotten after).
    fn said(&self) -> String {
        std::mem::take(&mut *self.updates.lock())
            .iter()
            .filter(|u| u["update"]["sessionUpdate"] == "agent_message_chunk")
            .map(|u| u["update"]["content"]["text"].as_str().unwrap_or("").to_string())
            .collect()
    }

    fn last_session_state(&self) -> Value {
        self.seen.lock().last().unwrap().channel_context[SESSION_CONTEXT_KEY].clone()
    }
}

#[tokio::test]
async fn modes_and_config_options_are_offered_set_and_seen_by_the_agent() {
    let c = start(Some("4"));
    c.init(json!({})).await;
    let (sid, s) = c.new_session(json!([])).await;
    assert_eq!(
        s["modes"],
        json!({"currentModeId": "ask", "availableModes": [{"id": "ask", "name": "Ask"}, {"id": "code", "name": "Code"}]})
    );
    assert_eq!(s["configOptions"][0]["currentValue"], "fast");
    c.prompt(&sid, "hi").await.unwrap();
    assert_eq!(
        c.last_session_state(),
        json!({"cwd": "/work", "mcpServers": [], "modeId": "ask", "configOptions": {"model": "fast"}})
    );

    // set_mode: a current_mode_update, and the next turn runs in that mode
    assert_eq!(
        c.call("session/set_mode", json!({"sessionId": sid, "modeId": "code"}))
            .await
            .unwrap(),
        json!({})
    );
    assert!(c
        .updates
        .lock()
        .iter()
        .any(|u| u["update"] == json!({"sessionUpdate": "current_mode_update", "currentModeId": "code"})));
    let unknown = c
        .call("session/set_mode", json!({"sessionId": sid, "modeId": "yolo"}))
        .await
        .unwrap_err();
    assert_eq!(unknown.code, -32602);

    // set_config_option answers the whole set
    let r = c
        .call(
            "session/set_config_option",
            json!({"sessionId": sid, "configId": "model", "value": "smart"}),
        )
        .await
        .unwrap();
    let typed: acp::SetSessionConfigOptionResponse = serde_json::from_value(r.clone()).unwrap();
    assert_eq!(typed.config_options.len(), 1);
    assert_eq!(r["configOptions"][0]["currentValue"], "smart");
    for bad in [
        json!({"sessionId": sid, "configId": "model", "value": "huge"}),
        json!({"sessionId": sid, "configId": "colour", "value": "red"}),
        json!({"sessionId": sid, "configId": "model", "type": "boolean", "value": true}),
    ] {
        assert_eq!(c.call("session/set_config_option", bad).await.unwrap_err().code, -32602);
    }
    c.prompt(&sid, "again").await.unwrap();
    let state = c.last_session_state();
    assert_eq!(
        (&state["modeId"], &state["configOptions"]["model"]),
        (&json!("code"), &json!("smart"))
    );
}

#[tokio::test]
async fn close_is_not_delete() {
    let c = start(Some("4"));
    c.init(json!({})).await;
    let (sid, _) = c.new_session(json!([])).await;
    c.prompt(&sid, "remember me").await.unwrap();
    assert_eq!(
        c.call("session/close", json!({"sessionId": sid})).await.unwrap(),
        json!({})
    );
    // closed: still listed, prompts refused until it is loaded again
    let listed = c.call("session/list", json!({})).await.unwrap();
    assert_eq!(listed["sessions"][0]["sessionId"], sid.as_str());
    assert_eq!(c.prompt(&sid, "hello?").await.unwrap_err().code, -32002);
    c.said();
    let loaded = c.load(&sid).await.unwrap();
    let _: acp::LoadSessionResponse = serde_json::from_value(loaded.clone()).unwrap();
    assert_eq!(loaded["modes"]["currentModeId"], "ask");
    assert_eq!(c.said(), "You said: remember me");
    c.prompt(&sid, "back").await.unwrap();
    // deleted: gone from the list, not loadable
    assert_eq!(
        c.call("session/delete", json!({"sessionId": sid})).await.unwrap(),
        json!({})
    );
    let listed = c.call("session/list", json!({})).await.unwrap();
    assert_eq!(listed["sessions"], json!([]));
    let gone = c.load(&sid).await.unwrap_err();
    assert_eq!(gone.code, -32002);
    assert_eq!(
        c.call("session/delete", json!({"sessionId": sid}))
            .await
            .unwrap_err()
            .code,
        -32002
    );
}

#[tokio::test]
async fn a_question_is_a_form_for_clients_that_fill_forms() {
    let c = start(Some("4"));
    c.init(json!({"elicitation": {"form": {}}})).await;
    let (sid, _) = c.new_session(json!([])).await;
    let done = c.prompt(&sid, "book a table").await.unwrap();
    assert_eq!(done["stopReason"], "end_turn");
    let asked = c.asked.lock().clone();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].0, "elicitation/create");
    assert_eq!(asked[0].1["message"], "For how many people?");
    assert_eq!(asked[0].1["mode"], "form");
    assert_eq!(c.said(), "A table for 4.");

    // declined: the turn ends, cancelled
    let c = start(None);
    c.init(json!({"elicitation": {"form": {}}})).await;
    let (sid, _) = c.new_session(json!([])).await;
    let done = c.prompt(&sid, "book a table").await.unwrap();
    assert_eq!(done["stopReason"], "cancelled");
}

#[tokio::test]
async fn without_forms_the_question_is_shown_and_the_next_prompt_answers_it() {
    let c = start(Some("never asked"));
    c.init(json!({})).await;
    let (sid, _) = c.new_session(json!([])).await;
    let done = c.prompt(&sid, "book a table").await.unwrap();
    assert_eq!(done["stopReason"], "end_turn");
    assert_eq!(c.said(), "For how many people?");
    c.prompt(&sid, "2").await.unwrap();
    assert_eq!(c.said(), "A table for 2.");
    assert!(c.asked.lock().is_empty());
}

#[tokio::test]
async fn mcp_servers_reach_the_agent_or_are_refused_with_a_note() {
    let c = start(Some("4"));
    c.init(json!({})).await;
    let stdio = json!({"name": "files", "command": "/usr/bin/mcp-files", "args": [], "env": []});
    let http = json!({"type": "http", "name": "search", "url": "https://mcp.example/search", "headers": []});
    let (sid, _) = c.new_session(json!([stdio, http])).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    let note = c.said();
    assert!(note.contains("search (http)"), "{note}");
    c.prompt(&sid, "hi").await.unwrap();
    assert_eq!(c.last_session_state()["mcpServers"], json!([stdio]));
}

#[tokio::test]
async fn input_rules_and_redaction() {
    let c = start(Some("4"));
    c.init(json!({})).await;
    for bad in [
        json!({"cwd": "relative/dir", "mcpServers": []}),
        json!({"mcpServers": []}),
        json!({"cwd": "/work", "mcpServers": {"not": "a list"}}),
    ] {
        assert_eq!(c.call("session/new", bad).await.unwrap_err().code, -32602);
    }
    for method in ["session/load", "session/resume"] {
        let unknown = c
            .call(method, json!({"sessionId": "nope", "cwd": "/work", "mcpServers": []}))
            .await
            .unwrap_err();
        assert_eq!(unknown.code, -32002, "{method}");
    }
    assert_eq!(c.call("session/list", json!({})).await.unwrap()["sessions"], json!([]));
    let (sid, _) = c.new_session(json!([])).await;
    c.prompt(&sid, "leak").await.unwrap();
    assert_eq!(c.said(), "the key is [REDACTED] and Bearer [REDACTED]");
}

#[tokio::test]
async fn sessions_outlive_the_process_with_a_bounded_replay() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sessions.db");
    let limits = AcpServerConfig {
        history: HistoryLimits {
            messages: 4,
            text_bytes: 12,
        },
        ..AcpServerConfig::default()
    };
    let sid = {
        let c = start_on(Some("4"), Arc::new(SqliteStore::open(&file).unwrap()), limits.clone());
        c.init(json!({})).await;
        let (sid, _) = c.new_session(json!([])).await;
        c.call("session/set_mode", json!({"sessionId": sid, "modeId": "code"}))
            .await
            .unwrap();
        for text in ["one", "two", "a rather long third message"] {
            c.prompt(&sid, text).await.unwrap();
        }
        c.peer.close().await;
        sid
    };
    // another process on the same file: listed, loaded with its mode and the latest 4
    // messages, each cut to 12 bytes
    let c = start_on(Some("4"), Arc::new(SqliteStore::open(&file).unwrap()), limits);
    c.init(json!({})).await;
    let listed = c.call("session/list", json!({})).await.unwrap();
    assert_eq!(listed["sessions"][0]["sessionId"], sid.as_str());
    assert_eq!(c.prompt(&sid, "not loaded yet").await.unwrap_err().code, -32002);
    let loaded = c.load(&sid).await.unwrap();
    assert_eq!(loaded["modes"]["currentModeId"], "code");
    let replay: Vec<Value> = std::mem::take(&mut *c.updates.lock());
    let shown: Vec<String> = replay
        .iter()
        .map(|u| u["update"]["content"]["text"].as_str().unwrap_or("").to_string())
        .collect();
    // 12 bytes of text including the 3 of the ellipsis
    assert_eq!(shown, ["two", "You said:…", "a rather …", "You said:…"]);
    // and it goes on
    c.prompt(&sid, "four").await.unwrap();
    assert_eq!(c.said(), "You said: four");
    assert_eq!(c.last_session_state()["modeId"], "code");
}

#[tokio::test]
async fn a_key_in_a_prompt_is_neither_stored_nor_replayed() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sessions.db");
    let key = "sk-proj-0123456789abcdefXYZ0123456789";
    let sid = {
        let c = start_on(
            Some("4"),
            Arc::new(SqliteStore::open(&file).unwrap()),
            AcpServerConfig::default(),
        );
        c.init(json!({})).await;
        let (sid, _) = c.new_session(json!([])).await;
        c.prompt(&sid, &format!("my key is {key}, keep it")).await.unwrap();
        c.peer.close().await;
        sid
    };
    // the SQLite file (and its write-ahead log) does not hold the key
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        // (a -wal or -shm file may go as it is listed)
        let Ok(bytes) = std::fs::read(entry.unwrap().path()) else {
            continue;
        };
        assert!(
            !bytes.windows(key.len()).any(|w| w == key.as_bytes()),
            "the key is in the store's files"
        );
    }
    let c = start_on(
        Some("4"),
        Arc::new(SqliteStore::open(&file).unwrap()),
        AcpServerConfig::default(),
    );
    c.init(json!({})).await;
    c.load(&sid).await.unwrap();
    let replay = serde_json::to_string(&*c.updates.lock()).unwrap();
    assert!(!replay.contains(key), "{replay}");
    assert!(replay.contains("my key is [REDACTED]"), "{replay}");
}

#[tokio::test]
async fn session_list_is_paged() {
    let store = Arc::new(MemoryStore::new());
    for i in 0..(LIST_PAGE + 5) {
        let record = SessionRecord {
            id: format!("s{i:04}"),
            cwd: "/work".into(),
            state: json!({}),
            updated_ms: i as i64,
        };
        store.put_session(record).await.unwrap();
    }
    let c = start_on(Some("4"), store, AcpServerConfig::default());
    c.init(json!({})).await;
    let first = c.call("session/list", json!({})).await.unwrap();
    let first: acp::ListSessionsResponse = serde_json::from_value(first).unwrap();
    assert_eq!(first.sessions.len(), LIST_PAGE);
    let cursor = first.next_cursor.expect("a next page");
    let rest = c.call("session/list", json!({"cursor": cursor})).await.unwrap();
    assert_eq!(rest["sessions"].as_array().unwrap().len(), 5);
    assert!(rest.get("nextCursor").is_none());
    assert_eq!(rest["sessions"][4]["sessionId"], "s0000");
    let bad = c.call("session/list", json!({"cursor": "x"})).await.unwrap_err();
    assert_eq!(bad.code, -32602);
}

/// What every store that keeps sessions does.
async fn session_contract(store: &dyn SessionStore) {
    let s = |id: &str, cwd: &str, ms: i64| SessionRecord {
        id: id.into(),
        cwd: cwd.into(),
        state: json!({"modeId": "ask", "mcpServers": [{"name": "x"}]}),
        updated_ms: ms,
    };
    store.put_session(s("a", "/one", 1)).await.unwrap();
    store.put_session(s("b", "/two", 2)).await.unwrap();
    store.put_session(s("a", "/one", 3)).await.unwrap();
    assert_eq!(store.get_session("a").await.unwrap(), Some(s("a", "/one", 3)));
    assert_eq!(store.get_session("zz").await.unwrap(), None);
    let all = |cwd: Option<&str>| SessionQuery {
        cwd: cwd.map(str::to_string),
        offset: 0,
        limit: 10,
    };
    let page = store.list_sessions(all(None)).await.unwrap();
    let ids: Vec<&str> = page.sessions.iter().map(|s| s.id.as_str()).collect();
    assert_eq!((ids, page.more), (vec!["a", "b"], false));
    let page = store.list_sessions(all(Some("/two"))).await.unwrap();
    assert_eq!(page.sessions.len(), 1);
    let first = store
        .list_sessions(SessionQuery {
            cwd: None,
            offset: 0,
            limit: 1,
        })
        .await
        .unwrap();
    assert!(first.more);
    store
        .append_history("a", vec!["1".into(), "2".into()], 3)
        .await
        .unwrap();
    store
        .append_history("a", vec!["3".into(), "4".into()], 3)
        .await
        .unwrap();
    assert_eq!(store.history("a").await.unwrap(), ["2", "3", "4"]);
    assert!(store.history("b").await.unwrap().is_empty());
    assert!(store.delete_session("a").await.unwrap());
    assert!(!store.delete_session("a").await.unwrap());
    assert_eq!(store.get_session("a").await.unwrap(), None);
    assert!(store.history("a").await.unwrap().is_empty());
}

#[tokio::test]
async fn stores_keep_sessions_the_same_way() {
    session_contract(&MemoryStore::new()).await;
    session_contract(&SqliteStore::in_memory().unwrap()).await;
}

#[tokio::test]
async fn a_prompts_trace_names_the_turn() {
    let c = start(Some("4"));
    c.init(json!({})).await;
    let (sid, _) = c.new_session(json!([])).await;
    let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    c.call(
        "session/prompt",
        json!({"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}], "_meta": {"traceparent": traceparent}}),
    )
    .await
    .unwrap();
    let seen = c.seen.lock().last().unwrap().correlation_id.clone();
    assert_eq!(seen.as_deref(), Some("4bf92f3577b34da6a3ce929d0e0e4736"));
    c.prompt(&sid, "no trace").await.unwrap();
    assert_eq!(c.seen.lock().last().unwrap().correlation_id, None);
}

#[tokio::test]
async fn a_stored_mode_or_value_no_longer_declared_falls_back_to_the_default() {
    let store = Arc::new(MemoryStore::new());
    let record = SessionRecord {
        id: "old".into(),
        cwd: "/work".into(),
        state: json!({"mcpServers": [], "modeId": "gone", "configOptions": {"model": "huge"}, "closed": false}),
        updated_ms: 1,
    };
    store.put_session(record).await.unwrap();
    let c = start_on(Some("4"), store, AcpServerConfig::default());
    c.init(json!({})).await;
    let loaded = c.load("old").await.unwrap();
    assert_eq!(loaded["modes"]["currentModeId"], "ask");
    assert_eq!(loaded["configOptions"][0]["currentValue"], "fast");
}
