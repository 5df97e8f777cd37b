//! Whether the peer has sent anything on an HTTP/2 connection.
//!
//! A server's first frame on an HTTP/2 connection is its SETTINGS (RFC 9113 §3.4), sent as
//! soon as it takes the connection. A peer that has sent a byte has therefore taken the
//! connection and begun HTTP/2 on it. When such a connection is then lost under streams
//! without a `GOAWAY` or `RST_STREAM` about them, that is the connection's end (Apache httpd's
//! graceful restart closes connections so, the new ones too, sixteen streams at a time), and
//! the pool repeats those streams' idempotent requests on another connection, as after
//! HTTP/1's keep-alive race. A connection lost before the peer said anything says something
//! about the origin instead (it accepts and closes), and its requests fail rather than dial
//! again. The same answer holds for every stream of a connection: `H2SendOutcome::Failed`'s
//! `heard`.
//!
//! [`Heard`] notes the peer's first byte. Until then each read goes through a small buffer of
//! its own and is copied into hyper's (hyper's cursor cannot say how much a reader wrote into
//! it without `unsafe`, which this crate forbids); every read after it passes straight
//! through. The copy is of the connection's first bytes only, once per connection.
//!
//! It also wakes the connection's driver when the peer's SETTINGS may have changed what it
//! allows, while the driver does not know the peer's stream limit yet: h2 applies a peer's
//! SETTINGS and only then writes their acknowledgement, so a write after the peer's first byte
//! may follow a new limit, and the driver reads the limit again when it is woken. Without that,
//! a request handed to h2 just before SETTINGS that allow no stream at all arrived would wait
//! in h2's queue for ever, with nothing to poll the driver that notices (`no_streams_allowed`).
//! Once the limit is known the transport stops looking: a flag of its own, on every write.
//!
//! What it does not do: look at what the bytes say (h2 does).

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Waker};

use atomic_waker::AtomicWaker;

/// The first read's buffer: a server's SETTINGS, with its `WINDOW_UPDATE` and the first
/// responses if they came with it, fits; anything more is read by the next read.
const FIRST_READ: usize = 1024;

/// Set once the peer sent a byte on the connection; shared by the transport, the connection's
/// streams and its driver.
#[derive(Debug, Default)]
pub(crate) struct PeerHeard {
    heard: AtomicBool,
    /// The driver knows the peer's stream limit: writes no longer wake it.
    limit_known: AtomicBool,
    /// The driver's, while it does not know the limit.
    driver: AtomicWaker,
}

impl PeerHeard {
    /// Whether the peer has sent anything yet.
    pub(crate) fn heard(&self) -> bool {
        // Acquire: pairs with the store, which precedes h2's reading of those bytes and so
        // any failure a stream observes after them.
        self.heard.load(Ordering::Acquire)
    }

    fn set(&self) {
        self.heard.store(true, Ordering::Release);
    }

    /// The driver does not know the peer's limit yet: wake `waker` after the next write that
    /// follows the peer's first byte. Registered before the driver reads the limit, so a write
    /// between that reading and the registration cannot go unnoticed.
    pub(crate) fn watch_settings(&self, waker: &Waker) {
        self.driver.register(waker);
    }

    /// The driver knows the peer's limit: writes stop waking it.
    pub(crate) fn settings_known(&self) {
        self.limit_known.store(true, Ordering::Release);
        drop(self.driver.take());
    }
}

/// An HTTP/2 transport that notes the peer's first byte in a [`PeerHeard`] (see the module
/// docs).
#[derive(Debug)]
pub(crate) struct Heard<I> {
    io: I,
    /// This connection's copy of `shared`'s flag, read on every read without an atomic.
    heard: bool,
    /// Writes may wake the driver (see the module docs): until `shared` says the limit is known.
    watching: bool,
    shared: std::sync::Arc<PeerHeard>,
}

impl<I> Heard<I> {
    pub(crate) fn new(io: I, shared: std::sync::Arc<PeerHeard>) -> Self {
        Heard {
            io,
            heard: false,
            watching: true,
            shared,
        }
    }

    /// After a write: wakes the driver if it watches for the peer's SETTINGS.
    fn wrote<T>(&mut self, written: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        if self.watching && self.heard && matches!(written, Poll::Ready(Ok(_))) {
            if self.shared.limit_known.load(Ordering::Acquire) {
                self.watching = false;
            } else {
                self.shared.driver.wake();
            }
        }
        written
    }
}

impl<I: hyper::rt::Read + Unpin> hyper::rt::Read for Heard<I> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        mut buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if this.heard || buf.remaining() == 0 {
            return Pin::new(&mut this.io).poll_read(cx, buf);
        }
        let mut first = [0u8; FIRST_READ];
        let len = buf.remaining().min(FIRST_READ);
        let mut own = hyper::rt::ReadBuf::new(&mut first[..len]);
        match Pin::new(&mut this.io).poll_read(cx, own.unfilled()) {
            Poll::Ready(Ok(())) => {}
            other => return other,
        }
        let read = own.filled();
        if !read.is_empty() {
            this.heard = true;
            this.shared.set();
        }
        buf.put_slice(read);
        Poll::Ready(Ok(()))
    }
}

