//! What a server sends on a new HTTP/1 connection before its first request: held for that
//! request, to be read as its response.
//!
//! hyper's HTTP/1 client reads its transport whenever the driver runs, a request in flight or
//! not, and bytes that arrive with no request in flight end the connection with an error. On a
//! connection that has served requests that is right (a `408` before a close is nobody's
//! response). On a new connection it turns the outcome into a race: when a server speaks first
//! (an h2c-only server's SETTINGS, an SSH or SMTP banner on a port given by mistake), the
//! request meant for the connection fails as hyper's "connection was not ready" if the bytes
//! arrived before the driver's first read, and as a malformed response (the bytes read as its
//! head) if they arrived after the request was written. curl always does the latter: what came
//! first is read as the response.
//!
//! [`EarlyIo`] makes it always the latter. Until the transport's first write, what it reads is
//! held back from hyper (up to [`HOLD`] bytes); the first write releases it, and hyper's next
//! reads get the held bytes before the transport's. With nothing held, a close or an error
//! passes straight through.
//!
//! A close or an error after held bytes, with no request written yet, is held too, while the
//! connection is about to serve its first request: a server that answers at once and closes
//! (nginx's `400` to a PROXY line it did not expect, curl's `--haproxy-protocol` against a
//! server without it) then gives that request its answer, as curl reads it, where releasing
//! the close at once made the outcome a race (the request failed as "unexpected message"
//! about two times in five). Once the connection has gone idle without serving
//! ([`FirstUse::went_idle_unused`], from its cell), a held close goes to hyper at once, and so
//! does one that comes later: an idle new connection that the server gave up on (Node.js
//! sends `408` and closes one left unused past its `headersTimeout`) still ends as it did,
//! and the pool drops it rather than hand a later request the server's timeout.
//!
//! After the first write (and the held bytes, if any, read), reads and writes pass through with
//! one branch each; the holding itself is out of line.
//!
//! What this does not do: look at the bytes. A server that writes a whole valid response before
//! the request gets it read as the response, as curl reads it.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker, ready};

use hyper::rt::{Read, ReadBuf, ReadBufCursor, Write};

/// How much a new connection holds before its first request; more is given to hyper at once
/// (which then ends the connection, as it would have).
pub(crate) const HOLD: usize = 16 * 1024;

/// What a new connection's transport ([`EarlyIo`]) and its cell tell each other about its first
/// use: whether the transport holds the server's close, and whether the connection went idle
/// before serving. Whichever comes second releases the close to hyper.
#[derive(Debug, Default)]
pub(crate) struct FirstUse {
    state: AtomicU8,
    /// The transport's reader while it holds a close.
    reader: Mutex<Option<Waker>>,
}

/// The transport holds the server's close (or error) after early bytes.
const HELD_END: u8 = 0b01;
/// The connection went idle before it served a request.
const UNUSED_IDLE: u8 = 0b10;

impl FirstUse {
    /// The transport read the server's close after early bytes: whether to hold it (the
    /// connection has not gone idle unused). `reader` is woken if it goes idle meanwhile.
    fn hold_end(&self, reader: &Waker) -> bool {
        // The waker before the flag: a cell that sees the flag finds the waker.
        *self.reader.lock().unwrap_or_else(|e| e.into_inner()) = Some(reader.clone());
        self.state.fetch_or(HELD_END, Ordering::AcqRel) & UNUSED_IDLE == 0
    }

    /// The connection went idle without serving a request: a close its server sends from now
    /// on (or sent already) ends it, rather than being a later request's answer.
    #[cold]
    pub(crate) fn went_idle_unused(&self) {
        if self.state.fetch_or(UNUSED_IDLE, Ordering::AcqRel) & HELD_END != 0 {
            let reader = self.reader.lock().unwrap_or_else(|e| e.into_inner()).take();
            if let Some(reader) = reader {
                reader.wake();
            }
        }
    }
}

/// A new HTTP/1 connection's transport; see the [module docs](self).
#[derive(Debug)]
pub(crate) struct EarlyIo<I> {
    inner: I,
    /// `None` once a request was written and the held bytes read: everything passes through.
    early: Option<Box<Early>>,
}

