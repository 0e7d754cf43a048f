//! Delegation with callbacks across a crash: a gateway whose agent delegates to a child gateway
//! (`delegate = "callback"`) is killed (SIGKILL) while the child works; restarted on the same
//! SQLite file and port, it receives the child's callback — posted by the child's own push
//! sender, retried while the parent was down — and the run, which read `running` meanwhile,
//! ends with the child's answer.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

mod common;
use common::{serve, serve_at};

/// The child's scenario: a report that takes a few seconds.
const CHILD_SCRIPT: &str = r#"{"scenarios": [{"name": "slow report", "match": {"text": "report"}, "steps": [
  {"type": "text", "text": "The report, "},
  {"type": "text", "text": "written slowly.", "delay_ms": 4000},
  {"type": "complete", "result": {"content": "The report, written slowly."}}
]}]}"#;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// A port of 127.0.0.1 free now (the parent is restarted on it: its callback URL stays true).
fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

/// Run `id` of agent `planner` as the gateway at `base` tells it.
async fn run(base: &str, id: &str) -> Value {
    let url = format!("{base}/agents/planner/v1/e2a/runs/{id}");
    let resp = reqwest::get(&url).await.expect("get");
    assert_eq!(resp.status(), 200);
    resp.json().await.expect("json")
}

#[test]
fn a_delegated_run_survives_its_gateways_crash_and_ends_from_the_callback() {
    let dir = tempfile::tempdir().expect("tmp");
    let script = dir.path().join("child.json");
    std::fs::write(&script, CHILD_SCRIPT).expect("script");
    let child_config = dir.path().join("child.toml");
    std::fs::write(
        &child_config,
        format!(
            "agent = \"script:{}\"\n[store]\nurl = \"memory\"\n[a2a]\nenabled = true\n\
             [a2a.push]\nallow_private = true\nretry_base_ms = 200\n",
            script.display()
        ),
    )
    .expect("child config");
    let child = serve(&["--config", &child_config.display().to_string()]);
    let port = free_port();
    let bind = format!("127.0.0.1:{port}");
    let parent_config = dir.path().join("parent.toml");
    std::fs::write(
        &parent_config,
        format!(
            "[store]\nurl = \"sqlite:{}\"\n[a2a]\nenabled = true\n\
             [delegation]\ncallback_base_url = \"http://{bind}\"\n\
             [agents.planner]\nagent = \"a2a:{}\"\ndelegate = \"callback\"\n",
            dir.path().join("parent.db").display(),
            child.base
        ),
    )
    .expect("parent config");
    let args = ["--config", parent_config.to_str().expect("path")];
    let mut parent = serve_at(&bind, &args);
    runtime().block_on(async {
        let submitted = reqwest::Client::new()
            .post(format!("{}/agents/planner/v1/e2a/runs", parent.base))
            .json(&json!({"method": "chat.send", "request_id": "deleg-1", "params": {"query": "write the report"}}))
            .send()
            .await
            .expect("submit");
        assert_eq!(submitted.status(), 202);
        // the run has delegated (its first frame says so) and waits
        let started = Instant::now();
        loop {
            let r = run(&parent.base, "deleg-1").await;
            if r["frames"].as_u64().unwrap_or(0) >= 1 {
                assert_eq!(r["state"], "running", "{r}");
                break;
            }
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "the run did not delegate: {r}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    parent.kill();
    let parent = serve_at(&bind, &args);
    runtime().block_on(async {
        // the child still works: the run waits for it, its gateway gone or not
        let r = run(&parent.base, "deleg-1").await;
        assert_eq!(r["state"], "running", "a run waiting for a callback is not failed: {r}");
        let started = Instant::now();
        let r = loop {
            let r = run(&parent.base, "deleg-1").await;
            if r["state"] != "running" {
                break r;
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "no callback finished the run: {r}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        assert_eq!(r["state"], "succeeded", "{r}");
        assert_eq!(
            r["final_frame"]["body"]["result"]["content"], "The report, written slowly.",
            "{r}"
        );
        // every frame, numbered on from those stored before the crash
        let frames: Vec<Value> = reqwest::get(format!("{}/agents/planner/v1/e2a/runs/deleg-1/frames", parent.base))
            .await
            .expect("frames")
            .json()
            .await
            .expect("json");
        let seqs: Vec<u64> = frames.iter().filter_map(|f| f["sequence"].as_u64()).collect();
        assert_eq!(seqs, (0..frames.len() as u64).collect::<Vec<_>>(), "{frames:?}");
        assert!(frames[0]["body"]["delta"]
            .as_str()
            .unwrap_or_default()
            .starts_with("delegated as task"));
    });
}
