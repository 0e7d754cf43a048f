//! The `PauseStore` role on every store (memory, SQLite, PostgreSQL when one is configured):
//! a pause is kept, read, taken once (of two takers at once only one gets it), replaced, kept
//! first-wins (of two keepers at once one wins), and forgotten past its retention.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use e2a_gateway::store::{MemoryStore, PauseStore, SqliteStore};

async fn a_pause_is_kept_taken_once_and_forgotten(store: Arc<dyn PauseStore>) {
    assert_eq!(store.get_pause("agent:t1").await.expect("get"), None);
    store.put_pause("agent:t1", "{\"step\":1}".into()).await.expect("put");
    store
        .put_pause("agent:t1", "{\"step\":2}".into())
        .await
        .expect("put again");
    assert_eq!(
        store.get_pause("agent:t1").await.expect("get").as_deref(),
        Some("{\"step\":2}"),
        "the later state replaces the earlier"
    );
    // two takers at once: one gets it
    let (a, b) = tokio::join!(store.take_pause("agent:t1"), store.take_pause("agent:t1"));
    let got: Vec<String> = [a.expect("take"), b.expect("take")].into_iter().flatten().collect();
    assert_eq!(got, vec!["{\"step\":2}".to_string()]);
    assert_eq!(store.get_pause("agent:t1").await.expect("get"), None);
    // retention
    store.put_pause("agui:t2", "{}".into()).await.expect("put");
    assert_eq!(store.prune_pauses(Duration::from_secs(3600)).await.expect("prune"), 0);
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_eq!(store.prune_pauses(Duration::from_millis(5)).await.expect("prune"), 1);
    assert_eq!(store.take_pause("agui:t2").await.expect("take"), None);
    // the first keeper wins: two at once, one keeps its state and the other reads it
    let (a, b) = tokio::join!(
        store.keep_first_pause("delegation:t3", "a".into()),
        store.keep_first_pause("delegation:t3", "b".into())
    );
    let (a, b) = (a.expect("keep"), b.expect("keep"));
    let kept = store.get_pause("delegation:t3").await.expect("get").expect("kept");
    match (a, b) {
        (None, Some(first)) | (Some(first), None) => assert_eq!(first, kept),
        other => panic!("one keeper wins, the other reads its state: {other:?}"),
    }
    // looked through by prefix, in key order, at most as many as asked
    store.put_pause("delegation:t4", "d".into()).await.expect("put");
    store.put_pause("other:t5", "e".into()).await.expect("put");
    let found = store.pauses_with_prefix("delegation:", 10).await.expect("list");
    let keys: Vec<&str> = found.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys, ["delegation:t3", "delegation:t4"]);
    assert_eq!(found[1].1, "d");
    assert_eq!(store.pauses_with_prefix("delegation:", 1).await.expect("list").len(), 1);
    assert_eq!(
        store
            .keep_first_pause("delegation:t3", "c".into())
            .await
            .expect("keep")
            .as_deref(),
        Some(kept.as_str()),
        "a later keeper reads the first state, unchanged"
    );
}

#[tokio::test]
async fn memory() {
    a_pause_is_kept_taken_once_and_forgotten(Arc::new(MemoryStore::new())).await;
}

#[tokio::test]
async fn sqlite() {
    let dir = tempfile::tempdir().expect("tmp");
    let store = SqliteStore::open(&dir.path().join("pauses.db")).expect("open");
    a_pause_is_kept_taken_once_and_forgotten(Arc::new(store)).await;
}

#[tokio::test]
async fn postgres() {
    let Some(url) = postgres_database().await else {
        return;
    };
    a_pause_is_kept_taken_once_and_forgotten(Arc::new(pg(&url).await)).await;
}

/// The text an E2A SSE answer said, and its final frame's body (where a pause asks).
fn said(frames: &[e2a::E2AResponse]) -> String {
    let mut out: String = frames
        .iter()
        .filter(|f| f.body.get("delta_kind").and_then(|k| k.as_str()) == Some("text"))
        .filter_map(|f| f.body.get("delta").and_then(|d| d.as_str()))
        .collect();
    if let Some(last) = frames.last() {
        out.push_str(&serde_json::Value::Object(last.body.clone()).to_string());
    }
    out
}

/// One E2A turn of session `session` at the gateway at `base`: what it said.
async fn turn(base: &str, session: &str, text: &str) -> String {
    let mut body = envelope(text);
    body["session_id"] = session.into();
    let resp = post(base, &body, "text/event-stream").await;
    assert_eq!(resp.status(), 200);
    said(&sse_frames(&resp.text().await.expect("body")))
}

/// With a store that keeps pauses, an agent's pause lives there alone: answered on one gateway,
/// it is gone for the gateway that asked too (no copy in its memory answers it twice).
#[tokio::test]
async fn a_pause_answered_on_one_gateway_is_gone_on_the_one_that_asked() {
    let store = Arc::new(MemoryStore::new());
    let gateway = || e2a_gateway::Gateway::new(script(), fast_config()).with_store(store.clone());
    let (a, b) = (serve_crashable(gateway()).await, serve_crashable(gateway()).await);
    assert!(turn(&a.base, "s-twice", "book a table")
        .await
        .contains("For how many people?"));
    assert!(turn(&b.base, "s-twice", "4").await.contains("A table for 4."));
    let again = turn(&a.base, "s-twice", "4").await;
    assert!(
        !again.contains("A table for"),
        "the asking gateway answered the pause again: {again}"
    );
}
