//! Delegation with callbacks across a crash: a gateway whose agent delegates to a child gateway
//! (`delegate = "callback"`) is killed (SIGKILL) while the child works; restarted on the same
//! SQLite file and port, it receives the child's callback — posted by the child's own push
//! sender, retried while the parent was down — and the run, which read `running` meanwhile,
//! ends with the child's answer; one whose delegation times out meanwhile reads failed. (Two
//! gateways on PostgreSQL: `multi_gateway.rs`.)

use std::time::Duration;

use serde_json::Value;

mod common;
use common::{
    child_gateway, delegating_config, planner_reported, planner_run, planner_run_until, serve_at, submit_to_planner,
    Serve,
};

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

/// A parent gateway on SQLite whose agent `planner` delegated run `id` to a child gateway (its
/// report taking `child_delay_ms`; `push_extra`, `delegation_extra`: more lines of the child's
/// `[a2a.push]` and of the parent's `[delegation]`), then was killed (SIGKILL) while the run
/// waited. What the test needs to go on: the scratch directory and the child (both kept alive),
/// and the parent restarted on the same file and port, by `restart`.
struct Crashed {
    _dir: tempfile::TempDir,
    _child: Serve,
    bind: String,
    args: Vec<String>,
}

impl Crashed {
    fn after_delegating(id: &str, child_delay_ms: u64, push_extra: &str, delegation_extra: &str) -> Crashed {
        let dir = tempfile::tempdir().expect("tmp");
        let child = child_gateway(dir.path(), child_delay_ms, push_extra);
        let bind = format!("127.0.0.1:{}", free_port());
        let store = format!("sqlite:{}", dir.path().join("parent.db").display());
        let extra = ("", delegation_extra);
        let config = delegating_config(
            dir.path(),
            "parent.toml",
            &store,
            extra,
            &format!("http://{bind}"),
            &child.base,
        );
        let args = vec!["--config".to_string(), config.display().to_string()];
        let crashed = Crashed {
            _dir: dir,
            _child: child,
            bind,
            args,
        };
        let mut parent = crashed.restart();
        runtime().block_on(async {
            submit_to_planner(&parent.base, id, "write the report").await;
            // the run has delegated (its first frame says so) and waits
            let r = planner_run_until(&parent.base, id, Duration::from_secs(10), |r| {
                r["frames"].as_u64().unwrap_or(0) >= 1
            })
            .await;
            assert_eq!(r["state"], "running", "{r}");
        });
        parent.kill();
        crashed
    }

    /// The parent, (re)started on its file and port.
    fn restart(&self) -> Serve {
        let args: Vec<&str> = self.args.iter().map(String::as_str).collect();
        serve_at(&self.bind, &args)
    }
}

#[test]
fn a_delegated_run_survives_its_gateways_crash_and_ends_from_the_callback() {
    let crashed = Crashed::after_delegating("deleg-1", 4000, "", "");
    let parent = crashed.restart();
    runtime().block_on(async {
        // the child still works: the run waits for it, its gateway gone or not
        let r = planner_run(&parent.base, "deleg-1").await;
        assert_eq!(r["state"], "running", "a run waiting for a callback is not failed: {r}");
        planner_reported(&parent.base, "deleg-1", Duration::from_secs(30)).await;
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

/// A run whose gateway died while it waited waits no longer than its delegation could: once
/// `[delegation] timeout_secs` has passed without a callback, a reader settles it as failed.
#[test]
fn a_waiting_run_of_a_dead_gateway_reads_failed_once_its_delegation_timed_out() {
    let crashed = Crashed::after_delegating("deleg-2", 60_000, "", "timeout_secs = 5\n");
    let parent = crashed.restart();
    runtime().block_on(async {
        let r = planner_run(&parent.base, "deleg-2").await;
        assert_eq!(r["state"], "running", "still within its delegation's time: {r}");
        let r = planner_run_until(&parent.base, "deleg-2", Duration::from_secs(15), |r| {
            r["state"] != "running"
        })
        .await;
        assert_eq!(r["state"], "failed", "{r}");
        assert_eq!(r["final_frame"]["body"]["details"]["reason"], "gateway_gone", "{r}");
    });
}

/// A callback that found no gateway (the parent was down, and the child's push sender gives up
/// after one attempt, as the a2a-sdk's does) is not the end: the restarted gateway looks through
/// the delegations its runs wait on, reads the child's ended task, and finishes the run.
#[test]
fn a_callback_lost_while_the_gateway_was_down_is_recovered_when_it_starts() {
    let crashed = Crashed::after_delegating("deleg-3", 1500, "max_attempts = 1\n", "");
    // the child answers while no gateway listens, and does not try again
    std::thread::sleep(Duration::from_millis(3000));
    let parent = crashed.restart();
    runtime().block_on(planner_reported(&parent.base, "deleg-3", Duration::from_secs(15)));
}
