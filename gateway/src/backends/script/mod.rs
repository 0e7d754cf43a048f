//! The `script` agent: scenarios from a JSON file, matched on method, text or message-id
//! prefix, each a list of steps with optional delays. Operators use it to test their clients
//! against every shape a real agent produces; the gateway's own tests use it everywhere.
//!
//! The format is documented in `gateway/README.md`; `gateway/tests/data/script.json` is a
//! complete example.

use std::borrow::Cow;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use futures_util::StreamExt;
use parking_lot::Mutex;
use std::time::Duration;

use e2a::a2a::stream::{data_part, text_part};
use e2a::frame::Frame;
use e2a::response::body_map;
use e2a::stream::ResponseStream;
use e2a::taxonomy::ErrorKind;
use e2a::types::{A2aMessage, A2aPart, ArtifactDelta, ArtifactKind, PauseKind, PlanApprovalRequiredBody};
use e2a::E2AEnvelope;
use serde_json::{Map, Value};

mod format;

pub use format::{Action, Match, Misbehaviour, Scenario, Script, Step};

use crate::agent::{Agent, ConversationKey, FrameStream, RequestContext, SharedFrames};
use crate::maps::HashMap;

/// What the script agent has done, for tests and operators.
#[derive(Debug, Default)]
pub struct ScriptStats {
    started: AtomicU64,
    finished: AtomicU64,
    cancelled: AtomicU64,
}

impl ScriptStats {
    /// Runs started.
    pub fn started(&self) -> u64 {
        self.started.load(Ordering::SeqCst)
    }
    /// Runs that sent their last step.
    pub fn finished(&self) -> u64 {
        self.finished.load(Ordering::SeqCst)
    }
    /// Runs stopped before their last step (client gone, deadline, shutdown).
    pub fn cancelled(&self) -> u64 {
        self.cancelled.load(Ordering::SeqCst)
    }
}

/// A paused scenario waiting for its follow-up (kept in the gateway's store instead, when it has
/// one: JSON under the conversation's [`ConversationKey::pause_key`]).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct Paused {
    rest: Vec<Step>,
    on_deny: Option<Vec<Step>>,
    input: String,
}

/// Errors loading a script.
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    /// The file cannot be read.
    #[error("cannot read script {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not a valid script.
    #[error("invalid script {path}: {source}")]
    Invalid {
        /// The file.
        path: String,
        /// Why.
        source: serde_json::Error,
    },
}

/// The script agent (see the module docs).
#[derive(Debug, Clone)]
pub struct ScriptAgent {
    script: Arc<Script>,
    paused: Arc<Mutex<HashMap<ConversationKey, Paused>>>,
    stats: Arc<ScriptStats>,
}

impl ScriptAgent {
    /// An agent running `script`.
    pub fn new(script: Script) -> Self {
        ScriptAgent {
            script: Arc::new(script),
            paused: Arc::default(),
            stats: Arc::default(),
        }
    }

    /// Reads a script from JSON text.
    pub fn from_json(text: &str) -> Result<Self, serde_json::Error> {
        Ok(Self::new(serde_json::from_str(text)?))
    }

    /// Reads a script file.
    pub fn from_file(path: &Path) -> Result<Self, ScriptError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ScriptError::Io {
            path: shown.clone(),
            source,
        })?;
        Self::from_json(&text).map_err(|source| ScriptError::Invalid { path: shown, source })
    }

    /// Counters of runs started, finished and cancelled.
    pub fn stats(&self) -> Arc<ScriptStats> {
        self.stats.clone()
    }

    fn pick(&self, request: &E2AEnvelope, text: &str) -> Option<&Scenario> {
        let lower = text.to_lowercase();
        self.script.scenarios.iter().find(|s| {
            let m = &s.when;
            m.method
                .as_ref()
                .is_none_or(|x| request.method.as_deref() == Some(x.as_str()))
                && m.text.as_ref().is_none_or(|x| lower.contains(&x.to_lowercase()))
                && m.message_id_prefix.as_ref().is_none_or(|p| {
                    request
                        .message_id
                        .as_deref()
                        .is_some_and(|id| id.starts_with(p.as_str()))
                })
        })
    }
}

