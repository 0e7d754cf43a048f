//! What the inspector page (`/ui`) shows: a summary of the recent runs of every binding of a
//! gateway and its named agents — caller, agent, binding, status, timing, trace id, frames —,
//! the pauses waiting for an answer, and per-agent counts ([`Activity`]). Off unless the page is
//! served: a gateway that does not serve it records nothing. A run's frames are not kept here:
//! a watcher gets them as they pass ([`Watched::frame`]), and those the gateway keeps (a run's
//! log) through the reader the run was recorded with.

use std::collections::{BTreeMap, VecDeque};

use crate::maps::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;

use e2a::types::RunState;
use futures_util::future::BoxFuture;
use parking_lot::Mutex;
use serde::Serialize;
use tokio::sync::broadcast;

/// What the gateway keeps of a run ([`KeptFrames`]).
pub(crate) enum Kept {
    /// Its E2A frames (JSON texts, in order): an E2A or AG-UI run.
    Frames(Vec<String>),
    /// Its task's A2A events (sequence and `StreamResponse` JSON text, in order): an A2A turn.
    A2aEvents(Vec<(u64, Arc<str>)>),
}

/// Reads what the gateway keeps of a run.
pub(crate) type KeptFrames = Arc<dyn Fn() -> BoxFuture<'static, Kept> + Send + Sync>;

/// Frames a watcher may fall behind by before it misses some.
const WATCH_BACKLOG: usize = 256;

/// A run recorded on the inspector page, around its frame stream ([`Recorded::around`]).
pub(crate) struct Recorded {
    pub(crate) activity: Arc<Activity>,
    pub(crate) run: Arc<Watched>,
}

impl Recorded {
    /// `frames`, each recorded as it passes; the run's end recorded at its final frame, or
    /// when the stream ends or is dropped without one.
    pub(crate) fn around<S>(self, frames: S) -> RecordedStream<S> {
        RecordedStream {
            inner: frames,
            recorded: self,
        }
    }
}

/// A frame stream whose frames the inspector page sees ([`Recorded::around`]).
pub(crate) struct RecordedStream<S> {
    inner: S,
    recorded: Recorded,
}

impl<S> futures_util::Stream for RecordedStream<S>
where
    S: futures_util::Stream<Item = Arc<e2a::frame::Frame>> + Unpin,
{
    type Item = Arc<e2a::frame::Frame>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        let this = &mut *self;
        let polled = std::pin::Pin::new(&mut this.inner).poll_next(cx);
        match &polled {
            std::task::Poll::Ready(Some(f)) => {
                this.recorded.run.frame(f);
                if f.is_final {
                    this.recorded.activity.end(&this.recorded.run, Some(f));
                }
            }
            std::task::Poll::Ready(None) => this.recorded.activity.end(&this.recorded.run, None),
            std::task::Poll::Pending => {}
        }
        polled
    }
}

impl<S> Drop for RecordedStream<S> {
    fn drop(&mut self) {
        self.recorded.activity.end(&self.recorded.run, None);
    }
}

/// The recent runs of a gateway (shared by its named agents), while the inspector is on.
#[derive(Default)]
pub(crate) struct Activity {
    on: AtomicBool,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    next: u64,
    limit: usize,
    runs: VecDeque<Arc<Watched>>,
    /// The latest of `runs` of each session (agent, session id, caller): what a new run of the
    /// session answers when it paused. Kept with `runs` (a run forgotten leaves it).
    latest: HashMap<SessionOf, Arc<Watched>>,
    agents: BTreeMap<Arc<str>, Counts>,
}

/// A session's runs: its agent, session id and caller.
type SessionOf = (Arc<str>, String, Option<String>);

impl Inner {
    /// `gone` forgotten as its session's latest run (when it is).
    fn forget_latest(&mut self, gone: &Arc<Watched>) {
        let Some(key) = gone.started.session() else {
            return;
        };
        if self.latest.get(&key).is_some_and(|r| Arc::ptr_eq(r, gone)) {
            self.latest.remove(&key);
        }
    }
}

/// What one agent has done since the gateway started.
#[derive(Debug, Default, Clone, Serialize)]
pub(crate) struct Counts {
    /// Runs started.
    pub(crate) runs: u64,
    /// Runs going on.
    pub(crate) running: u64,
    /// Ended runs by state (`succeeded`, `paused`, `cancelled`, `failed`).
    pub(crate) ended: BTreeMap<String, u64>,
    /// Frames of the ended runs.
    pub(crate) frames: u64,
}

/// Who started a run and where ([`Activity::start`]).
pub(crate) struct Started {
    pub(crate) agent: Arc<str>,
    pub(crate) binding: &'static str,
    pub(crate) caller: Option<String>,
    pub(crate) request_id: Option<String>,
    pub(crate) session_id: Option<String>,
    pub(crate) trace_id: Option<Arc<str>>,
    pub(crate) kept: Option<KeptFrames>,
}

