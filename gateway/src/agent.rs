//! The agent interface: what every binding (E2A over HTTP now; A2A, ACP and AG-UI later)
//! calls once it has turned its protocol into an [`E2AEnvelope`].

use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use e2a::frame::Frame;
use e2a::E2AEnvelope;
use futures_util::{Stream, StreamExt};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// The frames an agent yields for one request, in order, ending with one final frame: each a
/// [`Frame`] (what [`e2a::stream::ResponseStream`] makes: the request's echoed fields shared
/// once per stream, a typed body; a record read from elsewhere is `Frame::from(record)`).
pub type FrameStream = Pin<Box<dyn Stream<Item = Frame> + Send + 'static>>;

/// An agent's frames each behind an `Arc` ([`Agent::run_shared`]): a frame then travels as a
/// pointer, and a run log keeps it as it is.
pub type SharedFrames = Pin<Box<dyn Stream<Item = Arc<Frame>> + Send + 'static>>;

pub use crate::stop::{StopCell, StopReason};

/// The member of the envelope's `auth._meta` that holds the caller's claims.
pub const CLAIMS_KEY: &str = "caller";

/// Who sent a request, as the gateway authenticated it. Never holds the credential itself.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Caller {
    /// A stable name of the credential that was presented (`token-1` for the first configured
    /// bearer token, the caller's key in the config file's `[callers]`, `CALLER/SUB` for a JWT
    /// caller's subject), or `None` when the gateway runs without authentication. Tasks, runs
    /// and conversations belong to it.
    pub subject: Option<String>,
    /// The name the agent sees (the envelope's `user_id` or `source_agent_id`, by `kind`): the
    /// caller's key, or a JWT caller's `sub`. `None` for bearer-token callers.
    pub name: Option<String>,
    /// Whether the caller is a user or an agent (`None` for bearer-token callers).
    pub kind: Option<e2a::types::CallerKind>,
    /// What the agent may see of the caller (its key, `method`, a JWT's `iss`, `sub`, `aud`,
    /// `scope`): never a credential. Put into the envelope's `auth._meta.caller`; `None` for
    /// bearer-token and anonymous callers. (Shared: a caller is cloned into every part of a
    /// request, and is held by every future that serves it.)
    pub claims: Option<std::sync::Arc<e2a::types::CallerClaims>>,
    /// The named agent the request reached (`None`: the gateway's only agent): tasks and runs
    /// are kept apart per agent.
    pub(crate) scope: Option<std::sync::Arc<str>>,
}

impl Caller {
    /// The caller of a gateway without authentication.
    pub fn anonymous() -> Self {
        Caller::default()
    }

    /// An authenticated caller.
    pub fn named(subject: impl Into<String>) -> Self {
        Caller {
            subject: Some(subject.into()),
            ..Caller::default()
        }
    }

    /// Who owns what this caller creates (tasks, runs, conversations): the subject, scoped by
    /// the named agent the request reached (`LEN:AGENT:SUBJECT`, unambiguous whatever the
    /// names hold), so that one agent's tasks are not found through another's routes.
    pub fn owner(&self) -> Option<String> {
        match &self.scope {
            None => self.subject.clone(),
            Some(agent) => {
                let mut owner = String::new();
                push_scoped(&mut owner, agent, self.subject.as_deref().unwrap_or_default());
                Some(owner)
            }
        }
    }

    /// Writes who asked into `request`: the name into `user_id` (a user) or
    /// `source_agent_id` (an agent), the claims into `auth._meta.caller` (`auth.method_id`
    /// names how the caller proved it). Bearer-token and anonymous callers change nothing.
    pub fn stamp(&self, request: &mut e2a::E2AEnvelope) {
        let (Some(kind), Some(name)) = (self.kind, &self.name) else {
            return;
        };
        match kind {
            e2a::types::CallerKind::User => request.user_id = Some(name.clone()),
            e2a::types::CallerKind::Agent => request.source_agent_id = Some(name.clone()),
        }
        let auth = request.auth.get_or_insert_with(Default::default);
        if let Some(claims) = &self.claims {
            auth.method_id = Some(claims.method.clone());
            if let Ok(claims) = serde_json::to_value(claims) {
                auth.meta.insert(CLAIMS_KEY.into(), claims);
            }
        }
    }
}

