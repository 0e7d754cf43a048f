use std::sync::Arc;
use std::time::Duration;

use e2a::E2AEnvelope;
use futures_util::StreamExt;
use serde_json::json;

use crate::agent::{Agent, FrameStream, RequestContext, SharedFrames};

/// The default agent: a reasoning chunk, a tool call and its result, the reply word by word
/// as text chunks, then `e2a.complete` with the whole reply — the demo's echo agent.
#[derive(Debug, Clone, Default)]
pub struct EchoAgent {
    delay: Duration,
}

impl EchoAgent {
    /// An echo agent that answers at once.
    pub fn new() -> Self {
        EchoAgent::default()
    }

    /// Waits `delay` before every frame (to watch a stream arrive).
    pub fn with_delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }
}

impl Agent for EchoAgent {
    fn run(&self, request: E2AEnvelope, ctx: RequestContext) -> FrameStream {
        Box::pin(self.run_shared(request, ctx).map(Arc::unwrap_or_clone))
    }

    /// The frames, made shared (each moves as a pointer from here on).
    fn run_shared(&self, request: E2AEnvelope, ctx: RequestContext) -> SharedFrames {
        let delay = self.delay;
        let mut s = ctx.frames_for(&request);
        Box::pin(async_stream::stream! {
            let prompt = super::request_text(&request);
            let reply = format!("You said: {prompt}");
            let pause = || async move {
                if !delay.is_zero() {
                    tokio::time::sleep(delay).await;
                }
            };
            pause().await;
            yield Arc::new(s.reasoning("The user said something; echo it back."));
            pause().await;
            let args = json!({"text": prompt});
            yield Arc::new(s.tool_call("echo-1", "echo", args));
            pause().await;
            yield Arc::new(s.tool_result("echo-1", json!({"length": prompt.chars().count()})));
            let words: Vec<&str> = reply.split(' ').collect();
            for (i, w) in words.iter().enumerate() {
                pause().await;
                let piece = if i + 1 < words.len() { format!("{w} ") } else { (*w).to_string() };
                yield Arc::new(s.text(&piece));
            }
            pause().await;
            yield Arc::new(s.answer(&reply, Some("end_turn")));
        })
    }

    fn name(&self) -> String {
        "echo".into()
    }
}
