//! Starting a turn: a send decoded, admitted and claimed (one run per task at a time, across
//! the gateways sharing the store), its task opened or continued, its first event stored —
//! then the run goes on on its own task.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use e2a::frame::Frame;
use e2a::types::{A2aMessage, A2aStreamResponse, A2aTask, A2aTaskState};
use e2a::ResponseKind;
use futures_util::StreamExt;
use serde_json::Value;
use tokio::sync::oneshot;

use super::config::A2aConfig;
use super::detach::DetachOnDrop;
use super::error::{A2aError, A2aErrorKind};
use super::feed::{Followers, Until};
use super::live::{still_working, LiveRuns};
use super::log::TaskLog;
use super::params::{decode_send, Decoded};
use super::sent::{PastSends, SendKeys};
use super::snapshot::{status_now, trim_history, user_turns};
use super::turn::{Turn, TurnMapper};
use super::{CallContext, EventStream, SendParams, TurnDone, SUBMITTED, WORKING};
use crate::agent::Agent;
use crate::agent::{Caller, ConversationKey};
use crate::pipeline::{Admission, Pipeline};
use crate::store::{now_ms, TaskRecord};
use crate::tasks::push::PushConfigs;

/// How the service started a send (see `TaskService::send_message` and
/// `TaskService::send_streaming` for what a binding gets).
pub(super) enum SendOutcome {
    /// A direct message reply (no task).
    Message(Value),
    /// A task, to a streaming send: its id, and its events from this turn's first on.
    Stream { id: String, events: EventStream },
    /// A task, to a non-streaming send: its id, and the task when the turn ends.
    Task { id: String, done: TurnDone },
    /// The same send made before (same key, same content): its task, the agent not run again.
    Repeat { id: String },
}

/// The turns of tasks, as sends start them: what a send is decoded with (`config`), admitted
/// and run by (`pipeline`), remembered by (`sent`) and registers (`pushes`); where its task
/// is claimed (`runs`), stored (`log`) and followed (`followers`).
/// Made by the task service, which owns the parts it shares.
pub(crate) struct Turns {
    pub(super) pipeline: Arc<Pipeline>,
    pub(super) config: Arc<A2aConfig>,
    pub(super) runs: Arc<LiveRuns>,
    pub(super) log: Arc<TaskLog>,
    pub(super) followers: Arc<Followers>,
    pub(super) sent: PastSends,
    pub(super) pushes: Arc<PushConfigs>,
}

/// A send decoded and admitted, before its task is claimed (see `Turns::start_turn`).
struct TurnStart {
    env: e2a::E2AEnvelope,
    existing: Option<TaskRecord>,
    task_id: String,
    context_id: String,
    message: A2aMessage,
    caller: Caller,
    return_immediately: bool,
    streaming: bool,
    /// The webhook the send registers for its task (`configuration.taskPushNotificationConfig`).
    push: Option<e2a::types::A2aTaskPushNotificationConfig>,
}

/// Names the turn's request: its task `task_id`, its context (the existing task's, else the
/// request's, else a new one), its session (the context unless it names one) and a request id
/// unless it has one. Returns the context id.
fn name_turn(env: &mut e2a::E2AEnvelope, existing: Option<&TaskRecord>, task_id: &str) -> String {
    let context_id = existing
        .map(|r| r.context_id.clone())
        .or_else(|| env.context_id.clone())
        .unwrap_or_else(e2a::stream::new_ordered_id);
    env.task_id = Some(task_id.to_string());
    env.context_id = Some(context_id.clone());
    env.session_id.get_or_insert_with(|| context_id.clone());
    env.request_id.get_or_insert_with(e2a::stream::new_id);
    context_id
}

