//! The embedded agents over real HTTP: every script step shape, the boundary cutting off
//! misbehaving agents, and a gateway in front of a second gateway (`E2aRemoteAgent`).

mod common;

use std::sync::Arc;

use common::*;
use e2a::E2AResponse;
use e2a_gateway::backends::{E2aRemoteAgent, E2aRemoteConfig, EchoAgent};
use e2a_gateway::{Auth, GatewayConfig};
use serde_json::{json, Value};

async fn sse(base: &str, body: &Value) -> Vec<E2AResponse> {
    sse_auth(base, body, None).await
}

async fn sse_auth(base: &str, body: &Value, token: Option<&str>) -> Vec<E2AResponse> {
    let resp = post_auth(base, body, "text/event-stream", token).await;
    assert_eq!(resp.status(), 200);
    let frames = sse_frames(&resp.text().await.expect("body"));
    assert_valid_stream(&frames);
    frames
}

fn with_message_id(prefix: &str) -> Value {
    let mut e = envelope("hello");
    e["message_id"] = json!(format!("{prefix}-{}", uuid()));
    e
}

#[tokio::test]
async fn misbehaving_agents_are_cut_off_with_an_error_final_frame() {
    let server = start(Arc::new(script()), fast_config()).await;
    for (prefix, violation) in [
        ("bad-gap", "gap"),
        ("bad-dup", "duplicate"),
        ("bad-final2", "second final"),
        ("bad-nofinal", "without a final"),
        ("bad-other", "another request"),
    ] {
        let frames = sse(&server.base, &with_message_id(prefix)).await;
        let last = frames.last().expect("a final frame");
        assert!(last.is_final, "{prefix}");
        assert_eq!(last.response_kind, "e2a.error", "{prefix}");
        assert_eq!(last.body["code"], "E2A.INVALID_AGENT_RESPONSE", "{prefix}");
        let message = last.body["message"].as_str().unwrap_or("");
        assert!(message.contains(violation), "{prefix}: {message}");
        assert_eq!(frames.iter().filter(|f| f.is_final).count(), 1, "{prefix}");
        // the offending frame itself was never forwarded
        assert!(
            frames
                .iter()
                .all(|f| f.body.get("delta") != Some(&json!("for someone else"))),
            "{prefix}"
        );
    }
}

#[tokio::test]
async fn script_steps_produce_every_frame_shape() {
    let server = start(Arc::new(script()), fast_config()).await;

    // artifacts: text, file and data in chunks, file by URL whole
    let frames = sse(&server.base, &envelope("send me the report")).await;
    let parts: Vec<&Value> = frames
        .iter()
        .filter(|f| f.body.get("event_type") == Some(&json!("artifact")))
        .map(|f| &f.body["delta"])
        .collect();
    let of = |id: &str| parts.iter().filter(|d| d["artifact_id"] == id).collect::<Vec<_>>();
    let notes = of("notes");
    assert_eq!(notes.len(), 3, "18 characters in chunks of 6");
    let text: String = notes.iter().filter_map(|d| d["parts"][0]["text"].as_str()).collect();
    assert_eq!(text, "# Notes\nAll good.");
    assert_eq!(notes[0]["append"], false);
    assert_eq!(notes[2]["last_chunk"], true);
    let pixel: String = of("pixel")
        .iter()
        .filter_map(|d| d["parts"][0]["raw"].as_str())
        .collect();
    assert!(pixel.starts_with("iVBORw0KGgo") && pixel.ends_with("ggg=="));
    assert!(of("pixel")
        .iter()
        .all(|d| d["parts"][0]["raw"].as_str().unwrap_or("").len() % 4 == 0));
    assert_eq!(of("big")[0]["parts"][0]["url"], "https://example.invalid/big.csv");
    assert_eq!(of("rows").len(), 2, "3 rows in chunks of 2");
    assert_eq!(
        frames.last().map(|f| f.body["result"]["content"].clone()),
        Some(json!("report ready"))
    );

    // a direct message instead of a task
    let mut msg = envelope("hi");
    msg["method"] = json!("message.send");
    let frames = sse(&server.base, &msg).await;
    assert_eq!(frames[0].response_kind, "a2a.message");
    assert_eq!(frames[0].body["parts"][0]["text"], "Hi! This is a message, not a task.");

    // rejection and failure
    let frames = sse(&server.base, &envelope("do something forbidden")).await;
    assert_eq!(
        frames.last().map(|f| f.body["code"].clone()),
        Some(json!("E2A.INVALID_REQUEST"))
    );
    let frames = sse(&server.base, &envelope("crash now")).await;
    let last = frames.last().expect("final");
    assert_eq!(
        (last.status.as_str(), last.body["code"].as_str()),
        ("failed", Some("E2A.AGENT_ERROR"))
    );

    // no scenario: the fallback scenario echoes the input
    let frames = sse(&server.base, &envelope("something else")).await;
    assert_eq!(frames[0].body["delta"], "You said: something else");
}