fn task_key(request: &E2AEnvelope) -> Option<String> {
    request
        .task_id
        .clone()
        .or_else(|| request.context_id.clone())
        .or_else(|| request.session_id.clone())
}

fn is_denial(answer: &str) -> bool {
    matches!(
        answer.trim().to_lowercase().as_str(),
        "no" | "n" | "deny" | "denied" | "reject" | "rejected"
    )
}

/// Counts a run as cancelled when its stream is dropped before the last step.
struct RunGuard {
    stats: Arc<ScriptStats>,
    done: bool,
}

impl Drop for RunGuard {
    fn drop(&mut self) {
        let counter = if self.done {
            &self.stats.finished
        } else {
            tracing::info!("script run cancelled before its last step");
            &self.stats.cancelled
        };
        counter.fetch_add(1, Ordering::SeqCst);
    }
}

fn split_chars(text: &str, size: Option<usize>) -> Vec<String> {
    let size = size.unwrap_or(0);
    if size == 0 || text.is_empty() {
        return vec![text.to_string()];
    }
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

fn artifact_parts(kind: ArtifactKind, a: &ArtifactFields<'_>) -> Vec<Map<String, Value>> {
    // a file's part says what it holds and what it is called
    let file = |part: A2aPart| A2aPart {
        media_type: a.media_type.map(String::from),
        filename: a.name.map(String::from),
        ..part
    };
    let parts: Vec<A2aPart> = match kind {
        ArtifactKind::Text => split_chars(a.text.unwrap_or(""), a.chunk_size)
            .into_iter()
            .map(text_part)
            .collect(),
        ArtifactKind::File => {
            // base64 pieces stay decodable on their own: multiples of 4 characters
            let size = a.chunk_size.map(|s| s.max(4) / 4 * 4);
            split_chars(a.bytes_base64.unwrap_or(""), size)
                .into_iter()
                .map(|b| {
                    file(A2aPart {
                        raw: Some(b),
                        ..A2aPart::default()
                    })
                })
                .collect()
        }
        ArtifactKind::FileUrl => vec![file(A2aPart {
            url: Some(a.url.unwrap_or("").into()),
            ..A2aPart::default()
        })],
        ArtifactKind::Data => match (a.data, a.chunk_size) {
            (Some(Value::Array(items)), Some(n)) if n > 0 && !items.is_empty() => {
                items.chunks(n).map(|c| data_part(Value::Array(c.to_vec()))).collect()
            }
            (d, _) => vec![data_part(d.cloned().unwrap_or(Value::Null))],
        },
    };
    parts.iter().map(body_map).collect()
}

struct ArtifactFields<'a> {
    name: Option<&'a str>,
    media_type: Option<&'a str>,
    text: Option<&'a str>,
    bytes_base64: Option<&'a str>,
    url: Option<&'a str>,
    data: Option<&'a Value>,
    chunk_size: Option<usize>,
}

/// Runs steps into frames. Returns `None` when a step ended the run (final frame sent or
/// deliberately none).
struct Runner {
    stream: Option<ResponseStream>,
    frames: Vec<Arc<Frame>>,
    text: String,
    input: String,
    answer: String,
    artifacts: usize,
}

impl ScriptAgent {
    /// The pause of conversation `key`, taken: from this process's memory, else from the
    /// gateway's store (a pause asked before a restart, or on another gateway). The stored
    /// copy goes either way.
    async fn resumed(&self, key: &ConversationKey, ctx: &RequestContext) -> Option<Paused> {
        let held = self.paused.lock().remove(key);
        let Some(store) = ctx.pauses() else { return held };
        match (held, store.take_pause(&key.pause_key()).await) {
            (Some(p), _) => Some(p),
            (None, Ok(Some(text))) => serde_json::from_str(&text)
                .map_err(|e| tracing::error!(error = %e, "a stored pause cannot be read: the request runs afresh"))
                .ok(),
            (None, Ok(None)) => None,
            (None, Err(e)) => {
                tracing::error!(error = %e, "cannot read the stored pause: the request runs afresh");
                None
            }
        }
    }

