//! The read timeout of one request: from the moment the request is first handed to a
//! connection until a response head arrives. Re-sends run against the same deadline, so a
//! request that had to be sent again does not get a fresh allowance each time.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use pool_core::{AsyncSleep, Sleep};

use crate::error::Error;

/// One request's read deadline, started by its first exchange.
pub(super) struct ReadDeadline {
    limit: Option<Duration>,
    sleep: Option<Sleep>,
}

impl ReadDeadline {
    pub(super) fn new(limit: Option<Duration>) -> ReadDeadline {
        ReadDeadline { limit, sleep: None }
    }

    /// Bounds `future` (one exchange, up to the response head) by what is left of the deadline,
    /// starting it on the first call.
    pub(super) fn bound<F: Future>(
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
        }
    }
}

pin_project_lite::pin_project! {
    /// A future raced against the request's read deadline.
    pub(super) struct Deadline<'a, F> {
        #[pin]
        future: F,
        sleep: Option<&'a mut Sleep>,
        limit: Duration,
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
                Poll::Ready(()) => Poll::Ready(Err(Error::read_timeout(*this.limit))),
                Poll::Pending => Poll::Pending,
            },
            None => Poll::Pending,
        }
    }
}
