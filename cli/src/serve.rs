//! `e2a serve`: the E2A gateway (`e2a-gateway`) in front of an embedded or remote agent.

use std::net::SocketAddr;
use std::path::PathBuf;

use e2a_gateway::config_file::{ConfigFile, Override, Running};
use e2a_gateway::{Auth, Reloadable};

/// Options of `e2a serve`. Each sets a key of the config file (named in its help) and wins
/// over the file; a flag not given leaves the file's value, else the schema's default.
#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    /// A TOML config file (see `e2a config schema`; `e2a config check FILE` checks one).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Address to listen on; port 0 picks a free port [key server.bind; default 127.0.0.1:8080].
    #[arg(long)]
    pub bind: Option<SocketAddr>,
    /// File holding the accepted bearer token(s), one per line [key server.token_file;
    /// default: $E2A_TOKEN, else none].
    #[arg(long)]
    pub token_file: Option<PathBuf>,
    /// The root agent: `echo`, `script:FILE` (scenarios, see gateway/README.md), `e2a:URL`
    /// (another server speaking E2A over HTTP), `a2a:URL` (a remote A2A 1.0 agent, its card at
    /// URL/.well-known/agent-card.json) or `acp:CMD` [key agent; default echo].
    #[arg(long)]
    pub agent: Option<String>,
    /// Bearer token file for the `e2a:URL` or `a2a:URL` agent, sent to that URL's origin only
    /// [key agent_token_file; default: $E2A_AGENT_TOKEN].
    #[arg(long)]
    pub agent_token_file: Option<PathBuf>,
    /// Options of `acp:CMD` agents.
    #[command(flatten)]
    pub acp_backend: crate::agent::BackendArgs,
    /// Listen on a non-loopback address without a credential [key server.insecure_no_auth].
    #[arg(long)]
    pub insecure_no_auth: bool,
    /// Most streams open at once per agent (past it: 503 with Retry-After) [key
    /// server.max_streams; default 1024].
    #[arg(long)]
    pub max_streams: Option<u64>,
    /// Seconds open streams may run after SIGTERM before they are cut off (the process exits
    /// at most 2 s after that, whatever the clients do) [key server.drain_secs; default 10].
    #[arg(long)]
    pub drain_secs: Option<u64>,
    /// Most connections open at once (past it: 503 with Retry-After; lowered to what the
    /// open-files limit allows) [key server.max_connections; default 4096].
    #[arg(long)]
    pub max_connections: Option<u64>,
    /// Seconds a request head may take to arrive (and an idle kept-alive connection may stay)
    /// [key server.header_timeout_secs; default 10].
    #[arg(long)]
    pub header_timeout_secs: Option<u64>,
    /// Also serve A2A 1.0: the agent card, JSON-RPC (`--a2a-path`) and HTTP+JSON bindings
    /// [key a2a.enabled].
    #[arg(long)]
    pub a2a: bool,
    /// Where A2A tasks and the frames of E2A and AG-UI runs are kept: `sqlite:PATH` (survives
    /// restarts), `postgres://USER@HOST/DB` (one database several gateways share: a run is
    /// resumable on any of them; `postgres:URL` works too) or `memory`. Default with `--a2a`:
    /// `sqlite:e2a-tasks.db`; without `--a2a` and `--store`, runs are kept in memory only
    /// [key store.url].
    #[arg(long)]
    pub store: Option<String>,
    /// Most connections to a `postgres:` store (one more listens for the other gateways) [key
    /// store.pool; default 16].
    #[arg(long)]
    pub store_pool: Option<u64>,
    /// A PEM file of CA certificates to trust for a `postgres:` store's TLS (besides the
    /// Mozilla roots): a managed database's CA bundle, or your own CA's certificate.
    /// TLS follows the URL's `sslmode` (`disable`, `prefer` (default), `require`); when used,
    /// the server's certificate is always verified [key store.ca_file].
    #[arg(long)]
    pub store_ca: Option<PathBuf>,
    /// Seconds a gateway's lease on a running task lasts in a `postgres:` store: when a gateway
    /// dies, its tasks read FAILED on the others this long after [key store.lease_secs;
    /// default 30].
    #[arg(long)]
    pub lease_secs: Option<u64>,
    /// Hours a finished A2A task (and its events) is kept after its last update [key
    /// store.task_retention_hours; default 168].
    #[arg(long)]
    pub task_retention_hours: Option<u64>,
    /// Most finished A2A tasks kept (the least recently updated are forgotten first) [key
    /// store.max_finished_tasks; default 100000].
    #[arg(long)]
    pub max_finished_tasks: Option<u64>,
    /// MiB the finished A2A tasks of a `memory` store may take (the least recently updated are
    /// forgotten first, never the last to finish) [key store.max_memory_task_mib; default 512].
    #[arg(long)]
    pub max_memory_task_mib: Option<u64>,
    /// Hours an ended E2A or AG-UI run (its frames, its Idempotency-Key record) is kept in a
    /// store that keeps runs (sqlite:, postgres:), for Last-Event-ID and the run resource [key
    /// store.run_retention_hours; default 168].
    #[arg(long)]
    pub run_retention_hours: Option<u64>,
    /// Most ended E2A and AG-UI runs kept in a store that keeps runs (the least recently
    /// written are forgotten first) [key store.max_finished_runs; default 100000].
    #[arg(long)]
    pub max_finished_runs: Option<u64>,
    /// Path of the A2A JSON-RPC binding [key a2a.path; default /a2a].
    #[arg(long)]
    pub a2a_path: Option<String>,
    /// Prefix of the A2A HTTP+JSON routes (`/a2a/agents/writer` serves
    /// `/a2a/agents/writer/message:send`, `…/tasks/{id}` and the card there too) [key
    /// a2a.rest_path; default: none].
    #[arg(long)]
    pub a2a_rest_path: Option<String>,
    /// The public base URL clients reach the gateway at (path prefix included), for the agent
    /// card's interface URLs when it sits behind a proxy [key server.public_url].
    #[arg(long)]
    pub public_url: Option<String>,
    /// A JSON file with the agent card's name, description, version, skills and default modes
    /// [key a2a.card_file].
    #[arg(long)]
    pub a2a_card: Option<PathBuf>,
    /// Development only: allow A2A push notification webhooks over plain http and on loopback,
    /// private and link-local addresses (refused by default: SSRF) [key a2a.push.allow_private].
    #[arg(long)]
    pub push_allow_private: bool,
    /// Attempts to deliver one push notification before it is recorded as failed [key
    /// a2a.push.max_attempts; default 8].
    #[arg(long)]
    pub push_max_attempts: Option<u64>,
    /// Also serve AG-UI over SSE: `POST /agui` and `POST /agents/{name}/agui` take a
    /// RunAgentInput and stream AG-UI events [key agui.enabled].
    #[arg(long)]
    pub agui: bool,
    /// Export spans (OpenTelemetry) to this OTLP/HTTP collector, e.g. `http://127.0.0.1:4318`
    /// [key telemetry.otlp_endpoint].
    #[arg(long, value_name = "URL")]
    pub otlp_endpoint: Option<String>,
    /// Log lines on stderr as `text` (default) or `json` (one object per line) [key
    /// log.format]. The level is `$E2A_LOG` (default `info`: an access line per request, why a
    /// request was refused).
    #[arg(long, value_name = "FORMAT", value_parser = ["text", "json"])]
    pub log_format: Option<String>,
}

