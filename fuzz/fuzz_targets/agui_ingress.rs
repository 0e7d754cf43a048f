#![no_main]
//! AG-UI ingress, projection and the lifecycle checker on arbitrary JSON.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else { return };
    let Ok(v) = e2a::Limits::default().parse(s) else { return };
    if let Ok(env) = e2a::agui::envelope_from_run_input(&v) {
        e2a::E2AEnvelope::read_value(&env.to_value(), &e2a::ReadOptions::canonical()).map(|r| r.value).expect("AG-UI ingress output is strict-valid");
    }
    if let Ok(resp) = e2a::E2AResponse::from_value(&v) {
        let mut p = e2a::agui::AguiProjector::new("t", "r");
        let events = p.push(&resp);
        e2a::agui::verify_events(&events).expect("projector output passes the lifecycle rules");
    }
    if let Some(a) = v.as_array() {
        let _ = e2a::agui::verify_events(a);
    }
});
