//! The PostgreSQL server the tests use (`E2A_TEST_POSTGRES_URL`), and a fresh database on it
//! per test. Shared by the gateway's tests and the binary's (`cli/tests`).
#![allow(dead_code)]

/// The server's URL, or `None` (the test is skipped) when none is configured.
pub fn postgres() -> Option<String> {
    match std::env::var("E2A_TEST_POSTGRES_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            assert!(
                std::env::var_os("E2A_REQUIRE_POSTGRES").is_none(),
                "E2A_REQUIRE_POSTGRES is set but E2A_TEST_POSTGRES_URL is not"
            );
            eprintln!("skipped: no E2A_TEST_POSTGRES_URL (see gateway/tests/postgres/start.sh)");
            None
        }
    }
}

/// A new, empty database on the server of `url`; its URL.
pub async fn fresh_database(url: &str) -> String {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .expect("connect to the test server");
    tokio::spawn(connection);
    let name = format!("e2a_test_{}", uuid::Uuid::new_v4().simple());
    client
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .await
        .expect("create database");
    let (base, _) = url.rsplit_once('/').expect("a URL with a database");
    format!("{base}/{name}")
}