/// Each flag's key in the config file, by the flag's clap id. A test checks that every flag of
/// `e2a serve` but `--config` is here.
pub const FLAG_KEYS: &[(&str, &str)] = &[
    ("bind", "/server/bind"),
    ("token_file", "/server/token_file"),
    ("agent", "/agent"),
    ("agent_token_file", "/agent_token_file"),
    ("approve", "/acp/approve"),
    ("allow_fs", "/acp/allow_fs"),
    ("agent_env", "/acp/env"),
    ("workspace_root", "/acp/workspace_root"),
    ("insecure_no_auth", "/server/insecure_no_auth"),
    ("max_streams", "/server/max_streams"),
    ("drain_secs", "/server/drain_secs"),
    ("max_connections", "/server/max_connections"),
    ("header_timeout_secs", "/server/header_timeout_secs"),
    ("a2a", "/a2a/enabled"),
    ("store", "/store/url"),
    ("store_pool", "/store/pool"),
    ("store_ca", "/store/ca_file"),
    ("lease_secs", "/store/lease_secs"),
    ("task_retention_hours", "/store/task_retention_hours"),
    ("max_finished_tasks", "/store/max_finished_tasks"),
    ("max_memory_task_mib", "/store/max_memory_task_mib"),
    ("run_retention_hours", "/store/run_retention_hours"),
    ("max_finished_runs", "/store/max_finished_runs"),
    ("a2a_path", "/a2a/path"),
    ("a2a_rest_path", "/a2a/rest_path"),
    ("public_url", "/server/public_url"),
    ("a2a_card", "/a2a/card_file"),
    ("push_allow_private", "/a2a/push/allow_private"),
    ("push_max_attempts", "/a2a/push/max_attempts"),
    ("agui", "/agui/enabled"),
    ("otlp_endpoint", "/telemetry/otlp_endpoint"),
    ("log_format", "/log/format"),
];

