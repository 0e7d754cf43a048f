//! One gateway from a config file: named agents, each at its own routes with its own card, and
//! callers with API keys and JWTs, allow-lists, rate limits, and tasks that stay their
//! caller's and their agent's.

mod common;

use std::sync::Arc;

use common::*;
use e2a_gateway::config_file::ConfigFile;
use e2a_gateway::store::MemoryStore;
use serde_json::{json, Value};
use sha2::Digest;

const ALICE: &str = "alice-api-key";
const BOB: &str = "bob-api-key";
const CAROL: &str = "carol-api-key";
const JWT_SECRET: &str = "a-shared-secret-of-the-issuer-0123456789";

fn sha256(s: &str) -> String {
    sha2::Sha256::digest(s.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The config file, its secrets beside it.
fn config(dir: &tempfile::TempDir) -> ConfigFile {
    std::fs::write(dir.path().join("bob.key"), format!("{BOB}\n")).expect("key file");
    std::fs::write(dir.path().join("issuer.secret"), JWT_SECRET).expect("secret file");
    let text = format!(
        r#"
[a2a]
enabled = true

[agents.writer]
agent = "script:{script}"
card = {{ name = "Writer", description = "writes" }}

[agents.echoer]
agent = "echo"

[agents.helper]
agent = "echo"

[agents.auditor]
agent = "echo"
card = {{ extensions = [{{ uri = "urn:example:audit", required = true }}] }}

[callers.alice]
api_key_sha256 = "{alice}"
agents = ["writer", "echoer"]

[callers.bob]
api_key_file = "bob.key"

[callers.carol]
api_key_sha256 = "{carol}"
rate_limit = {{ per_second = 0.001, burst = 2 }}

[callers.planner]
kind = "agent"
jwt = {{ algorithm = "HS256", secret_file = "issuer.secret", issuer = "https://issuer.test", audience = "e2a" }}
"#,
        script = script_path().display(),
        alice = sha256(ALICE),
        carol = sha256(CAROL),
    );
    let path = dir.path().join("e2a.toml");
    std::fs::write(&path, text).expect("config");
    let file = ConfigFile::load(&path, &[]).expect("the config loads");
    file.check().expect("its secrets and agents are usable");
    file
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or_default()
}

fn jwt(sub: &str, exp_from_now: i64, audience: &str) -> String {
    signed(&json!({"iss": "https://issuer.test", "aud": audience, "sub": sub, "exp": now() + exp_from_now}))
}

/// `claims` signed with the issuer's secret.
fn signed(claims: &Value) -> String {
    jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256),
        claims,
        &jsonwebtoken::EncodingKey::from_secret(JWT_SECRET.as_bytes()),
    )
    .expect("sign")
}

async fn e2a(base: &str, agent: &str, token: Option<&str>) -> reqwest::Response {
    post_auth(
        &format!("{base}/agents/{agent}"),
        &envelope("hello"),
        "application/json",
        token,
    )
    .await
}

async fn rpc(base: &str, agent: &str, token: &str, method: &str, params: Value) -> Value {
    client()
        .post(format!("{base}/a2a/agents/{agent}"))
        .bearer_auth(token)
        .header("A2A-Version", "1.0")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("JSON-RPC answer")
}

async fn get_json(url: String) -> Value {
    client().get(url).send().await.expect("get").json().await.expect("JSON")
}

/// A gateway of [`config`] with a memory store, served on 127.0.0.1.
async fn served(dir: &tempfile::TempDir) -> Spawned {
    let gateway = config(dir)
        .gateway(Some(Arc::new(MemoryStore::new()).into()), None)
        .expect("gateway");
    spawn(gateway.router()).await
}

fn send(text: &str) -> Value {
    json!({"message": {"messageId": uuid(), "role": "ROLE_USER", "parts": [{"text": text}]},
           "configuration": {"returnImmediately": false}})
}