impl Turns {
    /// Starts a turn: a new task, or the answer to a paused one.
    pub(super) async fn send(self: &Arc<Self>, p: SendParams, streaming: bool) -> Result<SendOutcome, A2aError> {
        // the keys the send is remembered by, read before it is decoded (idempotent delivery)
        let keys = SendKeys::of(&p, self.config.message_ids);
        let SendParams { cx, params } = p;
        let CallContext {
            id,
            headers,
            caller,
            trace_id,
            ..
        } = cx;
        let push = self.pushes.of_send(&params).await?;
        let Decoded {
            mut env,
            message,
            return_immediately,
        } = decode_send(&self.config, streaming, id, params, &headers)?;
        crate::web::trace::correlate(&mut env, trace_id);
        // an empty `taskId` names no task (ProtoJSON writes absent strings as "")
        if env.task_id.as_deref() == Some("") {
            env.task_id = None;
        }
        // an existing task (a paused one, answered) or a new one; a repeated answer finds its
        // task no longer paused: what the first answer started
        // (the answer to a paused task is boxed: its future is large, and a new task's send
        // would carry its size through every layer that moves the request's future)
        let (existing, chosen) = match Box::pin(self.task_named(&env, &caller, &keys)).await? {
            Named::Existing(record) => (Some(*record), None),
            Named::Chosen(id) => (None, Some(id)),
            Named::None => (None, None),
            Named::Repeat(id) => return Ok(SendOutcome::Repeat { id }),
        };
        let mut admission = self
            .pipeline
            .admit(caller.clone(), crate::pipeline::Via::A2a)
            .map_err(|r| A2aError::unavailable(r.message(), self.pipeline.retry_after()))?;
        let task_id = existing
            .as_ref()
            .map(|r| r.id.clone())
            .or(chosen)
            .unwrap_or_else(e2a::stream::new_ordered_id);
        // a send this caller already made (same key, same content): its task, the agent not
        // run again; remembered only now, once the send is known to start a turn
        if let Some(id) = self.sent.repeated(&caller, &keys, &task_id).await? {
            return Ok(SendOutcome::Repeat { id });
        }
        let context_id = name_turn(&mut env, existing.as_ref(), &task_id);
        admission.keep_in(self.log.kept_events(&task_id));

        // from the claim on, the turn's start runs to its end: a client that goes away
        // mid-request cannot leave a claimed task without its run (its run goes on detached)
        // (boxed: a turn's start is over 2 kB, and its future, which holds it, is boxed too)
        let start = Box::new(TurnStart {
            env,
            existing,
            task_id,
            context_id,
            message,
            caller,
            return_immediately,
            streaming,
            push,
        });
        // (in the request's task, boxed once; a client gone before it ends leaves it to
        // finish on a task of its own, in the request's trace)
        let started = DetachOnDrop::new(self.clone().start_turn(start, admission)).await;
        if matches!(started, Ok(SendOutcome::Stream { .. })) {
            // the turn's task (just spawned) runs before the stream's head is written: the
            // head and the events the agent has ready go out in one write, not one each
            tokio::task::yield_now().await;
        }
        started
    }

    /// Claims the task, starts the agent and stores the task's first event; the outcome.
    async fn start_turn(self: Arc<Self>, t: Box<TurnStart>, admission: Admission) -> Result<SendOutcome, A2aError> {
        let ctx = admission.ctx.clone();
        let live = self.runs.claim(&t.task_id, t.existing.is_some(), &ctx).await?;
        // the request's trace id (the envelope's correlation id), for the send's webhook
        let trace = t.push.as_ref().and_then(|_| t.env.correlation_id.clone());
        let mut frames = admission.run(t.env);
        let permit = admission.into_permit();

        // a new task whose agent answers with a message first: a direct reply, no task
        let mut first: Option<Arc<Frame>> = None;
        if t.existing.is_none() && !t.return_immediately {
            first = frames.next().await;
            if let Some(f) = first.as_ref().filter(|f| f.response_kind == ResponseKind::A2aMessage) {
                ctx.cancel.cancel();
                self.runs.unclaim(&t.task_id).await;
                return Ok(SendOutcome::Message(direct_reply(f, &t.context_id)));
            }
        }
        let (mut rec, turn) = open_turn(t.existing, &t.task_id, &t.context_id, t.message, &t.caller);
        let before = rec.last_seq;
        // the webhook of the send gets every event of the turn, from its first on
        if let Some(config) = t.push {
            if let Err(e) = self.pushes.register(config, &t.task_id, before, trace).await {
                ctx.cancel.cancel();
                self.runs.unclaim(&t.task_id).await;
                return Err(e);
            }
        }
        // a stream's follower subscribes before the task's first event: every event reaches it
        let rx = t.streaming.then(|| self.followers.channel(&t.task_id));
        // (the task moves into its opening event, uncopied: the commit that stores the event
        // applies it, which puts the task back in `rec` before anything reads it there)
        let hollow = A2aTask::new(String::new(), String::new(), rec.state);
        let opening = A2aStreamResponse::Task(std::mem::replace(&mut rec.task, hollow));
        // the opening is stored here when the answer is the task as it is now, or a stream
        // (which starts with it, or with the error that nothing could be stored); a blocking
        // send's run stores it with what the agent has ready
        let opening = if t.return_immediately || t.streaming {
            if let Err(e) = self.log.commit(&mut rec, opening).await {
                // nothing of the task is stored: no task, and the agent's run stops here
                ctx.cancel.cancel();
                self.followers.drop_channel(&t.task_id, true);
                self.runs.unclaim(&t.task_id).await;
                return Err(e);
            }
            None
        } else {
            Some(opening)
        };
        let mapper = TurnMapper::new(&t.task_id, &t.context_id, turn, live.canceled_by_client());
        let turn = Turn {
            opening,
            next: first,
            frames,
            mapper,
        };
        let (done, told) = oneshot::channel();
        let this = self.clone();
        let run: Pin<Box<dyn Future<Output = ()> + Send>> = Box::pin(async move {
            let _permit = permit;
            turn.run(rec, done, &this.log, &this.runs, &this.followers).await;
        });
        let run = launch(run, !(t.streaming || t.return_immediately));
        Ok(match rx {
            Some(rx) => SendOutcome::Stream {
                id: t.task_id.clone(),
                events: self.followers.follow_live(t.task_id, before, rx, Until::TurnEnd),
            },
            None => SendOutcome::Task {
                id: t.task_id,
                done: TurnDone { run, told },
            },
        })
    }

