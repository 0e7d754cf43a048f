//! The journal: tasks' events and runs' frames (and, in SQLite, ACP sessions' history) in one
//! log with one table of leases — a task and a run of the same id kept apart — and a store
//! written before the journal upgraded with nothing lost: each test writes through the store,
//! moves what it wrote back into the layout of before (the tables as the previous release made
//! them), opens the store again and reads the same.

mod common;

use std::time::Duration;

use e2a_gateway::store::{
    FrameWrite, Leases, RunHead, RunStore, SessionRecord, SessionStore, SqliteStore, StoredFrame, TaskAppend, TaskLog,
    TaskRecord,
};
use serde_json::json;

fn record(id: &str, state: &str, at: i64) -> TaskRecord {
    TaskRecord {
        id: id.into(),
        context_id: "c1".into(),
        owner: Some("ann".into()),
        state: state.parse().expect("a task state"),
        task: serde_json::from_value(json!({"id": id, "contextId": "c1", "status": {"state": state}})).expect("a task"),
        last_seq: 0,
        snapshot_seq: 0,
        created_ms: 10,
        updated_ms: at,
    }
}

fn frames(run: &str, seqs: std::ops::Range<u64>, ends: bool) -> Vec<StoredFrame> {
    seqs.clone()
        .map(|seq| StoredFrame {
            seq,
            frame: json!({"run": run, "sequence": seq, "is_final": ends && seq + 1 == seqs.end}).to_string(),
            is_final: ends && seq + 1 == seqs.end,
        })
        .collect()
}

fn run(key: &str, run: &str, head: bool, frames: Vec<StoredFrame>) -> FrameWrite {
    FrameWrite {
        key: key.into(),
        run: run.into(),
        head: head.then(|| RunHead {
            request: json!({"request_id": key}).to_string(),
            holder: "gateway-a".into(),
            lease: Duration::from_secs(600),
        }),
        frames,
    }
}

/// Tasks `t1` (completed, three events) and `t2` (working, an event without a snapshot); runs
/// `k1` (open, two frames), `k2` (ended) and `k3`, whose run id is `t1`, the task's, with frames
/// numbered like the task's events.
async fn fill(store: &(impl TaskLog + RunStore)) {
    for (i, state) in ["TASK_STATE_SUBMITTED", "TASK_STATE_WORKING", "TASK_STATE_COMPLETED"]
        .iter()
        .enumerate()
    {
        let write = TaskAppend::new(record("t1", state, 20 + i as i64), &json!({"task-event": i}), true);
        store.append(write).await.expect("append t1");
    }
    let write = TaskAppend::new(
        record("t2", "TASK_STATE_WORKING", 30),
        &json!({"task-event": "t2"}),
        false,
    );
    store.append(write).await.expect("append t2");
    store
        .append_frames(run("k1", "r1", true, frames("r1", 0..1, false)))
        .await
        .expect("k1");
    store
        .append_frames(run("k1", "r1", false, frames("r1", 1..2, false)))
        .await
        .expect("k1 more");
    store
        .append_frames(run("k2", "r2", true, frames("r2", 0..3, true)))
        .await
        .expect("k2");
    store
        .append_frames(run("k3", "t1", true, frames("t1", 1..4, false)))
        .await
        .expect("k3");
}

