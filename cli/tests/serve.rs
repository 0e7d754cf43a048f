//! `e2a serve` as a process: SIGTERM drains open streams and exits 0, a second `e2a serve` in
//! front of the first (`--agent e2a:URL`) carries the same frames, non-loopback binds need a
//! token, and `e2a demo` drives a live gateway.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use e2a::E2AResponse;
use serde_json::{json, Value};

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../gateway/tests/data/script.json")
}

mod common;
use common::serve;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

fn envelope(text: &str) -> String {
    json!({"method": "chat.send", "request_id": format!("req-{}", text.len()), "params": {"query": text}}).to_string()
}

async fn post(base: &str, body: String, token: Option<&str>) -> reqwest::Response {
    let mut req = reqwest::Client::new()
        .post(format!("{base}/v1/e2a/requests"))
        .header("accept", "text/event-stream")
        .header("content-type", "application/json")
        .body(body);
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    req.send().await.expect("post")
}

async fn frames(resp: reqwest::Response) -> Vec<E2AResponse> {
    e2a::sse::decode(&resp.text().await.expect("body")).expect("sse")
}

#[test]
fn sigterm_drains_open_streams_each_with_a_final_frame_then_exits_0() {
    let mut server = serve(&[
        "--agent",
        &format!("script:{}", script().display()),
        "--drain-secs",
        "3",
    ]);
    let rt = runtime();
    let (forever, slow) = rt.block_on(async {
        let mut forever = post(&server.base, envelope("never finish"), None).await;
        let first = forever.chunk().await.expect("chunk").expect("first frame");
        assert!(String::from_utf8_lossy(&first).contains("id: 0"));
        let base = server.base.clone();
        let slow = tokio::spawn(async move { post(&base, envelope("take your time"), None).await });
        tokio::time::sleep(Duration::from_millis(200)).await;
        (forever, slow)
    });
    let pid = server.child.id().to_string();
    let killed = Command::new("kill").args(["-TERM", &pid]).status().expect("kill");
    assert!(killed.success());
    let started = Instant::now();
    rt.block_on(async {
        // the endless stream is cut off at the drain deadline with a final frame
        let rest = e2a::sse::decode(&forever.text().await.expect("rest")).expect("sse");
        let last = rest.last().expect("a final frame");
        assert!(last.is_final);
        assert_eq!(last.body["code"], "E2A.CANCELLED");
        assert_eq!(last.body["details"]["reason"], "shutdown");
        // the slow one finished within the drain time
        let slow = frames(slow.await.expect("join")).await;
        assert_eq!(
            slow.last().map(|f| f.status.as_str()),
            Some("succeeded"),
            "{:?}",
            slow.last().map(|f| &f.body)
        );
    });
    let status = loop {
        if let Some(s) = server.child.try_wait().expect("wait") {
            break s;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "e2a serve did not exit");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(0));
}

#[test]
fn serve_in_front_of_a_second_serve_carries_the_same_frames() {
    let dir = tempfile::tempdir().expect("tempdir");
    let token = dir.path().join("token");
    std::fs::write(&token, "behind-secret\n").expect("token file");
    let script_agent = format!("script:{}", script().display());
    let token_arg = token.display().to_string();
    let back = serve(&["--agent", &script_agent, "--token-file", &token_arg]);
    let front = serve(&[
        "--agent",
        &format!("e2a:{}", back.base),
        "--agent-token-file",
        &token_arg,
    ]);
    runtime().block_on(async {
        for text in ["what is the weather?", "send me the report"] {
            let direct = frames(post(&back.base, envelope(text), Some("behind-secret")).await).await;
            let via = frames(post(&front.base, envelope(text), None).await).await;
            let essence =
                |f: &E2AResponse| -> Value { json!([f.sequence, f.is_final, f.status, f.response_kind, f.body]) };
            assert!(direct.len() > 3);
            assert_eq!(
                direct.iter().map(essence).collect::<Vec<_>>(),
                via.iter().map(essence).collect::<Vec<_>>()
            );
        }
        // without the token the back server refuses
        let refused = post(&back.base, envelope("x"), None).await;
        assert_eq!(refused.status(), 401);
    });
}

