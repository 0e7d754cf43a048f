//! ACP in front of remote agents, all in process on 127.0.0.1: an ACP client → `AcpServer` →
//! `e2a:URL` (`E2aRemoteAgent`) or `a2a:URL` (`A2aRemoteAgent`) → a second gateway with a script
//! agent. The text arrives intact across the hops — a direct reply, artifacts and a final
//! content never streamed as text too — and a cancel at the front stops the run at the back
//! (observed through the back's script agent).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use e2a_gateway::backends::{A2aRemoteAgent, A2aRemoteConfig};
use e2a_gateway::backends::{E2aRemoteAgent, E2aRemoteConfig, ScriptAgent, ScriptStats};
use e2a_gateway::bindings::a2a::A2aConfig;
use e2a_gateway::bindings::acp::{AcpServer, AcpServerConfig};
use e2a_gateway::protocol::acp::{NotificationHook, Peer, PeerOptions};
use e2a_gateway::store::MemoryStore;
use e2a_gateway::{Agent, Gateway, GatewayConfig};
use serde_json::{json, Value};

/// The scenarios of the back agent (weather with a tool call, a run that never ends, a direct
/// reply, a report of artifacts with its summary only in the final frame, echo).
const SCRIPT: &str = include_str!("data/bridge-script.json");

/// The back: a gateway (E2A, and A2A when asked) with a script agent; returns its base URL.
async fn back(a2a: bool) -> (String, Arc<ScriptStats>, tokio::sync::oneshot::Sender<()>) {
    let agent = ScriptAgent::from_json(SCRIPT).unwrap();
    let stats = agent.stats();
    let config = GatewayConfig {
        disconnect_grace: Duration::from_millis(50),
        ..GatewayConfig::default()
    };
    let mut gateway = Gateway::new(agent, config);
    if a2a {
        gateway = gateway.with_a2a(A2aConfig::default(), Arc::new(MemoryStore::new()));
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(gateway.serve(listener, async move {
        let _ = rx.await;
    }));
    (base, stats, tx)
}

struct Front {
    peer: Peer,
    updates: Arc<Mutex<Vec<Value>>>,
}

fn front(agent: Arc<dyn Agent>) -> Front {
    let (client_io, agent_io) = tokio::io::duplex(1 << 16);
    let (r, w) = tokio::io::split(agent_io);
    tokio::spawn(AcpServer::new(agent, AcpServerConfig::default()).serve(r, w));
    let (r, w) = tokio::io::split(client_io);
    let updates: Arc<Mutex<Vec<Value>>> = Arc::default();
    let seen = updates.clone();
    let hook: NotificationHook = Arc::new(move |_m: &str, p: &Value| {
        seen.lock().unwrap().push(p["update"].clone());
        true
    });
    let (peer, _incoming) = Peer::start_with(r, w, PeerOptions::notification_hook(hook));
    Front { peer, updates }
}

impl Front {
    async fn call(&self, method: &str, params: Value) -> Value {
        tokio::time::timeout(Duration::from_secs(20), self.peer.call(method, params))
            .await
            .expect("answered in time")
            .expect("a result")
    }

    fn said(&self) -> String {
        std::mem::take(&mut *self.updates.lock().unwrap())
            .iter()
            .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
            .filter_map(|u| u["content"]["text"].as_str().map(str::to_string))
            .collect()
    }
}

async fn check(agent: Arc<dyn Agent>, stats: Arc<ScriptStats>, tool_calls: bool) {
    let f = front(agent);
    f.call("initialize", json!({"protocolVersion": 1})).await;
    let sid = f.call("session/new", json!({"cwd": "/tmp", "mcpServers": []})).await["sessionId"].clone();
    let prompt = |text: &str| json!({"sessionId": sid, "prompt": [{"type": "text", "text": text}]});
    let r = f.call("session/prompt", prompt("what is the weather?")).await;
    assert_eq!(r["stopReason"], "end_turn");
    let updates = f.updates.lock().unwrap().clone();
    assert_eq!(f.said(), "It is 21 °C in Paris.");
    assert!(updates.iter().any(|u| u["sessionUpdate"] == "agent_thought_chunk"));
    if tool_calls {
        assert!(updates
            .iter()
            .any(|u| u["sessionUpdate"] == "tool_call" && u["toolCallId"] == "call-1"));
    }
    f.call("session/prompt", prompt("hello")).await;
    assert_eq!(f.said(), "You said: hello");

    // what ACP has no slot for reaches the editor as text: a direct reply, artifacts (by name),
    // and a final content never streamed
    let r = f.call("session/prompt", prompt("reply please")).await;
    assert_eq!(r["stopReason"], "end_turn");
    assert_eq!(f.said(), "Hi! This is a message, not a task.");
    f.call("session/prompt", prompt("report please")).await;
    let said = f.said();
    for shown in [
        "[notes.md]\n# Notes\nAll good.",
        "big.csv <https://example.invalid/big.csv>",
        "report ready",
    ] {
        assert!(said.contains(shown), "{shown:?} not in {said:?}");
    }

    // a cancel at the front stops the run at the back
    let before = stats.cancelled();
    let (_, turn) = f.peer.request("session/prompt", prompt("never finish"));
    while f.updates.lock().unwrap().is_empty() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    f.peer.notify("session/cancel", json!({"sessionId": sid}));
    let r = tokio::time::timeout(Duration::from_secs(10), turn)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(r["stopReason"], "cancelled");
    for _ in 0..300 {
        if stats.cancelled() > before {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(stats.cancelled(), before + 1, "the run at the back was stopped");
}

#[tokio::test]
async fn acp_in_front_of_e2a_over_http() {
    let (base, stats, _stop) = back(false).await;
    let remote = E2aRemoteAgent::new(E2aRemoteConfig::new(base)).unwrap();
    check(Arc::new(remote), stats, true).await;
}

#[tokio::test]
async fn acp_in_front_of_a2a() {
    let (base, stats, _stop) = back(true).await;
    let remote = A2aRemoteAgent::new(A2aRemoteConfig::new(base)).unwrap();
    // the A2A hop carries no tool calls (yet)
    check(Arc::new(remote), stats, false).await;
}