impl Started {
    /// The session its run is of (`None` without a session id).
    fn session(&self) -> Option<SessionOf> {
        let id = self.session_id.clone()?;
        Some((self.agent.clone(), id, self.caller.clone()))
    }
}

/// One recorded run.
pub(crate) struct Watched {
    id: u64,
    started: Started,
    started_ms: i64,
    updated_ms: AtomicI64,
    frames: AtomicU64,
    end: Mutex<Option<Ended>>,
    answered_by: AtomicU64,
    /// Its watchers' channel, made when the first one comes (most runs have none).
    live: std::sync::OnceLock<broadcast::Sender<Arc<str>>>,
}

/// How a run ended.
#[derive(Debug, Clone)]
struct Ended {
    state: RunState,
    /// What a pause asks (`result` of its final frame), when it paused.
    pause: Option<serde_json::Value>,
}

/// A run as the page lists it.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct RunSummary {
    pub(crate) id: u64,
    pub(crate) agent: String,
    pub(crate) binding: &'static str,
    pub(crate) caller: Option<String>,
    pub(crate) request_id: Option<String>,
    pub(crate) session_id: Option<String>,
    pub(crate) trace_id: Option<String>,
    pub(crate) state: RunState,
    pub(crate) started_ms: i64,
    /// When it ended (its last frame, while watched).
    pub(crate) updated_ms: i64,
    pub(crate) frames: u64,
    /// What it asks, when it paused; `answered_by`: the run that followed it in its session.
    pub(crate) pause: Option<serde_json::Value>,
    pub(crate) answered_by: Option<u64>,
}

impl Activity {
    /// Records from now on, remembering at most `limit` runs (the oldest ended go first).
    pub(crate) fn enable(&self, limit: usize) {
        self.inner.lock().limit = limit.max(1);
        self.on.store(true, Ordering::Release);
    }

    /// Whether it records.
    pub(crate) fn is_on(&self) -> bool {
        self.on.load(Ordering::Acquire)
    }

    /// Records a run starting (`None` when off). A run of a session whose last run paused
    /// answers that pause.
    pub(crate) fn start(&self, started: Started) -> Option<Arc<Watched>> {
        if !self.is_on() {
            return None;
        }
        let now = e2a::timestamp::now_ms();
        let mut inner = self.inner.lock();
        inner.next += 1;
        let id = inner.next;
        let session = started.session();
        let counts = inner.agents.entry(started.agent.clone()).or_default();
        counts.runs += 1;
        counts.running += 1;
        let run = Arc::new(Watched {
            id,
            started,
            started_ms: now,
            updated_ms: AtomicI64::new(now),
            frames: AtomicU64::new(0),
            end: Mutex::new(None),
            answered_by: AtomicU64::new(0),
            live: std::sync::OnceLock::new(),
        });
        inner.runs.push_back(run.clone());
        if let Some(session) = session {
            // the session's run before this one, answered by it when it paused
            let before = inner.latest.insert(session, run.clone());
            if let Some(r) = before.filter(|r| r.state() == RunState::Paused) {
                r.answered_by.store(id, Ordering::Release);
            }
        }
        while inner.runs.len() > inner.limit {
            // the oldest that has ended, else the oldest
            let at = inner.runs.iter().position(|r| r.end.lock().is_some()).unwrap_or(0);
            let Some(gone) = inner.runs.remove(at) else { break };
            inner.forget_latest(&gone);
        }
        Some(run)
    }

    /// Records run `run`'s final frame (or its end without one: `failed`).
    pub(crate) fn end(&self, run: &Watched, last: Option<&e2a::frame::Frame>) {
        let ended = match last.filter(|f| f.is_final) {
            Some(f) => {
                let state = RunState::of_final_frame(f);
                let pause = (state == RunState::Paused).then(|| f.body_object()["result"].clone());
                Ended { state, pause }
            }
            None => Ended {
                state: RunState::Failed,
                pause: None,
            },
        };
        let state = ended.state;
        {
            let mut end = run.end.lock();
            if end.is_some() {
                return;
            }
            *end = Some(ended);
        }
        run.updated_ms.store(e2a::timestamp::now_ms(), Ordering::Release);
        let mut inner = self.inner.lock();
        let counts = inner.agents.entry(run.started.agent.clone()).or_default();
        counts.running = counts.running.saturating_sub(1);
        *counts.ended.entry(state.to_string()).or_default() += 1;
        counts.frames += run.frames.load(Ordering::Acquire);
    }

