//! The runs of tasks in progress in this gateway, and the leases that say which gateway runs
//! which task (on a store several gateways share): one run per task at a time, claimed before
//! its turn starts, let go of when it ends, its lease renewed while it runs.

use crate::maps::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use super::error::{A2aError, A2aErrorKind};
use crate::agent::RequestContext;
use crate::pipeline::boundary::{StopCell, StopReason};
use crate::store::{Leases, StoreError};

/// How often an answer to a paused task tries again (50 ms apart) for the lease the pausing
/// gateway is about to let go of.
const LEASE_RETRIES: usize = 10;

/// A run in progress: how to follow it and how to stop it.
#[derive(Clone)]
pub(super) struct Live {
    cancel: CancellationToken,
    /// Why the gateway cancels the run, set before `cancel` fires (the final frame's reason).
    stop: StopCell,
    canceled_by_client: Arc<AtomicBool>,
}

impl Live {
    /// Stops the run (its agent's request is canceled).
    pub(super) fn cancel(&self) {
        self.cancel.cancel();
    }

    /// Stops the run at its client's request: its final status says the client canceled it.
    pub(super) fn cancel_by_client(&self) {
        self.canceled_by_client.store(true, Ordering::SeqCst);
        self.cancel.cancel();
    }

    /// The flag that says the client canceled the run (read by the turn's mapper).
    pub(super) fn canceled_by_client(&self) -> Arc<AtomicBool> {
        self.canceled_by_client.clone()
    }
}

/// The runs in progress in this gateway (by task id), and the task leases this gateway holds
/// in the store under its name (`holder`) for `lease` at a time.
pub(crate) struct LiveRuns {
    live: Mutex<HashMap<String, Live>>,
    leases: Arc<dyn Leases>,
    /// This gateway's name in task leases (and push claims).
    holder: String,
    lease: Duration,
}

impl LiveRuns {
    /// No run yet, leases taken in `leases` as `holder` for `lease` at a time.
    pub(super) fn new(leases: Arc<dyn Leases>, holder: String, lease: Duration) -> Self {
        LiveRuns {
            live: Mutex::new(HashMap::default()),
            leases,
            holder,
            lease,
        }
    }

    /// Runs in progress.
    pub(crate) fn count(&self) -> usize {
        self.live.lock().len()
    }

    /// Cancels every run in progress (shutdown).
    pub(crate) fn cancel_all(&self) {
        for live in self.live.lock().values() {
            // the run ends with `reason: "shutdown"`, not as if its client went away
            let _ = live.stop.set(StopReason::Shutdown);
            live.cancel.cancel();
        }
    }

    /// Task `id`'s run, when it runs here.
    pub(super) fn get(&self, id: &str) -> Option<Live> {
        self.live.lock().get(id).cloned()
    }

    /// Whether several gateways share the store (a task may run on another one).
    pub(super) fn shared(&self) -> bool {
        self.leases.shared()
    }

    /// Claims task `id` for a run: one at a time in this gateway (two answers to one pause
    /// race here), and across the gateways sharing the store by its lease (the gateway that
    /// paused an `answered` task lets go of it just after storing the pause: an answer that
    /// quick waits a little).
    pub(super) async fn claim(&self, id: &str, answered: bool, ctx: &RequestContext) -> Result<Live, A2aError> {
        let live = Live {
            cancel: ctx.cancel.clone(),
            stop: ctx.stop.clone(),
            canceled_by_client: Arc::new(AtomicBool::new(false)),
        };
        {
            let mut l = self.live.lock();
            if l.contains_key(id) {
                return Err(still_working(id, ""));
            }
            l.insert(id.to_string(), live.clone());
        }
        let mut leased = self.take_lease(id).await;
        for _ in 0..LEASE_RETRIES {
            if !matches!(leased, Ok(false)) || !answered {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
            leased = self.take_lease(id).await;
        }
        match leased {
            Ok(true) => Ok(live),
            other => {
                self.live.lock().remove(id);
                Err(match other {
                    Err(e) => A2aError::from(e),
                    Ok(_) => still_working(id, " on another gateway"),
                })
            }
        }
    }

    /// Lets go of a claimed task whose run did not start a turn.
    pub(super) async fn unclaim(&self, id: &str) {
        self.live.lock().remove(id);
        let _ = self.leases.release(id, &self.holder).await;
    }

    /// Task `id`'s run has ended: it leaves the table, then its lease goes.
    pub(super) async fn end(&self, id: &str) {
        self.live.lock().remove(id);
        if let Err(e) = self.leases.release(id, &self.holder).await {
            tracing::warn!(task_id = %id, error = %e, "cannot release a task's lease");
        }
    }

    /// Takes (or renews) task `id`'s lease: `false` when another gateway holds it.
    pub(super) async fn take_lease(&self, id: &str) -> Result<bool, StoreError> {
        self.leases.acquire(id, &self.holder, self.lease).await
    }

    /// Lets go of task `id`'s lease.
    pub(super) async fn release_lease(&self, id: &str) -> Result<(), StoreError> {
        self.leases.release(id, &self.holder).await
    }

    /// Asks the gateway that runs task `id` to stop its run.
    pub(super) async fn request_cancel(&self, id: &str) -> Result<(), StoreError> {
        self.leases.request_cancel(id).await
    }

    /// Another gateway asked to stop task `id`'s run (its client canceled it there).
    pub(super) fn cancel_requested(&self, id: &str) {
        if let Some(live) = self.get(id) {
            live.cancel_by_client();
        }
    }

    /// Renews the leases of the runs in progress; a run whose lease another gateway took over
    /// (this one was presumed dead) is cancelled.
    async fn renew(&self) {
        let ids: Vec<String> = self.live.lock().keys().cloned().collect();
        if ids.is_empty() {
            return;
        }
        match self.leases.renew(&self.holder, ids, self.lease).await {
            Ok(lost) => {
                for id in lost {
                    tracing::error!(task_id = %id, "lost the lease of a running task: stopping its run");
                    if let Some(live) = self.get(&id) {
                        live.cancel();
                    }
                }
            }
            Err(e) => tracing::error!(error = %e, "cannot renew task leases"),
        }
    }
}

/// Renews the leases of this gateway's runs every `period` ([`LiveRuns::renew`]), until the
/// runs table is dropped (with the service, once no run is left).
pub(super) async fn renew_leases(runs: Weak<LiveRuns>, period: Duration) {
    loop {
        tokio::time::sleep(period).await;
        let Some(this) = runs.upgrade() else { return };
        this.renew().await;
    }
}

/// `task id is still working{place}`: an answer while its turn runs.
pub(super) fn still_working(id: &str, place: &str) -> A2aError {
    A2aError::new(
        A2aErrorKind::UnsupportedOperation,
        format!("task {id} is still working{place}; wait for it to ask for input"),
    )
}
