//! One ACP session of `e2a acp`: its set-up (working directory, MCP servers, mode, config
//! options), its turn lock and cancellation, and what `session/load` replays ([`History`],
//! bounded by [`HistoryLimits`]).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use serde::Deserialize;
#[cfg(test)]
use serde_json::json;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::store::SessionRecord;

/// How much of a session `session/load` replays: the latest `messages` messages (consecutive
/// chunks of one kind make one message), each with at most `text_bytes` of text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistoryLimits {
    /// Most messages kept (the oldest go first).
    pub messages: usize,
    /// Most bytes of text in one message (the rest is cut, marked with `…`).
    pub text_bytes: usize,
}

impl Default for HistoryLimits {
    /// The latest 500 messages, 16 KiB of text each.
    fn default() -> Self {
        HistoryLimits {
            messages: 500,
            text_bytes: 16 * 1024,
        }
    }
}

/// A session's set-up as the store keeps it (`SessionRecord::state`).
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(super) struct StoredState {
    /// The MCP servers passed to the agent.
    pub(super) mcp_servers: Vec<Value>,
    /// The current mode.
    pub(super) mode_id: Option<String>,
    /// Each config option's current value.
    pub(super) config_options: std::collections::BTreeMap<String, String>,
    /// Closed (`session/close`): listed and loadable, not prompted.
    pub(super) closed: bool,
}

/// What `session/load` replays: `session/update` notifications as sent, chunks of one message
/// merged.
#[derive(Debug, Default)]
pub(super) struct History {
    entries: VecDeque<Value>,
    /// Whether the next chunk of the same kind may still be merged into the last entry.
    open: bool,
    /// `entries[unsaved..]` are not in the store yet.
    unsaved: usize,
}

/// The kinds of update whose consecutive text chunks make one message.
const MERGED: [&str; 3] = ["user_message_chunk", "agent_message_chunk", "agent_thought_chunk"];

fn chunk_text(update: &Value) -> Option<(&str, &str)> {
    let u = update.pointer("/params/update")?;
    let kind = u.get("sessionUpdate")?.as_str().filter(|k| MERGED.contains(k))?;
    let content = u.get("content")?;
    if content.get("type")? != "text" {
        return None;
    }
    Some((kind, content.get("text")?.as_str()?))
}

/// `text` cut to at most `max` bytes (on a character boundary), `…` marking the cut.
fn capped(text: &str, max: usize) -> Option<String> {
    if text.len() <= max {
        return None;
    }
    let mut end = max.saturating_sub('…'.len_utf8());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    Some(format!("{}…", &text[..end]))
}

fn set_text(update: &mut Value, text: String) {
    if let Some(t) = update.pointer_mut("/params/update/content/text") {
        *t = Value::String(text);
    }
}

/// An entry as it is stored and replayed: through the redaction of everything the gateway
/// sends an editor (a key in a prompt, or split across chunks merged into one entry, is never
/// written to the store nor sent back).
fn redacted(entry: &Value) -> Value {
    let mut e = entry.clone();
    e2a::redact::redact_outbound(&mut e);
    e
}

impl History {
    /// A history read back from the store.
    pub(super) fn stored(entries: Vec<Value>) -> Self {
        let unsaved = entries.len();
        History {
            entries: entries.into(),
            open: false,
            unsaved,
        }
    }

    /// Adds one sent `session/update`.
    pub(super) fn record(&mut self, update: &Value, limits: HistoryLimits) {
        let merged = match (self.open, self.entries.back_mut(), chunk_text(update)) {
            (true, Some(last), Some((kind, more))) => match chunk_text(last) {
                Some((last_kind, text)) if last_kind == kind => {
                    let joined = format!("{text}{more}");
                    let joined = capped(&joined, limits.text_bytes).unwrap_or(joined);
                    set_text(last, joined);
                    true
                }
                _ => false,
            },
            _ => false,
        };
        if !merged {
            let mut entry = update.clone();
            if let Some(cut) = chunk_text(update).and_then(|(_, t)| capped(t, limits.text_bytes)) {
                set_text(&mut entry, cut);
            }
            self.open = chunk_text(&entry).is_some();
            self.entries.push_back(entry);
        }
        while self.entries.len() > limits.messages.max(1) {
            self.entries.pop_front();
            self.unsaved = self.unsaved.saturating_sub(1);
        }
    }

    /// The entries, oldest first, redacted ([`redacted`]).
    pub(super) fn replay(&self) -> Vec<Value> {
        self.entries.iter().map(redacted).collect()
    }

    /// The entries not yet in the store (as JSON text); from now on they count as stored and
    /// nothing more is merged into them.
    pub(super) fn take_unsaved(&mut self) -> Vec<String> {
        self.open = false;
        let start = self.unsaved.min(self.entries.len());
        self.unsaved = self.entries.len();
        self.entries.range(start..).map(|e| redacted(e).to_string()).collect()
    }
}

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
    pub(super) closed: AtomicBool,
    /// Last update, milliseconds since the Unix epoch.
    pub(super) updated_ms: AtomicI64,
    /// One turn at a time.
    pub(super) turn: tokio::sync::Mutex<()>,
    /// The running turn's cancellation.
    pub(super) running: Mutex<Option<CancellationToken>>,
    /// What a `session/load` replays: every `session/update` sent, and the user's prompts.
    pub(super) history: Mutex<History>,
    /// The E2A task of the last turn when it ended in an input pause: the next prompt continues it.
    pub(super) paused_task: Mutex<Option<String>>,
    /// How many `session/cancel`s arrived: a prompt received before a cancel that it only
    /// starts after (it waited for the turn, or its task had not started yet) is cancelled too.
    pub(super) cancels: AtomicU64,
    /// The replay's bounds.
    limits: HistoryLimits,
}

