//! What the process tests of `e2a serve` share.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// A running `e2a serve` on 127.0.0.1 (a free port); killed (SIGKILL) on drop if the test did
/// not stop it.
pub struct Serve {
    pub child: Child,
    /// `http://127.0.0.1:PORT`, as the gateway printed it.
    pub base: String,
    _stdout: BufReader<std::process::ChildStdout>,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Serve {
    /// Kills the gateway (SIGKILL: no drain) and waits for it.
    #[allow(dead_code)]
    pub fn kill(&mut self) {
        self.child.kill().expect("SIGKILL");
        self.child.wait().expect("wait");
    }
}

/// Starts `e2a serve --bind 127.0.0.1:0 ARGS` (warnings on stderr) and waits for its URL.
pub fn serve(args: &[&str]) -> Serve {
    serve_at("127.0.0.1:0", args)
}

/// Starts `e2a serve --bind BIND ARGS` (warnings on stderr) and waits for its URL.
pub fn serve_at(bind: &str, args: &[&str]) -> Serve {
    start(bind, args, None)
}

/// [`serve_at`] logging at `info` into the file `log` (what a test reads back: why a request
/// was refused).
pub fn serve_logged(bind: &str, args: &[&str], log: &std::path::Path) -> Serve {
    start(bind, args, Some(log))
}

fn start(bind: &str, args: &[&str], log: Option<&std::path::Path>) -> Serve {
    let stderr = match log {
        Some(path) => Stdio::from(std::fs::File::create(path).expect("the log file")),
        None => Stdio::inherit(),
    };
    let mut child = Command::new(env!("CARGO_BIN_EXE_e2a"))
        .args(["serve", "--bind", bind])
        .args(args)
        .env("E2A_LOG", log_level(log.is_some()))
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .expect("spawn e2a serve");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut first = String::new();
    stdout.read_line(&mut first).expect("first line");
    let base = first
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("no URL in {first:?}"))
        .to_string();
    Serve {
        child,
        base,
        _stdout: stdout,
    }
}

/// The log level of a gateway under test: `info` when its log goes to a file, else `warn`;
/// `E2A_TEST_LOG` (a filter, e.g. `debug`) overrides both when a test is being diagnosed.
fn log_level(to_file: bool) -> String {
    std::env::var("E2A_TEST_LOG").unwrap_or_else(|_| if to_file { "info" } else { "warn" }.into())
}

/// Prints the log files it names when the test fails (is dropped while panicking): what the
/// gateways under test said, kept where a failure in CI can be read.
#[allow(dead_code)]
pub struct LogsOnFailure(pub Vec<std::path::PathBuf>);

impl Drop for LogsOnFailure {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            return;
        }
        for path in &self.0 {
            let text = std::fs::read_to_string(path).unwrap_or_default();
            eprintln!("---- {} ----\n{text}", path.display());
        }
    }
}

#[path = "../../../gateway/tests/support/postgres.rs"]
mod postgres_server;
#[allow(unused_imports)]
pub use postgres_server::{fresh_database, postgres};

/// The scenario of a delegation test's child: a report that takes `delay_ms` to write.
fn child_script(delay_ms: u64) -> String {
    serde_json::json!({"scenarios": [{"name": "slow report", "match": {"text": "report"}, "steps": [
        {"type": "text", "text": "The report, "},
        {"type": "text", "text": "written slowly.", "delay_ms": delay_ms},
        {"type": "complete", "result": {"content": "The report, written slowly."}}
    ]}]})
    .to_string()
}

/// The child of a delegation test: `e2a serve` with A2A, a report taking `delay_ms` to write,
/// its tasks in memory, pushing to loopback webhooks (retried 200 ms after a failure, doubling;
/// `push_extra`: more lines of `[a2a.push]`).
pub fn child_gateway(dir: &std::path::Path, delay_ms: u64, push_extra: &str) -> Serve {
    let script = dir.join("child.json");
    std::fs::write(&script, child_script(delay_ms)).expect("script");
    let config = dir.join("child.toml");
    let text = format!(
        "agent = \"script:{}\"\n[store]\nurl = \"memory\"\n[a2a]\nenabled = true\n\
         [a2a.push]\nallow_private = true\nretry_base_ms = 200\n{push_extra}",
        script.display()
    );
    std::fs::write(&config, text).expect("child config");
    serve(&["--config", config.to_str().expect("path")])
}

/// The config file `name` in `dir` of a gateway whose agent `planner` delegates to the child at
/// `child` with callbacks to `callback_base`, keeping tasks and runs in `store` (`extra`: more
/// lines of `[store]`, then of `[delegation]`).
pub fn delegating_config(
    dir: &std::path::Path,
    name: &str,
    store: &str,
    extra: (&str, &str),
    callback_base: &str,
    child: &str,
) -> std::path::PathBuf {
    let path = dir.join(name);
    let (store_extra, delegation_extra) = extra;
    let text = format!(
        "[store]\nurl = \"{store}\"\n{store_extra}[a2a]\nenabled = true\n\
         [delegation]\ncallback_base_url = \"{callback_base}\"\n{delegation_extra}\
         [agents.planner]\nagent = \"a2a:{child}\"\ndelegate = \"callback\"\n"
    );
    std::fs::write(&path, text).expect("config");
    path
}

/// Submits `query` as run `id` of agent `planner` at `base` (`202`).
pub async fn submit_to_planner(base: &str, id: &str, query: &str) {
    let submitted = reqwest::Client::new()
        .post(format!("{base}/agents/planner/v1/e2a/runs"))
        .json(&serde_json::json!({"method": "chat.send", "request_id": id, "params": {"query": query}}))
        .send()
        .await
        .expect("submit");
    assert_eq!(submitted.status(), 202);
}

/// Run `id` of agent `planner` as the gateway at `base` tells it.
pub async fn planner_run(base: &str, id: &str) -> serde_json::Value {
    let url = format!("{base}/agents/planner/v1/e2a/runs/{id}");
    let resp = reqwest::get(&url).await.expect("get");
    assert_eq!(resp.status(), 200);
    resp.json().await.expect("json")
}

/// Waits (at most `within`) until run `id` of `planner` at `base` says `until`; the run then.
pub async fn planner_run_until(
    base: &str,
    id: &str,
    within: std::time::Duration,
    until: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    let started = std::time::Instant::now();
    loop {
        let r = planner_run(base, id).await;
        if until(&r) {
            return r;
        }
        assert!(started.elapsed() < within, "run {id}: {r}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// Waits (at most `within`) until run `id` of `planner` at `base` ends, and checks it ended with
/// the delegation child's report.
pub async fn planner_reported(base: &str, id: &str, within: std::time::Duration) {
    let r = planner_run_until(base, id, within, |r| r["state"] != "running").await;
    assert_eq!(r["state"], "succeeded", "{r}");
    let content = &r["final_frame"]["body"]["result"]["content"];
    assert_eq!(content, "The report, written slowly.", "{r}");
}
