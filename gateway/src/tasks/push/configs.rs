//! The four push-config operations of the task service (`CreateTaskPushNotificationConfig`,
//! `Get…`, `List…`, `Delete…`), each with its typed request (what every binding
//! reads), and the config a send carries (`configuration.taskPushNotificationConfig`).

use std::sync::Arc;

use e2a::types::{
    A2aCreateTaskPushNotificationConfigRequest, A2aListTaskPushNotificationConfigsRequest,
    A2aListTaskPushNotificationConfigsResponse, A2aTaskPushNotificationConfig, A2aTaskPushNotificationConfigRequest,
};
use serde_json::{Map, Value};

use super::Pusher;
use crate::agent::Caller;
use crate::store::{now_ms, PushRecord, Stores};
use crate::tasks::error::{A2aError, A2aErrorKind};
use crate::tasks::log::TaskLog;
use crate::tasks::params::page_offset;
use crate::tasks::request::{invalid_at, required};

/// Most configs in one page of `ListTaskPushNotificationConfigs`.
const MAX_PAGE: usize = 100;

/// A config read from `value` (a `TaskPushNotificationConfig`), errors naming the field under
/// `at` (`configuration.taskPushNotificationConfig`).
fn read_config(value: &Map<String, Value>, at: &str) -> Result<A2aTaskPushNotificationConfig, A2aError> {
    let under: Vec<&str> = at.split('.').collect();
    crate::tasks::request::read_under(value, &under)
}

/// `s`, when it is not empty.
fn nonempty(s: &Option<String>) -> Option<&str> {
    s.as_deref().filter(|s| !s.is_empty())
}

/// The task id and config id of a Get or Delete (1.0 `{taskId, id}`; 0.3's
/// `{id, pushNotificationConfigId}` reads too).
fn task_and_config(r: &A2aTaskPushNotificationConfigRequest) -> Result<(&str, &str), A2aError> {
    let (task, config) = match nonempty(&r.task_id) {
        Some(task) => (Some(task), nonempty(&r.id)),
        None => (nonempty(&r.id), nonempty(&r.push_notification_config_id)),
    };
    Ok((required(task, "taskId")?, required(config, "id")?))
}

/// The push configs of tasks: kept in the store (`store`, its push role), each for a task of
/// the task log (`log`: the caller's, read first), checked against the push policy and
/// waking the outbox (`push`) when one is stored.
pub(crate) struct PushConfigs {
    store: Stores,
    log: Arc<TaskLog>,
    push: Arc<Pusher>,
}

impl PushConfigs {
    /// The configs `store` keeps for the tasks of `log`, delivered by `push`.
    pub(crate) fn new(store: Stores, log: Arc<TaskLog>, push: Arc<Pusher>) -> Self {
        PushConfigs { store, log, push }
    }

    /// Push notifications are off (`[a2a.push] enabled = false`, or a store that keeps no
    /// configs): `PushNotificationNotSupportedError`.
    fn push_supported(&self) -> Result<(), A2aError> {
        if self.push.policy.enabled {
            Ok(())
        } else {
            Err(A2aError::new(
                A2aErrorKind::PushNotificationNotSupported,
                "push notifications are not enabled on this gateway",
            ))
        }
    }

    /// A webhook config checked against the gateway's policy (`https`, a public literal
    /// address, not `localhost`), its errors naming `at.url`.
    async fn check_target(&self, config: &A2aTaskPushNotificationConfig, at: &str) -> Result<(), A2aError> {
        self.push_supported()?;
        let field = |f: &str| {
            if at.is_empty() {
                f.to_string()
            } else {
                format!("{at}.{f}")
            }
        };
        if config.url.trim().is_empty() {
            return Err(invalid_at(&field("url"), " is required"));
        }
        // the URL and a literal address now; what a name resolves to at each delivery (no DNS
        // is needed to accept a config: a client offline, or a name not yet published)
        self.push
            .policy
            .target
            .check_url(&config.url)
            .map_err(|e| invalid_at(&field("url"), &format!(": {e}")))?;
        if let Some(auth) = &config.authentication {
            if auth.scheme.trim().is_empty() {
                return Err(invalid_at(&field("authentication.scheme"), " is required"));
            }
        }
        Ok(())
    }

    /// Stores `config` for task `task_id` (an id given when it has none), delivering the events
    /// after `from_seq`, each naming `trace_id` (the registering request's); the config as stored.
    pub(crate) async fn register(
        &self,
        mut config: A2aTaskPushNotificationConfig,
        task_id: &str,
        from_seq: u64,
        trace_id: Option<String>,
    ) -> Result<A2aTaskPushNotificationConfig, A2aError> {
        if config.id.is_empty() {
            config.id = e2a::stream::new_id();
        }
        config.task_id = task_id.to_string();
        let max = self.push.policy.max_configs_per_task;
        let existing = self.store.pushes_kept()?.list_pushes(task_id).await?;
        if existing.len() >= max && !existing.iter().any(|r| r.id == config.id) {
            // a quota, not a malformed request: `RESOURCE_EXHAUSTED` (HTTP 429) on HTTP+JSON and gRPC
            return Err(A2aError::invalid_params(format!(
                "task {task_id} has {} push notification configs, the most it may have; delete one first",
                existing.len()
            ))
            .with_status(axum::http::StatusCode::TOO_MANY_REQUESTS));
        }
        let record = PushRecord {
            task_id: task_id.to_string(),
            id: config.id.clone(),
            config: config.clone(),
            created_ms: now_ms(),
            trace_id,
        };
        self.store.pushes_kept()?.put_push(record, from_seq).await?;
        self.push.activate();
        Ok(config)
    }

