//! The background work of a gateway whose task store several gateways share: renewing the
//! leases of its runs, failing the tasks of instances that died, and passing on what the
//! others do. Each loop ends when the task service is dropped.

use std::sync::atomic::Ordering;
use std::sync::Weak;
use std::time::Duration;

use tokio::sync::broadcast;

use super::TaskService;
use crate::store::StoreNotice;

/// Renews the leases of this gateway's runs every `period`; a run whose lease another
/// gateway took over (this one was presumed dead) is cancelled.
pub(super) async fn renew_leases(state: Weak<TaskService>, period: Duration) {
    loop {
        tokio::time::sleep(period).await;
        let Some(this) = state.upgrade() else { return };
        let ids: Vec<String> = this.live.lock().keys().cloned().collect();
        if ids.is_empty() {
            continue;
        }
        match this
            .store
            .leases
            .renew(&this.holder, ids, this.shared.config.lease)
            .await
        {
            Ok(lost) => {
                for id in lost {
                    tracing::error!(task_id = %id, "lost the lease of a running task: stopping its run");
                    if let Some(live) = this.live_of(&id) {
                        live.cancel.cancel();
                    }
                }
            }
            Err(e) => tracing::error!(error = %e, "cannot renew task leases"),
        }
    }
}

/// Fails, every `period`, the tasks whose gateway died (their lease expired).
pub(super) async fn reap_orphans(state: Weak<TaskService>, period: Duration) {
    loop {
        tokio::time::sleep(period).await;
        let Some(this) = state.upgrade() else { return };
        settle_orphans(&this).await;
    }
}

/// Fails the tasks the store says have no run ([`crate::store::Leases::orphans`]) and
/// this gateway does not run: at start on a store only this gateway uses (what it ran before
/// a restart ends `FAILED`, and their webhooks hear so without anyone reading the task).
pub(super) async fn settle_orphans(this: &TaskService) {
    match this.store.leases.orphans().await {
        Ok(ids) => {
            for id in ids {
                if let Ok(Some(rec)) = this.stored(&id).await {
                    this.settle(rec).await;
                }
            }
        }
        Err(e) => tracing::error!(error = %e, "cannot look for orphaned tasks"),
    }
}

/// Forgets, every `period`, the finished tasks past the retention window or beyond the count.
pub(super) async fn forget_finished(state: Weak<TaskService>, period: Duration) {
    loop {
        tokio::time::sleep(period).await;
        let Some(this) = state.upgrade() else { return };
        let (age, keep) = (this.config.task_retention, this.config.max_finished_tasks);
        match this.store.tasks.prune_tasks(age, keep).await {
            Ok(0) => {}
            Ok(n) => tracing::debug!(forgotten = n, "finished tasks past the retention forgotten"),
            Err(e) => tracing::warn!(error = %e, "cannot forget finished tasks"),
        }
    }
}

/// Passes on what other gateways sharing the store do: their events to this gateway's
/// followers, their cancel requests to this gateway's runs.
pub(super) async fn pass_on_notices(state: Weak<TaskService>, mut notices: broadcast::Receiver<StoreNotice>) {
    loop {
        let notice = notices.recv().await;
        let Some(this) = state.upgrade() else { return };
        match notice {
            Ok(StoreNotice::Appended { task_id, seq, event }) => this.relay(&task_id, seq, event).await,
            Ok(StoreNotice::CancelRequested { task_id }) => {
                if let Some(live) = this.live_of(&task_id) {
                    live.canceled_by_client.store(true, Ordering::SeqCst);
                    live.cancel.cancel();
                }
            }
            // followers see the gap (or a quiet spell) and read the log
            Err(broadcast::error::RecvError::Lagged(n)) => {
                tracing::warn!(missed = n, "task store notices lagged");
            }
            Err(broadcast::error::RecvError::Closed) => return,
        }
    }
}
