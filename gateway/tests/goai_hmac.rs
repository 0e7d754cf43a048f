//! GoAI-HMAC-SHA256 machine identity, inbound: a caller with an HMAC key (`hmac_key_file`)
//! signs each request; the gateway checks the signature, the time window, the nonce (once per
//! window, shared by the gateways of a PostgreSQL store), the body's digest and the caller's
//! allow-list. Signatures here are made by `e2a_gateway::web::hmac::sign` (checked against a
//! vector computed with Python's `hmac` in its doc test; the A2A client suite signs with
//! Python's `hmac` against `e2a serve`).

mod common;

use std::sync::Arc;

use e2a_gateway::config_file::ConfigFile;
use e2a_gateway::web::hmac::{self, content_sha256, signature, Signed};
use e2a_gateway::{Auth, Gateway, GatewayConfig};
use serde_json::{json, Value};

const KEY: &str = "planner-secret-key-0123456789";

/// Callers: `planner` (HMAC, every agent), `outsider` (HMAC, only agent `other`).
fn auth(dir: &std::path::Path) -> Auth {
    std::fs::write(dir.join("planner.key"), format!("{KEY}\n")).expect("key");
    std::fs::write(dir.join("outsider.key"), "outsider-key\n").expect("key");
    let text = r#"
[agents.other]
agent = "echo"

[callers.planner]
kind = "agent"
hmac_key_file = "planner.key"
hmac_window_secs = 60

[callers.outsider]
kind = "agent"
hmac_key_file = "outsider.key"
agents = ["other"]
"#;
    let file = ConfigFile::parse(text, "e2a.toml", dir, &[]).expect("config");
    Auth::from_config(&file).expect("callers")
}

fn body() -> String {
    json!({"method": "chat.send", "request_id": uuid::Uuid::new_v4().to_string(), "params": {"query": "hi"}})
        .to_string()
}

/// POSTs `body` to `/v1/e2a/requests` with `headers`.
async fn post(base: &str, body: &str, headers: &[(axum::http::HeaderName, String)]) -> (u16, Value) {
    let mut req = reqwest::Client::new()
        .post(format!("{base}/v1/e2a/requests"))
        .header("content-type", "application/json")
        .body(body.to_string());
    for (k, v) in headers {
        req = req.header(k.as_str(), v);
    }
    let resp = req.send().await.expect("send");
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

/// The headers of a request signed with `key` as `agent`, at `timestamp`, with `nonce`, over
/// `signed_body` (what the digest says), for `POST /v1/e2a/requests`.
fn signed_as(
    agent: &str,
    key: &str,
    timestamp: &str,
    nonce: &str,
    signed_body: &str,
) -> Vec<(axum::http::HeaderName, String)> {
    let digest = content_sha256(signed_body.as_bytes());
    let signed = Signed {
        method: "POST",
        path: "/v1/e2a/requests",
        agent_code: agent,
        timestamp,
        nonce,
        content_sha256: &digest,
    };
    vec![
        (
            axum::http::header::AUTHORIZATION,
            format!(
                "GoAI-HMAC-SHA256 Signature={}",
                signature(key.as_bytes(), &signed.canonical())
            ),
        ),
        (hmac::AGENT_CODE, agent.to_string()),
        (hmac::TIMESTAMP, timestamp.to_string()),
        (hmac::NONCE, nonce.to_string()),
        (hmac::CONTENT_SHA256, digest),
    ]
}

fn now() -> String {
    e2a::timestamp::utc_now_iso()
}

#[tokio::test]
async fn signed_requests_are_checked_whole_and_every_failure_is_401() {
    let dir = tempfile::tempdir().expect("tmp");
    let config = GatewayConfig {
        auth: auth(dir.path()),
        ..common::fast_config()
    };
    let server = common::start(Arc::new(e2a_gateway::backends::EchoAgent::default()), config).await;
    let base = &server.base;
    // valid: the caller is the agent it signs as
    let b = body();
    let headers = hmac::sign(KEY.as_bytes(), "planner", "POST", "/v1/e2a/requests", b.as_bytes());
    let (status, frame) = post(base, &b, &headers).await;
    assert_eq!(status, 200, "{frame}");
    assert_eq!(frame["is_final"], true, "{frame}");
    // the same request again: its nonce is spent
    let (status, problem) = post(base, &b, &headers).await;
    assert_eq!(status, 401, "replayed: {problem}");
    assert_eq!(problem["detail"], "the GoAI-HMAC-SHA256 signature was not accepted");
    assert!(!problem.to_string().contains(KEY));
    let fresh = || uuid::Uuid::new_v4().to_string();
    let b = body();
    // out of the window (60 s), either way
    for at in [
        e2a::timestamp::from_epoch_secs(now_secs() - 120),
        e2a::timestamp::from_epoch_secs(now_secs() + 120),
    ] {
        let at = at.expect("a time");
        let (status, _) = post(base, &b, &signed_as("planner", KEY, &at, &fresh(), &b)).await;
        assert_eq!(status, 401, "at {at}");
    }
    // a body other than the one signed
    let (status, _) = post(base, &body(), &signed_as("planner", KEY, &now(), &fresh(), &b)).await;
    assert_eq!(status, 401, "tampered body");
    // signed with another key, as an unknown agent, as another agent with this key
    let (status, _) = post(base, &b, &signed_as("planner", "not-the-key", &now(), &fresh(), &b)).await;
    assert_eq!(status, 401, "wrong key");
    let (status, _) = post(base, &b, &signed_as("nobody", KEY, &now(), &fresh(), &b)).await;
    assert_eq!(status, 401, "unknown agent code");
    let (status, _) = post(base, &b, &signed_as("outsider", KEY, &now(), &fresh(), &b)).await;
    assert_eq!(status, 401, "another agent's code with this key");
    // a header missing, a signature not hex
    let mut missing = signed_as("planner", KEY, &now(), &fresh(), &b);
    missing.retain(|(k, _)| *k != hmac::NONCE);
    assert_eq!(post(base, &b, &missing).await.0, 401, "no nonce");
    let mut garbled = signed_as("planner", KEY, &now(), &fresh(), &b);
    garbled[0].1 = "GoAI-HMAC-SHA256 Signature=xyz".into();
    assert_eq!(post(base, &b, &garbled).await.0, 401, "signature not hex");
    // a valid signature of a caller not allowed this agent: 403
    let (status, problem) = post(base, &b, &signed_as("outsider", "outsider-key", &now(), &fresh(), &b)).await;
    assert_eq!(status, 403, "{problem}");
    // and a correct one still passes
    let (status, _) = post(base, &b, &signed_as("planner", KEY, &now(), &fresh(), &b)).await;
    assert_eq!(status, 200);
}

fn now_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// Two gateways of one PostgreSQL store: a nonce accepted by one is refused by the other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_nonce_spent_on_one_gateway_is_refused_on_another() {
    let Some(url) = common::postgres_database().await else {
        return;
    };
    let dir = tempfile::tempdir().expect("tmp");
    let gateway = |auth: Auth, store: e2a_gateway::store::PgStore| {
        let config = GatewayConfig {
            auth,
            ..common::fast_config()
        };
        Gateway::new(e2a_gateway::backends::EchoAgent::default(), config).with_store(Arc::new(store))
    };
    let a = common::serve_crashable(gateway(auth(dir.path()), common::pg(&url).await)).await;
    let b = common::serve_crashable(gateway(auth(dir.path()), common::pg(&url).await)).await;
    let body = body();
    let headers = hmac::sign(KEY.as_bytes(), "planner", "POST", "/v1/e2a/requests", body.as_bytes());
    assert_eq!(post(&a.base, &body, &headers).await.0, 200);
    assert_eq!(
        post(&b.base, &body, &headers).await.0,
        401,
        "replayed on the other gateway"
    );
}

