//! `e2a acp`: an ACP agent over stdio (what an editor runs as its agent command) in front of
//! any gateway agent; and the options of `acp:CMD` backends, shared with `e2a serve`.

use std::path::PathBuf;
use std::sync::Arc;

use e2a_gateway::backends::{AcpProcessAgent, AcpProcessConfig, PermissionPolicy};
use e2a_gateway::bindings::acp::{AcpServer, AcpServerConfig};
use e2a_gateway::Agent;

/// Options of an `acp:CMD ARGS` backend agent.
#[derive(clap::Args, Debug, Default, Clone)]
pub struct BackendArgs {
    /// For `acp:CMD` agents: permission requests that may be allowed, by tool kind (`read`,
    /// `edit`, `execute`, …), title substring, or `*` (repeatable; default: deny all).
    #[arg(long, value_name = "KIND|TITLE|*")]
    pub approve: Vec<String>,
    /// For `acp:CMD` agents: serve their `fs/read_text_file` / `fs/write_text_file` requests
    /// (declined otherwise; terminal requests are always declined).
    #[arg(long)]
    pub allow_fs: bool,
}

/// Options of `e2a acp`.
#[derive(clap::Args, Debug)]
pub struct AcpArgs {
    /// The agent: `echo`, `script:FILE`, `e2a:URL` or `acp:CMD ARGS` (another ACP agent).
    #[arg(long, default_value = "echo")]
    pub agent: String,
    /// Bearer token file for the `e2a:URL` agent (default: $E2A_AGENT_TOKEN).
    #[arg(long)]
    pub agent_token_file: Option<PathBuf>,
    /// Options of `acp:CMD` agents.
    #[command(flatten)]
    pub backend: BackendArgs,
}

/// Splits `CMD ARGS` like a shell would for words, single and double quotes.
pub fn split_command(cmd: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    let mut chars = cmd.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some('"'), '\\') => match chars.next() {
                Some(n) => word.push(n),
                None => return Err("dangling backslash".into()),
            },
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, '\\') => {
                if let Some(n) = chars.next() {
                    word.push(n);
                    in_word = true;
                }
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            (None, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if quote.is_some() {
        return Err("unterminated quote".into());
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}

/// The `acp:CMD ARGS` agent.
pub fn backend(cmd: &str, args: &BackendArgs) -> Result<Arc<dyn Agent>, String> {
    let command = split_command(cmd).map_err(|e| format!("acp:{cmd}: {e}"))?;
    let mut config = AcpProcessConfig::new(command);
    config.policy = PermissionPolicy {
        approve: args.approve.clone(),
    };
    config.allow_fs = args.allow_fs;
    AcpProcessAgent::new(config).map(|a| Arc::new(a) as Arc<dyn Agent>)
}

/// Serves ACP on stdin/stdout until the client closes stdin. Logs go to stderr.
pub fn run(args: &AcpArgs) -> u8 {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("E2A_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .try_init();
    let agent = match crate::serve::agent(&args.agent, args.agent_token_file.as_ref(), &args.backend) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("e2a acp: {e}");
            return 2;
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("e2a acp: {e}");
            return 2;
        }
    };
    runtime.block_on(async move {
        let server = AcpServer::new(agent, AcpServerConfig::default());
        server.serve(tokio::io::stdin(), tokio::io::stdout()).await;
    });
    // a still-blocked stdin reader must not keep the process alive
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    0
}

#[cfg(test)]
mod tests {
    use super::split_command;

    #[test]
    fn splits_like_a_shell() {
        assert_eq!(
            split_command(r#"e2a acp --agent "script:a b.json" 'x y' z\ w"#).unwrap(),
            ["e2a", "acp", "--agent", "script:a b.json", "x y", "z w"]
        );
        assert!(split_command("a 'b").is_err());
    }
}
