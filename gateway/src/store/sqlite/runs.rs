//! The frame logs of E2A runs in the SQLite store.

use rusqlite::{params, OptionalExtension};

use super::{backend, journal, prune, SqliteStore};
use crate::store::journal::Kind;
use crate::store::{
    run_seq, FrameWrite, RunLog, RunPage, RunQuery, RunStore, RunSummary, StoreError, StoreFuture, StoredFrame,
    E2A_SENT,
};

impl RunStore for SqliteStore {
    fn append_frames(&self, write: FrameWrite) -> StoreFuture<'_, ()> {
        let FrameWrite { key, run, head, frames } = write;
        Box::pin(self.write(move |tx| {
            let now = crate::store::now_ms();
            let ended = frames.iter().any(|f| f.is_final);
            if let Some(head) = &head {
                // the key's earlier run is forgotten: its frames and its lease
                for sql in journal::forget(Kind::Run, "IN (SELECT run FROM e2a_runs WHERE key = ?1)") {
                    tx.prepare_cached(&sql)
                        .map_err(backend)?
                        .execute(params![key])
                        .map_err(backend)?;
                }
                tx.prepare_cached(
                    "INSERT OR REPLACE INTO e2a_runs (key, run, request, ended, updated_ms) VALUES (?1, ?2, ?3, ?4, ?5)",
                )
                .map_err(backend)?
                .execute(params![key, run, head.request, ended, now])
                .map_err(backend)?;
                let until = now.saturating_add(crate::store::millis(head.lease));
                journal::lease(tx, Kind::Run, &run, &head.holder, until)?;
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
            let frames = frames.iter().map(|f| Ok((run_seq(f.seq)?, f.frame.as_str())));
            journal::append(tx, Kind::Run, &run, frames.collect::<Result<Vec<_>, StoreError>>()?)?;
            Ok(())
        }))
    }

    fn run_after<'a>(&'a self, key: &'a str, after: Option<u64>) -> StoreFuture<'a, Option<RunLog>> {
        let key = key.to_string();
        Box::pin(self.with(move |c| {
            let head = c
                .prepare_cached(&format!(
                    "SELECT r.run, r.request, r.ended, {} FROM e2a_runs r WHERE r.key = ?1",
                    journal::leased(Kind::Run, "r.run", "?2")
                ))
                .map_err(backend)?
                .query_row(params![key, crate::store::now_ms()], |r| {
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
            let frames = journal::after(c, Kind::Run, &run, after)?
                .into_iter()
                .map(StoredFrame::from)
                .collect();
            Ok(Some(RunLog::new(run, request, frames, ended, leased)))
        }))
    }

    fn run_summary<'a>(&'a self, key: &'a str) -> StoreFuture<'a, Option<RunSummary>> {
        let key = key.to_string();
        Box::pin(self.with(move |c| {
            c.prepare_cached(&format!("{} WHERE r.key = ?2", summary_sql()))
                .map_err(backend)?
                .query_row(params![crate::store::now_ms(), key], summary_of)
                .optional()
                .map_err(backend)
        }))
    }

    fn list_runs(&self, query: RunQuery) -> StoreFuture<'_, RunPage> {
        Box::pin(self.with(move |c| {
            // a prefix compared as text (not LIKE: a caller's name may hold `%` or `_`)
            let of = "substr(r.key, 1, length(?2)) = ?2";
            let total: i64 = c
                .prepare_cached(&format!("SELECT COUNT(*) FROM e2a_runs r WHERE {of}"))
                .map_err(backend)?
                // (`?1`, the time, is the page query's: unused by the count)
                .query_row(params![0, query.prefix], |r| r.get(0))
                .map_err(backend)?;
            let limit = i64::try_from(query.limit).unwrap_or(i64::MAX);
            let mut stmt = c
                .prepare_cached(&format!(
                    "{} WHERE {of} AND (?4 IS NULL OR r.run < ?4) ORDER BY r.run DESC LIMIT ?3",
                    summary_sql()
                ))
                .map_err(backend)?;
            let rows = stmt
                .query_map(
                    params![crate::store::now_ms(), query.prefix, limit, query.before],
                    summary_of,
                )
                .map_err(backend)?;
            let runs = rows.collect::<Result<Vec<_>, _>>().map_err(backend)?;
            Ok(RunPage {
                runs,
                total: usize::try_from(total).unwrap_or(0),
            })
        }))
    }

    fn renew_runs<'a>(&'a self, holder: &'a str, keys: Vec<String>, lease: std::time::Duration) -> StoreFuture<'a, ()> {
        let holder = holder.to_string();
        Box::pin(self.write(move |tx| {
            let until = crate::store::now_ms().saturating_add(crate::store::millis(lease));
            let mut update = tx
                .prepare_cached(&format!(
                    "UPDATE e2a_leases SET until_ms = ?3
                     WHERE kind = {} AND holder = ?2 AND stream = (SELECT run FROM e2a_runs WHERE key = ?1)",
                    Kind::Run.code()
                ))
                .map_err(backend)?;
            for key in &keys {
                update.execute(params![key, holder, until]).map_err(backend)?;
            }
            Ok(())
        }))
    }

    fn prune_runs(&self, older_than: std::time::Duration, keep: usize) -> StoreFuture<'_, u64> {
        // ended, or its gateway gone (no valid lease)
        let gone = format!(
            "SELECT run FROM e2a_runs WHERE (ended OR NOT {})
               AND (updated_ms < ?1 OR key NOT IN (SELECT key FROM e2a_runs ORDER BY updated_ms DESC LIMIT ?2))",
            journal::leased(Kind::Run, "e2a_runs.run", "?3")
        );
        let [entries, leases] = journal::forget(Kind::Run, &format!("IN ({gone})"));
        let deletes = [entries, leases, format!("DELETE FROM e2a_runs WHERE run IN ({gone})")];
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

/// A run in short (`?1`: now, in ms): its head and its first and last frames.
fn summary_sql() -> String {
    let k = Kind::Run.code();
    format!(
        "SELECT r.key, r.run, r.request, r.ended, {}, f.seq, f.entry, l.seq, l.entry
         FROM e2a_runs r
         LEFT JOIN e2a_journal f ON f.kind = {k} AND f.stream = r.run
           AND f.seq = (SELECT MIN(seq) FROM e2a_journal WHERE kind = {k} AND stream = r.run)
         LEFT JOIN e2a_journal l ON l.kind = {k} AND l.stream = r.run
           AND l.seq = (SELECT MAX(seq) FROM e2a_journal WHERE kind = {k} AND stream = r.run)",
        journal::leased(Kind::Run, "r.run", "?1")
    )
}

/// A row of [`summary_sql`].
fn summary_of(r: &rusqlite::Row<'_>) -> rusqlite::Result<RunSummary> {
    let ended: bool = r.get(3)?;
    let frame = |seq: usize, is_final: bool| -> rusqlite::Result<Option<StoredFrame>> {
        let Some(n) = r.get::<_, Option<i64>>(seq)? else {
            return Ok(None);
        };
        Ok(Some(StoredFrame {
            seq: u64::try_from(n).unwrap_or(0),
            frame: r.get(seq + 1)?,
            is_final,
        }))
    };
    Ok(RunSummary {
        key: r.get(0)?,
        run: r.get(1)?,
        request: r.get(2)?,
        first: frame(5, false)?,
        last: frame(7, ended)?,
        ended,
        leased: r.get(4)?,
    })
}
