//! The outbox loop: claims configs with events to deliver, delivers each config's events in
//! order (one job per config, up to [`MAX_JOBS`] at once, at most the policy's
//! `max_deliveries_per_host` of them to one webhook host), and writes its progress after every
//! event. A config claimed while its host has all its deliveries going is put back for
//! [`HOST_BUSY`]: a webhook that hangs holds up its own deliveries, not the other hosts'.

use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use axum::http::{header, HeaderValue};
use tokio::task::JoinSet;

use super::Pusher;
use crate::store::{now_ms, PushFailure, PushJob, PushProgress, PushRecord, StoreError};

/// How long a claim lasts; a job stops taking new events after half of it.
const CLAIM: Duration = Duration::from_secs(60);
/// How often the outbox looks for work without being woken (another gateway's events, retries
/// coming due, configs left by a gateway that stopped) while it has some.
const POLL: Duration = Duration::from_secs(1);
/// The longest it waits between looks when idle, on a store no other gateway shares (all its
/// configs and events are this gateway's, and wake it): each look that finds nothing doubles the
/// wait from [`POLL`] up to this; a wake or work found starts again from [`POLL`]. On a shared
/// store it looks every [`POLL`] (another gateway's events wake nobody here).
const IDLE_POLL: Duration = Duration::from_secs(60);
/// Most configs delivered at once.
const MAX_JOBS: usize = 32;
/// How long a config whose webhook host is busy waits before it is claimed again.
const HOST_BUSY: Duration = Duration::from_secs(1);
/// The header a notification carries its config's `token` in.
const TOKEN_HEADER: &str = "x-a2a-notification-token";
/// The same token, as GoAI's callback route reads it.
const GOAI_TOKEN_HEADER: &str = "a2a-notification-token";

/// Runs the outbox of `pusher` until it is dropped (with its service, once no delivery and no
/// run is left to use it).
pub(crate) async fn run(outbox: Weak<Pusher>) {
    let mut jobs = JoinSet::new();
    // deliveries going on per webhook host, and the host of each job (a job that panicked
    // gives its host back too)
    let mut per_host: HashMap<String, usize> = HashMap::new();
    let mut host_of_job: HashMap<tokio::task::Id, String> = HashMap::new();
    // the earliest retry a job of this gateway scheduled: the loop looks again then
    let mut next_retry: Option<Instant> = None;
    // how long to wait before looking again when nothing wakes the outbox
    let mut idle = POLL;
    loop {
        // (held until the loop looks again: at most POLL)
        let Some(pusher) = outbox.upgrade() else { return };
        // (the outbox runs only over a store that keeps push configs)
        let Some(pushes) = pusher.store.pushes.clone() else {
            return;
        };
        let room = MAX_JOBS.saturating_sub(jobs.len());
        if room > 0 {
            match pushes.claim_pushes(&pusher.holder, CLAIM, room).await {
                Ok(claimed) => {
                    // on a store other gateways share, their events and configs wake nobody
                    // here: look every second, as before
                    if claimed.is_empty() && jobs.is_empty() && !pusher.store.leases.shared() {
                        idle = (idle * 2).min(IDLE_POLL);
                    } else {
                        idle = POLL;
                    }
                    if !claimed.is_empty() {
                        pusher.activate();
                    }
                    for job in claimed {
                        let host = host_of(&job.record.config.url);
                        let going = per_host.entry(host.clone()).or_default();
                        if *going >= pusher.policy.max_deliveries_per_host {
                            put_back(&pusher, job).await;
                            next_retry = Some(
                                next_retry.map_or(Instant::now() + HOST_BUSY, |n| n.min(Instant::now() + HOST_BUSY)),
                            );
                            continue;
                        }
                        *going += 1;
                        let spawned = jobs.spawn(deliver(pusher.clone(), job));
                        host_of_job.insert(spawned.id(), host);
                    }
                }
                Err(e) => tracing::warn!(error = %e, "push notifications: cannot claim work"),
            }
        }
        let now = Instant::now();
        let wait = match next_retry.take() {
            Some(at) if at > now => {
                next_retry = Some(at);
                idle.min(at - now)
            }
            _ => idle,
        };
        tokio::select! {
            _ = pusher.wake.notified() => idle = POLL,
            _ = tokio::time::sleep(wait) => {}
            Some(done) = jobs.join_next_with_id(), if !jobs.is_empty() => {
                let (id, retry) = match done {
                    Ok((id, retry)) => (id, retry),
                    Err(e) => (e.id(), None),
                };
                if let Some(host) = host_of_job.remove(&id) {
                    if let Some(going) = per_host.get_mut(&host) {
                        *going = going.saturating_sub(1);
                        if *going == 0 {
                            per_host.remove(&host);
                        }
                    }
                }
                if let Some(at) = retry {
                    next_retry = Some(next_retry.map_or(at, |n| n.min(at)));
                }
            }
        }
    }
}