impl ServeArgs {
    /// The flags given, as values laid over the config file. Paths are made absolute, since
    /// the file's relative paths start at its own directory.
    pub fn overrides(&self) -> Vec<Override> {
        use serde_json::Value;
        let path = |p: &PathBuf| -> Value {
            std::path::absolute(p)
                .unwrap_or_else(|_| p.clone())
                .display()
                .to_string()
                .into()
        };
        let b = &self.acp_backend;
        let given: Vec<(&str, Option<Value>)> = vec![
            ("bind", self.bind.map(|a| a.to_string().into())),
            ("token_file", self.token_file.as_ref().map(path)),
            ("agent", self.agent.clone().map(Into::into)),
            ("agent_token_file", self.agent_token_file.as_ref().map(path)),
            ("approve", (!b.approve.is_empty()).then(|| b.approve.clone().into())),
            ("allow_fs", b.allow_fs.then_some(true.into())),
            (
                "agent_env",
                (!b.agent_env.is_empty()).then(|| b.agent_env.clone().into()),
            ),
            ("workspace_root", b.workspace_root.as_ref().map(path)),
            ("insecure_no_auth", self.insecure_no_auth.then_some(true.into())),
            ("max_streams", self.max_streams.map(Into::into)),
            ("drain_secs", self.drain_secs.map(Into::into)),
            ("max_connections", self.max_connections.map(Into::into)),
            ("header_timeout_secs", self.header_timeout_secs.map(Into::into)),
            ("a2a", self.a2a.then_some(true.into())),
            ("store", self.store.clone().map(Into::into)),
            ("store_pool", self.store_pool.map(Into::into)),
            ("store_ca", self.store_ca.as_ref().map(path)),
            ("lease_secs", self.lease_secs.map(Into::into)),
            ("task_retention_hours", self.task_retention_hours.map(Into::into)),
            ("max_finished_tasks", self.max_finished_tasks.map(Into::into)),
            ("max_memory_task_mib", self.max_memory_task_mib.map(Into::into)),
            ("run_retention_hours", self.run_retention_hours.map(Into::into)),
            ("max_finished_runs", self.max_finished_runs.map(Into::into)),
            ("a2a_path", self.a2a_path.clone().map(Into::into)),
            ("a2a_rest_path", self.a2a_rest_path.clone().map(Into::into)),
            ("public_url", self.public_url.clone().map(Into::into)),
            ("a2a_card", self.a2a_card.as_ref().map(path)),
            ("push_allow_private", self.push_allow_private.then_some(true.into())),
            ("push_max_attempts", self.push_max_attempts.map(Into::into)),
            ("agui", self.agui.then_some(true.into())),
            ("otlp_endpoint", self.otlp_endpoint.clone().map(Into::into)),
            ("log_format", self.log_format.clone().map(Into::into)),
        ];
        given
            .into_iter()
            .filter_map(|(id, v)| {
                let pointer = FLAG_KEYS.iter().find(|(f, _)| *f == id)?.1;
                Some(Override {
                    pointer: pointer.to_string(),
                    value: v?,
                    flag: format!("--{}", id.replace('_', "-")),
                })
            })
            .collect()
    }
}

/// The configuration of `args`: its `--config` file with the flags laid over it, or the flags
/// alone.
pub fn load(args: &ServeArgs) -> Result<ConfigFile, String> {
    let overrides = args.overrides();
    // every problem at once, as `e2a config check` reports them
    ConfigFile::load_checked(args.config.as_deref(), &overrides).map_err(|errors| crate::config::lines(&errors))
}

