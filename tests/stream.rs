//! Stream invariants: the producer always yields valid streams; the validator finds every
//! planted violation (and nothing else) across many interleaved streams.

use e2a::stream::{ResponseStream, StreamValidator, ViolationKind};
use e2a::{E2AEnvelope, E2AResponse};
use proptest::prelude::*;
use serde_json::{json, Map};

fn request(id: &str) -> E2AEnvelope {
    let mut e = E2AEnvelope::new("session/prompt", json!({"text": "hi"}))
        .with_request_id(id)
        .with_session_id("s1");
    e.jsonrpc_id = Some(7.into());
    e
}

fn build(id: &str, chunks: usize, fail: bool) -> Vec<E2AResponse> {
    let mut s = ResponseStream::for_request(&request(id));
    let mut out: Vec<E2AResponse> = (0..chunks)
        .map(|i| E2AResponse::from(s.text(&format!("part {i}"))))
        .collect();
    out.push(if fail {
        E2AResponse::from(s.fail("E2A.AGENT_ERROR", "boom", Map::new()))
    } else {
        E2AResponse::from(s.complete(json!({"ok": true})))
    });
    out
}

fn validate(frames: &[E2AResponse]) -> Vec<ViolationKind> {
    let mut v = StreamValidator::new();
    for f in frames {
        v.push(f);
    }
    v.finish().into_iter().map(|v| v.kind).collect()
}

#[test]
fn producer_echoes_correlation_and_is_strict_valid() {
    let frames = build("r1", 2, false);
    for (i, f) in frames.iter().enumerate() {
        assert_eq!(f.sequence, i as u64);
        assert_eq!(f.request_id.as_deref(), Some("r1"));
        assert_eq!(f.session_id.as_deref(), Some("s1"));
        assert_eq!(f.jsonrpc_id, Some(7.into()));
        assert!(f.timestamp.as_deref().is_some_and(|t| t.ends_with("+00:00")));
        assert_eq!(f.response_id.as_deref().map(str::len), Some(36));
        e2a::E2AResponse::read_value(&f.to_value(), &e2a::ReadOptions::canonical())
            .map(|r| r.value)
            .unwrap();
    }
    assert_eq!(frames.iter().filter(|f| f.is_final).count(), 1);
    let failed = build("r2", 1, true);
    assert_eq!(failed[1].status, "failed");
    assert_eq!(failed[1].response_kind, "e2a.error");
}

#[test]
fn each_violation_kind_is_reported() {
    let ok = build("r", 3, false);
    assert!(validate(&ok).is_empty());
    let mut missing_first = ok.clone();
    missing_first.remove(0);
    assert!(matches!(
        validate(&missing_first)[0],
        ViolationKind::DoesNotStartAtZero { got: 1 }
    ));
    let mut gap = ok.clone();
    gap.remove(1);
    assert_eq!(validate(&gap), vec![ViolationKind::Gap { expected: 1, got: 2 }]);
    let mut dup = ok.clone();
    dup.insert(1, ok[0].clone());
    assert_eq!(validate(&dup), vec![ViolationKind::Duplicate]);
    let mut swapped = ok.clone();
    swapped.swap(1, 2);
    assert!(validate(&swapped).contains(&ViolationKind::Reorder { expected: 3 }));
    let mut extra_final = ok.clone();
    let mut again = ok[3].clone();
    again.sequence = 4;
    extra_final.push(again);
    assert_eq!(validate(&extra_final), vec![ViolationKind::SecondFinal]);
    let mut after = ok.clone();
    let mut late = ok[1].clone();
    late.sequence = 4;
    after.push(late);
    assert_eq!(validate(&after), vec![ViolationKind::AfterFinal]);
    let mut no_final = ok.clone();
    no_final.pop();
    assert_eq!(validate(&no_final), vec![ViolationKind::MissingFinal]);
    let mut mismatch = ok.clone();
    mismatch[3].status = "failed".into();
    assert_eq!(validate(&mismatch), vec![ViolationKind::StatusKindMismatch]);
}

#[test]
fn reorder_window_and_replay() {
    let ok = build("r", 4, false);
    let shuffled = vec![
        ok[0].clone(),
        ok[2].clone(),
        ok[1].clone(),
        ok[4].clone(),
        ok[3].clone(),
    ];
    let mut v = StreamValidator::new().with_reorder_window(4).with_replay();
    let mut released = Vec::new();
    for f in &shuffled {
        released.extend(v.push(f));
    }
    assert_eq!(
        released.iter().map(|f| f.sequence).collect::<Vec<_>>(),
        vec![0, 1, 2, 3, 4]
    );
    assert_eq!(
        v.replay_after("r", 2).iter().map(|f| f.sequence).collect::<Vec<_>>(),
        vec![3, 4]
    );
    assert!(v.finish().is_empty());
}

