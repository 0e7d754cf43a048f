//! `e2a acp`: an ACP agent over stdio (what an editor runs as its agent command) in front of
//! any gateway agent; and the options of `acp:CMD` backends, shared with `e2a serve`.

use std::path::PathBuf;

use std::sync::Arc;

use e2a_gateway::backends::{AgentOptions, AgentSpec};
use e2a_gateway::bindings::acp::HistoryLimits;
use e2a_gateway::bindings::acp::{AcpRelay, AcpServer, AcpServerConfig, ConfigOptionDecl, ModeDecl};
use e2a_gateway::config_file::ConfigFile;
use e2a_gateway::store::{MemoryStore, SqliteStore, StoreSpec, Stores};

/// Options of `e2a acp`.
#[derive(clap::Args, Debug)]
pub struct AcpArgs {
    /// The agent: `echo`, `script:FILE`, `e2a:URL`, `a2a:URL` (a remote A2A 1.0 agent) or
    /// `acp:CMD ARGS` (another ACP agent, relayed transparently: the editor sees its
    /// capabilities, sessions, modes and commands, and answers its permission and file requests).
    /// With `--config FILE`: the name of one of its `[agents]` (its spec, token and the
    /// file's `[acp]` options).
    #[arg(long, default_value = "echo")]
    pub agent: String,
    /// A config file of `e2a serve` whose named agents `--agent NAME` may name.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Bearer token file for the `e2a:URL` agent (default: $E2A_AGENT_TOKEN).
    #[arg(long)]
    pub agent_token_file: Option<PathBuf>,
    /// A session mode offered to the editor, `ID` or `ID=NAME` (repeatable; the first is every
    /// new session's). The current mode reaches the agent in each turn's envelope
    /// (`channel_context.acp_session.modeId`). Not for `acp:` agents, which declare their own.
    #[arg(long = "mode", value_name = "ID[=NAME]")]
    pub modes: Vec<ModeDecl>,
    /// A session config option offered to the editor, `ID=VALUE,VALUE…` (repeatable; the first
    /// value is the default), e.g. `model=fast,smart`. Current values reach the agent in each
    /// turn's envelope (`channel_context.acp_session.configOptions`).
    #[arg(long = "config-option", value_name = "ID=VALUE,…")]
    pub config_options: Vec<ConfigOptionDecl>,
    /// Where sessions and their replay history are kept: `sqlite:PATH` or `memory` (lost at
    /// exit). Default: `sqlite:` a file in the user's state directory
    /// ($XDG_STATE_HOME/e2a/acp-sessions.db, else ~/.local/state/e2a/acp-sessions.db), so
    /// `session/load` works after the editor restarts `e2a acp`.
    #[arg(long)]
    pub store: Option<String>,
    /// Most messages of a session `session/load` replays (the latest are kept).
    #[arg(long, default_value_t = 500)]
    pub history_messages: usize,
    /// Most bytes of text of one replayed message (the rest is cut).
    #[arg(long, default_value_t = 16 * 1024)]
    pub history_text_bytes: usize,
    /// The log file: what `e2a acp` logs at `info` (or `$E2A_LOG`), rotated at 10 MiB, three
    /// copies kept (stderr still gets warnings and errors; stdout only the protocol). Default:
    /// `$XDG_STATE_HOME/e2a/logs/acp.log` (`~/.local/state/…`); `off`: none.
    #[arg(long, value_name = "PATH|off")]
    pub log_file: Option<String>,
    /// The `params.workspace_dir` of every prompt that names none (E2A §11.6): an `acp:` agent
    /// behind works there for it, made on demand under its `--workspace-root`.
    #[arg(long, value_name = "DIR")]
    pub workspace_dir: Option<String>,
    /// Options of `acp:CMD` agents.
    #[command(flatten)]
    pub backend: crate::agent::BackendArgs,
}

/// The default session store of `e2a acp`: a file in the user's state directory, or `None`
/// when there is no such directory (no `$XDG_STATE_HOME`, no `$HOME`).
fn default_store() -> Option<PathBuf> {
    let state = std::env::var_os("XDG_STATE_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(|h| PathBuf::from(h).join(".local/state"))
        })?;
    Some(state.join("e2a").join("acp-sessions.db"))
}