    /// What a request runs: the rest of the pause it answers (its `on_deny` steps when the
    /// answer denies), else the first scenario that matches (`None`: none does) — the steps,
    /// the scenario's name, the text `{input}` stands for and the answer `{answer}` stands for.
    fn plan(
        &self,
        resumed: Option<Paused>,
        request: &E2AEnvelope,
        text: &str,
    ) -> Option<(Cow<'_, [Step]>, String, String, String)> {
        let Some(p) = resumed else {
            // (the scenario's steps as the script holds them: a run takes them one by one)
            let s = self.pick(request, text)?;
            return Some((Cow::Borrowed(&s.steps), s.name.clone(), text.to_string(), String::new()));
        };
        let steps = match p.on_deny {
            Some(deny) if is_denial(text) && deny.is_empty() => vec![Step {
                delay_ms: 0,
                action: Action::Reject {
                    message: "the user denied approval".into(),
                },
            }],
            Some(deny) if is_denial(text) => deny,
            _ => p.rest,
        };
        Some((Cow::Owned(steps), "resumed".to_string(), p.input, text.to_string()))
    }

    /// Holds `paused` for conversation `key` (before the pause's frames go out: an answer may
    /// follow at once): in the gateway's store when it has one — there alone, so that an
    /// answer on another gateway takes it for every gateway — else, or when the store fails,
    /// in this process's memory.
    async fn keep(&self, key: ConversationKey, paused: Paused, ctx: &RequestContext) {
        if let Some(store) = ctx.pauses() {
            let kept = match serde_json::to_string(&paused) {
                Ok(text) => store.put_pause(&key.pause_key(), text).await,
                Err(e) => Err(crate::agent::PauseError(e.to_string())),
            };
            match kept {
                Ok(()) => return,
                Err(e) => tracing::warn!(error = %e, "cannot store a pause: it lives in this process only"),
            }
        }
        self.paused.lock().insert(key, paused);
    }
}

impl Agent for ScriptAgent {
    fn run(&self, request: E2AEnvelope, ctx: RequestContext) -> FrameStream {
        Box::pin(self.run_shared(request, ctx).map(Arc::unwrap_or_clone))
    }