/// The host (and port) of a webhook URL, what deliveries are counted by (the URL itself when
/// it cannot be read: its delivery fails on its own).
fn host_of(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(u) => format!(
            "{}:{}",
            u.host_str().unwrap_or_default(),
            u.port_or_known_default().unwrap_or_default()
        ),
        Err(_) => url.to_string(),
    }
}

/// Gives a claimed config back for [`HOST_BUSY`], its attempts unchanged.
async fn put_back(pusher: &Pusher, job: PushJob) {
    let progress = PushProgress {
        task_id: job.record.task_id,
        id: job.record.id,
        holder: pusher.holder.clone(),
        delivered_seq: job.delivered_seq,
        attempts: job.attempts,
        retry_in: Some(HOST_BUSY),
        error: None,
        failure: None,
    };
    if let Err(e) = write(pusher, progress).await {
        tracing::warn!(error = %e, "push notifications: cannot put a config back");
    }
}

/// Delivers the events of one claimed config after its cursor, in order, until they are all
/// delivered, one is to be retried later (returns when), or half the claim has passed.
async fn deliver(pusher: Arc<Pusher>, job: PushJob) -> Option<Instant> {
    let started = Instant::now();
    let PushJob {
        record,
        mut delivered_seq,
        mut attempts,
    } = job;
    let (task_id, id) = (record.task_id.clone(), record.id.clone());
    let policy = &pusher.policy;
    let events = match pusher.store.tasks.events_after(&task_id, delivered_seq).await {
        Ok(events) => events,
        Err(e) => {
            tracing::warn!(task_id = %task_id, config_id = %id, error = %e, "push notifications: cannot read the task's events");
            release(&pusher, &task_id, &id).await;
            return None;
        }
    };
    let cursor = Cursor {
        pusher: &pusher,
        task_id: &task_id,
        id: &id,
    };
    let metrics = pusher.metrics.get();
    let count = |outcome| metrics.metrics().push_attempt(metrics.agent(), outcome);
    for event in events {
        if started.elapsed() > CLAIM / 2 {
            break;
        }
        // (`events = "terminal"`: the others are skipped, their place kept)
        let ends_task = || crate::tasks::feed::state_in(&event.event).is_some_and(|s| s.is_terminal());
        let sent = match policy.terminal_only && !ends_task() {
            true => Ok(()),
            false => post(&pusher, &record, &event.event).await,
        };
        count(match (&sent, attempts.saturating_add(1) >= policy.max_attempts) {
            (Ok(()), _) => "delivered",
            (Err(_), false) => "retry",
            (Err(_), true) => "failed",
        });
        let update = match sent {
            Ok(()) => {
                tracing::debug!(task_id = %task_id, config_id = %id, seq = event.seq, "push notification delivered");
                delivered_seq = event.seq;
                attempts = 0;
                cursor.progress(delivered_seq, 0, None, None, None)
            }
            Err(error) => {
                attempts = attempts.saturating_add(1);
                if attempts < policy.max_attempts {
                    let wait = policy.retry_delay(attempts);
                    let again = cursor
                        .retry_later(event.seq, delivered_seq, attempts, wait, error)
                        .await;
                    return Some(again);
                }
                let update = cursor.give_up(event.seq, attempts, error);
                delivered_seq = event.seq;
                attempts = 0;
                update
            }
        };
        match write(&pusher, update).await {
            Ok(true) => {}
            // deleted, or another gateway took the claim over: it goes on from the store
            Ok(false) => return None,
            Err(e) => {
                tracing::warn!(task_id = %task_id, config_id = %id, error = %e, "push notifications: cannot store progress");
                return None;
            }
        }
    }
    release(&pusher, &task_id, &id).await;
    // events appended while this job ran find the config free now
    pusher.wake.notify_one();
    None
}

