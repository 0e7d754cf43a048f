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
    ends BLOB,
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

/// The file format this gateway writes (`PRAGMA user_version`): 1 since the journal, 2 since
/// the events of one task append share a row ([`append_together`]).
const VERSION: i64 = 2;

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

/// Adds `entries`, numbered `last - entries.len() + 1 ..= last`, to stream `stream` of `kind`
/// as one row: numbered by the last, its `entry` their texts one after another, its `ends`
/// where each ends (little-endian `u32`s). One row, not one each: a send's ten events are
/// one insert into the journal's b-tree, not ten (each a search down it and a statement of
/// its own). One entry is a row of its own, as [`append`] writes it. Not for runs, whose
/// entries may be written again one by one.
pub(super) fn append_together(
    tx: &Connection,
    kind: Kind,
    stream: &str,
    last: i64,
    entries: &[&str],
) -> Result<(), StoreError> {
    if entries.len() < 2 {
        return append(tx, kind, stream, entries.iter().map(|e| (last, *e)));
    }
    let mut text = String::with_capacity(entries.iter().map(|e| e.len()).sum());
    let mut ends = Vec::with_capacity(4 * entries.len());
    for e in entries {
        text.push_str(e);
        ends.extend_from_slice(&end_at(text.len())?);
    }
    tx.prepare_cached("INSERT INTO e2a_journal (kind, stream, seq, entry, ends) VALUES (?1, ?2, ?3, ?4, ?5)")
        .map_err(backend)?
        .execute(params![kind.code(), stream, last, text, ends])
        .map_err(backend)?;
    Ok(())
}

/// `at` as an end in a row's `ends`.
fn end_at(at: usize) -> Result<[u8; 4], StoreError> {
    u32::try_from(at)
        .map(u32::to_le_bytes)
        .map_err(|_| StoreError::Backend("the events of one append take more than 4 GiB".into()))
}

/// The `(seq, entry)` of stream `stream` of `kind` after `after`, in order.
pub(super) fn after(c: &Connection, kind: Kind, stream: &str, after: i64) -> Result<Vec<(u64, String)>, StoreError> {
    let mut stmt = c
        .prepare_cached(
            "SELECT seq, entry, ends FROM e2a_journal WHERE kind = ?1 AND stream = ?2 AND seq > ?3 ORDER BY seq",
        )
        .map_err(backend)?;
    let mut rows = stmt.query(params![kind.code(), stream, after]).map_err(backend)?;
    let mut read = Vec::new();
    while let Some(row) = rows.next().map_err(backend)? {
        let seq: i64 = row.get(0).map_err(backend)?;
        let entry: String = row.get(1).map_err(backend)?;
        match row.get::<_, Option<Vec<u8>>>(2).map_err(backend)? {
            None => read.push((u64::try_from(seq).unwrap_or(0), entry)),
            Some(ends) => unpack(seq, &entry, &ends, after, &mut read)?,
        }
    }
    Ok(read)
}

/// The entries of a row [`append_together`] wrote (`last`, `text`, `ends`) numbered after
/// `after`, onto `read`.
fn unpack(last: i64, text: &str, ends: &[u8], after: i64, read: &mut Vec<(u64, String)>) -> Result<(), StoreError> {
    let corrupt = || StoreError::Corrupt(format!("journal row #{last}: its ends do not fit its text"));
    let ends = ends.chunks_exact(4);
    let n = i64::try_from(ends.len()).map_err(|_| corrupt())?;
    if !ends.remainder().is_empty() || n == 0 {
        return Err(corrupt());
    }
    let mut start = 0;
    for (seq, end) in (last - n + 1..).zip(ends) {
        let end = <[u8; 4]>::try_from(end).map_err(|_| corrupt())?;
        let end = usize::try_from(u32::from_le_bytes(end)).map_err(|_| corrupt())?;
        let entry = text.get(start..end).ok_or_else(corrupt)?;
        if seq > after {
            read.push((u64::try_from(seq).unwrap_or(0), entry.to_string()));
        }
        start = end;
    }
    match start == text.len() {
        true => Ok(()),
        false => Err(corrupt()),
    }
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
    // (version 1 → 2: the journal's rows may hold several entries)
    let has_ends = tx
        .prepare("SELECT 1 FROM pragma_table_info('e2a_journal') WHERE name = 'ends'")
        .and_then(|mut s| s.exists([]))
        .map_err(backend)?;
    if !has_ends {
        tx.execute_batch("ALTER TABLE e2a_journal ADD COLUMN ends BLOB")
            .map_err(backend)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn journal() -> Connection {
        let c = Connection::open_in_memory().expect("open");
        c.execute_batch(SCHEMA).expect("schema");
        c
    }

    /// A stream written in appends of several sizes (one row each) reads back entry by entry
    /// from every position, as if each entry were a row of its own.
    #[test]
    fn entries_appended_together_read_back_one_by_one_from_any_position() {
        let c = journal();
        let texts: Vec<String> = (1..=20)
            .map(|i| format!("{{\"n\":{i},\"ü\":\"{}\"}}", "ß".repeat(i)))
            .collect();
        let mut last = 0;
        for size in [1, 3, 0, 1, 7, 2, 6] {
            let some: Vec<&str> = texts[last..last + size].iter().map(String::as_str).collect();
            last += size;
            append_together(&c, Kind::Task, "t", i64::try_from(last).expect("seq"), &some).expect("append");
        }
        assert_eq!(last, texts.len());
        let rows: i64 = c
            .query_row("SELECT COUNT(*) FROM e2a_journal", [], |r| r.get(0))
            .expect("count");
        assert_eq!(rows, 6, "one row per append");
        for from in 0..=texts.len() + 1 {
            let read = after(&c, Kind::Task, "t", i64::try_from(from).expect("seq")).expect("read");
            let want: Vec<(u64, String)> = (1..).zip(texts.clone()).skip(from).collect();
            assert_eq!(read, want, "after {from}");
        }
        assert!(after(&c, Kind::Run, "t", 0).expect("read").is_empty());
    }

    /// A row whose `ends` do not fit its text is reported corrupt, not read wrong.
    #[test]
    fn a_row_whose_ends_do_not_fit_its_text_is_corrupt() {
        let c = journal();
        let bad: [&[u8]; 4] = [&[], &[3, 0, 0], &[9, 0, 0, 0], &[2, 0, 0, 0, 1, 0, 0, 0]];
        for (i, ends) in bad.into_iter().enumerate() {
            let stream = format!("t{i}");
            c.execute(
                "INSERT INTO e2a_journal (kind, stream, seq, entry, ends) VALUES (1, ?1, 2, 'abc', ?2)",
                params![stream, ends],
            )
            .expect("insert");
            let err = after(&c, Kind::Task, &stream, 0).expect_err("corrupt");
            assert!(matches!(err, StoreError::Corrupt(_)), "{ends:?}: {err}");
        }
        // (and a multi-byte character cut in two)
        let ends = [1u8, 0, 0, 0, 2, 0, 0, 0];
        c.execute(
            "INSERT INTO e2a_journal (kind, stream, seq, entry, ends) VALUES (1, 'u', 2, 'ß', ?1)",
            params![&ends[..]],
        )
        .expect("insert");
        assert!(after(&c, Kind::Task, "u", 0).is_err());
    }
}
