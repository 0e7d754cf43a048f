//! Agent groups (`[agents.NAME] group = { members, mode, quorum }`): every member runs the
//! request; the run ends when the mode is met (all, any, a quorum) or can no longer be, the
//! members still working are cancelled, and the final frame names every member's outcome.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use e2a::stream::ResponseStream;
use e2a::{E2AEnvelope, E2AResponse};
use e2a_gateway::backends::{GroupAgent, GroupMode};
use e2a_gateway::config_file::ConfigFile;
use e2a_gateway::{Agent, Caller, FrameStream, RequestContext};
use futures_util::StreamExt;
use serde_json::{json, Value};

/// A member: after `delay`, says `text` and answers it — or fails, or waits until cancelled
/// (recording that it was).
struct Member {
    delay: Duration,
    behaviour: Behaviour,
    cancelled: Arc<AtomicBool>,
}

#[derive(Clone)]
enum Behaviour {
    Answer(&'static str),
    Fail,
    Never,
}

fn member(delay_ms: u64, behaviour: Behaviour) -> (Arc<dyn Agent>, Arc<AtomicBool>) {
    let cancelled = Arc::new(AtomicBool::new(false));
    let m = Member {
        delay: Duration::from_millis(delay_ms),
        behaviour,
        cancelled: cancelled.clone(),
    };
    (Arc::new(m), cancelled)
}

/// Records, when a member's run is dropped, whether its cancellation had fired (how the gateway
/// stops a run: it cancels it, then stops reading it).
struct Cancelled(tokio_util::sync::CancellationToken, Arc<AtomicBool>);

impl Drop for Cancelled {
    fn drop(&mut self) {
        if self.0.is_cancelled() {
            self.1.store(true, Ordering::SeqCst);
        }
    }
}

impl Agent for Member {
    fn run(&self, request: E2AEnvelope, ctx: RequestContext) -> FrameStream {
        let (delay, behaviour, cancelled) = (self.delay, self.behaviour.clone(), self.cancelled.clone());
        Box::pin(async_stream::stream! {
            let _seen = Cancelled(ctx.cancel.clone(), cancelled);
            let mut s = ResponseStream::for_request(&request);
            tokio::select! {
                _ = ctx.cancel.cancelled() => return,
                _ = tokio::time::sleep(delay) => {}
            }
            match behaviour {
                Behaviour::Answer(text) => {
                    yield s.reasoning("thinking");
                    yield s.text(text);
                    yield s.answer(text, None);
                }
                Behaviour::Fail => yield s.fail("E2A.AGENT_ERROR", "the tool broke", serde_json::Map::new()),
                Behaviour::Never => ctx.cancel.cancelled().await,
            }
        })
    }
}

async fn run(group: &GroupAgent) -> Vec<E2AResponse> {
    let req = E2AEnvelope::new("chat.send", json!({"query": "review this"})).with_request_id("g-1");
    let frames = group.run(req, RequestContext::new(Caller::anonymous(), None));
    tokio::time::timeout(
        Duration::from_secs(10),
        frames.map(E2AResponse::from).collect::<Vec<_>>(),
    )
    .await
    .expect("the group's run ends")
}

fn statuses(members: &Value) -> Vec<(String, String)> {
    members
        .as_array()
        .expect("members")
        .iter()
        .map(|m| {
            (
                m["agent"].as_str().unwrap_or_default().into(),
                m["status"].as_str().unwrap_or_default().into(),
            )
        })
        .collect()
}

fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
}

#[tokio::test]
async fn all_waits_for_every_member_and_streams_each_into_its_own_artifact() {
    let (a, _) = member(10, Behaviour::Answer("looks good"));
    let (b, _) = member(60, Behaviour::Answer("two typos"));
    let group = GroupAgent::new(vec![("writer".into(), a), ("reviewer".into(), b)], GroupMode::All).expect("group");
    let frames = run(&group).await;
    assert_valid_stream(&frames);
    let last = frames.last().expect("final");
    assert_eq!(last.response_kind.to_string(), "e2a.complete");
    assert_eq!(
        last.body["result"]["content"],
        "writer: looks good\nreviewer: two typos"
    );
    assert_eq!(
        statuses(&last.body["result"]["members"]),
        pairs(&[("writer", "succeeded"), ("reviewer", "succeeded")])
    );
    let artifacts: Vec<&str> = frames
        .iter()
        .filter(|f| f.body.get("event_type") == Some(&json!("artifact")))
        .filter_map(|f| f.body["delta"]["artifact_id"].as_str())
        .collect();
    assert!(
        artifacts.contains(&"member:writer") && artifacts.contains(&"member:reviewer"),
        "{artifacts:?}"
    );
    assert!(frames.iter().any(|f| f.body["delta"] == "writer: thinking"));
    // one failing member: all is not met, and every member is heard out
    let (a, _) = member(60, Behaviour::Answer("looks good"));
    let (b, _) = member(10, Behaviour::Fail);
    let group = GroupAgent::new(vec![("writer".into(), a), ("reviewer".into(), b)], GroupMode::All).expect("group");
    let last = run(&group).await.pop().expect("final");
    assert_eq!(last.body["code"], "E2A.AGENT_ERROR", "{:?}", last.body);
    assert_eq!(
        statuses(&last.body["details"]["members"]),
        pairs(&[("writer", "succeeded"), ("reviewer", "failed")])
    );
    assert_eq!(last.body["details"]["members"][1]["error"]["message"], "the tool broke");
}