/// The key of conversation state an agent or backend keeps across requests (a paused
/// scenario, an ACP session, a remote task): the authenticated caller together with the id
/// the client chose. Ids are the client's to choose, so state keyed by the id alone would let
/// one caller reach another's conversation by sending the same `session_id`; keyed by this,
/// two callers never share state. Make one with [`RequestContext::conversation`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ConversationKey {
    caller: Option<String>,
    id: String,
}

impl ConversationKey {
    /// The key of `caller`'s (`None`: no authentication) conversation `id`.
    pub fn new(caller: Option<String>, id: impl Into<String>) -> Self {
        ConversationKey { caller, id: id.into() }
    }

    /// The client's id in this key.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The id as a backend that keeps its own state should see it, so that it too keeps two
    /// callers apart: the client's id without a caller, else `LEN:CALLER:ID` (the length makes
    /// the form unambiguous whatever the names hold).
    pub fn scoped_id(&self) -> String {
        let mut id = String::new();
        self.push_scoped_id(&mut id);
        id
    }

    /// [`ConversationKey::scoped_id`], appended to `out` (with room made for it first).
    fn push_scoped_id(&self, out: &mut String) {
        match &self.caller {
            None => out.push_str(&self.id),
            Some(c) => push_scoped(out, c, &self.id),
        }
    }

    /// Where an agent keeps the pause of this conversation ([`RequestContext::pauses`]): the
    /// key the gateway looks for when an answer comes.
    pub fn pause_key(&self) -> String {
        let mut key = String::with_capacity(6 + self.id.len());
        key.push_str("agent:");
        self.push_scoped_id(&mut key);
        key
    }
}

/// `LEN:SCOPE:ID` appended to `out` (`LEN` the length of `scope`: the form is unambiguous
/// whatever the names hold), the form of owners and of callers' conversation ids.
fn push_scoped(out: &mut String, scope: &str, id: &str) {
    let mut digits = itoa::Buffer::new();
    let len = digits.format(scope.len());
    out.reserve(len.len() + scope.len() + id.len() + 2);
    for part in [len, ":", scope, ":", id] {
        out.push_str(part);
    }
}

/// What [`PauseKeeper`]'s operations return.
pub type PauseFuture<'a, T> = Pin<Box<dyn std::future::Future<Output = Result<T, PauseError>> + Send + 'a>>;

/// Why a pause could not be kept or read (the store's failure, in words).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("pause store: {0}")]
pub struct PauseError(pub String);

/// Where an agent keeps what it needs to go on from a pause, by key, until the answer takes
/// it ([`RequestContext::pauses`]): the gateway's store (`crate::store::PauseStore`).
pub trait PauseKeeper: Send + Sync + 'static {
    /// Keeps `state` under `key` (replacing what was there).
    fn put_pause<'a>(&'a self, key: &'a str, state: String) -> PauseFuture<'a, ()>;
    /// Takes what is kept under `key`: it is gone after, and of several takers at once only
    /// one gets it.
    fn take_pause<'a>(&'a self, key: &'a str) -> PauseFuture<'a, Option<String>>;
    /// What is kept under `key`, left there.
    fn get_pause<'a>(&'a self, key: &'a str) -> PauseFuture<'a, Option<String>>;
    /// Keeps `state` under `key` unless something is kept there already: then returns that,
    /// unchanged (`None`: `state` was kept). Of several keepers at once, one wins and the others
    /// get its state. The default reads, then writes: a keeper whose store is shared overrides
    /// it with one atomic step.
    fn keep_first_pause<'a>(&'a self, key: &'a str, state: String) -> PauseFuture<'a, Option<String>> {
        Box::pin(async move {
            match self.get_pause(key).await? {
                Some(first) => Ok(Some(first)),
                None => self.put_pause(key, state).await.map(|()| None),
            }
        })
    }
}

