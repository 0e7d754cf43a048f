//! The background duties of a gateway towards its task store and the gateways sharing it:
//! failing the tasks of instances that died (or of this one before a restart), forgetting
//! finished tasks past the retention, and passing on what the others do. Each loop ends when
//! the duties are dropped with the task service. (Renewing the leases of this gateway's runs
//! is the runs' own loop: `live::renew_leases`.)

use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::sync::broadcast;

use super::config::A2aConfig;
use super::feed::Followers;
use super::live::LiveRuns;
use super::log::TaskLog;
use crate::store::{StoreNotice, Stores, TaskRetention};

/// What the cluster duties work on: the store (its leases' orphans and notices, its finished
/// tasks), the task log (orphans are settled there), the followers and runs of this gateway
/// (what others do is passed on to them), and the retention of finished tasks.
pub(crate) struct Cluster {
    store: Stores,
    log: Arc<TaskLog>,
    followers: Arc<Followers>,
    runs: Arc<LiveRuns>,
    /// Which finished tasks are kept.
    retention: TaskRetention,
}

impl Cluster {
    /// The duties towards `store`, under `config`'s retention.
    pub(super) fn new(
        store: Stores,
        log: Arc<TaskLog>,
        followers: Arc<Followers>,
        runs: Arc<LiveRuns>,
        config: &A2aConfig,
    ) -> Self {
        Cluster {
            store,
            log,
            followers,
            runs,
            retention: config.retention,
        }
    }

    /// What other gateways sharing the store do, when they can say so (a PostgreSQL store).
    pub(super) fn notices(&self) -> Option<broadcast::Receiver<StoreNotice>> {
        self.store.leases.notices()
    }

    /// Fails the tasks the store says have no run ([`crate::store::Leases::orphans`]) and
    /// this gateway does not run: at start on a store only this gateway uses (what it ran
    /// before a restart ends `FAILED`, and their webhooks hear so without anyone reading the
    /// task).
    pub(super) async fn settle_orphans(&self) {
        match self.store.leases.orphans().await {
            Ok(ids) => {
                for id in ids {
                    if let Ok(Some(rec)) = self.log.stored(&id).await {
                        self.log.settle(rec).await;
                    }
                }
            }
            Err(e) => tracing::error!(error = %e, "cannot look for orphaned tasks"),
        }
    }

    /// Forgets the finished tasks past the retention window or beyond the count.
    async fn forget_finished(&self) {
        match self.store.tasks.prune_tasks(self.retention).await {
            Ok(0) => {}
            Ok(n) => tracing::debug!(forgotten = n, "finished tasks past the retention forgotten"),
            Err(e) => tracing::warn!(error = %e, "cannot forget finished tasks"),
        }
    }

    /// Passes on what another gateway did: its event to this gateway's followers, its cancel
    /// request to this gateway's run.
    async fn pass_on(&self, notice: StoreNotice) {
        match notice {
            StoreNotice::Appended { task_id, seq, event } => self.followers.relay(&task_id, seq, event).await,
            StoreNotice::CancelRequested { task_id } => self.runs.cancel_requested(&task_id),
            // the runs' own followers hear of it ([`crate::runs`])
            StoreNotice::Framed { .. } | StoreNotice::RunCancelRequested { .. } => {}
        }
    }
}

/// Fails, every `period`, the tasks whose gateway died (their lease expired).
pub(super) async fn reap_orphans(duties: Weak<Cluster>, period: Duration) {
    loop {
        tokio::time::sleep(period).await;
        let Some(this) = duties.upgrade() else { return };
        this.settle_orphans().await;
    }
}

/// Forgets, at once and then every `period`, the finished tasks past the retention window or
/// beyond the count (a store that keeps to the count as tasks finish learns it at once).
pub(super) async fn forget_finished(duties: Weak<Cluster>, period: Duration) {
    loop {
        let Some(this) = duties.upgrade() else { return };
        this.forget_finished().await;
        drop(this);
        tokio::time::sleep(period).await;
    }
}

/// Passes on what other gateways sharing the store do: their events to this gateway's
/// followers, their cancel requests to this gateway's runs.
pub(super) async fn pass_on_notices(duties: Weak<Cluster>, mut notices: broadcast::Receiver<StoreNotice>) {
    loop {
        let notice = notices.recv().await;
        let Some(this) = duties.upgrade() else { return };
        match notice {
            Ok(notice) => this.pass_on(notice).await,
            // followers see the gap (or a quiet spell) and read the log
            Err(broadcast::error::RecvError::Lagged(n)) => {
                tracing::warn!(missed = n, "task store notices lagged");
            }
            Err(broadcast::error::RecvError::Closed) => return,
        }
    }
}
