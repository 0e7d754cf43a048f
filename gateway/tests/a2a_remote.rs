//! A remote A2A agent as the backend (`--agent a2a:URL`): a gateway in front of a second
//! gateway carries text, artifacts and pauses, and gives the same frames as the agent run
//! directly (tool calls, their results, an approval pause and its answer); a plain A2A agent's
//! messages read as reasoning and input pauses; the credential goes to its origin only; a card
//! whose interface is on another origin, or a redirect, is refused; a cancel reaches the remote.

mod common;
use common::{spawn, Spawned};

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::{any, get};
use e2a::{E2AEnvelope, E2AResponse, ResponseKind};
use e2a_gateway::backends::ScriptAgent;
use e2a_gateway::backends::{A2aRemoteAgent, A2aRemoteConfig};
use e2a_gateway::bindings::a2a::A2aConfig;
use e2a_gateway::store::MemoryStore;
use e2a_gateway::{Agent, Auth, Caller, Gateway, GatewayConfig, RequestContext};
use futures_util::StreamExt;
use serde_json::{json, Map, Value};

const SCRIPT: &str = include_str!("a2a_clients/script.json");
/// The scenarios the official ACP client runs (reasoning, a tool call and its result, an approval).
const ACP_SCRIPT: &str = include_str!("clients/data/acp-script.json");

async fn gateway(agent: Arc<dyn Agent>, auth: Auth) -> Spawned {
    let config = GatewayConfig {
        auth,
        ..GatewayConfig::default()
    };
    let g = Gateway::with_agent(agent, config).with_a2a(A2aConfig::default(), Arc::new(MemoryStore::new()));
    spawn(g.router()).await
}

async fn script_gateway(auth: Auth) -> Spawned {
    gateway(Arc::new(ScriptAgent::from_json(SCRIPT).expect("script")), auth).await
}

fn remote(url: &str, token: Option<&str>) -> Arc<dyn Agent> {
    let mut config = A2aRemoteConfig::new(url);
    if let Some(t) = token {
        config = config.with_token(url, t.into());
    }
    Arc::new(A2aRemoteAgent::new(config).expect("remote"))
}