/// The state before the first request is written, and until what was held is read.
#[derive(Debug)]
struct Early {
    /// What the transport read before the first write.
    held: Vec<u8>,
    /// How much of `held` hyper has read since it was released.
    at: usize,
    /// Set by the first write, or by a close or an error after held bytes: `held` is hyper's.
    released: bool,
    /// A request was written.
    written: bool,
    /// An error the transport returned after held bytes; hyper gets it after them.
    failed: Option<io::Error>,
    /// The transport's close (or error, in `failed`) came after held bytes and is held.
    end_held: bool,
    /// Shared with the connection's cell: see [`FirstUse`].
    first_use: Arc<FirstUse>,
    /// hyper's read waker while bytes are held: the first write wakes it, since the
    /// transport will not (the bytes it signalled were taken already).
    reader: Option<Waker>,
}

impl<I> EarlyIo<I> {
    pub(crate) fn new(inner: I, first_use: Arc<FirstUse>) -> EarlyIo<I> {
        EarlyIo {
            inner,
            early: Some(Box::new(Early {
                held: Vec::new(),
                at: 0,
                released: false,
                written: false,
                failed: None,
                end_held: false,
                reader: None,
                first_use,
            })),
        }
    }
}

impl<I: Read + Unpin> EarlyIo<I> {
    /// A read before the first write, or while held bytes remain. Cold: each connection runs
    /// it a few times at most.
    #[cold]
    #[inline(never)]
    fn poll_read_early(
        &mut self,
        cx: &mut Context<'_>,
        mut buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        let early = self.early.as_mut().expect("called while early");
        while !early.released {
            if early.end_held {
                // The close is read already: it waits for the first write or for the
                // connection going idle unused.
                early.reader = Some(cx.waker().clone());
                if early.first_use.hold_end(cx.waker()) {
                    return Poll::Pending;
                }
                early.released = true;
                break;
            }
            let mut scratch = [0u8; 2048];
            let mut read = ReadBuf::new(&mut scratch);
            match Pin::new(&mut self.inner).poll_read(cx, read.unfilled()) {
                Poll::Pending if early.held.is_empty() => return Poll::Pending,
                Poll::Pending => {
                    early.reader = Some(cx.waker().clone());
                    return Poll::Pending;
                }
                // A close or an error with nothing held: hyper's as it is.
                Poll::Ready(Ok(())) if read.filled().is_empty() && early.held.is_empty() => {
                    return Poll::Ready(Ok(()));
                }
                Poll::Ready(Err(error)) if early.held.is_empty() => {
                    return Poll::Ready(Err(error));
                }
                // A close or an error after held bytes: held (at the loop's top).
                Poll::Ready(Ok(())) if read.filled().is_empty() => early.end_held = true,
                Poll::Ready(Err(error)) => {
                    early.failed = Some(error);
                    early.end_held = true;
                }
                Poll::Ready(Ok(())) => {
                    early.held.extend_from_slice(read.filled());
                    early.released = early.held.len() > HOLD;
                }
            }
        }
        if early.at < early.held.len() {
            let rest = &early.held[early.at..];
            let n = rest.len().min(buf.remaining());
            buf.put_slice(&rest[..n]);
            early.at += n;
            // A held error is still to come after the bytes.
            if early.written && early.at == early.held.len() && early.failed.is_none() {
                self.early = None;
            }
            return Poll::Ready(Ok(()));
        }
        if let Some(error) = early.failed.take() {
            return Poll::Ready(Err(error));
        }
        if early.written {
            self.early = None;
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }

    /// `written` bytes went out: the first of them release what was held. One branch once the
    /// connection has served (`early` is gone by then).
    #[inline]
    fn after_write(&mut self, written: usize) -> usize {
        if written > 0 && self.early.is_some() {
            self.written();
        }
        written
    }

    /// The first write went out: what was held is hyper's to read.
    #[cold]
    #[inline(never)]
    fn written(&mut self) {
        let Some(early) = self.early.as_mut() else {
            return;
        };
        if early.written {
            return;
        }
        if early.held.is_empty() && early.failed.is_none() {
            self.early = None;
            return;
        }
        early.written = true;
        early.released = true;
        if let Some(reader) = early.reader.take() {
            reader.wake();
        }
    }
}

impl<I: Read + Unpin> Read for EarlyIo<I> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.early.is_none() {
            return Pin::new(&mut this.inner).poll_read(cx, buf);
        }
        this.poll_read_early(cx, buf)
    }
}

