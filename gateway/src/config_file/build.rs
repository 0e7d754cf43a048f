//! What a config file builds: the gateway it describes, its agents (their specs, tokens and
//! cards), its `GatewayConfig` and `A2aConfig`, and the check that all of it can be built.

use super::{pointer_key, ConfigError, ConfigFile};

/// An agent of `[agents]`: its name, its entry, the agent built, the machine identity it
/// signs with (its push notifications too), where its delegated tasks call back.
type NamedAgent<'a> = (
    &'a String,
    &'a e2a::types::AgentEntry,
    std::sync::Arc<dyn crate::agent::Agent>,
    Option<crate::web::hmac::Signer>,
    Option<crate::backends::Callbacks>,
);

/// Building the gateway a file describes.
impl ConfigFile {
    /// The [`GatewayConfig`](crate::config::GatewayConfig) of `[server]` and `[store]`, with `auth`.
    pub fn gateway_config(&self, auth: crate::web::auth::Auth) -> crate::config::GatewayConfig {
        use std::time::Duration;
        let (server, store) = (&self.settings.server, &self.settings.store);
        let to_usize = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
        let (stored_retention, max_stored) = crate::config::stored_runs(store);
        crate::config::GatewayConfig {
            auth,
            max_streams: to_usize(server.max_streams.get()),
            drain_timeout: Duration::from_secs(server.drain_secs),
            max_run_bytes: crate::config::kib(server.max_run_kib),
            lease: Duration::from_secs(store.lease_secs.get()),
            stored_retention,
            max_stored,
            server: crate::web::server::ServerLimits {
                max_connections: to_usize(server.max_connections.get()),
                header_read_timeout: Duration::from_secs(server.header_timeout_secs.get()),
                idle_timeout: Duration::from_secs(server.idle_timeout_secs.get()),
                ..Default::default()
            },
            errors: self.errors(),
            on_disconnect: server.on_disconnect,
            ..crate::config::GatewayConfig::default()
        }
    }

    /// `[errors] expose`, `auto` resolved by `server.bind`: `safe` unless the gateway listens
    /// on a loopback address (callers elsewhere are not told an agent's own error text).
    pub fn errors(&self) -> e2a::types::ErrorExposure {
        use e2a::types::ErrorExposure;
        let expose = self.settings.errors.as_ref().and_then(|e| e.expose).unwrap_or_default();
        if expose != ErrorExposure::Auto {
            return expose;
        }
        let bind = &self.settings.server.bind;
        let loopback = match bind.parse::<std::net::SocketAddr>() {
            Ok(addr) => addr.ip().is_loopback(),
            Err(_) => bind
                .rsplit_once(':')
                .is_some_and(|(host, _)| crate::web::is_loopback_host(host)),
        };
        if loopback {
            ErrorExposure::Detail
        } else {
            ErrorExposure::Safe
        }
    }

    /// The A2A configuration of the root agent: paths, retention, `public_url` (else the
    /// one given: the bound address), the card of `a2a.card_file`.
    pub fn a2a_config(&self, public_url: Option<String>) -> Result<crate::bindings::a2a::A2aConfig, ConfigError> {
        use crate::bindings::a2a::{A2aConfig, CardInfo};
        let (a2a, store) = (&self.settings.a2a, &self.settings.store);
        let card = match &a2a.card_file {
            Some(f) => {
                let path = self.path(f);
                let text = std::fs::read_to_string(&path)
                    .map_err(|e| self.error("/a2a/card_file", format!("cannot read {}: {e}", path.display())))?;
                serde_json::from_str::<CardInfo>(&text)
                    .map_err(|e| self.error("/a2a/card_file", format!("invalid card file {}: {e}", path.display())))?
            }
            None => CardInfo::default(),
        };
        if !a2a.path.starts_with('/') {
            return Err(self.error("/a2a/path", "must start with /"));
        }
        if !(a2a.rest_path.is_empty() || a2a.rest_path.starts_with('/')) {
            return Err(self.error("/a2a/rest_path", "must start with /"));
        }
        Ok(A2aConfig {
            jsonrpc_path: a2a.path.clone(),
            rest_path: a2a.rest_path.trim_end_matches('/').to_string(),
            public_url: self.settings.server.public_url.clone().or(public_url),
            card,
            retention: crate::store::TaskRetention::of(store),
            push: crate::tasks::push::PushPolicy::from(&a2a.push.clone().unwrap_or_default()),
            message_ids: a2a.message_ids.unwrap_or_default(),
            cancel_finished: a2a.cancel_finished.unwrap_or_default(),
            client_task_ids: a2a.client_task_ids,
            ..A2aConfig::default()
        })
    }