    /// `CreateTaskPushNotificationConfig`: the config of request `r` (1.0: its own fields;
    /// drafts nest it under `config`, 0.3 under `pushNotificationConfig`, the `taskId` beside
    /// it). A config under an id the task already has replaces it. The events from the next one
    /// on are delivered.
    pub(crate) async fn create(
        &self,
        r: A2aCreateTaskPushNotificationConfigRequest,
        caller: &Caller,
    ) -> Result<A2aTaskPushNotificationConfig, A2aError> {
        self.push_supported()?;
        let task_id = r.task_id.filter(|t| !t.is_empty());
        let (mut config, at) = match (r.config, r.push_notification_config) {
            (Some(c), _) => (c, "config"),
            (None, Some(c)) => (c, "pushNotificationConfig"),
            (None, None) => {
                let url = r.url.ok_or_else(|| invalid_at("url", " is required"))?;
                let config = A2aTaskPushNotificationConfig {
                    tenant: r.tenant.unwrap_or_default(),
                    id: r.id.unwrap_or_default(),
                    task_id: task_id.clone().unwrap_or_default(),
                    url,
                    token: r.token,
                    authentication: r.authentication,
                };
                (config, "")
            }
        };
        if config.task_id.is_empty() {
            config.task_id = task_id.unwrap_or_default();
        }
        required(Some(&config.task_id), "taskId")?;
        let rec = self.log.load(&config.task_id, caller).await?;
        self.check_target(&config, at).await?;
        let trace = crate::web::trace::current_trace_id().map(|t| t.to_string());
        self.register(config, &rec.id, rec.last_seq, trace).await
    }

    /// `GetTaskPushNotificationConfig` (`{taskId, id}`).
    pub(crate) async fn get(
        &self,
        r: A2aTaskPushNotificationConfigRequest,
        caller: &Caller,
    ) -> Result<A2aTaskPushNotificationConfig, A2aError> {
        self.push_supported()?;
        let (task_id, id) = task_and_config(&r)?;
        let rec = self.log.load(task_id, caller).await?;
        match self.store.pushes_kept()?.get_push(&rec.id, id).await? {
            Some(r) => Ok(r.config),
            None => Err(A2aError::new(
                A2aErrorKind::TaskNotFound,
                format!("task {task_id} has no push notification config {id}"),
            )),
        }
    }

    /// `ListTaskPushNotificationConfigs` (`{taskId, pageSize, pageToken}`), oldest first.
    pub(crate) async fn list(
        &self,
        r: A2aListTaskPushNotificationConfigsRequest,
        caller: &Caller,
    ) -> Result<A2aListTaskPushNotificationConfigsResponse, A2aError> {
        self.push_supported()?;
        let task_id = required(nonempty(&r.task_id).or(nonempty(&r.id)), "taskId")?;
        let offset = page_offset(r.page_token.as_deref())?;
        let page_size = match r.page_size.map(|c| c.get()) {
            None | Some(0) => MAX_PAGE,
            Some(n) => usize::try_from(n)
                .map_err(|_| invalid_at("pageSize", " must be a non-negative integer"))?
                .min(MAX_PAGE),
        };
        let rec = self.log.load(task_id, caller).await?;
        let all = self.store.pushes_kept()?.list_pushes(&rec.id).await?;
        let next = offset.saturating_add(page_size);
        let next_page_token = if next < all.len() {
            next.to_string()
        } else {
            String::new()
        };
        Ok(A2aListTaskPushNotificationConfigsResponse {
            configs: all.into_iter().skip(offset).take(page_size).map(|r| r.config).collect(),
            next_page_token,
        })
    }

    /// `DeleteTaskPushNotificationConfig` (`{taskId, id}`): idempotent — a config already gone
    /// is not an error (its task must still be the caller's).
    pub(crate) async fn delete(
        &self,
        r: A2aTaskPushNotificationConfigRequest,
        caller: &Caller,
    ) -> Result<(), A2aError> {
        self.push_supported()?;
        let (task_id, id) = task_and_config(&r)?;
        let rec = self.log.load(task_id, caller).await?;
        self.store.pushes_kept()?.delete_push(&rec.id, id).await?;
        Ok(())
    }

    /// The webhook a send's `configuration` registers (`taskPushNotificationConfig`; 0.3's
    /// `pushNotificationConfig`), checked against the push policy.
    pub(crate) async fn of_send(
        &self,
        params: &Map<String, Value>,
    ) -> Result<Option<A2aTaskPushNotificationConfig>, A2aError> {
        let configuration = e2a::read::member(params, "configuration").and_then(Value::as_object);
        let Some((key, config)) = configuration.and_then(|c| {
            ["taskPushNotificationConfig", "pushNotificationConfig"]
                .into_iter()
                .find_map(|k| e2a::read::member(c, k).filter(|v| !v.is_null()).map(|v| (k, v)))
        }) else {
            return Ok(None);
        };
        let at = format!("configuration.{key}");
        let config = config
            .as_object()
            .ok_or_else(|| invalid_at(&at, " must be an object"))?;
        let config = read_config(config, &at)?;
        self.check_target(&config, &at).await?;
        Ok(Some(config))
    }
}
