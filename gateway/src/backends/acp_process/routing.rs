//! How the agent's `session/update`s reach their turns: routed by session on the peer's
//! reading task, counted in a [`Backlog`] until their run takes them, the agent's output read
//! only while the backlog has room.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::Value;
use tokio::sync::mpsc;

use e2a::types::AcpAgentToClientMethod as AgentMethod;

use crate::protocol::acp::{Hook, Incoming, Pace, Peer};

/// The turns running on an agent process, by ACP session id: where each one's updates go.
pub(super) type Routes = Arc<Mutex<HashMap<String, mpsc::UnboundedSender<Counted>>>>;

/// Most `session/update`s of an agent routed to its runs and not yet taken by them: past it
/// the agent's output is not read (the agent waits) until a run takes some.
pub const MAX_BACKLOG: usize = 1024;

/// The updates of one agent process waiting for their runs.
#[derive(Default)]
pub(super) struct Backlog {
    waiting: std::sync::atomic::AtomicUsize,
    taken: tokio::sync::Notify,
}

impl Backlog {
    /// Waits until fewer than [`MAX_BACKLOG`] updates wait.
    async fn room(&self) {
        loop {
            let taken = self.taken.notified();
            if self.waiting.load(std::sync::atomic::Ordering::SeqCst) < MAX_BACKLOG {
                return;
            }
            taken.await;
        }
    }
}

/// An update on its way to its run, counted in the [`Backlog`] until it is dropped (taken by
/// the run, or dropped with a run that ended).
pub(super) struct Counted(pub(super) Value, Arc<Backlog>);

impl Counted {
    fn new(update: Value, backlog: &Arc<Backlog>) -> Self {
        backlog.waiting.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Counted(update, backlog.clone())
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        // only the update that makes room wakes the reader
        if self.1.waiting.fetch_sub(1, std::sync::atomic::Ordering::SeqCst) >= MAX_BACKLOG {
            self.1.taken.notify_waiters();
        }
    }
}

/// The params of a `session/update` as routed to its turn: the session, the update as sent.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct RoutedUpdate {
    session_id: String,
    update: Value,
}

/// The hook that routes the agent's `session/update`s to their turns, on the peer's reading
/// task (so that every update of a turn is routed before the turn's response completes it),
/// each counted in `backlog`; every other message goes on to the client side.
pub(super) fn update_router(routes: Routes, backlog: Arc<Backlog>) -> Hook {
    Arc::new(move |_: &Peer, msg: Incoming| {
        let Incoming::Notification { method, params } = msg else {
            return Some(msg);
        };
        if method != AgentMethod::SessionUpdate.as_str() {
            return Some(Incoming::Notification { method, params });
        }
        let Ok(routed) = serde_json::from_value::<RoutedUpdate>(params) else {
            tracing::debug!("a session/update without a sessionId: dropped");
            return None;
        };
        match routes.lock().get(&routed.session_id).cloned() {
            Some(tx) => {
                let _ = tx.send(Counted::new(routed.update, &backlog));
            }
            None => tracing::debug!(session = %routed.session_id, "session/update outside a turn"),
        }
        None
    })
}

/// What the peer awaits before it reads the agent's next line: room in `backlog` (the agent's
/// output is read while its runs keep up).
pub(super) fn paced_by(backlog: Arc<Backlog>) -> Pace {
    Arc::new(move || {
        let backlog = backlog.clone();
        Box::pin(async move { backlog.room().await })
    })
}