#[tokio::test]
async fn an_input_and_an_approval_pause_are_answered_by_follow_ups_of_the_same_task() {
    let server = start(Arc::new(script()), fast_config()).await;
    let task = format!("task-{}", uuid());
    let turn = |text: &str| {
        let mut e = envelope(text);
        e["task_id"] = json!(task);
        e
    };
    let frames = sse(&server.base, &turn("book a table")).await;
    let pause = &frames[frames.len() - 2];
    assert_eq!(pause.response_kind, "plan.approval_required");
    assert_eq!(pause.body["input_kind"], "input");
    assert_eq!(
        frames.last().map(|f| f.body["result"]["state"].clone()),
        Some(json!("input_required"))
    );

    let frames = sse(&server.base, &turn("4")).await;
    assert_eq!(frames[0].body["delta"], "A table for 4.");
    let pause = &frames[frames.len() - 2];
    assert_eq!(pause.body["input_kind"], "approval");
    assert_eq!(pause.body["plan_content"], "Book the table for 4 at 20:00?");

    let frames = sse(&server.base, &turn("yes")).await;
    assert_eq!(frames[0].body["delta"], "Booked.");
    assert_eq!(frames.last().map(|f| f.status.as_str()), Some("succeeded"));

    // the same conversation, denied this time
    let task2 = format!("task-{}", uuid());
    for text in ["book a table", "2"] {
        let mut e = envelope(text);
        e["task_id"] = json!(task2);
        sse(&server.base, &e).await;
    }
    let mut e = envelope("no");
    e["task_id"] = json!(task2);
    let frames = sse(&server.base, &e).await;
    assert_eq!(frames[0].body["delta"], "Not booked.");
}

#[tokio::test]
async fn a_gateway_in_front_of_a_second_gateway_carries_the_same_frames() {
    let back = start(
        Arc::new(script()),
        GatewayConfig {
            auth: Auth::token("back-token"),
            ..fast_config()
        },
    )
    .await;
    let mut remote = E2aRemoteConfig::new(back.base.clone());
    remote.token = Some("back-token".into());
    let remote = E2aRemoteAgent::new(remote).expect("remote agent");
    assert!(
        !format!("{remote:?}").contains("back-token"),
        "the credential is never printed"
    );
    let front = start(Arc::new(remote), fast_config()).await;

    for text in ["what is the weather?", "send me the report", "crash"] {
        let body = envelope(text);
        let direct = sse_auth(&back.base, &body, Some("back-token")).await;
        let via = sse(&front.base, &body).await;
        assert_eq!(
            direct.iter().map(essence).collect::<Vec<_>>(),
            via.iter().map(essence).collect::<Vec<_>>(),
            "{text}"
        );
    }

    // the remote server refusing the credential is an agent error, not a gateway failure
    let wrong = E2aRemoteAgent::new(E2aRemoteConfig::new(back.base.clone())).expect("remote agent");
    let front2 = start(Arc::new(wrong), fast_config()).await;
    let frames = sse(&front2.base, &envelope("hi")).await;
    let last = frames.last().expect("final");
    assert_eq!(last.body["code"], "E2A.AGENT_ERROR");
    assert_eq!(last.body["details"]["http_status"], 401);

    // a disconnect in front cancels the run there (`on_disconnect = "cancel"`), and that
    // cancels the run behind — which a closed stream alone does not, its runs being detached
    let agent = script();
    let stats = agent.stats();
    let back3 = start(Arc::new(agent), fast_config()).await;
    let front3 = start(
        Arc::new(E2aRemoteAgent::new(E2aRemoteConfig::new(back3.base.clone())).expect("remote")),
        GatewayConfig {
            on_disconnect: e2a::types::OnDisconnect::Cancel,
            ..fast_config()
        },
    )
    .await;
    let mut resp = post(&front3.base, &envelope("never finish"), "text/event-stream").await;
    assert_eq!(read_frames(&mut resp, 1).await.len(), 1);
    drop(resp);
    eventually("the run behind is cancelled", || stats.cancelled() == 1).await;
}

