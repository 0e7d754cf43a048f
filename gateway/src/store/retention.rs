//! What a store keeps of finished tasks ([`TaskRetention`]), and of what callers sent.

use std::time::Duration;

/// Which finished tasks (completed, failed, canceled, rejected) a store keeps, with their events
/// and push configs ([`super::TaskLog::prune_tasks`]): past any bound, the least recently updated go
/// first. The default is the config file's `[store]` defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskRetention {
    /// How long after its last update a finished task is kept (`store.task_retention_hours`).
    pub max_age: Duration,
    /// Most finished tasks kept (`store.max_finished_tasks`).
    pub max_tasks: usize,
    /// Most bytes the finished tasks of a store in memory take, counted as kept (their
    /// snapshots and events as JSON text, ids and bookkeeping), though the last to finish is
    /// kept whatever its size (`store.max_memory_task_mib`). Stores on disk do not count bytes.
    pub max_memory_bytes: usize,
}

impl TaskRetention {
    /// The retention a config file's `[store]` asks for.
    pub fn of(store: &e2a::types::StoreSettings) -> Self {
        TaskRetention {
            max_age: Duration::from_secs(store.task_retention_hours.saturating_mul(3600)),
            max_tasks: usize::try_from(store.max_finished_tasks).unwrap_or(usize::MAX),
            max_memory_bytes: usize::try_from(store.max_memory_task_mib.get())
                .unwrap_or(usize::MAX)
                .saturating_mul(1 << 20),
        }
    }
}

impl Default for TaskRetention {
    fn default() -> Self {
        Self::of(&e2a::types::StoreSettings::default())
    }
}

/// How long a record of what a caller sent is kept although no task of its is stored: a send
/// records its message before its task's first event is stored, and a prune in between must not
/// take the record for one of a forgotten task.
pub(crate) const SENT_UNSTORED_MS: i64 = 60_000;
