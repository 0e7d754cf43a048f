//! The store's checkpointer: a thread with a connection of its own that copies the WAL's
//! committed pages back into the database file every [`EVERY`], and syncs it, off the writer.
//!
//! The writer still checkpoints when the WAL passes its bound (`wal_autocheckpoint`), which is
//! what lets the WAL start over from its beginning; by then this thread has copied and synced
//! nearly all of it, so the writer's checkpoint copies little and waits little for the disk.
//! (Alone, the writer's checkpoint copied 32 MiB and waited for the disk to take them while
//! every write queued behind it: about a tenth of a busy gateway's time, idle.) Its checkpoints
//! are `PASSIVE`: they never wait for the writer or a reader, and skip what they cannot copy
//! yet.

use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use rusqlite::Connection;

use super::backend;
use crate::store::StoreError;

/// How often the checkpointer copies what the WAL holds: often, so that what is left for the
/// writer's checkpoint is little (every 100 ms left the writer waiting about twice as long as
/// every 25 ms; a checkpoint with nothing new to copy does nothing, an idle store no I/O).
pub(super) const EVERY: Duration = Duration::from_millis(25);

/// The checkpointer of a store's file: it stops when this is dropped (with the last clone of
/// its store).
#[derive(Debug, Clone)]
pub(super) struct Checkpointer {
    _stop: mpsc::Sender<()>,
}

/// Starts the checkpointer of the SQLite file at `path` (in WAL mode).
pub(super) fn start(path: &Path) -> Result<Checkpointer, StoreError> {
    let conn = Connection::open(path).map_err(|e| StoreError::Backend(format!("{}: {e}", path.display())))?;
    conn.busy_timeout(Duration::from_secs(5)).map_err(backend)?;
    let (stop, stopped) = mpsc::channel::<()>();
    std::thread::Builder::new()
        .name("e2a-sqlite-checkpoint".into())
        .spawn(move || {
            while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(EVERY) {
                if let Err(e) = checkpoint(&conn) {
                    tracing::debug!(error = %e, "task store: a checkpoint failed (the writer's goes on)");
                }
            }
        })
        .map_err(backend)?;
    Ok(Checkpointer { _stop: stop })
}

/// One `PASSIVE` checkpoint: the WAL's frames and how many of them are in the database now.
fn checkpoint(conn: &Connection) -> Result<(i64, i64), StoreError> {
    conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| Ok((r.get(1)?, r.get(2)?)))
        .map_err(backend)
}

#[cfg(test)]
mod tests {
    use super::super::{backend, SqliteStore};

    /// What the writer commits reaches the database file without the writer checkpointing:
    /// 4 MiB, far under the writer's own bound (32 MiB of WAL), are in the file soon (within
    /// ten seconds, for a busy test machine; a few of the checkpointer's periods when idle).
    #[tokio::test]
    async fn a_files_wal_is_copied_into_it_off_the_writer() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("tasks.db");
        let store = SqliteStore::open(&path).expect("open");
        store
            .write(|tx| {
                tx.execute_batch("CREATE TABLE IF NOT EXISTS blobs (b BLOB NOT NULL)")
                    .map_err(backend)?;
                for _ in 0..64 {
                    tx.execute("INSERT INTO blobs VALUES (zeroblob(65536))", [])
                        .map_err(backend)?;
                }
                Ok(())
            })
            .await
            .expect("written");
        let in_file = || std::fs::metadata(&path).map_or(0, |m| m.len());
        for _ in 0..400 {
            if in_file() >= 4 << 20 {
                return;
            }
            tokio::time::sleep(super::EVERY).await;
        }
        panic!(
            "the database file holds {} bytes: the WAL was not copied into it",
            in_file()
        );
    }
}
