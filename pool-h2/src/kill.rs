//! Ending a connection whose only streams are ones the pool gave up on.
//!
//! hyper sends a request body on a task of its own, which holds the body's h2 stream open until
//! the body ends. When a response refused the body, the pool aborts it once the response is
//! over, and hyper resets the stream at its next look at the body; but hyper looks only when
//! the stream has flow-control window, so a server that answered early and never grants window
//! again (nor resets the stream) keeps the stream open for ever. Such a stream is *abandoned*
//! (`Streams::abandon`): counted against the peer's limit, as h2 still counts it, but not
//! keeping the connection in use.
//!
//! Once no new stream can be sent on the connection (the last handle of its generation is
//! gone: the pool closed it or retired it) and every stream left is abandoned, nothing will
//! ever end the connection on its own: the server waits for the body, hyper for window, and a
//! graceful close waits for both. The [`KillSwitch`] ends it instead: the connection's
//! transport ([`Killable`]) fails its next read and write, h2's connection task ends on that
//! error and drops the socket, and hyper's body tasks, told by h2 that the connection is gone,
//! drop their bodies (and with them the streams' guards).
//!
//! The switch wakes h2's connection task through the waker of its last read or write that
//! found nothing to do: the task always parks on one of those, so a kill never waits for
//! traffic. That costs one waker registration per read that returns `Pending` (an atomic
//! compare-and-swap when the waker is the same as last time), on HTTP/2 connections only.
//!
//! The switch also ends a connection whose peer allows no stream at all and that never served
//! a response (`H2Driver`, `GenerationHandle::refused`): a request h2 queued for a stream there
//! would wait for ever, and nothing else would end it.
//!
//! What this module does not do: decide when to kill (the generation does, see
//! `GenerationHandle::end_if_abandoned`, and the driver), or end a connection that still has a
//! stream the pool has not given up on.

use std::fmt;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, Ordering};
use std::task::{Context, Poll};

use atomic_waker::AtomicWaker;

/// Why a connection was ended (what the transport's error says).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Why {
    /// Every stream left on it was abandoned.
    Abandoned = 1,
    /// The peer allows no stream and the connection never served a response.
    NoStreams = 2,
}

/// Ends one connection's transport (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct KillSwitch {
    /// 0 while alive, then the [`Why`] of the first kill.
    killed: AtomicU8,
    /// The connection task's, from its last read or write that returned `Pending`.
    waker: AtomicWaker,
}

impl KillSwitch {
    /// Fails the transport's next read and write, and wakes the task parked on it. The first
    /// kill's reason stays.
    pub(crate) fn kill(&self, why: Why) {
        let first = self
            .killed
            .compare_exchange(0, why as u8, Ordering::AcqRel, Ordering::Acquire)
            .is_ok();
        if first {
            self.waker.wake();
        }
    }

    fn is_killed(&self) -> bool {
        self.killed.load(Ordering::Acquire) != 0
    }

    /// The error h2 sees once the switch is killed.
    fn error(&self) -> io::Error {
        let why = if self.killed.load(Ordering::Acquire) == Why::NoStreams as u8 {
            Why::NoStreams
        } else {
            Why::Abandoned
        };
        io::Error::new(io::ErrorKind::ConnectionAborted, Killed(why))
    }

    /// `polled`, unless the switch is (or, once the waker is registered, turns out to be)
    /// killed. The check after registering closes the race with a kill that ran between the
    /// first check and the registration: it woke nobody, so this poll must see it.
    fn guard<T>(&self, cx: &mut Context<'_>, polled: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        if polled.is_pending() {
            self.waker.register(cx.waker());
            if self.is_killed() {
                return Poll::Ready(Err(self.error()));
            }
        }
        polled
    }
}

/// The source of the transport error after a kill.
#[derive(Debug)]
struct Killed(Why);

impl fmt::Display for Killed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.0 {
            Why::Abandoned => "connection ended by the pool: every stream left on it was abandoned",
            Why::NoStreams => {
                "connection ended by the pool: the server allows no HTTP/2 stream \
                 (SETTINGS_MAX_CONCURRENT_STREAMS 0)"
            }
        })
    }
}

impl std::error::Error for Killed {}

/// A transport that fails once its [`KillSwitch`] is killed.
#[derive(Debug)]
pub(crate) struct Killable<I> {
    io: I,
    switch: std::sync::Arc<KillSwitch>,
}

