//! The script file's format: scenarios, their match and their steps (serde, unknown fields
//! refused). `gateway/README.md` documents it; `gateway/tests/data/script.json` is an example.

use e2a::types::ArtifactKind;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A script file: scenarios tried in order; the first that matches answers.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// The scenarios, tried in order.
    pub scenarios: Vec<Scenario>,
}

/// One scenario: when it applies and what it answers.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// A name for logs and results.
    #[serde(default)]
    pub name: String,
    /// When it applies (every given condition must hold; none given matches everything).
    #[serde(default, rename = "match")]
    pub when: Match,
    /// What it answers, in order.
    pub steps: Vec<Step>,
}

/// Conditions on a request.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Match {
    /// The envelope's `method`, exactly.
    pub method: Option<String>,
    /// A substring of the request's text (case-insensitive).
    pub text: Option<String>,
    /// A prefix of the envelope's `message_id`.
    pub message_id_prefix: Option<String>,
}

/// Misbehaviours, to test clients and the gateway's boundary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Misbehaviour {
    /// Skips a sequence number.
    Gap,
    /// Sends the same frame twice.
    Duplicate,
    /// Sends a second final frame after a complete one.
    SecondFinal,
    /// Ends the stream without a final frame.
    NoFinal,
    /// Sends a frame carrying another request's id.
    WrongRequest,
}

/// One step of a scenario. Every step may wait `delay_ms` before it runs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Step {
    /// Milliseconds to wait before this step.
    #[serde(default)]
    pub delay_ms: u64,
    /// What the step does.
    #[serde(flatten)]
    pub action: Action,
}

/// What a step does. `{input}` in texts is replaced by the request's text, `{answer}` by the
/// text of the follow-up that answered a pause, and `{now_us}` by the time the step runs
/// (microseconds since the Unix epoch: load tests measure delivery latency with it).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Action {
    /// Text chunks (`chunk_size` characters each; whole when absent).
    Text {
        /// The text.
        text: String,
        /// Characters per chunk.
        chunk_size: Option<usize>,
    },
    /// A reasoning chunk.
    Reasoning {
        /// The text.
        text: String,
    },
    /// A tool call, and its result when `result` is given.
    ToolCall {
        /// Tool call id.
        id: String,
        /// Tool name.
        name: String,
        /// Arguments.
        #[serde(default)]
        arguments: Value,
        /// The result, sent as a second frame.
        result: Option<Value>,
    },
    /// An artifact, whole or in chunks.
    Artifact {
        /// The kind.
        kind: ArtifactKind,
        /// Artifact id (default `artifact-<n>`).
        id: Option<String>,
        /// File or artifact name.
        name: Option<String>,
        /// Media type.
        media_type: Option<String>,
        /// `text` kind: the text.
        text: Option<String>,
        /// `file` kind: the content, base64.
        bytes_base64: Option<String>,
        /// `file_url` kind: where the file is.
        url: Option<String>,
        /// `data` kind: the data (an array is chunked by elements).
        data: Option<Value>,
        /// Characters (text, base64) or elements (data array) per chunk.
        chunk_size: Option<usize>,
    },
    /// Waits for more input: a follow-up with the same `task_id` (or `context_id`, or
    /// `session_id`) continues with the next step.
    InputRequired {
        /// What the agent asks.
        prompt: String,
        /// More questions asked in the same pause, each its own `plan.approval_required`
        /// frame (an AG-UI interrupt each; every one must be answered). `{answer}` is then the
        /// answers, one per line.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        also_ask: Vec<String>,
    },
    /// Waits for approval: a follow-up answering `no`, `deny` or `reject` runs `on_deny`
    /// (default: a rejection); any other answer continues with the next step.
    Approval {
        /// What is to be approved.
        prompt: String,
        /// More approvals asked in the same pause, each its own `plan.approval_required`
        /// frame (an AG-UI interrupt each): a denial of any runs `on_deny`.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        also_ask: Vec<String>,
        /// Steps run when the answer denies.
        #[serde(default)]
        on_deny: Vec<Step>,
    },
    /// A direct message reply instead of a task: an `a2a.message` frame, then completion.
    Message {
        /// The reply text.
        text: String,
    },
    /// Rejects the request (`E2A.INVALID_REQUEST`, A2A rejected).
    Reject {
        /// Why.
        message: String,
    },
    /// Fails the run.
    Fail {
        /// E2A error code (default `E2A.AGENT_ERROR`).
        code: Option<String>,
        /// What went wrong.
        message: String,
    },
    /// Completes the run with `result` (default: `{"content": <all text sent>}`).
    Complete {
        /// The result object.
        result: Option<Value>,
    },
    /// Waits `ms` milliseconds.
    Sleep {
        /// Milliseconds.
        ms: u64,
    },
    /// Breaks the stream invariants on purpose.
    Misbehave {
        /// How.
        how: Misbehaviour,
    },
}