/// The config a delivery job holds (`id` of task `task_id`), and where it writes its progress.
struct Cursor<'a> {
    pusher: &'a Pusher,
    task_id: &'a str,
    id: &'a str,
}

impl Cursor<'_> {
    /// The config's progress under this gateway's claim.
    fn progress(
        &self,
        delivered_seq: u64,
        attempts: u32,
        retry_in: Option<Duration>,
        error: Option<String>,
        failure: Option<PushFailure>,
    ) -> PushProgress {
        PushProgress {
            task_id: self.task_id.to_string(),
            id: self.id.to_string(),
            holder: self.pusher.holder.clone(),
            delivered_seq,
            attempts,
            retry_in,
            error,
            failure,
        }
    }

    /// After the `attempts`-th failed attempt at event `seq` (`error`), fewer than the policy
    /// allows: the retry in `wait` is written; returns when the outbox is to look again.
    async fn retry_later(&self, seq: u64, delivered_seq: u64, attempts: u32, wait: Duration, error: String) -> Instant {
        let (task_id, id) = (self.task_id, self.id);
        tracing::info!(
            task_id = %task_id, config_id = %id, seq, attempts, error = %error,
            retry_in_ms = wait.as_millis() as u64, "push notification not delivered; will retry"
        );
        let _ = write(
            self.pusher,
            self.progress(delivered_seq, attempts, Some(wait), Some(error), None),
        )
        .await;
        // (a little after: the store decides when it is due)
        Instant::now() + wait + Duration::from_millis(10)
    }

    /// After the last failed attempt (the `attempts`-th) at event `seq` (`error`): the event is
    /// given up on; the progress to write past it, its failure recorded.
    fn give_up(&self, seq: u64, attempts: u32, error: String) -> PushProgress {
        let (task_id, id) = (self.task_id, self.id);
        tracing::warn!(
            task_id = %task_id, config_id = %id, seq, attempts, error = %error,
            "push notification given up on: recorded as failed"
        );
        let failure = PushFailure {
            task_id: task_id.to_string(),
            config_id: id.to_string(),
            seq,
            attempts,
            error: error.clone(),
            at_ms: now_ms(),
        };
        self.progress(seq, 0, None, Some(error), Some(failure))
    }
}

/// Writes a job's progress: `Ok(false)` when the claim is no longer this gateway's (or the
/// config was deleted).
async fn write(pusher: &Pusher, p: PushProgress) -> Result<bool, StoreError> {
    pusher.store.pushes_kept()?.push_progress(p).await
}

/// Ends this gateway's claim of config `id` of task `task_id` (a failure is the claim's
/// expiry: another gateway may take it then).
async fn release(pusher: &Pusher, task_id: &str, id: &str) {
    if let Ok(pushes) = pusher.store.pushes_kept() {
        let _ = pushes.release_push(task_id, id, &pusher.holder).await;
    }
}

