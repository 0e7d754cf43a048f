//! [`FrameTexts`]: a stream's frames as their JSON text, each written once.

use super::head::{Framed, HeadText, WriteHead};
use crate::write::JsonWriter;

/// One frame of a [`FrameTexts`].
#[derive(Debug, Clone, Copy)]
struct Entry {
    /// Where its own fields' text starts.
    start: usize,
    /// Its head, in `heads`.
    head: usize,
    sequence: u64,
    is_final: bool,
}

/// A stream's frames as their JSON text, each written once, when it is added: the text its
/// frames share (their head, see [`Framed`]) once per distinct head, and each frame's own
/// fields after one another. A frame's JSON is the two woven together, byte for byte its
/// canonical JSON, read without parsing or writing anything again.
///
/// ```
/// use e2a::frame::FrameTexts;
/// use e2a::stream::ResponseStream;
/// let request = e2a::E2AEnvelope::new("chat.send", serde_json::json!({})).with_request_id("r1");
/// let mut stream = ResponseStream::for_request(&request);
/// let frames = [stream.text("Hel"), stream.text("lo"), stream.complete(serde_json::json!({}))];
/// let mut texts = FrameTexts::new();
/// for f in &frames {
///     texts.push(f, f.sequence, f.is_final);
/// }
/// assert_eq!(texts.text(1), Some(frames[1].to_json()));
/// assert_eq!(texts.last(), Some((2, true)));
/// ```
#[derive(Debug)]
pub struct FrameTexts<R: Framed> {
    /// The head of the last frame, to tell whether the next one shares it.
    current: Option<R::Head>,
    heads: Vec<HeadText>,
    text: JsonWriter,
    entries: Vec<Entry>,
    /// Each frame's own fields' ends, relative to its start (as many per frame as it has own
    /// fields).
    ends: Vec<u32>,
    scratch: Vec<usize>,
    /// How many of the oldest frames were forgotten ([`FrameTexts::forget_oldest`]): frame `i`
    /// is `entries[i - forgotten]`.
    forgotten: usize,
    /// The last frame's sequence and whether it is final (kept when it is forgotten).
    last: Option<(u64, bool)>,
}

impl<R: Framed> Default for FrameTexts<R> {
    fn default() -> Self {
        Self::new()
    }
}

impl<R: Framed> FrameTexts<R> {
    /// How many own fields a frame has.
    const OWN: usize = <R::Head as WriteHead>::SEGMENTS - 1;

    /// No frames.
    pub fn new() -> Self {
        FrameTexts {
            current: None,
            heads: Vec::new(),
            text: JsonWriter::default(),
            entries: Vec::new(),
            ends: Vec::new(),
            scratch: vec![0; Self::OWN],
            forgotten: 0,
            last: None,
        }
    }

    /// Adds `frame` (its `sequence` and whether it is final kept beside it): its own fields
    /// are written, and its head too when it is not the last frame's.
    pub fn push(&mut self, frame: &R, sequence: u64, is_final: bool) {
        if !self.current.as_ref().is_some_and(|h| frame.has_head(h)) {
            let head = frame.head();
            self.heads.push(HeadText::of(&head));
            self.current = Some(head);
        }
        let start = self.text.len();
        frame.write_own(&mut self.text, &mut self.scratch);
        self.ends.extend(
            self.scratch
                .iter()
                .map(|end| u32::try_from(end.saturating_sub(start)).unwrap_or(u32::MAX)),
        );
        self.entries.push(Entry {
            start,
            head: self.heads.len().saturating_sub(1),
            sequence,
            is_final,
        });
        self.last = Some((sequence, is_final));
    }

