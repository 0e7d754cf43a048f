//! `e2a convert`: JSONL in, JSONL out, one protocol to another, streaming.

use std::collections::HashMap;
use std::io::Write;

use clap::ValueEnum;
use e2a::a2a::jsonrpc::{envelope_from_request, A2aHeaders};
use e2a::a2a::stream::{jsonrpc_result, A2aStreamProjector};
use e2a::acp::stream::AcpStreamProjector;
use e2a::frame::Projector;
use e2a::{E2AEnvelope, E2AResponse};
use serde_json::Value;

use crate::input::{for_each_line, is_response};
use crate::migrate::Msg;

/// A protocol on one side of a conversion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Proto {
    /// ACP JSON-RPC (requests in; calls, session updates and responses out)
    Acp,
    /// A2A JSON-RPC (requests in; StreamResponse events out)
    A2a,
    /// E2A envelopes and responses (lenient in, canonical out)
    E2a,
    /// Legacy agent-server records (AgentRequest / AgentResponse / AgentResponseChunk)
    Legacy,
}

/// Supported directions, for `--help` and errors.
pub const DIRECTIONS: &str = "every --from to every --to, through E2A. Input lines are requests (ACP \
    or A2A JSON-RPC, E2A envelopes, legacy AgentRequests) or responses (E2A frames, legacy \
    AgentResponse/AgentResponseChunk). Requests become the target's request (ACP call, A2A \
    SendMessage, E2A envelope, legacy AgentRequest); response frames become the target's messages \
    (ACP session/update + result, A2A StreamResponse events, E2A frames, legacy records).";

struct Converter {
    from: Proto,
    to: Proto,
    acp: HashMap<Option<String>, AcpStreamProjector>,
    a2a: HashMap<Option<String>, A2aStreamProjector>,
    sequences: HashMap<String, u64>,
}

impl Converter {
    fn read(&mut self, v: &Value) -> Result<Msg, String> {
        let err = |e: e2a::Error| e.to_string();
        Ok(match self.from {
            Proto::E2a if is_response(v) => Msg::Resp(Box::new(E2AResponse::from_value(v).map_err(err)?)),
            Proto::E2a => Msg::Env(Box::new(E2AEnvelope::from_value(v).map_err(err)?)),
            Proto::Acp => {
                // the ACP session is the transport's (`params.sessionId`), as the gateway's ACP
                // server passes it; the reader itself takes only `session_id` (as the reference)
                let ingress = e2a::acp::JsonRpcIngress::from_value(&serde_json::json!({
                    "method": v.get("method"), "params": v.get("params"), "jsonrpc_id": v.get("id"),
                    "session_id": v.pointer("/params/sessionId").filter(|s| s.is_string())}))
                .map_err(err)?;
                Msg::Env(Box::new(e2a::acp::envelope_from_jsonrpc(&ingress)))
            }
            Proto::A2a => Msg::Env(Box::new(envelope_from_request(v, &A2aHeaders::default()).map_err(err)?)),
            Proto::Legacy => crate::migrate::legacy_to_e2a(v, &mut self.sequences)?,
        })
    }

