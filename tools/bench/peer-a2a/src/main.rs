//! The official Rust A2A server framework (`a2a-server-lf` 0.5.3) with an echo executor, as a
//! peer for the e2a gateway's `--a2a` mode.
//!
//! - JSON-RPC binding at `POST /a2a` (the framework's `jsonrpc_router`);
//! - HTTP+JSON binding at the root (`POST /message:send`, `/message:stream`, `/tasks/{id}`…,
//!   the framework's `rest_router`);
//! - `GET /healthz`: `ok` (for the harness's readiness poll).
//!
//! Tasks live in the framework's `InMemoryTaskStore`. The executor answers each message with
//! the user's text, `You said: <text>`. With `--events minimal` (the default) it uses the
//! fewest events that make a completed task with the reply in it: one artifact update carrying
//! the reply, then a COMPLETED status update. (The framework itself records the task as
//! SUBMITTED, with the user's message in its history, before the executor runs.) `SendMessage`
//! therefore returns the stored task, with its artifact and history; `SendStreamingMessage`
//! streams those two events as SSE.
//!
//! `--events mirror` sends instead the same sequence the e2a gateway's A2A binding makes of its
//! `echo` agent, so that both servers do comparable work per request: WORKING, three WORKING
//! updates carrying the agent's reasoning, tool call and tool result messages, the reply as
//! four artifact chunks (`You `, `said: `, `hello`, and an empty last chunk), then COMPLETED
//! with the reply as its message (nine events).
//!
//! `--artifact-chunks N` (bench case e, token streams) makes the executor answer every message
//! with N artifact updates of one artifact instead, each the text chunk `tok ` (the first a new
//! artifact, the others `append: true`, the last `lastChunk: true`), then a COMPLETED status
//! update: N + 1 events in `SendStreamingMessage`'s stream. The executor yields to the runtime
//! (`tokio::task::yield_now`) between events: the framework hands its executor's events to the
//! subscribers through a broadcast channel of 32, and a subscriber that falls further behind
//! gets an error ("subscription fell behind active execution") in place of the rest of its
//! stream. The framework applies each event to the stored task, cloning the task each time, so
//! its work per event grows with the chunks already appended: a stream of N chunks costs it
//! O(N²).
//!
//! Like the gateway, the framework requires the `A2A-Version: 1.0` header (an absent header
//! means 0.3 and is refused).
//!
//! Usage: `peer-a2a PORT [--events minimal|mirror] [--artifact-chunks N]`; listens on
//! 127.0.0.1:PORT.

use std::sync::Arc;

use std::collections::HashMap;

use a2a::{
    new_artifact_id, A2AError, Artifact, Message, Part, PartContent, Role, StreamResponse, TaskArtifactUpdateEvent,
    TaskState, TaskStatus, TaskStatusUpdateEvent,
};
use a2a_server::{AgentExecutor, DefaultRequestHandler, ExecutorContext, InMemoryTaskStore};
use futures::stream::{self, BoxStream, StreamExt};
use serde_json::json;

/// The text of each chunk with `--artifact-chunks` (the same as the bench's stream agent's).
const TOKEN: &str = "tok ";

struct EchoExecutor {
    mirror: bool,
    /// `--artifact-chunks`: 0 for the echo.
    chunks: usize,
}

/// The text parts of the user's message, joined.
fn user_text(ctx: &ExecutorContext) -> String {
    let Some(message) = &ctx.message else {
        return String::new();
    };
    message
        .parts
        .iter()
        .filter_map(|p| match &p.content {
            PartContent::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("")
}

fn status(task_id: &str, context_id: &str, state: TaskState, message: Option<Message>) -> StreamResponse {
    StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
        task_id: task_id.into(),
        context_id: context_id.into(),
        status: TaskStatus {
            state,
            message,
            timestamp: None,
        },
        metadata: None,
    })
}

fn artifact(
    task_id: &str,
    context_id: &str,
    artifact_id: &str,
    text: &str,
    append: Option<bool>,
    last: bool,
) -> StreamResponse {
    StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
        task_id: task_id.into(),
        context_id: context_id.into(),
        artifact: Artifact {
            artifact_id: artifact_id.into(),
            name: append.map(|_| "output".to_string()),
            description: None,
            parts: vec![Part::text(text)],
            metadata: None,
            extensions: None,
        },
        append,
        last_chunk: Some(last),
        metadata: None,
    })
}

/// An agent message of the task, with `metadata` (an object) if not null.
fn agent_message(task_id: &str, context_id: &str, part: Part, metadata: serde_json::Value) -> Message {
    let mut m = Message::new(Role::Agent, vec![part]);
    m.task_id = Some(task_id.into());
    m.context_id = Some(context_id.into());
    if let serde_json::Value::Object(o) = metadata {
        m.metadata = Some(o.into_iter().collect::<HashMap<_, _>>());
    }
    m
}

