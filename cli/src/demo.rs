//! `e2a demo`: an embedded ACP `session/prompt` and A2A `SendMessage` go through the whole SDK.

use e2a::a2a::jsonrpc::{envelope_from_request, A2aHeaders};
use e2a::a2a::stream::{jsonrpc_result, A2aStreamProjector};
use e2a::acp::stream::AcpStreamProjector;
use e2a::acp::{envelope_from_jsonrpc, JsonRpcIngress};
use e2a::agui::{verify_events, AguiProjector};
use e2a::frame::Projector;
use e2a::stream::{ResponseStream, StreamValidator};
use e2a::{E2AEnvelope, E2AResponse};
use serde_json::{json, Value};

/// The embedded ACP request (what an editor sends over stdio).
pub const ACP_REQUEST: &str = r#"{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"sess-demo","session_id":"sess-demo","prompt":[{"type":"text","text":"Hello from ACP"}]}}"#;

/// The embedded A2A 1.0 request (what another agent posts).
pub const A2A_REQUEST: &str = r#"{"jsonrpc":"2.0","id":"req-7","method":"SendStreamingMessage","params":{"message":{"messageId":"msg-1","contextId":"ctx-demo","taskId":"task-demo","role":"ROLE_USER","parts":[{"text":"Hello from A2A"}]},"configuration":{"acceptedOutputModes":["text/plain"]}}}"#;

/// The echo agent: a reasoning chunk, the reply word by word, then the final frame.
pub fn echo_agent(req: &E2AEnvelope) -> Vec<E2AResponse> {
    let prompt = e2a::acp::parse_prompt_blocks(&req.params).text;
    let mut s = ResponseStream::for_request(req);
    let mut frames = vec![s.reasoning("The user greeted me; echo it back.")];
    let reply = format!("You said: {prompt}");
    let words: Vec<&str> = reply.split(' ').collect();
    for (i, w) in words.iter().enumerate() {
        frames.push(s.text(&if i + 1 < words.len() {
            format!("{w} ")
        } else {
            (*w).to_string()
        }));
    }
    frames.push(s.complete(json!({"content": reply, "stopReason": "end_turn"})));
    frames.into_iter().map(E2AResponse::from).collect()
}

struct Out {
    json: bool,
}

impl Out {
    fn step(&self, step: &str, title: &str, value: &Value) {
        if self.json {
            println!("{}", json!({"step": step, "value": value}));
        } else {
            println!("── {title}");
            println!("{}", serde_json::to_string_pretty(value).unwrap_or_default());
        }
    }
    fn line(&self, step: &str, value: &Value) {
        if self.json {
            println!("{}", json!({"step": step, "value": value}));
        } else {
            println!("  {value}");
        }
    }
    fn title(&self, t: &str) {
        if !self.json {
            println!("── {t}");
        }
    }
}

fn check_stream(frames: &[E2AResponse]) -> Result<(), String> {
    let mut v = StreamValidator::new();
    for f in frames {
        v.push(f);
    }
    let problems = v.finish();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))
    }
}

/// Runs the demo; `Err` only if the SDK misbehaves.
pub fn run(json_out: bool) -> Result<(), String> {
    let out = Out { json: json_out };

    // ACP → E2A → agent → ACP + AG-UI
    let acp_req: Value = serde_json::from_str(ACP_REQUEST).map_err(|e| e.to_string())?;
    out.step(
        "acp.request",
        "ACP session/prompt request (stdin of the agent)",
        &acp_req,
    );
    let mut ingress = JsonRpcIngress::from_value(&json!({
        "method": acp_req["method"], "params": acp_req["params"], "jsonrpc_id": acp_req["id"], "channel": "acp"
    }))
    .map_err(|e| e.to_string())?;
    ingress.session_id = acp_req["params"]["sessionId"].as_str().map(str::to_string);
    let mut env = envelope_from_jsonrpc(&ingress);
    env.request_id = Some("req-acp-1".into());
    env.is_stream = true;
    e2a::E2AEnvelope::read_value(&env.to_value(), &e2a::ReadOptions::canonical()).map_err(|e| e.to_string())?;
    out.step(
        "e2a.envelope",
        "E2AEnvelope (canonical, schema-valid)",
        &env.to_redacted_value(),
    );

    let frames = echo_agent(&env);
    check_stream(&frames)?;
    out.title("E2AResponse frames from the echo agent (stream invariants checked)");
    for f in &frames {
        out.line("e2a.response", &Value::Object(e2a::log::summary(f)));
    }
    let mut acp = AcpStreamProjector::new(env.session_id.clone().unwrap_or_default(), env.jsonrpc_id.clone());
    out.title("ACP messages back to the client (session/update notifications, then the result)");
    for f in &frames {
        for m in acp.push_record(f) {
            out.line("acp.message", &m);
        }
    }
    let mut agui = AguiProjector::new(env.session_id.clone().unwrap_or_default(), "run-acp-1");
    let events: Vec<Value> = frames.iter().flat_map(|f| agui.push_record(f)).collect();
    verify_events(&events)?;
    out.title("The same stream as AG-UI events (lifecycle verified)");
    for e in &events {
        out.line("agui.event", e);
    }

    // A2A → E2A → agent → A2A
    let a2a_req: Value = serde_json::from_str(A2A_REQUEST).map_err(|e| e.to_string())?;
    out.step("a2a.request", "A2A SendStreamingMessage request", &a2a_req);
    let headers = A2aHeaders {
        version: Some("1.0".into()),
        extensions: Vec::new(),
    };
    let mut env = envelope_from_request(&a2a_req, &headers).map_err(|e| e.to_string())?;
    env.request_id = Some("req-a2a-1".into());
    out.step("e2a.envelope", "E2AEnvelope from A2A", &env.to_redacted_value());
    let frames = echo_agent(&env);
    check_stream(&frames)?;
    let mut a2a = A2aStreamProjector::new(
        env.task_id.clone().unwrap_or_else(|| "task".into()),
        env.context_id.clone().unwrap_or_else(|| "ctx".into()),
    );
    out.title("A2A StreamResponse events (SSE data lines)");
    for f in &frames {
        for ev in a2a.push_record(f) {
            out.line("a2a.event", &jsonrpc_result(env.jsonrpc_id.as_ref(), ev.to_value()));
        }
    }
    live(&out)
}

