//! A run's frames in this gateway's memory: as the agent made them while the run goes on, then,
//! once it has ended, compacted into their JSON text in one buffer.
//!
//! Ended runs are kept for resumption (`Last-Event-ID`) and repeated requests, a thousand of
//! them by default. Kept as made, every frame is an `E2AResponse` of a dozen small allocations
//! (ids, timestamp, a `body` map): a retained echo run took about 12 KB in a few dozen blocks,
//! spread over a heap far larger than the cache, and freeing the oldest one on each new request
//! touched every block of it again. Compacted, a retained run is two blocks and its text (about
//! 5 KB for the echo), and the frames made while a request runs are freed while still in cache.
//! A reader of a compacted run reads each frame back from its text, as a reader of a run kept
//! by the store does.

use std::sync::Arc;

use e2a::E2AResponse;

use crate::packed::Packed;

/// What a compacted run takes besides its text and offsets: the run itself, its channels and
/// its place in the registry, about.
const COMPACT_OVERHEAD: usize = 512;

/// A run's frames.
pub(super) enum Frames {
    /// As made: the run goes on (its readers share them).
    Live(Vec<Arc<E2AResponse>>),
    /// The JSON text of every frame of an ended run.
    Compact(Compact),
}

/// The frames of an ended run as JSON text, one after the other.
pub(super) struct Compact {
    texts: Packed,
    /// The last frame's sequence and whether it is final.
    last: Option<(u64, bool)>,
}

impl Default for Frames {
    fn default() -> Self {
        Frames::Live(Vec::new())
    }
}

impl Frames {
    /// How many frames there are.
    pub(super) fn len(&self) -> usize {
        match self {
            Frames::Live(v) => v.len(),
            Frames::Compact(c) => c.texts.len(),
        }
    }

    /// Frame `i`: shared as made, or read back from its text. `None` past the end, or when
    /// the text cannot be read back (logged: the reader's stream ends there).
    pub(super) fn get(&self, i: usize) -> Option<Arc<E2AResponse>> {
        match self {
            Frames::Live(v) => v.get(i).cloned(),
            Frames::Compact(c) => match serde_json::from_str::<E2AResponse>(c.texts.get(i)?) {
                Ok(f) => Some(Arc::new(f)),
                Err(e) => {
                    tracing::error!(error = %e, frame = i, "a retained frame cannot be read back: the stream ends here");
                    None
                }
            },
        }
    }

    /// The JSON text of frame `i`.
    pub(super) fn json(&self, i: usize) -> Option<String> {
        match self {
            Frames::Live(v) => v.get(i).map(|f| f.to_json()),
            Frames::Compact(c) => c.texts.get(i).map(str::to_string),
        }
    }

    /// The last frame's sequence and whether it is final.
    pub(super) fn last(&self) -> Option<(u64, bool)> {
        match self {
            Frames::Live(v) => v.last().map(|f| (f.sequence, f.is_final)),
            Frames::Compact(c) => c.last,
        }
    }

    /// Appends a frame (to a run that goes on; an ended run takes none).
    pub(super) fn push(&mut self, f: Arc<E2AResponse>) {
        match self {
            Frames::Live(v) => v.push(f),
            Frames::Compact(_) => tracing::warn!(sequence = f.sequence, "a frame after the run ended is dropped"),
        }
    }
}

impl Compact {
    /// `frames` written one after the other.
    pub(super) fn of(frames: &[Arc<E2AResponse>]) -> Self {
        Compact {
            texts: Packed::json(frames.iter().map(|f| &**f)),
            last: frames.last().map(|f| (f.sequence, f.is_final)),
        }
    }

    /// About how many bytes it takes in memory (what the retention bound counts).
    pub(super) fn bytes(&self) -> usize {
        COMPACT_OVERHEAD + self.texts.bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use e2a::stream::ResponseStream;
    use e2a::E2AEnvelope;

    fn frames() -> Vec<Arc<E2AResponse>> {
        let request: E2AEnvelope = serde_json::from_value(serde_json::json!({
            "method": "chat.send",
            "params": {"query": "hello"},
            "request_id": "r-1"
        }))
        .expect("envelope");
        let mut s = ResponseStream::for_request(&request);
        vec![
            Arc::new(s.text("Hé \"quoted\" \n line")),
            Arc::new(s.tool_call("t-1", "search", serde_json::json!({"q": [1, 2.5, null]}))),
            Arc::new(s.complete(serde_json::json!({"content": "done", "n": 1.5}))),
        ]
    }

    #[test]
    fn a_compacted_run_reads_back_the_frames_it_was_made_of() {
        let made = frames();
        let live = Frames::Live(made.clone());
        let compact = Frames::Compact(Compact::of(&made));
        assert_eq!(compact.len(), made.len());
        assert_eq!(compact.last(), live.last());
        assert_eq!(compact.last(), Some((2, true)));
        for (i, f) in made.iter().enumerate() {
            assert_eq!(compact.get(i).as_deref(), Some(&**f), "frame {i}");
            assert_eq!(compact.json(i), live.json(i), "frame {i}");
        }
        assert!(compact.get(made.len()).is_none());
        assert!(compact.json(made.len()).is_none());
    }
}
