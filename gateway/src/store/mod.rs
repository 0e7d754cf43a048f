//! Where A2A tasks live: a [`TaskStore`] keeps each task's snapshot and its event log (every
//! `StreamResponse` the task produced, numbered 1, 2, 3 … per task), so a subscriber that lost
//! its connection — or a gateway that restarted — replays exactly the events after the last
//! one seen.
//!
//! Three implementations ship: [`MemoryStore`] (tests, throwaway gateways),
//! [`SqliteStore`] (embedded, the default of `e2a serve`) and
//! [`PgStore`] (one PostgreSQL database shared by several gateways). The
//! trait is async and object safe, and every operation is one atomic step on the backing store.
//!
//! A store that several gateways share ([`TaskStore::shared`]) also keeps **leases** (the
//! instance running a task holds one and renews it; a task whose lease expired has no run
//! behind it) and sends **notices** (events appended and cancels asked for by other
//! instances), so a subscriber on one instance follows a task running on another. The
//! defaults of those methods describe a store only one gateway uses.

mod memory;
pub(crate) mod metered;
pub mod postgres;
mod push;
mod spec;
pub mod sqlite;

use std::sync::Arc;
use std::time::Duration;

use e2a::types::{A2aTask, A2aTaskState};
use futures_util::future::BoxFuture;
use serde_json::Value;

pub use memory::MemoryStore;
pub use postgres::{PgOptions, PgStore};
pub use push::{PushFailure, PushJob, PushProgress, PushRecord};
pub use spec::{StoreSpec, UnknownStore};
pub use sqlite::SqliteStore;

/// What a [`TaskStore`] method returns: a boxed future of its answer or a [`StoreError`].
pub type StoreFuture<'a, T> = BoxFuture<'a, Result<T, StoreError>>;

/// A task as stored: its A2A `Task` snapshot and the fields the store filters on.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskRecord {
    /// Task id.
    pub id: String,
    /// Context id.
    pub context_id: String,
    /// The caller who created it (`None` without authentication); others never see it.
    pub owner: Option<String>,
    /// The task state, as in the snapshot.
    pub state: A2aTaskState,
    /// The A2A `Task` (status, history, artifacts, metadata).
    pub task: A2aTask,
    /// Sequence number of the last event appended (0: none yet).
    pub last_seq: u64,
    /// Sequence number of the last event `task` includes; a reader brings an older snapshot up
    /// to date by applying the events after it (see [`TaskStore::append`]).
    pub snapshot_seq: u64,
    /// Creation time, milliseconds since the Unix epoch.
    pub created_ms: i64,
    /// Last update time, milliseconds since the Unix epoch.
    pub updated_ms: i64,
}

impl TaskRecord {
    /// The record without its snapshot (`task` is a bare task in its state): what
    /// [`TaskStore::append`] needs when it does not write the snapshot.
    pub fn without_task(&self) -> TaskRecord {
        TaskRecord {
            id: self.id.clone(),
            context_id: self.context_id.clone(),
            owner: self.owner.clone(),
            state: self.state,
            task: A2aTask::new(&self.id, &self.context_id, self.state),
            last_seq: self.last_seq,
            snapshot_seq: self.snapshot_seq,
            created_ms: self.created_ms,
            updated_ms: self.updated_ms,
        }
    }
}

impl TaskRecord {
    /// Sets `task` from a stored snapshot (`Task` JSON). The empty object a first append
    /// without a snapshot leaves reads as a bare task in the record's state.
    pub fn read_snapshot(&mut self, json: &str) -> Result<(), StoreError> {
        self.task = match json.trim() {
            "{}" | "" => A2aTask::new(&self.id, &self.context_id, self.state),
            json => serde_json::from_str(json).map_err(|e| StoreError::Corrupt(format!("task {}: {e}", self.id)))?,
        };
        Ok(())
    }
}

/// Events appended to a task's log in one step (see [`TaskStore::append`]), serialized once by
/// the task service for whichever store keeps them.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskAppend {
    /// The task's record after the events. Its `task` is not read (the snapshot travels
    /// serialized, in `snapshot`), nor are its `last_seq` and `snapshot_seq`.
    pub record: TaskRecord,
    /// The task's `Task` JSON after the events, when this append rewrites the stored snapshot
    /// (the service writes it when a turn ends, and every so many events of a long one).
    pub snapshot: Option<Arc<str>>,
    /// The events (`StreamResponse` JSON), in order; at least one. Shared: the task service
    /// hands the same text to its followers, and a store in memory keeps it as it is.
    pub events: Vec<Arc<str>>,
}

