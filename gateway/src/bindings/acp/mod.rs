//! ACP (Agent Client Protocol, JSON-RPC over stdio): [`AcpServer`] is an ACP agent in front of
//! any gateway [`crate::agent::Agent`] (`e2a acp`); [`AcpRelay`] is the transparent hop between an
//! editor and an ACP agent program (`e2a acp --agent acp:CMD`). An ACP agent program behind
//! the other bindings is the backend [`crate::backends::AcpProcessAgent`].

mod relay;
mod server;
mod session;

pub use relay::AcpRelay;
pub use server::{
    AcpServer, AcpServerConfig, ConfigOptionDecl, ModeDecl, LIST_PAGE, PROTOCOL_VERSION, SESSION_CONTEXT_KEY,
};
pub use session::HistoryLimits;
