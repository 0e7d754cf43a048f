//! The frame logs of E2A runs (E2A over HTTP, AG-UI) — their heads in `e2a_runs`, their frames
//! in the journal — what lets a client resume a run on any gateway sharing the database, and the
//! retention of finished tasks and runs. Times are on the database server's clock, like the task leases.

use std::time::Duration;

use super::journal;
use super::{backend, millis, pg_error, seq_u64, PgStore, FRAMES_CHANNEL, MAX_NOTICE_KEY, NOW_MS};
use crate::store::journal::Kind;
use crate::store::{run_seq, FrameWrite, RunLog, RunPage, RunQuery, RunSummary, StoreError, StoredFrame, E2A_SENT};

impl PgStore {
    pub(super) async fn append_run_frames(&self, write: FrameWrite) -> Result<(), StoreError> {
        let FrameWrite { key, run, head, frames } = write;
        let ended = frames.iter().any(|f| f.is_final);
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(|e| pg_error(&e))?;
        if let Some(head) = head {
            // the key's earlier run is forgotten: its frames and its lease
            for sql in journal::forget(Kind::Run, "IN (SELECT run FROM e2a_runs WHERE key = $1)") {
                tx.execute(&sql, &[&key]).await.map_err(|e| pg_error(&e))?;
            }
            let upsert = format!(
                "INSERT INTO e2a_runs (key, run, request, ended, updated_ms) VALUES ($1, $4, $2, $3, {NOW_MS})
                 ON CONFLICT (key) DO UPDATE SET run = EXCLUDED.run, request = EXCLUDED.request,
                   ended = EXCLUDED.ended, updated_ms = EXCLUDED.updated_ms"
            );
            tx.execute(&upsert, &[&key, &head.request, &ended, &run])
                .await
                .map_err(|e| pg_error(&e))?;
            tx.execute(
                &journal::lease_upsert(Kind::Run),
                &[&run, &head.holder, &millis(head.lease)],
            )
            .await
            .map_err(|e| pg_error(&e))?;
        } else {
            let update =
                format!("UPDATE e2a_runs SET updated_ms = {NOW_MS}, ended = ended OR $3 WHERE key = $1 AND run = $2");
            let n = tx
                .execute(&update, &[&key, &run, &ended])
                .await
                .map_err(|e| pg_error(&e))?;
            if n == 0 {
                // opened again since: the key names another run
                return Ok(());
            }
        }
        let insert = tx
            .prepare_cached(&format!(
                "INSERT INTO e2a_journal (kind, stream, seq, entry) VALUES ({}, $1, $2, $3)
                 ON CONFLICT (kind, stream, seq) DO UPDATE SET entry = EXCLUDED.entry",
                Kind::Run.code()
            ))
            .await
            .map_err(|e| pg_error(&e))?;
        for f in &frames {
            tx.execute(&insert, &[&run, &run_seq(f.seq)?, &f.frame])
                .await
                .map_err(|e| pg_error(&e))?;
        }
        // followers on other gateways wake when (and only when) the frames are committed
        if let Some(last) = frames.last().filter(|_| key.len() <= MAX_NOTICE_KEY) {
            let notice = serde_json::json!({"i": self.instance, "k": key, "s": last.seq}).to_string();
            tx.execute("SELECT pg_notify($1, $2)", &[&FRAMES_CHANNEL, &notice])
                .await
                .map_err(|e| pg_error(&e))?;
        }
        tx.commit().await.map_err(|e| pg_error(&e))
    }

    pub(super) async fn run_log_after(&self, key: &str, after: Option<u64>) -> Result<Option<RunLog>, StoreError> {
        let head = format!(
            "SELECT r.run, r.request, r.ended, {} FROM e2a_runs r WHERE r.key = $1",
            journal::leased(Kind::Run, "r.run", NOW_MS)
        );
        let rows = self.rows(&head, &[&key]).await?;
        let Some(row) = rows.first() else {
            return Ok(None);
        };
        let run: String = row.try_get(0).map_err(backend)?;
        let request: String = row.try_get(1).map_err(backend)?;
        let ended: bool = row.try_get(2).map_err(backend)?;
        let leased: bool = row.try_get(3).map_err(backend)?;
        let frames = journal::after(self, Kind::Run, &run, after.map_or(Ok(-1), run_seq)?)
            .await?
            .into_iter()
            .map(StoredFrame::from)
            .collect();
        Ok(Some(RunLog::new(run, request, frames, ended, leased)))
    }