/// Serves the gateway of config `text` (a file in `dir`; a memory store) on 127.0.0.1 and runs
/// `test` with its URL.
fn with_served<F, Fut>(text: &str, dir: &std::path::Path, test: F)
where
    F: FnOnce(String) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let file = ConfigFile::parse(text, "e2a.toml", dir, &[]).expect("the file parses");
    let gateway = file
        .gateway(Some(e2a_gateway::store::Stores::memory()), None)
        .expect("the gateway builds");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("rt");
    rt.block_on(async {
        let served = common::serve_crashable(gateway).await;
        test(served.base.clone()).await;
    });
}

/// Every problem `e2a config check` reports of `text` (a file in `dir`), one per line.
fn problems(text: &str, dir: &std::path::Path) -> String {
    let errors = match ConfigFile::parse(text, "e2a.toml", dir, &[]) {
        Ok(file) => file.check().err().unwrap_or_default(),
        Err(errors) => errors,
    };
    errors.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n")
}

#[tokio::test]
async fn each_named_agent_has_its_card_and_routes() {
    let dir = tempfile::tempdir().expect("dir");
    let gateway = config(&dir)
        .gateway(Some(Arc::new(MemoryStore::new()).into()), None)
        .expect("gateway");
    assert_eq!(gateway.agent_names(), ["auditor", "echoer", "helper", "writer"]);
    let server = spawn(gateway.router()).await;
    let base = &server.base;
    let card = get_json(format!("{base}/a2a/agents/writer/.well-known/agent-card.json")).await;
    assert_eq!(card["name"], "Writer");
    assert_eq!(
        card["supportedInterfaces"][0]["url"],
        format!("{base}/a2a/agents/writer"),
        "the card points at the agent's own routes"
    );
    let listing = get_json(format!("{base}/a2a/agents")).await;
    let names: Vec<&str> = listing["agents"]
        .as_array()
        .expect("agents")
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(names, ["auditor", "echoer", "helper", "Writer"]);
    // a card's extensions come from its table; a required one must be activated
    let card = get_json(format!("{base}/a2a/agents/auditor/.well-known/agent-card.json")).await;
    assert_eq!(
        card["capabilities"]["extensions"],
        json!([{"uri": "urn:example:audit", "required": true}]),
        "{card}"
    );
    let refused = rpc(base, "auditor", BOB, "SendMessage", send("ping")).await;
    assert_eq!(refused.pointer("/error/code"), Some(&json!(-32008)), "{refused}");
    // each agent answers at its own A2A and E2A routes
    let answer = rpc(base, "echoer", BOB, "SendMessage", send("ping")).await;
    let text = answer.pointer("/result/task/artifacts/0/parts/0/text");
    assert_eq!(text, Some(&json!("You said: ping")), "{answer}");
    let resp = e2a(base, "writer", Some(BOB)).await;
    assert_eq!(resp.status(), 200);
    let resp = client()
        .post(format!("{base}/a2a/agents/nobody"))
        .bearer_auth(BOB)
        .json(&json!({}))
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status(), 404, "an agent that is not configured has no routes");
}

