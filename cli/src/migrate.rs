//! `e2a migrate`: legacy agent-server logs (AgentRequest / AgentResponse / AgentResponseChunk
//! JSON lines) → canonical E2A JSONL, streaming in constant memory.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{BufWriter, IsTerminal, Write};

use e2a::legacy::{self, AgentResponse, AgentResponseChunk};
use e2a::{E2AEnvelope, E2AResponse, LegacyRule};
use serde_json::{json, Value};

/// One input message read into E2A: a request or a response frame.
pub(crate) enum Msg {
    Env(Box<E2AEnvelope>),
    Resp(Box<E2AResponse>),
}

/// What a legacy log line is (the library's classifier; E2A frames and envelopes read as
/// requests here, as a legacy log holds none).
fn kind(v: &Value) -> &'static str {
    match e2a::wire::classify(v) {
        e2a::wire::MessageShape::AgentResponse => "agent_response",
        e2a::wire::MessageShape::AgentResponseChunk => "agent_response_chunk",
        _ => "agent_request",
    }
}

/// The line's `timestamp` read the way the lenient reader does (numbers → ISO-8601 UTC,
/// strings kept), or `None`.
fn timestamp(v: &Value) -> Result<Option<String>, String> {
    let mut probe = serde_json::Map::new();
    if let Some(t) = v.get("timestamp") {
        probe.insert("timestamp".into(), t.clone());
    }
    e2a::E2AEnvelope::from_value(&Value::Object(probe))
        .map(|e| e.timestamp)
        .map_err(|e| e.to_string())
}

/// Converts one legacy record to E2A, with the legacy rules applied. `sequences` tracks the
/// next sequence of each open stream (entries are dropped when a stream completes, so memory
/// is bounded by the number of concurrently open streams).
pub(crate) fn legacy_to_e2a_rules(
    v: &Value,
    sequences: &mut HashMap<String, u64>,
) -> Result<(Msg, Vec<LegacyRule>), String> {
    match kind(v) {
        "agent_response" => {
            let r = AgentResponse::from_value(v).map_err(|e| e.to_string())?;
            let seq = sequences.remove(&r.request_id).unwrap_or(0);
            let id = format!("{}:{seq}", r.request_id);
            Ok((
                Msg::Resp(Box::new(legacy::response_from_agent_response(
                    &r,
                    &id,
                    seq,
                    timestamp(v)?,
                ))),
                Vec::new(),
            ))
        }
        "agent_response_chunk" => {
            let c = AgentResponseChunk::from_value(v).map_err(|e| e.to_string())?;
            let seq = sequences.get(&c.request_id).copied().unwrap_or(0);
            if c.is_complete {
                sequences.remove(&c.request_id);
            } else {
                sequences.insert(c.request_id.clone(), seq + 1);
            }
            let id = format!("{}:{seq}", c.request_id);
            Ok((
                Msg::Resp(Box::new(legacy::response_from_agent_chunk(
                    &c,
                    &id,
                    seq,
                    true,
                    timestamp(v)?,
                ))),
                Vec::new(),
            ))
        }
        _ => {
            let l = e2a::E2AEnvelope::read_value(v, &e2a::ReadOptions::lenient()).map_err(|e| e.to_string())?;
            if l.value.request_id.as_deref().is_none_or(|r| r.trim().is_empty()) {
                return Err("/request_id: a legacy request needs a non-empty request_id".into());
            }
            Ok((Msg::Env(Box::new(l.value)), l.rules))
        }
    }
}

/// [`legacy_to_e2a_rules`] without the rules.
pub(crate) fn legacy_to_e2a(v: &Value, sequences: &mut HashMap<String, u64>) -> Result<Msg, String> {
    legacy_to_e2a_rules(v, sequences).map(|(m, _)| m)
}

/// Runs a migration; returns the exit code (0 all lines converted, 1 some rejected, 2 I/O).
pub fn run(input: &str, output: Option<&str>, rejects: Option<&str>, progress: bool) -> u8 {
    let out = match open_output(output) {
        Ok(out) => out,
        Err(e) => {
            eprintln!("e2a migrate: {e}");
            return 2;
        }
    };
    let mut out = BufWriter::with_capacity(1 << 16, out);
    let mut migration = Migration {
        rejects_path: rejects.map(str::to_string).unwrap_or_else(|| match output {
            Some(p) if p != "-" => format!("{p}.rejects.jsonl"),
            _ => "e2a-migrate.rejects.jsonl".into(),
        }),
        ..Migration::default()
    };
    let bar = progress_bar(input, progress);
    let r = crate::input::for_each_line(input, |line, text| {
        if let Some(b) = &bar {
            b.inc(text.len() as u64 + 1);
        }
        migration.line(line, text, &mut out)
    });
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let flushed = out
        .flush()
        .and_then(|()| migration.rejects_out.as_mut().map_or(Ok(()), Write::flush));
    if let Err(e) = r.and(flushed) {
        eprintln!("e2a migrate: {}", migration.io_error.unwrap_or_else(|| e.to_string()));
        return 2;
    }
    migration.summary()
}