impl<I: Read + Write + Unpin> Write for EarlyIo<I> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let written = ready!(Pin::new(&mut this.inner).poll_write(cx, buf))?;
        Poll::Ready(Ok(this.after_write(written)))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let written = ready!(Pin::new(&mut this.inner).poll_write_vectored(cx, bufs))?;
        Poll::Ready(Ok(this.after_write(written)))
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::Wake;

    use super::*;

    /// A transport whose reads give the scripted results in turn (then `Pending`), and whose
    /// writes take everything.
    #[derive(Default)]
    struct Script {
        reads: VecDeque<io::Result<Vec<u8>>>,
        written: Vec<u8>,
    }

    impl Read for Script {
        fn poll_read(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
            mut buf: ReadBufCursor<'_>,
        ) -> Poll<io::Result<()>> {
            match self.get_mut().reads.pop_front() {
                None => Poll::Pending,
                Some(Ok(bytes)) => {
                    buf.put_slice(&bytes);
                    Poll::Ready(Ok(()))
                }
                Some(Err(error)) => Poll::Ready(Err(error)),
            }
        }
    }

    impl Write for Script {
        fn poll_write(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            self.get_mut().written.extend_from_slice(buf);
            Poll::Ready(Ok(buf.len()))
        }

        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }

        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    /// Counts its wakes.
    #[derive(Default)]
    struct Wakes(AtomicUsize);

    impl Wake for Wakes {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn io(reads: Vec<io::Result<&[u8]>>) -> EarlyIo<Script> {
        EarlyIo::new(
            Script {
                reads: reads.into_iter().map(|r| r.map(<[u8]>::to_vec)).collect(),
                written: Vec::new(),
            },
            Arc::new(FirstUse::default()),
        )
    }

    /// The connection's side of `io`'s [`FirstUse`].
    fn first_use(io: &EarlyIo<Script>) -> Arc<FirstUse> {
        io.early.as_ref().unwrap().first_use.clone()
    }

    /// One read: `None` while pending, else what it gave (or the error's kind).
    fn read(io: &mut EarlyIo<Script>, waker: &Waker) -> Option<Result<Vec<u8>, io::ErrorKind>> {
        let mut bytes = [0u8; 64];
        let mut buf = ReadBuf::new(&mut bytes);
        match Pin::new(&mut *io).poll_read(&mut Context::from_waker(waker), buf.unfilled()) {
            Poll::Pending => None,
            Poll::Ready(Ok(())) => Some(Ok(buf.filled().to_vec())),
            Poll::Ready(Err(error)) => Some(Err(error.kind())),
        }
    }

    fn write(io: &mut EarlyIo<Script>, bytes: &[u8]) {
        let waker = Waker::noop();
        let polled = Pin::new(&mut *io).poll_write(&mut Context::from_waker(waker), bytes);
        assert!(matches!(polled, Poll::Ready(Ok(n)) if n == bytes.len()));
    }

    #[test]
    fn bytes_before_the_first_request_are_its_response() {
        let wakes = Arc::new(Wakes::default());
        let waker = Waker::from(wakes.clone());
        let mut io = io(vec![Ok(b"SSH-2.0-"), Ok(b"x\r\n")]);
        assert_eq!(read(&mut io, &waker), None, "held back from hyper");
        assert_eq!(io.early.as_ref().unwrap().held, b"SSH-2.0-x\r\n");
        write(&mut io, b"GET / HTTP/1.1\r\n\r\n");
        assert_eq!(
            wakes.0.load(Ordering::SeqCst),
            1,
            "the write wakes the reader"
        );
        assert_eq!(read(&mut io, &waker), Some(Ok(b"SSH-2.0-x\r\n".to_vec())));
        assert!(io.early.is_none(), "everything passes through from now on");
        assert_eq!(read(&mut io, &waker), None);
    }

    #[test]
    fn a_close_after_early_bytes_is_the_first_requests_answer_too() {
        let wakes = Arc::new(Wakes::default());
        let waker = Waker::from(wakes.clone());
        let mut io = io(vec![Ok(b"HTTP/1.1 400 Bad Request\r\n\r\n"), Ok(b"")]);
        assert_eq!(read(&mut io, &waker), None, "bytes and close held back");
        assert_eq!(read(&mut io, &waker), None, "and still, without a write");
        write(&mut io, b"GET / HTTP/1.1\r\n\r\n");
        assert!(
            wakes.0.load(Ordering::SeqCst) >= 1,
            "the write wakes the reader"
        );
        let first = read(&mut io, &waker).expect("released by the write");
        assert_eq!(first.unwrap(), b"HTTP/1.1 400 Bad Request\r\n\r\n");
        assert_eq!(
            read(&mut io, &waker),
            None,
            "the transport's own end follows (the script has no more)"
        );

        let mut failing = self::io(vec![Ok(b"x"), Err(io::ErrorKind::ConnectionReset.into())]);
        assert_eq!(read(&mut failing, &waker), None);
        write(&mut failing, b"GET / HTTP/1.1\r\n\r\n");
        assert_eq!(read(&mut failing, &waker), Some(Ok(b"x".to_vec())));
        assert_eq!(
            read(&mut failing, &waker),
            Some(Err(io::ErrorKind::ConnectionReset))
        );
    }

    #[test]
    fn a_close_after_early_bytes_ends_a_connection_that_went_idle_unused() {
        // The close held first, then the connection goes idle: the cell's call wakes the
        // reader, and hyper gets the bytes (and then the end) without any write.
        let wakes = Arc::new(Wakes::default());
        let waker = Waker::from(wakes.clone());
        let mut io = io(vec![Ok(b"HTTP/1.1 408 Request Timeout\r\n\r\n"), Ok(b"")]);
        assert_eq!(read(&mut io, &waker), None);
        first_use(&io).went_idle_unused();
        assert_eq!(wakes.0.load(Ordering::SeqCst), 1, "the reader is woken");
        let first = read(&mut io, &waker).expect("released by going idle");
        assert_eq!(first.unwrap(), b"HTTP/1.1 408 Request Timeout\r\n\r\n");
        assert!(!io.early.as_ref().unwrap().written);

        // Idle first, then the bytes and the close: released as they come.
        let mut idle = self::io(vec![Ok(b"HTTP/1.1 408 Request Timeout\r\n\r\n"), Ok(b"")]);
        first_use(&idle).went_idle_unused();
        let first = read(&mut idle, &waker).expect("released by the close");
        assert_eq!(first.unwrap(), b"HTTP/1.1 408 Request Timeout\r\n\r\n");
    }

    #[test]
    fn with_nothing_held_a_close_or_a_write_changes_nothing() {
        let waker = Waker::noop();
        let mut closed = io(vec![Ok(b"")]);
        assert_eq!(
            read(&mut closed, waker),
            Some(Ok(Vec::new())),
            "EOF as it is"
        );
        let mut used = io(vec![Ok(b"HTTP/1.1 200 OK\r\n")]);
        write(&mut used, b"GET / HTTP/1.1\r\n\r\n");
        assert!(used.early.is_none(), "nothing was held: no state kept");
        assert_eq!(used.inner.written, b"GET / HTTP/1.1\r\n\r\n");
        assert_eq!(
            read(&mut used, waker),
            Some(Ok(b"HTTP/1.1 200 OK\r\n".to_vec()))
        );
    }

    #[test]
    fn more_than_the_hold_goes_to_hyper_at_once() {
        let waker = Waker::noop();
        let chunk = vec![b'a'; 2048];
        let reads = (0..=HOLD / chunk.len()).map(|_| Ok(&chunk[..])).collect();
        let mut io = io(reads);
        let first = read(&mut io, waker).expect("over the hold: released");
        assert_eq!(first.unwrap().len(), 64, "as much as hyper's buffer takes");
        assert!(!io.early.as_ref().unwrap().written);
    }
}
