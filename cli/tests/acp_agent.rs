//! The `e2a acp` binary as an ACP agent behind the gateway ([`e2a_gateway::backends::AcpProcessAgent`],
//! `--agent acp:CMD`) and in front of it, driven over its stdio. Here rather than in the gateway's
//! tests because cargo builds this package's binary for these tests (`CARGO_BIN_EXE_e2a`) with the
//! same features as the rest of the workspace's tests: a test that ran `cargo build -p e2a-cli`
//! itself rebuilt the dependency graph a second time (and filled a CI machine's disk).

#[path = "../../gateway/tests/support/acp_runs.rs"]
mod acp_runs;
mod common;
use acp_runs::*;

use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use e2a::E2AResponse;
use e2a_gateway::backends::{AcpProcessAgent, AcpProcessConfig};
use e2a_gateway::protocol::acp::{NotificationHook, Peer, PeerOptions};
use e2a_gateway::{Agent, Caller, RequestContext};
use futures_util::StreamExt;
use serde_json::{json, Value};

/// The scenarios of the back agent (weather with a tool call, a run that never ends, echo).
const SCRIPT: &str = include_str!("../../gateway/tests/data/bridge-script.json");

fn e2a_bin() -> &'static str {
    env!("CARGO_BIN_EXE_e2a")
}

fn script_file(dir: &tempfile::TempDir) -> String {
    let path = dir.path().join("script.json");
    std::fs::write(&path, SCRIPT).unwrap();
    format!("script:{}", path.display())
}

fn agent(command: Vec<String>) -> AcpProcessAgent {
    AcpProcessAgent::new(AcpProcessConfig::new(command)).unwrap()
}

#[tokio::test]
async fn e2a_acp_behind_the_gateway_carries_text_reasoning_and_tool_calls() {
    let dir = tempfile::tempdir().unwrap();
    let bin = e2a_bin().to_string();
    let a = agent(vec![bin, "acp".into(), "--agent".into(), script_file(&dir)]);
    let frames = run(&a, request("what is the weather?", Some("s1"))).await;
    assert_eq!(final_kind(&frames), "e2a.complete");
    assert_eq!(text(&frames), "It is 21 °C in Paris.");
    assert!(
        frames
            .iter()
            .filter(|f| f.body.get("delta_kind") == Some(&json!("text")))
            .count()
            > 1
    );
    assert!(frames
        .iter()
        .any(|f| f.body.get("delta_kind") == Some(&json!("reasoning"))));
    let call = frames
        .iter()
        .find(|f| f.body.get("event_type") == Some(&json!("chat.tool_call")))
        .expect("a tool call");
    assert_eq!(call.body["delta"]["tool_call"]["tool_call_id"], "call-1");
    assert_eq!(call.body["delta"]["tool_call"]["arguments"], json!({"city": "Paris"}));
    let result = frames
        .iter()
        .find(|f| f.body.get("event_type") == Some(&json!("chat.tool_result")))
        .expect("a tool result");
    assert_eq!(result.body["delta"]["tool_call_id"], "call-1");
    // the result itself, as the back agent's tool gave it (its `result`), not the text shown
    // for it nor its content blocks re-rendered: out and back, the frame is unchanged
    assert_eq!(result.body["delta"]["result"], json!({"temp_c": 21}));
    let last = frames.last().unwrap();
    assert_eq!(last.body["result"]["stopReason"], "end_turn");
    // a second request runs on the same (still running) agent
    let frames = run(&a, request("hello", Some("s1"))).await;
    assert_eq!(text(&frames), "You said: hello");
}

#[tokio::test]
async fn a_cancelled_run_sends_session_cancel_to_the_agent() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("inner.log");
    let cmd = format!(
        "E2A_LOG=info exec '{}' acp --agent '{}' 2>>'{}'",
        e2a_bin(),
        script_file(&dir),
        log.display()
    );
    let a = agent(vec!["sh".into(), "-c".into(), cmd]);
    let ctx = RequestContext::new(Caller::anonymous(), None);
    let mut frames = a
        .run(request("never finish", Some("s")), ctx.clone())
        .map(E2AResponse::from);
    let first = tokio::time::timeout(Duration::from_secs(30), frames.next())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(first.body["delta"], "working on it");
    ctx.cancel.cancel();
    let rest: Vec<E2AResponse> = tokio::time::timeout(Duration::from_secs(10), frames.collect())
        .await
        .unwrap();
    let last = rest.last().unwrap();
    assert!(last.is_final);
    assert_eq!(last.body["code"], "E2A.CANCELLED");
    let inner = std::fs::read_to_string(&log).unwrap();
    assert!(
        inner.contains("session/cancel"),
        "the agent behind got session/cancel: {inner}"
    );
    // the session takes the next turn
    assert_eq!(text(&run(&a, request("hi", Some("s"))).await), "You said: hi");
}