impl<I: Unpin> Killable<I> {
    pub(crate) fn new(io: I, switch: std::sync::Arc<KillSwitch>) -> Self {
        Killable { io, switch }
    }

    /// `op` on the transport, unless the switch is killed (before it, or while it parked).
    fn polled<T>(
        &mut self,
        cx: &mut Context<'_>,
        op: impl FnOnce(Pin<&mut I>, &mut Context<'_>) -> Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>> {
        if self.switch.is_killed() {
            return Poll::Ready(Err(self.switch.error()));
        }
        let polled = op(Pin::new(&mut self.io), cx);
        self.switch.guard(cx, polled)
    }
}

impl<I: hyper::rt::Read + Unpin> hyper::rt::Read for Killable<I> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        self.polled(cx, |io, cx| io.poll_read(cx, buf))
    }
}

impl<I: hyper::rt::Write + Unpin> hyper::rt::Write for Killable<I> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.polled(cx, |io, cx| io.poll_write(cx, buf))
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.polled(cx, |io, cx| io.poll_write_vectored(cx, bufs))
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.polled(cx, |io, cx| io.poll_flush(cx))
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wakes::Wakes;
    use std::sync::Arc;
    use std::task::Waker;

    /// A transport with nothing to read and no room to write.
    struct Parked;

    impl hyper::rt::Read for Parked {
        fn poll_read(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
            _: hyper::rt::ReadBufCursor<'_>,
        ) -> Poll<io::Result<()>> {
            Poll::Pending
        }
    }

    impl hyper::rt::Write for Parked {
        fn poll_write(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
            _: &[u8],
        ) -> Poll<io::Result<usize>> {
            Poll::Pending
        }
        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Pending
        }
        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Pending
        }
    }

    fn read(io: &mut Killable<Parked>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let mut bytes = [0u8; 8];
        let mut buf = hyper::rt::ReadBuf::new(&mut bytes);
        hyper::rt::Read::poll_read(Pin::new(io), cx, buf.unfilled())
    }

    #[test]
    fn a_kill_wakes_the_parked_task_and_fails_its_reads_and_writes() {
        let switch = Arc::new(KillSwitch::default());
        let mut io = Killable::new(Parked, switch.clone());
        let wakes = Arc::new(Wakes::default());
        let waker = Waker::from(wakes.clone());
        let mut cx = Context::from_waker(&waker);
        assert!(read(&mut io, &mut cx).is_pending());
        assert_eq!(wakes.count(), 0);

        switch.kill(Why::Abandoned);
        assert_eq!(wakes.count(), 1, "the parked read's task");
        let Poll::Ready(Err(error)) = read(&mut io, &mut cx) else {
            panic!("a read after the kill fails");
        };
        assert_eq!(error.kind(), io::ErrorKind::ConnectionAborted);
        assert!(error.to_string().contains("abandoned"), "{error}");
        let written = hyper::rt::Write::poll_write(Pin::new(&mut io), &mut cx, b"x");
        assert!(matches!(written, Poll::Ready(Err(_))));
        switch.kill(Why::Abandoned);
        assert_eq!(wakes.count(), 1, "killed once");
    }

    #[test]
    fn the_first_kill_says_why() {
        let switch = Arc::new(KillSwitch::default());
        let mut io = Killable::new(Parked, switch.clone());
        switch.kill(Why::NoStreams);
        switch.kill(Why::Abandoned);
        let waker = Waker::from(Arc::new(Wakes::default()));
        let Poll::Ready(Err(error)) = read(&mut io, &mut Context::from_waker(&waker)) else {
            panic!("a read after the kill fails");
        };
        assert!(
            error.to_string().contains("allows no HTTP/2 stream"),
            "{error}"
        );
    }

    #[test]
    fn a_kill_before_the_first_park_fails_the_next_poll() {
        let switch = Arc::new(KillSwitch::default());
        let mut io = Killable::new(Parked, switch.clone());
        switch.kill(Why::Abandoned);
        let waker = Waker::from(Arc::new(Wakes::default()));
        let mut cx = Context::from_waker(&waker);
        assert!(matches!(read(&mut io, &mut cx), Poll::Ready(Err(_))));
        let flushed = hyper::rt::Write::poll_flush(Pin::new(&mut io), &mut cx);
        assert!(matches!(flushed, Poll::Ready(Err(_))));
    }
}
