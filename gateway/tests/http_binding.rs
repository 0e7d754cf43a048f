//! E2A over HTTP with a real client: media types, resumption, cancellation, errors, limits.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use e2a::E2AResponse;
use e2a_gateway::{Auth, GatewayConfig};
use serde_json::{json, Value};

#[tokio::test]
async fn json_sse_and_ndjson_of_the_same_scripted_run_carry_the_same_frames() {
    let server = start(Arc::new(script()), fast_config()).await;
    let body = envelope("what is the weather?");

    let sse = post(&server.base, &body, "text/event-stream").await;
    assert_eq!(sse.status(), 200);
    assert_eq!(sse.headers()["content-type"], "text/event-stream");
    let sse = sse_frames(&sse.text().await.expect("sse body"));

    let nd = post(&server.base, &body, "application/x-ndjson").await;
    assert_eq!(nd.headers()["content-type"], "application/x-ndjson");
    let nd = ndjson_frames(&nd.text().await.expect("ndjson body"));

    let js = post(&server.base, &body, "application/json").await;
    assert_eq!(js.headers()["content-type"], "application/json");
    let js = E2AResponse::from_json(&js.text().await.expect("json body")).expect("final frame");

    assert!(
        sse.len() >= 6,
        "reasoning, tool call, result, text chunks, final: {}",
        sse.len()
    );
    assert_valid_stream(&sse);
    assert_valid_stream(&nd);
    let a: Vec<Value> = sse.iter().map(essence).collect();
    let b: Vec<Value> = nd.iter().map(essence).collect();
    assert_eq!(a, b);
    // JSON answers the final frame, holding the tool call the stream carried (with its result)
    let mut final_frame = a[a.len() - 1].clone();
    let calls = js.body["result"]["tool_calls"].clone();
    assert_eq!(calls[0]["tool_call_id"], "call-1", "{calls}");
    assert_eq!(calls[0]["name"], "get_weather");
    assert_eq!(calls[0]["result"], json!({"temp_c": 21}));
    final_frame[4]["result"]["tool_calls"] = calls;
    assert_eq!(essence(&js), final_frame, "JSON answers the final frame");
    // frames of a streamed answer say so; the JSON answer is not a stream
    assert!(
        sse.iter().chain(&nd).all(|f| f.is_stream),
        "streamed frames say is_stream"
    );
    assert!(!js.is_stream);
    assert!(js.is_final);
    assert_eq!(js.request_id.as_deref(), body["request_id"].as_str());
    // the text chunks add up to the completed content
    let text: String = sse
        .iter()
        .filter(|f| f.body.get("delta_kind") == Some(&json!("text")))
        .filter_map(|f| f.body.get("delta").and_then(Value::as_str))
        .collect();
    assert_eq!(text, "It is 21 °C in Paris today.");
}