/// The live part: the gateway (`e2a-gateway`) starts in-process on an ephemeral 127.0.0.1 port
/// and is driven over real HTTP — an SSE stream read frame by frame, the same request as JSON,
/// and a refused request as problem+json.
fn live(out: &Out) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(live_gateway(out))
}

/// Starts the gateway on an ephemeral port, sends it the live part's requests
/// ([`drive_gateway`]), then stops it.
async fn live_gateway(out: &Out) -> Result<(), String> {
    use e2a_gateway::backends::EchoAgent;
    use e2a_gateway::{Gateway, GatewayConfig};

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| e.to_string())?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let gateway = Gateway::new(EchoAgent::new(), GatewayConfig::default());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(gateway.serve(listener, async {
        let _ = stopped.await;
    }));
    let url = format!("http://{addr}{}", e2a_gateway::bindings::e2a_http::REQUESTS_PATH);
    out.step(
        "http.listen",
        "Live: the gateway in-process (e2a serve without the shell), on an ephemeral port",
        &json!({"url": url}),
    );
    let expected = drive_gateway(out, &url).await?;
    let _ = stop.send(());
    server.await.map_err(|e| e.to_string())?.map_err(|e| e.to_string())?;
    if !expected {
        return Err("the live gateway answered unexpectedly".into());
    }
    Ok(())
}

/// The live part's requests to the gateway at `url`: the request as an SSE stream, the same
/// request as JSON, and a refused request. Returns whether the gateway answered as expected
/// (the JSON answer is the stream's final frame, the refusal an HTTP 422).
async fn drive_gateway(out: &Out, url: &str) -> Result<bool, String> {
    let request = E2AEnvelope::new("chat.send", json!({"query": "Hello over HTTP"})).with_request_id("req-http-1");
    let client = reqwest::Client::new();
    let post = |accept: &'static str, body: String| {
        client
            .post(url)
            .header("accept", accept)
            .header("content-type", "application/json")
            .body(body)
            .send()
    };

    out.title("POST with Accept: text/event-stream — each SSE event as it arrives");
    let resp = post("text/event-stream", request.to_json())
        .await
        .map_err(|e| e.to_string())?;
    let frames = sse_frames(out, resp).await?;
    check_stream(&frames)?;

    let resp = post("application/json", request.to_json())
        .await
        .map_err(|e| e.to_string())?;
    let final_frame = resp.text().await.map_err(|e| e.to_string())?;
    let final_frame = E2AResponse::from_json(&final_frame).map_err(|e| e.to_string())?;
    out.step(
        "http.json",
        "POST with Accept: application/json — the final frame",
        &Value::Object(e2a::log::summary(&final_frame)),
    );

    let resp = post(
        "application/json",
        r#"{"method": "chat.send", "is_stream": "yes"}"#.into(),
    )
    .await
    .map_err(|e| e.to_string())?;
    let status = resp.status().as_u16();
    let problem: Value =
        serde_json::from_str(&resp.text().await.map_err(|e| e.to_string())?).map_err(|e| e.to_string())?;
    out.step(
        "http.problem",
        &format!("A wrong-typed field — HTTP {status}, application/problem+json naming the field"),
        &problem,
    );
    Ok(frames.last().map(|f| f.sequence) == Some(final_frame.sequence) && status == 422)
}

/// The frames of an SSE response, each shown as it arrives.
async fn sse_frames(out: &Out, mut resp: reqwest::Response) -> Result<Vec<E2AResponse>, String> {
    let (mut buf, mut frames) = (String::new(), Vec::new());
    while let Some(bytes) = resp.chunk().await.map_err(|e| e.to_string())? {
        buf.push_str(&String::from_utf8_lossy(&bytes));
        while let Some(end) = buf.find("\n\n") {
            let event: String = buf.drain(..end + 2).collect();
            for f in e2a::sse::decode(&event).map_err(|e| e.to_string())? {
                out.line(
                    "sse.frame",
                    &json!({"id": f.sequence, "response_kind": f.response_kind, "is_final": f.is_final, "body": f.body}),
                );
                frames.push(f);
            }
        }
    }
    Ok(frames)
}