/// What the store answers about everything [`fill`] wrote.
async fn read(store: &(impl TaskLog + RunStore)) -> serde_json::Value {
    let mut out = serde_json::Map::new();
    for id in ["t1", "t2"] {
        let rec = store.get(id).await.expect("get").expect("task kept");
        let events: Vec<_> = store
            .events_after(id, 0)
            .await
            .expect("events")
            .into_iter()
            .map(|e| (e.seq, e.event.to_string()))
            .collect();
        out.insert(
            id.into(),
            json!({"state": rec.state.as_str(), "last_seq": rec.last_seq, "snapshot_seq": rec.snapshot_seq,
                   "task": rec.task, "events": events}),
        );
    }
    for key in ["k1", "k2", "k3"] {
        let log = store.run_after(key, None).await.expect("run").expect("run kept");
        let frames: Vec<_> = log.frames.iter().map(|f| (f.seq, f.frame.clone())).collect();
        let summary = store.run_summary(key).await.expect("summary").expect("run kept");
        out.insert(
            key.into(),
            json!({"run": log.run, "request": log.request, "ended": log.ended, "leased": log.leased, "frames": frames,
                   "last": summary.last.map(|f| f.seq)}),
        );
    }
    serde_json::Value::Object(out)
}

/// What [`read`] must find, whichever way it was stored: the task and the run of one id apart.
fn check(read: &serde_json::Value) {
    assert_eq!(read["t1"]["events"].as_array().map(Vec::len), Some(3), "{read:#}");
    assert!(
        read["t1"]["events"].to_string().contains("task-event")
            && !read["t1"]["events"].to_string().contains("sequence"),
        "the task's events are its own: {read:#}"
    );
    assert_eq!(read["t1"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(read["k3"]["run"], "t1");
    assert_eq!(read["k3"]["frames"].as_array().map(Vec::len), Some(3), "{read:#}");
    assert!(
        !read["k3"]["frames"].to_string().contains("task-event"),
        "the run's frames are its own: {read:#}"
    );
    assert_eq!(
        (read["k1"]["ended"].clone(), read["k1"]["leased"].clone()),
        (json!(false), json!(true))
    );
    assert_eq!(read["k2"]["ended"], true);
    assert_eq!(read["k2"]["last"], 2);
}

/// The SQLite tables as they were before the journal, filled from the journal's.
const SQLITE_BEFORE: &str = "
CREATE TABLE a2a_task_events (task_id TEXT NOT NULL, seq INTEGER NOT NULL, event TEXT NOT NULL,
    PRIMARY KEY (task_id, seq)) WITHOUT ROWID;
INSERT INTO a2a_task_events SELECT stream, seq, entry FROM e2a_journal WHERE kind = 1;
CREATE TABLE e2a_run_frames (run TEXT NOT NULL, seq INTEGER NOT NULL, frame TEXT NOT NULL,
    PRIMARY KEY (run, seq)) WITHOUT ROWID;
INSERT INTO e2a_run_frames SELECT stream, seq, entry FROM e2a_journal WHERE kind = 2;
CREATE TABLE acp_session_history (session_id TEXT NOT NULL, seq INTEGER NOT NULL, entry TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)) WITHOUT ROWID;
INSERT INTO acp_session_history SELECT stream, seq, entry FROM e2a_journal WHERE kind = 3;
ALTER TABLE e2a_runs ADD COLUMN holder TEXT NOT NULL DEFAULT '';
ALTER TABLE e2a_runs ADD COLUMN until_ms INTEGER NOT NULL DEFAULT 0;
UPDATE e2a_runs SET
    holder = (SELECT holder FROM e2a_leases WHERE kind = 2 AND stream = e2a_runs.run),
    until_ms = (SELECT until_ms FROM e2a_leases WHERE kind = 2 AND stream = e2a_runs.run);
DROP TABLE e2a_journal;
DROP TABLE e2a_leases;
PRAGMA user_version = 0;
";

#[tokio::test]
async fn sqlite_keeps_tasks_runs_and_sessions_in_one_journal_and_upgrades_a_file_from_before_it() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("tasks.db");
    let written = {
        let store = SqliteStore::open(&path).expect("open");
        fill(&store).await;
        store
            .put_session(SessionRecord {
                id: "s1".into(),
                cwd: "/w".into(),
                state: json!({}),
                updated_ms: 5,
            })
            .await
            .expect("session");
        store
            .append_history("s1", vec!["one".into(), "two".into(), "three".into()], 2)
            .await
            .expect("history");
        // a session whose id is a task's keeps its own history
        store
            .append_history("t1", vec!["t1's".into()], 10)
            .await
            .expect("history");
        let read = read(&store).await;
        check(&read);
        assert_eq!(store.history("s1").await.expect("history"), ["two", "three"]);
        read
    };
    let c = rusqlite::Connection::open(&path).expect("open by hand");
    let kinds: Vec<(i64, i64)> = c
        .prepare("SELECT kind, COUNT(*) FROM e2a_journal GROUP BY kind ORDER BY kind")
        .and_then(|mut s| s.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect())
        .expect("the journal");
    // t1: 3 + t2: 1; r1: 2 + r2: 3 + t1: 3; s1: 2 + t1: 1
    assert_eq!(kinds, [(1, 4), (2, 8), (3, 3)], "one journal, three kinds of stream");
    c.execute_batch(SQLITE_BEFORE).expect("back to the layout of before");
    drop(c);
    let store = SqliteStore::open(&path).expect("open a file from before the journal");
    assert_eq!(read(&store).await, written, "nothing lost in the upgrade");
    assert_eq!(store.history("s1").await.expect("history"), ["two", "three"]);
    assert_eq!(store.history("t1").await.expect("history"), ["t1's"]);
    // and the upgraded file goes on: a new event is numbered after the old ones
    let seq = store
        .append(TaskAppend::new(
            record("t2", "TASK_STATE_WORKING", 40),
            &json!({"n": 2}),
            true,
        ))
        .await
        .expect("append after the upgrade");
    assert_eq!(seq, 2);
    drop(store);
    let c = rusqlite::Connection::open(&path).expect("open by hand");
    c.pragma_update(None, "user_version", 99).expect("a newer file");
    drop(c);
    let refused = SqliteStore::open(&path).expect_err("a file newer than the gateway is refused");
    assert!(
        refused.to_string().contains("newer than this gateway knows"),
        "{refused}"
    );
}

