#![no_main]
//! Lenient readers on arbitrary bytes; whatever they accept is canonical and strict-valid,
//! and canonical → lenient → canonical is the identity.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else { return };
    if let Ok(env) = e2a::E2AEnvelope::from_json(s) {
        let canonical = env.to_value();
        let strict = e2a::E2AEnvelope::read_value(&canonical, &e2a::ReadOptions::canonical()).map(|r| r.value).expect("lenient output is strict-valid");
        assert_eq!(e2a::E2AEnvelope::from_value(&canonical).expect("re-read").to_value(), canonical);
        let _ = format!("{strict:?}{strict}");
    }
    if let Ok(resp) = e2a::E2AResponse::from_json(s) {
        let canonical = resp.to_value();
        e2a::E2AResponse::read_value(&canonical, &e2a::ReadOptions::canonical()).map(|r| r.value).expect("lenient output is strict-valid");
        assert_eq!(e2a::E2AResponse::from_value(&canonical).expect("re-read").to_value(), canonical);
        let _ = resp.typed_body();
        let _ = e2a::log::log_line(&resp, 512);
        // the validator on arbitrary frames (including extreme sequences), twice to hit the
        // duplicate and after-final paths, with a reorder window and replay
        let mut v = e2a::stream::StreamValidator::new().with_reorder_window(4).with_replay();
        v.push(&resp);
        v.push(&resp);
        if let Some(id) = resp.request_id.as_deref() {
            let _ = v.replay_after(id, resp.sequence.saturating_sub(1));
        }
        let _ = v.finish();
    }
});
