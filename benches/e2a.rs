//! Criterion benchmarks, each with a baseline measured in the same run, then a table of
//! medians, ratios to the baseline and allocations per operation (counting allocator).
//!
//! `cargo bench --bench e2a` (full) or `cargo bench --bench e2a -- --quick` (< 2 minutes).

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use criterion::{Criterion, Throughput};
use e2a::stream::{ResponseStream, StreamValidator};
use e2a::{E2AEnvelope, E2AResponse};
use serde_json::{json, Value};

struct Counting;
static ALLOCS: AtomicU64 = AtomicU64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.realloc(p, l, n) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

mod common;
use common::{PlainEnvelope, PlainResponse, ENVELOPE, LEGACY};

fn chunk_json() -> String {
    let req = E2AEnvelope::from_json(ENVELOPE).expect("envelope");
    let mut s = ResponseStream::for_request(&req);
    s.text("Hello, world").to_json()
}

fn frames(n: usize, streams: usize) -> Vec<E2AResponse> {
    let mut out = Vec::with_capacity(n);
    let per = n / streams;
    for i in 0..streams {
        let req = E2AEnvelope::new("chat.send", json!({})).with_request_id(format!("r{i}"));
        let mut s = ResponseStream::for_request(&req);
        for _ in 0..per - 1 {
            out.push(s.text("x").into());
        }
        out.push(s.complete(json!({})).into());
    }
    out
}

/// (group, baseline id) for the ratio table.
const BASELINES: &[(&str, &str)] = &[
    ("envelope_read", "derive_baseline"),
    ("envelope_write", "derive_baseline"),
    ("envelope_roundtrip", "derive_baseline"),
    ("chunk_read", "derive_baseline"),
    ("chunk_write", "derive_baseline"),
    ("chunk_roundtrip", "derive_baseline"),
    ("adapters", "value_parse_write_baseline"),
    ("schema_validation", "derive_baseline"),
    ("stream_validator", "vec_push_baseline"),
    ("validate_throughput", "serde_json_lines_baseline"),
];

/// One benchmark: group, id and the operation.
type Op = (String, String, Box<dyn Fn()>);