#[tokio::test]
async fn last_event_id_resumes_with_exactly_the_frames_after_it() {
    let server = start(
        Arc::new(script()),
        GatewayConfig {
            disconnect_grace: Duration::from_secs(5),
            ..fast_config()
        },
    )
    .await;
    let body = envelope("please count slowly");
    let mut first = post(&server.base, &body, "text/event-stream").await;
    let seen = read_frames(&mut first, 3).await;
    assert_eq!(seen.iter().map(|f| f.sequence).collect::<Vec<_>>(), vec![0, 1, 2]);
    drop(first); // the connection drops mid-stream

    let resumed = client()
        .post(server.url(e2a_gateway::bindings::e2a_http::REQUESTS_PATH))
        .header("accept", "text/event-stream")
        .header("content-type", "application/json")
        .header("last-event-id", "2")
        .body(body.to_string())
        .send()
        .await
        .expect("resume");
    assert_eq!(resumed.status(), 200);
    let rest = sse_frames(&resumed.text().await.expect("body"));
    let seqs: Vec<u64> = rest.iter().map(|f| f.sequence).collect();
    let last = rest.last().expect("frames after 2");
    assert!(
        last.is_final && last.status == "succeeded",
        "the run went on while nobody listened"
    );
    assert_eq!(seqs, (3..=last.sequence).collect::<Vec<_>>());
    let mut all = seen.clone();
    all.extend(rest.iter().cloned());
    assert_valid_stream(&all);

    // after the end, within the retention window, any position can be replayed
    let again = client()
        .post(server.url(e2a_gateway::bindings::e2a_http::REQUESTS_PATH))
        .header("accept", "application/x-ndjson")
        .header("content-type", "application/json")
        .header("last-event-id", "6")
        .body(body.to_string())
        .send()
        .await
        .expect("replay");
    let tail = ndjson_frames(&again.text().await.expect("body"));
    assert_eq!(
        tail.iter().map(|f| f.response_id.clone()).collect::<Vec<_>>(),
        all.iter()
            .filter(|f| f.sequence > 6)
            .map(|f| f.response_id.clone())
            .collect::<Vec<_>>()
    );

    // an unknown stream cannot be resumed
    let unknown = client()
        .post(server.url(e2a_gateway::bindings::e2a_http::REQUESTS_PATH))
        .header("accept", "text/event-stream")
        .header("content-type", "application/json")
        .header("last-event-id", "0")
        .body(envelope("x").to_string())
        .send()
        .await
        .expect("unknown");
    assert_eq!(unknown.status(), 404);
    assert_eq!(unknown.headers()["content-type"], "application/problem+json");
}

#[tokio::test]
async fn with_on_disconnect_cancel_a_client_that_disconnects_cancels_the_agent_run() {
    let agent = script();
    let stats = agent.stats();
    let server = start(Arc::new(agent), cancelling_config()).await;
    let mut resp = post(&server.base, &envelope("never finish"), "text/event-stream").await;
    let first = read_frames(&mut resp, 1).await;
    assert_eq!(first.len(), 1);
    assert_eq!(stats.started(), 1);
    assert_eq!(server.gateway.live_streams(), 1);
    drop(resp);
    eventually("the script run is cancelled", || stats.cancelled() == 1).await;
    eventually("the stream slot is released", || server.gateway.live_streams() == 0).await;
    assert_eq!(stats.finished(), 0);
}

async fn problem(resp: reqwest::Response) -> (u16, Value) {
    let status = resp.status().as_u16();
    assert_eq!(
        resp.headers()["content-type"],
        "application/problem+json",
        "status {status}"
    );
    let v: Value = serde_json::from_str(&resp.text().await.expect("body")).expect("problem json");
    assert_eq!(v["status"], status);
    (status, v)
}

