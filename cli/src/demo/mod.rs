//! `e2a demo`: the gateway, embedded, answers one question to a client of each protocol it
//! speaks — E2A (SSE), A2A (JSON-RPC streaming), AG-UI, and ACP through a spawned `e2a acp`
//! relaying to it — and what each client was shown is printed one protocol after the other: the
//! same answer (reasoning, a tool call and its result, text, an artifact) in four forms.
//!
//! The gateway is the library's (`e2a_gateway::Gateway`, as `e2a serve` builds it): the script
//! agent playing `script.json`, a memory store, 127.0.0.1 on a port the system picks; it stops
//! when the demo ends. `--json` prints every message whole, one JSON line each.

mod clients;
mod show;

use serde_json::{json, Value};

/// What the demo asks.
pub const QUESTION: &str = "What is the weather in Oslo?";

/// The script the embedded agent plays.
const SCRIPT: &str = include_str!("script.json");

/// What the answer holds, that every client must be shown (else the demo fails: a protocol lost
/// content).
const MUST_SHOW: [&str; 3] = ["get_weather", "and clear in Oslo.", "light rain"];

/// A protocol a client of the demo speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// E2A over HTTP, the answer as SSE.
    E2a,
    /// A2A 1.0 JSON-RPC, `SendStreamingMessage`.
    A2a,
    /// AG-UI, a run's events as SSE.
    Agui,
    /// ACP over stdio, through `e2a acp`.
    Acp,
}

impl Protocol {
    /// Its name, as the output shows it.
    fn name(self) -> &'static str {
        match self {
            Protocol::E2a => "E2A",
            Protocol::A2a => "A2A",
            Protocol::Agui => "AG-UI",
            Protocol::Acp => "ACP",
        }
    }

    /// The step of its messages in `--json` output.
    fn step(self) -> &'static str {
        match self {
            Protocol::E2a => "e2a.frame",
            Protocol::A2a => "a2a.event",
            Protocol::Agui => "agui.event",
            Protocol::Acp => "acp.message",
        }
    }

    /// What one of its messages is (a label) and says (a short text).
    fn summary(self, message: &Value) -> (String, String) {
        match self {
            Protocol::E2a => show::e2a(message),
            Protocol::A2a => show::a2a(message),
            Protocol::Agui => show::agui(message),
            Protocol::Acp => show::acp(message),
        }
    }
}

/// What a client was shown.
pub struct Shown {
    /// Its protocol.
    pub protocol: Protocol,
    /// How it asked (the route or command).
    pub how: String,
    /// Every message it was shown, whole, in order.
    pub messages: Vec<Value>,
}

/// Runs the demo; `Err` when the gateway could not be started or a client was not shown the
/// whole answer.
pub fn run(json_out: bool) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(demo(json_out))
}

async fn demo(json_out: bool) -> Result<(), String> {
    use e2a_gateway::backends::ScriptAgent;
    use e2a_gateway::bindings::a2a::A2aConfig;
    use e2a_gateway::store::Stores;
    use e2a_gateway::{Gateway, GatewayConfig};

    let agent = ScriptAgent::from_json(SCRIPT).map_err(|e| format!("the demo's script: {e}"))?;
    let gateway = Gateway::new(agent, GatewayConfig::default())
        .with_a2a(A2aConfig::default(), Stores::memory())
        .with_agui();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| format!("cannot listen on 127.0.0.1: {e}"))?;
    let base = format!("http://{}", listener.local_addr().map_err(|e| e.to_string())?);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(gateway.serve(listener, async {
        let _ = stopped.await;
    }));
    if json_out {
        println!(
            "{}",
            json!({"step": "gateway", "value": {"url": base, "asked": QUESTION}})
        );
    } else {
        println!("e2a demo: one question, answered through the gateway to a client of each protocol\n");
        println!("  gateway  {base}  (embedded: the script agent, a memory store; stopped at the end)");
        println!("  asked    {QUESTION}");
    }
    let mut lost = Vec::new();
    for protocol in [Protocol::E2a, Protocol::A2a, Protocol::Agui, Protocol::Acp] {
        let shown = clients::ask(protocol, &base)
            .await
            .map_err(|e| format!("the {} client: {e}", protocol.name()))?;
        print(&shown, json_out);
        let text = Value::Array(shown.messages).to_string();
        lost.extend(
            MUST_SHOW
                .iter()
                .filter(|w| !text.contains(*w))
                .map(|w| format!("{} lacks {w:?}", protocol.name())),
        );
    }
    let _ = stop.send(());
    let _ = server.await;
    if !lost.is_empty() {
        return Err(format!("a client was not shown the whole answer: {}", lost.join("; ")));
    }
    if !json_out {
        println!("\nThe same answer in four protocols. Serve your own agent: e2a serve --help");
    }
    Ok(())
}

/// Prints what a client was shown: a line per message, or (`json_out`) each message whole.
fn print(shown: &Shown, json_out: bool) {
    let protocol = shown.protocol;
    if json_out {
        for m in &shown.messages {
            println!("{}", json!({"step": protocol.step(), "value": m}));
        }
        return;
    }
    println!(
        "\n{} · {} · {} messages",
        protocol.name(),
        shown.how,
        shown.messages.len()
    );
    for m in &shown.messages {
        let (label, text) = protocol.summary(m);
        println!("  {label:<26} {text}");
    }
}
