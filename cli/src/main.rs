//! `e2a` — the E2A command-line tool for operators and gateway developers.

use std::io::{BufRead, Write};
use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod demo;

/// E2A (Everything-to-Agent) command-line tool.
#[derive(Parser)]
#[command(name = "e2a", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run an embedded ACP and A2A request through the SDK and an echo agent, printing every
    /// step (envelope, response frames, ACP updates, AG-UI events, A2A events).
    ///
    /// Example: e2a demo --json | jq .step
    Demo {
        /// Print machine-readable JSON lines instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Speak the conformance driver protocol (DRIVER.md): one JSON request per stdin line,
    /// one answer per stdout line.
    ///
    /// Example: python3 tests/conformance/check.py tests/conformance/vectors.json -- e2a conformance-driver
    ConformanceDriver,
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
        Command::ConformanceDriver => conformance_driver(),
    }
}

fn conformance_driver() -> ExitCode {
    let stdin = std::io::stdin();
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    for line in stdin.lock().lines() {
        let Ok(line) = line else { return ExitCode::from(2) };
        if line.trim().is_empty() {
            continue;
        }
        if writeln!(out, "{}", e2a::conformance::answer_line(&line)).is_err() {
            return ExitCode::from(2);
        }
    }
    if out.flush().is_err() {
        return ExitCode::from(2);
    }
    ExitCode::SUCCESS
}
