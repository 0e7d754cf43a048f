//! The agents behind the gateway, each an [`crate::Agent`]: [`EchoAgent`] (the default),
//! [`ScriptAgent`] (scenarios from a JSON file, for testing clients), [`E2aRemoteAgent`]
//! (another server speaking E2A over HTTP), [`A2aRemoteAgent`] (an A2A 1.0 agent) and
//! [`AcpProcessAgent`] (an ACP agent program, spoken to over stdio).

mod a2a_remote;
mod acp_process;
mod e2a_remote;
mod echo;
pub mod script;
mod spec;

pub use a2a_remote::{A2aRemoteAgent, A2aRemoteConfig, A2aRemoteError};
pub use acp_process::{AcpProcessAgent, AcpProcessConfig, PermissionPolicy};
pub use e2a_remote::{E2aRemoteAgent, E2aRemoteConfig, E2aRemoteError};
pub use echo::EchoAgent;
pub use script::{ScriptAgent, ScriptStats};
pub use spec::{AgentOptions, AgentSpec, SpecError};

use e2a::E2AEnvelope;

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
