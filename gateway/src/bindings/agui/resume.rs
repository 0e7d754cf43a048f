//! Answering interrupts: the interrupts a run ended with (`RUN_FINISHED` with an interrupt
//! outcome) wait, by caller and thread, for a run input whose `resume` answers them — every
//! one of them, each entry naming a pending interrupt. GoAI's resume body (`runId` and
//! `resume`, no `threadId`) is taken too: the thread is the one the run named is waiting on.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use axum::http::StatusCode;
use e2a::taxonomy::ErrorKind;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::agent::ConversationKey;
use crate::store::PauseStore;
use crate::web::problem::Problem;

/// One entry of a run input's `resume`: the answer to an interrupt.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ResumeEntry {
    #[serde(default)]
    interrupt_id: String,
    #[serde(default)]
    status: String,
    #[serde(default)]
    payload: Value,
}

/// What an interrupt's answer may say, in its `payload` object.
#[derive(Deserialize)]
struct AnswerPayload {
    #[serde(default)]
    approved: Option<bool>,
    #[serde(default)]
    answer: Option<String>,
}

/// The answer, as text, that a follow-up run gives to the interrupt it resumes (what an agent
/// reading the request's text gets; the entries themselves reach it whole in
/// `params.resume`).
pub(super) fn resume_answer(entry: &ResumeEntry) -> String {
    if entry.status == "cancelled" {
        return "no".into();
    }
    match &entry.payload {
        Value::Bool(false) => "no".into(),
        Value::String(s) => s.clone(),
        p @ Value::Object(_) => match AnswerPayload::deserialize(p) {
            Ok(AnswerPayload {
                approved: Some(false), ..
            }) => "no".into(),
            Ok(AnswerPayload { answer: Some(a), .. }) => a,
            _ => "yes".into(),
        },
        _ => "yes".into(),
    }
}

/// Most threads with an interrupt waiting for its answer that the binding remembers (the
/// oldest is forgotten first).
const MAX_PENDING: usize = 4096;

/// A caller's thread.
pub(super) type Thread = (Option<String>, String);

/// The interrupts a run ended with, waiting for their answers (kept in the store as JSON).
#[derive(Clone, Serialize, Deserialize)]
struct Pending {
    run_id: String,
    ids: Vec<String>,
}

/// The interrupts runs ended with and nobody answered yet, by caller and thread (and which
/// thread each caller's run waits on).
#[derive(Default)]
pub(crate) struct Interrupts {
    pending: HashMap<Thread, Pending>,
    by_run: HashMap<(Option<String>, String), String>,
    order: VecDeque<Thread>,
}

impl Interrupts {
    /// Run `run_id` of `thread` ended waiting for the interrupts `ids`.
    pub(super) fn remember(&mut self, thread: Thread, run_id: &str, ids: Vec<String>) {
        let run = (thread.0.clone(), run_id.to_string());
        let pending = Pending {
            run_id: run_id.to_string(),
            ids,
        };
        match self.pending.insert(thread.clone(), pending) {
            Some(old) => {
                self.by_run.remove(&(thread.0.clone(), old.run_id));
            }
            None => self.order.push_back(thread.clone()),
        }
        self.by_run.insert(run, thread.1);
        while self.order.len() > MAX_PENDING {
            if let Some(old) = self.order.pop_front() {
                self.forget(&old);
            }
        }
    }

    fn forget(&mut self, thread: &Thread) {
        if let Some(p) = self.pending.remove(thread) {
            self.by_run.remove(&(thread.0.clone(), p.run_id));
        }
    }

    /// Takes what `input`'s `resume` answers, checked: its entries, when it has a `resume`.
    /// A `threadId` it lacks is the thread its `runId` waits on (GoAI's resume body); every
    /// entry must name an interrupt pending on that thread, with `status` `resolved` or
    /// `cancelled` (or none), and every pending interrupt must be answered. Nothing is taken
    /// when the input is refused.
    pub(super) fn take_answered(
        lock: &Mutex<Interrupts>,
        owner: Option<String>,
        input: &mut Value,
    ) -> Result<Option<Vec<ResumeEntry>>, Problem> {
        let Some(resume) = input.get("resume").filter(|r| !r.is_null()) else {
            return Ok(None);
        };
        let entries = Vec::<ResumeEntry>::deserialize(resume)
            .map_err(|_| invalid("/resume", "expected an array of {interruptId, status, payload} entries"))?;
        let mut this = lock.lock();
        let thread = match input.get("threadId").and_then(Value::as_str).filter(|t| !t.is_empty()) {
            Some(t) => t.to_string(),
            None => {
                let run = input
                    .get("runId")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string();
                let thread = this.by_run.get(&(owner.clone(), run.clone())).cloned().ok_or_else(|| {
                    invalid(
                        "/threadId",
                        &format!("no run {run:?} of this caller waits for an answer: give threadId"),
                    )
                })?;
                if let Some(m) = input.as_object_mut() {
                    m.insert("threadId".into(), thread.clone().into());
                }
                thread
            }
        };
        let key = (owner, thread);
        let pending = this.pending.get(&key).map(|p| p.ids.clone()).unwrap_or_default();
        if entries.is_empty() || pending.is_empty() {
            return Err(invalid(
                "/resume/0/interruptId",
                &format!("resume names no pending interrupt of thread {:?}", key.1),
            ));
        }
        for (i, e) in entries.iter().enumerate() {
            if !pending.contains(&e.interrupt_id) {
                return Err(invalid(
                    &format!("/resume/{i}/interruptId"),
                    &format!("resume names no pending interrupt of thread {:?}", key.1),
                ));
            }
            if !matches!(e.status.as_str(), "" | "resolved" | "cancelled") {
                return Err(invalid(
                    &format!("/resume/{i}/status"),
                    "expected `resolved` or `cancelled`",
                ));
            }
        }
        let missing: Vec<&String> = pending
            .iter()
            .filter(|id| !entries.iter().any(|e| &e.interrupt_id == *id))
            .collect();
        if !missing.is_empty() {
            return Err(invalid(
                "/resume",
                &format!("every pending interrupt must be answered; not answered: {missing:?}"),
            ));
        }
        this.forget(&key);
        this.order.retain(|k| k != &key);
        Ok(Some(entries))
    }
}