#[test]
fn idle_streams_time_out() {
    let ok = build("slow", 2, false);
    let mut v = StreamValidator::new();
    v.push(&ok[0]);
    for f in build("busy", 5, false) {
        v.push(&f);
    }
    let expired = v.expire_idle(5);
    assert_eq!(expired.len(), 1);
    assert_eq!(expired[0].request_id.as_deref(), Some("slow"));
    assert_eq!(expired[0].kind, ViolationKind::MissingFinal);
}

#[test]
fn ten_thousand_interleaved_streams() {
    // 10,000 streams of 10 frames = 100,000 frames, interleaved round-robin. Every 7th stream
    // gets one planted violation; exactly those must be reported.
    let streams: Vec<Vec<E2AResponse>> = (0..10_000)
        .map(|i| build(&format!("req-{i}"), 9, i % 11 == 0))
        .collect();
    let mut planted: Vec<(String, ViolationKind)> = Vec::new();
    let mut mutated = streams.clone();
    for (i, s) in mutated.iter_mut().enumerate().filter(|(i, _)| i % 7 == 0) {
        let id = format!("req-{i}");
        match (i / 7) % 4 {
            0 => {
                s.remove(4);
                planted.push((id, ViolationKind::Gap { expected: 4, got: 5 }));
            }
            1 => {
                let d = s[2].clone();
                s.insert(3, d);
                planted.push((id, ViolationKind::Duplicate));
            }
            2 => {
                s.pop();
                planted.push((id, ViolationKind::MissingFinal));
            }
            _ => {
                let mut extra = s[9].clone();
                extra.sequence = 10;
                s.push(extra);
                planted.push((id, ViolationKind::SecondFinal));
            }
        }
    }
    let mut v = StreamValidator::new();
    let mut total = 0;
    for round in 0..11 {
        for s in &mutated {
            if let Some(f) = s.get(round) {
                v.push(f);
                total += 1;
            }
        }
    }
    assert!(total >= 99_000, "{total}");
    let mut found: Vec<(String, ViolationKind)> = v
        .finish()
        .into_iter()
        .map(|v| (v.request_id.unwrap_or_default(), v.kind))
        .collect();
    found.sort_by(|a, b| a.0.cmp(&b.0));
    planted.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(found, planted);
}

#[derive(Debug, Clone)]
enum Mutation {
    Drop(usize),
    Duplicate(usize),
    Swap(usize),
    ExtraFinal,
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn observe_reports_what_push_reports(chunks in 1usize..12, ops in proptest::collection::vec((0usize..4, 0usize..100), 0..4)) {
        // a produced stream, mangled: drops, duplicates, swaps, a sequence rewritten
        let mut s = build("p", chunks, false);
        for (op, i) in ops {
            let n = s.len();
            if n == 0 { break; }
            let i = i % n;
            match op {
                0 => { s.remove(i); }
                1 => { let d = s[i].clone(); s.insert(i, d); }
                2 if n > 1 => s.swap(i, (i + 1) % n),
                _ => s[i].sequence = s[i].sequence.wrapping_add(3),
            }
        }
        let (mut pushed, mut observed) = (StreamValidator::new(), StreamValidator::new());
        for f in &s {
            let _ = pushed.push(f);
            observed.observe(f);
        }
        prop_assert_eq!(pushed.violations(), observed.violations());
        prop_assert_eq!(pushed.finish(), observed.finish());
    }

    #[test]
    fn produced_streams_are_valid(chunks in 0usize..20, fail in any::<bool>()) {
        prop_assert!(validate(&build("p", chunks, fail)).is_empty());
    }

