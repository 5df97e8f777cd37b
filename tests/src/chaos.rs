//! Deterministic disorder for stress tests: cancellation after a chosen number of polls, and a
//! seeded generator to choose them.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// Drops the inner future after it has been polled `polls` times (0: never polled), cancelling
/// it at whatever ownership boundary it reached; `None` polls means never cancel. A future with
/// a cancellation point re-wakes itself, so the point is reached even if nothing else wakes it.
#[derive(Debug)]
pub struct CancelAfter<F> {
    inner: Option<Pin<Box<F>>>,
    polls: Option<u32>,
}

impl<F> CancelAfter<F> {
    /// Wraps `future`.
    pub fn new(future: F, polls: Option<u32>) -> CancelAfter<F> {
        CancelAfter {
            inner: Some(Box::pin(future)),
            polls,
        }
    }
}

impl<F: Future> Future for CancelAfter<F> {
    /// `None` when the future was cancelled.
    type Output = Option<F::Output>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if self.polls == Some(0) {
            self.inner = None;
            return Poll::Ready(None);
        }
        if let Some(n) = &mut self.polls {
            *n -= 1;
        }
        let limited = self.polls.is_some();
        let inner = self.inner.as_mut().expect("polled after completion");
        match inner.as_mut().poll(cx) {
            Poll::Ready(output) => Poll::Ready(Some(output)),
            Poll::Pending => {
                if limited {
                    cx.waker().wake_by_ref();
                }
                Poll::Pending
            }
        }
    }
}

/// A small seeded xorshift generator: reproducible choices without a dependency.
#[derive(Clone, Debug)]
pub struct XorShift(u64);

impl XorShift {
    /// A generator from a nonzero seed.
    pub fn new(seed: u64) -> XorShift {
        XorShift(seed.max(1))
    }

    /// The next value.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A value in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
}
