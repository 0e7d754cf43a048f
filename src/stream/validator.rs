//! The consumer side of the stream contract: [`StreamValidator`] and the violations it reports.

use std::collections::{BTreeMap, HashMap};

use crate::types::{E2AResponse, Frame, ResponseKind, ResponseStatus};

/// What a [`StreamValidator`] reads of a frame: its place in its stream and its status and
/// kind. Made from an [`E2AResponse`] or a [`Frame`] (borrowed: nothing is copied).
#[derive(Debug, Clone, Copy)]
pub struct StreamPosition<'a> {
    /// The request whose stream it is in.
    pub request_id: &'a Option<String>,
    /// The frame's id.
    pub response_id: &'a Option<String>,
    /// Its sequence.
    pub sequence: u64,
    /// Whether it is final.
    pub is_final: bool,
    /// Its status.
    pub status: &'a ResponseStatus,
    /// Its kind.
    pub response_kind: &'a ResponseKind,
}

impl<'a> From<&'a E2AResponse> for StreamPosition<'a> {
    fn from(f: &'a E2AResponse) -> Self {
        StreamPosition {
            request_id: &f.request_id,
            response_id: &f.response_id,
            sequence: f.sequence,
            is_final: f.is_final,
            status: &f.status,
            response_kind: &f.response_kind,
        }
    }
}

impl<'a> From<&'a Frame> for StreamPosition<'a> {
    fn from(f: &'a Frame) -> Self {
        StreamPosition {
            request_id: &f.head.request_id,
            response_id: &f.response_id,
            sequence: f.sequence,
            is_final: f.is_final,
            status: &f.status,
            response_kind: &f.response_kind,
        }
    }
}

/// What is wrong with a stream.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ViolationKind {
    /// The first frame seen for a request does not have sequence 0.
    DoesNotStartAtZero {
        /// The sequence seen.
        got: u64,
    },
    /// Frames are missing between the last one and this one.
    Gap {
        /// The sequence that was expected.
        expected: u64,
        /// The sequence seen.
        got: u64,
    },
    /// A frame with this sequence was already seen.
    Duplicate,
    /// A frame arrived after a later one (it was not seen before).
    Reorder {
        /// The sequence that was expected.
        expected: u64,
    },
    /// A frame arrived after the final frame.
    AfterFinal,
    /// A second frame with `is_final: true`.
    SecondFinal,
    /// `status`/`response_kind` disagree: `failed` without `e2a.error`, `e2a.error` not
    /// `failed`, or a final `e2a.complete` not `succeeded`.
    StatusKindMismatch,
    /// The stream ended (end of input or timeout) without a final frame.
    MissingFinal,
    /// A frame without `request_id` cannot be placed in a stream.
    MissingRequestId,
}

impl std::fmt::Display for ViolationKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ViolationKind::DoesNotStartAtZero { got } => write!(f, "stream starts at sequence {got}, not 0"),
            ViolationKind::Gap { expected, got } => write!(f, "gap: expected sequence {expected}, got {got}"),
            ViolationKind::Duplicate => f.write_str("duplicate sequence"),
            ViolationKind::Reorder { expected } => write!(f, "out of order: expected sequence {expected}"),
            ViolationKind::AfterFinal => f.write_str("frame after the final frame"),
            ViolationKind::SecondFinal => f.write_str("second final frame"),
            ViolationKind::StatusKindMismatch => f.write_str("status and response_kind disagree"),
            ViolationKind::MissingFinal => f.write_str("stream ended without a final frame"),
            ViolationKind::MissingRequestId => f.write_str("frame has no request_id"),
        }
    }
}

/// One stream violation, with the frame that showed it (`None` for a missing final frame).
#[derive(Debug, Clone, PartialEq)]
pub struct StreamViolation {
    /// The request whose stream is broken.
    pub request_id: Option<String>,
    /// What is wrong.
    pub kind: ViolationKind,
    /// The offending frame's sequence, when there is a frame.
    pub sequence: Option<u64>,
    /// The offending frame's `response_id`, when there is a frame.
    pub response_id: Option<String>,
}

impl std::fmt::Display for StreamViolation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "request {}: {}",
            self.request_id.as_deref().unwrap_or("<none>"),
            self.kind
        )?;
        if let Some(s) = self.sequence {
            write!(f, " (frame sequence {s})")?;
        }
        Ok(())
    }
}

#[derive(Debug, Default)]
struct State {
    /// Next sequence expected in order.
    expected: u64,
    /// Every sequence below this one has been seen (in-order streams need nothing else).
    contiguous: u64,
    /// Sequences seen above `contiguous` (only out-of-order streams use this).
    seen_above: std::collections::BTreeSet<u64>,
    finished: bool,
    started: bool,
    /// Out-of-order frames held back in reorder mode.
    pending: BTreeMap<u64, E2AResponse>,
    /// Frames kept for replay (in order).
    kept: Vec<E2AResponse>,
    last_activity: u64,
}

