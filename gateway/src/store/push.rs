//! What a [`PushStore`](super::PushStore) keeps of push notifications: each task's configs
//! (A2A `TaskPushNotificationConfig`s) and, beside each, its **outbox cursor** — the last event
//! of the task's log delivered to its webhook, the attempts at the next one, when to try again
//! and which gateway is delivering. The task's event log is the outbox: an event appended is an
//! event to deliver to every config of its task whose cursor is behind, so nothing is written
//! twice and nothing between the append and the delivery can be lost.
//!
//! A gateway **claims** configs with events to deliver (one at a time per config, across the
//! gateways sharing the store: a claim is a lease, and a claimed config is skipped by the
//! others until the claim ends or expires), posts the events in order, and moves the cursor
//! after each one the webhook took. An event the webhook refused `max_attempts` times is
//! recorded as a [`PushFailure`] and the cursor moves past it.

use std::time::Duration;

use e2a::types::A2aTaskPushNotificationConfig;

/// A push notification config as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct PushRecord {
    /// The task whose events are pushed.
    pub task_id: String,
    /// The config's id (unique per task).
    pub id: String,
    /// The config (its `token` and credentials are secrets: redacted in `Debug`).
    pub config: A2aTaskPushNotificationConfig,
    /// When it was created, ms since the Unix epoch.
    pub created_ms: i64,
    /// The trace id of the request that registered it: every notification carries it as
    /// `X-Trace-ID`, so a webhook's logs tie to the gateway's and the caller's.
    pub trace_id: Option<String>,
}

/// The key the stored config JSON keeps [`PushRecord::trace_id`] under (never shown to a
/// client: [`PushRecord::read`] takes it out).
const TRACE_KEY: &str = "e2aTraceId";

impl PushRecord {
    /// The config as JSON text (what the SQL stores keep), with the trace id beside it.
    pub fn config_json(&self) -> String {
        let mut json = serde_json::to_value(&self.config).unwrap_or_default();
        if let (Some(trace), Some(map)) = (&self.trace_id, json.as_object_mut()) {
            map.insert(TRACE_KEY.into(), trace.clone().into());
        }
        crate::json::text(&json)
    }

    /// A config read back from a store: `json` must be a `TaskPushNotificationConfig` (with
    /// the trace id [`PushRecord::config_json`] keeps beside it, if any).
    pub fn read(task_id: String, id: String, json: &str, created_ms: i64) -> Result<Self, super::StoreError> {
        let corrupt = |e: serde_json::Error| super::StoreError::Corrupt(format!("push config {task_id}/{id}: {e}"));
        let mut json: serde_json::Value = serde_json::from_str(json).map_err(corrupt)?;
        let trace_id = json
            .as_object_mut()
            .and_then(|m| m.remove(TRACE_KEY))
            .and_then(|t| t.as_str().map(String::from));
        let config = serde_json::from_value(json).map_err(corrupt)?;
        Ok(PushRecord {
            task_id,
            id,
            config,
            created_ms,
            trace_id,
        })
    }
}

/// A config with events to deliver, claimed by one gateway (see
/// [`PushStore::claim_pushes`](super::PushStore::claim_pushes)).
#[derive(Debug, Clone, PartialEq)]
pub struct PushJob {
    /// The config.
    pub record: PushRecord,
    /// The last event delivered (its sequence number; 0: none).
    pub delivered_seq: u64,
    /// Failed attempts at the event after it.
    pub attempts: u32,
}

/// What a gateway did with a claimed config (see
/// [`PushStore::push_progress`](super::PushStore::push_progress)).
#[derive(Debug, Clone, PartialEq)]
pub struct PushProgress {
    /// The task.
    pub task_id: String,
    /// The config.
    pub id: String,
    /// The gateway that claimed it: the progress is written only while it holds the claim.
    pub holder: String,
    /// The last event delivered (or given up on) now.
    pub delivered_seq: u64,
    /// Failed attempts at the event after it.
    pub attempts: u32,
    /// When to try again, from now (`None`: the claim stays, the gateway goes on).
    pub retry_in: Option<Duration>,
    /// The last delivery error (kept for operators; never holds a credential).
    pub error: Option<String>,
    /// An event given up on, recorded with the progress.
    pub failure: Option<PushFailure>,
}

/// An event a webhook did not take after every attempt: recorded, never silent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushFailure {
    /// The task.
    pub task_id: String,
    /// The config.
    pub config_id: String,
    /// The event's sequence number in the task's log.
    pub seq: u64,
    /// How many attempts were made.
    pub attempts: u32,
    /// The last attempt's error.
    pub error: String,
    /// When it was given up on, ms since the Unix epoch.
    pub at_ms: i64,
}
