//! What callers sent, in the memory store.

use super::MemoryStore;
use crate::store::{Sends, SentRecord, StoreFuture};

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
