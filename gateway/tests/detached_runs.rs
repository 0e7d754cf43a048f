//! Runs that outlive their client (`on_disconnect = "detach"`, the default) and the E2A run
//! resource (`/v1/e2a/runs`): a real HTTP client against a gateway on 127.0.0.1.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use e2a::E2AResponse;
use e2a_gateway::{Auth, Gateway, GatewayConfig};
use futures_util::StreamExt;
use serde_json::{json, Value};

const ONE: &str = "token-of-caller-one";
const TWO: &str = "token-of-caller-two";

fn two_callers(dir: &tempfile::TempDir) -> GatewayConfig {
    let path = dir.path().join("tokens.txt");
    std::fs::write(&path, format!("{ONE}\n{TWO}\n")).expect("token file");
    GatewayConfig {
        auth: Auth::from_file(&path).expect("tokens"),
        ..fast_config()
    }
}

/// A request of the caller of `token` to `path` (`POST` with `body`, else `GET`).
async fn call(
    server: &Server,
    token: &str,
    path: &str,
    body: Option<&Value>,
    headers: &[(&str, &str)],
) -> reqwest::Response {
    call_at(&server.base, token, path, body, headers).await
}

/// [`call`] to the gateway at `base`.
async fn call_at(
    base: &str,
    token: &str,
    path: &str,
    body: Option<&Value>,
    headers: &[(&str, &str)],
) -> reqwest::Response {
    let c = client();
    let url = format!("{base}{path}");
    let mut req = match body {
        Some(b) => c
            .post(url)
            .header("content-type", "application/json")
            .body(b.to_string()),
        None => c.get(url),
    };
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    if !token.is_empty() {
        req = req.bearer_auth(token);
    }
    req.send().await.expect("send")
}

async fn json_of(resp: reqwest::Response) -> (u16, Value) {
    let status = resp.status().as_u16();
    let text = resp.text().await.expect("body");
    (
        status,
        serde_json::from_str(&text).unwrap_or_else(|_| panic!("json: {text}")),
    )
}

/// The run resource of `id`, once its state is not `running` (bounded).
async fn settled(server: &Server, token: &str, id: &str) -> Value {
    settled_at(&server.base, token, id).await
}

