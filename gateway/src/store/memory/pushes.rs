//! Push notification configs and their outbox cursors in the memory store.

use std::time::Duration;

use super::{MemoryPush, MemoryStore, MAX_FAILURES};
use crate::store::{millis, now_ms, PushFailure, PushJob, PushProgress, PushRecord, PushStore, StoreFuture};

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
