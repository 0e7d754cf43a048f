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

use std::collections::VecDeque;
use std::sync::Arc;

use e2a::frame::{Frame, FrameTexts};
use e2a::E2AResponse;

use super::inline::WholeJson;

/// What an ended run takes besides its text: the run itself, its channels and its place in
/// the registry, about.
const COMPACT_OVERHEAD: usize = 512;

/// What a frame kept as made takes besides its text, about (the `Frame`, its `Arc`, the
/// allocations of a typed body).
const MADE_OVERHEAD: usize = 384;

/// A run's frames.
pub(super) struct Frames {
    /// As made, while the run goes on and when its readers want them (they share them); none
    /// once it has ended. `made[k]` is frame `texts.first_held() + k`.
    made: VecDeque<Arc<Frame>>,
    typed: bool,
    ended: bool,
    texts: FrameTexts<Frame>,
    /// How many of the frames in `texts` readers see: the ones after them are staged (written,
    /// on their way to the store: [`Frames::stage`]).
    published: usize,
    /// How many bytes the frames held may take while the run goes on; past it the oldest are
    /// forgotten.
    budget: usize,
    /// The answer a client that takes one frame waits for, gathered as the frames come
    /// ([`Frames::gather`]).
    whole: Option<WholeJson>,
}

impl Frames {
    /// No frames yet; `typed`: keep them as made while the run goes on, not only as text;
    /// `budget`: the bytes its frames may take in memory (see [`Frames::push`]).
    pub(super) fn new(typed: bool, budget: usize) -> Self {
        Frames {
            made: VecDeque::new(),
            typed,
            ended: false,
            texts: FrameTexts::new(),
            published: 0,
            budget,
            whole: None,
        }
    }

    /// How many frames there have been (forgotten ones included; staged ones not).
    pub(super) fn len(&self) -> usize {
        self.published
    }

    /// The index of the oldest frame still held.
    pub(super) fn first_held(&self) -> usize {
        self.texts.first_held()
    }

    /// The sequence of the oldest frame still held, when older ones were forgotten (the run
    /// went past its memory budget).
    pub(super) fn oldest_held(&self) -> Option<u64> {
        let first = self.texts.first_held();
        (first > 0).then(|| self.texts.sequence(first).map_or(u64::MAX, |(s, _)| s))
    }

    /// Whether a reader of the frames after `after` (all for `None`) would miss forgotten
    /// ones: then the oldest sequence still held.
    pub(super) fn missing_after(&self, after: Option<u64>) -> Option<u64> {
        self.oldest_held()
            .filter(|oldest| after.is_none_or(|a| a.saturating_add(1) < *oldest))
    }