    /// How many frames there have been (forgotten ones included).
    pub fn len(&self) -> usize {
        self.forgotten + self.entries.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The index of the oldest frame still held (`len()` when none is).
    pub fn first_held(&self) -> usize {
        self.forgotten
    }

    /// Forgets the `n` oldest frames held (their text is given back): frames before
    /// [`FrameTexts::first_held`] read as `None`. What a stream's memory budget does.
    pub fn forget_oldest(&mut self, n: usize) {
        let n = n.min(self.entries.len());
        if n == 0 {
            return;
        }
        let cut = self.entries.get(n).map_or(self.text.len(), |e| e.start);
        self.text.drain_front(cut);
        self.entries.drain(..n);
        for e in &mut self.entries {
            e.start -= cut;
        }
        self.ends.drain(..n * Self::OWN);
        self.forgotten += n;
    }

    /// Drops the frames from `len` on, the newest, as if they had not been added (a stream
    /// that takes back frames it could not deliver); frames already forgotten stay forgotten.
    /// The last frame is then the one before them (`None` when no frame is held).
    ///
    /// ```
    /// use e2a::frame::FrameTexts;
    /// let mut stream = e2a::stream::ResponseStream::for_request(&e2a::E2AEnvelope::default());
    /// let frames = [stream.text("a"), stream.text("b"), stream.text("c")];
    /// let mut texts = FrameTexts::new();
    /// for f in &frames {
    ///     texts.push(f, f.sequence, f.is_final);
    /// }
    /// texts.truncate(1);
    /// assert_eq!((texts.len(), texts.last(), texts.text(1)), (1, Some((0, false)), None));
    /// texts.push(&frames[2], 1, false);
    /// assert_eq!(texts.text(1), Some(frames[2].to_json()));
    /// ```
    pub fn truncate(&mut self, len: usize) {
        let k = len.max(self.forgotten) - self.forgotten;
        let Some(first_dropped) = self.entries.get(k).copied() else {
            return;
        };
        self.text.truncate(first_dropped.start);
        self.entries.truncate(k);
        self.ends.truncate(k * Self::OWN);
        self.heads.truncate(self.entries.last().map_or(0, |e| e.head + 1));
        // the next frame writes its head again (a head's text is small; its value is not kept)
        self.current = None;
        self.last = self.entries.last().map(|e| (e.sequence, e.is_final));
    }

    /// Held frame `i`: its entry and where its own fields' ends are.
    fn held(&self, i: usize) -> Option<(&Entry, usize)> {
        let k = i.checked_sub(self.forgotten)?;
        self.entries.get(k).map(|e| (e, k))
    }

    /// Frame `i`'s sequence and whether it is final (`None` past the end or forgotten).
    pub fn sequence(&self, i: usize) -> Option<(u64, bool)> {
        self.held(i).map(|(e, _)| (e.sequence, e.is_final))
    }

    /// The last frame's sequence and whether it is final.
    pub fn last(&self) -> Option<(u64, bool)> {
        self.last
    }

    /// Appends frame `i`'s JSON text to `out`; `false` (nothing appended) past the end or
    /// when it was forgotten.
    pub fn write(&self, i: usize, out: &mut Vec<u8>) -> bool {
        let Some((entry, k, head)) = self.held(i).and_then(|(e, k)| Some((e, k, self.heads.get(e.head)?))) else {
            return false;
        };
        let own = self.text.as_bytes().get(entry.start..).unwrap_or_default();
        let ends = self.ends.get(k * Self::OWN..(k + 1) * Self::OWN).unwrap_or_default();
        let mut from = 0;
        for (k, end) in ends.iter().enumerate() {
            let end = *end as usize;
            out.extend_from_slice(head.segment(k).as_bytes());
            out.extend_from_slice(own.get(from..end).unwrap_or_default());
            from = end;
        }
        out.extend_from_slice(head.segment(Self::OWN).as_bytes());
        true
    }

    /// Frame `i`'s JSON text.
    pub fn text(&self, i: usize) -> Option<String> {
        let mut out = Vec::with_capacity(1024);
        self.write(i, &mut out)
            .then(|| String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()))
    }

    /// About how many bytes it takes in memory.
    pub fn bytes(&self) -> usize {
        self.heads.iter().map(HeadText::bytes).sum::<usize>()
            + self.text.len()
            + self.entries.len() * std::mem::size_of::<Entry>()
            + self.ends.len() * std::mem::size_of::<u32>()
    }

    /// Gives back the room kept for frames to come (no more will: the stream has ended).
    pub fn shrink_to_fit(&mut self) {
        self.current = None;
        self.heads.shrink_to_fit();
        self.text.shrink_to_fit();
        self.entries.shrink_to_fit();
        self.ends.shrink_to_fit();
    }
}

#[cfg(test)]
mod tests {
    use super::FrameTexts;
    use crate::stream::ResponseStream;
    use crate::types::Frame;

    #[test]
    fn forgotten_frames_read_as_none_and_the_rest_as_they_were() {
        let request = crate::E2AEnvelope::new("chat.send", serde_json::json!({})).with_request_id("r1");
        let mut stream = ResponseStream::for_request(&request);
        let mut frames: Vec<Frame> = (0..6).map(|i| stream.text(&format!("piece {i} é"))).collect();
        frames.push(stream.complete(serde_json::json!({"content": "done"})));
        let mut texts = FrameTexts::new();
        for f in &frames {
            texts.push(f, f.sequence, f.is_final);
        }
        let before = texts.bytes();
        texts.forget_oldest(4);
        assert!(texts.bytes() < before);
        assert_eq!((texts.len(), texts.first_held()), (7, 4));
        for (i, f) in frames.iter().enumerate() {
            let want = (i >= 4).then(|| f.to_json());
            assert_eq!(texts.text(i), want, "frame {i}");
            assert_eq!(texts.sequence(i).is_some(), i >= 4);
        }
        // frames added after a forget read back too; forgetting more than is held holds none
        texts.forget_oldest(1);
        assert_eq!(texts.text(6), Some(frames[6].to_json()));
        texts.forget_oldest(100);
        assert_eq!((texts.len(), texts.first_held(), texts.last()), (7, 7, Some((6, true))));
    }
}
