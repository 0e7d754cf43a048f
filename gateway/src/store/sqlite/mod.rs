//! The embedded SQLite store (`rusqlite`, SQLite bundled): tasks and their event logs
//! in one file, in WAL mode, each append committed before it is acknowledged — a gateway killed at any point
//! restarts on the same file with every event it had acknowledged. Writes go through one
//! writer thread that commits what is queued together (the `writer` module).

mod writer;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;

use rusqlite::{params, Connection, OptionalExtension};

use super::{
    millis, now_ms, run_seq, FrameWrite, PushFailure, PushJob, PushProgress, PushRecord, RunLog, SentRecord,
    SessionPage, SessionQuery, SessionRecord, StoreError, StoreFuture, StoredEvent, StoredFrame, TaskAppend, TaskPage,
    TaskQuery, TaskRecord, E2A_SENT,
};
use super::{Leases, PushStore, RunStore, Sends, SessionStore, TaskLog};

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS a2a_tasks (
    id TEXT PRIMARY KEY,
    context_id TEXT NOT NULL,
    owner TEXT,
    state TEXT NOT NULL,
    task TEXT NOT NULL,
    last_seq INTEGER NOT NULL,
    snapshot_seq INTEGER NOT NULL DEFAULT 0,
    created_ms INTEGER NOT NULL,
    updated_ms INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS a2a_tasks_owner_updated ON a2a_tasks (owner, updated_ms);
CREATE INDEX IF NOT EXISTS a2a_tasks_context ON a2a_tasks (context_id);
CREATE TABLE IF NOT EXISTS a2a_task_events (
    task_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    event TEXT NOT NULL,
    PRIMARY KEY (task_id, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS e2a_runs (
    key TEXT PRIMARY KEY,
    run TEXT NOT NULL,
    request TEXT NOT NULL,
    holder TEXT NOT NULL,
    until_ms INTEGER NOT NULL,
    ended INTEGER NOT NULL DEFAULT 0,
    updated_ms INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS e2a_runs_updated ON e2a_runs (updated_ms);
CREATE TABLE IF NOT EXISTS acp_sessions (
    id TEXT PRIMARY KEY,
    cwd TEXT NOT NULL,
    state TEXT NOT NULL,
    updated_ms INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS acp_sessions_updated ON acp_sessions (updated_ms);
CREATE TABLE IF NOT EXISTS acp_session_history (
    session_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    entry TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS e2a_run_frames (
    run TEXT NOT NULL,
    seq INTEGER NOT NULL,
    frame TEXT NOT NULL,
    PRIMARY KEY (run, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS a2a_sent (
    owner TEXT NOT NULL,
    key TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    task_id TEXT NOT NULL,
    at_ms INTEGER NOT NULL,
    PRIMARY KEY (owner, key)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS a2a_push (
    task_id TEXT NOT NULL,
    id TEXT NOT NULL,
    config TEXT NOT NULL,
    created_ms INTEGER NOT NULL,
    delivered_seq INTEGER NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_ms INTEGER NOT NULL DEFAULT 0,
    error TEXT,
    holder TEXT,
    claim_until_ms INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (task_id, id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS a2a_push_failures (
    task_id TEXT NOT NULL,
    config_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    attempts INTEGER NOT NULL,
    error TEXT NOT NULL,
    at_ms INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS a2a_push_failures_at ON a2a_push_failures (at_ms);
";

/// Tasks in an SQLite file.
#[derive(Clone)]
pub struct SqliteStore {
    conn: Arc<Mutex<Connection>>,
    /// Every write goes through the one writer (group commit).
    writer: std::sync::mpsc::Sender<writer::Job>,
    path: PathBuf,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore").field("path", &self.path).finish()
    }
}

fn backend(e: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(e.to_string())
}

/// The `(seq, text)` rows of a log query (`sql` takes the log's key and the sequence to read
/// after), in order.
fn seq_texts(c: &Connection, sql: &str, key: &str, after: i64) -> Result<Vec<(u64, String)>, StoreError> {
    let mut stmt = c.prepare_cached(sql).map_err(backend)?;
    let rows = stmt
        .query_map(params![key, after], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
        })
        .map_err(backend)?;
    rows.map(|row| {
        let (seq, text) = row.map_err(backend)?;
        Ok((u64::try_from(seq).unwrap_or(0), text))
    })
    .collect()
}

impl SqliteStore {
    /// Opens (or creates) the store in file `path`.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        let conn = Connection::open(path).map_err(|e| StoreError::Backend(format!("{}: {e}", path.display())))?;
        Self::init(conn, path.to_path_buf())
    }

    /// A store in memory (for tests).
    pub fn in_memory() -> Result<Self, StoreError> {
        let conn = Connection::open_in_memory().map_err(backend)?;
        Self::init(conn, PathBuf::from(":memory:"))
    }

    fn init(conn: Connection, path: PathBuf) -> Result<Self, StoreError> {
        // 16 KiB pages for a new file (an existing one keeps its own): a task's snapshot and
        // events are a few KiB, so with 4 KiB pages nearly every append split a page
        conn.pragma_update(None, "page_size", 16_384).map_err(backend)?;
        conn.pragma_update(None, "journal_mode", "WAL").map_err(backend)?;
        conn.pragma_update(None, "synchronous", "NORMAL").map_err(backend)?;
        conn.pragma_update(None, "temp_store", "MEMORY").map_err(backend)?;
        // a larger page cache, reads through a memory map, and checkpoints every 32 MiB of
        // WAL (not 4): pages a busy gateway rewrites often are copied back once per
        // checkpoint, not once per 1,000 pages written
        conn.pragma_update(None, "cache_size", -32_768).map_err(backend)?;
        conn.pragma_update(None, "mmap_size", 256_i64 << 20).map_err(backend)?;
        let page: i64 = conn
            .pragma_query_value(None, "page_size", |r| r.get(0))
            .map_err(backend)?;
        conn.pragma_update(None, "wal_autocheckpoint", (32_i64 << 20) / page.max(512))
            .map_err(backend)?;
        conn.busy_timeout(std::time::Duration::from_secs(5)).map_err(backend)?;
        conn.execute_batch(SCHEMA).map_err(backend)?;
        // files from before snapshot_seq: their snapshots are complete
        let has_snapshot_seq = conn
            .prepare("SELECT 1 FROM pragma_table_info('a2a_tasks') WHERE name = 'snapshot_seq'")
            .and_then(|mut s| s.exists([]))
            .map_err(backend)?;
        if !has_snapshot_seq {
            conn.execute_batch(
                "ALTER TABLE a2a_tasks ADD COLUMN snapshot_seq INTEGER NOT NULL DEFAULT 0;
                 UPDATE a2a_tasks SET snapshot_seq = last_seq;",
            )
            .map_err(backend)?;
        }
        let conn = Arc::new(Mutex::new(conn));
        Ok(SqliteStore {
            writer: writer::start(conn.clone())?,
            conn,
            path,
        })
    }

    /// Runs write `f` on the writer, committed with the writes queued beside it.
    async fn write<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: Fn(&Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let (job, done) = writer::Job::new(f);
        self.writer
            .send(job)
            .map_err(|_| StoreError::Backend("the task store's writer stopped".into()))?;
        done.await
            .map_err(|_| StoreError::Backend("the task store could not write".into()))?
    }

    async fn with<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let conn = self.conn.clone();
        tokio::task::spawn_blocking(move || {
            let mut c = conn.lock();
            f(&mut c)
        })
        .await
        .map_err(backend)?
    }
}

fn record_of(row: &rusqlite::Row<'_>) -> rusqlite::Result<(TaskRecord, String)> {
    let task: String = row.get(4)?;
    let id: String = row.get(0)?;
    let state: String = row.get(3)?;
    let state = super::stored_state(&id, &state)
        .map_err(|e| rusqlite::Error::FromSqlConversionFailure(3, rusqlite::types::Type::Text, Box::new(e)))?;
    let last_seq: i64 = row.get(5)?;
    let snapshot_seq: i64 = row.get(8)?;
    let context_id: String = row.get(1)?;
    Ok((
        TaskRecord {
            task: e2a::types::A2aTask::new(&id, &context_id, state),
            id,
            context_id,
            owner: row.get(2)?,
            state,
            last_seq: u64::try_from(last_seq).unwrap_or(0),
            snapshot_seq: u64::try_from(snapshot_seq).unwrap_or(0),
            created_ms: row.get(6)?,
            updated_ms: row.get(7)?,
        },
        task,
    ))
}

fn parse_record((mut r, task): (TaskRecord, String)) -> Result<TaskRecord, StoreError> {
    r.read_snapshot(&task)?;
    Ok(r)
}

fn session_of(row: &rusqlite::Row<'_>) -> rusqlite::Result<(SessionRecord, String)> {
    Ok((
        SessionRecord {
            id: row.get(0)?,
            cwd: row.get(1)?,
            state: serde_json::Value::Null,
            updated_ms: row.get(3)?,
        },
        row.get(2)?,
    ))
}

fn parse_session((mut s, state): (SessionRecord, String)) -> Result<SessionRecord, StoreError> {
    s.state = serde_json::from_str(&state).map_err(|e| StoreError::Corrupt(format!("session {}: {e}", s.id)))?;
    Ok(s)
}

const COLUMNS: &str = "id, context_id, owner, state, task, last_seq, created_ms, updated_ms, snapshot_seq";

impl TaskLog for SqliteStore {
    fn name(&self) -> String {
        format!("sqlite:{}", self.path.display())
    }

    fn get<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<TaskRecord>> {
        let id = id.to_string();
        Box::pin(self.with(move |c| {
            let row = c
                .query_row(
                    &format!("SELECT {COLUMNS} FROM a2a_tasks WHERE id = ?1"),
                    params![id],
                    record_of,
                )
                .optional()
                .map_err(backend)?;
            row.map(parse_record).transpose()
        }))
    }

    fn append(&self, write: TaskAppend) -> StoreFuture<'_, u64> {
        let TaskAppend {
            record,
            snapshot,
            events,
        } = write;
        Box::pin(self.write(move |tx| {
            let last: Option<i64> = tx
                .prepare_cached("SELECT last_seq FROM a2a_tasks WHERE id = ?1")
                .map_err(backend)?
                .query_row(params![record.id], |r| r.get(0))
                .optional()
                .map_err(backend)?;
            let first = last.unwrap_or(0).saturating_add(1);
            let n = i64::try_from(events.len()).map_err(backend)?;
            let seq = first.saturating_add(n).saturating_sub(1);
            if snapshot.is_some() || last.is_none() {
                let task = snapshot.as_deref().unwrap_or("{}");
                // a new task without a snapshot: a reader catches up from its first event
                let snapshot_seq = if snapshot.is_some() { seq } else { 0 };
                tx.prepare_cached(
                    "INSERT INTO a2a_tasks (id, context_id, owner, state, task, last_seq, snapshot_seq, created_ms, updated_ms)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?9, ?7, ?8)
                     ON CONFLICT(id) DO UPDATE SET context_id = excluded.context_id, state = excluded.state,
                       task = excluded.task, last_seq = excluded.last_seq, snapshot_seq = excluded.snapshot_seq,
                       updated_ms = excluded.updated_ms",
                )
                .map_err(backend)?
                .execute(params![
                    record.id,
                    record.context_id,
                    record.owner,
                    record.state.as_str(),
                    task,
                    seq,
                    record.created_ms,
                    record.updated_ms,
                    snapshot_seq
                ])
                .map_err(backend)?;
            } else {
                tx.prepare_cached("UPDATE a2a_tasks SET state = ?2, last_seq = ?3, updated_ms = ?4 WHERE id = ?1")
                    .map_err(backend)?
                    .execute(params![record.id, record.state.as_str(), seq, record.updated_ms])
                    .map_err(backend)?;
            }
            let mut insert = tx
                .prepare_cached("INSERT INTO a2a_task_events (task_id, seq, event) VALUES (?1, ?2, ?3)")
                .map_err(backend)?;
            for (i, event) in (first..).zip(&events) {
                insert.execute(params![record.id, i, &**event]).map_err(backend)?;
            }
            Ok(u64::try_from(seq).unwrap_or(0))
        }))
    }

    fn events_after<'a>(&'a self, id: &'a str, after: u64) -> StoreFuture<'a, Vec<StoredEvent>> {
        let id = id.to_string();
        let after = i64::try_from(after).unwrap_or(i64::MAX);
        Box::pin(self.with(move |c| {
            let sql = "SELECT seq, event FROM a2a_task_events WHERE task_id = ?1 AND seq > ?2 ORDER BY seq";
            seq_texts(c, sql, &id, after)?
                .into_iter()
                .map(|(seq, text)| StoredEvent::read(&id, seq, text))
                .collect()
        }))
    }

    fn list(&self, query: TaskQuery) -> StoreFuture<'_, TaskPage> {
        Box::pin(self.with(move |c| {
            let filter = "owner IS ?1 AND (?2 IS NULL OR context_id = ?2) AND (?3 IS NULL OR state = ?3)
                          AND (?4 IS NULL OR updated_ms > ?4)";
            let state = query.state.map(|s| s.as_str());
            let args = params![query.owner, query.context_id, state, query.updated_after_ms];
            let total: i64 = c
                .query_row(&format!("SELECT COUNT(*) FROM a2a_tasks WHERE {filter}"), args, |r| {
                    r.get(0)
                })
                .map_err(backend)?;
            let mut stmt = c
                .prepare(&format!(
                    "SELECT {COLUMNS} FROM a2a_tasks WHERE {filter} ORDER BY updated_ms DESC, id LIMIT ?5 OFFSET ?6"
                ))
                .map_err(backend)?;
            let limit = i64::try_from(query.limit).unwrap_or(i64::MAX);
            let offset = i64::try_from(query.offset).unwrap_or(i64::MAX);
            let rows = stmt
                .query_map(
                    params![
                        query.owner,
                        query.context_id,
                        state,
                        query.updated_after_ms,
                        limit,
                        offset
                    ],
                    record_of,
                )
                .map_err(backend)?;
            let mut tasks = Vec::new();
            for row in rows {
                tasks.push(parse_record(row.map_err(backend)?)?);
            }
            Ok(TaskPage {
                tasks,
                total: usize::try_from(total).unwrap_or(0),
            })
        }))
    }

    fn prune_tasks(&self, older_than: std::time::Duration, keep: usize) -> StoreFuture<'_, u64> {
        let finished = super::finished_states_sql();
        let gone = format!(
            "SELECT id FROM a2a_tasks WHERE state IN ({finished}) AND (updated_ms < ?1 OR id NOT IN
               (SELECT id FROM a2a_tasks WHERE state IN ({finished}) ORDER BY updated_ms DESC LIMIT ?2))"
        );
        // the task rows last: their count is how many went
        let deletes = [
            format!("DELETE FROM a2a_push WHERE task_id IN ({gone})"),
            format!("DELETE FROM a2a_task_events WHERE task_id IN ({gone})"),
            format!("DELETE FROM a2a_tasks WHERE id IN ({gone})"),
        ];
        // then what callers sent, as old as the tasks forgotten or of a task no longer kept,
        // and the push failures as old (`?2` is bound and unused: every statement takes the
        // same two)
        let after = [
            format!(
                "DELETE FROM a2a_sent WHERE (at_ms < ?1 OR (key NOT LIKE '{E2A_SENT}%' AND task_id NOT IN (SELECT id FROM a2a_tasks)))
                  AND ?2 >= 0"
            ),
            "DELETE FROM a2a_push_failures WHERE at_ms < ?1 AND ?2 >= 0".to_string(),
        ];
        // a finished task has no lease: no `?3`
        Box::pin(self.write(move |tx| {
            let gone = prune(tx, &deletes, older_than, keep, false)?;
            prune(tx, &after, older_than, keep, false)?;
            Ok(gone)
        }))
    }
}

impl Leases for SqliteStore {
    fn orphans(&self) -> StoreFuture<'_, Vec<String>> {
        let active: Vec<&str> = e2a::types::A2aTaskState::ALL
            .iter()
            .filter(|s| s.is_active())
            .map(|s| s.as_str())
            .collect();
        let sql = format!(
            "SELECT id FROM a2a_tasks WHERE state IN ({}) ORDER BY updated_ms LIMIT 1000",
            active.iter().map(|s| format!("'{s}'")).collect::<Vec<_>>().join(", ")
        );
        Box::pin(self.with(move |c| {
            let mut stmt = c.prepare_cached(&sql).map_err(backend)?;
            let rows = stmt.query_map([], |r| r.get::<_, String>(0)).map_err(backend)?;
            rows.collect::<Result<_, _>>().map_err(backend)
        }))
    }
}

impl Sends for SqliteStore {
    fn remember_send(&self, record: SentRecord) -> StoreFuture<'_, Option<SentRecord>> {
        Box::pin(self.write(move |tx| {
            let added = tx
                .prepare_cached(
                    "INSERT INTO a2a_sent (owner, key, fingerprint, task_id, at_ms) VALUES (?1, ?2, ?3, ?4, ?5)
                     ON CONFLICT (owner, key) DO NOTHING",
                )
                .map_err(backend)?
                .execute(params![
                    record.owner,
                    record.key,
                    record.fingerprint,
                    record.task_id,
                    record.at_ms
                ])
                .map_err(backend)?;
            if added == 1 {
                return Ok(None);
            }
            sent_record(tx, &record.owner, &record.key)
        }))
    }

    fn find_send<'a>(&'a self, owner: &'a str, key: &'a str) -> StoreFuture<'a, Option<SentRecord>> {
        let (owner, key) = (owner.to_string(), key.to_string());
        Box::pin(self.with(move |c| sent_record(c, &owner, &key)))
    }
}