#[tokio::test]
async fn refused_requests_get_problem_json_naming_the_cause() {
    let config = GatewayConfig {
        auth: Auth::token("s3cret-token"),
        limits: e2a::Limits {
            max_bytes: 4096,
            ..e2a::Limits::default()
        },
        ..fast_config()
    };
    let server = start(Arc::new(script()), config).await;
    let url = server.url(e2a_gateway::bindings::e2a_http::REQUESTS_PATH);
    let c = client();
    let send = |auth: Option<&'static str>, ctype: &'static str, body: String| {
        let mut r = c.post(&url).header("content-type", ctype).body(body);
        if let Some(a) = auth {
            r = r.header("authorization", a);
        }
        r.send()
    };
    let ok_body = envelope("hi").to_string();

    // 401: no token, wrong token
    for auth in [None, Some("Bearer wrong"), Some("Basic czNjcmV0LXRva2Vu")] {
        let resp = send(auth, "application/json", ok_body.clone()).await.expect("send");
        assert_eq!(resp.headers()["www-authenticate"], "Bearer realm=\"e2a\"");
        let (status, p) = problem(resp).await;
        assert_eq!(status, 401);
        assert_eq!(p["code"], "E2A.AUTH_REQUIRED");
        assert!(!p.to_string().contains("s3cret"), "the token is never echoed");
    }
    let good = Some("Bearer s3cret-token");
    let resp = send(good, "application/json", ok_body.clone()).await.expect("send");
    assert_eq!(resp.status(), 200);

    // 413: body too large
    let big = json!({"method": "chat.send", "params": {"query": "x".repeat(5000)}}).to_string();
    let (status, p) = problem(send(good, "application/json", big).await.expect("send")).await;
    assert_eq!((status, p["code"].as_str()), (413, Some("E2A.INVALID_REQUEST")));
    assert!(p["detail"].as_str().unwrap_or("").contains("max_bytes"), "{p}");

    // 415: not JSON
    let (status, p) = problem(send(good, "text/plain", ok_body.clone()).await.expect("send")).await;
    assert_eq!(
        (status, p["code"].as_str()),
        (415, Some("E2A.CONTENT_TYPE_NOT_SUPPORTED"))
    );

    // 400: malformed JSON
    let (status, p) = problem(
        send(good, "application/json", "{\"method\": ".into())
            .await
            .expect("send"),
    )
    .await;
    assert_eq!((status, p["code"].as_str()), (400, Some("E2A.INVALID_JSON")));
    assert_eq!(p["pointer"], "");

    // 422: a wrong-typed field, named by its JSON pointer
    let wrong = json!({"method": "chat.send", "params": {}, "is_stream": "yes"}).to_string();
    let (status, p) = problem(send(good, "application/json", wrong).await.expect("send")).await;
    assert_eq!((status, p["code"].as_str()), (422, Some("E2A.INVALID_PARAMS")));
    assert_eq!(p["pointer"], "/is_stream");
    assert_eq!(p["errors"][0]["pointer"], "/is_stream");

    // 400: too deep
    let deep = format!("{{\"params\": {}1{}}}", "[".repeat(100), "]".repeat(100));
    let (status, p) = problem(send(good, "application/json", deep).await.expect("send")).await;
    assert_eq!((status, p["code"].as_str()), (400, Some("E2A.INVALID_REQUEST")));
    assert!(p["detail"].as_str().unwrap_or("").contains("max_depth"), "{p}");

    // 406: nothing acceptable
    let resp = c
        .post(&url)
        .header("authorization", "Bearer s3cret-token")
        .header("content-type", "application/json")
        .header("accept", "image/png")
        .body(ok_body.clone())
        .send()
        .await
        .expect("send");
    let close = resp.headers().get("connection").map(|v| v.as_bytes().to_vec());
    assert_eq!(
        close.as_deref(),
        Some(&b"close"[..]),
        "406 is answered before the body is read"
    );
    let (status, _) = problem(resp).await;
    assert_eq!(status, 406);

    // 405 and 404 are problems too
    let get = c
        .get(&url)
        .header("authorization", "Bearer s3cret-token")
        .send()
        .await
        .expect("send");
    assert_eq!(get.headers()["allow"], "POST");
    let (status, _) = problem(get).await;
    assert_eq!(status, 405);
    let (status, _) = problem(c.get(server.url("/nope")).send().await.expect("send")).await;
    assert_eq!(status, 404);
    // without a token a wrong method is 401: the token is checked before the method
    let (status, _) = problem(c.get(&url).send().await.expect("send")).await;
    assert_eq!(status, 401);
    // a refusal sent before the request's body was read says the connection closes (its
    // body is still on it); an answer sent after reading it keeps the connection
    let refused = c
        .post(&url)
        .header("content-type", "application/json")
        .body(ok_body.clone())
        .send()
        .await
        .expect("send");
    assert_eq!(refused.status(), 401);
    assert_eq!(
        refused.headers().get("connection").map(|v| v.as_bytes()),
        Some(&b"close"[..])
    );
    let (status, _) = problem(
        c.post(server.url("/nope"))
            .body("x".repeat(64))
            .send()
            .await
            .expect("send"),
    )
    .await;
    assert_eq!(status, 404);
    let invalid = c
        .post(&url)
        .header("authorization", "Bearer s3cret-token")
        .header("content-type", "application/json")
        .body("{\"method\": 7}")
        .send()
        .await
        .expect("send");
    assert_eq!(invalid.status(), 422);
    assert!(invalid.headers().get("connection").is_none(), "the body was read");

    // the health check needs no token; the schema does
    let health = c.get(server.url("/healthz")).send().await.expect("send");
    assert_eq!(health.status(), 200);
    let (status, _) = problem(c.get(server.url("/v1/e2a/schema")).send().await.expect("send")).await;
    assert_eq!(status, 401);
    let schema = c
        .get(server.url("/v1/e2a/schema"))
        .header("authorization", "Bearer s3cret-token")
        .send()
        .await
        .expect("send");
    assert_eq!(schema.headers()["content-type"], "application/schema+json");
    let schema: Value = serde_json::from_str(&schema.text().await.expect("body")).expect("schema");
    assert!(schema["$defs"]["E2AEnvelope"].is_object());
}

