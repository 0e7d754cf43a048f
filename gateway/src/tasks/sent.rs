//! Idempotent delivery: what a caller sent is remembered in the store (by `messageId` — on a
//! send naming a task, or on every send with `[a2a] message_ids = "always"` — and by
//! `Idempotency-Key` on the HTTP bindings) with a fingerprint of its content, so that a retry
//! gets the task the first send started — without running the agent again — and other content
//! under the same key is refused.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;

use super::error::{A2aError, A2aErrorKind};
use super::SendParams;
use crate::agent::Caller;
use crate::store::{self, now_ms, Sends, SentRecord};

/// [`fingerprint`] of an object.
pub(crate) fn fingerprint_object(m: &serde_json::Map<String, Value>) -> String {
    let mut text = Vec::new();
    canonical_object(m, &mut text);
    crate::web::hmac::content_sha256(&text)
}

/// The SHA-256 (hex) of `v`'s canonical JSON: object keys sorted at every level, no
/// whitespace, so that the same content written in another key order is the same content.
pub(crate) fn fingerprint(v: &Value) -> String {
    let mut text = Vec::new();
    canonical(v, &mut text);
    crate::web::hmac::content_sha256(&text)
}

/// `v` as canonical JSON: keys sorted at every level, no whitespace; strings and numbers as
/// `serde_json` writes them.
fn canonical(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::Object(m) => canonical_object(m, out),
        Value::Array(a) => {
            out.push(b'[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                canonical(x, out);
            }
            out.push(b']');
        }
        // writing a scalar into a Vec cannot fail
        other => {
            let _ = serde_json::to_writer(&mut *out, other);
        }
    }
}

fn canonical_object(m: &serde_json::Map<String, Value>, out: &mut Vec<u8>) {
    let mut entries: Vec<(&String, &Value)> = m.iter().collect();
    entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
    out.push(b'{');
    for (i, (k, v)) in entries.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let _ = serde_json::to_writer(&mut *out, k);
        out.push(b':');
        canonical(v, out);
    }
    out.push(b'}');
}

/// What the store says of a send.
enum Delivery {
    /// Not sent before (or its task is no longer kept): run it.
    New,
    /// Sent before with the same content: its task.
    Repeat(String),
    /// Sent before with other content: the task of that send.
    Conflict(String),
}

/// The sends callers already made, as the store remembers them (`sends`), and the task log
/// (`tasks`) that says whether the task a send started is still kept.
pub(crate) struct PastSends {
    sends: Arc<dyn Sends>,
    tasks: Arc<dyn store::TaskLog>,
}

impl PastSends {
    /// The sends `sends` remembers, of the tasks `tasks` keeps.
    pub(super) fn new(sends: Arc<dyn Sends>, tasks: Arc<dyn store::TaskLog>) -> Self {
        PastSends { sends, tasks }
    }

    /// Remembers that `caller` sent `key` (`message:<messageId>`, `key:<Idempotency-Key>`)
    /// with content `fingerprint`, for task `task_id`: a new send, the task of the same send
    /// made before, or a conflict when the key was sent with other content.
    async fn deliver_once(
        &self,
        caller: &Caller,
        key: String,
        fingerprint: String,
        task_id: &str,
    ) -> Result<Delivery, A2aError> {
        let record = SentRecord {
            owner: caller.owner().unwrap_or_default(),
            key,
            fingerprint,
            task_id: task_id.to_string(),
            at_ms: now_ms(),
        };
        let Some(first) = self.sends.remember_send(record.clone()).await? else {
            return Ok(Delivery::New);
        };
        if first.fingerprint != record.fingerprint {
            return Ok(Delivery::Conflict(first.task_id));
        }
        // a first send answered by a direct reply made no task, and a forgotten task is gone:
        // the send runs again
        match self.tasks.get(&first.task_id).await? {
            Some(_) => Ok(Delivery::Repeat(first.task_id)),
            None => Ok(Delivery::New),
        }
    }
}

/// The keys a send is remembered by, with the fingerprint of what each covers.
pub(crate) struct SendKeys {
    /// `Idempotency-Key` and the whole request's fingerprint.
    idempotency: Option<(String, String)>,
    /// `messageId` and the message's fingerprint.
    message: Option<(String, String)>,
}