/// A file of version 1 (one row per entry, no `ends`) opens as it was, and an append of several
/// events after the upgrade takes one row, read back event by event.
#[tokio::test]
async fn sqlite_upgrades_a_file_of_one_row_per_entry_and_then_packs_an_appends_events() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("tasks.db");
    let written = {
        let store = SqliteStore::open(&path).expect("open");
        fill(&store).await;
        read(&store).await
    };
    let c = rusqlite::Connection::open(&path).expect("open by hand");
    c.execute_batch("ALTER TABLE e2a_journal DROP COLUMN ends; PRAGMA user_version = 1;")
        .expect("back to version 1");
    drop(c);
    let store = SqliteStore::open(&path).expect("open a file of version 1");
    assert_eq!(read(&store).await, written, "nothing lost in the upgrade");
    let events: Vec<std::sync::Arc<str>> = (2..5).map(|n| json!({"n": n}).to_string().into()).collect();
    let mut append = TaskAppend::new(record("t2", "TASK_STATE_WORKING", 40), &json!({}), true);
    append.events = events.clone();
    assert_eq!(store.append(append).await.expect("append"), 4);
    let read: Vec<_> = store.events_after("t2", 2).await.expect("events");
    assert_eq!(
        read.iter().map(|e| (e.seq, e.event.clone())).collect::<Vec<_>>(),
        vec![(3, events[1].clone()), (4, events[2].clone())]
    );
    assert_eq!(store.get("t2").await.expect("get").expect("kept").last_seq, 4);
    drop(store);
    let c = rusqlite::Connection::open(&path).expect("open by hand");
    let (rows, version): (i64, i64) = c
        .query_row(
            "SELECT (SELECT COUNT(*) FROM e2a_journal WHERE kind = 1 AND stream = 't2'), (SELECT user_version FROM pragma_user_version)",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("rows");
    assert_eq!((rows, version), (2, 2), "t2's first event, then its three in one row");
}

