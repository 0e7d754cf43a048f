//! The frame log (`[log] frames = "FILE"`): one E2A §12.7 line per response frame that passes
//! the boundary — the redacted canonical record (`e2a::log::log_line`: the minimum keys and
//! the rest, secrets redacted, the body cut past the line cap) — written by a thread of its
//! own and rotated by size: `FILE` → `FILE.1` → … → `FILE.N`, the oldest dropped.
//!
//! Writing never holds a run back: lines wait in a bounded queue, and when the disk cannot
//! keep up the lines that do not fit are counted and reported in the log (`frames dropped`),
//! not written.
//!
//! The rotated file itself is [`LineFile`], `e2a acp`'s log file too. (Size rotation is a few
//! lines here: the `file-rotate` crate panics when its directory
//! cannot be made, and a gateway must answer a bad path with an error, not a panic.)

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::Arc;

/// Lines waiting for the writer at most.
const QUEUE: usize = 8192;

/// Where the frames go and how the file is rotated.
#[derive(Debug, Clone)]
pub struct FrameLogConfig {
    /// The file (rotated copies beside it: `FILE.1`, `FILE.2`…).
    pub path: PathBuf,
    /// Size at which the file is rotated, bytes.
    pub max_bytes: u64,
    /// Rotated files kept.
    pub keep: u32,
    /// Cap of one line, bytes (a longer body is cut, marked `_e2a_truncated`).
    pub max_line_bytes: usize,
}

/// A running frame log: cheap to clone, shared by every pipeline.
#[derive(Clone)]
pub struct FrameLog {
    file: LineFile,
    max_line_bytes: usize,
}

impl std::fmt::Debug for FrameLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FrameLog").field("dropped", &self.dropped()).finish()
    }
}

impl FrameLog {
    /// Opens (appends to) the file, making its directory, and starts the writer thread.
    pub fn open(config: &FrameLogConfig) -> std::io::Result<Self> {
        Ok(FrameLog {
            file: LineFile::open(&config.path, config.max_bytes, config.keep, "frame log")?,
            max_line_bytes: config.max_line_bytes,
        })
    }

    /// Logs `frame` (never blocks: a full queue drops the line and counts it).
    pub fn write(&self, frame: &e2a::frame::Frame) {
        self.file
            .write(e2a::log::log_line(&frame.to_record(), self.max_line_bytes));
    }

    /// Lines dropped so far because the writer could not keep up (or had failed).
    pub fn dropped(&self) -> u64 {
        self.file.dropped()
    }

    /// [`LineFile::flush`]: every frame logged before is in the file (within `within`).
    pub fn flush(&self, within: std::time::Duration) -> bool {
        self.file.flush(within)
    }
}

/// A file of lines written by a thread of its own and rotated by size (`FILE` → `FILE.1` → …
/// → `FILE.keep`, the oldest dropped): the frame log's, and `e2a acp`'s log file. Writing
/// never blocks: lines wait in a bounded queue, and those that do not fit are counted (and
/// reported on the process's log, when it is not this file).
#[derive(Clone)]
pub struct LineFile {
    tx: SyncSender<Queued>,
    dropped: Arc<AtomicU64>,
}

/// What waits in a [`LineFile`]'s queue.
enum Queued {
    /// A line to write.
    Line(String),
    /// Everything before written and flushed: then a word back ([`LineFile::flush`]).
    Flush(SyncSender<()>),
}

impl LineFile {
    /// Opens (appends to) `path`, making its directory, rotated past `max_bytes` with `keep`
    /// copies; `what` names it in what the writer reports.
    pub fn open(path: &Path, max_bytes: u64, keep: u32, what: &'static str) -> std::io::Result<Self> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let file = open(path)?;
        let size = file.metadata().map(|m| m.len()).unwrap_or_default();
        let (tx, rx) = sync_channel(QUEUE);
        let dropped = Arc::new(AtomicU64::new(0));
        let writer = Writer {
            path: path.to_path_buf(),
            max_bytes,
            keep,
            what,
            out: BufWriter::new(file),
            size,
            dropped: dropped.clone(),
        };
        std::thread::Builder::new()
            .name("e2a-line-file".into())
            .spawn(move || writer.run(rx))?;
        Ok(LineFile { tx, dropped })
    }

