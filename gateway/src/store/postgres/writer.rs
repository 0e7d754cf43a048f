//! Group commit: the appends of all the runs of a gateway queue up, and a few writers each
//! commit what has queued in one transaction, its statements pipelined.

use std::sync::Arc;

use deadpool_postgres::Pool;
use tokio::sync::{mpsc, oneshot};

use super::{backend, message_of, pg_error, seq_u64, BATCH, EVENTS_CHANNEL, MAX_EVENT};
use crate::store::{StoreError, TaskAppend};

/// One append, as a statement and its parameters, waiting for a writer.
pub(super) struct Pending {
    id: String,
    context_id: String,
    owner: Option<String>,
    state: &'static str,
    /// The snapshot to write, if any.
    task: Option<Arc<str>>,
    created_ms: i64,
    updated_ms: i64,
    /// The events, in order (the snapshot goes with the last).
    events: Vec<Arc<str>>,
    done: oneshot::Sender<Result<u64, StoreError>>,
}

impl Pending {
    pub(super) fn new(write: TaskAppend, done: oneshot::Sender<Result<u64, StoreError>>) -> Self {
        let TaskAppend {
            record,
            snapshot,
            events,
        } = write;
        Pending {
            id: record.id,
            context_id: record.context_id,
            owner: record.owner,
            state: record.state.as_str(),
            task: snapshot,
            created_ms: record.created_ms,
            updated_ms: record.updated_ms,
            events,
            done,
        }
    }
}

/// The append: the task row (an upsert whose row lock orders appends to one task, and whose
/// `last_seq + 1` is the event's number), the event (in the journal), and the notice (sent on commit; the event
/// travels along when it is small enough). `$9` is the writing instance.
pub(super) fn append_sql() -> String {
    format!(
        "WITH t AS (
           INSERT INTO a2a_tasks AS t (id, context_id, owner, state, task, last_seq, snapshot_seq, created_ms, updated_ms)
           VALUES ($1, $2, $3, $4, COALESCE($5, '{{}}'), 1, CASE WHEN $5 IS NULL THEN 0 ELSE 1 END, $6, $7)
           ON CONFLICT (id) DO UPDATE SET
             state = EXCLUDED.state,
             updated_ms = EXCLUDED.updated_ms,
             last_seq = t.last_seq + 1,
             task = COALESCE($5, t.task),
             snapshot_seq = CASE WHEN $5 IS NULL THEN t.snapshot_seq ELSE t.last_seq + 1 END
           RETURNING last_seq),
         e AS (
           INSERT INTO e2a_journal (kind, stream, seq, entry) SELECT {task}, $1, last_seq, $8 FROM t RETURNING seq)
         SELECT seq, pg_notify('{EVENTS_CHANNEL}',
           CASE WHEN octet_length($8) <= {MAX_EVENT}
             THEN json_build_object('i', $9::TEXT, 't', $1::TEXT, 's', seq, 'e', $8::JSON)::TEXT
             ELSE json_build_object('i', $9::TEXT, 't', $1::TEXT, 's', seq)::TEXT END)
         FROM e",
        task = crate::store::journal::Kind::Task.code()
    )
}

/// Group commit: appends of all the runs of this gateway queue up, and each writer takes what
/// has queued (up to [`BATCH`]) into one transaction, its statements pipelined — one commit and
/// one round of notices for many events. A task has at most one append pending (its run waits
/// for each), so the batches of concurrent writers lock disjoint task rows.
pub(super) async fn writer(pool: Pool, queue: Arc<tokio::sync::Mutex<mpsc::Receiver<Pending>>>, instance: String) {
    loop {
        let mut batch = Vec::new();
        {
            let mut queue = queue.lock().await;
            match queue.recv().await {
                Some(p) => batch.push(p),
                None => return,
            }
            while batch.len() < BATCH {
                match queue.try_recv() {
                    Ok(p) => batch.push(p),
                    Err(_) => break,
                }
            }
        }
        match write(&pool, &instance, &batch).await {
            Ok(seqs) => {
                for (p, seq) in batch.into_iter().zip(seqs) {
                    let _ = p.done.send(seq.ok_or(StoreError::Ended(p.id)));
                }
            }
            // one bad append must not fail the others: each alone
            Err(_) if batch.len() > 1 => {
                for p in batch {
                    let one = write(&pool, &instance, std::slice::from_ref(&p)).await;
                    let one = one.and_then(|s| s.first().copied().flatten().ok_or(StoreError::Ended(p.id)));
                    let _ = p.done.send(one);
                }
            }
            Err(e) => {
                for p in batch {
                    let _ = p.done.send(Err(StoreError::Backend(message_of(&e))));
                }
            }
        }
    }
}