/// The PostgreSQL tables as they were before the journal (schema version 6), filled from the
/// journal's.
const POSTGRES_BEFORE: &str = "
CREATE TABLE a2a_task_events (task_id TEXT NOT NULL, seq BIGINT NOT NULL, event TEXT NOT NULL,
    PRIMARY KEY (task_id, seq));
INSERT INTO a2a_task_events SELECT stream, seq, entry FROM e2a_journal WHERE kind = 1;
CREATE TABLE a2a_leases (task_id TEXT PRIMARY KEY, holder TEXT NOT NULL, until_ms BIGINT NOT NULL);
INSERT INTO a2a_leases SELECT stream, holder, until_ms FROM e2a_leases WHERE kind = 1;
CREATE TABLE e2a_run_frames (run TEXT NOT NULL, seq BIGINT NOT NULL, frame TEXT NOT NULL, PRIMARY KEY (run, seq));
INSERT INTO e2a_run_frames SELECT stream, seq, entry FROM e2a_journal WHERE kind = 2;
ALTER TABLE e2a_runs ADD COLUMN holder TEXT NOT NULL DEFAULT '', ADD COLUMN until_ms BIGINT NOT NULL DEFAULT 0;
UPDATE e2a_runs r SET holder = l.holder, until_ms = l.until_ms FROM e2a_leases l WHERE l.kind = 2 AND l.stream = r.run;
DROP TABLE e2a_journal;
DROP TABLE e2a_leases;
DELETE FROM e2a_migrations WHERE version = 7;
";

#[tokio::test]
async fn postgres_keeps_tasks_and_runs_in_one_journal_and_upgrades_a_database_from_before_it() {
    let Some(url) = common::postgres_database().await else {
        return;
    };
    let lease = Duration::from_secs(600);
    let written = {
        let store = common::pg(&url).await;
        fill(&store).await;
        assert!(store.acquire("t2", "gateway-a", lease).await.expect("lease"));
        let read = read(&store).await;
        check(&read);
        read
    };
    let client = raw_client(&url).await;
    client
        .batch_execute(&format!("BEGIN; {POSTGRES_BEFORE} COMMIT;"))
        .await
        .expect("back to the layout of before");
    let store = common::pg(&url).await;
    assert_eq!(read(&store).await, written, "nothing lost in the upgrade");
    assert!(
        !store.acquire("t2", "gateway-b", lease).await.expect("lease"),
        "the task's lease came along"
    );
    assert!(
        store.orphans().await.expect("orphans").is_empty(),
        "t2 is leased, t1 ended"
    );
    let version: i32 = client
        .query_one("SELECT MAX(version) FROM e2a_migrations", &[])
        .await
        .expect("version")
        .get(0);
    assert_eq!(version, 7);
}

/// A plain connection to the test database.
async fn raw_client(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .expect("connect");
    tokio::spawn(connection);
    client
}

/// Two stores on one SQLite file (two `e2a acp` sharing their sessions' file): each write
/// waits for the other's instead of failing with "database is locked" — a write that reads
/// first (the history's last number) in a transaction that took no write lock at its start
/// could not go on once the other committed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_stores_writing_one_sqlite_file_wait_for_each_other() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("sessions.db");
    let (a, b) = (
        SqliteStore::open(&path).expect("open a"),
        SqliteStore::open(&path).expect("open b"),
    );
    let write = |store: SqliteStore, id: &'static str| async move {
        for i in 0..2_000 {
            store
                .append_history(id, vec![format!("{id} {i}")], 1_000)
                .await
                .expect("every write goes in");
        }
        store.history(id).await.expect("history").len()
    };
    let (na, nb) = tokio::join!(tokio::spawn(write(a, "s-a")), tokio::spawn(write(b, "s-b")));
    assert_eq!(
        (na.expect("a"), nb.expect("b")),
        (1_000, 1_000),
        "the last 1,000 of each kept"
    );
}