    /// Writes `line` (without its newline); never blocks (a full queue drops it and counts it).
    pub fn write(&self, line: String) {
        match self.tx.try_send(Queued::Line(line)) {
            Ok(()) => {}
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                self.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Lines dropped so far because the writer could not keep up (or had failed).
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Waits (at most `within`) until every line written before is in the file: what a process
    /// does before it exits, so that its last lines are not lost with the writer's thread.
    /// `false` when it could not be done in time (or the writer had stopped).
    pub fn flush(&self, within: std::time::Duration) -> bool {
        let (done, wait) = sync_channel(1);
        let deadline = std::time::Instant::now() + within;
        let mut queued = Queued::Flush(done);
        // the queue may be full for a moment: the writer empties it
        loop {
            match self.tx.try_send(queued) {
                Ok(()) => break,
                Err(TrySendError::Full(back)) if std::time::Instant::now() < deadline => {
                    queued = back;
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                Err(_) => return false,
            }
        }
        wait.recv_timeout(deadline.saturating_duration_since(std::time::Instant::now()))
            .is_ok()
    }
}

fn open(path: &Path) -> std::io::Result<File> {
    OpenOptions::new().create(true).append(true).open(path)
}

/// `FILE.n`.
fn rotated(path: &Path, n: u32) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(format!(".{n}"));
    PathBuf::from(s)
}

struct Writer {
    path: PathBuf,
    max_bytes: u64,
    keep: u32,
    what: &'static str,
    out: BufWriter<File>,
    size: u64,
    dropped: Arc<AtomicU64>,
}

impl Writer {
    fn run(mut self, rx: Receiver<Queued>) {
        let mut reported = 0;
        while let Ok(first) = rx.recv() {
            let mut acks = Vec::new();
            let mut failed = None;
            // write what is queued, then flush once
            for queued in std::iter::once(first).chain(std::iter::from_fn(|| rx.try_recv().ok())) {
                match queued {
                    Queued::Line(line) => {
                        if let Err(e) = self.line(&line) {
                            failed.get_or_insert(e);
                            self.dropped.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    Queued::Flush(ack) => acks.push(ack),
                }
            }
            if let Some(e) = failed {
                tracing::warn!(error = %e, path = %self.path.display(), "{}: cannot write", self.what);
            }
            let _ = self.out.flush();
            for ack in acks {
                let _ = ack.try_send(());
            }
            let dropped = self.dropped.load(Ordering::Relaxed);
            if dropped > reported {
                tracing::warn!(dropped, "{}: lines dropped (the writer could not keep up)", self.what);
                reported = dropped;
            }
        }
        let _ = self.out.flush();
    }

    fn line(&mut self, line: &str) -> std::io::Result<()> {
        let len = line.len() as u64 + 1;
        if self.size > 0 && self.size + len > self.max_bytes {
            self.rotate()?;
        }
        self.out.write_all(line.as_bytes())?;
        self.out.write_all(b"\n")?;
        self.size += len;
        Ok(())
    }

    /// `FILE.(n-1)` → `FILE.n` …, `FILE` → `FILE.1`, a new `FILE`; past `keep`, the oldest goes.
    fn rotate(&mut self) -> std::io::Result<()> {
        self.out.flush()?;
        let path = &self.path;
        let keep = self.keep;
        if keep == 0 {
            std::fs::remove_file(path)?;
        } else {
            let _ = std::fs::remove_file(rotated(path, keep));
            for n in (1..keep).rev() {
                let from = rotated(path, n);
                if from.exists() {
                    std::fs::rename(&from, rotated(path, n + 1))?;
                }
            }
            std::fs::rename(path, rotated(path, 1))?;
        }
        self.out = BufWriter::new(open(path)?);
        self.size = 0;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flush_returns_once_every_line_written_before_is_in_the_file() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("lines.log");
        let file = LineFile::open(&path, 1 << 20, 1, "test log").expect("open");
        for n in 0..2_000 {
            file.write(format!("line {n}"));
        }
        assert!(file.flush(std::time::Duration::from_secs(10)));
        let text = std::fs::read_to_string(&path).expect("read");
        let written = text.lines().count() as u64;
        assert_eq!(
            written + file.dropped(),
            2_000,
            "each line written or counted as dropped"
        );
        assert!(
            text.ends_with("line 1999\n") || file.dropped() > 0,
            "the last line is in"
        );
    }

    #[test]
    fn one_line_per_frame_rotated_by_size_without_secrets() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("logs/frames.jsonl");
        let log = FrameLog::open(&FrameLogConfig {
            path: path.clone(),
            max_bytes: 4096,
            keep: 2,
            max_line_bytes: 1024,
        })
        .expect("open");
        let planted = "Bearer sk-live-0123456789abcdefghijklmnop";
        let request = e2a::E2AEnvelope {
            request_id: Some("req-1".into()),
            ..Default::default()
        };
        let mut frames = e2a::stream::ResponseStream::for_request(&request);
        for i in 0..40 {
            let f = frames.text(&format!("chunk {i}: {planted} {}", "x".repeat(100 + i * 20)));
            log.write(&f);
        }
        drop(log);
        // the writer ends when every sender is gone; wait for the files
        let files = || -> Vec<PathBuf> {
            [path.clone(), rotated(&path, 1), rotated(&path, 2)]
                .into_iter()
                .filter(|p| p.exists())
                .collect()
        };
        for _ in 0..100 {
            if files().len() == 3 && !rotated(&path, 3).exists() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        assert_eq!(files().len(), 3, "the file and two rotated copies");
        assert!(!rotated(&path, 3).exists(), "no more than `keep` copies");
        let mut sequences = Vec::new();
        for f in files() {
            let text = std::fs::read_to_string(&f).expect("read");
            assert!(text.len() as u64 <= 4096, "{} is {} bytes", f.display(), text.len());
            assert!(!text.contains("sk-live-0123456789"), "a planted token reached the log");
            for line in text.lines() {
                assert!(line.len() <= 1024);
                let v: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
                for key in [
                    "request_id",
                    "response_id",
                    "sequence",
                    "is_final",
                    "response_kind",
                    "timestamp",
                ] {
                    assert!(v.get(key).is_some(), "{key} missing in {line}");
                }
                sequences.push(v["sequence"].as_u64().expect("sequence"));
            }
        }
        sequences.sort_unstable();
        let last = *sequences.last().expect("lines");
        assert_eq!(last, 39);
        let kept: Vec<u64> = (last + 1 - sequences.len() as u64..=last).collect();
        assert_eq!(sequences, kept, "the newest lines are kept, one per frame, none twice");
    }

    #[test]
    fn a_path_that_cannot_be_made_is_an_error() {
        let dir = tempfile::tempdir().expect("dir");
        let file = dir.path().join("a-file");
        std::fs::write(&file, "x").expect("write");
        let e = FrameLog::open(&FrameLogConfig {
            path: file.join("frames.jsonl"),
            max_bytes: 10,
            keep: 1,
            max_line_bytes: 100,
        });
        assert!(e.is_err());
    }
}