/// `e2a acp --agent acp:"e2a acp --agent script:…"` driven over its stdio: an ACP agent behind
/// the gateway behind ACP; stdout carries protocol frames only.
#[tokio::test]
async fn acp_in_front_of_acp() {
    let dir = tempfile::tempdir().unwrap();
    let bin = e2a_bin();
    let inner = format!("acp:{bin} acp --agent {}", script_file(&dir));
    let mut child = tokio::process::Command::new(bin)
        .args(["acp", "--agent", &inner])
        .env("E2A_LOG", "debug")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let (stdin, stdout) = (child.stdin.take().unwrap(), child.stdout.take().unwrap());
    let seen: Arc<std::sync::Mutex<Vec<Value>>> = Arc::default();
    let log = seen.clone();
    let hook: NotificationHook = Arc::new(move |method: &str, params: &Value| {
        assert_eq!(method, "session/update");
        log.lock().unwrap().push(params["update"].clone());
        true
    });
    let (peer, _incoming) = Peer::start_with(stdout, stdin, PeerOptions::notification_hook(hook));
    let call = |m: &'static str, p: Value| {
        let peer = peer.clone();
        async move {
            tokio::time::timeout(Duration::from_secs(30), peer.call(m, p))
                .await
                .unwrap()
        }
    };
    call("initialize", json!({"protocolVersion": 1})).await.unwrap();
    let sid = call("session/new", json!({"cwd": "/tmp", "mcpServers": []}))
        .await
        .unwrap()["sessionId"]
        .clone();
    let r = call(
        "session/prompt",
        json!({"sessionId": sid, "prompt": [{"type": "text", "text": "weather?"}]}),
    )
    .await
    .unwrap();
    assert_eq!(r["stopReason"], "end_turn");
    let updates = std::mem::take(&mut *seen.lock().unwrap());
    let said: String = updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
        .filter_map(|u| u["content"]["text"].as_str())
        .collect();
    assert_eq!(said, "It is 21 °C in Paris.");
    assert!(updates
        .iter()
        .any(|u| u["sessionUpdate"] == "tool_call" && u["toolCallId"] == "call-1"));
    assert!(updates.iter().any(|u| u["sessionUpdate"] == "agent_thought_chunk"));
    // cancel at the front: the turn ends cancelled
    let (_, turn) = peer.request(
        "session/prompt",
        json!({"sessionId": sid, "prompt": [{"type": "text", "text": "never finish"}]}),
    );
    while seen.lock().unwrap().is_empty() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    peer.notify("session/cancel", json!({"sessionId": sid}));
    let r = tokio::time::timeout(Duration::from_secs(10), turn)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(r["stopReason"], "cancelled");
    // end of input: e2a acp exits 0 (stdout held nothing but JSON-RPC, or the peer would have
    // answered parse errors above)
    peer.close().await;
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait()).await;
    assert!(status.is_ok(), "e2a acp exits at the end of its input");
}

/// stdout of `e2a acp` carries JSON-RPC frames only, even with every log level on; the logs
/// go to stderr; the end of stdin ends the process with status 0.
#[test]
fn e2a_acp_stdout_carries_protocol_frames_only() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("state/logs/acp.log");
    let mut child = std::process::Command::new(e2a_bin())
        .args(["acp", "--agent", &script_file(&dir)])
        .arg("--log-file")
        .arg(&log)
        .env("E2A_LOG", "trace")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        let mut stdin = child.stdin.take().unwrap();
        let input = [
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}),
            json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/tmp", "mcpServers": []}}),
        ];
        for m in input {
            writeln!(stdin, "{m}").unwrap();
        }
        // the session id is not known here: an unknown one is an error, still a frame
        writeln!(
            stdin,
            "{}",
            json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
            "params": {"sessionId": "nope", "prompt": [{"type": "text", "text": "hi"}]}})
        )
        .unwrap();
    }
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let out = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("e2a acp exits")
        .unwrap();
    assert!(out.status.success());
    let stdout = String::from_utf8(out.stdout).unwrap();
    let frames: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|_| panic!("not a JSON-RPC frame: {l}")))
        .collect();
    assert_eq!(frames.len(), 3, "{stdout}");
    assert!(frames.iter().all(|f| f["jsonrpc"] == "2.0"));
    // requests are answered concurrently: find the prompt's answer by id
    let prompt = frames.iter().find(|f| f["id"] == 2).expect("the prompt is answered");
    assert_eq!(prompt["error"]["code"], -32002);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("initialize"), "logs go to stderr: {stderr}");
    // and to the log file (its directory made), the same lines
    let logged = std::fs::read_to_string(&log).expect("the log file");
    assert!(
        logged.contains("e2a acp started") && logged.contains("initialize"),
        "{logged}"
    );
}

