//! A2A push notifications (A2A 1.0 §3.1.7–3.1.10, §4.3, §13.2): a client registers a webhook
//! for a task (`CreateTaskPushNotificationConfig`, or a send's
//! `configuration.taskPushNotificationConfig`), and every event of the task is POSTed to it as
//! a `StreamResponse` JSON body, with `Authorization: <scheme> <credentials>` from the config's
//! `authentication` and its `token` as `X-A2A-Notification-Token`.
//!
//! **Delivery** comes from a durable outbox in the task store ([`crate::store::PushRecord`]):
//! the task's event log, and beside each config the last event delivered. It is at least once
//! (the cursor moves after the webhook answered 2xx), in order per task and webhook, retried
//! with exponential backoff and jitter up to `max_attempts` times per event, then recorded as
//! failed (a [`crate::store::PushFailure`], and a warning in the log) and delivery goes on with
//! the next event. It survives a restart (the cursor is in the store), and with several
//! gateways on one PostgreSQL exactly one of them delivers each config's events at a time (a
//! claim with a lease, `FOR UPDATE SKIP LOCKED`).
//!
//! **Where to** ([`target`]): `https` webhooks whose host resolves to public addresses only: a
//! literal address (and `localhost`) checked when the config is created, every address a name
//! resolves to on every connection (no DNS is needed to create a config; no DNS rebinding); no
//! redirects, no proxies, a timeout per notification. `allow_private` (the development flag
//! `--push-allow-private`) also allows `http` and loopback or private targets.

mod configs;
mod outbox;
pub mod target;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

pub use target::{is_public, TargetPolicy};

/// How push notifications are accepted and delivered (`[a2a.push]` of the config file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushPolicy {
    /// Whether push configs are accepted and delivered (`capabilities.pushNotifications`).
    pub enabled: bool,
    /// Which webhooks are allowed.
    pub target: TargetPolicy,
    /// Attempts at one event before it is recorded as failed.
    pub max_attempts: u32,
    /// The first retry's delay; each next one doubles, up to [`MAX_RETRY_DELAY`].
    pub retry_base: Duration,
    /// Longest a webhook may take to answer one notification.
    pub timeout: Duration,
    /// Most push configs one task may have.
    pub max_configs_per_task: usize,
    /// Most notifications delivered at once to one webhook host.
    pub max_deliveries_per_host: usize,
    /// Only the event that ends a task is posted (`events = "terminal"`).
    pub terminal_only: bool,
    /// The machine identity notifications are signed with (GoAI-HMAC-SHA256): the agent's.
    pub signer: Option<crate::web::hmac::Signer>,
}

/// The longest wait between two attempts at one event.
pub const MAX_RETRY_DELAY: Duration = Duration::from_secs(300);

impl From<&e2a::types::PushSettings> for PushPolicy {
    fn from(s: &e2a::types::PushSettings) -> Self {
        PushPolicy {
            enabled: s.enabled,
            target: TargetPolicy {
                allow_private: s.allow_private,
            },
            max_attempts: u32::try_from(s.max_attempts.get()).unwrap_or(u32::MAX),
            retry_base: Duration::from_millis(s.retry_base_ms.get()),
            timeout: Duration::from_secs(s.timeout_secs.get()),
            max_configs_per_task: usize::try_from(s.max_configs_per_task.get()).unwrap_or(usize::MAX),
            max_deliveries_per_host: usize::try_from(s.max_deliveries_per_host.get()).unwrap_or(usize::MAX),
            terminal_only: s.events == Some(e2a::types::PushEvents::Terminal),
            signer: None,
        }
    }
}

impl Default for PushPolicy {
    /// The schema's defaults (`PushSettings`).
    fn default() -> Self {
        PushPolicy::from(&e2a::types::PushSettings::default())
    }
}