    pub(super) async fn run_summary_of(&self, key: &str) -> Result<Option<RunSummary>, StoreError> {
        let client = self.client().await?;
        let sql = format!("{} WHERE r.key = $1", summary_sql());
        let row = client.query_opt(&sql, &[&key]).await.map_err(|e| pg_error(&e))?;
        row.as_ref().map(summary_of).transpose()
    }

    pub(super) async fn run_summaries(&self, query: RunQuery) -> Result<RunPage, StoreError> {
        let client = self.client().await?;
        // a prefix compared as text (not LIKE: a caller's name may hold `%` or `_`)
        let of = "left(r.key, char_length($1)) = $1";
        let count = format!("SELECT COUNT(*) FROM e2a_runs r WHERE {of}");
        let total: i64 = client
            .query_one(&count, &[&query.prefix])
            .await
            .map_err(|e| pg_error(&e))?
            .try_get(0)
            .map_err(backend)?;
        let page = format!(
            "{} WHERE {of} AND ($3::text IS NULL OR r.run COLLATE \"C\" < $3) ORDER BY r.run COLLATE \"C\" DESC LIMIT $2",
            summary_sql()
        );
        let limit = i64::try_from(query.limit).unwrap_or(i64::MAX);
        let rows = client
            .query(&page, &[&query.prefix, &limit, &query.before])
            .await
            .map_err(|e| pg_error(&e))?;
        Ok(RunPage {
            runs: rows.iter().map(summary_of).collect::<Result<_, _>>()?,
            total: usize::try_from(total).unwrap_or(0),
        })
    }

    pub(super) async fn renew_run_leases(
        &self,
        holder: &str,
        keys: Vec<String>,
        lease: Duration,
    ) -> Result<(), StoreError> {
        let renew = journal::lease_renewal(Kind::Run, "IN (SELECT run FROM e2a_runs WHERE key = ANY($2))");
        self.rows(&renew, &[&holder, &keys, &millis(lease)]).await.map(drop)
    }

