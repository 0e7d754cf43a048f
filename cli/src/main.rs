//! `e2a` — the E2A command-line tool for operators and gateway developers.

use std::io::Write;
use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand, ValueEnum};

/// mimalloc: the gateway's many small JSON allocations made glibc's malloc about 45 % of a
/// busy A2A server's CPU (its free lists fragment as stored tasks grow); the library leaves
/// the allocator to its embedder, the binary picks this one. Built without transparent huge
/// pages (`no_thp`): as the memory store grows, the kernel zeroing and splitting 2 MiB pages
/// for mimalloc's arenas took about a fifth of a busy A2A server's CPU (`clear_page_erms`).
/// Reached through [`allocator::MiMalloc`], which asks for an alignment only when one is needed.
#[global_allocator]
static ALLOCATOR: allocator::MiMalloc = allocator::MiMalloc;

mod acp;
mod agent;
mod allocator;
mod config;
mod convert;
mod demo;
mod input;
mod log_fields;
mod log_lines;
mod migrate;
mod serve;
mod telemetry;
mod validate;

/// E2A (Everything-to-Agent) command-line tool: the gateway (`serve`, `acp`, `config`), the
/// demo, and the message-log tools (`validate`, `convert`, `migrate`, `redact`).
#[derive(Parser)]
#[command(name = "e2a", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    Text,
    Json,
}

#[derive(Subcommand)]
enum Command {
    /// Start an embedded gateway (the script agent, a memory store, 127.0.0.1) and ask it one
    /// question as a client of each protocol — E2A (SSE), A2A (JSON-RPC streaming), AG-UI, and
    /// ACP through a spawned `e2a acp` — printing what each was shown: the same answer in four
    /// protocols. Exit 1 when a client was not shown the whole answer.
    #[command(
        after_help = "Examples:\n  e2a demo\n  e2a demo --json | jq -c 'select(.step == \"agui.event\") | .value.type'"
    )]
    Demo {
        /// Print machine-readable JSON lines instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Validate JSON or JSONL files of envelopes and/or responses: schema validation (strict by
    /// default: types, enums, the protocol's required fields, no unknown keys) and, for
    /// responses, stream invariants. Exit 0 valid, 1 invalid, 2 usage or I/O error.
    #[command(
        after_help = "Examples:\n  e2a validate frames.jsonl\n  e2a validate --canonical frames.jsonl\n  e2a validate --lenient --format json legacy.jsonl\n  cat log.jsonl | e2a validate -"
    )]
    Validate {
        /// Files to check (`-` for stdin).
        #[arg(required = true)]
        files: Vec<String>,
        /// Accept legacy shapes (the reference's `from_dict` rules) and report which fired.
        #[arg(long, conflicts_with = "canonical")]
        lenient: bool,
        /// Also require the canonical form: every field present and normalized, exactly what
        /// e2a writes.
        #[arg(long)]
        canonical: bool,
        /// Output format.
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
    },
    /// Convert JSONL messages between protocols, line by line.
    #[command(after_help = format!("Supported directions: {}\n\nExamples:\n  e2a convert --from acp --to e2a acp.jsonl\n  e2a convert --from e2a --to a2a frames.jsonl", convert::DIRECTIONS))]
    Convert {
        /// Input protocol.
        #[arg(long, value_enum)]
        from: convert::Proto,
        /// Output protocol.
        #[arg(long, value_enum)]
        to: convert::Proto,
        /// Input file (`-` for stdin).
        #[arg(default_value = "-")]
        file: String,
    },
    /// Migrate legacy agent-server logs (AgentRequest / AgentResponse / AgentResponseChunk JSON
    /// lines) to canonical E2A JSONL in constant memory. Lines that cannot be converted go to a
    /// reject file with the reason; a summary is printed on stderr. Exit 0 when every line was
    /// converted, 1 when some were rejected (the rest is still written), 2 on a usage or I/O
    /// error.
    #[command(
        after_help = "Examples:\n  e2a migrate agent-server.log -o e2a.jsonl\n  e2a migrate old.log -o new.jsonl --rejects bad.jsonl; e2a validate new.jsonl   # validate what was converted, rejects or not"
    )]
    Migrate {
        /// Legacy log file (`-` for stdin).
        input: String,
        /// Output file (default stdout).
        #[arg(short, long)]
        output: Option<String>,
        /// Reject file (default `<output>.rejects.jsonl`).
        #[arg(long)]
        rejects: Option<String>,
        /// Never show the progress bar.
        #[arg(long)]
        no_progress: bool,
    },
    /// Strip secrets from JSONL logs (bearer tokens, API keys, credential headers, secret-named
    /// keys anywhere). Lines that are not JSON are withheld and counted on stderr. Exit 0 when
    /// every line was written, 1 when some were withheld, 2 on an I/O error.
    #[command(after_help = "Example:\n  e2a redact gateway.jsonl > shareable.jsonl")]
    Redact {
        /// Input file (`-` for stdin).
        #[arg(default_value = "-")]
        file: String,
    },
    /// Speak the conformance driver protocol (DRIVER.md): one JSON request per stdin line, one
    /// answer per stdout line.
    #[command(
        after_help = "Example:\n  python3 tests/conformance/check.py tests/conformance/vectors.json -- e2a conformance-driver"
    )]
    ConformanceDriver,
    /// Serve E2A over HTTP (JSON, SSE, NDJSON) in front of an agent: echo, a script of
    /// scenarios, another E2A server or a remote A2A agent; with --a2a also A2A 1.0 (agent card,
    /// JSON-RPC, HTTP+JSON, tasks kept in SQLite). Prints the URLs; SIGTERM drains open streams.
    #[command(
        after_help = "Examples:\n  e2a serve\n  e2a serve --agent script:gateway/tests/data/script.json\n  e2a serve --a2a --agent script:gateway/tests/a2a_clients/script.json\n  e2a serve --a2a --store memory --agent a2a:http://127.0.0.1:9090\n  e2a serve --bind 0.0.0.0:8080 --token-file token.txt --agent e2a:http://10.0.0.5:8080"
    )]
    Serve(Box<serve::ServeArgs>),
    /// Be an ACP agent over stdio (what an editor runs as its agent command) in front of an
    /// agent: echo, a script of scenarios, another E2A server or another ACP agent. stdout
    /// carries ACP frames only; logs go to stderr (level from $E2A_LOG, default warn).
    #[command(
        after_help = "Examples:\n  e2a acp\n  e2a acp --agent script:gateway/tests/data/script.json\n  e2a acp --agent e2a:http://127.0.0.1:8080\n  e2a acp --agent 'acp:my-coding-agent --stdio'   # the editor answers its permission requests\n  e2a acp --agent e2a:http://127.0.0.1:8080 --workspace-dir /tmp/task-1"
    )]
    Acp(Box<acp::AcpArgs>),
    /// Check a config file of `e2a serve --config`, or print its JSON Schema.
    #[command(
        subcommand,
        after_help = "Examples:\n  e2a config check e2a.toml\n  e2a config schema > e2a-config.schema.json"
    )]
    Config(ConfigCommand),
    /// Print a shell completion script.
    #[command(after_help = "Example:\n  e2a completions bash > /etc/bash_completion.d/e2a")]
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
}

