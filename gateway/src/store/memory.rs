//! The [`MemoryStore`]: tasks in process memory, kept compact — a task's id once (the key), its
//! snapshot and events as the JSON text the service wrote, and the events of an ended task
//! packed into one allocation.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use e2a::types::{A2aTask, A2aTaskState};
use parking_lot::Mutex;

use crate::packed::Packed;

use super::{
    millis, now_ms, PushFailure, PushJob, PushProgress, PushRecord, SentRecord, SessionPage, SessionQuery,
    SessionRecord, StoreError, StoreFuture, StoredEvent, TaskAppend, TaskPage, TaskQuery, TaskRecord,
};
use super::{Leases, PushStore, Sends, SessionStore, TaskLog};

/// Tasks in memory: lost when the process ends. Snapshots and events are kept as compact JSON
/// (a few hundred bytes per event, not a tree of values) and parsed when read.
#[derive(Debug, Default)]
pub struct MemoryStore {
    inner: Mutex<HashMap<String, MemoryTask>>,
    /// ACP sessions and their histories.
    sessions: Mutex<HashMap<String, (SessionRecord, std::collections::VecDeque<String>)>>,
    /// What callers sent, by owner and key (idempotent delivery).
    sent: Mutex<HashMap<(String, String), SentRecord>>,
    /// Push configs and their outbox cursors, by task and config id.
    pushes: Mutex<std::collections::BTreeMap<(String, String), MemoryPush>>,
    /// Events given up on, oldest first (the latest `MAX_FAILURES`).
    failures: Mutex<std::collections::VecDeque<PushFailure>>,
}

/// Most [`PushFailure`]s a [`MemoryStore`] keeps.
const MAX_FAILURES: usize = 10_000;

/// A push config in a [`MemoryStore`], with its outbox cursor and claim.
#[derive(Debug)]
struct MemoryPush {
    record: PushRecord,
    delivered_seq: u64,
    attempts: u32,
    next_ms: i64,
    error: Option<String>,
    holder: Option<String>,
    claim_until_ms: i64,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }
}

/// One task in a [`MemoryStore`]: its record without the id (the map's key), without a task
/// (the snapshot is its JSON) and without `last_seq` (its number of events), and its events.
#[derive(Debug)]
struct MemoryTask {
    context_id: String,
    owner: Option<String>,
    state: A2aTaskState,
    snapshot_seq: u64,
    created_ms: i64,
    updated_ms: i64,
    snapshot: Arc<str>,
    events: Events,
}

/// A task's events, numbered 1, 2, 3 … by their place.
#[derive(Debug)]
enum Events {
    /// Each event's text as the service handed it over (shared with its followers).
    Open(Vec<Arc<str>>),
    /// An ended task's events, one after another in one text.
    Packed(Packed),
}

impl Events {
    fn len(&self) -> usize {
        match self {
            Events::Open(v) => v.len(),
            Events::Packed(p) => p.len(),
        }
    }

    /// The text of event `i` (0-based).
    fn get(&self, i: usize) -> Option<Arc<str>> {
        match self {
            Events::Open(v) => v.get(i).cloned(),
            Events::Packed(p) => p.get(i).map(Arc::from),
        }
    }

    /// The events as separate texts (again, for an ended task that gets another event).
    fn into_texts(self) -> Vec<Arc<str>> {
        match self {
            Events::Open(v) => v,
            packed => (0..packed.len()).filter_map(|i| packed.get(i)).collect(),
        }
    }

    /// `texts` packed into one text.
    fn packed(texts: &[Arc<str>]) -> Events {
        Events::Packed(Packed::of(texts))
    }
}

impl MemoryTask {
    fn record(&self, id: &str) -> Result<TaskRecord, StoreError> {
        let mut r = TaskRecord {
            id: id.to_string(),
            context_id: self.context_id.clone(),
            owner: self.owner.clone(),
            state: self.state,
            task: A2aTask::new(id, &self.context_id, self.state),
            last_seq: self.events.len() as u64,
            snapshot_seq: self.snapshot_seq,
            created_ms: self.created_ms,
            updated_ms: self.updated_ms,
        };
        r.read_snapshot(&self.snapshot)?;
        Ok(r)
    }

