//! Deterministic cost of the hot paths in instructions, for `valgrind --tool=callgrind`
//! (`benches/callgrind.sh` runs it and prints the ratios): `cargo bench --bench callgrind --
//! <op> <iterations>` runs one operation that many times on the §11.1 envelope, after one
//! warm-up call (so lazily built tables are not counted). Each op has its derive-only baseline
//! next to it; the script subtracts a zero-iteration run, so start-up is not counted either.

use std::hint::black_box;

use e2a::{E2AEnvelope, ReadOptions};

mod common;
use common::{PlainEnvelope, ENVELOPE, LEGACY};

fn op(name: &str) -> Option<Box<dyn Fn()>> {
    Some(match name {
        // JSON text → typed → canonical JSON text
        "roundtrip_derive" => Box::new(|| {
            let e: Option<PlainEnvelope> = serde_json::from_str(black_box(ENVELOPE)).ok();
            black_box(e.map(|e| serde_json::to_string(&e).ok()));
        }),
        "roundtrip_lenient" => Box::new(|| {
            let e = E2AEnvelope::read(black_box(ENVELOPE), &ReadOptions::lenient()).ok();
            black_box(e.map(|e| e.value.to_json()));
        }),
        "roundtrip_lenient_legacy" => Box::new(|| {
            let e = E2AEnvelope::read(black_box(LEGACY), &ReadOptions::lenient()).ok();
            black_box(e.map(|e| e.value.to_json()));
        }),
        // JSON text → typed
        "read_derive" => Box::new(|| {
            black_box(serde_json::from_str::<PlainEnvelope>(black_box(ENVELOPE)).ok());
        }),
        "read_lenient" => Box::new(|| {
            black_box(E2AEnvelope::read(black_box(ENVELOPE), &ReadOptions::lenient()).ok());
        }),
        "read_strict" => Box::new(|| {
            black_box(E2AEnvelope::read(black_box(ENVELOPE), &ReadOptions::strict()).ok());
        }),
        _ => return None,
    })
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    let (Some(name), Some(n)) = (args.first(), args.get(1).and_then(|n| n.parse::<u64>().ok())) else {
        eprintln!("usage: callgrind <op> <iterations>");
        return;
    };
    let Some(f) = op(name) else {
        eprintln!("unknown op {name}");
        std::process::exit(2);
    };
    f();
    for _ in 0..n {
        f();
    }
}