#[tokio::test]
async fn past_the_stream_cap_requests_get_503_with_retry_after() {
    // (a run whose client went away frees its slot when it is cancelled)
    let config = GatewayConfig {
        max_streams: 1,
        ..cancelling_config()
    };
    let server = start(Arc::new(script()), config).await;
    let mut open = post(&server.base, &envelope("never finish"), "text/event-stream").await;
    assert_eq!(read_frames(&mut open, 1).await.len(), 1);
    let refused = post(&server.base, &envelope("hi"), "application/json").await;
    assert_eq!(refused.headers()["retry-after"], "1");
    let (status, p) = problem(refused).await;
    assert_eq!(status, 503);
    assert!(p["detail"].as_str().unwrap_or("").contains("too many"));
    drop(open);
    eventually("the slot is free again", || server.gateway.live_streams() == 0).await;
    let ok = post(&server.base, &envelope("hi"), "application/json").await;
    assert_eq!(ok.status(), 200);
}

#[tokio::test]
async fn idle_and_total_deadlines_end_the_run_with_a_timeout_frame() {
    let mut config = fast_config();
    config.deadlines.idle = Some(Duration::from_millis(300));
    let server = start(Arc::new(script()), config).await;
    let resp = post(&server.base, &envelope("never finish"), "text/event-stream").await;
    let frames = sse_frames(&resp.text().await.expect("body"));
    assert_valid_stream(&frames);
    let last = frames.last().expect("frames");
    assert_eq!(last.body["code"], "E2A.TIMEOUT");
    assert_eq!(last.body["details"]["deadline"], "idle");

    let config = GatewayConfig {
        max_run: Some(Duration::from_millis(300)),
        ..fast_config()
    };
    let server = start(Arc::new(script()), config).await;
    let resp = post(&server.base, &envelope("never finish"), "application/json").await;
    let last = E2AResponse::from_json(&resp.text().await.expect("body")).expect("frame");
    assert_eq!(last.body["code"], "E2A.TIMEOUT");
    assert_eq!(last.body["details"]["deadline"], "total");
}