/// Where the store keeps the interrupts a caller's thread waits on.
fn thread_key(thread: &Thread) -> String {
    format!(
        "agui:{}",
        ConversationKey::new(thread.0.clone(), thread.1.clone()).scoped_id()
    )
}

/// Where the store keeps which thread a caller's run waits on.
fn run_key(owner: &Option<String>, run_id: &str) -> String {
    format!("agui-run:{}", ConversationKey::new(owner.clone(), run_id).scoped_id())
}

/// The interrupts, kept in this process and, when there is one, in the store: an answer is
/// honoured after a restart and on any gateway of the store, by one of them only.
pub(super) struct Kept<'a> {
    /// This process's interrupts.
    pub(super) memory: &'a Mutex<Interrupts>,
    /// The store that keeps pauses.
    pub(super) store: Option<&'a Arc<dyn PauseStore>>,
}

impl Kept<'_> {
    /// Run `run_id` of `thread` ended waiting for the interrupts `ids` (kept before the event
    /// saying so goes out: an answer may follow at once).
    pub(super) async fn remember(&self, thread: Thread, run_id: &str, ids: Vec<String>) {
        let pending = Pending {
            run_id: run_id.to_string(),
            ids,
        };
        // with a store, the store alone: a copy here would outlive an answer on another gateway
        let Some(store) = self.store else {
            self.memory.lock().remember(thread, run_id, pending.ids);
            return;
        };
        let state = serde_json::to_string(&pending).unwrap_or_default();
        let kept = match store.put_pause(&thread_key(&thread), state).await {
            Ok(()) => store.put_pause(&run_key(&thread.0, run_id), thread.1.clone()).await,
            Err(e) => Err(e),
        };
        if let Err(e) = kept {
            tracing::warn!(error = %e, "cannot store an interrupt: it lives in this process only");
            self.memory.lock().remember(thread, run_id, pending.ids);
        }
    }

    /// [`Interrupts::take_answered`], with what the store keeps: interrupts asked before a
    /// restart or on another gateway are read from it, and an answer takes them there too (a
    /// second gateway answering the same interrupt at once is refused).
    pub(super) async fn take_answered(
        &self,
        owner: Option<String>,
        input: &mut Value,
    ) -> Result<Option<Vec<ResumeEntry>>, Problem> {
        let Some(store) = self.store.filter(|_| input.get("resume").is_some_and(|r| !r.is_null())) else {
            return Interrupts::take_answered(self.memory, owner, input);
        };
        let thread = self.thread_of(store, &owner, input).await;
        if let (Some(t), Some(m)) = (&thread, input.as_object_mut()) {
            m.entry("threadId").or_insert_with(|| t.clone().into());
        }
        // only what the store could not keep is in this process's memory
        let in_memory = thread
            .as_ref()
            .is_some_and(|t| self.memory.lock().pending.contains_key(&(owner.clone(), t.clone())));
        if let (Some(thread), false) = (&thread, in_memory) {
            let key = (owner.clone(), thread.clone());
            match store.get_pause(&thread_key(&key)).await {
                Ok(Some(text)) => {
                    if let Ok(p) = serde_json::from_str::<Pending>(&text) {
                        self.memory.lock().remember(key, &p.run_id, p.ids);
                    }
                }
                Ok(None) => {}
                Err(e) => tracing::error!(error = %e, "cannot read a stored interrupt"),
            }
        }
        let answered = match Interrupts::take_answered(self.memory, owner.clone(), input) {
            Err(refused) => {
                // what was read from the store for this answer is not kept here
                if let (Some(t), false) = (&thread, in_memory) {
                    let mut memory = self.memory.lock();
                    let key = (owner.clone(), t.clone());
                    memory.forget(&key);
                    memory.order.retain(|k| k != &key);
                }
                return Err(refused);
            }
            Ok(answered) => answered,
        };
        let (Some(thread), Some(_)) = (thread, &answered) else {
            return Ok(answered);
        };
        // the run's thread stays kept (a later answer to it is told what it is answering)
        let taken = store.take_pause(&thread_key(&(owner.clone(), thread.clone()))).await;
        match taken {
            // answered on another gateway meanwhile
            Ok(None) if !in_memory => Err(invalid(
                "/resume/0/interruptId",
                &format!("resume names no pending interrupt of thread {thread:?}"),
            )),
            Ok(_) => Ok(answered),
            Err(e) => {
                tracing::error!(error = %e, "cannot take a stored interrupt");
                Ok(answered)
            }
        }
    }

    /// The thread `input` resumes: its `threadId`, else the one its `runId` waits on (in this
    /// process, else in the store).
    async fn thread_of(&self, store: &Arc<dyn PauseStore>, owner: &Option<String>, input: &Value) -> Option<String> {
        if let Some(t) = input.get("threadId").and_then(Value::as_str).filter(|t| !t.is_empty()) {
            return Some(t.to_string());
        }
        let run = input.get("runId").and_then(Value::as_str)?;
        if let Some(t) = self.memory.lock().by_run.get(&(owner.clone(), run.to_string())) {
            return Some(t.clone());
        }
        store.get_pause(&run_key(owner, run)).await.ok().flatten()
    }
}