    /// The frames, made shared (each moves as a pointer from here on).
    fn run_shared(&self, request: E2AEnvelope, ctx: RequestContext) -> SharedFrames {
        let this = self.clone();
        Box::pin(async_stream::stream! {
            this.stats.started.fetch_add(1, Ordering::SeqCst);
            let mut guard = RunGuard { stats: this.stats.clone(), done: false };
            let text = super::request_text(&request);
            let key = task_key(&request).map(|k| ctx.conversation(k));
            let resumed = match &key {
                Some(k) => this.resumed(k, &ctx).await,
                None => None,
            };
            let Some((steps, name, input, answer)) = this.plan(resumed, &request, &text) else {
                let s = ResponseStream::for_request(&request);
                guard.done = true;
                yield Arc::new(s.fail(ErrorKind::NotFound.mapping().e2a_code, "no scenario of the script matches this request", Map::new()));
                return;
            };
            tracing::debug!(scenario = %name, "script scenario");
            let mut r = Runner { stream: Some(ctx.frames_for(&request)), frames: Vec::new(), text: String::new(), input, answer, artifacts: 0 };
            let mut steps = steps.iter();
            while let Some(step) = steps.next() {
                if step.delay_ms > 0 {
                    tokio::time::sleep(Duration::from_millis(step.delay_ms)).await;
                }
                if let Action::Sleep { ms } = step.action {
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                    continue;
                }
                if let Action::Text { text, chunk_size } = &step.action {
                    // a text step's chunks are made one by one as they are taken: a long
                    // answer is never held whole as frames
                    let text = r.fill(text);
                    let Some(s) = r.stream.as_mut() else { return };
                    for piece in split_chars(&text, *chunk_size) {
                        yield Arc::new(s.text(&piece));
                    }
                    r.text.push_str(&text);
                    continue;
                }
                let pause = match &step.action {
                    Action::InputRequired { .. } => Some(None),
                    Action::Approval { on_deny, .. } => Some(Some(on_deny.clone())),
                    _ => None,
                };
                let go_on = r.step(&request, &step.action);
                // the pause is held before its frames go out: an answer may follow at once
                if let (Some(on_deny), Some(k)) = (pause, key.clone()) {
                    let rest: Vec<Step> = steps.by_ref().cloned().collect();
                    this.keep(k, Paused { rest, on_deny, input: r.input.clone() }, &ctx).await;
                }
                for f in r.frames.drain(..) {
                    yield f;
                }
                if !go_on {
                    guard.done = true;
                    return;
                }
            }
            if let Some(s) = r.stream.take() {
                yield Arc::new(s.answer(&r.text, None));
            }
            guard.done = true;
        })
    }

    fn name(&self) -> String {
        "script".into()
    }

    /// The pauses a script holds in this process's memory (with a store they are there
    /// instead, and the gateway looks there before it refuses an answer).
    fn holds_pause(&self, key: &ConversationKey) -> Option<bool> {
        Some(self.paused.lock().contains_key(key))
    }
}