/// Where the converted lines go: the file `output` (created), or stdout for none or `-`.
fn open_output(output: Option<&str>) -> Result<Box<dyn Write>, String> {
    Ok(match output {
        Some(p) if p != "-" => match File::create(p) {
            Ok(f) => Box::new(f),
            Err(e) => return Err(format!("{p}: {e}")),
        },
        _ => Box::new(std::io::stdout()),
    })
}

/// A progress bar over the bytes of `input`, when asked for, stderr is a terminal and the
/// input's size is known.
fn progress_bar(input: &str, progress: bool) -> Option<indicatif::ProgressBar> {
    let total = std::fs::metadata(input).map(|m| m.len()).unwrap_or(0);
    if progress && std::io::stderr().is_terminal() && total > 0 {
        let b = indicatif::ProgressBar::new(total);
        b.set_style(
            indicatif::ProgressStyle::with_template("{bar:40} {bytes}/{total_bytes} {bytes_per_sec} eta {eta}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        Some(b)
    } else {
        None
    }
}

/// A migration in progress: what was converted and rejected, the legacy rules fired, the next
/// sequence of each open stream, and the rejects file (created at the first reject).
#[derive(Default)]
struct Migration {
    counts: BTreeMap<&'static str, u64>,
    rules: BTreeMap<&'static str, u64>,
    sequences: HashMap<String, u64>,
    limits: e2a::Limits,
    rejects_path: String,
    rejects_out: Option<BufWriter<File>>,
    /// The rejects file could not be created: the message to end with.
    io_error: Option<String>,
}

impl Migration {
    /// Converts one input line and writes it to `out`, or writes it to the rejects file with
    /// the reason it was rejected.
    fn line(&mut self, line: usize, text: &str, out: &mut impl Write) -> std::io::Result<()> {
        let converted = self.limits.parse(text).map_err(|e| e.to_string()).and_then(|v| {
            let k = kind(&v);
            legacy_to_e2a_rules(&v, &mut self.sequences).map(|r| (k, r))
        });
        match converted {
            Ok((k, (msg, fired))) => {
                *self.counts.entry(k).or_default() += 1;
                for r in fired {
                    *self.rules.entry(r.as_str()).or_default() += 1;
                }
                let v = match msg {
                    Msg::Env(e) => e.to_value(),
                    Msg::Resp(r) => r.to_value(),
                };
                writeln!(out, "{v}")?;
            }
            Err(reason) => self.reject(line, text, reason)?,
        }
        Ok(())
    }

    /// Writes a rejected line to the rejects file, creating the file at the first reject.
    fn reject(&mut self, line: usize, text: &str, reason: String) -> std::io::Result<()> {
        *self.counts.entry("rejected").or_default() += 1;
        if self.rejects_out.is_none() {
            match File::create(&self.rejects_path) {
                Ok(f) => self.rejects_out = Some(BufWriter::new(f)),
                Err(e) => {
                    self.io_error = Some(format!("{}: {e}", self.rejects_path));
                    return Err(e);
                }
            }
        }
        if let Some(w) = self.rejects_out.as_mut() {
            writeln!(w, "{}", json!({"line": line, "reason": reason, "input": text}))?;
        }
        Ok(())
    }

    /// Prints the summary (JSON, on stderr); returns the exit code (1 when a line was rejected).
    fn summary(&self) -> u8 {
        let counts = &self.counts;
        let rejected = counts.get("rejected").copied().unwrap_or(0);
        eprintln!(
            "{}",
            json!({"migrated": {"agent_requests": counts.get("agent_request").copied().unwrap_or(0),
                "agent_responses": counts.get("agent_response").copied().unwrap_or(0),
                "agent_response_chunks": counts.get("agent_response_chunk").copied().unwrap_or(0)},
                "rejected": rejected, "rejects_file": if rejected > 0 { Value::from(self.rejects_path.as_str()) } else { Value::Null },
                "legacy_rules": self.rules, "open_streams_at_end": self.sequences.len()})
        );
        u8::from(rejected > 0)
    }
}