impl<I: hyper::rt::Write + Unpin> hyper::rt::Write for Heard<I> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let written = Pin::new(&mut self.io).poll_write(cx, buf);
        self.wrote(written)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let written = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        self.wrote(written)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wakes::Wakes;
    use hyper::rt::Read;
    use std::collections::VecDeque;
    use std::sync::Arc;
    use std::task::Waker;

    /// A transport that returns its reads in turn: bytes, or the end of the stream.
    struct Script(VecDeque<Vec<u8>>);

    impl hyper::rt::Read for Script {
        fn poll_read(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            mut buf: hyper::rt::ReadBufCursor<'_>,
        ) -> Poll<io::Result<()>> {
            // Nothing left is the end of the stream: nothing filled.
            if let Some(bytes) = self.0.pop_front() {
                let n = bytes.len().min(buf.remaining());
                buf.put_slice(&bytes[..n]);
                if n < bytes.len() {
                    self.0.push_front(bytes[n..].to_vec());
                }
            }
            Poll::Ready(Ok(()))
        }
    }

    impl hyper::rt::Write for Script {
        fn poll_write(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            Poll::Ready(Ok(buf.len()))
        }
        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    fn write(io: &mut Heard<Script>) {
        let mut cx = Context::from_waker(Waker::noop());
        let written = hyper::rt::Write::poll_write(Pin::new(io), &mut cx, b"frame");
        assert!(matches!(written, Poll::Ready(Ok(5))));
    }

    #[test]
    fn writes_after_the_peers_first_byte_wake_the_driver_until_the_limit_is_known() {
        let (mut io, shared) = heard(vec![b"settings".to_vec()]);
        let wakes = Arc::new(Wakes::default());
        let driver = Waker::from(wakes.clone());
        shared.watch_settings(&driver);
        write(&mut io);
        assert_eq!(wakes.count(), 0, "the peer said nothing yet");
        read(&mut io, 64);
        write(&mut io);
        assert_eq!(wakes.count(), 1, "the ACK may follow new SETTINGS");
        shared.watch_settings(&driver);
        shared.settings_known();
        write(&mut io);
        assert!(!io.watching, "a known limit ends the watch");
        assert_eq!(wakes.count(), 1);
    }

    fn read(io: &mut Heard<Script>, capacity: usize) -> Vec<u8> {
        let mut bytes = vec![0u8; capacity];
        let mut buf = hyper::rt::ReadBuf::new(&mut bytes);
        let mut cx = Context::from_waker(Waker::noop());
        match Pin::new(io).poll_read(&mut cx, buf.unfilled()) {
            Poll::Ready(Ok(())) => buf.filled().to_vec(),
            other => panic!("read: {other:?}"),
        }
    }

    fn heard(script: Vec<Vec<u8>>) -> (Heard<Script>, Arc<PeerHeard>) {
        let shared = Arc::new(PeerHeard::default());
        (Heard::new(Script(script.into()), shared.clone()), shared)
    }

    #[test]
    fn the_end_of_the_stream_before_any_byte_is_not_hearing_the_peer() {
        let (mut io, shared) = heard(vec![]);
        assert!(read(&mut io, 64).is_empty());
        assert!(!shared.heard());
    }

    #[test]
    fn the_first_byte_is_heard_and_every_byte_reaches_the_reader() {
        let settings = vec![0, 0, 0, 4, 0, 0, 0, 0, 0];
        let (mut io, shared) = heard(vec![settings.clone(), b"more".to_vec()]);
        assert_eq!(read(&mut io, 64), settings);
        assert!(shared.heard());
        assert_eq!(
            read(&mut io, 64),
            b"more",
            "later reads pass straight through"
        );
    }

    #[test]
    fn a_first_read_larger_than_its_buffer_loses_nothing() {
        let big: Vec<u8> = (0..3000u32).map(|i| i as u8).collect();
        let (mut io, shared) = heard(vec![big.clone()]);
        let first = read(&mut io, 64 * 1024);
        assert_eq!(first.len(), FIRST_READ);
        assert!(shared.heard());
        let mut all = first;
        all.extend(read(&mut io, 64 * 1024));
        assert_eq!(all, big);
    }

    #[test]
    fn a_first_read_into_a_small_cursor_takes_no_more_than_it_holds() {
        let (mut io, shared) = heard(vec![b"settings".to_vec()]);
        assert_eq!(read(&mut io, 3), b"set");
        assert!(shared.heard());
        assert_eq!(read(&mut io, 64), b"tings");
    }
}
