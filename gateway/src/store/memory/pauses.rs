//! Pauses in the memory store: kept as long as the process lives, the oldest forgotten past
//! [`MAX_PAUSES`].

use std::collections::VecDeque;

use crate::maps::HashMap;
use std::time::{Duration, Instant};

use super::MemoryStore;
use crate::agent::{PauseFuture, PauseKeeper};
use crate::store::{PauseStore, StoreFuture};

/// Most pauses a [`MemoryStore`] keeps (the oldest go first).
const MAX_PAUSES: usize = 10_000;

/// The pauses, and the order they were kept in.
#[derive(Debug, Default)]
pub(super) struct Pauses {
    by_key: HashMap<String, (String, Instant)>,
    order: VecDeque<(Instant, String)>,
}

impl Pauses {
    /// Forgets the order entries of keys no longer kept (or kept again since).
    fn tidy(&mut self) {
        while let Some((at, key)) = self.order.front() {
            let live = self.by_key.get(key).is_some_and(|(_, kept)| kept == at);
            if live && self.by_key.len() <= MAX_PAUSES {
                break;
            }
            if live {
                self.by_key.remove(key);
            }
            self.order.pop_front();
        }
    }
}

impl PauseKeeper for MemoryStore {
    fn put_pause<'a>(&'a self, key: &'a str, state: String) -> PauseFuture<'a, ()> {
        Box::pin(async move {
            let mut p = self.pauses.lock();
            let now = Instant::now();
            p.by_key.insert(key.to_string(), (state, now));
            p.order.push_back((now, key.to_string()));
            p.tidy();
            Ok(())
        })
    }

    fn take_pause<'a>(&'a self, key: &'a str) -> PauseFuture<'a, Option<String>> {
        Box::pin(async move { Ok(self.pauses.lock().by_key.remove(key).map(|(s, _)| s)) })
    }

    fn get_pause<'a>(&'a self, key: &'a str) -> PauseFuture<'a, Option<String>> {
        Box::pin(async move { Ok(self.pauses.lock().by_key.get(key).map(|(s, _)| s.clone())) })
    }

    fn keep_first_pause<'a>(&'a self, key: &'a str, state: String) -> PauseFuture<'a, Option<String>> {
        Box::pin(async move {
            let mut p = self.pauses.lock();
            if let Some((first, _)) = p.by_key.get(key) {
                return Ok(Some(first.clone()));
            }
            let now = Instant::now();
            p.by_key.insert(key.to_string(), (state, now));
            p.order.push_back((now, key.to_string()));
            p.tidy();
            Ok(None)
        })
    }
}

impl PauseStore for MemoryStore {
    fn pauses_with_prefix<'a>(&'a self, prefix: &'a str, limit: usize) -> StoreFuture<'a, Vec<(String, String)>> {
        Box::pin(async move {
            let p = self.pauses.lock();
            let mut found: Vec<(String, String)> = p
                .by_key
                .iter()
                .filter(|(k, _)| k.starts_with(prefix))
                .map(|(k, (s, _))| (k.clone(), s.clone()))
                .collect();
            found.sort();
            found.truncate(limit);
            Ok(found)
        })
    }

    fn prune_pauses(&self, older_than: Duration) -> StoreFuture<'_, u64> {
        Box::pin(async move {
            let mut p = self.pauses.lock();
            let before = p.by_key.len();
            p.by_key.retain(|_, (_, at)| at.elapsed() < older_than);
            p.tidy();
            Ok((before - p.by_key.len()) as u64)
        })
    }
}
