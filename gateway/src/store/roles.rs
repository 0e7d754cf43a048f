//! The roles a store plays, one trait each: a store implements the roles it keeps, and a
//! [`super::Stores`] bundles them (the optional ones as `Option`).

use std::time::Duration;

use super::{
    FrameWrite, PushFailure, PushJob, PushProgress, PushRecord, RunLog, RunPage, RunQuery, RunSummary, SentRecord,
    SessionPage, SessionQuery, SessionRecord, StoreFuture, StoreNotice, StoredEvent, TaskAppend, TaskPage, TaskQuery,
    TaskRecord, TaskRetention,
};

/// The task log (A2A tasks): each task's record and its numbered events, written together.
/// Implementations must make [`TaskLog::append`] atomic: the snapshot and the event are written
/// together, and the event gets the next sequence number of its task.
pub trait TaskLog: Send + Sync + 'static {
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
    ///
    /// A terminal state is final: an append to a task whose stored state is terminal is
    /// refused with [`StoreError::Ended`](crate::store::StoreError::Ended), nothing written —
    /// of two writers ending one task (its run, and a gateway settling it when its lease ran
    /// out), the first wins. (An append may itself end the task: its events all go in.)
    fn append(&self, write: TaskAppend) -> StoreFuture<'_, u64>;

    /// The events of task `id` after sequence number `after`, in order.
    fn events_after<'a>(&'a self, id: &'a str, after: u64) -> StoreFuture<'a, Vec<StoredEvent>>;

    /// Tasks matching `query`, most recently updated first.
    fn list(&self, query: TaskQuery) -> StoreFuture<'_, TaskPage>;

    /// Forgets the finished tasks (completed, failed, canceled, rejected) past `retention`
    /// (last updated longer than `max_age` ago, beyond the `max_tasks` most recently updated,
    /// and, in a store that keeps them in memory, beyond `max_memory_bytes`), with their events
    /// and push configs; returns how many went. Default: none.
    fn prune_tasks(&self, retention: TaskRetention) -> StoreFuture<'_, u64> {
        let _ = retention;
        Box::pin(async { Ok(0) })
    }
}

/// Who runs which task when several gateways share a store: leases, orphans, cancel requests
/// and notices. A store only one gateway uses takes the defaults (every lease taken, no notices).
pub trait Leases: Send + Sync + 'static {
    /// Whether several gateways may share this store: leases are honoured and other
    /// instances' events arrive as [`Leases::notices`]. Default: no — a task with no run in
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

    /// What other instances sharing the store do, as it happens; `None` for a store only this
    /// process writes. A receiver that lags has missed notices: its followers catch up from
    /// the log.
    fn notices(&self) -> Option<tokio::sync::broadcast::Receiver<StoreNotice>> {
        None
    }
}

/// What callers sent, for idempotent delivery ([`SentRecord`]).
pub trait Sends: Send + Sync + 'static {
    /// Remembers that a caller sent something (`record`: a message by its `messageId`, a
    /// request by its `Idempotency-Key`) unless the same owner already sent the same key: then
    /// that first record, kept as it was (the first send wins, atomically across the gateways
    /// sharing the store). Records are forgotten with the tasks ([`TaskLog::prune_tasks`]:
    /// as old as the finished tasks it forgets, or naming a task no longer kept), those of E2A
    /// requests ([`super::E2A_SENT`]) with the runs ([`RunStore::prune_runs`]).
    fn remember_send(&self, record: SentRecord) -> StoreFuture<'_, Option<SentRecord>>;

    /// The record of what `owner` sent as `key`, if any ([`Sends::remember_send`]).
    fn find_send<'a>(&'a self, owner: &'a str, key: &'a str) -> StoreFuture<'a, Option<SentRecord>>;
}

/// Push notification configs and their outbox cursors ([`PushRecord`]): a store that keeps
/// them implements this role; without it the card says `pushNotifications: false`.
pub trait PushStore: Send + Sync + 'static {
    /// Writes a push config. A new one's cursor starts at `from_seq` (the events after it are
    /// delivered); a config already stored under the same task and id is replaced and keeps
    /// its cursor.
    fn put_push(&self, record: PushRecord, from_seq: u64) -> StoreFuture<'_, ()>;

    /// The push config `id` of task `task_id`, if stored.
    fn get_push<'a>(&'a self, task_id: &'a str, id: &'a str) -> StoreFuture<'a, Option<PushRecord>>;

    /// The push configs of task `task_id`, oldest first.
    fn list_pushes<'a>(&'a self, task_id: &'a str) -> StoreFuture<'a, Vec<PushRecord>>;

    /// Forgets push config `id` of task `task_id`; `false` when it was not stored.
    fn delete_push<'a>(&'a self, task_id: &'a str, id: &'a str) -> StoreFuture<'a, bool>;

    /// Claims for `holder`, for `lease` from now, up to `limit` push configs that have events
    /// to deliver (their task's log is ahead of their cursor), are due (no retry pending) and
    /// are not claimed by another holder whose claim is still valid; returns them. Across the
    /// gateways sharing the store, one config is claimed by one of them at a time (PostgreSQL:
    /// `FOR UPDATE SKIP LOCKED`).
    fn claim_pushes<'a>(&'a self, holder: &'a str, lease: Duration, limit: usize) -> StoreFuture<'a, Vec<PushJob>>;

    /// Writes what `progress.holder` did with a config it claimed: its cursor and attempts,
    /// the failure it gave up on (recorded with it), and, with `retry_in`, when to try again
    /// (the claim ends). Nothing is written unless `holder` still holds the claim; returns
    /// whether it did (`false`: the config was deleted, or the claim expired and another
    /// gateway took it over).
    fn push_progress(&self, progress: PushProgress) -> StoreFuture<'_, bool>;

    /// Ends `holder`'s claim of push config `id` of task `task_id` (nothing more to deliver
    /// now, or the gateway stops).
    fn release_push<'a>(&'a self, task_id: &'a str, id: &'a str, holder: &'a str) -> StoreFuture<'a, ()>;

    /// The events recorded as undeliverable ([`PushFailure`]), newest first, at most `limit`.
    fn push_failures(&self, limit: usize) -> StoreFuture<'_, Vec<PushFailure>>;
}

