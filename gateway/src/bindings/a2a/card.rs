//! The A2A 1.0 agent card served at `/.well-known/agent-card.json`: `supportedInterfaces` for
//! the JSON-RPC and HTTP+JSON bindings at the URLs the gateway answers on (its configured
//! public base URL, else the request's `Host`), streaming, skills and default modes from
//! configuration, a bearer `securitySchemes` entry when a token is set, and caching headers.

use e2a::types::{
    A2aAgentCapabilities, A2aAgentCard, A2aAgentInterface, A2aAgentSkill, A2aHttpAuthSecurityScheme,
    A2aSecurityRequirement, A2aSecurityScheme, A2aStringList,
};

pub use crate::tasks::config::{A2aConfig, CardInfo};

/// The well-known path of the card.
pub use crate::protocol::CARD_PATH;

/// The A2A version every interface speaks.
const PROTOCOL_VERSION: &str = "1.0";

/// The name of the bearer scheme in `securitySchemes`.
const BEARER: &str = "bearer";

/// An interface of `binding` at `url`.
fn interface(url: String, binding: &str) -> A2aAgentInterface {
    A2aAgentInterface {
        url,
        protocol_binding: binding.into(),
        protocol_version: PROTOCOL_VERSION.into(),
        tenant: None,
    }
}

/// The skill a card without configured skills offers: chat.
fn chat_skill(description: &str) -> A2aAgentSkill {
    A2aAgentSkill {
        id: Some("chat".into()),
        name: Some("Chat".into()),
        description: Some(description.into()),
        tags: vec!["e2a".into(), "chat".into()],
        examples: vec!["hello".into()],
        input_modes: Vec::new(),
        output_modes: Vec::new(),
        security_requirements: Vec::new(),
    }
}

/// Builds the card for clients that reach the gateway at `base` (no trailing slash).
/// `secured`: a bearer token is required (adds `securitySchemes`, `securityRequirements` and
/// the extended card). `extended`: the card for an authenticated caller.
pub fn build_card(config: &A2aConfig, base: &str, secured: bool, extended: bool) -> A2aAgentCard {
    let c = &config.card;
    let mut skills = if c.skills.is_empty() {
        vec![chat_skill(&c.description)]
    } else {
        c.skills.clone()
    };
    if extended {
        skills.extend(c.extended_skills.iter().cloned());
    }
    let (security_schemes, security_requirements) = if secured { bearer() } else { Default::default() };
    let mut card = A2aAgentCard {
        name: c.name.clone(),
        description: c.description.clone(),
        version: c.version.clone(),
        supported_interfaces: vec![
            interface(format!("{base}{}", config.jsonrpc_path), "JSONRPC"),
            interface(format!("{base}{}", config.rest_path), "HTTP+JSON"),
        ],
        capabilities: A2aAgentCapabilities {
            streaming: Some(true),
            push_notifications: Some(config.push.enabled),
            extended_agent_card: Some(secured),
            extensions: c.extensions.clone(),
        },
        default_input_modes: c.default_input_modes.clone(),
        default_output_modes: c.default_output_modes.clone(),
        skills,
        provider: c.provider.clone(),
        documentation_url: c.documentation_url.clone(),
        icon_url: None,
        security_schemes,
        security_requirements,
        signatures: Vec::new(),
    };
    if config.grpc {
        add_grpc(&mut card, base, None);
    }
    card
}

/// The gateway's bearer token as `securitySchemes` and the one `securityRequirements` entry.
fn bearer() -> (
    std::collections::BTreeMap<String, A2aSecurityScheme>,
    Vec<A2aSecurityRequirement>,
) {
    let scheme = A2aSecurityScheme {
        http_auth_security_scheme: Some(A2aHttpAuthSecurityScheme {
            scheme: "Bearer".into(),
            description: Some("A bearer token configured on the gateway".into()),
            bearer_format: None,
        }),
    };
    let requirement = A2aSecurityRequirement {
        schemes: [(BEARER.to_string(), A2aStringList { list: Vec::new() })].into(),
    };
    ([(BEARER.to_string(), scheme)].into(), vec![requirement])
}

/// Adds the gRPC interface to `card`: `host:port` of `base` (a gRPC target; gRPC's service
/// paths are fixed, at the root), as the official SDKs' cards write it; with `tenant`, the
/// named agent the root agent's gRPC service reaches by its `tenant` field.
pub fn add_grpc(card: &mut A2aAgentCard, base: &str, tenant: Option<&str>) {
    let authority = base.split_once("://").map_or(base, |(_, rest)| rest);
    let authority = authority.split('/').next().unwrap_or(authority);
    let mut grpc = interface(authority.to_string(), "GRPC");
    grpc.tenant = tenant.map(str::to_string);
    card.supported_interfaces.push(grpc);
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
        let card = serde_json::to_value(build_card(&config, "https://gw.example.com/p", true, false)).unwrap();
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
