//! The task stores as an operator names them (`--store`, a config file): `memory`,
//! `sqlite:PATH`, `postgres://USER@HOST/DB` (or `postgresql://…`, `postgres:URL`).
//! [`StoreSpec`] parses the name and opens the store.
//!
//! ```
//! use e2a_gateway::store::StoreSpec;
//! assert_eq!("sqlite:tasks.db".parse(), Ok(StoreSpec::Sqlite("tasks.db".into())));
//! let pg: StoreSpec = "postgres://e2a:s3cret@db/e2a".parse().unwrap();
//! assert!(!format!("{pg:?}").contains("s3cret"));
//! ```

use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;

use super::{MemoryStore, PgOptions, PgStore, SqliteStore, Stores};

/// A task store by name.
#[derive(Clone, PartialEq, Eq)]
pub enum StoreSpec {
    /// `memory`: [`MemoryStore`] (lost when the process ends).
    Memory,
    /// `sqlite:PATH`: [`SqliteStore`], one file.
    Sqlite(PathBuf),
    /// A PostgreSQL URL: [`PgStore`], shared by every gateway pointed at it. `Debug` never
    /// shows the URL's password.
    Postgres(String),
}

impl std::fmt::Debug for StoreSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreSpec::Memory => f.write_str("Memory"),
            StoreSpec::Sqlite(p) => f.debug_tuple("Sqlite").field(p).finish(),
            StoreSpec::Postgres(url) => {
                // user:password@host → user:[REDACTED]@host
                let shown = match (url.split_once("://"), url.rfind('@')) {
                    (Some((scheme, rest)), Some(at)) if rest.contains(':') && at > scheme.len() => {
                        let auth = &url[scheme.len() + 3..at];
                        let user = auth.split(':').next().unwrap_or("");
                        format!("{scheme}://{user}:[REDACTED]{}", &url[at..])
                    }
                    _ => url.clone(),
                };
                f.debug_tuple("Postgres").field(&shown).finish()
            }
        }
    }
}

/// A name that is none of the stores (the name itself is not repeated: it may hold a
/// password).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown store: use memory, sqlite:PATH or postgres://USER@HOST/DB")]
pub struct UnknownStore;

impl FromStr for StoreSpec {
    type Err = UnknownStore;

    fn from_str(spec: &str) -> Result<Self, UnknownStore> {
        if spec == "memory" {
            return Ok(StoreSpec::Memory);
        }
        if let Some(path) = spec.strip_prefix("sqlite:").filter(|p| !p.is_empty()) {
            return Ok(StoreSpec::Sqlite(path.into()));
        }
        if spec.starts_with("postgres://") || spec.starts_with("postgresql://") {
            return Ok(StoreSpec::Postgres(spec.into()));
        }
        match spec.strip_prefix("postgres:").filter(|u| !u.is_empty()) {
            Some(url) => Ok(StoreSpec::Postgres(url.into())),
            None => Err(UnknownStore),
        }
    }
}

impl StoreSpec {
    /// Opens the store (`postgres` with `options`: pool size, CA file); the error says why in
    /// words that never hold the password.
    pub async fn open(&self, options: PgOptions) -> Result<Stores, String> {
        Ok(match self {
            StoreSpec::Memory => Arc::new(MemoryStore::new()).into(),
            StoreSpec::Sqlite(path) => Arc::new(SqliteStore::open(path).map_err(|e| e.to_string())?).into(),
            StoreSpec::Postgres(url) => {
                Arc::new(PgStore::connect(url, options).await.map_err(|e| e.to_string())?).into()
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_and_refuse() {
        assert_eq!("memory".parse(), Ok(StoreSpec::Memory));
        assert_eq!(
            "postgresql://h/db".parse(),
            Ok(StoreSpec::Postgres("postgresql://h/db".into()))
        );
        assert_eq!(
            "postgres:postgres://h/db".parse(),
            Ok(StoreSpec::Postgres("postgres://h/db".into()))
        );
        for bad in ["", "sqlite:", "mysql://h", "postgres:"] {
            assert_eq!(bad.parse::<StoreSpec>(), Err(UnknownStore), "{bad}");
        }
        let shown = format!(
            "{:?}",
            StoreSpec::Postgres("postgres://u:pw@h:5432/db?sslmode=require".into())
        );
        assert_eq!(
            shown,
            r#"Postgres("postgres://u:[REDACTED]@h:5432/db?sslmode=require")"#
        );
    }
}