/// The store `store.url` names (`sqlite:e2a-tasks.db` when A2A is on and it names none).
async fn open_store(file: &ConfigFile) -> Result<Option<e2a_gateway::store::Stores>, String> {
    use e2a_gateway::store::{PgOptions, StoreSpec};
    let store = &file.settings.store;
    let Some(name) = file.store_url() else {
        return Ok(None);
    };
    let spec: StoreSpec = name
        .parse()
        .map_err(|e| file.error("/store/url", format!("{e}")).to_string())?;
    let options = PgOptions {
        pool_size: usize::try_from(store.pool.get()).unwrap_or(usize::MAX),
        ca_file: store.ca_file.as_deref().map(|f| file.path(f)),
        ..PgOptions::default()
    };
    spec.open(options).await.map(Some)
}

/// On SIGHUP, reads the config file again (the flags still laid over it) and applies its
/// callers, tokens and agents ([`ConfigFile::reload_into`]): new and changed agents take the
/// requests from then on, removed ones finish what they have open; open streams go on. The
/// other keys apply after a restart (logged). A file with errors changes nothing.
fn reload_on_sighup(args: &ServeArgs, served: Reloadable, running: Running, built: Built) {
    #[cfg(unix)]
    {
        let path = args.config.clone();
        let overrides = args.overrides();
        tokio::spawn(async move {
            use tokio::signal::unix::{signal, SignalKind};
            let Ok(mut hup) = signal(SignalKind::hangup()) else {
                return;
            };
            let mut running = running;
            while hup.recv().await.is_some() {
                let loaded = ConfigFile::load_checked(path.as_deref(), &overrides);
                let applied =
                    loaded.and_then(|file| file.reload_into(&running, &served, built.0.clone(), built.1.clone()));
                match applied {
                    Ok((file, done)) => {
                        running = file;
                        let s = &done.swapped;
                        tracing::info!(
                            callers = done.callers,
                            added = ?s.added,
                            changed = ?s.changed,
                            removed = ?s.removed,
                            root_agent_changed = s.root,
                            "SIGHUP: callers, tokens and agents reloaded"
                        );
                        if !done.not_applied.is_empty() {
                            tracing::warn!(keys = ?done.not_applied, "SIGHUP: these keys changed in the file; they apply after a restart");
                        }
                    }
                    Err(errors) => {
                        tracing::warn!(errors = %crate::config::lines(&errors), "SIGHUP: the config file has errors; nothing reloaded");
                    }
                }
            }
        });
    }
    #[cfg(not(unix))]
    let _ = (args, served, running, built);
}

/// What the served gateway was built with besides its file: the store and the cards' URL.
type Built = (Option<e2a_gateway::store::Stores>, Option<String>);

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
    let file = load(args)?;
    let telemetry = crate::telemetry::init(&file)?;
    let server = file.settings.server.clone();
    let bind: SocketAddr = server
        .bind
        .parse()
        .map_err(|e| file.error("/server/bind", format!("not an address: {e}")).to_string())?;
    let auth = Auth::from_config(&file).map_err(|errors| crate::config::lines(&errors))?;
    e2a_gateway::check_bind(bind, &auth, server.insecure_no_auth)?;
    let secured = auth.is_enabled();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let store = runtime.block_on(open_store(&file))?;
    let a2a_banner = match (file.settings.a2a.enabled, &store) {
        (true, Some(store)) => Some((file.settings.a2a.path.clone(), store.name())),
        _ => None,
    };
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(bind)
            .await
            .map_err(|e| format!("cannot listen on {bind}: {e}"))?;
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        // the cards name the address the gateway is bound to, not a Host header a client
        // chose; bound to every interface, only server.public_url can say which one is public
        let bound_url = if addr.ip().is_unspecified() {
            if a2a_banner.is_some() && server.public_url.is_none() {
                tracing::warn!(%addr, "no --public-url: the agent card's URLs follow the client's Host header");
            }
            None
        } else {
            Some(format!("http://{addr}"))
        };
        let running = Running::new(file.clone());
        let gateway = file
            .gateway(store.clone(), bound_url.clone())
            .map_err(|errors| crate::config::lines(&errors))?;
        let base = format!("http://{addr}");
        let banner = banner(
            &file,
            &gateway,
            &base,
            secured,
            a2a_banner.as_ref().map(|(_, s)| s.as_str()),
        );
        // a closed stdout (the reader went away) must not stop the server
        use std::io::Write;
        let mut out = std::io::stdout();
        let _ = out.write_all(banner.as_bytes()).and_then(|()| out.flush());
        let served = Reloadable::new(gateway);
        reload_on_sighup(args, served.clone(), running, (store, bound_url));
        served
            .clone()
            .serve(listener, e2a_gateway::shutdown_signal())
            .await
            .map_err(|e| e.to_string())?;
        // the frame log's last lines are written before the process exits
        served.current().flush_frame_log(std::time::Duration::from_secs(2));
        tracing::info!("stopped");
        Ok::<(), String>(())
    })?;
    // the spans still batched go out and the log lines still queued are written
    telemetry.finish();
    Ok(())
}