fn benches(c: &mut Criterion) -> Vec<Op> {
    let chunk = chunk_json();
    let env = E2AEnvelope::from_json(ENVELOPE).expect("envelope");
    let plain: PlainEnvelope = serde_json::from_str(ENVELOPE).expect("plain");
    let resp = E2AResponse::from_json(&chunk).expect("chunk");
    let plain_resp: PlainResponse = serde_json::from_str(&chunk).expect("plain chunk");
    let mut ops: Vec<Op> = Vec::new();
    macro_rules! op {
        ($g:expr, $id:expr, $f:expr) => {{
            let f = $f;
            ops.push(($g.to_string(), $id.to_string(), Box::new(f)));
        }};
    }
    {
        let envelope = ENVELOPE.to_string();
        let e1 = envelope.clone();
        op!("envelope_read", "derive_baseline", move || {
            black_box(serde_json::from_str::<PlainEnvelope>(black_box(&e1)).ok());
        });
        let e2 = envelope.clone();
        op!("envelope_read", "value_baseline", move || {
            black_box(serde_json::from_str::<Value>(black_box(&e2)).ok());
        });
        let e3 = envelope.clone();
        op!("envelope_read", "lenient", move || {
            black_box(E2AEnvelope::from_json(black_box(&e3)).ok());
        });
        op!("envelope_read", "lenient_legacy_shape", move || {
            black_box(E2AEnvelope::from_json(black_box(LEGACY)).ok());
        });
        let canonical = env.to_json();
        let c1 = canonical.clone();
        op!("envelope_read", "strict", move || {
            black_box(
                E2AEnvelope::read(black_box(&c1), &e2a::ReadOptions::canonical())
                    .map(|r| r.value)
                    .ok(),
            );
        });
        op!("envelope_write", "derive_baseline", move || {
            black_box(serde_json::to_string(black_box(&plain)).ok());
        });
        let e = env.clone();
        op!("envelope_write", "canonical", move || {
            black_box(black_box(&e).to_json());
        });
        let e4 = envelope.clone();
        op!("envelope_roundtrip", "derive_baseline", move || {
            let p: Option<PlainEnvelope> = serde_json::from_str(black_box(&e4)).ok();
            black_box(p.map(|p| serde_json::to_string(&p).ok()));
        });
        let e5 = envelope.clone();
        op!("envelope_roundtrip", "value_baseline", move || {
            let v: Option<Value> = serde_json::from_str(black_box(&e5)).ok();
            black_box(v.map(|v| v.to_string()));
        });
        let e6 = envelope.clone();
        op!("envelope_roundtrip", "lenient", move || {
            black_box(E2AEnvelope::from_json(black_box(&e6)).map(|e| e.to_json()).ok());
        });
        op!("envelope_roundtrip", "lenient_legacy_shape", move || {
            black_box(E2AEnvelope::from_json(black_box(LEGACY)).map(|e| e.to_json()).ok());
        });
    }
    {
        let c1 = chunk.clone();
        op!("chunk_read", "derive_baseline", move || {
            black_box(serde_json::from_str::<PlainResponse>(black_box(&c1)).ok());
        });
        let c2 = chunk.clone();
        op!("chunk_read", "value_baseline", move || {
            black_box(serde_json::from_str::<Value>(black_box(&c2)).ok());
        });
        let c3 = chunk.clone();
        op!("chunk_read", "lenient", move || {
            black_box(E2AResponse::from_json(black_box(&c3)).ok());
        });
        let c4 = chunk.clone();
        op!("chunk_read", "strict", move || {
            black_box(
                E2AResponse::read(black_box(&c4), &e2a::ReadOptions::canonical())
                    .map(|r| r.value)
                    .ok(),
            );
        });
        op!("chunk_write", "derive_baseline", move || {
            black_box(serde_json::to_string(black_box(&plain_resp)).ok());
        });
        let r = resp.clone();
        op!("chunk_write", "canonical", move || {
            black_box(black_box(&r).to_json());
        });
        let c5 = chunk.clone();
        op!("chunk_roundtrip", "derive_baseline", move || {
            let p: Option<PlainResponse> = serde_json::from_str(black_box(&c5)).ok();
            black_box(p.map(|p| serde_json::to_string(&p).ok()));
        });
        let c6 = chunk.clone();
        op!("chunk_roundtrip", "lenient", move || {
            black_box(E2AResponse::from_json(black_box(&c6)).map(|r| r.to_json()).ok());
        });
    }
    {
        let c1 = chunk.clone();
        op!("adapters", "value_parse_write_baseline", move || {
            let v: Option<Value> = serde_json::from_str(black_box(&c1)).ok();
            black_box(v.map(|v| v.to_string()));
        });
        let mut prompt = env.clone();
        prompt.method = Some("session/prompt".into());
        op!("adapters", "acp_envelope_to_call", move || {
            black_box(
                e2a::acp::envelope_to_jsonrpc_call(black_box(&prompt))
                    .map(|c| c.to_value())
                    .ok(),
            );
        });
        let err = E2AResponse::from_value(&json!({"response_kind": "e2a.error", "jsonrpc_id": 1,
            "body": {"code": "E2A.X", "message": "boom", "details": {"d": 1}}}))
        .expect("error frame");
        op!("adapters", "acp_response_to_jsonrpc", move || {
            black_box(e2a::acp::response_to_jsonrpc_response(black_box(&err)));
        });
        let ev = E2AResponse::from_value(&json!({"response_kind": "a2a.stream_event",
            "body": {"branch": "status_update", "payload": {"taskId": "t", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}}}}))
        .expect("stream event");
        op!("adapters", "a2a_stream_payload", move || {
            black_box(e2a::a2a::response_to_stream_payload(black_box(&ev)));
        });
        let legacy_chunk =
            e2a::legacy::AgentResponseChunk::from_value(&json!({"request_id": "r1", "channel_id": "web",
            "payload": {"event_type": "chat.delta", "content": "Hello, world"}}))
            .expect("chunk");
        op!("adapters", "wire_encode_chunk", move || {
            black_box(e2a::wire::encode_agent_chunk(black_box(&legacy_chunk), "resp", 1, true).to_string());
        });
        let frame: Value = serde_json::from_str(&chunk).expect("frame");
        op!("adapters", "wire_parse_chunk", move || {
            black_box(e2a::wire::parse_chunk(black_box(&frame)).ok());
        });
    }
    {
        let canonical = env.to_json();
        let c1 = canonical.clone();
        op!("schema_validation", "derive_baseline", move || {
            black_box(serde_json::from_str::<PlainEnvelope>(black_box(&c1)).ok());
        });
        let v: Value = serde_json::from_str(&canonical).expect("value");
        op!("schema_validation", "jsonschema_validate", move || {
            black_box(
                e2a::E2AEnvelope::read_value(black_box(&v), &e2a::ReadOptions::canonical())
                    .map(|r| r.value)
                    .ok(),
            );
        });
    }
    {
        let fs = frames(1000, 50);
        let f1 = fs.clone();
        op!("stream_validator", "vec_push_baseline", move || {
            let mut v = Vec::with_capacity(f1.len());
            for f in &f1 {
                v.push((f.request_id.clone(), f.sequence));
            }
            black_box(v);
        });
        op!("stream_validator", "validate_1000_frames", move || {
            let mut v = StreamValidator::new();
            for f in &fs {
                v.push(f);
            }
            black_box(v.finish());
        });
    }
    {
        let fs = frames(2000, 100);
        let jsonl: String = fs.iter().map(|f| f.to_json() + "\n").collect();
        let bytes = jsonl.len() as u64;
        let j1 = jsonl.clone();
        op!("validate_throughput", "serde_json_lines_baseline", move || {
            for l in j1.lines() {
                black_box(serde_json::from_str::<Value>(l).ok());
            }
        });
        let j2 = jsonl.clone();
        op!("validate_throughput", "strict_plus_stream", move || {
            let mut v = StreamValidator::new();
            for l in j2.lines() {
                if let Ok(r) = E2AResponse::read(l, &e2a::ReadOptions::canonical()).map(|r| r.value) {
                    v.push(&r);
                }
            }
            black_box(v.finish());
        });
        op!("validate_throughput", "lenient_plus_stream", move || {
            let mut v = StreamValidator::new();
            for l in jsonl.lines() {
                if let Ok(r) = E2AResponse::from_json(l) {
                    v.push(&r);
                }
            }
            black_box(v.finish());
        });
        THROUGHPUT_BYTES.store(bytes, Ordering::Relaxed);
    }
    let mut groups: Vec<String> = ops.iter().map(|o| o.0.clone()).collect();
    groups.dedup();
    for g in &groups {
        let mut group = c.benchmark_group(g.as_str());
        if g == "validate_throughput" {
            group.throughput(Throughput::Bytes(THROUGHPUT_BYTES.load(Ordering::Relaxed)));
        }
        for (og, id, f) in &ops {
            if og == g {
                group.bench_function(id.as_str(), |b| b.iter(f));
            }
        }
        group.finish();
    }
    ops
}