async fn rpc(base: &str, method: &str, params: Value, token: Option<&str>) -> Value {
    let mut req = reqwest::Client::new()
        .post(format!("{base}/a2a"))
        .timeout(Duration::from_secs(20))
        .header("content-type", "application/json")
        .header("A2A-Version", "1.0")
        .body(json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string());
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let text = req.send().await.expect("send").text().await.expect("body");
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

fn msg(text: &str) -> Value {
    json!({"message": {"messageId": uuid::Uuid::new_v4().to_string(), "role": "ROLE_USER", "parts": [{"text": text}]}})
}

#[tokio::test]
async fn a_gateway_in_front_of_a_gateway_carries_text_artifacts_and_pauses() {
    let back = script_gateway(Auth::token("back-secret")).await;
    let front = gateway(remote(&back.base, Some("back-secret")), Auth::none()).await;
    let v = rpc(&front.base, "SendMessage", msg("artifacts please"), None).await;
    let task = &v["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{v}");
    assert_eq!(
        task["status"]["message"]["parts"][0]["text"],
        "Here are your artifacts."
    );
    let arts: Vec<&Value> = task["artifacts"].as_array().expect("artifacts").iter().collect();
    let by_id = |id: &str| {
        arts.iter()
            .find(|a| a["artifactId"] == id)
            .copied()
            .cloned()
            .unwrap_or(Value::Null)
    };
    assert_eq!(by_id("notes")["parts"], json!([{"text": "alpha beta gamma delta"}]));
    assert_eq!(by_id("blob")["parts"][0]["raw"], "aGVsbG8gd29ybGQh");
    assert_eq!(by_id("link")["parts"][0]["url"], "https://example.com/report.pdf");
    assert_eq!(
        by_id("rows")["parts"],
        json!([{"data": [{"n": 1}, {"n": 2}]}, {"data": [{"n": 3}]}])
    );

    let paused = rpc(&front.base, "SendMessage", msg("book a table"), None).await;
    let t = &paused["result"]["task"];
    assert_eq!(t["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{paused}");
    let mut answer = msg("3");
    answer["message"]["taskId"] = t["id"].clone();
    let done = rpc(&front.base, "SendMessage", answer, None).await;
    assert_eq!(
        done["result"]["task"]["status"]["message"]["parts"][0]["text"], "Booked for 3.",
        "{done}"
    );

    // without the credential the remote refuses, and the front reports it
    let front_without = gateway(remote(&back.base, None), Auth::none()).await;
    let v = rpc(&front_without.base, "SendMessage", msg("hello"), None).await;
    assert_eq!(
        v["result"]["task"]["status"]["state"], "TASK_STATE_AUTH_REQUIRED",
        "{v}"
    );
}

/// The front keeps the remote task of a local one in its store: an answer to a pause sent to
/// a restarted front (same SQLite file, a new agent) reaches the same remote task.
#[tokio::test]
async fn an_answer_after_the_front_restarts_reaches_the_same_remote_task() {
    let back = script_gateway(Auth::none()).await;
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("front.db");
    let front = |path: std::path::PathBuf| {
        let remote = remote(&back.base, None);
        async move {
            let store = Arc::new(e2a_gateway::store::SqliteStore::open(&path).expect("open"));
            let g = Gateway::with_agent(remote, GatewayConfig::default()).with_a2a(A2aConfig::default(), store);
            spawn(g.router()).await
        }
    };
    let id = {
        let f = front(path.clone()).await;
        let paused = rpc(&f.base, "SendMessage", msg("book a table"), None).await;
        let t = &paused["result"]["task"];
        assert_eq!(t["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{paused}");
        t["id"].as_str().expect("id").to_string()
    };
    let f = front(path).await;
    let mut answer = msg("3");
    answer["message"]["taskId"] = id.into();
    let done = rpc(&f.base, "SendMessage", answer, None).await;
    assert_eq!(
        done["result"]["task"]["status"]["message"]["parts"][0]["text"], "Booked for 3.",
        "{done}"
    );
}

#[tokio::test]
async fn a_cancel_reaches_the_remote_task() {
    // over JSON-RPC, and over HTTP+JSON (`tasks/{id}:cancel`) to an agent that lists only it
    for over_rest in [false, true] {
        cancel_reaches_the_remote_task(over_rest).await;
    }
}

async fn cancel_reaches_the_remote_task(over_rest: bool) {
    let back = script_gateway(Auth::none()).await;
    let rest = rest_only(back.base.clone(), "1.0").await;
    let url = if over_rest { &rest.base } else { &back.base };
    let front = gateway(remote(url, None), Auth::none()).await;
    let mut p = msg("never finish");
    p["configuration"] = json!({"returnImmediately": true});
    let v = rpc(&front.base, "SendMessage", p, None).await;
    let id = v["result"]["task"]["id"].as_str().expect("id").to_string();
    // wait until the remote task exists
    let mut remote_tasks = Value::Null;
    for _ in 0..50 {
        remote_tasks = rpc(&back.base, "ListTasks", json!({}), None).await;
        if remote_tasks["result"]["totalSize"] == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(remote_tasks["result"]["totalSize"], 1, "{remote_tasks}");
    let remote_id = remote_tasks["result"]["tasks"][0]["id"]
        .as_str()
        .expect("id")
        .to_string();
    let canceled = rpc(&front.base, "CancelTask", json!({"id": id}), None).await;
    assert_eq!(
        canceled["result"]["status"]["state"], "TASK_STATE_CANCELED",
        "{canceled}"
    );
    let mut state = Value::Null;
    for _ in 0..50 {
        let t = rpc(&back.base, "GetTask", json!({"id": remote_id}), None).await;
        state = t["result"]["status"]["state"].clone();
        if state == "TASK_STATE_CANCELED" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(state, "TASK_STATE_CANCELED");
}

type Seen = Arc<Mutex<Vec<(String, Option<String>)>>>;

/// A server that records every request (path, Authorization) and answers 404.
async fn recorder() -> (Spawned, Seen) {
    let seen: Seen = Arc::default();
    let s = seen.clone();
    let router = axum::Router::new().fallback(any(move |uri: axum::http::Uri, headers: HeaderMap| {
        let s = s.clone();
        async move {
            let auth = headers
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .map(String::from);
            if let Ok(mut v) = s.lock() {
                v.push((uri.path().to_string(), auth));
            }
            StatusCode::NOT_FOUND
        }
    }));
    (spawn(router).await, seen)
}

#[tokio::test]
async fn another_origin_and_redirects_are_refused_and_get_no_credential() {
    let (elsewhere, seen) = recorder().await;
    // a card whose JSON-RPC interface is on another origin
    let target = format!("{}/a2a", elsewhere.base);
    let card = json!({"name": "x", "description": "x", "version": "1", "capabilities": {"streaming": true},
        "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"], "skills": [],
        "supportedInterfaces": [{"url": target, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}]});
    let card_server = spawn(axum::Router::new().route(
        "/.well-known/agent-card.json",
        get(move || {
            let card = card.clone();
            async move { ([("content-type", "application/json")], card.to_string()).into_response() }
        }),
    ))
    .await;
    let front = gateway(
        remote(&card_server.base, Some("only-for-the-card-origin")),
        Auth::none(),
    )
    .await;
    let v = rpc(&front.base, "SendMessage", msg("hello"), None).await;
    let status = &v["result"]["task"]["status"];
    assert_eq!(status["state"], "TASK_STATE_FAILED", "{v}");
    assert!(status["message"]["parts"][0]["text"]
        .as_str()
        .is_some_and(|t| t.contains("another origin")));

    // a card URL that redirects elsewhere is not followed
    let location = format!("{}/.well-known/agent-card.json", elsewhere.base);
    let redirecting = spawn(axum::Router::new().route(
        "/.well-known/agent-card.json",
        get(move || {
            let location = location.clone();
            async move { (StatusCode::FOUND, [("location", location)]).into_response() }
        }),
    ))
    .await;
    let front = gateway(remote(&redirecting.base, Some("redirect-secret")), Auth::none()).await;
    let v = rpc(&front.base, "SendMessage", msg("hello"), None).await;
    assert_eq!(v["result"]["task"]["status"]["state"], "TASK_STATE_FAILED", "{v}");
    assert!(
        !v.to_string().contains("redirect-secret") && !v.to_string().contains("only-for-the-card-origin"),
        "a credential leaked into a response"
    );
    let seen = seen.lock().map(|v| v.clone()).unwrap_or_default();
    assert!(seen.is_empty(), "the other origin was contacted: {seen:?}");
    let debug = format!(
        "{:?}",
        A2aRemoteConfig::new("http://a").with_token("http://a", "hidden-value".into())
    );
    assert!(!debug.contains("hidden-value"));
}

/// One run of `agent`: every frame, in order.
async fn run_frames(agent: &dyn Agent, task_id: &str, text: &str) -> Vec<E2AResponse> {
    let mut request = E2AEnvelope::new("session/prompt", json!({"prompt": [{"type": "text", "text": text}]}))
        .with_request_id(uuid::Uuid::new_v4().to_string())
        .with_session_id("s-1");
    request.task_id = Some(task_id.to_string());
    let run = agent.run(request, RequestContext::new(Caller::anonymous(), None));
    tokio::time::timeout(Duration::from_secs(20), run.map(E2AResponse::from).collect::<Vec<_>>())
        .await
        .expect("the run ends")
}

fn obj(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap_or_default()
}

fn kinds_and_bodies(frames: &[E2AResponse]) -> Vec<(ResponseKind, Map<String, Value>)> {
    frames
        .iter()
        .map(|f| (f.response_kind.clone(), f.body.clone()))
        .collect()
}

/// The frames before the final one (the final result says the same in other words: the
/// front's `content` is the text the remote streamed).
fn streamed(frames: &[E2AResponse]) -> Vec<(ResponseKind, Map<String, Value>)> {
    assert!(frames.last().is_some_and(|f| f.is_final), "no final frame: {frames:?}");
    kinds_and_bodies(&frames[..frames.len() - 1])
}

#[tokio::test]
async fn across_a2a_an_e2a_agent_gives_the_same_frames_as_run_directly() {
    let direct = ScriptAgent::from_json(ACP_SCRIPT).expect("script");
    let back = gateway(
        Arc::new(ScriptAgent::from_json(ACP_SCRIPT).expect("script")),
        Auth::none(),
    )
    .await;
    let front = remote(&back.base, None);

    // reasoning, a tool call and its result, text: same kinds, same bodies, same order
    let want = run_frames(&direct, "t-direct-1", "what is the weather in Paris?").await;
    let got = run_frames(front.as_ref(), "t-front-1", "what is the weather in Paris?").await;
    assert_eq!(streamed(&got), streamed(&want));
    let tool = |fs: &[E2AResponse]| {
        fs.iter()
            .filter(|f| f.body.get("delta_kind") == Some(&json!("tool")))
            .count()
    };
    assert_eq!(tool(&got), 2, "the tool call and its result cross the hop: {got:?}");
    assert_eq!(
        got.last().map(|f| f.body["result"]["content"].clone()),
        Some(json!("It is 21 °C in Paris today."))
    );

    // an approval pause: the same pause (input_kind approval) and the same end of the turn
    for (n, answer, then) in [(2, "yes", "Deployed."), (3, "no", "Not deployed.")] {
        let (d, f) = (format!("t-direct-{n}"), format!("t-front-{n}"));
        let want = run_frames(&direct, &d, "please deploy").await;
        let got = run_frames(front.as_ref(), &f, "please deploy").await;
        assert_eq!(kinds_and_bodies(&got), kinds_and_bodies(&want));
        let pause = got
            .iter()
            .find(|f| f.response_kind == ResponseKind::PlanApprovalRequired);
        assert_eq!(
            pause.map(|p| p.body.clone()),
            Some(obj(
                json!({"plan_content": "Deploy to production?", "input_kind": "approval", "resumable": true})
            ))
        );
        // the answer (as `e2a acp` sends a permission decision) resumes the paused run
        let want = run_frames(&direct, &d, answer).await;
        let got = run_frames(front.as_ref(), &f, answer).await;
        assert_eq!(streamed(&got), streamed(&want), "answer {answer}");
        let text: String = got
            .iter()
            .filter_map(|f| f.body.get("delta").and_then(Value::as_str))
            .collect();
        assert_eq!(text, then);
    }
}

/// A plain A2A agent (no e2a metadata): a `WORKING` message's text is reasoning, a data-only
/// message is nothing, `INPUT_REQUIRED` is a pause for input.
#[tokio::test]
async fn a_plain_a2a_agents_messages_read_as_reasoning_and_an_input_pause() {
    let base = Arc::new(Mutex::new(String::new()));
    let b = base.clone();
    let router = axum::Router::new()
        .route(
            "/.well-known/agent-card.json",
            get(move || {
                let url = format!("{}/a2a", b.lock().map(|b| b.clone()).unwrap_or_default());
                async move {
                    let card = json!({"name": "plain", "description": "plain", "version": "1",
                        "capabilities": {"streaming": true}, "defaultInputModes": ["text/plain"],
                        "defaultOutputModes": ["text/plain"], "skills": [],
                        "supportedInterfaces": [{"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}]});
                    ([("content-type", "application/json")], card.to_string()).into_response()
                }
            }),
        )
        .route(
            "/a2a",
            any(|| async {
                let status = |state: &str, parts: Value| {
                    json!({"statusUpdate": {"taskId": "rt", "contextId": "rc", "status": {"state": state,
                        "message": {"messageId": uuid::Uuid::new_v4().to_string(), "role": "ROLE_AGENT", "parts": parts}}}})
                };
                let events = [
                    json!({"task": {"id": "rt", "contextId": "rc", "status": {"state": "TASK_STATE_WORKING"}}}),
                    status("TASK_STATE_WORKING", json!([{"text": "thinking"}])),
                    status("TASK_STATE_WORKING", json!([{"data": {"progress": 0.5}}])),
                    status("TASK_STATE_INPUT_REQUIRED", json!([{"text": "Which size?"}])),
                ];
                let body: String = events
                    .iter()
                    .map(|e| format!("data: {}\n\n", json!({"jsonrpc": "2.0", "id": 1, "result": e})))
                    .collect();
                ([("content-type", "text/event-stream")], body).into_response()
            }),
        );
    let server = spawn(router).await;
    if let Ok(mut b) = base.lock() {
        b.clone_from(&server.base);
    }
    let frames = run_frames(remote(&server.base, None).as_ref(), "t-plain", "order a shirt").await;
    let got = kinds_and_bodies(&frames);
    assert_eq!(
        got,
        vec![
            (
                ResponseKind::E2aChunk,
                obj(json!({"delta_kind": "reasoning", "delta": "thinking"}))
            ),
            (
                ResponseKind::PlanApprovalRequired,
                obj(json!({"plan_content": "Which size?", "input_kind": "input", "resumable": true}))
            ),
            (
                ResponseKind::E2aComplete,
                obj(
                    json!({"result": {"state": "input_required", "prompt": "Which size?", "resumable": true, "input_kind": "input"}})
                )
            ),
        ]
    );
}

/// A delegation that fails says where and why in plain words: the card's URL when it cannot be
/// fetched (without its query), the agent's URL and the HTTP status it answered.
#[tokio::test]
async fn a_failed_delegation_names_the_remote_url_and_what_went_wrong() {
    // nothing listens on a port just freed
    let free = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let gone = format!("http://{}/card.json?key=s3cret", free.local_addr().expect("addr"));
    drop(free);
    let agent = A2aRemoteAgent::new(A2aRemoteConfig::new(&gone)).expect("agent");
    let frames = run_frames(&agent, "t-1", "hello").await;
    let message = frames
        .last()
        .and_then(|f| f.body.get("message"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    let url = gone.split('?').next().unwrap_or_default();
    assert!(message.contains(url), "{message}");
    assert!(!message.contains("s3cret"), "{message}");
    // a remote whose interface answers 503
    let card = |base: String| {
        json!({"name": "down", "description": "d", "version": "1", "capabilities": {"streaming": true},
               "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"], "skills": [],
               "supportedInterfaces": [{"url": format!("{base}/rpc"), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}]})
    };
    let base = Arc::new(Mutex::new(String::new()));
    let b = base.clone();
    let app = axum::Router::new()
        .route(
            "/.well-known/agent-card.json",
            get(move || {
                let b = b.clone();
                async move { axum::Json(card(b.lock().expect("lock").clone())) }
            }),
        )
        .route(
            "/rpc",
            any(|| async { StatusCode::SERVICE_UNAVAILABLE.into_response() }),
        );
    let down = spawn(app).await;
    *base.lock().expect("lock") = down.base.clone();
    let agent = A2aRemoteAgent::new(A2aRemoteConfig::new(&down.base)).expect("agent");
    let frames = run_frames(&agent, "t-2", "hello").await;
    let message = frames
        .last()
        .and_then(|f| f.body.get("message"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    assert!(
        message.contains(&format!("{}/rpc", down.base)) && message.contains("503"),
        "{message}"
    );
}

/// A front showing `behind` (an A2A gateway) as an agent whose card lists only its HTTP+JSON
/// interface, as GoAI's agents' cards do, labelled protocol `label` (GoAI's say `0.3.0` of
/// their 1.0 routes): the card names the front's own origin, and its 1.0 HTTP+JSON routes are
/// passed on to `behind` (the SSE answer streamed back as it comes).
async fn rest_only(behind: String, label: &str) -> Spawned {
    use axum::body::{Body, Bytes};
    use axum::extract::State;
    use axum::http::Uri;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let card = json!({"name": "rest-only", "description": "HTTP+JSON only", "version": "1.0.0",
        "supportedInterfaces": [{"url": base, "protocolBinding": "HTTP+JSON", "protocolVersion": label}],
        "capabilities": {"streaming": true}, "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
        "skills": []});
    async fn pass_on(
        State(behind): State<String>,
        uri: Uri,
        headers: HeaderMap,
        body: Bytes,
    ) -> axum::response::Response {
        let path = uri.path_and_query().map_or("/", |p| p.as_str());
        let mut req = reqwest::Client::new().post(format!("{behind}{path}")).body(body);
        for name in ["content-type", "accept", "a2a-version"] {
            if let Some(v) = headers.get(name) {
                req = req.header(name, v);
            }
        }
        let resp = req.send().await.expect("the gateway behind answers");
        let status = resp.status().as_u16();
        let kind = resp.headers().get("content-type").cloned();
        let mut out = axum::response::Response::new(Body::from_stream(resp.bytes_stream()));
        *out.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY);
        if let Some(k) = kind {
            out.headers_mut().insert("content-type", k);
        }
        out
    }
    let router = axum::Router::new()
        .route(
            "/.well-known/agent-card.json",
            get(move || {
                let card = card.clone();
                async move { axum::Json(card) }
            }),
        )
        .route("/message:stream", axum::routing::post(pass_on))
        .route("/tasks/{id}", axum::routing::post(pass_on))
        .with_state(behind);
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    Spawned::from_parts(base, task)
}

/// An agent whose card lists only HTTP+JSON (GoAI's) is reached over HTTP+JSON: the same
/// frames as over JSON-RPC — tool calls, an approval pause and its answer (its cancel:
/// `a_cancel_reaches_the_remote_task`).
#[tokio::test]
async fn an_agent_with_only_an_http_json_interface_is_reached_over_it() {
    let back = gateway(
        Arc::new(ScriptAgent::from_json(ACP_SCRIPT).expect("script")),
        Auth::none(),
    )
    .await;
    let over_rpc = remote(&back.base, None);
    let front = rest_only(back.base.clone(), "1.0").await;
    let over_rest = remote(&front.base, None);
    let want = run_frames(over_rpc.as_ref(), "t-rpc-1", "what is the weather in Paris?").await;
    let got = run_frames(over_rest.as_ref(), "t-rest-1", "what is the weather in Paris?").await;
    assert_eq!(streamed(&got), streamed(&want));
    assert_eq!(
        got.last().map(|f| f.body["result"]["content"].clone()),
        Some(json!("It is 21 °C in Paris today."))
    );
    let want = run_frames(over_rpc.as_ref(), "t-rpc-2", "please deploy").await;
    let got = run_frames(over_rest.as_ref(), "t-rest-2", "please deploy").await;
    assert_eq!(kinds_and_bodies(&got), kinds_and_bodies(&want));
    let got = run_frames(over_rest.as_ref(), "t-rest-2", "yes").await;
    let text: String = got
        .iter()
        .filter_map(|f| f.body.get("delta").and_then(Value::as_str))
        .collect();
    assert_eq!(text, "Deployed.");
}

/// GoAI's card labels its 1.0 HTTP+JSON interface `0.3.0`: read as the card says (as the
/// official clients read it), the gateway speaks 0.3 there (`/v1/message:stream`) and the
/// front has no such route; configured to speak 1.0 (`a2a_version = "1.0"`), it gets the same
/// frames as over a 1.0 card.
#[tokio::test]
async fn an_interface_labelled_0_3_is_spoken_to_in_1_0_when_configured() {
    let back = gateway(
        Arc::new(ScriptAgent::from_json(ACP_SCRIPT).expect("script")),
        Auth::none(),
    )
    .await;
    let front = rest_only(back.base.clone(), "0.3.0").await;
    let as_the_card_says = remote(&front.base, None);
    let frames = run_frames(as_the_card_says.as_ref(), "t-goai-0", "what is the weather in Paris?").await;
    let last = frames.last().map(|f| Value::Object(f.body.clone())).unwrap_or_default();
    assert!(last.to_string().contains("answered HTTP 404"), "{last}");
    let mut config = A2aRemoteConfig::new(front.base.as_str());
    config.version = Some(e2a::types::A2aVersion::X10);
    let in_1_0: Arc<dyn Agent> = Arc::new(A2aRemoteAgent::new(config).expect("remote"));
    let want = run_frames(
        remote(&back.base, None).as_ref(),
        "t-goai-1",
        "what is the weather in Paris?",
    )
    .await;
    let got = run_frames(in_1_0.as_ref(), "t-goai-2", "what is the weather in Paris?").await;
    assert_eq!(streamed(&got), streamed(&want));
}
