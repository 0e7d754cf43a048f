//! ACP (Agent Client Protocol, JSON-RPC over stdio): [`AcpServer`] is an ACP agent in front of
//! any gateway [`crate::agent::Agent`] (`e2a acp`); [`AcpRelay`] is the transparent hop between an
//! editor and an ACP agent program (`e2a acp --agent acp:CMD`). An ACP agent program behind
//! the other bindings is the backend [`crate::backends::AcpProcessAgent`].

mod answer;
mod config;
mod lifecycle;
mod relay;
mod server;
mod session;
mod turn;

pub use config::{AcpServerConfig, ConfigOptionDecl, ModeDecl};
pub use lifecycle::LIST_PAGE;
pub use relay::AcpRelay;
pub use server::{AcpServer, PROTOCOL_VERSION};
pub use session::HistoryLimits;
pub use turn::SESSION_CONTEXT_KEY;