#[test]
fn a_non_loopback_bind_needs_a_token() {
    let out = Command::new(env!("CARGO_BIN_EXE_e2a"))
        .args(["serve", "--bind", "0.0.0.0:0"])
        .env_remove("E2A_TOKEN")
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--insecure-no-auth"), "{err}");
}

/// `e2a demo --json`: every message each client was shown, whole — the same answer (the tool
/// call's arguments, the text, the artifact) reaching E2A, A2A, AG-UI and ACP clients, each
/// ending as its protocol ends a turn.
#[test]
fn demo_drives_a_live_gateway_with_a_client_of_each_protocol() {
    let out = Command::new(env!("CARGO_BIN_EXE_e2a"))
        .args(["demo", "--json"])
        .output()
        .expect("demo");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let steps: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect();
    let of = |s: &str| {
        steps
            .iter()
            .filter(|v| v["step"] == s)
            .map(|v| v["value"].clone())
            .collect::<Vec<_>>()
    };
    let url = of("gateway")[0]["url"].as_str().unwrap_or("").to_string();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    let e2a = of("e2a.frame");
    assert_eq!(e2a.last().map(|f| f["is_final"].clone()), Some(json!(true)));
    assert_eq!(
        e2a.last().map(|f| f["body"]["result"]["content"].clone()),
        Some(json!("It is 4 °C and clear in Oslo."))
    );
    let a2a = of("a2a.event");
    assert_eq!(
        a2a.last().map(|e| e["statusUpdate"]["status"]["state"].clone()),
        Some(json!("TASK_STATE_COMPLETED"))
    );
    let agui = of("agui.event");
    assert_eq!(agui.last().map(|e| e["type"].clone()), Some(json!("RUN_FINISHED")));
    let acp = of("acp.message");
    assert_eq!(
        acp.last().map(|m| m["result"]["stopReason"].clone()),
        Some(json!("end_turn"))
    );
    for (protocol, messages) in [("e2a", &e2a), ("a2a", &a2a), ("agui", &agui), ("acp", &acp)] {
        let text = Value::Array(messages.clone()).to_string();
        for said in [
            "get_weather",
            "Oslo",
            "and clear in Oslo.",
            "Tomorrow: 6 °C, light rain.",
        ] {
            assert!(text.contains(said), "{protocol} lacks {said}");
        }
    }
}

#[test]
fn the_agent_card_names_the_bound_address_whatever_host_a_client_sends() {
    let script_agent = format!("script:{}", script().display());
    let gw = serve(&["--agent", &script_agent, "--a2a"]);
    runtime().block_on(async {
        let card: Value = reqwest::Client::new()
            .get(format!("{}/.well-known/agent-card.json", gw.base))
            .header("host", "attacker.example:666")
            .send()
            .await
            .expect("card")
            .json()
            .await
            .expect("json");
        let urls: Vec<&str> = card["supportedInterfaces"]
            .as_array()
            .expect("interfaces")
            .iter()
            .filter_map(|i| i["url"].as_str())
            .collect();
        assert!(!urls.is_empty());
        // the gRPC interface is the `host:port` target, the others URLs
        let authority = gw.base.trim_start_matches("http://");
        for url in urls {
            assert!(
                url.starts_with(&gw.base) || url == authority,
                "{url} is not on {}",
                gw.base
            );
        }
    });
}

