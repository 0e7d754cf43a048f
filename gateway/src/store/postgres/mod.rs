//! The PostgreSQL store (`--store postgres://…`): tasks, runs, their logs and the leases of
//! running ones in one database that several gateways share.
//!
//! - **Atomic appends, committed in groups.** An append is one statement: an upsert of the
//!   task row that increments its `last_seq` (the row lock orders concurrent writers), the
//!   event row, and a `NOTIFY`, delivered to listeners when, and only when, its transaction
//!   commits. The appends of all the runs of a gateway queue up and a few writers each commit
//!   what has queued in one transaction (statements pipelined): under load a commit carries
//!   tens of events, and an append waits for one round trip and one commit, not for a free
//!   connection behind hundreds of others.
//! - **Live fan-out: `LISTEN/NOTIFY`.** Every store keeps one dedicated connection that
//!   listens on `e2a_a2a_events` and `e2a_a2a_cancels` and turns what other instances send into
//!   [`StoreNotice`]s. The notice carries the event itself when it fits PostgreSQL's 8,000-byte
//!   payload limit (otherwise the receiver reads it from the log). `NOTIFY` was chosen over
//!   polling for latency: an event reaches another instance's subscriber a commit later, not a
//!   poll interval later. Notifications sent while the listening connection is down are lost,
//!   so followers of tasks running elsewhere also read the log after a second without news
//!   (see `tasks::TaskService`): a lost notice delays an event, it never loses it.
//! - **One journal.** Tasks' events and runs' frames are one log, `e2a_journal`, and their
//!   leases one table, `e2a_leases` (the store's `journal` module).
//! - **Leases.** `e2a_leases` holds, per running task or run, the instance running it and until
//!   when (on the database server's clock, so the gateways' clocks need not agree); the
//!   instance renews it while the run goes on. A task `SUBMITTED`/`WORKING` whose lease has
//!   expired has no run anywhere: any instance marks it failed.
//! - **Migrations** are applied on open, under a transaction-scoped advisory lock, so
//!   instances started together do not race; applied versions are recorded in
//!   `e2a_migrations`.
//!
//! **TLS** follows the URL's `sslmode` (rustls): `disable` is plain TCP, `prefer` (the
//! default) uses TLS when the server offers it, `require` insists. Whenever TLS is used the
//! server's certificate is verified (chain and host name, like libpq's `verify-full`) against
//! the Mozilla roots and the CA certificates of [`PgOptions::ca_file`] (a managed database's CA
//! bundle, or the CA of a private one). The password of the URL never appears in
//! `Debug`, logs or errors.

mod connect;
mod journal;
mod listen;
mod pauses;
mod push;
mod runs;
mod writer;

use connect::{describe, migrate, tls};
use listen::listen;
use writer::{writer, Pending};

use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use serde_json::json;
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio_util::sync::{CancellationToken, DropGuard};

use super::journal::Kind;
use super::{
    millis, FrameWrite, PushFailure, PushJob, PushProgress, PushRecord, RunLog, RunPage, RunQuery, RunSummary,
    SentRecord, StoreError, StoreFuture, StoreNotice, StoredEvent, TaskAppend, TaskPage, TaskQuery, TaskRecord,
    TaskRetention,
};
use super::{Leases, PushStore, RunStore, Sends, TaskLog};
use e2a::types::A2aTaskState;

/// The states a run may still be behind (what an orphan is in).
const SUBMITTED: A2aTaskState = A2aTaskState::TaskStateSubmitted;
const WORKING: A2aTaskState = A2aTaskState::TaskStateWorking;

/// The channel events are announced on.
const EVENTS_CHANNEL: &str = "e2a_a2a_events";
/// The channel cancel requests are announced on.
const CANCELS_CHANNEL: &str = "e2a_a2a_cancels";
/// The channel a run's appended frames are announced on (the frames stay in the log).
const FRAMES_CHANNEL: &str = "e2a_run_frames";
/// Longest run key announced: a notice of a longer one is not sent (its followers find its
/// frames by reading the log a little later), as PostgreSQL refuses payloads of 8,000 bytes.
const MAX_NOTICE_KEY: usize = 7_600;
/// Largest event (bytes of JSON) sent along with its notice: PostgreSQL refuses payloads of
/// 8,000 bytes, and the notice adds the task id, the sequence number and the instance.
const MAX_EVENT: usize = 7_600;
/// The database server's clock, ms since the epoch: every lease time is on it.
const NOW_MS: &str = "(EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT";
/// Most appends written in one transaction.
const BATCH: usize = 64;
const COLUMNS: &str = "id, context_id, owner, state, task, last_seq, snapshot_seq, created_ms, updated_ms";