/// What a run knows besides the request: when to stop and who asked.
#[derive(Clone)]
pub struct RequestContext {
    /// Cancelled when the client goes away, the gateway shuts down or a deadline passes. An
    /// agent should stop working when it fires; the gateway stops reading its stream anyway.
    pub cancel: CancellationToken,
    /// When the run must have ended (`None`: no total deadline).
    pub deadline: Option<Instant>,
    /// Who sent the request.
    pub caller: Caller,
    /// Why the gateway cancelled the run from outside, recorded before `cancel` fires (the
    /// reason the boundary's final frame gives).
    pub(crate) stop: StopCell,
    /// Where the gateway keeps pauses ([`RequestContext::pauses`]).
    pub(crate) pauses: Option<Arc<dyn PauseKeeper>>,
    /// The store key of the run this context serves (E2A and AG-UI runs; `None` for an A2A
    /// task's turn): where a run that waits for another agent's callback is found again.
    pub(crate) run: Option<Arc<str>>,
    /// The head of the frames answering the request the run was started with (made once by
    /// the gateway's boundary, whose cut-off frames share it): [`RequestContext::frames_for`].
    pub(crate) head: Option<e2a::frame::Head<e2a::frame::FrameHead>>,
}

impl RequestContext {
    /// A context with a fresh cancellation token.
    pub fn new(caller: Caller, deadline: Option<Instant>) -> Self {
        RequestContext {
            cancel: CancellationToken::new(),
            deadline,
            caller,
            stop: StopCell::default(),
            pauses: None,
            run: None,
            head: None,
        }
    }

    /// A context for a part of this run: cancelled with it (or on its own), the same deadline
    /// and caller.
    pub fn child(&self) -> Self {
        RequestContext {
            cancel: self.cancel.child_token(),
            deadline: self.deadline,
            caller: self.caller.clone(),
            stop: StopCell::default(),
            pauses: self.pauses.clone(),
            run: self.run.clone(),
            // a part of the run answers a request of its own
            head: None,
        }
    }

    /// The producer of the frames answering `request`: sharing the head the gateway made when
    /// it started the run with this request (the request's echoed fields, copied once per
    /// run), else [`e2a::stream::ResponseStream::for_request`]. An agent that answers another
    /// request (a changed one) gets a head of that request.
    pub fn frames_for(&self, request: &E2AEnvelope) -> e2a::stream::ResponseStream {
        match &self.head {
            Some(head) if head.echoes(request) => e2a::stream::ResponseStream::with_head(head.clone()),
            _ => e2a::stream::ResponseStream::for_request(request),
        }
    }

    /// The key of conversation state for the client's `id`, scoped by this run's caller.
    pub fn conversation(&self, id: impl Into<String>) -> ConversationKey {
        ConversationKey {
            caller: self.caller.owner(),
            id: id.into(),
        }
    }

    /// Where the gateway keeps pauses durably (its store, when it has one): an agent that
    /// pauses keeps what it needs to go on there, under its conversation's key, so that the
    /// answer is honoured after a restart and on any gateway of the store. `None`: a pause
    /// lives in the agent's memory.
    pub fn pauses(&self) -> Option<&Arc<dyn PauseKeeper>> {
        self.pauses.as_ref()
    }

    /// Time left before the deadline (`None` without a deadline).
    pub fn remaining(&self) -> Option<Duration> {
        self.deadline.map(|d| d.saturating_duration_since(Instant::now()))
    }
}

impl fmt::Debug for RequestContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RequestContext")
            .field("cancelled", &self.cancel.is_cancelled())
            .field("remaining", &self.remaining())
            .field("caller", &self.caller)
            .finish()
    }
}

