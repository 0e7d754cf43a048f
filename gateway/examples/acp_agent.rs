//! A complete ACP agent over stdio: your own [`Agent`] (here a tiny "weather" agent that
//! thinks, calls a tool and streams its answer) behind [`AcpServer`], which speaks ACP v1 —
//! `initialize`, sessions, `session/prompt` streamed as `session/update`s, `session/cancel`,
//! permission requests. It passes the official ACP client (`gateway/tests/clients/run.sh`).
//!
//! ```sh
//! cargo build -p e2a-gateway --example acp_agent
//! # point an editor at target/debug/examples/acp_agent, or talk to it by hand:
//! printf '%s\n' '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}' \
//!   '{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}' \
//!   | target/debug/examples/acp_agent
//! ```
//!
//! To put an existing agent (echo, a script, an E2A/A2A server, another ACP agent) behind ACP
//! without writing code, use `e2a acp --agent …`.

use std::sync::Arc;
use std::time::Duration;

use e2a::stream::ResponseStream;
use e2a::E2AEnvelope;
use e2a_gateway::backends::request_text;
use e2a_gateway::bindings::acp::{AcpServer, AcpServerConfig};
use e2a_gateway::{Agent, FrameStream, RequestContext};
use serde_json::json;

/// Thinks, calls a "weather" tool, then streams the answer word by word.
struct Weather;

impl Agent for Weather {
    fn run(&self, request: E2AEnvelope, ctx: RequestContext) -> FrameStream {
        Box::pin(async_stream::stream! {
            let question = request_text(&request);
            let mut s = ResponseStream::for_request(&request);
            yield s.reasoning("The user asks something; look the weather up first.");
            yield s.tool_call("call-1", "get_weather", json!({"city": "Paris"}));
            yield s.tool_result("call-1", json!({"temp_c": 21}));
            let answer = format!("You asked \"{question}\". It is 21 °C in Paris.");
            for word in answer.split_inclusive(' ') {
                // a cancelled turn stops here; the gateway ends it with stopReason: cancelled
                tokio::select! {
                    _ = ctx.cancel.cancelled() => return,
                    _ = tokio::time::sleep(Duration::from_millis(20)) => {}
                }
                yield s.text(word);
            }
            yield s.complete(json!({"content": answer}));
        })
    }

    fn name(&self) -> String {
        "weather".into()
    }
}

#[tokio::main]
async fn main() {
    // stdout carries ACP frames only: logs (if any) go to stderr
    let config = AcpServerConfig {
        name: "weather".into(),
        title: "Weather (e2a example)".into(),
        ..AcpServerConfig::default()
    };
    AcpServer::new(Arc::new(Weather), config)
        .serve(tokio::io::stdin(), tokio::io::stdout())
        .await;
}
