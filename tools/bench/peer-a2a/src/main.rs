//! The official Rust A2A server framework (`a2a-server-lf` 0.5.3) with an echo executor, as a
//! peer for the e2a gateway's `--a2a` mode.
//!
//! - JSON-RPC binding at `POST /a2a` (the framework's `jsonrpc_router`);
//! - HTTP+JSON binding at the root (`POST /message:send`, `/message:stream`, `/tasks/{id}`…,
//!   the framework's `rest_router`);
//! - `GET /healthz`: `ok` (for the harness's readiness poll).
//!
//! Tasks live in the framework's `InMemoryTaskStore`. The executor answers each message with
//! the user's text, `You said: <text>`, using the fewest events that make a completed task with
//! the reply in it: one artifact update carrying the reply, then a COMPLETED status update.
//! (The framework itself records the task as SUBMITTED, with the user's message in its
//! history, before the executor runs.) `SendMessage` therefore returns the stored task, with
//! its artifact and history; `SendStreamingMessage` streams those two events as SSE.
//!
//! Like the gateway, the framework requires the `A2A-Version: 1.0` header (an absent header
//! means 0.3 and is refused).
//!
//! Usage: `peer-a2a PORT`; listens on 127.0.0.1:PORT.

use std::sync::Arc;

use a2a::{
    new_artifact_id, A2AError, Artifact, Part, PartContent, StreamResponse, TaskArtifactUpdateEvent,
    TaskState, TaskStatus, TaskStatusUpdateEvent,
};
use a2a_server::{AgentExecutor, DefaultRequestHandler, ExecutorContext, InMemoryTaskStore};
use axum::serve::ListenerExt;
use futures::stream::{self, BoxStream, StreamExt};

struct EchoExecutor;

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

impl AgentExecutor for EchoExecutor {
    fn execute(&self, ctx: ExecutorContext) -> BoxStream<'static, Result<StreamResponse, A2AError>> {
        let reply = format!("You said: {}", user_text(&ctx));
        let (task_id, context_id) = ctx.task_info();
        let artifact = StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
            task_id: task_id.clone(),
            context_id: context_id.clone(),
            artifact: Artifact {
                artifact_id: new_artifact_id(),
                name: None,
                description: None,
                parts: vec![Part::text(reply)],
                metadata: None,
                extensions: None,
            },
            append: None,
            last_chunk: Some(true),
            metadata: None,
        });
        let done = StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id,
            context_id,
            status: TaskStatus {
                state: TaskState::Completed,
                message: None,
                timestamp: None,
            },
            metadata: None,
        });
        stream::iter([Ok(artifact), Ok(done)]).boxed()
    }

    fn cancel(&self, ctx: ExecutorContext) -> BoxStream<'static, Result<StreamResponse, A2AError>> {
        let (task_id, context_id) = ctx.task_info();
        let canceled = StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id,
            context_id,
            status: TaskStatus {
                state: TaskState::Canceled,
                message: None,
                timestamp: None,
            },
            metadata: None,
        });
        stream::iter([Ok(canceled)]).boxed()
    }
}

fn main() {
    let port: u16 = match std::env::args().nth(1).map(|p| p.parse()) {
        Some(Ok(p)) => p,
        _ => {
            eprintln!("usage: peer-a2a PORT");
            std::process::exit(2);
        }
    };
    // Worker threads: tokio's default, the CPUs this process may run on (1 under `taskset -c 1`),
    // as for the gateway.
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    rt.block_on(async move {
        let handler = Arc::new(DefaultRequestHandler::new(EchoExecutor, InMemoryTaskStore::new()));
        let app = axum::Router::new()
            .nest("/a2a", a2a_server::jsonrpc::jsonrpc_router(handler.clone()))
            .merge(a2a_server::rest::rest_router(handler))
            .route("/healthz", axum::routing::get(|| async { "ok" }));
        let listener = match tokio::net::TcpListener::bind(("127.0.0.1", port)).await {
            Ok(l) => l,
            Err(e) => {
                eprintln!("peer-a2a: cannot listen on 127.0.0.1:{port}: {e}");
                std::process::exit(2);
            }
        };
        eprintln!("peer-a2a listening on http://{}", listener.local_addr().expect("addr"));
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        axum::serve(listener, app).await.expect("serve");
    });
}
