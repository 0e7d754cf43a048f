//! Where A2A tasks, E2A runs and ACP sessions live. A store plays **roles**, one trait each
//! ([`TaskLog`], [`Leases`], [`Sends`], [`PushStore`], [`RunStore`], [`SessionStore`]); it
//! implements the roles it keeps, and [`Stores`] bundles them for the gateway (the optional
//! ones as `Option`). The task log keeps each task's snapshot and its event log (every
//! `StreamResponse` the task produced, numbered 1, 2, 3 … per task), so a subscriber that lost
//! its connection — or a gateway that restarted — replays exactly the events after the last
//! one seen.
//!
//! Three implementations ship: [`MemoryStore`] (tests, throwaway gateways),
//! [`SqliteStore`] (embedded, the default of `e2a serve`) and
//! [`PgStore`] (one PostgreSQL database shared by several gateways). The
//! traits are async and object safe, and every operation is one atomic step on the backing store.
//!
//! A store that several gateways share ([`Leases::shared`]) also keeps **leases** (the
//! instance running a task holds one and renews it; a task whose lease expired has no run
//! behind it) and sends **notices** (events appended and cancels asked for by other
//! instances), so a subscriber on one instance follows a task running on another. The
//! defaults of those methods describe a store only one gateway uses.

pub(crate) mod journal;
mod memory;
pub(crate) mod metered;
pub mod postgres;
mod push;
mod retention;
mod roles;
mod spec;
pub mod sqlite;

use std::sync::Arc;
use std::time::Duration;

use e2a::types::{A2aTask, A2aTaskState};
use futures_util::future::BoxFuture;
use serde_json::Value;

pub use crate::web::hmac::Nonces;
pub use memory::MemoryStore;
pub use postgres::{PgOptions, PgStore};
pub use push::{PushFailure, PushJob, PushProgress, PushRecord};
pub use retention::TaskRetention;
pub(crate) use retention::SENT_UNSTORED_MS;
pub use roles::{Leases, PauseStore, PushStore, RunStore, Sends, SessionStore, TaskLog};
pub use spec::{StoreSpec, UnknownStore};
pub use sqlite::SqliteStore;

/// What a store role's method returns: a boxed future of its answer or a [`StoreError`].
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
    /// to date by applying the events after it (see [`TaskLog::append`]).
    pub snapshot_seq: u64,
    /// Creation time, milliseconds since the Unix epoch.
    pub created_ms: i64,
    /// Last update time, milliseconds since the Unix epoch.
    pub updated_ms: i64,
}

impl TaskRecord {
    /// The record without its snapshot (`task` is a bare task in its state): what
    /// [`TaskLog::append`] needs when it does not write the snapshot.
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

/// Events appended to a task's log in one step (see [`TaskLog::append`]), serialized once by
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

/// What [`TaskLog::list`] returns: one caller's tasks, most recently updated first.
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

/// A page of [`TaskLog::list`].
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
    /// The task (its id) has ended in the store — a terminal state is final: an append to it
    /// is refused ([`TaskLog::append`]), whoever writes it (its run, or a gateway that settled
    /// it as failed when its lease ran out).
    #[error("task store: task {0} has ended; it takes no more events")]
    Ended(String),
}

/// A store failure, as a signed request's check sees it ([`Nonces`]).
impl From<StoreError> for crate::web::hmac::NonceError {
    fn from(e: StoreError) -> Self {
        crate::web::hmac::NonceError(e.to_string())
    }
}

/// A store failure, as an agent sees it ([`crate::agent::PauseKeeper`]).
impl From<StoreError> for crate::agent::PauseError {
    fn from(e: StoreError) -> Self {
        crate::agent::PauseError(e.to_string())
    }
}

/// An ACP session of `e2a acp` as stored (its replay history is kept beside it, see
/// [`SessionStore::append_history`]).
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

/// Which sessions [`SessionStore::list_sessions`] returns: those of `cwd` (all for `None`),
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

/// A journal entry of a run, `(seq, frame)`, as a frame (not final: [`RunLog::new`] marks the
/// last frame of an ended run).
impl From<(u64, String)> for StoredFrame {
    fn from((seq, frame): (u64, String)) -> Self {
        StoredFrame {
            seq,
            frame,
            is_final: false,
        }
    }
}

/// How a run's log begins: the request it answers and the gateway running it. A run opened
/// again under the same key replaces the earlier one (a client re-sending a request id).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunHead {
    /// The request (`E2AEnvelope` JSON): what a cutoff frame echoes when its gateway is gone.
    pub request: String,
    /// The gateway running it.
    pub holder: String,
    /// How long its lease lasts from now (see [`RunStore::renew_runs`]).
    pub lease: Duration,
}

/// Frames to append to a run's log (see [`RunStore::append_frames`]).
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

/// What the store holds of one run (see [`RunStore::run_after`]).
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

/// What the store holds of one run, in short (see [`RunStore::run_summary`]): its head, and
/// its first and last frames (not those between).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunSummary {
    /// The run's key: a caller-scoped request id.
    pub key: String,
    /// The run's own id (a key opened again names a new run).
    pub run: String,
    /// The request it answers (`E2AEnvelope` JSON).
    pub request: String,
    /// Its first frame, once it has one.
    pub first: Option<StoredFrame>,
    /// Its last frame so far (the final one when it `ended`).
    pub last: Option<StoredFrame>,
    /// Whether its final frame is stored.
    pub ended: bool,
    /// Whether its gateway's lease is still valid (a gateway may still be running it).
    pub leased: bool,
}

