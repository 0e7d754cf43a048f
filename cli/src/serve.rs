//! `e2a serve`: the E2A gateway (`e2a-gateway`) in front of an embedded or remote agent.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use e2a_gateway::{Auth, Gateway, GatewayConfig};

/// Options of `e2a serve`.
#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    /// Address to listen on (port 0 picks a free port).
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub bind: SocketAddr,
    /// File holding the accepted bearer token(s), one per line (default: $E2A_TOKEN, else none).
    #[arg(long)]
    pub token_file: Option<PathBuf>,
    /// The agent: `echo`, `script:FILE` (scenarios, see gateway/README.md), `e2a:URL` (another
    /// server speaking E2A over HTTP), `a2a:URL` (a remote A2A 1.0 agent, its card at
    /// URL/.well-known/agent-card.json) or `acp:CMD`.
    #[arg(long, default_value = "echo")]
    pub agent: String,
    /// Bearer token file for the `e2a:URL` or `a2a:URL` agent, sent to that URL's origin only
    /// (default: $E2A_AGENT_TOKEN).
    #[arg(long)]
    pub agent_token_file: Option<PathBuf>,
    /// Options of `acp:CMD` agents.
    #[command(flatten)]
    pub acp_backend: crate::agent::BackendArgs,
    /// Listen on a non-loopback address without a token.
    #[arg(long)]
    pub insecure_no_auth: bool,
    /// Most streams open at once (past it: 503 with Retry-After).
    #[arg(long, default_value_t = 1024)]
    pub max_streams: usize,
    /// Seconds open streams may run after SIGTERM before they are cut off (the process exits
    /// at most 2 s after that, whatever the clients do).
    #[arg(long, default_value_t = 10)]
    pub drain_secs: u64,
    /// Most connections open at once (past it: 503 with Retry-After; lowered to what the
    /// open-files limit allows).
    #[arg(long, default_value_t = 4096)]
    pub max_connections: usize,
    /// Seconds a request head may take to arrive (and an idle kept-alive connection may stay).
    #[arg(long, default_value_t = 10)]
    pub header_timeout_secs: u64,
    /// Also serve A2A 1.0: the agent card, JSON-RPC (`--a2a-path`) and HTTP+JSON bindings.
    #[arg(long)]
    pub a2a: bool,
    /// Where A2A tasks and the frames of E2A and AG-UI runs are kept: `sqlite:PATH` (survives
    /// restarts), `postgres://USER@HOST/DB` (one database several gateways share: a run is
    /// resumable on any of them; `postgres:URL` works too) or `memory`. Default with `--a2a`:
    /// `sqlite:e2a-tasks.db`; without `--a2a` and `--store`, runs are kept in memory only.
    #[arg(long)]
    pub store: Option<String>,
    /// Most connections to a `postgres:` store (one more listens for the other gateways).
    #[arg(long, default_value_t = 16)]
    pub store_pool: usize,
    /// A PEM file of CA certificates to trust for a `postgres:` store's TLS (besides the
    /// Mozilla roots): a managed database's CA bundle, or your own CA's certificate.
    /// TLS follows the URL's `sslmode` (`disable`, `prefer` (default), `require`); when used,
    /// the server's certificate is always verified.
    #[arg(long)]
    pub store_ca: Option<PathBuf>,
    /// Seconds a gateway's lease on a running task lasts in a `postgres:` store: when a gateway
    /// dies, its tasks read FAILED on the others this long after.
    #[arg(long, default_value_t = 30)]
    pub lease_secs: u64,
    /// Hours a finished A2A task (and its events) is kept after its last update.
    #[arg(long, default_value_t = 168)]
    pub task_retention_hours: u64,
    /// Most finished A2A tasks kept (the least recently updated are forgotten first).
    #[arg(long, default_value_t = 100_000)]
    pub max_finished_tasks: usize,
    /// Path of the A2A JSON-RPC binding.
    #[arg(long, default_value = "/a2a")]
    pub a2a_path: String,
    /// Prefix of the A2A HTTP+JSON routes (`/a2a/agents/writer` serves
    /// `/a2a/agents/writer/message:send`, `…/tasks/{id}` and the card there too); default: none.
    #[arg(long, default_value = "")]
    pub a2a_rest_path: String,
    /// The public base URL clients reach the gateway at (path prefix included), for the agent
    /// card's interface URLs when it sits behind a proxy.
    #[arg(long)]
    pub public_url: Option<String>,
    /// A JSON file with the agent card's name, description, version, skills and default modes.
    #[arg(long)]
    pub a2a_card: Option<PathBuf>,
    /// Also serve AG-UI over SSE: `POST /agui` and `POST /agents/{name}/agui` take a
    /// RunAgentInput and stream AG-UI events.
    #[arg(long)]
    pub agui: bool,
}