    /// Whether the task matches `q`.
    fn matches(&self, q: &TaskQuery) -> bool {
        self.owner == q.owner
            && q.context_id.as_ref().is_none_or(|c| *c == self.context_id)
            && q.state.is_none_or(|s| s == self.state)
            && q.updated_after_ms.is_none_or(|t| self.updated_ms > t)
    }
}

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
            let mut map = self.inner.lock();
            let t = map.entry(record.id).or_insert_with(|| MemoryTask {
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

    fn prune_tasks(&self, older_than: Duration, keep: usize) -> StoreFuture<'_, u64> {
        Box::pin(async move {
            let before = now_ms().saturating_sub(millis(older_than));
            let mut map = self.inner.lock();
            // O(tasks) under the lock, not a sort of them all: the (keep + 1)-th most recently
            // updated finished task is found by partition, and it and every one older go
            let cutoff: Option<(i64, String)> = {
                let mut finished: Vec<(i64, &String)> = map
                    .iter()
                    .filter(|(_, t)| t.state.is_terminal())
                    .map(|(id, t)| (t.updated_ms, id))
                    .collect();
                (keep < finished.len()).then(|| {
                    let (_, nth, _) = finished.select_nth_unstable_by(keep, |a, b| b.cmp(a));
                    (nth.0, nth.1.clone())
                })
            };
            let past = |id: &String, t: &MemoryTask| {
                t.state.is_terminal()
                    && (t.updated_ms < before
                        || cutoff
                            .as_ref()
                            .is_some_and(|(at, last)| (t.updated_ms, id.as_str()) <= (*at, last.as_str())))
            };
            // moved out, not copied: the tasks kept go back into a new map (with no more room
            // than they need), the others are freed once the store is unlocked
            // (`HashMap::extract_if` would do this in place; it is newer than the MSRV)
            let mut forgotten: Vec<(String, MemoryTask)> = Vec::new();
            if map.iter().any(|(id, t)| past(id, t)) {
                for (id, t) in std::mem::take(&mut *map) {
                    match past(&id, &t) {
                        true => forgotten.push((id, t)),
                        false => {
                            map.insert(id, t);
                        }
                    }
                }
                // one pass over the configs, whatever the number of tasks forgotten
                let gone: std::collections::HashSet<&str> = forgotten.iter().map(|(id, _)| id.as_str()).collect();
                self.pushes.lock().retain(|(task, _), _| !gone.contains(task.as_str()));
            }
            self.sent.lock().retain(|(_, key), r| {
                r.at_ms >= before && (key.starts_with(super::E2A_SENT) || map.contains_key(&r.task_id))
            });
            drop(map);
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

impl Sends for MemoryStore {
    fn find_send<'a>(&'a self, owner: &'a str, key: &'a str) -> StoreFuture<'a, Option<SentRecord>> {
        Box::pin(async move { Ok(self.sent.lock().get(&(owner.to_string(), key.to_string())).cloned()) })
    }

    fn remember_send(&self, record: SentRecord) -> StoreFuture<'_, Option<SentRecord>> {
        Box::pin(async move {
            let mut sent = self.sent.lock();
            let key = (record.owner.clone(), record.key.clone());
            match sent.get(&key) {
                Some(first) => Ok(Some(first.clone())),
                None => {
                    sent.insert(key, record);
                    Ok(None)
                }
            }
        })
    }
}

impl PushStore for MemoryStore {
    fn put_push(&self, record: PushRecord, from_seq: u64) -> StoreFuture<'_, ()> {
        let mut pushes = self.pushes.lock();
        let key = (record.task_id.clone(), record.id.clone());
        match pushes.get_mut(&key) {
            Some(p) => p.record = record,
            None => {
                pushes.insert(
                    key,
                    MemoryPush {
                        record,
                        delivered_seq: from_seq,
                        attempts: 0,
                        next_ms: 0,
                        error: None,
                        holder: None,
                        claim_until_ms: 0,
                    },
                );
            }
        }
        Box::pin(async { Ok(()) })
    }

    fn get_push<'a>(&'a self, task_id: &'a str, id: &'a str) -> StoreFuture<'a, Option<PushRecord>> {
        let found = self
            .pushes
            .lock()
            .get(&(task_id.to_string(), id.to_string()))
            .map(|p| p.record.clone());
        Box::pin(async { Ok(found) })
    }

    fn list_pushes<'a>(&'a self, task_id: &'a str) -> StoreFuture<'a, Vec<PushRecord>> {
        let mut found: Vec<PushRecord> = self
            .pushes
            .lock()
            .values()
            .filter(|p| p.record.task_id == task_id)
            .map(|p| p.record.clone())
            .collect();
        found.sort_by(|a, b| a.created_ms.cmp(&b.created_ms).then_with(|| a.id.cmp(&b.id)));
        Box::pin(async { Ok(found) })
    }

    fn delete_push<'a>(&'a self, task_id: &'a str, id: &'a str) -> StoreFuture<'a, bool> {
        let gone = self
            .pushes
            .lock()
            .remove(&(task_id.to_string(), id.to_string()))
            .is_some();
        Box::pin(async move { Ok(gone) })
    }

    fn claim_pushes<'a>(&'a self, holder: &'a str, lease: Duration, limit: usize) -> StoreFuture<'a, Vec<PushJob>> {
        let now = now_ms();
        let tasks = self.inner.lock();
        let mut pushes = self.pushes.lock();
        let mut due: Vec<&mut MemoryPush> = pushes
            .values_mut()
            .filter(|p| {
                let last = tasks.get(&p.record.task_id).map_or(0, |t| t.events.len() as u64);
                last > p.delivered_seq && p.next_ms <= now && (p.holder.is_none() || p.claim_until_ms < now)
            })
            .collect();
        due.sort_by_key(|p| p.next_ms);
        let jobs = due
            .into_iter()
            .take(limit)
            .map(|p| {
                p.holder = Some(holder.to_string());
                p.claim_until_ms = now.saturating_add(millis(lease));
                PushJob {
                    record: p.record.clone(),
                    delivered_seq: p.delivered_seq,
                    attempts: p.attempts,
                }
            })
            .collect();
        Box::pin(async { Ok(jobs) })
    }

    fn push_progress(&self, progress: PushProgress) -> StoreFuture<'_, bool> {
        let mut pushes = self.pushes.lock();
        let key = (progress.task_id.clone(), progress.id.clone());
        let held = match pushes.get_mut(&key) {
            Some(p) if p.holder.as_deref() == Some(progress.holder.as_str()) => {
                p.delivered_seq = p.delivered_seq.max(progress.delivered_seq);
                p.attempts = progress.attempts;
                p.error = progress.error;
                if let Some(wait) = progress.retry_in {
                    p.next_ms = now_ms().saturating_add(millis(wait));
                    p.holder = None;
                }
                if let Some(f) = progress.failure {
                    let mut failures = self.failures.lock();
                    failures.push_back(f);
                    while failures.len() > MAX_FAILURES {
                        failures.pop_front();
                    }
                }
                true
            }
            _ => false,
        };
        Box::pin(async move { Ok(held) })
    }

    fn release_push<'a>(&'a self, task_id: &'a str, id: &'a str, holder: &'a str) -> StoreFuture<'a, ()> {
        if let Some(p) = self.pushes.lock().get_mut(&(task_id.to_string(), id.to_string())) {
            if p.holder.as_deref() == Some(holder) {
                p.holder = None;
            }
        }
        Box::pin(async { Ok(()) })
    }

    fn push_failures(&self, limit: usize) -> StoreFuture<'_, Vec<PushFailure>> {
        let found = self.failures.lock().iter().rev().take(limit).cloned().collect();
        Box::pin(async { Ok(found) })
    }
}

