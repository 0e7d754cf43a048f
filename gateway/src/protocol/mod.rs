//! Protocol facts and wire codecs both sides of the gateway use: what a binding serves and a
//! backend calls (paths, versions, the ACP JSON-RPC peer).

pub mod acp;

/// Path of the E2A request operation.
pub const REQUESTS_PATH: &str = "/v1/e2a/requests";
/// Path of the E2A run resource's collection (`POST`: submit a run; `/{id}`: one run).
pub const RUNS_PATH: &str = "/v1/e2a/runs";

/// `s` as one URL path segment (percent-encoded: a run id in a path).
pub fn path_segment(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes())
        .collect::<String>()
        .replace('+', "%20")
}
/// The well-known path of an A2A agent card.
pub const CARD_PATH: &str = "/.well-known/agent-card.json";
