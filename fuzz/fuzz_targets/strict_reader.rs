#![no_main]
//! Strict readers on arbitrary bytes: an error or a value, never a panic or hang.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(s) = std::str::from_utf8(data) {
        if let Ok(env) = e2a::E2AEnvelope::read(s, &e2a::ReadOptions::canonical()).map(|r| r.value) {
            // strict-valid ⇒ lenient-valid with the same value
            assert_eq!(e2a::E2AEnvelope::from_json(s).ok().as_ref(), Some(&env));
        }
        if let Ok(resp) = e2a::E2AResponse::read(s, &e2a::ReadOptions::canonical()).map(|r| r.value) {
            assert_eq!(e2a::E2AResponse::from_json(s).ok().as_ref(), Some(&resp));
        }
    }
});
