//! ACP (Agent Client Protocol, JSON-RPC over stdio): [`AcpServer`] is an ACP agent in front of
//! any gateway [`crate::Agent`] (`e2a acp`). The other direction — an ACP agent program behind
//! the gateway — is the backend [`crate::backends::AcpProcessAgent`].

mod server;
mod session;

pub use server::{AcpServer, AcpServerConfig, PROTOCOL_VERSION};
