//! The journal ([`crate::store::journal`]) in the PostgreSQL store: the statements the task log
//! and the run logs share, and the migration that made it. Lease times are on the database
//! server's clock ([`NOW_MS`]).

use std::time::Duration;

use super::{backend, millis, seq_u64, PgStore, NOW_MS};
use crate::store::journal::{before, Kind};
pub(super) use crate::store::journal::{forget, leased};
use crate::store::StoreError;

/// The migration from the two logs (tasks' events, runs' frames) and the two kinds of lease
/// (`a2a_leases`, the runs' own columns) to the journal, data kept.
pub(super) fn migration() -> String {
    format!(
        "
CREATE TABLE e2a_journal (
    kind SMALLINT NOT NULL,
    stream TEXT NOT NULL,
    seq BIGINT NOT NULL,
    entry TEXT NOT NULL,
    PRIMARY KEY (kind, stream, seq)
);
CREATE TABLE e2a_leases (
    kind SMALLINT NOT NULL,
    stream TEXT NOT NULL,
    holder TEXT NOT NULL,
    until_ms BIGINT NOT NULL,
    PRIMARY KEY (kind, stream)
);
{};
{};
{};
{};
DROP TABLE a2a_task_events;
DROP TABLE e2a_run_frames;
DROP TABLE a2a_leases;
ALTER TABLE e2a_runs DROP COLUMN holder, DROP COLUMN until_ms;
",
        before::task_events(),
        before::run_frames(),
        before::task_leases(),
        before::run_leases()
    )
}

/// The `(seq, entry)` of stream `stream` of `kind` after `after`, in order.
pub(super) async fn after(
    store: &PgStore,
    kind: Kind,
    stream: &str,
    after: i64,
) -> Result<Vec<(u64, String)>, StoreError> {
    let sql = format!(
        "SELECT seq, entry FROM e2a_journal WHERE kind = {} AND stream = $1 AND seq > $2 ORDER BY seq",
        kind.code()
    );
    let rows = store.rows(&sql, &[&stream, &after]).await?;
    rows.iter()
        .map(|r| {
            let seq: i64 = r.try_get(0).map_err(backend)?;
            Ok((seq_u64(seq), r.try_get(1).map_err(backend)?))
        })
        .collect()
}

/// Writes the lease of stream `$1` of `kind`: `$2` holds it for `$3` ms from now, whoever held
/// it before (a statement to refine with a condition on the lease held, `l`).
pub(super) fn lease_upsert(kind: Kind) -> String {
    format!(
        "INSERT INTO e2a_leases AS l (kind, stream, holder, until_ms) VALUES ({}, $1, $2, {NOW_MS} + $3)
         ON CONFLICT (kind, stream) DO UPDATE SET holder = EXCLUDED.holder, until_ms = EXCLUDED.until_ms",
        kind.code()
    )
}

/// Extends to `$3` ms from now the leases `$1` holds of the streams of `kind` whose id is
/// `which` (an SQL condition on the column `stream`).
pub(super) fn lease_renewal(kind: Kind, which: &str) -> String {
    format!(
        "UPDATE e2a_leases SET until_ms = {NOW_MS} + $3 WHERE kind = {} AND holder = $1 AND stream {which}",
        kind.code()
    )
}

impl PgStore {
    /// Takes (or renews) the lease of stream `stream` of `kind` for `holder`, unless another
    /// holder's is still valid; whether `holder` holds it now.
    pub(super) async fn take_lease(
        &self,
        kind: Kind,
        stream: &str,
        holder: &str,
        lease: Duration,
    ) -> Result<bool, StoreError> {
        let sql = format!(
            "{} WHERE l.holder = EXCLUDED.holder OR l.until_ms < {NOW_MS} RETURNING holder",
            lease_upsert(kind)
        );
        Ok(!self.rows(&sql, &[&stream, &holder, &millis(lease)]).await?.is_empty())
    }

    /// Extends `holder`'s leases of the streams `ids` of `kind`; the ids it holds no longer.
    pub(super) async fn renew_leases(
        &self,
        kind: Kind,
        holder: &str,
        ids: Vec<String>,
        lease: Duration,
    ) -> Result<Vec<String>, StoreError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let sql = format!("{} RETURNING stream", lease_renewal(kind, "= ANY($2)"));
        let rows = self.rows(&sql, &[&holder, &ids, &millis(lease)]).await?;
        let kept: std::collections::HashSet<String> = rows.iter().filter_map(|r| r.try_get(0).ok()).collect();
        Ok(ids.into_iter().filter(|id| !kept.contains(id)).collect())
    }

    /// Gives up `holder`'s lease of stream `stream` of `kind`.
    pub(super) async fn drop_lease(&self, kind: Kind, stream: &str, holder: &str) -> Result<(), StoreError> {
        let sql = format!(
            "DELETE FROM e2a_leases WHERE kind = {} AND stream = $1 AND holder = $2",
            kind.code()
        );
        self.rows(&sql, &[&stream, &holder]).await.map(drop)
    }
}