/// An agent: answers one [`E2AEnvelope`] with a stream of frames ([`Frame`], the
/// `E2AResponse` records a stream carries).
///
/// The stream must keep the E2A stream invariants (sequence 0, 1, 2 … and exactly one final
/// frame, last). [`e2a::stream::ResponseStream`] builds such frames. The gateway checks every
/// frame at the boundary ([`crate::pipeline::boundary`]): an agent that breaks the invariants is cut off
/// with an `e2a.error` final frame and is never forwarded as is.
///
/// ```
/// use e2a::{E2AEnvelope, stream::ResponseStream};
/// use e2a_gateway::{Agent, FrameStream, RequestContext};
///
/// struct Hello;
/// impl Agent for Hello {
///     fn run(&self, request: E2AEnvelope, _ctx: RequestContext) -> FrameStream {
///         let mut frames = ResponseStream::for_request(&request);
///         let hello = frames.text("Hello");
///         let done = frames.complete(serde_json::json!({"content": "Hello"}));
///         Box::pin(futures_util::stream::iter([hello, done]))
///     }
/// }
/// ```
pub trait Agent: Send + Sync + 'static {
    /// Starts a run. The returned stream is polled by the gateway until it yields a final
    /// frame, the client goes away or a deadline passes; it is then dropped.
    fn run(&self, request: E2AEnvelope, ctx: RequestContext) -> FrameStream;

    /// [`Agent::run`], its frames each behind an `Arc`: what the gateway calls. The default
    /// shares the frames of `run` as they come. An agent that makes its frames itself may make
    /// them shared from the start (and implement `run` on top of this), so that no frame is
    /// moved by value from one stream to the next.
    fn run_shared(&self, request: E2AEnvelope, ctx: RequestContext) -> SharedFrames {
        Box::pin(self.run(request, ctx).map(Arc::new))
    }

    /// A short name for logs and `/healthz` (`echo`, `script`, `e2a:…`).
    fn name(&self) -> String {
        "agent".into()
    }

    /// Whether this agent still holds the pause of conversation `key` (a turn it paused there,
    /// waiting for its answer): `Some(false)` when it knows it does not — its state lived in
    /// a process that has gone, or on another gateway —, so that an answer is refused with the
    /// protocol's error instead of being run as a new turn. `None` (the default): the agent
    /// cannot tell (its state lives elsewhere, e.g. behind a remote gateway); the answer is
    /// passed on.
    fn holds_pause(&self, key: &ConversationKey) -> Option<bool> {
        let _ = key;
        None
    }
}

#[cfg(test)]
mod tests {
    use e2a::frame::Head;
    use e2a::stream::ResponseStream;

    use super::{Caller, ConversationKey, RequestContext};

    /// A key's scoped id and pause key, with a caller and without (the stored form: pauses
    /// kept under it are found again after an upgrade).
    #[test]
    fn conversation_keys_keep_their_written_form() {
        let anonymous = ConversationKey::new(None, "ctx-1");
        assert_eq!(anonymous.scoped_id(), "ctx-1");
        assert_eq!(anonymous.pause_key(), "agent:ctx-1");
        let alice = ConversationKey::new(Some("alice:x".into()), "ctx-1");
        assert_eq!(alice.scoped_id(), "7:alice:x:ctx-1");
        assert_eq!(alice.pause_key(), "agent:7:alice:x:ctx-1");
        let long = ConversationKey::new(Some("c".repeat(12)), "");
        assert_eq!(long.scoped_id(), format!("12:{}:", "c".repeat(12)));
    }

    /// An owner is the subject, scoped by the named agent when there is one.
    #[test]
    fn owners_keep_their_written_form() {
        assert_eq!(Caller::named("alice").owner().as_deref(), Some("alice"));
        assert_eq!(Caller::anonymous().owner(), None);
        let scoped = |subject: Option<&str>| Caller {
            subject: subject.map(String::from),
            scope: Some("writer:2".into()),
            ..Caller::default()
        };
        assert_eq!(scoped(Some("alice")).owner().as_deref(), Some("8:writer:2:alice"));
        assert_eq!(scoped(None).owner().as_deref(), Some("8:writer:2:"));
    }

    #[test]
    fn frames_share_the_runs_head_only_for_its_request() {
        let request = e2a::E2AEnvelope::new("chat.send", serde_json::json!({})).with_request_id("r1");
        let mut ctx = RequestContext::new(Caller::default(), None);
        // no head: one of the request's own
        assert_eq!(ctx.frames_for(&request).request_id(), Some("r1"));
        let made = ResponseStream::for_request(&request);
        ctx.head = Some(made.head().clone());
        assert!(Head::ptr_eq(ctx.frames_for(&request).head(), made.head()));
        // another request (or a part of the run) gets a head of its own, echoing it
        let other = request.clone().with_request_id("r2");
        let theirs = ctx.frames_for(&other);
        assert!(!Head::ptr_eq(theirs.head(), made.head()));
        assert_eq!(theirs.request_id(), Some("r2"));
        assert!(ctx.child().head.is_none());
    }
}
