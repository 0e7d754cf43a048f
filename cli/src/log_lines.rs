//! Log lines written in batches: the serving threads append each formatted line to a buffer in
//! memory, and a thread of its own writes what has gathered every [`EVERY`] — one `write(2)`
//! for many lines instead of one per request (the access log writes a line per request: with
//! stderr a pipe, that system call was a seventh of a JSON request's CPU).
//!
//! Nothing is lost and memory stays bounded: a buffer past [`WAKE_AT`] wakes the writer at
//! once, and a line that finds [`HOLD_AT`] waiting is written by its own thread, with what
//! waited before it, in order. Dropping the [`Batches`] handle writes what is left.

use std::io::Write;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

/// How long a line may wait before it is written.
pub const EVERY: Duration = Duration::from_millis(20);
/// Bytes waiting that wake the writer before its time.
pub const WAKE_AT: usize = 64 * 1024;
/// Bytes waiting past which a line's own thread writes them (the writer fell behind).
pub const HOLD_AT: usize = 4 * 1024 * 1024;

/// The lines waiting, the end of the process, and where lines go.
struct Shared<W> {
    waiting: Mutex<Waiting>,
    wake: Condvar,
    out: Mutex<W>,
}

#[derive(Default)]
struct Waiting {
    bytes: Vec<u8>,
    closed: bool,
}

impl<W: Write> Shared<W> {
    fn waiting(&self) -> MutexGuard<'_, Waiting> {
        // a thread that panicked while holding it left whole lines only
        self.waiting.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes what waits and writes it out. `out` is locked before the buffer is let go, so a
    /// later batch cannot overtake this one.
    fn write_waiting(&self, mut waiting: MutexGuard<'_, Waiting>) {
        let batch = std::mem::take(&mut waiting.bytes);
        let mut out = self.out.lock().unwrap_or_else(|p| p.into_inner());
        drop(waiting);
        if !batch.is_empty() {
            // a log that cannot be written has nowhere to say so
            let _ = out.write_all(&batch).and_then(|()| out.flush());
        }
    }

    /// Waits for a batch (its time, or enough bytes) and writes it; `false` once closed.
    fn flush_batch(&self) -> bool {
        let mut waiting = self.waiting();
        if !waiting.closed && waiting.bytes.len() < WAKE_AT {
            waiting = match self.wake.wait_timeout(waiting, EVERY) {
                Ok((g, _)) => g,
                Err(p) => p.into_inner().0,
            };
        }
        let open = !waiting.closed;
        self.write_waiting(waiting);
        open
    }
}

/// The writer a `tracing_subscriber::fmt` layer writes its lines to ([`batched`]).
pub struct BatchedWriter<W> {
    shared: Arc<Shared<W>>,
}

/// One line on its way into the buffer.
pub struct Line<'a, W> {
    shared: &'a Shared<W>,
}

impl<W: Write> Write for Line<'_, W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut waiting = self.shared.waiting();
        waiting.bytes.extend_from_slice(buf);
        let held = waiting.bytes.len();
        if held >= HOLD_AT || waiting.closed {
            // the writer fell behind, or is gone: this thread writes, in order
            self.shared.write_waiting(waiting);
        } else if held >= WAKE_AT && held - buf.len() < WAKE_AT {
            self.shared.wake.notify_one();
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a, W: Write + Send + 'static> tracing_subscriber::fmt::MakeWriter<'a> for BatchedWriter<W> {
    type Writer = Line<'a, W>;

    fn make_writer(&'a self) -> Self::Writer {
        Line { shared: &self.shared }
    }
}

/// The thread writing the batches: dropped, it writes what is left and stops.
pub struct Batches<W: Write + Send + 'static> {
    shared: Arc<Shared<W>>,
    thread: Option<JoinHandle<()>>,
}

impl<W: Write + Send + 'static> Drop for Batches<W> {
    fn drop(&mut self) {
        self.shared.waiting().closed = true;
        self.shared.wake.notify_one();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        // whatever came in while the thread stopped
        self.shared.write_waiting(self.shared.waiting());
    }
}

/// Lines for `out`, written in batches by a thread named `e2a-log`: the writer to give the
/// fmt layer, and the handle that writes what is left when dropped.
pub fn batched<W: Write + Send + 'static>(out: W) -> (BatchedWriter<W>, Batches<W>) {
    let shared = Arc::new(Shared {
        waiting: Mutex::new(Waiting::default()),
        wake: Condvar::new(),
        out: Mutex::new(out),
    });
    let worker = shared.clone();
    let thread = std::thread::Builder::new()
        .name("e2a-log".into())
        .spawn(move || while worker.flush_batch() {})
        .ok();
    if thread.is_none() {
        // no thread: every line is written as it comes
        shared.waiting().closed = true;
    }
    (BatchedWriter { shared: shared.clone() }, Batches { shared, thread })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracing_subscriber::fmt::MakeWriter;

    /// A `Write` into a shared vector, counting the writes.
    #[derive(Clone, Default)]
    struct Sink(Arc<Mutex<(Vec<u8>, usize)>>);

    impl Write for Sink {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let mut s = self.0.lock().unwrap();
            s.0.extend_from_slice(buf);
            s.1 += 1;
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn line(w: &BatchedWriter<Sink>, text: &str) {
        w.make_writer().write_all(text.as_bytes()).unwrap();
    }

    #[test]
    fn lines_come_out_whole_and_in_order_in_fewer_writes_and_the_rest_on_drop() {
        let sink = Sink::default();
        let (w, batches) = batched(sink.clone());
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let w = BatchedWriter {
                    shared: w.shared.clone(),
                };
                std::thread::spawn(move || {
                    for i in 0..500 {
                        line(&w, &format!("t{t} line {i}\n"));
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        drop(batches);
        let (bytes, writes) = sink.0.lock().unwrap().clone();
        let text = String::from_utf8(bytes).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2000);
        for t in 0..4 {
            let mine: Vec<&str> = lines
                .iter()
                .copied()
                .filter(|l| l.starts_with(&format!("t{t} ")))
                .collect();
            let expected: Vec<String> = (0..500).map(|i| format!("t{t} line {i}")).collect();
            assert_eq!(mine, expected, "thread {t}'s lines in order");
        }
        assert!(writes < 2000, "{writes} writes for 2,000 lines");
        // after the drop a line is written as it comes
        line(&w, "late\n");
        assert!(String::from_utf8(sink.0.lock().unwrap().0.clone())
            .unwrap()
            .ends_with("late\n"));
    }

    #[test]
    fn a_line_is_written_without_waiting_for_the_end() {
        let sink = Sink::default();
        let (w, _batches) = batched(sink.clone());
        line(&w, "soon\n");
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while sink.0.lock().unwrap().0.is_empty() {
            assert!(std::time::Instant::now() < deadline, "the line was never written");
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(sink.0.lock().unwrap().0, b"soon\n");
    }

    #[test]
    fn a_writer_that_falls_behind_holds_no_more_than_its_bound() {
        let sink = Sink::default();
        let (w, batches) = batched(sink.clone());
        let big = "x".repeat(1023) + "\n";
        for _ in 0..(HOLD_AT / 1024 + 10) {
            line(&w, &big);
            assert!(w.shared.waiting().bytes.len() < HOLD_AT);
        }
        drop(batches);
        assert_eq!(sink.0.lock().unwrap().0.len(), (HOLD_AT / 1024 + 10) * 1024);
    }
}