impl State {
    fn seen(&self, seq: u64) -> bool {
        seq < self.contiguous || self.seen_above.contains(&seq)
    }

    fn mark_seen(&mut self, seq: u64) {
        if seq == self.contiguous {
            self.contiguous = self.contiguous.saturating_add(1);
            while self.seen_above.remove(&self.contiguous) {
                self.contiguous = self.contiguous.saturating_add(1);
            }
        } else if seq > self.contiguous {
            self.seen_above.insert(seq);
        }
    }

    /// The checks of `f` in this stream (start, gaps, order, finals); the state moves on.
    fn check(&mut self, f: StreamPosition<'_>) -> Vec<ViolationKind> {
        let mut found = Vec::new();
        if !self.started && f.sequence != 0 {
            found.push(ViolationKind::DoesNotStartAtZero { got: f.sequence });
        } else if f.sequence > self.expected {
            found.push(ViolationKind::Gap {
                expected: self.expected,
                got: f.sequence,
            });
        } else if f.sequence < self.expected {
            found.push(ViolationKind::Reorder {
                expected: self.expected,
            });
        }
        if self.finished {
            found.push(if f.is_final {
                ViolationKind::SecondFinal
            } else {
                ViolationKind::AfterFinal
            });
        }
        self.started = true;
        self.mark_seen(f.sequence);
        self.expected = self.expected.max(f.sequence.saturating_add(1));
        if f.is_final {
            self.finished = true;
        }
        found
    }

    /// [`State::check`] of a frame not kept: a duplicate is only reported.
    fn observe(&mut self, f: StreamPosition<'_>, clock: u64) -> Vec<ViolationKind> {
        self.last_activity = clock;
        if self.seen(f.sequence) {
            return vec![ViolationKind::Duplicate];
        }
        self.check(f)
    }
}

/// Checks the stream invariants over frames of many interleaved requests.
///
/// ```
/// use e2a::stream::{StreamValidator, ViolationKind};
/// let frame = |seq: u64, fin: bool| e2a::E2AResponse::from_value(&serde_json::json!({
///     "request_id": "r", "sequence": seq, "is_final": fin,
///     "response_kind": if fin { "e2a.complete" } else { "e2a.chunk" },
///     "status": if fin { "succeeded" } else { "in_progress" }})).unwrap();
/// let mut v = StreamValidator::new();
/// v.push(&frame(0, false));
/// v.push(&frame(2, true));
/// let found = v.finish();
/// assert_eq!(found[0].kind, ViolationKind::Gap { expected: 1, got: 2 });
/// ```
#[derive(Debug, Default)]
pub struct StreamValidator {
    streams: HashMap<Option<String>, State>,
    violations: Vec<StreamViolation>,
    reorder_window: usize,
    keep_for_replay: bool,
    clock: u64,
}

impl StreamValidator {
    /// A validator that reports violations as frames arrive (no reordering, no replay).
    pub fn new() -> Self {
        Self::default()
    }

    /// Holds back up to `window` out-of-order frames per request and releases them in order
    /// (frames beyond the window are reported as gaps).
    pub fn with_reorder_window(mut self, window: usize) -> Self {
        self.reorder_window = window;
        self
    }

    /// Keeps accepted frames so [`StreamValidator::replay_after`] can serve `Last-Event-ID`
    /// resumption.
    pub fn with_replay(mut self) -> Self {
        self.keep_for_replay = true;
        self
    }

    fn report(&mut self, f: StreamPosition<'_>, kind: ViolationKind) {
        self.violations.push(StreamViolation {
            request_id: f.request_id.clone(),
            kind,
            sequence: Some(f.sequence),
            response_id: f.response_id.clone(),
        });
    }

    /// Accepts one frame; returns the frames released in order (the frame itself, plus held
    /// frames it unblocked; empty while it is held back).
    pub fn push(&mut self, f: &E2AResponse) -> Vec<E2AResponse> {
        self.frame_checks(f.into());
        let key = f.request_id.clone();
        let window = self.reorder_window;
        let clock = self.clock;
        let st = self.streams.entry(key.clone()).or_default();
        st.last_activity = clock;
        if st.seen(f.sequence) {
            self.report(f.into(), ViolationKind::Duplicate);
            return Vec::new();
        }
        if f.sequence > st.expected && window > 0 && st.pending.len() < window && !st.finished {
            st.mark_seen(f.sequence);
            st.pending.insert(f.sequence, f.clone());
            return Vec::new();
        }
        let mut released = Vec::new();
        self.accept(&key, f.clone(), &mut released);
        // drain held frames that are now in order
        while let Some(next) = self
            .streams
            .get_mut(&key)
            .and_then(|st| st.pending.remove(&st.expected))
        {
            self.accept(&key, next, &mut released);
        }
        released
    }

