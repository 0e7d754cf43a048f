//! One ACP session of `e2a acp`: its working directory, its turn lock and cancellation, and
//! what `session/load` replays (bounded by [`MAX_HISTORY`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::server::MAX_HISTORY;

/// A session.
pub(super) struct Session {
    pub(super) cwd: String,
    /// The MCP servers the editor gave it (passed to the agent with every turn).
    pub(super) mcp_servers: Vec<Value>,
    /// The current mode (one of the declared modes; `None` when none are declared).
    pub(super) mode: Mutex<Option<String>>,
    /// The current value of every declared config option, in declaration order.
    pub(super) config: Mutex<Vec<(String, String)>>,
    /// Closed (`session/close`): listed and loadable, but prompts are refused until a
    /// `session/load` or `session/resume` opens it again.
    pub(super) closed: std::sync::atomic::AtomicBool,
    pub(super) updated_at: Mutex<String>,
    /// One turn at a time.
    pub(super) turn: tokio::sync::Mutex<()>,
    /// The running turn's cancellation.
    pub(super) running: Mutex<Option<CancellationToken>>,
    /// What a `session/load` replays: every `session/update` sent, and the user's prompts.
    pub(super) history: Mutex<Vec<Value>>,
    /// The E2A task of the last turn when it ended in an input pause: the next prompt continues it.
    pub(super) paused_task: Mutex<Option<String>>,
    /// How many `session/cancel`s arrived: a prompt received before a cancel that it only
    /// starts after (it waited for the turn, or its task had not started yet) is cancelled too.
    pub(super) cancels: AtomicU64,
}

impl Session {
    pub(super) fn new(
        cwd: String,
        mcp_servers: Vec<Value>,
        mode: Option<String>,
        config: Vec<(String, String)>,
    ) -> Arc<Self> {
        Arc::new(Session {
            cwd,
            mcp_servers,
            mode: Mutex::new(mode),
            config: Mutex::new(config),
            closed: std::sync::atomic::AtomicBool::new(false),
            updated_at: Mutex::new(now_rfc3339()),
            turn: tokio::sync::Mutex::new(()),
            running: Mutex::new(None),
            history: Mutex::new(Vec::new()),
            paused_task: Mutex::new(None),
            cancels: AtomicU64::new(0),
        })
    }

    pub(super) fn cancel(&self) {
        self.cancels.fetch_add(1, Ordering::SeqCst);
        if let Some(t) = self.running.lock().as_ref() {
            t.cancel();
        }
    }

    pub(super) fn record(&self, update: &Value) {
        {
            let mut h = self.history.lock();
            if h.len() >= MAX_HISTORY {
                // keep memory bounded: the oldest tenth goes
                h.drain(..MAX_HISTORY / 10);
            }
            h.push(update.clone());
        }
        *self.updated_at.lock() = now_rfc3339();
    }
}

fn now_rfc3339() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default();
    e2a::timestamp::from_epoch_secs(i64::try_from(secs).unwrap_or_default()).unwrap_or_default()
}