    /// The task a send started, as its binding answers it (`Task` JSON): when `blocking`, as
    /// its run stored it at the turn's end (waiting up to the blocking timeout), else as it is
    /// now; its history trimmed to `history` messages.
    pub(super) async fn sent_task(
        &self,
        id: &str,
        done: Option<TurnDone>,
        blocking: bool,
        history: Option<usize>,
        caller: &Caller,
    ) -> Result<Arc<str>, A2aError> {
        if let Some(done) = done.filter(|_| blocking) {
            let in_place = done.in_place();
            if let Ok(Ok(task)) = tokio::time::timeout(self.config.blocking_timeout, done.told()).await {
                if in_place {
                    // the other requests ready go first, as they would have while a run on a
                    // task of its own ended: a busy gateway's answers then go out together,
                    // and the kernel wakes each client once for several (answered one by one
                    // as each is read, the wake-ups cost about 3 µs more system time per
                    // send; a gateway with nothing else to do goes on at once)
                    tokio::task::yield_now().await;
                }
                let task = task?;
                if history.is_none() {
                    return Ok(task);
                }
                let task: A2aTask = serde_json::from_str(&task)
                    .map_err(|e| A2aError::internal(format!("a stored task is not an A2A task: {e}")))?;
                return Ok(e2a::write::to_json(&trim_history(task, history)).into());
            }
        }
        // (boxed: reading a task back is a large future, rarely needed after a blocking send)
        let rec = Box::pin(self.log.load(id, caller)).await?;
        Ok(e2a::write::to_json(&trim_history(rec.task, history)).into())
    }

    /// The caller's task `id`, if a message may answer it now: not ended, not running, in the
    /// message's context (when it names one).
    /// The task a send names: an existing one (a paused one, answered); a new one under the
    /// id the client chose (`client_task_ids`: GoAI's stable child ids); none; or, when the
    /// task named cannot take it, the task of the same send made before (a retry).
    async fn task_named(&self, env: &e2a::E2AEnvelope, caller: &Caller, keys: &SendKeys) -> Result<Named, A2aError> {
        let Some(id) = env.task_id.clone() else {
            return Ok(Named::None);
        };
        // (the answer to a paused task is boxed: its future is large)
        let e = match Box::pin(self.answerable(&id, env.context_id.as_deref(), caller)).await {
            Ok(record) => return Ok(Named::Existing(Box::new(record))),
            Err(e) => e,
        };
        match self.sent.sent_before(caller, keys).await? {
            Some(id) => Ok(Named::Repeat(id)),
            None if e.kind == A2aErrorKind::TaskNotFound && self.config.client_task_ids => {
                self.unused(&id).await?;
                Ok(Named::Chosen(id))
            }
            None => Err(e),
        }
    }

