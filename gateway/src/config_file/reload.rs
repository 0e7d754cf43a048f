//! A config file read again while its gateway serves (SIGHUP, [`ConfigFile::reload_into`]): its
//! callers, tokens and agents apply at once — an agent is rebuilt only when what it is built
//! from changed (its entry, the files and variables it reads, `[acp]`, `[delegation]`), and
//! its new build runs inside the gateway that serves it —; every other key, and the parts of
//! an agent's entry that belong to that gateway ([`ENTRY_KEPT`]), apply after a restart.

use super::{ConfigError, ConfigFile};
use crate::reload::{Reloadable, Swapped};

/// The top-level keys a reload applies; the others apply after a restart.
const RELOADED: &[&str] = &[
    "agent",
    "agent_token_file",
    "agents",
    "default_agent",
    "callers",
    "acp",
    "delegation",
];

/// A config file as a gateway serves it, with what its agents were built from (hashed when
/// it was applied: a script file edited since counts as a change).
#[derive(Debug, Clone)]
pub struct Running {
    file: ConfigFile,
    agents: std::collections::BTreeMap<String, String>,
    root: String,
}

impl Running {
    /// `file`, the one a gateway was just built from.
    /// Take it before building the gateway: a file edited meanwhile is then rebuilt at the
    /// next reload, never kept stale.
    pub fn new(file: ConfigFile) -> Self {
        let (agents, root) = file.fingerprints();
        Running { file, agents, root }
    }

    /// The file.
    pub fn file(&self) -> &ConfigFile {
        &self.file
    }
}

/// What a reload did ([`ConfigFile::reload_into`]).
#[derive(Debug, Clone)]
pub struct Reloaded {
    /// The agents swapped.
    pub swapped: Swapped,
    /// How many callers the file names now.
    pub callers: usize,
    /// The keys that changed but apply only after a restart (top-level keys, and
    /// `agents.NAME.KEY` of an agent's card, `on_disconnect`, `delegate`, `hmac_agent_code`).
    pub not_applied: Vec<String>,
}

impl ConfigFile {
    /// Applies this file (read again, with [`ConfigFile::load_checked`]) to `served`, the gateway built from `running`: its
    /// callers and tokens, and its agents — new and changed ones take the requests from now
    /// on, unchanged ones go on as they were (runs, tasks and pauses with them), removed ones
    /// finish what they have open. `store` and `public_url`: what the gateway was built with.
    /// Returns the file as applied (the keys that apply after a restart kept as `running`
    /// has them: what the next reload compares with) and what changed. Nothing is applied
    /// when the file has errors.
    pub fn reload_into(
        mut self,
        running: &Running,
        served: &Reloadable,
        store: Option<crate::store::Stores>,
        public_url: Option<String>,
    ) -> Result<(Running, Reloaded), Vec<ConfigError>> {
        let mut not_applied = self.keep_unreloaded(&running.file)?;
        not_applied.extend(entry_keys_not_applied(&running.file.settings, &self.settings));
        let (agents, root) = self.fingerprints();
        let fresh_auth = crate::web::auth::Auth::from_config(&self)?;
        let auth = served.current().auth().clone();
        let fresh = self.gateway_with_auth(store, public_url, auth.clone())?;
        auth.reload_from(&fresh_auth);
        let applied = Running {
            file: self,
            agents,
            root,
        };
        let keep = |name: &str| applied.agents.get(name) == running.agents.get(name);
        let swapped = served.swap(fresh, keep, applied.root == running.root);
        let callers = applied.file.settings.callers.len();
        Ok((
            applied,
            Reloaded {
                swapped,
                callers,
                not_applied,
            },
        ))
    }

    /// Sets every key a reload does not apply back to what `running` has; the keys that differed.
    fn keep_unreloaded(&mut self, running: &ConfigFile) -> Result<Vec<String>, Vec<ConfigError>> {
        match kept_unreloaded(&self.settings, &running.settings) {
            Ok((settings, differed)) => {
                self.settings = settings;
                Ok(differed)
            }
            Err(e) => Err(vec![
                self.error("", format!("cannot compare with the running file: {e}"))
            ]),
        }
    }

    /// What each named agent and the root agent are built from, hashed.
    fn fingerprints(&self) -> (std::collections::BTreeMap<String, String>, String) {
        let agents = self
            .settings
            .agents
            .keys()
            .map(|name| (name.clone(), self.agent_fingerprint(name)))
            .collect();
        (agents, self.root_fingerprint())
    }

