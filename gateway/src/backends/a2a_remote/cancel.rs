//! A run dropped before its end (the gateway stops polling a cancelled run) cancels its remote
//! task: at once when its id is known, else after reading the remote's stream on for it.

use std::time::Duration;

use futures_util::StreamExt;

use super::{remote_task_and_context, A2aRemoteAgent, RemoteEvent, RemoteEvents};

/// How long a run dropped before its remote task's id arrived waits for it (reading the
/// remote's stream on), so its cancel still reaches the remote task.
const CANCEL_LEARN: Duration = Duration::from_secs(2);

/// Sends `CancelTask` for the remote task when a run is dropped before its end (the gateway
/// stops polling a cancelled run, so this is where the cancel is seen). It holds the remote's
/// stream: a run dropped before the remote task's id arrived reads on for it.
pub(super) struct CancelOnDrop {
    /// The agent that sends the cancel.
    pub(super) agent: A2aRemoteAgent,
    /// The interface the run posted to.
    pub(super) interface: super::exchange::Interface,
    /// The remote task, once an event named it.
    pub(super) task: Option<String>,
    /// The run ended on its own: nothing to cancel.
    pub(super) done: bool,
    /// The remote's stream, read by the run (and on for the task's id when dropped before it).
    pub(super) events: Option<RemoteEvents>,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if self.done || tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        if let Some(task) = self.task.take() {
            self.agent.propagate_cancel(self.interface.clone(), task);
            return;
        }
        let Some(mut events) = self.events.take() else { return };
        let (agent, interface) = (self.agent.clone(), self.interface.clone());
        tokio::spawn(async move {
            let learn = async {
                while let Some(Ok(ev)) = events.next().await {
                    let Some(RemoteEvent {
                        result: Some(event), ..
                    }) = RemoteEvent::read(&interface, &ev.data)
                    else {
                        continue;
                    };
                    if let Some((task, _)) = remote_task_and_context(&event) {
                        return Some(task.to_string());
                    }
                }
                None
            };
            if let Ok(Some(task)) = tokio::time::timeout(CANCEL_LEARN, learn).await {
                agent.propagate_cancel(interface, task);
            }
        });
    }
}
