//! `--agent` and its options, shared by `e2a serve` and `e2a acp`: the name is read by
//! `e2a_gateway::backends::AgentSpec`; the token comes from a file or the environment.

use std::path::PathBuf;
use std::sync::Arc;

use e2a_gateway::backends::{AgentOptions, AgentSpec, PermissionPolicy, SpecError};
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

/// The agent of a `--agent` spec (`e2a_gateway::backends::AgentSpec`): its token from
/// `token_file` (else `$E2A_AGENT_TOKEN`), its ACP options from `backend`.
pub fn agent(spec: &str, token_file: Option<&PathBuf>, backend: &BackendArgs) -> Result<Arc<dyn Agent>, String> {
    let spec: AgentSpec = spec.parse().map_err(|e: SpecError| e.to_string())?;
    let token = match token_file {
        Some(f) => Some(std::fs::read_to_string(f).map_err(|e| format!("cannot read {}: {e}", f.display()))?),
        None => std::env::var(e2a_gateway::config::AGENT_TOKEN_ENV).ok(),
    };
    let options = AgentOptions {
        token: token
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty())
            .map(Into::into),
        policy: PermissionPolicy {
            approve: backend.approve.clone(),
        },
        allow_fs: backend.allow_fs,
    };
    spec.build(&options).map_err(|e| e.to_string())
}