#[tokio::test]
async fn callers_are_named_allowed_and_limited() {
    let dir = tempfile::tempdir().expect("dir");
    let server = served(&dir).await;
    let base = &server.base;
    // the caller's name reaches the agent: a user's as user_id, an agent's as source_agent_id
    let answer: Value = e2a(base, "echoer", Some(BOB)).await.json().await.expect("answer");
    assert_eq!(answer["user_id"], "bob", "{answer}");
    let token = jwt("planner-7", 300, "e2a");
    let answer: Value = e2a(base, "echoer", Some(&token)).await.json().await.expect("answer");
    assert_eq!(answer["source_agent_id"], "planner-7", "{answer}");
    assert_eq!(answer["user_id"], Value::Null, "{answer}");
    // refused: no credential, a wrong one, an expired JWT, a JWT for another audience
    assert_eq!(e2a(base, "echoer", None).await.status(), 401);
    assert_eq!(e2a(base, "echoer", Some("not-a-key")).await.status(), 401);
    assert_eq!(
        e2a(base, "echoer", Some(&jwt("planner-7", -600, "e2a"))).await.status(),
        401
    );
    assert_eq!(
        e2a(base, "echoer", Some(&jwt("planner-7", 300, "other")))
            .await
            .status(),
        401
    );
    // alice may call writer and echoer, not helper nor the root agent
    assert_eq!(e2a(base, "writer", Some(ALICE)).await.status(), 200);
    let denied = e2a(base, "helper", Some(ALICE)).await;
    assert_eq!(denied.status(), 403);
    let problem: Value = denied.json().await.expect("problem");
    assert_eq!(problem["detail"], "caller `alice` may not call agent `helper`");
    let root = post_auth(base, &envelope("hi"), "application/json", Some(ALICE)).await;
    assert_eq!(root.status(), 403);
    // carol's bucket holds two requests
    assert_eq!(e2a(base, "helper", Some(CAROL)).await.status(), 200);
    assert_eq!(e2a(base, "helper", Some(CAROL)).await.status(), 200);
    let limited = e2a(base, "helper", Some(CAROL)).await;
    assert_eq!(limited.status(), 429);
    let retry: u64 = limited
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .expect("Retry-After");
    assert!(retry >= 1);
    // another caller is not held back by carol's limit
    assert_eq!(e2a(base, "helper", Some(BOB)).await.status(), 200);
}

#[tokio::test]
async fn a_task_is_its_callers_and_its_agents() {
    let dir = tempfile::tempdir().expect("dir");
    let server = served(&dir).await;
    let base = &server.base;
    let sent = rpc(base, "echoer", BOB, "SendMessage", send("mine")).await;
    let id = sent
        .pointer("/result/task/id")
        .and_then(Value::as_str)
        .expect("task id");
    let get = |token: &'static str, agent: &'static str| {
        let id = id.to_string();
        async move { rpc(base, agent, token, "GetTask", json!({"id": id})).await }
    };
    assert_eq!(get(BOB, "echoer").await.pointer("/result/id"), Some(&json!(id)));
    let other_caller = get(ALICE, "echoer").await;
    assert_eq!(
        other_caller.pointer("/error/code"),
        Some(&json!(-32001)),
        "{other_caller}"
    );
    let other_agent = get(BOB, "helper").await;
    assert_eq!(
        other_agent.pointer("/error/code"),
        Some(&json!(-32001)),
        "{other_agent}"
    );
}

#[tokio::test]
async fn the_default_agent_answers_at_the_root_routes_too() {
    let dir = tempfile::tempdir().expect("dir");
    let mut file = config(&dir);
    file.settings.default_agent = Some("writer".into());
    let gateway = file
        .gateway(Some(Arc::new(MemoryStore::new()).into()), None)
        .expect("gateway");
    let server = spawn(gateway.router()).await;
    let base = &server.base;
    let card = get_json(format!("{base}/.well-known/agent-card.json")).await;
    assert_eq!(card["name"], "Writer");
    // a task made at the root is the writer's: found at the writer's routes
    let answer: Value = client()
        .post(format!("{base}/a2a"))
        .bearer_auth(BOB)
        .header("A2A-Version", "1.0")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": send("hi")}))
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("answer");
    let id = answer
        .pointer("/result/task/id")
        .and_then(Value::as_str)
        .expect("task id");
    let found = rpc(base, "writer", BOB, "GetTask", json!({"id": id})).await;
    assert_eq!(found.pointer("/result/id"), Some(&json!(id)), "{found}");
}