impl TaskAppend {
    /// An append of `event` to `record`'s task, with `record.task` as the snapshot when
    /// `snapshot` says so.
    pub fn new(record: TaskRecord, event: &Value, snapshot: bool) -> Self {
        let snapshot = snapshot.then(|| e2a::write::to_json(&record.task).into());
        TaskAppend {
            record: TaskRecord {
                task: A2aTask::new(&record.id, &record.context_id, record.state),
                ..record
            },
            snapshot,
            events: vec![crate::json::text(event).into()],
        }
    }
}

/// One entry of a task's event log.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredEvent {
    /// Its sequence number (1, 2, 3 … per task).
    pub seq: u64,
    /// The A2A `StreamResponse` (`{"task": …}`, `{"statusUpdate": …}`, …), as JSON text.
    pub event: Arc<str>,
}

impl StoredEvent {
    /// A logged event read back from a store: `text` must be JSON (anything else is a
    /// corrupt log, named by task and sequence number).
    pub fn read(task_id: &str, seq: u64, text: impl Into<Arc<str>>) -> Result<Self, StoreError> {
        let event = text.into();
        serde_json::from_str::<serde::de::IgnoredAny>(&event)
            .map_err(|e| StoreError::Corrupt(format!("event {task_id}#{seq}: {e}")))?;
        Ok(StoredEvent { seq, event })
    }

    /// The event as a JSON value.
    pub fn json(&self) -> Result<Value, StoreError> {
        serde_json::from_str(&self.event).map_err(|e| StoreError::Corrupt(format!("event #{}: {e}", self.seq)))
    }
}

/// What [`TaskStore::list`] returns: one caller's tasks, most recently updated first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskQuery {
    /// Only this caller's tasks.
    pub owner: Option<String>,
    /// Only tasks of this context.
    pub context_id: Option<String>,
    /// Only tasks in this state.
    pub state: Option<A2aTaskState>,
    /// Only tasks updated after this time (ms since the epoch).
    pub updated_after_ms: Option<i64>,
    /// Tasks to skip.
    pub offset: usize,
    /// Most tasks to return.
    pub limit: usize,
}

/// A page of [`TaskStore::list`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TaskPage {
    /// The tasks of the page.
    pub tasks: Vec<TaskRecord>,
    /// How many tasks match the query in all.
    pub total: usize,
}

/// Why the store failed (never holds task content).
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database failed.
    #[error("task store: {0}")]
    Backend(String),
    /// A stored value cannot be read back.
    #[error("task store: corrupt record: {0}")]
    Corrupt(String),
}

/// An ACP session of `e2a acp` as stored (its replay history is kept beside it, see
/// [`TaskStore::append_history`]).
#[derive(Debug, Clone, PartialEq)]
pub struct SessionRecord {
    /// Session id.
    pub id: String,
    /// Its working directory (absolute).
    pub cwd: String,
    /// Its set-up as the ACP server keeps it (a JSON object: MCP servers, mode, config
    /// option values, whether it is closed).
    pub state: Value,
    /// Last update time, milliseconds since the Unix epoch.
    pub updated_ms: i64,
}

/// Which sessions [`TaskStore::list_sessions`] returns: those of `cwd` (all for `None`),
/// most recently updated first, `limit` of them after skipping `offset`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionQuery {
    /// Only sessions of this working directory.
    pub cwd: Option<String>,
    /// How many to skip.
    pub offset: usize,
    /// Most to return.
    pub limit: usize,
}

/// A page of sessions and whether more follow.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionPage {
    /// The sessions.
    pub sessions: Vec<SessionRecord>,
    /// Whether sessions follow this page.
    pub more: bool,
}

fn no_sessions<'a, T: Send + 'a>() -> StoreFuture<'a, T> {
    Box::pin(async { Err(StoreError::Backend("this store keeps no ACP sessions".into())) })
}

fn no_pushes<'a, T: Send + 'a>() -> StoreFuture<'a, T> {
    Box::pin(async {
        Err(StoreError::Backend(
            "this store keeps no push notification configs".into(),
        ))
    })
}