impl PushStore for SqliteStore {
    fn put_push(&self, record: PushRecord, from_seq: u64) -> StoreFuture<'_, ()> {
        let config = record.config_json();
        let from = i64::try_from(from_seq).unwrap_or(i64::MAX);
        Box::pin(self.write(move |tx| {
            tx.prepare_cached(
                "INSERT INTO a2a_push (task_id, id, config, created_ms, delivered_seq) VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (task_id, id) DO UPDATE SET config = excluded.config",
            )
            .map_err(backend)?
            .execute(params![record.task_id, record.id, config, record.created_ms, from])
            .map_err(backend)?;
            Ok(())
        }))
    }

    fn get_push<'a>(&'a self, task_id: &'a str, id: &'a str) -> StoreFuture<'a, Option<PushRecord>> {
        let (task_id, id) = (task_id.to_string(), id.to_string());
        Box::pin(self.with(move |c| {
            let sql = "SELECT task_id, id, config, created_ms FROM a2a_push WHERE task_id = ?1 AND id = ?2";
            let row = c
                .query_row(sql, params![task_id, id], push_of)
                .optional()
                .map_err(backend)?;
            row.map(parse_push).transpose()
        }))
    }

    fn list_pushes<'a>(&'a self, task_id: &'a str) -> StoreFuture<'a, Vec<PushRecord>> {
        let task_id = task_id.to_string();
        Box::pin(self.with(move |c| {
            let mut stmt = c
                .prepare_cached(
                    "SELECT task_id, id, config, created_ms FROM a2a_push WHERE task_id = ?1 ORDER BY created_ms, id",
                )
                .map_err(backend)?;
            let rows = stmt.query_map(params![task_id], push_of).map_err(backend)?;
            rows.map(|r| parse_push(r.map_err(backend)?)).collect()
        }))
    }

    fn delete_push<'a>(&'a self, task_id: &'a str, id: &'a str) -> StoreFuture<'a, bool> {
        let (task_id, id) = (task_id.to_string(), id.to_string());
        Box::pin(self.write(move |tx| {
            let n = tx
                .prepare_cached("DELETE FROM a2a_push WHERE task_id = ?1 AND id = ?2")
                .map_err(backend)?
                .execute(params![task_id, id])
                .map_err(backend)?;
            Ok(n > 0)
        }))
    }

    fn claim_pushes<'a>(
        &'a self,
        holder: &'a str,
        lease: std::time::Duration,
        limit: usize,
    ) -> StoreFuture<'a, Vec<PushJob>> {
        let holder = holder.to_string();
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        Box::pin(self.write(move |tx| {
            let now = now_ms();
            let due = {
                let mut stmt = tx
                    .prepare_cached(
                        "SELECT p.task_id, p.id, p.config, p.created_ms, p.delivered_seq, p.attempts
                         FROM a2a_push p JOIN a2a_tasks t ON t.id = p.task_id
                         WHERE t.last_seq > p.delivered_seq AND p.next_ms <= ?1
                           AND (p.holder IS NULL OR p.claim_until_ms < ?1)
                         ORDER BY p.next_ms LIMIT ?2",
                    )
                    .map_err(backend)?;
                let rows = stmt
                    .query_map(params![now, limit], |r| {
                        Ok((push_of(r)?, r.get::<_, i64>(4)?, r.get::<_, i64>(5)?))
                    })
                    .map_err(backend)?;
                rows.collect::<Result<Vec<_>, _>>().map_err(backend)?
            };
            let mut claim = tx
                .prepare_cached("UPDATE a2a_push SET holder = ?1, claim_until_ms = ?2 WHERE task_id = ?3 AND id = ?4")
                .map_err(backend)?;
            let until = now.saturating_add(millis(lease));
            due.into_iter()
                .map(|(row, delivered, attempts)| {
                    let record = parse_push(row)?;
                    claim
                        .execute(params![holder, until, record.task_id, record.id])
                        .map_err(backend)?;
                    Ok(PushJob {
                        record,
                        delivered_seq: u64::try_from(delivered).unwrap_or(0),
                        attempts: u32::try_from(attempts).unwrap_or(u32::MAX),
                    })
                })
                .collect()
        }))
    }

    fn push_progress(&self, progress: PushProgress) -> StoreFuture<'_, bool> {
        Box::pin(self.write(move |tx| {
            let p = &progress;
            let retry_at = p.retry_in.map(|w| now_ms().saturating_add(millis(w)));
            let n = tx
                .prepare_cached(
                    "UPDATE a2a_push SET delivered_seq = MAX(delivered_seq, ?4), attempts = ?5, error = ?6,
                       next_ms = COALESCE(?7, next_ms), holder = CASE WHEN ?7 IS NULL THEN holder END
                     WHERE task_id = ?1 AND id = ?2 AND holder = ?3",
                )
                .map_err(backend)?
                .execute(params![
                    p.task_id,
                    p.id,
                    p.holder,
                    i64::try_from(p.delivered_seq).unwrap_or(i64::MAX),
                    p.attempts,
                    p.error,
                    retry_at
                ])
                .map_err(backend)?;
            if n == 0 {
                return Ok(false);
            }
            if let Some(f) = &p.failure {
                tx.prepare_cached(
                    "INSERT INTO a2a_push_failures (task_id, config_id, seq, attempts, error, at_ms)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                )
                .map_err(backend)?
                .execute(params![
                    f.task_id,
                    f.config_id,
                    i64::try_from(f.seq).unwrap_or(i64::MAX),
                    f.attempts,
                    f.error,
                    f.at_ms
                ])
                .map_err(backend)?;
            }
            Ok(true)
        }))
    }

    fn release_push<'a>(&'a self, task_id: &'a str, id: &'a str, holder: &'a str) -> StoreFuture<'a, ()> {
        let (task_id, id, holder) = (task_id.to_string(), id.to_string(), holder.to_string());
        Box::pin(self.write(move |tx| {
            tx.prepare_cached("UPDATE a2a_push SET holder = NULL WHERE task_id = ?1 AND id = ?2 AND holder = ?3")
                .map_err(backend)?
                .execute(params![task_id, id, holder])
                .map_err(backend)?;
            Ok(())
        }))
    }

    fn push_failures(&self, limit: usize) -> StoreFuture<'_, Vec<PushFailure>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        Box::pin(self.with(move |c| {
            let mut stmt = c
                .prepare_cached(
                    "SELECT task_id, config_id, seq, attempts, error, at_ms FROM a2a_push_failures
                     ORDER BY at_ms DESC, rowid DESC LIMIT ?1",
                )
                .map_err(backend)?;
            let rows = stmt
                .query_map(params![limit], |r| {
                    Ok(PushFailure {
                        task_id: r.get(0)?,
                        config_id: r.get(1)?,
                        seq: u64::try_from(r.get::<_, i64>(2)?).unwrap_or(0),
                        attempts: r.get(3)?,
                        error: r.get(4)?,
                        at_ms: r.get(5)?,
                    })
                })
                .map_err(backend)?;
            rows.collect::<Result<_, _>>().map_err(backend)
        }))
    }
}

