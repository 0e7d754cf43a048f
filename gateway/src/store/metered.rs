//! A store seen by the gateway's metrics and spans: every operation of the store it wraps is
//! timed (`e2a_store_op_duration_seconds{op,outcome}`) and runs in a `store.op` span
//! (exported with the rest when OpenTelemetry is on). [`crate::Gateway::with_store`] and
//! [`crate::Gateway::with_a2a`] wrap every role of the stores they are given ([`Stores::metered`]).

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use tracing::Instrument;

use super::{
    FrameWrite, PushFailure, PushJob, PushProgress, PushRecord, RunLog, RunPage, RunQuery, RunSummary, SentRecord,
    SessionPage, SessionQuery, SessionRecord, StoreError, StoreFuture, StoreNotice, StoredEvent, TaskAppend, TaskPage,
    TaskQuery, TaskRecord, TaskRetention,
};
use super::{Leases, Nonces, PauseStore, PushStore, RunStore, Sends, SessionStore, Stores, TaskLog};
use crate::agent::{PauseError, PauseFuture};
use crate::web::metrics::MetricsHandle;

/// A role `R` of a store, timed into the metrics `handle` names.
pub(crate) struct Metered<R: ?Sized> {
    inner: Arc<R>,
    handle: Arc<MetricsHandle>,
}

impl<R: ?Sized + Send + Sync> Metered<R> {
    /// `fut` (operation `op`), timed and in its span.
    fn timed<'a, T: Send + 'a>(&'a self, op: &'static str, fut: StoreFuture<'a, T>) -> StoreFuture<'a, T> {
        let span = tracing::debug_span!("store.op", otel.kind = "client", e2a.store_op = op);
        self.timed_in(op, fut, span)
    }

    /// [`Metered::timed`] in `span`: the background polls' operations take a `trace` one, so
    /// that an idle gateway exports no spans.
    fn timed_in<'a, T: Send + 'a>(
        &'a self,
        op: &'static str,
        fut: StoreFuture<'a, T>,
        span: tracing::Span,
    ) -> StoreFuture<'a, T> {
        Box::pin(
            async move {
                let started = Instant::now();
                let out = fut.await;
                self.handle.get().metrics().store_op(op, out.is_ok(), started.elapsed());
                out
            }
            .instrument(span),
        )
    }
}

impl Stores {
    /// Every role of these stores timed into the metrics `handle` names.
    pub(crate) fn metered(self, handle: &Arc<MetricsHandle>) -> Stores {
        fn wrap<R: ?Sized>(inner: Arc<R>, handle: &Arc<MetricsHandle>) -> Arc<Metered<R>> {
            Arc::new(Metered {
                inner,
                handle: handle.clone(),
            })
        }
        Stores {
            tasks: wrap(self.tasks, handle),
            leases: wrap(self.leases, handle),
            sends: wrap(self.sends, handle),
            pushes: self.pushes.map(|r| wrap(r, handle) as Arc<dyn PushStore>),
            runs: self.runs.map(|r| wrap(r, handle) as Arc<dyn RunStore>),
            sessions: self.sessions.map(|r| wrap(r, handle) as Arc<dyn SessionStore>),
            pauses: self.pauses.map(|r| wrap(r, handle) as Arc<dyn PauseStore>),
            nonces: self.nonces.map(|r| wrap(r, handle) as Arc<dyn Nonces>),
        }
    }
}

impl TaskLog for Metered<dyn TaskLog> {
    fn name(&self) -> String {
        self.inner.name()
    }

    fn get<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<TaskRecord>> {
        self.timed("get", self.inner.get(id))
    }

    fn append(&self, write: TaskAppend) -> StoreFuture<'_, u64> {
        self.timed("append", self.inner.append(write))
    }

    fn events_after<'a>(&'a self, id: &'a str, after: u64) -> StoreFuture<'a, Vec<StoredEvent>> {
        self.timed("events_after", self.inner.events_after(id, after))
    }

    fn list(&self, query: TaskQuery) -> StoreFuture<'_, TaskPage> {
        self.timed("list", self.inner.list(query))
    }

    fn prune_tasks(&self, retention: TaskRetention) -> StoreFuture<'_, u64> {
        self.timed("prune_tasks", self.inner.prune_tasks(retention))
    }
}

impl Leases for Metered<dyn Leases> {
    fn shared(&self) -> bool {
        self.inner.shared()
    }