    pub(super) async fn prune_finished_tasks(&self, older_than: Duration, keep: usize) -> Result<u64, StoreError> {
        let finished = crate::store::finished_states_sql();
        let gone = format!(
            "DELETE FROM a2a_tasks WHERE state IN ({finished}) AND (updated_ms < {NOW_MS} - $1 OR id NOT IN
               (SELECT id FROM a2a_tasks WHERE state IN ({finished}) ORDER BY updated_ms DESC LIMIT $2))
             RETURNING id"
        );
        let [entries, leases] = journal::forget(Kind::Task, "= ANY($1)");
        let then = [
            entries,
            leases,
            "DELETE FROM a2a_push WHERE task_id = ANY($1)".to_string(),
        ];
        let n = self.prune(&gone, &then, older_than, keep).await?;
        // what callers sent, as old as the tasks forgotten, or of a task no longer kept
        let sent = format!(
            "DELETE FROM a2a_sent WHERE at_ms < {NOW_MS} - $1
               OR (key NOT LIKE '{E2A_SENT}%' AND at_ms < {NOW_MS} - {recent}
                   AND NOT EXISTS (SELECT 1 FROM a2a_tasks t WHERE t.id = a2a_sent.task_id))",
            recent = crate::store::SENT_UNSTORED_MS
        );
        self.rows(&sent, &[&millis(older_than)]).await?;
        let failures = format!("DELETE FROM a2a_push_failures WHERE at_ms < {NOW_MS} - $1");
        self.rows(&failures, &[&millis(older_than)]).await?;
        Ok(n)
    }

    pub(super) async fn prune_run_logs(&self, older_than: Duration, keep: usize) -> Result<u64, StoreError> {
        // ended, or its gateway gone (no valid lease)
        let gone = format!(
            "DELETE FROM e2a_runs WHERE (ended OR NOT {})
               AND (updated_ms < {NOW_MS} - $1
                    OR key NOT IN (SELECT key FROM e2a_runs ORDER BY updated_ms DESC LIMIT $2))
             RETURNING run",
            journal::leased(Kind::Run, "e2a_runs.run", NOW_MS)
        );
        let then = journal::forget(Kind::Run, "= ANY($1)");
        let n = self.prune(&gone, &then, older_than, keep).await?;
        // the requests' Idempotency-Key records: as old as the runs forgotten, or beyond as
        // many as are kept
        let sent = format!(
            "DELETE FROM a2a_sent WHERE key LIKE '{E2A_SENT}%' AND (at_ms < {NOW_MS} - $1 OR (owner, key) NOT IN
               (SELECT owner, key FROM a2a_sent WHERE key LIKE '{E2A_SENT}%' ORDER BY at_ms DESC LIMIT $2))"
        );
        let keep = i64::try_from(keep).unwrap_or(i64::MAX);
        self.rows(&sent, &[&millis(older_than), &keep]).await?;
        Ok(n)
    }

    /// One retention step, in one transaction: `gone` (`$1`: age in ms, `$2`: how many to
    /// keep) deletes rows and returns their ids, each of `then` (`$1`: those ids) deletes what
    /// hangs on them. How many went.
    async fn prune(&self, gone: &str, then: &[String], older_than: Duration, keep: usize) -> Result<u64, StoreError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(|e| pg_error(&e))?;
        let keep = i64::try_from(keep).unwrap_or(i64::MAX);
        let rows = tx
            .query(gone, &[&millis(older_than), &keep])
            .await
            .map_err(|e| pg_error(&e))?;
        let ids: Vec<String> = rows
            .iter()
            .map(|r| r.try_get(0))
            .collect::<Result<_, _>>()
            .map_err(backend)?;
        for sql in then {
            tx.execute(sql, &[&ids]).await.map_err(|e| pg_error(&e))?;
        }
        tx.commit().await.map_err(|e| pg_error(&e))?;
        Ok(u64::try_from(ids.len()).unwrap_or(0))
    }
}

/// A run in short: its head and its first and last frames.
fn summary_sql() -> String {
    let k = Kind::Run.code();
    format!(
        "SELECT r.key, r.run, r.request, r.ended, {}, f.seq, f.entry, l.seq, l.entry
         FROM e2a_runs r
         LEFT JOIN LATERAL (SELECT seq, entry FROM e2a_journal WHERE kind = {k} AND stream = r.run ORDER BY seq LIMIT 1) f ON TRUE
         LEFT JOIN LATERAL (SELECT seq, entry FROM e2a_journal WHERE kind = {k} AND stream = r.run ORDER BY seq DESC LIMIT 1) l ON TRUE",
        journal::leased(Kind::Run, "r.run", NOW_MS)
    )
}

/// A row of [`summary_sql`].
fn summary_of(r: &tokio_postgres::Row) -> Result<RunSummary, StoreError> {
    let ended: bool = r.try_get(3).map_err(backend)?;
    let frame = |seq: usize, is_final: bool| -> Result<Option<StoredFrame>, StoreError> {
        let Some(n) = r.try_get::<_, Option<i64>>(seq).map_err(backend)? else {
            return Ok(None);
        };
        Ok(Some(StoredFrame {
            seq: seq_u64(n),
            frame: r.try_get(seq + 1).map_err(backend)?,
            is_final,
        }))
    };
    Ok(RunSummary {
        key: r.try_get(0).map_err(backend)?,
        run: r.try_get(1).map_err(backend)?,
        request: r.try_get(2).map_err(backend)?,
        first: frame(5, false)?,
        last: frame(7, ended)?,
        ended,
        leased: r.try_get(4).map_err(backend)?,
    })
}
