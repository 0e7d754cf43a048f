//! The agents as an operator names them (`--agent`, a config file): `echo`, `script:FILE`,
//! `e2a:URL`, `a2a:URL` or `acp:CMD ARGS`. [`AgentSpec`] parses the name and builds the
//! agent, so a Rust service that embeds the gateway reads the same names as `e2a serve`.
//!
//! ```
//! use e2a_gateway::backends::{AgentOptions, AgentSpec};
//! let spec: AgentSpec = "acp:python3 agent.py --model 'a b'".parse().unwrap();
//! assert_eq!(spec, AgentSpec::Acp(vec!["python3".into(), "agent.py".into(), "--model".into(), "a b".into()]));
//! assert!("nope:x".parse::<AgentSpec>().is_err());
//! let echo = "echo".parse::<AgentSpec>().unwrap().build(&AgentOptions::default()).unwrap();
//! assert_eq!(echo.name(), "echo");
//! ```

use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;

use e2a::SecretString;

use super::{
    A2aRemoteAgent, A2aRemoteConfig, AcpProcessAgent, AcpProcessConfig, E2aRemoteAgent, E2aRemoteConfig, EchoAgent,
    PermissionPolicy, ScriptAgent,
};
use crate::agent::Agent;

/// An agent by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentSpec {
    /// `echo`: [`EchoAgent`].
    Echo,
    /// `script:FILE`: [`ScriptAgent`] of a script file.
    Script(PathBuf),
    /// `e2a:URL`: [`E2aRemoteAgent`], another server speaking E2A over HTTP.
    E2a(String),
    /// `a2a:URL`: [`A2aRemoteAgent`], an A2A 1.0 agent (its card's URL or its base URL).
    A2a(String),
    /// `acp:CMD ARGS`: [`AcpProcessAgent`], an ACP agent program (the words split like a shell
    /// splits them).
    Acp(Vec<String>),
}

/// What building an agent needs besides its name.
#[derive(Debug, Clone, Default)]
pub struct AgentOptions {
    /// The bearer token for an `e2a:` or `a2a:` agent (sent to its URL's origin only).
    pub token: Option<SecretString>,
    /// The machine identity an `a2a:` agent's requests are signed with (GoAI-HMAC-SHA256; to
    /// its URL's origin only).
    pub signer: Option<crate::web::hmac::Signer>,
    /// For `acp:` agents: which of their permission requests may be allowed.
    pub policy: PermissionPolicy,
    /// For `acp:` agents: whether their file-system requests are served (inside the session's
    /// working directory only).
    pub allow_fs: bool,
    /// For `acp:` agents: environment variables passed besides
    /// [`crate::backends::AGENT_ENV`].
    pub env: Vec<String>,
    /// For `a2a:` agents: where their delegated tasks call back (`delegate = "callback"`).
    pub callbacks: Option<crate::backends::Callbacks>,
    /// For `a2a:` agents: the A2A version they are spoken to in, whatever their card says
    /// (`None`: the card's).
    pub a2a_version: Option<e2a::types::A2aVersion>,
    /// For `acp:` agents: where a request may name its session's working directory
    /// ([`AcpProcessConfig::workspace_root`]).
    pub workspace_root: Option<std::path::PathBuf>,
}

impl AgentOptions {
    /// The process configuration of an `acp:` agent running `command` with these options.
    pub fn acp_process(&self, command: &[String]) -> AcpProcessConfig {
        let mut config = AcpProcessConfig::new(command.to_vec());
        config.policy = self.policy.clone();
        config.allow_fs = self.allow_fs;
        config.env = self.env.clone();
        config.workspace_root = self.workspace_root.clone();
        config
    }
}

/// Why an agent name cannot be read or its agent built (never holds a credential).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    /// Not one of the names.
    #[error("unknown agent `{0}`: use echo, script:FILE, e2a:URL, a2a:URL or acp:CMD")]
    Unknown(String),
    /// `acp:` with a command that does not split (an unterminated quote) or is empty.
    #[error("acp:{0}: not a command (empty, or an unterminated quote)")]
    Command(String),
    /// The agent cannot be built.
    #[error("{0}")]
    Build(String),
}

impl FromStr for AgentSpec {
    type Err = SpecError;

    fn from_str(spec: &str) -> Result<Self, SpecError> {
        let (kind, rest) = spec.split_once(':').unwrap_or((spec, ""));
        Ok(match (kind, rest) {
            ("echo", "") => AgentSpec::Echo,
            ("script", file) if !file.is_empty() => AgentSpec::Script(file.into()),
            ("e2a", url) if !url.is_empty() => AgentSpec::E2a(url.into()),
            ("a2a", url) if !url.is_empty() => AgentSpec::A2a(url.into()),
            ("acp", cmd) => match shlex::split(cmd) {
                Some(words) if !words.is_empty() => AgentSpec::Acp(words),
                _ => return Err(SpecError::Command(cmd.into())),
            },
            _ => return Err(SpecError::Unknown(spec.into())),
        })
    }
}

impl AgentSpec {
    /// The agent this spec names, built with `options`.
    pub fn build(&self, options: &AgentOptions) -> Result<Arc<dyn Agent>, SpecError> {
        match self {
            AgentSpec::Echo => Ok(Arc::new(EchoAgent::new())),
            AgentSpec::Script(file) => shared(ScriptAgent::from_file(file)),
            AgentSpec::E2a(url) => {
                let mut config = E2aRemoteConfig::new(url.as_str());
                config.token = options.token.clone();
                shared(E2aRemoteAgent::new(config))
            }
            AgentSpec::A2a(url) => {
                let mut config = A2aRemoteConfig::new(url.as_str());
                if let Some(t) = &options.token {
                    config = config.with_token(url, t.clone());
                }
                config.signer = options.signer.clone();
                config.callbacks = options.callbacks.clone();
                config.version = options.a2a_version;
                shared(A2aRemoteAgent::new(config))
            }
            AgentSpec::Acp(command) => shared(AcpProcessAgent::new(options.acp_process(command))),
        }
    }
}

/// A built agent, shared; why it could not be built.
fn shared<A: Agent, E: std::fmt::Display>(built: Result<A, E>) -> Result<Arc<dyn Agent>, SpecError> {
    built
        .map(|a| Arc::new(a) as Arc<dyn Agent>)
        .map_err(|e| SpecError::Build(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_and_refuse() {
        assert_eq!("echo".parse(), Ok(AgentSpec::Echo));
        assert_eq!("script:a b.json".parse(), Ok(AgentSpec::Script("a b.json".into())));
        assert_eq!("e2a:http://h:1".parse(), Ok(AgentSpec::E2a("http://h:1".into())));
        assert_eq!("a2a:http://h:1".parse(), Ok(AgentSpec::A2a("http://h:1".into())));
        assert_eq!(
            r#"acp:e2a acp --agent "script:a b.json" 'x y' z\ w"#.parse(),
            Ok(AgentSpec::Acp(vec![
                "e2a".into(),
                "acp".into(),
                "--agent".into(),
                "script:a b.json".into(),
                "x y".into(),
                "z w".into()
            ]))
        );
        assert!(matches!("acp:a 'b".parse::<AgentSpec>(), Err(SpecError::Command(_))));
        assert!(matches!("acp:".parse::<AgentSpec>(), Err(SpecError::Command(_))));
        for bad in ["", "echo:x", "script:", "http://x", "ftp:x"] {
            assert!(matches!(bad.parse::<AgentSpec>(), Err(SpecError::Unknown(_))), "{bad}");
        }
    }
}