impl SessionStore for MemoryStore {
    fn put_session(&self, session: SessionRecord) -> StoreFuture<'_, ()> {
        let mut map = self.sessions.lock();
        match map.get_mut(&session.id) {
            Some(slot) => slot.0 = session,
            None => {
                map.insert(session.id.clone(), (session, Default::default()));
            }
        }
        Box::pin(async { Ok(()) })
    }

    fn get_session<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<SessionRecord>> {
        let found = self.sessions.lock().get(id).map(|(s, _)| s.clone());
        Box::pin(async { Ok(found) })
    }

    fn list_sessions(&self, query: SessionQuery) -> StoreFuture<'_, SessionPage> {
        let map = self.sessions.lock();
        let mut found: Vec<&SessionRecord> = map
            .values()
            .map(|(s, _)| s)
            .filter(|s| query.cwd.as_ref().is_none_or(|c| *c == s.cwd))
            .collect();
        found.sort_by(|a, b| b.updated_ms.cmp(&a.updated_ms).then_with(|| a.id.cmp(&b.id)));
        let more = found.len() > query.offset.saturating_add(query.limit);
        let sessions = found
            .into_iter()
            .skip(query.offset)
            .take(query.limit)
            .cloned()
            .collect();
        Box::pin(async move { Ok(SessionPage { sessions, more }) })
    }

    fn delete_session<'a>(&'a self, id: &'a str) -> StoreFuture<'a, bool> {
        let gone = self.sessions.lock().remove(id).is_some();
        Box::pin(async move { Ok(gone) })
    }

    fn append_history<'a>(&'a self, id: &'a str, entries: Vec<String>, keep: usize) -> StoreFuture<'a, ()> {
        if let Some((_, history)) = self.sessions.lock().get_mut(id) {
            history.extend(entries);
            while history.len() > keep {
                history.pop_front();
            }
        }
        Box::pin(async { Ok(()) })
    }

    fn history<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Vec<String>> {
        let entries = self
            .sessions
            .lock()
            .get(id)
            .map(|(_, h)| h.iter().cloned().collect())
            .unwrap_or_default();
        Box::pin(async { Ok(entries) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_events_read_as_they_were_written() {
        let texts: Vec<Arc<str>> = ["{\"a\":1}", "", "{\"ü\":\"ß\"}"].into_iter().map(Arc::from).collect();
        let e = Events::packed(&texts);
        assert!(matches!(e, Events::Packed(_)));
        let read: Vec<_> = (0..e.len()).filter_map(|i| e.get(i)).collect();
        assert_eq!(read, texts);
        assert_eq!(e.get(3), None);
        assert_eq!(e.into_texts(), texts);
    }
}
