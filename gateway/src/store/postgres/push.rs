//! Push notification configs and their outbox cursors in `a2a_push`, the events given up on in
//! `a2a_push_failures`. A gateway claims configs with `FOR UPDATE SKIP LOCKED`: the gateways
//! sharing the database never claim one config at once, and a claim is a lease on the
//! database server's clock (a gateway that dies lets go of its claims when they expire).

use std::time::Duration;

use super::{backend, millis, pg_error, seq_i64, seq_u64, PgStore, NOW_MS};
use crate::store::{PushFailure, PushJob, PushProgress, PushRecord, StoreError};

const PUSH_COLUMNS: &str = "task_id, id, config, created_ms";

fn push_of(row: &tokio_postgres::Row) -> Result<PushRecord, StoreError> {
    let config: String = row.try_get(2).map_err(backend)?;
    PushRecord::read(
        row.try_get(0).map_err(backend)?,
        row.try_get(1).map_err(backend)?,
        &config,
        row.try_get(3).map_err(backend)?,
    )
}

fn attempts_i32(n: u32) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

impl PgStore {
    pub(super) async fn put_push_config(&self, record: PushRecord, from_seq: u64) -> Result<(), StoreError> {
        let config = record.config_json();
        self.rows(
            "INSERT INTO a2a_push (task_id, id, config, created_ms, delivered_seq) VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (task_id, id) DO UPDATE SET config = EXCLUDED.config",
            &[
                &record.task_id,
                &record.id,
                &config,
                &record.created_ms,
                &seq_i64(from_seq),
            ],
        )
        .await
        .map(drop)
    }

    pub(super) async fn get_push_config(&self, task_id: &str, id: &str) -> Result<Option<PushRecord>, StoreError> {
        let sql = format!("SELECT {PUSH_COLUMNS} FROM a2a_push WHERE task_id = $1 AND id = $2");
        self.rows(&sql, &[&task_id, &id])
            .await?
            .first()
            .map(push_of)
            .transpose()
    }

    pub(super) async fn list_push_configs(&self, task_id: &str) -> Result<Vec<PushRecord>, StoreError> {
        let sql = format!("SELECT {PUSH_COLUMNS} FROM a2a_push WHERE task_id = $1 ORDER BY created_ms, id");
        self.rows(&sql, &[&task_id]).await?.iter().map(push_of).collect()
    }

    pub(super) async fn delete_push_config(&self, task_id: &str, id: &str) -> Result<bool, StoreError> {
        let rows = self
            .rows(
                "DELETE FROM a2a_push WHERE task_id = $1 AND id = $2 RETURNING id",
                &[&task_id, &id],
            )
            .await?;
        Ok(!rows.is_empty())
    }

    pub(super) async fn claim_push_configs(
        &self,
        holder: &str,
        lease: Duration,
        limit: usize,
    ) -> Result<Vec<PushJob>, StoreError> {
        let sql = format!(
            "UPDATE a2a_push p SET holder = $1, claim_until_ms = {NOW_MS} + $2
             FROM (SELECT q.task_id, q.id FROM a2a_push q JOIN a2a_tasks t ON t.id = q.task_id
                   WHERE t.last_seq > q.delivered_seq AND q.next_ms <= {NOW_MS}
                     AND (q.holder IS NULL OR q.claim_until_ms < {NOW_MS})
                   ORDER BY q.next_ms LIMIT $3
                   FOR UPDATE OF q SKIP LOCKED) c
             WHERE p.task_id = c.task_id AND p.id = c.id
             RETURNING p.task_id, p.id, p.config, p.created_ms, p.delivered_seq, p.attempts"
        );
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = self.rows(&sql, &[&holder, &millis(lease), &limit]).await?;
        rows.iter()
            .map(|r| {
                let attempts: i32 = r.try_get(5).map_err(backend)?;
                Ok(PushJob {
                    record: push_of(r)?,
                    delivered_seq: seq_u64(r.try_get(4).map_err(backend)?),
                    attempts: u32::try_from(attempts).unwrap_or(0),
                })
            })
            .collect()
    }

    pub(super) async fn write_push_progress(&self, p: PushProgress) -> Result<bool, StoreError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(|e| pg_error(&e))?;
        let retry = p.retry_in.map(millis);
        let sql = format!(
            "UPDATE a2a_push SET delivered_seq = GREATEST(delivered_seq, $4), attempts = $5, error = $6,
               next_ms = CASE WHEN $7::BIGINT IS NULL THEN next_ms ELSE {NOW_MS} + $7 END,
               holder = CASE WHEN $7::BIGINT IS NULL THEN holder END
             WHERE task_id = $1 AND id = $2 AND holder = $3"
        );
        let n = tx
            .execute(
                &sql,
                &[
                    &p.task_id,
                    &p.id,
                    &p.holder,
                    &seq_i64(p.delivered_seq),
                    &attempts_i32(p.attempts),
                    &p.error,
                    &retry,
                ],
            )
            .await
            .map_err(|e| pg_error(&e))?;
        if n == 0 {
            return Ok(false);
        }
        if let Some(f) = &p.failure {
            tx.execute(
                "INSERT INTO a2a_push_failures (task_id, config_id, seq, attempts, error, at_ms)
                 VALUES ($1, $2, $3, $4, $5, $6)",
                &[
                    &f.task_id,
                    &f.config_id,
                    &seq_i64(f.seq),
                    &attempts_i32(f.attempts),
                    &f.error,
                    &f.at_ms,
                ],
            )
            .await
            .map_err(|e| pg_error(&e))?;
        }
        tx.commit().await.map_err(|e| pg_error(&e))?;
        Ok(true)
    }

    pub(super) async fn release_push_claim(&self, task_id: &str, id: &str, holder: &str) -> Result<(), StoreError> {
        self.rows(
            "UPDATE a2a_push SET holder = NULL WHERE task_id = $1 AND id = $2 AND holder = $3",
            &[&task_id, &id, &holder],
        )
        .await
        .map(drop)
    }

    pub(super) async fn recorded_push_failures(&self, limit: usize) -> Result<Vec<PushFailure>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = self
            .rows(
                "SELECT task_id, config_id, seq, attempts, error, at_ms FROM a2a_push_failures
                 ORDER BY at_ms DESC, n DESC LIMIT $1",
                &[&limit],
            )
            .await?;
        rows.iter()
            .map(|r| {
                let attempts: i32 = r.try_get(3).map_err(backend)?;
                Ok(PushFailure {
                    task_id: r.try_get(0).map_err(backend)?,
                    config_id: r.try_get(1).map_err(backend)?,
                    seq: seq_u64(r.try_get(2).map_err(backend)?),
                    attempts: u32::try_from(attempts).unwrap_or(0),
                    error: r.try_get(4).map_err(backend)?,
                    at_ms: r.try_get(5).map_err(backend)?,
                })
            })
            .collect()
    }
}
