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
/// beyond the count (a store that keeps to the count as tasks finish learns it at once), and
/// sooner once a tenth of the count has finished since the last time ([`prune_due`]).
pub(super) async fn forget_finished(duties: Weak<Cluster>, period: Duration) {
    // (a look every sixtieth of the period: at the default minute, every second)
    let tick = (period / 60).max(Duration::from_millis(50)).min(period);
    let mut last: Option<(tokio::time::Instant, u64)> = None;
    loop {
        let Some(this) = duties.upgrade() else { return };
        let finished = this.log.finished();
        let due = last.is_none_or(|(at, then)| {
            prune_due(
                at.elapsed(),
                finished.saturating_sub(then),
                period,
                this.retention.max_tasks,
            )
        });
        if due {
            this.forget_finished().await;
            last = Some((tokio::time::Instant::now(), finished));
        }
        drop(this);
        tokio::time::sleep(tick).await;
    }
}

/// Whether the finished tasks are pruned again, `since` after the last time, `finished` tasks
/// having finished here meanwhile: once `period` has passed, or once a tenth of the
/// `max_tasks` kept have finished. Tasks finishing faster than a prune a period keeps up with
/// are pruned in smaller steps: a store on disk then holds few tasks past its bound (its file
/// stays near the size the bound asks for: at 20,000 sends a second, a minute's prune let a
/// SQLite file grow to twelve times the 100,000 tasks kept), and each prune stalls its writer
/// for less.
fn prune_due(since: Duration, finished: u64, period: Duration, max_tasks: usize) -> bool {
    let many = u64::try_from(max_tasks / 10).unwrap_or(u64::MAX).max(1);
    since >= period || finished >= many
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

#[cfg(test)]
mod tests {
    use super::prune_due;
    use std::time::Duration;

    #[test]
    fn finished_tasks_are_pruned_each_period_or_once_a_tenth_of_those_kept_finished() {
        let (minute, second) = (Duration::from_secs(60), Duration::from_secs(1));
        assert!(!prune_due(second, 0, minute, 100_000));
        assert!(!prune_due(second, 9_999, minute, 100_000));
        assert!(prune_due(second, 10_000, minute, 100_000));
        assert!(prune_due(minute, 0, minute, 100_000));
        // a bound of nothing (or a few): each task finished is many
        assert!(prune_due(second, 1, minute, 0));
        assert!(prune_due(second, 1, minute, 5));
        assert!(!prune_due(second, 0, minute, 5));
    }
}