#[tokio::test]
async fn any_ends_at_the_first_answer_and_cancels_the_slow_member() {
    let (failing, _) = member(5, Behaviour::Fail);
    let (slow, slow_cancelled) = member(5, Behaviour::Never);
    let (fast, _) = member(50, Behaviour::Answer("done"));
    let members = vec![
        ("failing".into(), failing),
        ("slow".into(), slow),
        ("fast".into(), fast),
    ];
    let group = GroupAgent::new(members, GroupMode::Any).expect("group");
    let last = run(&group).await.pop().expect("final");
    assert_eq!(last.response_kind.to_string(), "e2a.complete", "{:?}", last.body);
    assert_eq!(
        statuses(&last.body["result"]["members"]),
        pairs(&[("failing", "failed"), ("slow", "cancelled"), ("fast", "succeeded")])
    );
    eventually("the slow member is cancelled", || slow_cancelled.load(Ordering::SeqCst)).await;
}

#[tokio::test]
async fn a_quorum_is_met_or_fails_as_soon_as_it_cannot_be() {
    let (one, _) = member(10, Behaviour::Answer("yes"));
    let (failing, _) = member(10, Behaviour::Fail);
    let (slow, _) = member(150, Behaviour::Answer("yes, later"));
    let (never, never_cancelled) = member(5, Behaviour::Never);
    let members = vec![
        ("one".into(), one),
        ("failing".into(), failing),
        ("slow".into(), slow),
        ("never".into(), never),
    ];
    let group = GroupAgent::new(members, GroupMode::Quorum(2)).expect("group");
    let last = run(&group).await.pop().expect("final");
    assert_eq!(last.response_kind.to_string(), "e2a.complete", "{:?}", last.body);
    assert_eq!(
        statuses(&last.body["result"]["members"]),
        pairs(&[
            ("one", "succeeded"),
            ("failing", "failed"),
            ("slow", "succeeded"),
            ("never", "cancelled")
        ])
    );
    eventually("the loser is cancelled", || never_cancelled.load(Ordering::SeqCst)).await;
    // two of three needed, two failed: it ends at once, the slow one cancelled
    let (slow, slow_cancelled) = member(5, Behaviour::Never);
    let (f1, _) = member(5, Behaviour::Fail);
    let (f2, _) = member(20, Behaviour::Fail);
    let members = vec![("slow".into(), slow), ("f1".into(), f1), ("f2".into(), f2)];
    let group = GroupAgent::new(members, GroupMode::Quorum(2)).expect("group");
    let last = run(&group).await.pop().expect("final");
    assert_eq!(last.body["code"], "E2A.AGENT_ERROR", "{:?}", last.body);
    assert!(last.body["message"]
        .as_str()
        .unwrap_or_default()
        .contains("0 of 3 succeeded, 2 needed"));
    eventually("the slow member is cancelled", || slow_cancelled.load(Ordering::SeqCst)).await;
    // quorums that cannot be
    let (m, _) = member(1, Behaviour::Fail);
    assert!(GroupAgent::new(vec![("m".into(), m.clone())], GroupMode::Quorum(2)).is_err());
    assert!(GroupAgent::new(vec![("m".into(), m)], GroupMode::Quorum(0)).is_err());
    assert!(GroupAgent::new(Vec::new(), GroupMode::All).is_err());
}

#[tokio::test]
async fn a_config_file_group_is_checked_and_served() {
    let dir = tempfile::tempdir().expect("tmp");
    let script = script_path();
    let errors_of = |text: &str| match ConfigFile::parse(text, "e2a.toml", dir.path(), &[]) {
        Ok(file) => file
            .check()
            .err()
            .unwrap_or_default()
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n"),
        Err(e) => e.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"),
    };
    let agents = format!(
        "[agents.a]\nagent = \"echo\"\n[agents.b]\nagent = \"script:{}\"\n",
        script.display()
    );
    let ok = format!("{agents}[agents.both]\ngroup = {{members = [\"a\", \"b\"], mode = \"quorum\", quorum = 2}}\n");
    assert_eq!(errors_of(&ok), "");
    let unknown = format!("{agents}[agents.g]\ngroup = {{members = [\"a\", \"zz\"]}}\n");
    assert!(
        errors_of(&unknown).contains("agents.g.group.members[1]"),
        "{}",
        errors_of(&unknown)
    );
    let nested =
        format!("{agents}[agents.g]\ngroup = {{members = [\"a\"]}}\n[agents.h]\ngroup = {{members = [\"g\"]}}\n");
    assert!(errors_of(&nested).contains("is a group"), "{}", errors_of(&nested));
    let no_quorum = format!("{agents}[agents.g]\ngroup = {{members = [\"a\"], mode = \"quorum\"}}\n");
    assert!(
        errors_of(&no_quorum).contains("agents.g.group.quorum"),
        "{}",
        errors_of(&no_quorum)
    );
    let too_many = format!("{agents}[agents.g]\ngroup = {{members = [\"a\"], mode = \"quorum\", quorum = 3}}\n");
    assert!(
        errors_of(&too_many).contains("more than the group's 1 members"),
        "{}",
        errors_of(&too_many)
    );
    let both = format!("{agents}[agents.g]\nagent = \"echo\"\ngroup = {{members = [\"a\"]}}\n");
    assert!(errors_of(&both).contains("not both"), "{}", errors_of(&both));
    // served at its routes, like any named agent
    let file = ConfigFile::parse(&ok, "e2a.toml", dir.path(), &[]).expect("config");
    let served = serve_crashable(file.gateway(None, None).expect("gateway")).await;
    let resp = client()
        .post(format!("{}/agents/both/v1/e2a/requests", served.base))
        .json(&json!({"method": "chat.send", "params": {"query": "what is the weather?"}}))
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status(), 200);
    let answer: Value = resp.json().await.expect("json");
    let content = answer["body"]["result"]["content"].as_str().unwrap_or_default();
    assert!(
        content.starts_with("a: ") && content.contains("b: It is 21 °C in Paris today."),
        "{answer}"
    );
}
