//! The A2A 1.0 agent card served at `/.well-known/agent-card.json`: `supportedInterfaces` for
//! the JSON-RPC and HTTP+JSON bindings at the URLs the gateway answers on (its configured
//! public base URL, else the request's `Host`), streaming, skills and default modes from
//! configuration, a bearer `securitySchemes` entry when a token is set, and caching headers.

use serde::Deserialize;
use serde_json::{json, Map, Value};

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
    pub skills: Vec<Value>,
    /// Media types the agent accepts.
    #[serde(default = "default_modes")]
    pub default_input_modes: Vec<String>,
    /// Media types the agent answers with.
    #[serde(default = "default_modes")]
    pub default_output_modes: Vec<String>,
    /// `{organization, url}`.
    #[serde(default)]
    pub provider: Option<Value>,
    /// Documentation URL.
    #[serde(default)]
    pub documentation_url: Option<String>,
    /// Skills only authenticated callers see (on the extended card).
    #[serde(default)]
    pub extended_skills: Vec<Value>,
    /// A2A extensions the agent supports (`capabilities.extensions`); a request that does not
    /// activate a `required` one (`A2A-Extensions`) is refused.
    #[serde(default)]
    pub extensions: Vec<e2a::types::AgentExtensionSettings>,
}

fn default_name() -> String {
    "e2a gateway".into()
}
fn default_description() -> String {
    "An agent behind the e2a gateway (A2A 1.0 over JSON-RPC and HTTP+JSON).".into()
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
    /// How long a finished task (completed, failed, canceled, rejected) and its events are
    /// kept after its last update; then the store forgets it.
    pub task_retention: std::time::Duration,
    /// Most finished tasks kept (the least recently updated go first).
    pub max_finished_tasks: usize,
    /// Most parts in one message (a message of many tiny parts costs far more in memory than
    /// its bytes).
    pub max_parts: usize,
    /// Whether the gRPC binding (`lf.a2a.v1.A2AService`) is served, on the same port, and
    /// declared in the card (the root agent's only; named agents are reached by `tenant`).
    pub grpc: bool,
    /// Push notifications: whether they are served (`capabilities.pushNotifications`), which
    /// webhooks are allowed, and how deliveries are retried.
    pub push: crate::push::PushPolicy,
    /// Which sends a `messageId` deduplicates (default: those naming a task).
    pub message_ids: e2a::types::MessageIdDedup,
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
            task_retention: std::time::Duration::from_secs(7 * 24 * 3600),
            max_finished_tasks: 100_000,
            max_parts: 1_000,
            grpc: true,
            push: crate::push::PushPolicy::default(),
            message_ids: e2a::types::MessageIdDedup::default(),
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

/// The well-known path of the card.
pub const CARD_PATH: &str = "/.well-known/agent-card.json";

/// Builds the card for clients that reach the gateway at `base` (no trailing slash).
/// `secured`: a bearer token is required (adds `securitySchemes`, `securityRequirements` and
/// the extended card). `extended`: the card for an authenticated caller.
pub fn build_card(config: &A2aConfig, base: &str, secured: bool, extended: bool) -> Value {
    let c = &config.card;
    let mut skills = if c.skills.is_empty() {
        vec![json!({
            "id": "chat", "name": "Chat", "description": c.description,
            "tags": ["e2a", "chat"], "examples": ["hello"]
        })]
    } else {
        c.skills.clone()
    };
    if extended {
        skills.extend(c.extended_skills.iter().cloned());
    }
    let mut card = json!({
        "name": c.name,
        "description": c.description,
        "version": c.version,
        "supportedInterfaces": [
            {"url": format!("{base}{}", config.jsonrpc_path), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": format!("{base}{}", config.rest_path), "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"}
        ],
        "capabilities": {"streaming": true, "pushNotifications": config.push.enabled, "extendedAgentCard": secured},
        "defaultInputModes": c.default_input_modes,
        "defaultOutputModes": c.default_output_modes,
        "skills": skills,
    });
    if config.grpc {
        add_grpc(&mut card, base, None);
    }
    if !c.extensions.is_empty() {
        card["capabilities"]["extensions"] = serde_json::to_value(&c.extensions).unwrap_or_default();
    }
    let Some(m) = card.as_object_mut() else {
        return card;
    };
    if let Some(p) = &c.provider {
        m.insert("provider".into(), p.clone());
    }
    if let Some(d) = &c.documentation_url {
        m.insert("documentationUrl".into(), d.clone().into());
    }
    if secured {
        let mut schemes = Map::new();
        schemes.insert(
            "bearer".into(),
            json!({"httpAuthSecurityScheme": {"scheme": "Bearer", "description": "A bearer token configured on the gateway"}}),
        );
        m.insert("securitySchemes".into(), Value::Object(schemes));
        m.insert(
            "securityRequirements".into(),
            json!([{"schemes": {"bearer": {"list": []}}}]),
        );
    }
    card
}

/// Adds the gRPC interface to `card`: `host:port` of `base` (a gRPC target; gRPC's service
/// paths are fixed, at the root), as the official SDKs' cards write it; with `tenant`, the
/// named agent the root agent's gRPC service reaches by its `tenant` field.
pub fn add_grpc(card: &mut Value, base: &str, tenant: Option<&str>) {
    let authority = base.split_once("://").map_or(base, |(_, rest)| rest);
    let authority = authority.split('/').next().unwrap_or(authority);
    let mut interface = json!({"url": authority, "protocolBinding": "GRPC", "protocolVersion": "1.0"});
    if let Some(t) = tenant {
        interface["tenant"] = t.into();
    }
    if let Some(interfaces) = card["supportedInterfaces"].as_array_mut() {
        interfaces.push(interface);
    }
}

/// An HTTP date (`Sun, 06 Nov 1994 08:49:37 GMT`, RFC 9110).
pub fn http_date(t: std::time::SystemTime) -> String {
    httpdate::fmt_http_date(t)
}

/// A strong `ETag` for a card body (FNV-1a, 64 bits).
pub fn etag(body: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in body.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("\"{h:016x}\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interfaces_follow_the_base_url_and_paths() {
        let config = A2aConfig {
            public_url: Some("https://gw.example.com/p".into()),
            ..A2aConfig::default()
        };
        let card = build_card(&config, "https://gw.example.com/p", true, false);
        assert_eq!(card["supportedInterfaces"][0]["url"], "https://gw.example.com/p/a2a");
        assert_eq!(card["supportedInterfaces"][1]["url"], "https://gw.example.com/p");
        assert_eq!(card["capabilities"]["streaming"], true);
        assert!(card["securitySchemes"]["bearer"].is_object());
        assert_ne!(etag("a"), etag("b"));
        let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(784_111_777);
        assert_eq!(http_date(t), "Sun, 06 Nov 1994 08:49:37 GMT");
        assert_eq!(http_date(std::time::UNIX_EPOCH), "Thu, 01 Jan 1970 00:00:00 GMT");
    }
}