impl RunStore for SqliteStore {
    fn append_frames(&self, write: FrameWrite) -> StoreFuture<'_, ()> {
        let FrameWrite { key, run, head, frames } = write;
        Box::pin(self.write(move |tx| {
            let now = super::now_ms();
            let ended = frames.iter().any(|f| f.is_final);
            if let Some(head) = &head {
                tx.prepare_cached("DELETE FROM e2a_run_frames WHERE run = (SELECT run FROM e2a_runs WHERE key = ?1)")
                    .map_err(backend)?
                    .execute(params![key])
                    .map_err(backend)?;
                let until = now.saturating_add(super::millis(head.lease));
                tx.prepare_cached(
                    "INSERT OR REPLACE INTO e2a_runs (key, run, request, holder, until_ms, ended, updated_ms)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                )
                .map_err(backend)?
                .execute(params![key, run, head.request, head.holder, until, ended, now])
                .map_err(backend)?;
            } else {
                let n = tx
                    .prepare_cached(
                        "UPDATE e2a_runs SET updated_ms = ?3, ended = ended OR ?4 WHERE key = ?1 AND run = ?2",
                    )
                    .map_err(backend)?
                    .execute(params![key, run, now, ended])
                    .map_err(backend)?;
                if n == 0 {
                    // opened again since: the key names another run
                    return Ok(());
                }
            }
            {
                let mut insert = tx
                    .prepare_cached("INSERT OR REPLACE INTO e2a_run_frames (run, seq, frame) VALUES (?1, ?2, ?3)")
                    .map_err(backend)?;
                for f in &frames {
                    insert
                        .execute(params![run, run_seq(f.seq)?, f.frame])
                        .map_err(backend)?;
                }
            }
            Ok(())
        }))
    }

