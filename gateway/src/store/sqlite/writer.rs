//! The store's one writer: a thread that takes every write waiting, runs each in a savepoint of
//! one transaction and commits them together (group commit). Under load one commit carries
//! many appends, and no write pays for a thread hand-off of its own; a write that fails rolls
//! back alone.

use std::sync::mpsc;
use std::sync::Arc;

use parking_lot::Mutex;
use rusqlite::Connection;
use tokio::sync::oneshot;

use super::backend;
use crate::store::StoreError;

/// Most writes committed together.
const BATCH: usize = 256;

/// A write: runs on the connection (inside its savepoint) and says whether it succeeded; then
/// `finish` is told whether the transaction committed.
pub(super) struct Job {
    run: Box<dyn FnOnce(&Connection) -> Done + Send>,
}

/// Tells a write the transaction's outcome (`Some(error)` when it did not commit).
type Finish = Box<dyn FnOnce(Option<&str>) + Send>;

struct Done {
    ok: bool,
    finish: Finish,
}

impl Job {
    /// The job running `f`, and where its result arrives once it is committed.
    pub(super) fn new<T, F>(f: F) -> (Job, oneshot::Receiver<Result<T, StoreError>>)
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let (tx, rx) = oneshot::channel();
        let run = Box::new(move |c: &Connection| {
            let result = f(c);
            Done {
                ok: result.is_ok(),
                finish: Box::new(move |commit_error: Option<&str>| {
                    let result = match (commit_error, result) {
                        (Some(e), Ok(_)) => Err(StoreError::Backend(e.to_string())),
                        (_, r) => r,
                    };
                    let _ = tx.send(result);
                }),
            }
        });
        (Job { run }, rx)
    }
}

/// Starts the writer thread of `conn`; it ends when every sender is dropped.
pub(super) fn start(conn: Arc<Mutex<Connection>>) -> Result<mpsc::Sender<Job>, StoreError> {
    let (tx, rx) = mpsc::channel::<Job>();
    std::thread::Builder::new()
        .name("e2a-sqlite-writer".into())
        .spawn(move || {
            while let Ok(first) = rx.recv() {
                let mut batch = vec![first];
                while batch.len() < BATCH {
                    match rx.try_recv() {
                        Ok(job) => batch.push(job),
                        Err(_) => break,
                    }
                }
                commit(&conn, batch);
            }
        })
        .map_err(backend)?;
    Ok(tx)
}

/// Runs `batch` in one transaction, each job in its own savepoint, and tells each the outcome.
fn commit(conn: &Mutex<Connection>, batch: Vec<Job>) {
    let mut c = conn.lock();
    let mut tx = match c.transaction() {
        Ok(tx) => tx,
        Err(e) => {
            // dropping the jobs tells their callers that the write failed
            tracing::error!(error = %e, writes = batch.len(), "task store: cannot begin a transaction");
            return;
        }
    };
    let mut finished = Vec::with_capacity(batch.len());
    for job in batch {
        let done = match tx.savepoint() {
            Ok(sp) => {
                let done = (job.run)(&sp);
                if done.ok {
                    if let Err(e) = sp.commit() {
                        tracing::error!(error = %e, "task store: cannot release a savepoint");
                    }
                }
                done
            }
            Err(e) => {
                tracing::error!(error = %e, "task store: cannot open a savepoint");
                continue;
            }
        };
        finished.push(done.finish);
    }
    let committed = tx.commit().err().map(|e| e.to_string());
    for finish in finished {
        finish(committed.as_deref());
    }
}
