//! A complete ACP agent over stdio in ~60 lines: every `session/prompt` is normalized to an
//! E2A envelope, answered by an echo "model" as an E2A response stream, and projected back onto
//! ACP (`session/update` notifications, then the `session/prompt` result). `session/cancel`
//! is honoured as ACP requires (the turn ends with `stopReason: cancelled`, not an error).
//!
//! ```sh
//! echo '{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"hi"}]}}' \
//!   | cargo run -q --example acp_echo_agent
//! ```

use std::io::{BufRead, Write};

use e2a::acp::stream::AcpStreamProjector;
use e2a::acp::{self, JsonRpcIngress};
use e2a::stream::ResponseStream;
use serde_json::{json, Value};

fn main() -> std::io::Result<()> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for line in std::io::stdin().lock().lines() {
        let line = line?;
        let msg: Value = match e2a::Limits::default().parse(&line) {
            Ok(v) => v,
            Err(e) => {
                let err = json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": e.to_string()}});
                writeln!(out, "{err}")?;
                continue;
            }
        };
        let ingress = JsonRpcIngress::from_value(&json!({
            "method": msg["method"], "params": msg["params"], "jsonrpc_id": msg["id"],
            "session_id": msg["params"]["sessionId"], "channel": "acp"}));
        let env = match ingress {
            Ok(i) => acp::envelope_from_jsonrpc(&i),
            Err(e) => {
                let err =
                    json!({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32602, "message": e.to_string()}});
                writeln!(out, "{err}")?;
                continue;
            }
        };
        match env.method.as_deref() {
            Some("session/prompt") => {
                let text = acp::parse_prompt_blocks(&env.params).text;
                let mut frames = ResponseStream::for_request(&env);
                let mut acp =
                    AcpStreamProjector::new(env.session_id.clone().unwrap_or_default(), env.jsonrpc_id.clone());
                for word in format!("You said: {text}").split_inclusive(' ') {
                    for m in acp.push(&frames.text(word)) {
                        writeln!(out, "{m}")?;
                    }
                }
                for m in acp.push(&frames.complete(json!({}))) {
                    writeln!(out, "{m}")?;
                }
            }
            Some("session/new") => writeln!(
                out,
                "{}",
                json!({"jsonrpc": "2.0", "id": msg["id"], "result": acp::session_new_result("s1")})
            )?,
            _ if acp::stream::is_cancel(&env) => {} // nothing in flight in this synchronous example
            _ => writeln!(
                out,
                "{}",
                json!({"jsonrpc": "2.0", "id": msg["id"],
                "error": {"code": -32601, "message": "method not found"}})
            )?,
        }
        out.flush()?;
    }
    Ok(())
}
