#![no_main]
//! Agent-server wire parsing and the legacy conversions on arbitrary JSON.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else { return };
    let Ok(v) = e2a::Limits::default().parse(s) else { return };
    let _ = e2a::wire::is_e2a_response(&v);
    let _ = e2a::wire::parse_unary(&v);
    let _ = e2a::wire::parse_chunk(&v);
    if let Ok(r) = e2a::legacy::AgentResponse::from_value(&v) {
        let frame = e2a::wire::encode_agent_response(&r, "x", 0);
        e2a::E2AResponse::read_value(&frame, &e2a::ReadOptions::canonical()).map(|r| r.value).expect("encoded frame is strict-valid");
        // an agent's own metadata may not use the reserved wire keys (the reference gives the
        // legacy blob precedence on parse); otherwise its frame must parse back
        let reserved = r.metadata.as_ref().is_some_and(|m| {
            e2a::types::WireMetadataKey::ALL.iter().any(|k| m.contains_key(k.as_str()))
        });
        if !reserved {
            let back = e2a::wire::parse_unary(&frame).expect("own frame parses");
            assert_eq!(back.ok, r.ok);
        }
    }
    if let Ok(c) = e2a::legacy::AgentResponseChunk::from_value(&v) {
        let frame = e2a::wire::encode_agent_chunk(&c, "x", 1, true);
        e2a::E2AResponse::read_value(&frame, &e2a::ReadOptions::canonical()).map(|r| r.value).expect("encoded frame is strict-valid");
        let _ = e2a::wire::parse_chunk(&frame);
    }
    let _ = e2a::legacy::fallback_envelope(&v);
});
