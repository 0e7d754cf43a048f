//! The run pipeline every binding uses: admission (drain, stream permits, deadlines, the
//! caller, cancellation) and the stream [`boundary`] every agent's frames pass.

pub mod boundary;

use std::sync::Arc;

use tokio::sync::Semaphore;

use crate::agent::Agent;
use crate::config::GatewayConfig;
use crate::runs::Runs;

/// What the bindings of one gateway share: the agent, the configuration, the runs.
pub(crate) struct Pipeline {
    pub(crate) agent: Arc<dyn Agent>,
    pub(crate) config: GatewayConfig,
    pub(crate) runs: Arc<Runs>,
    pub(crate) streams: Arc<Semaphore>,
}