/// The store `--store` names (`sqlite:e2a-tasks.db` with `--a2a` when it names none).
async fn open_store(args: &ServeArgs) -> Result<Option<Arc<dyn e2a_gateway::store::TaskStore>>, String> {
    use e2a_gateway::store::{PgOptions, StoreSpec};
    let Some(name) = args.store.as_deref().or(args.a2a.then_some(DEFAULT_STORE)) else {
        return Ok(None);
    };
    let spec: StoreSpec = name.parse().map_err(|e| format!("--store: {e}"))?;
    let options = PgOptions {
        pool_size: args.store_pool,
        ca_file: args.store_ca.clone(),
        ..PgOptions::default()
    };
    spec.open(options).await.map(Some)
}

/// The store of `--a2a` without `--store`.
const DEFAULT_STORE: &str = "sqlite:e2a-tasks.db";

/// The A2A configuration of `--a2a`.
fn a2a_setup(args: &ServeArgs) -> Result<e2a_gateway::bindings::a2a::A2aConfig, String> {
    use e2a_gateway::bindings::a2a::{A2aConfig, CardInfo};
    let card = match &args.a2a_card {
        Some(f) => {
            let text = std::fs::read_to_string(f).map_err(|e| format!("cannot read {}: {e}", f.display()))?;
            serde_json::from_str::<CardInfo>(&text).map_err(|e| format!("invalid card file {}: {e}", f.display()))?
        }
        None => CardInfo::default(),
    };
    if !args.a2a_path.starts_with('/') {
        return Err("--a2a-path must start with /".into());
    }
    if !(args.a2a_rest_path.is_empty() || args.a2a_rest_path.starts_with('/')) {
        return Err("--a2a-rest-path must start with /".into());
    }
    let config = A2aConfig {
        jsonrpc_path: args.a2a_path.clone(),
        rest_path: args.a2a_rest_path.trim_end_matches('/').to_string(),
        public_url: args.public_url.clone(),
        card,
        task_retention: std::time::Duration::from_secs(args.task_retention_hours.saturating_mul(3600)),
        max_finished_tasks: args.max_finished_tasks,
        ..A2aConfig::default()
    };
    Ok(config)
}

fn auth(token_file: Option<&PathBuf>) -> Result<Auth, String> {
    match token_file {
        Some(f) => Auth::from_file(f).map_err(|e| e.to_string()),
        None => Auth::from_env(e2a_gateway::config::TOKEN_ENV)
            .map(Option::unwrap_or_default)
            .map_err(|e| e.to_string()),
    }
}

/// Runs the gateway until SIGTERM or Ctrl-C; exit code 0 after a clean drain.
pub fn run(args: &ServeArgs) -> u8 {
    match serve(args) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("e2a serve: {e}");
            2
        }
    }
}