    fn run_after<'a>(&'a self, key: &'a str, after: Option<u64>) -> StoreFuture<'a, Option<RunLog>> {
        let key = key.to_string();
        Box::pin(self.with(move |c| {
            let head = c
                .prepare_cached("SELECT run, request, ended, until_ms > ?2 FROM e2a_runs WHERE key = ?1")
                .map_err(backend)?
                .query_row(params![key, super::now_ms()], |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, bool>(2)?,
                        r.get::<_, bool>(3)?,
                    ))
                })
                .optional()
                .map_err(backend)?;
            let Some((run, request, ended, leased)) = head else {
                return Ok(None);
            };
            let after = after.map_or(Ok(-1), run_seq)?;
            let sql = "SELECT seq, frame FROM e2a_run_frames WHERE run = ?1 AND seq > ?2 ORDER BY seq";
            let frames = seq_texts(c, sql, &run, after)?
                .into_iter()
                .map(|(seq, frame)| StoredFrame {
                    seq,
                    frame,
                    is_final: false,
                })
                .collect();
            Ok(Some(RunLog::new(run, request, frames, ended, leased)))
        }))
    }

    fn renew_runs<'a>(&'a self, holder: &'a str, keys: Vec<String>, lease: std::time::Duration) -> StoreFuture<'a, ()> {
        let holder = holder.to_string();
        Box::pin(self.write(move |tx| {
            let until = super::now_ms().saturating_add(super::millis(lease));
            {
                let mut update = tx
                    .prepare_cached("UPDATE e2a_runs SET until_ms = ?3 WHERE key = ?1 AND holder = ?2")
                    .map_err(backend)?;
                for key in &keys {
                    update.execute(params![key, holder, until]).map_err(backend)?;
                }
            }
            Ok(())
        }))
    }

    fn prune_runs(&self, older_than: std::time::Duration, keep: usize) -> StoreFuture<'_, u64> {
        let gone = "SELECT run FROM e2a_runs WHERE (ended OR until_ms < ?3)
                    AND (updated_ms < ?1 OR key NOT IN (SELECT key FROM e2a_runs ORDER BY updated_ms DESC LIMIT ?2))";
        let deletes = [
            format!("DELETE FROM e2a_run_frames WHERE run IN ({gone})"),
            format!("DELETE FROM e2a_runs WHERE run IN ({gone})"),
        ];
        // the requests' Idempotency-Key records: as old as the runs forgotten, or beyond as
        // many as are kept
        let sent = [format!(
            "DELETE FROM a2a_sent WHERE key LIKE '{E2A_SENT}%' AND (at_ms < ?1 OR (owner, key) NOT IN
               (SELECT owner, key FROM a2a_sent WHERE key LIKE '{E2A_SENT}%' ORDER BY at_ms DESC LIMIT ?2))"
        )];
        Box::pin(self.write(move |tx| {
            let gone = prune(tx, &deletes, older_than, keep, true)?;
            prune(tx, &sent, older_than, keep, false)?;
            Ok(gone)
        }))
    }
}