#[test]
fn sighup_reloads_the_callers_without_dropping_open_streams() {
    let dir = tempfile::tempdir().expect("dir");
    let config = dir.path().join("e2a.toml");
    let write = |key: &str| {
        let text = format!(
            "agent = \"script:{}\"\n\n[callers.alice]\napi_key_file = \"alice.key\"\n",
            script().display()
        );
        std::fs::write(dir.path().join("alice.key"), key).expect("key");
        std::fs::write(&config, text).expect("config");
    };
    write("first-key");
    let server = serve(&["--config", config.to_str().expect("utf-8")]);
    let rt = runtime();
    rt.block_on(async {
        assert_eq!(
            post(&server.base, envelope("hi"), Some("first-key")).await.status(),
            200
        );
        // a stream open across the reload goes on to its final frame
        let mut open = post(&server.base, envelope("take your time"), Some("first-key")).await;
        let first = open.chunk().await.expect("chunk").expect("first frame");
        assert!(String::from_utf8_lossy(&first).contains("id: 0"));
        write("second-key");
        let hup = Command::new("kill")
            .args(["-HUP", &server.child.id().to_string()])
            .status()
            .expect("kill -HUP");
        assert!(hup.success());
        let started = Instant::now();
        loop {
            let old = post(&server.base, envelope("hi"), Some("first-key")).await.status();
            if old == 401 {
                break;
            }
            assert!(started.elapsed() < Duration::from_secs(10), "the old key still works");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(
            post(&server.base, envelope("hi"), Some("second-key")).await.status(),
            200
        );
        let rest = frames(open).await;
        assert!(
            rest.last().is_some_and(|f| f.is_final),
            "the open stream ended with its final frame"
        );
    });
}

/// A line of the process's `/proc/PID/status` in bytes: `VmHWM` (peak resident memory) or
/// `VmRSS` (resident now), on Linux.
fn memory(pid: u32, line: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kb: u64 = status
        .lines()
        .find(|l| l.starts_with(line))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some(kb * 1024)
}

#[test]
fn a_large_a2a_request_costs_the_gateway_less_than_twenty_times_its_size() {
    let rt = runtime();
    let message = |id: &str, parts: Value, metadata: Value| json!({"message": {"messageId": id, "role": "ROLE_USER", "parts": parts, "metadata": metadata}});
    let rows = |c: &str| vec![c.repeat(36); 49_500];
    let cases = [
        // 3.8 MB of small values (a metadata array, a data part): refused, past the value limit
        (
            "dense-metadata",
            json!([{"text": "hi"}]),
            json!({"xs": vec![0; 1_900_000]}),
            false,
        ),
        (
            "dense-data",
            json!([{"data": vec![json!([]); 1_260_000]}]),
            json!({}),
            false,
        ),
        // 3.8 MB just inside the limits (99,000 values of 36 bytes, as metadata and as data
        // parts): taken, and the task kept in memory
        (
            "strings-metadata",
            json!([{"text": "hi"}]),
            json!({"xs": vec!["x".repeat(36); 99_000]}),
            true,
        ),
        (
            "strings-data",
            json!([{"data": {"rows": rows("y")}}, {"data": {"rows": rows("z")}}]),
            json!({}),
            true,
        ),
    ];
    for (id, parts, metadata, taken) in cases {
        // a gateway of its own for each: its peak is this request's
        let server = serve(&["--a2a", "--store", "memory"]);
        let pid = server.child.id();
        let Some(before) = memory(pid, "VmRSS:") else {
            eprintln!("no /proc/PID/status here: not measured");
            return;
        };
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": message(id, parts, metadata)})
            .to_string();
        let len = body.len() as u64;
        assert!(len > 3_700_000, "{id}: {len}");
        let base = server.base.clone();
        let answer: Value = rt.block_on(async move {
            reqwest::Client::new()
                .post(format!("{base}/a2a"))
                .header("content-type", "application/json")
                .header("A2A-Version", "1.0")
                .body(body)
                .send()
                .await
                .expect("send")
                .json()
                .await
                .expect("JSON-RPC answer")
        });
        if taken {
            assert!(answer.pointer("/result/task/id").is_some(), "{id}: {answer:.300}");
        } else {
            let error = answer
                .pointer("/error/message")
                .and_then(Value::as_str)
                .unwrap_or_default();
            assert!(error.contains("max_values"), "{id}: {answer:.300}");
        }
        let grown = memory(pid, "VmHWM:").expect("peak").saturating_sub(before);
        eprintln!(
            "{id}: a request of {len} bytes, the peak {grown} bytes above the resident memory before it ({:.1}x)",
            grown as f64 / len as f64
        );
        assert!(
            grown < 20 * len,
            "{id}: the peak grew {grown} bytes for a request of {len}"
        );
    }
}

/// The arguments of an `e2a serve` of the test script on the SQLite file `runs.db` in `dir`,
/// after `extra` (a restart on the same arguments finds what the first kept).
fn on_sqlite(dir: &std::path::Path, extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = extra.iter().map(|a| a.to_string()).collect();
    args.extend([
        "--store".into(),
        format!("sqlite:{}", dir.join("runs.db").display()),
        "--agent".into(),
        format!("script:{}", script().display()),
    ]);
    args
}

/// A run submitted to the run resource keeps going without any client; the gateway is killed
/// (SIGKILL, no drain) while it runs, and a gateway restarted on the same SQLite file reads it
/// `failed`, its final frame saying why — never lost, never `running` forever.
#[test]
fn a_detached_run_of_a_killed_gateway_reads_failed_with_the_reason_after_a_restart() {
    let dir = tempfile::tempdir().expect("tmp");
    let owned = on_sqlite(dir.path(), &[]);
    let args: Vec<&str> = owned.iter().map(String::as_str).collect();
    let mut first = serve(&args);
    runtime().block_on(async {
        let http = reqwest::Client::new();
        let body = json!({"method": "chat.send", "request_id": "detached-1", "params": {"query": "never finish"}});
        let submitted = http
            .post(format!("{}/v1/e2a/runs", first.base))
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .expect("submit");
        assert_eq!(submitted.status(), 202);
        // its first frame is stored: the agent runs, nobody reads
        let url = format!("{}/v1/e2a/runs/detached-1", first.base);
        let started = Instant::now();
        loop {
            let run: Value = http.get(&url).send().await.expect("get").json().await.expect("json");
            if run["frames"].as_u64().unwrap_or(0) >= 1 {
                assert_eq!(run["state"], "running", "{run}");
                break;
            }
            assert!(started.elapsed() < Duration::from_secs(10), "no frame: {run}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    first.kill();
    let second = serve(&args);
    runtime().block_on(async {
        let http = reqwest::Client::new();
        let resp = http
            .get(format!("{}/v1/e2a/runs/detached-1", second.base))
            .send()
            .await
            .expect("get");
        assert_eq!(resp.status(), 200);
        let run: Value = resp.json().await.expect("json");
        assert_eq!(run["state"], "failed", "{run}");
        assert_eq!(run["final_frame"]["body"]["details"]["reason"], "gateway_gone", "{run}");
        assert_eq!(
            run["frames"], 2,
            "the frame stored before the kill, then the final one: {run}"
        );
        // every reader gets the same end
        let frames: Vec<Value> = http
            .get(format!("{}/v1/e2a/runs/detached-1/frames", second.base))
            .send()
            .await
            .expect("frames")
            .json()
            .await
            .expect("json");
        assert_eq!(frames.len(), 2);
        assert_eq!(frames[1], run["final_frame"]);
    });
}

/// The AG-UI events of an SSE body.
fn agui_events(text: &str) -> Vec<Value> {
    text.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).expect("an event"))
        .collect()
}

/// A paused AG-UI run is answered after a restart (SQLite): the interrupts and the agent's
/// place are in the store. The pause asks two things at once (two interrupts of one
/// `RUN_FINISHED`), GoAI's resume body (the run's own id, no thread) answers both; the run
/// pauses again with two approvals, the gateway restarts again, and the second answer
/// finishes it.
#[test]
fn agui_interrupts_are_answered_after_a_restart_and_the_agent_goes_on_where_it_stopped() {
    let dir = tempfile::tempdir().expect("tmp");
    let owned = on_sqlite(dir.path(), &["--agui"]);
    let args: Vec<&str> = owned.iter().map(String::as_str).collect();
    let post = |base: &str, body: Value| {
        let url = format!("{base}/agui");
        async move {
            let resp = reqwest::Client::new()
                .post(url)
                .header("content-type", "application/json")
                .body(body.to_string())
                .send()
                .await
                .expect("post");
            assert_eq!(resp.status(), 200);
            agui_events(&resp.text().await.expect("body"))
        }
    };
    let said = |events: &[Value]| -> String {
        events
            .iter()
            .filter(|e| e["type"] == "TEXT_MESSAGE_CONTENT")
            .filter_map(|e| e["delta"].as_str())
            .collect()
    };
    // the interrupts the run ended with: (id, message)
    let interrupts = |events: &[Value]| -> Vec<(Value, Value)> {
        let last = events.last().expect("events");
        assert_eq!(last["outcome"]["type"], "interrupt", "{last}");
        let all = last["outcome"]["interrupts"].as_array().expect("interrupts");
        all.iter().map(|i| (i["id"].clone(), i["message"].clone())).collect()
    };
    let run = json!({"threadId": "t-restart", "runId": "r-restart",
        "messages": [{"id": "m1", "role": "user", "content": "plan a trip"}]});
    let mut gateway = serve(&args);
    let asked = runtime().block_on(post(&gateway.base, run));
    assert_eq!(said(&asked), "Planning a trip.");
    let first = interrupts(&asked);
    let messages: Vec<&Value> = first.iter().map(|(_, m)| m).collect();
    assert_eq!(messages, [&json!("How many travellers?"), &json!("Which city?")]);
    gateway.kill();
    let mut gateway = serve(&args);
    let answer = json!({"runId": "r-restart", "resume": [
        {"interruptId": first[0].0, "status": "resolved", "payload": "4"},
        {"interruptId": first[1].0, "status": "resolved", "payload": "Lisbon"}]});
    let asked = runtime().block_on(post(&gateway.base, answer));
    assert_eq!(asked[0]["threadId"], "t-restart");
    assert_eq!(said(&asked), "A trip for 4\nLisbon.");
    let second = interrupts(&asked);
    let messages: Vec<&Value> = second.iter().map(|(_, m)| m).collect();
    assert_eq!(messages, [&json!("Book the trip?"), &json!("Pay the deposit now?")]);
    gateway.kill();
    let gateway = serve(&args);
    let answer = json!({"runId": "r-restart", "resume": [
        {"interruptId": second[0].0, "status": "resolved", "payload": {"approved": true}},
        {"interruptId": second[1].0, "status": "resolved", "payload": {"approved": true}}]});
    let done = runtime().block_on(post(&gateway.base, answer));
    assert_eq!(said(&done), "Booked.");
    assert_eq!(done.last().expect("events")["type"], "RUN_FINISHED");
    assert_ne!(done.last().expect("events")["outcome"]["type"], "interrupt");
}

/// A pause asked through the E2A run resource is answered through it after a restart (SQLite):
/// the run reads `paused`, the answer's run goes on where the agent stopped.
#[test]
fn an_e2a_run_paused_before_a_restart_is_answered_after_it() {
    let dir = tempfile::tempdir().expect("tmp");
    let owned = on_sqlite(dir.path(), &[]);
    let args: Vec<&str> = owned.iter().map(String::as_str).collect();
    let submit_and_wait = |base: String, body: Value| async move {
        let http = reqwest::Client::new();
        let id = body["request_id"].as_str().expect("id").to_string();
        let submitted = http
            .post(format!("{base}/v1/e2a/runs"))
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .expect("submit");
        assert_eq!(submitted.status(), 202);
        let started = Instant::now();
        loop {
            let run: Value = http
                .get(format!("{base}/v1/e2a/runs/{id}"))
                .send()
                .await
                .expect("get")
                .json()
                .await
                .expect("json");
            if run["state"] != "running" {
                return run;
            }
            assert!(started.elapsed() < Duration::from_secs(10), "still {run}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    let mut first = serve(&args);
    let asked = runtime().block_on(submit_and_wait(
        first.base.clone(),
        json!({"method": "chat.send", "request_id": "ask-1", "session_id": "s-restart", "params": {"query": "book a table"}}),
    ));
    assert_eq!(asked["state"], "paused", "{asked}");
    first.kill();
    let second = serve(&args);
    let answered = runtime().block_on(submit_and_wait(
        second.base.clone(),
        json!({"method": "chat.send", "request_id": "answer-1", "session_id": "s-restart", "params": {"query": "4"}}),
    ));
    // it went on where it stopped: the text after the question, then the next pause
    assert_eq!(answered["state"], "paused", "{answered}");
    let frames: Vec<Value> = runtime().block_on(async {
        reqwest::Client::new()
            .get(format!("{}/v1/e2a/runs/answer-1/frames", second.base))
            .send()
            .await
            .expect("frames")
            .json()
            .await
            .expect("json")
    });
    let said: String = frames
        .iter()
        .filter(|f| f["body"]["delta_kind"] == "text")
        .filter_map(|f| f["body"]["delta"].as_str())
        .collect();
    assert_eq!(said, "A table for 4.");
}