#[tokio::test]
async fn the_echo_agent_answers_like_the_demo() {
    let server = start(Arc::new(EchoAgent::new()), fast_config()).await;
    let frames = sse(&server.base, &envelope("hello gateway")).await;
    let kinds: Vec<&str> = frames
        .iter()
        .map(|f| f.body.get("delta_kind").and_then(Value::as_str).unwrap_or("-"))
        .collect();
    assert_eq!(kinds[..3], ["reasoning", "tool", "tool"]);
    assert!(kinds.contains(&"text"));
    assert_eq!(
        frames.last().map(|f| f.body["result"]["content"].clone()),
        Some(json!("You said: hello gateway"))
    );
}

#[test]
fn a_remote_url_may_not_carry_a_credential() {
    let err = E2aRemoteAgent::new(E2aRemoteConfig::new("http://user:pa55word@127.0.0.1:9/")).expect_err("refused");
    assert!(!err.to_string().contains("pa55word"));
    assert!(E2aRemoteAgent::new(E2aRemoteConfig::new("ftp://127.0.0.1/")).is_err());
    let ok = E2aRemoteAgent::new(E2aRemoteConfig::new("http://127.0.0.1:9")).expect("plain URL");
    assert_eq!(ok.endpoint(), "http://127.0.0.1:9/v1/e2a/requests");
}

/// Sends one frame, then panics.
struct Panics;

impl e2a_gateway::Agent for Panics {
    fn run(&self, request: e2a::E2AEnvelope, _ctx: e2a_gateway::RequestContext) -> e2a_gateway::FrameStream {
        use futures_util::StreamExt;
        let mut s = e2a::stream::ResponseStream::for_request(&request);
        let first = s.text("about to fail");
        Box::pin(futures_util::stream::iter([first]).chain(futures_util::stream::poll_fn(
            |_| -> std::task::Poll<Option<e2a::frame::Frame>> { panic!("agent bug") },
        )))
    }
}

#[tokio::test]
async fn an_agent_that_panics_is_cut_off_with_an_error_final_frame() {
    let server = start(Arc::new(Panics), fast_config()).await;
    for accept in ["text/event-stream", "application/json"] {
        let resp = post(&server.base, &envelope("hi"), accept).await;
        assert_eq!(resp.status(), 200);
        let text = resp.text().await.expect("body");
        let last = if accept == "application/json" {
            E2AResponse::from_json(&text).expect("final frame")
        } else {
            let frames = sse_frames(&text);
            assert_valid_stream(&frames);
            assert_eq!(frames.len(), 2);
            frames[1].clone()
        };
        assert!(last.is_final);
        assert_eq!(last.body["code"], "E2A.AGENT_ERROR");
        assert_eq!(last.sequence, 1);
    }
    // the server is still there
    let again = post(&server.base, &envelope("hi"), "application/json").await;
    assert_eq!(again.status(), 200);
}

#[tokio::test]
async fn a_remote_agents_own_error_words_stay_in_the_log() {
    // a remote E2A server whose problem detail echoes what it was sent (a credential)
    let app = axum::Router::new().route(
        e2a_gateway::bindings::e2a_http::REQUESTS_PATH,
        axum::routing::post(|| async {
            (
                axum::http::StatusCode::BAD_REQUEST,
                [("content-type", "application/problem+json")],
                r#"{"code": "E2A.INVALID_PARAMS", "detail": "bad header Authorization: Bearer sk-live-secret"}"#,
            )
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let back = format!("http://{}", listener.local_addr().expect("addr"));
    tokio::spawn(async move { axum::serve(listener, app).await });
    let remote = E2aRemoteAgent::new(E2aRemoteConfig::new(back)).expect("remote agent");
    let front = start(Arc::new(remote), fast_config()).await;
    let frames = sse(&front.base, &envelope("hi")).await;
    let last = frames.last().expect("final");
    assert_eq!(last.body["code"], "E2A.INVALID_PARAMS", "the remote's code is kept");
    assert_eq!(last.body["details"]["http_status"], 400);
    let shown = serde_json::to_string(&last.body).unwrap();
    assert!(!shown.contains("sk-live-secret"), "{shown}");
}
