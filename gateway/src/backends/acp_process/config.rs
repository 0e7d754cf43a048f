//! How the backend agent is run: its command, working directory and environment (scrubbed of
//! the gateway's credentials), and which of its permission requests may be allowed.

use std::path::PathBuf;
use std::process::Stdio;

use agent_client_protocol_schema::v1 as acp;
use serde_json::Value;

/// Which permission requests of the backend agent may be allowed.
#[derive(Debug, Clone, Default)]
pub struct PermissionPolicy {
    /// Patterns allowed: a tool-call `kind` (`read`, `edit`, `execute`, …), a substring of its
    /// title, or `*` for everything. Empty: every request is denied.
    pub approve: Vec<String>,
}

impl PermissionPolicy {
    /// True when the tool call described by `tool_call` may be allowed.
    pub fn allows(&self, tool_call: &acp::ToolCallUpdate) -> bool {
        let kind = tool_call
            .fields
            .kind
            .map(|k| serde_json::to_value(k).unwrap_or_default());
        let kind = kind.as_ref().and_then(Value::as_str).unwrap_or("");
        let title = tool_call.fields.title.as_deref().unwrap_or("").to_lowercase();
        self.approve.iter().any(|p| {
            let p = p.trim();
            p == "*" || (!p.is_empty() && (p == kind || title.contains(&p.to_lowercase())))
        })
    }
}

/// How to run the backend agent.
#[derive(Debug, Clone)]
pub struct AcpProcessConfig {
    /// The program and its arguments.
    pub command: Vec<String>,
    /// Working directory given to `session/new` (default: the current directory).
    pub cwd: Option<PathBuf>,
    /// Which permission requests may be allowed.
    pub policy: PermissionPolicy,
    /// Serve `fs/read_text_file` and `fs/write_text_file`, only for files inside the session's
    /// working directory ([`AcpProcessConfig::cwd`]), symlinks resolved (declined otherwise).
    pub allow_fs: bool,
    /// Environment variables passed to the agent besides [`AGENT_ENV`] (its environment is
    /// otherwise empty: the gateway's credentials never reach it).
    pub env: Vec<String>,
    /// Where a request's `params.workspace_dir` (made on demand) and `params.cwd` may be: the
    /// session of such a prompt works there (E2A §11.6). `None`: a request names no directory.
    pub workspace_root: Option<PathBuf>,
}

impl AcpProcessConfig {
    /// A backend running `command`, with the default policy (deny), no file system and the
    /// default environment.
    pub fn new(command: Vec<String>) -> Self {
        AcpProcessConfig {
            command,
            cwd: None,
            policy: PermissionPolicy::default(),
            allow_fs: false,
            env: Vec::new(),
            workspace_root: None,
        }
    }

    /// The working directory of the agent's sessions: absolute, as ACP requires (a relative
    /// [`AcpProcessConfig::cwd`] is taken from the gateway's current directory; none is the
    /// current directory).
    pub fn session_cwd(&self) -> PathBuf {
        let here = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
        match &self.cwd {
            Some(d) if d.is_relative() => here.join(d),
            Some(d) => d.clone(),
            None => here,
        }
    }

    /// Starts the agent program with stdin and stdout piped (stderr inherited) and a scrubbed
    /// environment: [`AGENT_ENV`] and the names in [`AcpProcessConfig::env`] are passed, nothing
    /// else; the gateway's own credentials ([`crate::config::SECRET_ENV`]) never.
    pub fn spawn(
        &self,
    ) -> Result<
        (
            tokio::process::Child,
            tokio::process::ChildStdin,
            tokio::process::ChildStdout,
        ),
        String,
    > {
        let (program, args) = self.command.split_first().ok_or_else(|| "no command".to_string())?;
        let mut command = tokio::process::Command::new(program);
        command.env_clear();
        for (name, value) in std::env::vars_os() {
            let Some(n) = name.to_str() else { continue };
            if crate::config::SECRET_ENV.contains(&n) {
                continue;
            }
            let wanted = AGENT_ENV.contains(&n)
                || AGENT_ENV_PREFIXES.iter().any(|p| n.starts_with(p))
                || self.env.iter().any(|e| e == n);
            if wanted {
                command.env(&name, value);
            }
        }
        let mut child = command
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot start the ACP agent `{program}`: {e}"))?;
        match (child.stdin.take(), child.stdout.take()) {
            (Some(stdin), Some(stdout)) => Ok((child, stdin, stdout)),
            _ => Err("the ACP agent has no stdio".into()),
        }
    }
}

/// The environment variables an ACP agent process gets by default (when set): what programs
/// need to run (`PATH`, `HOME`, locale, temporary directory, terminal), never credentials.
pub const AGENT_ENV: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "TERM",
    "TMPDIR",
    "TZ",
    "SYSTEMROOT",
    "COMSPEC",
    "PATHEXT",
    "APPDATA",
    "LOCALAPPDATA",
    "USERPROFILE",
    "TEMP",
    "TMP",
];

/// Prefixes of the environment variables an ACP agent process gets by default (locale and XDG
/// directories).
pub const AGENT_ENV_PREFIXES: &[&str] = &["LC_", "XDG_"];

#[cfg(test)]
mod tests {
    use super::PermissionPolicy;
    use agent_client_protocol_schema::v1 as acp;

    #[test]
    fn the_policy_denies_unless_approved() {
        let fields = acp::ToolCallUpdateFields::new()
            .title("Edit src/main.rs".to_string())
            .kind(acp::ToolKind::Edit);
        let call = acp::ToolCallUpdate::new("t", fields);
        assert!(!PermissionPolicy::default().allows(&call));
        let p = |v: &[&str]| PermissionPolicy {
            approve: v.iter().map(|s| s.to_string()).collect(),
        };
        assert!(p(&["edit"]).allows(&call));
        assert!(p(&["main.RS"]).allows(&call));
        assert!(p(&["*"]).allows(&call));
        assert!(!p(&["read", ""]).allows(&call));
    }
}
