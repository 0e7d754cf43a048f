//! Response log lines (E2A §12.7): one JSON object per line per response, secrets redacted,
//! large bodies truncated with a marker (the line is never dropped). Reading the lines back
//! and sorting by sequence reproduces each stream.

use std::io::BufRead;

use serde_json::{json, Map, Value};

use crate::error::Result;
use crate::types::E2AResponse;

/// Default cap of one log line, in bytes.
pub const DEFAULT_MAX_LINE_BYTES: usize = 64 * 1024;

/// Marker key put in a truncated body.
pub const TRUNCATED_KEY: &str = "_e2a_truncated";

/// One log line for a response: the redacted canonical record (so it carries `request_id`,
/// `response_id`, `sequence`, `is_final`, `response_kind`, `timestamp` and everything else):
/// secret-named keys and token-shaped text anywhere (`Bearer …`, `sk-…`, `ghp_…`, JWTs…,
/// see [`crate::redact::redact_outbound`]) are replaced.
/// When the line would exceed `max_bytes`, `body` is replaced by
/// `{"_e2a_truncated": true, "original_bytes": N, "preview": "<start of the body JSON>"}`
/// (the other fields are never cut, so a line can only exceed `max_bytes` when they alone do).
///
/// ```
/// let r = e2a::E2AResponse::new(e2a::ResponseKind::E2aChunk, serde_json::json!({"delta": "x".repeat(1000)}));
/// let line = e2a::log::log_line(&r, 900);
/// assert!(line.len() <= 900);
/// assert!(line.contains("_e2a_truncated"));
/// ```
pub fn log_line(resp: &E2AResponse, max_bytes: usize) -> String {
    let mut v = resp.to_redacted_value();
    crate::redact::redact_outbound(&mut v);
    let line = v.to_string();
    if line.len() <= max_bytes {
        return line;
    }
    let body = v.get("body").map(Value::to_string).unwrap_or_default();
    let rest = line.len() - body.len();
    let mut cut = max_bytes.saturating_sub(rest + 80).min(body.len());
    loop {
        while !body.is_char_boundary(cut) {
            cut -= 1;
        }
        v["body"] = json!({TRUNCATED_KEY: true, "original_bytes": body.len(), "preview": &body[..cut]});
        let out = v.to_string();
        // escaping can grow the preview; shrink until the line fits (or the preview is empty)
        if out.len() <= max_bytes || cut == 0 {
            return out;
        }
        cut = cut.saturating_sub((out.len() - max_bytes).max(cut / 4));
    }
}

/// True when a logged response had its body truncated.
pub fn is_truncated(resp: &E2AResponse) -> bool {
    resp.body.get(TRUNCATED_KEY) == Some(&Value::Bool(true))
}

/// Reads log lines back (blank lines skipped) and returns the responses grouped by
/// `request_id` and sorted by `sequence` — the streams as they were produced.
///
/// ```
/// let r = e2a::E2AResponse::new(e2a::ResponseKind::E2aChunk, serde_json::json!({}));
/// let text = format!("{}\n\n", e2a::log::log_line(&r, 4096));
/// assert_eq!(e2a::log::read_log(std::io::Cursor::new(text)).unwrap(), vec![r]);
/// ```
pub fn read_log<R: BufRead>(reader: R) -> Result<Vec<E2AResponse>> {
    let mut out = Vec::new();
    for (i, line) in reader.lines().enumerate() {
        let line = line.map_err(|e| crate::Error::Unsupported(format!("line {}: {e}", i + 1)))?;
        if line.trim().is_empty() {
            continue;
        }
        out.push(E2AResponse::from_json(&line)?);
    }
    out.sort_by(|a, b| a.request_id.cmp(&b.request_id).then(a.sequence.cmp(&b.sequence)));
    Ok(out)
}

/// The minimal §12.7 record of a response (`request_id`, `response_id`, `sequence`,
/// `is_final`, `response_kind`, `timestamp`, `status`), for compact logs.
pub fn summary(resp: &E2AResponse) -> Map<String, Value> {
    let v = json!({"request_id": resp.request_id, "response_id": resp.response_id, "sequence": resp.sequence,
        "is_final": resp.is_final, "response_kind": resp.response_kind, "timestamp": resp.timestamp,
        "status": resp.status});
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}
