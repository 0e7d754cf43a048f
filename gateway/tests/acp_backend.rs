//! ACP agents behind the gateway ([`e2a_gateway::backends::AcpProcessAgent`], `--agent acp:CMD`): the
//! gateway speaks to a real ACP agent program as its client, here a minimal Python ACP agent
//! (`clients/data/fake_acp_agent.py`). With the `e2a acp` binary itself behind the gateway:
//! `cli/tests/acp_agent.rs`, where cargo builds the binary with the tests.

mod common;

#[path = "support/acp_runs.rs"]
mod acp_runs;
use acp_runs::*;

use std::path::Path;
use std::time::Duration;

use e2a::E2AResponse;
use e2a_gateway::backends::{AcpProcessAgent, AcpProcessConfig, PermissionPolicy};
use e2a_gateway::{Agent, Caller, RequestContext};
use futures_util::StreamExt;

fn fake_agent() -> String {
    format!("{}/tests/clients/data/fake_acp_agent.py", env!("CARGO_MANIFEST_DIR"))
}

fn agent(command: Vec<String>, approve: &[&str], allow_fs: bool) -> AcpProcessAgent {
    let mut config = AcpProcessConfig::new(command);
    config.policy = PermissionPolicy {
        approve: approve.iter().map(|s| s.to_string()).collect(),
    };
    config.allow_fs = allow_fs;
    AcpProcessAgent::new(config).unwrap()
}

#[tokio::test]
async fn two_callers_with_one_session_id_get_two_acp_sessions() {
    let a = agent(vec!["python3".into(), fake_agent()], &[], false);
    let said = |frames: Vec<E2AResponse>| text(&frames);
    let one = said(run_as(&a, request("session", Some("default")), Caller::named("token-1")).await);
    let two = said(run_as(&a, request("session", Some("default")), Caller::named("token-2")).await);
    assert_ne!(one, two, "caller token-2 reached the ACP session of token-1");
    let again = said(run_as(&a, request("session", Some("default")), Caller::named("token-1")).await);
    assert_eq!(again, one, "a caller keeps its own session");
}

#[tokio::test]
async fn an_e2a_session_keeps_its_acp_session() {
    let a = agent(vec!["python3".into(), fake_agent()], &[], false);
    let said = |frames: Vec<E2AResponse>| text(&frames);
    let one = said(run(&a, request("session", Some("A"))).await);
    assert_eq!(said(run(&a, request("session", Some("A"))).await), one);
    let two = said(run(&a, request("session", Some("B"))).await);
    assert_ne!(one, two);
    let mut by_context = request("session", None);
    by_context.context_id = Some("A".into());
    assert_eq!(said(run(&a, by_context).await), one, "context_id keys the session too");
    let fresh = said(run(&a, request("session", None)).await);
    assert!(fresh != one && fresh != two, "no key: a session of its own");
}

#[tokio::test]
async fn a_crashed_agent_gives_an_error_frame_and_is_restarted() {
    let dir = tempfile::tempdir().unwrap();
    let counter = dir.path().join("starts");
    let cmd = format!(
        "FAKE_ACP_COUNTER='{}' exec python3 '{}'",
        counter.display(),
        fake_agent()
    );
    let a = agent(vec!["sh".into(), "-c".into(), cmd], &[], false);
    let frames = run(&a, request("crash", Some("s"))).await;
    assert_eq!(final_kind(&frames), "e2a.error");
    assert_eq!(text(&frames), "about to crash");
    assert_eq!(frames.last().unwrap().body["code"], "E2A.AGENT_ERROR");
    let frames = run(&a, request("hi", Some("s"))).await;
    assert_eq!(final_kind(&frames), "e2a.complete");
    assert_eq!(text(&frames), "fake: hi");
    let starts = std::fs::read_to_string(&counter).unwrap();
    assert_eq!(starts.lines().count(), 2, "restarted once");

    let missing = agent(vec!["/nonexistent/acp-agent".into()], &[], false);
    let frames = run(&missing, request("hi", None)).await;
    assert_eq!(final_kind(&frames), "e2a.error");
}

#[tokio::test]
async fn permission_requests_follow_the_policy() {
    let deny_all = agent(vec!["python3".into(), fake_agent()], &[], false);
    assert_eq!(text(&run(&deny_all, request("permission read", None)).await), "no");
    let reads = agent(vec!["python3".into(), fake_agent()], &["read"], false);
    assert_eq!(text(&run(&reads, request("permission read", None)).await), "yes");
    assert_eq!(text(&run(&reads, request("permission execute", None)).await), "no");
    let by_title = agent(vec!["python3".into(), fake_agent()], &["EXECUTE tool"], false);
    assert_eq!(text(&run(&by_title, request("permission execute", None)).await), "yes");
    let all = agent(vec!["python3".into(), fake_agent()], &["*"], false);
    assert_eq!(text(&run(&all, request("permission edit", None)).await), "yes");
}

