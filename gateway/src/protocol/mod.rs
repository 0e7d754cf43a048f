//! Protocol facts and wire codecs both sides of the gateway use: what a binding serves and a
//! backend calls (paths, versions, the ACP JSON-RPC peer).

pub mod acp;

/// Path of the E2A request operation.
pub const REQUESTS_PATH: &str = "/v1/e2a/requests";
/// The well-known path of an A2A agent card.
pub const CARD_PATH: &str = "/.well-known/agent-card.json";
