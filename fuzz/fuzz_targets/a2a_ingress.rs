#![no_main]
//! A2A 1.0/0.3 ingress and the stream projection on arbitrary JSON.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else { return };
    let Ok(v) = e2a::Limits::default().parse(s) else { return };
    let headers = e2a::a2a::jsonrpc::A2aHeaders::default();
    if let Ok(env) = e2a::a2a::jsonrpc::envelope_from_request(&v, &headers) {
        e2a::E2AEnvelope::read_value(&env.to_value(), &e2a::ReadOptions::canonical()).map(|r| r.value).expect("A2A ingress output is strict-valid");
    }
    if let Ok(m) = e2a::a2a::SendMessageIngress::from_value(&v) {
        let _ = e2a::a2a::envelope_from_send_message(&m);
    }
    if let Ok(resp) = e2a::E2AResponse::from_value(&v) {
        let _ = e2a::a2a::response_to_stream_payload(&resp);
        let mut p = e2a::a2a::stream::A2aStreamProjector::new("t", "c");
        let _ = p.push(&resp);
        let _ = e2a::a2a::stream::jsonrpc_error(&resp);
    }
});
