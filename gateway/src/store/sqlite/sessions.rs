//! The ACP sessions of `e2a acp` and their history in the SQLite store.

use rusqlite::{params, OptionalExtension};

use super::{backend, journal, SqliteStore};
use crate::store::journal::Kind;
use crate::store::{SessionPage, SessionQuery, SessionRecord, SessionStore, StoreError, StoreFuture};

fn session_of(row: &rusqlite::Row<'_>) -> rusqlite::Result<(SessionRecord, String)> {
    Ok((
        SessionRecord {
            id: row.get(0)?,
            cwd: row.get(1)?,
            state: serde_json::Value::Null,
            updated_ms: row.get(3)?,
        },
        row.get(2)?,
    ))
}

fn parse_session((mut s, state): (SessionRecord, String)) -> Result<SessionRecord, StoreError> {
    s.state = serde_json::from_str(&state).map_err(|e| StoreError::Corrupt(format!("session {}: {e}", s.id)))?;
    Ok(s)
}

impl SessionStore for SqliteStore {
    fn put_session(&self, session: SessionRecord) -> StoreFuture<'_, ()> {
        let state = session.state.to_string();
        Box::pin(self.write(move |tx| {
            tx.prepare_cached(
                "INSERT INTO acp_sessions (id, cwd, state, updated_ms) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT(id) DO UPDATE SET cwd = excluded.cwd, state = excluded.state, updated_ms = excluded.updated_ms",
            )
            .map_err(backend)?
            .execute(params![session.id, session.cwd, state, session.updated_ms])
            .map_err(backend)?;
            Ok(())
        }))
    }

    fn get_session<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<SessionRecord>> {
        let id = id.to_string();
        Box::pin(self.with(move |c| {
            c.query_row(
                "SELECT id, cwd, state, updated_ms FROM acp_sessions WHERE id = ?1",
                params![id],
                session_of,
            )
            .optional()
            .map_err(backend)?
            .map(parse_session)
            .transpose()
        }))
    }

    fn list_sessions(&self, query: SessionQuery) -> StoreFuture<'_, SessionPage> {
        Box::pin(self.with(move |c| {
            let limit = i64::try_from(query.limit.saturating_add(1)).unwrap_or(i64::MAX);
            let offset = i64::try_from(query.offset).unwrap_or(i64::MAX);
            let mut stmt = c
                .prepare_cached(
                    "SELECT id, cwd, state, updated_ms FROM acp_sessions WHERE ?1 IS NULL OR cwd = ?1
                     ORDER BY updated_ms DESC, id LIMIT ?2 OFFSET ?3",
                )
                .map_err(backend)?;
            let rows = stmt
                .query_map(params![query.cwd, limit, offset], session_of)
                .map_err(backend)?;
            let mut sessions = rows
                .map(|r| parse_session(r.map_err(backend)?))
                .collect::<Result<Vec<_>, _>>()?;
            let more = sessions.len() > query.limit;
            sessions.truncate(query.limit);
            Ok(SessionPage { sessions, more })
        }))
    }

    fn delete_session<'a>(&'a self, id: &'a str) -> StoreFuture<'a, bool> {
        let id = id.to_string();
        Box::pin(self.write(move |tx| {
            journal::clear(tx, Kind::Session, &id)?;
            let n = tx
                .execute("DELETE FROM acp_sessions WHERE id = ?1", params![id])
                .map_err(backend)?;
            Ok(n > 0)
        }))
    }

    fn append_history<'a>(&'a self, id: &'a str, entries: Vec<String>, keep: usize) -> StoreFuture<'a, ()> {
        let id = id.to_string();
        let keep = i64::try_from(keep).unwrap_or(i64::MAX);
        Box::pin(self.write(move |tx| {
            let k = Kind::Session.code();
            let last: i64 = tx
                .prepare_cached("SELECT COALESCE(MAX(seq), 0) FROM e2a_journal WHERE kind = ?1 AND stream = ?2")
                .map_err(backend)?
                .query_row(params![k, id], |r| r.get(0))
                .map_err(backend)?;
            let to = last.saturating_add(i64::try_from(entries.len()).unwrap_or(i64::MAX));
            journal::append(
                tx,
                Kind::Session,
                &id,
                (last + 1..).zip(entries.iter().map(String::as_str)),
            )?;
            tx.prepare_cached("DELETE FROM e2a_journal WHERE kind = ?1 AND stream = ?2 AND seq <= ?3")
                .map_err(backend)?
                .execute(params![k, id, to.saturating_sub(keep)])
                .map_err(backend)?;
            Ok(())
        }))
    }

    fn history<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Vec<String>> {
        let id = id.to_string();
        Box::pin(self.with(move |c| {
            Ok(journal::after(c, Kind::Session, &id, 0)?
                .into_iter()
                .map(|(_, e)| e)
                .collect())
        }))
    }
}