    fn write(&mut self, msg: Msg, out: &mut dyn Write) -> Result<(), String> {
        let mut emit = |v: Value| writeln!(out, "{v}").map_err(|e| e.to_string());
        match (self.to, msg) {
            (Proto::E2a, Msg::Env(e)) => emit(e.to_value()),
            (Proto::E2a, Msg::Resp(r)) => emit(r.to_value()),
            (Proto::Acp, Msg::Env(e)) => emit(
                e2a::acp::envelope_to_jsonrpc_call(&e)
                    .map_err(|e| e.to_string())?
                    .to_value(),
            ),
            (Proto::Acp, Msg::Resp(r)) => {
                let p = self.acp.entry(r.request_id.clone()).or_insert_with(|| {
                    AcpStreamProjector::new(r.session_id.clone().unwrap_or_default(), r.jsonrpc_id.clone())
                });
                for m in p.push_record(&r) {
                    emit(m)?;
                }
                if r.is_final {
                    self.acp.remove(&r.request_id); // bounded memory on long inputs
                }
                Ok(())
            }
            (Proto::A2a, Msg::Resp(r)) => {
                let p = self.a2a.entry(r.request_id.clone()).or_insert_with(|| {
                    A2aStreamProjector::new(
                        r.task_id.clone().or_else(|| r.request_id.clone()).unwrap_or_default(),
                        r.context_id
                            .clone()
                            .or_else(|| r.session_id.clone())
                            .unwrap_or_default(),
                    )
                });
                for ev in p.push_record(&r) {
                    emit(jsonrpc_result(r.jsonrpc_id.as_ref(), ev.to_value()))?;
                }
                if r.is_final {
                    self.a2a.remove(&r.request_id);
                }
                Ok(())
            }
            (Proto::A2a, Msg::Env(e)) => {
                // An A2A SendMessage request carrying the envelope's prompt text.
                let text = e2a::acp::parse_prompt_blocks(&e.params).text;
                let mut message = serde_json::json!({"messageId": e.message_id.clone().or(e.request_id.clone()).unwrap_or_default(),
                    "role": "ROLE_USER", "parts": [{"text": text}]});
                if let Some(c) = e.context_id.clone().or(e.session_id.clone()) {
                    message["contextId"] = c.into();
                }
                if let Some(t) = &e.task_id {
                    message["taskId"] = t.clone().into();
                }
                let id = e
                    .jsonrpc_id
                    .as_ref()
                    .map(|i| serde_json::to_value(i).unwrap_or(Value::Null))
                    .unwrap_or(Value::Null);
                emit(serde_json::json!({"jsonrpc": "2.0", "id": id,
                    "method": if e.is_stream { "SendStreamingMessage" } else { "SendMessage" },
                    "params": {"message": message,
                        "configuration": {"acceptedOutputModes": e.expected_output_modes}, "metadata": e.a2a_metadata}}))
            }
            (Proto::Legacy, Msg::Resp(r)) => {
                let v = if r.is_final && !r.is_stream {
                    e2a::legacy::response_to_agent_response(&r).map(|a| a.to_value())
                } else {
                    e2a::legacy::response_to_agent_chunk(&r).map(|c| c.to_value())
                };
                emit(v.map_err(|e| e.to_string())?)
            }
            (Proto::Legacy, Msg::Env(e)) => emit(serde_json::json!({
                "request_id": e.request_id.clone().unwrap_or_default(), "channel_id": e.channel.clone().unwrap_or_default(),
                "session_id": e.session_id, "chat_id": e.chat_id, "service_id": e.service_id, "agent_id": e.agent_id,
                "workspace_key": e.workspace_key, "req_method": e.method, "params": e.params, "is_stream": e.is_stream,
                "timestamp": e.timestamp, "metadata": if e.channel_context.is_empty() { Value::Null } else { Value::Object(e.channel_context.clone()) },
                "agent_ref": e.agent_ref})),
        }
    }
}

/// Runs a conversion; returns the exit code (0 ok, 1 some lines failed, 2 I/O error).
pub fn run(from: Proto, to: Proto, file: &str) -> u8 {
    let mut c = Converter {
        from,
        to,
        acp: HashMap::new(),
        a2a: HashMap::new(),
        sequences: HashMap::new(),
    };
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut failed = 0usize;
    let r = for_each_line(file, |line, text| {
        let result = e2a::Limits::default()
            .parse(text)
            .map_err(|e| e.to_string())
            .and_then(|v| c.read(&v))
            .and_then(|m| c.write(m, &mut out));
        if let Err(e) = result {
            failed += 1;
            eprintln!("{file}:{line}: {e}");
        }
        Ok(())
    });
    if let Err(e) = r.and_then(|()| out.flush()) {
        eprintln!("e2a convert: {file}: {e}");
        return 2;
    }
    u8::from(failed > 0)
}