/// One frame of an E2A run (E2A over HTTP, AG-UI), as the store keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredFrame {
    /// The frame's `sequence`.
    pub seq: u64,
    /// The frame (`E2AResponse` JSON).
    pub frame: String,
    /// Whether it is the run's final frame (it ends the run's log).
    pub is_final: bool,
}

/// How a run's log begins: the request it answers and the gateway running it. A run opened
/// again under the same key replaces the earlier one (a client re-sending a request id).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunHead {
    /// The request (`E2AEnvelope` JSON): what a cutoff frame echoes when its gateway is gone.
    pub request: String,
    /// The gateway running it.
    pub holder: String,
    /// How long its lease lasts from now (see [`TaskStore::renew_runs`]).
    pub lease: Duration,
}

/// Frames to append to a run's log (see [`TaskStore::append_frames`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrameWrite {
    /// The run's key: a caller-scoped request id.
    pub key: String,
    /// The run's own id (a key opened again names a new run).
    pub run: String,
    /// With a head, the run starts here: an earlier run of `key` is forgotten.
    pub head: Option<RunHead>,
    /// The frames, in order.
    pub frames: Vec<StoredFrame>,
}

/// What the store holds of one run (see [`TaskStore::run_after`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunLog {
    /// The run's own id (a key opened again names a new run).
    pub run: String,
    /// The request it answers (`E2AEnvelope` JSON).
    pub request: String,
    /// Its frames after the position asked for, in order.
    pub frames: Vec<StoredFrame>,
    /// Whether its final frame is stored.
    pub ended: bool,
    /// Whether its gateway's lease is still valid (a gateway may still be running it).
    pub leased: bool,
}

impl RunLog {
    /// A run's log as read: the last of `frames` is final when the run `ended`.
    pub fn new(run: String, request: String, mut frames: Vec<StoredFrame>, ended: bool, leased: bool) -> Self {
        if let Some(last) = frames.last_mut().filter(|_| ended) {
            last.is_final = true;
        }
        RunLog {
            run,
            request,
            frames,
            ended,
            leased,
        }
    }
}

/// A frame's sequence as a database column holds it.
pub(crate) fn run_seq(seq: u64) -> Result<i64, StoreError> {
    i64::try_from(seq).map_err(|_| StoreError::Backend(format!("frame sequence {seq} is out of the store's range")))
}

/// What another gateway sharing the store did (see [`TaskStore::notices`]).
#[derive(Debug, Clone, PartialEq)]
pub enum StoreNotice {
    /// It appended an event to a task's log. `event` is `None` when the event was too large
    /// to travel with the notice: the receiver reads it from the log.
    Appended {
        /// The task.
        task_id: String,
        /// The event's sequence number.
        seq: u64,
        /// The event (JSON text), when it came along.
        event: Option<Arc<str>>,
    },
    /// A client asked it to cancel a task; the instance running the task stops its run.
    CancelRequested {
        /// The task.
        task_id: String,
    },
}

/// That a caller sent something, for idempotent delivery: a retry with the same key and the
/// same content gets the task the first send started; other content under the key is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SentRecord {
    /// Who sent it: the task owner ([`crate::agent::Caller::owner`]; empty when anonymous).
    pub owner: String,
    /// What it was sent as: `message:<messageId>`, `key:<Idempotency-Key>` (A2A HTTP+JSON) or
    /// `e2a:<Idempotency-Key>` ([`E2A_SENT`]; E2A `POST /v1/e2a/requests`: `task_id` then
    /// holds the request's `request_id`, and the record goes with the runs:
    /// [`TaskStore::prune_runs`]).
    pub key: String,
    /// The SHA-256 (hex) of its content's canonical JSON.
    pub fingerprint: String,
    /// The task it started (or continued).
    pub task_id: String,
    /// When, in ms since the Unix epoch.
    pub at_ms: i64,
}

/// The prefix of a [`SentRecord::key`] made by an E2A request's `Idempotency-Key`.
pub const E2A_SENT: &str = "e2a:";

