//! The [`MemoryStore`]: tasks in process memory, kept compact — a task's id once (the key), its
//! snapshot and events as the JSON text the service wrote, and the events of an ended task
//! packed into one allocation.

mod pauses;
mod pushes;
mod sends;
mod sessions;
mod tasks;

use crate::maps::HashMap;
use std::sync::Arc;

use e2a::types::{A2aTask, A2aTaskState};
use parking_lot::Mutex;

use crate::packed::Packed;

use super::{PushFailure, PushRecord, SentRecord, SessionRecord, StoreError, TaskQuery, TaskRecord};

/// Tasks in memory: lost when the process ends. Snapshots and events are kept as compact JSON
/// (a few hundred bytes per event, not a tree of values) and parsed when read.
#[derive(Debug, Default)]
pub struct MemoryStore {
    inner: Mutex<Tasks>,
    /// ACP sessions and their histories.
    sessions: Mutex<HashMap<String, (SessionRecord, std::collections::VecDeque<String>)>>,
    /// What callers sent, by owner and key (idempotent delivery).
    sent: Mutex<HashMap<(String, String), SentRecord>>,
    /// Push configs and their outbox cursors, by task and config id.
    pushes: Mutex<std::collections::BTreeMap<(String, String), MemoryPush>>,
    /// Events given up on, oldest first (the latest `MAX_FAILURES`).
    failures: Mutex<std::collections::VecDeque<PushFailure>>,
    /// Durable pauses (as long as the process lives), by key.
    pauses: Mutex<pauses::Pauses>,
    /// The nonces of signed requests, until when each is remembered.
    nonces: crate::web::hmac::SeenNonces,
}

/// The tasks of a [`MemoryStore`] (by id; the map is what it dereferences to), and its
/// finished ones in the order they finished.
#[derive(Debug, Default)]
struct Tasks {
    map: HashMap<String, MemoryTask>,
    /// The finished tasks by when they finished (their last update), oldest first.
    finished: std::collections::BTreeSet<(i64, String)>,
    /// What the finished tasks take ([`MemoryTask::weight`]), in all.
    finished_bytes: usize,
    /// How many finished tasks the store keeps, and how many bytes of them: the bounds the
    /// last `prune_tasks` asked for, which each append that finishes a task keeps to from then
    /// on (the oldest forgotten as new ones finish, not by a sweep of every task).
    keep: Option<Keep>,
}

/// How many finished tasks a [`MemoryStore`] keeps, and how many bytes of them.
#[derive(Debug, Clone, Copy)]
struct Keep {
    tasks: usize,
    bytes: usize,
}

impl Tasks {
    /// Forgets the finished tasks that finished before `before` (ms since the epoch) and the
    /// oldest of those past `keep` (the last to finish is kept whatever its size); returns
    /// them, to be freed once the store is unlocked.
    fn forget(&mut self, before: i64, keep: Keep) -> Vec<(String, MemoryTask)> {
        let mut gone = Vec::new();
        while self.finished.first().is_some_and(|(at, _)| {
            *at < before
                || self.finished.len() > keep.tasks
                || (self.finished_bytes > keep.bytes && self.finished.len() > 1)
        }) {
            let Some((_, id)) = self.finished.pop_first() else {
                break;
            };
            if let Some(t) = self.map.remove(&id) {
                self.finished_bytes = self.finished_bytes.saturating_sub(t.weight(&id));
                gone.push((id, t));
            }
        }
        gone
    }
}

impl std::ops::Deref for Tasks {
    type Target = HashMap<String, MemoryTask>;
    fn deref(&self) -> &Self::Target {
        &self.map
    }
}

impl MemoryStore {
    /// Forgets the push configs of the tasks in `gone` (forgotten).
    fn forget_pushes(&self, gone: &[(String, MemoryTask)]) {
        let mut pushes = self.pushes.lock();
        if pushes.is_empty() {
            return;
        }
        for (id, _) in gone {
            let theirs: Vec<(String, String)> = pushes
                .range((id.clone(), String::new())..)
                .take_while(|((task, _), _)| task == id)
                .map(|(key, _)| key.clone())
                .collect();
            for key in theirs {
                pushes.remove(&key);
            }
        }
    }
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

    /// The bytes the events take in memory.
    fn bytes(&self) -> usize {
        match self {
            // each a pointer to a shared text with its two counts
            Events::Open(v) => v.iter().map(|e| e.len() + 32).sum(),
            Events::Packed(p) => p.bytes(),
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
    /// The bytes task `id` takes in memory: its texts, and about what its entries in the
    /// store's map and finished set and the record's fields take.
    fn weight(&self, id: &str) -> usize {
        const ENTRIES: usize = 2 * std::mem::size_of::<String>() + std::mem::size_of::<MemoryTask>() + 64;
        let owner = self.owner.as_ref().map_or(0, String::len);
        ENTRIES + 2 * id.len() + self.context_id.len() + owner + self.snapshot.len() + self.events.bytes()
    }

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

impl crate::store::Nonces for MemoryStore {
    fn remember_nonce<'a>(
        &'a self,
        agent: &'a str,
        nonce: &'a str,
        ttl: std::time::Duration,
    ) -> crate::web::hmac::NonceFuture<'a> {
        self.nonces.remember_nonce(agent, nonce, ttl)
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