    fn acquire<'a>(&'a self, id: &'a str, holder: &'a str, lease: Duration) -> StoreFuture<'a, bool> {
        self.timed("acquire", self.inner.acquire(id, holder, lease))
    }

    fn renew<'a>(&'a self, holder: &'a str, ids: Vec<String>, lease: Duration) -> StoreFuture<'a, Vec<String>> {
        self.timed("renew", self.inner.renew(holder, ids, lease))
    }

    fn release<'a>(&'a self, id: &'a str, holder: &'a str) -> StoreFuture<'a, ()> {
        self.timed("release", self.inner.release(id, holder))
    }

    fn orphans(&self) -> StoreFuture<'_, Vec<String>> {
        self.timed("orphans", self.inner.orphans())
    }

    fn request_cancel<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()> {
        self.timed("request_cancel", self.inner.request_cancel(id))
    }

    fn notices(&self) -> Option<tokio::sync::broadcast::Receiver<StoreNotice>> {
        self.inner.notices()
    }
}

impl Sends for Metered<dyn Sends> {
    fn remember_send(&self, record: SentRecord) -> StoreFuture<'_, Option<SentRecord>> {
        self.timed("remember_send", self.inner.remember_send(record))
    }

    fn find_send<'a>(&'a self, owner: &'a str, key: &'a str) -> StoreFuture<'a, Option<SentRecord>> {
        self.timed("find_send", self.inner.find_send(owner, key))
    }
}

impl PushStore for Metered<dyn PushStore> {
    fn put_push(&self, record: PushRecord, from_seq: u64) -> StoreFuture<'_, ()> {
        self.timed("put_push", self.inner.put_push(record, from_seq))
    }

    fn get_push<'a>(&'a self, task_id: &'a str, id: &'a str) -> StoreFuture<'a, Option<PushRecord>> {
        self.timed("get_push", self.inner.get_push(task_id, id))
    }

    fn list_pushes<'a>(&'a self, task_id: &'a str) -> StoreFuture<'a, Vec<PushRecord>> {
        self.timed("list_pushes", self.inner.list_pushes(task_id))
    }

    fn delete_push<'a>(&'a self, task_id: &'a str, id: &'a str) -> StoreFuture<'a, bool> {
        self.timed("delete_push", self.inner.delete_push(task_id, id))
    }

    fn claim_pushes<'a>(&'a self, holder: &'a str, lease: Duration, limit: usize) -> StoreFuture<'a, Vec<PushJob>> {
        // the push outbox's poll
        let span = tracing::trace_span!("store.op", otel.kind = "client", e2a.store_op = "claim_pushes");
        self.timed_in("claim_pushes", self.inner.claim_pushes(holder, lease, limit), span)
    }

    fn push_progress(&self, progress: PushProgress) -> StoreFuture<'_, bool> {
        self.timed("push_progress", self.inner.push_progress(progress))
    }

    fn release_push<'a>(&'a self, task_id: &'a str, id: &'a str, holder: &'a str) -> StoreFuture<'a, ()> {
        self.timed("release_push", self.inner.release_push(task_id, id, holder))
    }

    fn push_failures(&self, limit: usize) -> StoreFuture<'_, Vec<PushFailure>> {
        self.timed("push_failures", self.inner.push_failures(limit))
    }
}

impl RunStore for Metered<dyn RunStore> {
    fn append_frames(&self, write: FrameWrite) -> StoreFuture<'_, ()> {
        self.timed("append_frames", self.inner.append_frames(write))
    }

    fn run_after<'a>(&'a self, key: &'a str, after: Option<u64>) -> StoreFuture<'a, Option<RunLog>> {
        self.timed("run_after", self.inner.run_after(key, after))
    }

    fn run_summary<'a>(&'a self, key: &'a str) -> StoreFuture<'a, Option<RunSummary>> {
        self.timed("run_summary", self.inner.run_summary(key))
    }

    fn list_runs(&self, query: RunQuery) -> StoreFuture<'_, RunPage> {
        self.timed("list_runs", self.inner.list_runs(query))
    }

    fn renew_runs<'a>(&'a self, holder: &'a str, keys: Vec<String>, lease: Duration) -> StoreFuture<'a, ()> {
        self.timed("renew_runs", self.inner.renew_runs(holder, keys, lease))
    }

    fn prune_runs(&self, older_than: Duration, keep: usize) -> StoreFuture<'_, u64> {
        self.timed("prune_runs", self.inner.prune_runs(older_than, keep))
    }

    fn request_run_cancel<'a>(&'a self, key: &'a str) -> StoreFuture<'a, ()> {
        self.timed("request_run_cancel", self.inner.request_run_cancel(key))
    }
}

