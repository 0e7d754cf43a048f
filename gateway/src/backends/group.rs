//! An agent group (`[agents.NAME] group = { members = [...], mode = "all" | "any" | "quorum" }`):
//! one request fanned out to several agents at once, answered with the aggregate.
//!
//! Every member runs the request (each with its own cancellation under the run's). While they
//! work, each member's text streams into an artifact of its own (`member:NAME`, so that no client
//! sees two answers interleaved) and its reasoning as reasoning prefixed with its name; its other
//! frames (tool calls, plans) stay with it. `all` hears every member out (it succeeds when every
//! one answered); `any` and `quorum` end as soon as one (`quorum`) member answered — or as soon
//! as that can no longer be — and cancel the members still working (a remote member's task too). The final frame names every
//! member's outcome (`succeeded` with its answer, `failed` with its error, `paused`: it asked for
//! something a group cannot relay, `cancelled`) in `result.members`, and its content lists the
//! answers; a mode not met ends the run with `E2A.AGENT_ERROR` and the same list in its details.
//!
//! A member delegating with callbacks waits in this process (a group's run is not finished by
//! another gateway).

use std::sync::Arc;

use e2a::frame::Frame;
use e2a::stream::ResponseStream;
use e2a::types::{ArtifactDelta, ResponseKind};
use e2a::E2AEnvelope;
use futures_util::stream::{SelectAll, StreamExt};
use serde_json::{json, Map, Value};

use crate::agent::{Agent, FrameStream, RequestContext};

/// When a group's run is done ([`GroupAgent`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupMode {
    /// Every member must answer.
    All,
    /// One member's answer is enough: the others are cancelled.
    Any,
    /// This many members' answers are enough: the others are cancelled.
    Quorum(usize),
}

/// Several agents answering one request together (see the module docs).
pub struct GroupAgent {
    members: Vec<(String, Arc<dyn Agent>)>,
    mode: GroupMode,
}

/// Why a group cannot be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GroupError {
    /// A group needs a member.
    #[error("a group needs at least one member")]
    NoMembers,
    /// A quorum of none, or of more members than the group has.
    #[error("quorum {0} is not between 1 and the number of members ({1})")]
    Quorum(usize, usize),
}

impl GroupAgent {
    /// A group of `members` (name and agent, in the order their outcomes are listed) in `mode`.
    pub fn new(members: Vec<(String, Arc<dyn Agent>)>, mode: GroupMode) -> Result<Self, GroupError> {
        if members.is_empty() {
            return Err(GroupError::NoMembers);
        }
        if let GroupMode::Quorum(n) = mode {
            if n == 0 || n > members.len() {
                return Err(GroupError::Quorum(n, members.len()));
            }
        }
        Ok(GroupAgent { members, mode })
    }

    /// How many members must answer.
    fn needed(&self) -> usize {
        match self.mode {
            GroupMode::All => self.members.len(),
            GroupMode::Any => 1,
            GroupMode::Quorum(n) => n,
        }
    }
}

/// What became of one member.
#[derive(Debug, Clone)]
enum Outcome {
    Working,
    Succeeded(String),
    Failed { code: String, message: String },
    Paused(String),
    Cancelled,
}

impl Outcome {
    fn of(frame: &Frame) -> Outcome {
        let body = frame.body_object();
        let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or_default().to_string();
        match frame.response_kind {
            ResponseKind::E2aComplete => Outcome::Succeeded(text(body.get("result").and_then(|r| r.get("content")))),
            ResponseKind::E2aError => Outcome::Failed {
                code: text(body.get("code")),
                message: text(body.get("message")),
            },
            _ => Outcome::Paused(text(body.get("plan_content"))),
        }
    }

    fn json(&self, name: &str) -> Value {
        match self {
            Outcome::Succeeded(content) => json!({"agent": name, "status": "succeeded", "content": content}),
            Outcome::Failed { code, message } => {
                json!({"agent": name, "status": "failed", "error": {"code": code, "message": message}})
            }
            Outcome::Paused(question) => json!({"agent": name, "status": "paused", "question": question}),
            Outcome::Working | Outcome::Cancelled => json!({"agent": name, "status": "cancelled"}),
        }
    }
}

/// One member's run as the group reads it: its frames, tagged with its place.
fn tagged(i: usize, frames: FrameStream) -> futures_util::stream::BoxStream<'static, (usize, Frame)> {
    frames.map(move |f| (i, f)).boxed()
}

