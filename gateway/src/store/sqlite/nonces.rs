//! The nonces of signed requests in the SQLite store (`goai_nonces`).

use std::time::Duration;

use rusqlite::params;

use super::{backend, SqliteStore};
use crate::store::Nonces;
use crate::web::hmac::NonceFuture;

impl Nonces for SqliteStore {
    fn remember_nonce<'a>(&'a self, agent: &'a str, nonce: &'a str, ttl: Duration) -> NonceFuture<'a> {
        let (agent, nonce) = (agent.to_string(), nonce.to_string());
        let write = self.write(move |tx| {
            let now = crate::store::now_ms();
            tx.prepare_cached("DELETE FROM goai_nonces WHERE until_ms <= ?1")
                .map_err(backend)?
                .execute(params![now])
                .map_err(backend)?;
            let added = tx
                .prepare_cached("INSERT OR IGNORE INTO goai_nonces (agent, nonce, until_ms) VALUES (?1, ?2, ?3)")
                .map_err(backend)?
                .execute(params![agent, nonce, now.saturating_add(crate::store::millis(ttl))])
                .map_err(backend)?;
            Ok(added == 1)
        });
        Box::pin(async move { Ok(write.await?) })
    }
}