/// How a [`PgStore`] connects.
#[derive(Debug, Clone)]
pub struct PgOptions {
    /// Most pooled connections (the listening connection comes on top).
    pub pool_size: usize,
    /// How long to wait for a connection (pool or server).
    pub connect_timeout: Duration,
    /// A PEM file of CA certificates to trust for TLS, besides the Mozilla roots.
    pub ca_file: Option<std::path::PathBuf>,
    /// Transactions writing appends at once (each takes a pooled connection while it writes;
    /// see the module docs on group commit).
    pub writers: usize,
}

impl Default for PgOptions {
    fn default() -> Self {
        PgOptions {
            pool_size: 16,
            connect_timeout: Duration::from_secs(10),
            writers: 4,
            ca_file: None,
        }
    }
}

/// Tasks in a PostgreSQL database (see the module docs).
pub struct PgStore {
    pool: Pool,
    name: String,
    /// This store's id in notices (its own are ignored when they come back).
    instance: String,
    notices: broadcast::Sender<StoreNotice>,
    /// Appends waiting for a writer (see [`writer`]).
    appends: mpsc::Sender<Pending>,
    _listener: DropGuard,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("name", &self.name)
            .field("instance", &self.instance)
            .finish()
    }
}

fn backend(e: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(e.to_string())
}

/// `e` with its whole chain of causes (tokio-postgres puts the server's message in the source).
fn pg_error(e: &(dyn std::error::Error + 'static)) -> StoreError {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        // layers often repeat what the layer below says
        let part = s.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        source = s.source();
    }
    StoreError::Backend(text)
}

