//! The task log and leases of the memory store.

use std::sync::Arc;

use super::{Events, Keep, MemoryStore, MemoryTask};
use crate::store::{
    millis, now_ms, Leases, StoreError, StoreFuture, StoredEvent, TaskAppend, TaskLog, TaskPage, TaskQuery, TaskRecord,
    TaskRetention,
};

impl TaskLog for MemoryStore {
    fn name(&self) -> String {
        "memory".into()
    }

    fn get<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<TaskRecord>> {
        Box::pin(async move {
            let map = self.inner.lock();
            map.get(id).map(|t| t.record(id)).transpose()
        })
    }

    fn append(&self, write: TaskAppend) -> StoreFuture<'_, u64> {
        Box::pin(async move {
            let TaskAppend {
                record,
                snapshot,
                events,
            } = write;
            let mut tasks = self.inner.lock();
            // (one lookup: the map holds every task, and a lookup in it is a cache miss)
            let t = match tasks.map.entry(record.id) {
                std::collections::hash_map::Entry::Occupied(t) if t.get().state.is_terminal() => {
                    return Err(StoreError::Ended(t.key().clone()))
                }
                entry => entry,
            };
            // (a task this append finishes joins the finished ones)
            let ends = record.state.is_terminal().then(|| (record.updated_ms, t.key().clone()));
            let t = t.or_insert_with(|| MemoryTask {
                context_id: record.context_id,
                owner: record.owner,
                state: record.state,
                snapshot_seq: 0,
                created_ms: record.created_ms,
                updated_ms: record.updated_ms,
                // (like the SQL stores: a first append without a snapshot makes an empty one)
                snapshot: Arc::from("{}"),
                events: Events::Open(Vec::new()),
            });
            let mut log = std::mem::replace(&mut t.events, Events::Open(Vec::new())).into_texts();
            log.extend(events);
            let seq = log.len() as u64;
            if let Some(snapshot) = snapshot {
                t.snapshot = snapshot;
                t.snapshot_seq = seq;
            }
            t.state = record.state;
            t.updated_ms = record.updated_ms;
            // an ended task's events take one allocation, not one each
            t.events = match t.state.is_terminal() {
                true => Events::packed(&log),
                false => Events::Open(log),
            };
            let weight = ends.as_ref().map_or(0, |(_, id)| t.weight(id));
            if let Some(ended) = ends {
                tasks.finished_bytes += weight;
                tasks.finished.insert(ended);
                // past the bound kept, the oldest finished task goes now (freed unlocked)
                if let Some(keep) = tasks.keep {
                    let gone = tasks.forget(i64::MIN, keep);
                    drop(tasks);
                    self.forget_pushes(&gone);
                }
            }
            Ok(seq)
        })
    }

    fn events_after<'a>(&'a self, id: &'a str, after: u64) -> StoreFuture<'a, Vec<StoredEvent>> {
        Box::pin(async move {
            let map = self.inner.lock();
            let Some(t) = map.get(id) else { return Ok(Vec::new()) };
            let from = usize::try_from(after).unwrap_or(usize::MAX);
            Ok((from..t.events.len())
                .filter_map(|i| {
                    Some(StoredEvent {
                        seq: i as u64 + 1,
                        event: t.events.get(i)?,
                    })
                })
                .collect())
        })
    }

    fn prune_tasks(&self, retention: TaskRetention) -> StoreFuture<'_, u64> {
        Box::pin(async move {
            let before = now_ms().saturating_sub(millis(retention.max_age));
            let keep = Keep {
                tasks: retention.max_tasks,
                bytes: retention.max_memory_bytes,
            };
            let mut tasks = self.inner.lock();
            // the finished tasks are kept in the order they finished: the ones that go are the
            // first of them, found without a pass over every task; and from now on each
            // append that finishes a task keeps to `keep`
            tasks.keep = Some(keep);
            let forgotten = tasks.forget(before, keep);
            let recent = now_ms().saturating_sub(crate::store::SENT_UNSTORED_MS);
            self.sent.lock().retain(|(_, key), r| {
                r.at_ms >= before
                    && (key.starts_with(crate::store::E2A_SENT) || r.at_ms >= recent || tasks.contains_key(&r.task_id))
            });
            drop(tasks);
            self.forget_pushes(&forgotten);
            // the tasks' texts are freed with the store unlocked
            let gone = forgotten.len() as u64;
            drop(forgotten);
            Ok(gone)
        })
    }

    fn list(&self, query: TaskQuery) -> StoreFuture<'_, TaskPage> {
        Box::pin(async move {
            let map = self.inner.lock();
            let mut found: Vec<(&String, &MemoryTask)> = map.iter().filter(|(_, t)| t.matches(&query)).collect();
            found.sort_by(|(a_id, a), (b_id, b)| b.updated_ms.cmp(&a.updated_ms).then_with(|| a_id.cmp(b_id)));
            Ok(TaskPage {
                total: found.len(),
                tasks: found
                    .into_iter()
                    .skip(query.offset)
                    .take(query.limit)
                    .map(|(id, t)| t.record(id))
                    .collect::<Result<_, _>>()?,
            })
        })
    }
}

impl Leases for MemoryStore {
    fn orphans(&self) -> StoreFuture<'_, Vec<String>> {
        let mut active: Vec<(i64, String)> = self
            .inner
            .lock()
            .iter()
            .filter(|(_, t)| t.state.is_active())
            .map(|(id, t)| (t.updated_ms, id.clone()))
            .collect();
        active.sort();
        let ids = active.into_iter().take(1_000).map(|(_, id)| id).collect();
        Box::pin(async { Ok(ids) })
    }
}
