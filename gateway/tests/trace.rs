//! Trace context across hops (`web::trace`): a `traceparent` or `X-Trace-ID` sent to one
//! gateway becomes the envelope's `correlation_id` on every HTTP binding (E2A, A2A JSON-RPC
//! and HTTP+JSON, AG-UI), is echoed as `X-Trace-ID`, comes back in the frames, and reaches the
//! agent behind the next hop: another gateway over A2A or E2A, and an ACP agent (`_meta`).

mod common;
use common::{spawn, Spawned};

use std::sync::Arc;

use e2a::E2AEnvelope;
use e2a_gateway::agent::FrameStream;
use e2a_gateway::backends::{
    A2aRemoteAgent, A2aRemoteConfig, AcpProcessAgent, AcpProcessConfig, E2aRemoteAgent, E2aRemoteConfig, EchoAgent,
};
use e2a_gateway::bindings::a2a::A2aConfig;
use e2a_gateway::store::MemoryStore;
use e2a_gateway::web::trace::trace_id_of;
use e2a_gateway::{Agent, Gateway, GatewayConfig, RequestContext};
use parking_lot::Mutex;
use serde_json::{json, Value};

const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// The `correlation_id`s an agent was given, in order.
type Seen = Arc<Mutex<Vec<Option<String>>>>;

/// An agent that remembers the `correlation_id` of every request, then echoes.
struct Recording {
    seen: Seen,
}

impl Agent for Recording {
    fn run(&self, request: E2AEnvelope, ctx: RequestContext) -> FrameStream {
        self.seen.lock().push(request.correlation_id.clone());
        EchoAgent::new().run(request, ctx)
    }
}

async fn serve(agent: Arc<dyn Agent>) -> Spawned {
    let gateway = Gateway::with_agent(agent, GatewayConfig::default())
        .with_a2a(A2aConfig::default(), Arc::new(MemoryStore::new()))
        .with_agui();
    spawn(gateway.router()).await
}

fn recording() -> (Arc<dyn Agent>, Seen) {
    let seen: Seen = Arc::default();
    (Arc::new(Recording { seen: seen.clone() }), seen)
}

/// POSTs an E2A request (the JSON answer: the final frame) with `headers`; returns the
/// `X-Trace-ID` echoed and the frame's `correlation_id`.
async fn e2a_post(base: &str, headers: &[(&str, &str)], body: Value) -> (Option<String>, Vec<Value>) {
    let mut req = reqwest::Client::new()
        .post(format!("{base}/v1/e2a/requests"))
        .header("Accept", "application/json")
        .json(&body);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = req.send().await.unwrap();
    assert!(resp.status().is_success(), "{}", resp.status());
    let echoed = resp
        .headers()
        .get("x-trace-id")
        .map(|v| v.to_str().unwrap().to_string());
    let frame: Value = resp.json().await.unwrap();
    assert_eq!(frame["is_final"], true, "{frame}");
    (echoed, vec![frame["correlation_id"].clone()])
}

fn hello() -> Value {
    json!({"method": "chat.send", "params": {"query": "hello"}})
}

