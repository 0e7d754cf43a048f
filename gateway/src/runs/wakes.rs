//! What the store's notices ([`crate::store::Leases::notices`], the same stream that carries
//! the tasks' events and cancels) tell the runs of a gateway sharing it with others: a run's
//! log grew ([`StoreNotice::Framed`]) — the run's followers here read it then, instead of
//! reading the log on a timer (a follower still reads it after a quiet spell: a notice lost
//! with the listening connection, a lease that ran out) — or a client asked another gateway to
//! cancel a run ([`StoreNotice::RunCancelRequested`]), which this one stops if it runs it.

use crate::maps::HashMap;
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
    /// Starts passing `notices` on to the followers, and the runs' cancel requests to
    /// `cancel` (with the run's key), until the returned wakes are dropped; `None` outside a
    /// runtime.
    pub(super) fn start(
        notices: broadcast::Receiver<StoreNotice>,
        cancel: impl Fn(&str) + Send + Sync + 'static,
    ) -> Option<Arc<Wakes>> {
        let handle = tokio::runtime::Handle::try_current().ok()?;
        let wakes = Arc::new(Wakes::default());
        handle.spawn(pass_on(Arc::downgrade(&wakes), notices, cancel));
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

/// Passes the store's notices of runs' frames on to their followers here, and its runs'
/// cancel requests to `cancel`.
async fn pass_on(wakes: Weak<Wakes>, mut notices: broadcast::Receiver<StoreNotice>, cancel: impl Fn(&str)) {
    loop {
        let notice = notices.recv().await;
        let Some(this) = wakes.upgrade() else { return };
        match notice {
            Ok(StoreNotice::Framed { key, seq }) => this.wake(&key, seq),
            Ok(StoreNotice::RunCancelRequested { key }) => cancel(&key),
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
        let asked = Arc::new(Mutex::new(Vec::new()));
        let cancels = asked.clone();
        let wakes = Wakes::start(rx, move |key| cancels.lock().push(key.to_string())).expect("in a runtime");
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
        // a cancel asked elsewhere reaches the runs, by key
        let mut c = wakes.follow("run-c");
        tx.send(StoreNotice::RunCancelRequested { key: "run-b".into() })
            .expect("sent");
        tx.send(StoreNotice::Framed {
            key: "run-c".into(),
            seq: 1,
        })
        .expect("sent");
        // (notices are passed on in order: once run-c's wakes, run-b's cancel was passed on)
        c.wait(Duration::from_secs(10)).await;
        assert_eq!(*asked.lock(), ["run-b"]);
    }
}