/// Outbound: an `a2a:` agent with a machine identity signs its requests; the gateway behind
/// it (which knows the caller by its HMAC key) answers; signed with another key, it is refused
/// and the run fails naming the remote's answer.
#[tokio::test]
async fn an_a2a_agent_signs_its_requests_and_a_gateway_checks_them() {
    use e2a_gateway::backends::{A2aRemoteAgent, A2aRemoteConfig};
    use e2a_gateway::bindings::a2a::A2aConfig;
    use e2a_gateway::web::hmac::Signer;
    use futures_util::StreamExt;
    let dir = tempfile::tempdir().expect("tmp");
    let config = GatewayConfig {
        auth: auth(dir.path()),
        ..GatewayConfig::default()
    };
    let child = Gateway::new(e2a_gateway::backends::EchoAgent::default(), config)
        .with_a2a(A2aConfig::default(), Arc::new(e2a_gateway::store::MemoryStore::new()));
    let child = common::spawn(child.router()).await;
    let run = |key: &str| {
        let mut config = A2aRemoteConfig::new(child.base.as_str());
        config.signer = Some(Signer {
            agent_code: "planner".into(),
            key: key.into(),
        });
        let agent = A2aRemoteAgent::new(config).expect("remote");
        async move {
            let request = e2a::E2AEnvelope::new("chat.send", json!({"query": "signed hello"}))
                .with_request_id(uuid::Uuid::new_v4().to_string());
            let ctx = e2a_gateway::RequestContext::new(e2a_gateway::Caller::anonymous(), None);
            let frames = e2a_gateway::Agent::run(&agent, request, ctx);
            let frames: Vec<e2a::E2AResponse> = frames.map(e2a::E2AResponse::from).collect().await;
            frames.last().cloned().expect("a final frame")
        }
    };
    let last = run(KEY).await;
    assert_eq!(last.response_kind, e2a::ResponseKind::E2aComplete, "{last:?}");
    assert!(
        last.body["result"].to_string().contains("signed hello"),
        "{:?}",
        last.body
    );
    let refused = run("another key").await;
    assert_eq!(refused.response_kind, e2a::ResponseKind::E2aError, "{refused:?}");
    assert!(
        refused.body["message"].as_str().is_some_and(|m| m.contains("401")),
        "{:?}",
        refused.body
    );
}

/// `GET /metrics` takes a signed request as it takes a bearer token.
#[tokio::test]
async fn a_signed_caller_reads_the_metrics() {
    let dir = tempfile::tempdir().expect("tmp");
    let config = GatewayConfig {
        auth: auth(dir.path()),
        ..common::fast_config()
    };
    let gateway = Gateway::new(e2a_gateway::backends::EchoAgent::default(), config).with_metrics(false);
    let server = common::serve_crashable(gateway).await;
    let get = |headers: Vec<(axum::http::HeaderName, String)>| {
        let mut req = reqwest::Client::new().get(format!("{}/metrics", server.base));
        for (k, v) in headers {
            req = req.header(k.as_str(), v);
        }
        async move { req.send().await.expect("send").status().as_u16() }
    };
    assert_eq!(get(Vec::new()).await, 401);
    let signed = hmac::sign(KEY.as_bytes(), "planner", "GET", "/metrics", b"");
    assert_eq!(get(signed.clone()).await, 200);
    assert_eq!(get(signed).await, 401, "its nonce is spent");
}