impl SessionStore for Metered<dyn SessionStore> {
    fn put_session(&self, session: SessionRecord) -> StoreFuture<'_, ()> {
        self.timed("put_session", self.inner.put_session(session))
    }

    fn get_session<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<SessionRecord>> {
        self.timed("get_session", self.inner.get_session(id))
    }

    fn list_sessions(&self, query: SessionQuery) -> StoreFuture<'_, SessionPage> {
        self.timed("list_sessions", self.inner.list_sessions(query))
    }

    fn delete_session<'a>(&'a self, id: &'a str) -> StoreFuture<'a, bool> {
        self.timed("delete_session", self.inner.delete_session(id))
    }

    fn append_history<'a>(&'a self, id: &'a str, entries: Vec<String>, keep: usize) -> StoreFuture<'a, ()> {
        self.timed("append_history", self.inner.append_history(id, entries, keep))
    }

    fn history<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Vec<String>> {
        self.timed("history", self.inner.history(id))
    }
}

impl crate::agent::PauseKeeper for Metered<dyn PauseStore> {
    fn put_pause<'a>(&'a self, key: &'a str, state: String) -> PauseFuture<'a, ()> {
        self.timed_pause("put_pause", self.inner.put_pause(key, state))
    }

    fn take_pause<'a>(&'a self, key: &'a str) -> PauseFuture<'a, Option<String>> {
        self.timed_pause("take_pause", self.inner.take_pause(key))
    }

    fn get_pause<'a>(&'a self, key: &'a str) -> PauseFuture<'a, Option<String>> {
        self.timed_pause("get_pause", self.inner.get_pause(key))
    }

    fn keep_first_pause<'a>(&'a self, key: &'a str, state: String) -> PauseFuture<'a, Option<String>> {
        self.timed_pause("keep_first_pause", self.inner.keep_first_pause(key, state))
    }
}

impl PauseStore for Metered<dyn PauseStore> {
    fn prune_pauses(&self, older_than: Duration) -> StoreFuture<'_, u64> {
        self.timed("prune_pauses", self.inner.prune_pauses(older_than))
    }

    fn pauses_with_prefix<'a>(&'a self, prefix: &'a str, limit: usize) -> StoreFuture<'a, Vec<(String, String)>> {
        self.timed("pauses_with_prefix", self.inner.pauses_with_prefix(prefix, limit))
    }
}

impl<R: ?Sized + Send + Sync> Metered<R> {
    /// [`Metered::timed`] for a pause operation (its error in the agent's words).
    fn timed_pause<'a, T: Send + 'a>(&'a self, op: &'static str, fut: PauseFuture<'a, T>) -> PauseFuture<'a, T> {
        self.timed_as(op, fut, |e| e.0, PauseError)
    }

    /// [`Metered::timed`] for an operation whose error is a message of its own: `text` reads
    /// it, `back` makes it again from the store error's message.
    fn timed_as<'a, T: Send + 'a, E: From<StoreError> + Send + 'a>(
        &'a self,
        op: &'static str,
        fut: BoxFuture<'a, Result<T, E>>,
        text: fn(E) -> String,
        back: fn(String) -> E,
    ) -> BoxFuture<'a, Result<T, E>> {
        let timed = self.timed(
            op,
            Box::pin(async move { fut.await.map_err(|e| StoreError::Backend(text(e))) }),
        );
        Box::pin(async move {
            timed.await.map_err(|e| match e {
                StoreError::Backend(m) => back(m),
                e => e.into(),
            })
        })
    }
}

impl Nonces for Metered<dyn Nonces> {
    fn remember_nonce<'a>(
        &'a self,
        agent: &'a str,
        nonce: &'a str,
        ttl: Duration,
    ) -> crate::web::hmac::NonceFuture<'a> {
        let fut = self.inner.remember_nonce(agent, nonce, ttl);
        self.timed_as("remember_nonce", fut, |e| e.0, crate::web::hmac::NonceError)
    }
}