    /// What named agent `name` is built from, hashed: its entry, `[acp]` and `[delegation]`,
    /// the files and variables it reads (script, token, HMAC key), a group's members'.
    fn agent_fingerprint(&self, name: &str) -> String {
        let mut parts = self.shared_parts();
        if let Some(entry) = self.settings.agents.get(name) {
            parts.push(serde_json::to_string(entry).unwrap_or_default());
            parts.push(self.spec_file(entry.agent.as_deref()));
            for file in [&entry.token_file, &entry.hmac_key_file].into_iter().flatten() {
                parts.push(self.file_text(file));
            }
            for var in [&entry.token_env, &entry.hmac_key_env].into_iter().flatten() {
                parts.push(std::env::var(var).unwrap_or_default());
            }
            for member in entry.group.iter().flat_map(|g| &g.members) {
                if member != name {
                    parts.push(self.agent_fingerprint(member));
                }
            }
        }
        crate::web::hmac::content_sha256(parts.join("\n").as_bytes())
    }

    /// What the root agent is built from, hashed ([`ConfigFile::agent_fingerprint`]).
    fn root_fingerprint(&self) -> String {
        let s = &self.settings;
        let mut parts = self.shared_parts();
        parts.push(s.agent.clone());
        parts.push(self.spec_file(Some(&s.agent)));
        parts.extend(s.agent_token_file.as_deref().map(|f| self.file_text(f)));
        parts.push(std::env::var(crate::config::AGENT_TOKEN_ENV).unwrap_or_default());
        if let Some(d) = &s.default_agent {
            parts.push(format!("{d}:{}", self.agent_fingerprint(d)));
        }
        crate::web::hmac::content_sha256(parts.join("\n").as_bytes())
    }

    /// The settings every agent is built with.
    fn shared_parts(&self) -> Vec<String> {
        let s = &self.settings;
        vec![
            serde_json::to_string(&s.acp).unwrap_or_default(),
            serde_json::to_string(&s.delegation).unwrap_or_default(),
        ]
    }

    /// The text of the script file of agent spec `spec`, when it is a script.
    fn spec_file(&self, spec: Option<&str>) -> String {
        match spec.map(str::parse::<crate::backends::AgentSpec>) {
            Some(Ok(crate::backends::AgentSpec::Script(path))) => std::fs::read_to_string(path).unwrap_or_default(),
            _ => String::new(),
        }
    }

    /// The text of file `file` (relative to the config file's directory), empty when it cannot
    /// be read.
    fn file_text(&self, file: &str) -> String {
        std::fs::read_to_string(self.path(file)).unwrap_or_default()
    }
}

/// The keys of a named agent's entry that its new build does not take: they belong to the
/// gateway serving it (its card, what a disconnect does, the callback route and the code its
/// callbacks and pushes are signed as), which a reload keeps.
const ENTRY_KEPT: &[&str] = &["card", "on_disconnect", "delegate", "hmac_agent_code"];

/// The `agents.NAME.KEY` of the agents in both files whose [`ENTRY_KEPT`] keys changed.
fn entry_keys_not_applied(running: &e2a::types::GatewayFile, fresh: &e2a::types::GatewayFile) -> Vec<String> {
    let mut out = Vec::new();
    for (name, entry) in &fresh.agents {
        let Some(old) = running.agents.get(name) else { continue };
        let (new, old) = (serde_json::to_value(entry), serde_json::to_value(old));
        let (Ok(new), Ok(old)) = (new, old) else { continue };
        for key in ENTRY_KEPT {
            if new.get(key) != old.get(key) {
                out.push(format!("agents.{name}.{key}"));
            }
        }
    }
    out
}

/// `fresh` with every key a reload does not apply set back to what `running` has, and those
/// keys that differed.
fn kept_unreloaded(
    fresh: &e2a::types::GatewayFile,
    running: &e2a::types::GatewayFile,
) -> Result<(e2a::types::GatewayFile, Vec<String>), serde_json::Error> {
    let mut fresh = serde_json::to_value(fresh)?;
    let old = serde_json::to_value(running)?;
    let mut differed = Vec::new();
    if let (Some(fresh_keys), Some(old_keys)) = (fresh.as_object_mut(), old.as_object()) {
        let keys: std::collections::BTreeSet<String> = fresh_keys.keys().chain(old_keys.keys()).cloned().collect();
        for key in keys {
            if RELOADED.contains(&key.as_str()) || fresh_keys.get(&key) == old_keys.get(&key) {
                continue;
            }
            match old_keys.get(&key) {
                Some(v) => fresh_keys.insert(key.clone(), v.clone()),
                None => fresh_keys.remove(&key),
            };
            differed.push(key);
        }
    }
    Ok((serde_json::from_value(fresh)?, differed))
}
