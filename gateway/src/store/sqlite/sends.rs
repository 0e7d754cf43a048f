//! What callers sent, in the SQLite store (`a2a_sent`).

use rusqlite::{params, Connection, OptionalExtension};

use super::{backend, SqliteStore};
use crate::store::{Sends, SentRecord, StoreError, StoreFuture};

impl Sends for SqliteStore {
    fn remember_send(&self, record: SentRecord) -> StoreFuture<'_, Option<SentRecord>> {
        Box::pin(self.write(move |tx| {
            let added = tx
                .prepare_cached(
                    "INSERT INTO a2a_sent (owner, key, fingerprint, task_id, at_ms) VALUES (?1, ?2, ?3, ?4, ?5)
                     ON CONFLICT (owner, key) DO NOTHING",
                )
                .map_err(backend)?
                .execute(params![
                    record.owner,
                    record.key,
                    record.fingerprint,
                    record.task_id,
                    record.at_ms
                ])
                .map_err(backend)?;
            if added == 1 {
                return Ok(None);
            }
            sent_record(tx, &record.owner, &record.key)
        }))
    }

    fn find_send<'a>(&'a self, owner: &'a str, key: &'a str) -> StoreFuture<'a, Option<SentRecord>> {
        let (owner, key) = (owner.to_string(), key.to_string());
        Box::pin(self.with(move |c| sent_record(c, &owner, &key)))
    }
}

/// The record of what `owner` sent as `key`.
fn sent_record(c: &Connection, owner: &str, key: &str) -> Result<Option<SentRecord>, StoreError> {
    c.query_row(
        "SELECT fingerprint, task_id, at_ms FROM a2a_sent WHERE owner = ?1 AND key = ?2",
        params![owner, key],
        |r| {
            Ok(SentRecord {
                owner: owner.to_string(),
                key: key.to_string(),
                fingerprint: r.get(0)?,
                task_id: r.get(1)?,
                at_ms: r.get(2)?,
            })
        },
    )
    .optional()
    .map_err(backend)
}