impl Runner {
    fn fill(&self, t: &str) -> String {
        if !t.contains('{') {
            // no placeholder: copied once, not scanned and copied per placeholder
            return t.to_string();
        }
        let t = t.replace("{input}", &self.input).replace("{answer}", &self.answer);
        if t.contains("{now_us}") {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_micros())
                .unwrap_or(0);
            t.replace("{now_us}", &now.to_string())
        } else {
            t
        }
    }

    /// Runs one step; `false` when it ended the run.
    fn step(&mut self, request: &E2AEnvelope, action: &Action) -> bool {
        let Some(mut stream) = self.stream.take() else {
            return false;
        };
        let s = &mut stream;
        match action {
            // streamed by the run, chunk by chunk
            Action::Text { .. } => {}
            Action::Reasoning { text } => {
                let text = self.fill(text);
                self.frames.push(Arc::new(s.reasoning(&text)));
            }
            Action::ToolCall {
                id,
                name,
                arguments,
                result,
            } => {
                self.frames.push(Arc::new(s.tool_call(id, name, arguments.clone())));
                if let Some(res) = result {
                    self.frames.push(Arc::new(s.tool_result(id, res.clone())));
                }
            }
            Action::Artifact {
                kind,
                id,
                name,
                media_type,
                text,
                bytes_base64,
                url,
                data,
                chunk_size,
            } => {
                let fields = ArtifactFields {
                    name: name.as_deref(),
                    media_type: media_type.as_deref(),
                    text: text.as_deref(),
                    bytes_base64: bytes_base64.as_deref(),
                    url: url.as_deref(),
                    data: data.as_ref(),
                    chunk_size: *chunk_size,
                };
                self.artifact(s, *kind, id.clone(), &fields);
            }
            Action::InputRequired { .. }
            | Action::Approval { .. }
            | Action::Message { .. }
            | Action::Reject { .. }
            | Action::Fail { .. }
            | Action::Complete { .. } => {
                self.finish(stream, request, action);
                return false;
            }
            Action::Sleep { .. } => {}
            Action::Misbehave { how } => return self.misbehave(stream, *how),
        }
        self.stream = Some(stream);
        true
    }

    /// The pieces of one artifact, as artifact chunks.
    fn artifact(
        &mut self,
        s: &mut ResponseStream,
        kind: ArtifactKind,
        id: Option<String>,
        fields: &ArtifactFields<'_>,
    ) {
        self.artifacts += 1;
        let id = id.unwrap_or_else(|| format!("artifact-{}", self.artifacts));
        let parts = artifact_parts(kind, fields);
        let n = parts.len();
        for (i, part) in parts.into_iter().enumerate() {
            let piece = ArtifactDelta {
                artifact_id: id.clone(),
                name: fields.name.map(String::from),
                kind: Some(kind),
                parts: vec![part],
                append: i > 0,
                last_chunk: i + 1 == n,
                extra: Map::new(),
            };
            self.frames.push(Arc::new(s.artifact(&piece)));
        }
    }

    /// A step that ends the run: a pause, a direct reply, a rejection, a failure or the end.
    fn finish(&mut self, stream: ResponseStream, request: &E2AEnvelope, action: &Action) {
        match action {
            Action::InputRequired { prompt, also_ask } | Action::Approval { prompt, also_ask, .. } => {
                let kind = if matches!(action, Action::Approval { .. }) {
                    PauseKind::Approval
                } else {
                    PauseKind::Input
                };
                let resumable = task_key(request).is_some();
                let asked = std::iter::once(prompt)
                    .chain(also_ask)
                    .map(|p| PlanApprovalRequiredBody::asking(kind, &self.fill(p), resumable))
                    .collect();
                self.frames.extend(stream.pause_all(asked).into_iter().map(Arc::new));
            }
            Action::Message { text } => {
                let text = self.fill(text);
                let message = A2aMessage {
                    context_id: request.context_id.clone(),
                    task_id: None,
                    ..A2aMessage::agent(e2a::stream::new_id(), "", "", vec![text_part(text.as_str())])
                };
                self.frames
                    .extend(stream.reply(body_map(&message), &text).map(Arc::new));
            }
            Action::Reject { message } => {
                let message = self.fill(message);
                self.frames.push(Arc::new(stream.refuse(&message)));
            }
            Action::Fail { code, message } => {
                let message = self.fill(message);
                let code = code
                    .clone()
                    .unwrap_or_else(|| ErrorKind::AgentError.mapping().e2a_code.into());
                self.frames.push(Arc::new(stream.fail(&code, &message, Map::new())));
            }
            Action::Complete { result: Some(result) } => self.frames.push(Arc::new(stream.complete(result.clone()))),
            Action::Complete { result: None } => self.frames.push(Arc::new(stream.answer(&self.text, None))),
            _ => self.frames.push(Arc::new(stream.answer(&self.text, None))),
        }
    }

    fn misbehave(&mut self, mut s: ResponseStream, how: Misbehaviour) -> bool {
        match how {
            Misbehaviour::Gap => {
                let _skipped = s.text("(never sent)");
                self.frames.push(Arc::new(s.text("after a gap")));
                self.stream = Some(s);
                true
            }
            Misbehaviour::Duplicate => {
                let f = Arc::new(s.text("twice"));
                self.frames.push(f.clone());
                self.frames.push(f);
                self.stream = Some(s);
                true
            }
            Misbehaviour::SecondFinal => {
                let fin = s.answer(&self.text, None);
                let mut again = fin.clone();
                again.sequence = fin.sequence.saturating_add(1);
                again.response_id = Some(e2a::stream::new_id());
                self.frames.push(Arc::new(fin));
                self.frames.push(Arc::new(again));
                false
            }
            Misbehaviour::NoFinal => false,
            Misbehaviour::WrongRequest => {
                let mut f = s.text("for someone else");
                let other = format!("{}-other", f.head.request_id.as_deref().unwrap_or_default());
                f.head.make_mut().request_id = Some(other);
                self.frames.push(Arc::new(f));
                self.stream = Some(s);
                true
            }
        }
    }
}