    /// The runs `sees` may see, newest first, and the counts of every agent.
    pub(crate) fn snapshot(&self, sees: impl Fn(Option<&str>) -> bool) -> (Vec<RunSummary>, BTreeMap<String, Counts>) {
        let inner = self.inner.lock();
        let runs = inner
            .runs
            .iter()
            .rev()
            .filter(|r| sees(r.started.caller.as_deref()))
            .map(|r| r.summary())
            .collect();
        let agents = inner.agents.iter().map(|(a, c)| (a.to_string(), c.clone())).collect();
        (runs, agents)
    }

    /// Run `id`, when remembered and `sees` may see it.
    pub(crate) fn find(&self, id: u64, sees: impl Fn(Option<&str>) -> bool) -> Option<Arc<Watched>> {
        let inner = self.inner.lock();
        let run = inner.runs.iter().find(|r| r.id == id)?;
        sees(run.started.caller.as_deref()).then(|| run.clone())
    }
}

impl Watched {
    /// Records a frame passing; a watcher gets its JSON text.
    pub(crate) fn frame(&self, frame: &e2a::frame::Frame) {
        self.frames.fetch_add(1, Ordering::AcqRel);
        if let Some(live) = self.live.get() {
            self.updated_ms.store(e2a::timestamp::now_ms(), Ordering::Release);
            if live.receiver_count() > 0 {
                let _ = live.send(frame.to_json().into());
            }
        }
    }

    /// The frames from now on (JSON texts), while it runs.
    pub(crate) fn watch(&self) -> broadcast::Receiver<Arc<str>> {
        self.live
            .get_or_init(|| broadcast::channel(WATCH_BACKLOG).0)
            .subscribe()
    }

    /// What the gateway keeps of it (nothing for an ACP prompt).
    pub(crate) async fn kept(&self) -> Kept {
        match &self.started.kept {
            Some(read) => read().await,
            None => Kept::Frames(Vec::new()),
        }
    }

    /// Whether it has ended.
    pub(crate) fn ended(&self) -> bool {
        self.end.lock().is_some()
    }

    fn state(&self) -> RunState {
        self.end.lock().as_ref().map_or(RunState::Running, |e| e.state)
    }

    /// How the page lists it.
    pub(crate) fn summary(&self) -> RunSummary {
        let end = self.end.lock().clone();
        let s = &self.started;
        let answered = self.answered_by.load(Ordering::Acquire);
        RunSummary {
            id: self.id,
            agent: s.agent.to_string(),
            binding: s.binding,
            caller: s.caller.clone(),
            request_id: s.request_id.clone(),
            session_id: s.session_id.clone(),
            trace_id: s.trace_id.as_deref().map(str::to_string),
            state: end.as_ref().map_or(RunState::Running, |e| e.state),
            started_ms: self.started_ms,
            updated_ms: self.updated_ms.load(Ordering::Acquire),
            frames: self.frames.load(Ordering::Acquire),
            pause: end.and_then(|e| e.pause),
            answered_by: (answered > 0).then_some(answered),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Activity, Started};

    fn started(session: &str) -> Started {
        Started {
            agent: "default".into(),
            binding: "a2a",
            caller: None,
            request_id: None,
            session_id: Some(session.into()),
            trace_id: None,
            kept: None,
        }
    }

    fn paused() -> e2a::frame::Frame {
        let request = e2a::E2AEnvelope::new("session/prompt", serde_json::json!({}));
        let [_, last] = e2a::stream::ResponseStream::for_request(&request).pause(
            e2a::types::PlanApprovalRequiredBody::asking(e2a::types::PauseKind::Approval, "Go on?", true),
        );
        last
    }

    #[test]
    fn a_pause_is_answered_by_its_sessions_next_run_while_it_is_remembered() {
        let activity = Activity::default();
        activity.enable(3);
        let answered = |a: &Activity| {
            let (runs, _) = a.snapshot(|_| true);
            runs.iter()
                .filter_map(|r| r.answered_by.map(|by| (r.id, by)))
                .collect::<Vec<_>>()
        };
        let a = activity.start(started("s")).expect("on");
        activity.end(&a, Some(&paused()));
        // another session's run answers nothing; the session's next one answers the pause
        let other = activity.start(started("t")).expect("on");
        assert_eq!(answered(&activity), []);
        let b = activity.start(started("s")).expect("on");
        assert_eq!(answered(&activity), [(a.id, b.id)]);
        // a pause no longer remembered is answered by nobody, and leaves no trace
        activity.end(&b, Some(&paused()));
        activity.end(&other, None);
        for session in ["u", "v", "w"] {
            let r = activity.start(started(session)).expect("on");
            activity.end(&r, None);
        }
        let c = activity.start(started("s")).expect("on");
        assert!(
            answered(&activity).iter().all(|(_, by)| *by != c.id),
            "{:?}",
            answered(&activity)
        );
        assert!(activity.inner.lock().latest.len() <= 3);
    }
}