#[derive(Subcommand)]
enum ConfigCommand {
    /// Load FILE as `e2a serve --config` would: syntax, schema, references between sections,
    /// every secret file and variable it names. Exit 0 ok, 2 with `FILE:LINE: KEY: reason`
    /// lines.
    Check {
        /// The config file (TOML).
        file: std::path::PathBuf,
    },
    /// Print the config file's JSON Schema (draft 2020-12).
    Schema,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Demo { json } => match demo::run(json) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("e2a demo: {e}");
                ExitCode::FAILURE
            }
        },
        Command::Validate {
            files,
            lenient,
            canonical,
            format,
        } => {
            let mode = match (lenient, canonical) {
                (true, _) => e2a::ReadMode::Lenient,
                (_, true) => e2a::ReadMode::Canonical,
                _ => e2a::ReadMode::Strict,
            };
            ExitCode::from(validate::run(&files, mode, format == Format::Json))
        }
        Command::Convert { from, to, file } => ExitCode::from(convert::run(from, to, &file)),
        Command::Migrate {
            input,
            output,
            rejects,
            no_progress,
        } => ExitCode::from(migrate::run(
            &input,
            output.as_deref(),
            rejects.as_deref(),
            !no_progress,
        )),
        Command::Redact { file } => ExitCode::from(redact(&file)),
        Command::Serve(args) => ExitCode::from(serve::run(&args)),
        Command::Acp(args) => ExitCode::from(acp::run(&args)),
        Command::Config(ConfigCommand::Check { file }) => ExitCode::from(config::check(&file)),
        Command::Config(ConfigCommand::Schema) => {
            println!("{:#}", config::schema());
            ExitCode::SUCCESS
        }
        Command::ConformanceDriver => conformance_driver(),
        Command::Completions { shell } => {
            clap_complete::generate(shell, &mut Cli::command(), "e2a", &mut std::io::stdout());
            ExitCode::SUCCESS
        }
    }
}

fn redact(file: &str) -> u8 {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut withheld = 0usize;
    let r = input::for_each_line(file, |line, text| {
        match serde_json::from_str::<serde_json::Value>(text) {
            Ok(mut v) => {
                e2a::redact::redact_value(&mut v);
                writeln!(out, "{v}")?;
            }
            Err(_) => {
                withheld += 1;
                eprintln!("{file}:{line}: not JSON; line withheld");
            }
        }
        Ok(())
    });
    if let Err(e) = r.and_then(|()| out.flush()) {
        eprintln!("e2a redact: {file}: {e}");
        return 2;
    }
    u8::from(withheld > 0)
}

/// Every line is answered (one that is too long, not UTF-8 or not JSON with an error); only an
/// I/O error of stdin or stdout ends the driver early, with exit code 2.
fn conformance_driver() -> ExitCode {
    let stdout = std::io::stdout();
    let out = std::io::BufWriter::new(stdout.lock());
    match e2a::conformance::drive(std::io::stdin().lock(), out) {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => ExitCode::from(2),
    }
}