/// The session store `--store` names (see [`AcpArgs::store`]).
fn open_store(args: &AcpArgs) -> Result<Stores, String> {
    let spec = match args.store.as_deref() {
        Some(name) => name.parse::<StoreSpec>().map_err(|e| format!("--store: {e}"))?,
        None => match default_store() {
            Some(path) => {
                if let Some(dir) = path.parent() {
                    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
                }
                StoreSpec::Sqlite(path)
            }
            None => {
                tracing::warn!("no state directory ($XDG_STATE_HOME, $HOME): sessions are kept in memory");
                StoreSpec::Memory
            }
        },
    };
    match spec {
        StoreSpec::Memory => Ok(Arc::new(MemoryStore::new()).into()),
        StoreSpec::Sqlite(path) => Ok(Arc::new(SqliteStore::open(&path).map_err(|e| e.to_string())?).into()),
        StoreSpec::Postgres(_) => {
            Err("--store: ACP sessions are kept in memory or sqlite:PATH, not in PostgreSQL".into())
        }
    }
}

/// What `e2a acp` runs: the transparent hop to an ACP agent, or the ACP server in front of
/// any other agent.
enum Front {
    Relay(AcpRelay),
    Server(Arc<AcpServer>),
}

/// The agent `args` name: a spec and its options (from `--agent` and the flags, or from the
/// `--config` file's named agent), or the file's group of that name, built.
enum Named {
    Spec(AgentSpec, AgentOptions),
    Group(Arc<dyn e2a_gateway::Agent>),
}

/// See [`Named`].
fn agent_spec(args: &AcpArgs) -> Result<(Named, Option<ConfigFile>), String> {
    if let Some(path) = &args.config {
        let file = ConfigFile::load(path, &[]).map_err(|e| crate::config::lines(&e))?;
        if let Some(group) = file.named_group(&args.agent) {
            let group = group.map_err(|e| e.to_string())?;
            return Ok((Named::Group(group), Some(file)));
        }
        if let Some(named) = file.named_agent_spec(&args.agent) {
            if args.agent_token_file.is_some() || args.backend != crate::agent::BackendArgs::default() {
                return Err(format!(
                    "`{}` is configured in {}: its token and ACP options come from the file",
                    args.agent,
                    path.display()
                ));
            }
            let (spec, options) = named.map_err(|e| e.to_string())?;
            return Ok((Named::Spec(spec, options), Some(file)));
        }
        let names: Vec<&str> = file.settings.agents.keys().map(String::as_str).collect();
        return Err(format!(
            "no agent `{}` in {} (its agents: {})",
            args.agent,
            path.display(),
            names.join(", ")
        ));
    }
    let spec = args.agent.parse::<AgentSpec>().map_err(|e| e.to_string())?;
    let options = crate::agent::options(args.agent_token_file.as_ref(), &args.backend)?;
    Ok((Named::Spec(spec, options), None))
}

/// The front `args` ask for, or why it cannot run.
fn front(args: &AcpArgs) -> Result<Front, String> {
    let (named, file) = agent_spec(args)?;
    let (spec, options) = match named {
        Named::Spec(spec, options) => (spec, options),
        Named::Group(group) => return server(args, group, file.as_ref()),
    };
    if let AgentSpec::Acp(command) = &spec {
        if !args.backend.approve.is_empty()
            || args.backend.allow_fs
            || options.allow_fs
            || !options.policy.approve.is_empty()
        {
            return Err(
                "--approve and --allow-fs do not apply to an ACP agent behind `e2a acp`: \
                        its permission and file requests go to the editor"
                    .into(),
            );
        }
        if !args.modes.is_empty() || !args.config_options.is_empty() || args.store.is_some() {
            return Err(
                "--mode, --config-option and --store do not apply to an ACP agent: it declares \
                        its own modes and keeps its own sessions"
                    .into(),
            );
        }
        return AcpRelay::new(options.acp_process(command)).map(Front::Relay);
    }
    let agent = spec.build(&options).map_err(|e| e.to_string())?;
    server(args, agent, file.as_ref())
}

/// The ACP server in front of `agent`, as `args` and the config `file` say.
fn server(args: &AcpArgs, agent: Arc<dyn e2a_gateway::Agent>, file: Option<&ConfigFile>) -> Result<Front, String> {
    let config = AcpServerConfig {
        modes: args.modes.clone(),
        config_options: args.config_options.clone(),
        history: HistoryLimits {
            messages: args.history_messages,
            text_bytes: args.history_text_bytes,
        },
        workspace_dir: args.workspace_dir.clone(),
        ..AcpServerConfig::default()
    };
    let config = match file {
        Some(file) => with_file_limits(config, file)?,
        None => config,
    };
    AcpServer::with_store(agent, config, open_store(args)?).map(Front::Server)
}

/// Where `e2a acp` keeps its log by default: `$XDG_STATE_HOME/e2a/logs/acp.log`, else
/// `~/.local/state/e2a/logs/acp.log` (`None`: no home to put it in).
fn default_log_file() -> Option<PathBuf> {
    let state = match std::env::var_os("XDG_STATE_HOME").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(std::env::var_os("HOME").filter(|v| !v.is_empty())?).join(".local/state"),
    };
    Some(state.join("e2a/logs/acp.log"))
}