fn seq_u64(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

fn seq_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

impl PgStore {
    /// Announces a cancel request (`payload`: a task's `t` or a run's `k`, and this instance)
    /// to every instance sharing the database.
    async fn ask_cancel(&self, payload: serde_json::Value) -> Result<(), StoreError> {
        let client = self.client().await?;
        client
            .execute("SELECT pg_notify($1, $2)", &[&CANCELS_CHANNEL, &payload.to_string()])
            .await
            .map_err(|e| pg_error(&e))?;
        Ok(())
    }

    /// Connects to `url` (`postgres://user:password@host:port/db`, or the `key=value` form),
    /// applies the migrations this version needs and starts listening for other instances'
    /// notices. Call it within a Tokio runtime.
    pub async fn connect(url: &str, options: PgOptions) -> Result<Self, StoreError> {
        let mut config: tokio_postgres::Config = url
            .parse()
            .map_err(|e: tokio_postgres::Error| StoreError::Backend(format!("invalid PostgreSQL URL: {e}")))?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(options.connect_timeout);
        }
        if config.get_application_name().is_none() {
            config.application_name("e2a-gateway");
        }
        let name = describe(&config);
        let tls = tls(&options)?;
        let manager = Manager::from_config(
            config.clone(),
            tls.clone(),
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(options.pool_size.max(1))
            .wait_timeout(Some(options.connect_timeout))
            .create_timeout(Some(options.connect_timeout))
            .runtime(deadpool_postgres::Runtime::Tokio1)
            .build()
            .map_err(backend)?;
        let store_name = format!("{name}: ");
        migrate(&pool)
            .await
            .map_err(|e| StoreError::Backend(format!("{store_name}{}", message_of(&e))))?;
        let (notices, _) = broadcast::channel(4096);
        let instance = e2a::stream::new_id();
        let stop = CancellationToken::new();
        tokio::spawn(listen(config, tls, notices.clone(), instance.clone(), stop.clone()));
        let (appends, queue) = mpsc::channel(4 * BATCH);
        let queue = Arc::new(tokio::sync::Mutex::new(queue));
        for _ in 0..options.writers.clamp(1, options.pool_size.max(1)) {
            tokio::spawn(writer(pool.clone(), queue.clone(), instance.clone()));
        }
        Ok(PgStore {
            pool,
            name,
            instance,
            notices,
            appends,
            _listener: stop.drop_guard(),
        })
    }

    async fn client(&self) -> Result<deadpool_postgres::Object, StoreError> {
        self.pool.get().await.map_err(|e| pg_error(&e))
    }

    /// The rows of `sql` (prepared once per connection) with `args`, on a pooled connection.
    /// The record of what `owner` sent as `key`.
    async fn sent_record(&self, owner: &str, key: &str) -> Result<Option<SentRecord>, StoreError> {
        let rows = self
            .rows(
                "SELECT fingerprint, task_id, at_ms FROM a2a_sent WHERE owner = $1 AND key = $2",
                &[&owner, &key],
            )
            .await?;
        Ok(rows.first().map(|r| SentRecord {
            owner: owner.to_string(),
            key: key.to_string(),
            fingerprint: r.get(0),
            task_id: r.get(1),
            at_ms: r.get(2),
        }))
    }

    async fn rows(
        &self,
        sql: &str,
        args: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Result<Vec<tokio_postgres::Row>, StoreError> {
        let client = self.client().await?;
        let stmt = client.prepare_cached(sql).await.map_err(|e| pg_error(&e))?;
        client.query(&stmt, args).await.map_err(|e| pg_error(&e))
    }
}

fn message_of(e: &StoreError) -> String {
    match e {
        StoreError::Backend(m) | StoreError::Corrupt(m) => m.clone(),
        StoreError::Ended(_) => e.to_string(),
    }
}

fn record_of(row: &tokio_postgres::Row) -> Result<TaskRecord, StoreError> {
    let id: String = row.try_get(0).map_err(backend)?;
    let task: String = row.try_get(4).map_err(backend)?;
    let state = super::stored_state(&id, row.try_get(3).map_err(backend)?)?;
    let context_id: String = row.try_get(1).map_err(backend)?;
    let mut r = TaskRecord {
        task: e2a::types::A2aTask::new(&id, &context_id, state),
        id,
        context_id,
        owner: row.try_get(2).map_err(backend)?,
        state,
        last_seq: seq_u64(row.try_get(5).map_err(backend)?),
        snapshot_seq: seq_u64(row.try_get(6).map_err(backend)?),
        created_ms: row.try_get(7).map_err(backend)?,
        updated_ms: row.try_get(8).map_err(backend)?,
    };
    r.read_snapshot(&task)?;
    Ok(r)
}

impl TaskLog for PgStore {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn get<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<TaskRecord>> {
        Box::pin(async move {
            let rows = self
                .rows(&format!("SELECT {COLUMNS} FROM a2a_tasks WHERE id = $1"), &[&id])
                .await?;
            rows.first().map(record_of).transpose()
        })
    }

    fn append(&self, write: TaskAppend) -> StoreFuture<'_, u64> {
        Box::pin(async move {
            let (done, result) = oneshot::channel();
            let pending = Pending::new(write, done);
            self.appends
                .send(pending)
                .await
                .map_err(|_| StoreError::Backend("the task store is closed".into()))?;
            result
                .await
                .map_err(|_| StoreError::Backend("the task store's writer stopped".into()))?
        })
    }

    fn events_after<'a>(&'a self, id: &'a str, after: u64) -> StoreFuture<'a, Vec<StoredEvent>> {
        Box::pin(async move {
            journal::after(self, Kind::Task, id, seq_i64(after))
                .await?
                .into_iter()
                .map(|(seq, text)| StoredEvent::read(id, seq, text))
                .collect()
        })
    }

    fn list(&self, query: TaskQuery) -> StoreFuture<'_, TaskPage> {
        Box::pin(async move {
            let client = self.client().await?;
            let filter = "owner IS NOT DISTINCT FROM $1 AND ($2::TEXT IS NULL OR context_id = $2)
                          AND ($3::TEXT IS NULL OR state = $3) AND ($4::BIGINT IS NULL OR updated_ms > $4)";
            let count = client
                .prepare_cached(&format!("SELECT COUNT(*) FROM a2a_tasks WHERE {filter}"))
                .await
                .map_err(|e| pg_error(&e))?;
            let page = client
                .prepare_cached(&format!(
                    "SELECT {COLUMNS} FROM a2a_tasks WHERE {filter} ORDER BY updated_ms DESC, id LIMIT $5 OFFSET $6"
                ))
                .await
                .map_err(|e| pg_error(&e))?;
            let state = query.state.map(|s| s.as_str());
            let args: [&(dyn tokio_postgres::types::ToSql + Sync); 4] =
                [&query.owner, &query.context_id, &state, &query.updated_after_ms];
            let total: i64 = client
                .query_one(&count, &args)
                .await
                .map_err(|e| pg_error(&e))?
                .try_get(0)
                .map_err(backend)?;
            let limit = i64::try_from(query.limit).unwrap_or(i64::MAX);
            let offset = i64::try_from(query.offset).unwrap_or(i64::MAX);
            let rows = client
                .query(
                    &page,
                    &[
                        &query.owner,
                        &query.context_id,
                        &state,
                        &query.updated_after_ms,
                        &limit,
                        &offset,
                    ],
                )
                .await
                .map_err(|e| pg_error(&e))?;
            Ok(TaskPage {
                tasks: rows.iter().map(record_of).collect::<Result<_, _>>()?,
                total: usize::try_from(total).unwrap_or(0),
            })
        })
    }

    fn prune_tasks(&self, retention: TaskRetention) -> StoreFuture<'_, u64> {
        Box::pin(self.prune_finished_tasks(retention.max_age, retention.max_tasks))
    }
}