    /// Refuses a client-chosen id for a new task that a task has already (another caller's, or
    /// another agent's): task ids are unique in the store.
    async fn unused(&self, id: &str) -> Result<(), A2aError> {
        match self.log.stored(id).await? {
            Some(_) => Err(A2aError::new(
                A2aErrorKind::InvalidRequest,
                format!("task id {id:?} is taken: choose another (or leave taskId out)"),
            )),
            None => Ok(()),
        }
    }

    async fn answerable(&self, id: &str, context_id: Option<&str>, caller: &Caller) -> Result<TaskRecord, A2aError> {
        let rec = self.log.load(id, caller).await?;
        if context_id.is_some_and(|c| c != rec.context_id) {
            return Err(A2aError::invalid_params(format!(
                "message contextId does not match the context of task {id}"
            )));
        }
        if rec.state.is_terminal() {
            return Err(A2aError::new(
                A2aErrorKind::UnsupportedOperation,
                format!("task {id} is in a terminal state ({})", rec.state),
            ));
        }
        if self.runs.get(id).is_some() {
            return Err(still_working(id, ""));
        }
        // an answer to a pause its agent no longer holds is refused, never run as a new turn
        // (a pause is INPUT_REQUIRED; AUTH_REQUIRED comes from a failed turn, nothing is held)
        let key = ConversationKey::new(caller.owner(), id);
        if rec.state == A2aTaskState::TaskStateInputRequired
            && self.pipeline.agent().holds_pause(&key) == Some(false)
            && !self.pipeline.pause_kept(&key).await
        {
            return Err(A2aError::invalid_params(format!(
                "task {id} waits for an answer that its agent no longer holds (the gateway restarted, \
                 or another gateway paused it): start a new task"
            )));
        }
        Ok(rec)
    }
}

/// A turn's run: in the request's task when `in_place` (a blocking send's: [`TurnDone::told`]
/// drives it), else on a task of its own, in the request's trace.
fn launch(
    run: Pin<Box<dyn Future<Output = ()> + Send>>,
    in_place: bool,
) -> Option<DetachOnDrop<dyn Future<Output = ()> + Send>> {
    if in_place {
        return Some(DetachOnDrop::boxed(run));
    }
    tokio::spawn(tracing::Instrument::instrument(run, tracing::Span::current()));
    None
}

/// The direct `Message` reply of an agent that answered with an `a2a.message` frame.
fn direct_reply(frame: &Frame, context_id: &str) -> Value {
    let mut reply = frame.body_object().into_owned();
    reply.remove("taskId");
    reply.insert("contextId".into(), context_id.into());
    reply.entry("messageId").or_insert_with(|| e2a::stream::new_id().into());
    reply.entry("role").or_insert_with(|| "ROLE_AGENT".into());
    Value::Object(reply)
}

/// The task a turn runs in, with the user's message in its history, and the turn's number:
/// an answered task goes back to `WORKING`, a new one starts `SUBMITTED`.
fn open_turn(
    existing: Option<TaskRecord>,
    task_id: &str,
    context_id: &str,
    message: A2aMessage,
    caller: &Caller,
) -> (TaskRecord, usize) {
    let user_message = A2aMessage {
        task_id: Some(task_id.into()),
        context_id: Some(context_id.into()),
        ..message
    };
    match existing {
        Some(mut rec) => {
            rec.task.history.push(user_message);
            rec.task.status = status_now(WORKING, None);
            let turn = user_turns(&rec.task);
            (rec, turn)
        }
        None => {
            let ms = now_ms();
            let mut task = A2aTask::new(task_id, context_id, SUBMITTED);
            task.status = status_now(SUBMITTED, None);
            task.history.push(user_message);
            let rec = TaskRecord {
                id: task_id.into(),
                context_id: context_id.into(),
                owner: caller.owner(),
                state: SUBMITTED,
                task,
                last_seq: 0,
                snapshot_seq: 0,
                created_ms: ms,
                updated_ms: ms,
            };
            (rec, 1)
        }
    }
}

/// The task a send names ([`Turns::task_named`]).
enum Named {
    Existing(Box<TaskRecord>),
    Chosen(String),
    None,
    Repeat(String),
}
