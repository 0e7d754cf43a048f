#![no_main]
//! ACP prompt-block parsing on arbitrary JSON.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else { return };
    let Ok(v) = e2a::Limits::default().parse(s) else { return };
    if let Some(m) = v.as_object() {
        let p = e2a::acp::parse_prompt_blocks(m);
        let _ = p.has_content();
    }
});
