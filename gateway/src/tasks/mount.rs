//! How a task service is mounted and shown: its config (where its bindings are mounted, what
//! its card says), when its card was made, and its tenancy — the named agents' services a
//! request's `tenant` names, and its own `tenant` on the root agent's gRPC service.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use super::config::A2aConfig;
use super::TaskService;

/// A service's config, its card's date and its tenancy (the tenancy set once the gateway's
/// routes are built).
pub(crate) struct Mount {
    config: Arc<A2aConfig>,
    /// When the card was made (it is fixed for the life of the gateway): `Last-Modified`.
    card_modified: String,
    /// The named agents' services, by name: a request whose `tenant` names one goes there
    /// (A2A 1.0's multi-tenant form).
    tenants: OnceLock<HashMap<String, Arc<TaskService>>>,
    /// A named agent reached over the root agent's gRPC service: its `tenant` there (its card
    /// declares that interface).
    grpc_tenant: OnceLock<String>,
}

impl Mount {
    /// A service mounted under `config`, its card made now, no tenancy yet.
    pub(super) fn new(config: Arc<A2aConfig>) -> Self {
        Mount {
            config,
            card_modified: httpdate::fmt_http_date(std::time::SystemTime::now()),
            tenants: OnceLock::new(),
            grpc_tenant: OnceLock::new(),
        }
    }

    /// Where its bindings are mounted and what its card says.
    pub(crate) fn config(&self) -> &A2aConfig {
        &self.config
    }

    /// When its card was made (`Last-Modified`).
    pub(crate) fn card_modified(&self) -> &str {
        &self.card_modified
    }

    /// The named agents' services a request's `tenant` may name (set once the routes are
    /// built), by name.
    pub(crate) fn tenants(&self) -> Option<&HashMap<String, Arc<TaskService>>> {
        self.tenants.get()
    }

    /// Sets the named agents' services a `tenant` names (the first call wins).
    pub(crate) fn set_tenants(&self, named: HashMap<String, Arc<TaskService>>) {
        let _ = self.tenants.set(named);
    }

    /// This named agent's `tenant` on the root agent's gRPC service, when it is reached there.
    pub(crate) fn grpc_tenant(&self) -> Option<&str> {
        self.grpc_tenant.get().map(String::as_str)
    }

    /// Sets this named agent's gRPC `tenant` (the first call wins).
    pub(crate) fn set_grpc_tenant(&self, name: &str) {
        let _ = self.grpc_tenant.set(name.to_string());
    }
}