impl SessionStore for SqliteStore {
    fn put_session(&self, session: SessionRecord) -> StoreFuture<'_, ()> {
        let state = session.state.to_string();
        Box::pin(self.write(move |tx| {
            tx.prepare_cached(
                "INSERT INTO acp_sessions (id, cwd, state, updated_ms) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT(id) DO UPDATE SET cwd = excluded.cwd, state = excluded.state, updated_ms = excluded.updated_ms",
            )
            .map_err(backend)?
            .execute(params![session.id, session.cwd, state, session.updated_ms])
            .map_err(backend)?;
            Ok(())
        }))
    }

    fn get_session<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<SessionRecord>> {
        let id = id.to_string();
        Box::pin(self.with(move |c| {
            c.query_row(
                "SELECT id, cwd, state, updated_ms FROM acp_sessions WHERE id = ?1",
                params![id],
                session_of,
            )
            .optional()
            .map_err(backend)?
            .map(parse_session)
            .transpose()
        }))
    }

    fn list_sessions(&self, query: SessionQuery) -> StoreFuture<'_, SessionPage> {
        Box::pin(self.with(move |c| {
            let limit = i64::try_from(query.limit.saturating_add(1)).unwrap_or(i64::MAX);
            let offset = i64::try_from(query.offset).unwrap_or(i64::MAX);
            let mut stmt = c
                .prepare_cached(
                    "SELECT id, cwd, state, updated_ms FROM acp_sessions WHERE ?1 IS NULL OR cwd = ?1
                     ORDER BY updated_ms DESC, id LIMIT ?2 OFFSET ?3",
                )
                .map_err(backend)?;
            let rows = stmt
                .query_map(params![query.cwd, limit, offset], session_of)
                .map_err(backend)?;
            let mut sessions = rows
                .map(|r| parse_session(r.map_err(backend)?))
                .collect::<Result<Vec<_>, _>>()?;
            let more = sessions.len() > query.limit;
            sessions.truncate(query.limit);
            Ok(SessionPage { sessions, more })
        }))
    }

    fn delete_session<'a>(&'a self, id: &'a str) -> StoreFuture<'a, bool> {
        let id = id.to_string();
        Box::pin(self.write(move |tx| {
            tx.execute("DELETE FROM acp_session_history WHERE session_id = ?1", params![id])
                .map_err(backend)?;
            let n = tx
                .execute("DELETE FROM acp_sessions WHERE id = ?1", params![id])
                .map_err(backend)?;
            Ok(n > 0)
        }))
    }

    fn append_history<'a>(&'a self, id: &'a str, entries: Vec<String>, keep: usize) -> StoreFuture<'a, ()> {
        let id = id.to_string();
        let keep = i64::try_from(keep).unwrap_or(i64::MAX);
        Box::pin(self.write(move |tx| {
            let last: i64 = tx
                .prepare_cached("SELECT COALESCE(MAX(seq), 0) FROM acp_session_history WHERE session_id = ?1")
                .map_err(backend)?
                .query_row(params![id], |r| r.get(0))
                .map_err(backend)?;
            let mut insert = tx
                .prepare_cached("INSERT INTO acp_session_history (session_id, seq, entry) VALUES (?1, ?2, ?3)")
                .map_err(backend)?;
            let mut seq = last;
            for entry in &entries {
                seq += 1;
                insert.execute(params![id, seq, entry]).map_err(backend)?;
            }
            tx.prepare_cached("DELETE FROM acp_session_history WHERE session_id = ?1 AND seq <= ?2")
                .map_err(backend)?
                .execute(params![id, seq.saturating_sub(keep)])
                .map_err(backend)?;
            Ok(())
        }))
    }

    fn history<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Vec<String>> {
        let id = id.to_string();
        Box::pin(self.with(move |c| {
            let sql = "SELECT seq, entry FROM acp_session_history WHERE session_id = ?1 AND seq > ?2 ORDER BY seq";
            Ok(seq_texts(c, sql, &id, 0)?.into_iter().map(|(_, e)| e).collect())
        }))
    }
}