/// The frame logs of E2A runs (E2A over HTTP, AG-UI), so that a `Last-Event-ID` resume works
/// after a restart and on any gateway of a shared store; without it the gateway keeps runs in
/// its own memory.
pub trait RunStore: Send + Sync + 'static {
    /// Appends `write.frames` to the log of run `write.run` of key `write.key`, in one step.
    /// With a head, the run starts here: an earlier run of the key is forgotten. A final
    /// frame ends the run. Frames of a run that its key no longer names (opened again since)
    /// are not kept.
    fn append_frames(&self, write: FrameWrite) -> StoreFuture<'_, ()>;

    /// The log of run `key` with the frames whose sequence is after `after` (every frame for
    /// `None`); `None` when no run of `key` is kept.
    fn run_after<'a>(&'a self, key: &'a str, after: Option<u64>) -> StoreFuture<'a, Option<RunLog>>;

    /// Run `key` in short — its head, first and last frames — without reading its whole log;
    /// `None` when no run of `key` is kept.
    fn run_summary<'a>(&'a self, key: &'a str) -> StoreFuture<'a, Option<RunSummary>>;

    /// The runs matching `query`, in short, newest first (see [`RunQuery`]).
    fn list_runs(&self, query: RunQuery) -> StoreFuture<'_, RunPage>;

    /// Extends `holder`'s leases of the runs `keys` to `lease` from now.
    fn renew_runs<'a>(&'a self, holder: &'a str, keys: Vec<String>, lease: Duration) -> StoreFuture<'a, ()>;

    /// Asks the gateway running run `key` to cancel it (a [`StoreNotice::RunCancelRequested`]
    /// to every gateway of the store). Default: nothing to tell (no other gateway shares it).
    fn request_run_cancel<'a>(&'a self, key: &'a str) -> StoreFuture<'a, ()> {
        let _ = key;
        Box::pin(async { Ok(()) })
    }

    /// Forgets the ended runs (and those whose lease expired) last written longer than
    /// `older_than` ago, and all of them but the `keep` most recently written; returns how
    /// many went. The records of E2A requests' `Idempotency-Key`s ([`super::E2A_SENT`]) go the
    /// same way: older than `older_than`, or beyond the `keep` most recent.
    fn prune_runs(&self, older_than: Duration, keep: usize) -> StoreFuture<'_, u64>;
}

/// Durable pauses: what it takes to go on from a pause (an agent's continuation, a binding's
/// pending interrupts), kept by key until the answer takes it ([`crate::agent::PauseKeeper`]),
/// so that an answer is honoured after a restart and on any gateway of a shared store. Keys
/// are the caller-scoped ids of what paused, prefixed by who keeps them (`agent:`, `agui:`).
pub trait PauseStore: crate::agent::PauseKeeper {
    /// Forgets what was kept longer than `older_than` ago; returns how many went.
    fn prune_pauses(&self, older_than: Duration) -> StoreFuture<'_, u64>;

    /// What is kept under keys beginning with `prefix` (key and state), at most `limit` of them,
    /// in key order: what a gateway looks through when it starts (the delegations its agents
    /// wait on).
    fn pauses_with_prefix<'a>(&'a self, prefix: &'a str, limit: usize) -> StoreFuture<'a, Vec<(String, String)>>;
}

/// The ACP sessions of `e2a acp` and their replay history, so `session/load` replays after a
/// restart.
pub trait SessionStore: Send + Sync + 'static {
    /// Writes session `session.id` (insert or replace).
    fn put_session(&self, session: SessionRecord) -> StoreFuture<'_, ()>;

    /// The session `id`, if stored.
    fn get_session<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<SessionRecord>>;

    /// A page of the stored sessions (see [`SessionQuery`]).
    fn list_sessions(&self, query: SessionQuery) -> StoreFuture<'_, SessionPage>;

    /// Forgets session `id` and its history; `false` when it was not stored.
    fn delete_session<'a>(&'a self, id: &'a str) -> StoreFuture<'a, bool>;

    /// Appends `entries` (JSON texts, in order) to the history of session `id` and forgets
    /// all but its latest `keep` entries.
    fn append_history<'a>(&'a self, id: &'a str, entries: Vec<String>, keep: usize) -> StoreFuture<'a, ()>;

    /// The history of session `id`, oldest first.
    fn history<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Vec<String>>;
}
