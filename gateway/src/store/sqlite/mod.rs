//! The embedded SQLite store (`rusqlite`, SQLite bundled): tasks, runs and their logs (the
//! journal) in one file, in WAL mode, each append committed before it is acknowledged — a gateway killed at any point
//! restarts on the same file with every event it had acknowledged. Writes go through one
//! writer thread that commits what is queued together (the `writer` module); a file's WAL is
//! copied back into it by a thread of its own (the `checkpoint` module).

mod checkpoint;
mod journal;
mod nonces;
mod pauses;
mod pushes;
mod runs;
mod sends;
mod sessions;
mod tasks;
mod writer;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;

use rusqlite::{params, Connection};

use super::StoreError;

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
CREATE TABLE IF NOT EXISTS e2a_runs (
    key TEXT PRIMARY KEY,
    run TEXT NOT NULL,
    request TEXT NOT NULL,
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
CREATE TABLE IF NOT EXISTS e2a_pauses (
    key TEXT PRIMARY KEY,
    state TEXT NOT NULL,
    at_ms INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS e2a_pauses_at ON e2a_pauses (at_ms);
CREATE TABLE IF NOT EXISTS goai_nonces (
    agent TEXT NOT NULL,
    nonce TEXT NOT NULL,
    until_ms INTEGER NOT NULL,
    PRIMARY KEY (agent, nonce)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS goai_nonces_until ON goai_nonces (until_ms);
";

/// Tasks in an SQLite file.
#[derive(Clone)]
pub struct SqliteStore {
    conn: Arc<Mutex<Connection>>,
    /// Every write goes through the one writer (group commit).
    writer: std::sync::mpsc::Sender<writer::Job>,
    /// A file's checkpointer (none for a store in memory).
    _checkpointer: Option<checkpoint::Checkpointer>,
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

impl SqliteStore {
    /// Opens (or creates) the store in file `path`.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        let conn = Connection::open(path).map_err(|e| StoreError::Backend(format!("{}: {e}", path.display())))?;
        let mut store = Self::init(conn, path.to_path_buf())?;
        store._checkpointer = Some(checkpoint::start(path)?);
        Ok(store)
    }

    /// A store in memory (for tests).
    pub fn in_memory() -> Result<Self, StoreError> {
        let conn = Connection::open_in_memory().map_err(backend)?;
        Self::init(conn, PathBuf::from(":memory:"))
    }

    fn init(mut conn: Connection, path: PathBuf) -> Result<Self, StoreError> {
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
        conn.execute_batch(&tasks::finished_index()).map_err(backend)?;
        conn.execute_batch(journal::SCHEMA).map_err(backend)?;
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
        journal::migrate(&mut conn)?;
        let conn = Arc::new(Mutex::new(conn));
        Ok(SqliteStore {
            writer: writer::start(conn.clone())?,
            _checkpointer: None,
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