/// A push config row: `task_id, id, config, created_ms`.
fn push_of(row: &rusqlite::Row<'_>) -> rusqlite::Result<(String, String, String, i64)> {
    Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
}

fn parse_push((task_id, id, config, created_ms): (String, String, String, i64)) -> Result<PushRecord, StoreError> {
    PushRecord::read(task_id, id, &config, created_ms)
}

/// The record of what `owner` sent as `key`.
fn sent_record(c: &Connection, owner: &str, key: &str) -> Result<Option<SentRecord>, StoreError> {
    c.query_row(
        "SELECT fingerprint, task_id, at_ms FROM a2a_sent WHERE owner = ?1 AND key = ?2",
        params![owner, key],
        |r| {
            Ok(SentRecord {
                owner: owner.to_string(),
                key: key.to_string(),
                fingerprint: r.get(0)?,
                task_id: r.get(1)?,
                at_ms: r.get(2)?,
            })
        },
    )
    .optional()
    .map_err(backend)
}

/// One retention step: `deletes` run in order with `?1` the time before which rows go, `?2`
/// how many to keep and, `with_now`, `?3` now; the last one's count is how many went.
fn prune(
    tx: &Connection,
    deletes: &[String],
    older_than: std::time::Duration,
    keep: usize,
    with_now: bool,
) -> Result<u64, StoreError> {
    let now = super::now_ms();
    let before = now.saturating_sub(super::millis(older_than));
    let keep = i64::try_from(keep).unwrap_or(i64::MAX);
    let mut n = 0;
    for sql in deletes {
        n = if with_now {
            tx.execute(sql, params![before, keep, now])
        } else {
            tx.execute(sql, params![before, keep])
        }
        .map_err(backend)?;
    }
    Ok(u64::try_from(n).unwrap_or(0))
}