impl Leases for PgStore {
    fn shared(&self) -> bool {
        true
    }

    fn acquire<'a>(&'a self, id: &'a str, holder: &'a str, lease: Duration) -> StoreFuture<'a, bool> {
        Box::pin(self.take_lease(Kind::Task, id, holder, lease))
    }

    fn renew<'a>(&'a self, holder: &'a str, ids: Vec<String>, lease: Duration) -> StoreFuture<'a, Vec<String>> {
        Box::pin(self.renew_leases(Kind::Task, holder, ids, lease))
    }

    fn release<'a>(&'a self, id: &'a str, holder: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(self.drop_lease(Kind::Task, id, holder))
    }

    fn orphans(&self) -> StoreFuture<'_, Vec<String>> {
        Box::pin(async move {
            let sql = format!(
                "SELECT t.id FROM a2a_tasks t WHERE t.state IN ($1, $2) AND NOT {}
                 ORDER BY t.updated_ms LIMIT 1000",
                journal::leased(Kind::Task, "t.id", NOW_MS)
            );
            let rows = self.rows(&sql, &[&SUBMITTED.as_str(), &WORKING.as_str()]).await?;
            rows.iter().map(|r| r.try_get(0).map_err(backend)).collect()
        })
    }

    fn request_cancel<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(self.ask_cancel(json!({"i": self.instance, "t": id})))
    }

    fn notices(&self) -> Option<broadcast::Receiver<StoreNotice>> {
        Some(self.notices.subscribe())
    }
}

impl Sends for PgStore {
    fn remember_send(&self, record: SentRecord) -> StoreFuture<'_, Option<SentRecord>> {
        Box::pin(async move {
            // the insert; when it conflicted, the first record, read by a statement of its
            // own (its snapshot sees a record another gateway committed meanwhile)
            let added = self
                .rows(
                    "INSERT INTO a2a_sent (owner, key, fingerprint, task_id, at_ms) VALUES ($1, $2, $3, $4, $5)
                     ON CONFLICT (owner, key) DO NOTHING RETURNING owner",
                    &[
                        &record.owner,
                        &record.key,
                        &record.fingerprint,
                        &record.task_id,
                        &record.at_ms,
                    ],
                )
                .await?;
            if !added.is_empty() {
                return Ok(None);
            }
            self.sent_record(&record.owner, &record.key).await
        })
    }

    fn find_send<'a>(&'a self, owner: &'a str, key: &'a str) -> StoreFuture<'a, Option<SentRecord>> {
        Box::pin(self.sent_record(owner, key))
    }
}