    #[test]
    fn mutations_are_reported(chunks in 2usize..12, m in prop_oneof![
        (0usize..100).prop_map(Mutation::Drop),
        (0usize..100).prop_map(Mutation::Duplicate),
        (0usize..100).prop_map(Mutation::Swap),
        Just(Mutation::ExtraFinal),
    ]) {
        let mut s = build("p", chunks, false);
        let n = s.len();
        let expect: fn(&ViolationKind) -> bool = match m {
            Mutation::Drop(i) => {
                let i = i % n;
                s.remove(i);
                if i == 0 { |k| matches!(k, ViolationKind::DoesNotStartAtZero { .. }) }
                else if i == n - 1 { |k| *k == ViolationKind::MissingFinal }
                else { |k| matches!(k, ViolationKind::Gap { .. }) }
            }
            Mutation::Duplicate(i) => {
                let i = i % n;
                let d = s[i].clone();
                s.insert(i + 1, d);
                |k| *k == ViolationKind::Duplicate
            }
            Mutation::Swap(i) => {
                let i = i % (n - 1);
                s.swap(i, i + 1);
                |k| matches!(k, ViolationKind::Reorder { .. } | ViolationKind::DoesNotStartAtZero { .. })
            }
            Mutation::ExtraFinal => {
                let mut f = s[n - 1].clone();
                f.sequence = n as u64;
                s.push(f);
                |k| *k == ViolationKind::SecondFinal
            }
        };
        let found = validate(&s);
        prop_assert!(found.iter().any(expect), "{:?}", found);
    }
}

#[test]
fn log_lines_read_back_reproduce_the_stream() {
    let a = build("a", 3, false);
    let mut b = build("b", 2, true);
    b[1].body.insert("delta".into(), json!("x".repeat(100_000)));
    let mut lines: Vec<String> = a.iter().chain(b.iter()).map(|f| e2a::log::log_line(f, 4096)).collect();
    lines.reverse();
    for l in &lines {
        assert!(l.len() <= 4096, "line cap: {}", l.len());
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        for k in [
            "request_id",
            "response_id",
            "sequence",
            "is_final",
            "response_kind",
            "timestamp",
        ] {
            assert!(v.get(k).is_some(), "{k} missing");
        }
    }
    let back = e2a::log::read_log(std::io::Cursor::new(lines.join("\n"))).unwrap();
    let ids: Vec<(String, u64)> = back
        .iter()
        .map(|f| (f.request_id.clone().unwrap(), f.sequence))
        .collect();
    let want: Vec<(String, u64)> = a
        .iter()
        .chain(b.iter())
        .map(|f| (f.request_id.clone().unwrap(), f.sequence))
        .collect();
    assert_eq!(ids, want);
    assert!(e2a::log::is_truncated(&back[5]));
    assert!(!e2a::log::is_truncated(&back[0]));
    let mut v = StreamValidator::new();
    for f in &back {
        v.push(f);
    }
    assert!(v.finish().is_empty());
    assert_eq!(back[0], a[0], "untruncated lines round-trip exactly");
}

#[test]
fn sse_framing_resumes_with_last_event_id() {
    let frames = build("r", 4, false);
    let mut v = StreamValidator::new().with_replay();
    let mut sent = String::new();
    for f in &frames[..3] {
        v.push(f);
        sent.push_str(&e2a::sse::encode(f));
    }
    // the client saw frames 0..=2 and reconnects with Last-Event-ID: 2
    let seen = e2a::sse::decode(&sent).unwrap();
    assert_eq!(seen, frames[..3].to_vec());
    for f in &frames[3..] {
        v.push(f);
    }
    let resent: String = v.replay_after("r", 2).iter().map(e2a::sse::encode).collect();
    let all: Vec<_> = seen.into_iter().chain(e2a::sse::decode(&resent).unwrap()).collect();
    assert_eq!(all, frames);
}

/// Sequences at the top of the u64 range must not overflow (found in review: `sequence + 1`).
#[test]
fn extreme_sequences_do_not_overflow() {
    let mut frames = build("big", 1, false);
    frames[0].sequence = u64::MAX - 1;
    frames[1].sequence = u64::MAX;
    // held frames (reorder window) are not replayable until released
    let mut held = StreamValidator::new().with_reorder_window(2).with_replay();
    for f in frames.iter().chain(frames.iter()) {
        held.push(f);
    }
    assert!(held.replay_after("big", 0).is_empty());
    assert!(!held.finish().is_empty());
    let mut v = StreamValidator::new().with_replay();
    for f in frames.iter().chain(frames.iter()) {
        v.push(f);
    }
    assert_eq!(v.replay_after("big", u64::MAX - 1).len(), 1);
    let kinds: Vec<ViolationKind> = v.finish().into_iter().map(|x| x.kind).collect();
    assert!(kinds.contains(&ViolationKind::DoesNotStartAtZero { got: u64::MAX - 1 }));
    assert!(kinds.contains(&ViolationKind::Duplicate));
}