#[tokio::test]
async fn a_trace_is_read_echoed_and_an_id_in_the_body_wins() {
    let (agent, seen) = recording();
    let s = serve(agent).await;
    let (echoed, ids) = e2a_post(&s.base, &[("traceparent", TRACEPARENT)], hello()).await;
    assert_eq!(echoed.as_deref(), Some(TRACE));
    assert!(!ids.is_empty() && ids.iter().all(|i| i == TRACE), "{ids:?}");
    let (echoed, _) = e2a_post(&s.base, &[("X-Trace-ID", "req-42")], hello()).await;
    assert_eq!(echoed.as_deref(), Some("req-42"));
    // an invalid traceparent is ignored, and a request that names no trace gets one made for
    // it: echoed, and the frames' correlation_id (what a multi-hop failure is tied by)
    let mut made = Vec::new();
    for headers in [&[("traceparent", "00-xyz-1-01")][..], &[]] {
        let (echoed, ids) = e2a_post(&s.base, headers, hello()).await;
        let echoed = echoed.expect("a trace id made for the request");
        assert!(
            trace_id_of(&format!("00-{echoed}-00f067aa0ba902b7-01")).is_some(),
            "{echoed}"
        );
        assert_eq!(ids, [Value::from(echoed.clone())]);
        made.push(echoed);
    }
    assert_ne!(made[0], made[1], "a new id each time");
    let mut mine = hello();
    mine["correlation_id"] = "from-the-body".into();
    e2a_post(&s.base, &[("traceparent", TRACEPARENT)], mine).await;
    assert_eq!(
        *seen.lock(),
        [
            Some(TRACE.into()),
            Some("req-42".into()),
            Some(made[0].clone()),
            Some(made[1].clone()),
            Some("from-the-body".into())
        ]
    );

    // A2A JSON-RPC, A2A HTTP+JSON and AG-UI read it too
    seen.lock().clear();
    let message = json!({"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}});
    let client = reqwest::Client::new();
    let rpc = client
        .post(format!("{}/a2a", s.base))
        .header("A2A-Version", "1.0")
        .header("X-Trace-ID", "via-jsonrpc")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": message}))
        .send()
        .await
        .unwrap();
    assert_eq!(rpc.headers()["x-trace-id"], "via-jsonrpc");
    let mut rest_message = message.clone();
    rest_message["message"]["messageId"] = "m2".into();
    let rest = client
        .post(format!("{}/message:send", s.base))
        .header("A2A-Version", "1.0")
        .header("X-Trace-ID", "via-rest")
        .json(&rest_message)
        .send()
        .await
        .unwrap();
    assert!(rest.status().is_success(), "{}", rest.status());
    let agui = client
        .post(format!("{}/agui", s.base))
        .header("X-Trace-ID", "via-agui")
        .json(
            &json!({"threadId": "t1", "runId": "r1", "messages": [{"id": "u1", "role": "user", "content": "hi"}],
                      "tools": [], "context": [], "state": {}, "forwardedProps": {}}),
        )
        .send()
        .await
        .unwrap();
    agui.text().await.unwrap();
    assert_eq!(
        *seen.lock(),
        [
            Some("via-jsonrpc".into()),
            Some("via-rest".into()),
            Some("via-agui".into())
        ]
    );
}

#[tokio::test]
async fn one_trace_id_follows_a_request_across_a2a_e2a_and_acp_hops() {
    let (agent, seen) = recording();
    let back = serve(agent).await;
    // over A2A
    let front = serve(Arc::new(A2aRemoteAgent::new(A2aRemoteConfig::new(&back.base)).unwrap())).await;
    let (echoed, ids) = e2a_post(&front.base, &[("traceparent", TRACEPARENT)], hello()).await;
    assert_eq!(echoed.as_deref(), Some(TRACE));
    assert!(ids.iter().all(|i| i == TRACE), "{ids:?}");
    assert_eq!(*seen.lock(), [Some(TRACE.to_string())]);
    // over E2A
    let front = serve(Arc::new(E2aRemoteAgent::new(E2aRemoteConfig::new(&back.base)).unwrap())).await;
    let (_, ids) = e2a_post(&front.base, &[("X-Trace-ID", "req-7")], hello()).await;
    assert!(ids.iter().all(|i| i == "req-7"), "{ids:?}");
    assert_eq!(seen.lock().last().cloned().flatten().as_deref(), Some("req-7"));
    // to an ACP agent: in the prompt's _meta
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let agent = format!("{}/tests/clients/data/mirror_acp_agent.py", env!("CARGO_MANIFEST_DIR"));
    let shell = format!("MIRROR_LOG='{}' exec python3 '{agent}'", log.display());
    let front = serve(Arc::new(
        AcpProcessAgent::new(AcpProcessConfig::new(vec!["sh".into(), "-c".into(), shell])).unwrap(),
    ))
    .await;
    e2a_post(&front.base, &[("traceparent", TRACEPARENT)], hello()).await;
    let prompt: Value = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|m| m["method"] == "session/prompt")
        .unwrap();
    let meta = &prompt["params"]["_meta"];
    assert_eq!(meta["x-trace-id"], TRACE);
    assert!(
        meta["traceparent"]
            .as_str()
            .unwrap()
            .starts_with(&format!("00-{TRACE}-")),
        "{meta}"
    );
}

/// A refusal names the request's trace id, in the header and in the body: problem+json's
/// `trace_id`, an A2A error's `ErrorInfo.metadata.traceId` (JSON-RPC and HTTP+JSON).
#[tokio::test]
async fn errors_name_the_trace_id() {
    let (agent, _) = recording();
    let s = serve(agent).await;
    let client = reqwest::Client::new();
    // E2A: a body that is not JSON
    let resp = client
        .post(format!("{}/v1/e2a/requests", s.base))
        .header("content-type", "application/json")
        .header("X-Trace-ID", "bad-body-1")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.headers()["x-trace-id"], "bad-body-1");
    let problem: Value = resp.json().await.unwrap();
    assert_eq!(problem["trace_id"], "bad-body-1", "{problem}");
    // none sent: the made one, in both
    let resp = client
        .post(format!("{}/v1/e2a/requests", s.base))
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    let made = resp.headers()["x-trace-id"].to_str().unwrap().to_string();
    let problem: Value = resp.json().await.unwrap();
    assert_eq!(problem["trace_id"], made.as_str(), "{problem}");
    // A2A JSON-RPC and HTTP+JSON: an unknown task
    let rpc: Value = client
        .post(format!("{}/a2a", s.base))
        .header("A2A-Version", "1.0")
        .header("X-Trace-ID", "no-task-rpc")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "nope"}}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(rpc["error"]["data"][0]["metadata"]["traceId"], "no-task-rpc", "{rpc}");
    let rest: Value = client
        .get(format!("{}/tasks/nope", s.base))
        .header("A2A-Version", "1.0")
        .header("X-Trace-ID", "no-task-rest")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        rest["error"]["details"][0]["metadata"]["traceId"], "no-task-rest",
        "{rest}"
    );
    // AG-UI: a RunAgentInput without its threadId
    let resp = client
        .post(format!("{}/agui", s.base))
        .header("content-type", "application/json")
        .header("X-Trace-ID", "agui-bad-input")
        .body(r#"{"runId": "r1", "messages": []}"#)
        .send()
        .await
        .unwrap();
    assert!(resp.status().is_client_error(), "{}", resp.status());
    assert_eq!(resp.headers()["x-trace-id"], "agui-bad-input");
    let problem: Value = resp.json().await.unwrap();
    assert_eq!(problem["trace_id"], "agui-bad-input", "{problem}");
}
