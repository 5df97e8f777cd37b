//! Reading what the peer sent before it reset the connection.
//!
//! A server that closes a connection while bytes it never read are still in its receive buffer
//! makes its kernel answer with a reset. nginx does exactly that when a reload shuts an HTTP/2
//! connection down while the client is still sending: it has written its GOAWAY and the last
//! responses, and closes. On the client the next write then fails at once (`ECONNRESET`,
//! later `EPIPE`), but what the server sent first is still in the client's receive buffer and
//! can be read until the reset is reached.
//!
//! h2 writes before it reads, and a failed write fails the whole connection. It would never
//! read that GOAWAY or those responses: the requests the GOAWAY covers would fail with an I/O
//! error instead of the GOAWAY's proof that they were not processed (so the pool could not
//! send them again), and responses already received would be lost. Seen in the interop
//! suite's nginx-reload checks: 32 of 344,093 requests failed with "stream closed because of a
//! broken pipe" in one run in three.
//!
//! [`ReadPastReset`] turns a write that failed because the peer reset or closed the connection
//! into a write that succeeded, and drops every later write, so h2 goes on to read. The
//! connection still fails, at the read that reaches the reset, after h2 has seen everything
//! the peer sent before it.
//!
//! What it does not change: any other write error, and reads (every read error is h2's to
//! see). Nothing new arrives after a reset, so the reads end soon and nothing waits for the
//! dropped bytes; the peer would never have read them.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

/// An HTTP/2 transport whose writes after the peer's reset succeed without a byte sent, so
/// reading goes on to the reset (see the module docs).
#[derive(Debug)]
pub(crate) struct ReadPastReset<I> {
    io: I,
    /// A write failed because the peer reset or closed the connection.
    reset: bool,
}

impl<I> ReadPastReset<I> {
    pub(crate) fn new(io: I) -> Self {
        ReadPastReset { io, reset: false }
    }

    /// `result` of a write of `len` bytes, unless it failed because of the peer's reset: then
    /// the write counts as done, as will every later one.
    fn written<T>(&mut self, result: io::Result<T>, done: T) -> io::Result<T> {
        match result {
            Err(error) if is_reset(&error) => {
                self.reset = true;
                Ok(done)
            }
            other => other,
        }
    }
}

/// Whether `error` says the peer reset or closed the connection.
fn is_reset(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::ConnectionReset
            | io::ErrorKind::BrokenPipe
            | io::ErrorKind::ConnectionAborted
    )
}

impl<I: hyper::rt::Read + Unpin> hyper::rt::Read for ReadPastReset<I> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<I: hyper::rt::Write + Unpin> hyper::rt::Write for ReadPastReset<I> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if self.reset {
            return Poll::Ready(Ok(buf.len()));
        }
        let result = ready!(Pin::new(&mut self.io).poll_write(cx, buf));
        Poll::Ready(self.written(result, buf.len()))
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let len = bufs.iter().map(|b| b.len()).sum();
        if self.reset {
            return Poll::Ready(Ok(len));
        }
        let result = ready!(Pin::new(&mut self.io).poll_write_vectored(cx, bufs));
        Poll::Ready(self.written(result, len))
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.reset {
            return Poll::Ready(Ok(()));
        }
        let result = ready!(Pin::new(&mut self.io).poll_flush(cx));
        Poll::Ready(self.written(result, ()))
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.reset {
            return Poll::Ready(Ok(()));
        }
        let result = ready!(Pin::new(&mut self.io).poll_shutdown(cx));
        Poll::Ready(self.written(result, ()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::rt::Write;
    use std::task::Waker;

    /// A transport whose every write fails with `kind`, counting the attempts.
    struct Failing {
        kind: io::ErrorKind,
        attempts: usize,
    }

    impl hyper::rt::Write for Failing {
        fn poll_write(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            _: &[u8],
        ) -> Poll<io::Result<usize>> {
            self.attempts += 1;
            Poll::Ready(Err(self.kind.into()))
        }

        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Err(self.kind.into()))
        }

        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    /// Polls once: every `Failing` operation is ready at once.
    fn ready<T>(poll: impl FnOnce(&mut Context<'_>) -> Poll<T>) -> T {
        match poll(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(output) => output,
            Poll::Pending => unreachable!("Failing never waits"),
        }
    }

    fn write(io: &mut ReadPastReset<Failing>, buf: &[u8]) -> io::Result<usize> {
        ready(|cx| Pin::new(io).poll_write(cx, buf))
    }

    #[test]
    fn a_write_the_peer_reset_counts_as_done_and_later_ones_are_dropped() {
        let mut io = ReadPastReset::new(Failing {
            kind: io::ErrorKind::ConnectionReset,
            attempts: 0,
        });
        assert_eq!(write(&mut io, b"HEADERS").unwrap(), 7);
        assert_eq!(write(&mut io, b"DATA").unwrap(), 4);
        assert!(ready(|cx| Pin::new(&mut io).poll_flush(cx)).is_ok());
        assert_eq!(io.io.attempts, 1, "nothing is written after the reset");
    }

    #[test]
    fn other_write_errors_stay_errors() {
        let mut io = ReadPastReset::new(Failing {
            kind: io::ErrorKind::PermissionDenied,
            attempts: 0,
        });
        let error = write(&mut io, b"HEADERS").unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::PermissionDenied);
        assert!(write(&mut io, b"HEADERS").is_err());
        assert_eq!(io.io.attempts, 2);
    }
}