fn invalid(pointer: &str, why: &str) -> Problem {
    Problem::new(ErrorKind::InvalidParams, why)
        .at(pointer)
        .with_status(StatusCode::UNPROCESSABLE_ENTITY)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn resume_answers() {
        let r = |v: serde_json::Value| {
            let entries = Vec::<ResumeEntry>::deserialize(&v).expect("resume entries");
            entries.first().map(resume_answer)
        };
        assert_eq!(
            r(json!([{"interruptId": "i", "status": "cancelled"}])).as_deref(),
            Some("no")
        );
        assert_eq!(
            r(json!([{"interruptId": "i", "status": "resolved", "payload": {"approved": true}}])).as_deref(),
            Some("yes")
        );
        assert_eq!(
            r(json!([{"interruptId": "i", "status": "resolved", "payload": false}])).as_deref(),
            Some("no")
        );
        assert_eq!(
            r(json!([{"interruptId": "i", "status": "resolved", "payload": "4"}])).as_deref(),
            Some("4")
        );
        assert_eq!(
            r(json!([{"interruptId": "i", "status": "resolved", "payload": {"answer": "blue"}}])).as_deref(),
            Some("blue")
        );
        assert_eq!(
            r(json!([{"interruptId": "i", "status": "resolved", "payload": {"approved": false}}])).as_deref(),
            Some("no")
        );
        assert_eq!(r(json!([])), None);
    }

    #[test]
    fn a_resume_answers_every_pending_interrupt_of_its_thread_or_nothing_is_taken() {
        let lock = Mutex::new(Interrupts::default());
        let owner = Some("alice".to_string());
        lock.lock()
            .remember((owner.clone(), "t1".into()), "run-1", vec!["a".into(), "b".into()]);
        let resume = |body: Value| {
            let mut input = body;
            Interrupts::take_answered(&lock, owner.clone(), &mut input).map(|e| (e.map(|e| e.len()), input))
        };
        // one of two answered: refused, both still pending
        let err = resume(json!({"threadId": "t1", "runId": "r2", "resume": [{"interruptId": "a"}]})).err();
        assert_eq!(err.and_then(|p| p.pointer).as_deref(), Some("/resume"));
        // an unknown id, a wrong status
        let err = resume(json!({"threadId": "t1", "resume": [{"interruptId": "a"}, {"interruptId": "z"}]})).err();
        assert_eq!(err.and_then(|p| p.pointer).as_deref(), Some("/resume/1/interruptId"));
        let err = resume(json!({"threadId": "t1", "resume": [{"interruptId": "a", "status": "maybe"}]})).err();
        assert_eq!(err.and_then(|p| p.pointer).as_deref(), Some("/resume/0/status"));
        // another caller's run is not found by id
        let mut other = json!({"runId": "run-1", "resume": [{"interruptId": "a"}, {"interruptId": "b"}]});
        let err = Interrupts::take_answered(&lock, Some("bob".into()), &mut other).err();
        assert_eq!(err.and_then(|p| p.pointer).as_deref(), Some("/threadId"));
        // GoAI's body: the run's id, no thread; both answered
        let (n, input) = resume(json!({"runId": "run-1", "resume": [
            {"interruptId": "b", "status": "resolved", "payload": {"approved": true}},
            {"interruptId": "a", "status": "cancelled", "payload": null}]}))
        .expect("taken");
        assert_eq!(n, Some(2));
        assert_eq!(input["threadId"], "t1");
        // taken once
        let again = resume(json!({"threadId": "t1", "resume": [{"interruptId": "a"}, {"interruptId": "b"}]}));
        assert!(again.is_err());
        // no resume: nothing to take
        assert!(matches!(resume(json!({"threadId": "t1"})), Ok((None, _))));
    }
}
