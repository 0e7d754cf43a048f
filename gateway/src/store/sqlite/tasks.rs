//! The task log and leases of the SQLite store.

use rusqlite::{params, OptionalExtension};

use super::{backend, journal, prune, SqliteStore};
use crate::store::journal::Kind;
use crate::store::{
    Leases, StoreError, StoreFuture, StoredEvent, TaskAppend, TaskLog, TaskPage, TaskQuery, TaskRecord, E2A_SENT,
};

const COLUMNS: &str = "id, context_id, owner, state, task, last_seq, created_ms, updated_ms, snapshot_seq";

fn record_of(row: &rusqlite::Row<'_>) -> rusqlite::Result<(TaskRecord, String)> {
    let task: String = row.get(4)?;
    let id: String = row.get(0)?;
    let state: String = row.get(3)?;
    let state = crate::store::stored_state(&id, &state)
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
            let stored: Option<(i64, String)> = tx
                .prepare_cached("SELECT last_seq, state FROM a2a_tasks WHERE id = ?1")
                .map_err(backend)?
                .query_row(params![record.id], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()
                .map_err(backend)?;
            if let Some((_, state)) = &stored {
                if crate::store::stored_state(&record.id, state)?.is_terminal() {
                    return Err(StoreError::Ended(record.id.clone()));
                }
            }
            let last = stored.map(|(last, _)| last);
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
            let events: Vec<&str> = events.iter().map(|e| &**e).collect();
            journal::append_together(tx, Kind::Task, &record.id, seq, &events)?;
            Ok(u64::try_from(seq).unwrap_or(0))
        }))
    }

    fn events_after<'a>(&'a self, id: &'a str, after: u64) -> StoreFuture<'a, Vec<StoredEvent>> {
        let id = id.to_string();
        let after = i64::try_from(after).unwrap_or(i64::MAX);
        Box::pin(self.with(move |c| {
            journal::after(c, Kind::Task, &id, after)?
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

    fn prune_tasks(&self, retention: crate::store::TaskRetention) -> StoreFuture<'_, u64> {
        Box::pin(async move {
            let (older_than, keep) = (retention.max_age, retention.max_tasks);
            let before = crate::store::now_ms().saturating_sub(crate::store::millis(older_than));
            // how many go: all but the newest `keep`, and at least those older than the
            // retention — the oldest first, in the index of finished tasks by their last
            // update (a count of it, not a scan of every task)
            let count = format!("SELECT COUNT(*), COALESCE(SUM(updated_ms < ?1), 0) {}", by_update());
            let (total, aged): (i64, i64) = self
                .with(move |c| {
                    c.query_row(&count, [before], |r| Ok((r.get(0)?, r.get(1)?)))
                        .map_err(backend)
                })
                .await?;
            let past_keep = total.saturating_sub(i64::try_from(keep).unwrap_or(i64::MAX));
            let gone = self
                .forget_oldest(u64::try_from(past_keep.max(aged)).unwrap_or(0))
                .await?;
            // then what callers sent, as old as the tasks forgotten or of a task no longer
            // kept (not yet stored, for a while), and the push failures as old (`?2` is bound
            // and unused: every statement takes the same three)
            let recent = crate::store::SENT_UNSTORED_MS;
            let after = [
                format!(
                    "DELETE FROM a2a_sent WHERE (at_ms < ?1 OR (key NOT LIKE '{E2A_SENT}%' AND at_ms < ?3 - {recent}
                        AND task_id NOT IN (SELECT id FROM a2a_tasks)))
                      AND ?2 >= 0"
                ),
                "DELETE FROM a2a_push_failures WHERE at_ms < ?1 AND ?2 >= 0 AND ?3 >= 0".to_string(),
            ];
            self.write(move |tx| prune(tx, &after, older_than, keep, true)).await?;
            Ok(gone)
        })
    }
}

/// The index of the finished tasks by when they were last updated: what a prune reads (how
/// many there are counted, the oldest found from its start, without a scan of every task).
pub(super) fn finished_index() -> String {
    let finished = crate::store::finished_states_sql();
    format!("CREATE INDEX IF NOT EXISTS a2a_tasks_finished ON a2a_tasks (updated_ms) WHERE state IN ({finished})")
}

/// `FROM` the finished tasks in [`finished_index`] (its `WHERE` as the index's, which
/// `INDEXED BY` requires).
fn by_update() -> String {
    let finished = crate::store::finished_states_sql();
    format!("FROM a2a_tasks INDEXED BY a2a_tasks_finished WHERE state IN ({finished})")
}

/// Most tasks one transaction of a prune forgets.
const PRUNE_CHUNK: u64 = 2_000;

impl SqliteStore {
    /// Forgets the `n` least recently updated finished tasks, with their events, leases and
    /// push configs, [`PRUNE_CHUNK`] a transaction: the appends queued meanwhile are committed
    /// between two (a prune of a million tasks at once held every write back for seconds).
    /// Returns how many went.
    async fn forget_oldest(&self, n: u64) -> Result<u64, StoreError> {
        // found into a table of the connection's own, which each delete then reads
        let found = format!(
            "INSERT INTO temp.e2a_forgotten SELECT id {} ORDER BY updated_ms LIMIT ?1",
            by_update()
        );
        let gone = "SELECT id FROM temp.e2a_forgotten";
        // the task rows last: their count is how many went (these take no parameters)
        let [entries, leases] = journal::forget(Kind::Task, &format!("IN ({gone})"));
        let statements = std::sync::Arc::new([
            found,
            format!("DELETE FROM a2a_push WHERE task_id IN ({gone})"),
            entries,
            leases,
            format!("DELETE FROM a2a_tasks WHERE id IN ({gone})"),
        ]);
        let mut forgotten = 0;
        while forgotten < n {
            let chunk = i64::try_from((n - forgotten).min(PRUNE_CHUNK)).unwrap_or(0);
            let statements = statements.clone();
            let went = self
                .write(move |tx| {
                    tx.execute_batch(
                        "CREATE TEMP TABLE IF NOT EXISTS e2a_forgotten (id TEXT PRIMARY KEY) WITHOUT ROWID;
                         DELETE FROM temp.e2a_forgotten;",
                    )
                    .map_err(backend)?;
                    let [found, deletes @ ..] = &*statements;
                    tx.execute(found, [chunk]).map_err(backend)?;
                    let mut went = 0;
                    for sql in deletes {
                        went = tx.execute(sql, []).map_err(backend)?;
                    }
                    // (the ids go too, not kept in the connection until the next prune)
                    tx.execute("DELETE FROM temp.e2a_forgotten", []).map_err(backend)?;
                    Ok(u64::try_from(went).unwrap_or(0))
                })
                .await?;
            if went == 0 {
                break;
            }
            forgotten += went;
        }
        Ok(forgotten)
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
