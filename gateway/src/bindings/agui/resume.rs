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

/// What one entry answers.
enum Answer {
    Denied,
    Approved,
    Said(String),
}

fn answer_of(entry: &ResumeEntry) -> Answer {
    if entry.status == "cancelled" {
        return Answer::Denied;
    }
    match &entry.payload {
        Value::Bool(false) => Answer::Denied,
        Value::String(s) => Answer::Said(s.clone()),
        p @ Value::Object(_) => match AnswerPayload::deserialize(p) {
            Ok(AnswerPayload {
                approved: Some(false), ..
            }) => Answer::Denied,
            Ok(AnswerPayload { answer: Some(a), .. }) => Answer::Said(a),
            _ => Answer::Approved,
        },
        _ => Answer::Approved,
    }
}

/// The answer, as text, that a follow-up run gives to the interrupts it resumes (what an
/// agent reading the request's text gets; the entries themselves reach it whole in
/// `params.resume`): `no` when any entry denies, else what the entries say (one line each,
/// in their order), else `yes`.
pub(super) fn resume_answer(entries: &[ResumeEntry]) -> String {
    let answers: Vec<Answer> = entries.iter().map(answer_of).collect();
    if answers.iter().any(|a| matches!(a, Answer::Denied)) {
        return "no".into();
    }
    let said: Vec<String> = answers
        .into_iter()
        .filter_map(|a| match a {
            Answer::Said(s) => Some(s),
            _ => None,
        })
        .collect();
    match said.is_empty() {
        true => "yes".into(),
        false => said.join("\n"),
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

    /// Takes the interrupts pending on `thread` when they are still those of `run_id`;
    /// whether they were.
    fn take(&mut self, thread: &Thread, run_id: &str) -> bool {
        if self.pending.get(thread).is_none_or(|p| p.run_id != run_id) {
            return false;
        }
        self.forget(thread);
        self.order.retain(|k| k != thread);
        true
    }
}

/// A resume checked against the interrupts it answers, not yet taken ([`Kept::check`]): the
/// binding checks the rest of the input first, then takes them ([`Kept::take`]).
pub(super) struct Claim {
    thread: Thread,
    /// The run that paused (what the answer is for).
    run_id: String,
    /// Whether the interrupts were read from the store (else from this process's memory).
    stored: bool,
    entries: Vec<ResumeEntry>,
}

/// The `resume` entries of `input`, when it has some.
fn entries_of(input: &Value) -> Result<Option<Vec<ResumeEntry>>, Problem> {
    let Some(resume) = input.get("resume").filter(|r| !r.is_null()) else {
        return Ok(None);
    };
    Vec::<ResumeEntry>::deserialize(resume)
        .map(Some)
        .map_err(|_| invalid("/resume", "expected an array of {interruptId, status, payload} entries"))
}

/// Checks `entries` against the interrupts `pending` on `thread`: every entry names one of
/// them, with `status` `resolved` or `cancelled` (or none), and every one is answered.
fn check_entries(entries: &[ResumeEntry], pending: &[String], thread: &str) -> Result<(), Problem> {
    let none_pending = || format!("resume names no pending interrupt of thread {thread:?}");
    if entries.is_empty() || pending.is_empty() {
        return Err(invalid("/resume/0/interruptId", &none_pending()));
    }
    for (i, e) in entries.iter().enumerate() {
        if !pending.contains(&e.interrupt_id) {
            return Err(invalid(&format!("/resume/{i}/interruptId"), &none_pending()));
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
    Ok(())
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

    /// Checks what `input`'s `resume` answers, without taking it: its entries, when it has a
    /// `resume`. A `threadId` it lacks is the thread its `runId` waits on (GoAI's resume
    /// body; written into `input`); every entry must name an interrupt pending on that thread
    /// (in this process, else in the store: asked before a restart or on another gateway),
    /// and every pending interrupt must be answered ([`check_entries`]).
    pub(super) async fn check(&self, owner: Option<String>, input: &mut Value) -> Result<Option<Claim>, Problem> {
        let Some(entries) = entries_of(input)? else {
            return Ok(None);
        };
        let thread = match input.get("threadId").and_then(Value::as_str).filter(|t| !t.is_empty()) {
            Some(t) => t.to_string(),
            None => {
                let run = input.get("runId").and_then(Value::as_str).unwrap_or_default();
                let thread = self.thread_of(&owner, run).await.ok_or_else(|| {
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
        let thread = (owner, thread);
        let (pending, stored) = match self.memory.lock().pending.get(&thread).cloned() {
            Some(p) => (Some(p), false),
            None => (None, true),
        };
        let pending = match (pending, self.store) {
            (Some(p), _) => Some(p),
            (None, Some(store)) => match store.get_pause(&thread_key(&thread)).await {
                Ok(text) => text.and_then(|t| serde_json::from_str::<Pending>(&t).ok()),
                Err(e) => {
                    tracing::error!(error = %e, "cannot read a stored interrupt");
                    None
                }
            },
            (None, None) => None,
        };
        let (run_id, ids) = pending.map(|p| (p.run_id, p.ids)).unwrap_or_default();
        check_entries(&entries, &ids, &thread.1)?;
        Ok(Some(Claim {
            thread,
            run_id,
            stored,
            entries,
        }))
    }

    /// Takes the interrupts `claim` answers (once: a second answer, here or on another
    /// gateway of the store, is refused); its entries.
    pub(super) async fn take(&self, claim: Claim) -> Result<Vec<ResumeEntry>, Problem> {
        let answered_meanwhile = || {
            invalid(
                "/resume/0/interruptId",
                &format!("resume names no pending interrupt of thread {:?}", claim.thread.1),
            )
        };
        let store = self.store.filter(|_| claim.stored);
        let Some(store) = store else {
            return match self.memory.lock().take(&claim.thread, &claim.run_id) {
                true => Ok(claim.entries),
                false => Err(answered_meanwhile()),
            };
        };
        // the run's thread stays kept (a later answer to it is told what it is answering)
        match store.take_pause(&thread_key(&claim.thread)).await {
            Ok(Some(_)) => Ok(claim.entries),
            Ok(None) => Err(answered_meanwhile()),
            Err(e) => {
                tracing::error!(error = %e, "cannot take a stored interrupt");
                Ok(claim.entries)
            }
        }
    }

    /// The thread run `run_id` of `owner` waits on: in this process, else in the store.
    async fn thread_of(&self, owner: &Option<String>, run_id: &str) -> Option<String> {
        if let Some(t) = self.memory.lock().by_run.get(&(owner.clone(), run_id.to_string())) {
            return Some(t.clone());
        }
        self.store?.get_pause(&run_key(owner, run_id)).await.ok().flatten()
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
            Some(resume_answer(&entries)).filter(|_| !entries.is_empty())
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
        // two answers: any denial denies; else what they say, in order
        let two =
            |a: Value, b: Value| r(json!([{"interruptId": "i", "payload": a}, {"interruptId": "j", "payload": b}]));
        assert_eq!(two(json!(true), json!({"approved": false})).as_deref(), Some("no"));
        assert_eq!(two(json!("4"), json!({"approved": true})).as_deref(), Some("4"));
        assert_eq!(two(json!("4"), json!({"answer": "blue"})).as_deref(), Some("4\nblue"));
        assert_eq!(two(json!(true), json!(null)).as_deref(), Some("yes"));
    }

    #[tokio::test]
    async fn a_resume_answers_every_pending_interrupt_of_its_thread_or_nothing_is_taken() {
        let lock = Mutex::new(Interrupts::default());
        let kept = Kept {
            memory: &lock,
            store: None,
        };
        let owner = Some("alice".to_string());
        lock.lock()
            .remember((owner.clone(), "t1".into()), "run-1", vec!["a".into(), "b".into()]);
        let check = |body: Value, owner: Option<String>| {
            let kept = &kept;
            async move {
                let mut input = body;
                let claim = kept.check(owner, &mut input).await?;
                Ok::<_, Problem>((claim, input))
            }
        };
        let pointer = |r: Result<(Option<Claim>, Value), Problem>| r.err().and_then(|p| p.pointer);
        // one of two answered: refused, both still pending
        let r = check(
            json!({"threadId": "t1", "runId": "r2", "resume": [{"interruptId": "a"}]}),
            owner.clone(),
        );
        assert_eq!(pointer(r.await).as_deref(), Some("/resume"));
        // an unknown id, a wrong status
        let r = check(
            json!({"threadId": "t1", "resume": [{"interruptId": "a"}, {"interruptId": "z"}]}),
            owner.clone(),
        );
        assert_eq!(pointer(r.await).as_deref(), Some("/resume/1/interruptId"));
        let r = check(
            json!({"threadId": "t1", "resume": [{"interruptId": "a", "status": "maybe"}]}),
            owner.clone(),
        );
        assert_eq!(pointer(r.await).as_deref(), Some("/resume/0/status"));
        // another caller's run is not found by id
        let both = json!({"runId": "run-1", "resume": [{"interruptId": "a"}, {"interruptId": "b"}]});
        let r = check(both.clone(), Some("bob".into()));
        assert_eq!(pointer(r.await).as_deref(), Some("/threadId"));
        // GoAI's body: the run's id, no thread; both answered; checked twice, taken once
        let (claim, input) = check(both.clone(), owner.clone()).await.expect("checked");
        assert_eq!(input["threadId"], "t1");
        let (again, _) = check(both.clone(), owner.clone()).await.expect("checked, not taken");
        let entries = kept.take(claim.expect("a claim")).await.expect("taken");
        assert_eq!(entries.len(), 2);
        assert!(kept.take(again.expect("a claim")).await.is_err(), "taken once");
        assert!(check(both, owner.clone()).await.is_err());
        // no resume: nothing to check
        assert!(matches!(check(json!({"threadId": "t1"}), owner).await, Ok((None, _))));
    }
}