/// What `e2a serve` prints when it listens at `base`: the agent, every endpoint the gateway
/// mounted (what is printed is what is routed), where traces go, and a request to try.
fn banner(file: &ConfigFile, gateway: &e2a_gateway::Gateway, base: &str, secured: bool, tasks: Option<&str>) -> String {
    let name = file
        .settings
        .default_agent
        .clone()
        .unwrap_or_else(|| file.settings.agent.clone());
    let auth_header = if secured {
        " -H \"Authorization: Bearer $TOKEN\""
    } else {
        ""
    };
    let requests = e2a_gateway::bindings::e2a_http::REQUESTS_PATH;
    let traces = match &file.settings.telemetry {
        Some(t) => t
            .otlp_endpoint
            .as_deref()
            .map(|e| format!("  OTLP traces to {}/v1/traces\n", e.trim_end_matches('/')))
            .unwrap_or_default(),
        None => String::new(),
    };
    let tasks = tasks.map(|store| format!(" (A2A tasks: {store})")).unwrap_or_default();
    format!(
        "e2a gateway (agent: {name}) listening on {base}{tasks}\n{endpoints}{traces}\
         try:  curl -N{auth_header} -H 'Accept: text/event-stream' -H 'Content-Type: application/json' \
         -d '{{\"method\":\"chat.send\",\"params\":{{\"query\":\"hi\"}}}}' {base}{requests}\n",
        endpoints = gateway.describe(base)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The schema of the key at `pointer` of the config file, following `$ref`s.
    fn key_schema(pointer: &str) -> Option<serde_json::Value> {
        let schema = e2a::bundled_schema();
        let mut at = schema.pointer("/$defs/GatewayFile")?.clone();
        for seg in pointer.split('/').skip(1) {
            if let Some(r) = at.get("$ref").and_then(|r| r.as_str()) {
                at = schema.pointer(&r.replacen('#', "", 1))?.clone();
            }
            at = at.pointer(&format!("/properties/{seg}"))?.clone();
        }
        Some(at)
    }

    #[test]
    fn every_flag_sets_a_key_of_the_config_schema() {
        use clap::Args;
        let command = ServeArgs::augment_args(clap::Command::new("serve"));
        for arg in command.get_arguments() {
            let id = arg.get_id().as_str();
            if id == "config" {
                continue;
            }
            let pointer = FLAG_KEYS
                .iter()
                .find(|(f, _)| *f == id)
                .unwrap_or_else(|| panic!("--{id} has no key in FLAG_KEYS"))
                .1;
            let key = key_schema(pointer).unwrap_or_else(|| panic!("{pointer} is not in the config schema"));
            let doc = key["description"].as_str().unwrap_or_default();
            let flag = format!("`--{}`", id.replace('_', "-"));
            assert!(doc.contains(&flag), "{pointer}'s description does not name {flag}");
        }
    }

    #[test]
    fn flags_given_win_over_the_file() {
        use clap::Parser;
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            serve: ServeArgs,
        }
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("e2a.toml");
        std::fs::write(&path, "[server]\nmax_streams = 5\ndrain_secs = 3\n").expect("write");
        let cli = Cli::parse_from([
            "serve",
            "--config",
            path.to_str().expect("utf-8"),
            "--max-streams",
            "9",
            "--a2a",
        ]);
        let file = load(&cli.serve).expect("loads");
        assert_eq!(file.settings.server.max_streams.get(), 9);
        assert_eq!(
            file.settings.server.drain_secs, 3,
            "the file's value where no flag is given"
        );
        assert!(file.settings.a2a.enabled);
        let cli = Cli::parse_from(["serve", "--config", path.to_str().expect("utf-8"), "--lease-secs", "0"]);
        let e = load(&cli.serve).expect_err("0 is below the minimum");
        assert_eq!(e, "flag --lease-secs: store.lease_secs: less than minimum 1");
    }
}