static THROUGHPUT_BYTES: AtomicU64 = AtomicU64::new(0);

fn median_ns(group: &str, id: &str) -> Option<f64> {
    let dir = std::env::var("CARGO_TARGET_DIR").unwrap_or_else(|_| format!("{}/target", env!("CARGO_MANIFEST_DIR")));
    let text = std::fs::read_to_string(format!("{dir}/criterion/{group}/{id}/new/estimates.json")).ok()?;
    let v: Value = serde_json::from_str(&text).ok()?;
    v["median"]["point_estimate"].as_f64()
}

fn main() {
    let mut c = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .configure_from_args();
    let ops = benches(&mut c);
    c.final_summary();
    println!(
        "\n{:<22} {:<28} {:>12} {:>9} {:>11}",
        "group", "benchmark", "median", "ratio", "allocs/op"
    );
    for (g, id, f) in &ops {
        let base = BASELINES
            .iter()
            .find(|(bg, _)| bg == g)
            .and_then(|(bg, bid)| median_ns(bg, bid));
        let Some(m) = median_ns(g, id) else { continue };
        let before = ALLOCS.load(Ordering::Relaxed);
        for _ in 0..100 {
            f();
        }
        let allocs = (ALLOCS.load(Ordering::Relaxed) - before) as f64 / 100.0;
        let ratio = base.map(|b| format!("{:.2}x", m / b)).unwrap_or_default();
        let median = if m > 1e6 {
            format!("{:.2} ms", m / 1e6)
        } else {
            format!("{:.0} ns", m)
        };
        let extra = if g == "validate_throughput" {
            format!(
                "  {:.0} MB/s",
                THROUGHPUT_BYTES.load(Ordering::Relaxed) as f64 / (m / 1e9) / 1e6
            )
        } else if g == "stream_validator" && id != "vec_push_baseline" {
            format!("  {:.1} M frames/s", 1000.0 / (m / 1e9) / 1e6)
        } else {
            String::new()
        };
        println!("{g:<22} {id:<28} {median:>12} {ratio:>9} {allocs:>11.1}{extra}");
    }
}