impl Agent for GroupAgent {
    fn run(&self, request: E2AEnvelope, ctx: RequestContext) -> FrameStream {
        let names: Vec<String> = self.members.iter().map(|(n, _)| n.clone()).collect();
        let needed = self.needed();
        let all = self.mode == GroupMode::All;
        let mut cancels = Vec::new();
        let mut streams: SelectAll<_> = SelectAll::new();
        for (i, (_, agent)) in self.members.iter().enumerate() {
            let mut child = ctx.child();
            // its run is this one's: a member waits for its own callbacks in this process
            child.run = None;
            cancels.push(child.cancel.clone());
            streams.push(tagged(i, agent.run(request.clone(), child)));
        }
        Box::pin(async_stream::stream! {
            let mut s = ResponseStream::for_request(&request);
            let mut outcomes = vec![Outcome::Working; names.len()];
            let mut wrote = vec![false; names.len()];
            while let Some((i, frame)) = streams.next().await {
                if !frame.is_final {
                    if let Some(f) = progress(&mut s, &names[i], &mut wrote[i], &frame) {
                        yield f;
                    }
                    continue;
                }
                outcomes[i] = Outcome::of(&frame);
                if wrote[i] {
                    yield member_text(&mut s, &names[i], "", true, true);
                }
                let succeeded = outcomes.iter().filter(|o| matches!(o, Outcome::Succeeded(_))).count();
                let open = outcomes.iter().filter(|o| matches!(o, Outcome::Working)).count();
                // `all` hears every member out; `any` and `quorum` stop once met, or once they
                // cannot be
                let decided = succeeded >= needed || succeeded + open < needed;
                if open == 0 || (decided && !all) {
                    break;
                }
            }
            // the mode is met, or can no longer be: the others stop
            for (o, cancel) in outcomes.iter_mut().zip(&cancels) {
                if matches!(o, Outcome::Working) {
                    cancel.cancel();
                    *o = Outcome::Cancelled;
                }
            }
            drop(streams);
            yield aggregate(s, &names, &outcomes, needed);
        })
    }

    fn name(&self) -> String {
        let names: Vec<&str> = self.members.iter().map(|(n, _)| n.as_str()).collect();
        format!("group:{}", names.join(","))
    }
}

/// What the group shows of a member's frame while it works: its text in its artifact, its
/// reasoning under its name; nothing of its other frames.
fn progress(s: &mut ResponseStream, name: &str, wrote: &mut bool, frame: &Frame) -> Option<Frame> {
    let body = frame.body_object();
    let delta = body.get("delta").and_then(Value::as_str)?;
    match body.get("delta_kind").and_then(Value::as_str) {
        Some("text") => {
            let first = !*wrote;
            *wrote = true;
            Some(member_text(s, name, delta, !first, false))
        }
        Some("reasoning") => Some(s.reasoning(&format!("{name}: {delta}"))),
        _ => None,
    }
}

/// A piece of member `name`'s artifact (`member:NAME`).
fn member_text(s: &mut ResponseStream, name: &str, text: &str, append: bool, last: bool) -> Frame {
    let mut part = Map::new();
    part.insert("text".into(), Value::String(text.into()));
    s.artifact(&ArtifactDelta {
        artifact_id: format!("member:{name}"),
        name: Some(format!("member:{name}")),
        kind: None,
        parts: vec![part],
        append,
        last_chunk: last,
        extra: Map::new(),
    })
}

/// The group's final frame: every member's outcome; an answer when `needed` succeeded.
fn aggregate(s: ResponseStream, names: &[String], outcomes: &[Outcome], needed: usize) -> Frame {
    let members: Vec<Value> = names.iter().zip(outcomes).map(|(n, o)| o.json(n)).collect();
    let succeeded = outcomes.iter().filter(|o| matches!(o, Outcome::Succeeded(_))).count();
    let lines: Vec<String> = names
        .iter()
        .zip(outcomes)
        .map(|(n, o)| match o {
            Outcome::Succeeded(content) => format!("{n}: {content}"),
            Outcome::Failed { message, .. } => format!("{n} failed: {message}"),
            Outcome::Paused(_) => format!("{n} asked for input, which a group cannot relay"),
            Outcome::Working | Outcome::Cancelled => format!("{n}: cancelled"),
        })
        .collect();
    if succeeded >= needed {
        return s.complete(json!({"content": lines.join("\n"), "members": members}));
    }
    let message = format!(
        "the group's members did not answer: {succeeded} of {} succeeded, {needed} needed",
        names.len()
    );
    let mut details = Map::new();
    details.insert("members".into(), Value::Array(members));
    s.fail(
        e2a::taxonomy::ErrorKind::AgentError.mapping().e2a_code,
        &message,
        details,
    )
}
