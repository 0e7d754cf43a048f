//! A gateway whose agents change while it serves ([`Reloadable`]): what `e2a serve` does on
//! SIGHUP. A changed agent's new build takes the runs that start after the swap, inside the
//! same gateway (its runs, tasks, pauses and routes stay where they are: one place keeps each
//! run); the runs going on keep the build they started on. An added agent is served from the
//! next request; a removed one is no longer routed, and what it has open goes on to its end
//! (drained at shutdown like the rest).

use std::sync::Arc;

use parking_lot::RwLock;

use crate::{Gateway, Named};

/// A served gateway whose named agents (and root agent) can be swapped ([`Reloadable::swap`]).
/// Clones share it.
#[derive(Clone)]
pub struct Reloadable {
    served: Arc<RwLock<Served>>,
}

/// What is served now, and what was replaced while it may still have open streams.
struct Served {
    gateway: Gateway,
    router: axum::Router,
    /// Agents removed, each kept until its open streams and tasks have ended.
    retired: Vec<Gateway>,
}

impl Served {
    /// The gateway served and those replaced.
    fn all(&self) -> impl Iterator<Item = &Gateway> {
        std::iter::once(&self.gateway).chain(&self.retired)
    }
}

/// What a swap changed ([`Reloadable::swap`]), by agent name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Swapped {
    /// Agents served from now on that were not before.
    pub added: Vec<String>,
    /// Agents whose new build takes the runs that start from now on.
    pub changed: Vec<String>,
    /// Agents no longer served (their open streams go on).
    pub removed: Vec<String>,
    /// Whether the root agent (the one at the root routes) was rebuilt.
    pub root: bool,
}

impl Swapped {
    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.changed.is_empty() && self.removed.is_empty() && !self.root
    }
}

impl Reloadable {
    /// Serves `gateway` until a swap.
    pub fn new(gateway: Gateway) -> Self {
        let router = gateway.router();
        Reloadable {
            served: Arc::new(RwLock::new(Served {
                gateway,
                router,
                retired: Vec::new(),
            })),
        }
    }

    /// The gateway served now.
    pub fn current(&self) -> Gateway {
        self.served.read().gateway.clone()
    }

    /// The routes: each request goes to the routes of the gateway served when it arrives.
    pub fn router(&self) -> axum::Router {
        use tower::ServiceExt;
        let routes = self.routes();
        axum::Router::new().fallback_service(tower::service_fn(move |request: axum::extract::Request| {
            routes().oneshot(request)
        }))
    }

    /// The router served at each moment: what a request is handed to.
    fn routes(&self) -> impl Fn() -> axum::Router + Clone + Send + Sync + 'static {
        let served = self.served.clone();
        move || served.read().router.clone()
    }

    /// Serves the agents of `fresh` from now on. A named agent of the same name as one served
    /// now stays that gateway — its runs, tasks, pauses, card and routes — and, unless `keep`
    /// says it is unchanged, starts its new runs on `fresh`'s build of it (the runs going on
    /// keep the old build); the same for the root agent unless `keep_root`. An agent `fresh`
    /// adds is served from the next request (its background work leaves the tasks of the others
    /// alone); one it drops is no longer routed, its open streams going on. The authentication,
    /// metrics and settings of the gateway served stay (give `fresh` the same [`crate::Auth`],
    /// reloaded).
    pub fn swap(&self, fresh: Gateway, keep: impl Fn(&str) -> bool, keep_root: bool) -> Swapped {
        let mut served = self.served.write();
        let old = served.gateway.clone();
        let metrics = old.shared.metrics.get().metrics().clone();
        let mut swapped = Swapped::default();
        let mut named: Vec<Named> = Vec::with_capacity(fresh.named.len());
        for n in &fresh.named {
            match old.named.iter().find(|o| o.name == n.name) {
                Some(o) => {
                    if !keep(&n.name) {
                        swapped.changed.push(n.name.clone());
                        o.gateway.shared.set_agent(n.gateway.shared.agent());
                    }
                    named.push(o.clone());
                }
                None => {
                    swapped.added.push(n.name.clone());
                    n.gateway.shared.metrics.adopt(metrics.clone(), &n.name);
                    if let Some(a2a) = &n.gateway.a2a {
                        a2a.joins_running();
                    }
                    named.push(n.clone());
                }
            }
        }
        for o in &old.named {
            if !fresh.named.iter().any(|n| n.name == o.name) {
                swapped.removed.push(o.name.clone());
                served.retired.push(o.gateway.clone());
            }
        }
        if !keep_root {
            swapped.root = true;
            old.shared.set_agent(fresh.shared.agent());
        }
        let gateway = Gateway { named, ..old };
        served.router = gateway.router();
        served.gateway = gateway;
        served.retired.retain(|g| g.live_streams() > 0);
        swapped
    }

    /// Runs still streaming, on the agents served and on those replaced.
    pub fn live_streams(&self) -> usize {
        crate::live_streams(self.served.read().all())
    }

    /// [`Gateway::serve`] of the gateway served at each moment: at shutdown, the agents
    /// served and those replaced that still have open streams are drained together.
    pub async fn serve(
        self,
        listener: tokio::net::TcpListener,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let limits = self.current().shared.config.server;
        // the router served at each request, called directly (not behind a router of its own)
        crate::web::server::serve(listener, self.routes(), limits, shutdown, move || async move {
            let all = self.served.read().all().cloned().collect();
            crate::drain(all).await;
        })
        .await
    }
}