impl SendKeys {
    /// The keys of send `p`, read before it is decoded (the content as it came): its
    /// `Idempotency-Key`, and its `messageId` where `dedup` says a send is remembered by it
    /// (`task`: a send naming a task; `always`: every send).
    pub(crate) fn of(p: &SendParams, dedup: e2a::types::MessageIdDedup) -> Self {
        /// The ids of a send's message, as it came.
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Ids<'a> {
            #[serde(borrow, default)]
            message_id: Option<std::borrow::Cow<'a, str>>,
            #[serde(borrow, default)]
            task_id: Option<std::borrow::Cow<'a, str>>,
        }
        let message = e2a::read::member(&p.params, "message");
        let ids = message.and_then(|m| Ids::deserialize(m).ok());
        let remembered = dedup == e2a::types::MessageIdDedup::Always
            || ids
                .as_ref()
                .and_then(|i| i.task_id.as_deref())
                .is_some_and(|t| !t.is_empty());
        SendKeys {
            idempotency: p
                .cx
                .idempotency_key
                .as_ref()
                .map(|k| (k.clone(), fingerprint_object(&p.params))),
            message: ids
                .and_then(|i| i.message_id)
                .filter(|id| remembered && !id.is_empty())
                .zip(message)
                .map(|(id, m)| (id.to_string(), fingerprint(m))),
        }
    }
}

impl PastSends {
    /// The task of the same send made before by `caller` (same key, same content), read
    /// without remembering anything: for a send refused as it stands (an answer to a pause
    /// that its first sending already answered). Other content under a key is refused as in
    /// [`PastSends::repeated`].
    pub(super) async fn sent_before(&self, caller: &Caller, keys: &SendKeys) -> Result<Option<String>, A2aError> {
        let owner = caller.owner().unwrap_or_default();
        let checks = [
            keys.idempotency.as_ref().map(|(k, f)| (Key::Idempotency(k), f)),
            keys.message.as_ref().map(|(m, f)| (Key::Message(m), f)),
        ];
        for (key, content) in checks.into_iter().flatten() {
            let Some(first) = self.sends.find_send(&owner, &key.stored()).await? else {
                continue;
            };
            if first.fingerprint != *content {
                return Err(key.conflict(&first.task_id));
            }
            if self.tasks.get(&first.task_id).await?.is_some() {
                return Ok(Some(first.task_id));
            }
        }
        Ok(None)
    }

    /// The idempotency checks of a send of `caller` about to start a turn on `task_id`: its
    /// `Idempotency-Key` (the whole request; another request under it is a conflict, `409` on
    /// HTTP), then its `messageId` (the message; other content is `InvalidRequest`).
    /// `Some(task)`: the same send was made before.
    pub(super) async fn repeated(
        &self,
        caller: &Caller,
        keys: &SendKeys,
        task_id: &str,
    ) -> Result<Option<String>, A2aError> {
        let checks = [
            keys.idempotency.as_ref().map(|(k, f)| (Key::Idempotency(k), f)),
            keys.message.as_ref().map(|(m, f)| (Key::Message(m), f)),
        ];
        for (key, content) in checks.into_iter().flatten() {
            match self
                .deliver_once(caller, key.stored(), content.clone(), task_id)
                .await?
            {
                Delivery::New => {}
                Delivery::Repeat(id) => return Ok(Some(id)),
                Delivery::Conflict(first) => return Err(key.conflict(&first)),
            }
        }
        Ok(None)
    }
}

/// A key a send is remembered by.
enum Key<'a> {
    /// Its `Idempotency-Key` (the whole request).
    Idempotency(&'a str),
    /// Its `messageId` (the message).
    Message(&'a str),
}

impl Key<'_> {
    /// The key as the store keeps it.
    fn stored(&self) -> String {
        match self {
            Key::Idempotency(k) => format!("key:{k}"),
            Key::Message(m) => format!("message:{m}"),
        }
    }

    /// Other content under this key, first sent to task `first`: another request under an
    /// `Idempotency-Key` is a conflict (`409` on HTTP), another message under a `messageId`
    /// is `InvalidRequest`.
    fn conflict(&self, first: &str) -> A2aError {
        match self {
            Key::Idempotency(k) => A2aError::new(
                A2aErrorKind::InvalidRequest,
                format!("Idempotency-Key {k} was already used for another request (task {first})"),
            )
            // a conflict with what was sent before: `409` on the HTTP bindings (`ABORTED`)
            .with_status(axum::http::StatusCode::CONFLICT),
            Key::Message(m) => A2aError::new(
                A2aErrorKind::InvalidRequest,
                format!("messageId {m} was already sent with other content (task {first})"),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fingerprint;
    use serde_json::json;

    #[test]
    fn the_fingerprint_ignores_key_order_not_content() {
        let a = json!({"messageId": "m", "parts": [{"text": "hi", "kind": "text"}], "role": "ROLE_USER"});
        let b = json!({"role": "ROLE_USER", "parts": [{"kind": "text", "text": "hi"}], "messageId": "m"});
        let c = json!({"role": "ROLE_USER", "parts": [{"kind": "text", "text": "hi!"}], "messageId": "m"});
        assert_eq!(fingerprint(&a), fingerprint(&b));
        assert_ne!(fingerprint(&a), fingerprint(&c));
        assert_eq!(fingerprint(&a).len(), 64);
    }
}
