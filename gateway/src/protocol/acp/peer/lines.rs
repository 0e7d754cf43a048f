//! The peer's two tasks: the writer (each message one line, flushed at once) and the reader
//! (lines of at most [`MAX_LINE`] bytes, each dispatched; unreadable ones answered or, quiet,
//! logged).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use super::{Flow, Out, Peer, PeerOptions, HIGH_WATER, QUIET_LOG_EVERY};
use crate::protocol::acp::message::{codes, Incoming, RpcError, MAX_LINE};

/// The writing task: writes every queued line (flushed at once) until the output closes or the
/// peer asks to close it, waking [`Peer::writable`] as the queue falls below [`HIGH_WATER`].
pub(super) async fn write_lines<W: AsyncWrite + Unpin>(
    mut writer: W,
    mut out_rx: mpsc::UnboundedReceiver<Out>,
    flow: Arc<Flow>,
) {
    while let Some(out) = out_rx.recv().await {
        match out {
            Out::Line(line) => {
                let written = writer.write_all(line.as_bytes()).await.is_ok() && writer.flush().await.is_ok();
                let before = flow.queued.fetch_sub(line.len(), Ordering::SeqCst);
                if before >= HIGH_WATER && before - line.len() < HIGH_WATER {
                    flow.drained.notify_waiters();
                }
                if !written {
                    tracing::debug!("json-rpc output closed");
                    break;
                }
            }
            Out::Close(done) => {
                let _ = writer.flush().await;
                let _ = writer.shutdown().await;
                let _ = done.send(());
                break;
            }
        }
    }
}

/// The reading task: reads lines (paced by `options`) and dispatches each until the input
/// ends; then the peer is closed and its pending requests fail.
pub(super) async fn read_lines<R: AsyncRead + Unpin>(
    peer: Peer,
    reader: R,
    in_tx: mpsc::UnboundedSender<Incoming>,
    options: PeerOptions,
) {
    let PeerOptions { hook, quiet, pace } = options;
    let mut bad = BadLines::default();
    let mut reader = BufReader::new(reader);
    let mut line = Vec::new();
    loop {
        line.clear();
        if let Some(pace) = &pace {
            pace().await;
        }
        match read_line(&mut reader, &mut line).await {
            Ok(Line::End) => break,
            Ok(Line::TooLong) if quiet => bad.note("too long"),
            Ok(Line::TooLong) => {
                tracing::warn!(max = MAX_LINE, "json-rpc line too long: skipped");
                let too_long = format!("Invalid Request: a message longer than {MAX_LINE} bytes");
                peer.respond_error(Value::Null, RpcError::new(codes::INVALID_REQUEST, too_long));
            }
            Ok(Line::Read) => match std::str::from_utf8(&line).map(str::trim) {
                Ok("") => {}
                Ok(text) => peer.dispatch(text, &in_tx, hook.as_ref(), quiet.then_some(&mut bad)),
                Err(_) if quiet => bad.note("not UTF-8"),
                Err(_) => {
                    tracing::warn!("json-rpc line is not UTF-8");
                    peer.respond_error(Value::Null, RpcError::new(codes::PARSE_ERROR, "Parse error: not UTF-8"));
                }
            },
            Err(e) => {
                tracing::warn!(error = %e, "json-rpc input unreadable: closing");
                break;
            }
        }
    }
    peer.inner.closed.cancel();
    let pending: Vec<_> = peer.inner.pending.lock().drain().collect();
    for (_, waiter) in pending {
        waiter(Err(RpcError::new(codes::INTERNAL_ERROR, "the connection closed")));
    }
}

/// What [`read_line`] found.
enum Line {
    /// A whole line (up to [`MAX_LINE`] bytes) is in the buffer.
    Read,
    /// A line longer than [`MAX_LINE`] was read and dropped.
    TooLong,
    /// The input ended.
    End,
}

/// Reads one `\n`-terminated line into `buf`, at most [`MAX_LINE`] bytes of it: a longer
/// line is consumed and dropped, so the next one is read whole.
async fn read_line<R: AsyncBufRead + Unpin>(reader: &mut R, buf: &mut Vec<u8>) -> std::io::Result<Line> {
    let (mut any, mut too_long) = (false, false);
    loop {
        let chunk = reader.fill_buf().await?;
        if chunk.is_empty() {
            return Ok(match (any, too_long) {
                (false, _) => Line::End,
                (true, false) => Line::Read,
                (true, true) => Line::TooLong,
            });
        }
        any = true;
        let (take, ends) = match chunk.iter().position(|b| *b == b'\n') {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        if !too_long && buf.len() + take > MAX_LINE + 1 {
            too_long = true;
            *buf = Vec::new();
        }
        if !too_long {
            buf.extend_from_slice(&chunk[..take]);
        }
        reader.consume(take);
        if ends {
            return Ok(if too_long { Line::TooLong } else { Line::Read });
        }
    }
}

/// Logs unreadable lines of a quiet peer: the first at once, then a count at most every
/// [`QUIET_LOG_EVERY`].
#[derive(Default)]
pub(super) struct BadLines {
    skipped: u64,
    last_log: Option<std::time::Instant>,
}

impl BadLines {
    /// Notes one unreadable line (`what` it is), logged when it is time.
    pub(super) fn note(&mut self, what: &str) {
        self.skipped += 1;
        let now = std::time::Instant::now();
        if self.last_log.is_none_or(|t| now.duration_since(t) >= QUIET_LOG_EVERY) {
            tracing::warn!(
                skipped = self.skipped,
                "json-rpc peer wrote a line that is {what}: skipped, not answered"
            );
            self.last_log = Some(now);
            self.skipped = 0;
        }
    }
}
