//! The store's one writer: a thread that takes every write waiting and commits them in one
//! transaction (group commit). Under load one commit carries many appends, and no write pays
//! for a thread hand-off or a commit of its own.
//!
//! A write that fails must not take the others with it, and must leave nothing behind. Writes
//! are plain functions of what they write (`Fn`), so the writer needs no savepoint per write
//! (each one copies the pages it touches into a statement journal): when one fails, the whole
//! transaction is rolled back and each write of the batch runs again in a transaction of its
//! own, so that only the failing one fails.

use std::sync::mpsc;
use std::sync::Arc;

use parking_lot::Mutex;
use rusqlite::Connection;
use tokio::sync::oneshot;

use super::backend;
use crate::store::StoreError;

/// Most writes committed together.
const BATCH: usize = 256;

/// How often the writer, finding the queue empty, lets the threads that make writes run before
/// it commits what it has. On a machine with fewer free cores than busy threads the writer
/// otherwise wakes for each write and commits it alone; with a core of its own a yield returns
/// at once.
const YIELDS: u32 = 2;

/// A write: runs on the connection inside the batch's transaction (possibly twice, see the
/// module), then is told the outcome.
pub(super) struct Job(Box<dyn Write>);

/// What the writer does with a job: run its statements (keeping their value), then hand the
/// kept value, or the error, to whoever waits for it.
trait Write: Send {
    fn run(&self, c: &Connection) -> Result<(), StoreError>;
    fn finish(self: Box<Self>, outcome: Result<(), StoreError>);
}

/// A write of `f`, whose value goes to `tx` once its transaction committed.
struct Pending<T, F> {
    f: F,
    /// The value of the last run: the one that counts if the transaction commits.
    value: Mutex<Option<T>>,
    tx: oneshot::Sender<Result<T, StoreError>>,
}

impl<T, F> Write for Pending<T, F>
where
    T: Send,
    F: Fn(&Connection) -> Result<T, StoreError> + Send,
{
    fn run(&self, c: &Connection) -> Result<(), StoreError> {
        let v = (self.f)(c)?;
        *self.value.lock() = Some(v);
        Ok(())
    }

    fn finish(self: Box<Self>, outcome: Result<(), StoreError>) {
        let Pending { value, tx, .. } = *self;
        let result = outcome.and_then(|()| {
            value
                .into_inner()
                .ok_or_else(|| StoreError::Backend("the task store lost a write's result".into()))
        });
        let _ = tx.send(result);
    }
}

impl Job {
    /// The job running `f`, and where its result arrives once it is committed.
    pub(super) fn new<T, F>(f: F) -> (Job, oneshot::Receiver<Result<T, StoreError>>)
    where
        T: Send + 'static,
        F: Fn(&Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let (tx, rx) = oneshot::channel();
        let pending = Pending {
            f,
            value: Mutex::new(None),
            tx,
        };
        (Job(Box::new(pending)), rx)
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
                let mut yields = 0;
                while batch.len() < BATCH {
                    match rx.try_recv() {
                        Ok(job) => batch.push(job),
                        Err(mpsc::TryRecvError::Empty) if yields < YIELDS => {
                            yields += 1;
                            std::thread::yield_now();
                        }
                        Err(_) => break,
                    }
                }
                commit(&mut conn.lock(), batch);
            }
        })
        .map_err(backend)?;
    Ok(tx)
}

/// Runs `batch` in one transaction and tells each job the outcome; if a job fails, the
/// transaction is rolled back and every job runs again alone.
fn commit(c: &mut Connection, batch: Vec<Job>) {
    if batch.len() > 1 {
        match together(c, &batch) {
            Ok(()) => {
                for job in batch {
                    job.0.finish(Ok(()));
                }
                return;
            }
            Err(e) => tracing::debug!(error = %e, writes = batch.len(), "task store: a batch failed, writing alone"),
        }
    }
    for job in batch {
        let outcome = together(c, std::slice::from_ref(&job));
        job.0.finish(outcome);
    }
}

/// Runs `jobs` in one transaction: committed if every one succeeds, else rolled back (dropping
/// the transaction) with the first error. The transaction takes the write lock when it begins
/// (`IMMEDIATE`): with another process writing the file (two `e2a acp` sharing their sessions'
/// file), it waits for the lock under the busy timeout — a deferred one that read first would
/// fail at its first write with "database is locked" instead.
fn together(c: &mut Connection, jobs: &[Job]) -> Result<(), StoreError> {
    let tx = c
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .map_err(backend)?;
    for job in jobs {
        job.0.run(&tx)?;
    }
    tx.commit().map_err(backend)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A write that inserts `n` into table `t`, then fails when `n` is odd: what it inserted
    /// must not stay.
    fn insert(n: i64) -> (Job, oneshot::Receiver<Result<i64, StoreError>>) {
        Job::new(move |c: &Connection| {
            c.execute("INSERT INTO t (n) VALUES (?1)", [n]).map_err(backend)?;
            if n % 2 == 1 {
                return Err(StoreError::Backend(format!("{n} is odd")));
            }
            Ok(n)
        })
    }

    #[test]
    fn a_failing_write_fails_alone_and_leaves_nothing() {
        let mut c = Connection::open_in_memory().expect("open");
        c.execute_batch("CREATE TABLE t (n INTEGER NOT NULL)").expect("table");
        let (jobs, mut results): (Vec<_>, Vec<_>) = (0..6).map(insert).unzip();
        commit(&mut c, jobs);
        let outcomes: Vec<_> = results
            .iter_mut()
            .map(|rx| rx.try_recv().expect("told").map_err(|e| e.to_string()))
            .collect();
        assert_eq!(outcomes[0], Ok(0));
        assert_eq!(outcomes[1], Err("task store: 1 is odd".into()));
        assert_eq!(outcomes[4], Ok(4));
        let mut stored: Vec<i64> = Vec::new();
        let mut stmt = c.prepare("SELECT n FROM t ORDER BY n").expect("query");
        for n in stmt.query_map([], |r| r.get(0)).expect("rows") {
            stored.push(n.expect("row"));
        }
        assert_eq!(stored, vec![0, 2, 4]);
    }

    #[test]
    fn writes_of_one_batch_see_each_other() {
        let mut c = Connection::open_in_memory().expect("open");
        c.execute_batch("CREATE TABLE t (n INTEGER NOT NULL)").expect("table");
        let count = |c: &Connection| {
            c.query_row("SELECT COUNT(*) FROM t", [], |r| r.get::<_, i64>(0))
                .map_err(backend)
        };
        let (a, _ra) = insert(2);
        let (b, rb) = Job::new(count);
        commit(&mut c, vec![a, b]);
        let mut rb = rb;
        assert_eq!(rb.try_recv().expect("told").map_err(|e| e.to_string()), Ok(1));
    }
}