/// Which stored runs [`RunStore::list_runs`] reads: those whose key starts with `prefix`
/// (one caller's runs of one binding), newest first — by their run ids, descending: the
/// gateway makes them time-ordered ([`e2a::stream::new_ordered_id`]), so a page is steady
/// while runs go on and new ones start (a keyset, not an offset).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunQuery {
    /// The keys' common beginning.
    pub prefix: String,
    /// Only runs whose run id sorts before this one (the last of the previous page).
    pub before: Option<String>,
    /// Most runs to return.
    pub limit: usize,
}

/// A page of [`RunStore::list_runs`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunPage {
    /// The runs of the page.
    pub runs: Vec<RunSummary>,
    /// How many runs match the query in all.
    pub total: usize,
}

/// The roles of one store, as the gateway uses them: the task log, leases and sends of every
/// store, and the roles a store may not keep. `From` an `Arc` of each store fills the roles it
/// keeps: [`MemoryStore`] every role but runs, [`SqliteStore`] every role, [`PgStore`] every
/// role but ACP sessions.
#[derive(Clone)]
pub struct Stores {
    /// Each task's record and numbered events.
    pub tasks: Arc<dyn TaskLog>,
    /// Who runs which task, when gateways share the store.
    pub leases: Arc<dyn Leases>,
    /// What callers sent, for idempotent delivery.
    pub sends: Arc<dyn Sends>,
    /// Push notification configs and their outbox (`None`: the card says
    /// `pushNotifications: false`).
    pub pushes: Option<Arc<dyn PushStore>>,
    /// The frame logs of E2A runs (`None`: the gateway keeps runs in its own memory).
    pub runs: Option<Arc<dyn RunStore>>,
    /// The ACP sessions of `e2a acp` (`None`: `e2a acp` cannot keep sessions here).
    pub sessions: Option<Arc<dyn SessionStore>>,
    /// Durable pauses (`None`: a pause lives in its agent's memory, and dies with the process).
    pub pauses: Option<Arc<dyn PauseStore>>,
    /// The nonces of signed requests (`None`: the gateway remembers them in its own memory).
    pub nonces: Option<Arc<dyn Nonces>>,
}

impl Stores {
    /// A short name for logs (`memory`, `sqlite:PATH`).
    pub fn name(&self) -> String {
        self.tasks.name()
    }

    /// The push role, or the error of a store that keeps no push configs.
    pub fn pushes_kept(&self) -> Result<&Arc<dyn PushStore>, StoreError> {
        self.pushes
            .as_ref()
            .ok_or_else(|| StoreError::Backend("this store keeps no push notification configs".into()))
    }

    /// A new [`MemoryStore`]'s roles.
    pub fn memory() -> Self {
        Arc::new(MemoryStore::new()).into()
    }
}

impl std::fmt::Debug for Stores {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stores")
            .field("name", &self.name())
            .field("pushes", &self.pushes.is_some())
            .field("runs", &self.runs.is_some())
            .field("pauses", &self.pauses.is_some())
            .field("sessions", &self.sessions.is_some())
            .field("nonces", &self.nonces.is_some())
            .finish()
    }
}

impl From<Arc<MemoryStore>> for Stores {
    fn from(s: Arc<MemoryStore>) -> Self {
        Stores {
            tasks: s.clone(),
            leases: s.clone(),
            sends: s.clone(),
            pushes: Some(s.clone()),
            runs: None,
            sessions: Some(s.clone()),
            pauses: Some(s.clone()),
            nonces: Some(s),
        }
    }
}

impl From<Arc<SqliteStore>> for Stores {
    fn from(s: Arc<SqliteStore>) -> Self {
        Stores {
            tasks: s.clone(),
            leases: s.clone(),
            sends: s.clone(),
            pushes: Some(s.clone()),
            runs: Some(s.clone()),
            sessions: Some(s.clone()),
            pauses: Some(s.clone()),
            nonces: Some(s),
        }
    }
}

impl From<Arc<PgStore>> for Stores {
    fn from(s: Arc<PgStore>) -> Self {
        Stores {
            tasks: s.clone(),
            leases: s.clone(),
            sends: s.clone(),
            pushes: Some(s.clone()),
            runs: Some(s.clone()),
            sessions: None,
            pauses: Some(s.clone()),
            nonces: Some(s),
        }
    }
}

/// A frame's sequence as a database column holds it.
pub(crate) fn run_seq(seq: u64) -> Result<i64, StoreError> {
    i64::try_from(seq).map_err(|_| StoreError::Backend(format!("frame sequence {seq} is out of the store's range")))
}

/// What another gateway sharing the store did (see [`Leases::notices`]): one stream of notices
/// for the tasks' logs and the runs' logs alike.
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
    /// A client asked it to cancel an E2A run ([`RunStore::request_run_cancel`]); the
    /// instance running the run stops it.
    RunCancelRequested {
        /// The run's key.
        key: String,
    },
    /// It appended frames to the log of an E2A or AG-UI run ([`RunStore::append_frames`]):
    /// the run's followers here read them from the log.
    Framed {
        /// The run's key.
        key: String,
        /// The last frame's sequence.
        seq: u64,
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
    /// [`RunStore::prune_runs`]).
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

/// The finished states as an SQL list (quoted, comma-separated), from the schema's enum.
pub(crate) fn finished_states_sql() -> String {
    A2aTaskState::ALL
        .iter()
        .filter(|s| s.is_terminal())
        .map(|s| format!("'{}'", s.as_str()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// How often to forget what a store keeps for `retention`: every quarter of it, at least every
/// `at_most` and at most every 50 ms (tasks and runs alike).
pub(crate) fn prune_every(retention: Duration, at_most: Duration) -> Duration {
    (retention / 4).clamp(Duration::from_millis(50), at_most)
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
pub(crate) use e2a::timestamp::now_ms;

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
