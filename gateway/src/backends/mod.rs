//! The agents behind the gateway, each an [`crate::agent::Agent`]: [`EchoAgent`] (the default),
//! [`ScriptAgent`] (scenarios from a JSON file, for testing clients), [`E2aRemoteAgent`]
//! (another server speaking E2A over HTTP), [`A2aRemoteAgent`] (an A2A 1.0 agent) and
//! [`AcpProcessAgent`] (an ACP agent program, spoken to over stdio).

mod a2a_remote;
mod acp_process;
mod e2a_remote;
mod echo;
mod group;
pub mod script;
mod spec;

pub use a2a_remote::{A2aRemoteAgent, A2aRemoteConfig, A2aRemoteError, Callbacks, DELEGATION_EXTENSION};
pub(crate) use a2a_remote::{CallbackError, Delivered};
pub use acp_process::{AcpProcessAgent, AcpProcessConfig, PermissionPolicy, AGENT_ENV, AGENT_ENV_PREFIXES};
pub use e2a_remote::{E2aRemoteAgent, E2aRemoteConfig, E2aRemoteError};
pub use echo::EchoAgent;
pub use group::{GroupAgent, GroupError, GroupMode};
pub use script::{ScriptAgent, ScriptStats};
pub use spec::{AgentOptions, AgentSpec, SpecError};

use e2a::E2AEnvelope;

/// Whether a bearer token sent to `url` would cross the network in clear text: plain `http`
/// to a host that is not loopback (`localhost`, `127.0.0.0/8`, `::1`).
pub(crate) fn token_in_clear(url: &str) -> bool {
    let Ok(u) = reqwest::Url::parse(url) else {
        return false;
    };
    u.scheme() == "http" && !crate::web::is_loopback_host(u.host_str().unwrap_or(""))
}

/// The user's text in a request: ACP prompt blocks, `params.text` / `content` / `query`, or the
/// text parts of an A2A `params.message`.
pub fn request_text(request: &E2AEnvelope) -> String {
    let text = e2a::acp::parse_prompt_blocks(&request.params).text;
    if !text.is_empty() {
        return text;
    }
    request
        .params
        .get("message")
        .map(e2a::a2a::jsonrpc::message_text)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_token_is_in_clear_over_http_off_loopback_only() {
        for url in [
            "http://agents.example.com/a2a",
            "http://10.0.0.7:8080",
            "HTTP://gw.internal",
        ] {
            assert!(super::token_in_clear(url), "{url}");
        }
        for url in [
            "https://agents.example.com",
            "http://127.0.0.1:9000",
            "http://127.8.0.1",
            "http://localhost:3000/x",
            "http://[::1]:8080",
            "not a url",
        ] {
            assert!(!super::token_in_clear(url), "{url}");
        }
    }

    #[test]
    fn remote_agents_refuse_to_send_a_token_in_clear() {
        use super::*;
        let far = "http://agents.example.com";
        let a2a = A2aRemoteConfig::new(far).with_token(far, "t".into());
        assert!(matches!(A2aRemoteAgent::new(a2a), Err(A2aRemoteError::TokenInClear)));
        assert!(
            A2aRemoteAgent::new(A2aRemoteConfig::new(far)).is_ok(),
            "no token, nothing in clear"
        );
        let mut e2a = E2aRemoteConfig::new(far);
        e2a.token = Some("t".into());
        assert!(matches!(E2aRemoteAgent::new(e2a), Err(E2aRemoteError::TokenInClear)));
        let mut near = E2aRemoteConfig::new("http://127.0.0.1:9");
        near.token = Some("t".into());
        assert!(E2aRemoteAgent::new(near).is_ok());
    }
}
