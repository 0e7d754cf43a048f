//! Every input the fuzzers found a problem with (`tests/data/fuzz/`), replayed through every
//! reader and adapter with the fuzz targets' invariants.

use e2a::{E2AEnvelope, E2AResponse};

fn check(name: &str, data: &[u8]) {
    let Ok(s) = std::str::from_utf8(data) else { return };
    if let Ok(env) = E2AEnvelope::read(s, &e2a::ReadOptions::canonical()).map(|r| r.value) {
        assert_eq!(
            E2AEnvelope::from_json(s).ok().as_ref(),
            Some(&env),
            "{name}: strict ⇒ lenient, same value"
        );
    }
    if let Ok(resp) = E2AResponse::read(s, &e2a::ReadOptions::canonical()).map(|r| r.value) {
        assert_eq!(
            E2AResponse::from_json(s).ok().as_ref(),
            Some(&resp),
            "{name}: strict ⇒ lenient, same value"
        );
    }
    if let Ok(env) = E2AEnvelope::from_json(s) {
        e2a::E2AEnvelope::read_value(&env.to_value(), &e2a::ReadOptions::canonical())
            .map(|r| r.value)
            .unwrap_or_else(|e| panic!("{name}: lenient output not strict-valid: {e}"));
    }
    if let Ok(v) = e2a::Limits::default().parse(s) {
        for f in e2a::conformance::FUNCTIONS {
            let _ = e2a::conformance::call(f, &v);
        }
        let _ = e2a::wire::parse_unary(&v);
        let _ = e2a::wire::parse_chunk(&v);
    }
}

#[test]
fn fuzz_findings_stay_fixed() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/fuzz");
    let mut n = 0;
    for e in std::fs::read_dir(dir).expect("tests/data/fuzz") {
        let p = e.expect("entry").path();
        check(&p.display().to_string(), &std::fs::read(&p).expect("read"));
        n += 1;
    }
    assert!(n >= 1);
}