#[tokio::test]
async fn a_jwt_needs_the_claims_its_caller_checks_and_a_past_nbf() {
    let dir = tempfile::tempdir().expect("dir");
    let server = served(&dir).await;
    let base = &server.base;
    let (iss, exp) = ("https://issuer.test", now() + 300);
    let status = |claims: Value| async move { e2a(base, "echoer", Some(&signed(&claims))).await.status() };
    assert_eq!(
        status(json!({"iss": iss, "aud": "e2a", "sub": "p", "exp": exp})).await,
        200
    );
    // the caller is configured with an issuer and an audience: a token without either is refused
    assert_eq!(
        status(json!({"aud": "e2a", "sub": "p", "exp": exp})).await,
        401,
        "no iss"
    );
    assert_eq!(status(json!({"iss": iss, "sub": "p", "exp": exp})).await, 401, "no aud");
    // not before: refused while in the future (past the default leeway), taken once it is past
    let nbf = |at: i64| json!({"iss": iss, "aud": "e2a", "sub": "p", "exp": exp, "nbf": at});
    assert_eq!(status(nbf(now() + 3600)).await, 401, "nbf in an hour");
    assert_eq!(status(nbf(now() - 10)).await, 200, "nbf passed");
}

#[test]
fn config_callers_cannot_take_the_identity_of_a_token_or_a_jwt_subject() {
    let dir = tempfile::tempdir().expect("dir");
    std::fs::write(dir.path().join("issuer.secret"), JWT_SECRET).expect("secret file");
    for (name, why) in [("token-1", "bearer token"), ("jw/victim", "contain `/`")] {
        let text = format!(
            "[callers.jw]\njwt = {{ algorithm = \"HS256\", secret_file = \"issuer.secret\" }}\n\n[callers.\"{name}\"]\napi_key_sha256 = \"{}\"\n",
            sha256(name)
        );
        let file = ConfigFile::parse(&text, "e2a.toml", dir.path(), &[]).expect("the file parses");
        let errors = file.check().expect_err("a reserved name is refused");
        let text = errors.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n");
        assert!(text.contains(why) && text.contains(name), "{name}: {text}");
        assert!(file.gateway(None, None).is_err(), "{name}: refused at start too");
    }
    // names that only look alike are fine
    for name in ["token-", "token-1a", "tokens-1", "my-token-1"] {
        let text = format!("[callers.\"{name}\"]\napi_key_sha256 = \"{}\"\n", sha256(name));
        let file = ConfigFile::parse(&text, "e2a.toml", dir.path(), &[]).expect("the file parses");
        file.check().unwrap_or_else(|e| panic!("{name}: {e:?}"));
    }
}

