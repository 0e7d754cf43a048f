#![no_main]
//! ACP ingress, egress and the stream projection on arbitrary JSON.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else { return };
    let Ok(v) = e2a::Limits::default().parse(s) else { return };
    if let Ok(req) = e2a::acp::JsonRpcIngress::from_value(&v) {
        let env = e2a::acp::envelope_from_jsonrpc(&req);
        e2a::E2AEnvelope::read_value(&env.to_value(), &e2a::ReadOptions::canonical()).map(|r| r.value).expect("ACP ingress output is strict-valid");
        let _ = e2a::acp::envelope_to_jsonrpc_call(&env);
    }
    if let Ok(env) = e2a::E2AEnvelope::from_value(&v) {
        let _ = e2a::acp::merge_params_to_prompt(&env);
    }
    if let Ok(resp) = e2a::E2AResponse::from_value(&v) {
        let _ = e2a::acp::response_to_jsonrpc_response(&resp);
        let mut p = e2a::acp::stream::AcpStreamProjector::new("s", resp.jsonrpc_id.clone());
        let _ = p.push(&resp);
        let _ = e2a::taxonomy::ErrorKind::of_response(&resp);
    }
    if let Some(m) = v.as_object() {
        let mut cache = e2a::acp::tool_updates::ToolCallCache::new();
        let _ = e2a::acp::tool_updates::tool_call_update(m, Some(&mut cache));
        let _ = e2a::acp::tool_updates::tool_result_update(m, Some(&cache));
        let mut st = e2a::acp::session_updates::SessionUpdateState::new();
        for ev in ["chat.delta", "chat.tool_call", "chat.tool_result", "todo.updated", "chat.subtask_update"] {
            let _ = st.update(ev, m);
        }
        let _ = st.final_text_update(m);
    }
});
