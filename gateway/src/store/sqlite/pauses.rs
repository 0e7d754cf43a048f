//! Pauses in the SQLite store (`e2a_pauses`).

use std::time::Duration;

use rusqlite::{params, OptionalExtension};

use super::{backend, SqliteStore};
use crate::agent::{PauseError, PauseFuture, PauseKeeper};
use crate::store::{PauseStore, StoreFuture};

impl PauseKeeper for SqliteStore {
    fn put_pause<'a>(&'a self, key: &'a str, state: String) -> PauseFuture<'a, ()> {
        let key = key.to_string();
        let put = self.write(move |tx| {
            tx.prepare_cached(
                "INSERT INTO e2a_pauses (key, state, at_ms) VALUES (?1, ?2, ?3)
                 ON CONFLICT (key) DO UPDATE SET state = excluded.state, at_ms = excluded.at_ms",
            )
            .map_err(backend)?
            .execute(params![key, state, crate::store::now_ms()])
            .map_err(backend)?;
            Ok(())
        });
        Box::pin(async move { put.await.map_err(PauseError::from) })
    }

    fn take_pause<'a>(&'a self, key: &'a str) -> PauseFuture<'a, Option<String>> {
        let key = key.to_string();
        let take = self.write(move |tx| {
            tx.prepare_cached("DELETE FROM e2a_pauses WHERE key = ?1 RETURNING state")
                .map_err(backend)?
                .query_row(params![key], |r| r.get::<_, String>(0))
                .optional()
                .map_err(backend)
        });
        Box::pin(async move { take.await.map_err(PauseError::from) })
    }

    fn get_pause<'a>(&'a self, key: &'a str) -> PauseFuture<'a, Option<String>> {
        let key = key.to_string();
        let get = self.with(move |c| {
            c.prepare_cached("SELECT state FROM e2a_pauses WHERE key = ?1")
                .map_err(backend)?
                .query_row(params![key], |r| r.get::<_, String>(0))
                .optional()
                .map_err(backend)
        });
        Box::pin(async move { get.await.map_err(PauseError::from) })
    }

    fn keep_first_pause<'a>(&'a self, key: &'a str, state: String) -> PauseFuture<'a, Option<String>> {
        let key = key.to_string();
        // one write transaction: the read and the insert cannot be split by another writer
        let keep = self.write(move |tx| {
            let first = tx
                .prepare_cached("SELECT state FROM e2a_pauses WHERE key = ?1")
                .map_err(backend)?
                .query_row(params![key], |r| r.get::<_, String>(0))
                .optional()
                .map_err(backend)?;
            if first.is_none() {
                tx.prepare_cached("INSERT INTO e2a_pauses (key, state, at_ms) VALUES (?1, ?2, ?3)")
                    .map_err(backend)?
                    .execute(params![key, state, crate::store::now_ms()])
                    .map_err(backend)?;
            }
            Ok(first)
        });
        Box::pin(async move { keep.await.map_err(PauseError::from) })
    }
}

impl PauseStore for SqliteStore {
    fn pauses_with_prefix<'a>(&'a self, prefix: &'a str, limit: usize) -> StoreFuture<'a, Vec<(String, String)>> {
        let prefix = prefix.to_string();
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        Box::pin(self.with(move |c| {
            let mut stmt = c
                .prepare_cached(
                    "SELECT key, state FROM e2a_pauses WHERE substr(key, 1, length(?1)) = ?1 ORDER BY key LIMIT ?2",
                )
                .map_err(backend)?;
            let rows = stmt
                .query_map(params![prefix, limit], |r| {
                    Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
                })
                .map_err(backend)?;
            rows.collect::<Result<Vec<_>, _>>().map_err(backend)
        }))
    }

    fn prune_pauses(&self, older_than: Duration) -> StoreFuture<'_, u64> {
        Box::pin(self.write(move |tx| {
            let before = crate::store::now_ms().saturating_sub(crate::store::millis(older_than));
            let n = tx
                .prepare_cached("DELETE FROM e2a_pauses WHERE at_ms < ?1")
                .map_err(backend)?
                .execute(params![before])
                .map_err(backend)?;
            Ok(n as u64)
        }))
    }
}
