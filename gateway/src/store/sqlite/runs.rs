//! The frame logs of E2A runs in the SQLite store.

use rusqlite::{params, OptionalExtension};

use super::{backend, prune, seq_texts, SqliteStore};
use crate::store::{
    run_seq, FrameWrite, RunLog, RunPage, RunQuery, RunStore, RunSummary, StoreFuture, StoredFrame, E2A_SENT,
};

impl RunStore for SqliteStore {
    fn append_frames(&self, write: FrameWrite) -> StoreFuture<'_, ()> {
        let FrameWrite { key, run, head, frames } = write;
        Box::pin(self.write(move |tx| {
            let now = crate::store::now_ms();
            let ended = frames.iter().any(|f| f.is_final);
            if let Some(head) = &head {
                tx.prepare_cached("DELETE FROM e2a_run_frames WHERE run = (SELECT run FROM e2a_runs WHERE key = ?1)")
                    .map_err(backend)?
                    .execute(params![key])
                    .map_err(backend)?;
                let until = now.saturating_add(crate::store::millis(head.lease));
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

    fn run_summary<'a>(&'a self, key: &'a str) -> StoreFuture<'a, Option<RunSummary>> {
        let key = key.to_string();
        Box::pin(self.with(move |c| {
            c.prepare_cached(&format!("{SUMMARY} WHERE r.key = ?2"))
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
                    "{SUMMARY} WHERE {of} AND (?4 IS NULL OR r.run < ?4) ORDER BY r.run DESC LIMIT ?3"
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

/// A run in short (`?1`: now, in ms): its head and its first and last frames.
const SUMMARY: &str = "SELECT r.key, r.run, r.request, r.ended, r.until_ms > ?1, f.seq, f.frame, l.seq, l.frame
     FROM e2a_runs r
     LEFT JOIN e2a_run_frames f ON f.run = r.run AND f.seq = (SELECT MIN(seq) FROM e2a_run_frames WHERE run = r.run)
     LEFT JOIN e2a_run_frames l ON l.run = r.run AND l.seq = (SELECT MAX(seq) FROM e2a_run_frames WHERE run = r.run)";

/// A row of [`SUMMARY`].
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
