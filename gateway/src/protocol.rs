//! Protocol facts both sides of the gateway use: what a binding serves and a backend calls.

/// Path of the E2A request operation.
pub const REQUESTS_PATH: &str = "/v1/e2a/requests";
/// The well-known path of an A2A agent card.
pub const CARD_PATH: &str = "/.well-known/agent-card.json";
/// The ACP protocol version spoken (to editors, and to ACP agents behind the gateway).
pub const ACP_PROTOCOL_VERSION: u64 = 1;