impl Session {
    pub(super) fn new(
        cwd: String,
        mcp_servers: Vec<Value>,
        mode: Option<String>,
        config: Vec<(String, String)>,
        limits: HistoryLimits,
    ) -> Arc<Self> {
        Arc::new(Session {
            cwd,
            mcp_servers,
            mode: Mutex::new(mode),
            config: Mutex::new(config),
            closed: AtomicBool::new(false),
            updated_ms: AtomicI64::new(crate::store::now_ms()),
            turn: tokio::sync::Mutex::new(()),
            running: Mutex::new(None),
            history: Mutex::new(History::default()),
            paused_task: Mutex::new(None),
            cancels: AtomicU64::new(0),
            limits,
        })
    }

    /// A session read back from the store: its directory, MCP servers and state from `record`,
    /// its history from `history`, its mode and config values as the server resolved them.
    pub(super) fn restored(
        record: &SessionRecord,
        history: Vec<Value>,
        mode: Option<String>,
        config: Vec<(String, String)>,
        limits: HistoryLimits,
    ) -> Arc<Self> {
        let state = Session::stored_state(record);
        let s = Session::new(record.cwd.clone(), state.mcp_servers, mode, config, limits);
        s.closed.store(state.closed, Ordering::SeqCst);
        s.updated_ms.store(record.updated_ms, Ordering::SeqCst);
        *s.history.lock() = History::stored(history);
        s
    }

    /// The state a stored session was written with (what cannot be read: defaults).
    pub(super) fn stored_state(record: &SessionRecord) -> StoredState {
        StoredState::deserialize(&record.state).unwrap_or_default()
    }

    /// The session as the store keeps it.
    pub(super) fn record_of(&self, id: &str) -> SessionRecord {
        let state = StoredState {
            mcp_servers: self.mcp_servers.clone(),
            mode_id: self.mode.lock().clone(),
            config_options: self.config.lock().iter().cloned().collect(),
            closed: self.closed.load(Ordering::SeqCst),
        };
        SessionRecord {
            id: id.to_string(),
            cwd: self.cwd.clone(),
            state: serde_json::to_value(state).unwrap_or_default(),
            updated_ms: self.updated_ms.load(Ordering::SeqCst),
        }
    }

    pub(super) fn cancel(&self) {
        self.cancels.fetch_add(1, Ordering::SeqCst);
        if let Some(t) = self.running.lock().as_ref() {
            t.cancel();
        }
    }

    pub(super) fn record(&self, update: &Value) {
        self.history.lock().record(update, self.limits);
        self.touch();
    }

    pub(super) fn touch(&self) {
        self.updated_ms.store(crate::store::now_ms(), Ordering::SeqCst);
    }

    /// `updatedAt` of `session/list`: the last update, RFC 3339.
    pub(super) fn updated_at(ms: i64) -> String {
        e2a::timestamp::from_epoch_secs(ms.div_euclid(1000)).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(kind: &str, text: &str) -> Value {
        json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s",
               "update": {"sessionUpdate": kind, "content": {"type": "text", "text": text}}}})
    }

    fn texts(h: &History) -> Vec<String> {
        h.replay()
            .iter()
            .map(|e| {
                e.pointer("/params/update/content/text")
                    .and_then(Value::as_str)
                    .unwrap_or("-")
                    .to_string()
            })
            .collect()
    }

    #[test]
    fn chunks_of_one_message_merge_and_the_bounds_hold() {
        let limits = HistoryLimits {
            messages: 3,
            text_bytes: 8,
        };
        let mut h = History::default();
        h.record(&chunk("user_message_chunk", "hi"), limits);
        h.record(&chunk("agent_message_chunk", "Hel"), limits);
        h.record(&chunk("agent_message_chunk", "lo!"), limits);
        assert_eq!(texts(&h), ["hi", "Hello!"]);
        // a message longer than text_bytes is cut, on a character boundary
        h.record(&chunk("agent_message_chunk", " ümlaut"), limits);
        assert_eq!(texts(&h), ["hi", "Hello…"]);
        assert_eq!(h.take_unsaved().len(), 2);
        // stored entries are never merged into: the next chunk starts a message
        h.record(&chunk("agent_message_chunk", "more"), limits);
        h.record(
            &json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s",
                          "update": {"sessionUpdate": "current_mode_update", "currentModeId": "x"}}}),
            limits,
        );
        assert_eq!(texts(&h), ["Hello…", "more", "-"]);
        // the oldest went (only 3 kept); the unsaved ones are the two new
        assert_eq!(h.take_unsaved().len(), 2);
        assert!(h.take_unsaved().is_empty());
    }
}