/// Size at which the log file is rotated (`acp.log` → `acp.log.1` …).
const LOG_FILE_BYTES: u64 = 10 * 1024 * 1024;
/// Rotated log files kept besides the current one.
const LOG_FILES_KEPT: u32 = 3;

/// The log file of `args` (`--log-file`, `off` for none, else [`default_log_file`]).
fn log_file(args: &AcpArgs) -> Option<PathBuf> {
    match args.log_file.as_deref() {
        Some("off") => None,
        Some(path) => Some(PathBuf::from(path)),
        None => default_log_file(),
    }
}

/// The logs of `e2a acp`: warnings and errors (or `$E2A_LOG`) on stderr, and everything at
/// `info` (or `$E2A_LOG`) in the rotated log file — an editor shows an agent's stderr poorly,
/// and stdout is the protocol's. A log file that cannot be opened is said on stderr. Returns
/// the log file, flushed before the process exits.
fn init_logs(args: &AcpArgs) -> Option<e2a_gateway::frame_log::LineFile> {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    use tracing_subscriber::Layer;
    let filter = |default: &str| {
        tracing_subscriber::EnvFilter::try_from_env("E2A_LOG")
            .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default))
    };
    let stderr = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_filter(filter("warn"));
    let path = log_file(args);
    let file = path.as_ref().and_then(|p| {
        match e2a_gateway::frame_log::LineFile::open(p, LOG_FILE_BYTES, LOG_FILES_KEPT, "acp log") {
            Ok(f) => Some(f),
            Err(e) => {
                eprintln!("e2a acp: cannot open the log file {}: {e}", p.display());
                None
            }
        }
    });
    let kept = file.clone();
    let file = file.map(|f| {
        tracing_subscriber::fmt::layer()
            .with_writer(Lines(f))
            .with_ansi(false)
            .with_filter(filter("info"))
    });
    let _ = tracing_subscriber::registry().with(stderr).with(file).try_init();
    if let Some(p) = path {
        tracing::info!(agent = %args.agent, log = %p.display(), "e2a acp started");
    }
    kept
}

/// A [`LineFile`](e2a_gateway::frame_log::LineFile) as the writer of formatted log events: each
/// event's text is buffered, then written line by line.
struct Lines(e2a_gateway::frame_log::LineFile);

/// One event's text, written to the file when it is dropped.
struct Event {
    file: e2a_gateway::frame_log::LineFile,
    text: Vec<u8>,
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Lines {
    type Writer = Event;

    fn make_writer(&'a self) -> Event {
        Event {
            file: self.0.clone(),
            text: Vec::new(),
        }
    }
}

impl std::io::Write for Event {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.text.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        let text = String::from_utf8_lossy(&self.text);
        for line in text.lines().filter(|l| !l.is_empty()) {
            self.file.write(line.to_string());
        }
    }
}

/// `config` with what the config file says every run is held to: `server.max_streams` (turns
/// at once) and `log.frames` (the frame log); the editor still sees an agent's own error text
/// and a turn has no deadline of its own (the editor waits, or cancels).
fn with_file_limits(mut config: AcpServerConfig, file: &ConfigFile) -> Result<AcpServerConfig, String> {
    let gateway = file.gateway_config(e2a_gateway::Auth::none());
    config.gateway.max_streams = gateway.max_streams;
    config.gateway.frame_log = file.frame_log().map_err(|e| e.to_string())?;
    Ok(config)
}

/// Serves ACP on stdin/stdout until the client closes stdin. Logs go to stderr (warnings and
/// errors, or `$E2A_LOG`) and to the log file ([`log_file`]), never to stdout.
pub fn run(args: &AcpArgs) -> u8 {
    let log = init_logs(args);
    let code = serve(args);
    // the log file's last lines are written before the process exits (its writer is a thread)
    if let Some(log) = log {
        log.flush(std::time::Duration::from_secs(2));
    }
    code
}

/// [`run`] once the logs are set up: the exit code.
fn serve(args: &AcpArgs) -> u8 {
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("e2a acp: {e}");
            return 2;
        }
    };
    // built inside the runtime: the agents and stores may start tasks
    let front = match runtime.block_on(async { front(args) }) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("e2a acp: {e}");
            return 2;
        }
    };
    runtime.block_on(async move {
        match front {
            Front::Relay(relay) => relay.serve(tokio::io::stdin(), tokio::io::stdout()).await,
            Front::Server(server) => server.serve(tokio::io::stdin(), tokio::io::stdout()).await,
        }
    });
    // a still-blocked stdin reader must not keep the process alive
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    0
}