    /// Checks `f` as [`StreamValidator::push`] does, without keeping or returning it (no
    /// copy of the frame): what a gateway's stream boundary needs. A validator with a reorder
    /// window or replay does what `push` does (it keeps records: a [`Frame`] is copied into
    /// one then).
    pub fn observe<'a, F>(&mut self, frame: &'a F)
    where
        F: Clone + Into<E2AResponse>,
        &'a F: Into<StreamPosition<'a>>,
    {
        if self.reorder_window > 0 || self.keep_for_replay {
            let record: E2AResponse = frame.clone().into();
            drop(self.push(&record));
            return;
        }
        let f: StreamPosition<'a> = frame.into();
        self.frame_checks(f);
        let clock = self.clock;
        // the one stream a validator usually sees is found without hashing its request id;
        // any other with one lookup
        let only = match self.streams.len() {
            1 => self.streams.iter_mut().next().filter(|(k, _)| *k == f.request_id),
            _ => None,
        };
        let found = match only {
            Some((_, st)) => st.observe(f, clock),
            None => match self.streams.get_mut(f.request_id) {
                Some(st) => st.observe(f, clock),
                None => self.streams.entry(f.request_id.clone()).or_default().observe(f, clock),
            },
        };
        for k in found {
            self.report(f, k);
        }
    }

    /// The checks of one frame on its own: it names its request, and its status fits its kind.
    fn frame_checks(&mut self, f: StreamPosition<'_>) {
        self.clock = self.clock.saturating_add(1);
        if f.request_id.is_none() {
            self.report(f, ViolationKind::MissingRequestId);
        }
        let kind_ok = match (f.status, f.response_kind) {
            (ResponseStatus::Failed, k) => *k == ResponseKind::E2aError,
            (_, ResponseKind::E2aError) => false,
            (s, ResponseKind::E2aComplete) if f.is_final => *s == ResponseStatus::Succeeded,
            _ => true,
        };
        if !kind_ok {
            self.report(f, ViolationKind::StatusKindMismatch);
        }
    }

    fn accept(&mut self, key: &Option<String>, f: E2AResponse, released: &mut Vec<E2AResponse>) {
        self.check(key, &f);
        if self.keep_for_replay {
            if let Some(st) = self.streams.get_mut(key) {
                st.kept.push(f.clone());
            }
        }
        released.push(f);
    }

    /// The checks of `f` in its stream (start, gaps, order, finals), in the stream's state.
    fn check(&mut self, key: &Option<String>, f: &E2AResponse) {
        let Some(st) = self.streams.get_mut(key) else { return };
        for k in st.check(f.into()) {
            self.report(f.into(), k);
        }
    }

    /// Frames of `request_id` with a sequence greater than `after` (for `Last-Event-ID`),
    /// in order. Needs [`StreamValidator::with_replay`].
    pub fn replay_after(&self, request_id: &str, after: u64) -> Vec<E2AResponse> {
        let Some(st) = self.streams.get(&Some(request_id.to_string())) else {
            return Vec::new();
        };
        let mut out: Vec<E2AResponse> = st.kept.iter().filter(|f| f.sequence > after).cloned().collect();
        out.sort_by_key(|f| f.sequence);
        out
    }

    /// Violations found so far (not including missing finals).
    pub fn violations(&self) -> &[StreamViolation] {
        &self.violations
    }

    /// Streams with no activity during the last `frames` pushes and no final frame are
    /// reported as [`ViolationKind::MissingFinal`] (a timeout measured in frames, so the
    /// check is deterministic) and forgotten.
    pub fn expire_idle(&mut self, frames: u64) -> Vec<StreamViolation> {
        let now = self.clock;
        let idle: Vec<Option<String>> = self
            .streams
            .iter()
            .filter(|(_, s)| !s.finished && now.saturating_sub(s.last_activity) >= frames)
            .map(|(k, _)| k.clone())
            .collect();
        let mut out = Vec::new();
        for k in idle {
            self.streams.remove(&k);
            out.push(StreamViolation {
                request_id: k,
                kind: ViolationKind::MissingFinal,
                sequence: None,
                response_id: None,
            });
        }
        self.violations.extend(out.iter().cloned());
        out
    }

    /// Ends the input: held frames are released (their gaps reported) and every stream
    /// without a final frame is reported. Returns all violations.
    pub fn finish(mut self) -> Vec<StreamViolation> {
        let keys: Vec<Option<String>> = self.streams.keys().cloned().collect();
        for key in keys {
            let pending: Vec<E2AResponse> = self
                .streams
                .get_mut(&key)
                .map(|s| std::mem::take(&mut s.pending).into_values().collect())
                .unwrap_or_default();
            let mut released = Vec::new();
            for f in pending {
                self.accept(&key, f, &mut released);
            }
        }
        let mut missing: Vec<StreamViolation> = self
            .streams
            .iter()
            .filter(|(_, s)| !s.finished)
            .map(|(k, _)| StreamViolation {
                request_id: k.clone(),
                kind: ViolationKind::MissingFinal,
                sequence: None,
                response_id: None,
            })
            .collect();
        missing.sort_by(|a, b| a.request_id.cmp(&b.request_id));
        self.violations.extend(missing);
        self.violations
    }
}
