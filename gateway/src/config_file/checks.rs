//! What the schema cannot say of a config file: agent names, references between sections,
//! route templates, one credential per caller, the keys JWT verification needs.

use super::{pointer_key, ConfigError, ConfigFile, RESERVED_NAMES};
use crate::web::auth::ROOT_AGENT;

/// What the schema cannot say: agent names, references between sections, route templates,
/// one credential per caller, the keys JWT verification needs.
pub(super) fn semantic_errors(file: &ConfigFile) -> Vec<ConfigError> {
    let routes = &file.settings.routes;
    let mut errors = Vec::new();
    for (name, entry) in &file.settings.agents {
        errors.extend(agent_name_error(file, name));
        errors.extend(super::groups::spec_of(file, name, entry).err());
    }
    errors.extend(super::groups::check(file));
    if let Some(d) = &file.settings.default_agent {
        if !file.settings.agents.contains_key(d) {
            errors.push(file.error("/default_agent", format!("no agent `{d}` in [agents]")));
        }
    }
    if routes.e2a == routes.a2a || routes.e2a == routes.agui || routes.a2a == routes.agui {
        errors.push(file.error("/routes", "the e2a, a2a and agui templates must differ"));
    }
    for (key, template) in [("e2a", &routes.e2a), ("a2a", &routes.a2a), ("agui", &routes.agui)] {
        if !template.starts_with('/') || !template.contains("{name}") {
            errors.push(file.error(
                &format!("/routes/{key}"),
                "a route template starts with / and holds {name}",
            ));
        }
    }
    for (name, c) in &file.settings.callers {
        caller_errors(file, name, c, &mut errors);
    }
    errors
}

/// What is wrong with an agent's name, if anything: its characters, or a name the gateway's
/// routes or allow-lists take.
pub(super) fn agent_name_error(file: &ConfigFile, name: &str) -> Option<ConfigError> {
    let ok = (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_');
    if !ok {
        Some(file.error(
            &format!("/agents/{}", pointer_key(name)),
            "an agent's name is 1–64 characters of a-z, 0-9, - and _",
        ))
    } else if RESERVED_NAMES.contains(&name) {
        Some(file.error(
            &format!("/agents/{name}"),
            format!("`{name}` is the first segment of a route of the gateway (A2A's `/{{tenant}}/…` routes use the agent's name); choose another name"),
        ))
    } else if name == ROOT_AGENT {
        Some(file.error(
            &format!("/agents/{name}"),
            format!("`{ROOT_AGENT}` names the root agent in allow-lists; choose another name"),
        ))
    } else {
        None
    }
}

/// What is wrong with caller `name`'s entry `c`: its credentials, its allow-list's agents,
/// its JWT keys.
pub(super) fn caller_errors(file: &ConfigFile, name: &str, c: &e2a::types::CallerEntry, errors: &mut Vec<ConfigError>) {
    let s = &file.settings;
    let at = |k: &str| format!("/callers/{}{k}", pointer_key(name));
    let credentials = [
        c.api_key_sha256.is_some(),
        c.api_key_file.is_some(),
        c.api_key_env.is_some(),
        c.jwt.is_some(),
        c.hmac_key_file.is_some(),
        c.hmac_key_env.is_some(),
    ];
    if credentials.iter().filter(|x| **x).count() != 1 {
        errors.push(file.error(
            &at(""),
            "give exactly one of api_key_sha256, api_key_file, api_key_env, jwt, hmac_key_file and hmac_key_env",
        ));
    }
    if let Some(h) = &c.api_key_sha256 {
        if !h.bytes().all(|b| b.is_ascii_hexdigit()) {
            errors.push(file.error(&at("/api_key_sha256"), "expected 64 hex digits"));
        }
    }
    for (i, agent) in c.agents.iter().flatten().enumerate() {
        if agent != ROOT_AGENT && !s.agents.contains_key(agent) {
            errors.push(file.error(&at(&format!("/agents/{i}")), format!("no agent `{agent}` in [agents]")));
        }
    }
    if let Some(j) = &c.jwt {
        use e2a::types::JwtAlgorithm as A;
        let keys = [j.public_key_file.is_some(), j.jwks_file.is_some()];
        match j.algorithm {
            A::Hs256 if j.secret_file.is_none() || keys.contains(&true) => {
                errors.push(file.error(&at("/jwt"), "HS256 takes secret_file (and no public key)"));
            }
            A::Rs256 | A::Es256 if j.secret_file.is_some() || keys.iter().filter(|x| **x).count() != 1 => {
                errors.push(file.error(
                    &at("/jwt"),
                    "RS256 and ES256 take one of public_key_file and jwks_file (and no secret_file)",
                ));
            }
            _ => {}
        }
    }
}