/// A task store (see the module docs). Implementations must make [`TaskStore::append`] atomic:
/// the snapshot and the event are written together, and the event gets the next sequence
/// number of its task.
pub trait TaskStore: Send + Sync + 'static {
    /// A short name for logs (`memory`, `sqlite:PATH`).
    fn name(&self) -> String;

    /// The task `id`, if stored.
    fn get<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<TaskRecord>>;

    /// Appends `write.events` to the log of `write.record`'s task and updates the record, in
    /// one step. The events are numbered on from the stored `last_seq`; returns the last one's
    /// sequence number.
    ///
    /// With a `snapshot`, the whole record is written (insert or replace) and its
    /// `snapshot_seq` becomes the last event's number. Without, only `state`, `last_seq` and
    /// `updated_ms` change and the stored `task` stays as it was (a long stream of artifact
    /// chunks does not rewrite a growing task on every chunk). A task's first append without a
    /// snapshot makes the record with an empty one (`{}`) and `snapshot_seq` 0: its first
    /// event is the whole task, and a reader catches up from it.
    fn append(&self, write: TaskAppend) -> StoreFuture<'_, u64>;

    /// The events of task `id` after sequence number `after`, in order.
    fn events_after<'a>(&'a self, id: &'a str, after: u64) -> StoreFuture<'a, Vec<StoredEvent>>;

    /// Tasks matching `query`, most recently updated first.
    fn list(&self, query: TaskQuery) -> StoreFuture<'_, TaskPage>;

    /// Whether several gateways may share this store: leases are honoured and other
    /// instances' events arrive as [`TaskStore::notices`]. Default: no — a task with no run in
    /// this process has no run anywhere.
    fn shared(&self) -> bool {
        false
    }

    /// Takes (or renews) the lease of task `id` for `holder`, for `lease` from now, unless
    /// another holder's lease is still valid. Returns whether `holder` holds it now. The task
    /// need not exist yet. A store that several gateways share keeps lease times on one clock
    /// (its own), so the gateways' clocks need not agree. Default: always taken.
    fn acquire<'a>(&'a self, id: &'a str, holder: &'a str, lease: Duration) -> StoreFuture<'a, bool> {
        let _ = (id, holder, lease);
        Box::pin(async { Ok(true) })
    }

    /// Extends `holder`'s leases of `ids` to `lease` from now; returns the ids `holder` no
    /// longer holds (another instance took them over: the runs must stop). Default: none lost.
    fn renew<'a>(&'a self, holder: &'a str, ids: Vec<String>, lease: Duration) -> StoreFuture<'a, Vec<String>> {
        let _ = (holder, ids, lease);
        Box::pin(async { Ok(Vec::new()) })
    }

    /// Gives up `holder`'s lease of task `id` (its run ended or paused).
    fn release<'a>(&'a self, id: &'a str, holder: &'a str) -> StoreFuture<'a, ()> {
        let _ = (id, holder);
        Box::pin(async { Ok(()) })
    }

    /// Tasks still `SUBMITTED` or `WORKING` whose lease has expired (or that have none):
    /// their instance is gone. A store only one gateway uses keeps no leases and answers every
    /// such task (at most 1,000): the gateway settles those it does not run when it starts.
    /// Default: none (a gateway settles its orphans when it reads them).
    fn orphans(&self) -> StoreFuture<'_, Vec<String>> {
        Box::pin(async { Ok(Vec::new()) })
    }

    /// Asks the instance running task `id` to cancel it (a [`StoreNotice::CancelRequested`]
    /// to every instance). Default: nothing to tell.
    fn request_cancel<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()> {
        let _ = id;
        Box::pin(async { Ok(()) })
    }

    /// Remembers that a caller sent something (`record`: a message by its `messageId`, a
    /// request by its `Idempotency-Key`) unless the same owner already sent the same key: then
    /// that first record, kept as it was (the first send wins, atomically across the gateways
    /// sharing the store). Records are forgotten with the tasks ([`TaskStore::prune_tasks`]:
    /// as old as the finished tasks it forgets, or naming a task no longer kept), those of E2A
    /// requests ([`E2A_SENT`]) with the runs ([`TaskStore::prune_runs`]). Default: remembers
    /// nothing (every send is new).
    fn remember_send(&self, record: SentRecord) -> StoreFuture<'_, Option<SentRecord>> {
        let _ = record;
        Box::pin(async { Ok(None) })
    }

    /// The record of what `owner` sent as `key`, if any ([`TaskStore::remember_send`]).
    /// Default: none.
    fn find_send<'a>(&'a self, owner: &'a str, key: &'a str) -> StoreFuture<'a, Option<SentRecord>> {
        let _ = (owner, key);
        Box::pin(async { Ok(None) })
    }

    /// Whether this store keeps push notification configs and their outbox cursors (see
    /// [`PushRecord`]). Default: no — the card says `pushNotifications: false` and the push
    /// methods below fail.
    fn keeps_pushes(&self) -> bool {
        false
    }

    /// Writes a push config. A new one's cursor starts at `from_seq` (the events after it are
    /// delivered); a config already stored under the same task and id is replaced and keeps
    /// its cursor.
    fn put_push(&self, record: PushRecord, from_seq: u64) -> StoreFuture<'_, ()> {
        let _ = (record, from_seq);
        no_pushes()
    }

    /// The push config `id` of task `task_id`, if stored.
    fn get_push<'a>(&'a self, task_id: &'a str, id: &'a str) -> StoreFuture<'a, Option<PushRecord>> {
        let _ = (task_id, id);
        no_pushes()
    }

    /// The push configs of task `task_id`, oldest first.
    fn list_pushes<'a>(&'a self, task_id: &'a str) -> StoreFuture<'a, Vec<PushRecord>> {
        let _ = task_id;
        no_pushes()
    }

    /// Forgets push config `id` of task `task_id`; `false` when it was not stored.
    fn delete_push<'a>(&'a self, task_id: &'a str, id: &'a str) -> StoreFuture<'a, bool> {
        let _ = (task_id, id);
        no_pushes()
    }

    /// Claims for `holder`, for `lease` from now, up to `limit` push configs that have events
    /// to deliver (their task's log is ahead of their cursor), are due (no retry pending) and
    /// are not claimed by another holder whose claim is still valid; returns them. Across the
    /// gateways sharing the store, one config is claimed by one of them at a time (PostgreSQL:
    /// `FOR UPDATE SKIP LOCKED`). Default: none.
    fn claim_pushes<'a>(&'a self, holder: &'a str, lease: Duration, limit: usize) -> StoreFuture<'a, Vec<PushJob>> {
        let _ = (holder, lease, limit);
        Box::pin(async { Ok(Vec::new()) })
    }

    /// Writes what `progress.holder` did with a config it claimed: its cursor and attempts,
    /// the failure it gave up on (recorded with it), and, with `retry_in`, when to try again
    /// (the claim ends). Nothing is written unless `holder` still holds the claim; returns
    /// whether it did (`false`: the config was deleted, or the claim expired and another
    /// gateway took it over).
    fn push_progress(&self, progress: PushProgress) -> StoreFuture<'_, bool> {
        let _ = progress;
        no_pushes()
    }

    /// Ends `holder`'s claim of push config `id` of task `task_id` (nothing more to deliver
    /// now, or the gateway stops).
    fn release_push<'a>(&'a self, task_id: &'a str, id: &'a str, holder: &'a str) -> StoreFuture<'a, ()> {
        let _ = (task_id, id, holder);
        Box::pin(async { Ok(()) })
    }

    /// The events recorded as undeliverable ([`PushFailure`]), newest first, at most `limit`.
    fn push_failures(&self, limit: usize) -> StoreFuture<'_, Vec<PushFailure>> {
        let _ = limit;
        no_pushes()
    }

    /// Forgets the finished tasks (completed, failed, canceled, rejected) last updated longer
    /// than `older_than` ago, and all but the `keep` most recently updated finished tasks,
    /// with their events and push configs; returns how many went. Default: none.
    fn prune_tasks(&self, older_than: Duration, keep: usize) -> StoreFuture<'_, u64> {
        let _ = (older_than, keep);
        Box::pin(async { Ok(0) })
    }

    /// Whether this store keeps the frame logs of E2A runs (E2A over HTTP, AG-UI), so that a
    /// `Last-Event-ID` resume works after a restart, and on any gateway of a shared store.
    /// Default: no — the gateway keeps them in its own memory.
    fn keeps_runs(&self) -> bool {
        false
    }

    /// Appends `write.frames` to the log of run `write.run` of key `write.key`, in one step.
    /// With a head, the run starts here: an earlier run of the key is forgotten. A final
    /// frame ends the run. Frames of a run that its key no longer names (opened again since)
    /// are not kept. Default: nothing kept.
    fn append_frames(&self, write: FrameWrite) -> StoreFuture<'_, ()> {
        let _ = write;
        Box::pin(async { Ok(()) })
    }

    /// The log of run `key` with the frames whose sequence is after `after` (every frame for
    /// `None`); `None` when no run of `key` is kept. Default: none.
    fn run_after<'a>(&'a self, key: &'a str, after: Option<u64>) -> StoreFuture<'a, Option<RunLog>> {
        let _ = (key, after);
        Box::pin(async { Ok(None) })
    }

    /// Extends `holder`'s leases of the runs `keys` to `lease` from now. Default: nothing.
    fn renew_runs<'a>(&'a self, holder: &'a str, keys: Vec<String>, lease: Duration) -> StoreFuture<'a, ()> {
        let _ = (holder, keys, lease);
        Box::pin(async { Ok(()) })
    }

    /// Forgets the ended runs (and those whose lease expired) last written longer than
    /// `older_than` ago, and all of them but the `keep` most recently written; returns how
    /// many went. The records of E2A requests' `Idempotency-Key`s ([`E2A_SENT`]) go the same
    /// way: older than `older_than`, or beyond the `keep` most recent. Default: none kept,
    /// none gone.
    fn prune_runs(&self, older_than: Duration, keep: usize) -> StoreFuture<'_, u64> {
        let _ = (older_than, keep);
        Box::pin(async { Ok(0) })
    }

    /// Whether this store keeps the ACP sessions of `e2a acp` (so `session/load` replays after
    /// a restart). Default: no, and the session methods below fail.
    fn keeps_sessions(&self) -> bool {
        false
    }

    /// Writes session `session.id` (insert or replace).
    fn put_session(&self, session: SessionRecord) -> StoreFuture<'_, ()> {
        let _ = session;
        no_sessions()
    }

    /// The session `id`, if stored.
    fn get_session<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<SessionRecord>> {
        let _ = id;
        no_sessions()
    }

    /// A page of the stored sessions (see [`SessionQuery`]).
    fn list_sessions(&self, query: SessionQuery) -> StoreFuture<'_, SessionPage> {
        let _ = query;
        no_sessions()
    }

    /// Forgets session `id` and its history; `false` when it was not stored.
    fn delete_session<'a>(&'a self, id: &'a str) -> StoreFuture<'a, bool> {
        let _ = id;
        no_sessions()
    }

    /// Appends `entries` (JSON texts, in order) to the history of session `id` and forgets
    /// all but its latest `keep` entries.
    fn append_history<'a>(&'a self, id: &'a str, entries: Vec<String>, keep: usize) -> StoreFuture<'a, ()> {
        let _ = (id, entries, keep);
        no_sessions()
    }

    /// The history of session `id`, oldest first.
    fn history<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Vec<String>> {
        let _ = id;
        no_sessions()
    }

    /// What other instances sharing the store do, as it happens; `None` for a store only this
    /// process writes. A receiver that lags has missed notices: its followers catch up from
    /// the log.
    fn notices(&self) -> Option<tokio::sync::broadcast::Receiver<StoreNotice>> {
        None
    }
}

/// The finished states as an SQL list (quoted, comma-separated), from the schema's enum.
pub(crate) fn finished_states_sql() -> String {
    A2aTaskState::ALL
        .iter()
        .filter(|s| s.is_terminal())
        .map(|s| format!("'{}'", s.as_str()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Milliseconds of `d` (saturating).
pub(crate) fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// A state as a store keeps it (its 1.0 name); anything else is a corrupt record.
pub(crate) fn stored_state(id: &str, state: &str) -> Result<A2aTaskState, StoreError> {
    state
        .parse()
        .map_err(|_| StoreError::Corrupt(format!("task {id}: unknown state {state:?}")))
}

/// Milliseconds since the Unix epoch, the unit of a record's times.
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

impl crate::web::problem::Problem {
    /// The store of runs failed: `500`, the detail in the log only.
    pub(crate) fn store_failed(e: &StoreError) -> Self {
        tracing::error!(error = %e, "cannot read a run from the store");
        Self::new(
            e2a::taxonomy::ErrorKind::Internal,
            "the gateway cannot read this stream now",
        )
    }
}
