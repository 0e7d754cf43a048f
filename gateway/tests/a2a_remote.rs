//! A remote A2A agent as the backend (`--agent a2a:URL`): a gateway in front of a second
//! gateway carries text, artifacts and pauses; the credential goes to its origin only; a card
//! whose interface is on another origin, or a redirect, is refused; a cancel reaches the remote.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::{any, get};
use e2a_gateway::a2a::remote::{RemoteA2aAgent, RemoteA2aConfig};
use e2a_gateway::a2a::{A2aConfig, MemoryStore};
use e2a_gateway::agents::ScriptAgent;
use e2a_gateway::{Agent, Auth, Gateway, GatewayConfig};
use serde_json::{json, Value};

const SCRIPT: &str = include_str!("a2a_clients/script.json");

/// A server on 127.0.0.1 that is aborted when dropped.
struct Server {
    base: String,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn spawn(router: axum::Router) -> Server {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    Server {
        base: format!("http://{addr}"),
        task,
    }
}

async fn gateway(agent: Arc<dyn Agent>, auth: Auth) -> Server {
    let config = GatewayConfig {
        auth,
        ..GatewayConfig::default()
    };
    let g = Gateway::with_agent(agent, config).with_a2a(A2aConfig::default(), Arc::new(MemoryStore::new()));
    spawn(g.router()).await
}

async fn script_gateway(auth: Auth) -> Server {
    gateway(Arc::new(ScriptAgent::from_json(SCRIPT).expect("script")), auth).await
}

fn remote(url: &str, token: Option<&str>) -> Arc<dyn Agent> {
    let mut config = RemoteA2aConfig::new(url);
    if let Some(t) = token {
        config = config.with_token(url, t.into());
    }
    Arc::new(RemoteA2aAgent::new(config).expect("remote"))
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

#[tokio::test]
async fn a_cancel_reaches_the_remote_task() {
    let back = script_gateway(Auth::none()).await;
    let front = gateway(remote(&back.base, None), Auth::none()).await;
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
async fn recorder() -> (Server, Seen) {
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
        RemoteA2aConfig::new("http://a").with_token("http://a", "hidden-value".into())
    );
    assert!(!debug.contains("hidden-value"));
}
