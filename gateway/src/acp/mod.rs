//! ACP (Agent Client Protocol, JSON-RPC over stdio) on the gateway, both ways:
//!
//! - [`AcpServer`]: an ACP agent in front of any gateway [`crate::Agent`] (`e2a acp`);
//! - [`AcpAgent`]: an ACP agent program as a gateway agent (`--agent acp:CMD`), the gateway
//!   speaking to it as an ACP client.

pub mod client;
pub mod rpc;
pub mod server;

pub use client::{AcpAgent, AcpAgentConfig, PermissionPolicy};
pub use server::{AcpServer, AcpServerConfig};
