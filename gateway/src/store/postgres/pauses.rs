//! Pauses in the PostgreSQL store (`e2a_pauses`): one pause, answered on any gateway of the
//! database, is taken by one of them only — and the nonces of signed requests
//! (`goai_nonces`): one nonce is accepted by one of them only. Times are on the database
//! server's clock.

use std::time::Duration;

use super::{millis, pg_error, PgStore, NOW_MS};
use crate::agent::{PauseError, PauseFuture, PauseKeeper};
use crate::store::{Nonces, PauseStore, StoreError, StoreFuture};
use crate::web::hmac::NonceError;

impl PgStore {
    async fn one_state(&self, sql: &str, key: &str) -> Result<Option<String>, PauseError> {
        let client = self.client().await.map_err(PauseError::from)?;
        let row = client
            .query_opt(sql, &[&key])
            .await
            .map_err(|e| PauseError::from(pg_error(&e)))?;
        row.map(|r| r.try_get::<_, String>(0).map_err(|e| PauseError::from(pg_error(&e))))
            .transpose()
    }

    async fn put_state(&self, key: &str, state: &str) -> Result<(), StoreError> {
        let client = self.client().await?;
        let sql = format!(
            "INSERT INTO e2a_pauses (key, state, at_ms) VALUES ($1, $2, {NOW_MS})
             ON CONFLICT (key) DO UPDATE SET state = EXCLUDED.state, at_ms = EXCLUDED.at_ms"
        );
        client.execute(&sql, &[&key, &state]).await.map_err(|e| pg_error(&e))?;
        Ok(())
    }
}

impl PauseKeeper for PgStore {
    fn put_pause<'a>(&'a self, key: &'a str, state: String) -> PauseFuture<'a, ()> {
        Box::pin(async move { self.put_state(key, &state).await.map_err(PauseError::from) })
    }

    fn take_pause<'a>(&'a self, key: &'a str) -> PauseFuture<'a, Option<String>> {
        Box::pin(self.one_state("DELETE FROM e2a_pauses WHERE key = $1 RETURNING state", key))
    }

    fn get_pause<'a>(&'a self, key: &'a str) -> PauseFuture<'a, Option<String>> {
        Box::pin(self.one_state("SELECT state FROM e2a_pauses WHERE key = $1", key))
    }

    fn keep_first_pause<'a>(&'a self, key: &'a str, state: String) -> PauseFuture<'a, Option<String>> {
        Box::pin(async move {
            let client = self.client().await.map_err(PauseError::from)?;
            // the insert wins, or waits for the other gateway's to commit and does nothing;
            // then the first state is read in a statement of its own (one that sees that commit)
            let sql = format!(
                "INSERT INTO e2a_pauses (key, state, at_ms) VALUES ($1, $2, {NOW_MS}) ON CONFLICT (key) DO NOTHING"
            );
            let kept = client
                .execute(&sql, &[&key, &state])
                .await
                .map_err(|e| PauseError::from(pg_error(&e)))?;
            if kept == 1 {
                return Ok(None);
            }
            self.one_state("SELECT state FROM e2a_pauses WHERE key = $1", key).await
        })
    }
}

impl PauseStore for PgStore {
    fn pauses_with_prefix<'a>(&'a self, prefix: &'a str, limit: usize) -> StoreFuture<'a, Vec<(String, String)>> {
        Box::pin(async move {
            let client = self.client().await?;
            let limit = i64::try_from(limit).unwrap_or(i64::MAX);
            let rows = client
                .query(
                    "SELECT key, state FROM e2a_pauses WHERE left(key, length($1)) = $1 ORDER BY key LIMIT $2",
                    &[&prefix, &limit],
                )
                .await
                .map_err(|e| pg_error(&e))?;
            rows.iter()
                .map(|r| {
                    Ok((
                        r.try_get::<_, String>(0).map_err(|e| pg_error(&e))?,
                        r.try_get::<_, String>(1).map_err(|e| pg_error(&e))?,
                    ))
                })
                .collect()
        })
    }

    fn prune_pauses(&self, older_than: Duration) -> StoreFuture<'_, u64> {
        Box::pin(async move {
            let client = self.client().await?;
            let sql = format!("DELETE FROM e2a_pauses WHERE at_ms < {NOW_MS} - $1");
            client
                .execute(&sql, &[&millis(older_than)])
                .await
                .map_err(|e| pg_error(&e))
        })
    }
}

impl Nonces for PgStore {
    fn remember_nonce<'a>(
        &'a self,
        agent: &'a str,
        nonce: &'a str,
        ttl: Duration,
    ) -> crate::web::hmac::NonceFuture<'a> {
        Box::pin(async move {
            let client = self.client().await.map_err(NonceError::from)?;
            let forget = format!("DELETE FROM goai_nonces WHERE until_ms <= {NOW_MS}");
            client
                .execute(&forget, &[])
                .await
                .map_err(|e| NonceError::from(pg_error(&e)))?;
            let add = format!(
                "INSERT INTO goai_nonces (agent, nonce, until_ms) VALUES ($1, $2, {NOW_MS} + $3)
                 ON CONFLICT (agent, nonce) DO NOTHING"
            );
            let added = client
                .execute(&add, &[&agent, &nonce, &millis(ttl)])
                .await
                .map_err(|e| NonceError::from(pg_error(&e)))?;
            Ok(added == 1)
        })
    }
}
