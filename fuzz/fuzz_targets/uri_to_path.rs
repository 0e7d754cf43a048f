#![no_main]
//! Resource URI → local path and basenames on arbitrary strings.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(s) = std::str::from_utf8(data) {
        let _ = e2a::acp::resource_uri_to_path(s);
        let _ = e2a::acp::prompt_blocks::basename(s);
    }
});
