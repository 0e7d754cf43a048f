//! The ACP sessions of `e2a acp` and their history in the memory store.

use super::MemoryStore;
use crate::store::{SessionPage, SessionQuery, SessionRecord, SessionStore, StoreFuture};

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
