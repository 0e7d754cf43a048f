//! Connecting: the TLS connector, the name logs use, and the schema's migrations.

use std::sync::Arc;

use deadpool_postgres::Pool;
use tokio_postgres_rustls::MakeRustlsConnect;

use super::{backend, pg_error, PgOptions};
use crate::store::StoreError;

/// The advisory lock key migrations run under (`e2a` in ASCII).
const MIGRATION_LOCK: i64 = 0x0065_3261;

/// The schema up to version 6, one entry per version; see [`migrations`].
const MIGRATIONS: &[&str] = &[
    "
CREATE TABLE a2a_tasks (
    id TEXT PRIMARY KEY,
    context_id TEXT NOT NULL,
    owner TEXT,
    state TEXT NOT NULL,
    task TEXT NOT NULL,
    last_seq BIGINT NOT NULL,
    snapshot_seq BIGINT NOT NULL,
    created_ms BIGINT NOT NULL,
    updated_ms BIGINT NOT NULL
);
CREATE INDEX a2a_tasks_owner_updated ON a2a_tasks (owner, updated_ms);
CREATE INDEX a2a_tasks_context ON a2a_tasks (context_id);
CREATE INDEX a2a_tasks_state ON a2a_tasks (state);
CREATE TABLE a2a_task_events (
    task_id TEXT NOT NULL,
    seq BIGINT NOT NULL,
    event TEXT NOT NULL,
    PRIMARY KEY (task_id, seq)
);
CREATE TABLE a2a_leases (
    task_id TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    until_ms BIGINT NOT NULL
);
",
    "
CREATE TABLE e2a_runs (
    key TEXT PRIMARY KEY,
    run TEXT NOT NULL,
    request TEXT NOT NULL,
    holder TEXT NOT NULL,
    until_ms BIGINT NOT NULL,
    ended BOOLEAN NOT NULL DEFAULT FALSE,
    updated_ms BIGINT NOT NULL
);
CREATE INDEX e2a_runs_updated ON e2a_runs (updated_ms);
CREATE TABLE e2a_run_frames (
    run TEXT NOT NULL,
    seq BIGINT NOT NULL,
    frame TEXT NOT NULL,
    PRIMARY KEY (run, seq)
);
",
    "
CREATE TABLE a2a_sent (
    owner TEXT NOT NULL,
    key TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    task_id TEXT NOT NULL,
    at_ms BIGINT NOT NULL,
    PRIMARY KEY (owner, key)
);
CREATE INDEX a2a_sent_at ON a2a_sent (at_ms);
",
    "
CREATE TABLE a2a_push (
    task_id TEXT NOT NULL,
    id TEXT NOT NULL,
    config TEXT NOT NULL,
    created_ms BIGINT NOT NULL,
    delivered_seq BIGINT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_ms BIGINT NOT NULL DEFAULT 0,
    error TEXT,
    holder TEXT,
    claim_until_ms BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (task_id, id)
);
CREATE TABLE a2a_push_failures (
    n BIGSERIAL PRIMARY KEY,
    task_id TEXT NOT NULL,
    config_id TEXT NOT NULL,
    seq BIGINT NOT NULL,
    attempts INTEGER NOT NULL,
    error TEXT NOT NULL,
    at_ms BIGINT NOT NULL
);
CREATE INDEX a2a_push_failures_at ON a2a_push_failures (at_ms);
",
    "
CREATE TABLE e2a_pauses (
    key TEXT PRIMARY KEY,
    state TEXT NOT NULL,
    at_ms BIGINT NOT NULL
);
CREATE INDEX e2a_pauses_at ON e2a_pauses (at_ms);
",
    "
CREATE TABLE goai_nonces (
    agent TEXT NOT NULL,
    nonce TEXT NOT NULL,
    until_ms BIGINT NOT NULL,
    PRIMARY KEY (agent, nonce)
);
CREATE INDEX goai_nonces_until ON goai_nonces (until_ms);
",
];

/// The schema, one entry per version; a database at version `n` gets the entries after `n`.
/// Version 7 is the journal (its SQL reads the journal's stream kinds).
fn migrations() -> Vec<String> {
    let mut all: Vec<String> = MIGRATIONS.iter().map(|m| m.to_string()).collect();
    all.push(super::journal::migration());
    all
}

/// `host:port/dbname` of a configuration: what logs say, without user or password.
pub(super) fn describe(config: &tokio_postgres::Config) -> String {
    let host = config
        .get_hosts()
        .first()
        .map(|h| match h {
            tokio_postgres::config::Host::Tcp(h) => h.clone(),
            #[cfg(unix)]
            tokio_postgres::config::Host::Unix(p) => p.display().to_string(),
        })
        .unwrap_or_else(|| "localhost".into());
    let port = config.get_ports().first().copied().unwrap_or(5432);
    format!("postgres://{host}:{port}/{}", config.get_dbname().unwrap_or(""))
}

/// The TLS connector: rustls, the Mozilla roots and the certificates of `options.ca_file`.
pub(super) fn tls(options: &PgOptions) -> Result<MakeRustlsConnect, StoreError> {
    use rustls_pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    if let Some(file) = &options.ca_file {
        let bad = |e: &dyn std::fmt::Display| StoreError::Backend(format!("CA file {}: {e}", file.display()));
        let mut added = 0;
        for cert in rustls_pki_types::CertificateDer::pem_file_iter(file).map_err(|e| bad(&e))? {
            roots.add(cert.map_err(|e| bad(&e))?).map_err(|e| bad(&e))?;
            added += 1;
        }
        if added == 0 {
            return Err(bad(&"no certificate in it"));
        }
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(backend)?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(MakeRustlsConnect::new(config))
}

/// Brings the schema up to date (one transaction, under the advisory lock).
pub(super) async fn migrate(pool: &Pool) -> Result<(), StoreError> {
    let mut client = pool.get().await.map_err(|e| pg_error(&e))?;
    let tx = client.transaction().await.map_err(|e| pg_error(&e))?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await
        .map_err(|e| pg_error(&e))?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS e2a_migrations (version INTEGER PRIMARY KEY, applied_ms BIGINT NOT NULL)",
    )
    .await
    .map_err(|e| pg_error(&e))?;
    let row = tx
        .query_one("SELECT COALESCE(MAX(version), 0) FROM e2a_migrations", &[])
        .await
        .map_err(|e| pg_error(&e))?;
    let current: i32 = row.get(0);
    let migrations = migrations();
    let known = i32::try_from(migrations.len()).unwrap_or(i32::MAX);
    if current > known {
        return Err(StoreError::Backend(format!(
            "the database schema is at version {current}, newer than this gateway knows ({known}); upgrade the gateway"
        )));
    }
    for (version, sql) in (1..).zip(&migrations).skip(usize::try_from(current).unwrap_or(0)) {
        tx.batch_execute(sql).await.map_err(|e| pg_error(&e))?;
        tx.execute(
            "INSERT INTO e2a_migrations (version, applied_ms) VALUES ($1, $2)",
            &[&version, &crate::store::now_ms()],
        )
        .await
        .map_err(|e| pg_error(&e))?;
        tracing::info!(version, "task store: migration applied");
    }
    tx.commit().await.map_err(|e| pg_error(&e))
}
