#![no_main]
//! Every conformance function on arbitrary input: an output or an error answer, never a panic.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.is_empty() {
        return;
    }
    let f = e2a::conformance::FUNCTIONS[data[0] as usize % e2a::conformance::FUNCTIONS.len()];
    let Ok(s) = std::str::from_utf8(&data[1..]) else { return };
    let Ok(v) = e2a::Limits::default().parse(s) else { return };
    let _ = e2a::conformance::call(f, &v);
});