impl PushPolicy {
    /// The wait before attempt `attempts + 1` at an event that failed `attempts` times:
    /// `retry_base · 2^(attempts-1)`, at most [`MAX_RETRY_DELAY`], with jitter (a random
    /// point in its upper half, so gateways retrying together spread out).
    pub fn retry_delay(&self, attempts: u32) -> Duration {
        let doubled = self
            .retry_base
            .saturating_mul(1u32 << attempts.saturating_sub(1).min(20))
            .min(MAX_RETRY_DELAY);
        let half = doubled / 2;
        let jitter = (uuid::Uuid::new_v4().as_u128() % 1_000) as u32;
        half + half * jitter / 1_000
    }
}

/// The delivery of push notifications: the policy, the delivery client, the outbox's wake-up,
/// and what the outbox works on (the store's push configs and task log, claimed as `holder`;
/// its attempts counted in `metrics`).
pub(crate) struct Pusher {
    pub(crate) policy: PushPolicy,
    store: crate::store::Stores,
    /// This gateway's name in push claims.
    holder: String,
    metrics: Arc<crate::web::metrics::MetricsHandle>,
    client: OnceLock<reqwest::Client>,
    wake: tokio::sync::Notify,
    /// Whether a config may be waiting: set when one is created or claimed here; until then
    /// an appended event does not wake the outbox (it still looks every second).
    active: AtomicBool,
}

impl std::fmt::Debug for Pusher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pusher")
            .field("policy", &self.policy)
            .field("holder", &self.holder)
            .finish_non_exhaustive()
    }
}

impl Pusher {
    /// Delivery under `policy` of the configs in `store`, claimed as `holder`.
    pub(crate) fn new(
        policy: PushPolicy,
        store: crate::store::Stores,
        holder: String,
        metrics: Arc<crate::web::metrics::MetricsHandle>,
    ) -> Self {
        Pusher {
            policy,
            store,
            holder,
            metrics,
            client: OnceLock::new(),
            wake: tokio::sync::Notify::new(),
            active: AtomicBool::new(false),
        }
    }

    /// Events were appended: the outbox looks for configs to deliver, when there may be any.
    pub(crate) fn poke(&self) {
        if self.active.load(Ordering::Relaxed) {
            self.wake.notify_one();
        }
    }

    /// A config was created or found: from now on appended events wake the outbox.
    pub(crate) fn activate(&self) {
        self.active.store(true, Ordering::Relaxed);
        self.wake.notify_one();
    }

    /// The delivery client: no redirects, no proxy, the policy's resolver and timeouts.
    fn client(&self) -> Result<&reqwest::Client, String> {
        if let Some(c) = self.client.get() {
            return Ok(c);
        }
        let timeout = self.policy.timeout;
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .dns_resolver(self.policy.target.resolver())
            .connect_timeout(timeout.min(Duration::from_secs(10)))
            .timeout(timeout)
            .tcp_nodelay(true)
            .user_agent(concat!("e2a-gateway/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| format!("cannot build the push client: {e}"))?;
        Ok(self.client.get_or_init(|| client))
    }
}

pub(crate) use configs::PushConfigs;
pub(crate) use outbox::run as run_outbox;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_back_off_exponentially_with_jitter_up_to_the_cap() {
        let p = PushPolicy {
            retry_base: Duration::from_millis(1_000),
            ..PushPolicy::default()
        };
        for attempts in 1..=12u32 {
            let full = Duration::from_millis(1_000)
                .saturating_mul(1 << (attempts - 1))
                .min(MAX_RETRY_DELAY);
            let d = p.retry_delay(attempts);
            assert!(
                d >= full / 2 && d <= full,
                "attempt {attempts}: {d:?} not in [{:?}, {full:?}]",
                full / 2
            );
        }
        assert!(p.retry_delay(40) <= MAX_RETRY_DELAY);
    }

    #[test]
    fn the_default_policy_is_the_schemas() {
        let p = PushPolicy::default();
        assert!(p.enabled);
        assert!(!p.target.allow_private);
        assert!(p.max_attempts >= 1);
        assert!(p.timeout >= Duration::from_secs(10) && p.timeout <= Duration::from_secs(30));
    }
}