    /// The spec and options (its token read, `[acp]`) of the named agent `name`, for a front
    /// other than the HTTP gateway (`e2a acp --config FILE --agent NAME`); `None` when the
    /// file names no such agent. Such a front serves no callback route: an agent that
    /// delegates with callbacks streams there.
    pub fn named_agent_spec(
        &self,
        name: &str,
    ) -> Option<Result<(crate::backends::AgentSpec, crate::backends::AgentOptions), ConfigError>> {
        let entry = self.settings.agents.get(name)?;
        let spec = super::groups::spec_of(self, name, entry).and_then(|spec| {
            let why = "a group has no spec of its own: it is built from its members (ConfigFile::named_group)";
            spec.ok_or_else(|| self.error(&format!("/agents/{}/group", pointer_key(name)), why))
        });
        Some(spec.and_then(|spec| {
            let (token, signer, _, version) = agent_token(self, name, entry)?;
            spec_of(
                self,
                &format!("/agents/{}/agent", pointer_key(name)),
                spec,
                (token, signer, None, version),
            )
        }))
    }

    /// Everything a file names, checked as `e2a serve` checks it when it starts, without
    /// starting anything: every secret read, every agent built (its spec, credentials, files and
    /// URLs; `acp:` processes start at their first run anyway), the store named (not opened: its
    /// URL read, its CA file found), the cards and the frame log's directory. What
    /// `e2a config check` runs ([`ConfigFile::load_checked`]).
    pub fn check(&self) -> Result<(), Vec<ConfigError>> {
        let mut errors = crate::web::auth::Auth::from_config(self).err().unwrap_or_default();
        let (named, named_errors) = named_agents(self);
        errors.extend(named_errors);
        if self.settings.default_agent.is_none() {
            let root = root_agent_token(self)
                .and_then(|t| build_agent(self, "/agent", &self.settings.agent, (t, None, None, None)));
            errors.extend(root.err());
        }
        match self.store_url() {
            Some(url) => errors.extend(
                url.parse::<crate::store::StoreSpec>()
                    .err()
                    .map(|e| self.error("/store/url", e.to_string())),
            ),
            None => errors.extend(storeless_delegations(self, &named)),
        }
        if let Some(ca) = &self.settings.store.ca_file {
            if !self.path(ca).is_file() {
                errors.push(self.error("/store/ca_file", format!("no file {}", self.path(ca).display())));
            }
        }
        errors.extend(self.a2a_config(None).err());
        if let Some(frames) = &self.settings.log.frames {
            let path = self.path(frames);
            let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
            if dir.is_some_and(|d| !d.is_dir()) {
                errors.push(self.error("/log/frames", format!("no directory for {}", path.display())));
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }

    /// The store the file names: `[store] url`, else the default one when A2A is on (its tasks
    /// live there), else none.
    pub fn store_url(&self) -> Option<&str> {
        let s = &self.settings;
        s.store.url.as_deref().or(s.a2a.enabled.then_some(DEFAULT_STORE))
    }

    /// The gateway the file describes: the root agent (`agent`, or the named
    /// `default_agent`) and every named agent at its routes, each with its card, behind the
    /// callers of `[callers]`; A2A and its tasks in `store` (A2A is served only with a store),
    /// AG-UI when enabled. `public_url`: the cards' base URL when `server.public_url` is not set
    /// (the bound address). Agents are started here (`acp:` processes lazily, at their first
    /// run).
    pub fn gateway(
        &self,
        store: Option<crate::store::Stores>,
        public_url: Option<String>,
    ) -> Result<crate::Gateway, Vec<ConfigError>> {
        let auth = crate::web::auth::Auth::from_config(self)?;
        self.gateway_with_auth(store, public_url, auth)
    }

    /// [`ConfigFile::gateway`] behind `auth` (a gateway's own, reloaded from this file: what a
    /// SIGHUP builds, [`ConfigFile::reload_into`]).
    pub fn gateway_with_auth(
        &self,
        store: Option<crate::store::Stores>,
        public_url: Option<String>,
        auth: crate::web::auth::Auth,
    ) -> Result<crate::Gateway, Vec<ConfigError>> {
        use std::sync::Arc;
        let a2a_root = self.a2a_config(public_url).map_err(|e| vec![e])?;
        let frame_log = self.frame_log().map_err(|e| vec![e])?;
        let a2a_on = self.settings.a2a.enabled;
        let routes = &self.settings.routes;
        let build = |agent: Arc<dyn crate::agent::Agent>,
                     auth: crate::web::auth::Auth,
                     a2a: crate::bindings::a2a::A2aConfig,
                     entry: Option<&e2a::types::AgentEntry>| {
            let base = self.gateway_config(auth);
            let config = crate::config::GatewayConfig {
                frame_log: frame_log.clone(),
                on_disconnect: entry.and_then(|e| e.on_disconnect).unwrap_or(base.on_disconnect),
                ..base
            };
            let mut g = crate::Gateway::with_agent(agent, config);
            if let Some(store) = &store {
                g = match a2a_on {
                    true => g.with_a2a(a2a, store.clone()),
                    false => g.with_store(store.clone()),
                };
            }
            if self.settings.agui.enabled {
                g = g.with_agui();
            }
            g
        };
        let (named, mut errors) = named_agents(self);
        if store.is_none() {
            errors.extend(storeless_delegations(self, &named));
        }
        let root = match &self.settings.default_agent {
            Some(d) => named
                .iter()
                .find(|(n, ..)| *n == d)
                .map(|(n, entry, agent, _, callbacks)| {
                    let a2a = crate::bindings::a2a::A2aConfig {
                        card: card(n, entry),
                        callbacks: callbacks.clone(),
                        ..a2a_root.clone()
                    };
                    build(agent.clone(), auth.for_agent(n), a2a, Some(entry))
                }),
            None => {
                let agent = root_agent_token(self)
                    .and_then(|t| build_agent(self, "/agent", &self.settings.agent, (t, None, None, None)));
                match agent {
                    Ok(agent) => Some(build(agent, auth.clone(), a2a_root.clone(), None)),
                    Err(e) => {
                        errors.push(e);
                        None
                    }
                }
            }
        };
        let Some(mut gateway) = root.filter(|_| errors.is_empty()) else {
            return Err(errors);
        };
        for (name, entry, agent, signer, callbacks) in named {
            let prefix = routes.a2a.replace("{name}", name);
            let mut a2a = a2a_root.for_named(&prefix, card(name, entry));
            // its push notifications are signed as it signs; its delegated tasks call back here
            a2a.push.signer = signer;
            a2a.callbacks = callbacks;
            gateway = gateway.with_named_agent(name, build(agent, auth.for_agent(name), a2a, Some(entry)), routes);
        }
        Ok(self.observed(gateway))
    }

    /// `gateway` with `/metrics` and the inspector page `/ui`, as `[metrics]` and `[ui]` say.
    fn observed(&self, mut gateway: crate::Gateway) -> crate::Gateway {
        let metrics = &self.settings.metrics;
        if metrics.enabled {
            gateway = gateway.with_metrics(metrics.public);
        }
        let ui = &self.settings.ui;
        if ui.enabled {
            let recent = usize::try_from(ui.recent.get()).unwrap_or(usize::MAX);
            gateway = gateway.with_inspector(ui.operators.clone(), recent);
        }
        gateway
    }
}

/// The store of a file that names none but serves A2A (its tasks live there).
pub const DEFAULT_STORE: &str = "sqlite:e2a-tasks.db";

/// The errors of the agents of `named` that delegate with callbacks, on a gateway without a
/// store (delegations are kept there).
fn storeless_delegations(file: &ConfigFile, named: &[NamedAgent<'_>]) -> Vec<ConfigError> {
    let delegating = named.iter().filter(|n| n.4.is_some());
    delegating
        .map(|(name, ..)| {
            let at = format!("/agents/{}/delegate", pointer_key(name));
            file.error(
                &at,
                "delegate = \"callback\" needs a store (its delegations are kept there)",
            )
        })
        .collect()
}

/// The parsed spec (at `pointer`) and the options of an agent: its credentials, `[acp]`.
fn spec_of(
    file: &ConfigFile,
    pointer: &str,
    spec: &str,
    (token, signer, callbacks, a2a_version): AgentCredentials,
) -> Result<(crate::backends::AgentSpec, crate::backends::AgentOptions), ConfigError> {
    use crate::backends::{AgentOptions, AgentSpec, PermissionPolicy};
    let parsed: AgentSpec = spec
        .parse()
        .map_err(|e: crate::backends::SpecError| file.error(pointer, e.to_string()))?;
    let acp = &file.settings.acp;
    let options = AgentOptions {
        token,
        signer,
        policy: PermissionPolicy {
            approve: acp.approve.clone(),
        },
        allow_fs: acp.allow_fs,
        env: acp.env.clone(),
        callbacks,
        a2a_version,
        workspace_root: acp.workspace_root.as_deref().map(|d| file.path(d)),
    };
    Ok((parsed, options))
}

/// The agent of spec `spec` (at `pointer`) with `creds`.
fn build_agent(
    file: &ConfigFile,
    pointer: &str,
    spec: &str,
    creds: AgentCredentials,
) -> Result<std::sync::Arc<dyn crate::agent::Agent>, ConfigError> {
    let (parsed, options) = spec_of(file, pointer, spec, creds)?;
    parsed.build(&options).map_err(|e| file.error(pointer, e.to_string()))
}

/// What a remote agent is called with — a bearer token, or a machine identity requests are
/// signed with —, where its delegated tasks call back, and the A2A version it is spoken to in.
type AgentCredentials = (
    Option<e2a::SecretString>,
    Option<crate::web::hmac::Signer>,
    Option<crate::backends::Callbacks>,
    Option<e2a::types::A2aVersion>,
);

/// The credentials of the named agent `name`: its token (`token_file`, else `token_env`) or
/// its HMAC key (`hmac_key_file`, else `hmac_key_env`, signed as `hmac_agent_code` or the
/// agent's name), read.
fn agent_token(file: &ConfigFile, name: &str, entry: &e2a::types::AgentEntry) -> Result<AgentCredentials, ConfigError> {
    let at = |key: &str| format!("/agents/{}/{key}", pointer_key(name));
    let key = if entry.token_file.is_some() {
        "token_file"
    } else {
        "token_env"
    };
    let token = file.secret(&at(key), entry.token_file.as_deref(), entry.token_env.as_deref())?;
    let hmac_at = at(match entry.hmac_key_file {
        Some(_) => "hmac_key_file",
        None => "hmac_key_env",
    });
    let key = file.secret(&hmac_at, entry.hmac_key_file.as_deref(), entry.hmac_key_env.as_deref())?;
    if token.is_some() && key.is_some() {
        return Err(file.error(
            &hmac_at,
            "give a bearer token or an HMAC key, not both: a signed request's Authorization is its signature",
        ));
    }
    let signer = key.map(|key| crate::web::hmac::Signer {
        agent_code: entry.hmac_agent_code.clone().unwrap_or_else(|| name.to_string()),
        key,
    });
    let version = match entry.a2a_version {
        Some(_) if !is_a2a(entry) => {
            return Err(file.error(&at("a2a_version"), "a2a_version is for a2a: agents"));
        }
        v => v,
    };
    Ok((token, signer, callbacks_of(file, name, entry)?, version))
}

/// Whether the named agent of `entry` is an `a2a:` agent.
fn is_a2a(entry: &e2a::types::AgentEntry) -> bool {
    let spec = entry.agent.as_deref().map(str::parse::<crate::backends::AgentSpec>);
    matches!(spec, Some(Ok(crate::backends::AgentSpec::A2a(_))))
}

/// Where the named agent `name`'s delegated tasks call back, when it delegates with callbacks
/// (`delegate = "callback"`: an `a2a:` agent, `[delegation] callback_base_url` set, A2A on):
/// `{callback_base_url}{routes.a2a}/callbacks/tasks`, as its code (`hmac_agent_code`, else its
/// name).
fn callbacks_of(
    file: &ConfigFile,
    name: &str,
    entry: &e2a::types::AgentEntry,
) -> Result<Option<crate::backends::Callbacks>, ConfigError> {
    if entry.delegate != e2a::types::Delegate::Callback {
        return Ok(None);
    }
    let at = format!("/agents/{}/delegate", pointer_key(name));
    if !is_a2a(entry) {
        return Err(file.error(&at, "delegate = \"callback\" is for a2a: agents"));
    }
    if !file.settings.a2a.enabled {
        return Err(file.error(&at, "the callback route is an A2A route: enable [a2a]"));
    }
    let delegation = &file.settings.delegation;
    let Some(base) = &delegation.callback_base_url else {
        let why =
            format!("agents.{name} delegates with callbacks: set the base URL child agents reach this gateway at");
        return Err(file.error("/delegation/callback_base_url", why));
    };
    let prefix = file.settings.routes.a2a.replace("{name}", name);
    let url = format!("{}{prefix}/callbacks/tasks", base.trim().trim_end_matches('/'));
    let code = entry.hmac_agent_code.clone().unwrap_or_else(|| name.to_string());
    let timeout = std::time::Duration::from_secs(delegation.timeout_secs.get());
    crate::backends::Callbacks::new(&url, &code, timeout)
        .map(|c| {
            Some(
                c.signed_only(delegation.signed_callbacks)
                    .relay_progress(delegation.relay_progress),
            )
        })
        .map_err(|e| file.error("/delegation/callback_base_url", e.to_string()))
}

/// The card of named agent `name`: its `card` table over the gateway's defaults, named
/// after the agent unless the table names it.
fn card(name: &str, entry: &e2a::types::AgentEntry) -> crate::bindings::a2a::CardInfo {
    let mut card = crate::bindings::a2a::CardInfo {
        name: name.to_string(),
        ..Default::default()
    };
    if let Some(c) = &entry.card {
        if let Some(v) = &c.name {
            card.name = v.clone();
        }
        if let Some(v) = &c.description {
            card.description = v.clone();
        }
        if let Some(v) = &c.version {
            card.version = v.clone();
        }
        card.skills = c.skills.clone();
        if let Some(v) = &c.default_input_modes {
            card.default_input_modes = v.clone();
        }
        if let Some(v) = &c.default_output_modes {
            card.default_output_modes = v.clone();
        }
        card.documentation_url = c.documentation_url.clone();
        card.extensions = c.extensions.clone();
    }
    card
}

/// The agents of `[agents]` that can be built, with their entries, and the errors of those
/// that cannot.
fn named_agents(file: &ConfigFile) -> (Vec<NamedAgent<'_>>, Vec<ConfigError>) {
    let mut errors = Vec::new();
    let mut named = Vec::new();
    for (name, entry) in &file.settings.agents {
        let spec = match super::groups::spec_of(file, name, entry) {
            Ok(Some(spec)) => spec,
            // groups are built from the others, below
            Ok(None) => continue,
            Err(e) => {
                errors.push(e);
                continue;
            }
        };
        let agent = agent_token(file, name, entry).and_then(|creds| {
            let (signer, callbacks) = (creds.1.clone(), creds.2.clone());
            let pointer = format!("/agents/{}/agent", pointer_key(name));
            build_agent(file, &pointer, spec, creds).map(|agent| (agent, signer, callbacks))
        });
        match agent {
            Ok((agent, signer, callbacks)) => named.push((name, entry, agent, signer, callbacks)),
            Err(e) => errors.push(e),
        }
    }
    let built: Vec<(&String, std::sync::Arc<dyn crate::agent::Agent>)> =
        named.iter().map(|(n, _, a, ..)| (*n, a.clone())).collect();
    let (groups, group_errors) = super::groups::build(file, &built);
    errors.extend(group_errors);
    for (name, agent) in groups {
        if let Some((name, entry)) = file.settings.agents.get_key_value(&name) {
            named.push((name, entry, agent, None, None));
        }
    }
    (named, errors)
}

/// The token of the root agent (`agent`, without `default_agent`): `agent_token_file`, else
/// the [`AGENT_TOKEN_ENV`](crate::config::AGENT_TOKEN_ENV) variable (when set and not blank).
fn root_agent_token(file: &ConfigFile) -> Result<Option<e2a::SecretString>, ConfigError> {
    match &file.settings.agent_token_file {
        Some(f) => file.secret("/agent_token_file", Some(f), None),
        None => Ok(std::env::var(crate::config::AGENT_TOKEN_ENV)
            .ok()
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty())
            .map(Into::into)),
    }
}