    /// Frame `i`: shared as made, or read back from its text (once the run has ended, or when
    /// its frames are kept only as text). `None` past the end, when it was forgotten, or when
    /// the text cannot be read back (logged: the reader's stream ends there).
    pub(super) fn get(&self, i: usize) -> Option<Arc<Frame>> {
        if i >= self.published {
            return None;
        }
        if let Some(f) = i.checked_sub(self.texts.first_held()).and_then(|k| self.made.get(k)) {
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
        (i < self.published).then(|| self.texts.text(i)).flatten()
    }

    /// Appends the JSON text of frame `i` to `out`; `false` past the end or forgotten.
    pub(super) fn write(&self, i: usize, out: &mut Vec<u8>) -> bool {
        i < self.published && self.texts.write(i, out)
    }

    /// Frame `i`'s sequence (`None` past the end or forgotten).
    pub(super) fn sequence(&self, i: usize) -> Option<u64> {
        (i < self.published)
            .then(|| self.texts.sequence(i))
            .flatten()
            .map(|(s, _)| s)
    }

    /// Whether the run has ended (only the text is left).
    pub(super) fn is_compact(&self) -> bool {
        self.ended
    }

    /// The last frame's sequence and whether it is final.
    pub(super) fn last(&self) -> Option<(u64, bool)> {
        match self.published == self.texts.len() {
            true => self.texts.last(),
            false => self.texts.sequence(self.published.checked_sub(1)?),
        }
    }

    /// Starts gathering the answer of a client that takes one frame, from the frames so far
    /// (as made, or read back from their text when the run keeps only that) and then each as
    /// it comes: the frames can be forgotten from then on, the answer keeps what they said.
    /// `false` once one was forgotten, or the run has ended (the answer is then made by
    /// reading the frames back, and refused when some it needs are gone).
    pub(super) fn gather(&mut self) -> bool {
        if self.whole.is_some() {
            return true;
        }
        if self.texts.first_held() > 0 || self.ended {
            return false;
        }
        let mut whole = WholeJson::default();
        for i in 0..self.published {
            match self.get(i) {
                Some(f) => whole.push(f),
                None => return false,
            }
        }
        self.whole = Some(whole);
        true
    }

    /// The answer gathered ([`Frames::gather`]), once the run has ended.
    pub(super) fn take_whole(&mut self) -> Option<WholeJson> {
        self.whole.take()
    }

    /// Appends a frame (to a run that goes on; an ended run takes none): staged and published
    /// at once. The frames are held past the run's budget until [`Frames::forget_read`] lets
    /// the oldest go.
    #[cfg(test)]
    pub(super) fn push(&mut self, f: Arc<Frame>) {
        if self.stage(&f) {
            self.publish([f]);
        }
    }

    /// Writes a frame's text, the one time it is written, without showing it to readers yet
    /// (what a store takes before anybody sees the frame: [`Frames::staged`]); `false` for a
    /// run that has ended (it takes no frame).
    pub(super) fn stage(&mut self, f: &Frame) -> bool {
        if self.ended {
            tracing::warn!(sequence = f.sequence, "a frame after the run ended is dropped");
            return false;
        }
        self.texts.push(f, f.sequence, f.is_final);
        true
    }

    /// The staged frames: sequence, JSON text (woven from what [`Frames::stage`] wrote, not
    /// written again), finality.
    pub(super) fn staged(&self) -> Vec<(u64, String, bool)> {
        (self.published..self.texts.len())
            .filter_map(|i| {
                let (sequence, is_final) = self.texts.sequence(i)?;
                Some((sequence, self.texts.text(i)?, is_final))
            })
            .collect()
    }

    /// Shows the staged frames `batch` (the frames themselves, in the order staged) to readers.
    pub(super) fn publish(&mut self, batch: impl IntoIterator<Item = Arc<Frame>>) {
        for f in batch {
            if self.published >= self.texts.len() {
                break;
            }
            self.published += 1;
            if let Some(whole) = &mut self.whole {
                whole.push(f.clone());
            }
            if self.typed {
                self.made.push_back(f);
            }
        }
    }

    /// Takes the staged frames back (the store did not take them): nobody sees them.
    pub(super) fn unstage(&mut self) {
        self.texts.truncate(self.published);
    }

    /// Whether the frames held take more than the run's budget.
    pub(super) fn over_budget(&self) -> bool {
        !self.ended && self.held_bytes() > self.budget
    }

    /// Bytes the frames take while the run goes on, about: their text, and the frames as made
    /// (each about its text again, and a fixed part).
    fn held_bytes(&self) -> usize {
        let text = self.texts.bytes();
        match self.made.is_empty() {
            true => text,
            false => 2 * text + self.made.len() * MADE_OVERHEAD,
        }
    }

    /// Past the budget, forgets the oldest frames before frame `floor` (what every reader
    /// has read; never the newest), half of those at a time, until the rest take three
    /// quarters of the budget.
    /// Returns whether the frames are still over the budget (a reader holds them: the run
    /// waits for it).
    pub(super) fn forget_read(&mut self, floor: usize) -> bool {
        if !self.over_budget() {
            return false;
        }
        let target = self.budget / 4 * 3;
        // the newest frame is always held (what a resume from the last event reads)
        let floor = floor.min(self.published.saturating_sub(1));
        while self.held_bytes() > target {
            let n = floor.saturating_sub(self.texts.first_held()).div_ceil(2);
            if n == 0 {
                break;
            }
            self.texts.forget_oldest(n);
            self.made.drain(..n.min(self.made.len()));
        }
        tracing::debug!(
            oldest = self.oldest_held(),
            budget = self.budget,
            "a run went past its memory budget: the frames its readers have read are forgotten"
        );
        self.over_budget()
    }

    /// Ends the frames: only their text is kept from now on; the frames as made are handed
    /// back (to be freed outside the run's lock).
    pub(super) fn end(&mut self) -> VecDeque<Arc<Frame>> {
        self.ended = true;
        self.texts.shrink_to_fit();
        std::mem::take(&mut self.made)
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

    pub(super) fn frames() -> Vec<Arc<Frame>> {
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
        let mut frames = Frames::new(true, usize::MAX);
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
        let mut frames = Frames::new(false, usize::MAX);
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

#[cfg(test)]
mod budget {
    use super::*;
    use e2a::stream::ResponseStream;

    /// `n` text frames of about 1 kB, then the final one.
    fn long_run(n: usize) -> Vec<Arc<Frame>> {
        let request = e2a::E2AEnvelope::new("chat.send", serde_json::json!({})).with_request_id("r-long");
        let mut s = ResponseStream::for_request(&request);
        let piece = "x".repeat(1000);
        let mut frames: Vec<Arc<Frame>> = (0..n).map(|_| Arc::new(s.text(&piece))).collect();
        frames.push(Arc::new(s.complete(serde_json::json!({}))));
        frames
    }

    #[test]
    fn a_run_past_its_budget_forgets_its_oldest_frames_and_says_which_it_holds() {
        for typed in [false, true] {
            let budget = 64 << 10;
            let mut frames = Frames::new(typed, budget);
            let made = long_run(2_000);
            for f in &made {
                frames.push(f.clone());
                // no reader holds a frame back
                assert!(!frames.forget_read(frames.len()));
                assert!(frames.held_bytes() <= budget, "{} > {budget}", frames.held_bytes());
            }
            assert_eq!(frames.len(), made.len());
            let oldest = frames.oldest_held().expect("some were forgotten");
            assert!(oldest > 1_000, "{oldest}");
            let first = usize::try_from(oldest).expect("index");
            assert_eq!(frames.missing_after(None), Some(oldest));
            assert_eq!(frames.missing_after(Some(oldest - 2)), Some(oldest));
            assert_eq!(frames.missing_after(Some(oldest - 1)), None);
            assert!(frames.get(first - 1).is_none() && frames.json(first - 1).is_none());
            assert!(!frames.write(first - 1, &mut Vec::new()));
            for (i, f) in made.iter().enumerate().skip(first) {
                assert_eq!(frames.json(i), Some(f.to_json()), "frame {i}");
                assert_eq!(frames.get(i).map(|f| f.to_record()), Some(f.to_record()));
            }
            assert_eq!(frames.last(), Some((2_000, true)));
        }
    }

    #[test]
    fn the_whole_answer_gathered_from_the_start_keeps_what_was_forgotten() {
        let made = long_run(500);
        // frames kept as made, or only as text (an E2A stream's), the gathering starting
        // before the first frame or after some (read back from their text)
        for (typed, from) in [(true, 0), (false, 0), (false, 3), (true, 3)] {
            let mut frames = Frames::new(typed, 64 << 10);
            for (i, f) in made.iter().enumerate() {
                if i == from {
                    assert!(frames.gather(), "typed {typed}, from {from}");
                }
                frames.push(f.clone());
                frames.forget_read(frames.len());
            }
            assert!(frames.oldest_held().is_some());
            let whole: serde_json::Value =
                serde_json::from_str(&frames.take_whole().and_then(WholeJson::finish).expect("an answer"))
                    .expect("json");
            let content = whole["body"]["result"]["content"].as_str().unwrap_or_default();
            assert_eq!(
                content.len(),
                500 * 1000,
                "every piece is in the answer (typed {typed}, from {from})"
            );
        }
        // once frames were forgotten, an answer cannot be gathered any more
        let mut late = Frames::new(true, 64 << 10);
        for f in &made {
            late.push(f.clone());
            late.forget_read(late.len());
        }
        assert!(!late.gather());
    }

    #[test]
    fn staged_frames_are_written_once_and_seen_only_once_published() {
        let made = super::tests::frames();
        for typed in [true, false] {
            let mut frames = Frames::new(typed, usize::MAX);
            frames.push(made[0].clone());
            assert!(frames.gather());
            // staged: the store's text is the frames' own, readers see none of them
            frames.stage(&made[1]);
            frames.stage(&made[2]);
            let staged = frames.staged();
            assert_eq!(staged.len(), 2);
            for ((sequence, text, is_final), f) in staged.iter().zip(&made[1..]) {
                assert_eq!(
                    (*sequence, text.as_str(), *is_final),
                    (f.sequence, f.to_json().as_str(), f.is_final)
                );
            }
            assert_eq!((frames.len(), frames.last()), (1, Some((made[0].sequence, false))));
            assert!(
                frames.get(1).is_none() && frames.json(1).is_none(),
                "a staged frame is not read"
            );
            // the store refused them: taken back, the next frames take their place
            frames.unstage();
            assert!(frames.staged().is_empty());
            assert_eq!(frames.last(), Some((made[0].sequence, false)));
            frames.stage(&made[1]);
            frames.stage(&made[2]);
            frames.publish(made[1..].iter().cloned());
            assert_eq!((frames.len(), frames.last()), (3, Some((made[2].sequence, true))));
            for (i, f) in made.iter().enumerate() {
                assert_eq!(frames.json(i), Some(f.to_json()), "frame {i} (typed {typed})");
            }
            let whole = frames.take_whole().and_then(WholeJson::finish).expect("an answer");
            let whole: serde_json::Value = serde_json::from_str(&whole).expect("json");
            assert_eq!(whole["body"]["result"]["tool_calls"][0]["name"], "search", "{whole}");
        }
    }

    #[test]
    fn frames_a_reader_has_not_read_are_held_past_the_budget() {
        let mut frames = Frames::new(false, 64 << 10);
        let made = long_run(300);
        for f in &made {
            frames.push(f.clone());
        }
        // a reader at frame 10 holds the frames from there on: over the budget, the run waits
        assert!(frames.forget_read(10));
        assert_eq!(frames.first_held(), 10);
        // read on: what it has read goes
        assert!(!frames.forget_read(280));
        assert!(frames.first_held() > 10 && frames.first_held() <= 280);
        assert!(frames.json(280).is_some());
    }
}
