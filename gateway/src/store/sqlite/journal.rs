//! The journal ([`crate::store::journal`]) in the SQLite store: the statements the task log and
//! the run logs share, and the migration of a file from before it.

use rusqlite::{params, Connection};

use super::backend;
use crate::store::journal::{before, Kind};
pub(super) use crate::store::journal::{forget, leased};
use crate::store::StoreError;

/// The journal's tables.
pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS e2a_journal (
    kind INTEGER NOT NULL,
    stream TEXT NOT NULL,
    seq INTEGER NOT NULL,
    entry TEXT NOT NULL,
    PRIMARY KEY (kind, stream, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS e2a_leases (
    kind INTEGER NOT NULL,
    stream TEXT NOT NULL,
    holder TEXT NOT NULL,
    until_ms INTEGER NOT NULL,
    PRIMARY KEY (kind, stream)
) WITHOUT ROWID;
";

/// The file format this gateway writes (`PRAGMA user_version`): 1 since the journal.
const VERSION: i64 = 1;

/// Adds `entries` (sequence number, text) to stream `stream` of `kind`. A run's frame written
/// again (same number) replaces the first; a task's event or a session's entry never is (their
/// numbers are the store's own, under the writer: a second one would be a fault, and fails the
/// append).
pub(super) fn append<'a>(
    tx: &Connection,
    kind: Kind,
    stream: &str,
    entries: impl IntoIterator<Item = (i64, &'a str)>,
) -> Result<(), StoreError> {
    let sql = match kind {
        Kind::Task | Kind::Session => "INSERT INTO e2a_journal (kind, stream, seq, entry) VALUES (?1, ?2, ?3, ?4)",
        Kind::Run => "INSERT OR REPLACE INTO e2a_journal (kind, stream, seq, entry) VALUES (?1, ?2, ?3, ?4)",
    };
    let mut insert = tx.prepare_cached(sql).map_err(backend)?;
    for (seq, entry) in entries {
        insert
            .execute(params![kind.code(), stream, seq, entry])
            .map_err(backend)?;
    }
    Ok(())
}

/// The `(seq, entry)` of stream `stream` of `kind` after `after`, in order.
pub(super) fn after(c: &Connection, kind: Kind, stream: &str, after: i64) -> Result<Vec<(u64, String)>, StoreError> {
    let mut stmt = c
        .prepare_cached("SELECT seq, entry FROM e2a_journal WHERE kind = ?1 AND stream = ?2 AND seq > ?3 ORDER BY seq")
        .map_err(backend)?;
    let rows = stmt
        .query_map(params![kind.code(), stream, after], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
        })
        .map_err(backend)?;
    rows.map(|row| {
        let (seq, text) = row.map_err(backend)?;
        Ok((u64::try_from(seq).unwrap_or(0), text))
    })
    .collect()
}

/// Forgets the entries of stream `stream` of `kind` (a run's key opened again).
pub(super) fn clear(tx: &Connection, kind: Kind, stream: &str) -> Result<(), StoreError> {
    tx.prepare_cached("DELETE FROM e2a_journal WHERE kind = ?1 AND stream = ?2")
        .map_err(backend)?
        .execute(params![kind.code(), stream])
        .map_err(backend)?;
    Ok(())
}

/// `holder` writes stream `stream` of `kind` until `until_ms`.
pub(super) fn lease(tx: &Connection, kind: Kind, stream: &str, holder: &str, until_ms: i64) -> Result<(), StoreError> {
    tx.prepare_cached("INSERT OR REPLACE INTO e2a_leases (kind, stream, holder, until_ms) VALUES (?1, ?2, ?3, ?4)")
        .map_err(backend)?
        .execute(params![kind.code(), stream, holder, until_ms])
        .map_err(backend)?;
    Ok(())
}

/// Brings a file from before the journal up to it, in one transaction: the tasks' events and
/// the runs' frames (and the ACP sessions' history) move into `e2a_journal`, the runs' leases into `e2a_leases`. A file newer
/// than this gateway knows is refused.
pub(super) fn migrate(conn: &mut Connection) -> Result<(), StoreError> {
    // the write lock first (waiting for it under the busy timeout), then the version: of two
    // processes opening one file at once, the second finds the first's work done — a deferred
    // transaction that read first would fail at its first write instead of waiting
    let tx = conn
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .map_err(backend)?;
    let version: i64 = tx
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .map_err(backend)?;
    if version > VERSION {
        return Err(StoreError::Backend(format!(
            "the file is at version {version}, newer than this gateway knows ({VERSION}); upgrade the gateway"
        )));
    }
    if version == VERSION {
        return Ok(());
    }
    let has_table = |name: &str| -> Result<bool, StoreError> {
        tx.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1")
            .and_then(|mut s| s.exists([name]))
            .map_err(backend)
    };
    if has_table("a2a_task_events")? {
        tx.execute_batch(&format!("{}; DROP TABLE a2a_task_events;", before::task_events()))
            .map_err(backend)?;
    }
    if has_table("acp_session_history")? {
        tx.execute_batch(&format!(
            "{}; DROP TABLE acp_session_history;",
            before::session_history()
        ))
        .map_err(backend)?;
    }
    if has_table("e2a_run_frames")? {
        tx.execute_batch(&format!("{}; DROP TABLE e2a_run_frames;", before::run_frames()))
            .map_err(backend)?;
    }
    let runs_hold_leases = tx
        .prepare("SELECT 1 FROM pragma_table_info('e2a_runs') WHERE name = 'holder'")
        .and_then(|mut s| s.exists([]))
        .map_err(backend)?;
    if runs_hold_leases {
        tx.execute_batch(&format!(
            "{}; ALTER TABLE e2a_runs DROP COLUMN holder; ALTER TABLE e2a_runs DROP COLUMN until_ms;",
            before::run_leases()
        ))
        .map_err(backend)?;
    }
    tx.pragma_update(None, "user_version", VERSION).map_err(backend)?;
    tx.commit().map_err(backend)
}
