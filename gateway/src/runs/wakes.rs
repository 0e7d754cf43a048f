//! Waking the readers of runs that go on at other gateways of a shared store: the store's
//! notices ([`crate::store::Leases::notices`], the same stream that carries the tasks' events)
//! say a run's log grew ([`StoreNotice::Framed`]), and the run's followers here read it then,
//! instead of reading the log on a timer. A follower still reads it after a quiet spell (a
//! notice lost with the listening connection, a lease that ran out).

use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::{broadcast, watch};

use crate::store::StoreNotice;

/// The followers of runs going on elsewhere, by run key: each key's last announced sequence.
#[derive(Default)]
pub(crate) struct Wakes {
    by_key: Mutex<HashMap<String, watch::Sender<u64>>>,
}

impl Wakes {
    /// Starts passing `notices` on to the followers (until the returned wakes are dropped);
    /// `None` outside a runtime.
    pub(super) fn start(notices: broadcast::Receiver<StoreNotice>) -> Option<Arc<Wakes>> {
        let handle = tokio::runtime::Handle::try_current().ok()?;
        let wakes = Arc::new(Wakes::default());
        handle.spawn(pass_on(Arc::downgrade(&wakes), notices));
        Some(wakes)
    }

    /// A follower of run `key`: woken by each notice of its frames from now on.
    pub(super) fn follow(self: &Arc<Self>, key: &str) -> Follow {
        let rx = self
            .by_key
            .lock()
            .entry(key.to_string())
            .or_insert_with(|| watch::Sender::new(0))
            .subscribe();
        Follow {
            wakes: self.clone(),
            key: key.to_string(),
            rx: Some(rx),
        }
    }

    /// Frames up to `seq` of run `key` are in the log.
    fn wake(&self, key: &str, seq: u64) {
        if let Some(tx) = self.by_key.lock().get(key) {
            tx.send_replace(seq);
        }
    }

    /// Notices were missed: every follower reads its log again.
    fn wake_all(&self) {
        for tx in self.by_key.lock().values() {
            tx.send_modify(|_| {});
        }
    }
}

/// One reader's wake-ups; dropping it forgets the key once no reader follows it.
pub(super) struct Follow {
    wakes: Arc<Wakes>,
    key: String,
    rx: Option<watch::Receiver<u64>>,
}

impl Follow {
    /// Waits until the run's log grew since the last wait, or for `quiet` at most.
    pub(super) async fn wait(&mut self, quiet: Duration) {
        if let Some(rx) = &mut self.rx {
            let _ = tokio::time::timeout(quiet, rx.changed()).await;
        }
    }
}

impl Drop for Follow {
    fn drop(&mut self) {
        drop(self.rx.take());
        let mut by_key = self.wakes.by_key.lock();
        if by_key.get(&self.key).is_some_and(|tx| tx.receiver_count() == 0) {
            by_key.remove(&self.key);
        }
    }
}

/// Passes the store's notices of runs' frames on to their followers here.
async fn pass_on(wakes: Weak<Wakes>, mut notices: broadcast::Receiver<StoreNotice>) {
    loop {
        let notice = notices.recv().await;
        let Some(this) = wakes.upgrade() else { return };
        match notice {
            Ok(StoreNotice::Framed { key, seq }) => this.wake(&key, seq),
            Ok(_) => {}
            Err(broadcast::error::RecvError::Lagged(_)) => this.wake_all(),
            Err(broadcast::error::RecvError::Closed) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_notice_wakes_the_followers_of_its_run_only_and_keys_go_with_their_followers() {
        let (tx, rx) = broadcast::channel(8);
        let wakes = Wakes::start(rx).expect("in a runtime");
        let (mut a, mut b) = (wakes.follow("run-a"), wakes.follow("run-b"));
        tx.send(StoreNotice::Framed {
            key: "run-a".into(),
            seq: 3,
        })
        .expect("sent");
        // woken well before the quiet spell ends; the other run's follower waits it out
        let waited = tokio::time::timeout(Duration::from_secs(10), a.wait(Duration::from_secs(60))).await;
        assert!(waited.is_ok(), "the notice woke the follower");
        let quiet = tokio::time::timeout(Duration::from_millis(50), b.wait(Duration::from_secs(60))).await;
        assert!(quiet.is_err(), "another run's notice wakes nobody else");
        drop((a, b));
        assert!(wakes.by_key.lock().is_empty(), "no follower, no key kept");
    }
}