/// Without `--log-file`, `e2a acp` logs to `$XDG_STATE_HOME/e2a/logs/acp.log`; `--log-file
/// off` writes none.
#[test]
fn e2a_acp_logs_to_its_state_directory() {
    let dir = tempfile::tempdir().unwrap();
    for (extra, kept) in [(None, true), (Some("off"), false)] {
        let state = dir.path().join(if kept { "state" } else { "state-off" });
        let mut cmd = std::process::Command::new(e2a_bin());
        cmd.args(["acp", "--agent", "echo"]).env("XDG_STATE_HOME", &state);
        if let Some(v) = extra {
            cmd.args(["--log-file", v]);
        }
        let out = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert!(out.stdout.is_empty(), "nothing but the protocol on stdout");
        let log = state.join("e2a/logs/acp.log");
        assert_eq!(log.exists(), kept, "{}", log.display());
        if kept {
            let logged = std::fs::read_to_string(&log).unwrap();
            assert!(logged.contains("e2a acp started"), "{logged}");
        }
    }
}

#[tokio::test]
async fn an_acp_agent_does_not_inherit_the_gateways_credentials() {
    // SAFETY: set once, before the agent below is started; no other test reads these, and an
    // agent process of another test only loses them (the gateway removes them)
    unsafe {
        std::env::set_var(e2a_gateway::config::TOKEN_ENV, "gateway-secret-one");
        std::env::set_var(e2a_gateway::config::AGENT_TOKEN_ENV, "gateway-secret-two");
        std::env::set_var("E2A_TEST_VISIBLE", "an ordinary variable");
    }
    let dir = tempfile::tempdir().unwrap();
    let seen = dir.path().join("env.txt");
    let shell = format!(
        "env > '{}'; exec '{}' acp --agent '{}'",
        seen.display(),
        e2a_bin(),
        script_file(&dir)
    );
    let env_of = |names: &[&str]| {
        let mut config = AcpProcessConfig::new(vec!["sh".into(), "-c".into(), shell.clone()]);
        config.env = names.iter().map(|n| n.to_string()).collect();
        AcpProcessAgent::new(config).unwrap()
    };
    // by default: what programs need to run, nothing else
    let frames = run(&env_of(&[]), request("echo hello", Some("s-env"))).await;
    assert_eq!(final_kind(&frames), "e2a.complete");
    let env = std::fs::read_to_string(&seen).expect("the agent wrote its environment");
    assert!(env.contains("PATH="), "{env}");
    assert!(!env.contains("E2A_TEST_VISIBLE"), "{env}");
    // what the operator names is passed too, the gateway's credentials never
    let named = [
        "E2A_TEST_VISIBLE",
        e2a_gateway::config::TOKEN_ENV,
        e2a_gateway::config::AGENT_TOKEN_ENV,
    ];
    let frames = run(&env_of(&named), request("echo hello", Some("s-env"))).await;
    assert_eq!(final_kind(&frames), "e2a.complete");
    let env = std::fs::read_to_string(&seen).expect("the agent wrote its environment");
    assert!(env.contains("E2A_TEST_VISIBLE=an ordinary variable"), "{env}");
    for secret in e2a_gateway::config::SECRET_ENV {
        assert!(!env.contains(&format!("{secret}=")), "{secret} reached the agent");
    }
    assert!(!env.contains("gateway-secret"));
}

/// `e2a acp --workspace-dir DIR` (the ACP bridge's flag, E2A §11.6) in front of a gateway
/// (`--agent e2a:URL`): every prompt carries `params.workspace_dir`, and the gateway's `acp:`
/// agent works there — made under its `--workspace-root` — as its session's `cwd`.
#[tokio::test]
async fn e2a_acp_workspace_dir_is_the_cwd_of_the_agent_behind_the_gateway() {
    let root = tempfile::tempdir().unwrap();
    let fake = format!(
        "{}/../gateway/tests/clients/data/fake_acp_agent.py",
        env!("CARGO_MANIFEST_DIR")
    );
    let agent_spec = format!("acp:python3 {fake}");
    let root_arg = root.path().display().to_string();
    // its own token (another test of this binary may set E2A_TOKEN, which a child inherits)
    let token = root.path().join("token");
    std::fs::write(&token, "workspace-test-token\n").unwrap();
    let token = token.display().to_string();
    let gateway = common::serve(&[
        "--agent",
        &agent_spec,
        "--workspace-root",
        &root_arg,
        "--token-file",
        &token,
    ]);
    let front = agent(vec![
        e2a_bin().into(),
        "acp".into(),
        "--agent".into(),
        format!("e2a:{}", gateway.base),
        "--agent-token-file".into(),
        token.clone(),
        "--workspace-dir".into(),
        "task-9".into(),
    ]);
    let frames = run(&front, request("cwd", Some("s1"))).await;
    assert_eq!(
        final_kind(&frames),
        "e2a.complete",
        "{:?}",
        frames.last().map(|f| &f.body)
    );
    let task = root.path().canonicalize().unwrap().join("task-9");
    assert_eq!(text(&frames), task.display().to_string());
    assert!(task.is_dir());
}
