//! The listening connection: what other instances sharing the database do, as
//! [`StoreNotice`]s.

use std::time::Duration;

use futures_util::StreamExt;
use tokio::sync::broadcast;
use tokio_postgres::AsyncMessage;

use tokio_postgres_rustls::MakeRustlsConnect;
use tokio_util::sync::CancellationToken;

use super::{pg_error, CANCELS_CHANNEL, EVENTS_CHANNEL, FRAMES_CHANNEL};
use crate::store::StoreNotice;

/// The listening connection: reconnects (after 100 ms, doubling up to 5 s) until `stop`.
pub(super) async fn listen(
    config: tokio_postgres::Config,
    tls: MakeRustlsConnect,
    notices: broadcast::Sender<StoreNotice>,
    instance: String,
    stop: CancellationToken,
) {
    let mut backoff = Duration::from_millis(100);
    loop {
        let connected = tokio::select! {
            c = config.connect(tls.clone()) => c,
            () = stop.cancelled() => return,
        };
        match connected {
            Ok((client, mut connection)) => {
                let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
                let driver = tokio::spawn(async move {
                    let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
                    while let Some(message) = messages.next().await {
                        match message {
                            Ok(AsyncMessage::Notification(n)) => {
                                if tx.send(n).is_err() {
                                    return;
                                }
                            }
                            Ok(_) => {}
                            Err(e) => {
                                tracing::warn!(error = %pg_error(&e), "task store: listening connection lost");
                                return;
                            }
                        }
                    }
                });
                let listening = client
                    .batch_execute(&format!(
                        "LISTEN {EVENTS_CHANNEL}; LISTEN {CANCELS_CHANNEL}; LISTEN {FRAMES_CHANNEL}"
                    ))
                    .await;
                match listening {
                    Ok(()) => {
                        backoff = Duration::from_millis(100);
                        loop {
                            let n = tokio::select! {
                                n = rx.recv() => n,
                                () = stop.cancelled() => { driver.abort(); return; }
                            };
                            let Some(n) = n else { break };
                            if let Some(notice) = parse_notice(n.channel(), n.payload(), &instance) {
                                let _ = notices.send(notice);
                            }
                        }
                    }
                    Err(e) => tracing::warn!(error = %pg_error(&e), "task store: cannot LISTEN"),
                }
                driver.abort();
            }
            Err(e) => tracing::warn!(error = %pg_error(&e), "task store: cannot open the listening connection"),
        }
        tokio::select! {
            () = tokio::time::sleep(backoff) => {}
            () = stop.cancelled() => return,
        }
        backoff = (backoff * 2).min(Duration::from_secs(5));
    }
}

/// A notification's payload: `t` the task (`k` a run's key), `i` the instance that sent it,
/// `s` and `e` an appended event's (or the last frame's) number and JSON (`e` is left out when
/// it would not fit; a run's frames never come along).
#[derive(serde::Deserialize)]
struct Payload<'a> {
    #[serde(default)]
    t: String,
    #[serde(default)]
    k: String,
    #[serde(default, borrow)]
    i: Option<std::borrow::Cow<'a, str>>,
    s: Option<u64>,
    #[serde(default, borrow)]
    e: Option<&'a serde_json::value::RawValue>,
}

/// A notice from a notification (`None`: this instance's own event, or not ours to read).
pub(super) fn parse_notice(channel: &str, payload: &str, instance: &str) -> Option<StoreNotice> {
    let p: Payload<'_> = serde_json::from_str(payload).ok()?;
    match channel {
        EVENTS_CHANNEL => {
            if p.i.as_deref() == Some(instance) {
                return None;
            }
            Some(StoreNotice::Appended {
                task_id: p.t,
                seq: p.s?,
                event: p.e.map(|e| e.get().into()),
            })
        }
        CANCELS_CHANNEL if !p.k.is_empty() => Some(StoreNotice::RunCancelRequested { key: p.k }),
        CANCELS_CHANNEL => Some(StoreNotice::CancelRequested { task_id: p.t }),
        FRAMES_CHANNEL if p.i.as_deref() != Some(instance) => Some(StoreNotice::Framed { key: p.k, seq: p.s? }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notices_skip_our_own_events_and_read_cancels() {
        let ev = r#"{"i":"me","t":"task-1","s":3,"e":{"statusUpdate":{}}}"#;
        assert_eq!(parse_notice(EVENTS_CHANNEL, ev, "me"), None);
        assert_eq!(
            parse_notice(EVENTS_CHANNEL, ev, "other"),
            Some(StoreNotice::Appended {
                task_id: "task-1".into(),
                seq: 3,
                event: Some(r#"{"statusUpdate":{}}"#.into())
            })
        );
        assert_eq!(
            parse_notice(EVENTS_CHANNEL, r#"{"i":"x","t":"task-1","s":4}"#, "me"),
            Some(StoreNotice::Appended {
                task_id: "task-1".into(),
                seq: 4,
                event: None
            })
        );
        assert_eq!(
            parse_notice(CANCELS_CHANNEL, r#"{"i":"me","t":"task-1"}"#, "me"),
            Some(StoreNotice::CancelRequested {
                task_id: "task-1".into()
            })
        );
        assert_eq!(parse_notice(EVENTS_CHANNEL, "not json", "me"), None);
        // a run's frames: another instance's wake its followers here; our own do not come back
        let framed = r#"{"i":"x","k":"5:alice:e2a:r1","s":7}"#;
        assert_eq!(
            parse_notice(FRAMES_CHANNEL, framed, "me"),
            Some(StoreNotice::Framed {
                key: "5:alice:e2a:r1".into(),
                seq: 7
            })
        );
        assert_eq!(parse_notice(FRAMES_CHANNEL, framed, "x"), None);
        // a run's cancel, a task's cancel: told apart by what they name
        assert_eq!(
            parse_notice(CANCELS_CHANNEL, r#"{"i":"me","k":"5:alice:e2a:r1"}"#, "me"),
            Some(StoreNotice::RunCancelRequested {
                key: "5:alice:e2a:r1".into()
            })
        );
    }
}