#[tokio::test]
async fn shutdown_drains_open_streams_each_with_a_final_frame() {
    let config = GatewayConfig {
        drain_timeout: Duration::from_millis(1500),
        ..fast_config()
    };
    let mut server = start(Arc::new(script()), config).await;
    let mut forever = post(&server.base, &envelope("never finish"), "text/event-stream").await;
    assert_eq!(read_frames(&mut forever, 1).await.len(), 1);
    let slow = tokio::spawn({
        let base = server.base.clone();
        async move {
            post(&base, &envelope("count slowly"), "application/x-ndjson")
                .await
                .text()
                .await
        }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    server.shutdown();
    // the slow run finishes within the drain time; the endless one is cut off
    let rest = read_frames(&mut forever, 2).await;
    let last = rest.last().expect("final");
    assert!(last.is_final);
    assert_eq!(last.body["code"], "E2A.CANCELLED");
    assert_eq!(last.body["details"]["reason"], "shutdown");
    let slow = ndjson_frames(&slow.await.expect("join").expect("body"));
    assert_valid_stream(&slow);
    assert_eq!(slow.last().map(|f| f.status.as_str()), Some("succeeded"));
    let served = tokio::time::timeout(Duration::from_secs(5), server.task).await;
    assert!(matches!(served, Ok(Ok(Ok(())))), "serve returns Ok after the drain");
}

#[tokio::test]
async fn with_on_disconnect_cancel_a_json_client_that_gives_up_cancels_the_run_and_the_log_gets_a_final_frame() {
    let agent = script();
    let stats = agent.stats();
    let server = start(Arc::new(agent), cancelling_config()).await;
    let body = envelope("never finish");
    let gave_up = client()
        .post(server.url(e2a_gateway::bindings::e2a_http::REQUESTS_PATH))
        .header("content-type", "application/json")
        .timeout(Duration::from_millis(300))
        .body(body.to_string())
        .send()
        .await;
    assert!(gave_up.is_err(), "the run never finishes");
    eventually("the script run is cancelled", || stats.cancelled() == 1).await;
    eventually("the stream slot is released", || server.gateway.live_streams() == 0).await;
    // the retained log ends with a cancellation frame
    let replay = client()
        .post(server.url(e2a_gateway::bindings::e2a_http::REQUESTS_PATH))
        .header("accept", "application/x-ndjson")
        .header("content-type", "application/json")
        .header("last-event-id", "0")
        .body(body.to_string())
        .send()
        .await
        .expect("replay");
    let rest = ndjson_frames(&replay.text().await.expect("body"));
    let last = rest.last().expect("a final frame");
    assert!(last.is_final);
    assert_eq!(last.body["code"], "E2A.CANCELLED");
    assert_eq!(last.sequence, 1);
}

/// A JSON request without a `request_id` (and no `Idempotency-Key`, no store keeping runs) is
/// answered inline, outside the run registry: its answer is the same whole answer, a client
/// that gives up cancels it at once, and a shutdown cuts it off with `E2A.CANCELLED`.
#[tokio::test]
async fn a_json_request_nobody_can_resume_is_answered_inline_and_still_cut_off() {
    let agent = script();
    let stats = agent.stats();
    let config = GatewayConfig {
        drain_timeout: Duration::from_millis(300),
        ..fast_config()
    };
    let mut server = start(Arc::new(agent), config).await;
    let unnamed = |text: &str| serde_json::json!({"method": "chat.send", "params": {"query": text}});
    // answered: the final frame with a server-made request_id
    let done = post(&server.base, &unnamed("hello"), "application/json").await;
    assert_eq!(done.status(), 200);
    let done: Value = done.json().await.expect("json");
    assert!(done["is_final"].as_bool().unwrap_or(false), "{done}");
    assert!(done["request_id"].as_str().is_some_and(|id| !id.is_empty()), "{done}");
    // a client that gives up: the run is cancelled, its slot released
    let gave_up = client()
        .post(server.url(e2a_gateway::bindings::e2a_http::REQUESTS_PATH))
        .header("content-type", "application/json")
        .timeout(Duration::from_millis(300))
        .body(unnamed("never finish").to_string())
        .send()
        .await;
    assert!(gave_up.is_err(), "the run never finishes");
    eventually("the script run is cancelled", || stats.cancelled() == 1).await;
    eventually("the stream slot is released", || server.gateway.live_streams() == 0).await;
    // a shutdown cuts a run still going off, and its client gets the final frame saying so
    let waiting = tokio::spawn({
        let base = server.base.clone();
        let body = unnamed("never finish");
        async move { post(&base, &body, "application/json").await.text().await }
    });
    eventually("the run is open", || server.gateway.live_streams() == 1).await;
    server.shutdown();
    let last: Value = serde_json::from_str(&waiting.await.expect("join").expect("body")).expect("a frame");
    assert_eq!(last["body"]["code"], "E2A.CANCELLED", "{last}");
    assert_eq!(last["body"]["details"]["reason"], "shutdown", "{last}");
    let served = tokio::time::timeout(Duration::from_secs(5), server.task).await;
    assert!(matches!(served, Ok(Ok(Ok(())))), "serve returns Ok after the drain");
}

/// [`fast_config`] with `on_disconnect = "cancel"`: a run whose every client went away is
/// cancelled after the grace period.
fn cancelling_config() -> GatewayConfig {
    GatewayConfig {
        on_disconnect: e2a::types::OnDisconnect::Cancel,
        ..fast_config()
    }
}