/// `n` artifact chunks of [`TOKEN`], then COMPLETED; the runtime gets a turn between events.
fn token_stream(t: String, c: String, n: usize) -> BoxStream<'static, Result<StreamResponse, A2AError>> {
    let art = format!("{t}-output");
    stream::iter(0..=n)
        .then(move |i| {
            let event = if i < n {
                artifact(&t, &c, &art, TOKEN, Some(i > 0), i + 1 == n)
            } else {
                status(&t, &c, TaskState::Completed, None)
            };
            async move {
                if i > 0 {
                    tokio::task::yield_now().await;
                }
                Ok(event)
            }
        })
        .boxed()
}

impl AgentExecutor for EchoExecutor {
    fn execute(&self, ctx: ExecutorContext) -> BoxStream<'static, Result<StreamResponse, A2AError>> {
        let prompt = user_text(&ctx);
        let reply = format!("You said: {prompt}");
        let (t, c) = ctx.task_info();
        if self.chunks > 0 {
            return token_stream(t, c, self.chunks);
        }
        if !self.mirror {
            let events = [
                artifact(&t, &c, &new_artifact_id(), &reply, None, true),
                status(&t, &c, TaskState::Completed, None),
            ];
            return stream::iter(events.map(Ok)).boxed();
        }
        let working = |part: Part, metadata: serde_json::Value| {
            status(&t, &c, TaskState::Working, Some(agent_message(&t, &c, part, metadata)))
        };
        let art = format!("{t}-output");
        let mut events = vec![
            status(&t, &c, TaskState::Working, None),
            working(
                Part::text("The user said something; echo it back."),
                json!({"e2a_delta_kind": "reasoning"}),
            ),
            working(
                Part::data(json!({"tool_call": {"arguments": {"text": prompt}, "name": "echo",
                    "status": "in_progress", "tool_call_id": "echo-1"}})),
                json!({"e2a_chunk": {"event_type": "chat.tool_call"}, "e2a_delta_kind": "tool"}),
            ),
            working(
                Part::data(
                    json!({"result": {"length": prompt.chars().count()}, "status": "completed",
                    "tool_call_id": "echo-1"}),
                ),
                json!({"e2a_chunk": {"event_type": "chat.tool_result"}, "e2a_delta_kind": "tool"}),
            ),
        ];
        for (i, piece) in bench_serve::echo_pieces(&reply).iter().enumerate() {
            events.push(artifact(&t, &c, &art, piece, Some(i > 0), false));
        }
        events.push(artifact(&t, &c, &art, "", Some(true), true));
        let done = agent_message(&t, &c, Part::text(reply), serde_json::Value::Null);
        events.push(status(&t, &c, TaskState::Completed, Some(done)));
        stream::iter(events.into_iter().map(Ok)).boxed()
    }

    fn cancel(&self, ctx: ExecutorContext) -> BoxStream<'static, Result<StreamResponse, A2AError>> {
        let (t, c) = ctx.task_info();
        stream::iter([Ok(status(&t, &c, TaskState::Canceled, None))]).boxed()
    }
}

fn main() {
    let mut port: Option<u16> = None;
    let mut mirror = false;
    let mut chunks = 0usize;
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--events" => match it.next().as_deref() {
                Some("minimal") => mirror = false,
                Some("mirror") => mirror = true,
                _ => die("--events: minimal or mirror"),
            },
            "--artifact-chunks" => {
                chunks = it
                    .next()
                    .and_then(|n| n.parse().ok())
                    .unwrap_or_else(|| die("--artifact-chunks needs a number"))
            }
            p if port.is_none() => port = Some(p.parse().unwrap_or_else(|_| die("PORT must be a number"))),
            other => die(&format!("unknown argument {other:?}")),
        }
    }
    let port = port.unwrap_or_else(|| die("usage: peer-a2a PORT [--events minimal|mirror] [--artifact-chunks N]"));
    let what = match (chunks, mirror) {
        (0, false) => "minimal".to_string(),
        (0, true) => "mirror".to_string(),
        (n, _) => format!("{n} artifact chunks"),
    };
    bench_serve::serve("peer-a2a", &what, port, || {
        let handler = Arc::new(DefaultRequestHandler::new(
            EchoExecutor { mirror, chunks },
            InMemoryTaskStore::new(),
        ));
        axum::Router::new()
            .nest("/a2a", a2a_server::jsonrpc::jsonrpc_router(handler.clone()))
            .merge(a2a_server::rest::rest_router(handler))
            .route("/healthz", axum::routing::get(|| async { "ok" }))
    });
}

fn die(msg: &str) -> ! {
    bench_serve::die("peer-a2a", msg)
}
