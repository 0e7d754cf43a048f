//! `e2a serve` reloads its agents on SIGHUP: a new agent is served, a changed one (its entry, or
//! the script file it reads) answers as the new build from the next request, a removed one is
//! no longer routed — and the streams open on the agents changed or removed go on to their
//! final frame, an A2A task running across the reload completes. A file with errors changes
//! nothing.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

mod common;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// A script whose answers name its `version`: "slow" takes 4 s, anything else answers at once.
fn write_script(path: &Path, version: &str) {
    let script = json!({"scenarios": [
        {"name": "slow", "match": {"text": "slow"}, "steps": [
            {"type": "text", "text": format!("{version} thinking")},
            {"type": "complete", "delay_ms": 4000, "result": {"content": format!("{version} done")}}
        ]},
        {"name": "hi", "match": {"text": "hi"}, "steps": [
            {"type": "complete", "result": {"content": format!("{version} hi")}}
        ]}
    ]});
    std::fs::write(path, script.to_string()).expect("script");
}

/// Agent `agent`'s answer to `text` (E2A, JSON): its status and body.
async fn ask(base: &str, agent: &str, text: &str) -> (u16, String) {
    let resp = reqwest::Client::new()
        .post(format!("{base}/agents/{agent}/v1/e2a/requests"))
        .json(&json!({"method": "chat.send", "params": {"query": text}}))
        .send()
        .await
        .expect("post");
    (resp.status().as_u16(), resp.text().await.unwrap_or_default())
}

/// Opens a stream of `text` to `agent` and reads its first frame.
async fn open(base: &str, agent: &str, text: &str) -> reqwest::Response {
    let mut resp = reqwest::Client::new()
        .post(format!("{base}/agents/{agent}/v1/e2a/requests"))
        .header("accept", "text/event-stream")
        .json(&json!({"method": "chat.send", "params": {"query": text}}))
        .send()
        .await
        .expect("post");
    assert_eq!(resp.status(), 200);
    let first = resp.chunk().await.expect("chunk").expect("first frame");
    assert!(String::from_utf8_lossy(&first).contains("v1 thinking"));
    resp
}

/// Sends `text` to `agent` over A2A HTTP+JSON without waiting for its answer: its task id.
async fn a2a_send(base: &str, agent: &str, text: &str) -> String {
    let body = json!({
        "message": {"messageId": format!("m-{text}"), "role": "ROLE_USER", "parts": [{"text": text}]},
        "configuration": {"returnImmediately": true},
    });
    let resp = reqwest::Client::new()
        .post(format!("{base}/a2a/agents/{agent}/message:send"))
        .json(&body)
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status(), 200);
    let v: Value = resp.json().await.expect("json");
    v["task"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("no task: {v}"))
        .to_string()
}

/// Task `id` of `agent` (A2A HTTP+JSON `GetTask`).
async fn a2a_task(base: &str, agent: &str, id: &str) -> Value {
    let resp = reqwest::get(format!("{base}/a2a/agents/{agent}/tasks/{id}"))
        .await
        .expect("get");
    assert_eq!(resp.status(), 200);
    resp.json().await.expect("json")
}

fn hup(pid: u32) {
    let sent = Command::new("kill")
        .args(["-HUP", &pid.to_string()])
        .status()
        .expect("kill -HUP");
    assert!(sent.success());
}

/// Waits (at most 10 s) until the gateway's log says `line`.
async fn logged(log: &Path, line: &str) {
    let started = Instant::now();
    while !std::fs::read_to_string(log).unwrap_or_default().contains(line) {
        assert!(started.elapsed() < Duration::from_secs(10), "never logged: {line}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[test]
fn sighup_swaps_new_changed_and_removed_agents_and_open_streams_finish() {
    let dir = tempfile::tempdir().expect("dir");
    let script = dir.path().join("agent.json");
    write_script(&script, "v1");
    let config = dir.path().join("e2a.toml");
    let agents = |names: &[(&str, &str)]| {
        // A2A on, its tasks in memory: a task runs across the reload too, for longer than its
        // lease (a lease lapses on a store no other gateway shares: nobody else takes it)
        let mut text = String::from("[store]\nurl = \"memory\"\nlease_secs = 1\n[a2a]\nenabled = true\n");
        for (name, spec) in names {
            text.push_str(&format!("[agents.{name}]\nagent = \"{spec}\"\n"));
        }
        std::fs::write(&config, text).expect("config");
    };
    let scripted = format!("script:{}", script.display());
    agents(&[("stay", "echo"), ("change", &scripted), ("gone", &scripted)]);
    let log = dir.path().join("serve.log");
    let server = common::serve_logged("127.0.0.1:0", &["--config", config.to_str().expect("utf-8")], &log);
    let pid = server.child.id();
    runtime().block_on(async {
        let base = &server.base;
        assert!(ask(base, "change", "hi").await.1.contains("v1 hi"));
        let changing = open(base, "change", "slow").await;
        let going = open(base, "gone", "slow").await;
        let task = a2a_send(base, "change", "slow").await;
        // past the task's lease: what an agent added now finds in the store is still running
        tokio::time::sleep(Duration::from_millis(1500)).await;
        // the script file changes (its entry does not), `gone` goes, `added` comes
        write_script(&script, "v2");
        agents(&[("stay", "echo"), ("change", &scripted), ("added", "echo")]);
        hup(pid);
        logged(&log, "SIGHUP: callers, tokens and agents reloaded").await;
        let (status, body) = ask(base, "added", "hello").await;
        assert_eq!(status, 200, "{body}");
        assert!(
            ask(base, "change", "hi").await.1.contains("v2 hi"),
            "the new build answers"
        );
        assert_eq!(ask(base, "gone", "hi").await.0, 404);
        assert_eq!(ask(base, "stay", "hi").await.0, 200);
        let index: Value = reqwest::get(format!("{base}/"))
            .await
            .expect("index")
            .json()
            .await
            .expect("json");
        let listed: Vec<&String> = index["agents"].as_object().expect("agents").keys().collect();
        assert_eq!(listed, ["added", "change", "stay"]);
        // the streams open on the old builds end as those builds answer them
        for stream in [changing, going] {
            let frames = e2a::sse::decode(&stream.text().await.expect("rest")).expect("sse");
            let last = frames.last().expect("a final frame");
            assert!(last.is_final);
            assert_eq!(last.body["result"]["content"], "v1 done", "{:?}", last.body);
        }
        // the A2A task that ran across the reload (an agent added meanwhile) completed
        let started = Instant::now();
        let state = loop {
            let t = a2a_task(base, "change", &task).await;
            let state = t["status"]["state"].as_str().unwrap_or("").to_string();
            if state != "TASK_STATE_WORKING" && state != "TASK_STATE_SUBMITTED" {
                break state;
            }
            assert!(started.elapsed() < Duration::from_secs(20), "{t}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        assert_eq!(state, "TASK_STATE_COMPLETED");
        // a file with errors changes nothing
        agents(&[("stay", "echo"), ("broken", "nope:x")]);
        hup(pid);
        logged(&log, "SIGHUP: the config file has errors; nothing reloaded").await;
        assert_eq!(ask(base, "added", "hello").await.0, 200);
        assert_eq!(ask(base, "broken", "hello").await.0, 404);
    });
    let log = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        log.contains("added=[\"added\"]") && log.contains("removed=[\"gone\"]"),
        "{log}"
    );
    // the agent added by the reload left the running task alone
    assert!(!log.contains("task without a run"), "{log}");
}