#[tokio::test]
async fn file_system_and_terminal_methods_are_declined_unless_enabled() {
    let closed = agent(vec!["python3".into(), fake_agent()], &[], false);
    assert_eq!(text(&run(&closed, request("fs", None)).await), "[-32601, -32601]");
    // enabled: files inside the session's directory only, symlinks resolved
    let dir = tempfile::tempdir().unwrap();
    let inside = dir.path().join("inside.txt");
    std::fs::write(&inside, "mine\n").unwrap();
    let outside = tempfile::NamedTempFile::new().unwrap();
    let link = dir.path().join("link.txt");
    std::os::unix::fs::symlink(outside.path(), &link).unwrap();
    let mut config = AcpProcessConfig::new(vec!["python3".into(), fake_agent()]);
    config.allow_fs = true;
    config.cwd = Some(dir.path().to_path_buf());
    let fs = AcpProcessAgent::new(config).unwrap();
    let read = |p: &Path| request(&format!("fs {}", p.display()), None);
    assert_eq!(text(&run(&fs, read(&inside)).await), "[null, -32601]");
    assert_eq!(text(&run(&fs, read(outside.path())).await), "[-32602, -32601]");
    assert_eq!(text(&run(&fs, read(&link)).await), "[-32602, -32601]");
    let dotdot = dir.path().join("..").join(outside.path().file_name().unwrap());
    assert_eq!(text(&run(&fs, read(&dotdot)).await), "[-32602, -32601]");
    assert_eq!(
        text(&run(&fs, request("fs relative.txt", None)).await),
        "[-32602, -32601]"
    );
}

#[tokio::test]
async fn a_run_that_does_not_keep_up_holds_the_agent_back() {
    let dir = tempfile::tempdir().unwrap();
    let progress = dir.path().join("said");
    let mirror = format!("{}/tests/clients/data/mirror_acp_agent.py", env!("CARGO_MANIFEST_DIR"));
    let shell = format!("MIRROR_FLOODED='{}' exec python3 '{mirror}'", progress.display());
    let a = agent(vec!["sh".into(), "-c".into(), shell], &[], false);
    let n = 200_000;
    let mut frames = a.run(
        request(&format!("flood {n}"), Some("s-flood")),
        RequestContext::new(Caller::anonymous(), None),
    );
    // the run starts (its first frame), then its reader stops taking frames
    let first = tokio::time::timeout(Duration::from_secs(30), frames.next())
        .await
        .unwrap()
        .unwrap();
    assert!(!first.is_final);
    let held = common::progress_when_still(&progress, n).await;
    assert!(
        held < n / 2,
        "the agent said {held} of {n} chunks although the run took one frame"
    );
    // the run takes the rest: every chunk arrives, and the agent finishes
    let rest = tokio::time::timeout(Duration::from_secs(120), frames.collect::<Vec<_>>())
        .await
        .unwrap();
    assert_eq!(rest.last().map(|f| f.is_final), Some(true));
    assert_eq!(common::progress(&progress), n);
}

/// A request's `params.workspace_dir` (E2A §11.6) is made under the workspace root and is the
/// ACP session's `cwd` for that prompt — and the directory its `fs/*` requests are confined
/// to; one out of the root (`..`, a link out of it) is not used: the default directory is.
#[tokio::test]
async fn a_prompts_workspace_dir_is_its_sessions_cwd_inside_the_root_only() {
    let root = tempfile::tempdir().expect("root");
    let outside = tempfile::tempdir().expect("outside");
    std::os::unix::fs::symlink(outside.path(), root.path().join("out")).expect("symlink");
    let mut config = AcpProcessConfig::new(vec!["python3".into(), fake_agent()]);
    config.workspace_root = Some(root.path().to_path_buf());
    config.allow_fs = true;
    let a = AcpProcessAgent::new(config.clone()).expect("agent");
    let asking = |text: &str, dir: Option<&str>| {
        let mut r = request(text, Some("conv"));
        if let Some(d) = dir {
            r.params.insert("workspace_dir".into(), d.into());
        }
        r
    };
    let real_root = root.path().canonicalize().expect("real");
    let task = real_root.join("task-42");
    assert_eq!(
        text(&run(&a, asking("cwd", Some("task-42"))).await),
        task.display().to_string()
    );
    assert!(task.is_dir(), "made on demand");
    // its fs requests are confined to it: a file there is read, one of the default directory
    // (the gateway's) is not
    std::fs::write(task.join("notes.txt"), "inside").expect("write");
    let inside = text(
        &run(
            &a,
            asking(&format!("fs {}", task.join("notes.txt").display()), Some("task-42")),
        )
        .await,
    );
    assert!(inside.starts_with("[null"), "{inside}");
    let here = std::env::current_dir().expect("cwd").join("Cargo.toml");
    let elsewhere = text(&run(&a, asking(&format!("fs {}", here.display()), Some("task-42"))).await);
    assert!(elsewhere.starts_with("[-32602"), "{elsewhere}");
    // out of the root: the default directory, nothing made outside
    let default = config.session_cwd().display().to_string();
    for asked in ["../escape", "out/made-through-a-link", "/etc"] {
        assert_eq!(text(&run(&a, asking("cwd", Some(asked))).await), default, "{asked}");
    }
    assert!(!outside.path().join("made-through-a-link").exists());
    // no workspace asked: the default
    assert_eq!(text(&run(&a, asking("cwd", None)).await), default);
}
