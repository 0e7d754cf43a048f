//! The nonces of signed requests in the memory store: each until its window ends.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::MemoryStore;
use crate::store::{Nonces, StoreFuture};

/// The nonces seen, by agent and nonce, until when each is remembered.
#[derive(Debug, Default)]
pub(super) struct Seen {
    until: HashMap<(String, String), Instant>,
    /// When the expired ones were last forgotten.
    swept: Option<Instant>,
}

impl Nonces for MemoryStore {
    fn remember_nonce<'a>(&'a self, agent: &'a str, nonce: &'a str, ttl: Duration) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let now = Instant::now();
            let mut seen = self.nonces.lock();
            // (only authenticated callers reach here: what is kept is bounded by their rate)
            if seen
                .swept
                .is_none_or(|at| now.duration_since(at) > Duration::from_secs(1))
            {
                seen.until.retain(|_, until| *until > now);
                seen.swept = Some(now);
            }
            let key = (agent.to_string(), nonce.to_string());
            match seen.until.get(&key) {
                Some(until) if *until > now => Ok(false),
                _ => {
                    seen.until.insert(key, now + ttl);
                    Ok(true)
                }
            }
        })
    }
}