impl PushStore for PgStore {
    fn put_push(&self, record: PushRecord, from_seq: u64) -> StoreFuture<'_, ()> {
        Box::pin(self.put_push_config(record, from_seq))
    }

    fn get_push<'a>(&'a self, task_id: &'a str, id: &'a str) -> StoreFuture<'a, Option<PushRecord>> {
        Box::pin(self.get_push_config(task_id, id))
    }

    fn list_pushes<'a>(&'a self, task_id: &'a str) -> StoreFuture<'a, Vec<PushRecord>> {
        Box::pin(self.list_push_configs(task_id))
    }

    fn delete_push<'a>(&'a self, task_id: &'a str, id: &'a str) -> StoreFuture<'a, bool> {
        Box::pin(self.delete_push_config(task_id, id))
    }

    fn claim_pushes<'a>(&'a self, holder: &'a str, lease: Duration, limit: usize) -> StoreFuture<'a, Vec<PushJob>> {
        Box::pin(self.claim_push_configs(holder, lease, limit))
    }

    fn push_progress(&self, progress: PushProgress) -> StoreFuture<'_, bool> {
        Box::pin(self.write_push_progress(progress))
    }

    fn release_push<'a>(&'a self, task_id: &'a str, id: &'a str, holder: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(self.release_push_claim(task_id, id, holder))
    }

    fn push_failures(&self, limit: usize) -> StoreFuture<'_, Vec<PushFailure>> {
        Box::pin(self.recorded_push_failures(limit))
    }
}

impl RunStore for PgStore {
    fn append_frames(&self, write: FrameWrite) -> StoreFuture<'_, ()> {
        Box::pin(self.append_run_frames(write))
    }

    fn run_after<'a>(&'a self, key: &'a str, after: Option<u64>) -> StoreFuture<'a, Option<RunLog>> {
        Box::pin(self.run_log_after(key, after))
    }

    fn run_summary<'a>(&'a self, key: &'a str) -> StoreFuture<'a, Option<RunSummary>> {
        Box::pin(self.run_summary_of(key))
    }

    fn list_runs(&self, query: RunQuery) -> StoreFuture<'_, RunPage> {
        Box::pin(self.run_summaries(query))
    }

    fn renew_runs<'a>(&'a self, holder: &'a str, keys: Vec<String>, lease: Duration) -> StoreFuture<'a, ()> {
        Box::pin(self.renew_run_leases(holder, keys, lease))
    }

    fn prune_runs(&self, older_than: Duration, keep: usize) -> StoreFuture<'_, u64> {
        Box::pin(self.prune_run_logs(older_than, keep))
    }

    fn request_run_cancel<'a>(&'a self, key: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            if key.len() > MAX_NOTICE_KEY {
                return Err(StoreError::Backend("a run key too long to announce".into()));
            }
            self.ask_cancel(json!({"i": self.instance, "k": key})).await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn connection_errors_name_the_server_but_not_the_password() {
        let options = PgOptions {
            connect_timeout: Duration::from_secs(2),
            ..PgOptions::default()
        };
        // port 1 on loopback: refused at once
        let err = PgStore::connect("postgres://bob:hunter2@127.0.0.1:1/tasks", options)
            .await
            .expect_err("nothing listens on port 1");
        let text = err.to_string();
        assert!(text.contains("postgres://127.0.0.1:1/tasks"), "{text}");
        assert!(!text.contains("hunter2") && !text.contains("bob"), "{text}");
        let err = PgStore::connect("postgres://bob:hunter2@[::1:5432/x", PgOptions::default())
            .await
            .expect_err("not a URL");
        assert!(!err.to_string().contains("hunter2"), "{err}");
    }

    #[test]
    fn names_leave_out_credentials() {
        let c: tokio_postgres::Config = "postgres://alice:s3cret@127.0.0.1:5433/tasks".parse().unwrap();
        let name = describe(&c);
        assert_eq!(name, "postgres://127.0.0.1:5433/tasks");
        assert!(!name.contains("s3cret"));
    }
}
