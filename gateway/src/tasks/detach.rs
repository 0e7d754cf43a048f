//! A future its caller runs in place, which goes on as a task of its own if the caller drops
//! it before its end: the start of a turn, run in the request's task (no task spawned for it,
//! no second pass through the request's layers), still never left half done by a client that
//! goes away.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use tracing::Instrument;

/// Runs `fut` in place; dropped before `fut` ends, spawns the rest of it (in the span that was
/// current when it was made) and lets it run to its end, its output unused.
pub(super) struct DetachOnDrop<F>
where
    F: Future + Send + 'static + ?Sized,
    F::Output: Send + 'static,
{
    fut: Option<Pin<Box<F>>>,
    span: tracing::Span,
}

impl<F> DetachOnDrop<F>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    /// `fut`, to be awaited in place (boxed once: it never moves again, here or in its task).
    pub(super) fn new(fut: F) -> Self {
        Self::boxed(Box::pin(fut))
    }
}

impl<F> DetachOnDrop<F>
where
    F: Future + Send + 'static + ?Sized,
    F::Output: Send + 'static,
{
    /// `fut`, already boxed (a future of a type that cannot be named: `dyn Future`).
    pub(super) fn boxed(fut: Pin<Box<F>>) -> Self {
        DetachOnDrop {
            fut: Some(fut),
            span: tracing::Span::current(),
        }
    }
}

impl<F> Future for DetachOnDrop<F>
where
    F: Future + Send + 'static + ?Sized,
    F::Output: Send + 'static,
{
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        // (`Unpin`: the future is boxed)
        let this = self.get_mut();
        // (taken while it is polled: a future that panics is not spawned again when dropped)
        let Some(mut fut) = this.fut.take() else {
            // polled again after its end: nothing more will come
            return Poll::Pending;
        };
        let out = fut.as_mut().poll(cx);
        if out.is_pending() {
            this.fut = Some(fut);
        }
        out
    }
}

impl<F> Drop for DetachOnDrop<F>
where
    F: Future + Send + 'static + ?Sized,
    F::Output: Send + 'static,
{
    fn drop(&mut self) {
        let Some(fut) = self.fut.take() else { return };
        // (no runtime: it is shutting down, and would not run a spawned task either)
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let span = std::mem::replace(&mut self.span, tracing::Span::none());
            runtime.spawn(fut.instrument(span));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::FutureExt;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    #[tokio::test]
    async fn runs_in_place_and_gives_its_output() {
        assert_eq!(DetachOnDrop::new(async { 7 }).await, 7);
    }

    /// Dropped mid-way (a client gone), the future still runs to its end on a task of its own.
    #[tokio::test]
    async fn dropped_before_its_end_it_runs_on() {
        let ended = Arc::new(AtomicBool::new(false));
        let (go, wait) = tokio::sync::oneshot::channel::<()>();
        let flag = ended.clone();
        let mut fut = DetachOnDrop::new(async move {
            let _ = wait.await;
            flag.store(true, Ordering::SeqCst);
        });
        // polled once: it waits for `go`
        assert!((&mut fut).now_or_never().is_none());
        drop(fut);
        go.send(()).ok();
        for _ in 0..100 {
            if ended.load(Ordering::SeqCst) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        panic!("the dropped future did not run to its end");
    }

    /// A future that panics while polled is not spawned again when dropped.
    #[tokio::test]
    async fn a_future_that_panicked_is_not_run_again() {
        let polls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let count = polls.clone();
        let mut fut = DetachOnDrop::new(async move {
            count.fetch_add(1, Ordering::SeqCst);
            panic!("a bug");
        });
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (&mut fut).now_or_never()));
        assert!(caught.is_err());
        drop(fut);
        tokio::task::yield_now().await;
        assert_eq!(polls.load(Ordering::SeqCst), 1);
    }

    /// Ended before it is dropped, nothing is spawned again.
    #[tokio::test]
    async fn ended_it_is_not_run_again() {
        let runs = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let count = runs.clone();
        let mut fut = DetachOnDrop::new(async move {
            count.fetch_add(1, Ordering::SeqCst);
        });
        assert!((&mut fut).now_or_never().is_some());
        assert!((&mut fut).now_or_never().is_none());
        drop(fut);
        tokio::task::yield_now().await;
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    }
}
