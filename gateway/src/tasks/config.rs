//! What the A2A task service is given: where its bindings are mounted, what its card says,
//! how long tasks are kept, its push policy and message-id rule ([`A2aConfig`]).

use serde::Deserialize;

/// What the card says about the agent. Reads from JSON (camelCase, as on the card).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CardInfo {
    /// Agent name.
    #[serde(default = "default_name")]
    pub name: String,
    /// What the agent does.
    #[serde(default = "default_description")]
    pub description: String,
    /// Agent version.
    #[serde(default = "default_version")]
    pub version: String,
    /// Skills (A2A `AgentSkill` objects: `id`, `name`, `description`, `tags`, …); a default
    /// skill when empty.
    #[serde(default)]
    pub skills: Vec<e2a::types::A2aAgentSkill>,
    /// Media types the agent accepts.
    #[serde(default = "default_modes")]
    pub default_input_modes: Vec<String>,
    /// Media types the agent answers with.
    #[serde(default = "default_modes")]
    pub default_output_modes: Vec<String>,
    /// `{organization, url}`.
    #[serde(default)]
    pub provider: Option<e2a::types::A2aAgentProvider>,
    /// Documentation URL.
    #[serde(default)]
    pub documentation_url: Option<String>,
    /// Skills only authenticated callers see (on the extended card).
    #[serde(default)]
    pub extended_skills: Vec<e2a::types::A2aAgentSkill>,
    /// A2A extensions the agent supports (`capabilities.extensions`); a request that does not
    /// activate a `required` one (`A2A-Extensions`) is refused.
    #[serde(default)]
    pub extensions: Vec<e2a::types::AgentExtensionSettings>,
}

fn default_name() -> String {
    "e2a gateway".into()
}
fn default_description() -> String {
    "An agent behind the e2a gateway (A2A 1.0 over JSON-RPC, HTTP+JSON and gRPC).".into()
}
fn default_version() -> String {
    env!("CARGO_PKG_VERSION").into()
}
fn default_modes() -> Vec<String> {
    vec!["text/plain".into(), "application/json".into()]
}

impl Default for CardInfo {
    fn default() -> Self {
        CardInfo {
            name: default_name(),
            description: default_description(),
            version: default_version(),
            skills: Vec::new(),
            default_input_modes: default_modes(),
            default_output_modes: default_modes(),
            provider: None,
            documentation_url: None,
            extended_skills: Vec::new(),
            extensions: Vec::new(),
        }
    }
}

/// Where the bindings are mounted and what the card says.
#[derive(Debug, Clone)]
pub struct A2aConfig {
    /// Path of the JSON-RPC binding (default `/a2a`).
    pub jsonrpc_path: String,
    /// Prefix of the HTTP+JSON routes (default empty: `/message:send`, `/tasks/…` at the root).
    pub rest_path: String,
    /// The public base URL clients reach the gateway at, path prefix included
    /// (`https://gw.example.com/agents/x`), when it sits behind a proxy; the card's interface
    /// URLs start with it. Without it they start with `http://` and the request's `Host`.
    pub public_url: Option<String>,
    /// What the card says.
    pub card: CardInfo,
    /// `Cache-Control: max-age` of the card, seconds.
    pub card_max_age: u64,
    /// Longest time a blocking `SendMessage` waits for the task to end or pause (it then
    /// answers with the task as it is).
    pub blocking_timeout: std::time::Duration,
    /// Which finished tasks (completed, failed, canceled, rejected) are kept with their
    /// events: how long after their last update, how many, and how many bytes of them in a
    /// store in memory (the least recently updated go first).
    pub retention: crate::store::TaskRetention,
    /// Most parts in one message (a message of many tiny parts costs far more in memory than
    /// its bytes).
    pub max_parts: usize,
    /// Whether the gRPC binding (`lf.a2a.v1.A2AService`) is served, on the same port, and
    /// declared in the card (the root agent's only; named agents are reached by `tenant`).
    pub grpc: bool,
    /// Push notifications: whether they are served (`capabilities.pushNotifications`), which
    /// webhooks are allowed, and how deliveries are retried.
    pub push: crate::tasks::push::PushPolicy,
    /// Which sends a `messageId` deduplicates (default: those naming a task).
    pub message_ids: e2a::types::MessageIdDedup,
    /// What cancelling a task that has already ended answers (default: the A2A error).
    pub cancel_finished: e2a::types::CancelFinished,
    /// Whether a send naming an unknown task id creates the task under it (default: no,
    /// `TaskNotFoundError`).
    pub client_task_ids: bool,
    /// Where the agent's delegated tasks call back (`delegate = "callback"`): with them, the
    /// callback route `POST {rest_path}/callbacks/tasks/{id}` is served (authenticated by the
    /// token bound to each task, not by the gateway's callers).
    pub callbacks: Option<crate::backends::Callbacks>,
}

impl Default for A2aConfig {
    fn default() -> Self {
        A2aConfig {
            jsonrpc_path: "/a2a".into(),
            rest_path: String::new(),
            public_url: None,
            card: CardInfo::default(),
            card_max_age: 300,
            blocking_timeout: std::time::Duration::from_secs(600),
            retention: crate::store::TaskRetention::default(),
            max_parts: 1_000,
            grpc: true,
            push: crate::tasks::push::PushPolicy::default(),
            message_ids: e2a::types::MessageIdDedup::default(),
            cancel_finished: e2a::types::CancelFinished::default(),
            client_task_ids: false,
            callbacks: None,
        }
    }
}

impl A2aConfig {
    /// This configuration for the named agent `name` served under `prefix` (its JSON-RPC
    /// binding at the prefix, its HTTP+JSON routes and card under it), its card from `card`.
    pub fn for_named(&self, prefix: &str, card: CardInfo) -> Self {
        let prefix = prefix.trim_end_matches('/').to_string();
        A2aConfig {
            jsonrpc_path: prefix.clone(),
            rest_path: prefix,
            card,
            grpc: false,
            ..self.clone()
        }
    }
}