/// POSTs one event to the config's webhook; `Err` says why it was not taken (never with a
/// credential: the URL's host, the status, or the connection error).
async fn post(pusher: &Pusher, record: &PushRecord, event: &str) -> Result<(), String> {
    let config = &record.config;
    let url = pusher.policy.target.check_url(&config.url)?;
    let client = pusher.client()?;
    let mut req = client
        .post(url)
        .header(header::CONTENT_TYPE, "application/json")
        .body(event.to_string());
    // the trace id of the request that registered the config (a caller's id: not a secret)
    if let Some(trace) = record.trace_id.as_deref().and_then(|t| HeaderValue::from_str(t).ok()) {
        req = req.header(crate::web::trace::X_TRACE_ID, trace);
    }
    if let Some(auth) = config
        .authentication
        .as_ref()
        .filter(|_| pusher.policy.signer.is_none())
    {
        if let Some(credentials) = &auth.credentials {
            let mut value = HeaderValue::from_str(&format!("{} {}", auth.scheme, credentials.expose()))
                .map_err(|_| "the config's authentication is not a valid header value".to_string())?;
            value.set_sensitive(true);
            req = req.header(header::AUTHORIZATION, value);
        }
    }
    if let Some(token) = &config.token {
        let mut value = HeaderValue::from_str(token.expose())
            .map_err(|_| "the config's token is not a valid header value".to_string())?;
        value.set_sensitive(true);
        // both names: A2A's, and the one GoAI's callback route reads
        req = req.header(TOKEN_HEADER, value.clone()).header(GOAI_TOKEN_HEADER, value);
    }
    // the agent's machine identity: its signature (the Authorization of the config's own
    // authentication gives way: a signed request's Authorization is its signature)
    if let Some(signer) = &pusher.policy.signer {
        for (name, value) in signer.headers("POST", &config.url, event.as_bytes()) {
            let mut value = HeaderValue::from_str(&value).map_err(|_| "a signature header is not valid".to_string())?;
            value.set_sensitive(name == header::AUTHORIZATION);
            req = req.header(name, value);
        }
    }
    let answer = req.send().await.map_err(|e| describe(&e))?;
    let status = answer.status();
    if status.is_success() {
        Ok(())
    } else {
        Err(format!("the webhook answered {status}"))
    }
}

/// A send error and its causes, without the URL.
fn describe(e: &reqwest::Error) -> String {
    let mut text = if e.is_timeout() {
        "the webhook did not answer in time".to_string()
    } else if e.is_connect() {
        "cannot connect to the webhook".to_string()
    } else {
        "the notification could not be sent".to_string()
    };
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::web::metrics::MetricsHandle;

    /// How often the outbox of `handle`'s metrics has looked for work.
    fn looks(handle: &MetricsHandle) -> u64 {
        let text = handle.get().metrics().encode(&[]);
        let line = text
            .lines()
            .find(|l| l.contains("_count") && l.contains("op=\"claim_pushes\""))
            .unwrap_or("x 0");
        line.rsplit(' ').next().and_then(|n| n.parse().ok()).unwrap_or(0)
    }

    /// An outbox running over `stores` (metered into the handle returned), and its pusher.
    fn started(stores: crate::store::Stores) -> (Arc<MetricsHandle>, Arc<Pusher>) {
        let handle = Arc::new(MetricsHandle::default());
        let pusher = Arc::new(Pusher::new(
            super::super::PushPolicy::default(),
            stores.metered(&handle),
            "gw".into(),
            handle.clone(),
        ));
        tokio::spawn(run(Arc::downgrade(&pusher)));
        (handle, pusher)
    }

    #[tokio::test(start_paused = true)]
    async fn an_idle_outbox_looks_less_and_less_often_and_at_once_when_woken() {
        let (handle, pusher) = started(crate::store::Stores::memory());
        tokio::time::sleep(Duration::from_secs(600)).await;
        // 1, 2, 4 … 60 s apart: a dozen or so looks in ten idle minutes (600 at one a second)
        let idle = looks(&handle);
        assert!((5..=20).contains(&idle), "{idle} looks in ten idle minutes");
        // a config made here wakes it at once
        pusher.activate();
        tokio::time::sleep(Duration::from_millis(1)).await;
        assert_eq!(looks(&handle), idle + 1);
    }

    /// Leases of a store other gateways share (all else as the memory store's).
    struct Shared;

    impl crate::store::Leases for Shared {
        fn shared(&self) -> bool {
            true
        }
    }

    #[tokio::test(start_paused = true)]
    async fn on_a_shared_store_the_outbox_looks_every_second() {
        let mut stores = crate::store::Stores::memory();
        stores.leases = Arc::new(Shared);
        let (handle, _pusher) = started(stores);
        tokio::time::sleep(Duration::from_millis(60_500)).await;
        // another gateway's events wake nobody here
        let looks = looks(&handle);
        assert!((59..=62).contains(&looks), "{looks} looks in a minute");
    }
}
