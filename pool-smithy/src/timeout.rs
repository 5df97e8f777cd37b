//! The timeouts of an SDK operation, on the operation's own `AsyncSleep`: the read timeout
//! raced here, and the adapter that hands the sleep to the pool for the connect timeout.
//!
//! It bounds the whole call up to the response head (waiting for a connection, connecting,
//! sending, the head), as the SDK's own clients do. When it fires, the request future is
//! dropped: the pool withdraws a waiting request, retires an HTTP/1 connection mid-exchange
//! (its framing can no longer be trusted) and resets an HTTP/2 stream.

use std::error::Error as StdError;
use std::fmt;
use std::future::{Future, poll_fn};
use std::pin::pin;
use std::task::Poll;
use std::time::Duration;

use aws_smithy_async::rt::sleep::{AsyncSleep, SharedAsyncSleep};

/// The source of a `ConnectorError::timeout` raised because no response head arrived within
/// the operation's read timeout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadTimeout {
    after: Duration,
}

impl ReadTimeout {
    /// The read timeout that elapsed.
    pub fn duration(&self) -> Duration {
        self.after
    }
}

impl fmt::Display for ReadTimeout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "no response head within the read timeout ({:?})",
            self.after
        )
    }
}

impl StdError for ReadTimeout {}

/// Runs `future`, or fails with [`ReadTimeout`] when `limit` elapses first on `sleep`.
pub(crate) async fn within<F: Future>(
    limit: Option<Duration>,
    sleep: &SharedAsyncSleep,
    future: F,
) -> Result<F::Output, ReadTimeout> {
    let Some(after) = limit else {
        return Ok(future.await);
    };
    let mut future = pin!(future);
    let mut timer = pin!(sleep.sleep(after));
    poll_fn(|cx| {
        if let Poll::Ready(output) = future.as_mut().poll(cx) {
            return Poll::Ready(Ok(output));
        }
        match timer.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(ReadTimeout { after })),
            Poll::Pending => Poll::Pending,
        }
    })
    .await
}

/// The operation's `AsyncSleep` as the pool's: an establishment the operation starts races its
/// connect timeout against it ([`pool::Client::sleep`]).
#[derive(Debug)]
pub(crate) struct OperationSleep(pub(crate) SharedAsyncSleep);

impl pool::AsyncSleep for OperationSleep {
    fn sleep(&self, duration: Duration) -> pool::Sleep {
        Box::pin(self.0.sleep(duration))
    }
}
