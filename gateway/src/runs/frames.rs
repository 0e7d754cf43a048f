//! A run's frames in this gateway's memory: each as the agent made it while the run goes on,
//! for readers that project frames (AG-UI, the whole answer), and from the start as its JSON
//! text, written once when it arrives ([`FrameTexts`]): what E2A readers send, what an ended run
//! keeps.
//!
//! Ended runs are kept for resumption (`Last-Event-ID`) and repeated requests, a thousand of
//! them by default. Kept as made, every frame is an `E2AResponse` of a dozen small allocations
//! spread over the heap; kept as text, a retained run is a few blocks. The frames of a run
//! share most of what they say (the request's ids, method, metadata: the fields `schema/`
//! marks `x-e2a-frame: echo` or `stream`): that text is written once per run, and each frame
//! adds only what it has of its own (id, sequence, finality, status, kind, timestamp, body,
//! projections). A reader reads a frame's text by weaving the two back together — nothing is
//! parsed or written again —; a reader of an ended run that wants frames as made reads them
//! back from their text.

use std::sync::Arc;

use e2a::frame::Frame;
use e2a::frame::FrameTexts;
use e2a::E2AResponse;

/// What an ended run takes besides its text: the run itself, its channels and its place in
/// the registry, about.
const COMPACT_OVERHEAD: usize = 512;

/// A run's frames.
pub(super) struct Frames {
    /// As made, while the run goes on and when its readers want them (they share them); none
    /// once it has ended.
    live: Vec<Arc<Frame>>,
    typed: bool,
    ended: bool,
    texts: FrameTexts<Frame>,
}

impl Frames {
    /// No frames yet; `typed`: keep them as made while the run goes on, not only as text.
    pub(super) fn new(typed: bool) -> Self {
        Frames {
            live: Vec::new(),
            typed,
            ended: false,
            texts: FrameTexts::new(),
        }
    }

    /// How many frames there are.
    pub(super) fn len(&self) -> usize {
        self.texts.len()
    }

    /// Frame `i`: shared as made, or read back from its text (once the run has ended, or when
    /// its frames are kept only as text). `None` past the end, or when the text cannot be read
    /// back (logged: the reader's stream ends there).
    pub(super) fn get(&self, i: usize) -> Option<Arc<Frame>> {
        if let Some(f) = self.live.get(i) {
            return Some(f.clone());
        }
        let text = self.texts.text(i)?;
        match serde_json::from_str::<E2AResponse>(&text) {
            Ok(f) => Some(Arc::new(Frame::from(f))),
            Err(e) => {
                tracing::error!(error = %e, frame = i, "a retained frame cannot be read back: the stream ends here");
                None
            }
        }
    }

    /// The JSON text of frame `i`.
    pub(super) fn json(&self, i: usize) -> Option<String> {
        self.texts.text(i)
    }

    /// Appends the JSON text of frame `i` to `out`; `false` past the end.
    pub(super) fn write(&self, i: usize, out: &mut Vec<u8>) -> bool {
        self.texts.write(i, out)
    }

    /// Frame `i`'s sequence.
    pub(super) fn sequence(&self, i: usize) -> Option<u64> {
        self.texts.sequence(i).map(|(s, _)| s)
    }

    /// Whether the run has ended (only the text is left).
    pub(super) fn is_compact(&self) -> bool {
        self.ended
    }

    /// The last frame's sequence and whether it is final.
    pub(super) fn last(&self) -> Option<(u64, bool)> {
        self.texts.last()
    }

    /// Appends a frame (to a run that goes on; an ended run takes none).
    pub(super) fn push(&mut self, f: Arc<Frame>) {
        if self.ended {
            tracing::warn!(sequence = f.sequence, "a frame after the run ended is dropped");
            return;
        }
        self.texts.push(&f, f.sequence, f.is_final);
        if self.typed {
            self.live.push(f);
        }
    }

    /// Ends the frames: only their text is kept from now on; the frames as made are handed
    /// back (to be freed outside the run's lock).
    pub(super) fn end(&mut self) -> Vec<Arc<Frame>> {
        self.ended = true;
        self.texts.shrink_to_fit();
        std::mem::take(&mut self.live)
    }

