//! Push notification configs and their outbox cursors in the SQLite store (`a2a_push`).

use rusqlite::{params, OptionalExtension};

use super::{backend, SqliteStore};
use crate::store::{
    millis, now_ms, PushFailure, PushJob, PushProgress, PushRecord, PushStore, StoreError, StoreFuture,
};

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

/// A push config row: `task_id, id, config, created_ms`.
fn push_of(row: &rusqlite::Row<'_>) -> rusqlite::Result<(String, String, String, i64)> {
    Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
}

fn parse_push((task_id, id, config, created_ms): (String, String, String, i64)) -> Result<PushRecord, StoreError> {
    PushRecord::read(task_id, id, &config, created_ms)
}