/// Writes `batch` in one transaction, one statement per event (pipelined); the sequence number
/// of each append's last event, `None` for an append refused because its task has ended.
pub(super) async fn write(pool: &Pool, instance: &str, batch: &[Pending]) -> Result<Vec<Option<u64>>, StoreError> {
    let mut client = pool.get().await.map_err(|e| pg_error(&e))?;
    let tx = client.transaction().await.map_err(|e| pg_error(&e))?;
    // the batch's task rows locked first, in one order (a gateway settling a task whose lease
    // ran out appends from another process), and a task that has ended takes no more events
    let ids: Vec<&str> = batch.iter().map(|p| p.id.as_str()).collect();
    let rows = tx
        .query(
            "SELECT id, state FROM a2a_tasks WHERE id = ANY($1) ORDER BY id FOR UPDATE",
            &[&ids],
        )
        .await
        .map_err(|e| pg_error(&e))?;
    let mut ended = std::collections::HashSet::new();
    for row in &rows {
        let id: String = row.try_get(0).map_err(backend)?;
        let state: String = row.try_get(1).map_err(backend)?;
        if crate::store::stored_state(&id, &state)?.is_terminal() {
            ended.insert(id);
        }
    }
    let batch: Vec<&Pending> = batch.iter().filter(|p| !ended.contains(&p.id)).collect();
    let written = write_open(&tx, instance, &batch).await?;
    tx.commit().await.map_err(|e| pg_error(&e))?;
    let mut written = written.into_iter();
    Ok(ids
        .iter()
        .map(|id| match ended.contains(*id) {
            true => None,
            false => written.next(),
        })
        .collect())
}

/// [`write`]'s appends to tasks still open, in transaction `tx`: the sequence number of each
/// append's last event.
async fn write_open(
    tx: &deadpool_postgres::Transaction<'_>,
    instance: &str,
    batch: &[&Pending],
) -> Result<Vec<u64>, StoreError> {
    let stmt = tx.prepare_cached(&append_sql()).await.map_err(|e| pg_error(&e))?;
    type Param<'a> = &'a (dyn tokio_postgres::types::ToSql + Sync);
    // the snapshot is the task after an append's last event: it goes with that one
    let no_task: Option<&str> = None;
    let tasks: Vec<Option<&str>> = batch.iter().map(|p| p.task.as_deref()).collect();
    let texts: Vec<Vec<&str>> = batch.iter().map(|p| p.events.iter().map(|e| &**e).collect()).collect();
    let mut params: Vec<[Param<'_>; 9]> = Vec::new();
    for ((p, task), events) in batch.iter().zip(&tasks).zip(&texts) {
        let last = events.len().saturating_sub(1);
        for (i, event) in events.iter().enumerate() {
            params.push([
                &p.id,
                &p.context_id,
                &p.owner,
                &p.state,
                if i == last { task } else { &no_task },
                &p.created_ms,
                &p.updated_ms,
                event,
                &instance,
            ]);
        }
    }
    let rows = futures_util::future::try_join_all(params.iter().map(|ps| tx.query_one(&stmt, ps)))
        .await
        .map_err(|e| pg_error(&e))?;
    let seqs: Vec<u64> = rows
        .iter()
        .map(|r| r.try_get::<_, i64>(0).map(seq_u64).map_err(backend))
        .collect::<Result<_, _>>()?;
    let mut at = 0;
    Ok(batch
        .iter()
        .map(|p| {
            at += p.events.len();
            seqs.get(at.wrapping_sub(1)).copied().unwrap_or(0)
        })
        .collect())
}
