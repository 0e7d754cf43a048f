//! A run nobody can resume, answered inline: an E2A JSON request whose `request_id` the gateway
//! made (so no client knows it), sent without `Idempotency-Key`, on a gateway whose store
//! keeps no runs. No `Last-Event-ID` can name it and no repeat can find it, so it needs no
//! place in the registry, no log of its frames and no compaction: it is driven in the request
//! (a client gone drops it at once) and its answer is gathered as the frames come
//! ([`WholeJson`]). It still holds its stream permit, and a gateway that cuts its streams off
//! at shutdown cuts it off too ([`super::Runs::stop_all`]).

use std::sync::Arc;

use e2a::frame::Frame;
use e2a::shown::WholeAnswer;
use futures_util::StreamExt;

use crate::agent::{RequestContext, SharedFrames};
use crate::stop::StopReason;

/// The answer of a client that takes one frame, gathered frame by frame: the final frame with
/// what the frames before it carried and it does not ([`WholeAnswer`]).
#[derive(Default)]
pub(crate) struct WholeJson {
    whole: WholeAnswer,
    last: Option<Arc<Frame>>,
}

impl WholeJson {
    /// Takes in the next frame.
    pub(crate) fn push(&mut self, frame: Arc<Frame>) {
        if let Some(before) = self.last.replace(frame) {
            self.whole.push(&before);
        }
    }

    /// The answer's JSON text: `None` when there was no frame.
    pub(crate) fn finish(self) -> Option<String> {
        let last = Arc::unwrap_or_clone(self.last?);
        Some(self.whole.finish_owned(last).to_json())
    }
}

/// One run answered inline, counted while it goes on ([`super::Runs::live`]: a draining
/// gateway waits for it like for any other).
struct Open<'a>(&'a std::sync::atomic::AtomicUsize);

impl<'a> Open<'a> {
    fn count(open: &'a std::sync::atomic::AtomicUsize) -> Self {
        open.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Open(open)
    }
}

impl Drop for Open<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

impl super::Runs {
    /// Drives `frames` (a run admitted with `ctx`, see the module docs) to their end here and
    /// answers them as one JSON text. The gateway's shutdown cuts it off (its guard then ends
    /// it with its final frame); dropped unfinished (the client went away), the run is
    /// cancelled.
    pub(crate) async fn answer_inline(&self, mut frames: SharedFrames, ctx: &RequestContext) -> Option<String> {
        let gone = ctx.cancel.clone().drop_guard();
        let _open = Open::count(&self.inline);
        let mut answer = WholeJson::default();
        let mut cut = false;
        loop {
            let next = tokio::select! {
                biased;
                f = frames.next() => f,
                _ = self.cutting.cancelled(), if !cut => {
                    cut = true;
                    let _ = ctx.stop.set(StopReason::Shutdown);
                    ctx.cancel.cancel();
                    continue;
                }
            };
            match next {
                Some(f) => answer.push(f),
                None => break,
            }
        }
        gone.disarm();
        answer.finish()
    }

    /// Whether a JSON request could be answered inline: the store keeps no runs.
    pub(crate) fn answers_inline(&self) -> bool {
        self.store.get().is_none()
    }
}