fn serve(args: &ServeArgs) -> Result<(), String> {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("E2A_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
    let auth = auth(args.token_file.as_ref())?;
    e2a_gateway::check_bind(args.bind, &auth, args.insecure_no_auth)?;
    let agent = crate::agent::agent(&args.agent, args.agent_token_file.as_ref(), &args.acp_backend)?;
    let config = GatewayConfig {
        auth,
        max_streams: args.max_streams,
        drain_timeout: std::time::Duration::from_secs(args.drain_secs),
        lease: std::time::Duration::from_secs(args.lease_secs),
        server: e2a_gateway::web::server::ServerLimits {
            max_connections: args.max_connections.max(1),
            header_read_timeout: std::time::Duration::from_secs(args.header_timeout_secs.max(1)),
            ..Default::default()
        },
        ..GatewayConfig::default()
    };
    let secured = config.auth.is_enabled();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    if args.lease_secs == 0 {
        return Err("--lease-secs must be at least 1".into());
    }
    let store = runtime.block_on(open_store(args))?;
    let mut a2a = match (args.a2a, &store) {
        (true, Some(store)) => Some((a2a_setup(args)?, store.clone())),
        _ => None,
    };
    let a2a_banner = a2a.as_ref().map(|(c, store)| (c.jsonrpc_path.clone(), store.name()));
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(args.bind)
            .await
            .map_err(|e| format!("cannot listen on {}: {e}", args.bind))?;
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        let name = agent.name();
        let mut gateway = Gateway::with_agent(agent, config);
        if let Some(store) = store {
            gateway = gateway.with_store(store);
        }
        if let Some((mut a2a_config, store)) = a2a.take() {
            // the card names the address the gateway is bound to, not a Host header a client
            // chose; bound to every interface, only --public-url can say which one is public
            if a2a_config.public_url.is_none() {
                if addr.ip().is_unspecified() {
                    tracing::warn!(%addr, "no --public-url: the agent card's URLs follow the client's Host header");
                } else {
                    a2a_config.public_url = Some(format!("http://{addr}"));
                }
            }
            gateway = gateway.with_a2a(a2a_config, store);
        }
        if args.agui {
            gateway = gateway.with_agui();
        }
        let base = format!("http://{addr}");
        let auth_header = if secured {
            " -H \"Authorization: Bearer $TOKEN\""
        } else {
            ""
        };
        let (requests, schema, health) = (
            e2a_gateway::bindings::e2a_http::REQUESTS_PATH,
            e2a_gateway::bindings::e2a_http::SCHEMA_PATH,
            e2a_gateway::bindings::e2a_http::HEALTH_PATH,
        );
        let banner = format!(
            "e2a gateway (agent: {name}) listening on {base}\n  \
             POST {base}{requests}  Accept: application/json | text/event-stream | application/x-ndjson\n  \
             GET  {base}{schema}\n  \
             GET  {base}{health}\n\
             try:  curl -N{auth_header} -H 'Accept: text/event-stream' -H 'Content-Type: application/json' \
             -d '{{\"method\":\"chat.send\",\"params\":{{\"query\":\"hi\"}}}}' {base}{requests}\n"
        );
        let banner = match &a2a_banner {
            Some((path, store)) => format!(
                "{banner}A2A 1.0 (tasks: {store}):\n  \
                 GET  {base}{card}\n  \
                 POST {base}{path}  JSON-RPC (SendMessage, SendStreamingMessage, GetTask, ListTasks, CancelTask, SubscribeToTask)\n  \
                 POST {base}/message:send | /message:stream, GET {base}/tasks[/ID], POST {base}/tasks/ID:cancel | :subscribe\n",
                card = e2a_gateway::bindings::a2a::card::CARD_PATH
            ),
            None => banner,
        };
        let banner = if args.agui {
            format!(
                "{banner}AG-UI over SSE:\n  \
                 POST {base}{agui}  (and {base}/agents/{name}/agui)  RunAgentInput → text/event-stream\n",
                agui = e2a_gateway::bindings::agui::AGUI_PATH
            )
        } else {
            banner
        };
        // a closed stdout (the reader went away) must not stop the server
        use std::io::Write;
        let mut out = std::io::stdout();
        let _ = out.write_all(banner.as_bytes()).and_then(|()| out.flush());
        gateway
            .serve(listener, e2a_gateway::shutdown_signal())
            .await
            .map_err(|e| e.to_string())?;
        tracing::info!("stopped");
        Ok::<(), String>(())
    })
}
