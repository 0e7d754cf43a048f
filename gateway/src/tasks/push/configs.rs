//! The four push-config operations of the task service (`CreateTaskPushNotificationConfig`,
//! `Get…`, `List…`, `Delete…`), with params in their 1.0 ProtoJSON form (what every binding
//! hands over), and the config a send carries (`configuration.taskPushNotificationConfig`).

use std::sync::Arc;

use e2a::types::{A2aListTaskPushNotificationConfigsResponse, A2aTaskPushNotificationConfig};
use serde_json::{Map, Value};

use super::Pusher;
use crate::agent::Caller;
use crate::store::{now_ms, PushRecord, Stores};
use crate::tasks::error::{A2aError, A2aErrorKind};
use crate::tasks::log::TaskLog;

/// Most configs in one page of `ListTaskPushNotificationConfigs`.
const MAX_PAGE: usize = 100;

/// `field` of `params`, a non-empty string.
fn text<'a>(params: &'a Map<String, Value>, field: &str) -> Option<&'a str> {
    params.get(field).and_then(Value::as_str).filter(|s| !s.is_empty())
}

/// A config read from `value` (a `TaskPushNotificationConfig`), errors naming the field under
/// `at` (`params`, `params.configuration.taskPushNotificationConfig`).
fn read_config(value: &Map<String, Value>, at: &str) -> Result<A2aTaskPushNotificationConfig, A2aError> {
    serde_path_to_error::deserialize(crate::json::object_deserializer(value)).map_err(|e| {
        let path = e.path().to_string();
        let field = if path == "." {
            at.to_string()
        } else {
            format!("{at}.{path}")
        };
        A2aError::invalid_params(format!("{field}: {}", e.inner()))
    })
}

/// The task id and config id of a Get or Delete (1.0 `{taskId, id}`; 0.3's
/// `{id, pushNotificationConfigId}` reads too).
fn task_and_config(params: &Map<String, Value>) -> Result<(String, String), A2aError> {
    let (task, config) = match text(params, "taskId") {
        Some(task) => (Some(task), text(params, "id")),
        None => (text(params, "id"), text(params, "pushNotificationConfigId")),
    };
    let task = task.ok_or_else(|| A2aError::invalid_params("params.taskId (the task id) is required"))?;
    let config =
        config.ok_or_else(|| A2aError::invalid_params("params.id (the push notification config id) is required"))?;
    Ok((task.to_string(), config.to_string()))
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
        if config.url.trim().is_empty() {
            return Err(A2aError::invalid_params(format!("{at}.url is required")));
        }
        // the URL and a literal address now; what a name resolves to at each delivery (no DNS
        // is needed to accept a config: a client offline, or a name not yet published)
        self.push
            .policy
            .target
            .check_url(&config.url)
            .map_err(|e| A2aError::invalid_params(format!("{at}.url: {e}")))?;
        if let Some(auth) = &config.authentication {
            if auth.scheme.trim().is_empty() {
                return Err(A2aError::invalid_params(format!(
                    "{at}.authentication.scheme is required"
                )));
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

    /// `CreateTaskPushNotificationConfig`: `params` is the `TaskPushNotificationConfig`
    /// (`taskId`, `url`, `token`, `authentication`, an optional `id`). A config under an id
    /// the task already has replaces it. The events from the next one on are delivered.
    pub(crate) async fn create(
        &self,
        params: &Map<String, Value>,
        caller: &Caller,
    ) -> Result<A2aTaskPushNotificationConfig, A2aError> {
        self.push_supported()?;
        // drafts nested the config (`{taskId, config: {…}}`, 0.3 `pushNotificationConfig`)
        let nested = ["config", "pushNotificationConfig"]
            .iter()
            .find_map(|k| params.get(*k).and_then(Value::as_object));
        let (config, at) = match nested {
            Some(inner) => {
                let mut merged = inner.clone();
                for k in ["taskId", "tenant"] {
                    if let Some(v) = params.get(k) {
                        merged.entry(k).or_insert_with(|| v.clone());
                    }
                }
                (read_config(&merged, "params.config")?, "params.config")
            }
            None => (read_config(params, "params")?, "params"),
        };
        if config.task_id.is_empty() {
            return Err(A2aError::invalid_params("params.taskId (the task id) is required"));
        }
        let rec = self.log.load(&config.task_id, caller).await?;
        self.check_target(&config, at).await?;
        let trace = crate::web::trace::current_trace_id().map(|t| t.to_string());
        self.register(config, &rec.id, rec.last_seq, trace).await
    }

    /// `GetTaskPushNotificationConfig` (`{taskId, id}`).
    pub(crate) async fn get(
        &self,
        params: &Map<String, Value>,
        caller: &Caller,
    ) -> Result<A2aTaskPushNotificationConfig, A2aError> {
        self.push_supported()?;
        let (task_id, id) = task_and_config(params)?;
        let rec = self.log.load(&task_id, caller).await?;
        match self.store.pushes_kept()?.get_push(&rec.id, &id).await? {
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
        params: &Map<String, Value>,
        caller: &Caller,
    ) -> Result<A2aListTaskPushNotificationConfigsResponse, A2aError> {
        self.push_supported()?;
        let task_id = text(params, "taskId")
            .or_else(|| text(params, "id"))
            .ok_or_else(|| A2aError::invalid_params("params.taskId (the task id) is required"))?;
        let crate::tasks::params::Page { size, offset } = crate::tasks::params::Page::read(params)?;
        let page_size = match size {
            None | Some(0) => MAX_PAGE,
            Some(n) => usize::try_from(n)
                .map_err(|_| A2aError::invalid_params("params.pageSize must be a non-negative integer"))?
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
    pub(crate) async fn delete(&self, params: &Map<String, Value>, caller: &Caller) -> Result<(), A2aError> {
        self.push_supported()?;
        let (task_id, id) = task_and_config(params)?;
        let rec = self.log.load(&task_id, caller).await?;
        self.store.pushes_kept()?.delete_push(&rec.id, &id).await?;
        Ok(())
    }

    /// The webhook a send's `configuration` registers (`taskPushNotificationConfig`; 0.3's
    /// `pushNotificationConfig`), checked against the push policy.
    pub(crate) async fn of_send(
        &self,
        params: &Map<String, Value>,
    ) -> Result<Option<A2aTaskPushNotificationConfig>, A2aError> {
        let configuration = params.get("configuration").and_then(Value::as_object);
        let Some((key, config)) = configuration.and_then(|c| {
            ["taskPushNotificationConfig", "pushNotificationConfig"]
                .into_iter()
                .find_map(|k| c.get(k).filter(|v| !v.is_null()).map(|v| (k, v)))
        }) else {
            return Ok(None);
        };
        let at = format!("params.configuration.{key}");
        let config = config
            .as_object()
            .ok_or_else(|| A2aError::invalid_params(format!("{at} must be an object")))?;
        let config = read_config(config, &at)?;
        self.check_target(&config, &at).await?;
        Ok(Some(config))
    }
}
