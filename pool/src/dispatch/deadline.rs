//! A request's deadlines, each started by the first wait it bounds and shared by every later
//! one: the read timeout (from the request's first hand-over to a connection until a response
//! head arrives; re-sends do not get a fresh allowance) and the pool timeout (the time spent
//! waiting for a connection or a permit, over all of the request's waits).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use pool_core::{AsyncSleep, Sleep};

use crate::error::Error;

/// One of a request's deadlines, started by the first future it bounds.
pub(crate) struct RequestDeadline {
    limit: Option<Duration>,
    sleep: Option<Sleep>,
    /// The error for an elapsed deadline, given the limit.
    elapsed: fn(Duration) -> Error,
}

impl RequestDeadline {
    /// The read timeout: no response head within `limit`.
    pub(crate) fn read(limit: Option<Duration>) -> RequestDeadline {
        RequestDeadline {
            limit,
            sleep: None,
            elapsed: Error::read_timeout,
        }
    }

    /// The pool timeout: no connection or permit within `limit`.
    pub(crate) fn pool(limit: Option<Duration>) -> RequestDeadline {
        RequestDeadline {
            limit,
            sleep: None,
            elapsed: Error::pool_timeout,
        }
    }

    /// Bounds `future` by what is left of the deadline, starting it on the first call.
    pub(crate) fn bound<F: Future>(
        &mut self,
        timer: &dyn AsyncSleep,
        future: F,
    ) -> Deadline<'_, F> {
        let sleep = match (self.limit, &mut self.sleep) {
            (None, _) => None,
            (Some(_), Some(sleep)) => Some(sleep),
            (Some(limit), slot @ None) => Some(slot.insert(timer.sleep(limit))),
        };
        Deadline {
            future,
            sleep,
            limit: self.limit.unwrap_or_default(),
            elapsed: self.elapsed,
        }
    }
}

pin_project_lite::pin_project! {
    /// A future raced against one of the request's deadlines.
    pub(crate) struct Deadline<'a, F> {
        #[pin]
        future: F,
        sleep: Option<&'a mut Sleep>,
        limit: Duration,
        elapsed: fn(Duration) -> Error,
    }
}

impl<F: Future> Future for Deadline<'_, F> {
    type Output = Result<F::Output, Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        if let Poll::Ready(output) = this.future.poll(cx) {
            return Poll::Ready(Ok(output));
        }
        match this.sleep {
            Some(sleep) => match sleep.as_mut().poll(cx) {
                Poll::Ready(()) => Poll::Ready(Err((this.elapsed)(*this.limit))),
                Poll::Pending => Poll::Pending,
            },
            None => Poll::Pending,
        }
    }
}
