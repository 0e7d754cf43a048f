//! The `async` feature: producer and validator over `futures::Stream`.
#![cfg(feature = "async")]

use e2a::async_stream::{produce_text, validate, Checked};
use e2a::stream::{StreamValidator, ViolationKind};
use e2a::E2AEnvelope;
use futures_util::StreamExt;
use serde_json::json;

#[test]
fn produced_stream_validates_clean() {
    let req = E2AEnvelope::new("chat.send", json!({})).with_request_id("r1");
    let deltas = futures_util::stream::iter((0..5).map(|i| format!("d{i} ")));
    let frames: Vec<_> = futures_executor::block_on(produce_text(&req, deltas, json!({"n": 5})).collect());
    assert_eq!(
        frames.iter().map(|f| f.sequence).collect::<Vec<_>>(),
        vec![0, 1, 2, 3, 4, 5]
    );
    assert!(frames[5].is_final && frames[5].body_object()["result"]["n"] == 5);
    let checked: Vec<Checked> =
        futures_executor::block_on(validate(futures_util::stream::iter(frames), StreamValidator::new()).collect());
    assert_eq!(checked.len(), 6);
    assert!(checked.iter().all(|c| matches!(c, Checked::Frame(_))));
}

#[test]
fn violations_are_interleaved_and_missing_final_reported_at_end() {
    let req = E2AEnvelope::new("chat.send", json!({})).with_request_id("r1");
    let deltas = futures_util::stream::iter(vec!["a".to_string(), "b".to_string(), "c".to_string()]);
    let mut frames: Vec<_> = futures_executor::block_on(produce_text(&req, deltas, json!({})).collect());
    frames.remove(1); // gap
    frames.pop(); // no final
    let checked: Vec<Checked> =
        futures_executor::block_on(validate(futures_util::stream::iter(frames), StreamValidator::new()).collect());
    let kinds: Vec<ViolationKind> = checked
        .iter()
        .filter_map(|c| match c {
            Checked::Violation(v) => Some(v.kind.clone()),
            Checked::Frame(_) => None,
        })
        .collect();
    assert_eq!(
        kinds,
        vec![ViolationKind::Gap { expected: 1, got: 2 }, ViolationKind::MissingFinal]
    );
    assert!(
        matches!(checked[2], Checked::Violation(_)),
        "the gap is reported right after its frame"
    );
}