#[tokio::test]
async fn metrics_count_the_requests_of_each_agent() {
    let dir = tempfile::tempdir().expect("dir");
    let server = served(&dir).await;
    let base = &server.base;
    for _ in 0..3 {
        rpc(base, "writer", BOB, "SendMessage", send("hi")).await;
    }
    assert_eq!(e2a(base, "helper", Some(ALICE)).await.status(), 403);
    let metrics = |token: Option<&'static str>| async move {
        let mut req = client().get(format!("{base}/metrics"));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        req.send().await.expect("metrics")
    };
    assert_eq!(metrics(None).await.status(), 401, "protected like the other routes");
    // any valid caller may read them, whatever agents it may call
    let text = metrics(Some(ALICE)).await.text().await.expect("text");
    let sample = |prefix: &str| -> f64 {
        text.lines()
            .find(|l| l.starts_with(prefix))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no sample {prefix} in\n{text}"))
    };
    assert_eq!(
        sample(r#"e2a_http_requests_total{agent="writer",binding="a2a",method="POST",status="200"}"#),
        3.0
    );
    assert_eq!(
        sample(r#"e2a_http_requests_total{agent="helper",binding="e2a",method="POST",status="403"}"#),
        1.0
    );
    assert!(sample(r#"e2a_frames_total{agent="writer",kind="e2a.complete"}"#) >= 3.0);
    assert_eq!(sample(r#"e2a_open_streams{agent="writer"}"#), 0.0);
    // the writer's three runs, and the store operations behind them
    assert_eq!(
        sample(r#"e2a_agent_run_duration_seconds_count{agent="writer",status="succeeded"}"#),
        3.0
    );
    assert_eq!(sample(r#"e2a_agent_first_frame_seconds_count{agent="writer"}"#), 3.0);
    assert!(sample(r#"e2a_store_op_duration_seconds_count{op="append",outcome="ok"}"#) >= 3.0);
}

#[tokio::test]
async fn unknown_methods_without_a_credential_add_no_series() {
    use futures_util::StreamExt;
    let dir = tempfile::tempdir().expect("dir");
    let server = served(&dir).await;
    let base = &server.base;
    let client = client();
    // `n` requests without a token, each with a method of its own (a 200-byte token)
    let flood = |from: usize, n: usize| {
        let client = client.clone();
        futures_util::stream::iter(from..from + n)
            .map(move |i| {
                let method = reqwest::Method::from_bytes(format!("M{i:0>199}").as_bytes()).expect("method");
                client.request(method, format!("{base}/agents/writer")).send()
            })
            .buffer_unordered(16)
            .for_each(|r| async move {
                let status = r.expect("answer").status();
                assert!([401, 404, 405].contains(&status.as_u16()), "{status}");
            })
    };
    let series = || async {
        let text = client
            .get(format!("{base}/metrics"))
            .bearer_auth(ALICE)
            .send()
            .await
            .expect("metrics")
            .text()
            .await
            .expect("text");
        let lines: Vec<String> = text.lines().filter(|l| !l.starts_with('#')).map(String::from).collect();
        assert!(!text.contains("M000"), "a method sent is not a label");
        lines
    };
    flood(0, 1_000).await;
    let before = series().await;
    flood(1_000, 9_000).await;
    let after = series().await;
    assert_eq!(
        before.len(),
        after.len(),
        "the series are the same after 9,000 more methods"
    );
    let counted: f64 = after
        .iter()
        .filter(|l| l.starts_with("e2a_http_requests_total{") && l.contains(r#"method="other""#))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum();
    assert_eq!(
        counted,
        10_000.0,
        "every unknown method counted as `other`:\n{}",
        after.join("\n")
    );
}

#[tokio::test]
async fn the_frame_log_has_a_line_per_frame() {
    let dir = tempfile::tempdir().expect("dir");
    let text = "[log]\nframes = \"logs/frames.jsonl\"\n\n[agents.echoer]\nagent = \"echo\"\n";
    let file = ConfigFile::parse(text, "e2a.toml", dir.path(), &[]).expect("config");
    let gateway = file.gateway(None, None).expect("gateway");
    let server = spawn(gateway.router()).await;
    let mut resp = client()
        .post(format!("{}/agents/echoer/v1/e2a/requests", server.base))
        .header("accept", "text/event-stream")
        .header("content-type", "application/json")
        .body(envelope("key sk-proj-0123456789abcdefXYZ012").to_string())
        .send()
        .await
        .expect("send");
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.expect("chunk") {
        body.extend_from_slice(&chunk);
    }
    let frames = sse_frames(&String::from_utf8_lossy(&body));
    let path = dir.path().join("logs/frames.jsonl");
    let lines = || std::fs::read_to_string(&path).unwrap_or_default();
    eventually("every frame logged", || lines().lines().count() == frames.len()).await;
    let logged: Vec<Value> = lines()
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect();
    for (f, l) in frames.iter().zip(&logged) {
        assert_eq!(l["response_id"], json!(f.response_id));
        assert_eq!(l["sequence"], json!(f.sequence));
    }
    assert!(
        !lines().contains("0123456789abcdefXYZ012"),
        "the planted token is redacted:\n{}",
        lines()
    );
}

#[tokio::test]
async fn a2a_tenants_name_the_agent() {
    let dir = tempfile::tempdir().expect("dir");
    let server = served(&dir).await;
    let base = &server.base;
    let root = |token: &'static str, params: Value| async move {
        client()
            .post(format!("{base}/a2a"))
            .bearer_auth(token)
            .header("A2A-Version", "1.0")
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": params}))
            .send()
            .await
            .expect("send")
    };
    let mut params = send("via tenant");
    params["tenant"] = json!("echoer");
    let answer: Value = root(BOB, params.clone()).await.json().await.expect("answer");
    let id = answer
        .pointer("/result/task/id")
        .and_then(Value::as_str)
        .expect("task id");
    let found = rpc(base, "echoer", BOB, "GetTask", json!({"id": id})).await;
    assert_eq!(
        found.pointer("/result/id"),
        Some(&json!(id)),
        "the task is echoer's: {found}"
    );
    // the tenant's allow-list applies
    params["tenant"] = json!("helper");
    assert_eq!(root(ALICE, params.clone()).await.status(), 403);
    params["tenant"] = json!("nobody");
    let unknown: Value = root(BOB, params).await.json().await.expect("answer");
    assert_eq!(unknown.pointer("/error/code"), Some(&json!(-32602)), "{unknown}");
    // the HTTP+JSON routes under /{tenant}
    let rest: Value = client()
        .post(format!("{base}/echoer/message:send"))
        .bearer_auth(BOB)
        .header("A2A-Version", "1.0")
        .json(&send("via path"))
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("answer");
    let id = rest.pointer("/task/id").and_then(Value::as_str).expect("task id");
    let found = rpc(base, "echoer", BOB, "GetTask", json!({"id": id})).await;
    assert_eq!(found.pointer("/result/id"), Some(&json!(id)), "{found}");
}

/// Every endpoint the banner prints (`Gateway::describe`, from the bindings the gateway
/// mounted) is routed: each `GET` answers 200, each `POST` reads its body (no 404 or 405).
#[tokio::test]
async fn every_endpoint_the_banner_prints_is_routed() {
    let dir = tempfile::tempdir().expect("dir");
    let text = "[a2a]\nenabled = true\n[agui]\nenabled = true\n[metrics]\nenabled = true\npublic = true\n\
                [agents.writer]\nagent = \"echo\"\n[agents.reader]\nagent = \"echo\"\n";
    let file = ConfigFile::parse(text, "e2a.toml", dir.path(), &[]).expect("the file parses");
    let gateway = file
        .gateway(Some(Arc::new(MemoryStore::new()).into()), None)
        .expect("gateway");
    let server = spawn(gateway.router()).await;
    let banner = gateway.describe(&server.base);
    let mut seen = 0;
    for line in banner.lines() {
        let mut words = line.split_whitespace();
        let (Some(method), Some(url)) = (words.next(), words.next()) else {
            continue;
        };
        let resp = match method {
            "GET" => client().get(url).send().await.expect("get"),
            "POST" => client()
                .post(url)
                .header("content-type", "application/json")
                .header("A2A-Version", "1.0")
                .body("{}")
                .send()
                .await
                .expect("post"),
            _ => continue,
        };
        let status = resp.status().as_u16();
        seen += 1;
        match method {
            "GET" => assert_eq!(status, 200, "{line}"),
            _ => assert!(![404, 405].contains(&status), "{status}: {line}"),
        }
    }
    assert!(
        banner.contains("/a2a/agents/reader") && banner.contains("/api/agents/writer/agui"),
        "{banner}"
    );
    assert!(seen >= 16, "{seen} endpoints in\n{banner}");
}

#[tokio::test]
async fn a_cards_skills_are_a2a_skills_read_when_the_file_is() {
    let dir = tempfile::tempdir().expect("dir");
    // a skill that is not an A2A AgentSkill is refused where it is written
    let bad = "[agents.writer]\nagent = \"echo\"\n\n[[agents.writer.card.skills]]\nid = \"draft\"\ntags = \"prose\"\n";
    let errors = match ConfigFile::parse(bad, "e2a.toml", dir.path(), &[]) {
        Err(errors) => errors,
        Ok(file) => file
            .check()
            .expect_err("a skill with tags that are not a list is refused"),
    };
    let text = errors.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n");
    assert!(
        text.contains("agents.writer.card.skills[0].tags: expected array"),
        "{text}"
    );
    // a good one is on the card as written
    let good = "[a2a]\nenabled = true\n\n[agents.writer]\nagent = \"echo\"\n\n[[agents.writer.card.skills]]\nid = \"draft\"\nname = \"Draft\"\n\
                description = \"Drafts prose\"\ntags = [\"prose\"]\nexamples = [\"a haiku\"]\n";
    let file = ConfigFile::parse(good, "e2a.toml", dir.path(), &[]).expect("the file parses");
    let server = spawn(
        file.gateway(Some(Arc::new(MemoryStore::new()).into()), None)
            .expect("gateway")
            .router(),
    )
    .await;
    let card = get_json(format!("{}/a2a/agents/writer/.well-known/agent-card.json", server.base)).await;
    assert_eq!(
        card["skills"],
        json!([{"id": "draft", "name": "Draft", "description": "Drafts prose", "tags": ["prose"], "examples": ["a haiku"]}]),
        "{card}"
    );
}

/// HMAC keys are credentials like the others: one per caller, read when checked (a missing
/// file names its key), and an `a2a:` agent has a bearer token or an HMAC key, not both.
#[test]
fn hmac_keys_are_checked_like_every_credential() {
    let dir = tempfile::tempdir().expect("dir");
    std::fs::write(dir.path().join("planner.key"), "k\n").expect("key");
    std::fs::write(dir.path().join("token"), "t\n").expect("token");
    // (what parsing refuses, or else what the check does)
    let errors_of = |text: &str| problems(text, dir.path());
    let ok = "[callers.planner]\nkind = \"agent\"\nhmac_key_file = \"planner.key\"\n";
    assert_eq!(errors_of(ok), "");
    let two = "[callers.planner]\nhmac_key_file = \"planner.key\"\napi_key_file = \"token\"\n";
    assert!(errors_of(two).contains("give exactly one of"), "{}", errors_of(two));
    let missing = "[callers.planner]\nhmac_key_file = \"nowhere.key\"\n";
    assert!(
        errors_of(missing).contains("callers.planner.hmac_key_file"),
        "{}",
        errors_of(missing)
    );
    let both = "[agents.w]\nagent = \"a2a:https://example.invalid\"\ntoken_file = \"token\"\nhmac_key_file = \"planner.key\"\n";
    let text = errors_of(both);
    assert!(
        text.contains("agents.w.hmac_key_file") && text.contains("not both"),
        "{text}"
    );
}

/// `delegate = "callback"`: an `a2a:` agent's option, with A2A on and a callback base URL that
/// carries tokens safely (https, or http on loopback); `e2a config check` says what is missing,
/// at its key; a file that has it all serves the callback route.
#[test]
fn delegation_with_callbacks_is_checked_and_served() {
    let dir = tempfile::tempdir().expect("dir");
    let errors_of = |text: &str| problems(text, dir.path());
    let agent = "[agents.planner]\nagent = \"a2a:https://child.example\"\ndelegate = \"callback\"\n";
    let a2a = "[a2a]\nenabled = true\n";
    let base = |url: &str| format!("[delegation]\ncallback_base_url = \"{url}\"\n");
    let ok = format!("{a2a}{}{agent}", base("https://gw.example"));
    assert_eq!(errors_of(&ok), "");
    let loopback = format!("{a2a}{}{agent}", base("http://127.0.0.1:8080"));
    assert_eq!(errors_of(&loopback), "");
    let not_a2a = format!(
        "{a2a}{}[agents.planner]\nagent = \"echo\"\ndelegate = \"callback\"\n",
        base("https://gw.example")
    );
    let text = errors_of(&not_a2a);
    assert!(
        text.contains("agents.planner.delegate") && text.contains("a2a: agents"),
        "{text}"
    );
    let no_base = format!("{a2a}{agent}");
    let text = errors_of(&no_base);
    assert!(text.contains("delegation.callback_base_url"), "{text}");
    let in_clear = format!("{a2a}{}{agent}", base("http://gw.example"));
    let text = errors_of(&in_clear);
    assert!(
        text.contains("delegation.callback_base_url") && text.contains("clear text"),
        "{text}"
    );
    let no_a2a = format!("{}{agent}", base("https://gw.example"));
    let text = errors_of(&no_a2a);
    assert!(
        text.contains("agents.planner.delegate") && text.contains("enable [a2a]"),
        "{text}"
    );
    let bad = format!(
        "{a2a}{}[agents.planner]\nagent = \"a2a:https://child.example\"\ndelegate = \"later\"\n",
        base("https://gw.example")
    );
    assert!(
        errors_of(&bad).contains("agents.planner.delegate"),
        "{}",
        errors_of(&bad)
    );
    // served: the callback route answers (404 for a task it never delegated, in A2A's form)
    with_served(&ok, dir.path(), |base| async move {
        let resp = common::client()
            .post(format!("{base}/a2a/agents/planner/callbacks/tasks/nope"))
            .header("x-a2a-notification-token", "t")
            .json(&serde_json::json!({}))
            .send()
            .await
            .expect("answer");
        assert_eq!(resp.status(), 404);
        let problem: serde_json::Value = resp.json().await.expect("a problem");
        assert!(problem.to_string().contains("nope"), "{problem}");
    });
}

/// `a2a_version` is an `a2a:` agent's option, one of the versions the gateway speaks; `e2a
/// config check` says so at its key.
#[test]
fn a2a_version_is_an_a2a_agents_option() {
    let dir = tempfile::tempdir().expect("dir");
    let errors_of = |text: &str| problems(text, dir.path());
    for version in ["1.0", "0.3"] {
        let ok = format!(
            "[agents.goai]\nagent = \"a2a:https://goai.example/a2a/agents/writer\"\na2a_version = \"{version}\"\n"
        );
        assert_eq!(errors_of(&ok), "");
    }
    let text = errors_of("[agents.e]\nagent = \"echo\"\na2a_version = \"1.0\"\n");
    assert!(
        text.contains("agents.e.a2a_version") && text.contains("a2a: agents"),
        "{text}"
    );
    let text = errors_of("[agents.g]\nagent = \"a2a:https://g.example\"\na2a_version = \"2.0\"\n");
    assert!(text.contains("agents.g.a2a_version"), "{text}");
}

/// `GET /` lists what the gateway serves — the root's endpoints, each named agent's, `/metrics`
/// when it is served — to a caller with a valid credential.
#[test]
fn the_index_lists_what_is_served() {
    let dir = tempfile::tempdir().expect("dir");
    std::fs::write(dir.path().join("token"), "index-token-value\n").expect("token");
    let text = "[server]\ntoken_file = \"token\"\n[a2a]\nenabled = true\n[metrics]\nenabled = true\n\
                [agents.writer]\nagent = \"echo\"\n";
    with_served(text, dir.path(), |base| async move {
        let index = format!("{base}/");
        let refused = common::client().get(&index).send().await.expect("answer");
        assert_eq!(refused.status(), 401);
        let resp = common::client()
            .get(&index)
            .bearer_auth("index-token-value")
            .send()
            .await
            .expect("answer");
        assert_eq!(resp.status(), 200);
        let index: serde_json::Value = resp.json().await.expect("JSON");
        let has = |list: &serde_json::Value, line: &str| {
            list.as_array()
                .is_some_and(|l| l.iter().any(|e| e.as_str().is_some_and(|e| e.starts_with(line))))
        };
        assert!(has(&index["endpoints"], "POST /v1/e2a/requests"), "{index}");
        assert!(has(&index["endpoints"], "POST /a2a  A2A JSON-RPC"), "{index}");
        assert!(
            has(&index["agents"]["writer"], "POST /a2a/agents/writer  A2A JSON-RPC"),
            "{index}"
        );
        assert!(
            has(&index["agents"]["writer"], "POST /agents/writer/v1/e2a/requests"),
            "{index}"
        );
        assert_eq!(index["metrics"], "/metrics");
        assert_eq!(index["agent"], "echo");
    });
}