/// [`settled`] at the gateway at `base`.
async fn settled_at(base: &str, token: &str, id: &str) -> Value {
    for _ in 0..200 {
        let (status, run) = json_of(call_at(base, token, &format!("/v1/e2a/runs/{id}"), None, &[]).await).await;
        assert_eq!(status, 200, "{run}");
        if run["state"] != "running" {
            return run;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("run {id} still running");
}

fn text_of(frames: &[E2AResponse]) -> String {
    frames
        .iter()
        .filter(|f| f.body.get("delta_kind") == Some(&json!("text")))
        .filter_map(|f| f.body.get("delta").and_then(Value::as_str))
        .collect()
}

#[tokio::test]
async fn an_sse_client_that_goes_away_leaves_its_run_running_to_the_end_and_readable_by_id() {
    let dir = tempfile::tempdir().expect("tmp");
    let agent = script();
    let stats = agent.stats();
    let server = start(Arc::new(agent), two_callers(&dir)).await;
    let body = envelope("count slowly");
    let id = body["request_id"].as_str().expect("id").to_string();
    let mut resp = call(
        &server,
        ONE,
        "/v1/e2a/requests",
        Some(&body),
        &[("accept", "text/event-stream")],
    )
    .await;
    assert_eq!(read_frames(&mut resp, 1).await.len(), 1);
    drop(resp);
    // the client is gone: the run goes on (default `on_disconnect = "detach"`)
    eventually("the run finished without its client", || stats.finished() == 1).await;
    assert_eq!(stats.cancelled(), 0);
    let run = settled(&server, ONE, &id).await;
    assert_eq!(run["state"], "succeeded", "{run}");
    assert_eq!(run["run_id"], id.as_str());
    assert_eq!(run["frames"], 9, "{run}");
    assert_eq!(run["final_frame"]["is_final"], true, "{run}");
    assert!(
        run["created_at"].as_str().is_some() && run["updated_at"].as_str().is_some(),
        "{run}"
    );
    // the whole answer, as JSON and as a stream from where the client left
    let (status, all) = json_of(call(&server, ONE, &format!("/v1/e2a/runs/{id}/frames"), None, &[]).await).await;
    assert_eq!(status, 200);
    let all: Vec<E2AResponse> = serde_json::from_value(all).expect("frames");
    assert_valid_stream(&all);
    assert_eq!(text_of(&all), "1 2 3 4 5 6 7 8 ");
    let rest = call(
        &server,
        ONE,
        &format!("/v1/e2a/runs/{id}/frames"),
        None,
        &[("accept", "text/event-stream"), ("last-event-id", "0")],
    )
    .await;
    let rest = sse_frames(&rest.text().await.expect("body"));
    assert_eq!(rest.first().map(|f| f.sequence), Some(1));
    assert_eq!(text_of(&rest), "2 3 4 5 6 7 8 ");
    // another caller does not see it
    let other = call(&server, TWO, &format!("/v1/e2a/runs/{id}"), None, &[]).await;
    assert_eq!(other.status(), 404);
}

#[tokio::test]
async fn with_on_disconnect_cancel_a_client_that_goes_away_cancels_its_run() {
    let agent = script();
    let stats = agent.stats();
    let config = GatewayConfig {
        on_disconnect: e2a::types::OnDisconnect::Cancel,
        ..fast_config()
    };
    let server = start(Arc::new(agent), config).await;
    let body = envelope("count slowly");
    let mut resp = post(&server.base, &body, "text/event-stream").await;
    assert_eq!(read_frames(&mut resp, 1).await.len(), 1);
    drop(resp);
    eventually("the run is cancelled", || stats.cancelled() == 1).await;
    assert_eq!(stats.finished(), 0);
}

#[tokio::test]
async fn a_submitted_run_is_accepted_looked_up_read_and_cancelled_by_its_caller() {
    let dir = tempfile::tempdir().expect("tmp");
    let server = start(Arc::new(script()), two_callers(&dir)).await;
    // 202 and the run, Location naming it relative to the collection
    let body = envelope("weather");
    let id = body["request_id"].as_str().expect("id").to_string();
    let resp = call(&server, ONE, "/v1/e2a/runs", Some(&body), &[]).await;
    assert_eq!(resp.headers()["location"], format!("runs/{id}").as_str());
    let (status, run) = json_of(resp).await;
    assert_eq!(status, 202, "{run}");
    assert_eq!(run["run_id"], id.as_str());
    assert_eq!(run["agent"], "script");
    let run = settled(&server, ONE, &id).await;
    assert_eq!(run["state"], "succeeded", "{run}");
    // the same request_id again, without an Idempotency-Key: 409
    let (status, problem) = json_of(call(&server, ONE, "/v1/e2a/runs", Some(&body), &[]).await).await;
    assert_eq!(
        (status, problem["pointer"].as_str()),
        (409, Some("/request_id")),
        "{problem}"
    );
    // a request without request_id gets one
    let (status, run) = json_of(
        call(
            &server,
            ONE,
            "/v1/e2a/runs",
            Some(&json!({"method": "chat.send", "params": {"query": "weather"}})),
            &[],
        )
        .await,
    )
    .await;
    assert_eq!(status, 202);
    assert!(run["run_id"].as_str().is_some_and(|r| !r.is_empty()), "{run}");
    // cancel: a run going on ends cancelled; an ended run is answered as it is
    let forever = envelope("never finish");
    let fid = forever["request_id"].as_str().expect("id").to_string();
    assert_eq!(
        call(&server, ONE, "/v1/e2a/runs", Some(&forever), &[]).await.status(),
        202
    );
    let (status, run) = json_of(call(&server, ONE, &format!("/v1/e2a/runs/{fid}"), None, &[]).await).await;
    assert_eq!((status, run["state"].as_str()), (200, Some("running")), "{run}");
    let (status, stopped) = json_of(
        call(
            &server,
            TWO,
            &format!("/v1/e2a/runs/{fid}:cancel"),
            Some(&json!({})),
            &[],
        )
        .await,
    )
    .await;
    assert_eq!(status, 404, "another caller cannot cancel it: {stopped}");
    let (status, stopped) = json_of(
        call(
            &server,
            ONE,
            &format!("/v1/e2a/runs/{fid}:cancel"),
            Some(&json!({})),
            &[],
        )
        .await,
    )
    .await;
    assert_eq!(
        (status, stopped["state"].as_str()),
        (200, Some("cancelled")),
        "{stopped}"
    );
    assert_eq!(stopped["final_frame"]["body"]["code"], "E2A.CANCELLED", "{stopped}");
    assert_eq!(
        stopped["final_frame"]["body"]["details"]["reason"], "cancelled",
        "{stopped}"
    );
    let (status, again) = json_of(
        call(
            &server,
            ONE,
            &format!("/v1/e2a/runs/{id}:cancel"),
            Some(&json!({})),
            &[],
        )
        .await,
    )
    .await;
    assert_eq!((status, again["state"].as_str()), (200, Some("succeeded")), "{again}");
    // unknown runs and wrong methods
    assert_eq!(call(&server, ONE, "/v1/e2a/runs/nope", None, &[]).await.status(), 404);
    assert_eq!(
        call(&server, ONE, "/v1/e2a/runs/nope/frames", None, &[]).await.status(),
        404
    );
    assert_eq!(
        call(&server, ONE, &format!("/v1/e2a/runs/{id}:cancel"), None, &[])
            .await
            .status(),
        405
    );
    assert_eq!(
        call(&server, ONE, &format!("/v1/e2a/runs/{id}"), Some(&json!({})), &[])
            .await
            .status(),
        405
    );
}

#[tokio::test]
async fn an_idempotency_key_makes_a_submit_safe_to_retry() {
    let server = start(Arc::new(script()), fast_config()).await;
    let key = [("idempotency-key", "submit-1")];
    let body = json!({"method": "chat.send", "params": {"query": "weather"}});
    let (status, first) = json_of(call(&server, "", "/v1/e2a/runs", Some(&body), &key).await).await;
    assert_eq!(status, 202, "{first}");
    // the same request (keys in another order): 200 and the same run, not a second one
    let reordered = json!({"params": {"query": "weather"}, "method": "chat.send"});
    let (status, again) = json_of(call(&server, "", "/v1/e2a/runs", Some(&reordered), &key).await).await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(again["run_id"], first["run_id"]);
    // another request under the key: 409
    let other = json!({"method": "chat.send", "params": {"query": "report please"}});
    let (status, problem) = json_of(call(&server, "", "/v1/e2a/runs", Some(&other), &key).await).await;
    assert_eq!(status, 409, "{problem}");
}

/// AG-UI: a client that goes away after the run started leaves it running; the same
/// `threadId`/`runId` with `Last-Event-ID: 0` later reads every event, to `RUN_FINISHED`.
#[tokio::test]
async fn an_agui_client_that_goes_away_mid_run_reads_the_whole_answer_later() {
    let agent = script();
    let stats = agent.stats();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let gateway = Gateway::with_agent(Arc::new(agent), fast_config()).with_agui();
    let (_stop, rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(gateway.serve(listener, async move {
        let _ = rx.await;
    }));
    let input = json!({"threadId": "t-detach", "runId": format!("run-{}", uuid()),
        "messages": [{"id": "m1", "role": "user", "content": "count slowly"}],
        "tools": [], "context": [], "state": {}, "forwardedProps": {}});
    let post = |last_event_id: Option<&str>| {
        let mut req = client()
            .post(format!("{base}/agui"))
            .header("content-type", "application/json")
            .header("accept", "text/event-stream")
            .body(input.to_string());
        if let Some(id) = last_event_id {
            req = req.header("last-event-id", id);
        }
        req.send()
    };
    let resp = post(None).await.expect("send");
    let mut body = Box::pin(resp.bytes_stream());
    let mut seen = String::new();
    while !seen.contains("RUN_STARTED") {
        let chunk = tokio::time::timeout(Duration::from_secs(10), body.next())
            .await
            .expect("in time")
            .expect("a chunk")
            .expect("bytes");
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    drop(body);
    eventually("the run finished without its client", || stats.finished() == 1).await;
    assert_eq!(stats.cancelled(), 0);
    let later = post(Some("0")).await.expect("send");
    assert_eq!(later.status(), 200);
    let text = tokio::time::timeout(Duration::from_secs(10), later.text())
        .await
        .expect("in time")
        .expect("body");
    let events: Vec<Value> = sse_events(&text).into_iter().map(|(_, e)| e).collect();
    e2a::agui::verify_events(&events).expect("a valid AG-UI stream");
    assert_eq!(events.first().map(|e| e["type"].clone()), Some(json!("RUN_STARTED")));
    assert_eq!(events.last().map(|e| e["type"].clone()), Some(json!("RUN_FINISHED")));
    let said: String = events
        .iter()
        .filter(|e| e["type"] == "TEXT_MESSAGE_CONTENT")
        .filter_map(|e| e["delta"].as_str())
        .collect();
    assert_eq!(said, "1 2 3 4 5 6 7 8 ");
}

/// `id`s of the runs of a page.
fn ids_of(page: &Value) -> Vec<String> {
    page["runs"]
        .as_array()
        .expect("runs")
        .iter()
        .map(|r| r["run_id"].as_str().expect("run_id").to_string())
        .collect()
}

/// A submitted run of `token`'s caller asking `text`, once ended: its id.
async fn submitted(base: &str, token: &str, text: &str) -> String {
    let body = envelope(text);
    let id = body["request_id"].as_str().expect("id").to_string();
    let (status, run) = json_of(call_at(base, token, "/v1/e2a/runs", Some(&body), &[]).await).await;
    assert_eq!(status, 202, "{run}");
    settled_at(base, token, &id).await;
    id
}

#[tokio::test]
async fn a_callers_runs_are_listed_newest_first_a_page_at_a_time_and_replayed() {
    let dir = tempfile::tempdir().expect("tmp");
    let server = start(Arc::new(script()), two_callers(&dir)).await;
    let mut mine = Vec::new();
    for _ in 0..2 {
        mine.push(submitted(&server.base, ONE, "weather").await);
    }
    // a request answered inline is a run of its caller too
    let inline = envelope("weather");
    let resp = post_auth(&server.base, &inline, "application/json", Some(ONE)).await;
    assert_eq!(resp.status(), 200);
    mine.push(inline["request_id"].as_str().expect("id").to_string());
    let theirs = submitted(&server.base, TWO, "weather").await;

    let list = |token: &'static str, query: &'static str| {
        let base = server.base.clone();
        async move { json_of(call_at(&base, token, &format!("/v1/e2a/runs{query}"), None, &[]).await).await }
    };
    let (status, first) = list(ONE, "?page_size=2").await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["total_size"], 3, "{first}");
    assert_eq!(ids_of(&first), [mine[2].clone(), mine[1].clone()], "{first}");
    assert!(first["runs"]
        .as_array()
        .expect("runs")
        .iter()
        .all(|r| r["state"] == "succeeded" && r["frames"].as_u64() > Some(1)));
    let token = first["next_page_token"].as_str().expect("a next page").to_string();
    let (_, second) = json_of(
        call(
            &server,
            ONE,
            &format!("/v1/e2a/runs?page_size=2&page_token={token}"),
            None,
            &[],
        )
        .await,
    )
    .await;
    assert_eq!(ids_of(&second), [mine[0].clone()], "{second}");
    assert_eq!(second["next_page_token"], Value::Null, "{second}");
    let (_, others) = list(TWO, "").await;
    assert_eq!(ids_of(&others), [theirs], "another caller sees only its own runs");
    for (query, parameter) in [
        ("?page_size=101", "page_size"),
        ("?page_size=x", "page_size"),
        ("?page_token=x", "page_token"),
    ] {
        let (status, problem) = list(ONE, query).await;
        assert_eq!(status, 400, "{query}: {problem}");
        assert!(
            problem["detail"].as_str().is_some_and(|d| d.contains(parameter)),
            "{problem}"
        );
    }

    // a replay: a new run of the same request, naming the run it replays
    let resp = call(
        &server,
        ONE,
        &format!("/v1/e2a/runs/{}:replay", mine[0]),
        Some(&json!({})),
        &[],
    )
    .await;
    let location = resp.headers()["location"].to_str().expect("location").to_string();
    let (status, replay) = json_of(resp).await;
    assert_eq!(status, 202, "{replay}");
    let rid = replay["run_id"].as_str().expect("id").to_string();
    assert_ne!(rid, mine[0]);
    assert_eq!(location, format!("runs/{rid}"));
    let replay = settled(&server, ONE, &rid).await;
    let original = settled(&server, ONE, &mine[0]).await;
    assert_eq!(replay["replay_of"], mine[0].as_str(), "{replay}");
    assert_eq!(original["replay_of"], Value::Null);
    assert_eq!(replay["state"], "succeeded", "{replay}");
    assert_eq!(replay["frames"], original["frames"]);
    assert_eq!(
        replay["final_frame"]["body"], original["final_frame"]["body"],
        "the same request, the same answer"
    );
    assert_eq!(list(ONE, "").await.1["total_size"], 4);
    // another caller's run, an unknown run, a wrong method
    let path = format!("/v1/e2a/runs/{}:replay", mine[0]);
    assert_eq!(call(&server, TWO, &path, Some(&json!({})), &[]).await.status(), 404);
    assert_eq!(
        call(&server, ONE, "/v1/e2a/runs/nope:replay", Some(&json!({})), &[])
            .await
            .status(),
        404
    );
    assert_eq!(call(&server, ONE, &path, None, &[]).await.status(), 405);
    let put = client()
        .put(server.url("/v1/e2a/runs"))
        .bearer_auth(ONE)
        .send()
        .await
        .expect("put");
    assert_eq!(put.status(), 405);
    assert_eq!(put.headers()["allow"], "GET, HEAD, POST");
}

/// With SQLite the list is the store's: a gateway started again on the file lists the runs
/// of the one before, and replays them.
#[tokio::test]
async fn runs_are_listed_and_replayed_after_a_restart() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("runs.db");
    let gateway = |dir: &tempfile::TempDir| {
        let store = Arc::new(e2a_gateway::store::SqliteStore::open(&path).expect("open"));
        Gateway::new(script(), two_callers(dir)).with_store(store)
    };
    let a = serve_crashable(gateway(&dir)).await;
    let mut mine = vec![
        submitted(&a.base, ONE, "weather").await,
        submitted(&a.base, ONE, "report please").await,
    ];
    drop(a);
    let b = serve_crashable(gateway(&dir)).await;
    let (status, page) = json_of(call_at(&b.base, ONE, "/v1/e2a/runs", None, &[]).await).await;
    assert_eq!(status, 200, "{page}");
    let mut listed = ids_of(&page);
    listed.sort();
    mine.sort();
    assert_eq!(listed, mine, "{page}");
    assert_eq!(page["total_size"], 2);
    let (status, replay) = json_of(
        call_at(
            &b.base,
            ONE,
            &format!("/v1/e2a/runs/{}:replay", mine[0]),
            Some(&json!({})),
            &[],
        )
        .await,
    )
    .await;
    assert_eq!(status, 202, "{replay}");
    let rid = replay["run_id"].as_str().expect("id");
    let replay = settled_at(&b.base, ONE, rid).await;
    let original = settled_at(&b.base, ONE, &mine[0]).await;
    assert_eq!(
        (replay["state"].as_str(), replay["replay_of"].as_str()),
        (Some("succeeded"), Some(mine[0].as_str()))
    );
    assert_eq!(replay["final_frame"]["body"], original["final_frame"]["body"]);
    let (_, page) = json_of(call_at(&b.base, ONE, "/v1/e2a/runs", None, &[]).await).await;
    assert_eq!(page["total_size"], 3, "the replay is listed: {page}");
    assert_eq!(ids_of(&page)[0], rid, "newest first: {page}");
}
