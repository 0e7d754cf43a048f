//! The A2A 1.0 agent card served at `/.well-known/agent-card.json`: `supportedInterfaces` for
//! the JSON-RPC and HTTP+JSON bindings at the URLs the gateway answers on (its configured
//! public base URL, else the request's `Host`), streaming, skills and default modes from
//! configuration, a bearer `securitySchemes` entry when a token is set, and caching headers.

use serde_json::{json, Map, Value};

pub use crate::tasks::config::{A2aConfig, CardInfo};

/// The well-known path of the card.
pub use crate::protocol::CARD_PATH;

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