    /// About how many bytes an ended run takes in memory (what the retention bound counts).
    pub(super) fn bytes(&self) -> usize {
        COMPACT_OVERHEAD + self.texts.bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use e2a::stream::ResponseStream;
    use e2a::E2AEnvelope;

    fn frames() -> Vec<Arc<Frame>> {
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

    fn of(made: &[Arc<Frame>]) -> Frames {
        let mut frames = Frames::new(true);
        made.iter().cloned().for_each(|f| frames.push(f));
        frames
    }

    #[test]
    fn an_ended_run_reads_back_the_frames_it_was_made_of() {
        let made = frames();
        let mut frames = of(&made);
        for (i, f) in made.iter().enumerate() {
            assert!(Arc::ptr_eq(&frames.get(i).expect("live"), f), "shared while live");
        }
        let live_json: Vec<Option<String>> = (0..made.len()).map(|i| frames.json(i)).collect();
        assert_eq!(frames.end().len(), made.len());
        assert!(frames.is_compact());
        assert_eq!(frames.len(), made.len());
        assert_eq!(frames.last(), Some((2, true)));
        for (i, f) in made.iter().enumerate() {
            assert_eq!(frames.get(i).map(|f| f.to_record()), Some(f.to_record()), "frame {i}");
            assert_eq!(frames.json(i), Some(f.to_json()), "frame {i}");
            assert_eq!(frames.json(i), live_json[i]);
            let mut out = b"x".to_vec();
            assert!(frames.write(i, &mut out));
            assert_eq!(frames.sequence(i), Some(f.sequence));
            assert_eq!(&out[1..], f.to_json().as_bytes());
        }
        assert!(frames.get(made.len()).is_none());
        assert!(frames.json(made.len()).is_none());
        let mut frames = frames;
        frames.push(made[0].clone());
        assert_eq!(frames.len(), made.len(), "an ended run takes no frame");
    }

    #[test]
    fn a_run_kept_as_text_only_reads_its_frames_back() {
        let made = frames();
        let mut frames = Frames::new(false);
        made.iter().cloned().for_each(|f| frames.push(f));
        for (i, f) in made.iter().enumerate() {
            let read = frames.get(i).expect("read back");
            assert!(!Arc::ptr_eq(&read, f));
            assert_eq!(read.to_record(), f.to_record());
        }
        assert!(frames.end().is_empty(), "no frame as made was kept");
    }

    #[test]
    fn frames_that_differ_from_the_first_in_more_than_their_own_read_back_as_they_were() {
        let request: E2AEnvelope = serde_json::from_value(serde_json::json!({
            "method": "chat.send", "params": {"query": "hi"}, "request_id": "r-2", "session_id": "s-1"
        }))
        .expect("envelope");
        let mut s = ResponseStream::for_request(&request);
        let mut made: Vec<E2AResponse> = (0..6).map(|i| s.text(&format!("piece {i}")).into()).collect();
        // own fields at their edges: no id, no timestamp, a status and a kind of no known name
        made[1].response_id = None;
        made[1].timestamp = None;
        made[1].status = "paused-ish".into();
        made[1].response_kind = "x.custom".into();
        // more than their own: metadata, another session, a channel context
        made[2].metadata.insert("k".into(), serde_json::json!([1, {"a": null}]));
        made[3].session_id = None;
        made[4].channel_context.insert("c".into(), "d".into());
        made.push(s.complete(serde_json::json!({"content": "done"})).into());
        let made: Vec<Arc<Frame>> = made.into_iter().map(|f| Arc::new(Frame::from(f))).collect();
        let mut frames = of(&made);
        frames.end();
        for (i, f) in made.iter().enumerate() {
            assert_eq!(frames.get(i).map(|f| f.to_record()), Some(f.to_record()), "frame {i}");
            assert_eq!(frames.json(i), Some(f.to_json()), "frame {i}");
        }
    }

    #[tokio::test]
    async fn the_echo_agents_run_takes_under_half_its_whole_text() {
        use crate::agent::{Agent, Caller, RequestContext};
        use futures_util::StreamExt;
        let request: E2AEnvelope = serde_json::from_value(serde_json::json!({
            "method": "chat.send", "params": {"query": "hello"}
        }))
        .expect("envelope");
        let ctx = RequestContext::new(Caller::default(), None);
        let made: Vec<Arc<Frame>> = crate::backends::EchoAgent::new()
            .run_shared(request, ctx)
            .collect()
            .await;
        assert!(made.len() > 2, "{} frames", made.len());
        let mut frames = of(&made);
        frames.end();
        let all_whole: usize = made.iter().map(|f| f.to_json().len()).sum();
        let kept = frames.bytes() - COMPACT_OVERHEAD;
        assert!(2 * kept < all_whole, "{kept} vs {all_whole}");
        for (i, f) in made.iter().enumerate() {
            assert_eq!(frames.json(i), Some(f.to_json()), "frame {i}");
        }
    }
}
