//! ACP on the wire, for both sides of the gateway: the ACP agent `e2a acp` serves
//! ([`crate::bindings::acp`]) and the ACP client an `acp:CMD` backend speaks
//! ([`crate::backends::AcpProcessAgent`]) — JSON-RPC 2.0 over newline-delimited JSON.

pub mod message;
pub mod peer;

pub use message::{cancel_request_params, cancelled_request, codes, read_params, Incoming, RpcError, MAX_LINE};
pub use peer::{Hook, NotificationHook, Pace, Peer, PeerOptions, HIGH_WATER, QUIET_LOG_EVERY};

/// The ACP protocol version spoken (to editors, and to ACP agents behind the gateway).
pub const PROTOCOL_VERSION: u64 = 1;
