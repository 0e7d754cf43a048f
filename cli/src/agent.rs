//! `--agent` and its options, shared by `e2a serve` and `e2a acp`: the name is read by
//! `e2a_gateway::backends::AgentSpec`; the token comes from a file or the environment.

use std::path::PathBuf;

use e2a_gateway::backends::{AgentOptions, PermissionPolicy};

/// Options of an `acp:CMD ARGS` backend agent.
#[derive(clap::Args, Debug, Default, Clone, PartialEq, Eq)]
pub struct BackendArgs {
    /// For `acp:CMD` agents: permission requests that may be allowed, by tool kind (`read`,
    /// `edit`, `execute`, …), title substring, or `*` (repeatable; default: deny all).
    #[arg(long, value_name = "KIND|TITLE|*")]
    pub approve: Vec<String>,
    /// For `acp:CMD` agents: serve their `fs/read_text_file` / `fs/write_text_file` requests for
    /// files inside the session's working directory, symlinks resolved (declined otherwise;
    /// terminal requests are always declined).
    #[arg(long)]
    pub allow_fs: bool,
    /// For `acp:CMD` agents: an environment variable to pass to the agent process (repeatable).
    /// It gets only PATH, HOME, USER, SHELL, TERM, TMPDIR, TZ, the locale (LANG, LC_*) and XDG_*
    /// otherwise: never the gateway's credentials, and no API key unless named here.
    #[arg(long, value_name = "NAME")]
    pub agent_env: Vec<String>,
    /// For `acp:CMD` agents: where a request's `params.workspace_dir` (made on demand) or
    /// `params.cwd` may name the session's working directory for that prompt (E2A §11.6);
    /// `..`, other absolute paths and symlinks out of it are refused. Unset: requests name none.
    #[arg(long, value_name = "DIR")]
    pub workspace_root: Option<PathBuf>,
}

/// The options of the agents of `--agent`: the token from `token_file` (else
/// `$E2A_AGENT_TOKEN`), the ACP options from `backend`.
pub fn options(token_file: Option<&PathBuf>, backend: &BackendArgs) -> Result<AgentOptions, String> {
    let token = match token_file {
        Some(f) => Some(std::fs::read_to_string(f).map_err(|e| format!("cannot read {}: {e}", f.display()))?),
        None => std::env::var(e2a_gateway::config::AGENT_TOKEN_ENV).ok(),
    };
    let options = AgentOptions {
        token: token
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty())
            .map(Into::into),
        // (a machine identity is a config file's: `[agents.NAME] hmac_key_file`)
        signer: None,
        policy: PermissionPolicy {
            approve: backend.approve.clone(),
        },
        allow_fs: backend.allow_fs,
        env: backend.agent_env.clone(),
        // (delegation with callbacks is a config file's: `[agents.NAME] delegate`)
        callbacks: None,
        // (and so is speaking another A2A version than the card's: `[agents.NAME] a2a_version`)
        a2a_version: None,
        workspace_root: backend
            .workspace_root
            .as_ref()
            .map(|d| std::path::absolute(d).unwrap_or_else(|_| d.clone())),
    };
    Ok(options)
}
